//! Register's checks of the parents and idempotency key an agent is registered with (the
//! `after` and `idempotency_key` of `Agent`): names, policies, cycles within the call (Kahn's
//! algorithm), and that every parent exists (`knownAgents`, through the flows store).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::error::{Error, Result};
use crate::flows::store::Flows;
use crate::flows::store::{ParentPolicy, ParentRef};
use crate::pb;
use crate::queues::records::{Idempotency, IdempotencyMode};
use crate::queues::store::AgentDef;
use crate::rpc::validate;
use crate::store::shards::logical;
use crate::store::SourceKind;

/// Most parents one agent may name.
pub(crate) const MAX_PARENTS: usize = 10_000;

/// Longest idempotency key.
const MAX_IDEMPOTENCY_KEY: usize = 256;

fn policy(field: &str, value: i32) -> Result<Option<ParentPolicy>> {
    match pb::ParentFailure::try_from(value) {
        Ok(pb::ParentFailure::Unspecified) => Ok(None),
        Ok(pb::ParentFailure::Wait) => Ok(Some(ParentPolicy::Wait)),
        Ok(pb::ParentFailure::Cancel) => Ok(Some(ParentPolicy::Cancel)),
        Ok(pb::ParentFailure::RunAnyway) => Ok(Some(ParentPolicy::RunAnyway)),
        Err(_) => Err(Error::invalid(field, format!("unknown value {value}"))),
    }
}

/// Checks an agent's parents and idempotency key (`field` is "agents[i]") and sets them on
/// `def`: parents as physical queues, each with its policy. An agent of a queue listed in
/// `results.keep_queues`, or with an idempotency key, keeps its finish (`AgentDef::keep_result`).
pub(crate) fn parents_and_key(
    store: &Flows,
    config: &crate::config::Config,
    queue: &str,
    field: &str,
    a: &pb::Agent,
    def: &mut AgentDef,
) -> Result<()> {
    validate::count(&format!("{field}.after"), a.after.len(), 0, MAX_PARENTS)?;
    def.keep_result |= config.results.keeps(queue);
    let default = policy(&format!("{field}.on_parent_failure"), a.on_parent_failure)?.unwrap_or(ParentPolicy::Wait);
    let mut seen = HashSet::new();
    for (j, r) in a.after.iter().enumerate() {
        let f = format!("{field}.after[{j}]");
        if !r.batch.is_empty() {
            return Err(Error::invalid(
                format!("{f}.batch"),
                "is set in answers only: a batch's callbacks are given to RegisterBatch",
            ));
        }
        let parent_queue = if r.queue.is_empty() { queue } else { &r.queue };
        validate::name(&format!("{f}.queue"), parent_queue)?;
        validate::agent_name(&format!("{f}.name"), &r.name)?;
        if !seen.insert((parent_queue, r.name.as_str())) {
            return Err(Error::invalid(f, format!("{parent_queue}/{} is listed twice", r.name)));
        }
        let policy = policy(&format!("{f}.on_failure"), r.on_failure)?.unwrap_or(default);
        def.after.push(ParentRef {
            queue: store.shard_of(SourceKind::Queue, parent_queue, &r.name).into_owned(),
            name: r.name.clone(),
            policy,
        });
    }
    if a.after.is_empty() && a.on_parent_failure != 0 {
        return Err(Error::invalid(format!("{field}.on_parent_failure"), "applies only with after"));
    }
    let window = validate::duration_ms(
        &format!("{field}.idempotency_window"),
        a.idempotency_window.as_ref(),
        config.dedup.max_window_ms,
    )?;
    let mode = pb::IdempotencyMode::try_from(a.idempotency_mode)
        .map_err(|_| Error::invalid(format!("{field}.idempotency_mode"), "is not an IdempotencyMode"))?;
    let debounce =
        validate::duration_ms(&format!("{field}.debounce"), a.debounce.as_ref(), config.dedup.max_window_ms)?;
    if a.idempotency_key.is_empty() {
        if window.is_some() {
            return Err(Error::invalid(format!("{field}.idempotency_window"), "applies only with idempotency_key"));
        }
        if mode != pb::IdempotencyMode::Unspecified {
            return Err(Error::invalid(format!("{field}.idempotency_mode"), "applies only with idempotency_key"));
        }
        if debounce.is_some() {
            return Err(Error::invalid(format!("{field}.debounce"), "applies only with IDEMPOTENCY_MODE_DEBOUNCE"));
        }
        return Ok(());
    }
    let mode = match (mode, debounce) {
        (pb::IdempotencyMode::Debounce, None | Some(0)) => {
            return Err(Error::invalid(
                format!("{field}.debounce"),
                "must be at least 1 ms with IDEMPOTENCY_MODE_DEBOUNCE",
            ))
        }
        (pb::IdempotencyMode::Debounce, Some(ms)) => IdempotencyMode::Debounce(ms),
        (_, Some(_)) => {
            return Err(Error::invalid(format!("{field}.debounce"), "applies only with IDEMPOTENCY_MODE_DEBOUNCE"))
        }
        (pb::IdempotencyMode::Replace, None) => IdempotencyMode::Replace,
        (pb::IdempotencyMode::Unspecified | pb::IdempotencyMode::KeepFirst, None) => IdempotencyMode::KeepFirst,
    };
    let kf = format!("{field}.idempotency_key");
    validate::size(&kf, a.idempotency_key.len(), MAX_IDEMPOTENCY_KEY)?;
    if !a.idempotency_key.bytes().all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b)) {
        return Err(Error::invalid(kf, "may hold only A-Z a-z 0-9 . _ : -"));
    }
    if def.interval_ms > 0 || !def.cron.is_empty() {
        return Err(Error::invalid(kf, "applies only to one-shot agents (no interval, no cron)"));
    }
    let window = window.unwrap_or(config.dedup.default_window_ms);
    if window == 0 {
        return Err(Error::invalid(format!("{field}.idempotency_window"), "must be at least 1 ms"));
    }
    def.idempotency = Some(Idempotency { key: a.idempotency_key.clone(), window_ms: window, mode });
    // A later registration with the key answers this agent's finish.
    def.keep_result = true;
    Ok(())
}

/// Refuses a cycle among the agents of one Register (parents that are agents of the same call):
/// INVALID_ARGUMENT naming an agent on it. Other parents exist already, so they cannot close
/// a cycle (an agent's parents are fixed when it is created).
pub(crate) fn check_cycles(queue: &str, store: &Flows, list: &str, defs: &[AgentDef]) -> Result<()> {
    let index: HashMap<(String, &str), usize> = defs
        .iter()
        .enumerate()
        .map(|(i, d)| ((store.shard_of(SourceKind::Queue, queue, &d.name).into_owned(), d.name.as_str()), i))
        .collect();
    // Kahn's algorithm over the call's own edges: what is left on a cycle has parents left.
    let mut parents_left = vec![0usize; defs.len()];
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); defs.len()];
    for (i, d) in defs.iter().enumerate() {
        for p in &d.after {
            if let Some(&j) = index.get(&(p.queue.clone(), p.name.as_str())) {
                parents_left[i] += 1;
                children[j].push(i);
            }
        }
    }
    let mut ready: Vec<usize> = (0..defs.len()).filter(|&i| parents_left[i] == 0).collect();
    let mut done = 0;
    while let Some(j) = ready.pop() {
        done += 1;
        for &i in &children[j] {
            parents_left[i] -= 1;
            if parents_left[i] == 0 {
                ready.push(i);
            }
        }
    }
    if done == defs.len() {
        return Ok(());
    }
    let i = (0..defs.len()).find(|&i| parents_left[i] > 0).expect("a node left on a cycle");
    Err(Error::invalid(
        format!("{list}[{i}].after"),
        format!("{:?} is on a cycle of parents (an agent cannot run after itself)", defs[i].name),
    ))
}

/// Refuses parents that are neither agents of this call nor known to Redis (no agent, no
/// finish kept): INVALID_ARGUMENT naming the first. Sets each agent's `parent_traceparents`:
/// the trace context of its first `trace::MAX_LINKS` parents (in `after` order) that carry one,
/// read in the same steps (an agent of this call: the context it is registered with). A parent
/// of this call keeps its finish (`keep_result`); parents outside it are marked (knownAgents),
/// and answered, for a Register refused later to take the marks back (`Flows::unmark`).
pub(crate) async fn check_parents_exist(
    queue: &str,
    store: &Flows,
    list: &str,
    defs: &mut [AgentDef],
) -> Result<crate::flows::store::Marks> {
    let own: HashMap<(String, &str), usize> = defs
        .iter()
        .enumerate()
        .map(|(i, d)| ((store.shard_of(SourceKind::Queue, queue, &d.name).into_owned(), d.name.as_str()), i))
        .collect();
    let mut refs = Vec::new();
    let mut fields = Vec::new();
    let mut contexts = vec![BTreeMap::new(); defs.len()];
    let mut parents_here = Vec::new();
    for (i, d) in defs.iter().enumerate() {
        for (j, p) in d.after.iter().enumerate() {
            let traced = j < crate::trace::MAX_LINKS;
            match own.get(&(p.queue.clone(), p.name.as_str())) {
                Some(&o) if traced && !defs[o].traceparent.is_empty() => {
                    parents_here.push(o);
                    contexts[i].insert(format!("{}|{}", p.queue, p.name), defs[o].traceparent.clone());
                }
                Some(&o) => parents_here.push(o),
                None => {
                    refs.push((p.queue.clone(), p.name.clone(), traced));
                    fields.push((i, j));
                }
            }
        }
    }
    let mut marks = Vec::new();
    if !refs.is_empty() {
        let (known, marked) = store.agents_known(&refs).await?;
        marks = marked;
        if let Some(k) = known.iter().position(|(k, _)| !k) {
            let (i, j) = fields[k];
            let (q, n, _) = &refs[k];
            return Err(Error::invalid(
                format!("{list}[{i}].after[{j}]"),
                format!("queue {} has no agent {n:?} (and keeps no finish of one)", logical(q)),
            ));
        }
        for (((q, n, _), (_, tp)), &(i, _)) in refs.into_iter().zip(known).zip(&fields) {
            if !tp.is_empty() {
                contexts[i].insert(format!("{q}|{n}"), tp);
            }
        }
    }
    for (d, c) in defs.iter_mut().zip(contexts) {
        d.parent_traceparents = c;
    }
    // A parent of this call may finish before its children are attached (they are attached
    // after the call registers them all): its finish is kept for them. Parents outside the call
    // were marked by knownAgents for the same reason.
    for o in parents_here {
        defs[o].keep_result = true;
    }
    Ok(marks)
}

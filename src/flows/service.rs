//! The parts of AgentService that make work depend on work: parents (`Agent.after`) checked
//! at Register (names, policies, cycles, existence), idempotency keys, results on the wire, and
//! Await. The release itself is the store's (`store::flows`).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::rpc::validate;

use crate::error::{Error, Result};
use crate::flows::store::{FinishRecord, ParentPolicy, ParentRef};
use crate::pb;
use crate::queues::store::AgentDef;
use crate::rpc::timestamp;
use crate::store::shards::logical;
use crate::store::SourceKind;
use crate::store::Store;

/// Most parents one agent may name.
pub const MAX_PARENTS: usize = 10_000;

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
/// `def`: parents as physical queues, each with its policy.
pub fn parents_and_key(
    store: &Store,
    config: &crate::config::Config,
    queue: &str,
    field: &str,
    a: &pb::Agent,
    def: &mut AgentDef,
) -> Result<()> {
    validate::count(&format!("{field}.after"), a.after.len(), 0, MAX_PARENTS)?;
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
    if a.idempotency_key.is_empty() {
        if window.is_some() {
            return Err(Error::invalid(format!("{field}.idempotency_window"), "applies only with idempotency_key"));
        }
        return Ok(());
    }
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
    def.idempotency = Some((a.idempotency_key.clone(), window));
    Ok(())
}

/// Refuses a cycle among the agents of one Register (parents that are agents of the same call):
/// INVALID_ARGUMENT naming an agent on it. Other parents exist already, so they cannot close
/// a cycle (an agent's parents are fixed when it is created).
pub fn check_cycles(queue: &str, store: &Store, list: &str, defs: &[AgentDef]) -> Result<()> {
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
/// read in the same steps (an agent of this call: the context it is registered with).
pub async fn check_parents_exist(queue: &str, store: &Store, list: &str, defs: &mut [AgentDef]) -> Result<()> {
    let own: HashMap<(String, &str), usize> = defs
        .iter()
        .enumerate()
        .map(|(i, d)| ((store.shard_of(SourceKind::Queue, queue, &d.name).into_owned(), d.name.as_str()), i))
        .collect();
    let mut refs = Vec::new();
    let mut fields = Vec::new();
    let mut contexts = vec![BTreeMap::new(); defs.len()];
    for (i, d) in defs.iter().enumerate() {
        for (j, p) in d.after.iter().enumerate() {
            let traced = j < crate::trace::MAX_LINKS;
            match own.get(&(p.queue.clone(), p.name.as_str())) {
                Some(&o) if traced && !defs[o].traceparent.is_empty() => {
                    contexts[i].insert(format!("{}|{}", p.queue, p.name), defs[o].traceparent.clone());
                }
                Some(_) => {}
                None => {
                    refs.push((p.queue.clone(), p.name.clone(), traced));
                    fields.push((i, j));
                }
            }
        }
    }
    if !refs.is_empty() {
        let known = store.agents_known(&refs).await?;
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
    Ok(())
}

/// Whether a caller (`identity`; None: authentication is off) is shown a family member (a
/// parent, a child, a batch's callback) whose queue is `queue` as stored: a shard's physical
/// name, or a batch's own keyspace ("~<batch>", scoped as a queue of the batch's name). One
/// outside its scopes is withheld from every answer: not named, its result not shown (counts,
/// such as AgentStatus.parents_total, still count it).
pub fn shown(identity: &Option<std::sync::Arc<crate::rpc::auth::Identity>>, queue: &str) -> bool {
    let queue = queue.strip_prefix('~').unwrap_or(queue);
    crate::rpc::auth::sees(identity, crate::rpc::auth::NameKind::Queue, queue)
}

/// A queue as the wire names it: a batch's own keyspace ("~<batch>") has no queue.
fn wire_queue(queue: &str) -> String {
    if queue.starts_with('~') {
        String::new()
    } else {
        logical(queue).to_string()
    }
}

/// The batch a batch's own keyspace ("~<batch>") names, on the wire; "" for a queue.
fn wire_batch(queue: &str) -> String {
    queue.strip_prefix('~').unwrap_or_default().to_string()
}

/// A kept finish on the wire.
pub fn result_pb(queue: &str, name: &str, r: FinishRecord) -> pb::AgentResult {
    let finish = match r.finish {
        crate::flows::store::Finish::Succeeded => pb::Finish::Succeeded,
        crate::flows::store::Finish::DeadLettered => pb::Finish::DeadLettered,
        crate::flows::store::Finish::Cancelled => pb::Finish::Cancelled,
        crate::flows::store::Finish::Unregistered => pb::Finish::Unregistered,
    };
    let outcome = match r.outcome.as_str() {
        "SUCCESS" => pb::Outcome::Success,
        "PERMANENT_FORBIDDEN" => pb::Outcome::PermanentForbidden,
        "THROTTLED" => pb::Outcome::Throttled,
        "SERVER_ERROR" => pb::Outcome::ServerError,
        "TRANSIENT" => pb::Outcome::Transient,
        "" => pb::Outcome::Unspecified,
        // Ended by a sweep (TIMEOUT, ORPHANED, PURGED): no worker outcome.
        _ => pb::Outcome::Unknown,
    };
    pb::AgentResult {
        queue: wire_queue(queue),
        name: name.to_string(),
        finish: finish as i32,
        outcome: outcome as i32,
        result: r.result,
        token: r.token,
        finished_at: Some(timestamp(r.at_ms)),
        message: r.message,
        traceparent: String::new(),
        batch: wire_batch(queue),
    }
}

/// A parent reference on the wire.
pub fn parent_ref_pb(queue: &str, name: &str, policy: Option<ParentPolicy>) -> pb::AgentRef {
    let on_failure = match policy {
        None => pb::ParentFailure::Unspecified,
        Some(ParentPolicy::Wait) => pb::ParentFailure::Wait,
        Some(ParentPolicy::Cancel) => pb::ParentFailure::Cancel,
        Some(ParentPolicy::RunAnyway) => pb::ParentFailure::RunAnyway,
    };
    pb::AgentRef {
        queue: wire_queue(queue),
        name: name.to_string(),
        on_failure: on_failure as i32,
        batch: wire_batch(queue),
    }
}

/// Where an awaited agent is, on the wire.
pub fn await_state_pb(state: crate::flows::store::AwaitState) -> pb::AgentState {
    match state {
        crate::flows::store::AwaitState::Waiting => pb::AgentState::Waiting,
        crate::flows::store::AwaitState::Working => pb::AgentState::Working,
        crate::flows::store::AwaitState::DeadLettered => pb::AgentState::DeadLettered,
        crate::flows::store::AwaitState::Blocked => pb::AgentState::Blocked,
        crate::flows::store::AwaitState::Missing | crate::flows::store::AwaitState::Detached => {
            pb::AgentState::Unspecified
        }
    }
}

/// A batch's counts on the wire.
pub fn batch_pb(
    batch: &str,
    b: crate::flows::batches::BatchInfo,
    identity: &Option<std::sync::Arc<crate::rpc::auth::Identity>>,
) -> pb::BatchStatus {
    pb::BatchStatus {
        batch: batch.to_string(),
        total: b.total,
        pending: b.pending,
        succeeded: b.succeeded,
        failed: b.failed,
        closed: b.closed,
        done: b.done_at_ms.is_some(),
        callbacks: b
            .callbacks
            .iter()
            .filter(|(q, _)| shown(identity, q))
            .map(|(q, n)| parent_ref_pb(q, n, None))
            .collect(),
        created_at: Some(timestamp(b.created_at_ms)),
        done_at: b.done_at_ms.map(timestamp),
    }
}

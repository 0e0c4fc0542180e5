//! The wire forms AgentService's unary calls and its Session stream share: a completion read
//! from the wire and its answer, a heartbeat's answer, a granted lease. Both import this module,
//! so neither imports the other for them.

use std::sync::Arc;

use crate::rpc::validate;

use crate::error::{Error, Result};
use crate::pb;
use crate::queues::store::{
    AgentDef, Completed, Completion, Delivery, Ended, Outcome, StepAnswer, StepRecord, WaitFor,
};
use crate::rpc::auth;
use crate::rpc::{duration, timestamp};

/// Longest error_class a completion may carry.
const MAX_ERROR_CLASS_BYTES: usize = 256;

/// A completion from the wire (Complete, CompleteBatch, Session), validated: its outcome as
/// sent or as the server classifies it, its message clipped to max_message_bytes. Errors name
/// the completion's own fields; an item of a batch places them with `Error::within`.
pub(crate) fn completion(limits: &crate::config::Limits, mut r: pb::CompleteRequest) -> Result<Completion> {
    validate::name("queue", &r.queue)?;
    validate::agent_name("name", &r.name)?;
    validate::token("token", r.token)?;
    if let Some(w) = r.wait_for.take() {
        return waiting(limits, &w, r);
    }
    validate::size("error_class", r.error_class.len(), MAX_ERROR_CLASS_BYTES)?;
    let outcome = outcome(r.outcome, &r.error_class, r.http_status)?;
    let retry_after_ms =
        validate::duration_ms("retry_after", r.retry_after.as_ref(), limits.max_duration_ms)?.unwrap_or(0);
    validate::request_id("request_id", &r.request_id)?;
    validate::size("result", r.result.len(), limits.max_result_bytes)?;
    let clipped = r.message.len() > limits.max_message_bytes;
    let message = if clipped { crate::error::clip(&r.message, limits.max_message_bytes) } else { r.message };
    Ok(Completion {
        queue: r.queue,
        name: r.name,
        token: r.token,
        outcome,
        message,
        retry_after_ms,
        request_id: r.request_id,
        clipped,
        result: r.result,
        wait: None,
    })
}

/// A completion that ends its lease by waiting (`wait_for`): nothing of a finish may come with
/// it (an outcome other than SUCCESS, a message, retry_after, error_class, http_status, a
/// result), INVALID_ARGUMENT naming the field.
fn waiting(limits: &crate::config::Limits, w: &pb::WaitFor, r: pb::CompleteRequest) -> Result<Completion> {
    let wait = wait_for(limits, "wait_for", w)?;
    let with = |name: &str| Error::invalid(name, "must be empty with wait_for (the run is not over)");
    if r.outcome != pb::Outcome::Unspecified as i32 && r.outcome != pb::Outcome::Success as i32 {
        return Err(with("outcome"));
    }
    if !r.message.is_empty() {
        return Err(with("message"));
    }
    if r.retry_after.is_some() {
        return Err(with("retry_after"));
    }
    if !r.error_class.is_empty() {
        return Err(with("error_class"));
    }
    if r.http_status != 0 {
        return Err(with("http_status"));
    }
    if !r.result.is_empty() {
        return Err(with("result"));
    }
    validate::request_id("request_id", &r.request_id)?;
    Ok(Completion {
        queue: r.queue,
        name: r.name,
        token: r.token,
        outcome: Outcome::Success,
        message: String::new(),
        retry_after_ms: 0,
        request_id: r.request_id,
        clipped: false,
        result: Vec::new(),
        wait: Some(wait),
    })
}

/// A wait from the wire (`field` names it: "wait_for", "agents[0].wait_for"): an event named
/// as a step is, a time after 1970, a timeout of at most limits.max_duration_ms; at least one.
pub(crate) fn wait_for(limits: &crate::config::Limits, field: &str, w: &pb::WaitFor) -> Result<WaitFor> {
    if !w.event.is_empty() {
        validate::name(&format!("{field}.event"), &w.event)?;
    }
    let until_ms = match &w.until {
        None => 0,
        Some(t) if t.seconds > 0 && (0..1_000_000_000).contains(&t.nanos) => {
            (t.seconds.saturating_mul(1000).saturating_add(i64::from(t.nanos) / 1_000_000)) as u64
        }
        Some(_) => return Err(Error::invalid(format!("{field}.until"), "must be a time after 1970-01-01T00:00:00Z")),
    };
    let timeout_ms = validate::duration_ms(&format!("{field}.timeout"), w.timeout.as_ref(), limits.max_duration_ms)?;
    if timeout_ms == Some(0) {
        return Err(Error::invalid(format!("{field}.timeout"), "must be at least 1 ms"));
    }
    let timeout_ms = timeout_ms.unwrap_or(0);
    if w.event.is_empty() && until_ms == 0 && timeout_ms == 0 {
        return Err(Error::invalid(field.to_string(), "needs an event, until or timeout"));
    }
    Ok(WaitFor { event: w.event.clone(), until_ms, timeout_ms })
}

/// An event delivery, as a lease carries it.
pub(crate) fn event_pb(d: Delivery) -> pb::EventDelivery {
    pb::EventDelivery { event: d.event, payload: d.payload, sent_at: Some(timestamp(d.at_ms)), timed_out: d.timed_out }
}

/// Counts a batch of completions in the metrics (one increment per queue and outcome, not per
/// item: this is the hot path; a retry answered from memory is not counted again) and maps each
/// to its result.
pub(crate) fn complete_results(items: &[Completion], done: Vec<Option<Ended>>) -> Vec<pb::CompleteResult> {
    let mut lost = 0;
    let mut counts: Vec<(&str, Outcome, u64)> = Vec::new();
    let results = items
        .iter()
        .zip(done)
        .map(|(c, done)| {
            let response = match done {
                Some(done) if c.wait.is_some() => Some(complete_pb(c, done.how)),
                None => {
                    lost += 1;
                    None
                }
                Some(done) => {
                    if !done.replayed {
                        match counts.iter_mut().find(|(q, o, _)| *q == c.queue && *o == c.outcome) {
                            Some((_, _, n)) => *n += 1,
                            None => counts.push((&c.queue, c.outcome, 1)),
                        }
                    }
                    Some(complete_pb(c, done.how))
                }
            };
            pb::CompleteResult {
                queue: c.queue.clone(),
                name: c.name.clone(),
                token: c.token,
                lease_lost: response.is_none(),
                response,
            }
        })
        .collect();
    for (queue, outcome, n) in counts {
        metrics::counter!("baton_agents_completed_total", "queue" => queue.to_string(), "outcome" => outcome.as_str())
            .increment(n);
    }
    if lost > 0 {
        metrics::counter!("baton_leases_lost_total", "rpc" => "Complete").increment(lost);
    }
    results
}

pub(crate) fn complete_pb(c: &Completion, done: Completed) -> pb::CompleteResponse {
    let mut response = complete_how(done);
    response.message_clipped = c.clipped;
    // A wait ends no run: it has no outcome.
    response.outcome = if c.wait.is_some() { 0 } else { outcome_pb(c.outcome) as i32 };
    response
}

fn outcome_pb(o: Outcome) -> pb::Outcome {
    match o {
        Outcome::Success => pb::Outcome::Success,
        Outcome::PermanentForbidden => pb::Outcome::PermanentForbidden,
        Outcome::Throttled => pb::Outcome::Throttled,
        Outcome::Transient => pb::Outcome::Transient,
        Outcome::ServerError => pb::Outcome::ServerError,
        Outcome::Unknown => pb::Outcome::Unknown,
    }
}

fn complete_how(done: Completed) -> pb::CompleteResponse {
    match done {
        Completed::Rescheduled { next_run_ms, streak } => pb::CompleteResponse {
            next_run_at: Some(timestamp(next_run_ms)),
            failure_streak: streak,
            ..Default::default()
        },
        Completed::Removed => pb::CompleteResponse { removed: true, ..Default::default() },
        Completed::Waiting { next_run_ms, streak } => pb::CompleteResponse {
            next_run_at: next_run_ms.map(timestamp),
            failure_streak: streak,
            waiting: true,
            ..Default::default()
        },
        Completed::DeadLettered { streak, .. } => {
            metrics::counter!("baton_agents_dead_lettered_total").increment(1);
            pb::CompleteResponse { dead_lettered: true, failure_streak: streak, ..Default::default() }
        }
    }
}

/// Files one heartbeat's answer (Heartbeat, Session): extended, or lost; a cancelled run goes in
/// `cancelled` and in `lost` (helpers that know only `lost` cancel their handler too).
pub(crate) fn beat_answer(
    queue: &str,
    name: &str,
    token: u64,
    beat: crate::queues::store::Beat,
    (extended, lost, cancelled): (&mut Vec<pb::ExtendedLease>, &mut Vec<pb::LeaseRef>, &mut Vec<pb::LeaseRef>),
) {
    let lease_ref = || pb::LeaseRef { queue: queue.to_string(), name: name.to_string(), token, ..Default::default() };
    match beat {
        crate::queues::store::Beat::Extended(d) => extended.push(pb::ExtendedLease {
            queue: queue.to_string(),
            name: name.to_string(),
            token,
            deadline: Some(timestamp(d)),
        }),
        crate::queues::store::Beat::Lost => lost.push(lease_ref()),
        crate::queues::store::Beat::Cancelled => {
            lost.push(lease_ref());
            cancelled.push(lease_ref());
        }
    }
}

/// A granted lease, as the worker (`identity`) sees it: its parents' finishes, each with the
/// trace context kept for it (AgentResult.traceparent); parents outside the worker's scopes
/// are left out (`flows::shown`).
pub(crate) fn lease_pb(
    queue: &str,
    l: crate::queues::store::Lease,
    identity: &Option<Arc<auth::Identity>>,
) -> pb::Lease {
    let contexts = &l.def.parent_traceparents;
    let parents = (l.parents.into_iter())
        .filter(|(q, _, _)| crate::flows::service::shown(identity, q))
        .map(|(q, n, f)| {
            let traceparent = contexts.get(&format!("{q}|{n}")).cloned().unwrap_or_default();
            pb::AgentResult { traceparent, ..crate::flows::service::result_pb(&q, &n, f) }
        })
        .collect();
    pb::Lease {
        queue: queue.to_string(),
        name: l.name,
        token: l.token,
        deadline: Some(timestamp(l.deadline_ms)),
        granted_at: Some(timestamp(l.granted_ms)),
        attempt: l.attempt,
        parents,
        agent: Some(agent_pb(l.def)),
        steps: l.steps.into_iter().map(step_pb).collect(),
        event: l.event.map(event_pb),
    }
}

/// A step recorded, as the wire has it.
pub(crate) fn step_pb(s: StepRecord) -> pb::Step {
    pb::Step { name: s.name, result: s.result, recorded_at: Some(timestamp(s.recorded_at_ms)) }
}

/// Checks a step from the wire (RecordStep, Session; `field` prefixes its fields' names): the
/// agent, the token, the step's name and its result's size (at most limits.max_step_bytes, the
/// whole run's bound; the run's total is the script's to check).
pub(crate) fn check_step(
    limits: &crate::config::Limits,
    field: &str,
    name: &str,
    token: u64,
    step: &str,
    result: &[u8],
) -> Result<()> {
    validate::agent_name(&format!("{field}name"), name)?;
    validate::token(&format!("{field}token"), token)?;
    validate::name(&format!("{field}step"), step)?;
    if result.len() > limits.max_step_bytes {
        return Err(Error::invalid(
            format!("{field}result"),
            format!("must be at most limits.max_step_bytes ({}) bytes, got {}", limits.max_step_bytes, result.len()),
        ));
    }
    Ok(())
}

/// What recordStep answered, as RecordStep answers it: the response, LEASE_LOST, or
/// INVALID_ARGUMENT naming `step` (the run is at limits.max_steps) or `result` (its results would
/// pass limits.max_step_bytes).
pub(crate) fn step_answer(
    limits: &crate::config::Limits,
    field: &str,
    lease: (&str, &str, u64),
    step: &str,
    result: Vec<u8>,
    answer: StepAnswer,
) -> Result<pb::RecordStepResponse> {
    let (queue, name, token) = lease;
    match answer {
        StepAnswer::Lost => Err(Error::LeaseLost(format!("{queue}/{name} token {token}"))),
        StepAnswer::TooMany { count } => Err(Error::invalid(
            format!("{field}step"),
            format!("the run has {count} steps: limits.max_steps ({}) allows no more", limits.max_steps),
        )),
        StepAnswer::TooLarge { bytes } => Err(Error::invalid(
            format!("{field}result"),
            format!(
                "the run's steps hold {bytes} result bytes: {} more would pass limits.max_step_bytes ({})",
                result.len(),
                limits.max_step_bytes
            ),
        )),
        StepAnswer::Recorded { at_ms, count } => Ok(pb::RecordStepResponse {
            recorded: true,
            step: Some(step_pb(StepRecord { name: step.to_string(), recorded_at_ms: at_ms, result })),
            steps: count,
        }),
        StepAnswer::Kept { at_ms, count, result } => Ok(pb::RecordStepResponse {
            recorded: false,
            step: Some(step_pb(StepRecord { name: step.to_string(), recorded_at_ms: at_ms, result })),
            steps: count,
        }),
    }
}

pub(crate) fn agent_pb(def: AgentDef) -> pb::Agent {
    pb::Agent {
        name: def.name,
        interval: duration(def.interval_ms),
        timeout: duration(def.timeout_ms),
        error_interval: duration(def.error_interval_ms),
        payload: def.payload,
        labels: def.labels.into_iter().collect(),
        max_attempts: def.max_attempts,
        cron: def.cron,
        time_zone: def.time_zone,
        catch_up: if def.catch_up_skip { pb::CatchUp::Skip as i32 } else { pb::CatchUp::Unspecified as i32 },
        key: def.key,
        priority: def.priority,
        traceparent: def.traceparent,
        // GetAgent fills the parents in; a lease carries their finishes (Lease.parents) instead.
        after: Vec::new(),
        on_parent_failure: 0,
        idempotency_key: String::new(),
        idempotency_window: None,
        keep_result: def.keep_result,
        idempotency_mode: 0,
        debounce: None,
        // Set by expire_at or ttl; gone once a run has started.
        expire_at: (def.expire_at_ms > 0).then(|| timestamp(def.expire_at_ms)),
        ttl: None,
        // GetAgent answers a wait in AgentStatus.waiting_for.
        wait_for: None,
    }
}

/// The outcome of a completion: as sent, or, when it is unspecified, the server's
/// classification of the handler's HTTP status or error class.
pub(crate) fn outcome(value: i32, error_class: &str, http_status: u32) -> Result<Outcome> {
    if http_status != 0 && !(100..=599).contains(&http_status) {
        return Err(Error::invalid("http_status", format!("must be 100-599 (or 0: none), got {http_status}")));
    }
    if value == pb::Outcome::Unspecified as i32 {
        if http_status != 0 {
            return Ok(crate::queues::classify::http_status(http_status));
        }
        if !error_class.is_empty() {
            return Ok(crate::queues::classify::error_class(error_class));
        }
        return Err(Error::invalid(
            "outcome",
            "is required, unless error_class or http_status is set for the server to classify",
        ));
    }
    match pb::Outcome::try_from(value) {
        Ok(pb::Outcome::Success) => Ok(Outcome::Success),
        Ok(pb::Outcome::PermanentForbidden) => Ok(Outcome::PermanentForbidden),
        Ok(pb::Outcome::Throttled) => Ok(Outcome::Throttled),
        Ok(pb::Outcome::Transient) => Ok(Outcome::Transient),
        Ok(pb::Outcome::ServerError) => Ok(Outcome::ServerError),
        Ok(pb::Outcome::Unknown) => Ok(Outcome::Unknown),
        Ok(pb::Outcome::Unspecified) => unreachable!("handled above"),
        Err(_) => Err(Error::invalid("outcome", format!("unknown value {value}"))),
    }
}

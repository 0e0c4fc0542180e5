//! The parts of AgentService that make work depend on work: parents (`Agent.after`) checked
//! at Register (names, policies, cycles, existence), idempotency keys, results on the wire, and
//! Await. The release itself is the store's (`flows::store`).

use crate::flows::store::{FinishRecord, ParentPolicy};
use crate::pb;
use crate::rpc::timestamp;
use crate::store::shards::logical;

/// Whether a caller (`identity`; None: authentication is off) is shown a family member (a
/// parent, a child, a batch's callback) whose queue is `queue` as stored: a shard's physical
/// name, or a batch's own keyspace ("~<batch>", scoped as a queue of the batch's name). One
/// outside its scopes is withheld from every answer: not named, its result not shown (counts,
/// such as AgentStatus.parents_total, still count it).
pub(crate) fn shown(identity: &Option<std::sync::Arc<crate::rpc::auth::Identity>>, queue: &str) -> bool {
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
pub(crate) fn result_pb(queue: &str, name: &str, r: FinishRecord) -> pb::AgentResult {
    let finish = match r.finish {
        crate::flows::store::Finish::Succeeded => pb::Finish::Succeeded,
        crate::flows::store::Finish::DeadLettered => pb::Finish::DeadLettered,
        crate::flows::store::Finish::Cancelled => pb::Finish::Cancelled,
        crate::flows::store::Finish::Unregistered => pb::Finish::Unregistered,
        crate::flows::store::Finish::Expired => pb::Finish::Expired,
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
pub(crate) fn parent_ref_pb(queue: &str, name: &str, policy: Option<ParentPolicy>) -> pb::AgentRef {
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
pub(crate) fn await_state_pb(state: crate::flows::store::AwaitState) -> pb::AgentState {
    match state {
        crate::flows::store::AwaitState::Waiting => pb::AgentState::Waiting,
        crate::flows::store::AwaitState::Working => pb::AgentState::Working,
        crate::flows::store::AwaitState::DeadLettered => pb::AgentState::DeadLettered,
        crate::flows::store::AwaitState::Blocked => pb::AgentState::Blocked,
        crate::flows::store::AwaitState::WaitingForEvent => pb::AgentState::WaitingForEvent,
        crate::flows::store::AwaitState::Missing | crate::flows::store::AwaitState::Detached => {
            pb::AgentState::Unspecified
        }
    }
}

/// A batch's counts on the wire.
pub(crate) fn batch_pb(
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

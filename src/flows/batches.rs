//! Batches: members whose finishes are counted, and callbacks that run once when the batch is
//! done. A batch is a sentinel agent, named as the batch, in a keyspace of its own (`{b:<batch>}`,
//! the queue name "~<batch>" that no user can name): its members are its parents (RUN_ANYWAY:
//! any finish counts), its callbacks its children, and it is held back by one more pending
//! count while open. Members' finishes reach it through the flows machinery (`flows::store`),
//! one idempotent step each, in its own slot, so the last one — whichever replica applies it —
//! finishes it exactly once (`finishBatch`), which releases the callbacks through its outbox.

use crate::flows::store::{ParentPolicy, ParentRef};

use crate::flows::store::Flows;
use crate::store::Path;

use crate::store::reply::Reply;

use crate::error::{Error, Result};

/// The typed calls of `lua/batches/`, generated from the scripts' headers.
pub(crate) mod calls {
    use crate::store::keys::QueueKeys;
    include!(concat!(env!("OUT_DIR"), "/calls_batches.rs"));
}

/// The queue name of a batch's keyspace.
pub fn batch_queue(batch: &str) -> String {
    format!("~{batch}")
}

/// A batch's counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchInfo {
    pub total: u32,
    pub pending: u32,
    pub succeeded: u32,
    pub failed: u32,
    pub closed: bool,
    pub created_at_ms: i64,
    pub done_at_ms: Option<i64>,
    /// (queue, name) of each callback.
    pub callbacks: Vec<(String, String)>,
}

/// What opening a batch found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opened {
    Created,
    Found,
}

impl Flows {
    /// Creates batch `batch` (recording `callbacks`, "<queue>|<name>" each) or finds it, and adds
    /// `members` (physical queue, name) as pending; closes it after when `close`. Members must be
    /// attached afterwards ([`Flows::join_batch`]). `Error::FailedPrecondition` BATCH_CLOSED when
    /// it is closed; `Error::InvalidArgument` when it was created with other callbacks.
    pub async fn open_batch(
        &self,
        batch: &str,
        callbacks: &[(String, String)],
        members: &[(String, String)],
        close: bool,
    ) -> Result<Opened> {
        let queue = batch_queue(batch);
        self.remember_flow_queues([queue.as_str()]).await?;
        let k = self.keys.queue(&queue);
        let callbacks: Vec<String> = callbacks.iter().map(|(q, n)| format!("{q}|{n}")).collect();
        let call = calls::OpenBatch {
            keys: &k,
            channel: &self.keys.announce_finishes(&queue),
            queue: &queue,
            result_ttl_ms: self.policy.results.retention_ms,
            result_max: self.policy.results.max_entries,
            batch,
            callbacks: &callbacks.join("\n"),
            close,
            members: members
                .iter()
                .map(|(queue, name)| calls::OpenBatchMembers { queue, name, _item: Default::default() })
                .collect(),
        };
        let BatchStep { code, outboxed } = self.call_items(Path::WriteBack, call, members.len()).await?;
        self.outboxed(&queue, outboxed);
        match code {
            1 => Ok(Opened::Created),
            0 => Ok(Opened::Found),
            -1 => Err(Error::BatchClosed(format!("batch {batch:?} is closed: no member may be added"))),
            _ => Err(Error::invalid("on_success", format!("batch {batch:?} exists with other callbacks"))),
        }
    }

    /// Attaches the batch's sentinel to members just registered (physical queue, name), so
    /// their finishes are counted.
    pub async fn join_batch(&self, batch: &str, members: &[(String, String)]) -> Result<()> {
        let parents: Vec<ParentRef> = members
            .iter()
            .map(|(q, n)| ParentRef { queue: q.clone(), name: n.clone(), policy: ParentPolicy::RunAnyway })
            .collect();
        self.attach(&batch_queue(batch), &[(batch.to_string(), parents)]).await
    }

    /// Closes a batch; false when it was closed before. `Error::NotFound` without it.
    pub async fn close_batch(&self, batch: &str) -> Result<bool> {
        let queue = batch_queue(batch);
        let k = self.keys.queue(&queue);
        let call = calls::CloseBatch {
            keys: &k,
            channel: &self.keys.announce_finishes(&queue),
            queue: &queue,
            result_ttl_ms: self.policy.results.retention_ms,
            result_max: self.policy.results.max_entries,
            batch,
        };
        let BatchStep { code, outboxed } = self.call(Path::WriteBack, call).await?;
        self.outboxed(&queue, outboxed);
        match code {
            -1 => Err(Error::NotFound(format!("batch {batch:?}"))),
            code => Ok(code == 1),
        }
    }

    /// A batch's counts, or None without such a batch.
    pub async fn read_batch(&self, batch: &str) -> Result<Option<BatchInfo>> {
        let k = self.keys.queue(&batch_queue(batch));
        let BatchRead(info) = self.call(Path::Dispatch, calls::ReadBatch { keys: &k, batch }).await?;
        Ok(info)
    }
}

/// What readBatch answered: the batch's counts, or None without such a batch.
pub(crate) struct BatchRead(Option<BatchInfo>);

impl crate::store::scripts::FromReply for BatchRead {
    /// `{}`, or `{ total, succeeded, failed, closed, created_at, done_at or "", callbacks, pending }`
    fn from_reply(mut r: Reply) -> Result<Self> {
        if r.is_empty() {
            return Ok(BatchRead(None));
        }
        let (total, succeeded, failed): (u32, u32, u32) = (r.next()?, r.next()?, r.next()?);
        let closed = r.next::<String>()? == "1";
        let created_at_ms: i64 = r.next()?;
        let done_at_ms: Option<i64> = r.next_opt()?;
        let callbacks: String = r.next()?;
        let count: i64 = r.next()?;
        let callbacks = callbacks
            .lines()
            .filter_map(|l| l.split_once('|'))
            .map(|(q, n)| (crate::store::shards::logical(q).to_string(), n.to_string()))
            .collect();
        // The sentinel's count holds one more while open.
        let pending = if done_at_ms.is_some() { 0 } else { (count - i64::from(!closed)).max(0) as u32 };
        Ok(BatchRead(Some(BatchInfo {
            total,
            pending,
            succeeded,
            failed,
            closed,
            created_at_ms,
            done_at_ms,
            callbacks,
        })))
    }
}

/// What openBatch and closeBatch answered: a code, and how many outbox entries they wrote.
pub(crate) struct BatchStep {
    code: i64,
    outboxed: i64,
}

impl crate::store::scripts::FromReply for BatchStep {
    /// `{ code, outboxed }`
    fn from_reply(mut r: Reply) -> Result<Self> {
        Ok(BatchStep { code: r.next()?, outboxed: r.next()? })
    }
}

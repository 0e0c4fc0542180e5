//! The index of active queues: ZSET `Keys::active`, queue -> when it was last marked (ms,
//! Redis time). The zombie and orphan sweeps and the repairs walk this index, not every
//! registered queue, so a queue nobody works on costs the sweepers nothing per pass: their
//! idle cost does not grow with the number of queues.
//!
//! Invariant: **a queue with a lease or a worker record is in the index.** It holds because
//! - an Acquire marks its queue *before* the script that grants leases (and records the
//!   worker); each replica marks a queue at most once per [`MARK_EVERY`]. A queue not in the
//!   registry is not marked: it has no agent to grant (registration writes the registry before
//!   the agents);
//! - the sweeper retires a queue only when its mark is older than [`RETIRE_AFTER`] (longer
//!   than `MARK_EVERY`, so every replica's memo of that mark has run out and its next Acquire
//!   marks again), the queue holds no lease and no worker record, and the mark is still the
//!   one it read (compare-and-delete in `retireActive`): an Acquire that marked meanwhile
//!   keeps the queue in;
//! - a census walks every registered queue, a bounded slice per repair pass (all of them when
//!   the sweeper starts), and marks the ones holding leases or workers: data written before the
//!   index existed, or behind Baton's back.
//!
//! On a cluster the index lives in the registry's slot, apart from the queues' slots, so it
//! cannot be written in the grant's own script; written before it, an entry without leases is
//! harmless (the sweeper finds nothing and retires it), leases without an entry cannot happen.

use std::{
    collections::HashSet,
    time::{Duration, Instant},
};

use crate::error::{Error, Result};
use crate::queues::store::Queues;
use crate::store::Path;

/// How often one replica marks a queue it grants leases in.
pub const MARK_EVERY: Duration = Duration::from_secs(10);

/// How old a mark must be before the sweeper may retire an empty queue.
pub const RETIRE_AFTER: Duration = Duration::from_secs(60);

/// Most memo entries before the memo starts again (at worst a few more marks).
const MEMO: usize = 100_000;

/// A queue in the index.
#[derive(Clone, Debug)]
pub struct Active {
    pub queue: String,
    pub marked_ms: i64,
    /// The mark as Redis wrote it, for the compare-and-delete.
    seen: String,
}

impl Queues {
    /// Marks `queue` active before a grant, unless this replica did within [`MARK_EVERY`].
    pub(crate) async fn mark_active(&self, queue: &str) -> Result<()> {
        let started = Instant::now();
        let fresh = self.marks.lock().expect("mark memo").get(queue).is_some_and(|at| started - *at < MARK_EVERY);
        if fresh {
            return Ok(());
        }
        let (active, queues) = (self.keys.active(), self.keys.queues());
        let call = super::store::calls::MarkActive { active: &active, queues: &queues, queue, keep: false };
        if self.call(Path::Dispatch, call).await?.0 < 0 {
            // Not registered: nothing to grant, nothing to mark (asked again next time).
            return Ok(());
        }
        let mut memo = self.marks.lock().expect("mark memo");
        if memo.len() >= MEMO {
            memo.clear();
        }
        // The time before the write: the memo runs out no later than the mark grows old.
        memo.insert(queue.to_string(), started);
        Ok(())
    }

    /// The Redis clock (ms) and every queue in the index.
    pub async fn active_queues(&self) -> Result<(i64, Vec<Active>)> {
        let mut conn = self.redis.conn().await?;
        let (entries, time): (Vec<(String, String)>, (i64, i64)) = redis::pipe()
            .cmd("ZRANGE")
            .arg(self.keys.active())
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .cmd("TIME")
            .query_async(&mut conn)
            .await?;
        let now_ms = time.0 * 1000 + time.1 / 1000;
        let active = entries
            .into_iter()
            .map(|(queue, seen)| {
                let marked_ms = seen.parse::<f64>().map_err(|_| Error::Internal(format!("active: mark {seen:?}")))?;
                Ok(Active { queue, marked_ms: marked_ms as i64, seen })
            })
            .collect::<Result<_>>()?;
        Ok((now_ms, active))
    }

    /// Of `queues`, the ones holding neither a lease nor a worker record.
    async fn empty_queues<'a>(&self, queues: impl IntoIterator<Item = &'a str>) -> Result<HashSet<&'a str>> {
        let queues: Vec<&str> = queues.into_iter().collect();
        let counts = queues.iter().flat_map(|q| {
            let k = self.keys.queue(q);
            [redis::cmd("ZCARD").arg(k.working).clone(), redis::cmd("ZCARD").arg(k.workers).clone()]
        });
        let counts: Vec<u64> = redis::from_redis_value(redis::Value::Array(self.redis.each(counts.collect()).await?))
            .map_err(redis::RedisError::from)?;
        Ok(queues
            .into_iter()
            .zip(counts.chunks(2))
            .filter(|(_, c)| c.iter().all(|n| *n == 0))
            .map(|(q, _)| q)
            .collect())
    }

    /// Retires the queues of `active` marked before `now_ms - RETIRE_AFTER` that hold nothing;
    /// returns how many left the index.
    pub async fn retire_idle(&self, now_ms: i64, active: &[Active]) -> Result<u64> {
        let horizon = now_ms - RETIRE_AFTER.as_millis() as i64;
        let old: Vec<&Active> = active.iter().filter(|a| a.marked_ms < horizon).collect();
        if old.is_empty() {
            return Ok(0);
        }
        let empty = self.empty_queues(old.iter().map(|a| a.queue.as_str())).await?;
        let mut retired = 0;
        for a in old.iter().filter(|a| empty.contains(a.queue.as_str())) {
            retired += self.retire_active(a).await? as u64;
        }
        Ok(retired)
    }

    /// Takes one queue out of the index if its mark is still the one read in `seen`.
    pub async fn retire_active(&self, seen: &Active) -> Result<bool> {
        let active = self.keys.active();
        let call = super::store::calls::RetireActive { active: &active, queue: &seen.queue, seen: &seen.seen };
        Ok(self.call(Path::WriteBack, call).await?.0 == 1)
    }

    /// One census step: the registered queues of one SSCAN page from `cursor` (about `count`),
    /// marking those that hold leases or workers and are not in the index. Returns the next
    /// cursor ("0": the walk is complete) and the queues of the page.
    pub async fn census(&self, cursor: &str, count: u32) -> Result<(String, Vec<String>)> {
        let mut conn = self.redis.conn().await?;
        let (next, queues): (String, Vec<String>) = redis::cmd("SSCAN")
            .arg(self.keys.queues())
            .arg(cursor)
            .arg("COUNT")
            .arg(count)
            .query_async(&mut conn)
            .await?;
        let empty = self.empty_queues(queues.iter().map(String::as_str)).await?;
        let (active, registry) = (self.keys.active(), self.keys.queues());
        for queue in queues.iter().filter(|q| !empty.contains(q.as_str())) {
            let call = super::store::calls::MarkActive { active: &active, queues: &registry, queue, keep: true };
            self.call(Path::WriteBack, call).await?;
        }
        Ok((next, queues))
    }
}

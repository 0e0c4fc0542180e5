//! Expiry: a one-shot agent registered with `Agent.expire_at` or `ttl` finishes as expired if no
//! run of it has started by then. The definition carries the time (`AgentDef::expire_at_ms`,
//! a ttl turned into it from the Redis clock at Register), so the acquire scripts check it at
//! grant time with no read of their own; the queue's `expiring` set, written only for such
//! agents, lets the sweeper find those no worker asks for (`expireAgents`, a bounded step).
//! The registry `Keys::expiring_queues` lists the queues that ever had one.

use super::store::calls;
use crate::error::Result;
use crate::queues::store::Queues;
use crate::store::{reply::Reply, scripts::FromReply, Path};

/// What one expireAgents step did.
pub(crate) struct Expired {
    /// Agents that finished as expired.
    pub expired: u64,
    /// Entries taken from `expiring` (the step's limit: there may be more).
    pub taken: u64,
    /// Outbox entries their finishes wrote.
    pub outboxed: i64,
}

impl FromReply for Expired {
    /// `{ expired, taken, outboxed }`
    fn from_reply(mut r: Reply) -> Result<Self> {
        Ok(Expired { expired: r.next()?, taken: r.next()?, outboxed: r.next()? })
    }
}

impl Queues {
    /// Agents of `queue` (physical) finished as expired by a script that wrote `outboxed`
    /// outbox entries: counted, and their children released.
    pub(super) fn expired(&self, queue: &str, expired: u64, outboxed: i64) {
        if expired > 0 {
            metrics::counter!("baton_agents_expired_total", "queue" => queue.to_string()).increment(expired);
            self.outboxed(queue, outboxed);
        }
    }

    /// Adds `queue` (physical) to the registry of queues with expiring agents, before the
    /// Register that writes them (a registry entry is written before the data it announces).
    pub(super) async fn remember_expiring(&self, queue: &str) -> Result<()> {
        self.remember(self.keys.expiring_queues(), queue).await
    }

    /// The queues (physical) whose `expiring` set holds an entry whose time has come.
    pub async fn queues_with_expiring(&self) -> Result<Vec<String>> {
        let mut conn = self.redis.conn().await?;
        let queues: Vec<String> =
            redis::cmd("SMEMBERS").arg(self.keys.expiring_queues()).query_async(&mut conn).await?;
        self.queues_with_old_entries(&queues, 0, |k| k.expiring.clone()).await
    }

    /// One sweeper step over `queue` (physical): takes at most `limit` entries whose time has
    /// come and expires the agents among them that never started. Returns (expired, taken).
    pub async fn expire_due(&self, queue: &str, limit: u32) -> Result<(u64, u64)> {
        let k = self.keys.queue(queue);
        let call = calls::ExpireAgents {
            keys: &k,
            channel: &self.keys.announce_finishes(queue),
            queue,
            result_ttl_ms: self.policy.results.retention_ms,
            result_max: self.policy.results.max_entries,
            limit: limit.into(),
        };
        let Expired { expired, taken, outboxed } = self.call(Path::WriteBack, call).await?;
        self.expired(queue, expired, outboxed);
        Ok((expired, taken))
    }
}

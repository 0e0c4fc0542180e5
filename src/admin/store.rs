//! Dead-letter queues and the auto-purge, for every queue and pool.

use crate::error::{Error, Result};
use crate::pools::store::Pools;
use crate::queues::store::Queues;
use crate::receivers::store::Receivers;
use crate::store::keys::ChannelKind;
use crate::store::scripts::PurgePage;
pub use crate::store::scripts::Purged;
use crate::store::{over_core, reply::Reply, Core, Path, SourceKind};

/// The typed calls of `lua/admin/`, generated from the scripts' headers.
pub(crate) mod calls {
    use crate::store::keys::{PoolKeys, QueueKeys};
    include!(concat!(env!("OUT_DIR"), "/calls_admin.rs"));
}
use crate::store::scripts::{FromReply, Int};

/// One dead letter as stored.
#[derive(Clone, Debug)]
pub struct DeadLetterEntry {
    pub id: String,
    pub failed_at_ms: i64,
    /// The context the failing script recorded (JSON object).
    pub context: serde_json::Value,
    /// The agent's payload (empty for resources).
    pub payload: Vec<u8>,
}

/// One page of a dead-letter queue: how many it holds, and the page.
pub(crate) struct DeadLetterPage(u64, Vec<DeadLetterEntry>);

impl FromReply for DeadLetterPage {
    /// `{ total, (id, failed at, context JSON, payload)* }`
    fn from_reply(mut r: Reply) -> Result<Self> {
        let total = r.next()?;
        let mut entries = Vec::new();
        while !r.is_empty() {
            let id: String = r.next()?;
            let failed_at_ms = r.next()?;
            let json: String = r.next()?;
            let context = serde_json::from_str(&json).map_err(|e| Error::Internal(format!("dead letter {id}: {e}")))?;
            entries.push(DeadLetterEntry { id, failed_at_ms, context, payload: r.next()? });
        }
        Ok(DeadLetterPage(total, entries))
    }
}

/// Limits of one purge pass.
#[derive(Clone, Copy, Debug)]
pub struct PurgeLimits {
    pub dry_run: bool,
    pub max_working_age_ms: u64,
    pub max_idle_age_ms: u64,
    pub max_claim_age_ms: u64,
}

/// The admin store: dead letters, purges and the health record, over the core, and the stores
/// of the sources an operator manages (their limits, pauses, listings and counts).
#[derive(Clone)]
pub struct Admin {
    core: Core,
    pub(crate) queues: Queues,
    pub(crate) pools: Pools,
    pub(crate) receivers: Receivers,
}

over_core!(Admin);

impl Admin {
    pub fn new(queues: Queues, pools: Pools, receivers: Receivers) -> Self {
        Self { core: Core::clone(&queues), queues, pools, receivers }
    }

    /// The physical receiver and inner id of a message id (see [`Receivers::message_shard`]).
    fn message_shard(&self, receiver: &str, id: &str) -> Option<(String, String)> {
        self.receivers.message_shard(receiver, id)
    }
}

impl Admin {
    /// One page of a source's dead letters, oldest first; returns (total, entries).
    pub async fn dead_letters(
        &self,
        kind: SourceKind,
        name: &str,
        offset: u64,
        count: u32,
    ) -> Result<(u64, Vec<DeadLetterEntry>)> {
        let (dlq, dlqinfo, payloads, with_payload) = match kind {
            SourceKind::Queue => {
                let k = self.keys.queue(name);
                (k.dlq, k.dlqinfo, k.payloads, true)
            }
            SourceKind::Pool => {
                let k = self.keys.pool(name);
                (k.dlq, k.dlqinfo.clone(), k.dlqinfo, false)
            }
            SourceKind::Receiver => {
                let k = self.keys.receiver(name);
                (k.dlq, k.dlqinfo, k.messages, true)
            }
        };
        let call = calls::ReadDeadLetters {
            dlq: &dlq,
            dlqinfo: &dlqinfo,
            payloads: &payloads,
            offset,
            count: count.into(),
            with_payload,
        };
        let DeadLetterPage(total, entries) = self.call(Path::Dispatch, call).await?;
        Ok((total, entries))
    }

    /// Puts a dead letter back where it came from; false if it is not dead-lettered there.
    pub async fn retry_dead_letter(&self, kind: SourceKind, name: &str, id: &str) -> Result<bool> {
        match kind {
            SourceKind::Queue => {
                // A sharded queue's agent is in its name's shard.
                let name = &*self.shard_of(SourceKind::Queue, name, id);
                let k = self.keys.queue(name);
                let channel = self.keys.announce(ChannelKind::Queue, name);
                let call =
                    crate::queues::store::calls::RetryAgent { keys: &k, name: id, channel: &channel, queue: name };
                Ok(self.call(Path::WriteBack, call).await?.0 == 1)
            }
            SourceKind::Pool => {
                let name = &*self.shard_of(SourceKind::Pool, name, id);
                let k = self.keys.pool(name);
                let channel = self.keys.announce(ChannelKind::Pool, name);
                let call = crate::pools::store::calls::RetryResource { keys: &k, id, channel: &channel, pool: name };
                Ok(self.call(Path::WriteBack, call).await?.0 == 1)
            }
            SourceKind::Receiver => {
                let Some((name, id)) = self.message_shard(name, id) else { return Ok(false) };
                let k = self.keys.receiver(&name);
                let channel = self.keys.announce(ChannelKind::Receiver, &name);
                let wake_name = crate::receivers::store::wake_name(&name);
                let call = crate::receivers::store::calls::RetryMessage {
                    keys: &k,
                    id: &id,
                    channel: &channel,
                    wake_name: &wake_name,
                };
                Ok(self.call(Path::WriteBack, call).await?.0 == 1)
            }
        }
    }

    /// Drops a dead letter for good; false if it is not dead-lettered there.
    pub async fn delete_dead_letter(&self, kind: SourceKind, name: &str, id: &str) -> Result<bool> {
        let Int(deleted) = match kind {
            SourceKind::Queue => {
                let k = self.keys.queue(&self.shard_of(SourceKind::Queue, name, id));
                self.call(Path::WriteBack, calls::DeleteDeadAgent { keys: &k, name: id }).await?
            }
            SourceKind::Pool => {
                let k = self.keys.pool(&self.shard_of(SourceKind::Pool, name, id));
                self.call(Path::WriteBack, calls::DropDeadLetter { keys: &k, id }).await?
            }
            SourceKind::Receiver => {
                let Some((name, id)) = self.message_shard(name, id) else { return Ok(false) };
                let k = self.keys.receiver(&name);
                let call = crate::receivers::store::calls::DeleteDeadMessage { keys: &k, id: &id };
                self.call(Path::WriteBack, call).await?
            }
        };
        Ok(deleted == 1)
    }

    /// One page of the purge of a queue; returns (next cursor, findings).
    pub async fn purge_queue(
        &self,
        queue: &str,
        limits: PurgeLimits,
        cursor: &str,
        page: u32,
    ) -> Result<(String, Vec<Purged>)> {
        let (mut k, mut group) = self.queues.grouped_keys(queue);
        let channel = self.keys.announce(ChannelKind::Queue, queue);
        let mut tries = 0;
        // Agents blocked on their parents are in no set but `pending`: never requeued.
        loop {
            let call = calls::PurgeQueue {
                keys: &k,
                dry_run: limits.dry_run,
                max_working_age_ms: limits.max_working_age_ms,
                dlq_ttl_ms: self.policy.dead_letter.ttl_ms,
                dlq_max: self.policy.dead_letter.max_entries,
                cursor,
                limit: page.into(),
                channel: &channel,
                queue,
                group_name: &group,
            };
            match self.call(Path::WriteBack, call).await {
                Ok(PurgePage(next, found)) => return Ok((next, found)),
                Err(e) => match self.queues.group_hint(queue, &e) {
                    Some(crate::queues::store::GroupHint::Group(g)) if tries < 3 => {
                        tries += 1;
                        (k, group) = (self.keys.queue(queue).in_group(&self.keys, &g), g);
                    }
                    _ => return Err(e),
                },
            }
        }
    }

    /// One page of the purge of a pool; returns (next cursor, findings).
    pub async fn purge_pool(
        &self,
        pool: &str,
        limits: PurgeLimits,
        cursor: &str,
        page: u32,
    ) -> Result<(String, Vec<Purged>)> {
        let k = self.keys.pool(pool);
        let channel = self.keys.announce(ChannelKind::Pool, pool);
        let call = crate::pools::store::calls::PurgePool {
            keys: &k,
            dry_run: limits.dry_run,
            max_idle_age_ms: limits.max_idle_age_ms,
            max_claim_age_ms: limits.max_claim_age_ms,
            dlq_ttl_ms: self.policy.dead_letter.ttl_ms,
            dlq_max: self.policy.dead_letter.max_entries,
            cursor,
            limit: page as u64,
            channel: &channel,
            pool,
        };
        let PurgePage(next, found) = self.call(Path::WriteBack, call).await?;
        Ok((next, found))
    }

    /// One page of the purge of a receiver; returns (next cursor, findings).
    pub async fn purge_receiver(
        &self,
        receiver: &str,
        dry_run: bool,
        cursor: &str,
        page: u32,
    ) -> Result<(String, Vec<Purged>)> {
        let k = self.keys.receiver(receiver);
        let call = crate::receivers::store::calls::PurgeReceiver {
            keys: &k,
            dry_run,
            dlq_ttl_ms: self.policy.dead_letter.ttl_ms,
            dlq_max: self.policy.dead_letter.max_entries,
            cursor,
            limit: page as u64,
        };
        let PurgePage(next, found) = self.call(Path::WriteBack, call).await?;
        Ok((next, found))
    }

    /// Writes the health summary into the health hash (field -> JSON), with the overall status.
    pub async fn write_health(&self, fields: &[(String, String)]) -> Result<()> {
        let mut conn = self.redis.conn().await?;
        let mut cmd = redis::cmd("HSET");
        cmd.arg(self.keys.health());
        for (f, v) in fields {
            cmd.arg(f).arg(v);
        }
        cmd.query_async::<i64>(&mut conn).await?;
        Ok(())
    }

    /// The health hash as last written.
    pub async fn read_health(&self) -> Result<std::collections::HashMap<String, String>> {
        let mut conn = self.redis.conn().await?;
        Ok(redis::cmd("HGETALL").arg(self.keys.health()).query_async(&mut conn).await?)
    }
}

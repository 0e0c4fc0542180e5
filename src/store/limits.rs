//! Flow control: a queue's concurrency and rate limits, and pausing any source. The limits live
//! in the source's `limits` hash; acquireAgents enforces them in the same script that grants
//! leases, so no fleet can overrun them (see `lua/acquireAgents-11.lua`).

use super::{keys::ChannelKind, scripts::Args, Path, SourceKind, Store};
use crate::error::{Error, Result};

/// A token bucket: `per_second` grants on average, at most `burst` at once.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RateLimit {
    pub per_second: f64,
    pub burst: u32,
}

/// A queue's flow-control limits; `None` is no limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct QueueLimits {
    /// Most leases held at once across the whole fleet.
    pub concurrency: Option<u32>,
    pub rate: Option<RateLimit>,
    /// Most leases held at once by the agents of one key (`AgentDef::key`).
    pub key_concurrency: Option<u32>,
    /// A token bucket per key.
    pub key_rate: Option<RateLimit>,
    /// Priority aging (ms): an agent due for longer goes ahead of every priority, in its turn
    /// (keyed queues; see `lua/acquireAgents-11.lua`).
    #[serde(default)]
    pub priority_aging_ms: Option<u64>,
}

impl Store {
    /// Replaces a queue's limits (its paused state stays). Waiting Acquires are woken to look
    /// again. A sharded queue cannot take limits: each shard's script sees only its shard, so a
    /// limit over the whole queue could not be enforced atomically (`Error::Unsupported`).
    pub async fn set_limits(&self, queue: &str, limits: &QueueLimits) -> Result<()> {
        if self.shard_count(SourceKind::Queue, queue) > 1 {
            return Err(Error::Unsupported(format!(
                "queue {queue} is sharded (sharding.queues): its limits could not be enforced across shards"
            )));
        }
        self.remember_queue(queue).await?;
        let k = self.keys.queue(queue);
        let bucket = |r: Option<RateLimit>| match r {
            Some(r) => (r.per_second.to_string(), r.burst.to_string()),
            None => (String::new(), String::new()),
        };
        let (rate, burst) = bucket(limits.rate);
        let (key_rate, key_burst) = bucket(limits.key_rate);
        let args = Args::new()
            .arg(limits.concurrency.map(|c| c.to_string()).unwrap_or_default())
            .arg(rate)
            .arg(burst)
            .arg(self.keys.announce(ChannelKind::Queue, queue))
            .arg(queue)
            .arg(limits.key_concurrency.map(|c| c.to_string()).unwrap_or_default())
            .arg(key_rate)
            .arg(key_burst)
            .arg(limits.priority_aging_ms.map(|ms| ms.to_string()).unwrap_or_default());
        self.run(Path::WriteBack, "setLimits", &[&k.limits], args).await?;
        Ok(())
    }

    /// Pauses (or resumes) a queue, pool or receiver, every shard of a sharded one; answers
    /// whether any shard changed. Paused, nothing is handed out and what waits stays; resuming
    /// wakes whatever waits on it (a pool's idle resources go to the claims waiting in line).
    pub async fn set_paused(&self, kind: SourceKind, name: &str, paused: bool) -> Result<bool> {
        let mut changed = false;
        for shard in self.shard_names(kind, name) {
            let (limits, channel, message) = match kind {
                SourceKind::Queue => {
                    self.remember_queue(&shard).await?;
                    (self.keys.queue(&shard).limits, ChannelKind::Queue, shard.clone())
                }
                SourceKind::Receiver => {
                    self.remember(self.keys.receivers(), &shard).await?;
                    (self.keys.receiver(&shard).limits, ChannelKind::Receiver, super::wake_name(&shard))
                }
                SourceKind::Pool => {
                    self.remember(self.keys.pools(), &shard).await?;
                    let k = self.keys.pool(&shard);
                    let announce = self.keys.announce(ChannelKind::Pool, &shard);
                    if !paused {
                        // Resuming hands what sat idle to the claims waiting in line.
                        let args = Args::new().arg(announce).arg(&shard);
                        let reply = self.run(Path::WriteBack, "resumePool", &k.all(), args).await?;
                        let (n, _handed): (i64, i64) =
                            redis::from_redis_value(reply).map_err(|e| Error::Internal(e.to_string()))?;
                        changed |= n == 1;
                        continue;
                    }
                    (k.limits, ChannelKind::Pool, format!("C|{shard}"))
                }
            };
            let args =
                Args::new().arg(if paused { "1" } else { "" }).arg(self.keys.announce(channel, &shard)).arg(message);
            let n: i64 = redis::from_redis_value(self.run(Path::WriteBack, "setPaused", &[&limits], args).await?)
                .map_err(|e| Error::Internal(e.to_string()))?;
            changed |= n == 1;
        }
        Ok(changed)
    }
}

//! Flow control: a queue's concurrency and rate limits, and pausing any source. The limits live
//! in the source's `limits` hash; acquireAgents enforces them in the same script that grants
//! leases, so no fleet can overrun them (see `lua/queues/acquireAgents-20.lua`, and
//! `lua/queues/acquireKeyed-22.lua` for a keyed queue).

use crate::store::SourceKind;

use crate::queues::store::Queues;
use crate::store::Path;

use crate::store::keys::ChannelKind;

use crate::error::{Error, Result};
use crate::store::scripts::Pair;

/// A token bucket: `per_second` grants on average, at most `burst` at once.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RateLimit {
    pub per_second: f64,
    pub burst: u32,
}

/// A queue's flow-control limits; `None` is no limit.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct QueueLimits {
    /// Most leases held at once across the whole fleet.
    pub concurrency: Option<u32>,
    pub rate: Option<RateLimit>,
    /// Most leases held at once by the agents of one key (`AgentDef::key`).
    pub key_concurrency: Option<u32>,
    /// A token bucket per key.
    pub key_rate: Option<RateLimit>,
    /// Priority aging (ms): an agent due for longer goes ahead of every priority, in its turn
    /// (keyed queues; see `lua/queues/acquireKeyed-22.lua`).
    #[serde(default)]
    pub priority_aging_ms: Option<u64>,
    /// The shared concurrency group the queue is a member of (SetGroupLimits); None for none.
    #[serde(default)]
    pub group: Option<String>,
}

/// A shared concurrency group's limits (AdminService.SetGroupLimits): they hold over every
/// member queue together (`lua/includes/groupLimits.lua`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GroupLimits {
    /// Most leases held at once over every member queue.
    pub concurrency: Option<u32>,
    /// Grants over every member queue.
    pub rate: Option<RateLimit>,
    /// Most leases held at once by the agents of one key over every member queue.
    pub key_concurrency: Option<u32>,
}

/// A group's limits and what it holds now.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupStatus {
    pub name: String,
    pub limits: GroupLimits,
    /// Leases granted under the group and not ended yet, over every member queue.
    pub held: u64,
    /// What the group's bucket holds now (with a rate).
    pub tokens: Option<f64>,
}

impl Queues {
    /// Replaces a queue's limits (its paused state stays). Waiting Acquires are woken to look
    /// again. A sharded queue cannot take limits: each shard's script sees only its shard, so a
    /// limit over the whole queue could not be enforced atomically (`Error::Unsupported`).
    ///
    /// A group (`limits.group`) must exist (SetGroupLimits) and the store must not be a Redis
    /// Cluster, where the group's keys live in another slot than the queue's, which one script
    /// cannot touch: both are `Error::GroupRefused`, and nothing is written.
    pub async fn set_limits(&self, queue: &str, limits: &QueueLimits) -> Result<()> {
        if self.shard_count(SourceKind::Queue, queue) > 1 {
            return Err(Error::Unsupported(format!(
                "queue {queue} is sharded (sharding.queues): its limits could not be enforced across shards"
            )));
        }
        let group = limits.group.as_deref().unwrap_or("");
        if !group.is_empty() {
            if self.keys.is_sharded() {
                return Err(Error::GroupRefused(format!(
                    "Redis Cluster: group {group}'s counts live in another slot than queue {queue}'s keys, and no \
                     script may touch both; shared concurrency groups need a single Redis (or Sentinel)"
                )));
            }
            if self.group_limits(group).await?.is_none() {
                return Err(Error::GroupRefused(format!(
                    "group {group} does not exist: create it with SetGroupLimits"
                )));
            }
        }
        self.remember_queue(queue).await?;
        let k = self.keys.queue(queue);
        let bucket = |r: Option<RateLimit>| match r {
            Some(r) => (r.per_second.to_string(), r.burst.to_string()),
            None => (String::new(), String::new()),
        };
        let (rate, burst) = bucket(limits.rate);
        let (key_rate, key_burst) = bucket(limits.key_rate);
        let call = super::store::calls::SetLimits {
            limits: &k.limits,
            concurrency: &limits.concurrency.map(|c| c.to_string()).unwrap_or_default(),
            rate: &rate,
            burst: &burst,
            channel: &self.keys.announce(ChannelKind::Queue, queue),
            queue,
            key_concurrency: &limits.key_concurrency.map(|c| c.to_string()).unwrap_or_default(),
            key_rate: &key_rate,
            key_burst: &key_burst,
            aging_ms: &limits.priority_aging_ms.map(|ms| ms.to_string()).unwrap_or_default(),
            group,
        };
        let recount = self.call(Path::WriteBack, call).await?.0 == 1;
        self.learn_group(queue, group);
        if recount {
            // key_concurrency started or stopped the keys' lease counts: the recount (or drop)
            // it started ends before the call answers, so the limit binds on true counts.
            self.recount_keys(queue, RECOUNT_STEP).await?;
        }
        Ok(())
    }

    /// Creates or replaces a shared concurrency group's limits; answers whether it existed.
    /// Member queues held back by it are woken to look again.
    pub async fn set_group_limits(&self, group: &str, limits: &GroupLimits) -> Result<bool> {
        // The registry entry first, as for queues: an entry without data lists as a group
        // with no limits; data without one would be invisible to ListGroupLimits.
        let mut conn = self.redis.conn().await?;
        redis::cmd("ZADD").arg(self.keys.groups()).arg(0).arg(group).query_async::<i64>(&mut conn).await?;
        let g = self.keys.group(group);
        let (rate, burst) = match limits.rate {
            Some(r) => (r.per_second.to_string(), r.burst.to_string()),
            None => (String::new(), String::new()),
        };
        let call = super::store::calls::SetGroupLimits {
            group: &g.limits,
            blocked: &g.blocked,
            concurrency: &limits.concurrency.map(|c| c.to_string()).unwrap_or_default(),
            rate: &rate,
            burst: &burst,
            key_concurrency: &limits.key_concurrency.map(|c| c.to_string()).unwrap_or_default(),
        };
        Ok(self.call(Path::WriteBack, call).await?.0 == 1)
    }

    /// A group's limits and what it holds now; None when it does not exist.
    pub async fn group_limits(&self, group: &str) -> Result<Option<GroupStatus>> {
        let g = self.keys.group(group);
        let GroupRead(read) = self.call(Path::Dispatch, super::store::calls::ReadGroup { group: &g.limits }).await?;
        Ok(read.map(|(limits, held, tokens)| GroupStatus { name: group.to_string(), limits, held, tokens }))
    }

    /// One page of the groups, in name order, after `after` (exclusive).
    pub async fn list_groups(&self, after: Option<&str>, count: u32) -> Result<Vec<GroupStatus>> {
        let start = match after {
            Some(g) => format!("({g}"),
            None => "-".to_string(),
        };
        let mut conn = self.redis.conn().await?;
        let names: Vec<String> = redis::cmd("ZRANGE")
            .arg(self.keys.groups())
            .arg(&start)
            .arg("+")
            .arg("BYLEX")
            .arg("LIMIT")
            .arg(0)
            .arg(count)
            .query_async(&mut conn)
            .await?;
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            let status = self.group_limits(&name).await?;
            out.push(status.unwrap_or(GroupStatus { name, limits: GroupLimits::default(), held: 0, tokens: None }));
        }
        Ok(out)
    }
}

/// What readGroup answered: None when the group does not exist.
pub(crate) struct GroupRead(Option<(GroupLimits, u64, Option<f64>)>);

impl crate::store::scripts::FromReply for GroupRead {
    /// `{ exists, concurrency, rate, burst, key_concurrency, held, tokens }`
    fn from_reply(mut r: crate::store::reply::Reply) -> Result<Self> {
        let exists: i64 = r.next()?;
        let concurrency: String = r.next()?;
        let rate: String = r.next()?;
        let burst: String = r.next()?;
        let key_concurrency: String = r.next()?;
        let held: i64 = r.next()?;
        let tokens: String = r.next()?;
        if exists != 1 {
            return Ok(GroupRead(None));
        }
        let rate = match (rate.parse::<f64>(), burst.parse::<u32>()) {
            (Ok(per_second), Ok(burst)) => Some(RateLimit { per_second, burst }),
            _ => None,
        };
        let limits =
            GroupLimits { concurrency: concurrency.parse().ok(), rate, key_concurrency: key_concurrency.parse().ok() };
        Ok(GroupRead(Some((limits, held.max(0) as u64, tokens.parse().ok()))))
    }
}

impl Queues {
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
                    (self.keys.receiver(&shard).limits, ChannelKind::Receiver, crate::store::keys::wake_name(&shard))
                }
                SourceKind::Pool => {
                    self.remember(self.keys.pools(), &shard).await?;
                    let k = self.keys.pool(&shard);
                    let announce = self.keys.announce(ChannelKind::Pool, &shard);
                    if !paused {
                        // Resuming hands what sat idle to the claims waiting in line.
                        let call =
                            crate::pools::store::calls::ResumePool { keys: &k, channel: &announce, pool: &shard };
                        let crate::pools::store::Resumed { was_paused, .. } = self.call(Path::WriteBack, call).await?;
                        changed |= was_paused;
                        continue;
                    }
                    (k.limits, ChannelKind::Pool, format!("C|{shard}"))
                }
            };
            let channel = self.keys.announce(channel, &shard);
            let call = super::store::calls::SetPaused { limits: &limits, paused, channel: &channel, message: &message };
            changed |= self.call(Path::WriteBack, call).await?.0 == 1;
        }
        Ok(changed)
    }
}

/// Most a key's weight can be (`KeyLimits::weight`).
pub(crate) const MAX_KEY_WEIGHT: u32 = 1000;

/// One key's weight and overrides of the queue's per-key limits (AdminService.SetKeyLimits).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeyLimits {
    /// Share of the key in fair queuing: 1 to [`MAX_KEY_WEIGHT`]; a key of weight w gets w
    /// turns for every turn of a key of weight 1 when both have due work.
    pub weight: u32,
    /// Overrides key_concurrency: `Some(0)` is no limit for this key; `None` is the queue's.
    pub concurrency: Option<u32>,
    /// Overrides key_rate; `None` is the queue's.
    pub rate: Option<RateLimit>,
}

impl Default for KeyLimits {
    fn default() -> Self {
        Self { weight: 1, concurrency: None, rate: None }
    }
}

impl KeyLimits {
    /// The record acquireAgents reads: "weight|concurrency|rate|burst" ("" for the defaults).
    fn record(&self) -> String {
        if *self == Self::default() {
            return String::new();
        }
        let (rate, burst) = match self.rate {
            Some(r) => (r.per_second.to_string(), r.burst.to_string()),
            None => (String::new(), String::new()),
        };
        format!("{}|{}|{rate}|{burst}", self.weight, self.concurrency.map(|c| c.to_string()).unwrap_or_default())
    }

    fn parse(record: &str) -> Self {
        let mut parts = record.split('|');
        let mut next = || parts.next().unwrap_or("");
        let (w, c, r, b) = (next(), next(), next(), next());
        let rate = match (r.parse::<f64>(), b.parse::<u32>()) {
            (Ok(per_second), Ok(burst)) => Some(RateLimit { per_second, burst }),
            _ => None,
        };
        Self { weight: w.parse().unwrap_or(1), concurrency: c.parse().ok(), rate }
    }
}

/// A key's weight and overrides, with what it holds now.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyLimitsEntry {
    pub key: String,
    pub limits: KeyLimits,
    /// Leases the key holds now (`held|<key>`).
    pub held: u64,
}

/// Entries each step of a recount reads (HSCAN COUNT): one script call's work.
pub(crate) const RECOUNT_STEP: u32 = 200;

/// What a recount of a queue's per-key lease counts found.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Recount {
    /// Keyed leases the scan counted.
    pub leases: u64,
    /// Keys whose count was wrong and was set to the true one.
    pub corrected: u64,
    /// Script calls it took (each a bounded step).
    pub steps: u64,
}

impl Queues {
    /// Replaces one key's weight and overrides (the defaults remove its record); answers whether
    /// it had one. A sharded queue refuses them (`Error::Unsupported`), as it refuses limits.
    pub async fn set_key_limits(&self, queue: &str, key: &str, limits: &KeyLimits) -> Result<bool> {
        if self.shard_count(SourceKind::Queue, queue) > 1 {
            return Err(Error::Unsupported(format!(
                "queue {queue} is sharded (sharding.queues): per-key limits could not be enforced across shards"
            )));
        }
        self.remember_queue(queue).await?;
        let k = self.keys.queue(queue);
        let channel = self.keys.announce(ChannelKind::Queue, queue);
        let call =
            super::store::calls::SetKeyLimits { keys: &k, key, record: &limits.record(), channel: &channel, queue };
        let Pair(had, recount) = self.call(Path::WriteBack, call).await?;
        if recount == 1 {
            // The first record started the keys' lease counts, or the last one stopped them.
            self.recount_keys(queue, RECOUNT_STEP).await?;
        }
        Ok(had == 1)
    }

    /// The weight, overrides and held count of the given keys (a key without a record has the
    /// defaults).
    pub async fn key_limits(&self, queue: &str, keys: &[&str]) -> Result<Vec<KeyLimitsEntry>> {
        let k = self.keys.queue(queue);
        let listed = keys
            .iter()
            .map(|key| super::store::calls::ReadKeyLimitsListed { key, _item: Default::default() })
            .collect();
        let call = super::store::calls::ReadKeyLimits { keys: &k, after: "", count: keys.len() as u64, listed };
        Ok(self.call(Path::Dispatch, call).await?.0)
    }

    /// One page of the keys with a record, in key order, after `after` (exclusive).
    pub async fn list_key_limits(&self, queue: &str, after: Option<&str>, count: u32) -> Result<Vec<KeyLimitsEntry>> {
        let start = match after {
            Some(key) => format!("({key}"),
            None => "-".to_string(),
        };
        let k = self.keys.queue(queue);
        let call =
            super::store::calls::ReadKeyLimits { keys: &k, after: &start, count: count.into(), listed: Vec::new() };
        Ok(self.call(Path::Dispatch, call).await?.0)
    }

    /// Recounts the leases each key holds from the lease records, in every shard, in steps of
    /// about `count` entries each (see `lua/queues/recountKeys-2.lua` for why it is right while leases
    /// come and go). Resumes a recount left unfinished.
    pub async fn recount_keys(&self, queue: &str, count: u32) -> Result<Recount> {
        let mut total = Recount::default();
        for shard in self.shard_names(SourceKind::Queue, queue) {
            let k = self.keys.queue(&shard);
            loop {
                let call = super::store::calls::RecountKeys { keys: &k, count: count.into() };
                let RecountStep { done, leases, corrected } = self.call(Path::WriteBack, call).await?;
                total.leases += leases as u64;
                total.corrected += corrected as u64;
                total.steps += 1;
                if done {
                    break;
                }
            }
        }
        Ok(total)
    }
}

/// What readKeyLimits answered: the keys asked for, or one page of the keys with a record.
pub(crate) struct KeyLimitsEntries(pub Vec<KeyLimitsEntry>);

impl crate::store::scripts::FromReply for KeyLimitsEntries {
    /// `{ (key, record or "", held, bucket or "")* }`
    fn from_reply(mut r: crate::store::reply::Reply) -> Result<Self> {
        let mut out = Vec::new();
        while !r.is_empty() {
            let key: String = r.next()?;
            let record: String = r.next()?;
            let held: i64 = r.next()?;
            let _bucket: String = r.next()?;
            out.push(KeyLimitsEntry { key, limits: KeyLimits::parse(&record), held: held.max(0) as u64 });
        }
        Ok(KeyLimitsEntries(out))
    }
}

/// One step of recountKeys: whether the recount finished, the leases it counted and the keys
/// it corrected (the phase it reports after them is not read).
pub(crate) struct RecountStep {
    done: bool,
    leases: i64,
    corrected: i64,
}

impl crate::store::scripts::FromReply for RecountStep {
    /// `{ done, leases counted, keys corrected, phase }`
    fn from_reply(mut r: crate::store::reply::Reply) -> Result<Self> {
        Ok(RecountStep { done: r.next::<i64>()? == 1, leases: r.next()?, corrected: r.next()? })
    }
}

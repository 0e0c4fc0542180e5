//! Sharded queues: a queue named in `sharding.queues` with N > 1 lives in N physical queues,
//! `name#0` … `name#N-1`, each with its own hash tag (`{q:name#i}`), so a hot queue spreads over
//! up to N slots (shards) of a Redis Cluster. An agent lives in shard CRC16(name) mod N, so every
//! call naming an agent goes to one shard; Acquire peeks at every shard's earliest entry (one
//! round, concurrent) and takes from the shards with something due, round-robin, then from the
//! earliest. Each shard keeps its own fencing-token counter: tokens increase strictly per
//! shard, not across the queue. Physical names contain `#`, which no user name may.
//!
//! These are the AgentService entry points of `Store`; everything below them (scripts,
//! sweepers, registries) sees physical queues and needs no change.

use std::{
    borrow::Cow,
    collections::{BTreeMap, HashMap},
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
};

use super::{Acquired, AgentDef, AgentInfo, AgentPage, Completed, Completion, Store};
use crate::error::{Error, Result};

/// Round-robin start among due shards, shared by every sharded queue (fair enough: it only
/// breaks ties).
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// The queue a physical name belongs to: `hot#2` → `hot`.
pub fn logical(physical: &str) -> &str {
    physical.split_once('#').map_or(physical, |(queue, _)| queue)
}

impl Store {
    /// Declares sharded queues (`sharding.queues`).
    pub fn with_sharding(mut self, shards: HashMap<String, u32>) -> Self {
        self.shards = Arc::new(shards.into_iter().filter(|(_, n)| *n > 1).collect());
        self
    }

    /// How many shards `queue` has (1 unless declared).
    pub fn shard_count(&self, queue: &str) -> u32 {
        self.shards.get(queue).copied().unwrap_or(1)
    }

    /// The physical queues of `queue`: itself, or `queue#0` … `queue#N-1`.
    pub fn shard_names(&self, queue: &str) -> Vec<String> {
        match self.shard_count(queue) {
            1 => vec![queue.to_string()],
            n => (0..n).map(|i| format!("{queue}#{i}")).collect(),
        }
    }

    /// The physical queue holding agent `name` of `queue`.
    pub fn shard_of<'a>(&self, queue: &'a str, name: &str) -> Cow<'a, str> {
        match self.shard_count(queue) {
            1 => Cow::Borrowed(queue),
            n => {
                let i = crc16::State::<crc16::XMODEM>::calculate(name.as_bytes()) as u32 % n;
                Cow::Owned(format!("{queue}#{i}"))
            }
        }
    }

    /// Upserts definitions; returns (created, updated). On a sharded queue, one script per
    /// shard: atomic per shard, not across them.
    pub async fn register(&self, queue: &str, agents: &[AgentDef], reset: bool) -> Result<(u32, u32)> {
        if self.shard_count(queue) == 1 {
            return self.register_in(queue, agents, reset).await;
        }
        let mut by_shard: BTreeMap<String, Vec<AgentDef>> = BTreeMap::new();
        for def in agents {
            by_shard.entry(self.shard_of(queue, &def.name).into_owned()).or_default().push(def.clone());
        }
        let (mut created, mut updated) = (0, 0);
        for (shard, defs) in by_shard {
            let (c, u) = self.register_in(&shard, &defs, reset).await?;
            created += c;
            updated += u;
        }
        Ok((created, updated))
    }

    /// Removes definitions; returns how many existed.
    pub async fn unregister(&self, queue: &str, names: &[String]) -> Result<u32> {
        let mut by_shard: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for name in names {
            by_shard.entry(self.shard_of(queue, name).into_owned()).or_default().push(name.clone());
        }
        let mut removed = 0;
        for (shard, names) in by_shard {
            removed += self.unregister_in(&shard, &names).await?;
        }
        Ok(removed)
    }

    /// Grants up to `max` due agents to `worker`. On a sharded queue: one round of peeks at
    /// every shard's earliest entry (and the Redis clock), then the acquire script on the shards
    /// with something due — round-robin among them — until `max` are granted.
    pub async fn acquire(&self, queue: &str, worker: &str, max: u32) -> Result<Acquired> {
        if self.shard_count(queue) == 1 {
            return self.acquire_in(queue, worker, max).await;
        }
        let shards = self.shard_names(queue);
        let mut peeks = vec![redis::cmd("TIME")];
        for shard in &shards {
            let mut head = redis::cmd("ZRANGE");
            head.arg(&self.keys.queue(shard).waiting).arg(0).arg(0).arg("WITHSCORES");
            peeks.push(head);
        }
        let mut answers = self.redis.each(peeks).await?.into_iter();
        let (secs, micros): (i64, i64) = answers
            .next()
            .map(redis::from_redis_value)
            .transpose()
            .map_err(|e| Error::Internal(format!("TIME: {e}")))?
            .unwrap_or_default();
        let now_ms = secs * 1000 + micros / 1000;
        let heads: Vec<Option<i64>> = answers
            .map(|v| {
                let pair: Vec<(String, f64)> = redis::from_redis_value(v).unwrap_or_default();
                pair.first().map(|(_, score)| *score as i64)
            })
            .collect();
        let start = NEXT.fetch_add(1, Ordering::Relaxed);
        let mut due: Vec<usize> = (0..shards.len()).filter(|&i| heads[i].is_some_and(|h| h <= now_ms)).collect();
        let turn = start % due.len().max(1);
        due.rotate_left(turn);
        let mut got = Acquired { now_ms, next_due_ms: heads.iter().flatten().copied().min(), leases: Vec::new() };
        for i in due {
            let want = max - got.leases.len() as u32;
            if want == 0 {
                break;
            }
            let part = self.acquire_in(&shards[i], worker, want).await?;
            got.now_ms = part.now_ms;
            got.leases.extend(part.leases);
        }
        if got.leases.len() < max as usize {
            // What is left due later: the earliest head not yet taken (a peek, no script).
            got.next_due_ms = heads.iter().flatten().copied().filter(|h| *h > now_ms).min().or(got.next_due_ms);
        }
        Ok(got)
    }

    /// Extends leases of one queue; returns each lease's new deadline, or None if lost.
    pub async fn heartbeat(&self, queue: &str, worker: &str, leases: &[(&str, u64)]) -> Result<Vec<Option<i64>>> {
        if self.shard_count(queue) == 1 {
            return self.heartbeat_in(queue, worker, leases).await;
        }
        // Positions in `leases`, by shard.
        let mut by_shard: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, lease) in leases.iter().enumerate() {
            by_shard.entry(self.shard_of(queue, lease.0).into_owned()).or_default().push(i);
        }
        let mut out = vec![None; leases.len()];
        for (shard, positions) in by_shard {
            let pairs: Vec<(&str, u64)> = positions.iter().map(|&i| leases[i]).collect();
            let deadlines = self.heartbeat_in(&shard, worker, &pairs).await?;
            for (i, deadline) in positions.into_iter().zip(deadlines) {
                out[i] = deadline;
            }
        }
        Ok(out)
    }

    /// Ends a lease with an outcome. A stale or unknown token is `Error::LeaseLost`.
    pub async fn complete(&self, c: &Completion) -> Result<Completed> {
        match self.shard_of(&c.queue, &c.name) {
            Cow::Borrowed(_) => self.complete_in(c).await,
            Cow::Owned(shard) => self.complete_in(&Completion { queue: shard, ..c.clone() }).await,
        }
    }

    /// Hands a lease back; returns the next run, or None when the agent was unregistered.
    pub async fn release(&self, queue: &str, name: &str, token: u64, delay_ms: u64) -> Result<Option<i64>> {
        self.release_in(&self.shard_of(queue, name), name, token, delay_ms).await
    }

    /// One agent's definition and state, or None.
    pub async fn get_agent(&self, queue: &str, name: &str) -> Result<Option<AgentInfo>> {
        self.get_agent_in(&self.shard_of(queue, name), name).await
    }

    /// A page of agents in name order, starting after `after`: on a sharded queue, a page of
    /// each shard, merged.
    pub async fn list_agents(&self, queue: &str, after: &str, page_size: u32) -> Result<AgentPage> {
        if self.shard_count(queue) == 1 {
            return self.list_agents_in(queue, after, page_size).await;
        }
        let pages = futures::future::try_join_all(
            self.shard_names(queue).iter().map(|s| self.list_agents_in(s, after, page_size)),
        )
        .await?;
        // A shard that has more after its page bounds how far the merge is complete.
        let bound = pages.iter().filter_map(|p| p.next_after.clone()).min();
        let mut agents: Vec<AgentInfo> = pages.into_iter().flat_map(|p| p.agents).collect();
        agents.sort_by(|a, b| a.def.name.cmp(&b.def.name));
        if let Some(bound) = &bound {
            agents.retain(|a| a.def.name <= *bound);
        }
        let more = bound.is_some() || agents.len() > page_size as usize;
        agents.truncate(page_size as usize);
        let next_after = if more { agents.last().map(|a| a.def.name.clone()) } else { None };
        Ok(AgentPage { agents, next_after })
    }
}

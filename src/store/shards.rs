//! Sharded sources: a queue, pool or receiver named in `sharding.*` with N > 1 lives in N
//! physical sources, `name#0` … `name#N-1`, each with its own hash tag (`{q:name#i}`), so a hot
//! source spreads over up to N slots (shards) of a Redis Cluster. Physical names contain `#`,
//! which no user name may. Every member lives in one shard, so every call naming a member goes
//! to one shard:
//!
//! - a queue's agent in shard CRC16(agent name) mod N. Acquire runs its script on one shard,
//!   the next in turn; only when that one falls short does it peek at every other shard's
//!   earliest entry (one round, concurrent) and take from the shards with something due,
//!   round-robin;
//! - a pool's resource in shard CRC16(resource id) mod N (`pools`);
//! - a receiver's message in shard CRC16(key) mod N, or the next shard in turn when it has no
//!   key; its id names the shard, `<shard>.<id in the shard>` (`receivers`).
//!
//! Each shard keeps its own counters: fencing tokens increase strictly per shard, not across
//! the source. The core keeps the shard counts and the primitives here; each domain store
//! routes its own operations (`queues::shards`, `pools::shards`, `receivers::shards`), through
//! its per-shard layer (`Shard`); everything below them (scripts, sweepers, registries) sees
//! physical sources.

use std::{
    borrow::Cow,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
};

use crate::store::SourceKind;

use crate::store::Core;
use crate::{
    config::ShardCounts,
    error::{Error, Result},
};

/// The per-shard layer of a domain store `S`: its methods act on one physical source (a shard
/// of a sharded source, or an unsharded source) that their caller names. Only the domain
/// store's own methods reach it, after routing a logical name to its shards
/// (`Shard(self).claim(shard, ..)`), so each operation has one public name: the store's.
pub(crate) struct Shard<'a, S>(pub(crate) &'a S);

impl<S> std::ops::Deref for Shard<'_, S> {
    type Target = S;

    fn deref(&self) -> &S {
        self.0
    }
}

/// Round-robin start among due shards, shared by every sharded source (fair enough: it only
/// breaks ties).
pub(crate) static NEXT: AtomicUsize = AtomicUsize::new(0);

/// The source a physical name belongs to: `hot#2` → `hot`.
pub(crate) fn logical(physical: &str) -> &str {
    physical.split_once('#').map_or(physical, |(source, _)| source)
}

/// The shard index of a physical name: `hot#2` → 2 (None for an unsharded name).
pub(crate) fn index(physical: &str) -> Option<u32> {
    physical.split_once('#').and_then(|(_, i)| i.parse().ok())
}

/// Where a member with this hash key lives among `n` shards.
pub(crate) fn slot_of(member: &str, n: u32) -> u32 {
    crc16::State::<crc16::XMODEM>::calculate(member.as_bytes()) as u32 % n
}

/// Shard counts of each kind of source.
#[derive(Debug, Default)]
pub(crate) struct Sharding {
    queues: ShardCounts,
    pools: ShardCounts,
    receivers: ShardCounts,
}

impl Sharding {
    pub(crate) fn of(&self, kind: SourceKind) -> &ShardCounts {
        match kind {
            SourceKind::Queue => &self.queues,
            SourceKind::Pool => &self.pools,
            SourceKind::Receiver => &self.receivers,
        }
    }
}

/// One round of reads at every shard (concurrent on a cluster) with the Redis clock: returns
/// now (ms) and the replies in order.
pub(crate) async fn peek(store: &Core, cmds: Vec<redis::Cmd>) -> Result<(i64, std::vec::IntoIter<redis::Value>)> {
    let mut all = vec![redis::cmd("TIME")];
    all.extend(cmds);
    let mut answers = store.redis.each(all).await?.into_iter();
    let (secs, micros): (i64, i64) = answers
        .next()
        .map(redis::from_redis_value)
        .transpose()
        .map_err(|e| Error::Internal(format!("TIME: {e}")))?
        .unwrap_or_default();
    Ok((secs * 1000 + micros / 1000, answers))
}

/// The score of a `ZRANGE key 0 0 WITHSCORES` reply.
pub(crate) fn head_score(v: redis::Value) -> Option<i64> {
    let pair: Vec<(String, f64)> = redis::from_redis_value(v).unwrap_or_default();
    pair.first().map(|(_, score)| *score as i64)
}

/// The next round-robin turn.
pub(crate) fn next_turn() -> usize {
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Indices `0..n` satisfying `keep`, rotated to start at the next round-robin turn.
pub(crate) fn in_turn(n: usize, keep: impl Fn(usize) -> bool) -> Vec<usize> {
    let mut chosen: Vec<usize> = (0..n).filter(|&i| keep(i)).collect();
    let turn = next_turn() % chosen.len().max(1);
    chosen.rotate_left(turn);
    chosen
}

impl Core {
    /// Declares sharded queues, pools and receivers (`sharding.*`).
    pub fn with_sharding(mut self, [queues, pools, receivers]: [ShardCounts; 3]) -> Self {
        let keep = |m: ShardCounts| m.into_iter().filter(|(_, n)| *n > 1).collect();
        self.shards = Arc::new(Sharding { queues: keep(queues), pools: keep(pools), receivers: keep(receivers) });
        self
    }

    /// How many shards a source has (1 unless declared).
    pub fn shard_count(&self, kind: SourceKind, name: &str) -> u32 {
        self.shards.of(kind).get(name).copied().unwrap_or(1)
    }

    /// The physical sources of a source: itself, or `name#0` … `name#N-1`.
    pub fn shard_names(&self, kind: SourceKind, name: &str) -> Vec<String> {
        match self.shard_count(kind, name) {
            1 => vec![name.to_string()],
            n => (0..n).map(|i| format!("{name}#{i}")).collect(),
        }
    }

    /// The physical source holding the member hashed by `member` (an agent name, a resource
    /// id, a message key).
    pub fn shard_of<'a>(&self, kind: SourceKind, name: &'a str, member: &str) -> Cow<'a, str> {
        match self.shard_count(kind, name) {
            1 => Cow::Borrowed(name),
            n => Cow::Owned(format!("{name}#{}", slot_of(member, n))),
        }
    }
}

//! The store core: with the domain stores over it, the only code that talks to Redis. Every
//! multi-key change is one Lua script (see `scripts`), all of whose keys come from `keys` and
//! share one hash tag. Redis TIME, read inside the scripts, is the only clock. Every script call
//! passes one of the two circuit breakers (`breaker`).
//!
//! [`Core`] holds what every domain shares: the connection, the script manager, the breakers,
//! the keys, the policy, the bulk lanes, the registries of sources and the shard counts
//! (`shards`). It knows no domain. Each domain's store lives in its folder and extends the core
//! with that domain's transitions (`queues::store::Queues`, `flows::store::Flows`,
//! `pools::store::Pools`, `receivers::store::Receivers`, `elections::store::Elections`,
//! `admin::store::Admin`): it holds a clone of the core (shared parts, cheap) and its own state,
//! and derefs to the core (`over_core!`). A domain store's public methods take a logical
//! source name; on a sharded source they route to its shards through the store's per-shard
//! layer (`shards::Shard`).

pub(crate) mod breaker;
pub mod conn;
pub mod keys;
pub(crate) mod reply;
pub mod scripts;
pub(crate) mod shards;
pub(crate) mod target;
pub mod wake;

use std::sync::Arc;

use redis::Value;

use crate::error;

use crate::config::{AgentConfig, BreakerConfig, DeadLetterConfig, IdempotencyConfig};

use crate::error::Result;

use crate::store::breaker::Breakers;
pub use conn::Redis;
pub use keys::Keys;
use scripts::Args;
pub use scripts::Scripts;

/// Which kind of source a queue-or-pool name belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    Queue,
    Pool,
    Receiver,
}

impl SourceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Queue => "queue",
            SourceKind::Pool => "pool",
            SourceKind::Receiver => "receiver",
        }
    }
}

/// The policy the scripts apply, from configuration.
#[derive(Clone, Debug)]
pub struct Policy {
    /// Backoff, jitter and defaults of agents.
    pub agent: AgentConfig,
    /// Most waiting entries one Acquire reads.
    pub scan_limit: u32,
    /// Most items one script call handles: a larger batch (Register, Unregister, Acquire,
    /// Heartbeat, Complete) runs as several script calls, each atomic on its own, so no call
    /// holds Redis (which runs one script at a time) for longer than a small batch takes.
    pub script_batch: u32,
    /// TTL and size bound of every dead-letter queue.
    pub dead_letter: DeadLetterConfig,
    /// How long and how many first answers each source remembers by request id.
    pub idempotency: IdempotencyConfig,
    /// Most large script calls in flight to one Redis node (0: no bound): see `Bulk`.
    pub bulk_inflight: u32,
    /// How long and how many finishes each queue keeps (`with_flows`).
    pub results: crate::config::ResultsConfig,
    /// Idempotency windows of one-shot agents (`with_flows`).
    pub dedup: crate::config::DedupConfig,
    /// Most steps one run records (limits.max_steps).
    pub max_steps: u32,
    /// Most result bytes of one run's steps together (limits.max_step_bytes).
    pub max_step_bytes: usize,
    /// Most signals one run keeps before a wait names them (limits.max_pending_signals).
    pub max_pending_signals: u32,
    /// Most children of its own queue a finishing script releases itself (flows.release_inline).
    pub release_inline: u64,
}

impl Policy {
    pub fn new(
        agent: &AgentConfig,
        limits: &crate::config::Limits,
        dead_letter: &DeadLetterConfig,
        idempotency: &IdempotencyConfig,
    ) -> Self {
        Self {
            agent: agent.clone(),
            scan_limit: limits.scan_limit,
            script_batch: limits.script_batch.max(1),
            dead_letter: dead_letter.clone(),
            idempotency: idempotency.clone(),
            bulk_inflight: limits.bulk_inflight,
            results: Default::default(),
            dedup: Default::default(),
            max_steps: limits.max_steps,
            max_step_bytes: limits.max_step_bytes,
            max_pending_signals: limits.max_pending_signals,
            release_inline: crate::config::FlowsConfig::default().release_inline,
        }
    }

    /// The policy with the configured retention of finishes, idempotency windows and releases.
    pub fn with_flows(
        mut self,
        results: &crate::config::ResultsConfig,
        dedup: &crate::config::DedupConfig,
        flows: &crate::config::FlowsConfig,
    ) -> Self {
        self.results = results.clone();
        self.dedup = dedup.clone();
        self.release_inline = flows.release_inline;
        self
    }

    /// The request id of step `i` of a call split into script calls: step 0 keeps the call's
    /// own (so a call within one step is remembered as before), later steps add `#i`.
    pub(crate) fn step_request_id(request_id: &str, i: usize) -> String {
        if i == 0 || request_id.is_empty() {
            request_id.to_string()
        } else {
            format!("{request_id}#{i}")
        }
    }

    /// `items` in slices of at most `script_batch`: one script call each.
    pub(crate) fn chunks<'a, T>(&self, items: &'a [T]) -> std::slice::Chunks<'a, T> {
        items.chunks(self.script_batch as usize)
    }
}

/// The field a request id's first answer is remembered under (`recall`/`remember` in Lua):
/// `<call>|<request id>`, where `call` names the RPC and what the answer is for (a lease's name
/// and token, a claimer), so a request id answers only for the same call and never lets a
/// stale holder through. "" without a request id: nothing is remembered.
pub fn request_field(request_id: &str, call: impl FnOnce() -> String) -> String {
    if request_id.is_empty() {
        String::new()
    } else {
        format!("{}|{request_id}", call())
    }
}

/// Bound on one probe of a node: far above a healthy round trip, far below the command timeout,
/// so a dead node is found at probe pace, not at the command timeout's.
pub(crate) const PROBE_LIMIT: std::time::Duration = std::time::Duration::from_millis(1_000);

/// What a probe found of one Redis node.
#[derive(Clone, Debug)]
pub struct NodeProbe {
    /// `host:port` of a cluster's primary; the address of a single node; `sentinel:<master>`.
    pub node: Arc<str>,
    /// It answered PING within the probe's bound.
    pub answered: bool,
    /// Its breakers are closed (calls to it go through).
    pub closed: bool,
}

/// Which circuit breaker guards a call.
#[derive(Clone, Copy, Debug)]
pub enum Path {
    /// Handing out work and reading state: Acquire, Campaign, GetAgent, ListAgents, GetLeader.
    Dispatch,
    /// Writing results back: Register, Heartbeat, Complete, Release, Renew, Resign, sweeps.
    WriteBack,
}

/// A registry's size and its first names (in byte order) when it was last read in full.
pub(crate) type FirstNames = (u64, Vec<String>);

/// Script calls on more items than this take a turn in their node's bulk lane.
pub const BULK_ITEMS: usize = 8;

/// The bulk lanes: at most `per_node` script calls of more than [`BULK_ITEMS`] items in flight
/// to one Redis node. Redis runs one script at a time, in the order they arrive, so a fleet
/// draining in batches of 100 would otherwise keep dozens of large scripts queued there, and a
/// lone Acquire of one lease would wait for all of them. A few in flight keep Redis as busy
/// (each runs far longer than a loopback round trip); the rest wait here, in arrival order
/// (tokio's semaphore is fair), where a small call passes them.
pub(crate) struct Bulk {
    per_node: u32,
    lanes: std::sync::RwLock<std::collections::BTreeMap<Arc<str>, Arc<tokio::sync::Semaphore>>>,
    /// Calls waiting for a turn, on every lane.
    waiting: std::sync::atomic::AtomicUsize,
}

impl Bulk {
    pub(crate) fn new(per_node: u32) -> Self {
        Self { per_node, lanes: Default::default(), waiting: Default::default() }
    }

    /// Waits for a turn on `node`'s lane; `None` when lanes are off (`per_node` 0).
    pub(crate) async fn turn(&self, node: &Arc<str>) -> Option<tokio::sync::OwnedSemaphorePermit> {
        if self.per_node == 0 {
            return None;
        }
        let lane = self.lanes.read().expect("bulk lanes").get(node).cloned();
        let lane = match lane {
            Some(lane) => lane,
            None => self
                .lanes
                .write()
                .expect("bulk lanes")
                .entry(node.clone())
                .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(self.per_node as usize)))
                .clone(),
        };
        if let Ok(turn) = lane.clone().try_acquire_owned() {
            return Some(turn);
        }
        // Counted down when the turn comes or the caller leaves.
        struct Waiting<'a>(&'a std::sync::atomic::AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                let left = self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed) - 1;
                metrics::gauge!("baton_redis_bulk_waiting").set(left as f64);
            }
        }
        let now = self.waiting.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        metrics::gauge!("baton_redis_bulk_waiting").set(now as f64);
        let _waiting = Waiting(&self.waiting);
        lane.acquire_owned().await.ok()
    }
}

/// The core of Baton's state in Redis, under every domain store: the connection, the script
/// manager, the breakers, the keys, the policy, the bulk lanes, the registries of sources and
/// their shards. It runs script calls for the domain stores and knows none of them. Cheap to
/// clone (every part is shared).
#[derive(Clone)]
pub struct Core {
    pub(crate) redis: Redis,
    pub(crate) scripts: Arc<Scripts>,
    pub(crate) keys: Keys,
    pub(crate) policy: Arc<Policy>,
    /// The circuit breakers of every Redis node a call went to.
    pub(crate) breakers: Arc<Breakers>,
    /// Bound on one probe (PING, CLUSTER SLOTS) of a node.
    pub(crate) probe_limit: std::time::Duration,
    /// Registry entries this replica has written ("<registry key>\n<name>"), so a source
    /// costs one registry write per replica, not one per call. Registries only grow, so an
    /// entry never goes stale.
    pub(crate) registered: Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    /// Per registry key: its size and its first names when last read in full (`first_registered`).
    pub(crate) firsts: Arc<std::sync::Mutex<std::collections::HashMap<String, FirstNames>>>,
    /// Turns of the large script calls, per Redis node (`Policy::bulk_inflight`).
    pub(crate) bulk: Arc<Bulk>,
    /// Sources spread over several slots (`sharding.*`); absent: one shard.
    pub(crate) shards: Arc<shards::Sharding>,
}

/// Makes the core the base of a domain store (a struct with a `core: Core` field): a domain
/// store extends the core with its own transitions, so its methods reach the connection, keys,
/// policy and script calls as `self.keys`, `self.call(..)`, `self.run(..)`, and its callers
/// reach the core's reads (`keys()`, `shard_names`, `known`, …) through it.
macro_rules! over_core {
    ($store:ty) => {
        impl std::ops::Deref for $store {
            type Target = $crate::store::Core;

            fn deref(&self) -> &Self::Target {
                &self.core
            }
        }
    };
}
pub(crate) use over_core;

impl Core {
    /// Connects and loads every script.
    pub async fn open(redis: Redis, key_prefix: &str, policy: Policy, breakers: BreakerConfig) -> Result<Self> {
        let scripts = Arc::new(Scripts::new());
        scripts.load_all(&redis).await?;
        let keys = Keys::new(key_prefix).sharded(redis.is_cluster());
        let bulk = Arc::new(Bulk::new(policy.bulk_inflight));
        Ok(Self {
            redis,
            scripts,
            keys,
            policy: Arc::new(policy),
            breakers: Arc::new(Breakers::new(breakers)),
            probe_limit: PROBE_LIMIT,
            registered: Arc::default(),
            firsts: Arc::default(),
            bulk,
            shards: Arc::default(),
        })
    }

    /// Sends one of each kind of command Baton needs, harmlessly (reads, a script, a
    /// publication nobody follows, a subscription), so that a Redis ACL user lacking a
    /// permission fails at start with Redis's own words naming the command, not at the first
    /// call that needs it. `script` runs one read-only script call on the election it is
    /// given (the elections store's `leader`: the core runs no domain's script itself).
    pub async fn check_access<F>(&self, script: impl FnOnce(&'static str) -> F) -> Result<()>
    where
        F: std::future::Future<Output = Result<()>>,
    {
        const PROBE: &str = "baton-access-check";
        let refused = |e: error::Error| {
            match e {
            error::Error::Unavailable(m) if m.starts_with(error::ACL_REFUSED) => error::Error::Config(format!(
                "{m}. Baton needs FCALL and FUNCTION LOAD (or, without FUNCTION LOAD, EVALSHA, EVAL and SCRIPT LOAD), and the commands its scripts call on keys \
                 {prefix}baton:*, SADD, SMEMBERS, ZADD, ZREVRANGEBYSCORE, SCAN, TIME, PING, and PUBLISH/SUBSCRIBE (SPUBLISH/SSUBSCRIBE on a \
                 cluster) on channels {prefix}baton:* (see docs/redis.md, \"TLS and an ACL user\")",
                prefix = self.keys.prefix()
            )),
            e => e,
        }
        };
        let check = async {
            script(PROBE).await?;
            let mut conn = self.redis.conn().await?;
            redis::cmd("SMEMBERS").arg(self.keys.queues()).query_async::<Vec<String>>(&mut conn).await?;
            redis::cmd("ZREVRANGEBYSCORE")
                .arg(self.keys.elections())
                .arg("+inf")
                .arg("-inf")
                .arg("LIMIT")
                .arg(0)
                .arg(1)
                .query_async::<Vec<String>>(&mut conn)
                .await?;
            redis::cmd("TIME").query_async::<Vec<String>>(&mut conn).await?;
            let mut scan = redis::cmd("SCAN");
            scan.arg(0).arg("MATCH").arg(self.keys.source_pattern()).arg("COUNT").arg(1);
            let first = self.redis.primaries().await?.into_iter().next().flatten();
            self.redis.on_node(first.as_ref(), &scan).await?;
            let channel = self.keys.channel(keys::ChannelKind::Election, PROBE);
            let publish = if self.keys.is_sharded() { "SPUBLISH" } else { "PUBLISH" };
            redis::cmd(publish).arg(&channel).arg("").query_async::<i64>(&mut conn).await?;
            if !self.redis.is_cluster() {
                let mut pubsub = self.redis.feed().pubsub().await?;
                pubsub.subscribe(&channel).await?;
                pubsub.unsubscribe(&channel).await?;
            }
            Ok::<_, error::Error>(())
        };
        check.await.map_err(refused)
    }

    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// How the pub/sub follower opens its own connections to this Redis.
    pub fn feed(&self) -> Arc<conn::Feed> {
        self.redis.feed()
    }

    /// The (dispatch, write-back) breaker states of every Redis node calls went to, by node.
    pub fn breaker_states(&self) -> Vec<(Arc<str>, breaker::State, breaker::State)> {
        self.breakers.states()
    }

    /// Runs a script through the breaker of its path on the node serving its keys.
    /// Runs a typed script call (`scripts::ScriptCall`) and decodes its reply.
    pub(crate) async fn call<C: scripts::ScriptCall>(&self, path: Path, call: C) -> Result<C::Reply> {
        self.call_items(path, call, 1).await
    }

    /// [`Core::call`] for a call on `items` items (see [`Core::run_items`]).
    pub(crate) async fn call_items<C: scripts::ScriptCall>(
        &self,
        path: Path,
        call: C,
        items: usize,
    ) -> Result<C::Reply> {
        let keys = call.keys();
        let value = match self.run_items(path, C::NAME, &keys, call.argv(), items).await? {
            array @ Value::Array(_) => array,
            bare => Value::Array(vec![bare]),
        };
        <C::Reply as scripts::FromReply>::from_reply(reply::Reply::new(C::NAME, value)?)
    }

    /// Runs a script through the breaker of its path on the node serving its first key. A
    /// call on more than [`BULK_ITEMS`] items (leases asked for, completions, agents) waits for its turn in its node's bulk lane
    /// (`bulk`), so a small call is never queued in Redis behind more than a few large ones.
    async fn run_items(
        &self,
        path: Path,
        name: &'static str,
        keys: &[&str],
        args: Args,
        items: usize,
    ) -> Result<Value> {
        let node = self.redis.node_of(keys.first().copied().unwrap_or_default());
        let pair = self.breakers.of(&node);
        let breaker = &pair[path as usize];
        breaker.check()?;
        let _turn = if items > BULK_ITEMS { self.bulk.turn(&node).await } else { None };
        // Boxed: a script call's future is about 2 KB, and inline it would be carried (often
        // more than once) by every future that awaits a script, however long that waits.
        let result = Box::pin(self.scripts.run(&self.redis, name, keys, args)).await;
        breaker.record(&result);
        result
    }

    /// Counts what a read outside any script (a sharded source's peek) met toward the dispatch
    /// breaker of the node serving `key`.
    pub(crate) fn record_dispatch<T>(&self, key: &str, result: &Result<T>) {
        self.breakers.of(&self.redis.node_of(key))[Path::Dispatch as usize].record(result);
    }

    /// Whether some node's breaker fails calls fast (open or half-open).
    pub fn breaker_open(&self) -> bool {
        self.breakers.any_open()
    }

    /// Whether the dispatch breaker of the node serving `key` fails calls fast: that node is
    /// known down, so a call there would only fail (fast).
    pub fn known_down(&self, key: &str) -> bool {
        self.breakers.of(&self.redis.node_of(key))[Path::Dispatch as usize].state() != breaker::State::Closed
    }

    /// Resolves at the next breaker state change (or at once if one happened unobserved).
    pub async fn breaker_changed(&self) {
        self.breakers.changed().await
    }

    /// Whether the probe should look often: a breaker is open, or failures were seen lately.
    pub fn redis_failing(&self) -> bool {
        self.breakers.any_failing()
    }

    /// Probes every Redis node (every primary of a cluster), outside any call: a node's answer
    /// closes its open breakers at once, no answer counts as a failure of its breakers (see
    /// `Breaker::probed`). Empty when the cluster's slot map could not be read.
    pub async fn probe(&self) -> Vec<NodeProbe> {
        let Some(nodes) = self.redis.ping_nodes(self.probe_limit).await else { return Vec::new() };
        if self.redis.is_cluster() {
            // A node that lost its slots (to a promoted replica) or left guards nothing now.
            let current: Vec<Arc<str>> = nodes.iter().map(|(n, _)| n.clone()).collect();
            self.breakers.retain(&current);
        }
        nodes
            .into_iter()
            .map(|(node, answer)| {
                let pair = self.breakers.of(&node);
                pair.iter().for_each(|b| b.probed(&answer));
                metrics::gauge!("baton_redis_node_up", "node" => node.to_string()).set(if answer.is_ok() {
                    1.0
                } else {
                    0.0
                });
                let closed = pair.iter().all(|b| b.state() == breaker::State::Closed);
                NodeProbe { node, answered: answer.is_ok(), closed }
            })
            .collect()
    }

    /// Answers whether Redis is reachable: Ok when some node answered ([`Core::probe`]).
    pub async fn ping(&self) -> Result<()> {
        let nodes = self.probe().await;
        if nodes.iter().any(|n| n.answered) {
            return Ok(());
        }
        Err(error::Error::Unavailable(format!("no Redis node answers ({} known)", nodes.len())))
    }

    /// Large script calls waiting for a turn in a bulk lane (see `Bulk`).
    pub fn bulk_waiting(&self) -> usize {
        self.bulk.waiting.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The registry set of a source kind.
    pub(crate) fn registry(&self, kind: SourceKind) -> String {
        match kind {
            SourceKind::Queue => self.keys.queues(),
            SourceKind::Pool => self.keys.pools(),
            SourceKind::Receiver => self.keys.receivers(),
        }
    }

    /// Whether a queue, pool or receiver is known: in its registry (any shard of a sharded one),
    /// as it is from the first write to it. Operator calls that name a source use it to refuse
    /// a name that never existed (a typo) instead of creating it.
    pub async fn known(&self, kind: SourceKind, name: &str) -> Result<bool> {
        let registry = self.registry(kind);
        let mut conn = self.redis.conn().await?;
        for shard in self.shard_names(kind, name) {
            if redis::cmd("SISMEMBER").arg(&registry).arg(&shard).query_async::<bool>(&mut conn).await? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Adds a queue to the registry that sweepers and health walk.
    pub(crate) async fn remember_queue(&self, queue: &str) -> Result<()> {
        self.remember(self.keys.queues(), queue).await
    }

    /// Adds a name to a registry set (queues, pools, receivers). Called *before* the script
    /// whose effect it announces: a registry entry without data is harmless (every walk finds
    /// nothing there), data without one would be invisible to the sweepers and health.
    pub(crate) async fn remember(&self, registry: String, name: &str) -> Result<()> {
        /// Past this many entries the memo starts again (bounded memory; at worst a few more
        /// idempotent SADDs).
        const MEMO: usize = 100_000;
        let entry = format!("{registry}\n{name}");
        if self.registered.lock().expect("registry memo").contains(&entry) {
            return Ok(());
        }
        let mut conn = self.redis.conn().await?;
        redis::cmd("SADD").arg(registry).arg(name).query_async::<i64>(&mut conn).await?;
        let mut memo = self.registered.lock().expect("registry memo");
        if memo.len() >= MEMO {
            memo.clear();
        }
        memo.insert(entry);
        Ok(())
    }

    /// The first `n` names, in byte order, of a source kind's registry. Registries only grow,
    /// so while a registry's size is the one last read and the names read then are still in
    /// it, its first names are unchanged: that costs one SCARD and one SMISMEMBER of `n` names,
    /// not an SMEMBERS of the whole registry (milliseconds of Redis at ten thousand queues),
    /// which runs only when the registry changed.
    pub async fn first_registered(&self, kind: SourceKind, n: usize) -> Result<Vec<String>> {
        let registry = self.registry(kind);
        let memo = self.firsts.lock().expect("firsts memo").get(&registry).cloned();
        let mut conn = self.redis.conn().await?;
        if let Some((size, names)) = memo {
            let mut check = redis::pipe();
            check.cmd("SCARD").arg(&registry);
            if !names.is_empty() {
                check.cmd("SMISMEMBER").arg(&registry).arg(&names);
            }
            let answer: Vec<redis::Value> = check.query_async(&mut conn).await?;
            let now: u64 = redis::from_redis_value(answer[0].clone()).map_err(redis::RedisError::from)?;
            let kept: Vec<bool> = match answer.get(1) {
                Some(v) => redis::from_redis_value(v.clone()).map_err(redis::RedisError::from)?,
                None => Vec::new(),
            };
            if now == size && kept.iter().all(|k| *k) && names.len() >= n.min(now as usize) {
                return Ok(names.into_iter().take(n).collect());
            }
        }
        let mut names: Vec<String> = redis::cmd("SMEMBERS").arg(&registry).query_async(&mut conn).await?;
        let size = names.len() as u64;
        names.sort_unstable();
        names.truncate(n);
        self.firsts.lock().expect("firsts memo").insert(registry, (size, names.clone()));
        Ok(names)
    }

    /// Registers every queue, pool and receiver that has data in Redis but no registry entry
    /// (written by hand, or by a Baton that wrote the data before its registry entry), so the
    /// sweepers and health see it; deletes the worker-liveness record of a queue that has
    /// nothing else left. One SCAN of the keyspace: run rarely (sweeper start, purge passes).
    /// Elections with a term record but no registry entry are registered too. Returns what it
    /// registered, as `q:<queue>`, `p:<pool>`, `r:<receiver>`, `e:<election>`.
    pub async fn discover(&self) -> Result<Vec<String>> {
        use std::collections::{BTreeMap, HashSet};
        let mut conn = self.redis.conn().await?;
        let mut parts: BTreeMap<(char, String), Vec<String>> = BTreeMap::new();
        // SCAN walks one node's keys: on a cluster, every primary's in turn.
        for node in self.redis.primaries().await? {
            let mut cursor: u64 = 0;
            loop {
                let mut scan = redis::cmd("SCAN");
                scan.arg(cursor).arg("MATCH").arg(self.keys.source_pattern()).arg("COUNT").arg(1_000);
                let reply = self.redis.on_node(node.as_ref(), &scan).await?;
                let (next, keys): (u64, Vec<String>) =
                    redis::from_redis_value(reply).map_err(redis::RedisError::from)?;
                for key in &keys {
                    if let Some((kind, name, part)) = self.keys.parse_source(key) {
                        parts.entry((kind, name.to_string())).or_default().push(part.to_string());
                    }
                }
                cursor = next;
                if cursor == 0 {
                    break;
                }
            }
        }
        let mut found = Vec::new();
        // Elections: a term record without a registry entry (its ZADD failed after the script),
        // registered at its term's start.
        let elections = self.keys.elections();
        for ((_, name), parts) in parts.range(('e', String::new())..).take_while(|((k, _), _)| *k == 'e') {
            if !parts.iter().any(|p| p == "term") {
                continue;
            }
            let known: Option<f64> = redis::cmd("ZSCORE").arg(&elections).arg(name).query_async(&mut conn).await?;
            if known.is_some() {
                continue;
            }
            let (expires, ttl): (Option<i64>, Option<i64>) = redis::cmd("HMGET")
                .arg(&self.keys.election(name).term)
                .arg("expires_at")
                .arg("ttl")
                .query_async(&mut conn)
                .await?;
            let started = expires.unwrap_or(0) - ttl.unwrap_or(0);
            redis::cmd("ZADD").arg(&elections).arg("NX").arg(started).arg(name).query_async::<i64>(&mut conn).await?;
            found.push(format!("e:{name}"));
        }
        for (kind, registry) in [('q', self.keys.queues()), ('p', self.keys.pools()), ('r', self.keys.receivers())] {
            let known: HashSet<String> = redis::cmd("SMEMBERS").arg(&registry).query_async(&mut conn).await?;
            for ((_, name), parts) in parts.range((kind, String::new())..).take_while(|((k, _), _)| *k == kind) {
                if known.contains(name) {
                    continue;
                }
                // Counters, liveness and Await marks alone are what a queue leaves behind when it
                // is gone (or what an Await of a name that never existed left, before it wrote
                // nothing): no queue. Liveness goes, and marks past their time.
                if kind == 'q' && parts.iter().all(|p| matches!(p.as_str(), "workers" | "seq" | "stats" | "awaited")) {
                    let k = self.keys.queue(name);
                    if parts.iter().any(|p| p == "workers") {
                        redis::cmd("DEL").arg(&k.workers).query_async::<i64>(&mut conn).await?;
                    }
                    if parts.iter().any(|p| p == "awaited") {
                        let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await?;
                        redis::cmd("ZREMRANGEBYSCORE")
                            .arg(&k.awaited)
                            .arg("-inf")
                            .arg(secs * 1000 + micros / 1000)
                            .query_async::<i64>(&mut conn)
                            .await?;
                    }
                    continue;
                }
                self.remember(registry.clone(), name).await?;
                found.push(format!("{kind}:{name}"));
            }
        }
        Ok(found)
    }

    /// The queues whose sorted set (picked by `set`) has a score older than `age_ms` by the
    /// Redis clock: one TIME and one ZCOUNT per queue (pipelined on one node, concurrent on a
    /// cluster, where the queues live in different slots), no script. A read-only pre-check, so
    /// an idle queue costs a sweep one cheap command; the scripts decide on their own node's
    /// clock.
    pub(crate) async fn queues_with_old_entries(
        &self,
        queues: &[String],
        age_ms: u64,
        set: impl Fn(&crate::store::keys::QueueKeys) -> String,
    ) -> Result<Vec<String>> {
        if queues.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.redis.conn().await?;
        let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await?;
        let before = format!("({}", secs * 1000 + micros / 1000 - age_ms as i64);
        let counts = queues.iter().map(|queue| {
            let mut cmd = redis::cmd("ZCOUNT");
            cmd.arg(set(&self.keys.queue(queue))).arg("-inf").arg(&before);
            cmd
        });
        let counts: Vec<u64> = redis::from_redis_value(redis::Value::Array(self.redis.each(counts.collect()).await?))
            .map_err(redis::RedisError::from)?;
        Ok(queues.iter().zip(counts).filter(|(_, n)| *n > 0).map(|(q, _)| q.clone()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::{scripts::Args, Path};
    use crate::testing::TestRedis;

    /// A store call waiting on Redis holds its script call boxed: inline, every future that
    /// awaits a script would carry its kilobytes (often more than once), for as long as it waits
    /// (an idle Session's round, a parked Acquire).
    #[tokio::test]
    async fn a_store_call_holds_its_script_call_boxed() {
        let redis = TestRedis::start().await;
        let stores = redis.stores().await;
        let core: &super::Core = &stores.queues;
        let script = std::mem::size_of_val(&core.scripts.run(&core.redis, "x", &[], Args::default()));
        let call = std::mem::size_of_val(&core.run_items(Path::Dispatch, "x", &[], Args::default(), 1));
        assert!(call * 2 < script, "run_items is {call} B, the script call it awaits {script} B");
    }
}

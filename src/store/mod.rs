//! The only code that talks to Redis. Every multi-key change is one Lua script (see
//! `scripts`), all of whose keys come from `keys` and share one hash tag. Redis TIME, read
//! inside the scripts, is the only clock. Every script call passes one of the two circuit
//! breakers (`crate::breaker`).

pub mod admin;
pub mod agents;
pub mod conn;
pub mod keys;
pub mod leader;
pub mod pool;
mod reply;
pub mod schedule;
pub mod scripts;
pub mod sweep;
pub mod wake;

use std::sync::Arc;

use redis::Value;

use crate::{
    breaker::{self, Breaker},
    config::{AgentConfig, BreakerConfig, DeadLetterConfig},
    error::Result,
};
pub use admin::*;
pub use agents::*;
pub use conn::Redis;
pub use keys::Keys;
pub use leader::*;
pub use pool::*;
pub use schedule::*;
use scripts::Args;
pub use scripts::Scripts;
pub use sweep::*;

/// The policy the scripts apply, from configuration.
#[derive(Clone, Debug)]
pub struct Policy {
    /// Backoff, jitter and defaults of agents.
    pub agent: AgentConfig,
    /// Most waiting entries one Acquire reads.
    pub scan_limit: u32,
    /// TTL and size bound of every dead-letter queue.
    pub dead_letter: DeadLetterConfig,
}

impl Policy {
    pub fn new(agent: &AgentConfig, scan_limit: u32, dead_letter: &DeadLetterConfig) -> Self {
        Self { agent: agent.clone(), scan_limit, dead_letter: dead_letter.clone() }
    }

    /// The eight ARGV the scripts read with `readPolicy`.
    fn push_args(&self, args: &mut Args) {
        let a = &self.agent;
        args.push(a.permanent_forbidden_backoff_ms);
        args.push(a.throttled_base_ms);
        args.push(a.throttled_multiplier);
        args.push(a.throttled_cap_ms);
        args.push(a.max_immediate_retries);
        args.push(a.jitter_ratio);
        args.push(self.dead_letter.ttl_ms);
        args.push(self.dead_letter.max_entries);
    }
}

/// Which circuit breaker guards a call.
#[derive(Clone, Copy, Debug)]
pub enum Path {
    /// Handing out work and reading state: Acquire, Campaign, GetAgent, ListAgents, GetLeader.
    Dispatch,
    /// Writing results back: Register, Heartbeat, Complete, Release, Renew, Resign, sweeps.
    WriteBack,
}

/// Baton's state in Redis. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    redis: Redis,
    scripts: Arc<Scripts>,
    keys: Keys,
    policy: Arc<Policy>,
    breakers: Arc<[Breaker; 2]>,
    wake_channel: String,
    leader_channel: String,
    pool_channel: String,
}

impl Store {
    /// Connects and loads every script.
    pub async fn open(redis: Redis, key_prefix: &str, policy: Policy, breakers: BreakerConfig) -> Result<Self> {
        let scripts = Arc::new(Scripts::new());
        scripts.load_all(&redis).await?;
        let keys = Keys::new(key_prefix);
        let wake_channel = keys.wake_channel();
        let leader_channel = keys.leader_channel();
        let pool_channel = keys.pool_channel();
        let breakers = Arc::new([Breaker::new("dispatch", breakers.clone()), Breaker::new("writeback", breakers)]);
        Ok(Self {
            redis,
            scripts,
            keys,
            policy: Arc::new(policy),
            breakers,
            wake_channel,
            leader_channel,
            pool_channel,
        })
    }

    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// The state of the (dispatch, write-back) breakers.
    pub fn breaker_states(&self) -> (breaker::State, breaker::State) {
        (self.breakers[0].state(), self.breakers[1].state())
    }

    /// Runs a script through the breaker of its path.
    async fn run(&self, path: Path, name: &'static str, keys: &[&str], args: Args) -> Result<Value> {
        let breaker = &self.breakers[path as usize];
        breaker.check()?;
        let result = self.scripts.run(&self.redis, name, keys, args).await;
        breaker.record(&result);
        result
    }

    /// Answers whether Redis is reachable; the round trip feeds the breakers like any call.
    pub async fn ping(&self) -> Result<()> {
        let result = async {
            let mut conn = self.redis.conn().await?;
            redis::cmd("PING").query_async::<String>(&mut conn).await?;
            Ok(())
        }
        .await;
        // A successful ping is what lets a half-open breaker close on an idle replica.
        for breaker in self.breakers.iter() {
            if breaker.check().is_ok() {
                breaker.record(&result);
            }
        }
        result
    }

    /// Adds a queue to the registry that sweepers and health walk.
    async fn remember_queue(&self, queue: &str) -> Result<()> {
        self.remember(self.keys.queues(), queue).await
    }

    /// Adds a name to a registry set (queues, pools, receivers).
    async fn remember(&self, registry: String, name: &str) -> Result<()> {
        let mut conn = self.redis.conn().await?;
        redis::cmd("SADD").arg(registry).arg(name).query_async::<i64>(&mut conn).await?;
        Ok(())
    }
}

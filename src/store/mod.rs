//! The only code that talks to Redis. Every multi-key change is one Lua script (see
//! `scripts`), all of whose keys come from `keys` and share one hash tag. Redis TIME, read
//! inside the scripts, is the only clock.

pub mod agents;
pub mod conn;
pub mod keys;
pub mod leader;
mod reply;
pub mod scripts;
pub mod wake;

use std::sync::Arc;

use crate::{config::AgentConfig, error::Result};
pub use agents::*;
pub use conn::Redis;
pub use keys::Keys;
pub use leader::*;
pub use scripts::Scripts;

/// Scheduling policy the scripts apply, from configuration.
#[derive(Clone, Debug)]
pub struct Policy {
    pub initial_jitter_ms: u64,
    pub shutdown_jitter_ms: u64,
    pub jitter_ratio: f64,
    pub max_immediate_retries: u32,
    pub permanent_forbidden_backoff_ms: u64,
    pub throttled_base_ms: u64,
    pub throttled_multiplier: f64,
    pub throttled_cap_ms: u64,
    pub scan_limit: u32,
}

impl Policy {
    pub fn new(agent: &AgentConfig, scan_limit: u32) -> Self {
        Self {
            initial_jitter_ms: agent.initial_jitter_ms,
            shutdown_jitter_ms: agent.shutdown_jitter_ms,
            jitter_ratio: agent.jitter_ratio,
            max_immediate_retries: agent.max_immediate_retries,
            permanent_forbidden_backoff_ms: agent.permanent_forbidden_backoff_ms,
            throttled_base_ms: agent.throttled_base_ms,
            throttled_multiplier: agent.throttled_multiplier,
            throttled_cap_ms: agent.throttled_cap_ms,
            scan_limit,
        }
    }
}

/// Baton's state in Redis. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    redis: Redis,
    scripts: Arc<Scripts>,
    keys: Keys,
    policy: Arc<Policy>,
    wake_channel: String,
    leader_channel: String,
}

impl Store {
    /// Connects and loads every script.
    pub async fn open(redis: Redis, key_prefix: &str, policy: Policy) -> Result<Self> {
        let scripts = Arc::new(Scripts::new());
        scripts.load_all(&redis).await?;
        let keys = Keys::new(key_prefix);
        let wake_channel = keys.wake_channel();
        let leader_channel = keys.leader_channel();
        Ok(Self { redis, scripts, keys, policy: Arc::new(policy), wake_channel, leader_channel })
    }

    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// Answers whether Redis is reachable.
    pub async fn ping(&self) -> Result<()> {
        let mut conn = self.redis.conn().await?;
        redis::cmd("PING").query_async::<String>(&mut conn).await?;
        Ok(())
    }

    /// Adds a queue to the registry that sweepers and health walk.
    async fn remember_queue(&self, queue: &str) -> Result<()> {
        let mut conn = self.redis.conn().await?;
        redis::cmd("SADD").arg(self.keys.queues()).arg(queue).query_async::<i64>(&mut conn).await?;
        Ok(())
    }
}

//! Configuration: defaults, then an optional TOML file, then `BATON_*` environment variables,
//! then command-line flags (applied by `main`). Every duration is in milliseconds (`*_ms`).
//!
//! Nested keys take double underscores in the environment: `agent.jitter_ratio` is
//! `BATON_AGENT__JITTER_RATIO`.

use std::{net::SocketAddr, path::PathBuf};

use figment::{
    providers::{Env, Format, Serialized, Toml},
    Figment,
};
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// The whole configuration of one Baton replica.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// gRPC listen address.
    pub listen: SocketAddr,
    /// Prometheus `/metrics` listen address; empty disables the exporter.
    pub metrics_listen: String,
    /// Redis to use (`redis://`, `rediss://`, `redis+unix://`); absent: the embedded default, a
    /// private redis-server supervised by this process.
    pub redis_url: Option<String>,
    /// Where the embedded redis-server keeps its append-only file and socket.
    pub data_dir: PathBuf,
    /// Prefix of every Redis key (seed 000's `keys.prefix`), e.g. `myapp:`.
    pub key_prefix: String,
    /// Longest time a graceful shutdown may take before in-flight calls are cut.
    pub shutdown_timeout_ms: u64,
    pub log: LogConfig,
    pub redis: RedisConfig,
    pub limits: Limits,
    pub agent: AgentConfig,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// `text` or `json`.
    pub format: LogFormat,
    /// A tracing filter, e.g. `info` or `baton=debug,info`. `RUST_LOG` overrides it.
    pub level: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RedisConfig {
    /// `pool` (a bb8 pool of connections) or `shared` (one auto-reconnecting multiplexed
    /// connection shared by all calls). See ARCHITECTURE.md for the measurements.
    pub connection: ConnectionMode,
    /// Connections in the pool (`pool` mode).
    pub pool_size: u32,
    /// Bound on establishing a connection (seed 000's connect-timeout).
    pub connect_timeout_ms: u64,
    /// Bound on one command's round trip, and on waiting for a pooled connection.
    pub command_timeout_ms: u64,
    /// The redis-server binary the embedded default runs.
    pub server_binary: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConnectionMode {
    Pool,
    Shared,
}

/// Bounds on requests (PRODUCT.md principle 6). A request beyond them is INVALID_ARGUMENT.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Most items in one request: agents per Register, names per Unregister, leases per
    /// Acquire or Heartbeat.
    pub max_batch: u32,
    /// Largest agent payload.
    pub max_payload_bytes: usize,
    /// Most labels on one agent.
    pub max_labels: usize,
    /// Longest label key or value.
    pub max_label_bytes: usize,
    /// Longest failure message on Complete.
    pub max_message_bytes: usize,
    /// Longest interval, timeout, error interval, retry_after or delay.
    pub max_duration_ms: u64,
    /// Longest long-poll wait.
    pub max_wait_ms: u64,
    /// Most waiting entries one Acquire reads (seed 000's bounded ready scans).
    pub scan_limit: u32,
    /// Shortest leadership ttl a Campaign may ask for.
    pub min_ttl_ms: u64,
    /// Longest leadership ttl a Campaign may ask for.
    pub max_ttl_ms: u64,
}

/// Agent scheduling policy (seed 000's failure-backoff and jitter settings).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// Lease length of an agent registered without a timeout.
    pub default_timeout_ms: u64,
    /// Error interval of an agent registered without one.
    pub default_error_interval_ms: u64,
    /// Upper bound of a random delay added to a new agent's first run (0: none).
    pub initial_jitter_ms: u64,
    /// Upper bound of a random delay added to a released agent's next run (0: none).
    pub shutdown_jitter_ms: u64,
    /// ± ratio applied to every non-zero failure backoff.
    pub jitter_ratio: f64,
    /// TRANSIENT / SERVER_ERROR failures retried at once before error_interval applies.
    pub max_immediate_retries: u32,
    /// Backoff after PERMANENT_FORBIDDEN.
    pub permanent_forbidden_backoff_ms: u64,
    /// First THROTTLED backoff.
    pub throttled_base_ms: u64,
    /// THROTTLED backoff growth per consecutive failure.
    pub throttled_multiplier: f64,
    /// Largest THROTTLED backoff.
    pub throttled_cap_ms: u64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:50051".parse().expect("valid address"),
            metrics_listen: "127.0.0.1:9464".into(),
            redis_url: None,
            data_dir: PathBuf::from("baton-data"),
            key_prefix: String::new(),
            shutdown_timeout_ms: 10_000,
            log: LogConfig::default(),
            redis: RedisConfig::default(),
            limits: Limits::default(),
            agent: AgentConfig::default(),
        }
    }
}

impl Default for LogConfig {
    fn default() -> Self {
        Self { format: LogFormat::Text, level: "info".into() }
    }
}

impl Default for RedisConfig {
    fn default() -> Self {
        Self {
            connection: ConnectionMode::Shared,
            pool_size: 16,
            connect_timeout_ms: 2_000,
            command_timeout_ms: 3_000,
            server_binary: "redis-server".into(),
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_batch: 1_000,
            max_payload_bytes: 64 * 1024,
            max_labels: 64,
            max_label_bytes: 256,
            max_message_bytes: 4 * 1024,
            max_duration_ms: 366 * 24 * 3_600_000,
            max_wait_ms: 300_000,
            scan_limit: 2_000,
            min_ttl_ms: 100,
            max_ttl_ms: 3_600_000,
        }
    }
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            default_timeout_ms: 300_000,
            default_error_interval_ms: 60_000,
            initial_jitter_ms: 0,
            shutdown_jitter_ms: 0,
            jitter_ratio: 0.1,
            max_immediate_retries: 0,
            permanent_forbidden_backoff_ms: 1_800_000,
            throttled_base_ms: 30_000,
            throttled_multiplier: 2.0,
            throttled_cap_ms: 600_000,
        }
    }
}

impl Config {
    /// Layers defaults, the TOML file (if any) and `BATON_*` variables. Flags are merged by the
    /// caller on top of the returned figment.
    pub fn figment(file: Option<&std::path::Path>) -> Figment {
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        if let Some(file) = file {
            figment = figment.merge(Toml::file_exact(file));
        }
        figment.merge(Env::prefixed("BATON_").ignore(&["config"]).split("__"))
    }

    /// Extracts and checks a configuration.
    pub fn from_figment(figment: Figment) -> Result<Self, Error> {
        let config: Config = figment.extract().map_err(|e| Error::Config(e.to_string()))?;
        config.check()?;
        Ok(config)
    }

    fn check(&self) -> Result<(), Error> {
        let bad = |what: &str| Err(Error::Config(what.to_string()));
        if self.limits.max_batch == 0 || self.limits.scan_limit == 0 {
            return bad("limits.max_batch and limits.scan_limit must be at least 1");
        }
        if !(0.0..1.0).contains(&self.agent.jitter_ratio) {
            return bad("agent.jitter_ratio must be in [0, 1)");
        }
        if self.agent.throttled_multiplier < 1.0 {
            return bad("agent.throttled_multiplier must be at least 1");
        }
        if self.agent.default_timeout_ms == 0 {
            return bad("agent.default_timeout_ms must be at least 1");
        }
        if self.redis.pool_size == 0 {
            return bad("redis.pool_size must be at least 1");
        }
        if self.key_prefix.contains(['{', '}']) {
            return bad("key_prefix must not contain '{' or '}' (they would change hash slots)");
        }
        Ok(())
    }
}

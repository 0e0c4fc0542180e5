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
    /// SHA-256 (hex) of the bearer token /metrics requires; empty: /metrics is open. Its labels
    /// name every queue, pool, receiver and election, so with authentication on, set it (or
    /// keep `metrics_listen` where only Prometheus reaches).
    pub metrics_token_sha256: String,
    /// Redis to use (`redis://`, `redis+unix://`); absent: the embedded default, a
    /// private redis-server supervised by this process.
    pub redis_url: Option<String>,
    /// Where the embedded redis-server keeps its append-only file and socket.
    pub data_dir: PathBuf,
    /// Prefix of every Redis key, e.g. `myapp:`, so several deployments can share one Redis.
    pub key_prefix: String,
    /// Longest time a graceful shutdown may take before in-flight calls are cut.
    pub shutdown_timeout_ms: u64,
    /// This replica's id in elections and logs; empty: `<hostname>-<pid>`.
    pub replica_id: String,
    pub log: LogConfig,
    pub redis: RedisConfig,
    pub limits: Limits,
    pub agent: AgentConfig,
    pub pool: PoolConfig,
    pub schedule: ScheduleConfig,
    pub dead_letter: DeadLetterConfig,
    pub idempotency: IdempotencyConfig,
    pub results: ResultsConfig,
    pub dedup: DedupConfig,
    pub flows: FlowsConfig,
    pub purge: PurgeConfig,
    pub circuit_breaker: BreakerConfig,
    pub zombie_cleanup: ZombieConfig,
    pub orphan_cleanup: OrphanConfig,
    pub health: HealthConfig,
    pub sharding: ShardingConfig,
    pub tls: TlsConfig,
    pub auth: AuthConfig,
    pub console: ConsoleConfig,
    pub web: WebConfig,
}

/// The web console (`crate::console`), served by `baton serve` on its own address.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConsoleConfig {
    /// HTTP address of the console; empty turns it off. An address beyond loopback is served
    /// only with `allow_remote`.
    pub listen: String,
    /// Serve the console on an address beyond loopback (put TLS in front, and configure auth:
    /// the console asks for a token whenever gRPC does).
    pub allow_remote: bool,
    /// Show everything, change nothing: no retry, delete, pause or resume.
    pub read_only: bool,
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        Self { listen: "127.0.0.1:9465".into(), allow_remote: false, read_only: false }
    }
}

/// Browsers and curl on the gRPC port (`crate::web`): gRPC-Web, and the JSON mapping of the
/// unary RPCs (the Connect protocol), behind the same TLS, authentication and scopes as gRPC.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebConfig {
    /// Serve gRPC-Web (`application/grpc-web`, `+proto`, `-text`); off: such calls get 415.
    pub grpc_web: bool,
    /// Serve the unary RPCs as JSON (`POST /baton.v1.AgentService/Register`,
    /// `Content-Type: application/json`); off: such calls get 415.
    pub json: bool,
    /// Origins whose pages may call (CORS): exact origins (`https://ops.example.com`) or `*`.
    /// Empty: no CORS headers at all, so browsers refuse pages of any other origin.
    pub cors_allowed_origins: Vec<String>,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self { grpc_web: true, json: true, cors_allowed_origins: Vec::new() }
    }
}

impl WebConfig {
    /// Whether anything beyond gRPC over HTTP/2 is served (HTTP/1.1 is accepted only then).
    pub fn enabled(&self) -> bool {
        self.grpc_web || self.json
    }

    /// Checks `cors_allowed_origins`: `*` alone, or origins `scheme://host[:port]`.
    fn check(&self) -> Result<(), Error> {
        let origins = &self.cors_allowed_origins;
        if origins.iter().any(|o| o == "*") {
            if origins.len() > 1 {
                return Err(Error::Config("web.cors_allowed_origins: \"*\" allows every origin; list it alone".into()));
            }
            return Ok(());
        }
        for origin in origins {
            let bad = |why: &str| Err(Error::Config(format!("web.cors_allowed_origins: {origin:?} {why}")));
            let Some((scheme, host)) = origin.split_once("://") else {
                return bad("is not an origin: expected scheme://host[:port], e.g. https://ops.example.com");
            };
            if !matches!(scheme, "http" | "https") {
                return bad("must start with http:// or https://");
            }
            if host.is_empty() || host.contains(['/', '?', '#', '*', ' ']) || !origin.is_ascii() {
                return bad("must be scheme://host[:port] exactly as a browser sends it: no path, no trailing slash, no wildcard");
            }
        }
        Ok(())
    }
}

/// gRPC (and optionally /metrics) over TLS (see docs/security.md).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM certificate chain of the server; with `key_file`, gRPC is served over TLS only.
    pub cert_file: String,
    /// PEM private key of `cert_file`.
    pub key_file: String,
    /// PEM CA bundle: when set, every client must present a certificate it signed (mutual TLS).
    pub client_ca_file: String,
    /// Serve /metrics over TLS too, with the same certificate (client certificates not asked).
    pub metrics: bool,
    /// How often the files are checked for changes (SIGHUP reloads at once); 0: only on SIGHUP.
    pub reload_interval_ms: u64,
    /// A new connection that sends no byte of its ClientHello within this is dropped: a
    /// connection that never starts TLS holds a handshake slot this long at most.
    pub hello_timeout_ms: u64,
    /// Bound on a whole handshake (a client that started but is slow or stalls).
    pub handshake_timeout_ms: u64,
    /// Handshakes in progress at once from one IP address that may wait `hello_timeout_ms` for
    /// their ClientHello; a connection beyond must send it at once (within 250 ms) or is dropped,
    /// so one peer's silent connections cannot take the server's handshake slots, while clients
    /// sharing its address (a NAT, an L4 load balancer) are still served.
    pub max_handshakes_per_peer: usize,
}

impl Default for TlsConfig {
    fn default() -> Self {
        Self {
            cert_file: String::new(),
            key_file: String::new(),
            client_ca_file: String::new(),
            metrics: false,
            reload_interval_ms: 10_000,
            hello_timeout_ms: 2_000,
            handshake_timeout_ms: 10_000,
            max_handshakes_per_peer: 32,
        }
    }
}

impl TlsConfig {
    pub fn enabled(&self) -> bool {
        !self.cert_file.is_empty()
    }
}

/// Who may call what (see docs/security.md). Off while no token or certificate identity is
/// defined.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    /// API tokens, stored hashed (`baton token` makes one).
    pub tokens: Vec<TokenEntry>,
    /// A TOML file of more `[[tokens]]`, read at start and on every reload (SIGHUP).
    pub tokens_file: String,
    /// Identities of client certificates (mutual TLS), by the certificate's subject common name.
    pub certificates: Vec<CertificateEntry>,
    /// grpc.health.v1 and reflection answer without credentials (probes, grpcurl describe).
    pub open_health: bool,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self { tokens: Vec::new(), tokens_file: String::new(), certificates: Vec::new(), open_health: true }
    }
}

impl AuthConfig {
    pub fn enabled(&self) -> bool {
        !self.tokens.is_empty() || !self.tokens_file.is_empty() || !self.certificates.is_empty()
    }
}

/// One API token: who it is, its SHA-256 (hex), what it may do and on which names.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TokenEntry {
    /// The identity, as logged and audited.
    pub name: String,
    /// SHA-256 of the token, lowercase hex (the token itself is never stored).
    pub sha256: String,
    /// `worker`, `producer`, `read-only`, `admin`.
    pub roles: Vec<String>,
    /// Name patterns (`billing.*`, `queue:ops-*`); empty: every name.
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// SHA-256 of a token, lowercase hex: what [`TokenEntry::sha256`] holds (the token itself is
/// never stored). `baton token` prints a new token with its hash; a program that writes its
/// configuration in Rust (the bench, the integration tests, an embedding) hashes its tokens here.
pub fn token_hash(token: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// A new random token (32 bytes, URL-safe): `baton_<43 characters>`. What `baton token` and
/// `baton dev-certs` hand out; configure it by its [`token_hash`].
pub fn new_token() -> String {
    use rand::RngCore;
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut bytes = [0u8; 43];
    rand::rng().fill_bytes(&mut bytes);
    let body: String = bytes.iter().map(|b| ALPHABET[(*b & 63) as usize] as char).collect();
    format!("baton_{body}")
}

/// A client certificate identity: the subject common name it is recognised by.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CertificateEntry {
    pub common_name: String,
    pub roles: Vec<String>,
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// Queues, pools and receivers spread over several Redis Cluster slots (see docs/redis.md,
/// "Sharded sources").
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShardingConfig {
    /// `name=N,name=N`: each named queue is N shards, `{q:name#0}` … `{q:name#N-1}`, an agent
    /// living in shard CRC16(agent name) mod N. Every replica must say the same; changing N
    /// strands the agents of the shards that go away.
    pub queues: String,
    /// `name=N,…`: each named pool is N shards, a resource living in shard CRC16(resource id)
    /// mod N.
    pub pools: String,
    /// `name=N,…`: each named receiver is N shards; a message with a key lives in shard
    /// CRC16(key) mod N, one without in the next shard in turn; its id names its shard.
    pub receivers: String,
}

/// Shard counts by name, of one kind of source.
pub type ShardCounts = std::collections::HashMap<String, u32>;

impl ShardingConfig {
    /// The shard counts of queues, pools and receivers, checked.
    pub fn shards(&self) -> Result<[ShardCounts; 3], Error> {
        Ok([
            parse_shards("sharding.queues", &self.queues)?,
            parse_shards("sharding.pools", &self.pools)?,
            parse_shards("sharding.receivers", &self.receivers)?,
        ])
    }
}

fn parse_shards(field: &str, spec: &str) -> Result<ShardCounts, Error> {
    let mut out = ShardCounts::new();
    for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let bad = |why: &str| Error::Config(format!("{field} {entry:?}: {why}"));
        let (name, n) = entry.split_once('=').ok_or_else(|| bad("expected name=N"))?;
        let n: u32 = n.trim().parse().map_err(|_| bad("N must be a number"))?;
        if !(1..=64).contains(&n) {
            return Err(bad("N must be 1 to 64"));
        }
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')) {
            return Err(bad("not a name"));
        }
        out.insert(name.to_string(), n);
    }
    Ok(out)
}

/// Durable delayed messages (ScheduleService).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScheduleConfig {
    /// A delivered message not acked within this is delivered again.
    pub ack_timeout_ms: u64,
    /// Deliveries after which an unacked message is dead-lettered.
    pub max_deliveries: u32,
    /// Most messages one delivery round moves to a consumer.
    pub batch: u32,
}

impl Default for ScheduleConfig {
    fn default() -> Self {
        Self { ack_timeout_ms: 30_000, max_deliveries: 5, batch: 100 }
    }
}

/// Dead-letter queues, one per queue, pool and receiver: how long entries stay, and how many.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeadLetterConfig {
    /// Dead letters older than this are dropped (an agent's with its definition); 0 keeps them.
    pub ttl_ms: u64,
    /// Most entries per dead-letter queue; the oldest are dropped first (0: no bound).
    pub max_entries: u64,
}

impl Default for DeadLetterConfig {
    fn default() -> Self {
        Self { ttl_ms: 7 * 24 * 3_600_000, max_entries: 10_000 }
    }
}

/// Idempotent retries: how long, and how many, first answers each queue, pool and receiver
/// remembers by request id (Register, Complete, Offer, Claim, Return, Fail, Schedule, Ack).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IdempotencyConfig {
    /// A first answer is remembered at least this long after the call (unless `max_entries`
    /// newer ones push it out); a retry later than that is a new call.
    pub retention_ms: u64,
    /// Most answers remembered per queue, pool or receiver (the oldest go first): bounds the
    /// memory of a busy source.
    pub max_entries: u64,
}

impl Default for IdempotencyConfig {
    fn default() -> Self {
        Self { retention_ms: 600_000, max_entries: 100_000 }
    }
}

/// How agents finished (Await, dependencies, deduplicated registrations): each queue keeps an
/// agent's latest finish — succeeded, dead-lettered, cancelled, unregistered — with the result
/// its worker sent.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ResultsConfig {
    /// A finish is kept at least this long after it (unless `max_entries` newer ones push it
    /// out): an Await, a child registered after its parent finished, or a deduplicated
    /// registration later than that finds no result.
    pub retention_ms: u64,
    /// Most finishes kept per queue (the oldest go first): bounds the memory of a busy queue.
    pub max_entries: u64,
    /// Queues whose every agent keeps its finish, as if registered with `Agent.keep_result`:
    /// queue names separated by commas ("reports, invoices"); empty: none. Elsewhere a plain
    /// one-shot agent's finish is not kept (no Redis write), unless someone can read it (an
    /// awaiter, children, an idempotency key, a batch). Applied when an agent is registered.
    pub keep_queues: String,
}

impl Default for ResultsConfig {
    fn default() -> Self {
        Self { retention_ms: 3_600_000, max_entries: 100_000, keep_queues: String::new() }
    }
}

impl ResultsConfig {
    /// Whether `queue` (a logical queue name) is listed in `keep_queues`.
    pub(crate) fn keeps(&self, queue: &str) -> bool {
        !self.keep_queues.is_empty() && self.keep_queues.split(',').any(|q| q.trim() == queue)
    }
}

/// Dependencies between agents (`Agent.after`): children are released by the replica whose
/// script finished their parent, at once; this sweep finds releases a crash left half done.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FlowsConfig {
    /// How often each replica looks for outbox entries and unattached children older than this
    /// (in the queues that took part in dependencies), and finishes their release.
    pub sweep_interval_ms: u64,
    /// Scripts announce new outbox entries to every replica; an entry still there this long
    /// after it was announced (its replica died right after the script) is released by the
    /// replicas that heard it. 0: only the sweep releases what a dead replica left.
    pub takeover_ms: u64,
    /// Most children of the finishing agent's own queue that the script recording the finish
    /// releases itself, so a chain's next step is due when the Complete returns; the rest, and
    /// children in other queues, go through the outbox and the flows task. 0: all of them do.
    pub release_inline: u64,
}

/// Children released per page of an outbox (the flows task's page), and the most a finishing
/// script may release itself (`flows.release_inline`).
pub const RELEASE_PAGE: u64 = 500;

impl Default for FlowsConfig {
    fn default() -> Self {
        Self { sweep_interval_ms: 5_000, takeover_ms: 1_000, release_inline: 100 }
    }
}

/// Idempotency keys of one-shot agents (`Agent.idempotency_key`) and the windows of scheduled
/// messages' keys (`ScheduleRequest.key_window`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DedupConfig {
    /// How long a key holds when the agent names no window (a message's key without a
    /// key_window holds only while the message exists).
    pub default_window_ms: u64,
    /// Longest window an agent or a scheduled message may name.
    pub max_window_ms: u64,
}

impl Default for DedupConfig {
    fn default() -> Self {
        Self { default_window_ms: 3_600_000, max_window_ms: 7 * 24 * 3_600_000 }
    }
}

/// The auto-purge sweeper: stale entries go to the dead-letter queue with a reason,
/// orphaned metadata is repaired or removed, expired dead letters are dropped.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PurgeConfig {
    pub enabled: bool,
    pub interval_ms: u64,
    /// Report what would be purged, change nothing.
    pub dry_run: bool,
    /// Idle resources older than this are dead-lettered (0: never; idle is a pool's normal state).
    pub max_idle_age_ms: u64,
    /// Claims held longer than this are ended and their resource dead-lettered (0: never).
    pub max_claim_age_ms: u64,
    /// Leases this far past their deadline are ended and the agent dead-lettered (0: never);
    /// the zombie sweeper normally acts long before.
    pub max_working_age_ms: u64,
}

impl Default for PurgeConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            interval_ms: 3_600_000,
            dry_run: false,
            max_idle_age_ms: 0,
            max_claim_age_ms: 24 * 3_600_000,
            max_working_age_ms: 24 * 3_600_000,
        }
    }
}

/// Pools of claimable resources (ClaimService).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PoolConfig {
    /// Most claims waiting in one pool's line; a Claim beyond it is RESOURCE_EXHAUSTED.
    pub max_line: u32,
    /// How long past its wait a resource handed to a claim may stay unpicked (its replica
    /// died) before the sweeper gives it back.
    pub assignment_grace_ms: u64,
    /// Pushback hint sent with RESOURCE_EXHAUSTED.
    pub full_line_pushback_ms: u64,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self { max_line: 10_000, assignment_grace_ms: 30_000, full_line_pushback_ms: 1_000 }
    }
}

/// The two circuit breakers (dispatch path, write-back path).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BreakerConfig {
    pub enabled: bool,
    /// Redis failures within `failure_window_ms` that open a breaker.
    pub failure_threshold: u32,
    pub failure_window_ms: u64,
    /// Longest time an open breaker fails calls fast before letting calls through as probes
    /// (the Redis probe usually closes it long before).
    pub cooldown_ms: u64,
    /// How long a half-open breaker waits for a successful probe before opening again.
    pub half_open_duration_ms: u64,
    /// While a breaker is open (or Redis does not answer), Redis is pinged this often and the
    /// first answer closes the breaker; also the pushback hint of a fail-fast call.
    pub probe_interval_ms: u64,
}

/// The zombie sweeper: leases past deadline + threshold go back to waiting as TIMEOUT failures
/// (an attempt toward max_attempts, due again at once).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ZombieConfig {
    pub enabled: bool,
    /// How far past its deadline an unrenewed lease must be.
    pub threshold_ms: u64,
    pub interval_ms: u64,
    /// Most time one pass may take (0: no bound).
    pub run_budget_ms: u64,
    /// Agents whose names match this regex get `exceptional_threshold_ms` (empty: none).
    pub exceptional_pattern: String,
    pub exceptional_threshold_ms: u64,
}

/// The orphan sweeper: leases of workers silent for the threshold go back to waiting at once.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OrphanConfig {
    pub enabled: bool,
    /// Silence (no Acquire, no Heartbeat) after which a worker is dead.
    pub threshold_ms: u64,
    pub interval_ms: u64,
    /// Term of the `baton-sweeper` election that picks the one replica that sweeps.
    pub leadership_ttl_ms: u64,
    /// Every replica sweeps, without an election.
    pub force_all_pods: bool,
    /// Remove agents whose names are only digits (corrupt entries).
    pub remove_numeric_only_agents: bool,
    /// How often the orphan pass also repairs names and forgets dead workers that hold nothing
    /// (the take-back of orphaned leases runs every `interval_ms`).
    pub repair_interval_ms: u64,
    /// Most time one pass may take (0: no bound).
    pub run_budget_ms: u64,
    /// A Session or Receive stream that ends without the worker's half-close (its process died,
    /// its connection reset) gives back what it held after this grace, unless the worker is seen
    /// again meanwhile (a reconnect); 0: wait for the orphan sweep.
    pub stream_grace_ms: u64,
}

/// The periodic health summary and its watchdog signals.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HealthConfig {
    /// Period of the health summary log line and the watchdogs (0: off).
    pub summary_period_ms: u64,
    /// A Redis round trip slower than this raises `redis_stall`.
    pub redis_stall_ms: u64,
    /// How often grpc.health.v1 checks that Redis answers (NOT_SERVING while it does not).
    pub probe_interval_ms: u64,
    /// Most queues (and most pools) the summary inspects.
    pub max_queues: usize,
    /// A backlog (due agents, waiting claims) above this makes a source DEGRADED.
    pub backlog_warning: u64,
    /// Dead letters at or above this make a source DEGRADED…
    pub dead_letter_warning: u64,
    /// …and at or above this UNHEALTHY.
    pub dead_letter_critical: u64,
    /// A lease this far past its deadline, or a claim held this long, is stuck.
    pub stuck_age_ms: u64,
    /// Stuck entries at or above this make a source DEGRADED…
    pub stuck_warning: u64,
    /// …and at or above this UNHEALTHY.
    pub stuck_critical: u64,
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
    /// Bound on establishing a connection.
    pub connect_timeout_ms: u64,
    /// Bound on one command's round trip, and on waiting for a pooled connection.
    pub command_timeout_ms: u64,
    /// At start, how long to keep trying a Redis that does not answer yet (a node still
    /// starting, a cluster still being created or settling, sentinels that name no master yet)
    /// before giving up; 0: try once.
    pub startup_timeout_ms: u64,
    /// The redis-server binary the embedded default runs.
    pub server_binary: String,
    /// When the embedded redis-server syncs its append-only file: `everysec` (a Redis crash may
    /// lose the last second of acknowledged writes) or `always` (nothing acknowledged is lost,
    /// at some throughput).
    pub embedded_fsync: Fsync,
    /// PEM file of the CA that signed Redis's certificate (`rediss://`); unset: the system's roots.
    pub tls_ca_file: Option<String>,
    /// PEM client certificate for mutual TLS (with `tls_key_file`).
    pub tls_cert_file: Option<String>,
    /// PEM private key of `tls_cert_file`.
    pub tls_key_file: Option<String>,
    /// ACL user of the sentinels (`redis+sentinel://`), when they require one.
    pub sentinel_username: Option<String>,
    /// Password of the sentinels.
    pub sentinel_password: Option<String>,
    /// After each state change, wait until this many replicas hold it (Redis WAIT); 0: do not
    /// wait. A change not acknowledged in time answers UNAVAILABLE (it is applied on the primary
    /// and may still reach the replicas).
    pub min_replicas_ack: u32,
    /// How long one WAIT may take.
    pub min_replicas_timeout_ms: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fsync {
    Everysec,
    Always,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConnectionMode {
    Pool,
    Shared,
}

/// Bounds on requests. A request beyond them is INVALID_ARGUMENT naming the field, and changes
/// nothing.
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
    /// Largest result on Complete (kept with the agent's finish; see `results`).
    pub max_result_bytes: usize,
    /// Most steps one run records (RecordStep); a step beyond it is refused.
    pub max_steps: u32,
    /// Most result bytes of all the steps one run records together (RecordStep); a step that
    /// would pass it is refused.
    pub max_step_bytes: usize,
    /// Most signals one run keeps before a wait names them (Signal); a signal beyond it is
    /// refused (RESOURCE_EXHAUSTED).
    pub max_pending_signals: u32,
    /// Longest interval, timeout, error interval, retry_after or delay.
    pub max_duration_ms: u64,
    /// Longest long-poll wait.
    pub max_wait_ms: u64,
    /// Most waiting entries one Acquire reads (bounded scans: no call reads a whole queue).
    pub scan_limit: u32,
    /// Most items one Lua script handles. Redis runs one script at a time, so a batch larger
    /// than this (Register, Unregister, Acquire, Heartbeat, Complete of up to `max_batch`)
    /// runs as several script calls, each atomic on its own and short, and other callers are
    /// served between them. A bound on work: items × per-item cost ≤ 5 ms of Redis time (the
    /// default, 200, measured at 8–13 µs per item: `bench/run --scenario batch`).
    pub script_batch: u32,
    /// Most Acquire and Register calls one replica works on at once; past it a new one is shed
    /// with RESOURCE_EXHAUSTED (OVERLOADED) and a pushback hint, while Heartbeat, Complete and
    /// Release are always served (0: no limit).
    pub max_inflight_work: u32,
    /// The pushback hint given with a shed call (jittered by up to half as much again).
    pub overload_pushback_ms: u64,
    /// Most script calls of more than a few items (Acquire, Register, Complete batches,
    /// deliveries and acks) in flight to one Redis node at once; the rest wait in Baton, in
    /// arrival order, so a small call is never queued in Redis behind a whole fleet's batches
    /// (0: no bound).
    pub bulk_inflight: u32,
    /// Shortest leadership ttl a Campaign may ask for.
    pub min_ttl_ms: u64,
    /// Longest leadership ttl a Campaign may ask for.
    pub max_ttl_ms: u64,
    /// Most HTTP/2 streams (calls) open at once on one client connection: the
    /// SETTINGS_MAX_CONCURRENT_STREAMS Baton announces. A client past it waits for a stream to
    /// end (or its call fails, by the client's choice); one connection cannot open unbounded
    /// streams, each with its task and buffers.
    pub max_concurrent_streams: u32,
    /// Largest header block (metadata) of one call, in bytes (SETTINGS_MAX_HEADER_LIST_SIZE).
    pub max_header_list_bytes: u32,
}

/// Agent scheduling policy: failure backoff by outcome class, and jitter.
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

/// The operator CLI's environment variables (`BATON_ADDR`, `BATON_TOKEN`, ...): where the
/// operator commands find Baton, never server configuration.
pub const OPERATOR_ENV: [&str; 5] = ["addr", "token", "ca_file", "client_cert", "client_key"];

/// A Redis URL with its password masked (`redis://user:***@host`), as logs, errors and
/// `baton config` print it.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => {
            let userinfo = &rest[..at];
            let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
            let masked = if userinfo.contains(':') { format!("{user}:***") } else { "***".to_string() };
            format!("{scheme}://{masked}{}", &rest[at..])
        }
        None => url.to_string(),
    }
}

impl Config {
    /// This configuration as `baton config` prints it: the Redis and sentinel passwords masked
    /// (`***`), as in logs and errors.
    pub fn redacted(&self) -> Config {
        let mut c = self.clone();
        c.redis_url = c.redis_url.as_deref().map(redact_url);
        if c.redis.sentinel_password.is_some() {
            c.redis.sentinel_password = Some("***".into());
        }
        c
    }

    /// Warnings for secret-bearing files others may read: the configuration file `file` (it
    /// may hold a Redis password) and `auth.tokens_file`.
    pub fn readable_files_warnings(&self, file: Option<&std::path::Path>) -> Vec<String> {
        let tokens = (!self.auth.tokens_file.is_empty()).then(|| std::path::Path::new(&self.auth.tokens_file));
        [(file, "configuration file"), (tokens, "auth.tokens_file")]
            .into_iter()
            .filter_map(|(path, what)| readable_by_others(path?, what))
            .collect()
    }
}

/// A warning if `path` can be read by anyone (mode bit 0o004), or by a group other than Baton's
/// own (0o040: a Kubernetes Secret mounted 0440 with Baton's `fsGroup` is fine).
fn readable_by_others(path: &std::path::Path, what: &str) -> Option<String> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let metadata = std::fs::metadata(path).ok()?;
    let mode = metadata.permissions().mode();
    // SAFETY: getegid has no preconditions and cannot fail.
    let own_group = metadata.gid() == unsafe { libc::getegid() };
    (mode & 0o004 != 0 || (mode & 0o040 != 0 && !own_group)).then(|| {
        format!(
            "{what} {} is readable by other users (mode {:o}); it holds secrets or their hashes: chmod 600 it",
            path.display(),
            mode & 0o777
        )
    })
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:50051".parse().expect("valid address"),
            metrics_listen: "127.0.0.1:9464".into(),
            metrics_token_sha256: String::new(),
            redis_url: None,
            data_dir: PathBuf::from("baton-data"),
            key_prefix: String::new(),
            shutdown_timeout_ms: 10_000,
            replica_id: String::new(),
            log: LogConfig::default(),
            redis: RedisConfig::default(),
            limits: Limits::default(),
            agent: AgentConfig::default(),
            pool: PoolConfig::default(),
            schedule: ScheduleConfig::default(),
            dead_letter: DeadLetterConfig::default(),
            idempotency: IdempotencyConfig::default(),
            results: ResultsConfig::default(),
            dedup: DedupConfig::default(),
            flows: FlowsConfig::default(),
            purge: PurgeConfig::default(),
            circuit_breaker: BreakerConfig::default(),
            zombie_cleanup: ZombieConfig::default(),
            orphan_cleanup: OrphanConfig::default(),
            health: HealthConfig::default(),
            sharding: ShardingConfig::default(),
            tls: TlsConfig::default(),
            auth: AuthConfig::default(),
            console: ConsoleConfig::default(),
            web: WebConfig::default(),
        }
    }
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            failure_threshold: 5,
            failure_window_ms: 10_000,
            cooldown_ms: 5_000,
            half_open_duration_ms: 5_000,
            probe_interval_ms: 250,
        }
    }
}

impl Default for ZombieConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            threshold_ms: 5_000,
            interval_ms: 5_000,
            run_budget_ms: 0,
            exceptional_pattern: String::new(),
            exceptional_threshold_ms: 3_600_000,
        }
    }
}

impl Default for OrphanConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            threshold_ms: 10_000,
            interval_ms: 2_000,
            leadership_ttl_ms: 15_000,
            force_all_pods: false,
            remove_numeric_only_agents: true,
            repair_interval_ms: 60_000,
            run_budget_ms: 0,
            stream_grace_ms: 1_000,
        }
    }
}

impl Default for HealthConfig {
    fn default() -> Self {
        Self {
            summary_period_ms: 600_000,
            redis_stall_ms: 1_000,
            probe_interval_ms: 2_000,
            max_queues: 100,
            backlog_warning: 100,
            dead_letter_warning: 100,
            dead_letter_critical: 1_000,
            stuck_age_ms: 7_200_000,
            stuck_warning: 10,
            stuck_critical: 50,
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
            startup_timeout_ms: 60_000,
            server_binary: "redis-server".into(),
            embedded_fsync: Fsync::Everysec,
            tls_ca_file: None,
            tls_cert_file: None,
            tls_key_file: None,
            sentinel_username: None,
            sentinel_password: None,
            min_replicas_ack: 0,
            min_replicas_timeout_ms: 1_000,
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
            max_result_bytes: 64 * 1024,
            max_steps: 64,
            max_step_bytes: 256 * 1024,
            max_pending_signals: 16,
            max_duration_ms: 366 * 24 * 3_600_000,
            max_wait_ms: 300_000,
            scan_limit: 2_000,
            script_batch: 200,
            max_inflight_work: 256,
            overload_pushback_ms: 100,
            bulk_inflight: 4,
            min_ttl_ms: 100,
            max_ttl_ms: 3_600_000,
            max_concurrent_streams: 1_000,
            max_header_list_bytes: 16 * 1024,
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
    ///
    /// Only `BATON_*` names that are configuration keys are read: others (Kubernetes injects
    /// `BATON_PORT`, `BATON_SERVICE_HOST`, … for a Service named `baton`) are left out, and
    /// [`Config::foreign_env`] lists them for a warning. Unknown keys in the TOML file stay an
    /// error.
    pub fn figment(file: Option<&std::path::Path>) -> Figment {
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        if let Some(file) = file {
            figment = figment.merge(Toml::file_exact(file));
        }
        let known = Self::env_keys();
        figment.merge(Self::env().filter(move |key| known.iter().any(|k| key.as_str().eq_ignore_ascii_case(k))))
    }

    /// The `BATON_*` variables of this process that are not configuration keys (and not
    /// `BATON_CONFIG`, read by the CLI), sorted: ignored, worth one warning.
    pub fn foreign_env() -> Vec<String> {
        let known = Self::env_keys();
        let mut foreign: Vec<String> = Self::env()
            .iter()
            .filter(|(key, _)| !known.iter().any(|k| key.as_str().eq_ignore_ascii_case(k)))
            .map(|(key, _)| format!("BATON_{}", key.as_str().replace('.', "__").to_ascii_uppercase()))
            .collect();
        foreign.sort();
        foreign
    }

    fn env() -> Env {
        // BATON_CONFIG names the file; the operator CLI's variables are not server configuration.
        let mut ignored = vec!["config"];
        ignored.extend(OPERATOR_ENV);
        Env::prefixed("BATON_").ignore(&ignored).split("__")
    }

    /// Every leaf key of the configuration, dotted (`agent.jitter_ratio`), as `Env` spells it.
    fn env_keys() -> Vec<String> {
        fn walk(prefix: &str, value: &serde_json::Value, out: &mut Vec<String>) {
            match value {
                serde_json::Value::Object(fields) => {
                    for (name, v) in fields {
                        let key = if prefix.is_empty() { name.clone() } else { format!("{prefix}.{name}") };
                        walk(&key, v, out);
                    }
                }
                _ => out.push(prefix.to_string()),
            }
        }
        let mut out = Vec::new();
        walk("", &serde_json::to_value(Config::default()).expect("the configuration serializes"), &mut out);
        out
    }

    /// This replica's id: `replica_id`, or `<hostname>-<pid>`.
    pub fn replica(&self) -> String {
        if !self.replica_id.is_empty() {
            return self.replica_id.clone();
        }
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let host: String =
            host.trim().chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')).collect();
        format!("{}-{}", if host.is_empty() { "baton" } else { &host }, std::process::id())
    }

    /// Extracts and checks a configuration.
    pub fn from_figment(figment: Figment) -> Result<Self, Error> {
        let config: Config = figment.extract().map_err(|e| Error::Config(e.to_string()))?;
        config.check()?;
        Ok(config)
    }

    fn check(&self) -> Result<(), Error> {
        let bad = |what: &str| Err(Error::Config(what.to_string()));
        if self.limits.max_batch == 0 || self.limits.scan_limit == 0 || self.limits.script_batch == 0 {
            return bad("limits.max_batch, limits.scan_limit and limits.script_batch must be at least 1");
        }
        if self.limits.max_steps == 0 || self.limits.max_steps > 10_000 {
            return bad("limits.max_steps must be 1 to 10000");
        }
        if self.limits.max_step_bytes == 0 || self.limits.max_step_bytes > 64 * 1024 * 1024 {
            return bad("limits.max_step_bytes must be 1 to 67108864 (64 MiB)");
        }
        if self.limits.max_pending_signals == 0 || self.limits.max_pending_signals > 1_000 {
            return bad("limits.max_pending_signals must be 1 to 1000");
        }
        if self.limits.max_concurrent_streams == 0 {
            return bad("limits.max_concurrent_streams must be at least 1");
        }
        if self.limits.max_header_list_bytes < 1024 {
            return bad("limits.max_header_list_bytes must be at least 1024");
        }
        if !(0.0..1.0).contains(&self.agent.jitter_ratio) {
            return bad("agent.jitter_ratio must be in [0, 1)");
        }
        if self.agent.throttled_multiplier < 1.0 {
            return bad("agent.throttled_multiplier must be at least 1");
        }
        if self.flows.sweep_interval_ms == 0 {
            return bad("flows.sweep_interval_ms must be at least 1");
        }
        if self.flows.release_inline > RELEASE_PAGE {
            return bad(
                "flows.release_inline must be at most 500 (a release page): it bounds a finishing script's work",
            );
        }
        if self.results.retention_ms == 0 || self.results.max_entries == 0 {
            return bad("results.retention_ms and results.max_entries must be at least 1");
        }
        for q in self.results.keep_queues.split(',').map(str::trim).filter(|q| !q.is_empty()) {
            if q.len() > 128 || !q.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')) {
                return Err(Error::Config(format!("results.keep_queues {q:?}: not a queue name")));
            }
        }
        if self.dedup.default_window_ms == 0 || self.dedup.default_window_ms > self.dedup.max_window_ms {
            return bad("dedup.default_window_ms must be at least 1 and at most dedup.max_window_ms");
        }
        if self.idempotency.retention_ms == 0 || self.idempotency.max_entries == 0 {
            return bad("idempotency.retention_ms and idempotency.max_entries must be at least 1");
        }
        if self.agent.default_timeout_ms == 0 {
            return bad("agent.default_timeout_ms must be at least 1");
        }
        if self.redis.min_replicas_ack > 0
            && (self.redis.min_replicas_timeout_ms == 0
                || self.redis.min_replicas_timeout_ms >= self.redis.command_timeout_ms)
        {
            return bad("redis.min_replicas_timeout_ms must be above 0 (WAIT 0 blocks forever) and below \
                 redis.command_timeout_ms (which would cut the WAIT short)");
        }
        self.sharding.shards()?;
        if self.tls.cert_file.is_empty() != self.tls.key_file.is_empty() {
            return bad("tls.cert_file and tls.key_file go together");
        }
        if !self.tls.enabled() && (!self.tls.client_ca_file.is_empty() || self.tls.metrics) {
            return bad("tls.client_ca_file and tls.metrics need tls.cert_file and tls.key_file");
        }
        if self.tls.hello_timeout_ms == 0 || self.tls.hello_timeout_ms > self.tls.handshake_timeout_ms {
            return bad("tls.hello_timeout_ms must be at least 1 and at most tls.handshake_timeout_ms");
        }
        if self.tls.max_handshakes_per_peer == 0 {
            return bad("tls.max_handshakes_per_peer must be at least 1");
        }
        let hash = &self.metrics_token_sha256;
        if !hash.is_empty() && (hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit())) {
            return bad("metrics_token_sha256 must be 64 hex digits (the `sha256` that `baton token` prints)");
        }
        if self.redis.pool_size == 0 {
            return bad("redis.pool_size must be at least 1");
        }
        if let Err(e) = regex::Regex::new(&self.zombie_cleanup.exceptional_pattern) {
            return Err(Error::Config(format!("zombie_cleanup.exceptional_pattern: {e}")));
        }
        if self.schedule.ack_timeout_ms == 0 || self.schedule.max_deliveries == 0 || self.schedule.batch == 0 {
            return bad("schedule.ack_timeout_ms, schedule.max_deliveries and schedule.batch must be at least 1");
        }
        if self.pool.max_line == 0 {
            return bad("pool.max_line must be at least 1");
        }
        if self.circuit_breaker.failure_threshold == 0 {
            return bad("circuit_breaker.failure_threshold must be at least 1");
        }
        if self.zombie_cleanup.interval_ms == 0 || self.orphan_cleanup.interval_ms == 0 || self.purge.interval_ms == 0 {
            return bad(
                "zombie_cleanup.interval_ms, orphan_cleanup.interval_ms and purge.interval_ms must be at least 1",
            );
        }
        if self.orphan_cleanup.repair_interval_ms == 0 || self.circuit_breaker.probe_interval_ms == 0 {
            return bad("orphan_cleanup.repair_interval_ms and circuit_breaker.probe_interval_ms must be at least 1");
        }
        if self.orphan_cleanup.leadership_ttl_ms < 300 {
            return bad("orphan_cleanup.leadership_ttl_ms must be at least 300");
        }
        if self.replica_id.contains(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))) {
            return bad("replica_id must match [A-Za-z0-9._-]*");
        }
        if self.key_prefix.contains(['{', '}']) {
            return bad("key_prefix must not contain '{' or '}' (they would change hash slots)");
        }
        self.web.check()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_and_hashed() {
        let (a, b) = (new_token(), new_token());
        assert!(a.starts_with("baton_") && a.len() == 49 && a != b);
        assert_eq!(token_hash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    // Secrets readable by anyone, or by another group, are warned about; read by Baton's own
    // group (a Kubernetes Secret mounted 0440 with fsGroup) or by Baton alone are not.
    #[test]
    fn secret_files_readable_by_others() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.toml");
        std::fs::write(&file, "").unwrap();
        let warned = |mode: u32| {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
            readable_by_others(&file, "auth.tokens_file").is_some()
        };
        // The test's file belongs to the test's own group.
        assert!(!warned(0o600) && !warned(0o640) && !warned(0o440));
        assert!(warned(0o644) && warned(0o604));
        // Another group: chown needs root, which CI has; skipped otherwise.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&file, None, Some(unsafe { libc::getegid() } + 1)).unwrap();
            assert!(warned(0o640) && !warned(0o600));
        }
    }

    #[test]
    fn sharding_entries_parse_and_bad_entries_name_themselves() {
        let config =
            ShardingConfig { queues: " hot=3, orders = 2 ,".into(), pools: "gpu=4".into(), receivers: "".into() };
        let [queues, pools, receivers] = config.shards().unwrap();
        assert_eq!((queues["hot"], queues["orders"], queues.len()), (3, 2, 2));
        assert_eq!((pools["gpu"], pools.len(), receivers.len()), (4, 1, 0));
        for (bad, says) in [
            ("hot", "expected name=N"),
            ("hot=x", "must be a number"),
            ("hot=0", "1 to 64"),
            ("hot=65", "1 to 64"),
            ("h#t=3", "not a name"),
            ("=3", "not a name"),
        ] {
            for field in ["queues", "pools", "receivers"] {
                let mut config = ShardingConfig::default();
                *match field {
                    "queues" => &mut config.queues,
                    "pools" => &mut config.pools,
                    _ => &mut config.receivers,
                } = bad.into();
                let e = config.shards().unwrap_err().to_string();
                assert!(e.contains(says) && e.contains(&format!("sharding.{field}")), "{bad}: {e}");
            }
        }
    }

    #[test]
    fn cors_origins_are_star_alone_or_exact_origins() {
        let check = |origins: &[&str]| {
            let web = WebConfig {
                cors_allowed_origins: origins.iter().map(|o| o.to_string()).collect(),
                ..Default::default()
            };
            web.check().map_err(|e| e.to_string())
        };
        assert!(check(&[]).is_ok());
        assert!(check(&["*"]).is_ok());
        assert!(check(&["https://ops.example.com", "http://127.0.0.1:8080"]).is_ok());
        for (bad, says) in [
            (&["*", "https://a.example"][..], "alone"),
            (&["ops.example.com"][..], "expected scheme://host"),
            (&["ftp://ops.example.com"][..], "http:// or https://"),
            (&["https://ops.example.com/"][..], "no trailing slash"),
            (&["https://*.example.com"][..], "no wildcard"),
        ] {
            let e = check(bad).unwrap_err();
            assert!(e.contains(says) && e.contains("web.cors_allowed_origins"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn min_replicas_timeout_must_fit_in_the_command_timeout() {
        let mut config = Config::default();
        config.redis.min_replicas_ack = 1;
        config.redis.min_replicas_timeout_ms = config.redis.command_timeout_ms;
        assert!(config.check().unwrap_err().to_string().contains("min_replicas_timeout_ms"));
        config.redis.min_replicas_timeout_ms = 0;
        assert!(config.check().is_err());
        config.redis.min_replicas_timeout_ms = 500;
        assert!(config.check().is_ok());
    }
}

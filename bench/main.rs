//! baton-bench: Baton's figures on this machine, each next to a reference measured in the
//! same run on the same private redis-server.
//!
//! Scenarios (`--scenario`, comma-separated; default all, in this order):
//! - cycles: Acquire/Complete over gRPC against redis-benchmark running the same acquire
//!   script (both connection modes);
//! - dispatch: due → acquired latency with long polls, against a Redis PING;
//! - recovery: a SIGKILLed worker's leases back with another worker, on the default sweep
//!   settings, against the orphan sweep's threshold + interval;
//! - idle: Redis commands per second of an idle Baton, default settings against the previous
//!   ones;
//! - blip: calls failing after a Redis outage ends, default settings against the previous
//!   ones;
//! - leader: failover after a leader stops renewing, and Resign → handover, against the ttl;
//! - claims: Claim throughput and latency against redis-benchmark running claimResource, and
//!   Offer → waiting claim latency;
//! - schedule: 100,000 messages due within one second: lateness and delivery throughput;
//! - cluster: cycles of one hot queue on a real 3+3 Redis Cluster against one node, the same
//!   work over three shards, and with `redis.min_replicas_ack = 1`;
//! - security: cycles over TLS, and over TLS with an API token, against plaintext.
//! - drain: 100,000 one-shot no-op jobs drained by Baton's Go worker helper, by BullMQ and by
//!   asynq, on the same redis-server, interleaved: jobs/s, CPU and Redis commands per job,
//!   every job exactly once; and the limit: redis-benchmark's trivial EVALSHA and INCR in the
//!   same run, the ceiling they imply, and SLOWLOG's noise floor.
//! - flows: work that depends on work against BullMQ's FlowProducer on the same redis-server:
//!   a fan-out of 10,000 children, a fan-in, a chain of 1,000 steps (total time, Redis
//!   commands per step, hand-off per chain step), and Await's round trip at 1,000/s.
//! - scale: the same measures at growing sizes (1k → 1M waiting agents, keyed queues of 10 and
//!   of 100,000 keys, a pool of 100,000 idle resources, 10,000 queues, 1M scheduled messages,
//!   100,000 dead letters, 2,000 and 10,000 idle Session streams), with SLOWLOG's worst script
//!   calls per step against a 5 ms bound, and the shard sweep last.
//! - shards: the shard sweep alone: one queue over N = 1 … 32 shards, on one Redis and on a
//!   3-primary cluster, drained by Session streams: jobs/s, Redis commands, scripts and CPU per
//!   grant, each against N = 1.
//! - durable: what durable execution costs: a run of 10 recorded steps against a chain of 10
//!   one-shot agents, in Redis commands per run (whole life).
//!
//! - batch: `limits.script_batch` 10 … 500: each script's Redis µs per call and per item, its
//!   worst call against a bare INCR's worst in the same run, and jobs/s.
//! - sessions: the scale scenario's idle Session stream step alone, for variants of the
//!   server's environment, interleaved.
//! - observe: `baton serve`'s RSS under rounds of Observe stream floods, open and after they
//!   closed.
//!
//! Tables go to stdout, progress to stderr. See bench/README.md for how to read each table.

mod lab;
mod scenarios;

use std::process::ExitCode;

use baton::config::{Config, ConnectionMode};
use clap::{Parser, ValueEnum};

use lab::{print_machine, Lab, Result};
use scenarios::{
    batch::BatchArgs, blip::BlipArgs, claims::ClaimArgs, cluster::ClusterArgs, cycles::CyclesArgs,
    dispatch::DispatchArgs, drain::DrainArgs, durable::DurableArgs, flows::FlowsArgs, idle::IdleArgs,
    leader::LeaderArgs, observe::ObserveArgs, recovery::RecoveryArgs, scale::ScaleArgs, schedule::ScheduleArgs,
    security::SecurityArgs, sessions::SessionsArgs, shards::ShardsArgs,
};

#[derive(Parser)]
#[command(about = "Baton's benchmark: every figure next to a reference measured in the same run")]
struct Args {
    /// Scenarios to run, comma-separated: cycles, dispatch, recovery, idle, blip, leader,
    /// claims, schedule, cluster, security, drain, flows, scale, shards, durable, batch, sessions,
    /// observe, or all (scale runs the shard sweep as its last step, so all runs it once; batch,
    /// sessions and observe are not part of all).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "all")]
    scenario: Vec<Scenario>,

    // --- cycles ---
    /// cycles: concurrent workers (comma-separated list to compare several); each keeps one
    /// RPC in flight, as redis-benchmark keeps one call in flight per connection.
    #[arg(long, value_delimiter = ',', default_value = "32", help_heading = "cycles")]
    workers: Vec<usize>,
    /// cycles: leases per Acquire (max_leases), comma-separated list.
    #[arg(long, value_delimiter = ',', default_value = "1,10", help_heading = "cycles")]
    batch: Vec<u32>,
    /// cycles: measured seconds of each full-cycle phase (after a 1 s warm-up).
    #[arg(long, default_value_t = 10, help_heading = "cycles")]
    seconds: u64,
    /// cycles: Baton's Redis connection mode (`redis.connection`).
    #[arg(long, value_enum, default_value_t = Modes::Both, help_heading = "cycles")]
    connection: Modes,
    /// cycles: agents in the cycling queue.
    #[arg(long, default_value_t = 10_000, help_heading = "cycles")]
    agents: u64,
    /// cycles: leases granted in each acquire-only measurement, gRPC and redis-benchmark
    /// alike; the queue holds exactly that many agents. The gRPC side also stops after
    /// `--seconds`.
    #[arg(long, default_value_t = 50_000, help_heading = "cycles")]
    acquire_leases: u64,
    /// cycles: gRPC connections shared round-robin by the workers; default one per worker,
    /// as in a fleet where each worker process has its own.
    #[arg(long, help_heading = "cycles")]
    channels: Option<usize>,

    // --- dispatch ---
    /// dispatch: how workers wait, one run each (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "acquire,session", help_heading = "dispatch")]
    dispatch_via: Vec<scenarios::dispatch::Via>,
    /// dispatch: workers waiting in Acquire(wait=30s), comma-separated list.
    #[arg(long, value_delimiter = ',', default_value = "32,128", help_heading = "dispatch")]
    dispatch_workers: Vec<usize>,
    /// dispatch: agents made due per second, comma-separated list.
    #[arg(long, value_delimiter = ',', default_value = "200,1000", help_heading = "dispatch")]
    dispatch_rates: Vec<u32>,
    /// dispatch: seconds of arrivals per rate.
    #[arg(long, default_value_t = 5, help_heading = "dispatch")]
    dispatch_seconds: u64,

    // --- recovery ---
    /// recovery: leases the killed worker holds.
    #[arg(long, default_value_t = 100, help_heading = "recovery")]
    recovery_leases: u32,
    /// recovery: kills measured.
    #[arg(long, default_value_t = 3, help_heading = "recovery")]
    recovery_rounds: usize,
    /// recovery: orphan_cleanup.threshold_ms (default: the server's default).
    #[arg(long, default_value_t = Config::default().orphan_cleanup.threshold_ms, help_heading = "recovery")]
    orphan_threshold_ms: u64,
    /// recovery: orphan_cleanup.interval_ms (default: the server's default).
    #[arg(long, default_value_t = Config::default().orphan_cleanup.interval_ms, help_heading = "recovery")]
    orphan_interval_ms: u64,
    /// recovery: orphan_cleanup.leadership_ttl_ms (default: the server's default).
    #[arg(long, default_value_t = Config::default().orphan_cleanup.leadership_ttl_ms, help_heading = "recovery")]
    sweeper_ttl_ms: u64,
    /// recovery: the worker's heartbeat period (below the threshold, or a live worker is
    /// reaped; default: the helpers' default).
    #[arg(long, default_value_t = 3_000, help_heading = "recovery")]
    recovery_heartbeat_ms: u64,

    // --- idle ---
    /// idle: registered queues, comma-separated list.
    #[arg(long, value_delimiter = ',', default_value = "0,100", help_heading = "idle")]
    idle_queues: Vec<usize>,
    /// idle: measured seconds per row.
    #[arg(long, default_value_t = 10, help_heading = "idle")]
    idle_seconds: u64,

    // --- blip ---
    /// blip: how long Redis stays down, comma-separated list (ms).
    #[arg(long, value_delimiter = ',', default_value = "2000,10000", help_heading = "blip")]
    blip_outages_ms: Vec<u64>,
    /// blip: the client's period between calls (ms).
    #[arg(long, default_value_t = 10, help_heading = "blip")]
    blip_call_ms: u64,

    // --- leader ---
    /// leader: rounds of failover, and of handover.
    #[arg(long, default_value_t = 20, help_heading = "leader")]
    leader_rounds: usize,
    /// leader: the term's ttl T.
    #[arg(long, default_value_t = 1000, help_heading = "leader")]
    leader_ttl_ms: u64,

    // --- claims ---
    /// claims: concurrent claimers K, for throughput and for redis-benchmark -c.
    #[arg(long, default_value_t = 32, help_heading = "claims")]
    claim_workers: usize,
    /// claims: measured seconds of Claim+Return (after a 1 s warm-up).
    #[arg(long, default_value_t = 5, help_heading = "claims")]
    claim_seconds: u64,
    /// claims: claims in the claim-only comparison (gRPC and redis-benchmark alike).
    #[arg(long, default_value_t = 20_000, help_heading = "claims")]
    claim_calls: u64,
    /// claims: claimers waiting in line for the Offer → claim latency.
    #[arg(long, default_value_t = 8, help_heading = "claims")]
    claim_waiting: usize,
    /// claims: Offers, one at a time, for the Offer → claim latency.
    #[arg(long, default_value_t = 1000, help_heading = "claims")]
    claim_offers: usize,

    // --- schedule ---
    /// schedule: messages in the burst.
    #[arg(long, default_value_t = 100_000, help_heading = "schedule")]
    messages: u64,
    /// schedule: the window their deliver_at times spread over.
    #[arg(long, default_value_t = 1000, help_heading = "schedule")]
    window_ms: u64,
    /// schedule: how consumers take and ack messages, one run each (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "receive,subscribe", help_heading = "schedule")]
    schedule_via: Vec<scenarios::schedule::Via>,
    /// schedule: consumers (Receive or Subscribe streams, one connection each).
    #[arg(long, default_value_t = 4, help_heading = "schedule")]
    consumers: usize,
    /// schedule: Schedule calls in flight while scheduling ahead.
    #[arg(long, default_value_t = 64, help_heading = "schedule")]
    schedulers: usize,
    /// schedule: how long after the window to wait for the last ack before giving up.
    #[arg(long, default_value_t = 60, help_heading = "schedule")]
    schedule_timeout_s: u64,

    // --- cluster ---
    /// cluster: concurrent workers (one connection each).
    #[arg(long, default_value_t = 32, help_heading = "cluster")]
    cluster_workers: usize,
    /// cluster: measured seconds per row (after a 1 s warm-up).
    #[arg(long, default_value_t = 5, help_heading = "cluster")]
    cluster_seconds: u64,
    /// cluster: agents per row, split over the row's queues.
    #[arg(long, default_value_t = 9_000, help_heading = "cluster")]
    cluster_agents: u64,

    // --- drain ---
    /// drain: one-shot no-op jobs each system drains per round.
    #[arg(long, default_value_t = 100_000, help_heading = "drain")]
    drain_jobs: u64,
    /// drain: concurrency of each system's one worker process.
    #[arg(long, default_value_t = 100, help_heading = "drain")]
    drain_concurrency: u32,
    /// drain: rounds; each round runs every system once, interleaved.
    #[arg(long, default_value_t = 2, help_heading = "drain")]
    drain_rounds: u32,
    /// drain: systems to run, comma-separated: baton, baton-limited (Baton with a queue
    /// concurrency limit equal to the worker's concurrency: the cost of flow control),
    /// baton-keyed (the jobs over 100 keys with a per-key concurrency limit that never binds:
    /// the cost of keys and fairness), bullmq, asynq.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "baton,baton-limited,baton-keyed,bullmq,asynq",
        help_heading = "drain"
    )]
    drain_systems: Vec<String>,
    /// drain: calls of each redis-benchmark run of the limit (a trivial EVALSHA, then INCR),
    /// once per round, with as many connections as --drain-concurrency.
    #[arg(long, default_value_t = 100_000, help_heading = "drain")]
    drain_limit_calls: u64,

    // --- flows ---
    /// flows: children of the fan-out (and parents of the fan-in); at most 10,000 (Baton's
    /// limit of parents per agent).
    #[arg(long, default_value_t = 10_000, help_heading = "flows")]
    flows_fanout: u32,
    /// flows: steps of the chain.
    #[arg(long, default_value_t = 1_000, help_heading = "flows")]
    flows_chain: u32,
    /// flows: the worker's concurrency (Baton: Session credit; BullMQ: Worker concurrency).
    #[arg(long, default_value_t = 100, help_heading = "flows")]
    flows_concurrency: u32,
    /// flows: rounds; each runs every shape on every system, interleaved.
    #[arg(long, default_value_t = 3, help_heading = "flows")]
    flows_rounds: u32,
    /// flows: parts to run, comma-separated: fanout (Baton fan-out, BullMQ's flow and addBulk),
    /// fanin (Baton), chain (both), await (Baton's Await round trip).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "fanout,fanin,chain,await", help_heading = "flows")]
    flows_parts: Vec<scenarios::flows::Part>,
    /// flows: Await requests per second (one Register and one Await each).
    #[arg(long, default_value_t = 1_000, help_heading = "flows")]
    flows_await_rate: u32,
    /// flows: seconds of Await requests (the first is warm-up).
    #[arg(long, default_value_t = 10, help_heading = "flows")]
    flows_await_seconds: u64,

    // --- scale ---
    /// scale: sizes of the plain queue, in waiting one-shot agents (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1000,100000,1000000", help_heading = "scale")]
    scale_sizes: Vec<u64>,
    /// scale: agents of the keyed queues (10 keys, and one key per agent).
    #[arg(long, default_value_t = 100_000, help_heading = "scale")]
    scale_keyed: u64,
    /// scale: idle resources of the pool.
    #[arg(long, default_value_t = 100_000, help_heading = "scale")]
    scale_resources: u64,
    /// scale: queues of one agent each.
    #[arg(long, default_value_t = 10_000, help_heading = "scale")]
    scale_queues: usize,
    /// scale: draining workers (each one gRPC connection).
    #[arg(long, default_value_t = 16, help_heading = "scale")]
    scale_workers: usize,
    /// scale: leases per Acquire (and completions per CompleteBatch) of a draining worker.
    #[arg(long, default_value_t = 100, help_heading = "scale")]
    scale_batch: u32,
    /// scale: seconds the idle cost of the queues is measured over.
    #[arg(long, default_value_t = 10, help_heading = "scale")]
    scale_idle_seconds: u64,
    /// scale: messages scheduled an hour out.
    #[arg(long, default_value_t = 1_000_000, help_heading = "scale")]
    scale_messages: u64,
    /// scale: messages due at once, consumed by Receive streams (lateness).
    #[arg(long, default_value_t = 100_000, help_heading = "scale")]
    scale_due: u64,
    /// scale: dead letters of one queue (at least 40: the step retries 20 and deletes 20 others).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(40..), help_heading = "scale")]
    scale_dead_letters: u64,
    /// scale: idle Session streams (comma-separated step sizes).
    #[arg(long, value_delimiter = ',', default_value = "2000,10000", help_heading = "scale")]
    scale_sessions: Vec<usize>,

    // --- shards (the shard sweep: the shards scenario, and the scale scenario's last step) ---
    /// shards: shard counts N of the swept queue (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32", help_heading = "shards")]
    shards_counts: Vec<u32>,
    /// shards: one-shot agents registered and drained at each N.
    #[arg(long, default_value_t = 20_000, help_heading = "shards")]
    shards_jobs: u64,
    /// shards: Session streams draining (each one gRPC connection).
    #[arg(long, default_value_t = 4, help_heading = "shards")]
    shards_sessions: usize,
    /// shards: credit of each Session stream (leases in flight).
    #[arg(long, default_value_t = 100, help_heading = "shards")]
    shards_credit: u32,
    /// shards: where the queue lives, comma-separated: single (the run's redis-server),
    /// cluster (3 primaries on loopback).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "single,cluster", help_heading = "shards")]
    shards_on: Vec<scenarios::shards::On>,

    // --- durable ---
    /// durable: runs (and chains) per row.
    #[arg(long, default_value_t = 2_000, help_heading = "durable")]
    durable_runs: u32,
    /// durable: steps per run (and agents per chain).
    #[arg(long, default_value_t = 10, help_heading = "durable")]
    durable_steps: u32,
    /// durable: runs in flight on the worker's Session stream (its credit).
    #[arg(long, default_value_t = 100, help_heading = "durable")]
    durable_concurrency: u32,
    /// durable: parts to run, comma-separated: steps, signal, watch.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "steps,signal,watch", help_heading = "durable")]
    durable_parts: Vec<scenarios::durable::Part>,
    /// durable: Signals per second.
    #[arg(long, default_value_t = 1_000, help_heading = "durable")]
    durable_signal_rate: u32,
    /// durable: seconds of Signals (the first is warm-up).
    #[arg(long, default_value_t = 10, help_heading = "durable")]
    durable_signal_seconds: u64,
    /// durable: heartbeats with progress per second, watched by WatchAgent streams.
    #[arg(long, default_value_t = 1_000, help_heading = "durable")]
    durable_watch_rate: u32,
    /// durable: seconds of heartbeats (the first is warm-up).
    #[arg(long, default_value_t = 10, help_heading = "durable")]
    durable_watch_seconds: u64,
    /// durable: leases held and watched at once.
    #[arg(long, default_value_t = 50, help_heading = "durable")]
    durable_watch_agents: u32,

    // --- batch ---
    /// batch: `limits.script_batch` sizes measured (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "10,20,50,100,200,500", help_heading = "batch")]
    batch_sizes: Vec<u32>,
    /// batch: one-shot agents registered and drained at each size.
    #[arg(long, default_value_t = 20_000, help_heading = "batch")]
    batch_jobs: u64,
    /// batch: draining workers (each one gRPC connection, Acquire of 1,000 + CompleteBatch).
    #[arg(long, default_value_t = 4, help_heading = "batch")]
    batch_workers: usize,
    /// batch: rounds; each runs every size once, interleaved.
    #[arg(long, default_value_t = 2, help_heading = "batch")]
    batch_rounds: u32,

    // --- sessions ---
    /// sessions: variants of the `baton serve` environment, comma-separated: `default`, or
    /// `K=V` settings joined by `+` (`bin=PATH`: another `baton` binary, a build to compare).
    #[arg(long, value_delimiter = ',', default_value = "default", help_heading = "sessions")]
    sessions_variants: Vec<String>,
    /// sessions: rounds; each runs every size and variant once, interleaved (sizes are
    /// --scale-sessions).
    #[arg(long, default_value_t = 2, help_heading = "sessions")]
    sessions_rounds: u32,

    // --- observe ---
    /// observe: Observe streams opened each round, each on an election of its own.
    #[arg(long, default_value_t = 10_000, help_heading = "observe")]
    observe_streams: usize,
    /// observe: rounds.
    #[arg(long, default_value_t = 3, help_heading = "observe")]
    observe_rounds: u32,
    /// observe: every round on the same election names (default: new names each round).
    #[arg(long, help_heading = "observe")]
    observe_same_names: bool,
    /// observe: seconds after the streams closed before RSS is read again (a replica drops a
    /// channel's subscription 30 s after its last waiter left).
    #[arg(long, default_value_t = 35, help_heading = "observe")]
    observe_settle_seconds: u64,

    // --- security ---
    /// security: concurrent workers (one connection each).
    #[arg(long, default_value_t = 32, help_heading = "security")]
    security_workers: usize,
    /// security: measured seconds per row (after a 1 s warm-up).
    #[arg(long, default_value_t = 5, help_heading = "security")]
    security_seconds: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Scenario {
    Cycles,
    Dispatch,
    Recovery,
    Idle,
    Blip,
    Leader,
    Claims,
    Schedule,
    Cluster,
    Security,
    Drain,
    Flows,
    Scale,
    Shards,
    Durable,
    Batch,
    Sessions,
    Observe,
    All,
}

const ORDER: [Scenario; 18] = [
    Scenario::Cycles,
    Scenario::Dispatch,
    Scenario::Recovery,
    Scenario::Idle,
    Scenario::Blip,
    Scenario::Leader,
    Scenario::Claims,
    Scenario::Schedule,
    Scenario::Cluster,
    Scenario::Security,
    Scenario::Drain,
    Scenario::Flows,
    Scenario::Scale,
    Scenario::Shards,
    Scenario::Durable,
    Scenario::Batch,
    Scenario::Sessions,
    Scenario::Observe,
];

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Modes {
    Pool,
    Shared,
    Both,
}

impl Modes {
    fn list(self) -> Vec<ConnectionMode> {
        match self {
            Modes::Pool => vec![ConnectionMode::Pool],
            Modes::Shared => vec![ConnectionMode::Shared],
            Modes::Both => vec![ConnectionMode::Pool, ConnectionMode::Shared],
        }
    }
}

fn check(args: &Args) -> std::result::Result<(), String> {
    let max_batch = Config::default().limits.max_batch;
    if args.workers.contains(&0) || args.batch.contains(&0) || args.seconds == 0 || args.channels == Some(0) {
        return Err("--workers, --batch, --seconds and --channels must be at least 1".into());
    }
    if let Some(&n) = args.batch.iter().find(|&&n| n > max_batch) {
        return Err(format!("--batch {n} is above the server's limit of {max_batch} leases per Acquire"));
    }
    if let Some(&n) = args.batch.iter().find(|&&n| u64::from(n) > args.acquire_leases) {
        return Err(format!("--acquire-leases must be at least --batch ({n})"));
    }
    let max_steps = Config::default().limits.max_steps;
    if args.durable_signal_rate == 0 || args.durable_signal_seconds < 2 {
        return Err("--durable-signal-rate must be at least 1 and --durable-signal-seconds at least 2".into());
    }
    if args.durable_watch_rate == 0 || args.durable_watch_seconds < 2 || args.durable_watch_agents == 0 {
        return Err(
            "--durable-watch-rate and --durable-watch-agents must be at least 1, --durable-watch-seconds at least 2"
                .into(),
        );
    }
    if args.durable_watch_agents > max_batch {
        return Err(format!("--durable-watch-agents is at most {max_batch} (one Acquire holds them all)"));
    }
    if args.durable_runs == 0
        || args.durable_concurrency == 0
        || args.durable_steps == 0
        || args.durable_steps > max_steps
    {
        return Err(format!(
            "--durable-runs and --durable-concurrency must be at least 1, --durable-steps 1..={max_steps} (limits.max_steps)"
        ));
    }
    if args.dispatch_workers.contains(&0) || args.dispatch_rates.contains(&0) || args.dispatch_seconds == 0 {
        return Err("--dispatch-workers, --dispatch-rates and --dispatch-seconds must be at least 1".into());
    }
    if args.recovery_leases == 0 || args.recovery_leases > max_batch || args.recovery_rounds == 0 {
        return Err(format!("--recovery-leases must be 1..={max_batch} and --recovery-rounds at least 1"));
    }
    if args.idle_seconds == 0 || args.blip_call_ms == 0 || args.blip_outages_ms.is_empty() {
        return Err("--idle-seconds and --blip-call-ms must be at least 1, --blip-outages-ms not empty".into());
    }
    if args.leader_rounds == 0 || args.leader_ttl_ms < Config::default().limits.min_ttl_ms {
        return Err("--leader-rounds must be at least 1 and --leader-ttl-ms at least the server's min ttl".into());
    }
    if args.claim_workers == 0 || args.claim_seconds == 0 || args.claim_calls == 0 || args.claim_waiting == 0 {
        return Err("--claim-workers, --claim-seconds, --claim-calls and --claim-waiting must be at least 1".into());
    }
    if args.security_workers == 0 || args.security_seconds == 0 {
        return Err("--security-workers and --security-seconds must be at least 1".into());
    }
    if args.drain_jobs == 0 || args.drain_concurrency == 0 || args.drain_rounds == 0 {
        return Err("--drain-jobs, --drain-concurrency and --drain-rounds must be at least 1".into());
    }
    if let Some(s) = args
        .drain_systems
        .iter()
        .find(|s| !["baton", "baton-limited", "baton-keyed", "bullmq", "asynq"].contains(&s.as_str()))
    {
        return Err(format!(
            "--drain-systems: unknown system {s:?} (baton, baton-limited, baton-keyed, bullmq, asynq)"
        ));
    }
    if args.flows_fanout == 0
        || args.flows_fanout > 10_000
        || args.flows_chain < 2
        || args.flows_concurrency == 0
        || args.flows_concurrency > max_batch
        || args.flows_rounds == 0
        || args.flows_await_rate == 0
        || args.flows_await_seconds < 2
    {
        return Err(format!(
            "--flows-fanout must be 1..=10000, --flows-chain at least 2, --flows-concurrency 1..={max_batch}, \
             --flows-rounds and --flows-await-rate at least 1, --flows-await-seconds at least 2"
        ));
    }
    if args.scale_sizes.is_empty()
        || args.scale_sizes.contains(&0)
        || args.scale_keyed < 10
        || args.scale_resources == 0
        || args.scale_queues == 0
        || args.scale_workers == 0
        || args.scale_batch == 0
        || args.scale_batch > max_batch
        || args.scale_idle_seconds == 0
    {
        return Err(format!(
            "--scale-sizes, --scale-resources, --scale-queues, --scale-workers and --scale-idle-seconds must be at \
             least 1, --scale-keyed at least 10, --scale-batch 1..={max_batch}"
        ));
    }
    if args.shards_counts.is_empty()
        || args.shards_counts.iter().any(|n| !(1..=64).contains(n))
        || args.shards_jobs == 0
        || args.shards_sessions == 0
        || args.shards_credit == 0
        || args.shards_credit > max_batch
        || args.shards_on.is_empty()
    {
        return Err(format!(
            "--shards-counts must be 1..=64 each (sharding's bounds), --shards-jobs and --shards-sessions at least 1, \
             --shards-credit 1..={max_batch}, --shards-on not empty"
        ));
    }
    if args.batch_sizes.is_empty()
        || args.batch_sizes.iter().any(|&n| n == 0 || n > max_batch)
        || args.batch_jobs == 0
        || args.batch_workers == 0
        || args.batch_rounds == 0
    {
        return Err(format!(
            "--batch-sizes must be 1..={max_batch} each, --batch-jobs, --batch-workers and --batch-rounds at least 1"
        ));
    }
    if args.sessions_variants.is_empty() || args.sessions_rounds == 0 || args.scale_sessions.contains(&0) {
        return Err("--sessions-variants not empty, --sessions-rounds and --scale-sessions at least 1".into());
    }
    if args.observe_streams == 0 || args.observe_rounds == 0 {
        return Err("--observe-streams and --observe-rounds at least 1".into());
    }
    if args.drain_limit_calls == 0 {
        return Err("--drain-limit-calls must be at least 1".into());
    }
    if args.messages == 0 || args.window_ms == 0 || args.consumers == 0 || args.schedulers == 0 {
        return Err("--messages, --window-ms, --consumers and --schedulers must be at least 1".into());
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if let Err(e) = check(&args) {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    // On Ctrl-C the run future is dropped, which kills redis-server and any worker process
    // (kill_on_drop) rather than leaving them orphaned.
    tokio::select! {
        result = run(args) => match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("baton-bench: {e}");
                ExitCode::FAILURE
            }
        },
        _ = tokio::signal::ctrl_c() => {
            eprintln!("interrupted");
            ExitCode::from(130)
        }
    }
}

fn shards_args(args: &Args) -> ShardsArgs {
    ShardsArgs {
        counts: args.shards_counts.clone(),
        jobs: args.shards_jobs,
        sessions: args.shards_sessions,
        credit: args.shards_credit,
        on: args.shards_on.clone(),
    }
}

async fn run(args: Args) -> Result<()> {
    let wanted = |s: Scenario| {
        args.scenario.contains(&s)
            || (args.scenario.contains(&Scenario::All)
                && !matches!(s, Scenario::Batch | Scenario::Sessions | Scenario::Observe))
    };
    let dir = tempfile::Builder::new().prefix("baton-bench").tempdir_in("/tmp")?;
    let mut lab = Lab::start(dir.path()).await?;
    print_machine(&mut lab.conn, &lab.clock).await?;
    let started = std::time::Instant::now();
    for scenario in ORDER.into_iter().filter(|&s| wanted(s)) {
        match scenario {
            Scenario::Cycles => {
                let cycles = CyclesArgs {
                    workers: args.workers.clone(),
                    batch: args.batch.clone(),
                    seconds: args.seconds,
                    modes: args.connection.list(),
                    agents: args.agents,
                    acquire_leases: args.acquire_leases,
                    channels: args.channels,
                };
                scenarios::cycles::run(&mut lab, &cycles).await?;
                lab::print_load();
            }
            Scenario::Dispatch => {
                let dispatch = DispatchArgs {
                    via: args.dispatch_via.clone(),
                    workers: args.dispatch_workers.clone(),
                    rates: args.dispatch_rates.clone(),
                    seconds: args.dispatch_seconds,
                };
                scenarios::dispatch::run(&mut lab, &dispatch).await?;
            }
            Scenario::Recovery => {
                let recovery = RecoveryArgs {
                    leases: args.recovery_leases,
                    rounds: args.recovery_rounds,
                    threshold_ms: args.orphan_threshold_ms,
                    interval_ms: args.orphan_interval_ms,
                    leadership_ttl_ms: args.sweeper_ttl_ms,
                    heartbeat_ms: args.recovery_heartbeat_ms,
                };
                scenarios::recovery::run(&mut lab, &recovery).await?;
            }
            Scenario::Idle => {
                let idle = IdleArgs { queues: args.idle_queues.clone(), seconds: args.idle_seconds };
                scenarios::idle::run(&mut lab, &idle).await?;
            }
            Scenario::Blip => {
                let blip = BlipArgs { outages_ms: args.blip_outages_ms.clone(), call_ms: args.blip_call_ms };
                scenarios::blip::run(&blip).await?;
            }
            Scenario::Leader => {
                let leader = LeaderArgs { rounds: args.leader_rounds, ttl_ms: args.leader_ttl_ms };
                scenarios::leader::run(&mut lab, &leader).await?;
            }
            Scenario::Claims => {
                let claims = ClaimArgs {
                    workers: args.claim_workers,
                    seconds: args.claim_seconds,
                    calls: args.claim_calls,
                    waiting: args.claim_waiting,
                    offers: args.claim_offers,
                };
                scenarios::claims::run(&mut lab, &claims).await?;
            }
            Scenario::Schedule => {
                let schedule = ScheduleArgs {
                    via: args.schedule_via.clone(),
                    messages: args.messages,
                    window_ms: args.window_ms,
                    consumers: args.consumers,
                    schedulers: args.schedulers,
                    timeout_s: args.schedule_timeout_s,
                };
                scenarios::schedule::run(&mut lab, &schedule).await?;
            }
            Scenario::Cluster => {
                let cluster = ClusterArgs {
                    workers: args.cluster_workers,
                    seconds: args.cluster_seconds,
                    agents: args.cluster_agents,
                };
                scenarios::cluster::run(&mut lab, &cluster).await?;
            }
            Scenario::Security => {
                let security = SecurityArgs {
                    workers: args.security_workers,
                    seconds: args.security_seconds,
                    agents: args.cluster_agents,
                };
                scenarios::security::run(&mut lab, &security).await?;
            }
            Scenario::Drain => {
                let drain = DrainArgs {
                    jobs: args.drain_jobs,
                    concurrency: args.drain_concurrency,
                    rounds: args.drain_rounds,
                    systems: args.drain_systems.clone(),
                    limit_calls: args.drain_limit_calls,
                };
                scenarios::drain::run(&mut lab, dir.path(), &drain).await?;
            }
            Scenario::Flows => {
                let flows = FlowsArgs {
                    fanout: args.flows_fanout,
                    chain: args.flows_chain,
                    concurrency: args.flows_concurrency,
                    rounds: args.flows_rounds,
                    parts: args.flows_parts.clone(),
                    await_rate: args.flows_await_rate,
                    await_seconds: args.flows_await_seconds,
                };
                scenarios::flows::run(&mut lab, &flows).await?;
            }
            Scenario::Scale => {
                let scale = ScaleArgs {
                    sizes: args.scale_sizes.clone(),
                    keyed: args.scale_keyed,
                    resources: args.scale_resources,
                    queues: args.scale_queues,
                    workers: args.scale_workers,
                    batch: args.scale_batch,
                    idle_seconds: args.scale_idle_seconds,
                    messages: args.scale_messages,
                    due: args.scale_due,
                    dead_letters: args.scale_dead_letters,
                    sessions: args.scale_sessions.clone(),
                    shards: shards_args(&args),
                };
                scenarios::scale::run(&mut lab, &scale).await?;
            }
            // The scale scenario ran the sweep already.
            Scenario::Shards if wanted(Scenario::Scale) => {}
            Scenario::Shards => {
                scenarios::shards::run(&mut lab, &shards_args(&args)).await?;
                lab::print_load();
            }
            Scenario::Durable => {
                let durable = DurableArgs {
                    runs: args.durable_runs,
                    steps: args.durable_steps,
                    concurrency: args.durable_concurrency,
                    parts: args.durable_parts.clone(),
                    signal_rate: args.durable_signal_rate,
                    signal_seconds: args.durable_signal_seconds,
                    watch_rate: args.durable_watch_rate,
                    watch_seconds: args.durable_watch_seconds,
                    watch_agents: args.durable_watch_agents,
                };
                scenarios::durable::run(&mut lab, &durable).await?;
            }
            Scenario::Batch => {
                let batch = BatchArgs {
                    sizes: args.batch_sizes.clone(),
                    jobs: args.batch_jobs,
                    workers: args.batch_workers,
                    rounds: args.batch_rounds,
                };
                scenarios::batch::run(&mut lab, &batch).await?;
            }
            Scenario::Sessions => {
                let sessions = SessionsArgs {
                    sizes: args.scale_sessions.clone(),
                    variants: args.sessions_variants.clone(),
                    rounds: args.sessions_rounds,
                    idle_seconds: args.scale_idle_seconds,
                };
                scenarios::sessions::run(&mut lab, &sessions).await?;
            }
            Scenario::Observe => {
                let observe = ObserveArgs {
                    streams: args.observe_streams,
                    rounds: args.observe_rounds,
                    same_names: args.observe_same_names,
                    settle_seconds: args.observe_settle_seconds,
                };
                scenarios::observe::run(&mut lab, &observe).await?;
            }
            Scenario::All => unreachable!("not in ORDER"),
        }
    }
    lab.redis.stop().await;
    eprintln!("baton-bench: done in {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

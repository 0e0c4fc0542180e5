//! scale: the same measures at growing sizes, so the curve shows. Redis runs one script at a
//! time: a script whose work grows with user data stalls every caller, so each step also reads
//! SLOWLOG (every command above 1 ms) and prints the worst script calls by name.
//!
//! Steps, each on an empty Redis and a fresh Baton on default settings:
//! - plain queue of N waiting one-shot agents (`--scale-sizes`): Redis memory per agent,
//!   GetHealth and ListAgents (first page of 100) latency, one unary Acquire+Complete cycle
//!   p50/p99 on the loaded queue, then a drain by `--scale-workers` workers (Acquire of
//!   `--scale-batch` + CompleteBatch): jobs/s, against the smallest size's, and meanwhile
//!   another client's unary Acquire+Complete on a queue of its own (isolation) p50/p99;
//! - a keyed queue of `--scale-keyed` agents over 10 keys and over one key per agent, drained
//!   the same way: jobs/s against a plain queue of the same size drained in the same run, Redis
//!   commands and CPU per job over the drain, and the per-key state left behind;
//! - a pool of `--scale-resources` idle resources: GetHealth and a Purge pass;
//! - `--scale-queues` queues of one agent each: GetHealth latency and the idle Redis commands
//!   per second of the sweepers (INFO commandstats) over `--scale-idle-seconds`;
//! - scheduled messages, dead letters and idle Session streams (`scale_sources`);
//! - the shard sweep: one queue over 1 … 32 shards, on one Redis and on a cluster (`shards`).

use std::time::Duration;

use baton::pb::{self, admin_service_client::AdminServiceClient, claim_service_client::ClaimServiceClient};
use futures::{StreamExt, TryStreamExt};
use tokio::time::Instant;

use super::measure::{drain, health_ms, median_ms, slowlog_read, slowlog_start, used_memory, Slow};
use super::{cycles::register, scale_sources};
use crate::lab::{
    agents, bench_config, dur, fmt_ms, histogram, micros, ms_at, Baton, Lab, RedisCounters, Result, LEASE_TIMEOUT_MS,
};

pub struct ScaleArgs {
    pub sizes: Vec<u64>,
    pub keyed: u64,
    pub resources: u64,
    pub queues: usize,
    pub workers: usize,
    pub batch: u32,
    pub idle_seconds: u64,
    pub messages: u64,
    pub due: u64,
    pub dead_letters: u64,
    pub sessions: Vec<usize>,
    /// The shard sweep, the last step (the `shards` scenario alone runs only it).
    pub shards: super::shards::ShardsArgs,
}

/// The bound each script call is held to.
const SCRIPT_BOUND_US: i64 = 5_000;

pub async fn run(lab: &mut Lab, args: &ScaleArgs) -> Result<()> {
    let mut slow_rows: Vec<(String, Slow)> = Vec::new();

    // Plain queues, growing.
    let mut plain = Vec::new();
    for &n in &args.sizes {
        eprintln!("[scale] plain queue of {n} agents");
        let (row, slow) = plain_step(lab, args, n).await?;
        plain.push(row);
        slow_rows.push((format!("plain {n}"), slow));
    }
    println!();
    println!(
        "Scale: one queue of N waiting one-shot agents; drain by {} workers (Acquire of {} + CompleteBatch)",
        args.workers, args.batch
    );
    println!(
        "{:>9} {:>10} {:>12} {:>12} {:>18} {:>10} {:>10} {:>22}",
        "agents", "B/agent", "GetHealth", "ListAgents", "cycle p50/p99", "jobs/s", "vs first", "cycle while draining"
    );
    let first = plain.first().map_or(1.0, |r: &PlainRow| r.jobs_per_s);
    for r in &plain {
        println!(
            "{:>9} {:>10.0} {:>12} {:>12} {:>18} {:>10.0} {:>10.2} {:>22}",
            r.n,
            r.bytes_per_agent,
            fmt_ms(r.health_ms),
            fmt_ms(r.list_ms),
            format!("{}/{}", fmt_ms(r.cycle_p50_ms), fmt_ms(r.cycle_p99_ms)),
            r.jobs_per_s,
            r.jobs_per_s / first,
            format!("{}/{}", fmt_ms(r.side_p50_ms), fmt_ms(r.side_p99_ms))
        );
    }

    // Keyed queues against a plain one of the same size.
    eprintln!("[scale] keyed queues of {} agents", args.keyed);
    let mut keyed_rows = Vec::new();
    for keys in [0u64, 10, args.keyed] {
        let (row, slow) = keyed_step(lab, args, keys).await?;
        let label = if keys == 0 { "plain".to_string() } else { format!("{keys} keys") };
        slow_rows.push((format!("keyed: {label}"), slow));
        keyed_rows.push((label, row));
    }
    println!();
    println!("Keyed queues: {} agents drained as above, against a plain queue of the same size", args.keyed);
    println!(
        "{:>14} {:>10} {:>10} {:>14} {:>13} {:>22}",
        "queue", "jobs/s", "vs plain", "redis cmd/job", "redis µs/job", "per-key fields left"
    );
    let base = keyed_rows[0].1.jobs_per_s;
    for (label, r) in &keyed_rows {
        println!(
            "{label:>14} {:>10.0} {:>10.2} {:>14.2} {:>13.1} {:>22}",
            r.jobs_per_s,
            r.jobs_per_s / base,
            r.commands_per_job,
            r.redis_us_per_job,
            r.left
        );
    }

    eprintln!("[scale] pool of {} idle resources", args.resources);
    let (health_ms, purge_ms, slow) = pool_step(lab, args).await?;
    slow_rows.push((format!("pool {}", args.resources), slow));
    println!();
    println!(
        "Pool of {} idle resources: GetHealth {} ; one Purge pass {}",
        args.resources,
        fmt_ms(health_ms),
        fmt_ms(purge_ms)
    );

    eprintln!("[scale] {} queues of one agent", args.queues);
    let (health_ms, per_s, slow) = queues_step(lab, args).await?;
    slow_rows.push((format!("{} queues", args.queues), slow));
    println!();
    println!(
        "{} queues of one agent each: GetHealth {} ; idle Redis commands/s {per_s:.1} ({:.3} per queue)",
        args.queues,
        fmt_ms(health_ms),
        per_s / args.queues as f64
    );

    eprintln!("[scale] {} scheduled messages", args.messages);
    let (m, slow) = scale_sources::scheduled_step(lab, args.messages, args.due).await?;
    slow_rows.push((format!("{} messages", args.messages), slow));
    println!();
    println!(
        "{} messages scheduled an hour out: Schedule {:.0}/s, {:.0} B/message, GetHealth {}, ListMessages {}; \
         {} due at once: lateness p50 {} p99 {}",
        m.n,
        m.schedule_per_s,
        m.bytes_per_message,
        fmt_ms(m.health_ms),
        fmt_ms(m.list_ms),
        m.due,
        fmt_ms(m.lateness_p50_ms),
        fmt_ms(m.lateness_p99_ms)
    );

    eprintln!("[scale] {} dead letters", args.dead_letters);
    let (d, slow) = scale_sources::dead_letters_step(lab, args.dead_letters, args.workers, args.batch).await?;
    slow_rows.push((format!("{} dead letters", args.dead_letters), slow));
    println!();
    println!(
        "{} dead letters: ListDeadLetters first page {}, 50 pages deep {}; RetryDeadLetter {}; DeleteDeadLetter {}; \
         one Purge pass {}",
        d.n,
        fmt_ms(d.first_page_ms),
        fmt_ms(d.deep_page_ms),
        fmt_ms(d.retry_ms),
        fmt_ms(d.delete_ms),
        fmt_ms(d.purge_ms)
    );

    let mut session_rows = Vec::new();
    for &n in &args.sessions {
        eprintln!("[scale] {n} idle Session streams");
        let (row, slow) = scale_sources::sessions_step(lab, n, args.idle_seconds).await?;
        slow_rows.push((format!("{n} sessions"), slow));
        session_rows.push(row);
    }
    println!();
    println!("Idle Session streams on one queue (RSS: `baton serve` alone, in a process of its own)");
    println!(
        "{:>9} {:>14} {:>14} {:>16} {:>22}",
        "streams", "RSS/stream", "Redis clients", "idle cmds/s", "Register→grant p50/p99"
    );
    for r in &session_rows {
        println!(
            "{:>9} {:>11.1} KB {:>14} {:>16.1} {:>22}",
            r.n,
            r.rss_per_stream_kb,
            r.redis_clients,
            r.idle_commands_per_s,
            format!("{}/{}", fmt_ms(r.grant_p50_ms), fmt_ms(r.grant_p99_ms))
        );
    }

    println!();
    println!("SLOWLOG: script calls above 1 ms per step (worst µs, calls); bound {SCRIPT_BOUND_US} µs");
    let mut over = 0;
    for (step, slow) in &slow_rows {
        let worst: Vec<String> = slow.iter().map(|(name, (us, calls))| format!("{name} {us} µs ×{calls}")).collect();
        over += slow.values().filter(|(us, _)| *us > SCRIPT_BOUND_US).count();
        println!("{step:>18}: {}", if worst.is_empty() { "none".to_string() } else { worst.join(", ") });
    }
    println!("scripts over the bound: {over}");

    super::shards::run(lab, &args.shards).await?;
    crate::lab::print_load();
    Ok(())
}

struct PlainRow {
    n: u64,
    bytes_per_agent: f64,
    health_ms: f64,
    list_ms: f64,
    cycle_p50_ms: f64,
    cycle_p99_ms: f64,
    jobs_per_s: f64,
    /// Another client's unary cycle during the drain.
    side_p50_ms: f64,
    side_p99_ms: f64,
}

async fn plain_step(lab: &mut Lab, args: &ScaleArgs, n: u64) -> Result<(PlainRow, Slow)> {
    lab.flush().await?;
    let baton = Baton::start(&lab.url(), bench_config()).await?;
    let channel = baton.channel().await?;
    let client = agents(channel.clone());
    let mut admin = AdminServiceClient::new(channel.clone());
    slowlog_start(lab).await?;
    let before = used_memory(lab).await?;
    register(&client, "scale", n, None).await?;
    let bytes_per_agent = used_memory(lab).await?.saturating_sub(before) as f64 / n as f64;
    let health_ms = health_ms(&admin, 20).await?;
    let list_ms = median_ms(20, || {
        let mut c = client.clone();
        async move {
            c.list_agents(pb::ListAgentsRequest { queue: "scale".into(), page_size: 100, ..Default::default() })
                .await?;
            Ok(())
        }
    })
    .await?;
    // One unary cycle at a time on the loaded queue (each consumes one agent).
    let cycles = (n / 10).clamp(1, 200);
    let mut h = histogram();
    let mut c = client.clone();
    for _ in 0..cycles {
        let started = Instant::now();
        let request = pb::AcquireRequest { queue: "scale".into(), worker_id: "one".into(), max_leases: 1, wait: None };
        for l in c.acquire(request).await?.into_inner().leases {
            c.complete(pb::CompleteRequest {
                queue: l.queue,
                name: l.name,
                token: l.token,
                outcome: pb::Outcome::Success as i32,
                ..Default::default()
            })
            .await?;
        }
        h.saturating_record(micros(started.elapsed()));
    }
    // Isolation: while the fleet drains, another client runs unary cycles on a queue of its
    // own (recurring agents due again 1 ms after each run).
    register(&client, "side", 200, Some(1)).await?;
    let side_stop = tokio_util::sync::CancellationToken::new();
    let side = {
        let (mut c, stop) = (client.clone(), side_stop.clone());
        tokio::spawn(async move {
            let mut h = histogram();
            while !stop.is_cancelled() {
                let started = Instant::now();
                let request =
                    pb::AcquireRequest { queue: "side".into(), worker_id: "side".into(), max_leases: 1, wait: None };
                for l in c.acquire(request).await?.into_inner().leases {
                    let done = pb::CompleteRequest {
                        queue: l.queue,
                        name: l.name,
                        token: l.token,
                        outcome: pb::Outcome::Success as i32,
                        ..Default::default()
                    };
                    c.complete(done).await?;
                }
                h.saturating_record(micros(started.elapsed()));
            }
            Ok::<_, tonic::Status>(h)
        })
    };
    let jobs_per_s = drain(&baton, "scale", n - cycles, args.workers, args.batch).await?;
    side_stop.cancel();
    let side = side.await??;
    let _ = admin.get_health(pb::GetHealthRequest {}).await;
    let slow = slowlog_read(lab).await?;
    baton.stop().await?;
    let row = PlainRow {
        n,
        bytes_per_agent,
        health_ms,
        list_ms,
        cycle_p50_ms: ms_at(&h, 0.5),
        cycle_p99_ms: ms_at(&h, 0.99),
        jobs_per_s,
        side_p50_ms: ms_at(&side, 0.5),
        side_p99_ms: ms_at(&side, 0.99),
    };
    Ok((row, slow))
}

/// One keyed row: the drain's rate, Redis commands (inside scripts included) and Redis CPU per
/// job over the drain, and the per-key fields left in the limits hash once drained.
struct KeyedRow {
    jobs_per_s: f64,
    commands_per_job: f64,
    redis_us_per_job: f64,
    left: u64,
}

/// `keys` 0: a plain queue.
async fn keyed_step(lab: &mut Lab, args: &ScaleArgs, keys: u64) -> Result<(KeyedRow, Slow)> {
    lab.flush().await?;
    let baton = Baton::start(&lab.url(), bench_config()).await?;
    let client = agents(baton.channel().await?);
    slowlog_start(lab).await?;
    let chunk = u64::from(baton::config::Config::default().limits.max_batch);
    let n = args.keyed;
    let requests = (0..n.div_ceil(chunk)).map(|c| {
        let agents = (c * chunk..((c + 1) * chunk).min(n))
            .map(|i| pb::Agent {
                name: format!("agent-{i:07}"),
                key: if keys == 0 { String::new() } else { format!("k{}", i % keys) },
                timeout: dur(LEASE_TIMEOUT_MS),
                ..Default::default()
            })
            .collect();
        let mut client = client.clone();
        let request = pb::RegisterRequest { queue: "keyed".into(), agents, ..Default::default() };
        async move { client.register(request).await }
    });
    futures::stream::iter(requests).buffer_unordered(4).try_for_each(|_| async { Ok(()) }).await?;
    let before = RedisCounters::read(&mut lab.conn).await?;
    let jobs_per_s = drain(&baton, "keyed", n, args.workers, args.batch).await?;
    let during = RedisCounters::read(&mut lab.conn).await?.since(&before);
    // The call that finds the queue drained.
    let mut c = client.clone();
    c.acquire(pb::AcquireRequest { queue: "keyed".into(), worker_id: "end".into(), max_leases: 1, wait: None }).await?;
    let fields: Vec<String> = redis::cmd("HKEYS").arg("baton:{q:keyed}:limits").query_async(&mut lab.conn).await?;
    let tags: u64 = redis::cmd("HLEN").arg("baton:{q:keyed}:tags").query_async(&mut lab.conn).await?;
    let left = fields.iter().filter(|f| f.contains('|')).count() as u64 + tags;
    let slow = slowlog_read(lab).await?;
    baton.stop().await?;
    let row = KeyedRow {
        jobs_per_s,
        commands_per_job: during.calls() as f64 / n as f64,
        redis_us_per_job: during.cpu_s * 1e6 / n as f64,
        left,
    };
    Ok((row, slow))
}

async fn pool_step(lab: &mut Lab, args: &ScaleArgs) -> Result<(f64, f64, Slow)> {
    lab.flush().await?;
    let baton = Baton::start(&lab.url(), bench_config()).await?;
    let channel = baton.channel().await?;
    let claims = ClaimServiceClient::new(channel.clone());
    let mut admin = AdminServiceClient::new(channel);
    slowlog_start(lab).await?;
    let chunk = u64::from(baton::config::Config::default().limits.max_batch);
    let n = args.resources;
    let offers = (0..n.div_ceil(chunk)).map(|c| {
        let resources = (c * chunk..((c + 1) * chunk).min(n))
            .map(|i| pb::Resource { id: format!("r{i:07}"), attributes: Default::default() })
            .collect();
        let mut claims = claims.clone();
        async move { claims.offer(pb::OfferRequest { pool: "big".into(), resources, request_id: String::new() }).await }
    });
    futures::stream::iter(offers).buffer_unordered(4).try_for_each(|_| async { Ok(()) }).await?;
    let health_ms = health_ms(&admin, 10).await?;
    let started = Instant::now();
    admin.purge(pb::PurgeRequest { dry_run: false }).await?;
    let purge_ms = started.elapsed().as_secs_f64() * 1000.0;
    let slow = slowlog_read(lab).await?;
    baton.stop().await?;
    Ok((health_ms, purge_ms, slow))
}

async fn queues_step(lab: &mut Lab, args: &ScaleArgs) -> Result<(f64, f64, Slow)> {
    lab.flush().await?;
    let baton = Baton::start(&lab.url(), bench_config()).await?;
    let channel = baton.channel().await?;
    let client = agents(channel.clone());
    let admin = AdminServiceClient::new(channel);
    slowlog_start(lab).await?;
    let registers = (0..args.queues).map(|q| {
        let mut client = client.clone();
        let agents = vec![pb::Agent {
            name: "a".into(),
            interval: dur(3_600_000),
            timeout: dur(LEASE_TIMEOUT_MS),
            ..Default::default()
        }];
        let request = pb::RegisterRequest { queue: format!("q{q:05}"), agents, ..Default::default() };
        async move { client.register(request).await }
    });
    futures::stream::iter(registers).buffer_unordered(16).try_for_each(|_| async { Ok(()) }).await?;
    let health_ms = health_ms(&admin, 10).await?;
    // Idle: the sweepers and probes alone (after a first pass).
    tokio::time::sleep(Duration::from_secs(2)).await;
    let calls = |info: &str| -> u64 {
        info.lines()
            .filter(|l| l.starts_with("cmdstat_") && !l.starts_with("cmdstat_info:"))
            .filter_map(|l| l.split("calls=").nth(1)?.split(',').next()?.parse::<u64>().ok())
            .sum()
    };
    let before: String = redis::cmd("INFO").arg("commandstats").query_async(&mut lab.conn).await?;
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(args.idle_seconds)).await;
    let after: String = redis::cmd("INFO").arg("commandstats").query_async(&mut lab.conn).await?;
    let per_s = calls(&after).saturating_sub(calls(&before)) as f64 / started.elapsed().as_secs_f64();
    let slow = slowlog_read(lab).await?;
    baton.stop().await?;
    Ok((health_ms, per_s, slow))
}

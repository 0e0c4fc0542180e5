//! cycles: how close does Baton over gRPC come to Redis running the same acquire script?
//!
//! For each Redis connection mode, an in-process Baton on loopback; for every (mode, K
//! workers, N leases per Acquire):
//!
//! - full cycles: K workers loop Acquire(max N), then Complete(SUCCESS) for each lease, on a
//!   queue of agents with a 1 ms interval, so every completed agent is due again at once;
//! - acquire only: the same K workers call Acquire(max N) on a queue large enough never to
//!   run dry, and `redis-benchmark` with K connections runs the very same acquire script by
//!   FCALL on an equal queue, for the same number of leases. That pair is the like-for-like
//!   comparison: identical Redis work per call, the only difference being Baton and gRPC;
//! - session cycles: K workers each on one Session stream with credit N, completing every lease
//!   pushed at once (the completions and the credit back in one message per response), against
//!   *direct* cycles: K loops calling the same two scripts (acquireAgents for N, then
//!   completeAgents for the batch) straight from Rust through `baton::store` on one shared
//!   connection, no gRPC: the same scripts at the same batch size, without Baton's server.

use std::{
    collections::{hash_map::Entry, HashMap},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};

use baton::client::Conn;
use baton::{
    config::{Config, ConnectionMode},
    pb::{self, agent_service_client::AgentServiceClient},
    store::Keys,
};
use futures::{StreamExt, TryStreamExt};
use hdrhistogram::Histogram;
use tokio::time::Instant;

use crate::lab::{
    bench_config, dur, histogram, micros, ms_at, pct, Baton, BoxError, Cpu, CpuClock, Lab, Result, LEASE_TIMEOUT_MS,
};

/// Interval of the cycling agents: a SUCCESS makes the agent due again straight away.
const CYCLE_INTERVAL_MS: u64 = 1;
/// Unmeasured time at the start of each cycle phase: connections warm up, caches fill.
const WARMUP: Duration = Duration::from_secs(1);

pub struct CyclesArgs {
    pub workers: Vec<usize>,
    pub batch: Vec<u32>,
    pub seconds: u64,
    pub modes: Vec<ConnectionMode>,
    pub agents: u64,
    pub acquire_leases: u64,
    pub channels: Option<usize>,
}

fn mode_name(mode: ConnectionMode) -> &'static str {
    match mode {
        ConnectionMode::Pool => "pool",
        ConnectionMode::Shared => "shared",
    }
}

/// One full-cycle measurement.
pub struct Cycles {
    pub per_sec: f64,
    pub acquire: Histogram<u64>,
    complete: Histogram<u64>,
    /// Acquires that found nothing due: non-zero means the queue, not Baton, was the limit.
    empty: u64,
    cpu: Cpu,
}

/// One acquire-only measurement, from either side.
struct AcquireOnly {
    calls_per_sec: f64,
    leases_per_sec: f64,
    p50_ms: f64,
    p99_ms: f64,
    cpu: Cpu,
}

struct Row {
    mode: ConnectionMode,
    workers: usize,
    batch: u32,
    cycles: Cycles,
    /// Cycles on Session streams, per second, and the CPU meanwhile.
    session: (f64, Cpu),
    /// Cycles of the same scripts called directly (shared by every mode).
    direct: Arc<(f64, Cpu)>,
    grpc: AcquireOnly,
    redis: Arc<AcquireOnly>,
}

pub async fn run(lab: &mut Lab, args: &CyclesArgs) -> Result<()> {
    let limit = Duration::from_secs(args.seconds);
    let (acquire_sha, acquire_keys) = lab.load_script("acquireAgents").await?;
    let mut rows = Vec::new();
    let mut references: HashMap<(usize, u32), Arc<AcquireOnly>> = HashMap::new();
    let mut directs: HashMap<(usize, u32), Arc<(f64, Cpu)>> = HashMap::new();
    for &mode in &args.modes {
        let mut config = bench_config();
        config.redis.connection = mode;
        let baton = Baton::start(&lab.url(), config).await?;
        for &k in &args.workers {
            // `k` workers spread round-robin over the connections (default: one each).
            let channels = baton.channels(args.channels.unwrap_or(k)).await?;
            let clients: Vec<_> = (0..k).map(|i| crate::lab::agents(channels[i % channels.len()].clone())).collect();
            for &n in &args.batch {
                let label = format!("{} K={k} N={n}", mode_name(mode));
                let calls = args.acquire_leases / u64::from(n);
                // The reference does not involve Baton, so one per (K, N) serves every mode.
                let redis = match references.entry((k, n)) {
                    Entry::Occupied(e) => e.get().clone(),
                    Entry::Vacant(e) => {
                        eprintln!("[cycles {k}/{n}] redis-benchmark, acquire only");
                        fresh_queue(lab, &clients[0], "ref", calls * u64::from(n), LEASE_TIMEOUT_MS).await?;
                        let reference = reference(lab, &acquire_sha, acquire_keys, k, n, calls).await?;
                        e.insert(Arc::new(reference)).clone()
                    }
                };
                eprintln!("[cycles {label}] gRPC full cycles, {} s", args.seconds);
                fresh_queue(lab, &clients[0], "cycle", args.agents, CYCLE_INTERVAL_MS).await?;
                let cycles = cycle_phase(&clients, "cycle", n, limit, lab.pid).await?;
                eprintln!("[cycles {label}] gRPC acquire only");
                fresh_queue(lab, &clients[0], "acq", calls * u64::from(n), LEASE_TIMEOUT_MS).await?;
                let grpc = acquire_phase(&clients, "acq", n, calls, limit, lab.pid).await?;
                eprintln!("[cycles {label}] gRPC session cycles, {} s", args.seconds);
                fresh_queue(lab, &clients[0], "cycle", args.agents, CYCLE_INTERVAL_MS).await?;
                let session = session_phase(&clients, "cycle", n, limit, lab.pid).await?;
                let direct = match directs.entry((k, n)) {
                    Entry::Occupied(e) => e.get().clone(),
                    Entry::Vacant(e) => {
                        eprintln!("[cycles {k}/{n}] direct script cycles, {} s", args.seconds);
                        fresh_queue(lab, &clients[0], "cycle", args.agents, CYCLE_INTERVAL_MS).await?;
                        e.insert(Arc::new(direct_phase(lab, "cycle", k, n, limit).await?)).clone()
                    }
                };
                rows.push(Row { mode, workers: k, batch: n, cycles, session, direct, grpc, redis });
            }
        }
        baton.stop().await?;
    }
    print_tables(args, &rows);
    Ok(())
}

/// Empties Redis (keeping loaded scripts) and registers `count` agents in `queue`, so each
/// measurement starts from the same state and memory stays bounded.
async fn fresh_queue(
    lab: &mut Lab,
    client: &AgentServiceClient<Conn>,
    queue: &str,
    count: u64,
    interval_ms: u64,
) -> Result<()> {
    lab.flush().await?;
    register(client, queue, count, Some(interval_ms)).await
}

/// Registers agents `agent-0000000`… in `queue`, as many per Register as the server takes;
/// `interval_ms` None makes one-shot agents.
pub async fn register(
    client: &AgentServiceClient<Conn>,
    queue: &str,
    count: u64,
    interval_ms: Option<u64>,
) -> Result<()> {
    let chunk = u64::from(Config::default().limits.max_batch);
    let chunks = (0..count.div_ceil(chunk)).map(|c| {
        let agents = (c * chunk..((c + 1) * chunk).min(count))
            .map(|i| pb::Agent {
                name: format!("agent-{i:07}"),
                interval: interval_ms.and_then(dur),
                timeout: dur(LEASE_TIMEOUT_MS),
                ..Default::default()
            })
            .collect();
        let mut client = client.clone();
        let request =
            pb::RegisterRequest { request_id: String::new(), queue: queue.into(), agents, reset_schedule: false };
        async move { client.register(request).await }
    });
    // A few Registers in flight overlap encoding with Redis work; Redis runs them one by one.
    futures::stream::iter(chunks).buffer_unordered(4).try_for_each(|_| async { Ok(()) }).await?;
    Ok(())
}

/// redis-benchmark with K connections runs Baton's own acquire script by FCALL, `calls`
/// times, on the queue `ref` of exactly `calls * n` due agents.
async fn reference(lab: &mut Lab, sha: &str, script_keys: usize, k: usize, n: u32, calls: u64) -> Result<AcquireOnly> {
    // Keys and scan limit as Baton's defaults build them.
    let config = Config::default();
    let q = Keys::new(config.key_prefix).queue("ref");
    // The KEYS of Queues::acquire, in its order.
    let keys = q.acquire_keys();
    if keys.len() != script_keys {
        return Err(format!(
            "acquireAgents takes {script_keys} keys but the bench passes {}: update the key list in \
             bench/scenarios/cycles.rs to match Queues::acquire",
            keys.len()
        )
        .into());
    }
    // As Queues::acquire passes them: worker, max, scan limit, then the announcement channel
    // (none: nothing expires here), the queue, the finishes' retention and the group (none).
    let argv = [
        "bench-ref".to_string(),
        n.to_string(),
        config.limits.scan_limit.to_string(),
        String::new(),
        "ref".to_string(),
        config.results.retention_ms.to_string(),
        config.results.max_entries.to_string(),
        String::new(),
    ];
    let b = lab.redis_benchmark(k, calls, sha, &keys, &argv).await?;
    // redis-benchmark counts error replies as requests; the working set proves the script ran.
    let held: u64 = redis::cmd("ZCARD").arg(&q.working).query_async(&mut lab.conn).await?;
    if held != calls * u64::from(n) {
        return Err(
            format!("redis-benchmark's {calls} calls granted {held} leases, not {}", calls * u64::from(n)).into()
        );
    }
    Ok(AcquireOnly {
        calls_per_sec: b.rps,
        leases_per_sec: b.rps * f64::from(n),
        p50_ms: b.p50_ms,
        p99_ms: b.p99_ms,
        cpu: b.cpu,
    })
}

/// What one cycling worker saw.
struct CycleWorker {
    cycles: u64,
    empty: u64,
    acquire: Histogram<u64>,
    complete: Histogram<u64>,
}

/// K workers cycle for `WARMUP` + `measured`; calls started in the warm-up are not recorded,
/// and a cycle counts when its Complete ends inside the measured window.
pub async fn cycle_phase(
    clients: &[AgentServiceClient<Conn>],
    queue: &str,
    n: u32,
    measured: Duration,
    redis_pid: u32,
) -> Result<Cycles> {
    let from = Instant::now() + WARMUP;
    let until = from + measured;
    let cpu = tokio::spawn(async move {
        tokio::time::sleep_until(from).await;
        let before = CpuClock::read(redis_pid)?;
        tokio::time::sleep_until(until).await;
        Ok::<_, BoxError>(CpuClock::read(redis_pid)?.since(&before))
    });
    let workers: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(i, client)| {
            tokio::spawn(cycle_worker(client.clone(), queue.to_string(), format!("worker-{i}"), n, from, until))
        })
        .collect();
    let (mut cycles, mut empty, mut acquire, mut complete) = (0, 0, histogram(), histogram());
    for worker in futures::future::join_all(workers).await {
        let w = worker??;
        cycles += w.cycles;
        empty += w.empty;
        acquire.add(&w.acquire)?;
        complete.add(&w.complete)?;
    }
    Ok(Cycles { per_sec: cycles as f64 / measured.as_secs_f64(), acquire, complete, empty, cpu: cpu.await?? })
}

async fn cycle_worker(
    mut client: AgentServiceClient<Conn>,
    queue: String,
    worker: String,
    n: u32,
    from: Instant,
    until: Instant,
) -> Result<CycleWorker> {
    let mut w = CycleWorker { cycles: 0, empty: 0, acquire: histogram(), complete: histogram() };
    while Instant::now() < until {
        let started = Instant::now();
        let request = pb::AcquireRequest { queue: queue.clone(), worker_id: worker.clone(), max_leases: n, wait: None };
        let leases = client.acquire(request).await?.into_inner().leases;
        if started >= from {
            w.acquire.saturating_record(micros(started.elapsed()));
            w.empty += u64::from(leases.is_empty());
        }
        // One Complete at a time, so each worker keeps exactly one RPC in flight.
        for lease in leases {
            let started = Instant::now();
            let request = pb::CompleteRequest {
                request_id: String::new(),
                queue: lease.queue,
                name: lease.name,
                token: lease.token,
                outcome: pb::Outcome::Success as i32,
                message: String::new(),
                retry_after: None,
                ..Default::default()
            };
            client.complete(request).await?;
            let done = Instant::now();
            if started >= from {
                w.complete.saturating_record(micros(done - started));
            }
            w.cycles += u64::from(done >= from && done <= until);
        }
    }
    Ok(w)
}

/// Runs `work` in the measured window after the warm-up, with the machine's CPU meanwhile:
/// the CPU reading of [`cycle_phase`], shared by the session and direct phases.
async fn measure_cpu(redis_pid: u32, from: Instant, until: Instant) -> Result<Cpu> {
    tokio::time::sleep_until(from).await;
    let before = CpuClock::read(redis_pid)?;
    tokio::time::sleep_until(until).await;
    Ok(CpuClock::read(redis_pid)?.since(&before))
}

/// K workers, each on one Session stream with credit N, complete every lease as soon as it is
/// pushed: one message back per response, carrying its completions and as much credit. A cycle
/// counts when its completion is answered (not lost) inside the measured window.
async fn session_phase(
    clients: &[AgentServiceClient<Conn>],
    queue: &str,
    n: u32,
    measured: Duration,
    redis_pid: u32,
) -> Result<(f64, Cpu)> {
    let from = Instant::now() + WARMUP;
    let until = from + measured;
    let cpu = tokio::spawn(measure_cpu(redis_pid, from, until));
    let workers: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(i, client)| {
            let (mut client, queue) = (client.clone(), queue.to_string());
            tokio::spawn(async move {
                let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
                let open = pb::SessionOpen { queue, worker_id: format!("worker-{i}") };
                tx.send(pb::SessionRequest { open: Some(open), credit: n, ..Default::default() })?;
                let mut stream =
                    client.session(tokio_stream::wrappers::UnboundedReceiverStream::new(rx)).await?.into_inner();
                let mut cycles = 0u64;
                while let Some(r) = tokio::time::timeout_at(until, stream.message()).await.ok().transpose()? {
                    let Some(r) = r else { break };
                    let now = Instant::now();
                    if now >= from {
                        cycles += r.completed.iter().filter(|c| !c.lease_lost).count() as u64;
                    }
                    if !r.leases.is_empty() {
                        let completions: Vec<_> = r
                            .leases
                            .iter()
                            .map(|l| pb::SessionCompletion {
                                name: l.name.clone(),
                                token: l.token,
                                outcome: pb::Outcome::Success as i32,
                                ..Default::default()
                            })
                            .collect();
                        let credit = completions.len() as u32;
                        tx.send(pb::SessionRequest { credit, completions, ..Default::default() })?;
                    }
                }
                Ok::<_, BoxError>(cycles)
            })
        })
        .collect();
    let mut cycles = 0;
    for worker in futures::future::join_all(workers).await {
        cycles += worker??;
    }
    Ok((cycles as f64 / measured.as_secs_f64(), cpu.await??))
}

/// K loops call acquireAgents for N leases, then completeAgents for them, straight from Rust
/// through `baton::store` on one shared connection (Baton's default), with no gRPC.
async fn direct_phase(lab: &Lab, queue: &str, k: usize, n: u32, measured: Duration) -> Result<(f64, Cpu)> {
    use baton::queues::store::{Completion, Outcome};
    use baton::store::{Core, Policy, Redis};
    let config = Config::default();
    let redis = Redis::connect(&lab.url(), &config.redis).await?;
    let policy = Policy::new(&config.agent, &config.limits, &config.dead_letter, &config.idempotency);
    let store = baton::server::Stores::new(Core::open(redis, "", policy, config.circuit_breaker.clone()).await?).queues;
    let from = Instant::now() + WARMUP;
    let until = from + measured;
    let cpu = tokio::spawn(measure_cpu(lab.pid, from, until));
    let loops: Vec<_> = (0..k)
        .map(|i| {
            let (store, queue, worker) = (store.clone(), queue.to_string(), format!("direct-{i}"));
            tokio::spawn(async move {
                let mut cycles = 0u64;
                while Instant::now() < until {
                    let leases = store.acquire(&queue, &worker, n).await?.leases;
                    let batch: Vec<_> = leases
                        .into_iter()
                        .map(|l| Completion {
                            queue: queue.clone(),
                            name: l.name,
                            token: l.token,
                            outcome: Outcome::Success,
                            message: String::new(),
                            retry_after_ms: 0,
                            request_id: String::new(),
                            clipped: false,
                            result: Vec::new(),
                            wait: None,
                        })
                        .collect();
                    if batch.is_empty() {
                        continue;
                    }
                    let done = store.complete_batch(&batch).await?;
                    let now = Instant::now();
                    if now >= from && now <= until {
                        cycles += done.iter().filter(|d| d.is_some()).count() as u64;
                    }
                }
                Ok::<_, BoxError>(cycles)
            })
        })
        .collect();
    let mut cycles = 0;
    for l in futures::future::join_all(loops).await {
        cycles += l??;
    }
    Ok((cycles as f64 / measured.as_secs_f64(), cpu.await??))
}

/// K workers share `calls` Acquires (stopping early at `limit`) on a queue of exactly
/// `calls * n` due agents, so every call must grant N leases.
async fn acquire_phase(
    clients: &[AgentServiceClient<Conn>],
    queue: &str,
    n: u32,
    calls: u64,
    limit: Duration,
    redis_pid: u32,
) -> Result<AcquireOnly> {
    let left = Arc::new(AtomicU64::new(calls));
    let before = CpuClock::read(redis_pid)?;
    let started = Instant::now();
    let until = started + limit;
    let workers: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(i, client)| {
            let (mut client, left) = (client.clone(), left.clone());
            let request =
                pb::AcquireRequest { queue: queue.into(), worker_id: format!("worker-{i}"), max_leases: n, wait: None };
            tokio::spawn(async move {
                let (mut calls, mut leases, mut latency) = (0u64, 0u64, histogram());
                while Instant::now() < until
                    && left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| v.checked_sub(1)).is_ok()
                {
                    let started = Instant::now();
                    leases += client.acquire(request.clone()).await?.into_inner().leases.len() as u64;
                    latency.saturating_record(micros(started.elapsed()));
                    calls += 1;
                }
                Ok::<_, BoxError>((calls, leases, latency))
            })
        })
        .collect();
    let (mut calls, mut leases, mut latency) = (0, 0, histogram());
    for worker in futures::future::join_all(workers).await {
        let (c, l, h) = worker??;
        calls += c;
        leases += l;
        latency.add(&h)?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = CpuClock::read(redis_pid)?.since(&before);
    if leases != calls * u64::from(n) {
        return Err(format!(
            "acquire-only queue ran dry: {calls} calls granted {leases} leases, not {}",
            calls * u64::from(n)
        )
        .into());
    }
    Ok(AcquireOnly {
        calls_per_sec: calls as f64 / elapsed,
        leases_per_sec: leases as f64 / elapsed,
        p50_ms: ms_at(&latency, 0.5),
        p99_ms: ms_at(&latency, 0.99),
        cpu,
    })
}

fn print_tables(args: &CyclesArgs, rows: &[Row]) {
    let lat = |p50: f64, p99: f64| format!("{p50:.2} / {p99:.2}");
    let key = |r: &Row| format!("{:<7} {:>4} {:>4}", mode_name(r.mode), r.workers, r.batch);

    println!();
    println!(
        "Full cycles: Acquire(max_leases=N), then Complete(SUCCESS) for each lease; {} agents due every {CYCLE_INTERVAL_MS} ms; \
         {} s after {} s warm-up",
        args.agents,
        args.seconds,
        WARMUP.as_secs()
    );
    println!(
        "{:<7} {:>4} {:>4} {:>10} {:>8} {:>18} {:>18} {:>6}",
        "mode", "K", "N", "cycles/s", "÷Redis", "Acquire p50/p99", "Complete p50/p99", "empty"
    );
    for r in rows {
        let c = &r.cycles;
        println!(
            "{} {:>10.0} {:>8} {:>18} {:>18} {:>6}",
            key(r),
            c.per_sec,
            pct(c.per_sec / r.redis.leases_per_sec),
            lat(ms_at(&c.acquire, 0.5), ms_at(&c.acquire, 0.99)),
            lat(ms_at(&c.complete, 0.5), ms_at(&c.complete, 0.99)),
            c.empty
        );
    }

    println!();
    println!(
        "Acquire only: the acquireAgents script, {} leases from a queue of as many due agents, K calls in flight: \
         gRPC through Baton vs redis-benchmark FCALL",
        args.acquire_leases
    );
    println!(
        "{:<7} {:>4} {:>4} {:>11} {:>12} {:>12} {:>13} {:>10} {:>15} {:>15}",
        "mode",
        "K",
        "N",
        "gRPC call/s",
        "gRPC lease/s",
        "Redis call/s",
        "Redis lease/s",
        "gRPC/Redis",
        "gRPC p50/p99",
        "Redis p50/p99"
    );
    for r in rows {
        let (g, x) = (&r.grpc, &r.redis);
        println!(
            "{} {:>11.0} {:>12.0} {:>12.0} {:>13.0} {:>10} {:>15} {:>15}",
            key(r),
            g.calls_per_sec,
            g.leases_per_sec,
            x.calls_per_sec,
            x.leases_per_sec,
            pct(g.leases_per_sec / x.leases_per_sec),
            lat(g.p50_ms, g.p99_ms),
            lat(x.p50_ms, x.p99_ms)
        );
    }

    println!();
    println!(
        "Session cycles: K workers on Session streams with credit N, completing each lease at once; direct: K loops \
         calling acquireAgents(N) then completeAgents(batch) from Rust (baton::store, one shared connection, no gRPC)"
    );
    println!(
        "{:<7} {:>4} {:>4} {:>12} {:>12} {:>12} {:>20} {:>20}",
        "mode", "K", "N", "session/s", "direct/s", "÷direct", "CPU session", "CPU direct"
    );
    for r in rows {
        println!(
            "{} {:>12.0} {:>12.0} {:>12} {:>20} {:>20}",
            key(r),
            r.session.0,
            r.direct.0,
            pct(r.session.0 / r.direct.0),
            r.session.1.to_string(),
            r.direct.1.to_string()
        );
    }

    println!();
    println!("CPU during each measurement, redis-server / client side / rest of the machine, as shares of one core");
    println!(
        "{:<7} {:>4} {:>4} {:>20} {:>20} {:>20}",
        "mode", "K", "N", "full cycles", "gRPC acquire", "redis-benchmark"
    );
    for r in rows {
        println!(
            "{} {:>20} {:>20} {:>20}",
            key(r),
            r.cycles.cpu.to_string(),
            r.grpc.cpu.to_string(),
            r.redis.cpu.to_string()
        );
    }

    println!();
    println!("Latencies in ms, per RPC (gRPC) or per script call (Redis), seen by the client.");
    println!(
        "÷Redis: full cycles/s over redis-benchmark's acquire-only leases/s at the same K and N. A cycle also runs the"
    );
    println!("  complete script, so even a free gRPC layer would stay below 100%.");
    println!("empty: Acquires that found nothing due (should be 0; otherwise the queue, not Baton, was the limit).");
    println!("CPU: client side = this process (Baton + gRPC workers) or redis-benchmark; 100% = one core busy.");
}

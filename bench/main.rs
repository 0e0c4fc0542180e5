//! baton-bench: how close does Baton over gRPC come to Redis running the same Lua script?
//!
//! One run starts a private redis-server and, for each Redis connection mode, an in-process
//! Baton on loopback, then measures for every (mode, K workers, N leases per Acquire):
//!
//! - full cycles: K workers loop Acquire(max N), then Complete(SUCCESS) for each lease, on a
//!   queue of agents with a 1 ms interval, so every completed agent is due again at once;
//! - acquire only: the same K workers call Acquire(max N) on a queue large enough never to
//!   run dry, and `redis-benchmark` with K connections runs the very same acquire script by
//!   EVALSHA on an equal queue, for the same number of leases. That pair is the like-for-like
//!   comparison: identical Redis work per call, the only difference being Baton and gRPC.
//!
//! Latencies are client-side, per RPC. CPU shares are read from /proc around each measurement,
//! to show which process was the bottleneck. See bench/README.md for how to read the output.

use std::{
    collections::{hash_map::Entry, HashMap},
    path::Path,
    process::ExitCode,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};

use baton::{
    config::{Config, ConnectionMode},
    embedded::RedisProcess,
    pb::{self, agent_service_client::AgentServiceClient},
    store::{scripts::SCRIPTS, Keys},
};
use clap::{Parser, ValueEnum};
use futures::{StreamExt, TryStreamExt};
use hdrhistogram::Histogram;
use tokio::{net::TcpListener, task::JoinHandle, time::Instant};
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Result<T> = std::result::Result<T, BoxError>;

/// Interval of the cycling agents: a SUCCESS makes the agent due again straight away.
const CYCLE_INTERVAL_MS: u64 = 1;
/// Lease length, far beyond any run, so no lease expires while it is held.
const LEASE_TIMEOUT_MS: u64 = 600_000;
/// Unmeasured time at the start of each cycle phase: connections warm up, caches fill.
const WARMUP: Duration = Duration::from_secs(1);

#[derive(Parser)]
#[command(about = "Benchmark Baton's Acquire/Complete over gRPC against redis-benchmark running the same script")]
struct Args {
    /// Concurrent workers (comma-separated list to compare several); each keeps one RPC in
    /// flight, as redis-benchmark keeps one call in flight per connection.
    #[arg(long, value_delimiter = ',', default_value = "32")]
    workers: Vec<usize>,
    /// Leases per Acquire (max_leases), comma-separated list.
    #[arg(long, value_delimiter = ',', default_value = "1,10")]
    batch: Vec<u32>,
    /// Measured seconds of each full-cycle phase (after a 1 s warm-up).
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Baton's Redis connection mode (`redis.connection`).
    #[arg(long, value_enum, default_value_t = Modes::Both)]
    connection: Modes,
    /// Agents in the cycling queue.
    #[arg(long, default_value_t = 10_000)]
    agents: u64,
    /// Leases granted in each acquire-only measurement, gRPC and redis-benchmark alike; the
    /// queue holds exactly that many agents. The gRPC side also stops after `--seconds`.
    #[arg(long, default_value_t = 50_000)]
    acquire_leases: u64,
    /// gRPC connections shared round-robin by the workers; default one per worker, as in a
    /// fleet where each worker process has its own.
    #[arg(long)]
    channels: Option<usize>,
}

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

fn mode_name(mode: ConnectionMode) -> &'static str {
    match mode {
        ConnectionMode::Pool => "pool",
        ConnectionMode::Shared => "shared",
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if args.workers.contains(&0) || args.batch.contains(&0) || args.seconds == 0 || args.channels == Some(0) {
        eprintln!("--workers, --batch, --seconds and --channels must be at least 1");
        return ExitCode::FAILURE;
    }
    let max_batch = Config::default().limits.max_batch;
    if let Some(&n) = args.batch.iter().find(|&&n| n > max_batch) {
        eprintln!("--batch {n} is above the server's limit of {max_batch} leases per Acquire");
        return ExitCode::FAILURE;
    }
    if let Some(&n) = args.batch.iter().find(|&&n| u64::from(n) > args.acquire_leases) {
        eprintln!("--acquire-leases must be at least --batch ({n})");
        return ExitCode::FAILURE;
    }
    // On Ctrl-C the run future is dropped, which kills redis-server (kill_on_drop) rather
    // than leaving it orphaned.
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

/// One full-cycle measurement.
struct Cycles {
    per_sec: f64,
    acquire: Histogram<u64>,
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

/// CPU used during a measurement, as a share of one core (100 % = one core busy).
#[derive(Clone, Copy)]
struct Cpu {
    redis: f64,
    /// The client side: this process (Baton and the gRPC workers) or redis-benchmark.
    client: f64,
    /// Everything else on the machine: other processes and steal. High values mean the
    /// figures were taken on a busy machine.
    other: f64,
}

struct Row {
    mode: ConnectionMode,
    workers: usize,
    batch: u32,
    cycles: Cycles,
    grpc: AcquireOnly,
    redis: Arc<AcquireOnly>,
}

async fn run(args: Args) -> Result<()> {
    let dir = tempfile::Builder::new().prefix("baton-bench").tempdir_in("/tmp")?;
    let mut lab = Lab::start(dir.path()).await?;
    print_machine(&mut lab.conn).await?;
    let limit = Duration::from_secs(args.seconds);
    let mut rows = Vec::new();
    let mut references: HashMap<(usize, u32), Arc<AcquireOnly>> = HashMap::new();
    for mode in args.connection.list() {
        let baton = Baton::start(&lab.redis.url(), mode).await?;
        for &k in &args.workers {
            let clients = baton.clients(k, args.channels.unwrap_or(k)).await?;
            for &n in &args.batch {
                let label = format!("{} K={k} N={n}", mode_name(mode));
                let calls = args.acquire_leases / u64::from(n);
                // The reference does not involve Baton, so one per (K, N) serves every mode.
                let redis = match references.entry((k, n)) {
                    Entry::Occupied(e) => e.get().clone(),
                    Entry::Vacant(e) => {
                        eprintln!("[K={k} N={n}] redis-benchmark, acquire only");
                        lab.fresh_queue(&clients[0], "ref", calls * u64::from(n), LEASE_TIMEOUT_MS).await?;
                        e.insert(Arc::new(lab.reference(k, n, calls).await?)).clone()
                    }
                };
                eprintln!("[{label}] gRPC full cycles, {} s", args.seconds);
                lab.fresh_queue(&clients[0], "cycle", args.agents, CYCLE_INTERVAL_MS).await?;
                let cycles = cycle_phase(&clients, "cycle", n, limit, lab.pid).await?;
                eprintln!("[{label}] gRPC acquire only");
                lab.fresh_queue(&clients[0], "acq", calls * u64::from(n), LEASE_TIMEOUT_MS).await?;
                let grpc = acquire_phase(&clients, "acq", n, calls, limit, lab.pid).await?;
                rows.push(Row { mode, workers: k, batch: n, cycles, grpc, redis });
            }
        }
        baton.stop().await?;
    }
    lab.redis.stop().await;
    print_tables(&args, &rows);
    Ok(())
}

/// The private redis-server every measurement runs against, with Baton's acquire script
/// loaded for redis-benchmark.
struct Lab {
    redis: RedisProcess,
    pid: u32,
    conn: redis::aio::MultiplexedConnection,
    acquire_sha: String,
    /// How many KEYS the loaded script declares, to catch a key list here gone stale.
    acquire_keys: usize,
}

impl Lab {
    async fn start(dir: &Path) -> Result<Self> {
        let redis = RedisProcess::start("redis-server", dir, baton::embedded::Persistence::None).await?;
        let pid = redis.pid().ok_or("redis-server exited at start")?;
        let mut conn = redis::Client::open(redis.url())?.get_multiplexed_async_connection().await?;
        // Exactly the source Baton loads (includes inlined), so the sha is the one it calls.
        let &(_, acquire_keys, source) = SCRIPTS
            .iter()
            .find(|(name, _, _)| *name == "acquireAgents")
            .ok_or("no acquireAgents script in the table")?;
        let acquire_sha = redis::cmd("SCRIPT").arg("LOAD").arg(source).query_async(&mut conn).await?;
        Ok(Self { redis, pid, conn, acquire_sha, acquire_keys })
    }

    /// Empties Redis (keeping loaded scripts) and registers `count` agents in `queue`, so each
    /// measurement starts from the same state and memory stays bounded.
    async fn fresh_queue(
        &mut self,
        client: &AgentServiceClient<Channel>,
        queue: &str,
        count: u64,
        interval_ms: u64,
    ) -> Result<()> {
        redis::cmd("FLUSHALL").query_async::<()>(&mut self.conn).await?;
        let ms = |ms: u64| {
            Some(prost_types::Duration { seconds: (ms / 1000) as i64, nanos: ((ms % 1000) * 1_000_000) as i32 })
        };
        // As many agents per Register as the server takes.
        let chunk = u64::from(Config::default().limits.max_batch);
        let chunks = (0..count.div_ceil(chunk)).map(|c| {
            let agents = (c * chunk..((c + 1) * chunk).min(count))
                .map(|i| pb::Agent {
                    name: format!("agent-{i:07}"),
                    interval: ms(interval_ms),
                    timeout: ms(LEASE_TIMEOUT_MS),
                    ..Default::default()
                })
                .collect();
            let mut client = client.clone();
            let request = pb::RegisterRequest { queue: queue.into(), agents, reset_schedule: false };
            async move { client.register(request).await }
        });
        // A few Registers in flight overlap encoding with Redis work; Redis runs them one by one.
        futures::stream::iter(chunks).buffer_unordered(4).try_for_each(|_| async { Ok(()) }).await?;
        Ok(())
    }

    /// redis-benchmark with K connections runs Baton's own acquire script by EVALSHA, `calls`
    /// times, on the queue `ref` of exactly `calls * n` due agents.
    async fn reference(&mut self, k: usize, n: u32, calls: u64) -> Result<AcquireOnly> {
        // Keys and scan limit as Baton's defaults build them.
        let config = Config::default();
        let q = Keys::new(config.key_prefix).queue("ref");
        // The KEYS of Store::acquire, in its order.
        let keys = [&q.waiting, &q.working, &q.defs, &q.payloads, &q.leases, &q.streaks, &q.seq, &q.workers];
        if keys.len() != self.acquire_keys {
            return Err(format!(
                "acquireAgents takes {} keys but the bench passes {}: update the key list in bench/main.rs \
                 to match Store::acquire",
                self.acquire_keys,
                keys.len()
            )
            .into());
        }
        let before = CpuClock::read(self.pid)?;
        let benchmark = tokio::process::Command::new("redis-benchmark")
            .arg("-s")
            .arg(self.redis.socket())
            .args(["-c", &k.to_string(), "-n", &calls.to_string(), "--csv", "EVALSHA", &self.acquire_sha])
            .arg(keys.len().to_string())
            .args(keys)
            .args(["bench-ref", &n.to_string(), &config.limits.scan_limit.to_string()])
            .kill_on_drop(true)
            .output();
        let output = tokio::time::timeout(Duration::from_secs(300), benchmark)
            .await
            .map_err(|_| "redis-benchmark did not finish within 300 s")?
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => {
                    "redis-benchmark not found on PATH (Debian/Ubuntu: apt-get install -y redis-server)".into()
                }
                _ => format!("cannot run redis-benchmark: {e}"),
            })?;
        let cpu = CpuClock::read(self.pid)?.since(&before);
        if !output.status.success() {
            return Err(format!(
                "redis-benchmark failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            )
            .into());
        }
        // --csv prints a header and one row: "test","rps","avg","min","p50","p95","p99","max"
        // (latencies in ms). The test column is the command line, so fields count from the end.
        let stdout = String::from_utf8_lossy(&output.stdout);
        let row = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
        let unparsable = || format!("cannot parse redis-benchmark output: {stdout}");
        let fields: Vec<f64> = row
            .rsplit(',')
            .take(7)
            .map(|f| f.trim().trim_matches('"').parse())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| unparsable())?;
        let [_max, p99_ms, _p95, p50_ms, _min, _avg, rps] = fields[..] else {
            return Err(unparsable().into());
        };
        // redis-benchmark counts error replies as requests; the working set proves the script ran.
        let held: u64 = redis::cmd("ZCARD").arg(&q.working).query_async(&mut self.conn).await?;
        if held != calls * u64::from(n) {
            return Err(
                format!("redis-benchmark's {calls} calls granted {held} leases, not {}", calls * u64::from(n)).into()
            );
        }
        Ok(AcquireOnly { calls_per_sec: rps, leases_per_sec: rps * f64::from(n), p50_ms, p99_ms, cpu })
    }
}

/// An in-process Baton serving on an ephemeral loopback port.
struct Baton {
    addr: std::net::SocketAddr,
    shutdown: CancellationToken,
    handle: JoinHandle<baton::error::Result<()>>,
}

impl Baton {
    async fn start(redis_url: &str, mode: ConnectionMode) -> Result<Self> {
        // No metrics exporter (its port could clash) and no jitter, as in the tests.
        let mut config = Config { metrics_listen: String::new(), ..Config::default() };
        config.agent.jitter_ratio = 0.0;
        config.redis.connection = mode;
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shutdown = CancellationToken::new();
        let (url, stop) = (redis_url.to_string(), shutdown.clone());
        let handle =
            tokio::spawn(
                async move { baton::server::run(Arc::new(config), &url, listener, stop.cancelled_owned()).await },
            );
        Ok(Self { addr, shutdown, handle })
    }

    /// `workers` clients spread round-robin over `connections` HTTP/2 connections.
    /// Connecting retries briefly, as the server task may not have reached its accept loop.
    async fn clients(&self, workers: usize, connections: usize) -> Result<Vec<AgentServiceClient<Channel>>> {
        let endpoint = Channel::from_shared(format!("http://{}", self.addr))?;
        let mut channels = Vec::with_capacity(connections);
        for _ in 0..connections {
            let mut attempts = 0;
            let channel = loop {
                match endpoint.connect().await {
                    Ok(c) => break c,
                    Err(_) if attempts < 50 => attempts += 1,
                    Err(e) => return Err(e.into()),
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            };
            channels.push(channel);
        }
        Ok((0..workers).map(|i| AgentServiceClient::new(channels[i % connections].clone())).collect())
    }

    async fn stop(self) -> Result<()> {
        self.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(20), self.handle)
            .await
            .map_err(|_| "Baton did not stop within 20 s")???;
        Ok(())
    }
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid histogram bounds")
}

fn micros(d: Duration) -> u64 {
    d.as_micros().try_into().unwrap_or(u64::MAX)
}

fn ms_at(h: &Histogram<u64>, quantile: f64) -> f64 {
    h.value_at_quantile(quantile) as f64 / 1000.0
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
async fn cycle_phase(
    clients: &[AgentServiceClient<Channel>],
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
    mut client: AgentServiceClient<Channel>,
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
                queue: lease.queue,
                name: lease.name,
                token: lease.token,
                outcome: pb::Outcome::Success as i32,
                message: String::new(),
                retry_after: None,
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

/// K workers share `calls` Acquires (stopping early at `limit`) on a queue of exactly
/// `calls * n` due agents, so every call must grant N leases.
async fn acquire_phase(
    clients: &[AgentServiceClient<Channel>],
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

/// CPU seconds consumed so far by redis-server, by the client side and by the whole
/// machine, and when they were read.
struct CpuClock {
    at: Instant,
    redis: f64,
    /// This process (Baton and the gRPC workers) plus its reaped children (redis-benchmark):
    /// whichever drove the load, the other is idle.
    client: f64,
    machine: f64,
}

impl CpuClock {
    fn read(redis_pid: u32) -> Result<Self> {
        let mut children = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage writes one rusage into the buffer it is given, which is then
        // initialised.
        let children = match unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, children.as_mut_ptr()) } {
            0 => unsafe { children.assume_init() },
            _ => return Err(std::io::Error::last_os_error().into()),
        };
        let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        Ok(Self {
            at: Instant::now(),
            redis: process_cpu_seconds(&format!("/proc/{redis_pid}/stat"))?,
            client: process_cpu_seconds("/proc/self/stat")? + seconds(children.ru_utime) + seconds(children.ru_stime),
            machine: machine_busy_seconds()?,
        })
    }

    fn since(&self, before: &Self) -> Cpu {
        let wall = (self.at - before.at).as_secs_f64();
        let (redis, client) = (self.redis - before.redis, self.client - before.client);
        let other = (self.machine - before.machine - redis - client).max(0.0);
        Cpu { redis: redis / wall, client: client / wall, other: other / wall }
    }
}

fn clock_ticks_per_sec() -> f64 {
    // SAFETY: sysconf has no memory effects.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) as f64 }
}

/// User plus system CPU seconds of a process, from its /proc stat line.
fn process_cpu_seconds(stat: &str) -> Result<f64> {
    let line = std::fs::read_to_string(stat)?;
    // The command name may hold spaces; fields after it start at field 3 (state), so utime
    // (field 14) and stime (15) are the 12th and 13th after the closing parenthesis.
    let after = line.rsplit_once(')').map(|(_, rest)| rest).ok_or("malformed /proc stat")?;
    let mut fields = after.split_whitespace().skip(11);
    let mut ticks = || fields.next().and_then(|f| f.parse::<u64>().ok()).ok_or("malformed /proc stat");
    Ok((ticks()? + ticks()?) as f64 / clock_ticks_per_sec())
}

/// CPU seconds the whole machine was not idle, steal included (time the hypervisor gave to
/// others is time this benchmark did not get).
fn machine_busy_seconds() -> Result<f64> {
    let stat = std::fs::read_to_string("/proc/stat")?;
    let line = stat.lines().next().and_then(|l| l.strip_prefix("cpu ")).ok_or("malformed /proc/stat")?;
    let ticks: Vec<u64> = line.split_whitespace().map(str::parse).collect::<std::result::Result<_, _>>()?;
    // user nice system idle iowait irq softirq steal (guest time is already in user and nice).
    let [user, nice, system, _idle, _iowait, irq, softirq, steal, ..] = ticks[..] else {
        return Err("malformed /proc/stat".into());
    };
    Ok((user + nice + system + irq + softirq + steal) as f64 / clock_ticks_per_sec())
}

async fn print_machine(conn: &mut redis::aio::MultiplexedConnection) -> Result<()> {
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name").map(|v| v.trim_start_matches([' ', '\t', ':']).to_string()))
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    let info: String = redis::cmd("INFO").arg("server").query_async(conn).await?;
    let version = info.lines().find_map(|l| l.strip_prefix("redis_version:")).unwrap_or("?").trim().to_string();
    let build = if cfg!(debug_assertions) { "DEBUG build: figures are not representative" } else { "release build" };
    println!(
        "Machine: {cpus} CPUs ({model}), Linux {}, redis-server {version}, load average {} at start",
        kernel.trim(),
        load.join(" ")
    );
    println!(
        "Baton {} ({build}); Baton, the gRPC workers, Redis and redis-benchmark share these CPUs",
        env!("CARGO_PKG_VERSION")
    );
    Ok(())
}

fn print_tables(args: &Args, rows: &[Row]) {
    let pct = |share: f64| format!("{:.0}%", share * 100.0);
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
         gRPC through Baton vs redis-benchmark EVALSHA",
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
    println!("CPU during each measurement, redis-server / client side / rest of the machine, as shares of one core");
    println!(
        "{:<7} {:>4} {:>4} {:>20} {:>20} {:>20}",
        "mode", "K", "N", "full cycles", "gRPC acquire", "redis-benchmark"
    );
    let cpu = |c: &Cpu| format!("{} / {} / {}", pct(c.redis), pct(c.client), pct(c.other));
    for r in rows {
        println!("{} {:>20} {:>20} {:>20}", key(r), cpu(&r.cycles.cpu), cpu(&r.grpc.cpu), cpu(&r.redis.cpu));
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

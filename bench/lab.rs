//! What every scenario shares: the private redis-server, in-process Baton servers, gRPC
//! channels, the Redis clock, CPU accounting, histograms and the machine line.

use std::{
    path::Path,
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use baton::config::Config;

use baton::runtime::embedded::RedisProcess;

use baton::store::scripts::{script_called, LIBRARY, SCRIPTS};
use hdrhistogram::Histogram;
use tokio::{net::TcpListener, task::JoinHandle, time::Instant};
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, BoxError>;

/// Lease length of agents the benchmark does not mean to lose: far beyond any run.
pub const LEASE_TIMEOUT_MS: u64 = 600_000;

/// The private redis-server every measurement runs against.
pub struct Lab {
    pub redis: RedisProcess,
    pub pid: u32,
    pub conn: redis::aio::MultiplexedConnection,
    /// Redis TIME minus this machine's clock, in µs (see `RedisClock`).
    pub clock: RedisClock,
}

impl Lab {
    pub async fn start(dir: &Path) -> Result<Self> {
        let redis = RedisProcess::start("redis-server", dir, baton::runtime::embedded::Persistence::None).await?;
        let pid = redis.pid().ok_or("redis-server exited at start")?;
        // FLUSHALL of a million-item step takes seconds: longer than redis-rs's default
        // response timeout.
        let config = redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(120)));
        let mut conn = redis::Client::open(redis.url())?.get_multiplexed_async_connection_with_config(&config).await?;
        let clock = RedisClock::calibrate(&mut conn).await?;
        Ok(Self { redis, pid, conn, clock })
    }

    pub fn url(&self) -> String {
        self.redis.url()
    }

    /// Empties Redis; loaded scripts stay.
    pub async fn flush(&mut self) -> Result<()> {
        redis::cmd("FLUSHALL").query_async::<()>(&mut self.conn).await?;
        Ok(())
    }

    /// Loads Baton's function library, exactly as Baton loads it, and returns the name of one
    /// script's function and the number of KEYS its header declares.
    pub async fn load_script(&mut self, name: &str) -> Result<(String, usize)> {
        let &(_, keys, _, _) =
            SCRIPTS.iter().find(|s| s.0 == name).ok_or_else(|| format!("no {name} script in the table"))?;
        redis::cmd("FUNCTION").arg("LOAD").arg("REPLACE").arg(LIBRARY.2).query_async::<String>(&mut self.conn).await?;
        Ok((format!("{name}{}", LIBRARY.1), keys))
    }

    /// `calls` sequential PINGs from this process over the same unix socket Baton uses: the
    /// floor under any figure that needs a Redis round trip. Histogram in µs.
    pub async fn ping_rtt(&mut self, calls: usize) -> Result<Histogram<u64>> {
        let mut h = histogram();
        for _ in 0..calls {
            let started = Instant::now();
            redis::cmd("PING").query_async::<String>(&mut self.conn).await?;
            h.saturating_record(micros(started.elapsed()));
        }
        Ok(h)
    }

    /// `calls` FCALL of one of Baton's functions (`load_script`) by redis-benchmark with `k`
    /// connections; returns what it reported and the CPU used meanwhile.
    pub async fn redis_benchmark(
        &mut self,
        k: usize,
        calls: u64,
        function: &str,
        keys: &[&str],
        argv: &[String],
    ) -> Result<Bench> {
        let mut command = vec!["FCALL".to_string(), function.to_string(), keys.len().to_string()];
        command.extend(keys.iter().map(|k| k.to_string()));
        command.extend(argv.iter().cloned());
        self.redis_benchmark_command(k, calls, &command).await
    }

    /// `calls` of any one command by redis-benchmark with `k` connections; returns what it
    /// reported and the CPU used meanwhile.
    pub async fn redis_benchmark_command(&mut self, k: usize, calls: u64, command: &[String]) -> Result<Bench> {
        let before = CpuClock::read(self.pid)?;
        let benchmark = tokio::process::Command::new("redis-benchmark")
            .arg("-s")
            .arg(self.redis.socket())
            .args(["-c", &k.to_string(), "-n", &calls.to_string(), "--csv"])
            .args(command)
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
        Ok(Bench { rps, p50_ms, p99_ms, cpu })
    }

    /// Starts logging every command's Redis time (SLOWLOG at threshold 0), when the environment
    /// asks for a profile (`BATON_BENCH_PROFILE=1`); false otherwise. The log costs Redis a
    /// little per command, so profiled figures are not the run's headline.
    pub async fn profile_start(&mut self) -> Result<bool> {
        if std::env::var("BATON_BENCH_PROFILE").ok().as_deref() != Some("1") {
            return Ok(false);
        }
        for (k, v) in [("slowlog-max-len", "1000000"), ("slowlog-log-slower-than", "0")] {
            redis::cmd("CONFIG").arg("SET").arg(k).arg(v).query_async::<()>(&mut self.conn).await?;
        }
        redis::cmd("SLOWLOG").arg("RESET").query_async::<()>(&mut self.conn).await?;
        Ok(true)
    }

    /// Prints Redis time by script (and by other command) since `profile_start`: calls, total,
    /// µs per call, and the mean number of arguments, then stops logging.
    pub async fn profile_print(&mut self) -> Result<()> {
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("slowlog-log-slower-than")
            .arg("-1")
            .query_async::<()>(&mut self.conn)
            .await?;
        let log: Vec<(i64, i64, i64, Vec<Vec<u8>>)> = redis::cmd("SLOWLOG")
            .arg("GET")
            .arg("-1")
            .query_async::<Vec<redis::Value>>(&mut self.conn)
            .await?
            .into_iter()
            .filter_map(|entry| {
                let (id, at, micros, args, _, _) =
                    redis::from_redis_value::<(i64, i64, i64, Vec<Vec<u8>>, Vec<u8>, Vec<u8>)>(entry).ok()?;
                Some((id, at, micros, args))
            })
            .collect();
        // name -> (calls, µs, arguments)
        let mut by: std::collections::BTreeMap<String, (u64, i64, u64)> = Default::default();
        for (_, _, micros, args) in log {
            let text: Vec<String> = args.iter().take(2).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
            let name = script_called(&text)
                .map_or_else(|| text.first().cloned().unwrap_or_default().to_lowercase(), str::to_string);
            let e = by.entry(name).or_default();
            e.0 += 1;
            e.1 += micros;
            // SLOWLOG keeps at most 32 arguments, the last standing for the rest ("... (N more arguments)").
            let more = args.last().and_then(|a| {
                let t = String::from_utf8_lossy(a);
                t.strip_prefix("... (")?.split(' ').next()?.parse::<u64>().ok()
            });
            e.2 += args.len() as u64 + more.map_or(0, |m| m - 1);
        }
        let total: i64 = by.values().map(|e| e.1).sum();
        println!("Redis time by script (SLOWLOG, threshold 0): {:.1} ms in all", total as f64 / 1000.0);
        println!("{:<22} {:>8} {:>10} {:>10} {:>10}", "", "calls", "ms", "µs/call", "args/call");
        let mut rows: Vec<_> = by.into_iter().collect();
        rows.sort_by_key(|(_, e)| -e.1);
        for (name, (calls, micros, args)) in rows.into_iter().take(12) {
            println!(
                "{name:<22} {calls:>8} {:>10.1} {:>10.1} {:>10.1}",
                micros as f64 / 1000.0,
                micros as f64 / calls as f64,
                args as f64 / calls as f64
            );
        }
        Ok(())
    }

    /// Script calls (FCALL, EVALSHA, EVAL) so far, from INFO commandstats.
    pub async fn script_calls(&mut self) -> Result<u64> {
        Ok(RedisCounters::read(&mut self.conn).await?.scripts().0)
    }
}

/// A redis-server's own counters at one instant: INFO commandstats (calls and µs by command,
/// commands run inside scripts included) and INFO cpu (the process's user + system CPU).
#[derive(Clone, Default)]
pub struct RedisCounters {
    /// Command name (`evalsha`, `incr`, …) -> (calls, µs).
    pub commands: std::collections::BTreeMap<String, (u64, u64)>,
    /// used_cpu_user + used_cpu_sys, in seconds.
    pub cpu_s: f64,
}

impl RedisCounters {
    pub async fn read(conn: &mut redis::aio::MultiplexedConnection) -> Result<Self> {
        let stats: String = redis::cmd("INFO").arg("commandstats").query_async(conn).await?;
        let cpu: String = redis::cmd("INFO").arg("cpu").query_async(conn).await?;
        let mut commands = std::collections::BTreeMap::new();
        for line in stats.lines() {
            let Some((name, rest)) = line.strip_prefix("cmdstat_").and_then(|l| l.split_once(':')) else { continue };
            let field = |f: &str| {
                rest.split(',').find_map(|kv| kv.strip_prefix(f)?.strip_prefix('=')?.parse::<u64>().ok()).unwrap_or(0)
            };
            commands.insert(name.to_string(), (field("calls"), field("usec")));
        }
        let field = |f: &str| {
            cpu.lines().find_map(|l| l.strip_prefix(f)?.strip_prefix(':')?.trim().parse::<f64>().ok()).unwrap_or(0.0)
        };
        Ok(Self { commands, cpu_s: field("used_cpu_user") + field("used_cpu_sys") })
    }

    /// The sum over several nodes (a cluster's primaries).
    pub async fn read_all(conns: &mut [redis::aio::MultiplexedConnection]) -> Result<Self> {
        let mut sum = Self::default();
        for conn in conns {
            let one = Self::read(conn).await?;
            for (name, (calls, us)) in one.commands {
                let e = sum.commands.entry(name).or_default();
                e.0 += calls;
                e.1 += us;
            }
            sum.cpu_s += one.cpu_s;
        }
        Ok(sum)
    }

    /// What happened between `before` and these.
    pub fn since(&self, before: &Self) -> Self {
        let commands = self
            .commands
            .iter()
            .map(|(name, &(calls, us))| {
                let (c0, u0) = before.commands.get(name).copied().unwrap_or_default();
                (name.clone(), (calls.saturating_sub(c0), us.saturating_sub(u0)))
            })
            .collect();
        Self { commands, cpu_s: (self.cpu_s - before.cpu_s).max(0.0) }
    }

    /// Calls of every command but INFO (the bench's own reads).
    pub fn calls(&self) -> u64 {
        self.commands.iter().filter(|(name, _)| *name != "info").map(|(_, (calls, _))| calls).sum()
    }

    /// (calls, µs) of one command, lower case (`evalsha`).
    pub fn of(&self, name: &str) -> (u64, u64) {
        self.commands.get(name).copied().unwrap_or_default()
    }

    /// (calls, µs) of script calls: FCALL, EVALSHA and EVAL (Baton runs its scripts as
    /// functions, BullMQ by EVALSHA).
    pub fn scripts(&self) -> (u64, u64) {
        ["fcall", "evalsha", "eval"].iter().map(|c| self.of(c)).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    }
}

/// What redis-benchmark reported.
pub struct Bench {
    pub rps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub cpu: Cpu,
}

/// Translates this machine's clock into the Redis clock. redis-server runs on this machine,
/// so Redis TIME reads the same system clock; the offset, measured around the fastest of a
/// few TIME calls, only absorbs the call's own latency and is reported.
#[derive(Clone, Copy)]
pub struct RedisClock {
    pub offset_us: i64,
    /// Round trip of the TIME call the offset came from: its uncertainty is half of it.
    pub rtt_us: i64,
}

impl RedisClock {
    async fn calibrate(conn: &mut redis::aio::MultiplexedConnection) -> Result<Self> {
        let mut best = RedisClock { offset_us: 0, rtt_us: i64::MAX };
        for _ in 0..50 {
            let before = system_us();
            let (s, us): (i64, i64) = redis::cmd("TIME").query_async(conn).await?;
            let after = system_us();
            if after - before < best.rtt_us {
                best = RedisClock { offset_us: s * 1_000_000 + us - (before + after) / 2, rtt_us: after - before };
            }
        }
        Ok(best)
    }

    /// Now, on the Redis clock, in µs.
    pub fn now_us(&self) -> i64 {
        system_us() + self.offset_us
    }
}

fn system_us() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
}

/// Redis TIME in ms, as Baton's scripts read it.
pub async fn redis_now_ms(conn: &mut redis::aio::MultiplexedConnection) -> Result<i64> {
    let (s, us): (i64, i64) = redis::cmd("TIME").query_async(conn).await?;
    Ok(s * 1000 + us / 1000)
}

/// The configuration every in-process Baton starts from: the defaults with the `BATON_*`
/// variables applied as `baton serve` applies them (to compare a setting:
/// `BATON_LIMITS__BULK_INFLIGHT=0 bench/run`), then no metrics listener (its port could clash)
/// and no jitter, as in the tests.
pub fn bench_config() -> Config {
    let config = Config::from_figment(Config::figment(None)).expect("the BATON_* variables make a valid configuration");
    let mut config = Config { metrics_listen: String::new(), ..config };
    config.agent.jitter_ratio = 0.0;
    config
}

/// An in-process Baton serving on an ephemeral loopback port.
pub struct Baton {
    pub addr: std::net::SocketAddr,
    shutdown: CancellationToken,
    handle: JoinHandle<baton::error::Result<()>>,
}

impl Baton {
    pub async fn start(redis_url: &str, config: Config) -> Result<Self> {
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

    /// One HTTP/2 connection. Connecting retries briefly, as the server task may not have
    /// reached its accept loop.
    pub async fn channel(&self) -> Result<Channel> {
        connect(self.addr, 50).await
    }

    /// `n` connections, one per simulated process.
    pub async fn channels(&self, n: usize) -> Result<Vec<Channel>> {
        channels(self.addr, n).await
    }

    pub async fn stop(self) -> Result<()> {
        self.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(20), self.handle)
            .await
            .map_err(|_| "Baton did not stop within 20 s")???;
        Ok(())
    }
}

/// One HTTP/2 connection to `addr`, tried up to `attempts` times 100 ms apart (a server may not
/// have reached its accept loop yet).
async fn connect(addr: std::net::SocketAddr, attempts: u32) -> Result<Channel> {
    let endpoint = Channel::from_shared(format!("http://{addr}"))?;
    let mut tried = 0;
    loop {
        match endpoint.connect().await {
            Ok(c) => return Ok(c),
            Err(_) if tried < attempts => tried += 1,
            Err(e) => return Err(e.into()),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn channels(addr: std::net::SocketAddr, n: usize) -> Result<Vec<Channel>> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(connect(addr, 50).await?);
    }
    Ok(out)
}

/// `baton serve` in a process of its own, on default settings (no metrics listener): for the
/// figures of Baton alone, apart from the clients the bench runs in this process.
pub struct BatonProcess {
    pub addr: std::net::SocketAddr,
    child: tokio::process::Child,
}

impl BatonProcess {
    /// Starts the `baton` binary built beside this one (bench/run builds it), with these
    /// environment variables set for the process (`BATON_*` settings, or the allocator's); a
    /// `bin` entry names another `baton` binary to start instead (a build to compare with).
    pub async fn start_with(redis_url: &str, env: &[(String, String)]) -> Result<Self> {
        let bin = match env.iter().find(|(k, _)| k == "bin") {
            Some((_, path)) => std::path::PathBuf::from(path),
            None => sibling_bin("baton")?,
        };
        let env = env.iter().filter(|(k, _)| k != "bin");
        // A free port: bound, read, let go (Baton binds it a moment later).
        let addr = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
        let child = tokio::process::Command::new(bin)
            .args(["serve", "--listen", &addr.to_string(), "--metrics-listen", "", "--redis-url", redis_url])
            .envs(env.map(|(k, v)| (k, v)))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let process = Self { addr, child };
        connect(addr, 300).await?;
        Ok(process)
    }

    pub async fn channels(&self, n: usize) -> Result<Vec<Channel>> {
        channels(self.addr, n).await
    }

    /// The process's resident set, in KiB.
    pub fn rss_kb(&self) -> u64 {
        self.child.id().map_or(0, |pid| rss_kb_of(&format!("/proc/{pid}/status")))
    }

    pub async fn stop(mut self) -> Result<()> {
        self.child.kill().await?;
        Ok(())
    }
}

/// A binary built beside this one (bench/run builds `baton` and `baton-worker`), or an error
/// saying how to build it.
pub fn sibling_bin(name: &str) -> Result<std::path::PathBuf> {
    let bin = std::env::current_exe()?.with_file_name(name);
    if !bin.exists() {
        let how = format!("build it with `cargo build --release --bin {name}` (bench/run does)");
        return Err(format!("{} is missing: {how}", bin.display()).into());
    }
    Ok(bin)
}

/// VmRSS of a `/proc/<pid>/status` file, in KiB (0 when unreadable).
fn rss_kb_of(status: &str) -> u64 {
    std::fs::read_to_string(status)
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

pub fn dur(ms: u64) -> Option<prost_types::Duration> {
    Some(prost_types::Duration { seconds: (ms / 1000) as i64, nanos: ((ms % 1000) * 1_000_000) as i32 })
}

/// A timestamp from Baton (always whole ms of the Redis clock), in ms.
pub fn ts_ms(t: &Option<prost_types::Timestamp>) -> Result<i64> {
    let t = t.as_ref().ok_or("timestamp missing in a reply")?;
    Ok(t.seconds * 1000 + i64::from(t.nanos) / 1_000_000)
}

pub fn timestamp_ms(ms: i64) -> prost_types::Timestamp {
    prost_types::Timestamp { seconds: ms.div_euclid(1000), nanos: (ms.rem_euclid(1000) * 1_000_000) as i32 }
}

/// Latencies in µs, 1 µs to 60 s.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid histogram bounds")
}

pub fn micros(d: Duration) -> u64 {
    d.as_micros().try_into().unwrap_or(u64::MAX)
}

pub fn ms_at(h: &Histogram<u64>, quantile: f64) -> f64 {
    h.value_at_quantile(quantile) as f64 / 1000.0
}

/// "p50 / p99 / max" in ms of a µs histogram.
pub fn p50_p99_max(h: &Histogram<u64>) -> String {
    if h.is_empty() {
        return "-".into();
    }
    format!("{} / {} / {}", fmt_ms(ms_at(h, 0.5)), fmt_ms(ms_at(h, 0.99)), fmt_ms(h.max() as f64 / 1000.0))
}

/// Milliseconds with two decimals below 100 ms, whole above.
pub fn fmt_ms(ms: f64) -> String {
    if ms < 100.0 {
        format!("{ms:.2}")
    } else {
        format!("{ms:.0}")
    }
}

/// Nearest-rank quantile of whole-ms samples (Redis-clock differences).
pub fn quantile_ms(sorted: &[i64], q: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

pub fn pct(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

/// CPU used during a measurement, as a share of one core (100 % = one core busy).
#[derive(Clone, Copy)]
pub struct Cpu {
    pub redis: f64,
    /// The client side: this process (Baton and the gRPC workers) or redis-benchmark.
    pub client: f64,
    /// Everything else on the machine: other processes and steal. High values mean the
    /// figures were taken on a busy machine.
    pub other: f64,
}

impl std::fmt::Display for Cpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} / {} / {}", pct(self.redis), pct(self.client), pct(self.other))
    }
}

/// CPU seconds consumed so far by redis-server, by the client side and by the whole
/// machine, and when they were read.
pub struct CpuClock {
    at: Instant,
    redis: f64,
    /// This process (Baton and the gRPC workers) plus its reaped children (redis-benchmark,
    /// baton-worker): whichever drove the load.
    client: f64,
    machine: f64,
}

impl CpuClock {
    pub fn read(redis_pid: u32) -> Result<Self> {
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

    pub fn since(&self, before: &Self) -> Cpu {
        let wall = (self.at - before.at).as_secs_f64().max(1e-9);
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
pub fn process_cpu_seconds(stat: &str) -> Result<f64> {
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

/// The 1-, 5- and 15-minute load averages.
pub fn load_average() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

pub async fn print_machine(conn: &mut redis::aio::MultiplexedConnection, clock: &RedisClock) -> Result<()> {
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name").map(|v| v.trim_start_matches([' ', '\t', ':']).to_string()))
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let info: String = redis::cmd("INFO").arg("server").query_async(conn).await?;
    let version = info.lines().find_map(|l| l.strip_prefix("redis_version:")).unwrap_or("?").trim().to_string();
    let build = if cfg!(debug_assertions) { "DEBUG build: figures are not representative" } else { "release build" };
    println!(
        "Machine: {cpus} CPUs ({model}), Linux {}, redis-server {version}, load average {} at start",
        kernel.trim(),
        load_average()
    );
    println!(
        "Baton {} ({build}); Baton, the gRPC clients, Redis and redis-benchmark share these CPUs; \
         Redis clock = this machine's clock {:+} µs (TIME round trip {} µs)",
        env!("CARGO_PKG_VERSION"),
        clock.offset_us,
        clock.rtt_us
    );
    Ok(())
}

/// A scenario's closing line: how loaded the machine was.
pub fn print_load() {
    println!("(load average {} at the end of this scenario)", load_average());
}

/// An AgentService client over `channel` (no token): what the scenarios' shared phases take.
pub fn agents(channel: Channel) -> baton::pb::agent_service_client::AgentServiceClient<baton::client::Conn> {
    baton::client::Client::from(channel).agents()
}

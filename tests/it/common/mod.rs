//! Test harness: a private real redis-server per test, and real Baton servers on loopback
//! reached through the generated client.
#![allow(dead_code)]

use std::{net::SocketAddr, sync::Arc, time::Duration};

use baton::config::Config;

use baton::pb::agent_service_client::AgentServiceClient;

use baton::runtime::embedded::{Persistence, RedisProcess};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;

pub use baton::pb;

pub mod certs;
pub mod cluster;
pub mod proxy;
pub mod scenarios;

/// A private redis-server on a unix socket in a temporary directory.
pub struct TestRedis {
    pub process: Option<RedisProcess>,
    pub dir: tempfile::TempDir,
    persistence: Persistence,
}

impl TestRedis {
    pub async fn start() -> Self {
        Self::with_persistence(Persistence::None).await
    }

    pub async fn with_persistence(persistence: Persistence) -> Self {
        let dir = tempfile::Builder::new().prefix("baton-t").tempdir_in("/tmp").expect("tempdir");
        let process = RedisProcess::start("redis-server", dir.path(), persistence).await.expect("start redis-server");
        Self { process: Some(process), dir, persistence }
    }

    /// A redis-server whose wall clock (Redis TIME, and so every script's `nowMs`) is
    /// `shift_s` seconds off the host's: started under `clock_shift.c`, an LD_PRELOAD shim
    /// compiled here with the system C compiler. For tests of "Redis TIME is the only clock".
    pub async fn with_clock_shift(shift_s: i64) -> Self {
        let dir = tempfile::Builder::new().prefix("baton-t").tempdir_in("/tmp").expect("tempdir");
        let shim = dir.path().join("clock_shift.so");
        let source = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/common/clock_shift.c");
        let built = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(&shim)
            .arg(source)
            .arg("-ldl")
            .status()
            .expect("a C compiler (cc) to build the clock shim");
        assert!(built.success(), "cc could not build {source}");
        let wrapper = dir.path().join("redis-server-shifted");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\nBATON_CLOCK_SHIFT_S={shift_s} LD_PRELOAD={} exec redis-server \"$@\"\n",
                shim.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        let process = RedisProcess::start(wrapper.to_str().unwrap(), dir.path(), Persistence::None)
            .await
            .expect("start the shifted redis-server");
        Self { process: Some(process), dir, persistence: Persistence::None }
    }

    /// Kills redis-server with SIGKILL, as a crash would.
    pub async fn kill(&mut self) {
        self.process.take().expect("running").kill().await;
    }

    /// Starts redis-server again on the same directory and socket (reloading its AOF).
    pub async fn restart(&mut self) {
        assert!(self.process.is_none(), "kill it first");
        let process = RedisProcess::start("redis-server", self.dir.path(), self.persistence).await.expect("restart");
        self.process = Some(process);
    }

    pub fn url(&self) -> String {
        format!("redis+unix://{}", self.dir.path().canonicalize().unwrap().join("redis.sock").display())
    }

    /// A direct connection, for tests that observe or disturb Redis itself. Its calls wait as
    /// long as Redis takes (a loaded machine, a busy script), not redis-rs's default 500 ms.
    pub async fn conn(&self) -> redis::aio::MultiplexedConnection {
        let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
        redis::Client::open(self.url()).unwrap().get_multiplexed_async_connection_with_config(&config).await.unwrap()
    }

    /// The Redis clock, in ms.
    pub async fn now_ms(&self) -> i64 {
        let (s, us): (i64, i64) = redis::cmd("TIME").query_async(&mut self.conn().await).await.unwrap();
        s * 1000 + us / 1000
    }

    /// Keeps Redis busy for `ms` with a script on its own connection: Redis runs one script at
    /// a time, so a command sent meanwhile waits in line. Await the handle to know it is over.
    pub async fn hold_busy(&self, ms: u64) -> JoinHandle<()> {
        let (mut busy, mut probe) = (self.conn().await, self.conn().await);
        let script = format!(
            "local s = redis.call('TIME') repeat local n = redis.call('TIME') \
             until (n[1] - s[1]) * 1000000 + (n[2] - s[2]) > {} return 1",
            ms * 1000
        );
        let hold = tokio::spawn(async move {
            let _: i64 = redis::cmd("EVAL").arg(script).arg(0).query_async(&mut busy).await.unwrap();
        });
        // Wait until the script runs, before anything else is sent: a PING on another
        // connection then goes unanswered (Redis serves nothing else meanwhile), where an idle
        // Redis answers at once.
        let patience = Duration::from_millis((ms / 4).clamp(10, 200));
        while !hold.is_finished() {
            let ping = redis::cmd("PING");
            if tokio::time::timeout(patience, ping.query_async::<String>(&mut probe)).await.is_err() {
                break;
            }
        }
        hold
    }

    /// Every key of work state with its DUMP, sorted: equal snapshots mean nothing changed.
    /// Left out: the sweeper's own election (it renews in the background, and its entry in the
    /// registry of elections moves with each of its terms), its pass records and the health
    /// copy (written by background passes), and worker liveness (every call of a worker
    /// records it, on purpose).
    pub async fn snapshot(&self) -> Vec<(String, Vec<u8>)> {
        let mut conn = self.conn().await;
        let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query_async(&mut conn).await.unwrap();
        keys.retain(|k| !k.contains("{e:baton-sweeper}") && !k.ends_with(":workers"));
        keys.retain(|k| !k.ends_with("{registry}:sweeps") && !k.ends_with("{registry}:health"));
        keys.sort();
        let mut out = Vec::new();
        for key in keys {
            if key.ends_with("{registry}:elections") {
                let mut entries: Vec<(String, String)> = redis::cmd("ZRANGE")
                    .arg(&key)
                    .arg(0)
                    .arg(-1)
                    .arg("WITHSCORES")
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                entries.retain(|(e, _)| e != "baton-sweeper");
                if !entries.is_empty() {
                    out.push((key, format!("{entries:?}").into_bytes()));
                }
                continue;
            }
            let dump: Vec<u8> = redis::cmd("DUMP").arg(&key).query_async(&mut conn).await.unwrap();
            out.push((key, dump));
        }
        out
    }
}

/// Configuration for tests: no metrics listener, no jitter, so next-run times are exact.
pub fn test_config() -> Config {
    let mut config = Config { metrics_listen: String::new(), shutdown_timeout_ms: 5_000, ..Config::default() };
    config.agent.jitter_ratio = 0.0;
    config.console.listen = String::new(); // tests/it/console.rs binds its own
    config
}

/// One Baton replica serving on an ephemeral loopback port.
pub struct TestBaton {
    pub addr: SocketAddr,
    shutdown: CancellationToken,
    handle: JoinHandle<baton::error::Result<()>>,
}

impl TestBaton {
    pub async fn start(redis_url: &str, config: Config) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let url = redis_url.to_string();
        let stop = shutdown.clone();
        let handle =
            tokio::spawn(
                async move { baton::server::run(Arc::new(config), &url, listener, stop.cancelled_owned()).await },
            );
        Self { addr, shutdown, handle }
    }

    /// Whether `server::run` is still running (it has not returned, e.g. given up on Redis).
    pub fn running(&self) -> bool {
        !self.handle.is_finished()
    }

    pub async fn channel(&self) -> Channel {
        Channel::from_shared(format!("http://{}", self.addr)).unwrap().connect().await.expect("connect to baton")
    }

    pub async fn agents(&self) -> AgentServiceClient<Channel> {
        AgentServiceClient::new(self.channel().await)
    }

    /// Graceful shutdown; returns what `server::run` returned.
    pub async fn stop(self) -> baton::error::Result<()> {
        self.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(15), self.handle).await.expect("server stops").expect("join")
    }
}

/// A Redis and one Baton on it.
pub struct Env {
    pub redis: TestRedis,
    pub baton: TestBaton,
    pub client: AgentServiceClient<Channel>,
}

impl Env {
    pub async fn start() -> Self {
        Self::with_config(test_config()).await
    }

    pub async fn with_config(config: Config) -> Self {
        let redis = TestRedis::start().await;
        let baton = TestBaton::start(&redis.url(), config).await;
        let client = baton.agents().await;
        Self { redis, baton, client }
    }
}

pub fn dur(ms: u64) -> Option<prost_types::Duration> {
    Some(prost_types::Duration { seconds: (ms / 1000) as i64, nanos: ((ms % 1000) * 1_000_000) as i32 })
}

pub fn ms(t: &Option<prost_types::Timestamp>) -> i64 {
    let t = t.as_ref().expect("timestamp present");
    t.seconds * 1000 + t.nanos as i64 / 1_000_000
}

pub fn agent(name: &str, interval_ms: u64, timeout_ms: u64) -> pb::Agent {
    pb::Agent {
        name: name.into(),
        interval: dur(interval_ms),
        timeout: dur(timeout_ms),
        error_interval: dur(10_000),
        ..Default::default()
    }
}

pub async fn register(
    client: &mut AgentServiceClient<Channel>,
    queue: &str,
    agents: Vec<pb::Agent>,
) -> pb::RegisterResponse {
    client
        .register(pb::RegisterRequest { request_id: String::new(), queue: queue.into(), agents, reset_schedule: false })
        .await
        .expect("register")
        .into_inner()
}

pub async fn acquire(client: &mut AgentServiceClient<Channel>, queue: &str, worker: &str, max: u32) -> Vec<pb::Lease> {
    client
        .acquire(pb::AcquireRequest { queue: queue.into(), worker_id: worker.into(), max_leases: max, wait: None })
        .await
        .expect("acquire")
        .into_inner()
        .leases
}

pub fn complete_req(l: &pb::Lease, outcome: pb::Outcome) -> pb::CompleteRequest {
    pb::CompleteRequest {
        request_id: String::new(),
        queue: l.queue.clone(),
        name: l.name.clone(),
        token: l.token,
        outcome: outcome as i32,
        message: String::new(),
        retry_after: None,
        ..Default::default()
    }
}

/// The `google.rpc.ErrorInfo` reason of a status.
pub fn reason(status: &tonic::Status) -> String {
    use tonic_types::StatusExt;
    status.get_details_error_info().map(|i| i.reason).unwrap_or_default()
}

/// A real `baton serve` process on an ephemeral loopback port (`--listen 127.0.0.1:0`; the
/// bound address is read from its log), without a metrics listener or a console. Killed on drop.
pub struct BatonProcess {
    pub child: std::process::Child,
    pub addr: SocketAddr,
    /// Every log line it printed so far.
    pub log: Arc<std::sync::Mutex<Vec<String>>>,
}

impl BatonProcess {
    /// Starts `baton serve` with `configure` applied to its command (arguments, environment).
    pub fn spawn(configure: impl FnOnce(&mut std::process::Command)) -> Self {
        Self::spawn_with_metrics("", configure)
    }

    /// Same, with /metrics on `metrics_listen` (its bound address is in the log).
    pub fn spawn_with_metrics(metrics_listen: &str, configure: impl FnOnce(&mut std::process::Command)) -> Self {
        use std::io::{BufRead, BufReader};
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_baton"));
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--metrics-listen", metrics_listen])
            // No console on its fixed default port, which every process would contend for.
            .env("BATON_CONSOLE__LISTEN", "")
            .env("RUST_LOG", "info")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        configure(&mut cmd);
        let mut child = cmd.spawn().expect("start baton");
        let stderr = child.stderr.take().expect("piped stderr");
        let log = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let lines = log.clone();
        // Keeps draining its stderr for its whole life, so it never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("baton serving gRPC") {
                    if let Some(addr) = line.split_whitespace().find_map(|w| w.strip_prefix("addr=")) {
                        let _ = tx.send(addr.parse::<SocketAddr>().expect("a socket address"));
                    }
                }
                lines.lock().unwrap().push(line);
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(addr) => addr,
            Err(_) => {
                let _ = child.kill();
                panic!("baton did not start serving: {:#?}", log.lock().unwrap());
            }
        };
        Self { child, addr, log }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub async fn channel(&self) -> Channel {
        Channel::from_shared(self.url()).unwrap().connect().await.expect("connect to baton")
    }

    pub fn signal(&self, signal: i32) {
        unsafe { libc::kill(self.child.id() as i32, signal) };
    }
}

impl Drop for BatonProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `check` (each call a real round trip) until it holds, or panics after `limit`.
pub async fn eventually<F, Fut>(limit: Duration, what: &str, check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    cluster::until(what, limit, check).await
}

/// Runs `workers` long-polling workers, spread over `clients`, that complete every lease at
/// once, until one is granted at or after `end_ms` (Redis clock); every grant, with the time it
/// was acquired (its deadline minus `timeout_ms`: the Redis clock).
pub async fn cycle_until(
    clients: &[AgentServiceClient<Channel>],
    queue: &str,
    workers: usize,
    timeout_ms: i64,
    end_ms: i64,
) -> Vec<(pb::Lease, i64)> {
    let grants = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for w in 0..workers {
        let mut c = clients[w % clients.len()].clone();
        let (grants, queue) = (grants.clone(), queue.to_string());
        tasks.push(tokio::spawn(async move {
            loop {
                let poll = pb::AcquireRequest {
                    queue: queue.clone(),
                    worker_id: format!("w{w}"),
                    max_leases: 4,
                    wait: dur(1_000),
                };
                let leases = c.acquire(poll).await.unwrap().into_inner().leases;
                let mut past_end = false;
                for l in leases {
                    let at = ms(&l.deadline) - timeout_ms;
                    past_end |= at >= end_ms;
                    c.complete(complete_req(&l, pb::Outcome::Success)).await.unwrap();
                    grants.lock().unwrap().push((l, at));
                }
                if past_end {
                    return;
                }
            }
        }));
    }
    tokio::time::timeout(Duration::from_secs(120), async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await
    .expect("the run ends");
    let grants = grants.lock().unwrap().clone();
    grants
}

/// Over every span between two of the grant `times` (ms), at most burst + rate × span grants.
pub fn assert_within_bucket(what: &str, times: &[i64], rate: f64, burst: u32) {
    let mut times = times.to_vec();
    times.sort();
    for i in 0..times.len() {
        for j in i..times.len() {
            let span_ms = (times[j] - times[i]) as f64;
            let allowed = burst as f64 + rate * span_ms / 1000.0 + 1e-6;
            let n = (j - i + 1) as f64;
            assert!(n <= allowed, "{what}: {n} grants within {span_ms} ms; the bucket allows {allowed}");
        }
    }
}

//! The embedded default: with no Redis URL configured, Baton runs a private redis-server with
//! append-only persistence in the data directory, listening on a unix socket only, restarts it
//! if it dies, and stops it (SIGTERM, so the append-only file is flushed) on exit.
//!
//! Public because the integration tests' harness and the bench use `RedisProcess` directly, to
//! get a real, private Redis each (and to kill and restart it), as `baton serve` runs it.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};

/// How a redis-server persists its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Persistence {
    /// In memory only (tests that need no durability).
    None,
    /// Append-only file, fsync every second (the embedded default).
    EverySecond,
    /// Append-only file, fsync before every reply: nothing acknowledged is lost to SIGKILL.
    Always,
}

/// One redis-server child process, on a unix socket in its directory.
pub struct RedisProcess {
    child: Child,
    socket: PathBuf,
}

impl RedisProcess {
    /// Starts redis-server in `dir` (reloading its append-only file, if any) and waits until it
    /// answers PING.
    pub async fn start(binary: &str, dir: &Path, persistence: Persistence) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| Error::Config(format!("data dir {}: {e}", dir.display())))?;
        let dir = dir.canonicalize().map_err(|e| Error::Config(format!("data dir {}: {e}", dir.display())))?;
        let socket = dir.join("redis.sock");
        if socket.as_os_str().len() > 100 {
            return Err(Error::Config(format!("data dir {} is too long for a unix socket path", dir.display())));
        }
        let log = std::fs::File::create(dir.join("redis.log")).map_err(|e| Error::Config(e.to_string()))?;
        let child = Command::new(binary)
            .args(["--port", "0", "--unixsocket"])
            .arg(&socket)
            .args(["--unixsocketperm", "700", "--dir"])
            .arg(&dir)
            .args(["--appendonly", if persistence == Persistence::None { "no" } else { "yes" }])
            .args(["--appendfsync", if persistence == Persistence::Always { "always" } else { "everysec" }])
            .args(["--save", "", "--daemonize", "no", "--protected-mode", "yes"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| Error::Config(e.to_string()))?)
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Error::Config(format!(
                    "{binary} not found on PATH: install Redis (Debian/Ubuntu: apt-get install -y redis-server) \
                     or point Baton at one with --redis-url"
                )),
                _ => Error::Config(format!("cannot start {binary}: {e}")),
            })?;
        let mut process = Self { child, socket };
        process.wait_ready(Duration::from_secs(10)).await?;
        Ok(process)
    }

    /// The URL to connect to this Redis.
    pub fn url(&self) -> String {
        format!("redis+unix://{}", self.socket.display())
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    async fn wait_ready(&mut self, limit: Duration) -> Result<()> {
        let client = redis::Client::open(self.url())?;
        let started = tokio::time::Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().map_err(|e| Error::Config(e.to_string()))? {
                return Err(Error::Config(format!(
                    "redis-server exited at start ({status}); see redis.log in its dir"
                )));
            }
            if let Ok(mut conn) = client.get_multiplexed_async_connection().await {
                if redis::cmd("PING").query_async::<String>(&mut conn).await.is_ok() {
                    return Ok(());
                }
            }
            if started.elapsed() > limit {
                return Err(Error::Config("redis-server did not answer within 10 s".into()));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until the process exits by itself.
    pub async fn exited(&mut self) -> std::io::Result<std::process::ExitStatus> {
        self.child.wait().await
    }

    /// Stops the process with SIGTERM (Redis flushes its append-only file), SIGKILL after 10 s.
    pub async fn stop(mut self) {
        if let Some(pid) = self.child.id() {
            // SAFETY: kill(2) on our own child's pid has no memory effects.
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
            if tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await.is_ok() {
                return;
            }
        }
        let _ = self.child.kill().await;
    }

    /// Kills the process at once (SIGKILL), as a crash would.
    pub async fn kill(mut self) {
        let _ = self.child.kill().await;
    }
}

/// Starts the embedded Redis and supervises it until `shutdown`: restarts it (from its
/// append-only file) if it dies. Returns its URL once it first answers.
pub async fn start_supervised(
    binary: String,
    dir: PathBuf,
    persistence: Persistence,
    shutdown: CancellationToken,
) -> Result<(String, tokio::task::JoinHandle<()>)> {
    let first = RedisProcess::start(&binary, &dir, persistence).await?;
    let url = first.url();
    tracing::info!(dir = %dir.display(), url, "embedded redis-server started");
    let task = tokio::spawn(async move {
        let mut process = first;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => {
                    process.stop().await;
                    tracing::info!("embedded redis-server stopped");
                    return;
                }
                status = process.exited() => {
                    tracing::error!(?status, "embedded redis-server exited; restarting it");
                }
            }
            let mut backoff = crate::client::Backoff::between(Duration::from_millis(200), Duration::from_secs(10));
            loop {
                if shutdown.is_cancelled() {
                    return;
                }
                match RedisProcess::start(&binary, &dir, persistence).await {
                    Ok(p) => {
                        process = p;
                        break;
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "cannot restart embedded redis-server");
                        tokio::time::sleep(backoff.next_delay()).await;
                    }
                }
            }
        }
    });
    Ok((url, task))
}

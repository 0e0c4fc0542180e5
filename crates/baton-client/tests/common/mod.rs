//! A live Baton for the crate's tests: `$TEST_BATON_BIN` (else the workspace's
//! `target/debug/baton`) `serve`d on a free loopback port, with its own embedded redis-server in
//! a temporary data dir; SIGTERM when dropped.
#![allow(dead_code)]

use std::{
    io::{BufRead, BufReader},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use baton_client::Client;

pub struct Baton {
    child: Child,
    _dir: tempfile::TempDir,
    /// `host:port` of its gRPC listener.
    pub addr: String,
}

impl Baton {
    pub fn start() -> Self {
        Self::with_env(&[])
    }

    pub fn with_env(env: &[(&str, &str)]) -> Self {
        let bin = std::env::var("TEST_BATON_BIN")
            .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/debug/baton").into());
        let dir = tempfile::Builder::new().prefix("baton-rs-").tempdir_in("/tmp").unwrap();
        let mut child = Command::new(&bin)
            .args(["serve", "--listen", "127.0.0.1:0", "--metrics-listen", "", "--data-dir"])
            .arg(dir.path())
            .env("BATON_CONSOLE__LISTEN", "")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{bin}: {e} (set TEST_BATON_BIN)"));
        // The log says where it listens: "baton serving gRPC addr=127.0.0.1:PORT ...".
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let addr = loop {
            let line = lines.next().expect("baton exited before it listened").unwrap();
            if let Some(rest) = line.split("serving gRPC addr=").nth(1) {
                break rest.split_whitespace().next().unwrap().to_string();
            }
        };
        // Keep reading (and dropping) its log, so a full pipe never blocks it.
        std::thread::spawn(move || lines.for_each(drop));
        Self { child, _dir: dir, addr }
    }

    pub async fn client(&self) -> Client {
        Client::builder(&self.addr).connect().await.unwrap()
    }

    pub fn signal(&self, signal: i32) {
        unsafe { libc::kill(self.child.id() as i32, signal) };
    }
}

impl Drop for Baton {
    fn drop(&mut self) {
        self.signal(libc::SIGCONT);
        self.signal(libc::SIGTERM);
        let end = Instant::now() + Duration::from_secs(15);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

//! Real multi-process Redis deployments on loopback: a Redis Cluster made by
//! `redis-cli --cluster create`, and a master with a replica watched by a sentinel. Shared by
//! the tests and the benchmark (`bench/scenarios/cluster.rs`); TLS nodes are in `certs.rs`.
//!
//! Cluster nodes need fixed TCP ports (port and port + 10000 for the bus): each node takes a
//! port found free and, should another process take it first, tries another. Both ports lie
//! below Linux's ephemeral range (32768 and up), so no outgoing connection on this machine can
//! be handed one of them while a node is down between `kill` and `restart`.

use std::{process::Stdio, time::Duration};

use tokio::process::{Child, Command};

/// Waits until `check` holds, at most `limit`; panics naming `what` otherwise.
pub async fn until<F, Fut>(what: &str, limit: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let end = std::time::Instant::now() + limit;
    while !check().await {
        assert!(std::time::Instant::now() < end, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One redis-server process on a loopback TCP port.
pub struct Node {
    pub port: u16,
    child: Option<Child>,
    args: Vec<String>,
    /// Set for a TLS-only node: how the harness itself connects.
    tls: Option<redis::TlsCertificates>,
}

impl Node {
    /// Starts redis-server with `args` on a free port (`--port` is added), retrying another
    /// port when the chosen one turns out taken.
    pub async fn start(dir: &std::path::Path, args: &[String], with_bus: bool) -> Self {
        Self::start_with(dir, args, with_bus, None).await
    }

    pub async fn start_with(
        dir: &std::path::Path,
        args: &[String],
        with_bus: bool,
        tls: Option<redis::TlsCertificates>,
    ) -> Self {
        for _ in 0..20 {
            let port = free_port(with_bus);
            let args: Vec<String> = args.iter().map(|a| a.replace("{port}", &port.to_string())).collect();
            // A configuration file must come first.
            let (file, rest) = match args.first() {
                Some(first) if !first.starts_with("--") => (vec![first.clone()], &args[1..]),
                _ => (vec![], &args[..]),
            };
            let mut all = file;
            all.extend(["--port".to_string(), port.to_string()]);
            all.extend(rest.iter().cloned());
            let mut node = Node { port, child: None, args: all, tls: tls.clone() };
            node.spawn(dir);
            if node.answers(Duration::from_secs(20)).await {
                return node;
            }
            node.kill().await;
        }
        panic!("could not start redis-server {args:?}");
    }

    fn spawn(&mut self, dir: &std::path::Path) {
        let child = Command::new("redis-server")
            .args(&self.args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("redis-server on PATH (scripts/test installs it)");
        self.child = Some(child);
    }

    /// Starts the node again on its own port and files (after `kill`).
    pub async fn restart(&mut self, dir: &std::path::Path) {
        assert!(self.child.is_none(), "kill it first");
        // A client still retrying this port can hold it for a moment (a connection being torn
        // down); a node that exits at once is started again until the limit.
        let end = std::time::Instant::now() + Duration::from_secs(60);
        while std::time::Instant::now() < end {
            self.spawn(dir);
            if self.answers(end - std::time::Instant::now()).await {
                return;
            }
            self.kill().await;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        panic!("redis-server {} does not restart", self.port);
    }

    async fn answers(&mut self, limit: Duration) -> bool {
        let end = std::time::Instant::now() + limit;
        while std::time::Instant::now() < end {
            if let Some(Ok(Some(_))) = self.child.as_mut().map(|c| c.try_wait()) {
                return false;
            }
            if self.ping().await {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    /// The URL of this node: `redis://` or, for a TLS node, `rediss://`.
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "rediss" } else { "redis" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    pub fn client(&self) -> redis::Client {
        match &self.tls {
            Some(certs) => redis::Client::build_with_tls(self.url(), certs.clone()).unwrap(),
            None => redis::Client::open(self.url()).unwrap(),
        }
    }

    async fn ping(&self) -> bool {
        let Ok(mut conn) = self.client().get_multiplexed_async_connection().await else { return false };
        redis::cmd("PING").query_async::<String>(&mut conn).await.is_ok()
    }

    /// SIGKILL, as a crash would.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }

    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    pub async fn conn(&self) -> redis::aio::MultiplexedConnection {
        let config = redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(30)));
        self.client().get_multiplexed_async_connection_with_config(&config).await.expect("connect to a cluster node")
    }

    pub async fn cmd<T: redis::FromRedisValue>(&self, cmd: &redis::Cmd) -> redis::RedisResult<T> {
        cmd.query_async(&mut self.conn().await).await
    }
}

/// A port free now (and, with `with_bus`, port + 10000 too).
fn free_port(with_bus: bool) -> u16 {
    loop {
        // [10000, 22000) and its bus port [20000, 32000): both below the ephemeral range.
        let port = 10_000 + rand::random::<u16>() % 12_000;
        let free = |p: u16| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok();
        if free(port) && (!with_bus || free(port + 10_000)) {
            return port;
        }
    }
}

/// A Redis Cluster of `masters` primaries with `replicas` replicas each.
pub struct TestCluster {
    pub dir: tempfile::TempDir,
    pub nodes: Vec<Node>,
}

impl TestCluster {
    pub async fn start(masters: usize, replicas: usize) -> Self {
        let cluster = Self::launch(masters * (1 + replicas)).await;
        cluster.create(replicas).await;
        cluster
    }

    /// `count` cluster-enabled nodes that know nothing of each other yet (no slots): a cluster
    /// before `redis-cli --cluster create` ([`TestCluster::create`]).
    pub async fn launch(count: usize) -> Self {
        let dir = tempfile::Builder::new().prefix("baton-c").tempdir_in("/tmp").expect("tempdir");
        let args: Vec<String> = [
            "--bind",
            "127.0.0.1",
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes-{port}.conf",
            "--cluster-node-timeout",
            "1500",
            "--appendonly",
            "no",
            "--save",
            "",
            "--dbfilename",
            "dump-{port}.rdb",
            "--protected-mode",
            "no",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut nodes = Vec::new();
        for _ in 0..count {
            nodes.push(Node::start(dir.path(), &args, true).await);
        }
        Self { dir, nodes }
    }

    /// `redis-cli --cluster create` over every node, with `replicas` replicas per primary;
    /// returns once the cluster is healthy.
    pub async fn create(&self, replicas: usize) {
        let mut create = std::process::Command::new("redis-cli");
        create.arg("--cluster").arg("create");
        for n in &self.nodes {
            create.arg(format!("127.0.0.1:{}", n.port));
        }
        create.args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"]);
        let out = tokio::task::spawn_blocking(move || create.output()).await.unwrap().expect("redis-cli on PATH");
        assert!(out.status.success(), "redis-cli --cluster create: {}", String::from_utf8_lossy(&out.stdout));
        self.wait_healthy().await;
    }

    /// Waits until every running node sees the cluster ok and every replica is in sync.
    pub async fn wait_healthy(&self) {
        for node in self.nodes.iter().filter(|n| n.running()) {
            until("cluster_state:ok", Duration::from_secs(60), || async {
                let info: String = node.cmd(redis::cmd("CLUSTER").arg("INFO")).await.unwrap_or_default();
                info.contains("cluster_state:ok")
            })
            .await;
            until("replication in sync", Duration::from_secs(60), || async {
                let info: String = node.cmd(redis::cmd("INFO").arg("replication")).await.unwrap_or_default();
                info.contains("role:master") || info.contains("master_link_status:up")
            })
            .await;
        }
    }

    /// `redis+cluster://` with every node as a seed.
    pub fn url(&self) -> String {
        let seeds: Vec<String> = self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        format!("redis+cluster://{}", seeds.join(","))
    }

    /// A running node, for cluster-wide queries.
    pub fn any(&self) -> &Node {
        self.nodes.iter().find(|n| n.running()).expect("a running node")
    }

    /// The index in `nodes` of the primary serving `key` now.
    pub async fn primary_of(&self, key: &str) -> usize {
        let slot: i64 = self.any().cmd(redis::cmd("CLUSTER").arg("KEYSLOT").arg(key)).await.unwrap();
        let slots: redis::Value = self.any().cmd(redis::cmd("CLUSTER").arg("SLOTS")).await.unwrap();
        let redis::Value::Array(ranges) = slots else { panic!("CLUSTER SLOTS: {slots:?}") };
        for range in ranges {
            let redis::Value::Array(parts) = range else { continue };
            let (from, to): (i64, i64) =
                (redis::from_redis_value_ref(&parts[0]).unwrap(), redis::from_redis_value_ref(&parts[1]).unwrap());
            if (from..=to).contains(&slot) {
                let redis::Value::Array(primary) = &parts[2] else { continue };
                let port: u16 = redis::from_redis_value_ref(&primary[1]).unwrap();
                return self.nodes.iter().position(|n| n.port == port).expect("a known node");
            }
        }
        panic!("no primary serves slot {slot}")
    }

    /// Every key of every primary (KEYS per node; tests only).
    pub async fn keys(&self) -> Vec<String> {
        let mut all = Vec::new();
        for node in self.nodes.iter().filter(|n| n.running()) {
            let info: String = node.cmd(redis::cmd("INFO").arg("replication")).await.unwrap_or_default();
            if info.contains("role:master") {
                let keys: Vec<String> = node.cmd(redis::cmd("KEYS").arg("*")).await.unwrap_or_default();
                all.extend(keys);
            }
        }
        all.sort();
        all
    }
}

/// Plain (no TLS, no cluster) node arguments, in a directory shared by several nodes.
pub fn plain_args() -> Vec<String> {
    ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dbfilename", "dump-{port}.rdb"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// A primary, its replica, and one sentinel (quorum 1) watching them as `mymaster`.
pub struct TestSentinel {
    pub dir: tempfile::TempDir,
    pub primary: Node,
    pub replica: Node,
    pub sentinel: Node,
}

impl TestSentinel {
    pub async fn start() -> Self {
        let dir = tempfile::Builder::new().prefix("baton-s").tempdir_in("/tmp").expect("tempdir");
        let primary = Node::start(dir.path(), &plain_args(), false).await;
        let replica = Node::start_replica(dir.path(), &primary).await;
        let conf = dir.path().join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "sentinel monitor mymaster 127.0.0.1 {} 1\n\
                 sentinel down-after-milliseconds mymaster 1000\n\
                 sentinel failover-timeout mymaster 5000\n",
                primary.port
            ),
        )
        .unwrap();
        let args = vec![conf.display().to_string(), "--sentinel".into(), "--bind".into(), "127.0.0.1".into()];
        let sentinel = Node::start(dir.path(), &args, false).await;
        // The sentinel knows the replica before anything relies on a failover.
        until("the sentinel sees the replica", Duration::from_secs(60), || async {
            let replicas: redis::Value =
                sentinel.cmd(redis::cmd("SENTINEL").arg("REPLICAS").arg("mymaster")).await.unwrap_or(redis::Value::Nil);
            matches!(replicas, redis::Value::Array(ref r) if !r.is_empty())
        })
        .await;
        Self { dir, primary, replica, sentinel }
    }

    /// `redis+sentinel://` through the sentinel.
    pub fn url(&self) -> String {
        format!("redis+sentinel://127.0.0.1:{}/mymaster", self.sentinel.port)
    }

    /// The port of the master the sentinel names now.
    pub async fn master_port(&self) -> u16 {
        let addr: Vec<String> =
            self.sentinel.cmd(redis::cmd("SENTINEL").arg("GET-MASTER-ADDR-BY-NAME").arg("mymaster")).await.unwrap();
        addr[1].parse().unwrap()
    }
}

impl Node {
    /// A replica of `primary`, in sync before this returns.
    pub async fn start_replica(dir: &std::path::Path, primary: &Node) -> Node {
        let mut args = plain_args();
        args.extend(["--replicaof".to_string(), "127.0.0.1".to_string(), primary.port.to_string()]);
        let replica = Node::start(dir, &args, false).await;
        until("the replica is in sync", Duration::from_secs(60), || async {
            let info: String = replica.cmd(redis::cmd("INFO").arg("replication")).await.unwrap_or_default();
            info.contains("master_link_status:up")
        })
        .await;
        replica
    }
}

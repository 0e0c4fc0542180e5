//! Connections to Redis, for every deployment [`Target`] names:
//!
//! - one node (TCP, TLS, Unix socket): a bb8 pool of multiplexed connections or one
//!   auto-reconnecting multiplexed connection (`ConnectionManager`) shared by every call,
//!   chosen by `redis.connection` (see ARCHITECTURE.md for the measurements behind the default);
//! - Redis Cluster: redis-rs's cluster connection, which routes each command by its key's
//!   slot, follows MOVED and ASK, and refreshes the slot map after failovers and resharding;
//! - Sentinel: a shared connection to the master the sentinels name, asked again whenever
//!   that master stops answering or turns out to be a replica (READONLY) after a failover.
//!
//! TLS uses rustls, with the CA, client certificate and key of `redis.tls_*` when set.

use std::{
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, RwLock, Weak,
    },
    time::Duration,
};

use redis::{
    aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig, MultiplexedConnection},
    cluster::ClusterClientBuilder,
    cluster_async::ClusterConnection,
    sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType},
    AsyncConnectionConfig, ClientTlsConfig, Cmd, ConnectionAddr, Pipeline, RedisFuture, RedisResult, TlsCertificates,
    TlsMode, Value,
};

use super::target::Target;
use crate::{
    config::{ConnectionMode, RedisConfig},
    error::{Error, Result},
};

/// How the error of a TLS connection Redis refused begins (a certificate problem: not retried).
pub const TLS_FAILED: &str = "TLS connection to Redis failed";

/// A handle that hands out connections; cheap to clone.
#[derive(Clone)]
pub struct Redis {
    link: Link,
    feed: Arc<Feed>,
    /// `redis.min_replicas_ack` and its timeout, when set.
    durability: Option<(u32, u64)>,
    /// Which node serves which slot, for the per-node circuit breakers.
    nodes: Arc<Nodes>,
    /// On a cluster, Baton's own connection to each primary, for commands addressed to one
    /// node (see [`Redis::node_conn`]).
    probes: Arc<std::sync::Mutex<std::collections::HashMap<Arc<str>, MultiplexedConnection>>>,
}

/// The name of the one node (a single node, the master Sentinel names) or, on a cluster, which
/// primary (`host:port`) serves each slot, as CLUSTER SLOTS said at the last probe.
struct Nodes {
    single: Arc<str>,
    /// (first slot, last slot, primary), sorted.
    slots: RwLock<Vec<(u16, u16, Arc<str>)>>,
}

#[derive(Clone)]
enum Link {
    Pool(bb8::Pool<PoolManager>),
    Shared(ConnectionManager),
    Cluster(ClusterConnection),
    Sentinel(Arc<SentinelMaster>),
}

/// What the pub/sub follower (`wake.rs`) needs to open subscriptions of its own.
pub struct Feed {
    pub target: Target,
    certs: Option<TlsCertificates>,
    connect_timeout: Duration,
    command_timeout: Duration,
    sentinel: Option<Arc<SentinelMaster>>,
}

impl Feed {
    /// Which master the sentinels named last (0 for other deployments): a pub/sub connection
    /// opened under an older one follows a node that may no longer be the master.
    pub fn generation(&self) -> u64 {
        self.sentinel.as_ref().map_or(0, |s| s.generation.load(Ordering::SeqCst))
    }

    /// A dedicated pub/sub connection to the node (one node, or the master Sentinel names).
    pub async fn pubsub(&self) -> Result<redis::aio::PubSub> {
        let client = match (&self.target, &self.sentinel) {
            (_, Some(sentinel)) => sentinel.current()?.2,
            (Target::Node(info), None) => match &self.certs {
                Some(certs) => redis::Client::build_with_tls(info.clone(), certs.clone())?,
                None => redis::Client::open(info.clone())?,
            },
            (Target::Cluster(_), None) | (Target::Sentinel { .. }, None) => {
                return Err(Error::Internal("a cluster has no single pub/sub node".into()))
            }
        };
        let pubsub = tokio::time::timeout(self.connect_timeout * 2, client.get_async_pubsub())
            .await
            .map_err(|_| Error::Unavailable("opening the pub/sub connection timed out".into()))?;
        if pubsub.is_err() {
            if let Some(sentinel) = &self.sentinel {
                sentinel.stale(sentinel.current()?.1);
            }
        }
        Ok(pubsub?)
    }

    /// A RESP3 cluster connection whose pushes (sharded messages, resubscriptions,
    /// disconnections) go to `push`; redis-rs resubscribes it after reconnects and slot moves.
    pub async fn cluster(
        &self,
        push: tokio::sync::mpsc::UnboundedSender<redis::PushInfo>,
    ) -> Result<ClusterConnection> {
        let Target::Cluster(seeds) = &self.target else {
            return Err(Error::Internal("not a cluster".into()));
        };
        let mut builder = ClusterClientBuilder::new(seeds.clone())
            .connection_timeout(self.connect_timeout)
            .response_timeout(self.command_timeout)
            .use_protocol(redis::ProtocolVersion::RESP3)
            .push_sender(push);
        if let Some(certs) = &self.certs {
            builder = builder.certs(certs.clone());
        }
        let client = builder.build()?;
        Ok(tokio::time::timeout(self.connect_timeout * 2, client.get_async_connection())
            .await
            .map_err(|_| Error::Unavailable("opening the cluster pub/sub connection timed out".into()))??)
    }
}

/// One connection, borrowed from the pool or cloned from a shared one.
pub enum Conn {
    Pooled(bb8::PooledConnection<'static, PoolManager>),
    Shared(ConnectionManager),
    Cluster(ClusterConnection),
    /// The master's connection, with the generation it was resolved in.
    Sentinel(ConnectionManager, Arc<SentinelMaster>, u64),
}

impl Redis {
    /// Connects to the Redis `url` names (see [`Target`] for the forms).
    pub async fn connect(url: &str, cfg: &RedisConfig) -> Result<Self> {
        let target = Target::parse(url)?;
        let certs = certificates(cfg, &target)?;
        let link = Self::link(&target, certs.clone(), cfg).await.map_err(|e| match e {
            Error::Unavailable(m) if target.tls() && !m.contains("timed out") && !m.contains("refused") => {
                Error::Unavailable(format!(
                    "{TLS_FAILED}: {m}. Check redis.tls_ca_file (the CA that signed Redis's \
                 certificate; unset: the system's roots) and, if Redis asks for client certificates, \
                 redis.tls_cert_file and redis.tls_key_file"
                ))
            }
            e => e,
        })?;
        let sentinel = match &link {
            Link::Sentinel(s) => Some(s.clone()),
            _ => None,
        };
        let feed = Feed {
            target,
            certs,
            connect_timeout: Duration::from_millis(cfg.connect_timeout_ms),
            command_timeout: Duration::from_millis(cfg.command_timeout_ms),
            sentinel,
        };
        let durability = (cfg.min_replicas_ack > 0).then_some((cfg.min_replicas_ack, cfg.min_replicas_timeout_ms));
        let single: Arc<str> = match &feed.target {
            Target::Node(info) => info.addr().to_string().into(),
            Target::Cluster(_) => "cluster".into(),
            Target::Sentinel { master, .. } => format!("sentinel:{master}").into(),
        };
        let nodes = Arc::new(Nodes { single, slots: RwLock::default() });
        let redis = Self { link, feed: Arc::new(feed), durability, nodes, probes: Arc::default() };
        if redis.is_cluster() {
            redis.refresh_nodes(Duration::from_millis(cfg.connect_timeout_ms)).await?;
        }
        Ok(redis)
    }

    /// The node serving `key`: on a cluster the primary of its slot (as last seen; "cluster"
    /// before the first look), otherwise the one node.
    pub fn node_of(&self, key: &str) -> Arc<str> {
        if !self.is_cluster() {
            return self.nodes.single.clone();
        }
        let slot = slot(key);
        let slots = self.nodes.slots.read().expect("nodes lock");
        let at = slots.partition_point(|(_, last, _)| *last < slot);
        match slots.get(at) {
            Some((first, _, node)) if *first <= slot => node.clone(),
            _ => self.nodes.single.clone(),
        }
    }

    /// Asks the cluster which primary serves which slots (CLUSTER SLOTS, to a node chosen at
    /// random, up to three tries each bounded by `limit`); returns the primaries. Elsewhere, the
    /// one node.
    pub async fn refresh_nodes(&self, limit: Duration) -> Result<Vec<Arc<str>>> {
        use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
        let Link::Cluster(conn) = &self.link else { return Ok(vec![self.nodes.single.clone()]) };
        let mut last = Error::Unavailable("no node answered CLUSTER SLOTS".into());
        for _ in 0..3 {
            let mut conn = conn.clone();
            let mut slots = redis::cmd("CLUSTER");
            slots.arg("SLOTS");
            let ask = conn.route_command(slots, RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random));
            let reply = match tokio::time::timeout(limit, ask).await {
                Ok(Ok(reply)) => reply,
                Ok(Err(e)) => {
                    last = e.into();
                    continue;
                }
                Err(_) => {
                    last = Error::Unavailable("CLUSTER SLOTS timed out".into());
                    continue;
                }
            };
            let mut slots = parse_slots(reply);
            if slots.is_empty() {
                last = Error::Unavailable("the cluster serves no slot yet".into());
                continue;
            }
            slots.sort();
            let mut primaries: Vec<Arc<str>> = slots.iter().map(|(_, _, n)| n.clone()).collect();
            primaries.sort();
            primaries.dedup();
            *self.nodes.slots.write().expect("nodes lock") = slots;
            return Ok(primaries);
        }
        Err(last)
    }

    /// Pings every primary (one node elsewhere), each bounded by `limit`: per node, whether it
    /// answered. On a cluster, reads the slot map first; None when no node told it.
    pub async fn ping_nodes(&self, limit: Duration) -> Option<Vec<(Arc<str>, Result<()>)>> {
        let bounded = |ping: futures::future::BoxFuture<'static, Result<()>>| async move {
            tokio::time::timeout(limit, ping).await.unwrap_or_else(|_| {
                Err(Error::Unavailable(format!("no answer to PING within {} ms", limit.as_millis())))
            })
        };
        let Link::Cluster(_) = &self.link else {
            let this = self.clone();
            let ping = Box::pin(async move {
                let mut conn = this.conn().await?;
                redis::cmd("PING").query_async::<String>(&mut conn).await?;
                Ok(())
            });
            return Some(vec![(self.nodes.single.clone(), bounded(ping).await)]);
        };
        let primaries = self.refresh_nodes(limit).await.ok()?;
        // Each primary is pinged on Baton's own connection to it (`node_conn`), never through
        // the shared cluster connection: probing a dead node every probe interval there kept
        // it reconnecting to every seed.
        self.probes.lock().expect("node connections").retain(|node, _| primaries.contains(node));
        let pings = primaries.into_iter().map(|node| {
            let this = self.clone();
            let name = node.clone();
            let ping = Box::pin(async move { this.ping_node(&node).await });
            async move { (name, bounded(ping).await) }
        });
        Some(futures::future::join_all(pings).await)
    }

    /// PING to one cluster node (`host:port`) on Baton's own connection to it.
    async fn ping_node(&self, node: &Arc<str>) -> Result<()> {
        let answer = redis::cmd("PING").query_async::<String>(&mut self.node_conn(node).await?).await;
        if answer.is_err() {
            self.probes.lock().expect("node connections").remove(node);
        }
        answer?;
        Ok(())
    }

    /// Baton's own connection to one cluster node (`host:port`), apart from the cluster
    /// connection every call shares, for commands addressed to that node (the probe's PING,
    /// SCAN): opened on first use with the seeds' user, password and TLS, and again after a
    /// failure. Through the shared connection, a command addressed to a node it holds no live
    /// connection to (a node down, or being reconnected) makes redis-rs drop every connection
    /// and start again from the seeds, once per retry, and no call goes through meanwhile.
    async fn node_conn(&self, node: &Arc<str>) -> Result<MultiplexedConnection> {
        if let Some(conn) = self.probes.lock().expect("node connections").get(node) {
            return Ok(conn.clone());
        }
        let Target::Cluster(seeds) = &self.feed.target else {
            return Err(Error::Internal("not a cluster".into()));
        };
        let seed = seeds.first().ok_or_else(|| Error::Internal("a cluster without seeds".into()))?;
        let (host, port) = node.rsplit_once(':').ok_or_else(|| Error::Internal(format!("node {node}")))?;
        let port: u16 = port.parse().map_err(|_| Error::Internal(format!("node {node}")))?;
        let addr = match seed.addr() {
            ConnectionAddr::TcpTls { insecure, tls_params, .. } => ConnectionAddr::TcpTls {
                host: host.to_string(),
                port,
                insecure: *insecure,
                tls_params: tls_params.clone(),
            },
            _ => ConnectionAddr::Tcp(host.to_string(), port),
        };
        let info = seed.clone().set_addr(addr);
        let client = match &self.feed.certs {
            Some(certs) => redis::Client::build_with_tls(info, certs.clone())?,
            None => redis::Client::open(info)?,
        };
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.feed.connect_timeout))
            .set_response_timeout(Some(self.feed.command_timeout));
        let conn = client.get_multiplexed_async_connection_with_config(&config).await?;
        self.probes.lock().expect("node connections").insert(node.clone(), conn.clone());
        Ok(conn)
    }

    /// How the pub/sub follower opens its own connections.
    pub fn feed(&self) -> Arc<Feed> {
        self.feed.clone()
    }

    async fn link(target: &Target, certs: Option<TlsCertificates>, cfg: &RedisConfig) -> Result<Link> {
        let connect_timeout = Duration::from_millis(cfg.connect_timeout_ms);
        let command_timeout = Duration::from_millis(cfg.command_timeout_ms);
        let within = |what: String| {
            move |_| {
                Error::Unavailable(format!("connecting to {what} timed out after {}ms", 2 * cfg.connect_timeout_ms))
            }
        };
        match target {
            Target::Node(info) => {
                let client = match certs {
                    Some(certs) => redis::Client::build_with_tls(info.clone(), certs)?,
                    None => redis::Client::open(info.clone())?,
                };
                let what = format!("Redis at {}", info.addr());
                match cfg.connection {
                    ConnectionMode::Pool => {
                        let config = AsyncConnectionConfig::new()
                            .set_connection_timeout(Some(connect_timeout))
                            .set_response_timeout(Some(command_timeout));
                        let pool = bb8::Pool::builder()
                            .max_size(cfg.pool_size)
                            .connection_timeout(command_timeout)
                            .build(PoolManager { client, config })
                            .await?;
                        // Fail at start, not at the first call, when Redis is not there.
                        drop(tokio::time::timeout(connect_timeout * 2, pool.get()).await.map_err(within(what))??);
                        Ok(Link::Pool(pool))
                    }
                    ConnectionMode::Shared => {
                        let manager = tokio::time::timeout(
                            connect_timeout * 2,
                            ConnectionManager::new_with_config(client, manager_config(cfg)),
                        )
                        .await
                        .map_err(within(what))??;
                        Ok(Link::Shared(manager))
                    }
                }
            }
            Target::Cluster(seeds) => {
                let mut builder = ClusterClientBuilder::new(seeds.clone())
                    .connection_timeout(connect_timeout)
                    .response_timeout(command_timeout);
                if let Some(certs) = certs {
                    builder = builder.certs(certs);
                }
                let client = builder.build()?;
                let what = format!("Redis Cluster through {} seed(s)", seeds.len());
                let conn = tokio::time::timeout(connect_timeout * 2, client.get_async_connection())
                    .await
                    .map_err(within(what))??;
                Ok(Link::Cluster(conn))
            }
            Target::Sentinel { sentinels, master, node, tls } => {
                let mut builder = SentinelClientBuilder::new(sentinels.clone(), master, SentinelServerType::Master)?
                    .set_client_to_redis_db(node.db());
                if let Some(user) = node.username() {
                    builder = builder.set_client_to_redis_username(user);
                }
                if let Some(password) = node.password() {
                    builder = builder.set_client_to_redis_password(password);
                }
                if let Some(user) = &cfg.sentinel_username {
                    builder = builder.set_client_to_sentinel_username(user);
                }
                if let Some(password) = &cfg.sentinel_password {
                    builder = builder.set_client_to_sentinel_password(password);
                }
                if *tls {
                    builder = builder
                        .set_client_to_redis_tls_mode(TlsMode::Secure)
                        .set_client_to_sentinel_tls_mode(TlsMode::Secure);
                    if let Some(certs) = certs {
                        builder = builder
                            .set_client_to_redis_certificates(certs.clone())
                            .set_client_to_sentinel_certificates(certs);
                    }
                }
                let sentinel = SentinelMaster {
                    client: tokio::sync::Mutex::new(builder.build()?),
                    config: manager_config(cfg),
                    limit: connect_timeout * 2,
                    current: RwLock::new(None),
                    generation: AtomicU64::new(0),
                    resolving: AtomicBool::new(false),
                    name: master.clone(),
                };
                let sentinel = Arc::new(sentinel);
                sentinel.resolve().await?;
                Ok(Link::Sentinel(sentinel))
            }
        }
    }

    pub async fn conn(&self) -> Result<Conn> {
        match &self.link {
            Link::Pool(pool) => Ok(Conn::Pooled(pool.get_owned().await?)),
            Link::Shared(manager) => Ok(Conn::Shared(manager.clone())),
            Link::Cluster(conn) => Ok(Conn::Cluster(conn.clone())),
            Link::Sentinel(sentinel) => {
                let (manager, generation, _) = sentinel.current()?;
                Ok(Conn::Sentinel(manager, sentinel.clone(), generation))
            }
        }
    }

    /// After a change on `conn` to the slot of `key`, waits until `redis.min_replicas_ack`
    /// replicas hold it (WAIT on the same connection, so it covers the change; on a cluster,
    /// routed to the key's primary). Without the setting, returns at once.
    pub async fn replicated(&self, conn: &mut Conn, key: &str) -> Result<()> {
        use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
        let Some((replicas, timeout_ms)) = self.durability else { return Ok(()) };
        let mut wait = redis::cmd("WAIT");
        wait.arg(replicas).arg(timeout_ms);
        let acked: i64 = match conn {
            Conn::Cluster(cluster) => {
                let route = Route::new(slot(key), SlotAddr::Master);
                let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
                let acked = cluster.route_command(wait, routing).await?.extract_error()?;
                redis::from_redis_value(acked).map_err(redis::RedisError::from)?
            }
            conn => wait.query_async(conn).await?,
        };
        if acked < replicas as i64 {
            metrics::counter!("baton_replication_timeouts_total").increment(1);
            return Err(Error::NotReplicated(format!(
                "the change is applied on the primary but {acked} of the {replicas} replicas redis.min_replicas_ack asks \
                 for confirmed it within {timeout_ms}ms; a failover now could lose it"
            )));
        }
        Ok(())
    }

    /// Whether this is Redis Cluster (sharded pub/sub, one command per slot).
    pub fn is_cluster(&self) -> bool {
        matches!(self.link, Link::Cluster(_))
    }

    /// Runs commands that may live in different slots and answers in order: one pipeline on one
    /// node, concurrent commands on a cluster (a cluster pipeline must stay in one slot).
    pub async fn each(&self, commands: Vec<Cmd>) -> Result<Vec<Value>> {
        if commands.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.conn().await?;
        if let Conn::Cluster(cluster) = &conn {
            let calls = commands.iter().map(|cmd| {
                let mut c = cluster.clone();
                async move { c.req_packed_command(cmd).await.and_then(Value::extract_error) }
            });
            return Ok(futures::future::try_join_all(calls).await?);
        }
        let mut pipe = redis::pipe();
        for cmd in commands {
            pipe.add_command(cmd);
        }
        Ok(pipe.query_async(&mut conn).await?)
    }

    /// Like [`Redis::each`] for commands of one key each (`keys[i]` is the key of
    /// `commands[i]`), but each may fail alone (a cluster shard down); on one node the pipeline
    /// answers or fails as a whole. Plus the Redis clock (TIME, ms), read on the node of a key
    /// whose command was answered.
    pub async fn each_settled(&self, keys: &[&str], commands: Vec<Cmd>) -> Result<(i64, Vec<Result<Value>>)> {
        use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
        let Link::Cluster(cluster) = &self.link else {
            let mut all = vec![redis::cmd("TIME")];
            all.extend(commands);
            let mut answers = self.each(all).await?.into_iter();
            let now = answers.next().map(time_ms).transpose()?.unwrap_or_default();
            return Ok((now, answers.map(Ok).collect()));
        };
        let calls = commands.iter().map(|cmd| {
            let mut c = cluster.clone();
            async move { c.req_packed_command(cmd).await.and_then(Value::extract_error).map_err(Error::from) }
        });
        let answers = futures::future::join_all(calls).await;
        let mut last = Error::Unavailable("no shard answered".into());
        for (key, _) in keys.iter().zip(&answers).filter(|(_, a)| a.is_ok()) {
            let route = Route::new(slot(key), SlotAddr::Master);
            let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
            match cluster.clone().route_command(redis::cmd("TIME"), routing).await {
                Ok(now) => return Ok((time_ms(now)?, answers)),
                Err(e) => last = e.into(),
            }
        }
        Err(last)
    }

    /// Every primary, for commands that must visit each (SCAN): a cluster's by address, or
    /// `[None]`, the one node itself. Pass each to [`Redis::on_node`].
    pub async fn primaries(&self) -> Result<Vec<Option<(String, u16)>>> {
        let Link::Cluster(conn) = &self.link else { return Ok(vec![None]) };
        let mut conn = conn.clone();
        let nodes: String = redis::cmd("CLUSTER").arg("NODES").query_async(&mut conn).await?;
        Ok(nodes
            .lines()
            .filter(|line| {
                let flags = line.split(' ').nth(2).unwrap_or("");
                flags.split(',').any(|f| f == "master") && !flags.contains("fail") && !flags.contains("noaddr")
            })
            .filter_map(|line| {
                // "<id> <ip>:<port>@<cport>[,<hostname>] <flags> …"
                let addr = line.split(' ').nth(1)?.split(['@', ',']).next()?;
                let (host, port) = addr.rsplit_once(':')?;
                Some(Some((host.to_string(), port.parse().ok()?)))
            })
            .collect())
    }

    /// Runs `cmd` on one of [`Redis::primaries`].
    pub async fn on_node(&self, node: Option<&(String, u16)>, cmd: &Cmd) -> Result<Value> {
        match (&self.link, node) {
            (Link::Cluster(_), Some((host, port))) => {
                // On Baton's own connection to that node (see `node_conn`).
                let node: Arc<str> = format!("{host}:{port}").into();
                let answer = self.node_conn(&node).await?.req_packed_command(cmd).await.and_then(Value::extract_error);
                if answer.as_ref().is_err_and(|e| e.is_io_error() || e.is_connection_dropped() || e.is_timeout()) {
                    self.probes.lock().expect("node connections").remove(&node);
                }
                Ok(answer?)
            }
            _ => {
                let mut conn = self.conn().await?;
                Ok(conn.req_packed_command(cmd).await.and_then(Value::extract_error)?)
            }
        }
    }
}

/// Milliseconds of a TIME reply.
fn time_ms(reply: Value) -> Result<i64> {
    let (secs, micros): (i64, i64) =
        redis::from_redis_value(reply).map_err(|e| Error::Internal(format!("TIME: {e}")))?;
    Ok(secs * 1000 + micros / 1000)
}

/// The (first, last, primary `host:port`) ranges of a CLUSTER SLOTS reply.
fn parse_slots(reply: Value) -> Vec<(u16, u16, Arc<str>)> {
    let Value::Array(ranges) = reply else { return Vec::new() };
    ranges
        .into_iter()
        .filter_map(|range| {
            let Value::Array(parts) = range else { return None };
            let first: u16 = redis::from_redis_value_ref(parts.first()?).ok()?;
            let last: u16 = redis::from_redis_value_ref(parts.get(1)?).ok()?;
            let Value::Array(primary) = parts.get(2)? else { return None };
            let host: String = redis::from_redis_value_ref(primary.first()?).ok()?;
            let port: u16 = redis::from_redis_value_ref(primary.get(1)?).ok()?;
            Some((first, last, Arc::from(format!("{host}:{port}"))))
        })
        .collect()
}

/// The Redis Cluster slot of a key: CRC16 of its hash tag (or of the whole key), mod 16384.
pub fn slot(key: &str) -> u16 {
    let bytes = key.as_bytes();
    let tagged = key.find('{').and_then(|open| {
        let close = key[open + 1..].find('}')?;
        (close > 0).then(|| &bytes[open + 1..open + 1 + close])
    });
    crc16::State::<crc16::XMODEM>::calculate(tagged.unwrap_or(bytes)) % 16384
}

/// The TLS certificates of `redis.tls_*`, read at start (None: the system's roots, no client
/// certificate).
fn certificates(cfg: &RedisConfig, target: &Target) -> Result<Option<TlsCertificates>> {
    let read = |key: &str, path: &Option<String>| -> Result<Option<Vec<u8>>> {
        path.as_ref().map(|p| std::fs::read(p).map_err(|e| Error::Config(format!("redis.{key} {p}: {e}")))).transpose()
    };
    let root_cert = read("tls_ca_file", &cfg.tls_ca_file)?;
    let cert = read("tls_cert_file", &cfg.tls_cert_file)?;
    let key = read("tls_key_file", &cfg.tls_key_file)?;
    let client_tls = match (cert, key) {
        (Some(client_cert), Some(client_key)) => Some(ClientTlsConfig { client_cert, client_key }),
        (None, None) => None,
        _ => return Err(Error::Config("redis.tls_cert_file and redis.tls_key_file go together".into())),
    };
    if root_cert.is_none() && client_tls.is_none() {
        return Ok(None);
    }
    if !target.tls() {
        return Err(Error::Config("redis.tls_* files are set but the redis url is not rediss:// (or rediss+…)".into()));
    }
    Ok(Some(TlsCertificates { client_tls, root_cert }))
}

fn manager_config(cfg: &RedisConfig) -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(Some(Duration::from_millis(cfg.connect_timeout_ms)))
        .set_response_timeout(Some(Duration::from_millis(cfg.command_timeout_ms)))
        .set_number_of_retries(1)
}

/// The master a set of sentinels names, and a shared connection to it. Calls that find it gone
/// (connection refused or lost) or demoted (READONLY) make it ask the sentinels again, once at a
/// time, until they name a master that answers.
pub struct SentinelMaster {
    client: tokio::sync::Mutex<SentinelClient>,
    config: ConnectionManagerConfig,
    limit: Duration,
    current: RwLock<Option<(ConnectionManager, u64, redis::Client)>>,
    generation: AtomicU64,
    resolving: AtomicBool,
    name: String,
}

impl SentinelMaster {
    /// The master's connection, its generation and a client for more connections to it.
    fn current(&self) -> Result<(ConnectionManager, u64, redis::Client)> {
        self.current
            .read()
            .expect("sentinel lock")
            .clone()
            .ok_or_else(|| Error::Unavailable(format!("no master for {} yet", self.name)))
    }

    /// Asks the sentinels for the master and connects to it (keeping the connection it has
    /// when they name the same master: that one reconnects by itself).
    async fn resolve(&self) -> Result<()> {
        let attempt = async {
            let client = self.client.lock().await.async_get_client().await?;
            let addr = client.get_connection_info().addr().to_string();
            let same = self
                .current
                .read()
                .expect("sentinel lock")
                .as_ref()
                .is_some_and(|(_, _, c)| c.get_connection_info().addr().to_string() == addr);
            if same {
                return Ok(None);
            }
            let manager = ConnectionManager::new_with_config(client.clone(), self.config.clone()).await?;
            Ok::<_, redis::RedisError>(Some((manager, addr, client)))
        };
        let resolved = tokio::time::timeout(self.limit, attempt)
            .await
            .map_err(|_| Error::Unavailable(format!("asking the sentinels for {} timed out", self.name)))??;
        let Some((manager, addr, client)) = resolved else { return Ok(()) };
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        tracing::info!(master = self.name, addr, generation, "connected to the master the sentinels name");
        *self.current.write().expect("sentinel lock") = Some((manager, generation, client));
        Ok(())
    }

    /// A call on generation `generation` found the master gone or demoted: ask again, unless a
    /// newer master is already known or someone is already asking.
    fn stale(self: &Arc<Self>, generation: u64) {
        if generation != self.generation.load(Ordering::SeqCst) || self.resolving.swap(true, Ordering::SeqCst) {
            return;
        }
        tracing::warn!(master = self.name, "the master stopped answering or is a replica now; asking the sentinels");
        let weak: Weak<Self> = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut backoff = crate::client::Backoff::between(Duration::from_millis(100), Duration::from_secs(2));
            loop {
                let Some(this) = weak.upgrade() else { return };
                match this.resolve().await {
                    Ok(()) => {
                        this.resolving.store(false, Ordering::SeqCst);
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(master = this.name, error = %e, "sentinels name no master that answers yet")
                    }
                }
                drop(this);
                tokio::time::sleep(backoff.next_delay()).await;
            }
        });
    }

    /// Whether a call's result says the master is gone or no longer the master.
    fn suspect<T>(result: &RedisResult<T>, value: Option<&Value>) -> bool {
        let readonly = |code: Option<&str>| matches!(code, Some("READONLY") | Some("MASTERDOWN"));
        match result {
            Err(e) => {
                e.is_io_error()
                    || e.is_connection_refusal()
                    || e.is_connection_dropped()
                    || e.is_timeout()
                    || readonly(e.code())
            }
            Ok(_) => matches!(value, Some(Value::ServerError(e)) if readonly(Some(e.code()))),
        }
    }
}

/// Makes the pool's connections with Baton's connect and command timeouts (bb8-redis's own
/// manager uses redis-rs's defaults, whatever `redis.*_timeout_ms` say).
pub struct PoolManager {
    client: redis::Client,
    config: AsyncConnectionConfig,
}

impl bb8::ManageConnection for PoolManager {
    type Connection = MultiplexedConnection;
    type Error = redis::RedisError;

    async fn connect(&self) -> Result<Self::Connection, Self::Error> {
        self.client.get_multiplexed_async_connection_with_config(&self.config).await
    }

    async fn is_valid(&self, conn: &mut Self::Connection) -> Result<(), Self::Error> {
        redis::cmd("PING").query_async::<String>(conn).await.map(drop)
    }

    fn has_broken(&self, _: &mut Self::Connection) -> bool {
        false
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Pooled(c) => c.req_packed_command(cmd),
            Conn::Shared(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
            Conn::Sentinel(c, sentinel, generation) => Box::pin(async move {
                let result = c.req_packed_command(cmd).await;
                if SentinelMaster::suspect(&result, result.as_ref().ok()) {
                    sentinel.stale(*generation);
                }
                result
            }),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Pooled(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Shared(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Sentinel(c, sentinel, generation) => Box::pin(async move {
                let result = c.req_packed_commands(pipeline, offset, count).await;
                let first = result.as_ref().ok().and_then(|values| values.first());
                if SentinelMaster::suspect(&result, first) {
                    sentinel.stale(*generation);
                }
                result
            }),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Pooled(c) => c.get_db(),
            Conn::Shared(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
            Conn::Sentinel(c, ..) => c.get_db(),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn slots_follow_redis_cluster() {
        // Values of CLUSTER KEYSLOT; the hash tag alone counts when present and non-empty.
        assert_eq!(super::slot("foo"), 12182);
        assert_eq!(super::slot("{foo}.bar"), 12182);
        assert_eq!(super::slot("123456789"), 12739);
        assert_eq!(super::slot("{}foo"), super::slot("{}foo"));
        assert_ne!(super::slot("{}foo"), super::slot("foo"));
    }
}

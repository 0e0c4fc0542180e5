//! Assembles one Baton replica: Redis connection, store, wake-ups, the gRPC services
//! (Agent, Leader, Claim, Schedule and Admin services, KEDA's external scaler, grpc.health.v1,
//! reflection), and graceful shutdown.
//!
//! `run` takes its listener and shutdown signal as arguments, so the binary and the tests share
//! the same code.

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use futures::FutureExt;

use tokio::net::TcpListener;
use tokio_util::{sync::CancellationToken, task::TaskTracker};
use tonic::{server::NamedService, transport::server::TcpIncoming};
use tonic_health::{server::HealthReporter, ServingStatus};

use crate::pb;

use crate::admin::service::AdminServiceImpl;

use crate::config::Config;

use crate::rpc::auth::{AuthLayer, Identities, Keyring};

use crate::edge::keda::{Backlogs, KedaScalerImpl};

use crate::edge::keda::pb::external_scaler_server::ExternalScalerServer;

use crate::edge::tls::ServerTls;

use crate::elections::service::LeaderServiceImpl;

use crate::error::{Error, Result};

use crate::pb::admin_service_server::AdminServiceServer;

use crate::pb::agent_service_server::AgentServiceServer;

use crate::pb::claim_service_server::ClaimServiceServer;

use crate::pb::leader_service_server::LeaderServiceServer;

use crate::pb::schedule_service_server::ScheduleServiceServer;

use crate::pools::service::ClaimServiceImpl;

use crate::queues::service::AgentServiceImpl;

use crate::receivers::service::ScheduleServiceImpl;

use crate::runtime::monitor;

use crate::store::wake::Wakeups;

use crate::admin::store::Admin;
use crate::elections::store::Elections;
use crate::flows::store::Flows;
use crate::pools::store::Pools;
use crate::queues::store::Queues;
use crate::receivers::store::Receivers;
use crate::store::{Core, Policy, Redis};

/// The checks of a configuration that need more than the configuration itself: the tokens
/// and mutual-TLS identities of `auth` parse, and `redis_url` is a form Baton can reach.
/// `baton serve` and `baton config` run them after `Config::from_figment`.
pub fn check_config(config: &Config) -> Result<()> {
    Identities::from_config(&config.auth)?;
    if let Some(url) = &config.redis_url {
        crate::store::target::Target::parse(url)?;
    }
    Ok(())
}

/// Serves gRPC on `listener` against the Redis at `redis_url` until `shutdown` resolves, then
/// shuts down gracefully: long polls answer at once, in-flight calls finish, all within
/// `shutdown_timeout_ms`. The console, when `console.listen` is set, on its own address.
///
/// The entry point of `baton serve`, public for any program that serves Baton in process: the
/// bench and the integration tests run replicas this way, on listeners they bound to port 0.
pub async fn run(
    config: Arc<Config>,
    redis_url: &str,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<()> {
    let console = crate::edge::console::bind(&config.console).await;
    run_with_console(config, redis_url, listener, console, shutdown).await
}

/// `run`, with the console on `console` (a listener the caller bound, e.g. on port 0), or none:
/// for a caller that needs the console's bound address (the console's integration tests).
pub async fn run_with_console(
    config: Arc<Config>,
    redis_url: &str,
    listener: TcpListener,
    console: Option<TcpListener>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<()> {
    // Credentials and certificates first: a bad file stops the start before Redis is touched.
    let identities = Keyring::new(Identities::from_config(&config.auth)?);
    let tls = if config.tls.enabled() { Some(ServerTls::grpc(&config.tls, config.web.enabled())?) } else { None };
    let shards = config.sharding.shards()?;
    let shutdown = shutdown.shared();
    let Some(core) = open_store(&config, redis_url, shards, shutdown.clone()).await? else {
        tracing::info!("shut down while waiting for Redis");
        return Ok(());
    };
    let stores = Stores::new(core);
    let store = stores.core.clone();
    let feed = store.feed();
    let stopping = CancellationToken::new();
    let tasks = TaskTracker::new();

    let wakeups = Wakeups::new(store.keys().clone());
    tasks.spawn(wakeups.clone().run(feed, stopping.clone()));

    let (health, health_service) = tonic_health::server::health_reporter();

    // The rich error types are served too, so grpcurl prints ErrorInfo and BadRequest details.
    let descriptors = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_types::pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(crate::keda_pb::FILE_DESCRIPTOR_SET)
    };
    let reflection = descriptors().build_v1().map_err(|e| Error::Internal(e.to_string()))?;
    let reflection_alpha = descriptors().build_v1alpha().map_err(|e| Error::Internal(e.to_string()))?;

    crate::runtime::sweep::spawn(
        stores.admin.clone(),
        stores.elections.clone(),
        wakeups.clone(),
        config.clone(),
        stopping.clone(),
        &tasks,
    );
    let takeover = (config.flows.takeover_ms > 0)
        .then(|| (wakeups.outboxes(), std::time::Duration::from_millis(config.flows.takeover_ms)));
    tasks.spawn(stores.flows.clone().run_flows(
        std::time::Duration::from_millis(config.flows.sweep_interval_ms),
        takeover,
        stopping.clone(),
    ));
    monitor::spawn(stores.admin.clone(), wakeups.clone(), config.clone(), stopping.clone(), &tasks);

    let admission = crate::rpc::admission::Admission::new(&config.limits);
    let agents = AgentServiceServer::new(AgentServiceImpl::new(
        stores.queues.clone(),
        wakeups.clone(),
        config.clone(),
        stopping.clone(),
        admission.clone(),
    ));
    let leaders = LeaderServiceServer::new(LeaderServiceImpl::new(
        stores.elections.clone(),
        wakeups.clone(),
        config.clone(),
        stopping.clone(),
    ));
    let claims = ClaimServiceServer::new(ClaimServiceImpl::new(
        stores.pools.clone(),
        wakeups.clone(),
        config.clone(),
        stopping.clone(),
    ));
    if let Some(listener) = console {
        // The console calls the same service implementations, in-process (see console.rs).
        let console = crate::edge::console::Console {
            admin: AdminServiceImpl::new(stores.admin.clone(), config.clone()),
            agents: AgentServiceImpl::new(
                stores.queues.clone(),
                wakeups.clone(),
                config.clone(),
                stopping.clone(),
                admission.clone(),
            ),
            leaders: LeaderServiceImpl::new(
                stores.elections.clone(),
                wakeups.clone(),
                config.clone(),
                stopping.clone(),
            ),
            claims: ClaimServiceImpl::new(stores.pools.clone(), wakeups.clone(), config.clone(), stopping.clone()),
            schedules: ScheduleServiceImpl::new(
                stores.receivers.clone(),
                wakeups.clone(),
                config.clone(),
                stopping.clone(),
            ),
            identities: identities.clone(),
            read_only: config.console.read_only,
            store: store.clone(),
            history: Default::default(),
        };
        tasks.spawn(crate::edge::console::serve(console, listener, stopping.clone()));
    }
    let schedules = ScheduleServiceServer::new(ScheduleServiceImpl::new(
        stores.receivers.clone(),
        wakeups.clone(),
        config.clone(),
        stopping.clone(),
    ));
    let admin = AdminServiceServer::new(AdminServiceImpl::new(stores.admin.clone(), config.clone()));
    let keda = ExternalScalerServer::new(KedaScalerImpl::new(
        Backlogs { queues: stores.queues.clone(), pools: stores.pools.clone(), receivers: stores.receivers.clone() },
        wakeups.clone(),
        stopping.clone(),
    ));

    // grpc.health.v1 answers for the whole server ("") and for each Baton service by its name.
    let names = vec![
        "",
        name_of(&agents),
        name_of(&leaders),
        name_of(&claims),
        name_of(&schedules),
        name_of(&admin),
        name_of(&keda),
    ];
    set_health(&health, &names, ServingStatus::Serving).await;
    let probes = Probes {
        healthy: Duration::from_millis(config.health.probe_interval_ms.max(1)),
        sick: Duration::from_millis(config.circuit_breaker.probe_interval_ms.max(1)),
    };
    tasks.spawn(watch_redis(store.clone(), health, names, probes, stopping.clone()));

    let addr = listener.local_addr().map_err(|e| Error::Config(e.to_string()))?;
    let authenticated = identities.load().enabled();
    tracing::info!(%addr, tls = tls.is_some(), mutual_tls = !config.tls.client_ca_file.is_empty(), authenticated, "baton serving gRPC");
    if !addr.ip().is_loopback() && (tls.is_none() || !authenticated) {
        tracing::warn!(
            %addr,
            tls = tls.is_some(),
            authenticated,
            "listening beyond loopback without TLS or without authentication: anyone who reaches this port \
             can read and change every queue, pool, receiver and election (see docs/security.md)"
        );
    }
    // Listening for SIGHUP from here on, before the first call is served.
    let hangup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::warn!(error = %e, "cannot listen for SIGHUP; files are reloaded when they change");
            None
        }
    };
    tasks.spawn(reload(config.clone(), tls.clone(), identities.clone(), hangup, stopping.clone()));

    let graceful = {
        let stopping = stopping.clone();
        async move {
            shutdown.await;
            tracing::info!("shutting down: answering long polls, finishing in-flight calls");
            // watch_redis marks every service NOT_SERVING as it sees this.
            stopping.cancel();
        }
    };
    let router = tonic::transport::Server::builder()
        // Per connection: streams open at once, and the size of a call's metadata.
        .max_concurrent_streams(config.limits.max_concurrent_streams)
        .http2_max_header_list_size(config.limits.max_header_list_bytes)
        // Calls their callers abandon (long polls and claims cut by client timeouts) before
        // a busy server accepted them: h2 closes the whole connection, every other call on it
        // too, after 20 of those (its guard against rapid-reset floods). A fleet shares
        // connections, so the bound is the streams a connection may have open at once.
        .http2_max_pending_accept_reset_streams(Some(config.limits.max_concurrent_streams as usize))
        // Browsers and curl (gRPC-Web, JSON) over HTTP/1.1 too, turned into gRPC calls that meet
        // every layer below (web.rs).
        .accept_http1(config.web.enabled())
        .layer(crate::edge::web::WebLayer::new(&config.web, identities.clone())?)
        // A span per call when OpenTelemetry is on (rejected calls too), then authentication
        // and the method's permission, before any service sees the call.
        .layer(crate::trace::TraceLayer)
        // Every status leaves with an ErrorInfo, a call's grpc-timeout included.
        .layer(crate::edge::status::ErrorInfoLayer)
        .layer(AuthLayer::new(identities))
        .add_service(health_service)
        .add_service(reflection)
        .add_service(reflection_alpha)
        .add_service(agents)
        .add_service(leaders)
        .add_service(claims)
        .add_service(admin)
        .add_service(schedules)
        .add_service(keda);
    type Serving<'a> = Pin<Box<dyn Future<Output = std::result::Result<(), tonic::transport::Error>> + Send + 'a>>;
    let mut serve: Serving<'_> = match tls {
        Some(tls) => Box::pin(router.serve_with_incoming_shutdown(tls.incoming(listener, stopping.clone()), graceful)),
        // TCP_NODELAY: without it a response written in two parts waits for the peer's delayed
        // ACK (~40 ms), which bench/ measured as a 44 ms floor on Acquire(max_leases=10).
        None => Box::pin(
            router.serve_with_incoming_shutdown(TcpIncoming::from(listener).with_nodelay(Some(true)), graceful),
        ),
    };
    let limit = Duration::from_millis(config.shutdown_timeout_ms);
    let result = tokio::select! {
        r = &mut serve => r.map_err(|e| Error::Internal(e.to_string())),
        _ = async { stopping.cancelled().await; tokio::time::sleep(limit).await } => {
            tracing::warn!(timeout_ms = config.shutdown_timeout_ms, "shutdown timeout reached; cutting in-flight calls");
            Ok(())
        }
    };
    stopping.cancel();
    tasks.close();
    tasks.wait().await;
    tracing::info!("baton stopped");
    result
}

/// The stores of one replica: the core, and over it one store per domain (each a clone of the
/// core and its own state), built once and handed to the services and tasks that use them.
#[derive(Clone)]
pub struct Stores {
    pub core: Core,
    pub queues: Queues,
    pub flows: Flows,
    pub pools: Pools,
    pub receivers: Receivers,
    pub elections: Elections,
    pub admin: Admin,
}

impl Stores {
    pub fn new(core: Core) -> Self {
        let flows = Flows::new(core.clone());
        let queues = Queues::new(flows.clone());
        let pools = Pools::new(core.clone());
        let receivers = Receivers::new(core.clone());
        let admin = Admin::new(queues.clone(), pools.clone(), receivers.clone());
        Self { elections: Elections::new(core.clone()), queues, flows, pools, receivers, admin, core }
    }
}

/// Connects to Redis, loads the scripts and checks Baton's access: the store, or None when
/// `shutdown` came first. A Redis that does not answer yet (a node still starting, a cluster
/// being created or settling, sentinels that name no master yet) is tried again, with a
/// warning each time and a growing pause, for up to `redis.startup_timeout_ms`; any other
/// failure (configuration, TLS certificates, ACL) stops the start at once.
async fn open_store(
    config: &Config,
    redis_url: &str,
    shards: [crate::config::ShardCounts; 3],
    shutdown: impl Future<Output = ()>,
) -> Result<Option<Core>> {
    let started = std::time::Instant::now();
    let limit = Duration::from_millis(config.redis.startup_timeout_ms);
    let mut backoff = crate::client::Backoff::between(Duration::from_millis(100), Duration::from_secs(2));
    tokio::pin!(shutdown);
    for attempt in 1.. {
        let opened = async {
            let redis = Redis::connect(redis_url, &config.redis).await?;
            let policy = Policy::new(&config.agent, &config.limits, &config.dead_letter, &config.idempotency)
                .with_flows(&config.results, &config.dedup, &config.flows);
            let store = Core::open(redis, &config.key_prefix, policy, config.circuit_breaker.clone())
                .await?
                .with_sharding(shards.clone());
            let elections = Elections::new(store.clone());
            store.check_access(|probe| async move { elections.leader(probe, false).await.map(drop) }).await?;
            Ok::<_, Error>(store)
        };
        let pause = backoff.next_delay();
        let error = match opened.await {
            Ok(store) => {
                if attempt > 1 {
                    tracing::info!(attempt, waited_ms = started.elapsed().as_millis() as u64, "Redis answers");
                }
                return Ok(Some(store));
            }
            Err(e) if not_ready_yet(&e) && started.elapsed() + pause < limit => e,
            Err(e) => return Err(e),
        };
        tracing::warn!(
            attempt,
            error = %error,
            retry_in_ms = pause.as_millis() as u64,
            gives_up_after_ms = config.redis.startup_timeout_ms,
            "Redis does not answer yet; trying again"
        );
        tokio::select! {
            _ = &mut shutdown => return Ok(None),
            _ = tokio::time::sleep(pause) => {}
        }
    }
    unreachable!("the attempts never end")
}

/// Whether a failure at start may go away by itself: Redis unreachable or not ready (a cluster
/// still settling answers CLUSTERDOWN), but not a refused TLS certificate or ACL.
fn not_ready_yet(e: &Error) -> bool {
    matches!(e, Error::Unavailable(m) if !m.starts_with(crate::error::ACL_REFUSED) && !m.starts_with(crate::store::conn::TLS_FAILED))
}

/// Reads the TLS files and the tokens file again on SIGHUP, and whenever one of them changed
/// (checked every `tls.reload_interval_ms`). New connections and calls use what was read;
/// established connections stay. A reload that fails keeps what was there and logs why.
async fn reload(
    config: Arc<Config>,
    tls: Option<Arc<ServerTls>>,
    identities: Arc<Keyring>,
    mut hangup: Option<tokio::signal::unix::Signal>,
    stopping: CancellationToken,
) {
    let mut paths: Vec<std::path::PathBuf> = tls.iter().flat_map(|t| t.paths()).map(|p| p.to_path_buf()).collect();
    if !config.auth.tokens_file.is_empty() {
        paths.push(config.auth.tokens_file.clone().into());
    }
    let stamps = crate::edge::tls::stamps;
    let mut seen = stamps(&paths);
    let interval = Duration::from_millis(config.tls.reload_interval_ms);
    loop {
        let why = tokio::select! {
            _ = stopping.cancelled() => return,
            Some(()) = async { match hangup.as_mut() { Some(h) => h.recv().await, None => std::future::pending().await } } => "SIGHUP",
            _ = async { if interval.is_zero() { std::future::pending().await } else { tokio::time::sleep(interval).await } } => {
                let now = stamps(&paths);
                if now == seen {
                    continue;
                }
                seen = now;
                "a file changed"
            }
        };
        if let Some(tls) = &tls {
            match tls.reload() {
                Ok(()) => tracing::info!(why, "TLS certificate reloaded"),
                Err(e) => tracing::error!(why, error = %e, "TLS reload failed; keeping the previous certificate"),
            }
        }
        match Identities::from_config(&config.auth) {
            Ok(ids) => {
                // Streams and long polls whose credential, permission or scope is gone end here.
                identities.store(ids);
                if config.auth.enabled() {
                    tracing::info!(why, "tokens reloaded");
                }
            }
            Err(e) => tracing::error!(why, error = %e, "tokens reload failed; keeping the previous tokens"),
        }
    }
}

/// The name a service is known by in grpc.health.v1 and reflection.
fn name_of<S: NamedService>(_: &S) -> &'static str {
    S::NAME
}

async fn set_health(health: &HealthReporter, names: &[&'static str], status: ServingStatus) {
    for name in names {
        health.set_service_status(*name, status).await;
    }
}

/// How often `watch_redis` pings Redis.
struct Probes {
    /// While every node answers and no breaker counts failures (`health.probe_interval_ms`).
    healthy: Duration,
    /// While a breaker is open or counts failures, or a node does not answer
    /// (`circuit_breaker.probe_interval_ms`).
    sick: Duration,
}

/// Keeps grpc.health.v1 true, for the whole server and every service: SERVING while some Redis
/// node answers with its breakers closed, NOT_SERVING when none does and from the start of a
/// graceful shutdown. On a cluster, one shard down leaves the replica SERVING: the other
/// shards' calls are served, the dead shard's fail fast (CIRCUIT_OPEN), and taking every
/// replica out of rotation would help nobody (they all see the same cluster); the nodes down are
/// in the log, in `baton_redis_node_up` and `baton_circuit_breaker_state` by `node`, and on the
/// console. Its pings are also the breakers' probes: while anything fails, every node is
/// pinged every `probes.sick`, and a node's first answer closes its breakers.
async fn watch_redis(
    store: Core,
    health: HealthReporter,
    names: Vec<&'static str>,
    probes: Probes,
    stopping: CancellationToken,
) {
    let mut serving = true;
    let mut down: Vec<Arc<str>> = Vec::new();
    loop {
        let calm = serving && down.is_empty() && !store.redis_failing();
        let wait = if calm { probes.healthy } else { probes.sick };
        tokio::select! {
            _ = stopping.cancelled() => break,
            _ = tokio::time::sleep(wait) => {}
            // A breaker tripped (or closed): probe at once.
            _ = store.breaker_changed() => {}
        }
        let nodes = store.probe().await;
        let up = nodes.iter().any(|n| n.answered);
        metrics::gauge!("baton_redis_up").set(if up { 1.0 } else { 0.0 });
        if stopping.is_cancelled() {
            break;
        }
        let now_down: Vec<Arc<str>> =
            nodes.iter().filter(|n| !n.answered || !n.closed).map(|n| n.node.clone()).collect();
        if now_down != down {
            let nodes_up = nodes.len() - now_down.len();
            tracing::warn!(down = ?now_down, nodes_up, "Redis nodes failing: their calls fail fast (CIRCUIT_OPEN), the others are served");
            down = now_down;
        }
        let now_serving = nodes.iter().any(|n| n.answered && n.closed);
        if now_serving != serving {
            serving = now_serving;
            tracing::warn!(redis_up = up, breaker_open = store.breaker_open(), serving, "health changed");
            let status = if serving { ServingStatus::Serving } else { ServingStatus::NotServing };
            set_health(&health, &names, status).await;
        }
    }
    set_health(&health, &names, ServingStatus::NotServing).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_config_refuses_what_config_alone_cannot_judge() {
        let mut config = Config::default();
        assert!(check_config(&config).is_ok());
        config.redis_url = Some("http://nope".into());
        assert!(check_config(&config).unwrap_err().to_string().contains("unknown scheme"));
        config.redis_url = None;
        config.auth.tokens_file = "/nonexistent/baton-tokens.toml".into();
        assert!(check_config(&config).unwrap_err().to_string().contains("auth.tokens_file"));
    }
}

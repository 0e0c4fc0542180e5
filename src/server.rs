//! Assembles one Baton replica: Redis connection, store, wake-ups, the gRPC services
//! (Agent, Leader, Claim, Schedule and Admin services, grpc.health.v1, reflection), and graceful shutdown.
//!
//! `run` takes its listener and shutdown signal as arguments, so the binary and the tests share
//! the same code.

use std::{future::Future, sync::Arc, time::Duration};

use tokio::net::TcpListener;
use tokio_util::{sync::CancellationToken, task::TaskTracker};
use tonic::transport::server::TcpIncoming;
use tonic_health::ServingStatus;

use crate::{
    config::Config,
    error::{Error, Result},
    monitor,
    pb::{
        self, admin_service_server::AdminServiceServer, agent_service_server::AgentServiceServer,
        claim_service_server::ClaimServiceServer, leader_service_server::LeaderServiceServer,
        schedule_service_server::ScheduleServiceServer,
    },
    service::{
        admin::AdminServiceImpl, agent::AgentServiceImpl, claim::ClaimServiceImpl, leader::LeaderServiceImpl,
        schedule::ScheduleServiceImpl,
    },
    store::{wake::Wakeups, Policy, Redis, Store},
    sweeper,
};

/// Serves gRPC on `listener` against the Redis at `redis_url` until `shutdown` resolves, then
/// shuts down gracefully: long polls answer at once, in-flight calls finish, all within
/// `shutdown_timeout_ms`.
pub async fn run(
    config: Arc<Config>,
    redis_url: &str,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> Result<()> {
    let redis = Redis::connect(redis_url, &config.redis).await?;
    let policy = Policy::new(&config.agent, config.limits.scan_limit, &config.dead_letter);
    let store = Store::open(redis, &config.key_prefix, policy, config.circuit_breaker.clone()).await?;
    let stopping = CancellationToken::new();
    let tasks = TaskTracker::new();

    let wakeups = Wakeups::default();
    tasks.spawn(wakeups.clone().run(redis_url.to_string(), store.keys().clone(), stopping.clone()));

    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<AgentServiceServer<AgentServiceImpl>>().await;
    health.set_serving::<LeaderServiceServer<LeaderServiceImpl>>().await;
    health.set_serving::<ClaimServiceServer<ClaimServiceImpl>>().await;
    health.set_serving::<AdminServiceServer<AdminServiceImpl>>().await;
    health.set_serving::<ScheduleServiceServer<ScheduleServiceImpl>>().await;
    let probe = Duration::from_millis(config.health.probe_interval_ms.max(1));
    tasks.spawn(watch_redis(store.clone(), health.clone(), probe, stopping.clone()));

    // The rich error types are served too, so grpcurl prints ErrorInfo and BadRequest details.
    let descriptors = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_types::pb::FILE_DESCRIPTOR_SET)
    };
    let reflection = descriptors().build_v1().map_err(|e| Error::Internal(e.to_string()))?;
    let reflection_alpha = descriptors().build_v1alpha().map_err(|e| Error::Internal(e.to_string()))?;

    sweeper::spawn(store.clone(), wakeups.clone(), config.clone(), stopping.clone(), &tasks);
    monitor::spawn(store.clone(), wakeups.clone(), config.clone(), stopping.clone(), &tasks);

    let agents = AgentServiceImpl::new(store.clone(), wakeups.clone(), config.clone(), stopping.clone());
    let leaders = LeaderServiceImpl::new(store.clone(), wakeups.clone(), config.clone(), stopping.clone());
    let claims = ClaimServiceImpl::new(store.clone(), wakeups.clone(), config.clone(), stopping.clone());
    let schedules = ScheduleServiceImpl::new(store.clone(), wakeups, config.clone(), stopping.clone());
    let admin = AdminServiceImpl::new(store.clone(), config.clone());
    let addr = listener.local_addr().map_err(|e| Error::Config(e.to_string()))?;
    tracing::info!(%addr, "baton serving gRPC");

    let graceful = {
        let stopping = stopping.clone();
        let health = health.clone();
        async move {
            shutdown.await;
            tracing::info!("shutting down: answering long polls, finishing in-flight calls");
            health.set_service_status("", ServingStatus::NotServing).await;
            stopping.cancel();
        }
    };
    let serve = tonic::transport::Server::builder()
        .add_service(health_service)
        .add_service(reflection)
        .add_service(reflection_alpha)
        .add_service(AgentServiceServer::new(agents))
        .add_service(LeaderServiceServer::new(leaders))
        .add_service(ClaimServiceServer::new(claims))
        .add_service(AdminServiceServer::new(admin))
        .add_service(ScheduleServiceServer::new(schedules))
        // TCP_NODELAY: without it a response written in two parts waits for the peer's delayed
        // ACK (~40 ms), which bench/ measured as a 44 ms floor on Acquire(max_leases=10).
        .serve_with_incoming_shutdown(TcpIncoming::from(listener).with_nodelay(Some(true)), graceful);
    tokio::pin!(serve);
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

/// Keeps grpc.health.v1 true: NOT_SERVING while Redis does not answer.
async fn watch_redis(
    store: Store,
    health: tonic_health::server::HealthReporter,
    every: Duration,
    stopping: CancellationToken,
) {
    let mut up = true;
    loop {
        tokio::select! {
            _ = stopping.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let ok = store.ping().await.is_ok();
        metrics::gauge!("baton_redis_up").set(if ok { 1.0 } else { 0.0 });
        if ok != up {
            up = ok;
            let status = if ok { ServingStatus::Serving } else { ServingStatus::NotServing };
            tracing::warn!(redis_up = ok, "redis health changed");
            health.set_service_status("", status).await;
            let services =
                ["baton.v1.AgentService", "baton.v1.LeaderService", "baton.v1.ClaimService", "baton.v1.AdminService"];
            for service in services {
                health.set_service_status(service, status).await;
            }
        }
    }
}

//! Safe defaults and truthful failure behaviour: what a user sees with no tuning when a worker
//! dies, when Redis blips, fills up or stalls, and what unknown names may cost.
//!
//! Invariant checked throughout: nothing acknowledged is lost, and a refused call changes
//! nothing.

use crate::common;

use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use baton::config::Config;

use baton::runtime::embedded::Persistence;
use common::*;
use pb::{
    admin_service_client::AdminServiceClient, claim_service_client::ClaimServiceClient,
    leader_service_client::LeaderServiceClient, schedule_service_client::ScheduleServiceClient,
};
use tonic::Code;
use tonic_health::pb::{health_check_response::ServingStatus, health_client::HealthClient, HealthCheckRequest};

/// Every name grpc.health.v1 answers for: the whole server and each Baton service.
const HEALTH_NAMES: [&str; 6] = [
    "",
    "baton.v1.AgentService",
    "baton.v1.LeaderService",
    "baton.v1.ClaimService",
    "baton.v1.ScheduleService",
    "baton.v1.AdminService",
];

async fn health_of(channel: &tonic::transport::Channel, service: &str) -> ServingStatus {
    let mut health = HealthClient::new(channel.clone());
    let req = HealthCheckRequest { service: service.into() };
    health.check(req).await.expect("health check answers").into_inner().status()
}

async fn all_health(channel: &tonic::transport::Channel, want: ServingStatus) -> bool {
    for name in HEALTH_NAMES {
        if health_of(channel, name).await != want {
            return false;
        }
    }
    true
}

// The defaults promise a killed worker's leases back within 15 s: the orphan threshold plus one
// pass, with helpers heartbeating several times per threshold. (The bench measures it.)
#[test]
fn default_recovery_bound_is_15_seconds() {
    let c = Config::default();
    let o = &c.orphan_cleanup;
    assert!(o.threshold_ms + o.interval_ms <= 15_000, "orphan threshold + pass interval: {o:?}");
    assert!(o.threshold_ms >= 3 * 3_000, "helpers heartbeat every 3 s: at least three beats per threshold");
    assert!(o.leadership_ttl_ms <= 15_000, "a dead sweeping replica is replaced within a threshold or so");
    assert!(c.zombie_cleanup.threshold_ms + c.zombie_cleanup.interval_ms <= 15_000);
}

// On default settings (no sweeper tuning), a SIGKILLed worker's leases come back in seconds,
// not minutes. The bound is loose (the bench measures the figure); the old defaults took 10–15
// minutes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_worker_on_defaults_loses_its_leases_in_seconds() {
    let mut env = Env::start().await;
    let names: Vec<String> = (0..3).map(|i| format!("job-{i}")).collect();
    register(&mut env.client, "defaults", names.iter().map(|n| agent(n, 3_600_000, 600_000)).collect()).await;
    let mut worker = Command::new(env!("CARGO_BIN_EXE_baton-worker"))
        .args(["--addr", &format!("http://{}", env.baton.addr), "--queue", "defaults", "--worker-id", "doomed"])
        .args(["--max-leases", "3", "--work-ms", "600000", "--heartbeat-ms", "3000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(worker.stdout.take().unwrap()).lines();
    for _ in 0..3 {
        let line = lines.next().expect("worker output").unwrap();
        assert!(line.contains("acquired"), "{line}");
    }
    worker.kill().unwrap();
    worker.wait().unwrap();
    let killed = Instant::now();
    let mut rescued = 0;
    while rescued < 3 {
        let req = pb::AcquireRequest {
            queue: "defaults".into(),
            worker_id: "rescuer".into(),
            max_leases: 3,
            wait: dur(60_000),
        };
        rescued += env.client.acquire(req).await.unwrap().into_inner().leases.len();
        assert!(killed.elapsed() < Duration::from_secs(60), "the 600 s lease deadlines are not what frees them");
    }
    assert!(killed.elapsed() < Duration::from_secs(45), "back in seconds on defaults: {:?}", killed.elapsed());
}

// grpc.health.v1 tells the truth for the whole server and every service: NOT_SERVING while
// Redis is down (and the breaker open), SERVING again as soon as Redis answers (the breaker's
// cooldown is far longer than the test: only the Redis probe can close it), NOT_SERVING from
// the start of a graceful shutdown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_follows_redis_and_the_breaker_and_shutdown() {
    let mut config = test_config();
    config.circuit_breaker.failure_threshold = 2;
    config.circuit_breaker.cooldown_ms = 600_000;
    config.health.probe_interval_ms = 200;
    let mut redis = TestRedis::with_persistence(Persistence::Always).await;
    let baton = TestBaton::start(&redis.url(), config).await;
    let channel = baton.channel().await;
    let mut client = baton.agents().await;
    register(&mut client, "h", vec![agent("a", 3_600_000, 60_000)]).await;
    assert!(all_health(&channel, ServingStatus::Serving).await);

    redis.kill().await;
    eventually(Duration::from_secs(30), "every service NOT_SERVING while Redis is down", || {
        all_health(&channel, ServingStatus::NotServing)
    })
    .await;
    let mut c = client.clone();
    eventually(Duration::from_secs(30), "calls fail fast with the breaker open", || {
        let req = pb::GetAgentRequest { queue: "h".into(), name: "a".into() };
        let mut c = c.clone();
        async move { matches!(c.get_agent(req).await, Err(s) if reason(&s) == "CIRCUIT_OPEN") }
    })
    .await;
    let err = c.get_agent(pb::GetAgentRequest { queue: "h".into(), name: "a".into() }).await.unwrap_err();
    let hint: u64 = err.metadata().get("grpc-retry-pushback-ms").unwrap().to_str().unwrap().parse().unwrap();
    assert!(hint <= 250, "the hint points at the next Redis probe, not the cooldown's end: {hint} ms");

    redis.restart().await;
    eventually(Duration::from_secs(30), "calls succeed again once Redis answers", || {
        let req = pb::GetAgentRequest { queue: "h".into(), name: "a".into() };
        let mut c = c.clone();
        async move { c.get_agent(req).await.is_ok() }
    })
    .await;
    eventually(Duration::from_secs(30), "every service SERVING again", || all_health(&channel, ServingStatus::Serving))
        .await;

    // Watches opened before the shutdown see every service turn NOT_SERVING.
    let mut watches = Vec::new();
    for name in HEALTH_NAMES {
        let mut health = HealthClient::new(channel.clone());
        let mut stream = health.watch(HealthCheckRequest { service: name.into() }).await.unwrap().into_inner();
        assert_eq!(stream.message().await.unwrap().unwrap().status(), ServingStatus::Serving);
        watches.push((name, stream));
    }
    let stopped = tokio::spawn(baton.stop());
    for (name, stream) in &mut watches {
        let next = tokio::time::timeout(Duration::from_secs(30), stream.message()).await;
        let status = next.expect("a status change").expect("the stream is alive").expect("a message").status();
        assert_eq!(status, ServingStatus::NotServing, "{name:?} during shutdown");
    }
    drop(watches);
    stopped.await.unwrap().unwrap();
}

// A Redis at maxmemory (noeviction) refuses writes: every call that writes answers
// RESOURCE_EXHAUSTED (reason REDIS_FULL) with a pushback hint, never INTERNAL, and changes
// nothing — not even a registry entry for a new queue, pool or receiver. Reads still answer.
#[tokio::test]
async fn a_full_redis_is_resource_exhausted_and_changes_nothing() {
    let mut env = Env::start().await;
    let channel = env.baton.channel().await;
    register(&mut env.client, "full", vec![agent("a", 3_600_000, 60_000), agent("b", 3_600_000, 60_000)]).await;
    let lease = acquire(&mut env.client, "full", "w", 1).await.remove(0);
    let mut conn = env.redis.conn().await;
    let before = env.redis.snapshot().await;
    let _: () = redis::cmd("CONFIG").arg("SET").arg("maxmemory").arg(1).query_async(&mut conn).await.unwrap();

    let mut refused: Vec<(&str, tonic::Status)> = Vec::new();
    let mut agents = env.client.clone();
    let mut claims = ClaimServiceClient::new(channel.clone());
    let mut leaders = LeaderServiceClient::new(channel.clone());
    let mut schedules = ScheduleServiceClient::new(channel.clone());
    let new_queue =
        pb::RegisterRequest { queue: "fresh".into(), agents: vec![agent("x", 1_000, 1_000)], ..Default::default() };
    refused.push(("Register", agents.register(new_queue).await.unwrap_err()));
    let beat = pb::HeartbeatRequest {
        worker_id: "w".into(),
        leases: vec![pb::LeaseRef {
            queue: "full".into(),
            name: lease.name.clone(),
            token: lease.token,
            ..Default::default()
        }],
    };
    refused.push(("Heartbeat", agents.heartbeat(beat).await.unwrap_err()));
    let offer = pb::OfferRequest {
        request_id: String::new(),
        pool: "fresh".into(),
        resources: vec![pb::Resource { id: "r1".into(), ..Default::default() }],
    };
    refused.push(("Offer", claims.offer(offer).await.unwrap_err()));
    let schedule = pb::ScheduleRequest { receiver: "fresh".into(), payload: b"p".to_vec(), ..Default::default() };
    refused.push(("Schedule", schedules.schedule(schedule).await.unwrap_err()));
    let campaign =
        pb::CampaignRequest { election: "fresh".into(), candidate_id: "c".into(), ttl: dur(10_000), wait: None };
    refused.push(("Campaign", leaders.campaign(campaign).await.unwrap_err()));
    for (rpc, status) in &refused {
        assert_eq!(status.code(), Code::ResourceExhausted, "{rpc}: {status:?}");
        assert_eq!(reason(status), "REDIS_FULL", "{rpc}");
        assert!(status.metadata().get("grpc-retry-pushback-ms").is_some(), "{rpc} carries a pushback hint");
    }
    // Reads still answer, GetHealth included (it cannot write its Redis copy).
    let got = agents.get_agent(pb::GetAgentRequest { queue: "full".into(), name: "b".into() }).await.unwrap();
    assert_eq!(got.into_inner().agent.unwrap().state(), pb::AgentState::Waiting);
    AdminServiceClient::new(channel.clone()).get_health(pb::GetHealthRequest {}).await.expect("GetHealth answers");

    let after = env.redis.snapshot().await;
    let changed: Vec<_> = after.iter().filter(|kv| !before.contains(kv)).map(|(k, _)| k.clone()).collect();
    let changed: Vec<_> = changed.into_iter().filter(|k| !k.ends_with("{registry}:health")).collect();
    assert!(changed.is_empty(), "a full Redis took no write: {changed:?}");

    // Acquire and Complete free before they add (their first write takes the agent out of
    // waiting or working), and Redis lets a script that has written go on: each may run,
    // atomically, or be refused — never INTERNAL.
    if let Err(status) = agents.complete(complete_req(&lease, pb::Outcome::Success)).await {
        assert_eq!((status.code(), reason(&status).as_str()), (Code::ResourceExhausted, "REDIS_FULL"));
    }
    let req = pb::AcquireRequest { queue: "full".into(), worker_id: "w".into(), max_leases: 1, wait: None };
    if let Err(status) = agents.acquire(req).await {
        assert_eq!((status.code(), reason(&status).as_str()), (Code::ResourceExhausted, "REDIS_FULL"));
    }
    let _: () = redis::cmd("CONFIG").arg("SET").arg("maxmemory").arg(0).query_async(&mut conn).await.unwrap();
}

// Queues, pools and receivers whose data is in Redis but not in the registries (written before
// their registry entry, by an older Baton or by hand) are found by the sweepers: a dead
// worker's lease in such a queue still comes back, and health lists all three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweepers_find_sources_missing_from_the_registries() {
    let redis = TestRedis::start().await;
    let mut quiet = test_config();
    quiet.zombie_cleanup.enabled = false;
    quiet.orphan_cleanup.enabled = false;
    quiet.purge.enabled = false;
    let first = TestBaton::start(&redis.url(), quiet).await;
    let channel = first.channel().await;
    let mut agents = first.agents().await;
    register(&mut agents, "hidden", vec![agent("job", 3_600_000, 600_000)]).await;
    assert_eq!(acquire(&mut agents, "hidden", "ghost", 1).await.len(), 1);
    let offer = pb::OfferRequest {
        request_id: String::new(),
        pool: "hidden".into(),
        resources: vec![pb::Resource { id: "r".into(), ..Default::default() }],
    };
    ClaimServiceClient::new(channel.clone()).offer(offer).await.unwrap();
    let schedule = pb::ScheduleRequest { receiver: "hidden".into(), payload: b"p".to_vec(), ..Default::default() };
    ScheduleServiceClient::new(channel.clone()).schedule(schedule).await.unwrap();
    first.stop().await.unwrap();
    let mut conn = redis.conn().await;
    for registry in ["queues", "pools", "receivers"] {
        let key = format!("baton:{{registry}}:{registry}");
        let _: i64 = redis::cmd("SREM").arg(key).arg("hidden").query_async(&mut conn).await.unwrap();
    }
    // A queue that is gone but for the liveness record of a worker (left by an older Baton).
    let _: i64 =
        redis::cmd("ZADD").arg("baton:{q:gone}:workers").arg(1).arg("old").query_async(&mut conn).await.unwrap();
    // The ghost worker was last seen long ago.
    let _: i64 =
        redis::cmd("ZADD").arg("baton:{q:hidden}:workers").arg(1).arg("ghost").query_async(&mut conn).await.unwrap();

    let mut config = test_config();
    config.orphan_cleanup.threshold_ms = 1_000;
    config.orphan_cleanup.interval_ms = 100;
    config.orphan_cleanup.leadership_ttl_ms = 1_000;
    let second = TestBaton::start(&redis.url(), config).await;
    let mut agents = second.agents().await;
    let req =
        pb::AcquireRequest { queue: "hidden".into(), worker_id: "rescuer".into(), max_leases: 1, wait: dur(60_000) };
    let leases = agents.acquire(req).await.unwrap().into_inner().leases;
    assert_eq!(leases.len(), 1, "the dead worker's lease came back");
    let health =
        AdminServiceClient::new(second.channel().await).get_health(pb::GetHealthRequest {}).await.unwrap().into_inner();
    for kind in [pb::SourceKind::Queue, pb::SourceKind::Pool, pb::SourceKind::Receiver] {
        assert!(
            health.sources.iter().any(|s| s.source.as_ref().is_some_and(|x| x.name == "hidden" && x.kind() == kind)),
            "{kind:?} 'hidden' is in health again: {:?}",
            health.sources
        );
    }
    let gone: i64 = redis::cmd("EXISTS").arg("baton:{q:gone}:workers").query_async(&mut conn).await.unwrap();
    assert_eq!(gone, 0, "the liveness record of a queue that is gone was deleted");
    second.stop().await.unwrap();
}

/// Every key, sorted, less the ones Baton keeps for itself whatever callers do (the sweeper's
/// election and the registry of elections its first term creates, its pass records, the
/// health copy).
async fn all_keys(redis: &TestRedis) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query_async(&mut redis.conn().await).await.unwrap();
    keys.retain(|k| !k.contains("{e:baton-sweeper}") && !k.ends_with("{registry}:sweeps"));
    keys.retain(|k| !k.ends_with("{registry}:elections"));
    keys.retain(|k| !k.ends_with("{registry}:health"));
    keys.sort();
    keys
}

// Calls that name a queue, pool, receiver or election that does not exist create no key: not
// worker liveness, not a counter, not a line. (One Heartbeat naming 100 unknown queues used to
// create 100 keys.)
#[tokio::test]
async fn unknown_names_create_no_keys() {
    let mut env = Env::start().await;
    let channel = env.baton.channel().await;
    register(&mut env.client, "known", vec![agent("a", 3_600_000, 60_000)]).await;
    let before = all_keys(&env.redis).await;

    let mut agents = env.client.clone();
    let ghost = |i: usize| format!("ghost-{i}");
    let req = pb::AcquireRequest { queue: ghost(0), worker_id: "w".into(), max_leases: 1, wait: None };
    assert!(agents.acquire(req).await.unwrap().into_inner().leases.is_empty());
    let beat = pb::HeartbeatRequest {
        worker_id: "w".into(),
        leases: (0..100)
            .map(|i| pb::LeaseRef { queue: ghost(i), name: "x".into(), token: 1, ..Default::default() })
            .collect(),
    };
    assert_eq!(agents.heartbeat(beat).await.unwrap().into_inner().lost.len(), 100);
    let fake = pb::Lease { queue: ghost(1), name: "x".into(), token: 7, ..Default::default() };
    agents.complete(complete_req(&fake, pb::Outcome::Success)).await.unwrap_err();
    let release = pb::ReleaseRequest { queue: ghost(2), name: "x".into(), token: 7, delay: None };
    agents.release(release).await.unwrap_err();
    let _ = agents.get_agent(pb::GetAgentRequest { queue: ghost(3), name: "x".into() }).await;
    agents.list_agents(pb::ListAgentsRequest { queue: ghost(4), ..Default::default() }).await.unwrap();
    agents
        .unregister(pb::UnregisterRequest { queue: ghost(5), names: vec!["x".into()], ..Default::default() })
        .await
        .unwrap();

    let mut claims = ClaimServiceClient::new(channel.clone());
    let claim = pb::ClaimRequest { pool: ghost(6), claimer_id: "c".into(), ..Default::default() };
    claims.claim(claim).await.unwrap();
    let ret =
        pb::ReturnRequest { request_id: String::new(), pool: ghost(7), resource_id: "r".into(), token: 1, reuse: true };
    claims.r#return(ret).await.unwrap_err();
    let fail = pb::FailRequest {
        request_id: String::new(),
        pool: ghost(8),
        resource_id: "r".into(),
        token: 1,
        error: "e".into(),
    };
    claims.fail(fail).await.unwrap_err();
    claims.get_pool(pb::GetPoolRequest { pool: ghost(9) }).await.unwrap();

    let mut schedules = ScheduleServiceClient::new(channel.clone());
    let _ = schedules
        .ack(pb::AckRequest { request_id: String::new(), receiver: ghost(10), id: "m".into(), token: 1 })
        .await;
    let _ = schedules.cancel(pb::CancelRequest { receiver: ghost(11), id: "m".into() }).await;

    let mut leaders = LeaderServiceClient::new(channel.clone());
    let _ = leaders.get_leader(pb::GetLeaderRequest { election: ghost(12) }).await;
    let renew = pb::RenewRequest { election: ghost(13), candidate_id: "c".into(), token: 1 };
    leaders.renew(renew).await.unwrap_err();
    let resign = pb::ResignRequest { election: ghost(14), candidate_id: "c".into(), token: 1 };
    let _ = leaders.resign(resign).await;
    let history = pb::GetElectionHistoryRequest { election: ghost(16), limit: 0 };
    assert!(leaders.get_election_history(history).await.unwrap().into_inner().terms.is_empty());
    leaders.list_elections(pb::ListElectionsRequest::default()).await.unwrap();

    let mut admin = AdminServiceClient::new(channel.clone());
    for kind in [pb::SourceKind::Queue, pb::SourceKind::Pool, pb::SourceKind::Receiver] {
        let source = Some(pb::Source { kind: kind as i32, name: ghost(15) });
        let list = pb::ListDeadLettersRequest { source: source.clone(), ..Default::default() };
        let e = admin.list_dead_letters(list).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::NotFound, "{e:?}");
        let _ = admin.retry_dead_letter(pb::RetryDeadLetterRequest { source: source.clone(), id: "x".into() }).await;
        let _ = admin.delete_dead_letter(pb::DeleteDeadLetterRequest { source, id: "x".into() }).await;
    }
    admin.purge(pb::PurgeRequest { dry_run: true }).await.unwrap();
    admin.get_health(pb::GetHealthRequest {}).await.unwrap();

    assert_eq!(all_keys(&env.redis).await, before, "no call on an unknown name created a key");
}

// A page or more of leases with a longer (exceptional) threshold at the head of `working`
// does not stall the zombie sweep: ordinary zombies behind them are still taken back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zombie_sweep_looks_past_a_page_of_exceptional_leases() {
    let mut config = test_config();
    config.zombie_cleanup.exceptional_pattern = "^long-".into();
    config.zombie_cleanup.exceptional_threshold_ms = 3_600_000;
    config.zombie_cleanup.threshold_ms = 100;
    config.zombie_cleanup.interval_ms = 100;
    config.orphan_cleanup.enabled = false;
    config.orphan_cleanup.leadership_ttl_ms = 1_000;
    let mut env = Env::with_config(config).await;
    // More than one sweep page (500) of exceptional leases, all with the earliest deadlines.
    let long: Vec<_> = (0..600).map(|i| agent(&format!("long-{i:03}"), 3_600_000, 200)).collect();
    register(&mut env.client, "z", long).await;
    assert_eq!(acquire(&mut env.client, "z", "sleepy", 600).await.len(), 600);
    register(&mut env.client, "z", vec![agent("short", 3_600_000, 1_000)]).await;
    assert_eq!(acquire(&mut env.client, "z", "sleepy", 1).await.len(), 1);
    let c = env.client.clone();
    eventually(Duration::from_secs(30), "'short' goes back to waiting as a zombie", || {
        let mut c = c.clone();
        async move {
            let a = c.get_agent(pb::GetAgentRequest { queue: "z".into(), name: "short".into() }).await.unwrap();
            a.into_inner().agent.unwrap().state() == pb::AgentState::Waiting
        }
    })
    .await;
    let long = c.clone().get_agent(pb::GetAgentRequest { queue: "z".into(), name: "long-000".into() }).await.unwrap();
    assert_eq!(long.into_inner().agent.unwrap().state(), pb::AgentState::Working, "exceptional leases kept");
}

// `redis.connection = pool` honours `redis.command_timeout_ms`: a call waits behind a Redis
// busy for 1.5 s and succeeds, where the pool's connections used to give up after redis-rs's
// default 500 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_mode_honours_the_command_timeout() {
    let mut config = test_config();
    config.redis.connection = baton::config::ConnectionMode::Pool;
    config.redis.command_timeout_ms = 20_000;
    let mut env = Env::with_config(config).await;
    register(&mut env.client, "pooled", vec![agent("a", 3_600_000, 60_000)]).await;
    let busy = env.redis.hold_busy(1_500).await;
    let got = env.client.get_agent(pb::GetAgentRequest { queue: "pooled".into(), name: "a".into() }).await;
    assert!(got.is_ok(), "{got:?}");
    busy.await.unwrap();
}

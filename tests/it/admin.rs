//! Dead letters, purge and health, through AdminService,
//! against real Redis.

use crate::common;

use std::time::Duration;

use baton::pb::{admin_service_client::AdminServiceClient, claim_service_client::ClaimServiceClient};
use common::*;
use tonic::{transport::Channel, Code};

const Q: &str = "jobs";
const P: &str = "vms";

async fn admin(env: &Env) -> AdminServiceClient<Channel> {
    AdminServiceClient::new(env.baton.channel().await)
}

async fn claims(env: &Env) -> ClaimServiceClient<Channel> {
    ClaimServiceClient::new(env.baton.channel().await)
}

fn queue() -> Option<pb::Source> {
    Some(pb::Source { kind: pb::SourceKind::Queue as i32, name: Q.into() })
}

fn pool() -> Option<pb::Source> {
    Some(pb::Source { kind: pb::SourceKind::Pool as i32, name: P.into() })
}

async fn dead_letters(a: &mut AdminServiceClient<Channel>, source: Option<pb::Source>) -> Vec<pb::DeadLetter> {
    let req = pb::ListDeadLettersRequest { source, page_size: 0, page_token: String::new() };
    a.list_dead_letters(req).await.unwrap().into_inner().dead_letters
}

/// Registers `name` with max_attempts 1 and fails it once: it lands in the dead-letter queue.
async fn dead_letter_agent(env: &mut Env, name: &str) {
    let mut a = agent(name, 60_000, 30_000);
    a.max_attempts = 1;
    a.payload = format!("payload of {name}").into_bytes();
    register(&mut env.client, Q, vec![a]).await;
    let l = acquire(&mut env.client, Q, "w", 1).await.pop().expect("due");
    assert_eq!(l.name, name);
    let mut req = complete_req(&l, pb::Outcome::Throttled);
    req.message = format!("429 for {name}");
    assert!(env.client.complete(req).await.unwrap().into_inner().dead_lettered);
}

/// Waits until the Redis clock has moved `ms` past now.
async fn let_redis_time_pass(redis: &TestRedis, ms: i64) {
    let until = redis.now_ms().await + ms;
    while redis.now_ms().await <= until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// Failures land in the right dead-letter queue with full context; a retried agent then runs
// normally; a deleted one is gone.
#[tokio::test]
async fn agent_failures_land_in_their_queue_dlq_with_context() {
    let mut env = Env::start().await;
    dead_letter_agent(&mut env, "flaky").await;
    let mut a = admin(&env).await;
    let dl = dead_letters(&mut a, queue()).await;
    assert_eq!(dl.len(), 1);
    let d = &dl[0];
    assert_eq!((d.id.as_str(), d.error_class.as_str(), d.message.as_str()), ("flaky", "THROTTLED", "429 for flaky"));
    assert_eq!((d.attempts, d.holder.as_str(), d.payload.as_slice()), (1, "w", b"payload of flaky".as_slice()));
    assert!(d.failed_at.is_some());
    let unknown = pb::ListDeadLettersRequest { source: pool(), ..Default::default() };
    let e = a.list_dead_letters(unknown).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::NotFound, "a pool nothing was offered to: {e:?}");

    let retry = pb::RetryDeadLetterRequest { source: queue(), id: "flaky".into() };
    a.retry_dead_letter(retry.clone()).await.unwrap();
    assert_eq!(a.retry_dead_letter(retry).await.unwrap_err().code(), Code::NotFound, "no longer dead-lettered");
    let l = acquire(&mut env.client, Q, "w", 1).await.pop().expect("retried agent is due at once");
    assert_eq!(l.attempt, 1, "with a clean failure streak");
    let done = env.client.complete(complete_req(&l, pb::Outcome::Success)).await.unwrap().into_inner();
    assert!(done.next_run_at.is_some(), "and runs normally");

    dead_letter_agent(&mut env, "doomed").await;
    a.delete_dead_letter(pb::DeleteDeadLetterRequest { source: queue(), id: "doomed".into() }).await.unwrap();
    let gone = env.client.get_agent(pb::GetAgentRequest { queue: Q.into(), name: "doomed".into() }).await.unwrap_err();
    assert_eq!(gone.code(), Code::NotFound);
    let again = a.delete_dead_letter(pb::DeleteDeadLetterRequest { source: queue(), id: "doomed".into() }).await;
    assert_eq!(again.unwrap_err().code(), Code::NotFound);
}

// A failed resource lands in its pool's dead-letter queue with its context, and a retry offers
// it again with its attributes.
#[tokio::test]
async fn failed_resources_land_in_their_pool_dlq_and_come_back() {
    let env = Env::start().await;
    let mut c = claims(&env).await;
    let mut r = pb::Resource { id: "vm-1".into(), attributes: Default::default() };
    r.attributes.insert("zone".into(), "eu".into());
    c.offer(pb::OfferRequest { request_id: String::new(), pool: P.into(), resources: vec![r] }).await.unwrap();
    let claim = pb::ClaimRequest {
        request_id: String::new(),
        hold: None,
        pool: P.into(),
        claimer_id: "ci".into(),
        attributes: Default::default(),
        wait: None,
    };
    let got = c.claim(claim.clone()).await.unwrap().into_inner();
    c.fail(pb::FailRequest {
        request_id: String::new(),
        pool: P.into(),
        resource_id: "vm-1".into(),
        token: got.token,
        error: "kernel panic".into(),
    })
    .await
    .unwrap();
    let mut a = admin(&env).await;
    let dl = dead_letters(&mut a, pool()).await;
    assert_eq!(dl.len(), 1);
    assert_eq!((dl[0].id.as_str(), dl[0].message.as_str(), dl[0].holder.as_str()), ("vm-1", "kernel panic", "ci"));
    assert_eq!(dl[0].attributes["zone"], "eu");
    a.retry_dead_letter(pb::RetryDeadLetterRequest { source: pool(), id: "vm-1".into() }).await.unwrap();
    let again = c.claim(claim).await.unwrap().into_inner().resource.expect("offered again");
    assert_eq!((again.id.as_str(), again.attributes["zone"].as_str()), ("vm-1", "eu"));
}

// The dead-letter size bound holds as entries are written (oldest go first, an agent with its
// definition), and the TTL holds through the purge.
#[tokio::test]
async fn dead_letter_size_and_ttl_hold() {
    let mut config = test_config();
    config.dead_letter.max_entries = 3;
    config.dead_letter.ttl_ms = 1_500;
    let mut env = Env::with_config(config).await;
    for i in 0..5 {
        dead_letter_agent(&mut env, &format!("a{i}")).await;
    }
    let mut a = admin(&env).await;
    let ids: Vec<String> = dead_letters(&mut a, queue()).await.into_iter().map(|d| d.id).collect();
    assert_eq!(ids, ["a2", "a3", "a4"], "the two oldest were dropped");
    let gone = env.client.get_agent(pb::GetAgentRequest { queue: Q.into(), name: "a0".into() }).await.unwrap_err();
    assert_eq!(gone.code(), Code::NotFound, "with their definitions");

    let_redis_time_pass(&env.redis, 1_600).await;
    let dry = a.purge(pb::PurgeRequest { dry_run: true }).await.unwrap().into_inner();
    assert_eq!(dry.items.iter().filter(|i| i.action == "REMOVED").count(), 3);
    assert_eq!(dead_letters(&mut a, queue()).await.len(), 3, "a dry run changes nothing");
    a.purge(pb::PurgeRequest { dry_run: false }).await.unwrap();
    assert!(dead_letters(&mut a, queue()).await.is_empty(), "expired dead letters are removed");
}

// Stale entries of each kind are found; a dry run reports exactly what a real run then does,
// and changes nothing.
#[tokio::test]
async fn purge_finds_each_kind_of_stale_entry() {
    let mut config = test_config();
    config.purge.max_claim_age_ms = 300;
    config.purge.max_idle_age_ms = 300;
    config.purge.max_working_age_ms = 300;
    config.zombie_cleanup.enabled = false;
    config.orphan_cleanup.enabled = false;
    config.purge.enabled = false;
    let mut env = Env::with_config(config).await;
    let mut c = claims(&env).await;
    let resources =
        ["held", "idle"].iter().map(|id| pb::Resource { id: id.to_string(), attributes: Default::default() }).collect();
    c.offer(pb::OfferRequest { request_id: String::new(), pool: P.into(), resources }).await.unwrap();
    let claim = pb::ClaimRequest {
        request_id: String::new(),
        hold: None,
        pool: P.into(),
        claimer_id: "slow".into(),
        attributes: Default::default(),
        wait: None,
    };
    let held = c.claim(claim).await.unwrap().into_inner();
    register(&mut env.client, Q, vec![agent("stuck", 60_000, 100), agent("lost", 60_000, 30_000)]).await;
    let lease = acquire(&mut env.client, Q, "w", 1).await.pop().unwrap();
    assert_eq!(lease.name, "lost");
    // Orphaned metadata: a definition in no state, offered attributes of a resource in no set,
    // a line entry with no place in line.
    let mut conn = env.redis.conn().await;
    let q = |part: &str| format!("baton:{{q:{Q}}}:{part}");
    let p = |part: &str| format!("baton:{{p:{P}}}:{part}");
    let stuck = acquire(&mut env.client, Q, "w", 1).await.pop().unwrap();
    env.client.complete(complete_req(&lease, pb::Outcome::Success)).await.unwrap();
    let _: () = redis::cmd("ZREM").arg(q("waiting")).arg("lost").query_async(&mut conn).await.unwrap();
    let _: () = redis::cmd("HSET").arg(p("resources")).arg("ghost").arg("{}").query_async(&mut conn).await.unwrap();
    let _: () = redis::cmd("HSET")
        .arg(p("lineinfo"))
        .arg("00000000000000000099")
        .arg("x|1|{}")
        .query_async(&mut conn)
        .await
        .unwrap();
    let_redis_time_pass(&env.redis, 700).await;

    let mut a = admin(&env).await;
    let before = env.redis.snapshot().await;
    let dry = a.purge(pb::PurgeRequest { dry_run: true }).await.unwrap().into_inner();
    assert!(dry.dry_run);
    assert_eq!(env.redis.snapshot().await, before, "a dry run changes nothing");
    let mut found: Vec<(String, String)> = dry.items.iter().map(|i| (i.id.clone(), i.action.clone())).collect();
    found.sort();
    let expected = [
        ("00000000000000000099", "REMOVED"),
        ("ghost", "REMOVED"),
        ("held", "DEAD_LETTERED"),
        ("idle", "DEAD_LETTERED"),
        ("lost", "REQUEUED"),
        ("stuck", "DEAD_LETTERED"),
    ];
    assert_eq!(found, expected.map(|(a, b)| (a.to_string(), b.to_string())));
    for item in &dry.items {
        assert!(!item.reason.is_empty(), "{} has a reason", item.id);
    }

    let real = a.purge(pb::PurgeRequest { dry_run: false }).await.unwrap().into_inner();
    let mut done: Vec<(String, String)> = real.items.iter().map(|i| (i.id.clone(), i.action.clone())).collect();
    done.sort();
    assert_eq!(done, found, "the real run does what the dry run reported");
    let ret = pb::ReturnRequest {
        request_id: String::new(),
        pool: P.into(),
        resource_id: "held".into(),
        token: held.token,
        reuse: true,
    };
    assert_eq!(reason(&c.r#return(ret).await.unwrap_err()), "LEASE_LOST", "a purged claim is over");
    assert_eq!(
        reason(&env.client.complete(complete_req(&stuck, pb::Outcome::Success)).await.unwrap_err()),
        "LEASE_LOST"
    );
    let lost =
        env.client.get_agent(pb::GetAgentRequest { queue: Q.into(), name: "lost".into() }).await.unwrap().into_inner();
    assert_eq!(lost.agent.unwrap().state(), pb::AgentState::Waiting, "an orphaned definition is requeued");
    assert_eq!(dead_letters(&mut a, pool()).await.len(), 2);
    let stuck_dl = dead_letters(&mut a, queue()).await;
    assert_eq!((stuck_dl[0].id.as_str(), stuck_dl[0].error_class.as_str()), ("stuck", "PURGED"));
    assert!(a.purge(pb::PurgeRequest { dry_run: true }).await.unwrap().into_inner().items.is_empty(), "nothing left");
}

// A receiver's stale entries — a dead letter past its TTL and a message in no state — are
// found by a dry run that changes nothing, and removed by the real run that follows.
#[tokio::test]
async fn a_receivers_dry_run_purge_changes_nothing() {
    use baton::pb::schedule_service_client::ScheduleServiceClient;
    const R: &str = "inbox";
    let mut config = test_config();
    config.schedule.ack_timeout_ms = 200;
    config.schedule.max_deliveries = 1;
    config.dead_letter.ttl_ms = 500;
    config.purge.enabled = false;
    let env = Env::with_config(config).await;
    let mut s = ScheduleServiceClient::new(env.baton.channel().await);
    let schedule = |payload: &str, delay_ms: u64| pb::ScheduleRequest {
        receiver: R.into(),
        payload: payload.as_bytes().to_vec(),
        when: Some(pb::schedule_request::When::Delay(dur(delay_ms).unwrap())),
        ..Default::default()
    };
    let dead = s.schedule(schedule("never acked", 0)).await.unwrap().into_inner().id;
    let lost = s.schedule(schedule("in no state", 3_600_000)).await.unwrap().into_inner().id;
    // Delivered once and never acked: dead-lettered once its ack timeout passes.
    let sub = pb::SubscribeRequest { receiver: R.into(), consumer_id: "slow".into(), max_in_flight: 1 };
    let mut stream = s.subscribe(sub).await.unwrap().into_inner();
    let m = tokio::time::timeout(Duration::from_secs(20), stream.message()).await.expect("delivered").unwrap();
    assert_eq!(m.unwrap().id, dead);
    let mut a = admin(&env).await;
    let source = Some(pb::Source { kind: pb::SourceKind::Receiver as i32, name: R.into() });
    eventually(Duration::from_secs(20), "the unacked message is dead-lettered", || {
        let (mut a, source) = (a.clone(), source.clone());
        async move { !dead_letters(&mut a, source).await.is_empty() }
    })
    .await;
    drop(stream);
    let mut conn = env.redis.conn().await;
    let _: () =
        redis::cmd("ZREM").arg(format!("baton:{{r:{R}}}:scheduled")).arg(&lost).query_async(&mut conn).await.unwrap();
    let_redis_time_pass(&env.redis, 600).await;

    let before = env.redis.snapshot().await;
    let dry = a.purge(pb::PurgeRequest { dry_run: true }).await.unwrap().into_inner();
    assert!(dry.dry_run);
    assert_eq!(env.redis.snapshot().await, before, "a dry run changes nothing");
    let in_receiver = |items: &[pb::PurgedItem]| {
        let mut found: Vec<(String, String)> =
            items.iter().filter(|i| i.source == source).map(|i| (i.id.clone(), i.action.clone())).collect();
        found.sort();
        found
    };
    let mut expected = vec![(dead.clone(), "REMOVED".to_string()), (lost.clone(), "REMOVED".to_string())];
    expected.sort();
    assert_eq!(in_receiver(&dry.items), expected);

    let real = a.purge(pb::PurgeRequest { dry_run: false }).await.unwrap().into_inner();
    assert_eq!(in_receiver(&real.items), expected, "the real run does what the dry run reported");
    assert!(dead_letters(&mut a, source.clone()).await.is_empty(), "the expired dead letter is gone");
    let meta: Vec<String> =
        redis::cmd("HKEYS").arg(format!("baton:{{r:{R}}}:meta")).query_async(&mut conn).await.unwrap();
    assert!(meta.is_empty(), "the message in no state is gone: {meta:?}");
    assert!(in_receiver(&a.purge(pb::PurgeRequest { dry_run: true }).await.unwrap().into_inner().items).is_empty());
}

// The auto-purge sweeper runs by itself on the elected replica.
#[tokio::test]
async fn auto_purge_runs_by_itself() {
    let mut config = test_config();
    config.purge.interval_ms = 100;
    config.purge.max_claim_age_ms = 200;
    config.orphan_cleanup.leadership_ttl_ms = 1_000;
    let env = Env::with_config(config).await;
    let mut c = claims(&env).await;
    c.offer(pb::OfferRequest {
        request_id: String::new(),
        pool: P.into(),
        resources: vec![pb::Resource { id: "r".into(), attributes: Default::default() }],
    })
    .await
    .unwrap();
    let claim = pb::ClaimRequest {
        request_id: String::new(),
        hold: None,
        pool: P.into(),
        claimer_id: "x".into(),
        attributes: Default::default(),
        wait: None,
    };
    c.claim(claim).await.unwrap();
    let mut a = admin(&env).await;
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while dead_letters(&mut a, pool()).await.is_empty() {
        assert!(std::time::Instant::now() < until, "the purge sweeper never ran");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// Health checks the first `health.max_queues` queues by name. It reads the whole registry
// only when the registry changed: a steady check costs no SMEMBERS, and a queue registered
// since (here one that sorts first) is seen at the next check.
#[tokio::test]
async fn health_reads_the_registry_only_when_it_changed() {
    let mut config = test_config();
    config.health.max_queues = 2;
    config.zombie_cleanup.enabled = false;
    config.orphan_cleanup.enabled = false;
    config.purge.enabled = false;
    let env = Env::with_config(config).await;
    let mut a = admin(&env).await;
    for q in ["c", "d", "e"] {
        register(&mut env.client.clone(), q, vec![agent("x", 60_000, 60_000)]).await;
    }
    let mut conn = env.redis.conn().await;
    let smembers = |info: String| -> u64 {
        info.lines()
            .find(|l| l.starts_with("cmdstat_smembers:"))
            .and_then(|l| l.split("calls=").nth(1)?.split(',').next()?.parse().ok())
            .unwrap_or(0)
    };
    let names =
        |h: pb::GetHealthResponse| -> Vec<String> { h.sources.into_iter().map(|s| s.source.unwrap().name).collect() };
    let h = a.get_health(pb::GetHealthRequest {}).await.unwrap().into_inner();
    assert_eq!(names(h), ["c", "d"]);
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(&mut conn).await.unwrap();
    let before = smembers(info);
    for _ in 0..3 {
        let h = a.get_health(pb::GetHealthRequest {}).await.unwrap().into_inner();
        assert_eq!(names(h), ["c", "d"]);
    }
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(&mut conn).await.unwrap();
    assert_eq!(smembers(info), before, "a steady health check read the whole registry");

    register(&mut env.client.clone(), "a", vec![agent("x", 60_000, 60_000)]).await;
    let h = a.get_health(pb::GetHealthRequest {}).await.unwrap().into_inner();
    assert_eq!(names(h), ["a", "c"], "a queue registered since the last check");
}

// Health moves HEALTHY → DEGRADED → UNHEALTHY as thresholds are crossed, and back; it is in
// the Redis hash too.
#[tokio::test]
async fn health_follows_the_thresholds() {
    let mut config = test_config();
    config.health.dead_letter_warning = 2;
    config.health.dead_letter_critical = 4;
    let mut env = Env::with_config(config).await;
    let mut a = admin(&env).await;
    let status = |h: &pb::GetHealthResponse| h.status();
    let h = a.get_health(pb::GetHealthRequest {}).await.unwrap().into_inner();
    assert_eq!(status(&h), pb::HealthStatus::Healthy);

    for i in 0..2 {
        dead_letter_agent(&mut env, &format!("d{i}")).await;
    }
    let h = a.get_health(pb::GetHealthRequest {}).await.unwrap().into_inner();
    assert_eq!(status(&h), pb::HealthStatus::Degraded);
    let q = h.sources.iter().find(|s| s.source.as_ref().unwrap().name == Q).unwrap();
    assert_eq!((q.dead_lettered, q.status()), (2, pb::HealthStatus::Degraded));
    assert_eq!(q.reasons, ["dead_lettered 2 >= 2"]);

    for i in 2..4 {
        dead_letter_agent(&mut env, &format!("d{i}")).await;
    }
    let h = a.get_health(pb::GetHealthRequest {}).await.unwrap().into_inner();
    assert_eq!(status(&h), pb::HealthStatus::Unhealthy);
    let mut conn = env.redis.conn().await;
    let stored: String =
        redis::cmd("HGET").arg("baton:{registry}:health").arg("status").query_async(&mut conn).await.unwrap();
    assert_eq!(stored, "UNHEALTHY");
    let per_queue: String = redis::cmd("HGET")
        .arg("baton:{registry}:health")
        .arg(format!("queue:{Q}"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(per_queue.contains("\"dead_lettered\":4"), "{per_queue}");

    for i in 0..4 {
        a.retry_dead_letter(pb::RetryDeadLetterRequest { source: queue(), id: format!("d{i}") }).await.unwrap();
    }
    let h = a.get_health(pb::GetHealthRequest {}).await.unwrap().into_inner();
    assert_eq!(status(&h), pb::HealthStatus::Healthy, "and back");
    // Processing rate: completions per minute since the previous check.
    for l in acquire(&mut env.client, Q, "w", 10).await {
        env.client.complete(complete_req(&l, pb::Outcome::Success)).await.unwrap();
    }
    let h = a.get_health(pb::GetHealthRequest {}).await.unwrap().into_inner();
    let q = h.sources.iter().find(|s| s.source.as_ref().unwrap().name == Q).unwrap();
    assert!(q.processing_rate > 0.0, "{q:?}");
}

// grpc.health.v1 turns NOT_SERVING while Redis is unreachable, and SERVING when it is back.
#[tokio::test]
async fn grpc_health_follows_redis() {
    let mut config = test_config();
    config.health.probe_interval_ms = 100;
    let mut env = Env::with_config(config).await;
    let mut health = tonic_health::pb::health_client::HealthClient::new(env.baton.channel().await);
    let check = |service: &str| tonic_health::pb::HealthCheckRequest { service: service.into() };
    use tonic_health::pb::health_check_response::ServingStatus;
    assert_eq!(health.check(check("")).await.unwrap().into_inner().status(), ServingStatus::Serving);
    env.redis.kill().await;
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while health.check(check("baton.v1.AdminService")).await.unwrap().into_inner().status() != ServingStatus::NotServing
    {
        assert!(std::time::Instant::now() < until, "never NOT_SERVING");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    env.redis.restart().await;
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while health.check(check("")).await.unwrap().into_inner().status() != ServingStatus::Serving {
        assert!(std::time::Instant::now() < until, "never SERVING again");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = &mut env.client;
}

// ListDeadLetters pages across every source of a kind.
#[tokio::test]
async fn dead_letters_page_across_sources() {
    let env = Env::start().await;
    let mut c = env.client.clone();
    for q in ["qa", "qb", "qc"] {
        for i in 0..3 {
            let mut a = agent(&format!("{q}-{i}"), 60_000, 30_000);
            a.max_attempts = 1;
            register(&mut c, q, vec![a]).await;
            let l = acquire(&mut c, q, "w", 1).await.pop().unwrap();
            c.complete(complete_req(&l, pb::Outcome::Unknown)).await.unwrap();
        }
    }
    let mut a = admin(&env).await;
    let mut token = String::new();
    let mut seen = Vec::new();
    loop {
        let req = pb::ListDeadLettersRequest {
            source: Some(pb::Source { kind: pb::SourceKind::Queue as i32, name: String::new() }),
            page_size: 4,
            page_token: token,
        };
        let page = a.list_dead_letters(req).await.unwrap().into_inner();
        seen.extend(page.dead_letters.into_iter().map(|d| d.id));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    let expected: Vec<String> =
        ["qa", "qb", "qc"].iter().flat_map(|q| (0..3).map(move |i| format!("{q}-{i}"))).collect();
    assert_eq!(seen, expected);
}

// Bad input for every field.
#[tokio::test]
async fn admin_calls_reject_bad_fields() {
    let env = Env::start().await;
    let mut a = admin(&env).await;
    let bad = |s: tonic::Status, field: &str| {
        assert_eq!(s.code(), Code::InvalidArgument, "{field}: {s:?}");
        assert!(s.message().starts_with(field), "{field}: {}", s.message());
    };
    let src = |kind: i32, name: &str| Some(pb::Source { kind, name: name.into() });
    let list =
        |source, size, token: &str| pb::ListDeadLettersRequest { source, page_size: size, page_token: token.into() };
    // No source, or an empty one, lists every kind (tests/it/malformed.rs); a name needs a kind.
    bad(a.list_dead_letters(list(src(0, "q"), 0, "")).await.unwrap_err(), "source.kind");
    bad(a.list_dead_letters(list(src(9, ""), 0, "")).await.unwrap_err(), "source.kind");
    bad(a.list_dead_letters(list(src(1, "a:b"), 0, "")).await.unwrap_err(), "source.name");
    bad(a.list_dead_letters(list(src(1, ""), 1001, "")).await.unwrap_err(), "page_size");
    bad(a.list_dead_letters(list(src(1, ""), 0, "garbage")).await.unwrap_err(), "page_token");
    bad(a.list_dead_letters(list(src(2, ""), 0, "queue|q|0")).await.unwrap_err(), "page_token");
    let retry = |source, id: &str| pb::RetryDeadLetterRequest { source, id: id.into() };
    bad(a.retry_dead_letter(retry(None, "x")).await.unwrap_err(), "source");
    bad(a.retry_dead_letter(retry(src(0, "q"), "x")).await.unwrap_err(), "source.kind");
    bad(a.retry_dead_letter(retry(src(1, ""), "x")).await.unwrap_err(), "source.name");
    bad(a.retry_dead_letter(retry(src(1, "q"), "")).await.unwrap_err(), "id");
    let delete = |source, id: &str| pb::DeleteDeadLetterRequest { source, id: id.into() };
    bad(a.delete_dead_letter(delete(None, "x")).await.unwrap_err(), "source");
    bad(a.delete_dead_letter(delete(src(2, "p{"), "x")).await.unwrap_err(), "source.name");
    bad(a.delete_dead_letter(delete(src(2, "p"), "a b")).await.unwrap_err(), "id");
    assert!(env.redis.snapshot().await.is_empty(), "rejected calls wrote nothing");
}

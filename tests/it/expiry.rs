//! Expiry: a one-shot agent registered with `expire_at` or `ttl` that no run has started by then
//! finishes as FINISH_EXPIRED, found at grant time or by the sweeper; a started run is never
//! expired; its children see a failure; a plain agent pays nothing for it.

use crate::common;

use std::{collections::HashMap, time::Duration};

use baton::pb::admin_service_client::AdminServiceClient;
use common::*;
use tonic::Code;
use tonic_types::StatusExt;

/// A short ttl, long enough for a Register, short enough to wait for.
const TTL_MS: u64 = 300;

fn one_shot(name: &str) -> pb::Agent {
    agent(name, 0, 30_000)
}

fn expiring(name: &str, ttl_ms: u64) -> pb::Agent {
    pb::Agent { ttl: dur(ttl_ms), ..one_shot(name) }
}

fn child(name: &str, parent: (&str, &str), on_failure: pb::ParentFailure) -> pb::Agent {
    let after = pb::AgentRef {
        queue: parent.0.into(),
        name: parent.1.into(),
        on_failure: on_failure as i32,
        ..Default::default()
    };
    pb::Agent { after: vec![after], ..one_shot(name) }
}

/// A config whose sweeper runs its expiry step every `every_ms`.
fn sweeping_every(every_ms: u64) -> baton::config::Config {
    let mut config = test_config();
    config.zombie_cleanup.interval_ms = every_ms;
    config
}

/// Awaits `name`'s finish for up to 30 s.
async fn await_finish(env: &mut Env, queue: &str, name: &str) -> pb::AgentResult {
    let req = pb::AwaitRequest { queue: queue.into(), name: name.into(), wait: dur(30_000), after_token: 0 };
    env.client.r#await(req).await.unwrap().into_inner().result.unwrap_or_else(|| panic!("{queue}/{name} finished"))
}

/// The agent's expire_at (ms), as GetAgent answers it.
async fn expire_at(env: &mut Env, queue: &str, name: &str) -> i64 {
    let req = pb::GetAgentRequest { queue: queue.into(), name: name.into() };
    let status = env.client.get_agent(req).await.unwrap().into_inner().agent.unwrap();
    ms(&status.agent.unwrap().expire_at)
}

/// Waits until the Redis clock is past `at_ms`.
async fn redis_past(env: &Env, at_ms: i64) {
    let redis = &env.redis;
    eventually(
        Duration::from_secs(10),
        "the Redis clock passes the expiry",
        || async move { redis.now_ms().await > at_ms },
    )
    .await;
}

/// Zombie passes (the sweeper's, with its expiry step) recorded so far.
async fn sweeps(env: &Env) -> i64 {
    let mut conn = env.redis.conn().await;
    let counts: HashMap<String, i64> =
        redis::cmd("HGETALL").arg("baton:{registry}:sweeps").query_async(&mut conn).await.unwrap();
    counts.iter().filter(|(k, _)| k.starts_with("zombie:")).map(|(_, n)| n).sum()
}

/// GetHealth's `expired` figure of a queue.
async fn expired_in_health(env: &Env, queue: &str) -> u64 {
    let mut admin = AdminServiceClient::new(env.baton.channel().await);
    let health = admin.get_health(pb::GetHealthRequest {}).await.unwrap().into_inner();
    health.sources.iter().find(|s| s.source.as_ref().is_some_and(|s| s.name == queue)).map_or(0, |s| s.expired)
}

// Grant time: with the sweeper unable to run before the worker comes (an hour between passes),
// an agent whose ttl passed is not granted to a worker that asks after it; it finishes
// EXPIRED (Await answers it), GetAgent no longer finds it, and health counts it. A plain agent
// beside it is granted.
#[tokio::test]
async fn an_agent_past_its_ttl_is_never_granted() {
    let mut env = Env::with_config(sweeping_every(3_600_000)).await;
    let late = pb::Agent { keep_result: true, ..expiring("late", TTL_MS) };
    register(&mut env.client, "ex", vec![late, one_shot("plain")]).await;
    let at = expire_at(&mut env, "ex", "late").await;
    assert!(at > 0, "GetAgent shows the expiry a ttl set");
    redis_past(&env, at).await;

    let leases = acquire(&mut env.client, "ex", "w1", 10).await;
    let names: Vec<&str> = leases.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["plain"], "the expired agent is not granted");
    let result = await_finish(&mut env, "ex", "late").await;
    assert_eq!((result.finish, result.token), (pb::Finish::Expired as i32, 0), "{result:?}");
    let gone = env.client.get_agent(pb::GetAgentRequest { queue: "ex".into(), name: "late".into() }).await;
    assert_eq!(gone.unwrap_err().code(), Code::NotFound);
    assert_eq!(expired_in_health(&env, "ex").await, 1);
    assert!(acquire(&mut env.client, "ex", "w1", 10).await.is_empty());
}

// The sweeper: with no worker at all, a waiting agent and a blocked one (its parent never runs)
// finish EXPIRED once their expire_at passes, told to an Await that was waiting.
#[tokio::test]
async fn the_sweeper_expires_agents_no_worker_asks_for() {
    let mut env = Env::with_config(sweeping_every(100)).await;
    register(&mut env.client, "ex", vec![one_shot("never-runs")]).await;
    let soon = pb::Agent { ttl: dur(TTL_MS), ..child("blocked", ("", "never-runs"), pb::ParentFailure::Wait) };
    register(&mut env.client, "ex", vec![expiring("waiting", TTL_MS), soon]).await;

    let mut waiters = Vec::new();
    for name in ["waiting", "blocked"] {
        let mut client = env.client.clone();
        let req = pb::AwaitRequest { queue: "ex".into(), name: name.into(), wait: dur(30_000), after_token: 0 };
        waiters.push(tokio::spawn(async move { client.r#await(req).await.unwrap().into_inner() }));
    }
    for waiter in waiters {
        let result = waiter.await.unwrap().result.expect("finished");
        assert_eq!(result.finish, pb::Finish::Expired as i32, "{result:?}");
    }
    assert_eq!(expired_in_health(&env, "ex").await, 2);
    let leases = acquire(&mut env.client, "ex", "w1", 10).await;
    assert_eq!(leases.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(), ["never-runs"]);
}

// A run that started before the expiry is never expired: not while it is held through sweeper
// passes after the expiry, and not at the grant of its retry after a failure; it finishes as
// its run says.
#[tokio::test]
async fn a_started_run_is_never_expired() {
    let mut env = Env::with_config(sweeping_every(100)).await;
    let started = pb::Agent { keep_result: true, error_interval: dur(50), ..expiring("started", TTL_MS) };
    register(&mut env.client, "ex", vec![started]).await;
    let at = expire_at(&mut env, "ex", "started").await;
    let lease = acquire(&mut env.client, "ex", "w1", 1).await.pop().expect("granted before its expiry");
    redis_past(&env, at).await;
    let passes = sweeps(&env).await;
    let e = &env;
    eventually(Duration::from_secs(10), "two sweeper passes after the expiry", || async move {
        sweeps(e).await >= passes + 2
    })
    .await;

    // Held through the passes: a lost lease would be an error (LEASE_LOST).
    let failed = env.client.complete(complete_req(&lease, pb::Outcome::Transient)).await.unwrap().into_inner();
    assert!(failed.next_run_at.is_some(), "{failed:?}");
    // The retry is due 50 ms later and granted, not expired.
    let poll = pb::AcquireRequest { queue: "ex".into(), worker_id: "w1".into(), max_leases: 1, wait: dur(10_000) };
    let retry = env.client.acquire(poll).await.unwrap().into_inner().leases.pop().expect("the retry is granted");
    env.client.complete(complete_req(&retry, pb::Outcome::Success)).await.unwrap();
    let result = await_finish(&mut env, "ex", "started").await;
    assert_eq!(result.finish, pb::Finish::Succeeded as i32, "{result:?}");
    assert_eq!(expired_in_health(&env, "ex").await, 0);
}

// An expired parent is a failure for its children, in any queue: a RUN_ANYWAY child runs and
// sees FINISH_EXPIRED in its lease's parents, a CANCEL child finishes cancelled.
#[tokio::test]
async fn children_of_an_expired_agent_see_a_failure() {
    let mut env = Env::with_config(sweeping_every(100)).await;
    register(&mut env.client, "ex", vec![expiring("parent", TTL_MS)]).await;
    let kids = vec![
        child("anyway", ("ex", "parent"), pb::ParentFailure::RunAnyway),
        child("dropped", ("ex", "parent"), pb::ParentFailure::Cancel),
    ];
    register(&mut env.client, "ex-kids", kids).await;

    let dropped = await_finish(&mut env, "ex-kids", "dropped").await;
    assert_eq!(dropped.finish, pb::Finish::Cancelled as i32, "{dropped:?}");
    let poll = pb::AcquireRequest { queue: "ex-kids".into(), worker_id: "w".into(), max_leases: 2, wait: dur(10_000) };
    let leases = env.client.acquire(poll).await.unwrap().into_inner().leases;
    assert_eq!(leases.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(), ["anyway"]);
    assert_eq!(leases[0].parents[0].finish, pb::Finish::Expired as i32);
}

// Bad input is INVALID_ARGUMENT naming the field and writes nothing: both expire_at and ttl, a
// ttl of 0, an expiry on a recurring agent (interval or cron), an expire_at before 1970.
#[tokio::test]
async fn bad_expiries_are_refused_naming_the_field() {
    let mut env = Env::start().await;
    let at = Some(prost_types::Timestamp { seconds: 4_000_000_000, nanos: 0 });
    let cases = [
        ("agents[0].ttl", pb::Agent { expire_at: at, ttl: dur(1_000), ..one_shot("a") }),
        ("agents[0].ttl", pb::Agent { ttl: dur(0), ..one_shot("a") }),
        ("agents[0].ttl", pb::Agent { ttl: dur(1_000), ..agent("a", 60_000, 1_000) }),
        ("agents[0].expire_at", pb::Agent { expire_at: at, cron: "* * * * *".into(), ..one_shot("a") }),
        (
            "agents[0].expire_at",
            pb::Agent { expire_at: Some(prost_types::Timestamp { seconds: -5, nanos: 0 }), ..one_shot("a") },
        ),
    ];
    for (field, a) in cases {
        let before = env.redis.snapshot().await;
        let req = pb::RegisterRequest {
            request_id: String::new(),
            queue: "ex".into(),
            agents: vec![a],
            reset_schedule: false,
        };
        let status = env.client.register(req).await.expect_err(field);
        assert_eq!(status.code(), Code::InvalidArgument, "{field}: {}", status.message());
        let bad = status.get_details_bad_request().expect("BadRequest detail");
        assert_eq!(bad.field_violations[0].field, field, "{}", status.message());
        assert_eq!(env.redis.snapshot().await, before, "{field}: a refused Register changed Redis");
    }
}

// A plain job pays nothing for expiry: registering and draining agents without one writes no
// `expiring` key and no entry in the registry of queues with expiring agents.
#[tokio::test]
async fn a_plain_drain_writes_no_expiring_key() {
    let mut env = Env::start().await;
    register(&mut env.client, "plain", (0..20).map(|i| one_shot(&format!("p{i}"))).collect()).await;
    let mut done = 0;
    while done < 20 {
        for lease in acquire(&mut env.client, "plain", "w", 8).await {
            env.client.complete(complete_req(&lease, pb::Outcome::Success)).await.unwrap();
            done += 1;
        }
    }
    let keys: Vec<String> = env.redis.snapshot().await.into_iter().map(|(k, _)| k).collect();
    assert!(keys.iter().all(|k| !k.contains("expiring")), "{keys:?}");
}

// A keyed queue (acquireKeyed) checks the expiry at grant time too: the expired agent takes no
// place of its key and is not granted; the plain agent of the same key behind it is.
#[tokio::test]
async fn a_keyed_queue_never_grants_an_expired_agent() {
    let mut env = Env::with_config(sweeping_every(3_600_000)).await;
    let keyed = |a: pb::Agent| pb::Agent { key: "tenant".into(), keep_result: true, ..a };
    register(&mut env.client, "exk", vec![keyed(expiring("late", TTL_MS)), keyed(one_shot("plain"))]).await;
    let at = expire_at(&mut env, "exk", "late").await;
    redis_past(&env, at).await;
    let mut admin = AdminServiceClient::new(env.baton.channel().await);
    let limits = pb::QueueLimits { key_concurrency: 1, ..Default::default() };
    let req = pb::SetLimitsRequest { queue: "exk".into(), limits: Some(limits), ..Default::default() };
    admin.set_limits(req).await.unwrap();

    let leases = acquire(&mut env.client, "exk", "w1", 10).await;
    assert_eq!(leases.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(), ["plain"]);
    let result = await_finish(&mut env, "exk", "late").await;
    assert_eq!(result.finish, pb::Finish::Expired as i32, "{result:?}");
}

// The expiry is counted in baton_agents_expired_total{queue} (a `baton serve` process of its
// own, for its own metrics; its sweeper expires the agent).
#[tokio::test]
async fn an_expiry_is_counted_in_metrics() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let redis = TestRedis::start().await;
    let baton = BatonProcess::spawn_with_metrics("127.0.0.1:0", |cmd| {
        cmd.args(["--redis-url", &redis.url()]).env("BATON_ZOMBIE_CLEANUP__INTERVAL_MS", "100");
    });
    let metrics = baton
        .log
        .lock()
        .unwrap()
        .iter()
        .find(|l| l.contains("prometheus metrics at /metrics"))
        .and_then(|l| l.split_whitespace().find_map(|w| w.strip_prefix("addr=")).map(str::to_string))
        .expect("the bound /metrics address is logged");
    let mut client = baton::pb::agent_service_client::AgentServiceClient::new(baton.channel().await);
    register(&mut client, "exm", vec![expiring("gone", TTL_MS)]).await;
    let req = pb::AwaitRequest { queue: "exm".into(), name: "gone".into(), wait: dur(30_000), after_token: 0 };
    let result = client.r#await(req).await.unwrap().into_inner().result.expect("expired");
    assert_eq!(result.finish, pb::Finish::Expired as i32);

    let mut tcp = tokio::net::TcpStream::connect(&metrics).await.unwrap();
    tcp.write_all(format!("GET /metrics HTTP/1.1\r\nHost: {metrics}\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut page = String::new();
    tcp.read_to_string(&mut page).await.unwrap();
    let expired = page
        .lines()
        .find(|l| l.starts_with("baton_agents_expired_total{") && l.contains("queue=\"exm\""))
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok());
    assert_eq!(expired, Some(1.0), "baton_agents_expired_total{{queue=\"exm\"}}");
}

/// Runs the `baton` CLI with `args` against `addr`; its stdout (it must succeed).
async fn cli(addr: &str, args: &[&str]) -> String {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_baton"));
    cmd.args(args).args(["--addr", addr]).env_remove("BATON_TOKEN");
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output()).await.expect("the CLI answers").unwrap();
    assert!(out.status.success(), "baton {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

// The CLI shows an agent's expiry (`baton agent`: "expires at", the time GetAgent answers) and
// an expired finish (`baton await`: "expired").
#[tokio::test]
async fn the_cli_shows_the_expiry_and_the_expired_finish() {
    let mut env = Env::with_config(sweeping_every(100)).await;
    let addr = format!("http://{}", env.baton.addr);
    let at = Some(prost_types::Timestamp { seconds: 4_102_444_800, nanos: 0 }); // 2100-01-01
    register(&mut env.client, "exc", vec![pb::Agent { expire_at: at, ..one_shot("later") }]).await;
    let shown = cli(&addr, &["agent", "exc", "later"]).await;
    assert!(shown.lines().any(|l| l.starts_with("expires at") && l.contains("2100-01-01T00:00:00.000Z")), "{shown}");

    register(&mut env.client, "exc", vec![pb::Agent { keep_result: true, ..expiring("soon", TTL_MS) }]).await;
    let awaited = cli(&addr, &["await", "exc", "soon", "--wait-ms", "30000"]).await;
    assert!(awaited.lines().any(|l| l.starts_with("finish") && l.contains("expired")), "{awaited}");
}

//! Server-owned safety: sweepers, breakers, idle behaviour, graceful shutdown. Real Redis,
//! real Baton servers, real worker and Baton processes where death is the point.
//!
//! Invariant checked throughout: nothing acknowledged is lost. After every disturbance each
//! registered agent is in exactly one of waiting or working (or was completed on purpose).
//!
//! That a heartbeat landing between the orphan scan and the reap saves its lease is checked in
//! the queues' own tests (`src/queues/tests.rs`): the test orders the store calls itself.

use crate::common;

use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use baton::config::Config;

use baton::runtime::embedded::Persistence;
use common::*;
use tonic::Code;

const Q: &str = "safety";

/// Every agent is in exactly one of waiting or working.
async fn assert_nothing_lost(redis: &TestRedis, names: &[String]) {
    let mut conn = redis.conn().await;
    for name in names {
        let waiting: Option<f64> = redis::cmd("ZSCORE")
            .arg(format!("baton:{{q:{Q}}}:waiting"))
            .arg(name)
            .query_async(&mut conn)
            .await
            .unwrap();
        let working: Option<f64> = redis::cmd("ZSCORE")
            .arg(format!("baton:{{q:{Q}}}:working"))
            .arg(name)
            .query_async(&mut conn)
            .await
            .unwrap();
        assert!(waiting.is_some() != working.is_some(), "{name}: waiting {waiting:?}, working {working:?}");
    }
}

fn sweeping_config() -> Config {
    let mut config = test_config();
    config.orphan_cleanup.threshold_ms = 1_000;
    config.orphan_cleanup.interval_ms = 200;
    config.orphan_cleanup.leadership_ttl_ms = 1_000;
    config.orphan_cleanup.repair_interval_ms = 200;
    config.zombie_cleanup.threshold_ms = 200;
    config.zombie_cleanup.interval_ms = 100;
    config
}

// A worker process killed with SIGKILL while holding leases: the orphan sweeper requeues them
// long before their deadlines, another worker completes them, and the dead worker's late
// Complete is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_worker_leases_are_requeued_by_the_orphan_sweeper() {
    let mut env = Env::with_config(sweeping_config()).await;
    let names: Vec<String> = (0..5).map(|i| format!("job-{i}")).collect();
    register(&mut env.client, Q, names.iter().map(|n| agent(n, 3_600_000, 120_000)).collect()).await;

    let mut worker = Command::new(env!("CARGO_BIN_EXE_baton-worker"))
        .args(["--addr", &format!("http://{}", env.baton.addr), "--queue", Q, "--worker-id", "doomed"])
        .args(["--max-leases", "5", "--work-ms", "600000", "--heartbeat-ms", "200"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(worker.stdout.take().unwrap()).lines();
    let mut dead_tokens = Vec::new();
    while dead_tokens.len() < 5 {
        let line = lines.next().expect("worker output").unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["event"], "acquired");
        dead_tokens.push((v["name"].as_str().unwrap().to_string(), v["token"].as_u64().unwrap()));
    }
    worker.kill().unwrap();
    worker.wait().unwrap();
    let killed_at = Instant::now();

    let mut rescued = Vec::new();
    while rescued.len() < 5 {
        let r = env
            .client
            .acquire(pb::AcquireRequest {
                queue: Q.into(),
                worker_id: "rescuer".into(),
                max_leases: 5,
                wait: dur(30_000),
            })
            .await
            .unwrap()
            .into_inner();
        rescued.extend(r.leases);
        assert!(killed_at.elapsed() < Duration::from_secs(60), "requeued long before the 120 s deadlines");
    }
    for l in &rescued {
        assert_eq!(l.attempt, 2, "the orphaned run counts as a failed attempt");
        env.client.complete(complete_req(l, pb::Outcome::Success)).await.unwrap();
    }
    for (name, token) in dead_tokens {
        let late = pb::CompleteRequest {
            request_id: String::new(),
            queue: Q.into(),
            name,
            token,
            outcome: pb::Outcome::Success as i32,
            message: String::new(),
            retry_after: None,
            ..Default::default()
        };
        let err = env.client.complete(late).await.unwrap_err();
        assert_eq!((err.code(), reason(&err).as_str()), (Code::FailedPrecondition, "LEASE_LOST"));
    }
    assert_nothing_lost(&env.redis, &names).await;
}

// A lease past deadline + threshold goes back to waiting as a TIMEOUT failure (its streak
// grows); an agent matching the exceptional pattern keeps its longer threshold.
#[tokio::test]
async fn zombie_leases_are_requeued_as_timeouts() {
    let mut config = sweeping_config();
    config.zombie_cleanup.exceptional_pattern = "^long-".into();
    config.zombie_cleanup.exceptional_threshold_ms = 600_000;
    config.orphan_cleanup.enabled = false;
    let mut env = Env::with_config(config).await;
    register(&mut env.client, Q, vec![agent("short", 3_600_000, 300), agent("long-report", 3_600_000, 300)]).await;
    let leases = acquire(&mut env.client, Q, "sleepy", 2).await;
    assert_eq!(leases.len(), 2);

    let mut c = env.client.clone();
    eventually(Duration::from_secs(20), "the zombie sweeper requeues 'short'", || {
        let mut c = c.clone();
        async move {
            let a =
                c.get_agent(pb::GetAgentRequest { queue: Q.into(), name: "short".into() }).await.unwrap().into_inner();
            a.agent.unwrap().state() == pb::AgentState::Waiting
        }
    })
    .await;
    let short = c.get_agent(pb::GetAgentRequest { queue: Q.into(), name: "short".into() }).await.unwrap().into_inner();
    let short = short.agent.unwrap();
    assert_eq!(short.failure_streak, 1, "a zombie counts as a TIMEOUT failure");
    let long =
        c.get_agent(pb::GetAgentRequest { queue: Q.into(), name: "long-report".into() }).await.unwrap().into_inner();
    assert_eq!(long.agent.unwrap().state(), pb::AgentState::Working, "exceptional agents get the longer threshold");
    let stale = leases.iter().find(|l| l.name == "short").unwrap();
    let err = c.complete(complete_req(stale, pb::Outcome::Success)).await.unwrap_err();
    assert_eq!(reason(&err), "LEASE_LOST");
}

// The orphan sweeper repairs working entries without a lease record and numeric-only names.
#[tokio::test]
async fn sweeper_repairs_invalid_entries() {
    let env = Env::with_config(sweeping_config()).await;
    register(&mut env.client.clone(), Q, vec![agent("fine", 3_600_000, 60_000)]).await;
    let mut conn = env.redis.conn().await;
    let key = |part: &str| format!("baton:{{q:{Q}}}:{part}");
    // "fine" looks held, but its lease record is gone; "12345" is a corrupt name.
    let _: () = redis::cmd("ZREM").arg(key("waiting")).arg("fine").query_async(&mut conn).await.unwrap();
    let _: () = redis::cmd("ZADD").arg(key("working")).arg(1).arg("fine").query_async(&mut conn).await.unwrap();
    let _: () = redis::cmd("ZADD").arg(key("waiting")).arg(1).arg("12345").query_async(&mut conn).await.unwrap();
    let _: () = redis::cmd("HSET").arg(key("defs")).arg("12345").arg("{}").query_async(&mut conn).await.unwrap();
    eventually(Duration::from_secs(20), "repairs", || {
        let mut conn = conn.clone();
        async move {
            let fine: Option<f64> =
                redis::cmd("ZSCORE").arg(key("waiting")).arg("fine").query_async(&mut conn).await.unwrap();
            let numeric: Option<String> =
                redis::cmd("HGET").arg(key("defs")).arg("12345").query_async(&mut conn).await.unwrap();
            fine.is_some() && numeric.is_none()
        }
    })
    .await;
    assert_nothing_lost(&env.redis, &["fine".to_string()]).await;
}

/// A `baton serve` process on `redis_url` with the sweeping knobs of these tests.
fn baton_process(redis_url: &str, replica: &str) -> BatonProcess {
    BatonProcess::spawn(|cmd| {
        cmd.args(["--redis-url", redis_url])
            .env("BATON_REPLICA_ID", replica)
            .env("BATON_ORPHAN_CLEANUP__INTERVAL_MS", "100")
            .env("BATON_ORPHAN_CLEANUP__LEADERSHIP_TTL_MS", "1000")
            .env("BATON_ZOMBIE_CLEANUP__INTERVAL_MS", "100")
            .env("BATON_SHUTDOWN_TIMEOUT_MS", "3000");
    })
}

async fn sweep_counts(redis: &TestRedis) -> std::collections::HashMap<String, i64> {
    redis::cmd("HGETALL").arg("baton:{registry}:sweeps").query_async(&mut redis.conn().await).await.unwrap()
}

// Two replicas: the cluster-wide sweeps run on exactly one; killing it moves the duty.
#[tokio::test]
async fn sweeps_run_on_one_replica_and_fail_over() {
    let redis = TestRedis::start().await;
    let mut one = baton_process(&redis.url(), "one");
    let mut two = baton_process(&redis.url(), "two");
    eventually(Duration::from_secs(20), "a replica sweeps", || async {
        sweep_counts(&redis).await.keys().any(|k| k.starts_with("orphan:"))
    })
    .await;
    // Several rounds later, still only one replica has swept.
    let first = sweep_counts(&redis).await;
    eventually(Duration::from_secs(20), "more rounds", || async {
        sweep_counts(&redis).await.values().sum::<i64>() > first.values().sum::<i64>() + 10
    })
    .await;
    let counts = sweep_counts(&redis).await;
    let sweepers: Vec<_> = counts.keys().filter(|k| k.starts_with("orphan:")).cloned().collect();
    assert_eq!(sweepers.len(), 1, "orphan sweeps ran on exactly one replica: {counts:?}");
    let leader = sweepers[0].trim_start_matches("orphan:").to_string();
    let (dead, survivor) = if leader == "one" { (&mut one, "two") } else { (&mut two, "one") };

    dead.child.kill().unwrap();
    dead.child.wait().unwrap();
    eventually(Duration::from_secs(20), "the other replica takes the duty over", || async {
        sweep_counts(&redis).await.contains_key(&format!("orphan:{survivor}"))
    })
    .await;
}

// redis-server killed under load: calls fail fast with UNAVAILABLE and a pushback hint, the
// breaker opens, and closes by itself once Redis is back; no agent is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_outage_opens_and_closes_the_breaker() {
    let mut config = test_config();
    config.circuit_breaker.failure_threshold = 3;
    // Only the Redis probe closes the breaker (the cooldown is far longer than the test).
    config.circuit_breaker.cooldown_ms = 600_000;
    let mut redis = TestRedis::with_persistence(Persistence::Always).await;
    let baton = TestBaton::start(&redis.url(), config).await;
    let mut client = baton.agents().await;
    let names: Vec<String> = (0..200).map(|i| format!("a{i}")).collect();
    register(&mut client, Q, names.iter().map(|n| agent(n, 3_600_000, 60_000)).collect()).await;

    let stop = tokio_util::sync::CancellationToken::new();
    let mut load = Vec::new();
    for w in 0..4 {
        let mut c = client.clone();
        let stop = stop.clone();
        load.push(tokio::spawn(async move {
            let (mut ok, mut open, mut pushback) = (0u32, 0u32, 0u32);
            while !stop.is_cancelled() {
                let req = pb::AcquireRequest { queue: Q.into(), worker_id: format!("w{w}"), max_leases: 2, wait: None };
                match c.acquire(req).await {
                    Ok(r) => {
                        ok += 1;
                        for l in r.into_inner().leases {
                            // A complete lost to the outage leaves the lease held: still not lost.
                            let _ = c.complete(complete_req(&l, pb::Outcome::Success)).await;
                        }
                    }
                    Err(s) => {
                        assert_eq!(s.code(), Code::Unavailable, "{s:?}");
                        if reason(&s) == "CIRCUIT_OPEN" {
                            open += 1;
                        }
                        if s.metadata().get("grpc-retry-pushback-ms").is_some() {
                            pushback += 1;
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            (ok, open, pushback)
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    redis.kill().await;
    eventually(Duration::from_secs(20), "the breaker fails calls fast", || {
        let mut c = client.clone();
        async move {
            let req = pb::AcquireRequest { queue: Q.into(), worker_id: "probe".into(), max_leases: 1, wait: None };
            matches!(c.acquire(req).await, Err(s) if reason(&s) == "CIRCUIT_OPEN")
        }
    })
    .await;
    redis.restart().await;
    eventually(Duration::from_secs(30), "calls succeed again after Redis returns", || {
        let mut c = client.clone();
        async move {
            let req = pb::GetAgentRequest { queue: Q.into(), name: "a0".into() };
            c.get_agent(req).await.is_ok()
        }
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.cancel();
    let mut totals = (0, 0, 0);
    for l in load {
        let (ok, open, pushback) = l.await.unwrap();
        totals = (totals.0 + ok, totals.1 + open, totals.2 + pushback);
    }
    assert!(totals.0 > 0 && totals.1 > 0, "load ran, and met the open breaker: {totals:?}");
    assert!(totals.2 > 0, "UNAVAILABLE answers carry grpc-retry-pushback-ms");
    assert_nothing_lost(&redis, &names).await;
    baton.stop().await.unwrap();
}

// Idle, with a long poll waiting: Redis sees almost no commands (no polling).
#[tokio::test]
async fn idle_baton_barely_touches_redis() {
    let env = Env::start().await;
    let mut c = env.client.clone();
    let poll = tokio::spawn(async move {
        c.acquire(pb::AcquireRequest { queue: Q.into(), worker_id: "idle".into(), max_leases: 1, wait: dur(6_000) })
            .await
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let calls = |info: String| -> i64 {
        info.lines()
            .filter(|l| l.starts_with("cmdstat_") && !l.starts_with("cmdstat_info:"))
            .filter_map(|l| l.split("calls=").nth(1)?.split(',').next()?.parse::<i64>().ok())
            .sum()
    };
    let mut conn = env.redis.conn().await;
    let before: String = redis::cmd("INFO").arg("commandstats").query_async(&mut conn).await.unwrap();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let after: String = redis::cmd("INFO").arg("commandstats").query_async(&mut conn).await.unwrap();
    let idle_calls = calls(after) - calls(before);
    // With no queue registered, the defaults cost about 3 commands a second: the health ping
    // (every 2 s), the orphan and zombie passes reading the registries and recording
    // themselves (every 2 s and 5 s), the sweeper's renewal (every 5 s). The waiting long poll
    // adds nothing: it does not poll.
    assert!(idle_calls <= 20, "{idle_calls} Redis commands in 4 idle seconds");
    assert!(poll.await.unwrap().unwrap().into_inner().leases.is_empty());
}

// SIGTERM during load: waiting long polls are answered, in-flight calls finish, the process
// exits within its bound, and no lease is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_under_load_loses_nothing() {
    let redis = TestRedis::start().await;
    let baton = baton_process(&redis.url(), "doomed");
    let channel = baton.channel().await;
    let mut client = pb::agent_service_client::AgentServiceClient::new(channel);
    let names: Vec<String> = (0..100).map(|i| format!("t{i}")).collect();
    register(&mut client, Q, names.iter().map(|n| agent(n, 3_600_000, 60_000)).collect()).await;
    // Empty queue for the long polls.
    let mut polls = Vec::new();
    for i in 0..3 {
        let mut c = client.clone();
        polls.push(tokio::spawn(async move {
            let req = pb::AcquireRequest {
                queue: "empty".into(),
                worker_id: format!("p{i}"),
                max_leases: 1,
                wait: dur(60_000),
            };
            c.acquire(req).await
        }));
    }
    let mut load = Vec::new();
    for w in 0..4 {
        let mut c = client.clone();
        load.push(tokio::spawn(async move {
            loop {
                let req = pb::AcquireRequest { queue: Q.into(), worker_id: format!("w{w}"), max_leases: 1, wait: None };
                let Ok(r) = c.acquire(req).await else { return };
                for l in r.into_inner().leases {
                    if c.complete(complete_req(&l, pb::Outcome::Success)).await.is_err() {
                        return;
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    baton.signal(libc::SIGTERM);
    for p in polls {
        let answer = p.await.unwrap().expect("a waiting long poll is answered, not cut");
        assert!(answer.into_inner().leases.is_empty());
    }
    let status = tokio::task::spawn_blocking(move || {
        let mut baton = baton;
        baton.child.wait()
    })
    .await
    .unwrap()
    .unwrap();
    assert!(status.success(), "{status}");
    assert!(started.elapsed() < Duration::from_secs(10), "exits within its 3 s shutdown bound (plus start-up slack)");
    for l in load {
        l.await.unwrap();
    }
    assert_nothing_lost(&redis, &names).await;
}

/// A worker takes two leases of 1 s (error_interval 60 s) and vanishes: no heartbeat, no
/// Complete. Whichever sweep takes them back, "again" is due at once (its attempt counted) and
/// "once" (max_attempts 1) is dead-lettered. Returns the time from the worker's last word to the
/// re-grant, and the outcome the take-back recorded.
async fn a_vanished_holders_lease(config: Config, order: &str) -> (Duration, String) {
    let mut env = Env::with_config(config).await;
    let short = |name: &str, max_attempts| pb::Agent {
        error_interval: dur(60_000),
        max_attempts,
        ..agent(name, 3_600_000, 1_000)
    };
    register(&mut env.client, Q, vec![short("again", 0), short("once", 1)]).await;
    let held = acquire(&mut env.client, Q, "vanished", 2).await;
    assert_eq!(held.len(), 2);
    let vanished_at = Instant::now();
    let mut regranted = Vec::new();
    while regranted.is_empty() && vanished_at.elapsed() < Duration::from_secs(30) {
        let req = pb::AcquireRequest { queue: Q.into(), worker_id: "rescuer".into(), max_leases: 2, wait: dur(5_000) };
        regranted = env.client.acquire(req).await.unwrap().into_inner().leases;
    }
    let recovery = vanished_at.elapsed();
    let names: Vec<&str> = regranted.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["again"], "{order}: due at once after the take-back, not error_interval (60 s) later");
    assert!(recovery < Duration::from_secs(15), "{order}: re-granted {recovery:?} after the worker vanished");
    assert_eq!(regranted[0].attempt, 2, "{order}: the vanished run counts as an attempt");
    let once = env.client.get_agent(pb::GetAgentRequest { queue: Q.into(), name: "once".into() }).await.unwrap();
    let once = once.into_inner().agent.unwrap();
    assert_eq!(once.state(), pb::AgentState::DeadLettered, "{order}: max_attempts 1 reached");
    let stale = held.iter().find(|l| l.name == "again").unwrap();
    let err = env.client.complete(complete_req(stale, pb::Outcome::Success)).await.unwrap_err();
    assert_eq!(reason(&err), "LEASE_LOST");
    let mut a = baton::pb::admin_service_client::AdminServiceClient::new(env.baton.channel().await);
    let source = pb::Source { kind: pb::SourceKind::Queue as i32, name: Q.into() };
    let dead = a
        .list_dead_letters(pb::ListDeadLettersRequest { source: Some(source), ..Default::default() })
        .await
        .unwrap()
        .into_inner()
        .dead_letters;
    (recovery, dead.first().map(|d| d.error_class.clone()).unwrap_or_default())
}

// One rule for a lease whose holder vanished, whichever sweep sees it first. The deadline
// (zombie) sweep first: a 1 s lease, zombie threshold 200 ms, orphan threshold 10 s.
#[tokio::test]
async fn a_vanished_holders_lease_is_due_at_once_when_the_deadline_sweep_sees_it_first() {
    let mut config = sweeping_config();
    config.orphan_cleanup.threshold_ms = 10_000;
    config.orphan_cleanup.interval_ms = 2_000;
    let (recovery, outcome) = a_vanished_holders_lease(config, "deadline sweep first").await;
    assert_eq!(outcome, "TIMEOUT", "the zombie sweep took it back");
    println!("vanished holder, deadline sweep first: re-granted {} ms after its last word", recovery.as_millis());
}

// The orphan sweep first: a 1 s lease, orphan threshold 300 ms, zombie threshold 60 s.
#[tokio::test]
async fn a_vanished_holders_lease_is_due_at_once_when_the_orphan_sweep_sees_it_first() {
    let mut config = sweeping_config();
    config.orphan_cleanup.threshold_ms = 300;
    config.orphan_cleanup.interval_ms = 100;
    config.zombie_cleanup.threshold_ms = 60_000;
    let (recovery, outcome) = a_vanished_holders_lease(config, "orphan sweep first").await;
    assert_eq!(outcome, "ORPHANED", "the orphan sweep took it back");
    println!("vanished holder, orphan sweep first: re-granted {} ms after its last word", recovery.as_millis());
}

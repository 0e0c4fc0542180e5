//! Cron schedules (Agent.cron, time_zone, catch_up), against real Redis.
//!
//! Invariants checked:
//! - a cron agent is first due at the first fire after it is registered, by the Redis clock
//!   even where the Baton host's clock is hours off it;
//! - runs fire on the Redis clock: no run starts before its fire, and each run's next is the
//!   first fire after the run started, across a minute boundary; one run at a time;
//! - a run more than one fire late runs once (CATCH_UP_RUN_ONCE) or is skipped to the next fire
//!   without counting a failure (CATCH_UP_SKIP);
//! - bad input is INVALID_ARGUMENT naming the field and registers nothing.

use crate::common;

use std::time::Duration;

use common::*;
use tonic::Code;

const Q: &str = "cron";

fn cron_agent(name: &str, cron: &str, catch_up: pb::CatchUp) -> pb::Agent {
    pb::Agent { cron: cron.into(), catch_up: catch_up as i32, interval: None, ..agent(name, 0, 30_000) }
}

async fn status(env: &mut Env, name: &str) -> pb::AgentStatus {
    let req = pb::GetAgentRequest { queue: Q.into(), name: name.into() };
    env.client.get_agent(req).await.unwrap().into_inner().agent.unwrap()
}

/// Waits until the Redis clock reaches `at` (ms).
async fn until_redis(redis: &TestRedis, at: i64) {
    while redis.now_ms().await < at {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn long_poll(worker: &str) -> pb::AcquireRequest {
    pb::AcquireRequest { queue: Q.into(), worker_id: worker.into(), max_leases: 1, wait: dur(10_000) }
}

// Every second, one worker: each run starts at or after its fire (Redis clock), its Complete
// answers the first whole second after it started, nobody else gets the agent meanwhile; runs
// go on across a minute boundary.
#[tokio::test]
async fn runs_fire_on_the_redis_clock_across_a_minute_boundary_one_at_a_time() {
    let mut env = Env::start().await;
    let before = env.redis.now_ms().await;
    register(&mut env.client, Q, vec![cron_agent("tick", "* * * * * *", pb::CatchUp::Unspecified)]).await;
    let first = status(&mut env, "tick").await;
    let due = ms(&first.next_run_at);
    assert_eq!(due % 1_000, 0, "first due at a whole second");
    assert!(due > before && due <= before + 2_000, "the first fire after Register: {due} vs {before}");
    let def = first.agent.unwrap();
    assert_eq!((def.cron.as_str(), def.interval), ("* * * * * *", None));

    let mut scheduled = due;
    let mut minutes = std::collections::BTreeSet::new();
    let mut runs = 0;
    while minutes.len() < 2 {
        assert!(runs < 200, "no minute boundary after {runs} runs");
        let l = env.client.acquire(long_poll("w")).await.unwrap().into_inner().leases.pop().expect("the next fire");
        let started = ms(&l.deadline) - 30_000;
        assert!(started >= scheduled, "run {runs} started at {started}, before its fire {scheduled}");
        if runs == 0 {
            let other = acquire(&mut env.client, Q, "other", 1).await;
            assert!(other.is_empty(), "one run at a time");
        }
        minutes.insert(started / 60_000);
        let done = env.client.complete(complete_req(&l, pb::Outcome::Success)).await.unwrap().into_inner();
        scheduled = ms(&done.next_run_at);
        let fire = (started / 1_000 + 1) * 1_000;
        // The first fire after the run started, or (a run that outlasted it) at once.
        let after = env.redis.now_ms().await;
        assert!(scheduled == fire || (scheduled > fire && scheduled <= after), "next {scheduled}, fire {fire}");
        runs += 1;
    }
    assert_eq!(status(&mut env, "tick").await.failure_streak, 0);
}

// A run more than one fire late: CATCH_UP_RUN_ONCE runs it (once), CATCH_UP_SKIP hands it back
// to wait for the next fire, without a failure.
#[tokio::test]
async fn a_late_run_runs_once_or_is_skipped_by_its_catch_up_policy() {
    let mut env = Env::start().await;
    let every_two = "*/2 * * * * *";
    register(
        &mut env.client,
        Q,
        vec![cron_agent("once", every_two, pb::CatchUp::RunOnce), cron_agent("skip", every_two, pb::CatchUp::Skip)],
    )
    .await;
    // One run each, on time, so each has a recorded next fire.
    let mut fires = std::collections::HashMap::new();
    while fires.len() < 2 {
        let l = env.client.acquire(long_poll("w")).await.unwrap().into_inner().leases.pop().unwrap();
        let done = env.client.complete(complete_req(&l, pb::Outcome::Success)).await.unwrap().into_inner();
        fires.insert(l.name.clone(), ms(&done.next_run_at));
    }
    // Let both miss their next fire and the one after it.
    let latest = *fires.values().max().unwrap();
    until_redis(&env.redis, latest + 2_100).await;
    let got = acquire(&mut env.client, Q, "w", 2).await;
    let names: Vec<&str> = got.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, vec!["once"], "the skip agent is not run late");
    let now = env.redis.now_ms().await;
    let skipped = status(&mut env, "skip").await;
    assert_eq!(skipped.state, pb::AgentState::Waiting as i32);
    let next = ms(&skipped.next_run_at);
    assert!(next > now - 2_000 && next % 2_000 == 0, "skipped to the next fire: {next} (now {now})");
    assert_eq!(skipped.failure_streak, 0);
}

// Redis's clock two hours ahead of the Baton host's (a redis-server under a clock shim): a new
// hourly cron agent is first due at the next whole hour of the Redis clock, so it is not due
// yet. From the host's clock its first fire would be at least an hour in Redis's past, and it
// would be handed out at once.
#[tokio::test]
async fn the_first_fire_follows_the_redis_clock_not_the_hosts() {
    const SHIFT_S: i64 = 2 * 3_600;
    let redis = TestRedis::with_clock_shift(SHIFT_S).await;
    let host_now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let before = redis.now_ms().await;
    assert!(before - host_now > SHIFT_S * 1_000 - 60_000, "the shim moved Redis's clock: {before} vs {host_now}");
    let baton = TestBaton::start(&redis.url(), test_config()).await;
    let mut env = Env { client: baton.agents().await, redis, baton };
    register(&mut env.client, Q, vec![cron_agent("hourly", "0 * * * *", pb::CatchUp::Unspecified)]).await;
    let after = env.redis.now_ms().await;
    let due = ms(&status(&mut env, "hourly").await.next_run_at);
    assert_eq!(due % 3_600_000, 0, "due at a whole hour: {due}");
    assert!(
        due > before && due <= after + 3_600_000,
        "the first whole hour after Register by the Redis clock ({before}..{after}), got {due}; by the host's it would be {}",
        (host_now / 3_600_000 + 1) * 3_600_000
    );
    assert!(acquire(&mut env.client, Q, "w", 1).await.is_empty(), "not due before its first fire");
}

// Unregister drops a cron agent's record of its next fire with its definition.
#[tokio::test]
async fn unregister_forgets_a_cron_agents_next_fire() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![cron_agent("tick", "* * * * * *", pb::CatchUp::Unspecified)]).await;
    let l = env.client.acquire(long_poll("w")).await.unwrap().into_inner().leases.pop().unwrap();
    env.client.complete(complete_req(&l, pb::Outcome::Success)).await.unwrap();
    let mut conn = env.redis.conn().await;
    let key = "baton:{q:cron}:cron";
    let recorded: bool = redis::cmd("HEXISTS").arg(key).arg("tick").query_async(&mut conn).await.unwrap();
    assert!(recorded, "the run's next fire was recorded");
    let req = pb::UnregisterRequest { queue: Q.into(), names: vec!["tick".into()], ..Default::default() };
    assert_eq!(env.client.unregister(req).await.unwrap().into_inner().removed, 1);
    let recorded: bool = redis::cmd("HEXISTS").arg(key).arg("tick").query_async(&mut conn).await.unwrap();
    assert!(!recorded, "forgotten with the agent");
}

// Every validation rule names its field; nothing is registered.
#[tokio::test]
async fn bad_cron_input_is_refused_naming_the_field() {
    let mut env = Env::start().await;
    let with = |f: &dyn Fn(&mut pb::Agent)| {
        let mut a = cron_agent("c", "*/5 * * * *", pb::CatchUp::Unspecified);
        f(&mut a);
        a
    };
    let cases: Vec<(pb::Agent, &str)> = vec![
        (with(&|a| a.cron = "61 * * * *".into()), "agents[0].cron"),
        (with(&|a| a.cron = "not cron".into()), "agents[0].cron"),
        (with(&|a| a.cron = "0 0 30 2 *".into()), "agents[0].cron"),
        (with(&|a| a.cron = "*".repeat(300)), "agents[0].cron"),
        (with(&|a| a.cron = "0 0 0 1 1 * 2030".into()), "agents[0].cron"), // no year field
        (with(&|a| a.cron = "0 0 * *".into()), "agents[0].cron"),
        (with(&|a| a.time_zone = "Mars/Olympus".into()), "agents[0].time_zone"),
        (with(&|a| a.interval = dur(60_000)), "agents[0].interval"),
        (with(&|a| a.catch_up = 99), "agents[0].catch_up"),
        (pb::Agent { time_zone: "UTC".into(), ..agent("c", 60_000, 30_000) }, "agents[0].time_zone"),
        (pb::Agent { catch_up: pb::CatchUp::Skip as i32, ..agent("c", 60_000, 30_000) }, "agents[0].catch_up"),
    ];
    for (a, field) in cases {
        let req =
            pb::RegisterRequest { request_id: String::new(), queue: Q.into(), agents: vec![a], reset_schedule: false };
        let e = env.client.register(req).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{field}: {e:?}");
        assert!(e.message().starts_with(field), "{field}: {}", e.message());
    }
    let e = env.client.get_agent(pb::GetAgentRequest { queue: Q.into(), name: "c".into() }).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "nothing registered");
}

//! AgentService end to end: a real redis-server, a real Baton on loopback, the generated client.

use crate::common;

use std::time::Duration;

use common::*;
use tonic::Code;

const Q: &str = "jobs";

// Register, Acquire, Heartbeat, Complete, GetAgent and ListAgents on the happy path.
#[tokio::test]
async fn lifecycle_happy_path() {
    let mut env = Env::start().await;
    let c = &mut env.client;
    let mut a = agent("a", 60_000, 30_000);
    a.payload = b"payload-a".to_vec();
    a.labels.insert("team".into(), "core".into());
    let r = register(c, Q, vec![a, agent("b", 60_000, 30_000), agent("c", 60_000, 30_000)]).await;
    assert_eq!((r.created, r.updated), (3, 0));

    // All three are due at the same time: ties go by name.
    let leases = acquire(c, Q, "w1", 2).await;
    let names: Vec<_> = leases.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(leases[1].token > leases[0].token, "tokens strictly increase");
    assert_eq!(leases[0].attempt, 1);
    let spec = leases[0].agent.as_ref().unwrap();
    assert_eq!(spec.payload, b"payload-a");
    assert_eq!(spec.labels["team"], "core");

    let got = c
        .get_agent(pb::GetAgentRequest { queue: Q.into(), name: "a".into() })
        .await
        .unwrap()
        .into_inner()
        .agent
        .unwrap();
    assert_eq!(got.state(), pb::AgentState::Working);
    assert_eq!(got.holder, "w1");
    assert_eq!(got.token, leases[0].token);

    let hb = c
        .heartbeat(pb::HeartbeatRequest {
            worker_id: "w1".into(),
            leases: leases
                .iter()
                .map(|l| pb::LeaseRef { queue: Q.into(), name: l.name.clone(), token: l.token, ..Default::default() })
                .collect(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(hb.extended.len(), 2);
    assert!(hb.lost.is_empty());
    assert!(ms(&hb.extended[0].deadline) >= ms(&leases[0].deadline));

    // SUCCESS: next run = acquired_at + interval, acquired_at = first deadline - timeout.
    let done = c.complete(complete_req(&leases[0], pb::Outcome::Success)).await.unwrap().into_inner();
    assert_eq!(ms(&done.next_run_at), ms(&leases[0].deadline) - 30_000 + 60_000);
    assert!(!done.dead_lettered && !done.removed);

    let list = c
        .list_agents(pb::ListAgentsRequest { queue: Q.into(), page_size: 0, ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    let states: Vec<_> = list.agents.iter().map(|a| (a.agent.as_ref().unwrap().name.as_str(), a.state())).collect();
    assert_eq!(
        states,
        [("a", pb::AgentState::Waiting), ("b", pb::AgentState::Working), ("c", pb::AgentState::Waiting)]
    );
    assert!(list.next_page_token.is_empty());
}

// Fencing tokens strictly increase per queue across acquires, releases and completes.
// A lease carries when it was granted (the acquire script's Redis TIME): its deadline is that
// plus the timeout, and a recurring agent's next run counts its interval from it.
#[tokio::test]
async fn a_lease_carries_its_grant_time() {
    let mut env = Env::start().await;
    let c = &mut env.client;
    register(c, Q, vec![agent("g", 60_000, 30_000)]).await;
    let before = env.redis.now_ms().await;
    let lease = acquire(c, Q, "w", 1).await.pop().expect("granted");
    let after = env.redis.now_ms().await;
    let granted = ms(&lease.granted_at);
    assert!((before..=after).contains(&granted), "granted at {granted}, not within {before}..={after}");
    assert_eq!(ms(&lease.deadline) - granted, 30_000, "deadline = grant + timeout");
    let done = c.complete(complete_req(&lease, pb::Outcome::Success)).await.unwrap().into_inner();
    assert_eq!(ms(&done.next_run_at) - granted, 60_000, "the interval counts from the grant");
}

#[tokio::test]
async fn tokens_strictly_increase() {
    let mut env = Env::start().await;
    let c = &mut env.client;
    register(c, Q, vec![agent("a", 0, 30_000)]).await;
    let mut last = 0;
    for _ in 0..20 {
        let l = acquire(c, Q, "w", 1).await.pop().unwrap();
        assert!(l.token > last);
        last = l.token;
        c.release(pb::ReleaseRequest { queue: Q.into(), name: "a".into(), token: l.token, delay: None }).await.unwrap();
    }
}

// One-shot agents (interval 0) disappear after a successful Complete, and retry after a failure.
#[tokio::test]
async fn one_shot_removed_after_success() {
    let mut env = Env::start().await;
    let c = &mut env.client;
    let mut a = agent("once", 0, 30_000);
    a.error_interval = dur(0);
    register(c, Q, vec![a]).await;
    let l = acquire(c, Q, "w", 1).await.pop().unwrap();
    let failed = c.complete(complete_req(&l, pb::Outcome::Unknown)).await.unwrap().into_inner();
    assert!(!failed.removed);
    let l = acquire(c, Q, "w", 1).await.pop().expect("retried at once (error_interval 0)");
    assert_eq!(l.attempt, 2);
    let done = c.complete(complete_req(&l, pb::Outcome::Success)).await.unwrap().into_inner();
    assert!(done.removed);
    assert!(done.next_run_at.is_none());
    let err = c.get_agent(pb::GetAgentRequest { queue: Q.into(), name: "once".into() }).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    assert!(acquire(c, Q, "w", 1).await.is_empty());
    let mut conn = env.redis.conn().await;
    let leftovers: Vec<String> = redis::cmd("KEYS").arg("*defs*").query_async(&mut conn).await.unwrap();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// Completes one fresh lease of agent `name` with `outcome`; returns (response, Redis time
/// before, Redis time after), so a test can bound `now + delay`.
async fn fail_once(
    env: &mut Env,
    name: &str,
    req: impl FnOnce(&pb::Lease) -> pb::CompleteRequest,
) -> (pb::CompleteResponse, i64, i64) {
    // Make the agent due now, keeping its streak.
    let mut conn = env.redis.conn().await;
    let _: () = redis::cmd("ZADD")
        .arg(format!("baton:{{q:{Q}}}:waiting"))
        .arg("XX")
        .arg(0)
        .arg(name)
        .query_async(&mut conn)
        .await
        .unwrap();
    let l = acquire(&mut env.client, Q, "w", 1).await.pop().expect("due");
    let before = env.redis.now_ms().await;
    let r = env.client.complete(req(&l)).await.unwrap().into_inner();
    let after = env.redis.now_ms().await;
    (r, before, after)
}

fn assert_delay((r, before, after): &(pb::CompleteResponse, i64, i64), delay: i64) {
    let next = ms(&r.next_run_at);
    assert!(
        next >= before + delay && next <= after + delay,
        "next {next} not within [{}, {}]",
        before + delay,
        after + delay
    );
}

// Each failure class gets the backoff of its class (the table of docs/agents.md); success resets the streak.
#[tokio::test]
async fn outcomes_reschedule_by_class() {
    let mut config = test_config();
    config.agent.permanent_forbidden_backoff_ms = 1_800_000;
    config.agent.throttled_base_ms = 30_000;
    config.agent.throttled_multiplier = 2.0;
    config.agent.throttled_cap_ms = 100_000;
    config.agent.max_immediate_retries = 1;
    let mut env = Env::with_config(config).await;
    let mut a = agent("x", 60_000, 30_000);
    a.error_interval = dur(7_000);
    register(&mut env.client, Q, vec![a]).await;
    let with = |o: pb::Outcome| move |l: &pb::Lease| complete_req(l, o);

    let r = fail_once(&mut env, "x", with(pb::Outcome::PermanentForbidden)).await;
    assert_delay(&r, 1_800_000);
    assert_eq!(r.0.failure_streak, 1);

    // THROTTLED: base × multiplier^(streak-1), capped. Streak is now 2, 3, 4.
    assert_delay(&fail_once(&mut env, "x", with(pb::Outcome::Throttled)).await, 60_000);
    assert_delay(&fail_once(&mut env, "x", with(pb::Outcome::Throttled)).await, 100_000); // 120 s capped
    let r = fail_once(&mut env, "x", with(pb::Outcome::Unknown)).await;
    assert_delay(&r, 7_000);
    assert_eq!(r.0.failure_streak, 4);

    // SUCCESS resets the streak; TRANSIENT then retries at once once (max_immediate_retries=1).
    let r = fail_once(&mut env, "x", with(pb::Outcome::Success)).await;
    assert_eq!(r.0.failure_streak, 0);
    assert_delay(&fail_once(&mut env, "x", with(pb::Outcome::Transient)).await, 0);
    assert_delay(&fail_once(&mut env, "x", with(pb::Outcome::ServerError)).await, 7_000);

    // retry_after replaces the computed delay when larger, not when smaller.
    let r = fail_once(&mut env, "x", |l| pb::CompleteRequest {
        retry_after: dur(500_000),
        ..complete_req(l, pb::Outcome::Unknown)
    })
    .await;
    assert_delay(&r, 500_000);
    let r = fail_once(&mut env, "x", |l| pb::CompleteRequest {
        retry_after: dur(1_000),
        ..complete_req(l, pb::Outcome::Unknown)
    })
    .await;
    assert_delay(&r, 7_000);

    // The failure streak lives in Redis, visible through GetAgent, and attempts count it.
    let got = env
        .client
        .get_agent(pb::GetAgentRequest { queue: Q.into(), name: "x".into() })
        .await
        .unwrap()
        .into_inner()
        .agent
        .unwrap();
    assert_eq!(got.failure_streak, 4);
    let mut conn = env.redis.conn().await;
    let _: () = redis::cmd("ZADD")
        .arg(format!("baton:{{q:{Q}}}:waiting"))
        .arg("XX")
        .arg(0)
        .arg("x")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(acquire(&mut env.client, Q, "w", 1).await[0].attempt, 5);
}

// Jitter spreads every non-zero backoff by ±ratio, and never applies to an immediate retry.
#[tokio::test]
async fn jitter_stays_within_ratio() {
    let mut config = test_config();
    config.agent.jitter_ratio = 0.2;
    let mut env = Env::with_config(config).await;
    let mut a = agent("j", 60_000, 30_000);
    a.error_interval = dur(100_000);
    register(&mut env.client, Q, vec![a]).await;
    let mut delays = std::collections::BTreeSet::new();
    for _ in 0..20 {
        let (r, before, after) = fail_once(&mut env, "j", |l| complete_req(l, pb::Outcome::Unknown)).await;
        let next = ms(&r.next_run_at);
        assert!(next >= before + 80_000 && next <= after + 120_000, "jittered delay out of ±20%");
        delays.insert(next - before);
    }
    assert!(delays.len() > 10, "jitter should vary the delay: {delays:?}");
}

// Past max_attempts consecutive failures the agent is parked in the dead-letter set.
#[tokio::test]
async fn max_attempts_dead_letters() {
    let mut env = Env::start().await;
    let mut a = agent("flaky", 60_000, 30_000);
    a.max_attempts = 3;
    a.error_interval = dur(0);
    register(&mut env.client, Q, vec![a]).await;
    for attempt in 1..=3 {
        let l = acquire(&mut env.client, Q, "w", 1).await.pop().expect("due again");
        assert_eq!(l.attempt, attempt);
        let mut req = complete_req(&l, pb::Outcome::Unknown);
        req.message = format!("boom {attempt}");
        let r = env.client.complete(req).await.unwrap().into_inner();
        assert_eq!(r.dead_lettered, attempt == 3);
        assert_eq!(r.failure_streak, attempt);
    }
    assert!(acquire(&mut env.client, Q, "w", 1).await.is_empty());
    let got = env
        .client
        .get_agent(pb::GetAgentRequest { queue: Q.into(), name: "flaky".into() })
        .await
        .unwrap()
        .into_inner()
        .agent
        .unwrap();
    assert_eq!(got.state(), pb::AgentState::DeadLettered);
    let mut conn = env.redis.conn().await;
    let info: String =
        redis::cmd("HGET").arg(format!("baton:{{q:{Q}}}:dlqinfo")).arg("flaky").query_async(&mut conn).await.unwrap();
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!(info["message"], "boom 3");
    assert_eq!(info["attempts"], 3);
    assert_eq!(info["outcome"], "UNKNOWN");

    // Registering again with reset_schedule brings it back with a clean streak.
    env.client
        .register(pb::RegisterRequest {
            request_id: String::new(),
            queue: Q.into(),
            agents: vec![agent("flaky", 60_000, 30_000)],
            reset_schedule: true,
        })
        .await
        .unwrap();
    let l = acquire(&mut env.client, Q, "w", 1).await.pop().expect("due after reset");
    assert_eq!(l.attempt, 1);
}

// A stale or unknown token on Heartbeat, Complete or Release is rejected and changes nothing.
#[tokio::test]
async fn stale_tokens_are_rejected_and_change_nothing() {
    let mut env = Env::start().await;
    let c = &mut env.client;
    register(c, Q, vec![agent("s", 0, 30_000)]).await;
    let old = acquire(c, Q, "w1", 1).await.pop().unwrap();
    c.release(pb::ReleaseRequest { queue: Q.into(), name: "s".into(), token: old.token, delay: None }).await.unwrap();
    let current = acquire(c, Q, "w2", 1).await.pop().unwrap();
    assert!(current.token > old.token);

    let before = env.redis.snapshot().await;
    for token in [old.token, current.token + 1] {
        let err = c
            .complete(pb::CompleteRequest { token, ..complete_req(&current, pb::Outcome::Success) })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::FailedPrecondition);
        assert_eq!(reason(&err), "LEASE_LOST");
        let err =
            c.release(pb::ReleaseRequest { queue: Q.into(), name: "s".into(), token, delay: None }).await.unwrap_err();
        assert_eq!((err.code(), reason(&err).as_str()), (Code::FailedPrecondition, "LEASE_LOST"));
        let err = c
            .complete(pb::CompleteRequest {
                name: "unknown".into(),
                token,
                ..complete_req(&current, pb::Outcome::Success)
            })
            .await
            .unwrap_err();
        assert_eq!(reason(&err), "LEASE_LOST");
    }
    assert_eq!(env.redis.snapshot().await, before, "rejected Complete/Release changed state");

    let hb = c
        .heartbeat(pb::HeartbeatRequest {
            worker_id: "w1".into(),
            leases: vec![
                pb::LeaseRef { queue: Q.into(), name: "s".into(), token: old.token, ..Default::default() },
                pb::LeaseRef { queue: Q.into(), name: "nope".into(), token: 5, ..Default::default() },
            ],
        })
        .await
        .unwrap()
        .into_inner();
    assert!(hb.extended.is_empty());
    assert_eq!(hb.lost.len(), 2);
    let after = env.redis.snapshot().await;
    assert_eq!(after, before, "a lost heartbeat changed queue state");

    // The current holder is unaffected.
    let done = c.complete(complete_req(&current, pb::Outcome::Success)).await.unwrap().into_inner();
    assert!(done.removed);
}

// A worker that never completes: its lease stays visible as held past its deadline (sweepers
// come later), nobody else gets it, and Heartbeat keeps it alive.
#[tokio::test]
async fn lease_held_past_deadline_until_heartbeat_or_complete() {
    let mut env = Env::start().await;
    let c = &mut env.client;
    register(c, Q, vec![agent("slow", 60_000, 300)]).await;
    let l = acquire(c, Q, "w1", 1).await.pop().unwrap();
    let deadline = ms(&l.deadline);
    while env.redis.now_ms().await <= deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let got = c
        .get_agent(pb::GetAgentRequest { queue: Q.into(), name: "slow".into() })
        .await
        .unwrap()
        .into_inner()
        .agent
        .unwrap();
    assert_eq!(got.state(), pb::AgentState::Working);
    assert_eq!(got.holder, "w1");
    assert_eq!(ms(&got.deadline), deadline);
    assert!(acquire(c, Q, "w2", 1).await.is_empty(), "a held lease is never handed to another worker");

    let hb = c
        .heartbeat(pb::HeartbeatRequest {
            worker_id: "w1".into(),
            leases: vec![pb::LeaseRef { queue: Q.into(), name: "slow".into(), token: l.token, ..Default::default() }],
        })
        .await
        .unwrap()
        .into_inner();
    let extended = ms(&hb.extended[0].deadline);
    assert!(extended > deadline);
    assert!(extended >= env.redis.now_ms().await);
    let mut conn = env.redis.conn().await;
    let seen: f64 =
        redis::cmd("ZSCORE").arg(format!("baton:{{q:{Q}}}:workers")).arg("w1").query_async(&mut conn).await.unwrap();
    assert!(seen as i64 >= extended - 300, "heartbeat records the worker as alive");
    c.complete(complete_req(&l, pb::Outcome::Success)).await.expect("the holder can still complete");
}

// Re-registering keeps the schedule (and a held lease); reset_schedule makes it due at once.
#[tokio::test]
async fn reregister_keeps_schedule_unless_reset() {
    let mut env = Env::start().await;
    let c = &mut env.client;
    register(c, Q, vec![agent("r", 3_600_000, 30_000)]).await;
    let l = acquire(c, Q, "w", 1).await.pop().unwrap();
    // Update while held: the lease is untouched; the new definition applies from Complete.
    let r = register(c, Q, vec![agent("r", 7_200_000, 30_000)]).await;
    assert_eq!((r.created, r.updated), (0, 1));
    let done = c.complete(complete_req(&l, pb::Outcome::Success)).await.unwrap().into_inner();
    assert_eq!(ms(&done.next_run_at), ms(&l.deadline) - 30_000 + 7_200_000);

    register(c, Q, vec![agent("r", 7_200_000, 30_000)]).await;
    assert!(acquire(c, Q, "w", 1).await.is_empty(), "re-register keeps the schedule");
    c.register(pb::RegisterRequest {
        request_id: String::new(),
        queue: Q.into(),
        agents: vec![agent("r", 7_200_000, 30_000)],
        reset_schedule: true,
    })
    .await
    .unwrap();
    assert_eq!(acquire(c, Q, "w", 1).await.len(), 1, "reset makes it due");
}

// Unregister removes waiting agents at once; a held one finishes and is not rescheduled.
#[tokio::test]
async fn unregister_lets_held_lease_finish() {
    let mut env = Env::start().await;
    let c = &mut env.client;
    register(c, Q, vec![agent("held", 60_000, 30_000), agent("idle", 60_000, 30_000)]).await;
    let l = acquire(c, Q, "w", 1).await.pop().unwrap();
    assert_eq!(l.name, "held");
    let r = c
        .unregister(pb::UnregisterRequest {
            queue: Q.into(),
            names: vec!["held".into(), "idle".into(), "ghost".into()],
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.removed, 2);
    assert!(acquire(c, Q, "w", 1).await.is_empty());
    let hb = c
        .heartbeat(pb::HeartbeatRequest {
            worker_id: "w".into(),
            leases: vec![pb::LeaseRef { queue: Q.into(), name: "held".into(), token: l.token, ..Default::default() }],
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(hb.extended.len(), 1, "a held lease may keep running");
    let done = c.complete(complete_req(&l, pb::Outcome::Success)).await.unwrap().into_inner();
    assert!(done.removed);
    let list = c
        .list_agents(pb::ListAgentsRequest { queue: Q.into(), page_size: 10, ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    assert!(list.agents.is_empty());
}

// Release hands a lease back without counting a failure, after the requested delay.
#[tokio::test]
async fn release_does_not_count_a_failure() {
    let mut env = Env::start().await;
    let c = &mut env.client;
    register(c, Q, vec![agent("rel", 60_000, 30_000)]).await;
    let l = acquire(c, Q, "w", 1).await.pop().unwrap();
    let before = env.redis.now_ms().await;
    let r = c
        .release(pb::ReleaseRequest { queue: Q.into(), name: "rel".into(), token: l.token, delay: dur(5_000) })
        .await
        .unwrap()
        .into_inner();
    let after = env.redis.now_ms().await;
    let next = ms(&r.next_run_at);
    assert!(next >= before + 5_000 && next <= after + 5_000);
    let got = c
        .get_agent(pb::GetAgentRequest { queue: Q.into(), name: "rel".into() })
        .await
        .unwrap()
        .into_inner()
        .agent
        .unwrap();
    assert_eq!((got.state(), got.failure_streak), (pb::AgentState::Waiting, 0));
}

/// Every page of a ListAgents listing: the names of each page (each at most `page_size`).
async fn list_pages(
    c: &mut baton::pb::agent_service_client::AgentServiceClient<tonic::transport::Channel>,
    prefix: &str,
    page_size: u32,
) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut token = String::new();
    loop {
        let page = c
            .list_agents(pb::ListAgentsRequest {
                queue: Q.into(),
                page_size,
                page_token: token,
                name_prefix: prefix.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(page.agents.len() <= page_size as usize, "a page of {} for page_size {page_size}", page.agents.len());
        pages.push(page.agents.into_iter().map(|a| a.agent.unwrap().name).collect());
        if page.next_page_token.is_empty() {
            return pages;
        }
        assert!(pages.len() < 10_000, "the listing never ends");
        token = page.next_page_token;
    }
}

// ListAgents pages through a queue, each page sorted by name, each agent exactly once (the
// queue does not change during the listing), whatever the page size: pages that end inside an
// HSCAN batch go on past its last name. 250 agents make the definitions a real hash table
// (more than 128 entries), 10 small ones a compact one that HSCAN returns whole.
#[tokio::test]
async fn list_agents_pages_through_every_agent_once() {
    let mut env = Env::start().await;
    let c = &mut env.client;
    let agents: Vec<_> = (0..250).map(|i| agent(&format!("agent-{i:03}"), 60_000, 30_000)).collect();
    register(c, Q, agents).await;
    let expected: Vec<_> = (0..250).map(|i| format!("agent-{i:03}")).collect();
    for page_size in [1, 7, 100, 1000] {
        let pages = list_pages(c, "", page_size).await;
        for page in &pages {
            assert!(page.windows(2).all(|w| w[0] < w[1]), "a page not sorted by name: {page:?}");
        }
        let mut names: Vec<_> = pages.concat();
        names.sort();
        assert_eq!(names, expected, "page_size {page_size}");
    }
    let mut env = Env::start().await;
    let c = &mut env.client;
    register(c, Q, (0..10).map(|i| agent(&format!("small-{i}"), 0, 30_000)).collect()).await;
    let mut names = list_pages(c, "", 3).await.concat();
    names.sort();
    assert_eq!(names, (0..10).map(|i| format!("small-{i}")).collect::<Vec<_>>());
}

// ListAgents with name_prefix lists only the names starting with it, each once, and a page
// token Baton did not hand out is INVALID_ARGUMENT.
#[tokio::test]
async fn list_agents_by_name_prefix() {
    let mut env = Env::start().await;
    let c = &mut env.client;
    let mut agents: Vec<_> = (0..200).map(|i| agent(&format!("b-{i:03}"), 60_000, 30_000)).collect();
    agents.extend((0..200).map(|i| agent(&format!("other-{i:03}"), 60_000, 30_000)));
    agents.extend(["a-1", "b", "bz", "b.x", "c-1", "b-"].map(|n| agent(n, 60_000, 30_000)));
    register(c, Q, agents).await;
    let mut names = list_pages(c, "b-", 3).await.concat();
    names.sort();
    let mut expected = vec!["b-".to_string()];
    expected.extend((0..200).map(|i| format!("b-{i:03}")));
    assert_eq!(names, expected);
    assert_eq!(list_pages(c, "b-199", 5).await.concat(), ["b-199"]);
    assert_eq!(list_pages(c, "zz", 5).await.concat(), Vec::<String>::new());
    for token in ["a-1", "12", "x/0/", "0/abc/", "0//"] {
        let bad = c
            .list_agents(pb::ListAgentsRequest { queue: Q.into(), page_token: token.into(), ..Default::default() })
            .await
            .unwrap_err();
        assert_eq!(bad.code(), Code::InvalidArgument, "{token}");
        assert!(bad.message().contains("page_token"), "{}", bad.message());
    }
}

// Acquire reads at most scan_limit waiting entries, and drops entries with no definition.
#[tokio::test]
async fn bounded_scan_and_repair() {
    let mut config = test_config();
    config.limits.scan_limit = 5;
    let mut env = Env::with_config(config).await;
    register(&mut env.client, Q, (0..10).map(|i| agent(&format!("a{i}"), 60_000, 30_000)).collect()).await;
    let mut conn = env.redis.conn().await;
    let _: () = redis::cmd("ZADD")
        .arg(format!("baton:{{q:{Q}}}:waiting"))
        .arg(0)
        .arg("orphan")
        .query_async(&mut conn)
        .await
        .unwrap();
    // The orphan sorts first (score 0): the scan of 5 sees it and four agents.
    let leases = acquire(&mut env.client, Q, "w", 100).await;
    assert_eq!(leases.len(), 4);
    let orphan: Option<f64> = redis::cmd("ZSCORE")
        .arg(format!("baton:{{q:{Q}}}:waiting"))
        .arg("orphan")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(orphan.is_none(), "an entry with no definition is repaired");
    assert_eq!(acquire(&mut env.client, Q, "w", 100).await.len(), 5);
    assert_eq!(acquire(&mut env.client, Q, "w", 100).await.len(), 1);
}

/// FUNCTION LOAD calls Redis has run, from INFO commandstats.
async fn library_loads(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(conn).await.unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_function|load:calls="))
        .and_then(|rest| rest.split(',').next()?.parse::<u64>().ok())
        .unwrap_or(0)
}

// The first replica loads the function library; a second one of the same version finds it
// there and loads nothing (a load blocks Redis for milliseconds), and both serve.
#[tokio::test]
async fn a_second_replica_finds_the_library_loaded() {
    let mut env = Env::start().await;
    let mut conn = env.redis.conn().await;
    // A call answered: the replica has started (it loads the library before it serves).
    register(&mut env.client, Q, vec![agent("a", 60_000, 30_000)]).await;
    assert_eq!(library_loads(&mut conn).await, 1, "the first replica loaded it");
    let other = TestBaton::start(&env.redis.url(), test_config()).await;
    register(&mut other.agents().await, Q, vec![agent("b", 60_000, 30_000)]).await;
    assert_eq!(library_loads(&mut conn).await, 1, "the second replica loaded nothing");
    assert_eq!(acquire(&mut env.client, Q, "w", 2).await.len(), 2);
    other.stop().await.unwrap();
}

// After FUNCTION FLUSH (as after a Redis restart without persistence), calls still succeed:
// the function library is loaded again. SCRIPT FLUSH changes nothing Baton needs.
#[tokio::test]
async fn a_flushed_function_library_is_loaded_again() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![agent("n", 60_000, 30_000)]).await;
    let mut conn = env.redis.conn().await;
    let flush = redis::cmd("FUNCTION").arg("FLUSH").clone();
    let libraries = |conn: redis::aio::MultiplexedConnection| async move {
        let mut conn = conn;
        let list: Vec<redis::Value> = redis::cmd("FUNCTION").arg("LIST").query_async(&mut conn).await.unwrap();
        list.len()
    };
    let _: () = flush.query_async(&mut conn).await.unwrap();
    assert_eq!(libraries(conn.clone()).await, 0);
    let l = acquire(&mut env.client, Q, "w", 1).await.pop().expect("acquire after FUNCTION FLUSH");
    assert_eq!(libraries(conn.clone()).await, 1, "the acquire loaded the library again");
    let _: () = flush.query_async(&mut conn).await.unwrap();
    env.client.complete(complete_req(&l, pb::Outcome::Success)).await.expect("complete after FUNCTION FLUSH");
    let _: () = flush.query_async(&mut conn).await.unwrap();
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query_async(&mut conn).await.unwrap();
    register(&mut env.client, Q, vec![agent("m", 60_000, 30_000)]).await;

    // Calls in flight when Redis lost the library load it once between them, not once each
    // (a load blocks Redis for milliseconds).
    let _: () = flush.query_async(&mut conn).await.unwrap();
    let before = library_loads(&mut conn).await;
    let reads = (0..20).map(|_| {
        let mut client = env.client.clone();
        async move { client.get_agent(pb::GetAgentRequest { queue: Q.into(), name: "m".into() }).await.map(drop) }
    });
    for read in futures::future::join_all(reads).await {
        read.expect("a read after FUNCTION FLUSH");
    }
    assert_eq!(library_loads(&mut conn).await - before, 1, "20 reads at once loaded the library once");
}

// A long poll on an empty queue is answered as soon as an agent is registered, even through
// another replica; a wait that ends with nothing due returns no leases, not an error.
#[tokio::test]
async fn long_poll_wakes_across_replicas() {
    let env = Env::start().await;
    let other = TestBaton::start(&env.redis.url(), test_config()).await;
    let mut via_b = other.agents().await;
    let mut via_a = env.client.clone();

    let empty = via_a
        .acquire(pb::AcquireRequest { queue: Q.into(), worker_id: "w".into(), max_leases: 1, wait: dur(200) })
        .await
        .unwrap()
        .into_inner();
    assert!(empty.leases.is_empty());

    let waiter = tokio::spawn(async move {
        via_a
            .acquire(pb::AcquireRequest { queue: Q.into(), worker_id: "w".into(), max_leases: 1, wait: dur(20_000) })
            .await
            .unwrap()
            .into_inner()
    });
    // Let the waiter reach its wait; the outcome does not depend on it, only the speed.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = std::time::Instant::now();
    register(&mut via_b, Q, vec![agent("late", 60_000, 30_000)]).await;
    let got = waiter.await.unwrap();
    assert_eq!(got.leases.len(), 1);
    assert!(started.elapsed() < Duration::from_secs(10), "woken by the registration, not by the end of the wait");
    other.stop().await.unwrap();
}

// A long poll waits for an agent whose next run is in the future, and gets it once due.
#[tokio::test]
async fn long_poll_sleeps_until_next_due() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![agent("soon", 60_000, 30_000)]).await;
    let l = acquire(&mut env.client, Q, "w", 1).await.pop().unwrap();
    env.client
        .release(pb::ReleaseRequest { queue: Q.into(), name: "soon".into(), token: l.token, delay: dur(300) })
        .await
        .unwrap();
    let got = env
        .client
        .acquire(pb::AcquireRequest { queue: Q.into(), worker_id: "w".into(), max_leases: 1, wait: dur(20_000) })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(got.leases.len(), 1);
    assert!(ms(&got.leases[0].deadline) - 30_000 >= ms(&l.deadline) - 30_000 + 300, "not handed out before it was due");
}

// Graceful shutdown answers waiting long polls at once.
#[tokio::test]
async fn shutdown_answers_long_polls() {
    let env = Env::start().await;
    let mut c = env.client.clone();
    let waiter = tokio::spawn(async move {
        c.acquire(pb::AcquireRequest { queue: Q.into(), worker_id: "w".into(), max_leases: 1, wait: dur(60_000) }).await
    });
    // The long poll is waiting once its queue's wake-up channel is followed.
    let redis = &env.redis;
    eventually(Duration::from_secs(30), "the long poll follows its queue's channel", || async move {
        let subscribed: Vec<(String, u64)> = redis::cmd("PUBSUB")
            .arg("NUMSUB")
            .arg(format!("baton:{{q:{Q}}}:wake"))
            .query_async(&mut redis.conn().await)
            .await
            .unwrap();
        subscribed.first().is_some_and(|(_, n)| *n > 0)
    })
    .await;
    let started = std::time::Instant::now();
    env.baton.stop().await.unwrap();
    let answer = waiter.await.unwrap().expect("long poll answered, not cut");
    assert!(answer.into_inner().leases.is_empty());
    assert!(started.elapsed() < Duration::from_secs(10));
}

// The hot scripts read timeout_ms and interval_ms out of the stored definition without decoding
// it: labels that look like those fields (keys and values) must not be taken for them.
#[tokio::test]
async fn labels_never_pass_for_definition_fields() {
    let mut env = Env::start().await;
    let mut a = agent("tricky", 0, 30_000);
    a.labels.insert("timeout_ms".into(), "1".into());
    a.labels.insert("interval_ms".into(), r#""timeout_ms":2,"interval_ms":3"#.into());
    register(&mut env.client, Q, vec![a]).await;
    let before = env.redis.now_ms().await;
    let l = acquire(&mut env.client, Q, "w", 1).await.remove(0);
    assert!(ms(&l.deadline) >= before + 30_000, "the lease got the agent's 30 s timeout");
    let done = env.client.complete(complete_req(&l, pb::Outcome::Success)).await.unwrap().into_inner();
    assert!(done.removed, "interval 0: a one-shot agent, removed");
}

/// Many leases held at once are looked up by name in hash tables, not in listpacks Redis
/// searches from one end: once 16 are held, `working` and `leases` are converted, and nothing
/// of the conversion stays behind; a lease end and a grant still find them. Below 16 they are
/// left as Redis made them.
#[tokio::test]
async fn many_leases_held_are_kept_in_hash_tables() {
    let mut env = Env::start().await;
    let c = &mut env.client;
    register(c, Q, (0..40).map(|i| agent(&format!("a{i}"), 0, 30_000)).collect()).await;
    let mut conn = env.redis.conn().await;
    let (working, leases) = (format!("baton:{{q:{Q}}}:working"), format!("baton:{{q:{Q}}}:leases"));
    let few = acquire(c, Q, "w", 15).await;
    assert_eq!(few.len(), 15);
    assert_eq!(encoding(&mut conn, &working).await, "listpack", "15 held: left as Redis made it");
    assert_eq!(encoding(&mut conn, &leases).await, "listpack");
    let more = acquire(c, Q, "w", 1).await;
    assert_eq!(more.len(), 1);
    assert_eq!(encoding(&mut conn, &working).await, "skiplist", "16 held");
    assert_eq!(encoding(&mut conn, &leases).await, "hashtable");
    let held: usize = redis::cmd("ZCARD").arg(&working).query_async(&mut conn).await.unwrap();
    let records: usize = redis::cmd("HLEN").arg(&leases).query_async(&mut conn).await.unwrap();
    assert_eq!((held, records), (16, 16), "the element that converted them is gone");
    let l = &few[0];
    let done = c.complete(complete_req(l, pb::Outcome::Success)).await.unwrap().into_inner();
    assert!(done.removed);
    assert_eq!(acquire(c, Q, "w", 30).await.len(), 24, "the rest are granted");
}

async fn encoding(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> String {
    redis::cmd("OBJECT").arg("ENCODING").arg(key).query_async(conn).await.unwrap()
}

//! Idempotency modes beyond keep-first: replace (keep the newest waiting agent) and debounce
//! (one run, a window after the last registration). Each is decided in registerAgents, so
//! racing registrations on two replicas leave exactly one agent per key.

use crate::common;

use baton::pb::agent_service_client::AgentServiceClient;
use common::*;
use tonic::{transport::Channel, Code};

const Q: &str = "dm";

fn keyed(name: &str, key: &str, mode: pb::IdempotencyMode, debounce_ms: u64) -> pb::Agent {
    pb::Agent {
        idempotency_key: key.into(),
        idempotency_mode: mode as i32,
        debounce: if debounce_ms > 0 { dur(debounce_ms) } else { None },
        payload: name.as_bytes().to_vec(),
        ..agent(name, 0, 30_000)
    }
}

async fn register_one(c: &mut AgentServiceClient<Channel>, a: pb::Agent) -> pb::RegisteredAgent {
    let req = pb::RegisterRequest { queue: Q.into(), agents: vec![a], ..Default::default() };
    c.register(req).await.unwrap().into_inner().agents.pop().unwrap()
}

async fn names(c: &mut AgentServiceClient<Channel>) -> Vec<String> {
    let req = pb::ListAgentsRequest { queue: Q.into(), page_size: 1000, ..Default::default() };
    let mut names: Vec<_> =
        c.list_agents(req).await.unwrap().into_inner().agents.into_iter().map(|a| a.agent.unwrap().name).collect();
    names.sort();
    names
}

// Replace: a newer registration removes a waiting holder, which finishes cancelled ("replaced
// by"), and takes the key; a running holder is never touched (its lease still completes), and
// the newer agent is created beside it.
#[tokio::test]
async fn replace_keeps_the_newest_waiting_agent_and_never_touches_a_running_one() {
    let mut env = Env::start().await;
    let c = &mut env.client;
    let first = register_one(c, keyed("r1", "k", pb::IdempotencyMode::Replace, 0)).await;
    assert!(first.created && first.replaced.is_empty(), "{first:?}");
    let second = register_one(c, keyed("r2", "k", pb::IdempotencyMode::Replace, 0)).await;
    assert_eq!((second.created, second.replaced.as_str(), second.deduplicated), (true, "r1", false));
    assert_eq!(names(c).await, ["r2"]);
    let old = c
        .r#await(pb::AwaitRequest { queue: Q.into(), name: "r1".into(), ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    let finish = old.result.expect("the replaced agent's finish is kept");
    assert_eq!((finish.finish(), finish.message.as_str()), (pb::Finish::Cancelled, "replaced by r2"));

    // r2 runs; r3 is created beside it and r2's run completes.
    let lease = acquire(c, Q, "w", 1).await.pop().expect("r2 is due");
    assert_eq!(lease.name, "r2");
    let third = register_one(c, keyed("r3", "k", pb::IdempotencyMode::Replace, 0)).await;
    assert_eq!((third.created, third.replaced.as_str()), (true, ""));
    c.complete(complete_req(&lease, pb::Outcome::Success)).await.expect("the running holder's lease holds");
    assert_eq!(names(c).await, ["r3"]);
    // Keep-first (the default) still answers the holder.
    let kept = register_one(c, keyed("r4", "k", pb::IdempotencyMode::Unspecified, 0)).await;
    assert_eq!((kept.deduplicated, kept.name.as_str()), (true, "r3"));
}

// Debounce: a burst of registrations under one key makes one agent, holding the newest
// payload, due the window after the last registration; once it runs, the next registration
// starts a new agent.
#[tokio::test]
async fn debounce_makes_one_agent_due_a_window_after_the_last_registration() {
    let mut env = Env::start().await;
    let c = &mut env.client;
    let window = 60_000;
    let first = register_one(c, keyed("d1", "k", pb::IdempotencyMode::Debounce, window)).await;
    assert!(first.created && !first.debounced, "{first:?}");
    let mut last = None;
    for name in ["d2", "d3"] {
        let got = register_one(c, keyed(name, "k", pb::IdempotencyMode::Debounce, window)).await;
        assert_eq!((got.name.as_str(), got.debounced, got.deduplicated, got.created), ("d1", true, true, false));
        last = Some(std::time::SystemTime::now());
    }
    assert_eq!(names(c).await, ["d1"]);
    let status = c
        .get_agent(pb::GetAgentRequest { queue: Q.into(), name: "d1".into() })
        .await
        .unwrap()
        .into_inner()
        .agent
        .unwrap();
    assert_eq!(status.agent.as_ref().unwrap().payload, b"d3", "the newest registration's payload");
    let next_run = ms(&status.next_run_at);
    let last_ms = last.unwrap().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    assert!(next_run >= last_ms + window as i64 - 5_000, "due {next_run}, the last registration at {last_ms}");
    assert!(acquire(c, Q, "w", 10).await.is_empty(), "due before the window passed");

    // A debounce of 1 ms: due at once; while it runs a registration makes a new agent.
    let mut env = Env::start().await;
    let c = &mut env.client;
    register_one(c, keyed("e1", "k", pb::IdempotencyMode::Debounce, 1)).await;
    // A long poll: woken when e1 becomes due.
    let req = pb::AcquireRequest { queue: Q.into(), worker_id: "w".into(), max_leases: 1, wait: dur(10_000) };
    let lease = c.acquire(req).await.unwrap().into_inner().leases.pop().expect("e1 due within the wait");
    assert_eq!(lease.name, "e1");
    let during = register_one(c, keyed("e2", "k", pb::IdempotencyMode::Debounce, 1)).await;
    assert!(during.created && !during.debounced, "{during:?}");
    c.complete(complete_req(&lease, pb::Outcome::Success)).await.unwrap();
    assert_eq!(names(c).await, ["e2"]);
}

// 16 registrations racing on two replicas, each under its own name and one key: exactly one
// agent is left, for replace and for debounce.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_registrations_on_two_replicas_leave_exactly_one_agent() {
    for mode in [pb::IdempotencyMode::Replace, pb::IdempotencyMode::Debounce] {
        let env = Env::start().await;
        let other = TestBaton::start(&env.redis.url(), test_config()).await;
        let clients = [env.client.clone(), other.agents().await];
        let racers = (0..16).map(|i| {
            let mut c = clients[i % 2].clone();
            let a =
                keyed(&format!("x{i:02}"), "k", mode, if mode == pb::IdempotencyMode::Debounce { 60_000 } else { 0 });
            tokio::spawn(async move { register_one(&mut c, a).await })
        });
        let answers = futures::future::join_all(racers).await;
        let created = answers.iter().filter(|a| a.as_ref().unwrap().created).count();
        let mut c = env.client.clone();
        assert_eq!(names(&mut c).await.len(), 1, "{mode:?}: {answers:?}");
        match mode {
            pb::IdempotencyMode::Replace => assert_eq!(created, 16, "each replaced the one before"),
            _ => assert_eq!(created, 1, "the others went into it"),
        }
        other.stop().await.unwrap();
    }
}

// Bad input names its field and writes nothing.
#[tokio::test]
async fn modes_are_validated_and_a_refused_register_writes_nothing() {
    let mut env = Env::start().await;
    let cases = [
        (
            pb::Agent { idempotency_mode: pb::IdempotencyMode::Replace as i32, ..agent("a", 0, 30_000) },
            "idempotency_mode",
        ),
        (pb::Agent { idempotency_mode: 9, ..keyed("a", "k", pb::IdempotencyMode::Replace, 0) }, "idempotency_mode"),
        (pb::Agent { debounce: dur(1_000), ..keyed("a", "k", pb::IdempotencyMode::Replace, 0) }, "debounce"),
        (pb::Agent { debounce: None, ..keyed("a", "k", pb::IdempotencyMode::Debounce, 1_000) }, "debounce"),
        (keyed("a", "k", pb::IdempotencyMode::Debounce, 366 * 86_400_000), "debounce"),
    ];
    let before = env.redis.snapshot().await;
    for (a, field) in cases {
        let req = pb::RegisterRequest { queue: Q.into(), agents: vec![a], ..Default::default() };
        let e = env.client.register(req).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{field}: {e:?}");
        assert!(e.message().contains(&format!("agents[0].{field}")), "{field}: {}", e.message());
    }
    assert_eq!(env.redis.snapshot().await, before, "a refused Register wrote to Redis");
}

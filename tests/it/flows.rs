//! Work that depends on work, against real Redis through the generated client: results kept
//! on finish and Await, dependencies between agents (`Agent.after`) with their failure
//! policies, fan-out and fan-in past one release page, and idempotency keys.
//!
//! Invariants checked:
//! - a child never runs before every parent finished successfully (or failed under
//!   RUN_ANYWAY), and runs exactly once after that; its lease carries its parents' results;
//! - a parent's failure applies each child's policy: WAIT keeps it blocked until a retried
//!   parent succeeds, CANCEL removes it (finished as cancelled), RUN_ANYWAY runs it;
//! - Await answers the finish as soon as it is recorded (woken, not polling), and later ones
//!   from what is kept;
//! - a registration whose idempotency key is held creates nothing and answers the holder (with
//!   its result once finished), also after the holder was removed;
//! - bad input (cycles, unknown parents, misplaced fields) is INVALID_ARGUMENT naming the field
//!   and changes nothing.
//!
//! What a replica that died right after its Complete script leaves in the outbox (released by
//! the sweep, many entries per page, counted in the queue's figures meanwhile) is checked in
//! the flows' own tests (`src/flows/tests.rs`).

use crate::common;

use std::{collections::HashMap, time::Duration};

use baton::pb::admin_service_client::AdminServiceClient;
use common::*;
use tonic::Code;

fn one_shot(name: &str) -> pb::Agent {
    agent(name, 0, 30_000)
}

fn after(name: &str, parents: &[(&str, &str)], on_failure: pb::ParentFailure) -> pb::Agent {
    pb::Agent {
        after: parents
            .iter()
            .map(|(q, n)| pb::AgentRef {
                queue: q.to_string(),
                name: n.to_string(),
                on_failure: on_failure as i32,
                ..Default::default()
            })
            .collect(),
        ..one_shot(name)
    }
}

async fn register_call(
    env: &mut Env,
    queue: &str,
    agents: Vec<pb::Agent>,
) -> Result<pb::RegisterResponse, tonic::Status> {
    env.client
        .register(pb::RegisterRequest { queue: queue.into(), agents, ..Default::default() })
        .await
        .map(|r| r.into_inner())
}

/// Acquires with a long poll until `n` leases were granted (or 30 s passed).
async fn acquire_n(env: &mut Env, queue: &str, n: usize) -> Vec<pb::Lease> {
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while got.len() < n && tokio::time::Instant::now() < deadline {
        let want = (n - got.len()).min(1000) as u32;
        let req = pb::AcquireRequest { queue: queue.into(), worker_id: "w".into(), max_leases: want, wait: dur(2_000) };
        got.extend(env.client.acquire(req).await.unwrap().into_inner().leases);
    }
    got
}

async fn complete_with(env: &mut Env, l: &pb::Lease, outcome: pb::Outcome, result: &[u8]) -> pb::CompleteResponse {
    let req = pb::CompleteRequest { result: result.to_vec(), ..complete_req(l, outcome) };
    env.client.complete(req).await.unwrap().into_inner()
}

async fn await_now(env: &mut Env, queue: &str, name: &str) -> Result<pb::AwaitResponse, tonic::Status> {
    let req = pb::AwaitRequest { queue: queue.into(), name: name.into(), ..Default::default() };
    env.client.r#await(req).await.map(|r| r.into_inner())
}

async fn state(env: &mut Env, queue: &str, name: &str) -> pb::AgentStatus {
    let req = pb::GetAgentRequest { queue: queue.into(), name: name.into() };
    env.client.get_agent(req).await.unwrap().into_inner().agent.unwrap()
}

#[tokio::test]
async fn await_answers_the_result_when_it_is_recorded() {
    let mut env = Env::start().await;
    register(&mut env.client, "rpc", vec![one_shot("job-1")]).await;

    let not_yet = await_now(&mut env, "rpc", "job-1").await.unwrap();
    assert!(!not_yet.done);
    assert_eq!(not_yet.state, pb::AgentState::Waiting as i32);
    assert_eq!(await_now(&mut env, "rpc", "nobody").await.unwrap_err().code(), Code::NotFound);

    // An Await held before the worker completes is answered by the completion itself.
    let mut waiter = env.client.clone();
    let held = tokio::spawn(async move {
        let req = pb::AwaitRequest { queue: "rpc".into(), name: "job-1".into(), wait: dur(60_000), after_token: 0 };
        let started = std::time::Instant::now();
        let answer = waiter.r#await(req).await.unwrap().into_inner();
        (answer, started.elapsed())
    });
    let lease = acquire_n(&mut env, "rpc", 1).await.pop().unwrap();
    // The Await is marked in Redis before it waits; complete only then, so this checks the wake-up.
    let mut conn = env.redis.conn().await;
    let awaited = "baton:{q:rpc}:awaited";
    for _ in 0..300 {
        let n: i64 = redis::cmd("ZCARD").arg(awaited).query_async(&mut conn).await.unwrap();
        if n == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let done = complete_with(&mut env, &lease, pb::Outcome::Success, b"{\"total\":42}").await;
    assert!(done.removed);
    let (answer, waited) = tokio::time::timeout(Duration::from_secs(30), held).await.unwrap().unwrap();
    assert!(answer.done, "{answer:?}");
    let r = answer.result.unwrap();
    assert_eq!((r.finish, r.outcome), (pb::Finish::Succeeded as i32, pb::Outcome::Success as i32));
    assert_eq!((r.result.as_slice(), r.token, r.name.as_str()), (&b"{\"total\":42}"[..], lease.token, "job-1"));
    println!("await: answered {waited:?} after it was called, on the completion");

    // Later, from what is kept: the agent itself is gone.
    let late = await_now(&mut env, "rpc", "job-1").await.unwrap();
    assert_eq!(late.result.unwrap().result, b"{\"total\":42}");
    // after_token skips that run.
    let req = pb::AwaitRequest { queue: "rpc".into(), name: "job-1".into(), wait: None, after_token: lease.token };
    assert_eq!(env.client.r#await(req).await.unwrap_err().code(), Code::NotFound, "no agent left, no newer finish");

    // A result beyond limits.max_result_bytes is refused, naming the field, and changes nothing.
    register(&mut env.client, "rpc", vec![one_shot("big")]).await;
    let l = acquire_n(&mut env, "rpc", 1).await.pop().unwrap();
    let req = pb::CompleteRequest { result: vec![0; 64 * 1024 + 1], ..complete_req(&l, pb::Outcome::Success) };
    let e = env.client.complete(req).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("result"), "{e:?}");
    assert_eq!(state(&mut env, "rpc", "big").await.state, pb::AgentState::Working as i32);
}

#[tokio::test]
async fn children_run_once_after_all_parents_across_pages() {
    const FAN: usize = 1_200; // more than one release page (500)
                              // The worker completes FAN leases one after another without a heartbeat: on a busy machine
                              // that outlasts the default orphan threshold, which would rightly take its leases back.
    let mut config = test_config();
    config.orphan_cleanup.threshold_ms = 600_000;
    let mut env = Env::with_config(config).await;
    register(&mut env.client, "etl", vec![one_shot("extract")]).await;
    // Fan-out: FAN children of `extract` in another queue (two Register calls: max_batch 1000).
    // Leases long enough to outlast FAN Completes one after another on a busy machine.
    let children: Vec<pb::Agent> = (0..FAN)
        .map(|i| pb::Agent {
            timeout: dur(600_000),
            ..after(&format!("t-{i:04}"), &[("etl", "extract")], pb::ParentFailure::Unspecified)
        })
        .collect();
    for part in children.chunks(600) {
        let r = register_call(&mut env, "transform", part.to_vec()).await.unwrap();
        assert_eq!(r.created as usize, part.len());
    }
    // Fan-in: one agent after all of them.
    let all: Vec<(&str, String)> = (0..FAN).map(|i| ("transform", format!("t-{i:04}"))).collect();
    let refs: Vec<(&str, &str)> = all.iter().map(|(q, n)| (*q, n.as_str())).collect();
    register_call(&mut env, "etl", vec![after("load", &refs, pb::ParentFailure::Unspecified)]).await.unwrap();

    assert_eq!(state(&mut env, "transform", "t-0000").await.state, pb::AgentState::Blocked as i32);
    let load = state(&mut env, "etl", "load").await;
    assert_eq!(
        (load.state, load.parents_total, load.parents_pending),
        (pb::AgentState::Blocked as i32, FAN as u32, FAN as u32)
    );
    let extract = state(&mut env, "etl", "extract").await;
    assert_eq!(extract.children.len(), 1_000, "GetAgent lists the first 1,000 children");

    // Only the root is due.
    let root = acquire_n(&mut env, "etl", 1).await;
    assert_eq!(root.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(), ["extract"]);
    let none = env
        .client
        .acquire(pb::AcquireRequest { queue: "transform".into(), worker_id: "w".into(), max_leases: 10, wait: None })
        .await
        .unwrap()
        .into_inner();
    assert!(none.leases.is_empty(), "no child runs before its parent finished");
    complete_with(&mut env, &root[0], pb::Outcome::Success, b"rows=7").await;

    // Every child is released once, carrying the parent's result.
    let leases = acquire_n(&mut env, "transform", FAN).await;
    let mut runs: HashMap<String, usize> = HashMap::new();
    for l in &leases {
        *runs.entry(l.name.clone()).or_default() += 1;
        assert_eq!(l.parents.len(), 1);
        assert_eq!((l.parents[0].name.as_str(), l.parents[0].result.as_slice()), ("extract", &b"rows=7"[..]));
    }
    assert_eq!(runs.len(), FAN);
    assert!(runs.values().all(|&n| n == 1));
    // `load` waits for the last of them.
    let (last, rest) = leases.split_last().unwrap();
    for l in rest {
        complete_with(&mut env, l, pb::Outcome::Success, l.name.as_bytes()).await;
    }
    // Releases run on the replica's flows task, after each Complete answered: wait for them.
    let mut pending = state(&mut env, "etl", "load").await.parents_pending;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while pending > 1 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
        pending = state(&mut env, "etl", "load").await.parents_pending;
    }
    assert_eq!(pending, 1);
    let early = env
        .client
        .acquire(pb::AcquireRequest { queue: "etl".into(), worker_id: "w".into(), max_leases: 10, wait: None })
        .await
        .unwrap()
        .into_inner();
    assert!(early.leases.is_empty(), "the fan-in child waits for its last parent");
    complete_with(&mut env, last, pb::Outcome::Success, last.name.as_bytes()).await;
    let load = acquire_n(&mut env, "etl", 1).await.pop().expect("released by its last parent");
    assert_eq!(load.name, "load");
    assert_eq!(load.parents.len(), FAN);
    assert!(load.parents.iter().all(|p| p.result == p.name.as_bytes() && p.finish == pb::Finish::Succeeded as i32));
    println!("flows: fan-out {FAN} released once each; fan-in of {FAN} parents carried {} results", load.parents.len());
    // A stale worker's Complete of a released step is refused.
    let e = env.client.complete(complete_req(&root[0], pb::Outcome::Success)).await.unwrap_err();
    assert_eq!(reason(&e), "LEASE_LOST");
}

// GetAgent answers an agent's parents in its definition (Agent.after). They are fixed when it
// is created: re-registering it with other parents is FAILED_PRECONDITION naming the field and
// changes nothing; the same parents (in any order) or none at all are an ordinary update.
#[tokio::test]
async fn parents_are_answered_and_fixed_at_creation() {
    let mut env = Env::start().await;
    register(&mut env.client, "dag", vec![one_shot("p1"), one_shot("p2")]).await;
    let child = after("c", &[("dag", "p1"), ("", "p2")], pb::ParentFailure::Cancel);
    register(&mut env.client, "dag", vec![child.clone()]).await;
    let named = |s: pb::AgentStatus| -> Vec<(String, String, i32)> {
        s.agent.unwrap().after.into_iter().map(|r| (r.queue, r.name, r.on_failure)).collect()
    };
    let cancel = pb::ParentFailure::Cancel as i32;
    let both = vec![("dag".to_string(), "p1".to_string(), cancel), ("dag".to_string(), "p2".to_string(), cancel)];
    assert_eq!(named(state(&mut env, "dag", "c").await), both, "GetAgent names the parents");

    for (agents, field, what) in [
        (vec![after("c", &[("dag", "p1")], pb::ParentFailure::Wait)], "agents[0].after", "fewer parents"),
        (
            vec![one_shot("x"), after("c", &[("dag", "p1"), ("dag", "p3")], pb::ParentFailure::Wait)],
            "agents[1].after",
            "another parent",
        ),
        (
            vec![after("p1", &[("dag", "p2")], pb::ParentFailure::Wait)],
            "agents[0].after",
            "parents for an agent without",
        ),
    ] {
        register(&mut env.client, "dag", vec![one_shot("p3")]).await;
        let before = env.redis.snapshot().await;
        let e = register_call(&mut env, "dag", agents).await.expect_err(what);
        assert_eq!((e.code(), reason(&e).as_str()), (Code::FailedPrecondition, "PARENTS_FIXED"), "{what}: {e:?}");
        assert!(e.message().starts_with(field), "{what}: {}", e.message());
        assert_eq!(env.redis.snapshot().await, before, "{what}: a refused Register changed Redis");
    }
    let same = after("c", &[("dag", "p2"), ("dag", "p1")], pb::ParentFailure::Wait);
    assert_eq!(register_call(&mut env, "dag", vec![same]).await.expect("the same parents").updated, 1);
    let none = one_shot("c");
    assert_eq!(register_call(&mut env, "dag", vec![none]).await.expect("no parents keeps them").updated, 1);
    assert_eq!(named(state(&mut env, "dag", "c").await), both, "still the parents it was created with");
}

// Putting a dead-lettered agent back (RetryDeadLetter, or Register with reset_schedule) drops its
// dead-lettered finish: an Await after it waits for the new run instead of answering the old one.
#[tokio::test]
async fn await_after_a_retried_dead_letter_waits_for_the_new_run() {
    let mut env = Env::start().await;
    let mut admin = AdminServiceClient::new(env.baton.channel().await);
    let flaky = |name: &str| pb::Agent { max_attempts: 1, keep_result: true, ..one_shot(name) };
    register(&mut env.client, "rq", vec![flaky("retried"), flaky("reset")]).await;
    for l in acquire_n(&mut env, "rq", 2).await {
        assert!(complete_with(&mut env, &l, pb::Outcome::Unknown, b"").await.dead_lettered);
    }
    for name in ["retried", "reset"] {
        let dead = await_now(&mut env, "rq", name).await.unwrap().result.expect("the dead letter is a finish");
        assert_eq!(dead.finish, pb::Finish::DeadLettered as i32);
    }
    let source = Some(pb::Source { kind: pb::SourceKind::Queue as i32, name: "rq".into() });
    admin.retry_dead_letter(pb::RetryDeadLetterRequest { source, id: "retried".into() }).await.unwrap();
    let reset = pb::RegisterRequest {
        queue: "rq".into(),
        agents: vec![flaky("reset")],
        reset_schedule: true,
        ..Default::default()
    };
    env.client.register(reset).await.unwrap();
    for name in ["retried", "reset"] {
        let now = await_now(&mut env, "rq", name).await.unwrap();
        assert!(!now.done, "{name}: the old finish was answered: {now:?}");
        assert_eq!(now.state, pb::AgentState::Waiting as i32, "{name}");
    }
    for l in acquire_n(&mut env, "rq", 2).await {
        complete_with(&mut env, &l, pb::Outcome::Success, b"again").await;
    }
    for name in ["retried", "reset"] {
        let r = await_now(&mut env, "rq", name).await.unwrap().result.expect("the new run finished");
        assert_eq!((r.finish, r.result.as_slice()), (pb::Finish::Succeeded as i32, &b"again"[..]), "{name}");
    }
}

#[tokio::test]
async fn a_parents_failure_applies_each_childs_policy() {
    let mut env = Env::start().await;
    let parent = pb::Agent { max_attempts: 1, ..one_shot("p") };
    register(&mut env.client, "q", vec![parent]).await;
    register_call(
        &mut env,
        "q",
        vec![
            after("waits", &[("", "p")], pb::ParentFailure::Wait),
            // Its finish is read below: kept (a parent of the same call keeps it anyway).
            pb::Agent { keep_result: true, ..after("cancels", &[("", "p")], pb::ParentFailure::Cancel) },
            after("runs", &[("", "p")], pb::ParentFailure::RunAnyway),
            // A grandchild of the cancelled one: the cancel cascades to it as a failure.
            pb::Agent {
                on_parent_failure: pb::ParentFailure::Cancel as i32,
                keep_result: true,
                ..after("grand", &[("", "cancels")], pb::ParentFailure::Unspecified)
            },
        ],
    )
    .await
    .unwrap();
    let p = acquire_n(&mut env, "q", 1).await.pop().unwrap();
    assert_eq!(p.name, "p");
    let failed = complete_with(&mut env, &p, pb::Outcome::Unknown, b"partial").await;
    assert!(failed.dead_lettered);

    let runs = acquire_n(&mut env, "q", 1).await.pop().expect("RUN_ANYWAY runs");
    assert_eq!(runs.name, "runs");
    assert_eq!(runs.parents[0].finish, pb::Finish::DeadLettered as i32);
    assert_eq!(runs.parents[0].result, b"partial");
    for name in ["cancels", "grand"] {
        let mut answer = await_now(&mut env, "q", name).await;
        for _ in 0..300 {
            if answer.as_ref().is_ok_and(|a| a.done) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
            answer = await_now(&mut env, "q", name).await;
        }
        let r = answer.unwrap().result.expect("cancelled");
        assert_eq!(r.finish, pb::Finish::Cancelled as i32, "{name}");
    }
    assert_eq!(state(&mut env, "q", "waits").await.state, pb::AgentState::Blocked as i32);

    // A retried parent that succeeds releases the waiting child.
    let mut admin = AdminServiceClient::new(env.baton.channel().await);
    let source = Some(pb::Source { kind: pb::SourceKind::Queue as i32, name: "q".into() });
    admin.retry_dead_letter(pb::RetryDeadLetterRequest { source, id: "p".into() }).await.unwrap();
    let p = acquire_n(&mut env, "q", 1).await.pop().unwrap();
    complete_with(&mut env, &p, pb::Outcome::Success, b"done").await;
    let waits = acquire_n(&mut env, "q", 1).await.pop().expect("WAIT child released by the retry's success");
    assert_eq!(waits.name, "waits");
    assert_eq!(waits.parents[0].result, b"done");
}

#[tokio::test]
async fn bad_parents_and_keys_are_refused_and_change_nothing() {
    let mut env = Env::start().await;
    register(&mut env.client, "q", vec![one_shot("exists"), agent("recurring", 60_000, 30_000)]).await;
    let before = env.redis.snapshot().await;
    let cases: Vec<(Vec<pb::Agent>, &str)> = vec![
        (
            vec![
                after("a", &[("", "b")], pb::ParentFailure::Unspecified),
                after("b", &[("", "c")], pb::ParentFailure::Unspecified),
                after("c", &[("", "a")], pb::ParentFailure::Unspecified),
            ],
            "after",
        ),
        (vec![after("self", &[("", "self")], pb::ParentFailure::Unspecified)], "agents[0].after"),
        (vec![after("x", &[("", "ghost")], pb::ParentFailure::Unspecified)], "agents[0].after[0]"),
        (vec![after("x", &[("other", "exists")], pb::ParentFailure::Unspecified)], "agents[0].after[0]"),
        (vec![after("x", &[("", "exists"), ("q", "exists")], pb::ParentFailure::Unspecified)], "agents[0].after[1]"),
        (vec![after("x", &[("", "bad name!")], pb::ParentFailure::Unspecified)], "agents[0].after[0].name"),
        (vec![after("x", &[("bad queue!", "exists")], pb::ParentFailure::Unspecified)], "agents[0].after[0].queue"),
        (
            vec![pb::Agent {
                after: vec![pb::AgentRef {
                    queue: String::new(),
                    name: "exists".into(),
                    on_failure: 9,
                    ..Default::default()
                }],
                ..one_shot("x")
            }],
            "agents[0].after[0].on_failure",
        ),
        (vec![pb::Agent { on_parent_failure: 2, ..one_shot("x") }], "agents[0].on_parent_failure"),
        (vec![pb::Agent { idempotency_key: "k".into(), ..agent("x", 60_000, 30_000) }], "agents[0].idempotency_key"),
        (vec![pb::Agent { idempotency_key: "a b".into(), ..one_shot("x") }], "agents[0].idempotency_key"),
        (vec![pb::Agent { idempotency_window: dur(1_000), ..one_shot("x") }], "agents[0].idempotency_window"),
        (
            vec![pb::Agent {
                idempotency_key: "k".into(),
                idempotency_window: dur(8 * 24 * 3_600_000),
                ..one_shot("x")
            }],
            "agents[0].idempotency_window",
        ),
    ];
    for (agents, field) in cases {
        let e = register_call(&mut env, "q", agents).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{field}: {e:?}");
        assert!(e.message().contains(field), "{field}: {}", e.message());
    }
    assert_eq!(env.redis.snapshot().await, before, "nothing changed");
}

#[tokio::test]
async fn an_idempotency_key_answers_the_first_agent_within_its_window() {
    let mut env = Env::start().await;
    let keyed = |name: &str| pb::Agent { idempotency_key: "order-17:charge".into(), ..one_shot(name) };
    let first = register_call(&mut env, "pay", vec![keyed("charge-a")]).await.unwrap();
    assert_eq!((first.created, first.deduplicated), (1, 0));
    let again = register_call(&mut env, "pay", vec![keyed("charge-b")]).await.unwrap();
    assert_eq!((again.created, again.deduplicated), (0, 1));
    let item = &again.agents[0];
    assert!(item.deduplicated && item.result.is_none());
    assert_eq!(item.name, "charge-a");
    assert_eq!(await_now(&mut env, "pay", "charge-b").await.unwrap_err().code(), Code::NotFound, "nothing created");

    let l = acquire_n(&mut env, "pay", 1).await.pop().unwrap();
    complete_with(&mut env, &l, pb::Outcome::Success, b"receipt-9").await;
    // The first agent is gone; the key still answers it, with its result.
    let late = register_call(&mut env, "pay", vec![keyed("charge-c")]).await.unwrap();
    let item = &late.agents[0];
    assert!(item.deduplicated);
    assert_eq!((item.name.as_str(), item.result.as_ref().unwrap().result.as_slice()), ("charge-a", &b"receipt-9"[..]));

    // A short window lapses: the key is free again (waited on the Redis clock, not a sleep).
    let short =
        |name: &str| pb::Agent { idempotency_key: "once".into(), idempotency_window: dur(50), ..one_shot(name) };
    register_call(&mut env, "pay", vec![short("s-1")]).await.unwrap();
    let started = env.redis.now_ms().await;
    while env.redis.now_ms().await < started + 60 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let fresh = register_call(&mut env, "pay", vec![short("s-2")]).await.unwrap();
    assert_eq!((fresh.created, fresh.deduplicated), (1, 0));
}

async fn batch_status(env: &mut Env, batch: &str) -> pb::BatchStatus {
    env.client.get_batch(pb::GetBatchRequest { batch: batch.into() }).await.unwrap().into_inner().status.unwrap()
}

#[tokio::test]
async fn a_batch_counts_its_members_and_runs_each_callback_once() {
    let mut env = Env::start().await;
    let flaky = pb::Agent { max_attempts: 1, ..one_shot("m-2") };
    let first = pb::RegisterBatchRequest {
        batch: "nightly".into(),
        queue: "work".into(),
        agents: vec![one_shot("m-0"), one_shot("m-1"), flaky],
        callback_queue: "cb".into(),
        // Its cancelled finish is read below, after the fact: kept.
        on_success: vec![pb::Agent { keep_result: true, ..one_shot("all-good") }],
        on_complete: vec![one_shot("report")],
        close: false,
    };
    let r = env.client.register_batch(first.clone()).await.unwrap().into_inner();
    assert!(r.batch_created);
    let s = r.status.unwrap();
    assert_eq!((s.total, s.pending, s.closed, s.done), (3, 3, false, false));
    assert_eq!(s.callbacks.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["all-good", "report"]);
    // Other callbacks on an existing batch are refused, naming the field.
    let other = pb::RegisterBatchRequest { on_success: vec![one_shot("x")], agents: vec![], ..first.clone() };
    let e = env.client.register_batch(other).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    // More members, in another queue, then closed.
    let more = pb::RegisterBatchRequest {
        batch: "nightly".into(),
        queue: "work2".into(),
        agents: vec![one_shot("m-3")],
        close: true,
        ..Default::default()
    };
    let s = env.client.register_batch(more.clone()).await.unwrap().into_inner().status.unwrap();
    assert_eq!((s.total, s.pending, s.closed), (4, 4, true));
    let e = env.client.register_batch(more).await.unwrap_err();
    assert_eq!((e.code(), reason(&e).as_str()), (Code::FailedPrecondition, "BATCH_CLOSED"));

    // Callbacks are blocked until the batch is done; a callback's parent is its batch, named
    // in its own field (queue empty; name repeats it for older clients).
    let report = state(&mut env, "cb", "report").await;
    assert_eq!(report.state, pb::AgentState::Blocked as i32);
    let named: Vec<_> = report.agent.unwrap().after.into_iter().map(|r| (r.queue, r.batch)).collect();
    assert_eq!(named, [(String::new(), "nightly".to_string())]);
    for l in acquire_n(&mut env, "work", 3).await {
        let outcome = if l.name == "m-2" { pb::Outcome::Unknown } else { pb::Outcome::Success };
        complete_with(&mut env, &l, outcome, b"").await;
    }
    let l = acquire_n(&mut env, "work2", 1).await.pop().unwrap();
    complete_with(&mut env, &l, pb::Outcome::Success, b"").await;

    let report = acquire_n(&mut env, "cb", 1).await;
    assert_eq!(
        report.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(),
        ["report"],
        "on_complete runs; on_success does not"
    );
    let p = &report[0].parents[0];
    assert_eq!((p.queue.as_str(), p.name.as_str(), p.finish), ("", "nightly", pb::Finish::DeadLettered as i32));
    assert_eq!(p.batch, "nightly", "the batch's finish names the batch in its own field");
    assert!(p.message.contains("1 of 4"), "{p:?}");
    let s = batch_status(&mut env, "nightly").await;
    assert_eq!((s.total, s.pending, s.succeeded, s.failed, s.done), (4, 0, 3, 1, true));
    let good = await_now(&mut env, "cb", "all-good").await.unwrap();
    assert_eq!(good.result.unwrap().finish, pb::Finish::Cancelled as i32);
    println!(
        "batch: {} members, {} succeeded, {} failed; on_complete ran once, on_success cancelled",
        s.total, s.succeeded, s.failed
    );
    assert_eq!(
        env.client.get_batch(pb::GetBatchRequest { batch: "nope".into() }).await.unwrap_err().code(),
        Code::NotFound
    );
    let e = env.client.get_batch(pb::GetBatchRequest { batch: "bad name".into() }).await.unwrap_err();
    assert!(e.message().contains("batch"), "{e:?}");
}

/// The last two members of a batch complete at once through two replicas: the callback is
/// released once, every round.
#[tokio::test]
async fn a_callback_runs_once_when_the_last_completions_race_on_two_replicas() {
    let mut env = Env::start().await;
    let other = TestBaton::start(&env.redis.url(), test_config()).await;
    let second = other.agents().await;
    for round in 0..10 {
        let batch = format!("race-{round}");
        let req = pb::RegisterBatchRequest {
            batch: batch.clone(),
            queue: "r".into(),
            agents: vec![one_shot(&format!("{batch}-a")), one_shot(&format!("{batch}-b"))],
            callback_queue: "rcb".into(),
            on_success: vec![one_shot(&format!("{batch}-done"))],
            close: true,
            ..Default::default()
        };
        env.client.register_batch(req).await.unwrap();
        let leases = acquire_n(&mut env, "r", 2).await;
        assert_eq!(leases.len(), 2);
        let (mut c1, mut c2) = (env.client.clone(), second.clone());
        let (a, b) = (leases[0].clone(), leases[1].clone());
        let (r1, r2) = tokio::join!(
            c1.complete(complete_req(&a, pb::Outcome::Success)),
            c2.complete(complete_req(&b, pb::Outcome::Success))
        );
        r1.unwrap();
        r2.unwrap();
        let cb = acquire_n(&mut env, "rcb", 1).await;
        assert_eq!(cb.len(), 1, "round {round}: the callback runs");
        complete_with(&mut env, &cb[0], pb::Outcome::Success, b"").await;
        // Released once: after its one run it is gone, and nothing else is due in its queue.
        let status = env.client.get_agent(pb::GetAgentRequest { queue: "rcb".into(), name: cb[0].name.clone() }).await;
        assert_eq!(status.unwrap_err().code(), Code::NotFound, "round {round}");
        let s = batch_status(&mut env, &batch).await;
        assert_eq!((s.succeeded, s.done), (2, true), "round {round}");
    }
    let none = env
        .client
        .acquire(pb::AcquireRequest { queue: "rcb".into(), worker_id: "w".into(), max_leases: 10, wait: None })
        .await
        .unwrap()
        .into_inner();
    assert!(none.leases.is_empty(), "no callback ran twice");
    let _ = other.stop().await;
}

// CancelRun ends a one-shot parent's run at its holder's next heartbeat: the parent is removed
// and finishes as cancelled, so an Await answers and its children apply their policy
// (RUN_ANYWAY runs, CANCEL is cancelled in turn) instead of waiting for a parent that is gone.
#[tokio::test]
async fn a_one_shot_parents_cancelled_run_is_a_finish_for_its_children() {
    let mut env = Env::start().await;
    register(&mut env.client, "cr", vec![one_shot("parent")]).await;
    let kids = vec![
        after("anyway", &[("cr", "parent")], pb::ParentFailure::RunAnyway),
        // Cancelled before the Await below may start waiting: its finish is kept for it.
        pb::Agent { keep_result: true, ..after("dropped", &[("cr", "parent")], pb::ParentFailure::Cancel) },
    ];
    register_call(&mut env, "cr-kids", kids).await.unwrap();
    let lease = acquire_n(&mut env, "cr", 1).await.pop().unwrap();
    let req = pb::CancelRunRequest { queue: "cr".into(), name: "parent".into(), ..Default::default() };
    assert!(env.client.cancel_run(req).await.unwrap().into_inner().requested);
    let beat = pb::HeartbeatRequest {
        worker_id: "w".into(),
        leases: vec![pb::LeaseRef {
            queue: "cr".into(),
            name: "parent".into(),
            token: lease.token,
            ..Default::default()
        }],
    };
    assert_eq!(env.client.heartbeat(beat).await.unwrap().into_inner().cancelled.len(), 1);

    let r = await_now(&mut env, "cr", "parent").await.unwrap().result.expect("the cancel is kept as a finish");
    assert_eq!((r.finish, r.token), (pb::Finish::Cancelled as i32, lease.token));
    let run = acquire_n(&mut env, "cr-kids", 1).await;
    assert_eq!(run.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(), ["anyway"], "RUN_ANYWAY runs");
    assert_eq!(run[0].parents[0].finish, pb::Finish::Cancelled as i32);
    let req = pb::AwaitRequest { queue: "cr-kids".into(), name: "dropped".into(), wait: dur(30_000), after_token: 0 };
    let dropped = env.client.r#await(req).await.unwrap().into_inner().result.expect("CANCEL finished it");
    assert_eq!(dropped.finish, pb::Finish::Cancelled as i32);
}

/// The value of `metric` on a /metrics page for the series whose labels include `label`.
fn gauge(page: &str, metric: &str, label: &str) -> Option<f64> {
    page.lines()
        .filter(|l| l.starts_with(&format!("{metric}{{")) && l.contains(label))
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
}

// The gauges say what GetHealth and the queue's figures say: a paused queue is
// baton_source_paused 1 (refreshed by each health check), and children blocked on their parent
// are baton_queue_blocked, not baton_queue_due (refreshed by the health summary).
#[tokio::test]
async fn gauges_show_a_paused_queue_and_its_blocked_agents() {
    let redis = TestRedis::start().await;
    let baton = BatonProcess::spawn_with_metrics("127.0.0.1:0", |cmd| {
        cmd.args(["--redis-url", &redis.url()]).env("BATON_HEALTH__SUMMARY_PERIOD_MS", "200");
    });
    let metrics = baton
        .log
        .lock()
        .unwrap()
        .iter()
        .find(|l| l.contains("prometheus metrics at /metrics"))
        .and_then(|l| l.split_whitespace().find_map(|w| w.strip_prefix("addr=")).map(str::to_string))
        .expect("the bound /metrics address is logged");
    let channel = baton.channel().await;
    let mut client = baton::pb::agent_service_client::AgentServiceClient::new(channel.clone());
    let mut admin = AdminServiceClient::new(channel);
    register(&mut client, "gauged", vec![one_shot("parent")]).await;
    let kids = (0..2).map(|i| after(&format!("kid-{i}"), &[("", "parent")], pb::ParentFailure::Unspecified)).collect();
    register(&mut client, "gauged", kids).await;
    let source = Some(pb::Source { kind: pb::SourceKind::Queue as i32, name: "gauged".into() });
    admin.pause(pb::PauseRequest { source, create: false }).await.unwrap();

    let expected = [
        ("baton_source_paused", "name=\"gauged\"", 1.0),
        ("baton_queue_blocked", "queue=\"gauged\"", 2.0),
        ("baton_queue_due", "queue=\"gauged\"", 1.0),
    ];
    // Waited on: the summary refreshes the queue's gauges every 200 ms.
    let want: Vec<Option<f64>> = expected.iter().map(|(_, _, value)| Some(*value)).collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let seen = loop {
        admin.get_health(pb::GetHealthRequest {}).await.unwrap();
        let page = http_get(&metrics, "/metrics").await;
        let seen: Vec<Option<f64>> = expected.iter().map(|(metric, label, _)| gauge(&page, metric, label)).collect();
        if seen == want || std::time::Instant::now() > deadline {
            break seen;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(seen, want, "baton_source_paused, baton_queue_blocked, baton_queue_due");
}

async fn http_get(addr: &str, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    tcp.read_to_string(&mut out).await.unwrap();
    out
}

/// Passes each sweep ("purge", "orphan", …) has recorded, over every replica.
async fn sweep_passes(env: &Env, sweep: &str) -> i64 {
    let mut conn = env.redis.conn().await;
    let counts: HashMap<String, i64> =
        redis::cmd("HGETALL").arg("baton:{registry}:sweeps").query_async(&mut conn).await.unwrap();
    counts.iter().filter(|(k, _)| k.starts_with(&format!("{sweep}:"))).map(|(_, n)| n).sum()
}

// Agents blocked on their parents are in no waiting, working or dead-letter set, but they are
// not orphans: a child whose parent never runs, and the callbacks of a closed batch whose member
// is still pending, go through a Purge (dry run and real), auto-purge passes and repair passes
// blocked, and Acquire grants none of them.
#[tokio::test]
async fn purge_and_repairs_leave_blocked_agents_blocked() {
    let mut config = test_config();
    config.purge.interval_ms = 100;
    config.orphan_cleanup.interval_ms = 100;
    config.orphan_cleanup.repair_interval_ms = 100;
    let mut env = Env::with_config(config).await;
    // The parent and the batch's member wait in a queue nobody acquires from.
    register(&mut env.client, "never", vec![one_shot("parent")]).await;
    register_call(&mut env, "blk", vec![after("child", &[("never", "parent")], pb::ParentFailure::Unspecified)])
        .await
        .unwrap();
    let batch = pb::RegisterBatchRequest {
        batch: "pcb".into(),
        queue: "never".into(),
        agents: vec![one_shot("member")],
        callback_queue: "blk".into(),
        on_success: vec![one_shot("cb-ok")],
        on_complete: vec![one_shot("cb-all")],
        close: true,
    };
    env.client.register_batch(batch).await.unwrap();
    let blocked = ["cb-all", "cb-ok", "child"];

    let mut a = AdminServiceClient::new(env.baton.channel().await);
    for dry_run in [true, false] {
        let found = a.purge(pb::PurgeRequest { dry_run }).await.unwrap().into_inner().items;
        let touched: Vec<_> = found.iter().filter(|i| blocked.contains(&i.id.as_str())).collect();
        assert!(touched.is_empty(), "dry run {dry_run}: a purge took blocked agents: {touched:?}");
    }
    // The auto-purge and the orphan sweep's repairs pass a few times.
    let (purges, repairs) = (sweep_passes(&env, "purge").await, sweep_passes(&env, "orphan").await);
    let e = &env;
    eventually(Duration::from_secs(20), "three more purge and repair passes", || async move {
        sweep_passes(e, "purge").await >= purges + 3 && sweep_passes(e, "orphan").await >= repairs + 3
    })
    .await;

    for name in blocked {
        assert_eq!(state(&mut env, "blk", name).await.state, pb::AgentState::Blocked as i32, "{name}");
    }
    let granted = env
        .client
        .acquire(pb::AcquireRequest { queue: "blk".into(), worker_id: "w".into(), max_leases: 10, wait: None })
        .await
        .unwrap()
        .into_inner()
        .leases;
    assert!(granted.is_empty(), "granted before their parents: {granted:?}");
    let s = batch_status(&mut env, "pcb").await;
    assert_eq!((s.pending, s.done), (1, false));
}

// An Await of a name with no agent answers NOT_FOUND and writes nothing, with or without a
// wait, in a queue that never existed and in one that does; and an Await mark left alone in
// Redis (what such a call wrote before) does not make the sweeper register a phantom queue.
#[tokio::test]
async fn an_await_of_an_unknown_agent_writes_nothing() {
    let mut config = test_config();
    config.purge.interval_ms = 100;
    let mut env = Env::with_config(config).await;
    register(&mut env.client, "real", vec![one_shot("there")]).await;
    let before = env.redis.snapshot().await;
    for (queue, name) in [("typo-queue", "x"), ("real", "nobody")] {
        for wait in [None, dur(100)] {
            let req = pb::AwaitRequest { queue: queue.into(), name: name.into(), wait, ..Default::default() };
            let e = env.client.r#await(req).await.unwrap_err();
            assert_eq!(e.code(), Code::NotFound, "{queue}/{name}");
        }
    }
    assert_eq!(env.redis.snapshot().await, before, "a NOT_FOUND Await wrote to Redis");

    // A stray mark past its time, as such a call left it: the sweeper's discovery (at every
    // purge pass) neither registers the queue nor keeps the mark.
    let mut conn = env.redis.conn().await;
    let stray = "baton:{q:typo-queue}:awaited";
    let _: () = redis::cmd("ZADD").arg(stray).arg(1).arg("x").query_async(&mut conn).await.unwrap();
    let passes = sweep_passes(&env, "purge").await;
    let e = &env;
    eventually(Duration::from_secs(20), "two more purge passes", || async move {
        sweep_passes(e, "purge").await >= passes + 2
    })
    .await;
    let registered: bool =
        redis::cmd("SISMEMBER").arg("baton:{registry}:queues").arg("typo-queue").query_async(&mut conn).await.unwrap();
    assert!(!registered, "a stray Await mark made a phantom queue");
    let left: bool = redis::cmd("EXISTS").arg(stray).query_async(&mut conn).await.unwrap();
    assert!(!left, "a mark past its time is dropped");
}

// A lease always carries its parents' finishes. Here their read fails (the child's parents
// record is made unreadable, as a failover between the grant and the read makes it): the
// Acquire hands over no lease without them, and the child goes back to waiting at once.
#[tokio::test]
async fn a_lease_whose_parents_cannot_be_read_is_given_back() {
    let mut env = Env::start().await;
    register(&mut env.client, "up", vec![one_shot("parent")]).await;
    register_call(&mut env, "down", vec![after("child", &[("up", "parent")], pb::ParentFailure::Unspecified)])
        .await
        .unwrap();
    let parent = acquire_n(&mut env, "up", 1).await.pop().unwrap();
    complete_with(&mut env, &parent, pb::Outcome::Success, b"up").await;
    let mut conn = env.redis.conn().await;
    let deps = "baton:{q:down}:deps:child";
    // Released by its parent: due, its parent's finish recorded.
    let mut released = false;
    for _ in 0..3_000 {
        let n: i64 = redis::cmd("HLEN").arg(deps).query_async(&mut conn).await.unwrap();
        let due = state(&mut env, "down", "child").await.state == pb::AgentState::Waiting as i32;
        if n > 0 && due {
            released = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(released, "the child was released with its parent's finish");
    let _: () = redis::cmd("DEL").arg(deps).query_async(&mut conn).await.unwrap();
    let _: () = redis::cmd("SET").arg(deps).arg("not a hash").query_async(&mut conn).await.unwrap();

    let got = env
        .client
        .acquire(pb::AcquireRequest { queue: "down".into(), worker_id: "w".into(), max_leases: 1, wait: None })
        .await;
    if let Ok(answer) = &got {
        for l in &answer.get_ref().leases {
            assert_eq!(l.parents.len(), 1, "a lease handed over without its parents: {l:?}");
        }
    }
    assert!(got.is_err(), "the only lease could not carry its parents: the Acquire fails");
    // Given back at once, not held until its timeout (GetAgent would read the record too).
    let working: Option<f64> =
        redis::cmd("ZSCORE").arg("baton:{q:down}:working").arg("child").query_async(&mut conn).await.unwrap();
    let waiting: Option<f64> =
        redis::cmd("ZSCORE").arg("baton:{q:down}:waiting").arg("child").query_async(&mut conn).await.unwrap();
    assert_eq!((working.is_some(), waiting.is_some()), (false, true), "the child waits again, held by nobody");
}

/// Whether the queue keeps a finish of `name` (its results hash), and how many it keeps.
async fn kept(env: &Env, queue: &str, name: &str) -> (bool, i64) {
    let mut conn = env.redis.conn().await;
    let key = format!("baton:{{q:{queue}}}:results");
    let one: bool = redis::cmd("HEXISTS").arg(&key).arg(name).query_async(&mut conn).await.unwrap();
    let all: i64 = redis::cmd("HLEN").arg(&key).query_async(&mut conn).await.unwrap();
    (one, all)
}

/// Acquires `n` leases and completes each with `result`.
async fn drain(env: &mut Env, queue: &str, n: usize, result: &[u8]) -> Vec<pb::Lease> {
    let leases = acquire_n(env, queue, n).await;
    assert_eq!(leases.len(), n);
    for l in &leases {
        assert!(complete_with(env, l, pb::Outcome::Success, result).await.removed);
    }
    leases
}

// A plain one-shot agent's finish is read by nobody: draining such agents writes no finish
// record (the queue's results hash and its time index never exist), and an Await after them
// says that no finish of them is kept.
#[tokio::test]
async fn a_plain_drain_leaves_no_finish_records() {
    let mut env = Env::start().await;
    let n = 20;
    register(&mut env.client, "plain", (0..n).map(|i| one_shot(&format!("job-{i}"))).collect()).await;
    drain(&mut env, "plain", n, b"ok").await;
    let mut conn = env.redis.conn().await;
    for key in ["baton:{q:plain}:results", "baton:{q:plain}:resultsat"] {
        let exists: bool = redis::cmd("EXISTS").arg(key).query_async(&mut conn).await.unwrap();
        assert!(!exists, "{key} written by a plain drain of {n} one-shots");
    }
    let e = await_now(&mut env, "plain", "job-0").await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    assert!(e.message().contains("no finish of it is kept"), "{}", e.message());
}

// Registering plain one-shots writes their definitions and due times and nothing else: no
// name index, no parents dropped (an UNLINK each, until a queue has had an agent with parents),
// no finish records, and the drain leaves the queue without a key of theirs.
#[tokio::test]
async fn a_plain_one_shot_writes_only_its_definition_and_due_time() {
    let env = Env::start().await;
    let mut conn = env.redis.conn().await;
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query_async(&mut conn).await.unwrap();
    let mut client = env.client.clone();
    register(&mut client, "plain", (0..20).map(|i| one_shot(&format!("job-{i}"))).collect()).await;
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("baton:{q:plain}:*").query_async(&mut conn).await.unwrap();
    keys.sort();
    assert_eq!(keys, ["baton:{q:plain}:defs", "baton:{q:plain}:waiting"]);
    let stats: String = redis::cmd("INFO").arg("commandstats").query_async(&mut conn).await.unwrap();
    assert!(!stats.contains("cmdstat_unlink:"), "a plain Register unlinked keys:\n{stats}");
}

// A finish someone can read is kept: an agent an Await waits for, a parent with a child
// attached, a parent named by a child registered later (in another call), and a parent named
// by a child of the same call. Each finishes while only that reader makes it kept.
#[tokio::test]
async fn an_awaited_or_parent_agents_finish_is_kept() {
    let mut env = Env::start().await;
    // Awaited: an Await with a wait is held while the agent runs.
    register(&mut env.client, "q", vec![one_shot("awaited")]).await;
    let lease = acquire_n(&mut env, "q", 1).await.pop().unwrap();
    let mut waiter = env.client.clone();
    let held = tokio::spawn(async move {
        let req = pb::AwaitRequest { queue: "q".into(), name: "awaited".into(), wait: dur(60_000), after_token: 0 };
        waiter.r#await(req).await.unwrap().into_inner()
    });
    let e = &env;
    eventually(Duration::from_secs(20), "the Await marked the agent", || async move {
        let mut conn = e.redis.conn().await;
        let n: i64 = redis::cmd("ZCARD").arg("baton:{q:q}:awaited").query_async(&mut conn).await.unwrap();
        n == 1
    })
    .await;
    complete_with(&mut env, &lease, pb::Outcome::Success, b"seen").await;
    let answer = tokio::time::timeout(Duration::from_secs(30), held).await.unwrap().unwrap();
    assert_eq!(answer.result.unwrap().result, b"seen");
    assert_eq!(kept(&env, "q", "awaited").await, (true, 1), "the awaited finish is kept");

    // Parents: "p1" with a child registered in another call, "p2" with a child in the same call.
    register(&mut env.client, "q", vec![one_shot("p1")]).await;
    register(&mut env.client, "q", vec![after("c1", &[("", "p1")], pb::ParentFailure::Unspecified)]).await;
    register(&mut env.client, "q", vec![one_shot("p2"), after("c2", &[("", "p2")], pb::ParentFailure::Unspecified)])
        .await;
    let parents = drain(&mut env, "q", 2, b"parent").await;
    let mut names: Vec<&str> = parents.iter().map(|l| l.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["p1", "p2"]);
    assert!(kept(&env, "q", "p1").await.0, "a parent's finish is kept");
    assert!(kept(&env, "q", "p2").await.0, "a parent of the same call keeps its finish");
    // The children ran with their parents' results, and, plain themselves, keep nothing.
    let children = drain(&mut env, "q", 2, b"child").await;
    assert!(children.iter().all(|l| l.parents.len() == 1 && l.parents[0].result == b"parent"), "{children:?}");
    assert!(!kept(&env, "q", "c1").await.0);
    assert!(!kept(&env, "q", "c2").await.0);
}

// A parent named by a child whose Register is refused (another parent is unknown) is not
// marked: the refused call writes nothing, and the parent's finish is not kept.
#[tokio::test]
async fn a_refused_child_marks_no_parent() {
    let mut env = Env::start().await;
    register(&mut env.client, "q", vec![one_shot("p")]).await;
    let before = env.redis.snapshot().await;
    let e = register_call(&mut env, "q", vec![after("c", &[("", "p"), ("", "ghost")], pb::ParentFailure::Unspecified)])
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert_eq!(env.redis.snapshot().await, before, "a refused Register wrote to Redis");
    drain(&mut env, "q", 1, b"").await;
    assert_eq!(kept(&env, "q", "p").await, (false, 0));
}

// An agent that asks to keep its result (Agent.keep_result), and every agent of a queue listed
// in results.keep_queues, keeps its finish with nobody waiting for it; a late Await answers it.
#[tokio::test]
async fn a_keep_result_agents_finish_is_kept() {
    let mut config = test_config();
    config.results.keep_queues = "other, reports".into();
    let mut env = Env::with_config(config).await;
    register(&mut env.client, "q", vec![pb::Agent { keep_result: true, ..one_shot("asked") }, one_shot("plain")]).await;
    register(&mut env.client, "reports", vec![one_shot("nightly")]).await;
    assert!(state(&mut env, "q", "asked").await.agent.unwrap().keep_result);
    assert!(state(&mut env, "reports", "nightly").await.agent.unwrap().keep_result, "set by the queue's setting");
    assert!(!state(&mut env, "q", "plain").await.agent.unwrap().keep_result);
    drain(&mut env, "q", 2, b"mine").await;
    drain(&mut env, "reports", 1, b"report").await;
    assert_eq!(kept(&env, "q", "asked").await, (true, 1), "only the agent that asked keeps its finish");
    assert_eq!(kept(&env, "reports", "nightly").await, (true, 1));
    let late = await_now(&mut env, "q", "asked").await.unwrap();
    assert!(late.done && !late.result_not_kept, "{late:?}");
    assert_eq!(late.result.unwrap().result, b"mine");
    assert_eq!(await_now(&mut env, "reports", "nightly").await.unwrap().result.unwrap().result, b"report");
}

// Await without a wait on an agent that keeps no result answers at once: not done, its state,
// and result_not_kept; an agent that keeps its result, or one an Await with a wait is waiting
// for, answers result_not_kept false.
#[tokio::test]
async fn await_on_a_plain_agent_without_a_wait_says_no_result_is_kept() {
    let mut env = Env::start().await;
    register(&mut env.client, "q", vec![one_shot("plain"), pb::Agent { keep_result: true, ..one_shot("keeps") }]).await;
    let plain = await_now(&mut env, "q", "plain").await.unwrap();
    assert!(!plain.done && plain.result.is_none(), "{plain:?}");
    assert_eq!(plain.state, pb::AgentState::Waiting as i32);
    assert!(plain.result_not_kept, "a plain agent says no result is kept: {plain:?}");
    let keeps = await_now(&mut env, "q", "keeps").await.unwrap();
    assert!(!keeps.done && !keeps.result_not_kept, "{keeps:?}");
    // While an Await with a wait is waiting for it, its finish will be kept.
    let mut waiter = env.client.clone();
    let held = tokio::spawn(async move {
        let req = pb::AwaitRequest { queue: "q".into(), name: "plain".into(), wait: dur(60_000), after_token: 0 };
        waiter.r#await(req).await.unwrap().into_inner()
    });
    let e = &env;
    eventually(Duration::from_secs(20), "the Await marked the agent", || async move {
        let mut conn = e.redis.conn().await;
        let n: i64 = redis::cmd("ZCARD").arg("baton:{q:q}:awaited").query_async(&mut conn).await.unwrap();
        n == 1
    })
    .await;
    let now = await_now(&mut env, "q", "plain").await.unwrap();
    assert!(!now.done && !now.result_not_kept, "awaited by another call: {now:?}");
    let leases = drain(&mut env, "q", 2, b"").await;
    let answer = tokio::time::timeout(Duration::from_secs(30), held).await.unwrap().unwrap();
    assert!(answer.done, "{answer:?}");
    assert_eq!(answer.result.unwrap().token, leases.iter().find(|l| l.name == "plain").unwrap().token);
}

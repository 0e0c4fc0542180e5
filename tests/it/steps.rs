//! Steps of a run (RecordStep, and on the Session stream), end to end.
//!
//! Invariants checked: a step is recorded only under the token that holds the lease (a stale
//! one is LEASE_LOST and changes nothing); the next attempt's lease carries the steps recorded
//! so far, and a step name keeps its first result; a run's steps are bounded in count and
//! bytes (INVALID_ARGUMENT naming the field, nothing written); they go with a kept finish
//! (Await) and are shown by GetAgent while the run is not over; a run that is over leaves no
//! `steps` entry, so a queue whose jobs record none has no such key; and a worker process
//! SIGKILLed in step 6 of 10 is resumed at step 6 by another.

use crate::common;

use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    time::Duration,
};

use common::*;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;
use tonic_types::StatusExt;

const Q: &str = "steps";

fn steps_key() -> String {
    format!("baton:{{q:{Q}}}:steps")
}

fn record(l: &pb::Lease, step: &str, result: &str) -> pb::RecordStepRequest {
    pb::RecordStepRequest {
        queue: Q.into(),
        name: l.name.clone(),
        token: l.token,
        step: step.into(),
        result: result.as_bytes().to_vec(),
    }
}

/// (name, result) of each step, in order.
fn named(steps: &[pb::Step]) -> Vec<(String, String)> {
    steps.iter().map(|s| (s.name.clone(), String::from_utf8_lossy(&s.result).into_owned())).collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

/// A one-shot agent retried at once after a failure.
fn retried(name: &str) -> pb::Agent {
    pb::Agent { error_interval: dur(1), ..agent(name, 0, 60_000) }
}

async fn acquire_one(env: &mut Env, worker: &str) -> pb::Lease {
    let r = env
        .client
        .acquire(pb::AcquireRequest { queue: Q.into(), worker_id: worker.into(), max_leases: 1, wait: dur(10_000) })
        .await
        .unwrap()
        .into_inner();
    r.leases.into_iter().next().expect("a lease within 10 s")
}

// Steps recorded in a run that fails ride with the next attempt's lease, in order, with their
// results and times; recording a step name again keeps its first result.
#[tokio::test]
async fn a_failed_run_s_steps_ride_with_the_next_lease() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![retried("job")]).await;
    let first = acquire_one(&mut env, "w1").await;
    assert!(first.steps.is_empty(), "a run's first attempt carries no steps");
    let r = env.client.record_step(record(&first, "fetch", "page-1")).await.unwrap().into_inner();
    assert!(r.recorded);
    assert_eq!(r.steps, 1);
    env.client.record_step(record(&first, "parse", "")).await.unwrap();
    env.client.complete(complete_req(&first, pb::Outcome::Transient)).await.unwrap();

    let second = acquire_one(&mut env, "w2").await;
    assert_eq!(second.attempt, 2);
    assert_eq!(named(&second.steps), pairs(&[("fetch", "page-1"), ("parse", "")]));
    assert!(second.steps.iter().all(|s| ms(&s.recorded_at) <= ms(&second.granted_at)));
    let again = env.client.record_step(record(&second, "fetch", "page-2")).await.unwrap().into_inner();
    assert!(!again.recorded, "a step recorded already keeps its first result");
    assert_eq!(again.step.map(|s| s.result), Some(b"page-1".to_vec()));
    env.client.record_step(record(&second, "store", "ok")).await.unwrap();
    env.client.complete(complete_req(&second, pb::Outcome::Transient)).await.unwrap();

    let third = acquire_one(&mut env, "w3").await;
    assert_eq!(named(&third.steps), pairs(&[("fetch", "page-1"), ("parse", ""), ("store", "ok")]));
    env.client.complete(complete_req(&third, pb::Outcome::Success)).await.unwrap();
}

// A step recorded with a token that no longer holds the lease is LEASE_LOST and changes
// nothing; so is one for an agent that is not held at all.
#[tokio::test]
async fn a_stale_token_records_nothing() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![retried("job")]).await;
    let stale = acquire_one(&mut env, "w1").await;
    env.client.record_step(record(&stale, "one", "1")).await.unwrap();
    env.client
        .release(pb::ReleaseRequest { queue: Q.into(), name: "job".into(), token: stale.token, delay: None })
        .await
        .unwrap();
    let current = acquire_one(&mut env, "w2").await;
    assert_eq!(named(&current.steps), pairs(&[("one", "1")]), "a released run keeps its steps");

    let before = env.redis.snapshot().await;
    for late in [record(&stale, "two", "2"), record(&stale, "one", "changed")] {
        let e = env.client.record_step(late).await.unwrap_err();
        assert_eq!((e.code(), reason(&e).as_str()), (Code::FailedPrecondition, "LEASE_LOST"), "{e:?}");
    }
    let unknown = pb::RecordStepRequest { name: "nobody".into(), ..record(&current, "one", "x") };
    let e = env.client.record_step(unknown).await.unwrap_err();
    assert_eq!(reason(&e), "LEASE_LOST");
    assert_eq!(env.redis.snapshot().await, before, "a refused step changed Redis");

    let shown = env.client.get_agent(pb::GetAgentRequest { queue: Q.into(), name: "job".into() }).await.unwrap();
    assert_eq!(named(&shown.into_inner().agent.unwrap().steps), pairs(&[("one", "1")]));
}

/// Asserts an INVALID_ARGUMENT naming `field` that left Redis as it was.
async fn refused(env: &mut Env, field: &str, request: pb::RecordStepRequest) {
    let before = env.redis.snapshot().await;
    let e = env.client.record_step(request).await.expect_err(field);
    assert_eq!(e.code(), Code::InvalidArgument, "{field}: {e:?}");
    let bad = e.get_details_bad_request().expect("BadRequest detail");
    assert_eq!(bad.field_violations[0].field, field, "{e:?}");
    assert_eq!(env.redis.snapshot().await, before, "{field}: a refused step changed Redis");
}

// A run holds at most limits.max_steps steps and limits.max_step_bytes result bytes; a bad step
// name or a step past a bound is INVALID_ARGUMENT naming the field and writes nothing.
#[tokio::test]
async fn steps_beyond_the_bounds_are_refused_naming_the_field() {
    let mut config = test_config();
    config.limits.max_steps = 2;
    config.limits.max_step_bytes = 10;
    let mut env = Env::with_config(config).await;
    register(&mut env.client, Q, vec![retried("job")]).await;
    let l = acquire_one(&mut env, "w1").await;
    refused(&mut env, "step", record(&l, "", "x")).await;
    refused(&mut env, "step", record(&l, &"s".repeat(129), "x")).await;
    refused(&mut env, "step", record(&l, "a|b", "x")).await;
    refused(&mut env, "result", record(&l, "big", "12345678901")).await;
    env.client.record_step(record(&l, "a", "123456")).await.unwrap();
    refused(&mut env, "result", record(&l, "b", "12345")).await;
    env.client.record_step(record(&l, "b", "1234")).await.unwrap();
    refused(&mut env, "step", record(&l, "c", "")).await;
    // A name recorded already is answered, not refused, at the bound.
    let again = env.client.record_step(record(&l, "a", "")).await.unwrap().into_inner();
    assert!(!again.recorded);
    assert_eq!(again.steps, 2);
}

// A run's steps go with its finish where the finish is kept: Await answers them; GetAgent shows
// them while the run is held; the run's entry in `steps` is gone once it is over.
#[tokio::test]
async fn steps_are_kept_with_a_kept_finish() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![pb::Agent { keep_result: true, ..retried("kept") }]).await;
    let l = acquire_one(&mut env, "w1").await;
    env.client.record_step(record(&l, "one", "1")).await.unwrap();
    env.client.record_step(record(&l, "two", "2")).await.unwrap();
    let shown = env.client.get_agent(pb::GetAgentRequest { queue: Q.into(), name: "kept".into() }).await.unwrap();
    assert_eq!(named(&shown.into_inner().agent.unwrap().steps), pairs(&[("one", "1"), ("two", "2")]));
    env.client.complete(complete_req(&l, pb::Outcome::Success)).await.unwrap();

    let done = env
        .client
        .r#await(pb::AwaitRequest { queue: Q.into(), name: "kept".into(), ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    assert!(done.done);
    assert_eq!(named(&done.steps), pairs(&[("one", "1"), ("two", "2")]));
    let mut conn = env.redis.conn().await;
    let left: bool = redis::cmd("EXISTS").arg(steps_key()).query_async(&mut conn).await.unwrap();
    assert!(!left, "a run that is over leaves no steps entry");

    // The same name registered again and finished without steps: its finish answers none.
    register(&mut env.client, Q, vec![pb::Agent { keep_result: true, ..retried("kept") }]).await;
    let l = acquire_one(&mut env, "w1").await;
    env.client.complete(complete_req(&l, pb::Outcome::Success)).await.unwrap();
    let done = env
        .client
        .r#await(pb::AwaitRequest { queue: Q.into(), name: "kept".into(), ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(done.result.unwrap().token, l.token);
    assert!(done.steps.is_empty(), "an earlier finish's steps are not this one's");
}

// A plain drain writes nothing for steps: no `steps` key appears, and agents that recorded
// steps leave none behind once their runs are over (success, dead letter, unregister).
#[tokio::test]
async fn a_plain_drain_writes_no_steps() {
    let mut env = Env::start().await;
    let mut agents: Vec<pb::Agent> = (0..20).map(|i| agent(&format!("plain-{i}"), 0, 60_000)).collect();
    agents.push(pb::Agent { max_attempts: 1, ..retried("doomed") });
    agents.push(retried("dropped"));
    register(&mut env.client, Q, agents).await;
    let mut conn = env.redis.conn().await;
    let leases = acquire(&mut env.client, Q, "w1", 22).await;
    assert_eq!(leases.len(), 22);
    for l in leases.iter().filter(|l| !l.name.starts_with("plain")) {
        env.client.record_step(record(l, "s", "x")).await.unwrap();
    }
    // "dropped" fails (its steps kept for the next attempt), then is unregistered while waiting.
    let dropped = leases.iter().find(|l| l.name == "dropped").unwrap();
    env.client.complete(complete_req(dropped, pb::Outcome::Transient)).await.unwrap();
    env.client
        .unregister(pb::UnregisterRequest { queue: Q.into(), names: vec!["dropped".into()], ..Default::default() })
        .await
        .unwrap();
    for l in leases.iter().filter(|l| l.name != "dropped") {
        let outcome = if l.name == "doomed" { pb::Outcome::Unknown } else { pb::Outcome::Success };
        env.client.complete(complete_req(l, outcome)).await.unwrap();
    }
    let left: bool = redis::cmd("EXISTS").arg(steps_key()).query_async(&mut conn).await.unwrap();
    assert!(!left, "steps left behind after every run ended");

    // Plain jobs alone never make the key.
    let agents: Vec<pb::Agent> = (0..20).map(|i| agent(&format!("more-{i}"), 0, 60_000)).collect();
    register(&mut env.client, Q, agents).await;
    for l in acquire(&mut env.client, Q, "w1", 20).await {
        env.client.complete(complete_req(&l, pb::Outcome::Success)).await.unwrap();
    }
    let left: bool = redis::cmd("EXISTS").arg(steps_key()).query_async(&mut conn).await.unwrap();
    assert!(!left);
}

// Steps on the Session stream: answered in order, a stale token on its item only, a step past
// max_steps refused on its item (the session goes on), and a completion in the same message
// ends a run whose steps are all recorded (kept with its finish).
#[tokio::test]
async fn steps_on_the_session_stream() {
    let mut config = test_config();
    config.limits.max_steps = 2;
    let mut env = Env::with_config(config).await;
    register(&mut env.client, Q, vec![pb::Agent { keep_result: true, ..retried("job") }]).await;
    let stale = acquire_one(&mut env, "w0").await;
    env.client
        .release(pb::ReleaseRequest { queue: Q.into(), name: "job".into(), token: stale.token, delay: None })
        .await
        .unwrap();

    let (tx, rx) = mpsc::channel(8);
    let open = pb::SessionOpen { queue: Q.into(), worker_id: "w1".into() };
    tx.send(pb::SessionRequest { open: Some(open), credit: 1, ..Default::default() }).await.unwrap();
    let mut stream = env.baton.agents().await.session(ReceiverStream::new(rx)).await.unwrap().into_inner();
    let l = next(&mut stream).await.leases.into_iter().next().expect("a lease");
    let step = |token: u64, name: &str| pb::SessionStep {
        name: "job".into(),
        token,
        step: name.into(),
        result: name.as_bytes().to_vec(),
    };
    let completion = pb::SessionCompletion {
        name: l.name.clone(),
        token: l.token,
        outcome: pb::Outcome::Success as i32,
        ..Default::default()
    };
    let m = pb::SessionRequest {
        steps: vec![step(l.token, "a"), step(stale.token, "x"), step(l.token, "b"), step(l.token, "c")],
        completions: vec![completion],
        ..Default::default()
    };
    tx.send(m).await.unwrap();
    let r = next(&mut stream).await;
    let answered: Vec<(String, bool, bool, String)> =
        r.steps.iter().map(|s| (s.step.clone(), s.lease_lost, s.response.is_some(), s.refused.clone())).collect();
    assert_eq!(
        answered,
        vec![
            ("a".into(), false, true, String::new()),
            ("x".into(), true, false, String::new()),
            ("b".into(), false, true, String::new()),
            ("c".into(), false, false, "limits.max_steps".into()),
        ]
    );
    assert!(!r.completed[0].lease_lost);
    let done = env
        .client
        .r#await(pb::AwaitRequest { queue: Q.into(), name: "job".into(), ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(named(&done.steps), pairs(&[("a", "a"), ("b", "b")]));
}

async fn next(stream: &mut tonic::Streaming<pb::SessionResponse>) -> pb::SessionResponse {
    tokio::time::timeout(Duration::from_secs(10), stream.message()).await.unwrap().unwrap().unwrap()
}

fn sweeping_config() -> baton::config::Config {
    let mut config = test_config();
    config.orphan_cleanup.threshold_ms = 1_000;
    config.orphan_cleanup.interval_ms = 200;
    config.orphan_cleanup.leadership_ttl_ms = 1_000;
    config.zombie_cleanup.interval_ms = 100;
    config
}

/// A `baton-worker` running every lease in 10 recorded steps; its stdout's JSON lines.
fn stepping_worker(env: &Env, id: &str) -> (std::process::Child, impl Iterator<Item = serde_json::Value>) {
    let mut worker = Command::new(env!("CARGO_BIN_EXE_baton-worker"))
        .args(["--addr", &format!("http://{}", env.baton.addr), "--queue", Q, "--worker-id", id])
        .args(["--steps", "10", "--work-ms", "150", "--heartbeat-ms", "200"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = BufReader::new(worker.stdout.take().unwrap()).lines();
    (worker, lines.map(|l| serde_json::from_str(&l.expect("worker output")).unwrap()))
}

// A 10-step run whose worker process is SIGKILLed in step 6 resumes at step 6 on another
// worker: steps 1-5 are not run again, and a late record from the dead worker's token is
// refused without changing the steps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_s_run_resumes_at_its_next_step() {
    let mut env = Env::with_config(sweeping_config()).await;
    register(&mut env.client, Q, vec![pb::Agent { keep_result: true, ..agent("ten", 0, 120_000) }]).await;

    let (mut first, mut events) = stepping_worker(&env, "doomed");
    let mut dead_token = 0;
    let mut started = Vec::new();
    for v in events.by_ref() {
        match v["event"].as_str() {
            Some("acquired") => dead_token = v["token"].as_u64().unwrap(),
            Some("step") => started.push(v["step"].as_u64().unwrap()),
            other => panic!("unexpected {other:?}: {v}"),
        }
        if started.last() == Some(&6) {
            break;
        }
    }
    first.kill().unwrap();
    first.wait().unwrap();
    assert_eq!(started, (1..=6).collect::<Vec<_>>());

    let (mut second, mut events) = stepping_worker(&env, "rescuer");
    let mut resumed = Vec::new();
    let mut rescued_token = 0;
    for v in events.by_ref() {
        match v["event"].as_str() {
            Some("acquired") => {
                rescued_token = v["token"].as_u64().unwrap();
                // The dead worker's late record of step 6 is refused, and the steps stay 1-5.
                let late = pb::RecordStepRequest {
                    queue: Q.into(),
                    name: "ten".into(),
                    token: dead_token,
                    step: "step-6".into(),
                    result: b"late".to_vec(),
                };
                let e = env.client.record_step(late).await.unwrap_err();
                assert_eq!((e.code(), reason(&e).as_str()), (Code::FailedPrecondition, "LEASE_LOST"));
            }
            Some("step") => resumed.push(v["step"].as_u64().unwrap()),
            Some("done") => break,
            other => panic!("unexpected {other:?}: {v}"),
        }
    }
    assert!(rescued_token > dead_token);
    println!("killed in step 6; resumed at steps {resumed:?}");
    assert_eq!(resumed, (6..=10).collect::<Vec<_>>(), "steps 1-5 are not run again");
    let done = env
        .client
        .r#await(pb::AwaitRequest { queue: Q.into(), name: "ten".into(), wait: dur(10_000), ..Default::default() })
        .await
        .unwrap()
        .into_inner();
    assert!(done.done);
    let expected: Vec<(String, String)> = (1..=10).map(|i| (format!("step-{i}"), format!("result-{i}"))).collect();
    assert_eq!(named(&done.steps), expected);
    second.kill().unwrap();
    second.wait().unwrap();
}

// A run that ends without a Complete drops its steps too: one CancelRun ended (a recurring
// agent's next run starts with none), one the zombie sweeper dead-lettered.
#[tokio::test]
async fn cancelled_and_reaped_runs_drop_their_steps() {
    let mut config = test_config();
    config.zombie_cleanup.threshold_ms = 0;
    config.zombie_cleanup.interval_ms = 100;
    config.orphan_cleanup.enabled = false;
    let mut env = Env::with_config(config).await;
    let recurring = pb::Agent { error_interval: dur(1), ..agent("every", 1, 60_000) };
    let doomed = pb::Agent { max_attempts: 1, ..agent("doomed", 0, 300) };
    register(&mut env.client, Q, vec![recurring, doomed]).await;
    let leases = acquire(&mut env.client, Q, "w1", 2).await;
    for l in &leases {
        env.client.record_step(record(l, "s", "x")).await.unwrap();
    }
    let every = leases.iter().find(|l| l.name == "every").unwrap();
    env.client
        .cancel_run(pb::CancelRunRequest { queue: Q.into(), name: "every".into(), ..Default::default() })
        .await
        .unwrap();
    let beat = pb::LeaseRef { queue: Q.into(), name: "every".into(), token: every.token, ..Default::default() };
    let r = env.client.heartbeat(pb::HeartbeatRequest { worker_id: "w1".into(), leases: vec![beat] }).await.unwrap();
    assert_eq!(r.into_inner().cancelled.len(), 1);
    let next = acquire_one(&mut env, "w2").await;
    assert_eq!(next.name, "every");
    assert!(next.steps.is_empty(), "a cancelled run's steps are not the next run's");

    let mut conn = env.redis.conn().await;
    eventually(Duration::from_secs(20), "the zombie sweeper dead-letters 'doomed' and drops its steps", || {
        let mut conn = conn.clone();
        async move {
            let left: Vec<String> = redis::cmd("HKEYS").arg(steps_key()).query_async(&mut conn).await.unwrap();
            left.is_empty()
        }
    })
    .await;
    let dead: Option<f64> =
        redis::cmd("ZSCORE").arg(format!("baton:{{q:{Q}}}:dlq")).arg("doomed").query_async(&mut conn).await.unwrap();
    assert!(dead.is_some(), "doomed is dead-lettered");
}

// A new agent starts with no steps, even where an earlier run of its name left some (a run a
// purge or a repair ended without dropping them): Register drops them.
#[tokio::test]
async fn a_new_agent_of_a_name_starts_with_no_steps() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![agent("old", 0, 60_000)]).await;
    let mut conn = env.redis.conn().await;
    // What a run of "again" ended by a purge leaves behind.
    let _: () = redis::cmd("HSET")
        .arg(steps_key())
        .arg("again")
        .arg("fetch|1795000000000|2|ok")
        .query_async(&mut conn)
        .await
        .unwrap();
    register(&mut env.client, Q, vec![agent("again", 0, 60_000)]).await;
    let mut leases = Vec::new();
    while leases.len() < 2 {
        leases.push(acquire_one(&mut env, "w").await);
    }
    let again = leases.iter().find(|l| l.name == "again").expect("again granted");
    assert_eq!(named(&again.steps), pairs(&[]), "a new agent's lease carried an earlier run's steps");
}

//! Signals and durable timers (CompleteRequest.wait_for, Agent.wait_for, Signal), end to end.
//!
//! Invariants checked: a run that waits holds no lease and is not due (WAITING_FOR_EVENT) until
//! its event is signalled or its time passes, and its next lease carries the event (or that it
//! timed out), its failure streak unchanged; a signal sent before the wait is kept and consumed
//! by it; each event is consumed once per run, however often and from however many replicas it
//! is sent (a retried Signal gets its first answer); a stale token's wait is LEASE_LOST and
//! writes nothing, as do refused and NOT_FOUND signals; a new agent can wait before its first
//! run; Unregister ends a wait; a plain job writes none of it; and a signal sent while the
//! replica holding the waiter's stream is SIGKILLed is consumed exactly once.

use crate::common;

use std::time::Duration;

use common::*;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;

const Q: &str = "sig";

fn wait_for(event: &str) -> Option<pb::WaitFor> {
    Some(pb::WaitFor { event: event.into(), ..Default::default() })
}

/// A Complete of `l` that waits for `wait`.
fn waiting(l: &pb::Lease, wait: Option<pb::WaitFor>) -> pb::CompleteRequest {
    pb::CompleteRequest { wait_for: wait, ..complete_req(l, pb::Outcome::Unspecified) }
}

fn signal(name: &str, event: &str, payload: &str) -> pb::SignalRequest {
    pb::SignalRequest {
        queue: Q.into(),
        name: name.into(),
        event: event.into(),
        payload: payload.as_bytes().to_vec(),
        request_id: String::new(),
    }
}

/// A one-shot agent retried at once after a failure.
fn job(name: &str) -> pb::Agent {
    pb::Agent { error_interval: dur(1), ..agent(name, 0, 60_000) }
}

async fn acquire_wait(
    client: &mut pb::agent_service_client::AgentServiceClient<tonic::transport::Channel>,
    worker: &str,
) -> pb::Lease {
    let r = client
        .acquire(pb::AcquireRequest { queue: Q.into(), worker_id: worker.into(), max_leases: 1, wait: dur(20_000) })
        .await
        .unwrap()
        .into_inner();
    r.leases.into_iter().next().expect("a lease within 20 s")
}

async fn status(env: &mut Env, name: &str) -> pb::AgentStatus {
    let req = pb::GetAgentRequest { queue: Q.into(), name: name.into() };
    env.client.get_agent(req).await.unwrap().into_inner().agent.unwrap()
}

/// (event, payload, timed_out) of a lease's delivery.
fn delivered(l: &pb::Lease) -> Option<(String, String, bool)> {
    l.event.as_ref().map(|e| (e.event.clone(), String::from_utf8_lossy(&e.payload).into_owned(), e.timed_out))
}

fn event(name: &str, payload: &str, timed_out: bool) -> Option<(String, String, bool)> {
    Some((name.into(), payload.into(), timed_out))
}

// A run waits for an event: no lease, not due, WAITING_FOR_EVENT; the Signal makes it due at
// once and its next lease carries the event and payload, its streak unchanged; the attempt
// after a failure carries it too.
#[tokio::test]
async fn a_wait_ends_with_the_signalled_event() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![job("job")]).await;
    let first = acquire_wait(&mut env.client, "w1").await;
    assert!(first.event.is_none(), "a run that never waited carries no event");
    let r = env.client.complete(waiting(&first, wait_for("approve"))).await.unwrap().into_inner();
    assert!(r.waiting && r.next_run_at.is_none() && !r.removed, "{r:?}");

    let s = status(&mut env, "job").await;
    assert_eq!(s.state, pb::AgentState::WaitingForEvent as i32, "{s:?}");
    assert_eq!(s.waiting_for.as_ref().map(|w| w.event.as_str()), Some("approve"));
    assert!(s.holder.is_empty() && s.deadline.is_none() && s.next_run_at.is_none(), "{s:?}");
    assert!(acquire(&mut env.client, Q, "w2", 10).await.is_empty(), "a waiting agent is not due");
    let awaited = env.client.r#await(pb::AwaitRequest { queue: Q.into(), name: "job".into(), ..Default::default() });
    assert_eq!(awaited.await.unwrap().into_inner().state, pb::AgentState::WaitingForEvent as i32);

    let sent = env.client.signal(signal("job", "approve", "yes")).await.unwrap().into_inner();
    assert!(sent.delivered && !sent.duplicate, "{sent:?}");
    let second = acquire_wait(&mut env.client, "w2").await;
    assert_eq!(delivered(&second), event("approve", "yes", false));
    assert_eq!(second.attempt, 1, "a wait is no failure");
    env.client.complete(complete_req(&second, pb::Outcome::Transient)).await.unwrap();
    let third = acquire_wait(&mut env.client, "w3").await;
    assert_eq!(delivered(&third), event("approve", "yes", false), "every attempt of the run carries it");
    env.client.complete(complete_req(&third, pb::Outcome::Success)).await.unwrap();
}

// A signal sent before the wait began is kept (signals_pending) and consumed by the wait that
// names it: the Complete answers the agent due at once, and the lease carries the event.
#[tokio::test]
async fn a_signal_before_the_wait_is_consumed_by_it() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![job("job")]).await;
    let first = acquire_wait(&mut env.client, "w1").await;
    let sent = env.client.signal(signal("job", "approve", "early")).await.unwrap().into_inner();
    assert!(sent.kept && !sent.delivered, "{sent:?}");
    assert_eq!(status(&mut env, "job").await.signals_pending, 1);

    let r = env.client.complete(waiting(&first, wait_for("approve"))).await.unwrap().into_inner();
    assert!(r.waiting && r.next_run_at.is_some(), "the kept signal ends the wait at once: {r:?}");
    let second = acquire_wait(&mut env.client, "w1").await;
    assert_eq!(delivered(&second), event("approve", "early", false));
    assert_eq!(status(&mut env, "job").await.signals_pending, 0);
}

// A durable timer: a wait whose timeout passes first ends timed out (the sweeper's step; the
// worker long-polls, no sleep); a signal of the event after that is kept for a later wait.
#[tokio::test]
async fn a_wait_times_out() {
    let mut config = test_config();
    config.zombie_cleanup.interval_ms = 50;
    let mut env = Env::with_config(config).await;
    register(&mut env.client, Q, vec![job("job")]).await;
    let first = acquire_wait(&mut env.client, "w1").await;
    let wait = pb::WaitFor { event: "approve".into(), until: None, timeout: dur(300) };
    let r = env.client.complete(waiting(&first, Some(wait))).await.unwrap().into_inner();
    assert!(r.waiting && r.next_run_at.is_none(), "{r:?}");
    let s = status(&mut env, "job").await;
    assert!(s.waiting_for.as_ref().is_some_and(|w| w.until.is_some()), "the wait's time is shown: {s:?}");

    let second = acquire_wait(&mut env.client, "w1").await;
    assert_eq!(delivered(&second), event("approve", "", true));
    let late = env.client.signal(signal("job", "approve", "late")).await.unwrap().into_inner();
    assert!(late.kept && !late.duplicate, "a timed-out event was not consumed: {late:?}");
    let r = env.client.complete(waiting(&second, wait_for("approve"))).await.unwrap().into_inner();
    assert!(r.next_run_at.is_some(), "{r:?}");
    let third = acquire_wait(&mut env.client, "w1").await;
    assert_eq!(delivered(&third), event("approve", "late", false));
}

// A wait with a token that no longer holds the lease is LEASE_LOST and writes nothing.
#[tokio::test]
async fn a_stale_token_s_wait_is_lease_lost() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![job("job")]).await;
    let stale = acquire_wait(&mut env.client, "w1").await;
    let release = pb::ReleaseRequest { queue: Q.into(), name: "job".into(), token: stale.token, delay: None };
    env.client.release(release).await.unwrap();
    let _current = acquire_wait(&mut env.client, "w2").await;
    let before = env.redis.snapshot().await;
    let e = env.client.complete(waiting(&stale, wait_for("approve"))).await.unwrap_err();
    assert_eq!((e.code(), reason(&e).as_str()), (Code::FailedPrecondition, "LEASE_LOST"), "{e:?}");
    assert_eq!(env.redis.snapshot().await, before, "a stale wait changed Redis");
    assert_eq!(status(&mut env, "job").await.state, pb::AgentState::Working as i32);
}

// Each event is consumed once per run: a second Signal of an event kept is a duplicate (one
// kept), a Signal of an event consumed is a duplicate and delivers nothing, and a retried
// Signal with the same request id gets its first answer.
#[tokio::test]
async fn an_event_is_consumed_once() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![job("job")]).await;
    let first = acquire_wait(&mut env.client, "w1").await;
    let one = env.client.signal(signal("job", "approve", "one")).await.unwrap().into_inner();
    let two = env.client.signal(signal("job", "approve", "two")).await.unwrap().into_inner();
    assert!(one.kept && !one.duplicate && two.duplicate && !two.consumed, "{one:?} {two:?}");
    assert_eq!(status(&mut env, "job").await.signals_pending, 1);
    env.client.complete(waiting(&first, wait_for("approve"))).await.unwrap();
    let second = acquire_wait(&mut env.client, "w1").await;
    assert_eq!(delivered(&second), event("approve", "one", false), "the first payload stands");

    let again = env.client.signal(signal("job", "approve", "three")).await.unwrap().into_inner();
    assert!(again.duplicate && again.consumed && !again.delivered, "{again:?}");
    let r = env.client.complete(waiting(&second, wait_for("next"))).await.unwrap().into_inner();
    assert!(r.next_run_at.is_none(), "nothing is kept for this wait: {r:?}");
    let retried = pb::SignalRequest { request_id: "r-1".into(), ..signal("job", "next", "n") };
    let first_answer = env.client.signal(retried.clone()).await.unwrap().into_inner();
    assert!(first_answer.delivered, "{first_answer:?}");
    let replay = env.client.signal(retried).await.unwrap().into_inner();
    assert_eq!(replay, first_answer, "a retry gets the first answer");
    let third = acquire_wait(&mut env.client, "w1").await;
    assert_eq!(delivered(&third), event("next", "n", false));
    assert!(acquire(&mut env.client, Q, "w2", 10).await.is_empty(), "granted once");
}

// Racing Signals of one event through two replicas of one Redis: exactly one delivers it, the
// others are duplicates, and one lease carries it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_signals_from_two_replicas_are_consumed_once() {
    let mut env = Env::start().await;
    let other = TestBaton::start(&env.redis.url(), test_config()).await;
    register(&mut env.client, Q, vec![job("job")]).await;
    let first = acquire_wait(&mut env.client, "w1").await;
    env.client.complete(waiting(&first, wait_for("go"))).await.unwrap();
    let clients = [env.client.clone(), other.agents().await];
    let sends = (0..16).map(|i| {
        let mut client = clients[i % 2].clone();
        async move { client.signal(signal("job", "go", &format!("p{i}"))).await.unwrap().into_inner() }
    });
    let answers = futures::future::join_all(sends).await;
    let delivered_by: Vec<usize> = (0..16).filter(|&i| answers[i].delivered).collect();
    assert_eq!(delivered_by.len(), 1, "{answers:?}");
    assert!(answers.iter().filter(|a| !a.delivered).all(|a| a.duplicate && a.consumed), "{answers:?}");
    let lease = acquire_wait(&mut env.client, "w1").await;
    assert_eq!(delivered(&lease), event("go", &format!("p{}", delivered_by[0]), false));
    assert!(acquire(&mut env.client, Q, "w2", 10).await.is_empty(), "granted once");
}

// The human approval gate: a new agent registered with wait_for waits before its first run;
// the approval's Signal makes it due, its first lease carrying the event.
#[tokio::test]
async fn a_new_agent_waits_for_its_approval() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![pb::Agent { wait_for: wait_for("approved"), ..job("gated") }]).await;
    let s = status(&mut env, "gated").await;
    assert_eq!(s.state, pb::AgentState::WaitingForEvent as i32, "{s:?}");
    assert!(acquire(&mut env.client, Q, "w1", 10).await.is_empty());
    env.client.signal(signal("gated", "approved", "by alice")).await.unwrap();
    let lease = acquire_wait(&mut env.client, "w1").await;
    assert_eq!(delivered(&lease), event("approved", "by alice", false));
    assert_eq!(lease.attempt, 1);
}

// Refused and bad calls write nothing: a Signal to an unknown agent (NOT_FOUND), one past
// limits.max_pending_signals (RESOURCE_EXHAUSTED naming it), a bad event or payload, a wait
// with nothing to wait for or with a failure's fields (INVALID_ARGUMENT naming the field).
#[tokio::test]
async fn refused_calls_write_nothing() {
    let mut config = test_config();
    config.limits.max_pending_signals = 2;
    config.limits.max_payload_bytes = 16;
    let mut env = Env::with_config(config).await;
    register(&mut env.client, Q, vec![job("job")]).await;
    let l = acquire_wait(&mut env.client, "w1").await;
    env.client.signal(signal("job", "a", "")).await.unwrap();
    env.client.signal(signal("job", "b", "")).await.unwrap();
    let before = env.redis.snapshot().await;

    let e = env.client.signal(signal("job", "c", "")).await.unwrap_err();
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    assert!(e.message().contains("limits.max_pending_signals"), "{e:?}");
    let e = env.client.signal(signal("nobody", "a", "")).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "{e:?}");
    let invalid = |e: tonic::Status| {
        (
            e.code(),
            tonic_types::StatusExt::get_details_bad_request(&e)
                .and_then(|b| b.field_violations.first().map(|v| v.field.clone()))
                .unwrap_or_default(),
        )
    };
    let e = env.client.signal(signal("job", "no|bar", "")).await.unwrap_err();
    assert_eq!(invalid(e), (Code::InvalidArgument, "event".into()));
    let e = env.client.signal(signal("job", "d", &"x".repeat(17))).await.unwrap_err();
    assert_eq!(invalid(e), (Code::InvalidArgument, "payload".into()));
    let e = env.client.complete(waiting(&l, Some(pb::WaitFor::default()))).await.unwrap_err();
    assert_eq!(invalid(e), (Code::InvalidArgument, "wait_for".into()));
    let failed = pb::CompleteRequest { outcome: pb::Outcome::Transient as i32, ..waiting(&l, wait_for("a")) };
    let e = env.client.complete(failed).await.unwrap_err();
    assert_eq!(invalid(e), (Code::InvalidArgument, "outcome".into()));
    let gate = pb::Agent { wait_for: wait_for("x"), ttl: dur(1_000), ..job("gate") };
    let e = env.client.register(pb::RegisterRequest { queue: Q.into(), agents: vec![gate], ..Default::default() });
    assert_eq!(invalid(e.await.unwrap_err()), (Code::InvalidArgument, "agents[0].wait_for".into()));
    assert_eq!(env.redis.snapshot().await, before, "a refused call changed Redis");
}

// Unregister ends a wait (its signals go with the run); a plain job's life writes no wait,
// timer or run record.
#[tokio::test]
async fn unregister_ends_a_wait_and_a_plain_job_writes_none() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![job("plain")]).await;
    let l = acquire_wait(&mut env.client, "w1").await;
    env.client.complete(complete_req(&l, pb::Outcome::Success)).await.unwrap();
    let mut conn = env.redis.conn().await;
    for key in ["waits", "waitat", "steps"] {
        let exists: bool =
            redis::cmd("EXISTS").arg(format!("baton:{{q:{Q}}}:{key}")).query_async(&mut conn).await.unwrap();
        assert!(!exists, "a plain job wrote {key}");
    }

    register(&mut env.client, Q, vec![job("job")]).await;
    let l = acquire_wait(&mut env.client, "w1").await;
    env.client.signal(signal("job", "other", "")).await.unwrap();
    let wait = pb::WaitFor { event: "approve".into(), until: None, timeout: dur(3_600_000) };
    env.client.complete(waiting(&l, Some(wait))).await.unwrap();
    #[allow(clippy::needless_update)] // the request may gain options: this test takes none
    let req = pb::UnregisterRequest { queue: Q.into(), names: vec!["job".into()], ..Default::default() };
    assert_eq!(env.client.unregister(req).await.unwrap().into_inner().removed, 1);
    for key in ["waits", "waitat", "steps"] {
        let exists: bool =
            redis::cmd("EXISTS").arg(format!("baton:{{q:{Q}}}:{key}")).query_async(&mut conn).await.unwrap();
        assert!(!exists, "an unregistered waiter left {key}");
    }
    let e = env.client.signal(signal("job", "approve", "")).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
}

async fn next(stream: &mut tonic::Streaming<pb::SessionResponse>) -> pb::SessionResponse {
    tokio::time::timeout(Duration::from_secs(20), stream.message()).await.unwrap().unwrap().unwrap()
}

/// A worker's Session on `channel`: the sender and the stream.
async fn session(
    channel: tonic::transport::Channel,
    worker: &str,
) -> (mpsc::Sender<pb::SessionRequest>, tonic::Streaming<pb::SessionResponse>) {
    let (tx, rx) = mpsc::channel(8);
    let open = pb::SessionOpen { queue: Q.into(), worker_id: worker.into() };
    tx.send(pb::SessionRequest { open: Some(open), credit: 1, ..Default::default() }).await.unwrap();
    let stream = pb::agent_service_client::AgentServiceClient::new(channel)
        .session(ReceiverStream::new(rx))
        .await
        .unwrap()
        .into_inner();
    (tx, stream)
}

// The acceptance fault test: a worker's Session stream on replica A ends its lease waiting for
// an event (SessionCompletion.wait_for); A is SIGKILLed while the event is signalled through
// replica B; the agent's next lease, on B, carries the event exactly once, a second Signal of
// it is not delivered again, and no other lease of it is ever granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_signal_sent_while_the_waiter_s_replica_is_killed_is_consumed_once() {
    let redis = TestRedis::start().await;
    let mut config = test_config();
    config.orphan_cleanup.threshold_ms = 1_000;
    config.orphan_cleanup.interval_ms = 200;
    config.orphan_cleanup.leadership_ttl_ms = 1_000;
    config.orphan_cleanup.stream_grace_ms = 200;
    let b = TestBaton::start(&redis.url(), config).await;
    let a = BatonProcess::spawn(|cmd| {
        cmd.args(["--redis-url", &redis.url()]);
    });
    let mut client = b.agents().await;
    register(&mut client, Q, vec![job("job")]).await;

    let (tx, mut stream) = session(a.channel().await, "w1").await;
    let lease = next(&mut stream).await.leases.into_iter().next().expect("a lease on A");
    let completion = pb::SessionCompletion {
        name: lease.name.clone(),
        token: lease.token,
        wait_for: wait_for("approve"),
        ..Default::default()
    };
    tx.send(pb::SessionRequest { completions: vec![completion], ..Default::default() }).await.unwrap();
    let answered = next(&mut stream).await;
    let done = answered.completed.first().and_then(|c| c.response).expect("the wait answered");
    assert!(done.waiting, "{done:?}");

    // SIGKILL A while the signal goes through B.
    let signals = {
        let mut client = client.clone();
        tokio::spawn(async move { client.signal(signal("job", "approve", "ok")).await.unwrap().into_inner() })
    };
    a.signal(libc::SIGKILL);
    drop(stream);
    let sent = signals.await.unwrap();
    assert!(sent.delivered, "{sent:?}");

    let (tx, mut stream) = session(b.channel().await, "w1").await;
    let resumed = next(&mut stream).await.leases.into_iter().next().expect("the lease on B");
    assert_eq!(delivered(&resumed), event("approve", "ok", false));
    let again = client.signal(signal("job", "approve", "again")).await.unwrap().into_inner();
    assert!(again.duplicate && again.consumed && !again.delivered, "{again:?}");
    let completion = pb::SessionCompletion {
        name: resumed.name.clone(),
        token: resumed.token,
        outcome: pb::Outcome::Success as i32,
        ..Default::default()
    };
    tx.send(pb::SessionRequest { completions: vec![completion], credit: 1, ..Default::default() }).await.unwrap();
    let r = next(&mut stream).await;
    assert!(r.completed.first().is_some_and(|c| !c.lease_lost), "{r:?}");
    assert!(r.leases.is_empty(), "granted once: {r:?}");
    let e = client.get_agent(pb::GetAgentRequest { queue: Q.into(), name: "job".into() }).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound, "the one-shot run finished once");
}

/// Runs the `baton` CLI with `args` against `addr`; its stdout (it must succeed).
async fn cli(addr: &str, args: &[&str]) -> String {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_baton"));
    cmd.args(args).args(["--addr", addr]).env_remove("BATON_TOKEN");
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output()).await.expect("the CLI answers").unwrap();
    assert!(out.status.success(), "baton {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

// The CLI shows a waiting agent's event and deadline (`baton agent`) and delivers an event
// (`baton signal`), which the next lease carries.
#[tokio::test]
async fn the_cli_shows_the_wait_and_signals() {
    let mut env = Env::start().await;
    let addr = format!("http://{}", env.baton.addr);
    register(&mut env.client, Q, vec![job("job")]).await;
    let l = acquire_wait(&mut env.client, "w1").await;
    let wait = pb::WaitFor { event: "approve".into(), until: None, timeout: dur(3_600_000) };
    env.client.complete(waiting(&l, Some(wait))).await.unwrap();
    let until = status(&mut env, "job").await.waiting_for.and_then(|w| w.until).expect("a deadline");
    let shown = cli(&addr, &["agent", Q, "job"]).await;
    assert!(shown.contains("waiting for event"), "{shown}");
    let line = |field: &str| shown.lines().find(|l| l.trim_start().starts_with(field)).unwrap_or("").to_string();
    assert!(line("waiting for ").contains("approve"), "{shown}");
    let secs = chrono::DateTime::from_timestamp(until.seconds, 0).unwrap().format("%Y-%m-%dT%H:%M").to_string();
    assert!(line("until").contains(&secs), "{secs} in {shown}");
    let out = cli(&addr, &["signal", Q, "job", "approve", "--payload", "ok"]).await;
    assert!(out.contains("delivered"), "{out}");
    let next = acquire_wait(&mut env.client, "w1").await;
    assert_eq!(delivered(&next), event("approve", "ok", false));
}

// The purge requeues definitions found in no state; an agent waiting for an event is in one
// (`waits`) and is left alone: still waiting, not due.
#[tokio::test]
async fn a_purge_leaves_a_waiting_agent_alone() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![pb::Agent { wait_for: wait_for("approved"), ..job("gated") }]).await;
    let mut admin = pb::admin_service_client::AdminServiceClient::new(env.baton.channel().await);
    let purged = admin.purge(pb::PurgeRequest { dry_run: false }).await.unwrap().into_inner();
    assert!(purged.items.is_empty(), "{purged:?}");
    assert_eq!(status(&mut env, "gated").await.state, pb::AgentState::WaitingForEvent as i32);
    assert!(acquire(&mut env.client, Q, "w1", 10).await.is_empty());
}

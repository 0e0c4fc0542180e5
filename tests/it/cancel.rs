//! Cancelling a run (AgentService.CancelRun) and reporting progress on Heartbeat, against real
//! Redis, through the unary calls and a Session stream.
//!
//! Invariants checked:
//! - a cancelled run ends only at the holder's next heartbeat (the lease stays held until then,
//!   so no second run overlaps it), which answers it in `cancelled` and in `lost`;
//! - after that the agent is scheduled as after a success without counting one: a recurring
//!   agent at acquired_at + interval, a one-shot agent removed; the old token is refused;
//! - progress reported on a heartbeat is what GetAgent shows while the run is held;
//! - bad input is INVALID_ARGUMENT naming the field and changes nothing.

use crate::common;

use std::time::Duration;

use common::*;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Code;

const Q: &str = "runs";

async fn next(s: &mut tonic::Streaming<pb::SessionResponse>) -> pb::SessionResponse {
    tokio::time::timeout(Duration::from_secs(30), s.message()).await.unwrap().unwrap().unwrap()
}

fn beat(l: &pb::Lease, progress: &str) -> pb::HeartbeatRequest {
    pb::HeartbeatRequest {
        worker_id: "w".into(),
        leases: vec![pb::LeaseRef { queue: Q.into(), name: l.name.clone(), token: l.token, progress: progress.into() }],
    }
}

fn lease_ref(l: &pb::Lease) -> pb::LeaseRef {
    pb::LeaseRef { queue: Q.into(), name: l.name.clone(), token: l.token, ..Default::default() }
}

async fn status(env: &mut Env, name: &str) -> Result<pb::AgentStatus, tonic::Status> {
    let req = pb::GetAgentRequest { queue: Q.into(), name: name.into() };
    env.client.get_agent(req).await.map(|r| r.into_inner().agent.unwrap())
}

async fn cancel(env: &mut Env, name: &str) -> pb::CancelRunResponse {
    env.client
        .cancel_run(pb::CancelRunRequest { queue: Q.into(), name: name.into(), ..Default::default() })
        .await
        .unwrap()
        .into_inner()
}

// Progress is shown while the run is held; CancelRun marks the run and the holder's next
// heartbeat ends it; the recurring agent then waits for acquired_at + interval.
#[tokio::test]
async fn a_cancelled_run_ends_at_the_holders_next_heartbeat() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![agent("report", 60_000, 30_000)]).await;
    let l = acquire(&mut env.client, Q, "w", 1).await.pop().unwrap();
    let r = env.client.heartbeat(beat(&l, "step 2 of 5")).await.unwrap().into_inner();
    assert_eq!(r.extended.len(), 1);
    let s = status(&mut env, "report").await.unwrap();
    assert_eq!((s.progress.as_str(), s.cancel_requested), ("step 2 of 5", false));

    let c = cancel(&mut env, "report").await;
    assert_eq!((c.requested, c.token), (true, l.token));
    assert!(cancel(&mut env, "report").await.requested, "marking twice is harmless");
    let s = status(&mut env, "report").await.unwrap();
    assert_eq!(s.state, pb::AgentState::Working as i32, "still held until the holder hears of it");
    assert!(s.cancel_requested);
    assert_eq!(s.progress, "step 2 of 5", "the mark keeps the progress");
    assert!(acquire(&mut env.client, Q, "other", 1).await.is_empty(), "no second run meanwhile");

    let r = env.client.heartbeat(beat(&l, "")).await.unwrap().into_inner();
    assert!(r.extended.is_empty());
    assert_eq!(r.cancelled, vec![lease_ref(&l)]);
    assert_eq!(r.lost, vec![lease_ref(&l)], "in lost too, for helpers that know only lost");
    let s = status(&mut env, "report").await.unwrap();
    assert_eq!(s.state, pb::AgentState::Waiting as i32);
    assert_eq!(ms(&s.next_run_at), ms(&l.deadline) - 30_000 + 60_000, "acquired_at + interval");
    assert_eq!((s.failure_streak, s.progress.as_str(), s.cancel_requested), (0, "", false));
    let e = env.client.complete(complete_req(&l, pb::Outcome::Success)).await.unwrap_err();
    assert_eq!(reason(&e), "LEASE_LOST");
    assert!(!cancel(&mut env, "report").await.requested, "not running any more");
}

// A cancelled one-shot agent is gone; a Complete that comes before the heartbeat wins.
#[tokio::test]
async fn a_cancelled_one_shot_is_removed_and_a_completion_first_wins() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![agent("once", 0, 30_000), agent("quick", 60_000, 30_000)]).await;
    let leases = acquire(&mut env.client, Q, "w", 2).await;
    let (once, quick) = if leases[0].name == "once" { (&leases[0], &leases[1]) } else { (&leases[1], &leases[0]) };
    assert!(cancel(&mut env, "once").await.requested);
    assert!(cancel(&mut env, "quick").await.requested);
    let r = env.client.heartbeat(beat(once, "")).await.unwrap().into_inner();
    assert_eq!(r.cancelled, vec![lease_ref(once)]);
    assert_eq!(status(&mut env, "once").await.unwrap_err().code(), Code::NotFound);

    let done = env.client.complete(complete_req(quick, pb::Outcome::Success)).await.unwrap().into_inner();
    assert!(done.next_run_at.is_some(), "the completion ends the marked lease as usual");
    let r = env.client.heartbeat(beat(quick, "")).await.unwrap().into_inner();
    assert!(r.cancelled.is_empty() && r.lost.len() == 1, "already ended: lost, not cancelled");
}

// A label named "cron" does not make a one-shot agent a cron agent: cancelled, it is removed
// (not scheduled again at a cron fire); completed, it is removed as any one-shot.
#[tokio::test]
async fn a_one_shot_with_a_label_named_cron_is_not_a_cron_agent() {
    let mut env = Env::start().await;
    let labelled = |name: &str| pb::Agent {
        labels: [("cron".to_string(), "*/5 * * * *".to_string())].into(),
        ..agent(name, 0, 30_000)
    };
    register(&mut env.client, Q, vec![labelled("stop"), labelled("done")]).await;
    let leases = acquire(&mut env.client, Q, "w", 2).await;
    let (stop, done) = if leases[0].name == "stop" { (&leases[0], &leases[1]) } else { (&leases[1], &leases[0]) };
    assert!(cancel(&mut env, "stop").await.requested);
    let r = env.client.heartbeat(beat(stop, "")).await.unwrap().into_inner();
    assert_eq!(r.cancelled, vec![lease_ref(stop)]);
    assert_eq!(status(&mut env, "stop").await.map(|s| s.state).unwrap_err().code(), Code::NotFound);
    let answer = env.client.complete(complete_req(done, pb::Outcome::Success)).await.unwrap().into_inner();
    assert!(answer.next_run_at.is_none(), "a one-shot runs once: {answer:?}");
    assert_eq!(status(&mut env, "done").await.map(|s| s.state).unwrap_err().code(), Code::NotFound);
}

// The same through a Session stream: heartbeats carry progress; the cancelled lease is answered
// in `cancelled` and `lost`.
#[tokio::test]
async fn a_session_hears_of_a_cancelled_run_on_its_heartbeat() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![agent("long", 60_000, 30_000)]).await;
    let (tx, rx) = mpsc::channel(8);
    let open = pb::SessionOpen { queue: Q.into(), worker_id: "w".into() };
    tx.send(pb::SessionRequest { open: Some(open), credit: 1, ..Default::default() }).await.unwrap();
    let mut stream = env.client.clone().session(ReceiverStream::new(rx)).await.unwrap().into_inner();
    let l = next(&mut stream).await.leases.pop().unwrap();
    let hb = |progress: &str| pb::SessionRequest {
        heartbeats: vec![pb::SessionLease { name: l.name.clone(), token: l.token, progress: progress.into() }],
        ..Default::default()
    };
    tx.send(hb("40%")).await.unwrap();
    assert_eq!(next(&mut stream).await.extended.len(), 1);
    assert_eq!(status(&mut env, "long").await.unwrap().progress, "40%");
    assert!(cancel(&mut env, "long").await.requested);
    tx.send(hb("")).await.unwrap();
    let r = next(&mut stream).await;
    let gone = pb::LeaseRef { queue: Q.into(), name: "long".into(), token: l.token, ..Default::default() };
    assert_eq!((r.cancelled, r.lost), (vec![gone.clone()], vec![gone]));
    assert_eq!(status(&mut env, "long").await.unwrap().state, pb::AgentState::Waiting as i32);
}

// Every validation rule names its field; a refused call changes nothing.
#[tokio::test]
async fn bad_cancel_and_progress_input_is_refused_naming_the_field() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![agent("a1", 60_000, 30_000)]).await;
    let l = acquire(&mut env.client, Q, "w", 1).await.pop().unwrap();
    for (queue, name, field) in [("", "a1", "queue"), ("a{b", "a1", "queue"), (Q, "", "name"), (Q, "123", "name")] {
        let e = env
            .client
            .cancel_run(pb::CancelRunRequest { queue: queue.into(), name: name.into(), ..Default::default() })
            .await
            .unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{field}");
        assert!(e.message().starts_with(field), "{field}: {}", e.message());
    }
    let e = env
        .client
        .cancel_run(pb::CancelRunRequest { queue: Q.into(), name: "ghost".into(), ..Default::default() })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);

    let e = env.client.heartbeat(beat(&l, &"x".repeat(257))).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().starts_with("leases[0].progress"), "{}", e.message());
    let s = status(&mut env, "a1").await.unwrap();
    assert_eq!((s.progress.as_str(), s.cancel_requested), ("", false), "nothing changed");
    assert!(env.client.heartbeat(beat(&l, &"x".repeat(256))).await.is_ok(), "256 bytes is allowed");
}

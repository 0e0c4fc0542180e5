//! The worker helper against a live Baton: failures go to the server whole, for it to classify
//! and clip; a refused call's reason reads from the status. (Stopping, lost leases and credit
//! are the conformance scenarios', run in every language: clients/conformance/.)

mod common;

use std::time::Duration;

use baton_client::{
    pb,
    producer::{one_shot, Producer},
    worker::{Failure, Worker},
};
use common::*;
use tokio_util::sync::CancellationToken;

// A handler's error goes to the server whole: an HTTP status or an error type for the server
// to classify (429 → THROTTLED, an I/O error → TRANSIENT), and a message over the server's
// limit clipped by the server on a character boundary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_classified_and_clipped_by_the_server() {
    let baton = Baton::start();
    let client = baton.client().await;
    let once = |name: &str| pb::Agent { max_attempts: 1, ..one_shot(name, vec![]) };
    Producer::new(&client).register("q", vec![once("http"), once("io"), once("long")]).await.unwrap();
    let long = "é€😀".repeat(1000);
    let mut worker = Worker::new(&client, "q", "w1");
    worker.max_leases = 3;
    let stop = CancellationToken::new();
    let message = long.clone();
    let run = tokio::spawn(worker.run(stop.clone(), move |lease, _| {
        let message = message.clone();
        async move {
            match lease.name.as_str() {
                "http" => Err(Failure::from_http_status(429, "slow down")),
                "io" => Err(std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset").into()),
                _ => Err(Failure::new(pb::Outcome::Unknown, message)),
            }
        }
    }));
    let mut admin = client.admin();
    let source = Some(pb::Source { kind: pb::SourceKind::Queue as i32, name: "q".into() });
    let end = std::time::Instant::now() + Duration::from_secs(20);
    let dead = loop {
        let request = pb::ListDeadLettersRequest { source: source.clone(), ..Default::default() };
        let dead = admin.list_dead_letters(request).await.unwrap().into_inner().dead_letters;
        if dead.len() == 3 {
            break dead;
        }
        assert!(std::time::Instant::now() < end, "not all dead-lettered: {dead:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    stop.cancel();
    run.await.unwrap().unwrap();
    let by_name = |n: &str| dead.iter().find(|d| d.id == n).unwrap().clone();
    assert_eq!(by_name("http").error_class, "THROTTLED");
    assert_eq!(by_name("io").error_class, "TRANSIENT");
    let clipped = by_name("long").message;
    let kept = clipped.strip_suffix('…').expect("clipped, ending in …");
    assert!(clipped.len() <= 4096 && long.starts_with(kept), "{} bytes", clipped.len());
}

// A refused call carries its ErrorInfo reason, read by `reason`; a refusal that is not worth
// retrying carries no retry hint.
#[tokio::test]
async fn a_refused_call_carries_its_reason() {
    let baton = Baton::start();
    let client = baton.client().await;
    let request = pb::GetAgentRequest { queue: "nowhere".into(), name: "nobody".into() };
    let refused = client.agents().get_agent(request).await.expect_err("NOT_FOUND");
    assert_eq!(baton_client::reason(&refused).as_deref(), Some("NOT_FOUND"));
    assert_eq!(baton_client::pushback(&refused), None);
    let request = pb::GetAgentRequest { queue: "a{b".into(), name: "x".into() };
    let refused = client.agents().get_agent(request).await.expect_err("INVALID_ARGUMENT");
    assert_eq!(baton_client::reason(&refused).as_deref(), Some("INVALID_ARGUMENT"));
}

// A handler ends its run by waiting (`Failure::wait_for`), a signal wakes it, and its next lease
// carries the event; a progress report goes out at once, not with the next (here hourly) beat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waits_for_a_signal_and_reports_progress_at_once() {
    let baton = Baton::start();
    let client = baton.client().await;
    let producer = Producer::new(&client);
    let kept = pb::Agent { keep_result: true, ..one_shot("a", vec![]) }; // its finish outlives the run
    producer.register("q", vec![kept]).await.unwrap();
    let mut worker = Worker::new(&client, "q", "w1");
    worker.heartbeat_every = Duration::from_secs(3600);
    let (progress, results, stop) = (worker.progress(), worker.results(), CancellationToken::new());
    let run = tokio::spawn(worker.run(stop.clone(), move |lease, _| {
        let (progress, results) = (progress.clone(), results.clone());
        async move {
            let Some(event) = &lease.event else {
                progress.report(&lease, "1/2");
                tokio::time::sleep(Duration::from_secs(3)).await; // seen by GetAgent meanwhile
                return Err(Failure::wait_for("approve", None));
            };
            results.set(&lease, [event.event.as_bytes(), b":", &event.payload].concat());
            Ok(())
        }
    }));
    let mut agents = client.agents();
    let get = pb::GetAgentRequest { queue: "q".into(), name: "a".into() };
    let end = std::time::Instant::now() + Duration::from_secs(2);
    while agents.get_agent(get.clone()).await.unwrap().into_inner().agent.unwrap().progress != "1/2" {
        assert!(std::time::Instant::now() < end, "the progress waited for a heartbeat");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let waiting = pb::AgentState::WaitingForEvent as i32;
    while agents.get_agent(get.clone()).await.unwrap().into_inner().agent.unwrap().state != waiting {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(producer.signal("q", "a", "approve", b"ok".to_vec()).await.unwrap().delivered);
    let done = producer.await_result("q", "a", Some(Duration::from_secs(10)), 0).await.unwrap().unwrap();
    assert_eq!(done.result, b"approve:ok");
    stop.cancel();
    run.await.unwrap().unwrap();
}

//! The Rust client helpers (`baton::client`) against a live Baton: worker loop, leadership,
//! claims, scheduled-message subscriber.

use crate::common;

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use baton::client::{
    claim::{ClaimError, Claimer},
    leadership::Leadership,
    subscriber::Subscriber,
    worker::{Failure, Worker},
};
use common::*;
use tokio_util::sync::CancellationToken;

async fn until<F: FnMut() -> bool>(what: &str, mut done: F) {
    let end = std::time::Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(std::time::Instant::now() < end, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// The worker loop completes with the outcome its handler's result maps to, cancels a handler
// whose lease is lost, and releases what it holds on shutdown.
#[tokio::test]
async fn worker_loop_outcomes_lost_leases_and_shutdown() {
    let mut env = Env::start().await;
    register(&mut env.client, "w", vec![agent("ok", 3_600_000, 60_000), agent("throttled", 3_600_000, 60_000)]).await;
    let mut worker = Worker::new(env.baton.channel().await, "w", "rusty");
    worker.max_leases = 2;
    let stop = CancellationToken::new();
    let run = tokio::spawn(worker.clone().run(stop.clone(), |lease, _| async move {
        match lease.name.as_str() {
            "throttled" => Err(Failure::from_http_status(429, "slow down")),
            _ => Ok(()),
        }
    }));
    let mut c = env.client.clone();
    let reader = env.client.clone();
    let state = |name: &'static str| {
        let mut c = reader.clone();
        async move {
            c.get_agent(pb::GetAgentRequest { queue: "w".into(), name: name.into() })
                .await
                .unwrap()
                .into_inner()
                .agent
                .unwrap()
        }
    };
    let end = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (ok, thr) = (state("ok").await, state("throttled").await);
        if ok.state() == pb::AgentState::Waiting && thr.failure_streak == 1 {
            break;
        }
        assert!(std::time::Instant::now() < end, "outcomes never recorded: {ok:?} {thr:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.cancel();
    run.await.unwrap().unwrap();

    // A lease lost while its handler runs: the handler is cancelled.
    register(&mut c, "w", vec![agent("long", 3_600_000, 60_000)]).await;
    let mut worker = Worker::new(env.baton.channel().await, "w", "rusty-2");
    worker.heartbeat_every = Duration::from_millis(100);
    let cancelled = Arc::new(Mutex::new(false));
    let stop = CancellationToken::new();
    let flag = cancelled.clone();
    let run = tokio::spawn(worker.run(stop.clone(), move |_, lost| {
        let flag = flag.clone();
        async move {
            lost.cancelled().await;
            *flag.lock().unwrap() = true;
            Ok(())
        }
    }));
    let mut conn = env.redis.conn().await;
    let end = std::time::Instant::now() + Duration::from_secs(20);
    while state("long").await.state() != pb::AgentState::Working {
        assert!(std::time::Instant::now() < end);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Take the lease away behind the worker's back, as a sweeper would.
    let _: () = redis::cmd("HDEL").arg("baton:{q:w}:leases").arg("long").query_async(&mut conn).await.unwrap();
    until("the handler is cancelled", || *cancelled.lock().unwrap()).await;
    stop.cancel();
    run.await.unwrap().unwrap();
    let _ = &mut env.client;

    // Shutdown releases a lease still running.
    register(&mut c, "w", vec![agent("held", 3_600_000, 60_000)]).await;
    let worker = Worker::new(env.baton.channel().await, "w", "rusty-3");
    let stop = CancellationToken::new();
    let run = tokio::spawn(worker.run(stop.clone(), |_, lost| async move {
        lost.cancelled().await;
        Ok(())
    }));
    let end = std::time::Instant::now() + Duration::from_secs(20);
    while state("held").await.state() != pb::AgentState::Working {
        assert!(std::time::Instant::now() < end);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.cancel();
    run.await.unwrap().unwrap();
    assert_eq!(state("held").await.state(), pb::AgentState::Waiting, "released on shutdown");
}

// A handler reports progress (GetAgent shows it) and is cancelled when an operator cancels its
// run; the recurring agent then waits for its next run.
#[tokio::test]
async fn worker_reports_progress_and_a_cancelled_run_cancels_its_handler() {
    let mut env = Env::start().await;
    register(&mut env.client, "w", vec![agent("crawl", 3_600_000, 60_000)]).await;
    let mut worker = Worker::new(env.baton.channel().await, "w", "rusty");
    worker.heartbeat_every = Duration::from_millis(100);
    let progress = worker.progress();
    let cancelled = Arc::new(Mutex::new(false));
    let (flag, stop) = (cancelled.clone(), CancellationToken::new());
    let run = tokio::spawn(worker.run(stop.clone(), move |lease, cancel| {
        let (flag, progress) = (flag.clone(), progress.clone());
        async move {
            progress.report(&lease, "page 3 of 10");
            cancel.cancelled().await;
            *flag.lock().unwrap() = true;
            Ok(())
        }
    }));
    let get = || {
        let mut c = env.client.clone();
        async move {
            c.get_agent(pb::GetAgentRequest { queue: "w".into(), name: "crawl".into() })
                .await
                .unwrap()
                .into_inner()
                .agent
                .unwrap()
        }
    };
    eventually(Duration::from_secs(20), "progress shown", || async { get().await.progress == "page 3 of 10" }).await;
    let mut c = env.client.clone();
    let r = c
        .cancel_run(pb::CancelRunRequest { queue: "w".into(), name: "crawl".into(), ..Default::default() })
        .await
        .unwrap();
    assert!(r.into_inner().requested);
    until("the handler is cancelled", || *cancelled.lock().unwrap()).await;
    eventually(Duration::from_secs(20), "waiting for its next run", || async {
        get().await.state() == pb::AgentState::Waiting
    })
    .await;
    stop.cancel();
    run.await.unwrap().unwrap();
}

// Leadership: one of two candidates leads; when it stops, it resigns and the other leads with a
// larger token.
#[tokio::test]
async fn leadership_helper_hands_over_on_stop() {
    let env = Env::start().await;
    let (stop_a, stop_b) = (CancellationToken::new(), CancellationToken::new());
    let ttl = Duration::from_secs(30);
    let (a, task_a) = Leadership::new(env.baton.channel().await, "e", "a", ttl).spawn(stop_a.clone());
    until("a leads", || a.borrow().is_some()).await;
    let (b, _task_b) = Leadership::new(env.baton.channel().await, "e", "b", ttl).spawn(stop_b.clone());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(b.borrow().is_none(), "one leader at a time");
    let first = a.borrow().unwrap();
    stop_a.cancel();
    task_a.await.unwrap();
    assert!(a.borrow().is_none());
    until("b leads after a resigned (not after the 30 s ttl)", || b.borrow().is_some()).await;
    assert!(b.borrow().unwrap() > first);
    stop_b.cancel();
}

// Claims: the scoped form returns the resource for reuse on success and dead-letters it on
// error; a wait that ends gives None; a full line is LineFull with the pushback hint.
#[tokio::test]
async fn claim_helper_gives_back_or_fails() {
    let mut config = test_config();
    config.pool.max_line = 1;
    let env = Env::with_config(config).await;
    let channel = env.baton.channel().await;
    let mut pools = baton::pb::claim_service_client::ClaimServiceClient::new(channel.clone());
    let offer = pb::OfferRequest {
        request_id: String::new(),
        pool: "p".into(),
        resources: vec![pb::Resource { id: "r1".into(), attributes: HashMap::new() }],
    };
    pools.offer(offer).await.unwrap();
    let claimer = Claimer::new(channel.clone(), "p", "me");

    let ok: Option<Result<String, String>> = claimer.with(Duration::ZERO, |r| async move { Ok(r.id) }).await.unwrap();
    assert_eq!(ok, Some(Ok("r1".to_string())));
    let status = pools.get_pool(pb::GetPoolRequest { pool: "p".into() }).await.unwrap().into_inner().status.unwrap();
    assert_eq!((status.idle, status.claimed), (1, 0), "given back for reuse");

    let failed: Option<Result<(), String>> =
        claimer.with(Duration::ZERO, |_| async { Err("broken disk".to_string()) }).await.unwrap();
    assert_eq!(failed, Some(Err("broken disk".to_string())));
    let status = pools.get_pool(pb::GetPoolRequest { pool: "p".into() }).await.unwrap().into_inner().status.unwrap();
    assert_eq!((status.idle, status.dead_lettered), (0, 1), "dead-lettered on error");

    assert!(claimer.claim(HashMap::new(), Duration::from_millis(100)).await.unwrap().is_none(), "the wait ended");

    let waiting = {
        let c = claimer.clone();
        tokio::spawn(async move { c.claim(HashMap::new(), Duration::from_secs(5)).await })
    };
    let end = std::time::Instant::now() + Duration::from_secs(20);
    while pools
        .get_pool(pb::GetPoolRequest { pool: "p".into() })
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap()
        .waiting_claims
        < 1
    {
        assert!(std::time::Instant::now() < end);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    match claimer.claim(HashMap::new(), Duration::from_secs(5)).await {
        Err(ClaimError::LineFull { retry_after }) => assert!(retry_after.is_some(), "with the pushback hint"),
        other => panic!("expected LineFull, got {other:?}"),
    }
    let offer = pb::OfferRequest {
        request_id: String::new(),
        pool: "p".into(),
        resources: vec![pb::Resource { id: "r2".into(), attributes: HashMap::new() }],
    };
    pools.offer(offer).await.unwrap();
    let held = waiting.await.unwrap().unwrap().expect("served from the line");
    assert_eq!(held.resource.id, "r2");
    held.give_back(false).await.unwrap();
}

// Subscriber: handles and acks messages; a failing handler's message comes again with a
// higher delivery count; stop ends it cleanly.
#[tokio::test]
async fn subscriber_acks_and_sees_redeliveries() {
    let mut config = test_config();
    config.schedule.ack_timeout_ms = 300;
    let env = Env::with_config(config).await;
    let channel = env.baton.channel().await;
    let mut sched = baton::pb::schedule_service_client::ScheduleServiceClient::new(channel.clone());
    for payload in ["good", "flaky"] {
        let req = pb::ScheduleRequest { receiver: "r".into(), payload: payload.into(), ..Default::default() };
        sched.schedule(req).await.unwrap();
    }
    let seen = Arc::new(Mutex::new(Vec::<(String, u32)>::new()));
    let stop = CancellationToken::new();
    let log = seen.clone();
    let run = tokio::spawn(Subscriber::new(channel, "r", "sub").run(stop.clone(), move |m| {
        let log = log.clone();
        async move {
            let payload = String::from_utf8(m.payload).unwrap();
            log.lock().unwrap().push((payload.clone(), m.delivery_count));
            if payload == "flaky" && m.delivery_count == 1 {
                return Err("not yet");
            }
            Ok(())
        }
    }));
    until("flaky delivered twice", || seen.lock().unwrap().contains(&("flaky".into(), 2))).await;
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(10), run).await.expect("stops cleanly").unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.iter().filter(|(p, _)| p == "good").count(), 1, "acked: delivered once");
    // Nothing left: everything was acked.
    let mut conn = env.redis.conn().await;
    let left: usize = redis::cmd("HLEN").arg("baton:{r:r}:messages").query_async(&mut conn).await.unwrap();
    assert_eq!(left, 0, "{seen:?}");
}

// Subscriber on its Receive stream: 200 messages, each
// handled exactly once, never more than max_in_flight handlers at once, and every one acked
// (the receiver ends empty); stop ends it cleanly, its last acks sent and answered.
#[tokio::test]
async fn subscriber_handles_each_message_once_within_max_in_flight() {
    {
        // An ack timeout far beyond the wait below: a delivery left in flight cannot clear itself.
        let mut config = test_config();
        config.schedule.ack_timeout_ms = 600_000;
        let env = Env::with_config(config).await;
        let channel = env.baton.channel().await;
        let mut sched = baton::pb::schedule_service_client::ScheduleServiceClient::new(channel.clone());
        let messages: Vec<_> = (0..200)
            .map(|i| pb::ScheduleRequest {
                receiver: "r".into(),
                payload: format!("m{i}").into_bytes(),
                ..Default::default()
            })
            .collect();
        sched.schedule_batch(pb::ScheduleBatchRequest { messages }).await.unwrap();
        let seen = Arc::new(Mutex::new(HashMap::<String, u32>::new()));
        let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let mut sub = Subscriber::new(channel, "r", "sub");
        sub.max_in_flight = 5;
        let stop = CancellationToken::new();
        let (log, n, m) = (seen.clone(), now.clone(), most.clone());
        let run = tokio::spawn(sub.run(stop.clone(), move |msg| {
            let (log, n, m) = (log.clone(), n.clone(), m.clone());
            async move {
                m.fetch_max(n.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                *log.lock().unwrap().entry(String::from_utf8(msg.payload).unwrap()).or_default() += 1;
                tokio::task::yield_now().await;
                n.fetch_sub(1, Ordering::SeqCst);
                Ok::<(), String>(())
            }
        }));
        until("200 handled", || seen.lock().unwrap().len() == 200).await;
        // Every message acked: GetHealth finds nothing left in the receiver (nothing due,
        // scheduled ahead, in flight or dead-lettered; nothing was cancelled).
        let admin = baton::pb::admin_service_client::AdminServiceClient::new(env.baton.channel().await);
        eventually(Duration::from_secs(30), "every message acked", || {
            let mut admin = admin.clone();
            async move {
                let all = admin.get_health(pb::GetHealthRequest {}).await.unwrap().into_inner();
                all.sources.iter().any(|h| {
                    h.source.as_ref().is_some_and(|s| s.kind() == pb::SourceKind::Receiver && s.name == "r")
                        && (h.size, h.idle, h.in_use, h.dead_lettered) == (0, 0, 0, 0)
                })
            }
        })
        .await;
        stop.cancel();
        tokio::time::timeout(Duration::from_secs(10), run).await.expect("stops cleanly").unwrap();
        assert!(seen.lock().unwrap().values().all(|&c| c == 1), "each message handled once");
        let most = most.load(Ordering::SeqCst);
        assert!(most <= 5, "{most} handlers at once, more than max_in_flight 5");
    }
}

// Shared case of every client language: Renew never answers (the Baton process is frozen
// with SIGSTOP) → the helper reports the loss before the term could expire: within 2/3 ttl of
// the last successful Renew's send, which was before the freeze.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leadership_renew_never_answers_reports_lost_before_the_term_expires() {
    let redis = TestRedis::start().await;
    let baton = BatonProcess::spawn(|cmd| {
        cmd.args(["--redis-url", &redis.url()]);
    });
    let ttl = Duration::from_secs(3);
    let stop = CancellationToken::new();
    let (mut term, _task) = Leadership::new(baton.channel().await, "frozen", "me", ttl).spawn(stop.clone());
    tokio::time::timeout(Duration::from_secs(30), term.wait_for(|t| t.is_some())).await.unwrap().unwrap();
    baton.signal(libc::SIGSTOP);
    let frozen = std::time::Instant::now();
    let lost = tokio::time::timeout(Duration::from_secs(30), term.wait_for(|t| t.is_none())).await;
    let elapsed = frozen.elapsed();
    baton.signal(libc::SIGCONT);
    lost.expect("the loss is reported").unwrap();
    assert!(elapsed < ttl, "reported {elapsed:?} into the freeze; the term could end {ttl:?} after it");
    stop.cancel();
}

// A failure message far over the server's 4,096-byte limit, of 2-, 3- and 4-byte characters,
// goes whole: Complete succeeds (the lease does not time out) and the server keeps it clipped
// on a character boundary, ending in "…".
#[tokio::test]
async fn worker_sends_long_failure_messages_whole_for_the_server_to_clip() {
    let mut env = Env::start().await;
    let dying = pb::Agent { max_attempts: 1, ..agent("dies", 3_600_000, 60_000) };
    register(&mut env.client, "t", vec![dying]).await;
    let long = "é€😀".repeat(1000);
    let worker = Worker::new(env.baton.channel().await, "t", "rusty");
    let stop = CancellationToken::new();
    let message = long.clone();
    let run = tokio::spawn(worker.run(stop.clone(), move |_, _| {
        let message = message.clone();
        async move { Err(Failure::new(pb::Outcome::Unknown, message)) }
    }));
    let mut admin = pb::admin_service_client::AdminServiceClient::new(env.baton.channel().await);
    let source = Some(pb::Source { kind: pb::SourceKind::Queue as i32, name: "t".into() });
    let dead = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let req = pb::ListDeadLettersRequest { source: source.clone(), ..Default::default() };
            let page = admin.list_dead_letters(req).await.unwrap().into_inner().dead_letters;
            if let Some(d) = page.into_iter().next() {
                break d;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the failed run is dead-lettered (Complete succeeded)");
    stop.cancel();
    run.await.unwrap().unwrap();
    let kept = dead.message.strip_suffix('…').expect("clipped, ending in …");
    assert!(dead.message.len() <= 4096, "{} bytes", dead.message.len());
    assert!(long.starts_with(kept), "a prefix of the original");
}

// A malformed address is an error from Worker::connect, not a panic.
#[tokio::test]
async fn worker_connect_to_a_malformed_address_is_an_error() {
    for addr in ["not a uri", "http://[::1", ""] {
        assert!(Worker::connect(addr, "q", "w").await.is_err(), "{addr:?}");
    }
}

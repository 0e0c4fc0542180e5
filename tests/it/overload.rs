//! Overload: admission control sheds new work, never work already held.
//!
//! Invariants checked, under a flood of unary Acquires from ten times as many callers as the
//! replica admits at once (`limits.max_inflight_work`):
//! - a shed call fails with RESOURCE_EXHAUSTED, reason OVERLOADED, and a pushback hint
//!   (`grpc-retry-pushback-ms`), and did nothing;
//! - the Heartbeats of a worker holding leases are never shed and never fail: every one extends
//!   every lease, and every lease completes at the end (none was lost);
//! - calls still get through (the flood is admitted up to the limit).
//!
//! And the bulk lanes (`limits.bulk_inflight`): while Redis is busy, at most that many large
//! script calls are in flight to it, the others wait in Baton, and a small call sent then runs
//! before the waiting ones (it is not queued behind a whole fleet's batches).
//!
//! The heartbeats' latency under the flood is printed (`--nocapture`); timing belongs to the
//! bench, so the test bounds it only far above any healthy figure.

use crate::common;

use std::{
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering::SeqCst},
        Arc,
    },
    time::{Duration, Instant},
};

use common::*;

const PLACES: u32 = 4;
const FLOODERS: usize = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_new_work_is_shed_and_held_work_keeps_being_served() {
    let mut config = test_config();
    config.limits.max_inflight_work = PLACES;
    let mut env = Env::with_config(config).await;
    register(&mut env.client, "held", (0..10).map(|i| agent(&format!("h{i}"), 3_600_000, 60_000)).collect()).await;
    let held = acquire(&mut env.client, "held", "holder", 10).await;
    assert_eq!(held.len(), 10);
    register(&mut env.client, "flood", (0..1_000).map(|i| agent(&format!("f{i:04}"), 3_600_000, 60_000)).collect())
        .await;

    let stop = Arc::new(AtomicBool::new(false));
    let (admitted, shed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut flood = Vec::new();
    for f in 0..FLOODERS {
        let mut c = env.baton.agents().await;
        let (stop, admitted, shed) = (stop.clone(), admitted.clone(), shed.clone());
        flood.push(tokio::spawn(async move {
            while !stop.load(SeqCst) {
                let req =
                    pb::AcquireRequest { queue: "flood".into(), worker_id: format!("f{f}"), max_leases: 1, wait: None };
                match c.acquire(req).await {
                    Ok(_) => admitted.fetch_add(1, SeqCst),
                    Err(e) => {
                        assert_eq!(e.code(), tonic::Code::ResourceExhausted, "{e:?}");
                        assert_eq!(reason(&e), "OVERLOADED", "{e:?}");
                        assert!(e.metadata().get("grpc-retry-pushback-ms").is_some(), "a pushback hint: {e:?}");
                        shed.fetch_add(1, SeqCst)
                    }
                };
            }
        }));
    }

    // Heartbeat the held leases throughout the flood, until it was shed a good many times.
    let refs: Vec<pb::LeaseRef> = held
        .iter()
        .map(|l| pb::LeaseRef { queue: l.queue.clone(), name: l.name.clone(), token: l.token, progress: String::new() })
        .collect();
    let mut latencies = Vec::new();
    let started = Instant::now();
    while latencies.len() < 100 || shed.load(SeqCst) < 100 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the flood was shed {} times in 120 s",
            shed.load(SeqCst)
        );
        let t = Instant::now();
        let beat = env
            .client
            .heartbeat(pb::HeartbeatRequest { worker_id: "holder".into(), leases: refs.clone() })
            .await
            .expect("a heartbeat is never shed");
        latencies.push(t.elapsed());
        assert_eq!(beat.into_inner().extended.len(), 10, "every held lease extended");
    }
    stop.store(true, SeqCst);
    for f in flood {
        f.await.unwrap();
    }
    assert!(admitted.load(SeqCst) > 0, "the flood was admitted up to the limit");
    for l in &held {
        env.client.complete(complete_req(l, pb::Outcome::Success)).await.expect("no held lease was lost");
    }
    latencies.sort();
    let p = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    println!(
        "flood: {} admitted, {} shed; heartbeats: {} p50 {:?} p99 {:?} max {:?}",
        admitted.load(SeqCst),
        shed.load(SeqCst),
        latencies.len(),
        p(0.5),
        p(0.99),
        latencies.last().unwrap()
    );
    assert!(p(0.99) < Duration::from_secs(2), "heartbeats starved under the flood: p99 {:?}", p(0.99));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn large_calls_take_turns_and_a_small_one_passes_them() {
    const LARGE: usize = 8;
    let mut env = Env::start().await;
    register(&mut env.client, "fleet", (0..400).map(|i| agent(&format!("f{i:03}"), 3_600_000, 60_000)).collect()).await;
    register(&mut env.client, "lone", vec![agent("first", 3_600_000, 60_000), agent("second", 3_600_000, 60_000)])
        .await;
    // A store of its own with the default lanes, so the test sees its lanes' queue. One small
    // Acquire in each queue first: it marks the queue active (a small call, for this store's
    // next seconds), so the calls below go straight to their grant.
    let store = env.redis.store().await.queues;
    for queue in ["fleet", "lone"] {
        assert_eq!(store.acquire(queue, "warm", 1).await.unwrap().leases.len(), 1);
    }
    let lanes = baton::config::Config::default().limits.bulk_inflight as usize;
    assert!(lanes > 0 && lanes < LARGE);
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let hold = env.redis.hold_busy(2_000).await;
    let mut calls = Vec::new();
    for i in 0..LARGE {
        let (store, order) = (store.clone(), order.clone());
        calls.push(tokio::spawn(async move {
            let got = store.acquire("fleet", &format!("w{i}"), 40).await.unwrap();
            order.lock().unwrap().push("large");
            got.leases.len()
        }));
    }
    let until = Instant::now() + Duration::from_secs(30);
    while store.bulk_waiting() < LARGE - lanes {
        assert!(Instant::now() < until, "{} of {LARGE} large calls wait for a turn", store.bulk_waiting());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(store.bulk_waiting(), LARGE - lanes, "{lanes} large calls in flight, the others wait");
    assert!(!hold.is_finished(), "Redis still busy: the large calls in flight are queued there");
    let small = {
        let (store, order) = (store.clone(), order.clone());
        tokio::spawn(async move {
            let got = store.acquire("lone", "solo", 1).await.unwrap();
            order.lock().unwrap().push("small");
            got.leases.len()
        })
    };
    assert_eq!(small.await.unwrap(), 1);
    let mut granted = 0;
    for call in calls {
        granted += call.await.unwrap();
    }
    assert_eq!(granted, 40 * LARGE, "every large call served");
    let order = order.lock().unwrap().clone();
    let at = order.iter().position(|c| *c == "small").unwrap();
    assert!(at <= lanes, "the small call answered after {at} large ones ({lanes} were in flight): {order:?}");
    assert_eq!(store.bulk_waiting(), 0);
}

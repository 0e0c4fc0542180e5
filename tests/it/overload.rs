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

/// `baton_redis_bulk_waiting` on the /metrics page at `addr` (absent before any call waited).
async fn bulk_waiting(addr: &str) -> Option<usize> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut page = String::new();
    tcp.read_to_string(&mut page).await.unwrap();
    page.lines().find_map(|l| l.strip_prefix("baton_redis_bulk_waiting ")?.parse::<f64>().ok()).map(|n| n as usize)
}

// Large Acquires (40 leases: a large script call) from eight workers while Redis is busy: three
// go to Redis (limits.bulk_inflight 3), five wait in Baton (baton_redis_bulk_waiting), and a
// small Acquire sent then runs in Redis after at most the three in flight (SLOWLOG's order). A
// `baton serve` process of its own, for its own metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn large_calls_take_turns_and_a_small_one_passes_them() {
    const LARGE: usize = 8;
    const LANES: usize = 3;
    let redis = TestRedis::start().await;
    let baton = BatonProcess::spawn_with_metrics("127.0.0.1:0", |cmd| {
        cmd.args(["--redis-url", &redis.url()]).env("BATON_LIMITS__BULK_INFLIGHT", LANES.to_string());
    });
    let metrics = baton
        .log
        .lock()
        .unwrap()
        .iter()
        .find(|l| l.contains("prometheus metrics at /metrics"))
        .and_then(|l| l.split_whitespace().find_map(|w| w.strip_prefix("addr=")).map(str::to_string))
        .expect("the bound /metrics address is logged");
    let mut client = pb::agent_service_client::AgentServiceClient::new(baton.channel().await);
    register(&mut client, "fleet", (0..400).map(|i| agent(&format!("f{i:03}"), 3_600_000, 60_000)).collect()).await;
    register(&mut client, "lone", vec![agent("first", 3_600_000, 60_000), agent("second", 3_600_000, 60_000)]).await;
    // One small Acquire in each queue first: it marks the queue active (a small call, for the
    // replica's next seconds), so the calls below go straight to their grant.
    for queue in ["fleet", "lone"] {
        assert_eq!(acquire(&mut client, queue, "warm", 1).await.len(), 1);
    }
    // Every command goes to SLOWLOG, in the order Redis ran them, from here on.
    let mut conn = redis.conn().await;
    for (key, value) in [("slowlog-max-len", "100000"), ("slowlog-log-slower-than", "0")] {
        let _: () = redis::cmd("CONFIG").arg("SET").arg(key).arg(value).query_async(&mut conn).await.unwrap();
    }
    let _: () = redis::cmd("SLOWLOG").arg("RESET").query_async(&mut conn).await.unwrap();
    let hold = redis.hold_busy(2_000).await;
    let mut calls = Vec::new();
    for i in 0..LARGE {
        let mut client = client.clone();
        calls.push(tokio::spawn(async move { acquire(&mut client, "fleet", &format!("w{i}"), 40).await.len() }));
    }
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let waiting = bulk_waiting(&metrics).await.unwrap_or(0);
        if waiting >= LARGE - LANES {
            assert_eq!(waiting, LARGE - LANES, "{LANES} large calls in flight, the others wait");
            break;
        }
        assert!(Instant::now() < until, "{waiting} of {LARGE} large calls wait for a turn");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!hold.is_finished(), "Redis still busy: the large calls in flight are queued there");
    assert_eq!(acquire(&mut client, "lone", "solo", 1).await.len(), 1);
    let mut granted = 0;
    for call in calls {
        granted += call.await.unwrap();
    }
    assert_eq!(granted, 40 * LARGE, "every large call served");
    // The grant scripts in the order Redis ran them (the log lists the newest first): calls of
    // acquireAgents, by the queue its first key names.
    let log: Vec<redis::Value> = redis::cmd("SLOWLOG").arg("GET").arg(-1).query_async(&mut conn).await.unwrap();
    let order: Vec<&str> = log
        .iter()
        .rev()
        .filter_map(|entry| {
            let redis::Value::Array(fields) = entry else { return None };
            let args: Vec<String> = redis::from_redis_value(fields[3].clone()).unwrap_or_default();
            // The grant script only: a sweep's scripts name the same key first.
            let script = baton::store::scripts::script_called(&args) == Some("acquireAgents");
            match args.get(3).map(String::as_str) {
                Some("baton:{q:fleet}:waiting") if script => Some("large"),
                Some("baton:{q:lone}:waiting") if script => Some("small"),
                _ => None,
            }
        })
        .collect();
    assert_eq!(order.len(), LARGE + 1, "one grant script per call: {order:?}");
    let at = order.iter().position(|c| *c == "small").unwrap();
    assert!(at <= LANES, "the small call ran after {at} large ones ({LANES} were in flight): {order:?}");
    assert_eq!(bulk_waiting(&metrics).await, Some(0));
}

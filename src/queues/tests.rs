//! The queues' store below gRPC, where a test must order store calls itself: a race injected
//! between two of them, or a step that takes a size no RPC lets its caller choose. Real Redis
//! (`crate::testing::TestRedis`), no Baton server and no sweeper.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use crate::queues::store::{AgentDef, Beat, Completion, Lease, Outcome};
use crate::queues::sweep::{ReapKind, Reaped};
use crate::testing::TestRedis;

async fn now_ms(conn: &mut redis::aio::MultiplexedConnection) -> i64 {
    let (s, us): (i64, i64) = redis::cmd("TIME").query_async(conn).await.unwrap();
    s * 1000 + us / 1000
}

async fn mark(conn: &mut redis::aio::MultiplexedConnection, active: &str) -> Option<f64> {
    redis::cmd("ZSCORE").arg(active).arg("q").query_async(conn).await.unwrap()
}

// The retirement is a compare-and-delete: a mark written after the sweeper read the old one
// (an Acquire about to grant) keeps the queue in the index.
#[tokio::test]
async fn a_retirement_loses_to_a_newer_mark() {
    let redis = TestRedis::start().await;
    let store = redis.stores().await.queues;
    let active = store.keys().active();
    let mut conn = redis.conn().await;
    let _: i64 = redis::cmd("ZADD").arg(&active).arg(1).arg("q").query_async(&mut conn).await.unwrap();
    let (_, read) = store.active_queues().await.unwrap();
    let seen = read.iter().find(|a| a.queue == "q").expect("in the index").clone();
    // Marked again between the read and the retirement.
    let _: i64 = redis::cmd("ZADD").arg(&active).arg(2).arg("q").query_async(&mut conn).await.unwrap();
    assert!(!store.retire_active(&seen).await.unwrap(), "the newer mark wins");
    assert_eq!(mark(&mut conn, &active).await, Some(2.0));
    // Unchanged, it goes.
    let (_, read) = store.active_queues().await.unwrap();
    assert!(store.retire_active(read.iter().find(|a| a.queue == "q").unwrap()).await.unwrap());
    assert_eq!(mark(&mut conn, &active).await, None);
}

// A heartbeat that lands between the orphan scan and the reap saves its lease: the reap
// re-checks the worker's silence in the script that writes. Two silent workers are found by
// the scan; one heartbeats before the reap, and only the other's lease is taken. No sweeper
// runs, so the order of scan, heartbeat and reap is the test's.
#[tokio::test]
async fn a_heartbeat_between_orphan_scan_and_reap_keeps_the_lease() {
    const Q: &str = "safety";
    const THRESHOLD_MS: u64 = 200;
    let redis = TestRedis::start().await;
    let store = redis.stores().await.queues;
    let def = |name: &str| AgentDef { name: name.into(), timeout_ms: 120_000, ..Default::default() };
    store.register(Q, &[def("saved"), def("taken")], false, "").await.unwrap();
    let saved = store.acquire(Q, "back", 1).await.unwrap().leases.pop().expect("due");
    let taken = store.acquire(Q, "gone", 1).await.unwrap().leases.pop().expect("due");
    let mut conn = redis.conn().await;
    let since = now_ms(&mut conn).await;
    // Both workers silent past the threshold, by the Redis clock.
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while now_ms(&mut conn).await <= since + THRESHOLD_MS as i64 {
        assert!(std::time::Instant::now() < until, "the Redis clock stands still");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let page = store.find_orphans(Q, THRESHOLD_MS, "0", 100).await.unwrap();
    let mut found: Vec<_> = page.suspects.iter().map(|s| (s.name.as_str(), s.worker.as_str())).collect();
    found.sort();
    assert_eq!(found, [("saved", "back"), ("taken", "gone")], "the scan finds both");

    let beat = store.heartbeat(Q, "back", &[(&saved.name, saved.token, "")]).await.unwrap();
    assert!(matches!(beat[..], [Beat::Extended(_)]), "{beat:?}");

    let items: Vec<_> = page.suspects.iter().map(|s| (s, ReapKind::Orphan, THRESHOLD_MS)).collect();
    let reaped = store.reap(Q, &items).await.unwrap();
    let by_name: HashMap<_, _> = page.suspects.iter().map(|s| s.name.as_str()).zip(reaped).collect();
    assert_eq!(by_name["saved"], Reaped::Skipped, "the heartbeat after the scan saved it");
    assert_eq!(by_name["taken"], Reaped::Rescheduled, "the silent worker's lease is taken back");
    let again = store.heartbeat(Q, "back", &[(&saved.name, saved.token, "")]).await.unwrap();
    assert!(matches!(again[..], [Beat::Extended(_)]), "still held by its worker: {again:?}");
    let lost = store.heartbeat(Q, "gone", &[(&taken.name, taken.token, "")]).await.unwrap();
    assert_eq!(lost, [Beat::Lost]);
}

fn success(queue: &str, l: &Lease) -> Completion {
    Completion {
        queue: queue.into(),
        name: l.name.clone(),
        token: l.token,
        outcome: Outcome::Success,
        message: String::new(),
        retry_after_ms: 0,
        request_id: String::new(),
        clipped: false,
        result: Vec::new(),
        wait: None,
    }
}

/// The leases each key holds, by the leases the test holds, and the stored counts
/// ("held|<key>" in the limits hash), which must carry no recount state.
async fn truth_and_counts(
    conn: &mut redis::aio::MultiplexedConnection,
    limits_key: &str,
    held: &[Lease],
) -> (BTreeMap<String, i64>, BTreeMap<String, i64>) {
    let mut truth = BTreeMap::new();
    for l in held {
        *truth.entry(l.def.key.clone()).or_insert(0) += 1;
    }
    let fields: Vec<(String, String)> = redis::cmd("HGETALL").arg(limits_key).query_async(conn).await.unwrap();
    let mut counts = BTreeMap::new();
    for (f, v) in fields {
        assert!(!f.starts_with("rc|") && !f.starts_with("rn|") && f != "recount", "recount state left: {f}");
        if let Some(key) = f.strip_prefix("held|") {
            counts.insert(key.to_string(), v.parse().unwrap());
        }
    }
    (truth, counts)
}

// 600 agents on 3 keys, about 300 leases held at a time (the leases hash past its compact
// encoding, so the scan goes in many steps): a worker acquires and completes throughout while
// recounts in steps of 5 (RecountKeys takes 200) run, each from corrupted counts. After each,
// once the worker has stopped, every count equals the leases held.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn recount_is_right_while_leases_come_and_go() {
    const Q: &str = "tenants";
    let redis = TestRedis::start().await;
    let store = redis.stores().await.queues;
    // Hashes past 16 fields leave the compact encoding, which HSCAN returns whole.
    let mut conn = redis.conn().await;
    let _: () =
        redis::cmd("CONFIG").arg("SET").arg("hash-max-listpack-entries").arg(16).query_async(&mut conn).await.unwrap();
    // A key_concurrency that never binds: the queue counts its keys' leases.
    let counted = crate::queues::limits::QueueLimits { key_concurrency: Some(1000), ..Default::default() };
    store.set_limits(Q, &counted).await.unwrap();
    for key in ["a", "b", "c"] {
        let defs: Vec<AgentDef> = (0..200)
            .map(|i| AgentDef {
                name: format!("{key}-{i:03}"),
                key: key.into(),
                interval_ms: 1,
                timeout_ms: 600_000,
                error_interval_ms: 10_000,
                ..Default::default()
            })
            .collect();
        for chunk in defs.chunks(100) {
            store.register(Q, chunk, false, "").await.unwrap();
        }
    }
    let mut held = store.acquire(Q, "w", 300).await.unwrap().leases;
    assert_eq!(held.len(), 300);
    let limits_key = store.keys().queue(Q).limits;
    let mut total_steps = 0;
    for round in 0..3 {
        let _: () = redis::cmd("HSET").arg(&limits_key).arg("held|a").arg(1000).query_async(&mut conn).await.unwrap();
        let _: () = redis::cmd("HDEL").arg(&limits_key).arg("held|b").query_async(&mut conn).await.unwrap();
        let stop = tokio_util::sync::CancellationToken::new();
        let worker = {
            let (store, stop) = (store.clone(), stop.clone());
            let mut held = std::mem::take(&mut held);
            tokio::spawn(async move {
                let mut cycles = 0;
                while !stop.is_cancelled() || cycles < 5 {
                    // Complete the oldest 20 in one batch (interval agents: due again at
                    // once; a key ends several leases in one call), take 20 more.
                    let done: Vec<_> = held.drain(..20.min(held.len())).map(|l| success(Q, &l)).collect();
                    if !done.is_empty() {
                        store.complete_batch(&done).await.unwrap();
                    }
                    held.extend(store.acquire(Q, "w", 20).await.unwrap().leases);
                    cycles += 1;
                }
                (held, cycles)
            })
        };
        let r = store.recount_keys(Q, 5).await.unwrap();
        stop.cancel();
        let (back, cycles) = worker.await.unwrap();
        held = back;
        total_steps += r.steps;
        let (truth, counts) = truth_and_counts(&mut conn, &limits_key, &held).await;
        println!(
            "round {round}: {} steps, {} leases counted, {} keys corrected, {cycles} worker cycles; counts {counts:?}",
            r.steps, r.leases, r.corrected
        );
        assert_eq!(counts, truth, "round {round}");
    }
    assert!(total_steps > 30, "the recounts went in many steps: {total_steps}");
}

//! The index of active queues (`store::active`): the sweepers walk the queues that may hold
//! leases or workers, not every registered queue. Real Redis, real Baton.
//!
//! Invariants checked:
//! - an idle queue costs a sweep pass no Redis command: the commands per pass do not grow with
//!   the number of idle queues;
//! - a queue holding a lease or a worker record stays in the index; it leaves only when it
//!   holds neither and its mark is old;
//! - a queue that left the index is marked again by the next Acquires.
//!
//! That a retirement loses to a mark written after the sweeper read the old one is checked in
//! the queues' own tests (`src/queues/tests.rs`): the race needs the two store calls apart.

use crate::common;

use std::{collections::HashMap, time::Duration};

use baton::config::Config;
use common::*;

const ACTIVE: &str = "baton:{registry}:active";

/// Sweeps every 100 ms; the health summary off, so the sweepers' commands are all there is.
fn sweeping_config(repair_interval_ms: u64) -> Config {
    let mut config = test_config();
    config.orphan_cleanup.threshold_ms = 1_000;
    config.orphan_cleanup.interval_ms = 100;
    config.orphan_cleanup.leadership_ttl_ms = 2_000;
    config.orphan_cleanup.repair_interval_ms = repair_interval_ms;
    config.zombie_cleanup.threshold_ms = 200;
    config.zombie_cleanup.interval_ms = 100;
    config.health.summary_period_ms = 0;
    config
}

/// Sweep passes run so far, by every replica.
async fn passes(redis: &TestRedis) -> i64 {
    let counts: HashMap<String, i64> =
        redis::cmd("HGETALL").arg("baton:{registry}:sweeps").query_async(&mut redis.conn().await).await.unwrap();
    counts.iter().filter(|(k, _)| k.starts_with("zombie:") || k.starts_with("orphan:")).map(|(_, n)| n).sum()
}

/// Commands Redis ran so far, but for this test's own INFO and HGETALL.
async fn commands(redis: &TestRedis) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(&mut redis.conn().await).await.unwrap();
    info.lines()
        .filter(|l| l.starts_with("cmdstat_") && !l.starts_with("cmdstat_info:") && !l.starts_with("cmdstat_hgetall:"))
        .filter_map(|l| l.split("calls=").nth(1)?.split(',').next()?.parse::<u64>().ok())
        .sum()
}

async fn mark(redis: &TestRedis, queue: &str) -> Option<f64> {
    redis::cmd("ZSCORE").arg(ACTIVE).arg(queue).query_async(&mut redis.conn().await).await.unwrap()
}

// Three hundred registered queues nobody works on, one queue with a held lease: a sweep pass
// costs a handful of commands, not one per queue (before the index: 300 ZCOUNTs a pass).
#[tokio::test]
async fn idle_queues_cost_a_sweep_pass_nothing() {
    // Repairs (and their census) once, when the sweeper starts; then only the passes.
    let mut env = Env::with_config(sweeping_config(3_600_000)).await;
    for q in 0..300 {
        register(&mut env.client, &format!("idle-{q:03}"), vec![agent("a", 3_600_000, 60_000)]).await;
    }
    register(&mut env.client, "busy", vec![agent("a", 3_600_000, 60_000)]).await;
    assert_eq!(acquire(&mut env.client, "busy", "w1", 1).await.len(), 1);
    let start = passes(&env.redis).await;
    eventually(Duration::from_secs(30), "a first pass", || async { passes(&env.redis).await > start }).await;

    let (passes_before, commands_before) = (passes(&env.redis).await, commands(&env.redis).await);
    eventually(Duration::from_secs(60), "40 sweep passes", || async { passes(&env.redis).await >= passes_before + 40 })
        .await;
    let (passes_after, commands_after) = (passes(&env.redis).await, commands(&env.redis).await);
    let per_pass = (commands_after - commands_before) as f64 / (passes_after - passes_before) as f64;
    assert!(per_pass < 12.0, "{per_pass:.1} Redis commands per sweep pass with 300 idle queues");
    assert!(mark(&env.redis, "busy").await.is_some(), "the queue with a lease is in the index");
    assert!(mark(&env.redis, "idle-000").await.is_none(), "an idle queue is not");
}

// A queue stays in the index while it holds a lease or a worker, however old its mark; once
// it holds neither, it leaves; and the next Acquires put it back.
#[tokio::test]
async fn a_queue_leaves_the_index_only_when_it_holds_nothing() {
    let mut env = Env::with_config(sweeping_config(200)).await;
    // The worker's replica runs no sweeper: once the sweeping one is stopped, a mark can only
    // come from this replica's Acquires (not from a census).
    let mut quiet = test_config();
    quiet.zombie_cleanup.enabled = false;
    quiet.orphan_cleanup.enabled = false;
    quiet.purge.enabled = false;
    quiet.health.summary_period_ms = 0;
    let worker_side = TestBaton::start(&env.redis.url(), quiet).await;
    let mut worker = worker_side.agents().await;
    register(&mut env.client, "q", vec![agent("a", 3_600_000, 60_000)]).await;
    let leases = acquire(&mut worker, "q", "w1", 1).await;
    assert_eq!(leases.len(), 1);
    assert!(mark(&env.redis, "q").await.is_some(), "Acquire marks its queue");

    // An old mark: the sweeper may retire the queue, but it holds a lease.
    let mut conn = env.redis.conn().await;
    let _: i64 = redis::cmd("ZADD").arg(ACTIVE).arg(1).arg("q").query_async(&mut conn).await.unwrap();
    let start = passes(&env.redis).await;
    // Repairs run every 200 ms: ten passes of 100 ms see at least four of them.
    eventually(Duration::from_secs(30), "ten passes", || async { passes(&env.redis).await >= start + 10 }).await;
    assert_eq!(mark(&env.redis, "q").await, Some(1.0), "a queue holding a lease stays in the index");

    worker.complete(complete_req(&leases[0], baton::pb::Outcome::Success)).await.expect("complete");
    // The worker record goes once the worker is silent for the threshold; then the queue.
    eventually(Duration::from_secs(30), "the queue leaves the index", || async {
        mark(&env.redis, "q").await.is_none()
    })
    .await;
    let workers: u64 = redis::cmd("ZCARD").arg("baton:{q:q}:workers").query_async(&mut conn).await.unwrap();
    assert_eq!(workers, 0, "it left only after its worker record");

    // The worker's replica marks it again. (The hand-made old mark above skipped the wait a
    // real one implies: a mark is retired only when older than a minute, long after the
    // replica's memo of its own mark ran out. Here the memo is let run out: within seconds,
    // the replica's Acquires mark the queue again.)
    let Env { redis, baton, .. } = env;
    baton.stop().await.unwrap();
    let (r, w) = (&redis, &worker);
    eventually(Duration::from_secs(30), "an Acquire marks its queue again", || async move {
        acquire(&mut w.clone(), "q", "w2", 1).await;
        mark(r, "q").await.is_some()
    })
    .await;
    worker_side.stop().await.unwrap();
}

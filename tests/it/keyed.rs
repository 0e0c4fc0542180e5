//! Keys and priorities (Agent.key, Agent.priority; SetLimits key_concurrency and key_rate),
//! end to end against real Redis and, where the fleet matters, two Baton replicas.
//!
//! Invariants checked:
//! - no key ever holds more than key_concurrency leases across the fleet (workers count a
//!   lease from when Acquire returns it until before they Complete it, an interval inside the
//!   server's), and a key at its limit does not hold back the keys behind it;
//! - each key's grants stay within its own bucket (burst + rate × span, Redis clock);
//! - a key with 90 % of the backlog does not starve the others: due agents go round-robin
//!   across keys;
//! - a higher priority is handed out first, across keys and within one, and on a queue where
//!   no agent has a key; ties by due time;
//! - with priority aging, a low priority under a steady higher-priority backlog goes by the
//!   first grant after its aging period (Redis clock);
//! - every way a lease ends (Complete, Release, Heartbeat of a cancelled run, the zombie sweep,
//!   Unregister then Complete) gives the key its place back;
//! - a completion over many keys costs the Redis commands of one over a single key;
//! - a THROTTLED retry_after holds the key's bucket, not the other keys';
//! - a keyed queue's waiting agents still show their due time (GetAgent, health ages);
//! - bad keys, priorities, key limits and priority aging are INVALID_ARGUMENT naming the field and change
//!   nothing.

use crate::common;

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
    time::Duration,
};

use baton::pb::admin_service_client::AdminServiceClient;
use common::*;
use tonic::Code;

const Q: &str = "tenants";

fn keyed(name: &str, key: &str, priority: i32, interval_ms: u64, timeout_ms: u64) -> pb::Agent {
    pb::Agent { key: key.into(), priority, ..agent(name, interval_ms, timeout_ms) }
}

fn key_limits(key_concurrency: u32, key_rate: Option<(f64, u32)>) -> Option<pb::QueueLimits> {
    Some(pb::QueueLimits {
        key_concurrency,
        key_rate: key_rate.map(|(per_second, burst)| pb::RateLimit { per_second, burst }),
        ..Default::default()
    })
}

async fn set_limits(baton: &TestBaton, queue: &str, limits: Option<pb::QueueLimits>) -> pb::SetLimitsResponse {
    let mut a = AdminServiceClient::new(baton.channel().await);
    a.set_limits(pb::SetLimitsRequest { queue: queue.into(), limits, create: false })
        .await
        .expect("set limits")
        .into_inner()
}

fn long_poll(queue: &str, worker: &str, max: u32, wait_ms: u64) -> pb::AcquireRequest {
    pb::AcquireRequest { queue: queue.into(), worker_id: worker.into(), max_leases: max, wait: dur(wait_ms) }
}

fn key_of(l: &pb::Lease) -> String {
    l.agent.as_ref().expect("lease carries its agent").key.clone()
}

// 12 workers on two replicas, 3 keys of 40 one-shot agents under key_concurrency 2: no key is
// ever held more than twice, and all 120 run (a lease's end wakes the waiting long polls).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn key_concurrency_is_never_exceeded_across_replicas() {
    const PER_KEY: usize = 40;
    const LIMIT: i64 = 2;
    let mut env = Env::start().await;
    let second = TestBaton::start(&env.redis.url(), test_config()).await;
    let keys = ["acme", "globex", "initech"];
    let defs: Vec<_> =
        keys.iter().flat_map(|k| (0..PER_KEY).map(move |i| keyed(&format!("{k}-{i:02}"), k, 0, 0, 60_000))).collect();
    register(&mut env.client, Q, defs).await;
    let stored = set_limits(&env.baton, Q, key_limits(LIMIT as u32, None)).await;
    assert_eq!(stored.limits.unwrap().key_concurrency, LIMIT as u32);

    let held: Arc<Mutex<HashMap<String, i64>>> = Arc::default();
    let most: Arc<Mutex<HashMap<String, i64>>> = Arc::default();
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let clients = [env.client.clone(), second.agents().await];
    let mut tasks = Vec::new();
    for w in 0..12 {
        let mut c = clients[w % 2].clone();
        let (held, most, done) = (held.clone(), most.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            use std::sync::atomic::Ordering::SeqCst;
            while done.load(SeqCst) < PER_KEY * 3 {
                let leases = c.acquire(long_poll(Q, &format!("w{w}"), 3, 2_000)).await.unwrap().into_inner().leases;
                for l in &leases {
                    let mut h = held.lock().unwrap();
                    let n = h.entry(key_of(l)).or_default();
                    *n += 1;
                    let mut m = most.lock().unwrap();
                    let top = m.entry(key_of(l)).or_default();
                    *top = (*top).max(*n);
                }
                tokio::task::yield_now().await;
                for l in leases {
                    *held.lock().unwrap().get_mut(&key_of(&l)).unwrap() -= 1;
                    c.complete(complete_req(&l, pb::Outcome::Success)).await.unwrap();
                    done.fetch_add(1, SeqCst);
                }
            }
        }));
    }
    tokio::time::timeout(Duration::from_secs(120), async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await
    .expect("every agent ran within 120 s");
    let most = most.lock().unwrap().clone();
    assert_eq!(most.len(), 3, "every key ran: {most:?}");
    for (key, n) in &most {
        assert!(*n <= LIMIT, "key {key} held {n} leases at once under key_concurrency {LIMIT}");
    }
    // Nothing is left counted against a key.
    let fields: BTreeMap<String, String> = redis::cmd("HGETALL")
        .arg(format!("baton:{{q:{Q}}}:limits"))
        .query_async(&mut env.redis.conn().await)
        .await
        .unwrap();
    // A count that reaches 0 is deleted.
    assert!(!fields.keys().any(|f| f.starts_with("held|")), "held counts left: {fields:?}");
    second.stop().await.unwrap();
}

// A key at its limit does not block the keys behind it: "big" has 50 due agents ahead of
// "small"'s 3 (registered first), key_concurrency 1; one Acquire of 10 gets one of big's and
// all three of small's.
#[tokio::test]
async fn a_key_at_its_limit_does_not_hold_back_the_others() {
    let mut env = Env::start().await;
    let big: Vec<_> = (0..50).map(|i| keyed(&format!("big-{i:02}"), "big", 0, 0, 60_000)).collect();
    register(&mut env.client, Q, big).await;
    set_limits(&env.baton, Q, key_limits(1, None)).await;
    let small: Vec<_> = (0..3).map(|i| keyed(&format!("small-{i}"), "small", 0, 0, 60_000)).collect();
    register(&mut env.client, Q, small).await;
    let leases = acquire(&mut env.client, Q, "w", 10).await;
    let mut per_key: BTreeMap<String, usize> = BTreeMap::new();
    for l in &leases {
        *per_key.entry(key_of(l)).or_default() += 1;
    }
    // key_concurrency 1: one of each key now; the rest of small follows as its leases end.
    assert_eq!(per_key, BTreeMap::from([("big".to_string(), 1), ("small".to_string(), 1)]));
    let small_lease = leases.iter().find(|l| key_of(l) == "small").unwrap();
    env.client.complete(complete_req(small_lease, pb::Outcome::Success)).await.unwrap();
    let next = acquire(&mut env.client, Q, "w", 10).await;
    assert_eq!(next.len(), 1);
    assert_eq!(key_of(&next[0]), "small", "big is at its limit; small's next goes out");
}

// 10 keys, one holding 90 % of the backlog (registered first): the first 100 grants go
// round-robin, every key gets its share, and the big key does not take them all.
#[tokio::test]
async fn every_key_makes_progress_when_one_key_holds_most_of_the_backlog() {
    let mut env = Env::start().await;
    let big: Vec<_> = (0..900).map(|i| keyed(&format!("t0-{i:03}"), "t0", 0, 0, 60_000)).collect();
    for chunk in big.chunks(100) {
        register(&mut env.client, Q, chunk.to_vec()).await;
    }
    for k in 1..10 {
        let defs: Vec<_> = (0..11).map(|i| keyed(&format!("t{k}-{i:03}"), &format!("t{k}"), 0, 0, 60_000)).collect();
        register(&mut env.client, Q, defs).await;
    }
    let mut per_key: BTreeMap<String, usize> = BTreeMap::new();
    let mut granted = 0;
    while granted < 100 {
        let leases = acquire(&mut env.client, Q, "w", 10).await;
        assert!(!leases.is_empty(), "due work is handed out");
        for l in &leases {
            *per_key.entry(key_of(l)).or_default() += 1;
            env.client.complete(complete_req(l, pb::Outcome::Success)).await.unwrap();
        }
        granted += leases.len();
    }
    assert_eq!(per_key.len(), 10, "every key made progress: {per_key:?}");
    for (key, n) in &per_key {
        assert!((9..=11).contains(n), "round-robin: key {key} got {n} of the first {granted}: {per_key:?}");
    }
}

// Priorities: among due agents the higher priority goes first, across keys and within one
// key; between keys of equal priority the turn decides (round-robin: the key served last goes
// behind), within a key the due time, then the name.
#[tokio::test]
async fn priorities_order_dispatch() {
    let mut env = Env::start().await;
    let defs = vec![
        keyed("low-a", "", -5, 0, 60_000),
        keyed("mid-a", "", 0, 0, 60_000),
        keyed("high-a", "", 7, 0, 60_000),
        keyed("low-b", "other", -5, 0, 60_000),
        keyed("top-b", "other", 1000, 0, 60_000),
        keyed("mid-b", "other", 0, 0, 60_000),
        keyed("high-b", "", 7, 0, 60_000),
    ];
    register(&mut env.client, Q, defs).await;
    let order = dispatch_order(&mut env).await;
    let names: Vec<_> = order.iter().map(|(_, n)| n.as_str()).collect();
    // "other" serves top-b and goes behind ""; "" serves high-a and high-b (7 beats 0), then
    // the keys alternate at 0 ("other" first: its turn is older) and at -5.
    assert_eq!(names, ["top-b", "high-a", "high-b", "mid-b", "mid-a", "low-b", "low-a"], "{order:?}");
}

/// Acquires one lease at a time until nothing is due: (priority, name) in the order granted.
async fn dispatch_order(env: &mut Env) -> Vec<(i32, String)> {
    let mut order = Vec::new();
    while let Some(l) = acquire(&mut env.client, Q, "w", 1).await.pop() {
        order.push((l.agent.as_ref().unwrap().priority, l.name));
    }
    order
}

// Priorities alone, no key anywhere: the queue is still dispatched by priority. The agents are
// due at the same instant and their names sort against their priorities, so due time and name
// would give the reverse order.
#[tokio::test]
async fn priorities_without_keys_order_dispatch() {
    let mut env = Env::start().await;
    let defs = vec![
        keyed("a-lowest", "", -7, 0, 60_000),
        keyed("b-low", "", -1, 0, 60_000),
        keyed("c-plain", "", 0, 0, 60_000),
        keyed("d-high", "", 3, 0, 60_000),
        keyed("e-highest", "", 1000, 0, 60_000),
    ];
    register(&mut env.client, Q, defs).await;
    let order = dispatch_order(&mut env).await;
    let names: Vec<_> = order.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(names, ["e-highest", "d-high", "c-plain", "b-low", "a-lowest"], "{order:?}");
}

// Priority aging: under a steady backlog of higher priorities (two new high-priority agents
// for every grant), a low-priority agent is granted by the first Acquire that finds it due for
// longer than the aging period, by the Redis clock of the grants themselves; every grant before
// it came earlier than that. Without aging it would wait until the high backlog drained.
#[tokio::test]
async fn priority_aging_lets_a_low_priority_agent_through_a_steady_high_backlog() {
    const AGING_MS: i64 = 300;
    const TIMEOUT_MS: i64 = 60_000;
    let mut env = Env::start().await;
    let limits = pb::QueueLimits { priority_aging: dur(AGING_MS as u64), ..Default::default() };
    register(&mut env.client, Q, vec![keyed("aaa-low", "", -10, 0, TIMEOUT_MS as u64)]).await;
    let stored = set_limits(&env.baton, Q, Some(limits)).await.limits.unwrap();
    assert_eq!(stored.priority_aging, dur(AGING_MS as u64));
    let req = pb::GetAgentRequest { queue: Q.into(), name: "aaa-low".into() };
    let due = ms(&env.client.get_agent(req).await.unwrap().into_inner().agent.unwrap().next_run_at);
    // New high-priority agents, numbered on from `highs`, due now.
    let mut highs = 0;
    let mut more_highs = async |env: &mut Env, n: usize| {
        let defs = (highs..highs + n).map(|i| keyed(&format!("high-{i:05}"), "", 10, 0, TIMEOUT_MS as u64)).collect();
        highs += n;
        register(&mut env.client, Q, defs).await;
    };
    more_highs(&mut env, 5).await;
    let mut before_low = Vec::new();
    let low_at = loop {
        let l = acquire(&mut env.client, Q, "w", 1).await.pop().expect("the backlog never drains");
        let at = ms(&l.deadline) - TIMEOUT_MS;
        env.client.complete(complete_req(&l, pb::Outcome::Success)).await.unwrap();
        if l.name == "aaa-low" {
            break at;
        }
        assert!(at <= due + 20 * AGING_MS, "starved: still waiting {} ms after its due time", at - due);
        before_low.push(at);
        more_highs(&mut env, 2).await;
    };
    assert!(low_at > due + AGING_MS, "granted {} ms after due: before its aging period, so not by aging", low_at - due);
    assert!(!before_low.is_empty(), "higher priorities went first until then");
    let late: Vec<_> = before_low.iter().filter(|&&at| at > due + AGING_MS).collect();
    assert!(late.is_empty(), "high grants after the low agent had aged: {late:?} (due {due})");
    assert!(highs > before_low.len(), "a backlog was left when it went");
}

// Every way a lease ends gives its key's place back (key_concurrency 1): Complete, Release,
// the Heartbeat that ends a cancelled run, the zombie sweep, and Unregister then Complete.
#[tokio::test]
async fn every_lease_end_gives_the_key_its_place_back() {
    let mut config = test_config();
    config.zombie_cleanup.threshold_ms = 0;
    config.zombie_cleanup.interval_ms = 200;
    let mut env = Env::with_config(config).await;
    let defs: Vec<_> = (0..6).map(|i| keyed(&format!("job-{i}"), "k", 0, 0, 60_000)).collect();
    register(&mut env.client, Q, defs).await;
    set_limits(&env.baton, Q, key_limits(1, None)).await;
    let one = |leases: Vec<pb::Lease>| -> pb::Lease {
        assert_eq!(leases.len(), 1, "key_concurrency 1 grants one: {leases:?}");
        leases.into_iter().next().unwrap()
    };
    // Complete.
    let l = one(acquire(&mut env.client, Q, "w", 5).await);
    assert!(acquire(&mut env.client, Q, "w", 5).await.is_empty(), "the key is at its limit");
    env.client.complete(complete_req(&l, pb::Outcome::Success)).await.unwrap();
    // Release.
    let l = one(acquire(&mut env.client, Q, "w", 5).await);
    env.client
        .release(pb::ReleaseRequest { queue: Q.into(), name: l.name.clone(), token: l.token, delay: None })
        .await
        .unwrap();
    // The heartbeat that ends a cancelled run.
    let l = one(acquire(&mut env.client, Q, "w", 5).await);
    env.client
        .cancel_run(pb::CancelRunRequest { queue: Q.into(), name: l.name.clone(), ..Default::default() })
        .await
        .unwrap();
    let beat = env
        .client
        .heartbeat(pb::HeartbeatRequest {
            worker_id: "w".into(),
            leases: vec![pb::LeaseRef { queue: Q.into(), name: l.name.clone(), token: l.token, ..Default::default() }],
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(beat.extended.len(), 0, "{beat:?}");
    // Unregister while held, then Complete.
    let l = one(acquire(&mut env.client, Q, "w", 5).await);
    env.client
        .unregister(pb::UnregisterRequest { queue: Q.into(), names: vec![l.name.clone()], ..Default::default() })
        .await
        .unwrap();
    env.client.complete(complete_req(&l, pb::Outcome::Success)).await.unwrap();
    // The zombie sweep: a lease of 1 s left to expire ends by itself, and the key's next agent
    // goes out.
    register(&mut env.client, Q, vec![keyed("short", "k", 1000, 0, 1_000)]).await;
    let l = one(acquire(&mut env.client, Q, "w", 5).await);
    assert_eq!(l.name, "short", "the highest priority first");
    let mut c = env.client.clone();
    let again = tokio::time::timeout(Duration::from_secs(60), async move {
        loop {
            let leases = c.acquire(long_poll(Q, "w2", 5, 5_000)).await.unwrap().into_inner().leases;
            if !leases.is_empty() {
                return leases;
            }
        }
    })
    .await
    .expect("the key's place came back after the sweep");
    assert_eq!(again.len(), 1);
    assert_eq!(key_of(&again[0]), "k");
    assert!(again[0].token > l.token);
}

// A THROTTLED retry_after holds the key's own bucket: the key's next agent waits that long,
// the other key's agents go on.
#[tokio::test]
async fn a_throttled_retry_after_holds_only_that_keys_bucket() {
    let mut env = Env::start().await;
    let defs: Vec<_> = ["slow", "fast"]
        .iter()
        .flat_map(|k| (0..5).map(move |i| keyed(&format!("{k}-{i}"), k, 0, 0, 60_000)))
        .collect();
    register(&mut env.client, Q, defs).await;
    set_limits(&env.baton, Q, key_limits(0, Some((1000.0, 100)))).await;
    let first = acquire(&mut env.client, Q, "w", 2).await;
    let slow = first.iter().find(|l| key_of(l) == "slow").expect("one of each key").clone();
    let fast = first.iter().find(|l| key_of(l) == "fast").expect("one of each key").clone();
    let mut throttled = complete_req(&slow, pb::Outcome::Throttled);
    throttled.retry_after = dur(600_000);
    let t0 = env.redis.now_ms().await;
    env.client.complete(throttled).await.unwrap();
    env.client.complete(complete_req(&fast, pb::Outcome::Success)).await.unwrap();
    let rest = acquire(&mut env.client, Q, "w", 20).await;
    let keys: Vec<_> = rest.iter().map(key_of).collect();
    assert_eq!(keys, vec!["fast"; 4], "slow's bucket is held for 10 minutes");
    let bucket: String = redis::cmd("HGET")
        .arg(format!("baton:{{q:{Q}}}:limits"))
        .arg("bucket|slow")
        .query_async(&mut env.redis.conn().await)
        .await
        .unwrap();
    let until: i64 = bucket.split('|').nth(1).unwrap().parse().unwrap();
    assert!(until >= t0 + 600_000, "held until {until}, throttled at {t0}");
}

// Each key has its own bucket: two keys at 10/s with a burst of 3, 6 workers on two replicas
// for 10 s of Redis time; over every span between two grants of one key, grants ≤ 3 + 10 ×
// span, and both keys progress.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_keys_grants_stay_within_its_bucket() {
    const RATE: f64 = 10.0;
    const BURST: u32 = 3;
    const TIMEOUT_MS: i64 = 60_000;
    let mut env = Env::start().await;
    let second = TestBaton::start(&env.redis.url(), test_config()).await;
    let defs: Vec<_> = ["a", "b"]
        .iter()
        .flat_map(|k| (0..20).map(move |i| keyed(&format!("{k}-{i:02}"), k, 0, 1, TIMEOUT_MS as u64)))
        .collect();
    register(&mut env.client, Q, defs).await;
    set_limits(&env.baton, Q, key_limits(0, Some((RATE, BURST)))).await;
    let start = env.redis.now_ms().await;
    let end = start + 10_000;
    let clients = [env.client.clone(), second.agents().await];
    let grants = cycle_until(&clients, Q, 6, TIMEOUT_MS, end).await;
    for key in ["a", "b"] {
        let times: Vec<i64> =
            grants.iter().filter(|(l, at)| key_of(l) == key && *at < end).map(|(_, at)| *at).collect();
        assert_within_bucket(&format!("key {key}"), &times, RATE, BURST);
        let allowed = BURST as f64 + RATE * 10.0;
        assert!(times.len() as f64 >= allowed / 4.0, "key {key}: only {} grants in 10 s", times.len());
    }
    second.stop().await.unwrap();
}

/// Redis commands run since the last call (INFO commandstats, INFO itself left out; the stats
/// are reset after each read).
async fn commands_since(conn: &mut redis::aio::MultiplexedConnection) -> i64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(conn).await.unwrap();
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query_async(conn).await.unwrap();
    info.lines()
        .filter(|l| l.starts_with("cmdstat_") && !l.starts_with("cmdstat_info:") && !l.starts_with("cmdstat_config:"))
        .filter_map(|l| l.split("calls=").nth(1)?.split(',').next()?.parse::<i64>().ok())
        .sum()
}

// A CompleteBatch of 40 keyed leases gives their keys' places back with as many Redis commands
// whether the leases are of 40 keys or of one: the keys' counts are read and written together,
// a fixed number of commands per call (a few left for the sweepers' passes meanwhile).
#[tokio::test]
async fn a_completion_over_many_keys_costs_what_one_key_costs() {
    let mut env = Env::start().await;
    let mut conn = env.redis.conn().await;
    let mut cost = Vec::new();
    for (queue, keys) in [("one-key", 1), ("forty-keys", 40)] {
        let defs: Vec<_> =
            (0..40).map(|i| keyed(&format!("job-{i:02}"), &format!("k{}", i % keys), 0, 0, 60_000)).collect();
        register(&mut env.client, queue, defs).await;
        let leases = acquire(&mut env.client, queue, "w", 40).await;
        assert_eq!(leases.len(), 40);
        let completions = leases.iter().map(|l| complete_req(l, pb::Outcome::Success)).collect();
        commands_since(&mut conn).await;
        env.client.complete_batch(pb::CompleteBatchRequest { completions }).await.unwrap();
        cost.push(commands_since(&mut conn).await);
        let held: Vec<String> =
            redis::cmd("HKEYS").arg(format!("baton:{{q:{queue}}}:limits")).query_async(&mut conn).await.unwrap();
        assert!(held.iter().all(|f| !f.starts_with("held|")), "{queue}: counts left: {held:?}");
    }
    println!("Redis commands of a CompleteBatch of 40 keyed leases: one key {}, 40 keys {}", cost[0], cost[1]);
    assert!(cost[1] <= cost[0] + 10, "40 keys cost {} commands, one key {}", cost[1], cost[0]);
}

// A keyed queue's due agents still show when they were due: GetAgent answers the due time, not
// the score they wait at, and health's oldest age is the age of the oldest due agent.
#[tokio::test]
async fn a_keyed_queues_waiting_agents_show_their_due_time() {
    let mut env = Env::start().await;
    let defs: Vec<_> = (0..3).map(|i| keyed(&format!("job-{i}"), "k", 0, 0, 60_000)).collect();
    let before = env.redis.now_ms().await;
    register(&mut env.client, Q, defs).await;
    set_limits(&env.baton, Q, key_limits(1, None)).await;
    assert_eq!(acquire(&mut env.client, Q, "w", 5).await.len(), 1); // promotes all three
    let after = env.redis.now_ms().await;
    let got =
        env.client.get_agent(pb::GetAgentRequest { queue: Q.into(), name: "job-2".into() }).await.unwrap().into_inner();
    let status = got.agent.unwrap();
    let next = ms(&status.next_run_at);
    assert!(next >= before && next <= after, "due at {next}, registered within {before}..{after}");
    let mut a = AdminServiceClient::new(env.baton.channel().await);
    let h = a.get_health(pb::GetHealthRequest {}).await.unwrap().into_inner();
    let q = h.sources.iter().find(|s| s.source.as_ref().is_some_and(|s| s.name == Q)).unwrap();
    assert!(q.oldest_age.is_some());
    let age = q.oldest_age.as_ref().unwrap().seconds;
    assert!((0..60).contains(&age), "oldest age {age} s");
}

// Promoted agents that are unregistered leave stale order entries: they are dropped as they
// come up, and the live key behind them still gets its agents (a long poll does not stall).
#[tokio::test]
async fn unregistered_promoted_agents_do_not_stall_the_queue() {
    let mut env = Env::start().await;
    let gone: Vec<_> = (0..30).map(|i| keyed(&format!("gone-{i:02}"), "gone", 0, 0, 60_000)).collect();
    register(&mut env.client, Q, gone).await;
    let live: Vec<_> = (0..3).map(|i| keyed(&format!("live-{i}"), "live", -1, 0, 60_000)).collect();
    register(&mut env.client, Q, live).await;
    let first = acquire(&mut env.client, Q, "w", 1).await; // all 33 were promoted at Register
    assert_eq!(key_of(&first[0]), "gone", "priority 0 before -1");
    let names: Vec<String> = (1..30).map(|i| format!("gone-{i:02}")).collect();
    env.client.unregister(pb::UnregisterRequest { queue: Q.into(), names, ..Default::default() }).await.unwrap();
    let mut got = Vec::new();
    for _ in 0..40 {
        let leases = env.client.acquire(long_poll(Q, "w", 2, 5_000)).await.unwrap().into_inner().leases;
        got.extend(leases.iter().map(|l| l.name.clone()));
        if got.len() == 3 {
            break;
        }
    }
    got.sort();
    assert_eq!(got, ["live-0", "live-1", "live-2"]);
    let order: u64 = redis::cmd("ZCARD")
        .arg(format!("baton:{{q:{Q}}}:order"))
        .query_async(&mut env.redis.conn().await)
        .await
        .unwrap();
    assert_eq!(order, 0, "every stale entry was dropped");
}

// Bad keys, priorities and key limits are refused naming the field, and change nothing.
#[tokio::test]
async fn bad_keys_priorities_and_key_limits_are_refused() {
    let mut env = Env::start().await;
    let before = env.redis.snapshot().await;
    let cases = [
        (keyed("a", "bad:key", 0, 0, 1_000), "agents[0].key"),
        (keyed("a", &"k".repeat(129), 0, 0, 1_000), "agents[0].key"),
        (keyed("a", "", 1001, 0, 1_000), "agents[0].priority"),
        (keyed("a", "", -1001, 0, 1_000), "agents[0].priority"),
    ];
    for (def, field) in cases {
        let err = env
            .client
            .register(pb::RegisterRequest {
                request_id: String::new(),
                queue: Q.into(),
                agents: vec![def],
                reset_schedule: false,
            })
            .await
            .expect_err("refused");
        assert_eq!(err.code(), Code::InvalidArgument);
        assert!(err.message().contains(field), "{field}: {}", err.message());
    }
    let mut a = AdminServiceClient::new(env.baton.channel().await);
    let limit_cases = [
        (pb::QueueLimits { key_concurrency: 1_000_001, ..Default::default() }, "limits.key_concurrency"),
        (
            pb::QueueLimits { key_rate: Some(pb::RateLimit { per_second: 0.0, burst: 1 }), ..Default::default() },
            "limits.key_rate.per_second",
        ),
        (
            pb::QueueLimits {
                key_rate: Some(pb::RateLimit { per_second: 1.0, burst: 1_000_001 }),
                ..Default::default()
            },
            "limits.key_rate.burst",
        ),
        (pb::QueueLimits { priority_aging: Some(Default::default()), ..Default::default() }, "limits.priority_aging"),
        (
            pb::QueueLimits {
                priority_aging: Some(prost_types::Duration { seconds: 400 * 86_400, nanos: 0 }),
                ..Default::default()
            },
            "limits.priority_aging",
        ),
    ];
    for (limits, field) in limit_cases {
        let err = a
            .set_limits(pb::SetLimitsRequest { queue: Q.into(), limits: Some(limits), create: false })
            .await
            .expect_err("refused");
        assert_eq!(err.code(), Code::InvalidArgument);
        assert!(err.message().contains(field), "{field}: {}", err.message());
    }
    assert_eq!(env.redis.snapshot().await, before, "refused calls changed nothing");
}

//! Concurrency: many workers racing over many agents, through two Baton replicas on one Redis.
//!
//! Invariants checked:
//! - no agent is held by two workers at once (a worker marks an agent held when Acquire
//!   returns it, and unmarks it *before* it calls Complete or Release, so a second holder can
//!   only appear if the server handed out a lease that was still valid);
//! - within one due window (one round: every agent reset to due, interval one hour) each agent
//!   completes successfully exactly once;
//! - nothing is lost: after every round every agent is waiting, none working;
//! - tokens are unique per queue.

use crate::common;

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
};

use common::*;

const Q: &str = "race";
const AGENTS: usize = 1_000;
const WORKERS: usize = 32;
const ROUNDS: usize = 3;

#[derive(Default)]
struct Ledger {
    held: HashSet<String>,
    successes: HashMap<String, u32>,
    tokens: HashSet<u64>,
    double_holds: Vec<String>,
    duplicate_tokens: Vec<u64>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_workers_never_share_or_lose_an_agent() {
    let env = Env::start().await;
    let second = TestBaton::start(&env.redis.url(), test_config()).await;
    let clients = [env.client.clone(), second.agents().await];
    let names: Vec<String> = (0..AGENTS).map(|i| format!("agent-{i:04}")).collect();
    let defs: Vec<_> = names.iter().map(|n| agent(n, 3_600_000, 60_000)).collect();

    for round in 0..ROUNDS {
        // A new due window: every agent due now.
        let mut c = clients[0].clone();
        c.register(pb::RegisterRequest {
            request_id: String::new(),
            queue: Q.into(),
            agents: defs.clone(),
            reset_schedule: true,
        })
        .await
        .unwrap();
        let ledger = Arc::new(Mutex::new(Ledger::default()));
        let mut tasks = Vec::new();
        for w in 0..WORKERS {
            let mut c = clients[w % 2].clone();
            let ledger = ledger.clone();
            tasks.push(tokio::spawn(async move {
                let worker = format!("w{w}");
                let mut empty_in_a_row = 0;
                let mut n = 0u64;
                while empty_in_a_row < 3 {
                    let leases = acquire(&mut c, Q, &worker, 1 + (w % 4) as u32).await;
                    if leases.is_empty() {
                        empty_in_a_row += 1;
                        tokio::task::yield_now().await;
                        continue;
                    }
                    empty_in_a_row = 0;
                    {
                        let mut l = ledger.lock().unwrap();
                        for lease in &leases {
                            if !l.held.insert(lease.name.clone()) {
                                l.double_holds.push(lease.name.clone());
                            }
                            if !l.tokens.insert(lease.token) {
                                l.duplicate_tokens.push(lease.token);
                            }
                        }
                    }
                    for lease in leases {
                        n += 1;
                        ledger.lock().unwrap().held.remove(&lease.name);
                        // About one lease in ten is handed back (as on shutdown): it is due
                        // again at once and another worker must take it.
                        if n % 10 == 0 {
                            c.release(pb::ReleaseRequest {
                                queue: Q.into(),
                                name: lease.name,
                                token: lease.token,
                                delay: None,
                            })
                            .await
                            .expect("release of a valid lease");
                        } else {
                            c.complete(complete_req(&lease, pb::Outcome::Success))
                                .await
                                .expect("complete of a valid lease");
                            *ledger.lock().unwrap().successes.entry(lease.name).or_default() += 1;
                        }
                    }
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let l = std::mem::take(&mut *ledger.lock().unwrap());
        assert!(l.double_holds.is_empty(), "round {round}: agents held twice at once: {:?}", l.double_holds);
        assert!(l.duplicate_tokens.is_empty(), "round {round}: tokens handed out twice: {:?}", l.duplicate_tokens);
        for name in &names {
            assert_eq!(
                l.successes.get(name),
                Some(&1),
                "round {round}: {name} completed {:?} times in one due window",
                l.successes.get(name)
            );
        }
        // Nothing lost: every agent is waiting again, nothing is still working.
        let mut conn = env.redis.conn().await;
        let waiting: usize =
            redis::cmd("ZCARD").arg(format!("baton:{{q:{Q}}}:waiting")).query_async(&mut conn).await.unwrap();
        let working: usize =
            redis::cmd("ZCARD").arg(format!("baton:{{q:{Q}}}:working")).query_async(&mut conn).await.unwrap();
        assert_eq!((waiting, working), (AGENTS, 0), "round {round}");
    }
    second.stop().await.unwrap();
}

// Long-polling Acquires, about 30 % cancelled by their callers at scattered moments, while
// agents become due: a lease granted to a caller that went away is released at once, so every
// agent ends waiting, or working under a lease its caller received — or under the lease of a
// caller that cancelled while the answer was already on its way, the one window no server can
// close (the lease record names that worker).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelled_long_polls_leave_no_invisible_lease() {
    let env = Env::start().await;
    let mut tasks = Vec::new();
    for i in 0..200u64 {
        let mut c = env.client.clone();
        let cancel_after = (i % 10 < 3).then(|| std::time::Duration::from_millis(5 + (i * 37) % 400));
        tasks.push(tokio::spawn(async move {
            let req = pb::AcquireRequest {
                queue: "poll".into(),
                worker_id: format!("w{i}"),
                max_leases: 1,
                wait: dur(2_000),
            };
            let call = c.acquire(req);
            match cancel_after {
                Some(after) => tokio::time::timeout(after, call).await.ok().map(|r| r.unwrap().into_inner().leases),
                None => Some(call.await.unwrap().into_inner().leases),
            }
        }));
    }
    let mut c = env.client.clone();
    for batch in 0..10 {
        let agents = (0..10).map(|i| agent(&format!("a{}", batch * 10 + i), 3_600_000, 60_000)).collect();
        register(&mut c, "poll", agents).await;
        tokio::time::sleep(std::time::Duration::from_millis(40)).await;
    }
    let cancelled: HashSet<String> = (0..200u64).filter(|i| i % 10 < 3).map(|i| format!("w{i}")).collect();
    let mut received = HashSet::new();
    for t in tasks {
        if let Some(leases) = t.await.unwrap() {
            for l in leases {
                assert!(received.insert(l.name.clone()), "{} granted twice", l.name);
            }
        }
    }
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let mut conn = env.redis.conn().await;
        let working: Vec<String> =
            redis::cmd("ZRANGE").arg("baton:{q:poll}:working").arg(0).arg(-1).query_async(&mut conn).await.unwrap();
        let waiting: usize = redis::cmd("ZCARD").arg("baton:{q:poll}:waiting").query_async(&mut conn).await.unwrap();
        let leases: std::collections::HashMap<String, String> =
            redis::cmd("HGETALL").arg("baton:{q:poll}:leases").query_async(&mut conn).await.unwrap();
        let holder = |name: &String| leases.get(name).and_then(|l| l.split('|').nth(1)).unwrap_or("").to_string();
        let invisible: Vec<_> =
            working.iter().filter(|n| !received.contains(*n) && !cancelled.contains(&holder(n))).collect();
        if invisible.is_empty() {
            assert_eq!(waiting + working.len(), 100, "every agent waiting or working");
            assert!(received.iter().all(|n| working.contains(n)), "every received lease still held");
            break;
        }
        assert!(std::time::Instant::now() < until, "leases nobody received: {invisible:?}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

// Deterministic form of the race above: an Acquire whose caller leaves right after its acquire
// script was sent. The lease it got is released at once, not left held by nobody until a
// sweeper finds it.
#[tokio::test]
async fn dropped_acquire_releases_what_it_got() {
    let env = Env::start().await;
    let mut c = env.client.clone();
    // A first run, to know the queue's tokens: the next grant after it is the dropped call's.
    register(&mut c, "drop", vec![agent("warm", 3_600_000, 60_000)]).await;
    let warm = acquire(&mut c, "drop", "w", 1).await.pop().expect("due");
    c.complete(complete_req(&warm, pb::Outcome::Success)).await.unwrap();
    register(&mut c, "drop", vec![agent("only", 3_600_000, 60_000)]).await;
    // Redis runs one script at a time: a 1 s busy script on another connection holds the
    // Acquire's script in line, so the caller can leave after it was sent (the call had half a
    // second to reach Baton and Redis), before it ran.
    let hold = env.redis.hold_busy(1_000).await;
    let call =
        c.acquire(pb::AcquireRequest { queue: "drop".into(), worker_id: "gone".into(), max_leases: 1, wait: None });
    assert!(
        tokio::time::timeout(std::time::Duration::from_millis(500), call).await.is_err(),
        "held behind the busy script"
    );
    hold.await.unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let got = c.get_agent(pb::GetAgentRequest { queue: "drop".into(), name: "only".into() }).await;
        let state = got.unwrap().into_inner().agent.unwrap().state();
        if state == pb::AgentState::Waiting {
            break;
        }
        assert!(std::time::Instant::now() < until, "the dropped Acquire's lease was never released ({state:?})");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // Granted to the caller that left, then released: the next grant is a later token.
    let next = acquire(&mut c, "drop", "w", 1).await.pop().expect("due again at once");
    assert_eq!(next.name, "only");
    assert!(
        next.token > warm.token + 1,
        "the dropped Acquire was granted a lease: tokens {} then {}",
        warm.token,
        next.token
    );
}

// One agent becoming due wakes one long poll, not all of them (no thundering herd); twenty at
// once reach twenty waiters, each waking the next.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_due_agent_wakes_one_waiter_and_many_wake_many() {
    // No sweeper scripts: nothing else grants in this queue.
    let mut config = test_config();
    config.zombie_cleanup.enabled = false;
    config.orphan_cleanup.enabled = false;
    config.purge.enabled = false;
    let env = Env::with_config(config).await;
    let mut conn = env.redis.conn().await;
    // Every command goes to SLOWLOG, so the test counts the grant scripts of this queue alone
    // (not the index marks before them, nor health probes).
    for (key, value) in [("slowlog-max-len", "100000"), ("slowlog-log-slower-than", "0")] {
        let _: () = redis::cmd("CONFIG").arg("SET").arg(key).arg(value).query_async(&mut conn).await.unwrap();
    }
    // The herd queue's grant script calls: FCALL calls whose first key is its waiting set, of
    // the script its waiters ran before anything was registered (`grant`: no other script then
    // names that key first).
    let grants = |conn: redis::aio::MultiplexedConnection, grant: Option<String>| async move {
        let mut conn = conn;
        let log: Vec<redis::Value> = redis::cmd("SLOWLOG").arg("GET").arg(-1).query_async(&mut conn).await.unwrap();
        log.iter()
            .filter_map(|entry| {
                let redis::Value::Array(fields) = entry else { return None };
                let args: Vec<String> = redis::from_redis_value(fields[3].clone()).unwrap_or_default();
                let ours =
                    args.len() > 3 && args[0].eq_ignore_ascii_case("fcall") && args[3] == "baton:{q:herd}:waiting";
                ours.then(|| args[1].clone())
            })
            .filter(|sha| grant.as_ref().is_none_or(|g| g == sha))
            .collect::<Vec<String>>()
    };
    let mut waiters = Vec::new();
    for i in 0..20 {
        let mut c = env.client.clone();
        waiters.push(tokio::spawn(async move {
            let req = pb::AcquireRequest {
                queue: "herd".into(),
                worker_id: format!("w{i}"),
                max_leases: 1,
                wait: dur(15_000),
            };
            c.acquire(req).await.unwrap().into_inner().leases
        }));
    }
    // Every waiter has run its first acquire (and armed its wake-up before that) and waits.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let (before, grant) = loop {
        let shas = grants(conn.clone(), None).await;
        if shas.len() >= 20 {
            let grant = shas[0].clone();
            assert!(shas.iter().all(|s| *s == grant), "one script: the waiters' acquires");
            break (shas.len(), grant);
        }
        let n = shas.len();
        assert!(std::time::Instant::now() < until, "the waiters never ran their first acquire ({n} of 20)");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    register(&mut env.client.clone(), "herd", vec![agent("first", 3_600_000, 60_000)]).await;
    // One waiter gets it; then a window in which needless wake-ups would show in the count.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !waiters.iter().any(|w| w.is_finished()) {
        assert!(std::time::Instant::now() < until, "no waiter was woken");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let woken = grants(conn.clone(), Some(grant.clone())).await.len() - before;
    // A herd wakes all twenty. One is expected; a few more are tolerated (the channel's
    // subscription confirmation re-reads every waiter once, and may land after the baseline).
    assert!(woken <= 5, "one due agent woke {woken} waiters' grant scripts (one expected, a herd is 20)");

    let more = (0..19).map(|i| agent(&format!("a{i}"), 3_600_000, 60_000)).collect();
    register(&mut env.client.clone(), "herd", more).await;
    let started = std::time::Instant::now();
    let mut served = 0;
    for w in waiters {
        served += w.await.unwrap().len();
    }
    assert_eq!(served, 20, "every waiter served");
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "served by wake-ups, not at the end of the wait");
}

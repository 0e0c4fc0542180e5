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

mod common;

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
        c.register(pb::RegisterRequest { queue: Q.into(), agents: defs.clone(), reset_schedule: true }).await.unwrap();
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

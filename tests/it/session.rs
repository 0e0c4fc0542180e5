//! AgentService.Session and CompleteBatch end to end.
//!
//! Invariants checked: a session never has more leases pushed than credit granted; every agent
//! runs (nothing is lost when a session breaks mid-batch; its leases come back at their
//! deadline); a completion for a lost lease is rejected on that item only and the session goes
//! on; a session without credit does not starve another of the queue's work; bad input ends
//! the stream with INVALID_ARGUMENT naming the field and changes nothing.

use crate::common;

use std::{collections::HashMap, time::Duration};

use common::*;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Streaming};

const Q: &str = "jobs";

/// A session as a test drives it: the request sender and the response stream.
struct Session {
    tx: mpsc::Sender<pb::SessionRequest>,
    rx: Streaming<pb::SessionResponse>,
}

impl Session {
    async fn open(env: &Env, worker: &str, credit: u32) -> Self {
        Self::open_with(env, pb::SessionRequest { open: Some(open(worker)), credit, ..Default::default() }).await
    }

    async fn open_with(env: &Env, first: pb::SessionRequest) -> Self {
        Self::open_on(&env.baton, first).await
    }

    async fn open_on(baton: &TestBaton, first: pb::SessionRequest) -> Self {
        let (tx, rx) = mpsc::channel(64);
        tx.send(first).await.unwrap();
        let mut client = baton.agents().await;
        let rx = client.session(ReceiverStream::new(rx)).await.unwrap().into_inner();
        Self { tx, rx }
    }

    async fn send(&self, m: pb::SessionRequest) {
        self.tx.send(m).await.unwrap();
    }

    async fn next(&mut self) -> pb::SessionResponse {
        tokio::time::timeout(Duration::from_secs(30), self.rx.message())
            .await
            .expect("a session response within 30 s")
            .expect("the stream is healthy")
            .expect("the stream is open")
    }
}

fn open(worker: &str) -> pb::SessionOpen {
    pb::SessionOpen { queue: Q.into(), worker_id: worker.into() }
}

fn done(l: &pb::Lease) -> pb::SessionCompletion {
    pb::SessionCompletion {
        name: l.name.clone(),
        token: l.token,
        outcome: pb::Outcome::Success as i32,
        ..Default::default()
    }
}

async fn one_shots(env: &mut Env, n: usize, timeout_ms: u64) {
    for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
        let agents = chunk.iter().map(|i| agent(&format!("job-{i:05}"), 0, timeout_ms)).collect();
        register(&mut env.client, Q, agents).await;
    }
}

/// Expired leases are taken back within ~100 ms of their deadline; workers are never declared
/// dead for silence (the tests make leases expire on purpose, and check the store unchanged).
fn fast_reaper() -> baton::config::Config {
    let mut config = test_config();
    config.zombie_cleanup.threshold_ms = 0;
    config.zombie_cleanup.interval_ms = 100;
    config.orphan_cleanup.enabled = false;
    config
}

async fn queue_len(env: &Env, set: &str) -> u64 {
    let mut conn = env.redis.conn().await;
    redis::cmd("ZCARD").arg(format!("baton:{{q:{Q}}}:{set}")).query_async(&mut conn).await.unwrap()
}

// A worker with credit 7 drains 300 one-shot agents: at no time does it hold more than 7 leases,
// every agent runs exactly once (no failure injected), and the queue ends empty.
#[tokio::test]
async fn session_drains_within_its_credit() {
    let mut env = Env::start().await;
    one_shots(&mut env, 300, 30_000).await;
    const CREDIT: usize = 7;
    let mut s = Session::open(&env, "w1", CREDIT as u32).await;
    let mut held: HashMap<String, u64> = HashMap::new();
    let mut runs: HashMap<String, u32> = HashMap::new();
    let mut completed = 0;
    while completed < 300 {
        let r = s.next().await;
        for l in &r.leases {
            assert!(held.insert(l.name.clone(), l.token).is_none(), "{} pushed twice while held", l.name);
            *runs.entry(l.name.clone()).or_default() += 1;
        }
        assert!(held.len() <= CREDIT, "{} leases held with credit {CREDIT}", held.len());
        for c in &r.completed {
            assert!(!c.lease_lost, "{} lost", c.name);
            assert!(c.response.as_ref().unwrap().removed, "a one-shot success removes the agent");
            completed += 1;
        }
        // Finish what was pushed, in batches of what arrived: one message, credit back per lease.
        if !r.leases.is_empty() {
            let completions: Vec<_> = r.leases.iter().map(done).collect();
            for l in &r.leases {
                held.remove(&l.name);
            }
            s.send(pb::SessionRequest { credit: completions.len() as u32, completions, ..Default::default() }).await;
        }
    }
    assert_eq!(runs.len(), 300);
    assert!(runs.values().all(|&n| n == 1), "every agent ran exactly once");
    assert_eq!((queue_len(&env, "waiting").await, queue_len(&env, "working").await), (0, 0));
    // Half-close: the server answers what it has and ends the stream cleanly.
    drop(s.tx);
    assert!(s.rx.message().await.unwrap().is_none());
}

// Agents registered after the session opened are pushed without any request from the worker
// (a wake-up, no polling); heartbeats on the stream extend leases.
#[tokio::test]
async fn session_pushes_new_work_and_extends_leases() {
    let mut env = Env::start().await;
    let mut s = Session::open(&env, "w1", 5).await;
    register(&mut env.client, Q, vec![agent("late", 0, 30_000)]).await;
    let r = s.next().await;
    assert_eq!(r.leases.len(), 1);
    let l = &r.leases[0];
    assert_eq!((l.queue.as_str(), l.name.as_str(), l.attempt), (Q, "late", 1));
    s.send(pb::SessionRequest {
        heartbeats: vec![
            pb::SessionLease { name: l.name.clone(), token: l.token, ..Default::default() },
            pb::SessionLease { name: l.name.clone(), token: l.token + 99, ..Default::default() },
        ],
        ..Default::default()
    })
    .await;
    let r = s.next().await;
    assert_eq!(r.extended.len(), 1);
    assert!(ms(&r.extended[0].deadline) >= ms(&l.deadline));
    assert_eq!(
        r.lost,
        vec![pb::LeaseRef { queue: Q.into(), name: "late".into(), token: l.token + 99, ..Default::default() }]
    );
    // Release hands it back at once; it is pushed again (credit: 4 left) with a new token.
    s.send(pb::SessionRequest {
        releases: vec![pb::SessionRelease { name: l.name.clone(), token: l.token, delay: None }],
        ..Default::default()
    })
    .await;
    let mut released = false;
    let again = loop {
        let r = s.next().await;
        released |= r.released.iter().any(|x| x.token == l.token);
        if let Some(again) = r.leases.into_iter().next() {
            break again;
        }
    };
    assert!(released);
    assert_eq!(again.name, "late");
    assert!(again.token > l.token);
}

// A lease lost while its worker ran (it expired and another session took it) is rejected as
// lease_lost on that item only: the other completion of the same message takes effect, and the
// session goes on receiving work.
#[tokio::test]
async fn completion_of_a_lost_lease_is_rejected_per_item() {
    let mut env = Env::with_config(fast_reaper()).await;
    register(&mut env.client, Q, vec![agent("slow", 0, 200), agent("quick", 0, 30_000)]).await;
    let mut a = Session::open(&env, "wa", 2).await;
    let mut leases = Vec::new();
    while leases.len() < 2 {
        leases.extend(a.next().await.leases);
    }
    let slow = leases.iter().find(|l| l.name == "slow").unwrap().clone();
    let quick = leases.iter().find(|l| l.name == "quick").unwrap().clone();
    // "slow" expires (200 ms timeout); the reaper puts it back; session b takes it over.
    let mut b = Session::open(&env, "wb", 1).await;
    let taken = b.next().await.leases;
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].name, "slow");
    assert!(taken[0].token > slow.token);
    a.send(pb::SessionRequest { credit: 2, completions: vec![done(&slow), done(&quick)], ..Default::default() }).await;
    let r = a.next().await;
    let lost: Vec<_> = r.completed.iter().map(|c| (c.name.as_str(), c.lease_lost)).collect();
    assert_eq!(lost, [("slow", true), ("quick", false)]);
    // b's lease was untouched by a's stale completion, and b completes it.
    b.send(pb::SessionRequest { completions: vec![done(&taken[0])], ..Default::default() }).await;
    let r = b.next().await;
    assert!(!r.completed[0].lease_lost);
    // a goes on: new work reaches it.
    register(&mut env.client, Q, vec![agent("after", 0, 30_000)]).await;
    let r = a.next().await;
    assert_eq!(r.leases[0].name, "after");
}

// A session that breaks mid-batch loses nothing: the leases it held come back at their
// deadline and another session runs them; every agent is completed.
#[tokio::test]
async fn broken_session_loses_nothing() {
    let mut env = Env::with_config(fast_reaper()).await;
    one_shots(&mut env, 40, 2_000).await;
    let mut a = Session::open(&env, "wa", 10).await;
    let mut held = Vec::new();
    while held.len() < 10 {
        held.extend(a.next().await.leases);
    }
    // Finish 4, then the worker dies (the stream is dropped without a half-close).
    a.send(pb::SessionRequest { completions: held[..4].iter().map(done).collect(), ..Default::default() }).await;
    let r = a.next().await;
    assert_eq!(r.completed.len(), 4);
    drop(a);
    let mut b = Session::open(&env, "wb", 20).await;
    let mut completed = 4;
    let mut seen: HashMap<String, u32> = HashMap::new();
    while completed < 40 {
        let r = b.next().await;
        completed += r.completed.iter().filter(|c| !c.lease_lost).count();
        for l in &r.leases {
            *seen.entry(l.name.clone()).or_default() += 1;
        }
        if !r.leases.is_empty() {
            let n = r.leases.len() as u32;
            b.send(pb::SessionRequest {
                credit: n,
                completions: r.leases.iter().map(done).collect(),
                ..Default::default()
            })
            .await;
        }
    }
    for l in &held[4..] {
        assert!(seen.contains_key(&l.name), "{} came back after the break", l.name);
    }
    assert_eq!((queue_len(&env, "waiting").await, queue_len(&env, "working").await), (0, 0));
}

// A session with no credit takes nothing: another session of the same queue gets the work at
// once, and the first, granted credit later, gets what is left.
#[tokio::test]
async fn session_without_credit_does_not_starve_others() {
    let mut env = Env::start().await;
    let mut idle = Session::open(&env, "idle", 1).await;
    register(&mut env.client, Q, vec![agent("first", 0, 30_000)]).await;
    assert_eq!(idle.next().await.leases.len(), 1);
    // idle has used its credit; work arriving now goes to busy.
    let mut busy = Session::open(&env, "busy", 5).await;
    register(&mut env.client, Q, vec![agent("second", 0, 30_000), agent("third", 0, 30_000)]).await;
    let mut got = Vec::new();
    while got.len() < 2 {
        got.extend(busy.next().await.leases.into_iter().map(|l| l.name));
    }
    got.sort();
    assert_eq!(got, ["second", "third"]);
    register(&mut env.client, Q, vec![agent("fourth", 0, 30_000)]).await;
    let r = busy.next().await;
    assert_eq!(r.leases[0].name, "fourth");
    register(&mut env.client, Q, vec![agent("fifth", 0, 30_000)]).await;
    // busy is at 4 of 5; idle gets credit and may take fifth if busy did not: either way, once.
    idle.send(pb::SessionRequest { credit: 1, ..Default::default() }).await;
    let winner = tokio::select! {
        r = idle.next() => ("idle", r.leases),
        r = busy.next() => ("busy", r.leases),
    };
    assert_eq!(winner.1.len(), 1, "{} got fifth", winner.0);
    assert_eq!(winner.1[0].name, "fifth");
}

/// An agent of queue Q run after `parent`, in Q too.
fn child_of(name: &str, parent: &str) -> pb::Agent {
    pb::Agent { after: vec![pb::AgentRef { name: parent.into(), ..Default::default() }], ..agent(name, 0, 30_000) }
}

/// PUBLISH commands Redis ran so far (scripts' included).
async fn publishes(env: &Env) -> u64 {
    let mut conn = env.redis.conn().await;
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(&mut conn).await.unwrap();
    info.lines().find_map(|l| l.strip_prefix("cmdstat_publish:calls=")?.split(',').next()?.parse().ok()).unwrap_or(0)
}

/// Completions and leases from `s` until `want` leases came.
async fn leases_from(s: &mut Session, want: usize) -> Vec<pb::Lease> {
    let mut got = Vec::new();
    while got.len() < want {
        got.extend(s.next().await.leases);
    }
    got
}

// A chain's step on a Session: the completion that makes the next step due and the acquire
// that takes it share a round, so the release announces nothing (a wake-up would only bring
// this session an acquire that finds nothing), also when that acquire uses all its credit.
#[tokio::test]
async fn a_chain_step_taken_by_the_same_round_is_not_announced() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![agent("a", 0, 30_000)]).await;
    register(&mut env.client, Q, vec![child_of("b", "a")]).await;
    let mut s = Session::open(&env, "w", 1).await;
    let a = leases_from(&mut s, 1).await.pop().unwrap();
    assert_eq!(a.name, "a");
    let before = publishes(&env).await;
    s.send(pb::SessionRequest { credit: 1, completions: vec![done(&a)], ..Default::default() }).await;
    let b = leases_from(&mut s, 1).await.pop().unwrap();
    assert_eq!(b.name, "b");
    assert_eq!(publishes(&env).await - before, 0, "wake-ups published for a step the round took");
}

// When the round's acquire cannot take every child the completions made due (here it fills its
// credit of one), they are announced, and a worker waiting on another replica takes the rest.
#[tokio::test]
async fn children_the_round_does_not_take_are_announced_to_other_replicas() {
    let mut env = Env::start().await;
    let other = TestBaton::start(&env.redis.url(), test_config()).await;
    register(&mut env.client, Q, vec![agent("p", 0, 30_000)]).await;
    register(&mut env.client, Q, vec![child_of("c1", "p"), child_of("c2", "p")]).await;
    let mut s = Session::open(&env, "w1", 1).await;
    let p = leases_from(&mut s, 1).await.pop().unwrap();
    assert_eq!(p.name, "p");
    // w2 waits on the other replica: it ran "warm" and the round that completed it acquired
    // nothing, so it waits for a wake-up.
    register(&mut env.client, Q, vec![agent("warm", 0, 30_000)]).await;
    let open = pb::SessionRequest { open: Some(open("w2")), credit: 1, ..Default::default() };
    let mut waiting = Session::open_on(&other, open).await;
    let warm = leases_from(&mut waiting, 1).await.pop().unwrap();
    waiting.send(pb::SessionRequest { credit: 1, completions: vec![done(&warm)], ..Default::default() }).await;
    assert_eq!(waiting.next().await.completed.len(), 1);
    let mut conn = env.redis.conn().await;
    let subscribers: Vec<(String, u64)> =
        redis::cmd("PUBSUB").arg("NUMSUB").arg(format!("baton:{{q:{Q}}}:wake")).query_async(&mut conn).await.unwrap();
    assert_eq!(subscribers[0].1, 2, "both replicas follow the queue");
    s.send(pb::SessionRequest { credit: 1, completions: vec![done(&p)], ..Default::default() }).await;
    let mine = leases_from(&mut s, 1).await.pop().unwrap();
    let theirs = tokio::time::timeout(Duration::from_secs(10), leases_from(&mut waiting, 1))
        .await
        .expect("the other replica's worker woken for the child left due")
        .pop()
        .unwrap();
    let mut both = [mine.name, theirs.name];
    both.sort();
    assert_eq!(both, ["c1", "c2"]);
}

// CompleteBatch: per-item results in request order, a stale token rejected on its item only.
#[tokio::test]
async fn complete_batch_answers_per_item() {
    let mut env = Env::start().await;
    register(&mut env.client, Q, vec![agent("a", 0, 30_000), agent("b", 60_000, 30_000), agent("c", 0, 30_000)]).await;
    let leases = acquire(&mut env.client, Q, "w", 3).await;
    let mut items: Vec<pb::CompleteRequest> = leases.iter().map(|l| complete_req(l, pb::Outcome::Success)).collect();
    items[2].token += 1000; // stale
    let mut dup = items[0].clone();
    dup.outcome = pb::Outcome::Transient as i32;
    items.push(dup); // the same lease twice: the second is stale
    let r = env.client.complete_batch(pb::CompleteBatchRequest { completions: items }).await.unwrap().into_inner();
    let got: Vec<_> = r.results.iter().map(|x| (x.name.as_str(), x.lease_lost)).collect();
    assert_eq!(got, [("a", false), ("b", false), ("c", true), ("a", true)]);
    assert!(r.results[0].response.as_ref().unwrap().removed);
    assert!(r.results[1].response.as_ref().unwrap().next_run_at.is_some(), "b is recurring");
    assert!(r.results[2].response.is_none());
    // c is still held by its real token.
    let c = env.client.complete(complete_req(&leases[2], pb::Outcome::Success)).await.unwrap().into_inner();
    assert!(c.removed);
}

// Bad input: a clear INVALID_ARGUMENT naming the field; nothing in that message takes effect.
#[tokio::test]
async fn bad_session_and_batch_input_is_refused() {
    let mut env = Env::with_config(fast_reaper()).await;
    register(&mut env.client, Q, vec![agent("a", 0, 30_000)]).await;
    let mut client = env.baton.agents().await;

    // The first message must open the session.
    let (tx, rx) = mpsc::channel(4);
    tx.send(pb::SessionRequest { credit: 1, ..Default::default() }).await.unwrap();
    let e = client.session(ReceiverStream::new(rx)).await.unwrap_err();
    assert_eq!((e.code(), e.message().starts_with("open:")), (Code::InvalidArgument, true), "{e:?}");
    for (first, field) in [
        (pb::SessionOpen { queue: "a:b".into(), worker_id: "w".into() }, "open.queue"),
        (pb::SessionOpen { queue: Q.into(), worker_id: "".into() }, "open.worker_id"),
    ] {
        let (tx, rx) = mpsc::channel(4);
        tx.send(pb::SessionRequest { open: Some(first), ..Default::default() }).await.unwrap();
        let e = client.session(ReceiverStream::new(rx)).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument);
        assert!(e.message().starts_with(field), "{field}: {e:?}");
    }
    let e = {
        let (tx, rx) = mpsc::channel(4);
        tx.send(pb::SessionRequest { open: Some(open("w")), credit: 1001, ..Default::default() }).await.unwrap();
        client.session(ReceiverStream::new(rx)).await.unwrap_err()
    };
    assert!(e.message().starts_with("credit:"), "{e:?}");

    // Later messages: each rule ends the stream naming the field; the message changes nothing.
    let mut s = Session::open(&env, "w", 1).await;
    let lease = s.next().await.leases.remove(0);
    let cases: Vec<(pb::SessionRequest, &str)> = vec![
        (pb::SessionRequest { open: Some(open("w")), ..Default::default() }, "open:"),
        (pb::SessionRequest { credit: 1001, ..Default::default() }, "credit:"),
        (
            pb::SessionRequest {
                completions: vec![done(&lease), pb::SessionCompletion { outcome: 0, ..done(&lease) }],
                ..Default::default()
            },
            "completions[1].outcome:",
        ),
        (
            pb::SessionRequest {
                completions: vec![pb::SessionCompletion { token: 0, ..done(&lease) }],
                ..Default::default()
            },
            "completions[0].token:",
        ),
        (
            pb::SessionRequest {
                completions: vec![pb::SessionCompletion { outcome: 0, http_status: 700, ..done(&lease) }],
                ..Default::default()
            },
            "completions[0].http_status:",
        ),
        (
            pb::SessionRequest {
                heartbeats: vec![pb::SessionLease { name: "1".into(), token: 1, ..Default::default() }],
                ..Default::default()
            },
            "heartbeats[0].name:",
        ),
        (
            pb::SessionRequest {
                releases: vec![pb::SessionRelease { name: "a".into(), token: lease.token, delay: dur(u64::MAX / 2) }],
                ..Default::default()
            },
            "releases[0].delay:",
        ),
    ];
    let before = env.redis.snapshot().await;
    for (i, (m, field)) in cases.into_iter().enumerate() {
        if i > 0 {
            s = Session::open(&env, "w", 0).await;
        }
        s.send(m).await;
        let e = tokio::time::timeout(Duration::from_secs(30), s.rx.message()).await.unwrap().unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{field}");
        assert!(e.message().starts_with(field), "{field}: {e:?}");
    }
    assert_eq!(env.redis.snapshot().await, before, "refused messages changed nothing");

    // CompleteBatch validates every item before anything changes.
    let e = env
        .client
        .complete_batch(pb::CompleteBatchRequest {
            completions: vec![
                complete_req(&lease, pb::Outcome::Success),
                pb::CompleteRequest {
                    request_id: String::new(),
                    queue: "a{b".into(),
                    ..complete_req(&lease, pb::Outcome::Success)
                },
            ],
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().starts_with("completions[1].queue:"), "{e:?}");
    let e = env.client.complete_batch(pb::CompleteBatchRequest { completions: vec![] }).await.unwrap_err();
    assert!(e.message().starts_with("completions:"), "{e:?}");
    assert_eq!(env.redis.snapshot().await, before, "refused batches changed nothing");
}

/// Only a broken stream's grace can bring leases back: no sweeper runs.
fn grace_only(grace_ms: u64) -> baton::config::Config {
    let mut config = test_config();
    config.orphan_cleanup.enabled = false;
    config.zombie_cleanup.enabled = false;
    config.orphan_cleanup.stream_grace_ms = grace_ms;
    config
}

/// A session through `proxy` (its own connection), with `credit`, and the leases it was pushed.
async fn session_through(proxy: &common::proxy::Proxy, worker: &str, credit: u32) -> (Session, Vec<pb::Lease>) {
    let (tx, rx) = mpsc::channel(64);
    tx.send(pb::SessionRequest { open: Some(open(worker)), credit, ..Default::default() }).await.unwrap();
    let mut client = pb::agent_service_client::AgentServiceClient::new(proxy.channel().await);
    let rx = client.session(ReceiverStream::new(rx)).await.unwrap().into_inner();
    let mut s = Session { tx, rx };
    let mut leases = Vec::new();
    while leases.len() < credit as usize {
        leases.extend(s.next().await.leases);
    }
    (s, leases)
}

// A worker whose process dies (its connection cut: no half-close) gives back the leases it held
// once the grace has passed, with no sweeper running; the lease it completed before stays
// completed. Invariant: a broken stream's work is granted again, each lease once, attempt 2.
#[tokio::test]
async fn a_broken_session_gives_its_leases_back_after_the_grace() {
    let mut env = Env::with_config(grace_only(300)).await;
    one_shots(&mut env, 3, 60_000).await;
    let proxy = common::proxy::Proxy::start(env.baton.addr).await;
    let (mut s, leases) = session_through(&proxy, "w1", 3).await;
    s.send(pb::SessionRequest { completions: vec![done(&leases[0])], ..Default::default() }).await;
    let completed = loop {
        let r = s.next().await;
        if !r.completed.is_empty() {
            break r.completed;
        }
    };
    assert!(!completed[0].lease_lost, "{completed:?}");
    proxy.cut().await;

    let mut other = Session::open(&env, "w2", 3).await;
    let mut again = Vec::new();
    while again.len() < 2 {
        again.extend(other.next().await.leases);
    }
    let mut names: Vec<_> = again.iter().map(|l| (l.name.clone(), l.attempt)).collect();
    names.sort();
    assert_eq!(names, vec![(leases[1].name.clone(), 2), (leases[2].name.clone(), 2)]);
    assert_eq!((queue_len(&env, "waiting").await, queue_len(&env, "working").await), (0, 2));
    drop(s);
}

// A worker whose stream breaks but who reconnects (same worker id) within the grace keeps its
// leases: the grace's take-back runs, finds the worker seen since, and leaves them; the new
// stream's heartbeats extend every one. Opened without credit, the new stream marks the worker
// seen by a script call of its own (heartbeatLeases, no lease); opened with credit, its first
// acquire does, and no such call is made.
#[tokio::test]
async fn a_worker_that_reconnects_within_the_grace_keeps_its_leases() {
    reconnect_within_the_grace(0).await;
}

#[tokio::test]
async fn a_worker_that_reconnects_with_credit_is_marked_seen_by_its_first_acquire() {
    reconnect_within_the_grace(1).await;
}

async fn reconnect_within_the_grace(credit: u32) {
    let mut env = Env::with_config(grace_only(300)).await;
    let mut conn = env.redis.conn().await;
    for (key, value) in [("slowlog-max-len", "100000"), ("slowlog-log-slower-than", "0")] {
        let _: () = redis::cmd("CONFIG").arg("SET").arg(key).arg(value).query_async(&mut conn).await.unwrap();
    }
    one_shots(&mut env, 2, 60_000).await;
    let proxy = common::proxy::Proxy::start(env.baton.addr).await;
    let (s, leases) = session_through(&proxy, "w1", 2).await;
    proxy.cut().await;
    let mut back = Session::open(&env, "w1", credit).await;
    let calls_of = |name: &'static str| {
        let mut conn = conn.clone();
        async move {
            let log: Vec<redis::Value> = redis::cmd("SLOWLOG").arg("GET").arg(-1).query_async(&mut conn).await.unwrap();
            log.iter()
                .filter(|entry| {
                    let redis::Value::Array(fields) = entry else { return false };
                    let args: Vec<String> = redis::from_redis_value(fields[3].clone()).unwrap_or_default();
                    args.len() > 1 && baton::store::scripts::script_name(&args[1]) == Some(name)
                })
                .count()
        }
    };
    // Wait for the take-back to have run (and skipped both leases).
    eventually(Duration::from_secs(30), "the broken stream's take-back ran", || {
        let calls = calls_of("reapLeases");
        async move { calls.await > 0 }
    })
    .await;
    // The first stream opened with credit and sent no heartbeat: a heartbeatLeases call now is
    // the new stream's mark.
    let marks = calls_of("heartbeatLeases").await;
    assert_eq!(marks, usize::from(credit == 0), "heartbeatLeases calls at the reconnect with credit {credit}");
    let heartbeats = leases
        .iter()
        .map(|l| pb::SessionLease { name: l.name.clone(), token: l.token, ..Default::default() })
        .collect();
    back.send(pb::SessionRequest { heartbeats, ..Default::default() }).await;
    let r = back.next().await;
    assert_eq!((r.extended.len(), r.lost.len()), (2, 0), "{r:?}");
    drop(s);
}

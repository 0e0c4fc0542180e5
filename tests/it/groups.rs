//! Shared concurrency groups (AdminService.SetGroupLimits, GetGroupLimits, ListGroupLimits;
//! QueueLimits.group), end to end against real Redis and Baton on loopback.
//!
//! Checked:
//! - a group of concurrency 2 over 3 queues grants at most 2 leases over all of them, and a
//!   completion in one gives the place to another;
//! - a completion in queue A wakes a long-polling Acquire in queue B at once (no timer);
//! - key_concurrency within the group counts a key's leases over every member queue;
//! - a rate within the group holds over every member queue together;
//! - a reaped lease, and one whose agent was unregistered while held, give the place back, and so
//!   does a lease that ends after its queue left the group (the lease records its group);
//! - a group that does not exist, and any group on a Redis Cluster, are FAILED_PRECONDITION naming
//!   `limits.group`, and nothing is written;
//! - two replicas and many workers over the member queues never hold more than the limit.

use crate::common;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use baton::pb::admin_service_client::AdminServiceClient;
use common::*;
use tonic::{transport::Channel, Code};

const G: &str = "shared";

async fn admin(baton: &TestBaton) -> AdminServiceClient<Channel> {
    AdminServiceClient::new(baton.channel().await)
}

fn group_limits(concurrency: u32, rate: Option<(f64, u32)>, key_concurrency: u32) -> Option<pb::GroupLimits> {
    Some(pb::GroupLimits {
        concurrency,
        rate: rate.map(|(per_second, burst)| pb::RateLimit { per_second, burst }),
        key_concurrency,
    })
}

async fn set_group(a: &mut AdminServiceClient<Channel>, l: Option<pb::GroupLimits>) -> pb::SetGroupLimitsResponse {
    a.set_group_limits(pb::SetGroupLimitsRequest { group: G.into(), limits: l })
        .await
        .expect("set group limits")
        .into_inner()
}

async fn held(a: &mut AdminServiceClient<Channel>) -> u64 {
    let r = a.get_group_limits(pb::GetGroupLimitsRequest { group: G.into() }).await.expect("get group limits");
    r.into_inner().group.unwrap().held
}

async fn join(a: &mut AdminServiceClient<Channel>, queue: &str, group: &str) {
    let limits = pb::QueueLimits { group: group.into(), ..Default::default() };
    a.set_limits(pb::SetLimitsRequest { queue: queue.into(), limits: Some(limits), create: true })
        .await
        .expect("join the group");
}

fn long_poll(queue: &str, worker: &str, max: u32, wait_ms: u64) -> pb::AcquireRequest {
    pb::AcquireRequest { queue: queue.into(), worker_id: worker.into(), max_leases: max, wait: dur(wait_ms) }
}

fn quiet_config() -> baton::config::Config {
    let mut config = test_config();
    config.zombie_cleanup.enabled = false;
    config.orphan_cleanup.enabled = false;
    config.purge.enabled = false;
    config
}

/// Queues "a", "b" and "c" in the group, `n` due agents each.
async fn members(env: &mut Env, n: usize) {
    let mut a = admin(&env.baton).await;
    for q in ["a", "b", "c"] {
        join(&mut a, q, G).await;
        let agents = (0..n).map(|i| agent(&format!("{q}{i}"), 0, 600_000)).collect();
        register(&mut env.client, q, agents).await;
    }
}

// Concurrency 2 over three queues of three due agents each: 2 granted in all, the others wait
// for a place; a completion in one queue gives its place to another.
#[tokio::test]
async fn a_group_grants_at_most_its_concurrency_over_its_queues() {
    let mut env = Env::with_config(quiet_config()).await;
    let mut a = admin(&env.baton).await;
    let r = set_group(&mut a, group_limits(2, None, 0)).await;
    assert!(!r.replaced, "a new group");
    members(&mut env, 3).await;
    let first = acquire(&mut env.client, "a", "w", 1).await;
    let rest: Vec<_> =
        [acquire(&mut env.client, "b", "w", 5).await, acquire(&mut env.client, "c", "w", 5).await].concat();
    assert_eq!((first.len(), rest.len()), (1, 1), "two places over the three queues");
    assert!(acquire(&mut env.client, "a", "w", 5).await.is_empty(), "the group is full");
    assert_eq!(held(&mut a).await, 2);
    // A place freed in queue a goes to queue c.
    env.client.complete(complete_req(&first[0], pb::Outcome::Success)).await.unwrap();
    assert_eq!(held(&mut a).await, 1);
    assert_eq!(acquire(&mut env.client, "c", "w", 5).await.len(), 1, "the freed place");
    // The queue's view shows its group; the listing shows the group.
    let h = a.get_health(pb::GetHealthRequest {}).await.unwrap().into_inner();
    let b = h.sources.iter().find(|s| s.source.as_ref().is_some_and(|s| s.name == "b")).unwrap();
    assert_eq!(b.limits.as_ref().unwrap().group, G);
    let list = a.list_group_limits(pb::ListGroupLimitsRequest::default()).await.unwrap().into_inner();
    let names: Vec<_> = list.groups.iter().map(|g| (g.group.as_str(), g.held)).collect();
    assert_eq!(names, [(G, 2)]);
}

// A completion in queue a wakes a long poll in queue b held back by the group: the poll waits
// 60 s, and only a wake-up can hand it its agent sooner.
#[tokio::test]
async fn a_completion_in_one_queue_wakes_a_long_poll_in_another() {
    let mut env = Env::with_config(quiet_config()).await;
    let mut a = admin(&env.baton).await;
    set_group(&mut a, group_limits(1, None, 0)).await;
    join(&mut a, "a", G).await;
    join(&mut a, "b", G).await;
    register(&mut env.client, "a", vec![agent("first", 0, 600_000)]).await;
    let lease = acquire(&mut env.client, "a", "holder", 1).await.pop().expect("due");
    register(&mut env.client, "b", vec![agent("second", 0, 600_000)]).await;
    let mut c = env.client.clone();
    let waiter =
        tokio::spawn(async move { c.acquire(long_poll("b", "waiter", 1, 60_000)).await.unwrap().into_inner().leases });
    let conn = env.redis.conn().await;
    eventually(Duration::from_secs(20), "the long poll found the group full", || {
        let mut conn = conn.clone();
        async move {
            let n: i64 =
                redis::cmd("SCARD").arg(format!("baton:{{g:{G}}}:blocked")).query_async(&mut conn).await.unwrap();
            n > 0
        }
    })
    .await;
    assert!(!waiter.is_finished(), "the long poll waits");
    env.client.complete(complete_req(&lease, pb::Outcome::Success)).await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("the completion in queue a woke the long poll in queue b")
        .unwrap();
    assert_eq!(got.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(), ["second"]);
}

// key_concurrency 1 within the group: a key's lease in queue a holds back the same key in
// queue b, never another key; its completion lets b's agent of that key go.
#[tokio::test]
async fn a_key_holds_at_most_key_concurrency_over_the_group() {
    let mut env = Env::with_config(quiet_config()).await;
    let mut a = admin(&env.baton).await;
    set_group(&mut a, group_limits(10, None, 1)).await;
    let keyed = |name: &str, key: &str| pb::Agent { key: key.into(), ..agent(name, 0, 600_000) };
    for q in ["a", "b"] {
        join(&mut a, q, G).await;
        let agents =
            vec![keyed(&format!("{q}-t1-0"), "t1"), keyed(&format!("{q}-t1-1"), "t1"), keyed(&format!("{q}-t2"), "t2")];
        register(&mut env.client, q, agents).await;
    }
    let in_a = acquire(&mut env.client, "a", "w", 10).await;
    let mut keys: Vec<_> = in_a.iter().map(|l| l.agent.as_ref().unwrap().key.clone()).collect();
    keys.sort();
    assert_eq!(keys, ["t1", "t2"], "one lease per key in queue a");
    assert!(acquire(&mut env.client, "b", "w", 10).await.is_empty(), "both keys are at their limit over the group");
    let t1 = in_a.iter().find(|l| l.agent.as_ref().unwrap().key == "t1").unwrap();
    env.client.complete(complete_req(t1, pb::Outcome::Success)).await.unwrap();
    let in_b = acquire(&mut env.client, "b", "w", 10).await;
    assert_eq!(in_b.len(), 1, "the key's place freed in queue a");
    assert_eq!(in_b[0].agent.as_ref().unwrap().key, "t1");
}

// A rate of 5/s (burst 2) over two member queues, each cycled by its own workers for 3 s:
// their grants together stay within one bucket.
#[tokio::test]
async fn a_group_rate_holds_over_its_queues_together() {
    const RATE: f64 = 5.0;
    const BURST: u32 = 2;
    let mut env = Env::with_config(quiet_config()).await;
    let mut a = admin(&env.baton).await;
    set_group(&mut a, group_limits(0, Some((RATE, BURST)), 0)).await;
    for q in ["a", "b"] {
        join(&mut a, q, G).await;
        register(&mut env.client, q, (0..4).map(|i| agent(&format!("{q}{i}"), 1, 600_000)).collect()).await;
    }
    let end = env.redis.now_ms().await + 3_000;
    let clients = [env.client.clone()];
    let (ga, gb) =
        tokio::join!(cycle_until(&clients, "a", 2, 600_000, end), cycle_until(&clients, "b", 2, 600_000, end));
    let times: Vec<i64> = ga.iter().chain(&gb).map(|(_, at)| *at).filter(|at| *at < end).collect();
    println!("{} grants in 3 s over two queues at {RATE}/s burst {BURST}", times.len());
    assert!(!ga.is_empty() && !gb.is_empty(), "both queues were granted");
    assert_within_bucket("the group", &times, RATE, BURST);
}

// Concurrency 1. A lease reaped by the zombie sweeper gives the group's place back; so does a
// lease whose agent was unregistered while held, once its holder completes it, a released lease
// and a cancelled run (at its holder's heartbeat); and a lease that ends after its queue left the
// group gives the place back to the group it was granted under.
#[tokio::test]
async fn every_lease_end_gives_the_place_back() {
    let mut config = quiet_config();
    config.zombie_cleanup.enabled = true;
    config.zombie_cleanup.threshold_ms = 100;
    config.zombie_cleanup.interval_ms = 100;
    let mut env = Env::with_config(config).await;
    let mut a = admin(&env.baton).await;
    set_group(&mut a, group_limits(1, None, 0)).await;
    join(&mut a, "a", G).await;
    join(&mut a, "b", G).await;

    // Reaped: dead-lettered by its first failure (its lease timed out).
    let doomed = pb::Agent { max_attempts: 1, ..agent("doomed", 0, 300) };
    register(&mut env.client, "a", vec![doomed]).await;
    assert_eq!(acquire(&mut env.client, "a", "gone", 1).await.len(), 1);
    assert_eq!(held(&mut a).await, 1);
    let mut poll = env.client.clone();
    register(&mut env.client, "b", vec![agent("next", 0, 600_000)]).await;
    let got = poll.acquire(long_poll("b", "w", 1, 20_000)).await.unwrap().into_inner().leases;
    assert_eq!(got.len(), 1, "the reap gave the place back");
    env.client.complete(complete_req(&got[0], pb::Outcome::Success)).await.unwrap();
    assert_eq!(held(&mut a).await, 0);

    // Unregistered while held: the holder's completion ends the lease and gives the place back.
    register(&mut env.client, "a", vec![agent("dropped", 0, 600_000)]).await;
    let lease = acquire(&mut env.client, "a", "w", 1).await.pop().expect("due");
    env.client
        .unregister(pb::UnregisterRequest { queue: "a".into(), names: vec!["dropped".into()], ..Default::default() })
        .await
        .unwrap();
    assert_eq!(held(&mut a).await, 1, "held while its holder runs it");
    env.client.complete(complete_req(&lease, pb::Outcome::Success)).await.unwrap();
    assert_eq!(held(&mut a).await, 0, "the unregistered agent's lease gave its place back");

    // Released: the place is given back at once.
    register(&mut env.client, "a", vec![agent("handed-back", 0, 600_000)]).await;
    let lease = acquire(&mut env.client, "a", "w", 1).await.pop().expect("due");
    assert_eq!(held(&mut a).await, 1);
    let release =
        pb::ReleaseRequest { queue: "a".into(), name: lease.name.clone(), token: lease.token, delay: dur(600_000) };
    env.client.release(release).await.unwrap();
    assert_eq!(held(&mut a).await, 0, "the release gave its place back");

    // Cancelled: the run ends at its holder's next heartbeat, which gives the place back.
    register(&mut env.client, "a", vec![agent("cancelled", 0, 600_000)]).await;
    let lease = acquire(&mut env.client, "a", "w", 1).await.pop().expect("due");
    env.client
        .cancel_run(pb::CancelRunRequest { queue: "a".into(), name: "cancelled".into(), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(held(&mut a).await, 1, "held until the heartbeat ends the run");
    let beat = pb::HeartbeatRequest {
        worker_id: "w".into(),
        leases: vec![pb::LeaseRef {
            queue: "a".into(),
            name: lease.name.clone(),
            token: lease.token,
            progress: String::new(),
        }],
    };
    env.client.heartbeat(beat).await.unwrap();
    assert_eq!(held(&mut a).await, 0, "the cancelled run gave its place back");

    // A run that waits for an event (Complete with wait_for) holds no lease: its place goes back.
    register(&mut env.client, "a", vec![agent("waiter", 0, 600_000)]).await;
    let lease = acquire(&mut env.client, "a", "w", 1).await.pop().expect("due");
    assert_eq!(held(&mut a).await, 1);
    let wait = pb::WaitFor { event: "approve".into(), ..Default::default() };
    let done = env.client.complete(pb::CompleteRequest {
        wait_for: Some(wait.clone()),
        ..complete_req(&lease, pb::Outcome::Unspecified)
    });
    assert!(done.await.unwrap().into_inner().waiting);
    assert_eq!(held(&mut a).await, 0, "the wait gave its place back");

    // A cancelled run that then waits does not wait: it ends cancelled, its place given back.
    register(&mut env.client, "a", vec![agent("cancelled-waiter", 0, 600_000)]).await;
    let lease = acquire(&mut env.client, "a", "w", 1).await.pop().expect("due");
    env.client
        .cancel_run(pb::CancelRunRequest { queue: "a".into(), name: lease.name.clone(), ..Default::default() })
        .await
        .unwrap();
    let e = env
        .client
        .complete(pb::CompleteRequest { wait_for: Some(wait), ..complete_req(&lease, pb::Outcome::Unspecified) })
        .await
        .unwrap_err();
    assert_eq!(reason(&e), "LEASE_LOST", "{e:?}");
    assert_eq!(held(&mut a).await, 0, "the cancelled run's wait gave its place back");
    let gone = env.client.get_agent(pb::GetAgentRequest { queue: "a".into(), name: lease.name.clone() }).await;
    assert_eq!(gone.unwrap_err().code(), Code::NotFound, "the cancelled one-shot run ended, not waiting");

    // Queue a leaves the group while its lease runs: the lease still gives the group's place back.
    register(&mut env.client, "a", vec![agent("leaver", 0, 600_000)]).await;
    let lease = acquire(&mut env.client, "a", "w", 1).await.pop().expect("due");
    join(&mut a, "a", "").await;
    assert_eq!(held(&mut a).await, 1);
    env.client.complete(complete_req(&lease, pb::Outcome::Success)).await.unwrap();
    assert_eq!(held(&mut a).await, 0, "the lease gave its place back to the group it was granted under");
}

// A group that was never set, or a malformed name: refused, and the queue's limits are unchanged.
#[tokio::test]
async fn a_group_that_does_not_exist_is_refused() {
    let mut env = Env::start().await;
    let mut a = admin(&env.baton).await;
    register(&mut env.client, "a", vec![agent("x", 0, 600_000)]).await;
    let limits = pb::QueueLimits { concurrency: 3, group: "nope".into(), ..Default::default() };
    let e = a
        .set_limits(pb::SetLimitsRequest { queue: "a".into(), limits: Some(limits.clone()), create: false })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert!(e.message().contains("limits.group"), "{}", e.message());
    let bad = pb::QueueLimits { group: "no{pe".into(), ..limits };
    let e =
        a.set_limits(pb::SetLimitsRequest { queue: "a".into(), limits: Some(bad), create: false }).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("limits.group"), "{}", e.message());
    let h = a.get_health(pb::GetHealthRequest {}).await.unwrap().into_inner();
    let q = h.sources.iter().find(|s| s.source.as_ref().is_some_and(|s| s.name == "a")).unwrap();
    assert_eq!(q.limits, None, "nothing was written");
    let e = a.get_group_limits(pb::GetGroupLimitsRequest { group: "nope".into() }).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    let e = a.set_group_limits(pb::SetGroupLimitsRequest { group: G.into(), limits: group_limits(2_000_000, None, 0) });
    let e = e.await.unwrap_err();
    assert!(e.message().contains("limits.concurrency"), "{}", e.message());
    assert_eq!(a.list_group_limits(pb::ListGroupLimitsRequest::default()).await.unwrap().into_inner().groups, []);
}

// On a Redis Cluster a queue cannot join a group (its scripts touch only its own slot): refused,
// naming limits.group, and the queue's limits are unchanged.
#[tokio::test]
async fn a_cluster_refuses_groups() {
    let cluster = cluster::TestCluster::start(3, 1).await;
    let baton = TestBaton::start(&cluster.url(), test_config()).await;
    let mut a = admin(&baton).await;
    set_group(&mut a, group_limits(2, None, 0)).await;
    let mut c = baton.agents().await;
    register(&mut c, "cq", vec![agent("x", 0, 600_000)]).await;
    let limits = pb::QueueLimits { concurrency: 3, group: G.into(), ..Default::default() };
    let e = a.set_limits(pb::SetLimitsRequest { queue: "cq".into(), limits: Some(limits), create: false }).await;
    let e = e.unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert!(e.message().contains("limits.group") && e.message().contains("Cluster"), "{}", e.message());
    let h = a.get_health(pb::GetHealthRequest {}).await.unwrap().into_inner();
    let q = h.sources.iter().find(|s| s.source.as_ref().is_some_and(|s| s.name == "cq")).unwrap();
    assert_eq!(q.limits, None, "nothing was written");
    assert_eq!(acquire(&mut c, "cq", "w", 5).await.len(), 1, "the queue works as before");
}

// The acceptance fault test: a shared group's limit is never exceeded across 2 replicas. Two
// Baton servers on one Redis, 12 workers (half on each) long-polling three member queues and
// completing at once; what the workers hold (counted from after a grant to before its
// completion, so never more than Redis holds) never exceeds the limit, nor does the group's own
// count sampled meanwhile, and all 150 agents run.
#[tokio::test]
async fn a_shared_group_limit_is_never_exceeded_across_two_replicas() {
    const LIMIT: u32 = 3;
    const PER_QUEUE: usize = 50;
    let mut env = Env::with_config(quiet_config()).await;
    let second = TestBaton::start(&env.redis.url(), quiet_config()).await;
    let mut a = admin(&env.baton).await;
    set_group(&mut a, group_limits(LIMIT, None, 0)).await;
    members(&mut env, PER_QUEUE).await;
    let clients = [env.client.clone(), second.agents().await];
    let (in_hand, most, done) = (Arc::new(AtomicI64::new(0)), Arc::new(AtomicI64::new(0)), Arc::new(AtomicI64::new(0)));
    let total = (3 * PER_QUEUE) as i64;
    let mut tasks = Vec::new();
    for w in 0..12 {
        let mut c = clients[w % 2].clone();
        let queue = ["a", "b", "c"][w % 3];
        let (in_hand, most, done) = (in_hand.clone(), most.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            while done.load(Ordering::SeqCst) < total {
                let poll = long_poll(queue, &format!("w{w}"), 2, 500);
                let leases = c.acquire(poll).await.unwrap().into_inner().leases;
                let now = in_hand.fetch_add(leases.len() as i64, Ordering::SeqCst) + leases.len() as i64;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::task::yield_now().await;
                for l in leases {
                    in_hand.fetch_sub(1, Ordering::SeqCst);
                    c.complete(complete_req(&l, pb::Outcome::Success)).await.unwrap();
                    done.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
    }
    let mut sampled = 0;
    let mut samples = 0;
    while done.load(Ordering::SeqCst) < total {
        let h = held(&mut a).await;
        sampled = sampled.max(h);
        samples += 1;
        assert!(h <= LIMIT as u64, "the group's count {h} is above its limit {LIMIT}");
    }
    tokio::time::timeout(Duration::from_secs(60), async {
        for t in tasks {
            t.await.unwrap();
        }
    })
    .await
    .expect("every agent ran");
    let most = most.load(Ordering::SeqCst);
    println!("workers held at most {most} at once (limit {LIMIT}); the group's count at most {sampled} over {samples} samples");
    assert!(most <= LIMIT as i64, "the workers held {most} leases at once; the group allows {LIMIT}");
    assert_eq!(held(&mut a).await, 0, "every place given back");
    second.stop().await.unwrap();
}

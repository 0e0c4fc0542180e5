//! Cascading cancel (CancelRun and Unregister with `cascade`), against real Redis through the
//! generated client: on one node, on a 3+3 Redis Cluster, and with a replica SIGKILLed midway.
//!
//! Invariants checked:
//! - a cascade cancels every descendant, in any queue, whatever its on_parent_failure policy:
//!   each finishes FINISH_CANCELLED ("cancelled: ancestor <queue>/<name>"), and none is left
//!   blocked;
//! - a running descendant is told at its heartbeat (cancel_requested) and its run ends there;
//! - without cascade nothing changes: a WAIT child of a cancelled or unregistered parent stays
//!   blocked;
//! - an unknown agent is NOT_FOUND and writes nothing, cascade or not;
//! - a replica that dies right after starting a cascade leaves it to the others' flows sweep.

use crate::common;

use std::time::{Duration, Instant};

use common::{pb::agent_service_client::AgentServiceClient, *};
use tonic::{transport::Channel, Code};

fn one_shot(name: &str) -> pb::Agent {
    agent(name, 0, 30_000)
}

fn after(name: &str, parents: &[(&str, &str)], on_failure: pb::ParentFailure) -> pb::Agent {
    pb::Agent {
        after: parents
            .iter()
            .map(|(q, n)| pb::AgentRef {
                queue: q.to_string(),
                name: n.to_string(),
                on_failure: on_failure as i32,
                ..Default::default()
            })
            .collect(),
        ..one_shot(name)
    }
}

fn wait_child(name: &str, queue: &str, parent: &str) -> pb::Agent {
    after(name, &[(queue, parent)], pb::ParentFailure::Wait)
}

async fn register_all(c: &mut AgentServiceClient<Channel>, queue: &str, agents: Vec<pb::Agent>) {
    for chunk in agents.chunks(500) {
        let req = pb::RegisterRequest { queue: queue.into(), agents: chunk.to_vec(), ..Default::default() };
        c.register(req).await.expect("register");
    }
}

/// Every agent of `queue`, through ListAgents' pages.
async fn list_all(c: &mut AgentServiceClient<Channel>, queue: &str) -> Vec<pb::AgentStatus> {
    let mut out = Vec::new();
    let mut token = String::new();
    loop {
        let req =
            pb::ListAgentsRequest { queue: queue.into(), page_size: 1000, page_token: token, ..Default::default() };
        let r = c.list_agents(req).await.expect("list agents").into_inner();
        out.extend(r.agents);
        if r.next_page_token.is_empty() {
            return out;
        }
        token = r.next_page_token;
    }
}

async fn state(c: &mut AgentServiceClient<Channel>, queue: &str, name: &str) -> Option<pb::AgentStatus> {
    let req = pb::GetAgentRequest { queue: queue.into(), name: name.into() };
    c.get_agent(req).await.ok().and_then(|r| r.into_inner().agent)
}

/// Waits (Await with a wait) for `name`'s finish.
async fn finish(c: &mut AgentServiceClient<Channel>, queue: &str, name: &str) -> pb::AgentResult {
    let req = pb::AwaitRequest { queue: queue.into(), name: name.into(), wait: dur(20_000), after_token: 0 };
    let r = c.r#await(req).await.expect("await").into_inner();
    let what = format!("{queue}/{name} did not finish: {r:?}");
    r.result.expect(&what)
}

fn cancel_req(queue: &str, name: &str, cascade: bool) -> pb::CancelRunRequest {
    pb::CancelRunRequest { queue: queue.into(), name: name.into(), cascade }
}

fn beat(queue: &str, l: &pb::Lease) -> pb::HeartbeatRequest {
    pb::HeartbeatRequest {
        worker_id: "w".into(),
        leases: vec![pb::LeaseRef { queue: queue.into(), name: l.name.clone(), token: l.token, ..Default::default() }],
    }
}

/// Waits until no agent is left in any of `queues` but `kept`; panics with what is left.
async fn until_only(c: &AgentServiceClient<Channel>, queues: &[&str], kept: &[&str], limit: Duration) {
    let what = format!("only {kept:?} left in {queues:?}");
    eventually(limit, &what, || {
        let mut c = c.clone();
        let queues: Vec<String> = queues.iter().map(|q| q.to_string()).collect();
        async move {
            for q in &queues {
                if list_all(&mut c, q).await.iter().any(|a| !kept.contains(&a.agent.as_ref().unwrap().name.as_str())) {
                    return false;
                }
            }
            true
        }
    })
    .await;
}

// A 3-level DAG across two queues, every child under WAIT (or RUN_ANYWAY): CancelRun with
// cascade on the running root cancels all of it. The leaves' Awaits, waiting since before the
// call, answer FINISH_CANCELLED naming the root, and no agent is left, blocked or otherwise.
#[tokio::test]
async fn a_cascade_from_the_root_cancels_the_whole_dag() {
    let mut env = Env::start().await;
    let c = &mut env.client;
    register(c, "ca", vec![one_shot("root")]).await;
    register_all(c, "cb", vec![wait_child("a1", "ca", "root")]).await;
    register_all(c, "ca", vec![after("a2", &[("ca", "root")], pb::ParentFailure::RunAnyway)]).await;
    register_all(c, "ca", vec![wait_child("l1", "cb", "a1")]).await;
    register_all(c, "cb", vec![after("l2", &[("cb", "a1"), ("ca", "a2")], pb::ParentFailure::Wait)]).await;
    let waits: Vec<_> = [("ca", "l1"), ("cb", "l2"), ("ca", "a2")]
        .into_iter()
        .map(|(q, n)| {
            let mut c = c.clone();
            tokio::spawn(async move { finish(&mut c, q, n).await })
        })
        .collect();
    // The Awaits are waiting (marked) before the cancel.
    eventually(Duration::from_secs(10), "the Awaits wait", || {
        let mut c = c.clone();
        async move {
            for (q, n) in [("ca", "l1"), ("cb", "l2"), ("ca", "a2")] {
                let req = pb::AwaitRequest { queue: q.into(), name: n.into(), ..Default::default() };
                if c.r#await(req).await.unwrap().into_inner().result_not_kept {
                    return false;
                }
            }
            true
        }
    })
    .await;
    let root = acquire(c, "ca", "w", 1).await.pop().expect("the root is due");
    assert_eq!(root.name, "root");

    let r = c.cancel_run(cancel_req("ca", "root", true)).await.unwrap().into_inner();
    assert_eq!((r.requested, r.token, r.cascaded), (true, root.token, 2), "{r:?}");
    for w in waits {
        let result = w.await.unwrap();
        assert_eq!(result.finish(), pb::Finish::Cancelled, "{result:?}");
        assert_eq!(result.message, "cancelled: ancestor ca/root", "{result:?}");
    }
    // The root's own run ends at its heartbeat, as CancelRun's always does.
    let b = c.heartbeat(beat("ca", &root)).await.unwrap().into_inner();
    assert_eq!(b.cancelled.len(), 1);
    until_only(c, &["ca", "cb"], &[], Duration::from_secs(10)).await;
}

// Running descendants: RUN_ANYWAY children attached to their dead-lettered parent run at once.
// A cascade from the parent marks their leases (GetAgent: cancel_requested). One's next
// heartbeat ends the run, and the agent with it; the other's Complete (a success) comes first
// and ends it the same way. Their own WAIT children are cancelled in turn.
#[tokio::test]
async fn a_running_descendant_is_cancelled_at_its_heartbeat() {
    let mut env = Env::start().await;
    let c = &mut env.client;
    let failing = pb::Agent { max_attempts: 1, keep_result: true, ..one_shot("p") };
    register(c, "ra", vec![failing]).await;
    let p = acquire(c, "ra", "w", 1).await.pop().unwrap();
    c.complete(complete_req(&p, pb::Outcome::PermanentForbidden)).await.unwrap();
    assert_eq!(state(c, "ra", "p").await.unwrap().state(), pb::AgentState::DeadLettered);
    let running =
        |name: &str| pb::Agent { keep_result: true, ..after(name, &[("ra", "p")], pb::ParentFailure::RunAnyway) };
    register_all(c, "rb", vec![running("run"), running("done")]).await;
    let grandchildren = vec![
        pb::Agent { keep_result: true, ..wait_child("g", "rb", "run") },
        pb::Agent { keep_result: true, ..wait_child("g2", "rb", "done") },
    ];
    register_all(c, "ra", grandchildren).await;
    let mut leases = acquire(c, "rb", "w", 2).await;
    leases.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(leases.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(), ["done", "run"], "the children run");

    let r = c.cancel_run(cancel_req("ra", "p", true)).await.unwrap().into_inner();
    assert_eq!((r.requested, r.cascaded), (false, 2), "{r:?}");
    eventually(Duration::from_secs(10), "the running descendants are asked to stop", || {
        let mut c = c.clone();
        async move {
            state(&mut c, "rb", "run").await.is_some_and(|s| s.cancel_requested)
                && state(&mut c, "rb", "done").await.is_some_and(|s| s.cancel_requested)
        }
    })
    .await;
    let b = c.heartbeat(beat("rb", &leases[1])).await.unwrap().into_inner();
    assert_eq!(b.cancelled.len(), 1, "the heartbeat ends the run: {b:?}");
    c.complete(complete_req(&leases[0], pb::Outcome::Success)).await.unwrap();
    for (q, name) in [("rb", "run"), ("rb", "done"), ("ra", "g"), ("ra", "g2")] {
        let f = finish(c, q, name).await;
        assert_eq!(f.finish(), pb::Finish::Cancelled, "{name}: {f:?}");
    }
    // The dead-lettered parent itself stays (CancelRun cancels a run, and it has none).
    until_only(c, &["ra", "rb"], &["p"], Duration::from_secs(10)).await;
}

// Unregister with cascade: the removed agent's children (another queue) and grandchildren are
// cancelled, whatever their policy; the count of direct children taken is answered. A child
// attached after the cascade (as one whose Register raced it is) is cancelled at its attach: the
// finish it is answered cascades.
#[tokio::test]
async fn unregister_with_cascade_cancels_the_descendants() {
    let mut env = Env::start().await;
    let c = &mut env.client;
    register(c, "ua", vec![one_shot("u")]).await;
    register_all(
        c,
        "ub",
        vec![
            wait_child("k1", "ua", "u"),
            after("k2", &[("ua", "u")], pb::ParentFailure::RunAnyway),
            after("k3", &[("ua", "u")], pb::ParentFailure::Cancel),
        ],
    )
    .await;
    register_all(c, "ua", vec![pb::Agent { keep_result: true, ..wait_child("gk", "ub", "k2") }]).await;

    let req = pb::UnregisterRequest { queue: "ua".into(), names: vec!["u".into(), "ghost".into()], cascade: true };
    let r = c.unregister(req).await.unwrap().into_inner();
    assert_eq!((r.removed, r.cascaded), (1, 3), "{r:?}");
    let gk = finish(c, "ua", "gk").await;
    assert_eq!((gk.finish(), gk.message.as_str()), (pb::Finish::Cancelled, "cancelled: ancestor ua/u"));
    until_only(c, &["ua", "ub"], &[], Duration::from_secs(10)).await;
    register_all(c, "ub", vec![pb::Agent { keep_result: true, ..wait_child("late", "ua", "u") }]).await;
    let late = finish(c, "ub", "late").await;
    assert_eq!((late.finish(), late.message.as_str()), (pb::Finish::Cancelled, "cancelled: ancestor ua/u"));
    until_only(c, &["ua", "ub"], &[], Duration::from_secs(10)).await;
}

// Without cascade nothing changes: a cancelled run's and an unregistered agent's WAIT children
// stay blocked, as before, and nothing is counted as cascaded.
#[tokio::test]
async fn without_cascade_wait_children_stay_blocked() {
    let mut env = Env::start().await;
    let c = &mut env.client;
    register(c, "na", vec![one_shot("ran"), one_shot("gone")]).await;
    register_all(c, "nb", vec![wait_child("w1", "na", "ran"), wait_child("w2", "na", "gone")]).await;
    let l = acquire(c, "na", "w", 2).await.into_iter().find(|l| l.name == "ran").unwrap();
    let r = c.cancel_run(cancel_req("na", "ran", false)).await.unwrap().into_inner();
    assert_eq!((r.requested, r.cascaded), (true, 0));
    assert_eq!(c.heartbeat(beat("na", &l)).await.unwrap().into_inner().cancelled.len(), 1);
    let req = pb::UnregisterRequest { queue: "na".into(), names: vec!["gone".into()], cascade: false };
    assert_eq!(c.unregister(req).await.unwrap().into_inner().cascaded, 0);
    // Both parents' finishes were released to their children (the outbox is empty again).
    eventually(Duration::from_secs(10), "the releases are applied", || {
        let redis = env.redis.url();
        async move {
            let mut conn = redis::Client::open(redis).unwrap().get_multiplexed_async_connection().await.unwrap();
            let n: i64 = redis::cmd("ZCARD").arg("baton:{q:na}:outbox").query_async(&mut conn).await.unwrap();
            n == 0
        }
    })
    .await;
    for name in ["w1", "w2"] {
        assert_eq!(state(c, "nb", name).await.unwrap().state(), pb::AgentState::Blocked, "{name}");
    }
}

// A cascade on an unknown agent is NOT_FOUND and writes nothing; bad input is INVALID_ARGUMENT
// naming the field; a cascade on an agent with no children answers cascaded 0.
#[tokio::test]
async fn a_refused_cascade_writes_nothing() {
    let mut env = Env::start().await;
    let c = &mut env.client;
    register(c, "va", vec![one_shot("lonely")]).await;
    let before = env.redis.snapshot().await;
    let e = c.cancel_run(cancel_req("va", "ghost", true)).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    let e = c.cancel_run(cancel_req("va", "bad:name", true)).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("name"), "{e:?}");
    let req = pb::UnregisterRequest { queue: "".into(), names: vec!["lonely".into()], cascade: true };
    assert_eq!(c.unregister(req).await.unwrap_err().code(), Code::InvalidArgument);
    assert_eq!(env.redis.snapshot().await, before, "a refused call wrote something");
    let r = c.cancel_run(cancel_req("va", "lonely", true)).await.unwrap().into_inner();
    assert_eq!((r.requested, r.cascaded), (false, 0));
    assert_eq!(env.redis.snapshot().await, before, "a cascade over no children wrote something");
}

// The acceptance fault test: a cascade over a 3-level DAG of 2,000 agents, across two queues on
// a 3+3 Redis Cluster, leaves no blocked orphan. Root (queue A) → 40 children (alternating A
// and B) → 1,959 grandchildren (alternating), all under WAIT; the root is running. Nothing is
// left in either queue afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cascade_over_2000_agents_on_a_cluster_leaves_no_blocked_orphan() {
    let cluster = common::cluster::TestCluster::start(3, 1).await;
    let baton = TestBaton::start(&cluster.url(), test_config()).await;
    let mut c = baton.agents().await;
    let queues = ["cas-a", "cas-b"];
    register(&mut c, queues[0], vec![one_shot("root")]).await;
    let mut by_queue: [Vec<pb::Agent>; 2] = Default::default();
    for i in 0..40 {
        by_queue[i % 2].push(wait_child(&format!("c{i:02}"), queues[0], "root"));
    }
    for (q, agents) in by_queue.iter_mut().enumerate() {
        register_all(&mut c, queues[q], std::mem::take(agents)).await;
    }
    for j in 0..1959 {
        let parent = j % 40;
        by_queue[j % 2].push(wait_child(&format!("g{j:04}"), queues[parent % 2], &format!("c{parent:02}")));
    }
    for (q, agents) in by_queue.iter_mut().enumerate() {
        register_all(&mut c, queues[q], std::mem::take(agents)).await;
    }
    let total: usize = {
        let mut n = 0;
        for q in queues {
            n += list_all(&mut c, q).await.len();
        }
        n
    };
    assert_eq!(total, 2_000);
    let root = acquire(&mut c, queues[0], "w", 1).await.pop().expect("the root is due");

    let started = Instant::now();
    let r = c.cancel_run(cancel_req(queues[0], "root", true)).await.unwrap().into_inner();
    assert_eq!((r.requested, r.cascaded), (true, 40));
    assert_eq!(c.heartbeat(beat(queues[0], &root)).await.unwrap().into_inner().cancelled.len(), 1);
    until_only(&c, &queues, &[], Duration::from_secs(60)).await;
    println!("cascade over 2,000 agents on a 3+3 cluster: none left after {:?}", started.elapsed());
    baton.stop().await.unwrap();
}

// A replica SIGKILLed right after it answered a CancelRun with cascade (its flows task had the
// cascade's 600 children in another queue, and their 600 children, still to cancel): the
// surviving replica's flows takeover and sweep finish the cascade.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_mid_cascade_leaves_it_to_the_others() {
    let redis = TestRedis::start().await;
    let mut config = test_config();
    config.flows.sweep_interval_ms = 300;
    let survivor = TestBaton::start(&redis.url(), config).await;
    let doomed = BatonProcess::spawn(|cmd| {
        cmd.args(["--redis-url", &redis.url()]).env("BATON_FLOWS__SWEEP_INTERVAL_MS", "300");
    });
    let mut c = survivor.agents().await;
    register(&mut c, "ka", vec![one_shot("root")]).await;
    register_all(&mut c, "kb", (0..600).map(|i| wait_child(&format!("c{i:03}"), "ka", "root")).collect()).await;
    register_all(&mut c, "ka", (0..600).map(|i| wait_child(&format!("g{i:03}"), "kb", &format!("c{i:03}"))).collect())
        .await;

    let mut d = AgentServiceClient::new(doomed.channel().await);
    let r = d.cancel_run(cancel_req("ka", "root", true)).await.unwrap().into_inner();
    doomed.signal(libc::SIGKILL);
    assert_eq!((r.requested, r.cascaded), (false, 600));
    let left = list_all(&mut c, "kb").await.len() + list_all(&mut c, "ka").await.len();
    println!("left when the replica died: {left} of 1,201 agents");
    assert!(left > 1, "the killed replica finished the cascade before it died: nothing was left to take over");
    let started = Instant::now();
    until_only(&c, &["ka", "kb"], &["root"], Duration::from_secs(30)).await;
    println!("the survivor finished the cascade in {:?}", started.elapsed());
    drop(doomed);
    survivor.stop().await.unwrap();
}

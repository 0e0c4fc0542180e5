//! Work that depends on work, under faults: a three-level DAG (a root; 1,000 children after it,
//! members of a batch with two callbacks; a fan-in agent after all 1,000) worked while worker
//! processes and Baton replicas are SIGKILLed (one Redis), and while a Redis Cluster primary
//! fails over with `redis.min_replicas_ack = 1`.
//!
//! Invariants checked, at every grant and at the end:
//! - no agent is granted before every parent finished successfully: its lease lists each of its
//!   parents as succeeded, with the parent's result;
//! - every agent succeeds exactly once: one acknowledged SUCCESS Complete per agent (retries
//!   carry a request_id, so an unknown outcome is retried safely), and the finish Baton keeps
//!   names that run's token and result;
//! - the fan-in agent and each callback are granted exactly once; a child held by a killed
//!   worker runs again, and the dead worker's late Complete is refused (LEASE_LOST);
//! - nothing is left behind: no blocked agent, no outbox entry, no unattached child; the batch
//!   counts 1,000 succeeded.
//!
//! A release left by a replica that died right after answering a Complete (a store with no
//! flows task) is checked in the flows' own tests (`src/flows/tests.rs`).

use crate::common;

use std::{
    collections::HashMap,
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use common::{
    cluster::{until, TestCluster},
    *,
};
use tonic::{transport::Channel, Code};

const FAN: usize = 1_000;
const ROOT: &str = "root";
const SINK: &str = "sink";
const ON_SUCCESS: &str = "cb-ok";
const ON_COMPLETE: &str = "cb-all";

fn child(i: usize) -> String {
    format!("c{i:04}")
}

/// Every agent of the DAG keeps its finish (`keep_result`), so the end can read each one's.
fn one_shot(name: &str) -> pb::Agent {
    pb::Agent { keep_result: true, ..agent(name, 0, 30_000) }
}

fn after(name: &str, queue: &str, parents: impl IntoIterator<Item = String>) -> pb::Agent {
    let after = parents
        .into_iter()
        .map(|p| pb::AgentRef {
            queue: queue.into(),
            name: p,
            on_failure: pb::ParentFailure::Cancel as i32,
            ..Default::default()
        })
        .collect();
    pb::Agent { after, ..one_shot(name) }
}

/// (queue, name) of an agent.
type Ref = (String, String);

/// The DAG's queues and batch.
#[derive(Clone)]
struct Dag {
    root_q: String,
    mid_q: String,
    end_q: String,
    batch: String,
}

impl Dag {
    /// Every agent of the DAG, with its queue and the parents its lease must list.
    fn agents(&self) -> Vec<(String, String, Vec<Ref>)> {
        // A callback's parent is the batch: queue empty, name the batch's (Lease.parents).
        let mut out = vec![(self.root_q.clone(), ROOT.to_string(), vec![])];
        for i in 0..FAN {
            out.push((self.mid_q.clone(), child(i), vec![(self.root_q.clone(), ROOT.to_string())]));
        }
        out.push((self.end_q.clone(), SINK.into(), (0..FAN).map(|i| (self.mid_q.clone(), child(i))).collect()));
        for cb in [ON_SUCCESS, ON_COMPLETE] {
            out.push((self.end_q.clone(), cb.into(), vec![(String::new(), self.batch.clone())]));
        }
        out
    }

    async fn register(&self, c: &mut pb::agent_service_client::AgentServiceClient<Channel>) {
        register(c, &self.root_q, vec![one_shot(ROOT)]).await;
        let members = (0..FAN).map(|i| after(&child(i), &self.root_q, [ROOT.to_string()])).collect();
        let req = pb::RegisterBatchRequest {
            batch: self.batch.clone(),
            queue: self.mid_q.clone(),
            agents: members,
            callback_queue: self.end_q.clone(),
            on_success: vec![one_shot(ON_SUCCESS)],
            on_complete: vec![one_shot(ON_COMPLETE)],
            close: true,
        };
        c.register_batch(req).await.expect("register the batch");
        register(c, &self.end_q, vec![after(SINK, &self.mid_q, (0..FAN).map(child))]).await;
    }
}

/// Where workers send their calls: `routes[current]`; the test moves `current` on once it has
/// killed the replica behind it.
struct Route {
    channels: Vec<Channel>,
    current: AtomicUsize,
}

impl Route {
    fn client(&self) -> pb::agent_service_client::AgentServiceClient<Channel> {
        pb::agent_service_client::AgentServiceClient::new(self.channels[self.current.load(Ordering::SeqCst)].clone())
    }
}

/// What the workers saw.
#[derive(Default)]
struct Seen {
    /// (token, attempt) of each grant, per agent.
    grants: HashMap<String, Vec<(u64, u32)>>,
    /// The token of the acknowledged SUCCESS Complete, per agent.
    acked: HashMap<String, u64>,
    /// Mid-level completions acknowledged (the moment to kill a replica).
    mid_done: usize,
    /// Calls tried again after UNAVAILABLE or a broken connection.
    retried: u64,
    /// Broken invariants and unexpected errors.
    violations: Vec<String>,
}

/// Calls `call` on the route's current replica until it answers something other than
/// UNAVAILABLE or a broken connection (at most 90 s): a replica was killed, or Redis is failing
/// over. A short pause between tries, as any client's backoff.
async fn retry<T, F, Fut>(route: &Route, seen: &Mutex<Seen>, mut call: F) -> Result<T, tonic::Status>
where
    F: FnMut(pb::agent_service_client::AgentServiceClient<Channel>) -> Fut,
    Fut: std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
{
    let end = Instant::now() + Duration::from_secs(90);
    loop {
        match call(route.client()).await {
            Ok(r) => return Ok(r.into_inner()),
            Err(e)
                if matches!(e.code(), Code::Unavailable | Code::Unknown | Code::Cancelled) && Instant::now() < end =>
            {
                seen.lock().unwrap().retried += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Works `queue` until every one of `names` succeeded (or 120 s): each lease's parents are
/// checked against `parents`, and each is completed with its own name as result.
async fn work(
    route: Arc<Route>,
    seen: Arc<Mutex<Seen>>,
    queue: String,
    worker: String,
    expected: Arc<HashMap<String, Vec<Ref>>>,
    names: usize,
    mid_q: String,
) {
    let end = Instant::now() + Duration::from_secs(120);
    while Instant::now() < end {
        let done = {
            let s = seen.lock().unwrap();
            expected_in(&expected, &queue, &s) >= names
        };
        if done {
            return;
        }
        let req =
            pb::AcquireRequest { queue: queue.clone(), worker_id: worker.clone(), max_leases: 50, wait: dur(500) };
        let leases = match retry(&route, &seen, |mut c| {
            let req = req.clone();
            async move { c.acquire(req).await }
        })
        .await
        {
            Ok(r) => r.leases,
            Err(e) => {
                seen.lock().unwrap().violations.push(format!("acquire {queue}: {e}"));
                return;
            }
        };
        for lease in leases {
            check_parents(&lease, &expected, &seen);
            seen.lock().unwrap().grants.entry(lease.name.clone()).or_default().push((lease.token, lease.attempt));
            let req = pb::CompleteRequest {
                request_id: format!("{}-{}-{}", lease.queue, lease.name, lease.token),
                result: lease.name.clone().into_bytes(),
                ..complete_req(&lease, pb::Outcome::Success)
            };
            let answer = retry(&route, &seen, |mut c| {
                let req = req.clone();
                async move { c.complete(req).await }
            })
            .await;
            let mut s = seen.lock().unwrap();
            match answer {
                Ok(_) => {
                    if let Some(first) = s.acked.insert(lease.name.clone(), lease.token) {
                        s.violations
                            .push(format!("{} succeeded twice: tokens {first} and {}", lease.name, lease.token));
                    }
                    if lease.queue == mid_q {
                        s.mid_done += 1;
                    }
                }
                // Held by a killed worker process before, or granted by an Acquire whose answer
                // was lost: another run of it completed first.
                Err(e) if reason(&e) == "LEASE_LOST" => {}
                Err(e) => s.violations.push(format!("complete {}: {e}", lease.name)),
            }
        }
    }
    seen.lock().unwrap().violations.push(format!("{queue}: not every agent succeeded within 120 s"));
}

/// How many agents of `queue` were acknowledged as succeeded.
fn expected_in(expected: &HashMap<String, Vec<Ref>>, queue: &str, s: &Seen) -> usize {
    s.acked.keys().filter(|n| expected.contains_key(&format!("{queue}|{n}"))).count()
}

/// The lease lists every parent it must have, each succeeded with its own name as result.
fn check_parents(lease: &pb::Lease, expected: &HashMap<String, Vec<Ref>>, seen: &Mutex<Seen>) {
    let want = &expected[&format!("{}|{}", lease.queue, lease.name)];
    let mut got: Vec<(String, String)> = Vec::new();
    let mut bad = Vec::new();
    for p in &lease.parents {
        got.push((p.queue.clone(), p.name.clone()));
        let batch = p.queue.is_empty();
        if p.finish != pb::Finish::Succeeded as i32 || (!batch && p.result != p.name.as_bytes()) {
            bad.push(format!("{}|{} finish {} result {:?}", p.queue, p.name, p.finish, p.result));
        }
    }
    got.sort();
    let mut want = want.clone();
    want.sort();
    if got != want || !bad.is_empty() {
        let mut s = seen.lock().unwrap();
        s.violations.push(format!(
            "{} granted early: {} of {} parents listed, not succeeded: {:?}",
            lease.name,
            got.len(),
            want.len(),
            &bad[..bad.len().min(3)]
        ));
    }
}

/// Starts one worker task per queue level (three on the children's queue).
fn start_workers(dag: &Dag, route: &Arc<Route>, seen: &Arc<Mutex<Seen>>) -> Vec<tokio::task::JoinHandle<()>> {
    let expected: HashMap<String, Vec<Ref>> =
        dag.agents().into_iter().map(|(q, n, parents)| (format!("{q}|{n}"), parents)).collect();
    let expected = Arc::new(expected);
    let mut tasks = Vec::new();
    for (i, (queue, names)) in
        [(&dag.mid_q, FAN), (&dag.mid_q, FAN), (&dag.mid_q, FAN), (&dag.end_q, 3)].into_iter().enumerate()
    {
        tasks.push(tokio::spawn(work(
            route.clone(),
            seen.clone(),
            queue.clone(),
            format!("w{i}"),
            expected.clone(),
            names,
            dag.mid_q.clone(),
        )));
    }
    tasks
}

/// The checks at the end of a run; returns the figures to print.
async fn check_the_end(dag: &Dag, seen: &Seen, c: &mut pb::agent_service_client::AgentServiceClient<Channel>) {
    assert!(
        seen.violations.is_empty(),
        "{} violations: {:?}",
        seen.violations.len(),
        &seen.violations[..seen.violations.len().min(5)]
    );
    let agents = dag.agents();
    assert_eq!(seen.acked.len(), agents.len(), "every agent succeeded once");
    for name in [ROOT, SINK, ON_SUCCESS, ON_COMPLETE] {
        assert_eq!(seen.grants[name].len(), 1, "{name} was granted exactly once");
    }
    // What Baton kept is the acknowledged run, with its result.
    for (queue, name, _) in &agents {
        let req = pb::AwaitRequest { queue: queue.clone(), name: name.clone(), ..Default::default() };
        let r = c.r#await(req).await.unwrap().into_inner();
        let r = r.result.unwrap_or_else(|| panic!("{queue}|{name} has a finish kept"));
        assert_eq!(r.finish, pb::Finish::Succeeded as i32, "{name}");
        assert_eq!(
            (r.token, r.result.as_slice()),
            (seen.acked[name], name.as_bytes()),
            "{name}: the kept finish is the acknowledged run"
        );
    }
    let b = c.get_batch(pb::GetBatchRequest { batch: dag.batch.clone() }).await.unwrap().into_inner().status.unwrap();
    assert_eq!((b.total, b.pending, b.succeeded, b.failed, b.done), (FAN as u32, 0, FAN as u32, 0, true));
}

/// The queues' flow keys that hold what is in flight (outbox entries, children not yet
/// attached, blocked agents), with the command that counts each: all empty at the end.
fn in_flight_keys(dag: &Dag) -> Vec<(String, redis::Cmd)> {
    let mut out = Vec::new();
    for q in [&dag.root_q, &dag.mid_q, &dag.end_q] {
        for (key, count) in [("outbox", "ZCARD"), ("unattached", "ZCARD"), ("pending", "HLEN")] {
            let key = format!("baton:{{q:{q}}}:{key}");
            let mut cmd = redis::cmd(count);
            cmd.arg(&key);
            out.push((key, cmd));
        }
    }
    out
}

/// `baton-worker` processes that take leases of `queue` and never finish them; returns them
/// with the (name, token) of each lease once they hold `leases` in total.
fn spawn_stuck_workers(
    addr: &str,
    queue: &str,
    count: usize,
    leases: usize,
) -> (Vec<std::process::Child>, Vec<(String, u64)>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let mut children = Vec::new();
    for i in 0..count {
        let mut worker = Command::new(env!("CARGO_BIN_EXE_baton-worker"))
            .args(["--addr", addr, "--queue", queue, "--worker-id", &format!("doomed-{i}")])
            .args(["--max-leases", &(leases / count).to_string(), "--work-ms", "600000", "--heartbeat-ms", "200"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = worker.stdout.take().unwrap();
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let v: serde_json::Value = serde_json::from_str(&line).unwrap();
                if v["event"] == "acquired" {
                    let _ = tx.send((v["name"].as_str().unwrap().to_string(), v["token"].as_u64().unwrap()));
                }
            }
        });
        children.push(worker);
    }
    let mut held = Vec::new();
    while held.len() < leases {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(lease) => held.push(lease),
            Err(_) => panic!("the worker processes hold {} of {leases} leases after 60 s", held.len()),
        }
    }
    (children, held)
}

fn fast_sweeps(config: &mut baton::config::Config) {
    config.flows.sweep_interval_ms = 300;
    config.orphan_cleanup.threshold_ms = 1_000;
    config.orphan_cleanup.interval_ms = 200;
    config.orphan_cleanup.leadership_ttl_ms = 1_000;
}

const FAST_SWEEPS_ENV: [(&str, &str); 4] = [
    ("BATON_FLOWS__SWEEP_INTERVAL_MS", "300"),
    ("BATON_ORPHAN_CLEANUP__THRESHOLD_MS", "1000"),
    ("BATON_ORPHAN_CLEANUP__INTERVAL_MS", "200"),
    ("BATON_ORPHAN_CLEANUP__LEADERSHIP_TTL_MS", "1000"),
];

fn doomed_replica(redis_url: &str) -> BatonProcess {
    BatonProcess::spawn(|cmd| {
        cmd.args(["--redis-url", redis_url]).envs(FAST_SWEEPS_ENV);
    })
}

// One Redis, three Baton replicas. The first is SIGKILLed right after it acknowledged the
// root's completion (its release of 1,000 children may be half done: the others' flows sweep
// finishes it); two worker processes holding 40 children are SIGKILLed; the second replica is
// SIGKILLed after 400 children succeeded through it, while their releases to the fan-in agent
// and the batch are in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dag_survives_killed_workers_and_killed_replicas() {
    let redis = TestRedis::start().await;
    let mut config = test_config();
    fast_sweeps(&mut config);
    let survivor = TestBaton::start(&redis.url(), config).await;
    let mut first = doomed_replica(&redis.url());
    let mut second = doomed_replica(&redis.url());
    let dag =
        Dag { root_q: "dag-root".into(), mid_q: "dag-mid".into(), end_q: "dag-end".into(), batch: "nightly".into() };
    let mut via_first = pb::agent_service_client::AgentServiceClient::new(first.channel().await);
    dag.register(&mut via_first).await;

    // The root, through the first replica, which dies as soon as it acknowledged the completion.
    let root = acquire(&mut via_first, &dag.root_q, "w-root", 1).await.pop().expect("the root is due");
    assert!(root.parents.is_empty());
    let req = pb::CompleteRequest { result: ROOT.into(), ..complete_req(&root, pb::Outcome::Success) };
    via_first.complete(req).await.unwrap();
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    let mut conn = redis.conn().await;
    let outbox: i64 = redis::cmd("ZCARD").arg("baton:{q:dag-root}:outbox").query_async(&mut conn).await.unwrap();

    // Two worker processes take 40 children and are SIGKILLed holding them.
    let (workers, stuck) = spawn_stuck_workers(&format!("http://{}", survivor.addr), &dag.mid_q, 2, 40);
    for mut w in workers {
        w.kill().unwrap();
        w.wait().unwrap();
    }

    // Workers through the second replica, until it is killed after 400 children succeeded.
    let route = Arc::new(Route { channels: vec![second.channel().await, survivor.channel().await], current: 0.into() });
    let seen = Arc::new(Mutex::new(Seen::default()));
    seen.lock().unwrap().acked.insert(ROOT.into(), root.token);
    seen.lock().unwrap().grants.insert(ROOT.into(), vec![(root.token, root.attempt)]);
    let tasks = start_workers(&dag, &route, &seen);
    until("400 children succeeded", Duration::from_secs(120), || {
        let seen = seen.clone();
        async move { seen.lock().unwrap().mid_done >= 400 }
    })
    .await;
    second.child.kill().unwrap();
    second.child.wait().unwrap();
    let killed_at = seen.lock().unwrap().mid_done;
    route.current.store(1, Ordering::SeqCst);
    for t in tasks {
        t.await.unwrap();
    }

    let mut c = survivor.agents().await;
    // The killed workers' late Completes are refused.
    for (name, token) in &stuck {
        let late = pb::CompleteRequest {
            queue: dag.mid_q.clone(),
            name: name.clone(),
            token: *token,
            outcome: pb::Outcome::Success as i32,
            ..Default::default()
        };
        let e = c.complete(late).await.unwrap_err();
        assert_eq!(reason(&e), "LEASE_LOST", "{name}: {e}");
    }
    let s = std::mem::take(&mut *seen.lock().unwrap());
    for (name, token) in &stuck {
        let again = &s.grants[name];
        assert!(
            again.iter().all(|(t, attempt)| t > token && *attempt >= 2),
            "{name}, held by a killed worker, ran again: {again:?}"
        );
    }
    check_the_end(&dag, &s, &mut c).await;
    for (key, count) in in_flight_keys(&dag) {
        let n: i64 = count.query_async(&mut conn).await.unwrap();
        assert_eq!(n, 0, "{key} is empty at the end");
    }
    let twice = s.grants.values().filter(|t| t.len() > 1).count();
    println!(
        "dag faults (one Redis): {} agents, each succeeded once; replica 1 killed after the root (outbox left: {outbox} \
         entry); 2 worker processes killed holding {} children (late Completes refused: {}); replica 2 killed after \
         {killed_at} of {FAN} children; calls retried {}; agents granted more than once {twice}; the fan-in and both \
         callbacks granted once",
        s.acked.len(),
        stuck.len(),
        stuck.len(),
        s.retried,
    );
    survivor.stop().await.unwrap();
}

// A 3+3 Redis Cluster with redis.min_replicas_ack = 1: the primary of the children's queue is
// SIGKILLed after 400 children succeeded; its replica is promoted and the DAG finishes with
// every invariant kept. The root, the children, the fan-in agent and the batch live in
// different slots (the children and the fan-in agent on different primaries), so each release
// crosses slots.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dag_survives_a_primary_failover_with_min_replicas_ack() {
    let mut cluster = TestCluster::start(3, 1).await;
    let mut config = test_config();
    fast_sweeps(&mut config);
    config.redis.min_replicas_ack = 1;
    let baton = TestBaton::start(&cluster.url(), config).await;
    // A children's queue on another primary than the fan-in agent's.
    let end_q = "fo-end".to_string();
    let end_primary = cluster.primary_of(&format!("baton:{{q:{end_q}}}:defs")).await;
    let mut mid_q = String::new();
    for i in 0.. {
        let q = format!("fo-mid{i}");
        if cluster.primary_of(&format!("baton:{{q:{q}}}:defs")).await != end_primary {
            mid_q = q;
            break;
        }
    }
    let dag = Dag { root_q: "fo-root".into(), mid_q: mid_q.clone(), end_q, batch: "fo-batch".into() };
    let route = Arc::new(Route { channels: vec![baton.channel().await], current: 0.into() });
    let seen = Arc::new(Mutex::new(Seen::default()));
    dag.register(&mut route.client()).await;
    let mut c = route.client();
    let root = acquire(&mut c, &dag.root_q, "w-root", 1).await.pop().expect("the root is due");
    let req = pb::CompleteRequest { result: ROOT.into(), ..complete_req(&root, pb::Outcome::Success) };
    c.complete(req).await.unwrap();
    seen.lock().unwrap().acked.insert(ROOT.into(), root.token);
    seen.lock().unwrap().grants.insert(ROOT.into(), vec![(root.token, root.attempt)]);

    let tasks = start_workers(&dag, &route, &seen);
    until("400 children succeeded", Duration::from_secs(120), || {
        let seen = seen.clone();
        async move { seen.lock().unwrap().mid_done >= 400 }
    })
    .await;
    let key = format!("baton:{{q:{mid_q}}}:defs");
    let victim = cluster.primary_of(&key).await;
    cluster.nodes[victim].kill().await;
    let killed = Instant::now();
    until("a replica is promoted", Duration::from_secs(60), || async {
        let info: String = cluster.any().cmd(redis::cmd("CLUSTER").arg("INFO")).await.unwrap_or_default();
        info.contains("cluster_state:ok") && cluster.primary_of(&key).await != victim
    })
    .await;
    let promoted = killed.elapsed();
    // It rejoins as a replica, so its shard can acknowledge writes again (min_replicas_ack).
    let dir = cluster.dir.path().to_path_buf();
    cluster.nodes[victim].restart(&dir).await;
    cluster.wait_healthy().await;
    for t in tasks {
        t.await.unwrap();
    }
    let s = std::mem::take(&mut *seen.lock().unwrap());
    check_the_end(&dag, &s, &mut c).await;
    for (key, count) in in_flight_keys(&dag) {
        let n: i64 = cluster.nodes[cluster.primary_of(&key).await].cmd(&count).await.unwrap();
        assert_eq!(n, 0, "{key} is empty at the end");
    }
    let twice = s.grants.values().filter(|t| t.len() > 1).count();
    println!(
        "dag faults (3+3 cluster, min_replicas_ack=1): {} agents, each succeeded once; primary of {mid_q} killed \
         after 400 of {FAN} children, replica promoted after {} ms; calls retried {}; agents granted more than once \
         {twice}; the fan-in and both callbacks granted once",
        s.acked.len(),
        promoted.as_millis(),
        s.retried,
    );
    baton.stop().await.unwrap();
}

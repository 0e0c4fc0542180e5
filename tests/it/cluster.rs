//! Baton beyond one Redis node: the same scenarios on one node and on a real Redis Cluster
//! (3 primaries, 3 replicas, made by `redis-cli --cluster create`), then the cluster's faults.

use crate::common;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use common::{
    agent,
    cluster::{until, TestCluster},
    pb::{self, agent_service_client::AgentServiceClient},
    scenarios::{self, Probe},
    test_config, TestBaton, TestRedis,
};
use tonic::transport::Channel;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenarios_on_one_node() {
    let redis = TestRedis::start().await;
    let baton = TestBaton::start(&redis.url(), test_config()).await;
    scenarios::all(baton.channel().await, "one", &Probe::node(&redis.url())).await;
    baton.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenarios_on_a_cluster() {
    let cluster = TestCluster::start(3, 1).await;
    let baton = TestBaton::start(&cluster.url(), test_config()).await;
    let probe = Probe::cluster(&cluster);
    scenarios::all(baton.channel().await, "cl", &probe).await;
    // The names really spread: every primary holds some of them.
    let mut primaries = std::collections::BTreeSet::new();
    for q in 0..6 {
        primaries.insert(cluster.primary_of(&format!("baton:{{q:cl-q{q}}}:defs")).await);
    }
    assert!(primaries.len() >= 2, "the scenario's queues live on {} primaries", primaries.len());
    // Every node forgets the function library (as a node replaced or added by resharding would
    // not have it; a replica forgets it with its primary): a missing function on any node makes
    // Baton load the library again and retry.
    for node in &cluster.nodes {
        let role: Vec<redis::Value> = node.cmd(&redis::cmd("ROLE")).await.unwrap();
        if matches!(&role[0], redis::Value::BulkString(r) if r == b"master") {
            let _: String = node.cmd(redis::cmd("FUNCTION").arg("FLUSH")).await.unwrap();
        }
    }
    scenarios::agents(baton.channel().await, "cl-flushed", &probe).await;
    baton.stop().await.unwrap();
}

/// What a load run saw.
#[derive(Debug, Default)]
struct Load {
    /// Grants per agent.
    grants: HashMap<String, u32>,
    /// Completes acknowledged.
    completed: u64,
    /// Calls that failed and were retried (UNAVAILABLE: failover, TRYAGAIN, breaker).
    retried: u64,
    /// Completes refused as LEASE_LOST (the grant they ended was lost).
    lease_lost: u64,
    /// Any other error, as text.
    errors: Vec<String>,
    /// Acquires that gave up (60 s of UNAVAILABLE, or another error), by code and message.
    acquire_failed: Vec<String>,
    /// Acquires answered with no lease.
    empty: u64,
    /// Agents granted so far, every 5 s.
    timeline: Vec<usize>,
    /// Every UNAVAILABLE retried, by message with digits blanked out, and how often.
    unavailable: std::collections::BTreeMap<String, u64>,
}

impl Load {
    fn twice(&self) -> usize {
        self.grants.values().filter(|n| **n > 1).count()
    }
}

/// Registers `agents` hourly agents on `queue` (retrying UNAVAILABLE), then lets `workers`
/// Acquire and Complete until every agent was granted once, or `limit`. An agent completed with
/// SUCCESS is not due again for an hour, so one granted twice means a grant or a completion
/// was lost, or a lease was handed out twice.
async fn load(
    channel: Channel,
    queue: String,
    agents: usize,
    workers: usize,
    limit: Duration,
    stats: Arc<Mutex<Load>>,
) {
    let c = AgentServiceClient::new(channel.clone());
    for chunk in (0..agents).collect::<Vec<_>>().chunks(100) {
        // A 20 s lease: a grant whose answer was lost (UNAVAILABLE after the change) comes back
        // within the run; far above any failover, so no lease times out while its worker waits.
        let batch: Vec<pb::Agent> = chunk.iter().map(|i| agent(&format!("a{i}"), 3_600_000, 20_000)).collect();
        let req = pb::RegisterRequest {
            request_id: String::new(),
            queue: queue.clone(),
            agents: batch,
            reset_schedule: false,
        };
        retry(&stats, || {
            let (mut c, req) = (c.clone(), req.clone());
            async move { c.register(req).await }
        })
        .await
        .expect("register");
    }
    let end = Instant::now() + limit;
    let mut tasks = Vec::new();
    for w in 0..workers {
        let (stats, queue, channel) = (stats.clone(), queue.clone(), channel.clone());
        tasks.push(tokio::spawn(async move {
            let c = AgentServiceClient::new(channel);
            while Instant::now() < end && stats.lock().unwrap().grants.len() < agents {
                let req =
                    pb::AcquireRequest { queue: queue.clone(), worker_id: format!("w{w}"), max_leases: 10, wait: None };
                let acquire = || {
                    let (mut c, req) = (c.clone(), req.clone());
                    async move { c.acquire(req).await }
                };
                let got = match retry(&stats, acquire).await {
                    Ok(got) => got,
                    Err(e) => {
                        stats.lock().unwrap().acquire_failed.push(format!("{:?} {}", e.code(), e.message()));
                        continue;
                    }
                };
                if got.leases.is_empty() {
                    stats.lock().unwrap().empty += 1;
                }
                for lease in got.leases {
                    *stats.lock().unwrap().grants.entry(lease.name.clone()).or_default() += 1;
                    let complete = || {
                        let (mut c, req) = (c.clone(), common::complete_req(&lease, pb::Outcome::Success));
                        async move { c.complete(req).await }
                    };
                    let done = retry(&stats, complete).await;
                    let mut s = stats.lock().unwrap();
                    match done {
                        Ok(_) => s.completed += 1,
                        Err(e) if common::reason(&e) == "LEASE_LOST" => s.lease_lost += 1,
                        Err(e) => s.errors.push(e.to_string()),
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

/// Calls `call` until it answers something other than UNAVAILABLE (counted as retried), at
/// most 60 s. A short pause between tries: Redis is failing over or moving slots.
async fn retry<T, F, Fut>(stats: &Mutex<Load>, mut call: F) -> Result<T, tonic::Status>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
{
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        match call().await {
            Ok(r) => return Ok(r.into_inner()),
            Err(e) if e.code() == tonic::Code::Unavailable && Instant::now() < end => {
                let shape: String = e.message().chars().map(|c| if c.is_ascii_digit() { '#' } else { c }).collect();
                {
                    let mut s = stats.lock().unwrap();
                    s.retried += 1;
                    *s.unavailable.entry(shape).or_default() += 1;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => {
                assert!(!e.message().contains("CROSSSLOT"), "CROSSSLOT: {e}");
                return Err(e);
            }
        }
    }
}

/// Kills the primary of `queue` once `after` agents were granted, waits for its replica's
/// promotion, and starts it again (it rejoins as a replica). Returns how long the slot had no
/// primary as the cluster saw it.
async fn fail_over_under_load(
    cluster: &mut TestCluster,
    queue: &str,
    stats: Arc<Mutex<Load>>,
    after: usize,
) -> Duration {
    let key = format!("baton:{{q:{queue}}}:defs");
    let victim = cluster.primary_of(&key).await;
    until("the load to get going", Duration::from_secs(60), || {
        let stats = stats.clone();
        async move { stats.lock().unwrap().grants.len() >= after }
    })
    .await;
    cluster.nodes[victim].kill().await;
    let killed = Instant::now();
    until("a replica is promoted", Duration::from_secs(60), || async {
        let info: String = cluster.any().cmd(redis::cmd("CLUSTER").arg("INFO")).await.unwrap_or_default();
        info.contains("cluster_state:ok") && cluster.primary_of(&key).await != victim
    })
    .await;
    let promoted = killed.elapsed();
    let dir = cluster.dir.path().to_path_buf();
    cluster.nodes[victim].restart(&dir).await;
    cluster.wait_healthy().await;
    promoted
}

// A primary SIGKILLed under load: its replica is promoted, Baton follows by itself (MOVED,
// refreshed slots) and the work goes on. Redis replicates asynchronously, so by default a
// failover may lose the last acknowledged changes of that shard (here: grants and completions,
// seen as agents granted twice); with redis.min_replicas_ack = 1 nothing acknowledged is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_under_load_recovers_by_itself_and_loses_nothing_acknowledged_with_min_replicas_ack() {
    let mut cluster = TestCluster::start(3, 1).await;
    let mut figures = Vec::new();
    for (phase, ack) in [("async", 0), ("wait", 1)] {
        let mut config = test_config();
        config.redis.min_replicas_ack = ack;
        let baton = TestBaton::start(&cluster.url(), config).await;
        let queue = format!("fo-{phase}");
        let stats = Arc::new(Mutex::new(Load::default()));
        let run =
            tokio::spawn(load(baton.channel().await, queue.clone(), 3_000, 4, Duration::from_secs(120), stats.clone()));
        // Grants every 5 s, for the failure message.
        let timeline = {
            let stats = stats.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    let mut s = stats.lock().unwrap();
                    let granted = s.grants.len();
                    s.timeline.push(granted);
                }
            })
        };
        let promoted = fail_over_under_load(&mut cluster, &queue, stats.clone(), 300).await;
        run.await.unwrap();
        timeline.abort();
        let s = std::mem::take(&mut *stats.lock().unwrap());
        assert!(
            s.errors.is_empty(),
            "{phase}: errors other than UNAVAILABLE: {:?}",
            &s.errors[..s.errors.len().min(5)]
        );
        if s.grants.len() != 3_000 {
            use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};
            let mut health = HealthClient::new(baton.channel().await);
            let status = health.check(HealthCheckRequest { service: String::new() }).await;
            let nodes: String = cluster.any().cmd(redis::cmd("CLUSTER").arg("NODES")).await.unwrap_or_default();
            let mut c = AgentServiceClient::new(baton.channel().await);
            let req = pb::AcquireRequest { queue: queue.clone(), worker_id: "late".into(), max_leases: 10, wait: None };
            let late = c.acquire(req).await.map(|r| r.into_inner().leases.len());
            panic!(
                "{phase}: {} of 3000 granted (promotion after {} ms); acquires failed {} (first {:?}), empty {}, \
                 retried {} {:?}, completed {}; granted every 5 s {:?}; an Acquire now: {late:?}; health {status:?}; cluster:\n{nodes}",
                s.grants.len(),
                promoted.as_millis(),
                s.acquire_failed.len(),
                s.acquire_failed.first(),
                s.empty,
                s.retried,
                s.unavailable,
                s.completed,
                s.timeline,
            );
        }
        figures.push(format!(
            "{phase}: min_replicas_ack={ack}: granted twice {} of 3000, LEASE_LOST {}, retried {}, completed {}, promotion after {} ms",
            s.twice(), s.lease_lost, s.retried, s.completed, promoted.as_millis()
        ));
        if ack > 0 {
            assert_eq!(s.twice(), 0, "{phase}: with min_replicas_ack a failover loses no acknowledged grant");
        }
        baton.stop().await.unwrap();
    }
    println!("cluster failover figures:\n  {}", figures.join("\n  "));
}

// Resharding under load: every slot of a busy queue's primary moves to another primary
// (`redis-cli --cluster reshard`) while workers Acquire and Complete. Scripts meet MOVED, ASK
// and TRYAGAIN (keys of one slot split between two nodes); redis-rs follows them and Baton
// retries what Redis refused. No CROSSSLOT anywhere, nothing acknowledged lost (no LEASE_LOST
// on a Complete), no lease granted twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resharding_a_busy_queue_loses_nothing_and_grants_no_lease_twice() {
    let cluster = TestCluster::start(3, 0).await;
    let baton = TestBaton::start(&cluster.url(), test_config()).await;
    let queue = "rs".to_string();
    let key = format!("baton:{{q:{queue}}}:defs");
    let agents = 20_000;
    let stats = Arc::new(Mutex::new(Load::default()));
    let run =
        tokio::spawn(load(baton.channel().await, queue.clone(), agents, 4, Duration::from_secs(240), stats.clone()));
    until("the load to get going", Duration::from_secs(120), || {
        let stats = stats.clone();
        async move { stats.lock().unwrap().grants.len() >= 1_000 }
    })
    .await;
    let from = cluster.primary_of(&key).await;
    let to = (from + 1) % cluster.nodes.len();
    let id = |i: usize| {
        let node = &cluster.nodes[i];
        async move { node.cmd::<String>(redis::cmd("CLUSTER").arg("MYID")).await.unwrap() }
    };
    let (from_id, to_id) = (id(from).await, id(to).await);
    let owned: i64 = {
        let nodes: String = cluster.any().cmd(redis::cmd("CLUSTER").arg("NODES")).await.unwrap();
        let line = nodes.lines().find(|l| l.starts_with(&from_id)).unwrap().to_string();
        line.split(' ')
            .skip(8)
            .map(|range| match range.split_once('-') {
                Some((a, b)) => b.parse::<i64>().unwrap() - a.parse::<i64>().unwrap() + 1,
                None => 1,
            })
            .sum()
    };
    let mut reshard = std::process::Command::new("redis-cli");
    reshard.args(["--cluster", "reshard", &format!("127.0.0.1:{}", cluster.nodes[to].port)]);
    reshard.args(["--cluster-from", &from_id, "--cluster-to", &to_id, "--cluster-slots", &owned.to_string()]);
    reshard.args(["--cluster-yes", "--cluster-pipeline", "10"]);
    let out = tokio::task::spawn_blocking(move || reshard.output()).await.unwrap().unwrap();
    assert!(out.status.success(), "reshard: {}", String::from_utf8_lossy(&out.stdout));
    let granted_during = stats.lock().unwrap().grants.len();
    run.await.unwrap();
    assert_eq!(cluster.primary_of(&key).await, to, "the queue's slot moved");
    let s = std::mem::take(&mut *stats.lock().unwrap());
    println!(
        "resharding {owned} slots under load: granted {} ({granted_during} by the end of the move), twice {}, \
         LEASE_LOST {}, retried {}, completed {}",
        s.grants.len(),
        s.twice(),
        s.lease_lost,
        s.retried,
        s.completed
    );
    assert!(s.errors.is_empty(), "errors: {:?}", &s.errors[..s.errors.len().min(5)]);
    assert_eq!(s.grants.len(), agents, "every agent was granted");
    assert_eq!(s.twice(), 0, "no lease granted twice");
    assert_eq!(s.lease_lost, 0, "no acknowledged grant lost");
    baton.stop().await.unwrap();
}

// Started before its cluster exists (the nodes run, `redis-cli --cluster create` has not), Baton
// keeps trying instead of exiting (ClusterConnectionNotFound, CLUSTERDOWN while the nodes agree)
// and serves once the cluster settles, in every slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn baton_started_before_its_cluster_is_created_waits_for_it_and_serves() {
    let cluster = TestCluster::launch(3).await;
    let connections = || async {
        let mut total = 0;
        for node in &cluster.nodes {
            let info: String = node.cmd(redis::cmd("INFO").arg("stats")).await.unwrap_or_default();
            let seen = info.lines().find_map(|l| l.strip_prefix("total_connections_received:"));
            total += seen.and_then(|n| n.trim().parse::<u64>().ok()).unwrap_or(0);
        }
        total
    };
    let before = connections().await;
    let baton = TestBaton::start(&cluster.url(), test_config()).await;
    // Our own INFO connections count too: wait for more than those.
    until("Baton tries the nodes", Duration::from_secs(30), || async { connections().await > before + 3 }).await;
    assert!(baton.running(), "Baton gave up on a cluster that is not created yet");
    cluster.create(0).await;
    assert!(baton.running(), "Baton gave up while the cluster was being created");
    serves_in_every_slot(&baton).await;
    baton.stop().await.unwrap();
}

// Started while no Redis answers at its address yet — each seed accepts a connection and drops
// it, as a node starting or a proxy in front of one does — Baton retries (bounded by
// `redis.startup_timeout_ms`) instead of exiting at the first failure, for a cluster and for a
// single node, and serves once Redis is up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn baton_started_before_redis_answers_retries_until_it_does() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    /// Listens on each node's port in its place, counting the connections it drops.
    async fn stand_in(nodes: &[common::cluster::Node]) -> (Arc<AtomicUsize>, Vec<tokio::task::JoinHandle<()>>) {
        let tries = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for node in nodes {
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", node.port)).await.expect("the node's port");
            let tries = tries.clone();
            tasks.push(tokio::spawn(async move {
                while let Ok((socket, _)) = listener.accept().await {
                    tries.fetch_add(1, Ordering::SeqCst);
                    drop(socket);
                }
            }));
        }
        (tries, tasks)
    }
    for form in ["cluster", "node"] {
        let mut cluster = TestCluster::launch(if form == "cluster" { 3 } else { 0 }).await;
        let url = if form == "cluster" {
            cluster.url()
        } else {
            cluster
                .nodes
                .push(common::cluster::Node::start(cluster.dir.path(), &common::cluster::plain_args(), false).await);
            cluster.nodes[0].url()
        };
        for node in &mut cluster.nodes {
            node.kill().await;
        }
        let (tries, listeners) = stand_in(&cluster.nodes).await;
        let baton = TestBaton::start(&url, test_config()).await;
        until("Baton tries again and again", Duration::from_secs(60), || async {
            tries.load(Ordering::SeqCst) >= 6 || !baton.running()
        })
        .await;
        assert!(baton.running(), "{form}: Baton gave up on a Redis that does not answer yet");
        for listener in listeners {
            listener.abort();
            let _ = listener.await;
        }
        for node in &mut cluster.nodes {
            node.restart(cluster.dir.path()).await;
        }
        if form == "cluster" {
            cluster.create(0).await;
        }
        serves_in_every_slot(&baton).await;
        baton.stop().await.unwrap();
    }
}

/// Registers and acquires on six queues (their slots spread over a cluster's primaries),
/// retrying UNAVAILABLE for up to a minute while the cluster settles.
async fn serves_in_every_slot(baton: &TestBaton) {
    let mut c = AgentServiceClient::new(baton.channel().await);
    for q in 0..6 {
        let queue = format!("late-{q}");
        let registered = Instant::now();
        loop {
            let req = pb::RegisterRequest {
                queue: queue.clone(),
                agents: vec![agent("a", 3_600_000, 60_000)],
                reset_schedule: false,
                request_id: String::new(),
            };
            match c.register(req).await {
                Ok(_) => break,
                Err(e) if e.code() == tonic::Code::Unavailable && registered.elapsed() < Duration::from_secs(60) => {
                    tokio::time::sleep(Duration::from_millis(50)).await
                }
                Err(e) => panic!("register on {queue}: {e:?}"),
            }
        }
        let leases = common::acquire(&mut c, &queue, "w", 1).await;
        assert_eq!(leases.len(), 1, "{queue}");
    }
}

// One primary of three SIGKILLed, no replica to fail over to, the nodes told to serve the slots
// they still cover (`cluster-require-full-coverage no`). Invariants, on a sharded queue `hot=3`
// with a shard on the dead primary:
// - Acquire takes from the shards that answer, from its first call on: every agent of the live
//   shards is granted, none of the dead shard's, and no Acquire fails (a shard that fails is
//   skipped, not fatal);
// - a call that needs the dead node fails fast once its breaker knows: CIRCUIT_OPEN, with the
//   node in ErrorInfo's metadata;
// - the replica stays SERVING (a per-node breaker, not one for all of Redis), and a single-slot
//   queue on a live primary is served as before.
// Run with --nocapture for the times of the calls during the outage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_dead_primary_fails_fast_and_the_other_shards_are_served() {
    use tonic_health::pb::{health_check_response::ServingStatus, health_client::HealthClient, HealthCheckRequest};
    let shard = |name: &str| (crc16::State::<crc16::XMODEM>::calculate(name.as_bytes()) % 3) as usize;
    let mut cluster = TestCluster::start(3, 0).await;
    for node in &cluster.nodes {
        let set = redis::cmd("CONFIG").arg("SET").arg("cluster-require-full-coverage").arg("no").clone();
        let _: () = node.cmd(&set).await.unwrap();
    }
    let mut config = test_config();
    config.sharding.queues = "hot=3".into();
    let baton = TestBaton::start(&cluster.url(), config).await;
    let mut c = baton.agents().await;
    let names: Vec<String> = (0..90).map(|i| format!("a{i:02}")).collect();
    common::register(&mut c, "hot", names.iter().map(|n| agent(n, 3_600_000, 60_000)).collect()).await;
    let mut primary = Vec::new();
    for i in 0..3 {
        primary.push(cluster.primary_of(&format!("baton:{{q:hot#{i}}}:defs")).await);
    }
    let victim = primary[0];
    let live: std::collections::BTreeSet<String> =
        names.iter().filter(|n| primary[shard(n)] != victim).cloned().collect();
    assert!(!live.is_empty(), "every shard of hot is on one primary: {primary:?}");
    let dead = names.iter().find(|n| primary[shard(n)] == victim).unwrap().clone();
    // A plain queue whose slot is on a live primary.
    let mut plain = String::new();
    for i in 0.. {
        plain = format!("calm-{i}");
        if cluster.primary_of(&format!("baton:{{q:{plain}}}:defs")).await != victim {
            break;
        }
    }
    common::register(&mut c, &plain, vec![agent("p", 3_600_000, 60_000)]).await;

    cluster.nodes[victim].kill().await;

    let started = Instant::now();
    let mut granted = std::collections::BTreeSet::new();
    let (mut calls, mut failed) = (Vec::new(), Vec::new());
    while granted.len() < live.len() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{} of {} live agents granted; failures: {failed:?}",
            granted.len(),
            live.len()
        );
        let t = Instant::now();
        let req = pb::AcquireRequest { queue: "hot".into(), worker_id: "w".into(), max_leases: 64, wait: None };
        match c.acquire(req).await {
            Ok(got) => {
                for l in got.into_inner().leases {
                    assert!(live.contains(&l.name), "{} is on the dead primary", l.name);
                    assert!(granted.insert(l.name.clone()), "{} granted twice", l.name);
                }
            }
            Err(e) => failed.push(format!("{:?} {}", e.code(), common::reason(&e))),
        }
        calls.push(t.elapsed());
    }
    println!("acquire on hot=3 with one shard's primary dead: {} calls {calls:?}", calls.len());
    assert!(failed.is_empty(), "Acquire failed while two shards answered: {failed:?}");

    // The dead shard's calls: CIRCUIT_OPEN (fail fast) once the node's breaker tripped.
    let started = Instant::now();
    let mut times = Vec::new();
    let open = loop {
        assert!(started.elapsed() < Duration::from_secs(60), "no CIRCUIT_OPEN for the dead node: {times:?}");
        let t = Instant::now();
        let err = c
            .get_agent(pb::GetAgentRequest { queue: "hot".into(), name: dead.clone() })
            .await
            .expect_err("its shard's primary is dead");
        times.push((t.elapsed(), common::reason(&err)));
        if common::reason(&err) == "CIRCUIT_OPEN" {
            break err;
        }
    };
    let fast = Instant::now();
    for _ in 0..10 {
        let err = c.get_agent(pb::GetAgentRequest { queue: "hot".into(), name: dead.clone() }).await.unwrap_err();
        assert_eq!(common::reason(&err), "CIRCUIT_OPEN", "{err:?}");
    }
    println!("GetAgent on the dead shard until CIRCUIT_OPEN: {times:?}; then 10 calls in {:?}", fast.elapsed());
    use tonic_types::StatusExt;
    let info = open.get_details_error_info().unwrap();
    let port = cluster.nodes[victim].port.to_string();
    assert!(info.metadata.get("node").is_some_and(|n| n.ends_with(&port)), "{info:?}");

    // The rest is served, and the replica stays in rotation.
    assert_eq!(common::acquire(&mut c, &plain, "w", 1).await.len(), 1);
    let mut health = HealthClient::new(baton.channel().await);
    let status = health.check(HealthCheckRequest { service: String::new() }).await.unwrap().into_inner().status;
    assert_eq!(status, ServingStatus::Serving as i32);
    baton.stop().await.unwrap();
}

// While a primary is down, Baton's Redis probe looks at every node every
// `circuit_breaker.probe_interval_ms`. Looking at the dead one must not disturb the cluster
// connection every call shares: a command sent there by address, with no live connection to
// it, made redis-rs drop every connection and reconnect to all the seeds (up to 16 times per
// probe, dozens of times a second), and no call went through while it did. Counted here as
// the connections the live primaries accept while the outage lasts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probing_a_dead_primary_leaves_the_connections_to_the_others_alone() {
    let mut cluster = TestCluster::start(3, 0).await;
    for node in &cluster.nodes {
        let set = redis::cmd("CONFIG").arg("SET").arg("cluster-require-full-coverage").arg("no").clone();
        let _: () = node.cmd(&set).await.unwrap();
    }
    let baton = TestBaton::start(&cluster.url(), test_config()).await;
    serves_in_every_slot(&baton).await;
    /// Connections the nodes accepted so far. Each look opens one of its own (`Node::cmd`).
    async fn accepted(nodes: &[common::cluster::Node]) -> u64 {
        let mut total = 0;
        for node in nodes {
            let info: String = node.cmd(redis::cmd("INFO").arg("stats")).await.unwrap();
            let seen = info.lines().find_map(|l| l.strip_prefix("total_connections_received:"));
            total += seen.and_then(|n| n.trim().parse::<u64>().ok()).unwrap();
        }
        total
    }
    cluster.nodes[0].kill().await;
    let before = accepted(&cluster.nodes[1..]).await;
    // Long enough for the probe to notice (health.probe_interval_ms) and look again a dozen
    // times at circuit_breaker.probe_interval_ms.
    let window = Duration::from_secs(5);
    tokio::time::sleep(window).await;
    let opened = accepted(&cluster.nodes[1..]).await - before - 2;
    println!("connections the 2 live primaries accepted in {window:?} with the third dead: {opened}");
    assert!(
        opened <= 8,
        "{opened} connections to the live primaries in {window:?}: Baton reconnected to the cluster again and again"
    );
    assert!(baton.running());
    baton.stop().await.unwrap();
}

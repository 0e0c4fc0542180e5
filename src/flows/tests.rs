//! Releases a replica left behind: a parent completed by a store with no flows task (what a
//! replica that dies right after its Complete script leaves: the outbox entry written and
//! answered, nothing of that replica running after), and what the other replicas, the flows
//! sweep or a drain of the outbox make of it. Real Redis (`crate::testing::TestRedis`); the
//! surviving replica is a real Baton server on a loopback port, reached through the generated
//! client.

use std::{
    net::SocketAddr,
    sync::Arc,
    time::{Duration, Instant},
};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;

use crate::config::Config;
use crate::pb;
use crate::pb::agent_service_client::AgentServiceClient;
use crate::queues::store::{Completion, Outcome};
use crate::testing::TestRedis;

/// A Baton server on a loopback port over `redis`.
struct Replica {
    addr: SocketAddr,
    shutdown: CancellationToken,
    handle: JoinHandle<crate::error::Result<()>>,
}

impl Replica {
    async fn start(redis: &TestRedis, config: Config) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let (url, stop) = (redis.url(), shutdown.clone());
        let handle =
            tokio::spawn(
                async move { crate::server::run(Arc::new(config), &url, listener, stop.cancelled_owned()).await },
            );
        Self { addr, shutdown, handle }
    }

    async fn agents(&self) -> AgentServiceClient<Channel> {
        let channel = Channel::from_shared(format!("http://{}", self.addr)).unwrap().connect().await.unwrap();
        AgentServiceClient::new(channel)
    }

    async fn stop(self) {
        self.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(15), self.handle).await.expect("stops").unwrap().unwrap();
    }
}

/// No metrics listener, no console, no jitter.
fn config() -> Config {
    let mut config = Config { metrics_listen: String::new(), shutdown_timeout_ms: 5_000, ..Config::default() };
    config.agent.jitter_ratio = 0.0;
    config.console.listen = String::new();
    config
}

/// Stores that leave every release to the outbox (flows.release_inline 0), as a replica does
/// for children past the inline limit or in other queues: what the outbox tests look at.
async fn outbox_only(redis: &TestRedis) -> crate::server::Stores {
    let mut config = config();
    config.flows.release_inline = 0;
    redis.stores_with(&config).await
}

fn dur(ms: u64) -> Option<prost_types::Duration> {
    Some(prost_types::Duration { seconds: (ms / 1000) as i64, nanos: ((ms % 1000) * 1_000_000) as i32 })
}

fn one_shot(name: &str) -> pb::Agent {
    pb::Agent {
        name: name.into(),
        interval: dur(0),
        timeout: dur(30_000),
        error_interval: dur(10_000),
        ..Default::default()
    }
}

fn after(name: &str, parents: &[(&str, &str)]) -> pb::Agent {
    pb::Agent {
        after: parents
            .iter()
            .map(|(q, n)| pb::AgentRef { queue: q.to_string(), name: n.to_string(), ..Default::default() })
            .collect(),
        ..one_shot(name)
    }
}

async fn register(c: &mut AgentServiceClient<Channel>, queue: &str, agents: Vec<pb::Agent>) {
    c.register(pb::RegisterRequest { queue: queue.into(), agents, ..Default::default() }).await.unwrap();
}

/// Acquires with a long poll until `n` leases were granted (or 30 s passed).
async fn acquire_n(c: &mut AgentServiceClient<Channel>, queue: &str, n: usize) -> Vec<pb::Lease> {
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while got.len() < n && Instant::now() < deadline {
        let want = (n - got.len()).min(1000) as u32;
        let req = pb::AcquireRequest { queue: queue.into(), worker_id: "w".into(), max_leases: want, wait: dur(2_000) };
        got.extend(c.acquire(req).await.unwrap().into_inner().leases);
    }
    got
}

/// A SUCCESS Complete of `l`, as the store takes it.
fn success(queue: &str, l: &pb::Lease, result: &[u8]) -> Completion {
    Completion {
        queue: queue.into(),
        name: l.name.clone(),
        token: l.token,
        outcome: Outcome::Success,
        message: String::new(),
        retry_after_ms: 0,
        request_id: String::new(),
        clipped: false,
        result: result.to_vec(),
        wait: None,
    }
}

async fn outbox(conn: &mut redis::aio::MultiplexedConnection, queue: &str) -> usize {
    redis::cmd("ZCARD").arg(format!("baton:{{q:{queue}}}:outbox")).query_async(conn).await.unwrap()
}

// Two replicas on one Redis: the one that answers the parent's Complete dies right after its
// script. The other, told by the script's announcement, releases the child within 2 s on
// default settings (the flows sweep alone: 5 to 10 s).
#[tokio::test]
async fn a_release_left_by_a_replica_that_died_after_answering_comes_within_two_seconds() {
    let redis = TestRedis::start().await;
    let survivor = Replica::start(&redis, config()).await;
    let mut c = survivor.agents().await;
    let mut conn = redis.conn().await;
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, n): (String, i64) =
            redis::cmd("PUBSUB").arg("NUMSUB").arg("baton:flows:outbox").query_async(&mut conn).await.unwrap();
        if n >= 1 {
            break;
        }
        assert!(Instant::now() < until, "the survivor never followed the outbox announcements");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    register(&mut c, "up", vec![one_shot("parent")]).await;
    register(&mut c, "down", vec![after("child", &[("up", "parent")])]).await;
    let p = acquire_n(&mut c, "up", 1).await.pop().expect("the parent is due");

    let dying = redis.stores().await.queues;
    dying.complete(&success("up", &p, b"up")).await.unwrap();
    let answered = Instant::now();
    assert_eq!(outbox(&mut conn, "up").await, 1, "the release is left in the outbox");

    let req = pb::AcquireRequest { queue: "down".into(), worker_id: "w".into(), max_leases: 1, wait: dur(10_000) };
    let child = c.acquire(req).await.unwrap().into_inner().leases.pop().expect("the child is released");
    let waited = answered.elapsed();
    assert_eq!((child.name.as_str(), child.parents[0].result.as_slice()), ("child", &b"up"[..]));
    assert!(waited <= Duration::from_secs(2), "the child waited {waited:?} for a release a dead replica left");
    assert_eq!(outbox(&mut conn, "up").await, 0);
    println!(
        "release left by a replica dead after answering: child granted {} ms after the parent's Complete (defaults)",
        waited.as_millis()
    );
    survivor.stop().await;
}

// With the announcements' takeover off, the flows sweep alone releases what a dead replica
// left in the outbox.
#[tokio::test]
async fn the_sweep_releases_what_a_dead_replica_left_in_the_outbox() {
    let redis = TestRedis::start().await;
    let mut config = config();
    config.flows.sweep_interval_ms = 200;
    config.flows.takeover_ms = 0; // the sweep's part, not the announcements'
    let survivor = Replica::start(&redis, config).await;
    let mut c = survivor.agents().await;
    register(&mut c, "q", vec![one_shot("parent")]).await;
    register(&mut c, "q", vec![after("child", &[("", "parent")])]).await;
    let p = acquire_n(&mut c, "q", 1).await.pop().unwrap();
    outbox_only(&redis).await.queues.complete(&success("q", &p, b"late")).await.unwrap();
    let mut conn = redis.conn().await;
    assert_eq!(outbox(&mut conn, "q").await, 1, "left in the outbox");
    let child = acquire_n(&mut c, "q", 1).await.pop().expect("the sweep released it");
    assert_eq!((child.name.as_str(), child.parents[0].result.as_slice()), ("child", &b"late"[..]));
    assert_eq!(outbox(&mut conn, "q").await, 0);
    survivor.stop().await;
}

/// Script calls Redis has run (FCALL, EVALSHA and EVAL), from INFO commandstats.
async fn script_calls(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(conn).await.unwrap();
    info.lines()
        .filter(|l| ["cmdstat_fcall:", "cmdstat_evalsha:", "cmdstat_eval:"].iter().any(|c| l.starts_with(c)))
        .filter_map(|l| l.split_once("calls=")?.1.split(',').next()?.parse::<u64>().ok())
        .sum()
}

// A fan-in's outbox entries, one per parent, are released many per page: a few script calls
// for 1,200 parents, in one queue and across queues, each child once.
#[tokio::test]
async fn a_fan_in_releases_many_parents_per_page() {
    const FAN: usize = 1_200; // three release pages (500)
    let redis = TestRedis::start().await;
    let mut config = config();
    // The replica's sweep stays out of the way (and out of the count of script calls).
    config.flows.sweep_interval_ms = 600_000;
    config.flows.takeover_ms = 0;
    let replica = Replica::start(&redis, config).await;
    let mut c = replica.agents().await;
    let store = outbox_only(&redis).await;
    let mut conn = redis.conn().await;
    // Parents and child in one queue, then across queues.
    for (pq, cq) in [("fin", "fin"), ("up", "down")] {
        let names: Vec<String> = (0..FAN).map(|i| format!("p-{i:04}")).collect();
        let parents: Vec<pb::Agent> = names.iter().map(|n| one_shot(n)).collect();
        for part in parents.chunks(600) {
            register(&mut c, pq, part.to_vec()).await;
        }
        let refs: Vec<(&str, &str)> = names.iter().map(|n| (pq, n.as_str())).collect();
        register(&mut c, cq, vec![after("child", &refs)]).await;
        let leases = acquire_n(&mut c, pq, FAN).await;
        assert_eq!(leases.len(), FAN);
        // Completed by a store with no flows task: every parent's outbox entry (one child each)
        // is written before any release.
        let completions: Vec<Completion> = leases.iter().map(|l| success(pq, l, l.name.as_bytes())).collect();
        for part in completions.chunks(100) {
            store.queues.complete_batch(part).await.unwrap();
        }
        assert_eq!(outbox(&mut conn, pq).await, FAN, "one outbox entry per parent");

        let before = script_calls(&mut conn).await;
        let handled = store.flows.drain_outbox(pq, None).await.unwrap();
        let calls = script_calls(&mut conn).await - before;
        assert_eq!(handled, FAN);
        // A page gathers up to 500 children across entries: 3 pages, each one script call in
        // one queue and three across queues (one entry per page would be 3 calls per parent,
        // 3,600). The bound leaves room for the replica's own background scripts meanwhile.
        assert!(calls <= 30, "{pq}→{cq}: {calls} script calls to release {FAN} parents");
        assert_eq!(outbox(&mut conn, pq).await, 0, "every entry dropped once released");

        // The child ran once, after all of them, with their results.
        let child = acquire_n(&mut c, cq, 1).await.pop().expect("released by its last parent");
        assert_eq!(child.name, "child");
        assert_eq!(child.parents.len(), FAN);
        assert!(child
            .parents
            .iter()
            .all(|p| p.result == p.name.as_bytes() && p.finish == pb::Finish::Succeeded as i32));
        // A replayed drain finds nothing and changes nothing.
        assert_eq!(store.flows.drain_outbox(pq, None).await.unwrap(), 0);
        let req = pb::CompleteRequest {
            queue: cq.into(),
            name: child.name.clone(),
            token: child.token,
            outcome: pb::Outcome::Success as i32,
            ..Default::default()
        };
        c.complete(req).await.unwrap();
        let poll = pb::AcquireRequest { queue: cq.into(), worker_id: "w".into(), max_leases: 10, wait: None };
        assert!(c.acquire(poll).await.unwrap().into_inner().leases.is_empty(), "the child runs once");
        println!("flows: fan-in of {FAN} parents ({pq}→{cq}) released in {calls} script calls");
    }
    replica.stop().await;
}

// The queue's figures (and so the baton_queue_blocked, baton_queue_releasing and
// baton_queue_oldest_release_seconds gauges) count blocked agents and finishes whose children
// are not yet released; both fall to zero once the release is done.
#[tokio::test]
async fn queue_figures_count_blocked_agents_and_releases_in_flight() {
    let redis = TestRedis::start().await;
    let mut config = config();
    config.flows.sweep_interval_ms = 3_600_000; // no sweep during the test: the release is ours
    config.flows.takeover_ms = 0;
    let replica = Replica::start(&redis, config).await;
    let mut c = replica.agents().await;
    register(&mut c, "g", vec![one_shot("parent")]).await;
    let kids = (0..3).map(|i| after(&format!("kid-{i}"), &[("", "parent")])).collect();
    register(&mut c, "g", kids).await;
    let store = outbox_only(&redis).await;
    let s = store.queues.queue_stats("g", 60_000).await.unwrap();
    assert_eq!((s.blocked, s.releasing, s.oldest_release_ms), (3, 0, None));

    // Completed by a store with no flows task: the finish waits in the outbox.
    let p = acquire_n(&mut c, "g", 1).await.pop().unwrap();
    store.queues.complete(&success("g", &p, b"")).await.unwrap();
    let s = store.queues.queue_stats("g", 60_000).await.unwrap();
    assert_eq!((s.blocked, s.releasing), (3, 1));
    assert!(s.oldest_release_ms.is_some_and(|at| at <= s.now_ms), "{:?}", s.oldest_release_ms);

    assert_eq!(store.flows.drain_outbox("g", None).await.unwrap(), 3);
    let s = store.queues.queue_stats("g", 60_000).await.unwrap();
    assert_eq!((s.blocked, s.releasing, s.oldest_release_ms, s.due), (0, 0, None, 3));
    replica.stop().await;
}

/// Leases due now, without waiting.
async fn due_now(c: &mut AgentServiceClient<Channel>, queue: &str) -> Vec<pb::Lease> {
    let req = pb::AcquireRequest { queue: queue.into(), worker_id: "w".into(), max_leases: 100, wait: None };
    c.acquire(req).await.unwrap().into_inner().leases
}

// Children in their parent's queue are released by the script that records the parent's
// finish, up to flows.release_inline of them: due when the Complete returns, with nothing
// left in the outbox, though no flows task runs (announcements and the sweep are off). The
// children past the limit wait in the outbox for the flows task, which releases them as before.
#[tokio::test]
async fn children_in_the_parents_queue_are_released_by_the_finishing_script() {
    let redis = TestRedis::start().await;
    let mut config = config();
    config.flows.sweep_interval_ms = 3_600_000;
    config.flows.takeover_ms = 0;
    let replica = Replica::start(&redis, config.clone()).await;
    let mut c = replica.agents().await;
    let mut conn = redis.conn().await;

    // A chain step: one child, released at once.
    register(&mut c, "q", vec![one_shot("a")]).await;
    register(&mut c, "q", vec![after("b", &[("", "a")])]).await;
    let a = acquire_n(&mut c, "q", 1).await.pop().unwrap();
    let store = redis.stores().await; // no flows task of its own
    store.queues.complete(&success("q", &a, b"from a")).await.unwrap();
    assert_eq!(outbox(&mut conn, "q").await, 0, "nothing left for the flows task");
    let b = due_now(&mut c, "q").await;
    assert_eq!(b.len(), 1, "the child is due when the Complete returns");
    assert_eq!((b[0].name.as_str(), b[0].parents[0].result.as_slice()), ("b", &b"from a"[..]));
    // Released from the parent's own set of children: no outbox entry was written and read
    // (its sequence counter, `#` in outboxres, would be left behind), and no set is left.
    for key in ["outboxres", "children:a"] {
        let n: i64 = redis::cmd("EXISTS").arg(format!("baton:{{q:q}}:{key}")).query_async(&mut conn).await.unwrap();
        assert_eq!(n, 0, "{key} after a chain step");
    }

    // An older entry in the outbox goes first: a finish then takes the outbox, and the script
    // releases both, oldest first.
    let outbox_store = outbox_only(&redis).await;
    register(&mut c, "o", vec![one_shot("old"), one_shot("new")]).await;
    register(&mut c, "o", vec![after("old-child", &[("", "old")]), after("new-child", &[("", "new")])]).await;
    let leases = acquire_n(&mut c, "o", 2).await;
    let (old, new) = if leases[0].name == "old" { (&leases[0], &leases[1]) } else { (&leases[1], &leases[0]) };
    outbox_store.queues.complete(&success("o", old, b"")).await.unwrap();
    assert_eq!(outbox(&mut conn, "o").await, 1, "left for the flows task");
    store.queues.complete(&success("o", new, b"")).await.unwrap();
    let mut due: Vec<String> = due_now(&mut c, "o").await.into_iter().map(|l| l.name).collect();
    due.sort();
    assert_eq!(due, ["new-child", "old-child"]);
    assert_eq!(outbox(&mut conn, "o").await, 0);

    // Three children, an inline limit of two: two now, one through the outbox.
    config.flows.release_inline = 2;
    let limited = redis.stores_with(&config).await;
    register(&mut c, "g", vec![one_shot("p")]).await;
    register(&mut c, "g", (0..3).map(|i| after(&format!("k-{i}"), &[("", "p")])).collect()).await;
    let p = acquire_n(&mut c, "g", 1).await.pop().unwrap();
    limited.queues.complete(&success("g", &p, b"")).await.unwrap();
    assert_eq!(due_now(&mut c, "g").await.len(), 2, "released in the finishing script");
    assert_eq!(outbox(&mut conn, "g").await, 1, "the third waits in the outbox");
    assert_eq!(limited.flows.drain_outbox("g", None).await.unwrap(), 1);
    assert_eq!(due_now(&mut c, "g").await.len(), 1);
    assert_eq!(outbox(&mut conn, "g").await, 0);
    replica.stop().await;
}

/// The readFamily calls Redis ran since the SLOWLOG was reset (it logs every command: threshold
/// 0): FCALL, EVALSHA or EVAL of a script whose three keys begin with a queue's deps.
async fn read_family_calls(conn: &mut redis::aio::MultiplexedConnection) -> usize {
    let log: Vec<redis::Value> = redis::cmd("SLOWLOG").arg("GET").arg(-1).query_async(conn).await.unwrap();
    log.into_iter()
        .filter_map(|entry| redis::from_redis_value::<(i64, i64, i64, Vec<Vec<u8>>, Vec<u8>, Vec<u8>)>(entry).ok())
        .map(|(_, _, _, args, _, _)| args.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect::<Vec<_>>())
        .filter(|args| {
            args.len() > 3
                && matches!(args[0].to_ascii_uppercase().as_str(), "FCALL" | "EVALSHA" | "EVAL")
                && args[2] == "3"
                && args[3].ends_with(":deps")
        })
        .count()
}

// A lease whose agent has few parents carries their finishes from the grant itself: the
// acquire script reads them, and no readFamily call follows before the lease is handed over.
#[tokio::test]
async fn a_lease_with_few_parents_carries_them_from_the_grant() {
    let redis = TestRedis::start().await;
    let replica = Replica::start(&redis, config()).await;
    let mut c = replica.agents().await;
    let mut conn = redis.conn().await;
    register(&mut c, "q", vec![one_shot("p1"), one_shot("p2")]).await;
    register(&mut c, "q", vec![after("child", &[("", "p1"), ("", "p2")])]).await;
    for p in acquire_n(&mut c, "q", 2).await {
        let done = pb::CompleteRequest {
            queue: "q".into(),
            name: p.name.clone(),
            token: p.token,
            outcome: pb::Outcome::Success as i32,
            result: format!("r-{}", p.name).into_bytes(),
            ..Default::default()
        };
        c.complete(done).await.unwrap();
    }
    for (k, v) in [("slowlog-max-len", "100000"), ("slowlog-log-slower-than", "0")] {
        redis::cmd("CONFIG").arg("SET").arg(k).arg(v).query_async::<()>(&mut conn).await.unwrap();
    }
    redis::cmd("SLOWLOG").arg("RESET").query_async::<()>(&mut conn).await.unwrap();
    let child = acquire_n(&mut c, "q", 1).await.pop().expect("released by both parents");
    let parents: Vec<(&str, &[u8])> = child.parents.iter().map(|p| (p.name.as_str(), p.result.as_slice())).collect();
    assert_eq!(parents, [("p1", &b"r-p1"[..]), ("p2", &b"r-p2"[..])]);
    assert_eq!(read_family_calls(&mut conn).await, 0, "the grant read the parents");
    replica.stop().await;
}

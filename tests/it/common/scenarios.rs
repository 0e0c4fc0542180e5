//! The core scenario of each service, written once and run against every deployment (one
//! node, Redis Cluster, TLS, Sentinel): whatever Redis is behind Baton, a client sees the same.
//! Names are spread over many queues, pools, receivers and elections so that on a cluster
//! they land on different shards; every wait is a long poll or stream that only a pub/sub
//! wake-up can end early, so a scenario fails (empty answer) if wake-ups do not cross.

use std::{collections::HashMap, time::Duration};

use tokio_stream::StreamExt;
use tonic::transport::Channel;

use super::{agent, dur, pb};

/// How long a scenario's long polls wait: far beyond any wake-up, short enough to fail.
const WAIT_MS: u64 = 20_000;

/// Looks at Redis from outside Baton: whether a replica follows a pub/sub channel yet.
pub struct Probe {
    clients: Vec<redis::Client>,
    /// Sharded pub/sub (a cluster: the shard's nodes answer SHARDNUMSUB).
    sharded: bool,
}

impl Probe {
    /// One node (classic pub/sub), by URL.
    pub fn node(url: &str) -> Self {
        Self { clients: vec![redis::Client::open(url).unwrap()], sharded: false }
    }

    /// One node, through a client of the harness's own (TLS).
    pub fn client(client: redis::Client) -> Self {
        Self { clients: vec![client], sharded: false }
    }

    /// A primary and its replicas (a subscription on either hears the primary's messages).
    pub fn clients(clients: Vec<redis::Client>) -> Self {
        Self { clients, sharded: false }
    }

    /// Every node of a cluster.
    pub fn cluster(cluster: &super::cluster::TestCluster) -> Self {
        Self { clients: cluster.nodes.iter().map(|n| n.client()).collect(), sharded: true }
    }

    /// Whether some replica subscribed to `channel`.
    pub async fn subscribed(&self, channel: &str) -> bool {
        let sub = if self.sharded { "SHARDNUMSUB" } else { "NUMSUB" };
        for client in &self.clients {
            let Ok(mut conn) = client.get_multiplexed_async_connection().await else { continue };
            let n: redis::RedisResult<(String, i64)> =
                redis::cmd("PUBSUB").arg(sub).arg(channel).query_async(&mut conn).await;
            if n.is_ok_and(|(_, n)| n > 0) {
                return true;
            }
        }
        false
    }

    /// Waits until a replica follows `channel`: a long poll subscribes before its first read,
    /// so a change made after this can only reach it as a wake-up.
    pub async fn until_subscribed(&self, channel: &str) {
        super::cluster::until(&format!("a subscription to {channel}"), Duration::from_secs(30), || {
            self.subscribed(channel)
        })
        .await;
    }
}

/// Runs every scenario against the Baton at `channel`; `tag` keeps names apart per run.
pub async fn all(channel: Channel, tag: &str, probe: &Probe) {
    agents(channel.clone(), tag, probe).await;
    leaders(channel.clone(), tag, probe).await;
    claims(channel.clone(), tag).await;
    schedules(channel.clone(), tag, probe).await;
    flows(channel.clone(), tag, probe).await;
    admin(channel, tag).await;
}

/// Work that depends on work across queues (on a cluster: across slots): a root, 60 children
/// spread over six queues, one agent after all of them, and a batch of members in three queues
/// with a callback. Every child runs once, after its parent, carrying its result; the fan-in
/// agent runs once, after the last; the callback runs once; an Await on another connection is
/// answered by the finish.
pub async fn flows(channel: Channel, tag: &str, _probe: &Probe) {
    use pb::agent_service_client::AgentServiceClient;
    let mut c = AgentServiceClient::new(channel.clone());
    let one_shot = |name: &str| agent(name, 0, 60_000);
    let root_q = format!("{tag}-fr");
    super::register(&mut c, &root_q, vec![one_shot("root")]).await;
    let mut children = Vec::new();
    for q in 0..6 {
        let queue = format!("{tag}-f{q}");
        let agents: Vec<pb::Agent> = (0..10)
            .map(|i| pb::Agent {
                after: vec![pb::AgentRef {
                    queue: root_q.clone(),
                    name: "root".into(),
                    on_failure: 0,
                    ..Default::default()
                }],
                ..one_shot(&format!("c{i}"))
            })
            .collect();
        super::register(&mut c, &queue, agents).await;
        children.extend((0..10).map(|i| (queue.clone(), format!("c{i}"))));
    }
    let fan_in = pb::Agent {
        after: children
            .iter()
            .map(|(q, n)| pb::AgentRef { queue: q.clone(), name: n.clone(), on_failure: 0, ..Default::default() })
            .collect(),
        ..one_shot("sink")
    };
    super::register(&mut c, &root_q, vec![fan_in]).await;
    // An Await for the sink on another connection, held until it finishes.
    let mut waiter = AgentServiceClient::new(channel.clone());
    let req =
        pb::AwaitRequest { queue: root_q.clone(), name: "sink".into(), wait: super::dur(120_000), after_token: 0 };
    let awaited = tokio::spawn(async move { waiter.r#await(req).await.map(|r| r.into_inner()) });

    let root = super::acquire(&mut c, &root_q, "w", 10).await;
    assert_eq!(root.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(), ["root"], "only the root is due");
    let done = pb::CompleteRequest { result: b"seed".to_vec(), ..super::complete_req(&root[0], pb::Outcome::Success) };
    c.complete(done).await.unwrap();
    let mut runs: HashMap<(String, String), u32> = HashMap::new();
    for q in 0..6 {
        let queue = format!("{tag}-f{q}");
        let mut got = Vec::new();
        for _ in 0..60 {
            let req = pb::AcquireRequest {
                queue: queue.clone(),
                worker_id: "w".into(),
                max_leases: 20,
                wait: super::dur(1_000),
            };
            got.extend(c.acquire(req).await.unwrap().into_inner().leases);
            if got.len() >= 10 {
                break;
            }
        }
        assert_eq!(got.len(), 10, "{queue}: every child released");
        for l in got {
            assert_eq!(l.parents[0].result, b"seed", "{queue}/{}", l.name);
            *runs.entry((queue.clone(), l.name.clone())).or_default() += 1;
            c.complete(super::complete_req(&l, pb::Outcome::Success)).await.unwrap();
        }
    }
    assert!(runs.values().all(|&n| n == 1) && runs.len() == 60, "each child ran once");
    let mut sink = Vec::new();
    for _ in 0..60 {
        let req =
            pb::AcquireRequest { queue: root_q.clone(), worker_id: "w".into(), max_leases: 5, wait: super::dur(1_000) };
        sink.extend(c.acquire(req).await.unwrap().into_inner().leases);
        if !sink.is_empty() {
            break;
        }
    }
    assert_eq!(sink.len(), 1, "the fan-in agent runs once, after its last parent");
    assert_eq!(sink[0].parents.len(), 60);
    let done = pb::CompleteRequest { result: b"all".to_vec(), ..super::complete_req(&sink[0], pb::Outcome::Success) };
    c.complete(done).await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(60), awaited).await.unwrap().unwrap().unwrap();
    assert!(answer.done);
    assert_eq!(answer.result.unwrap().result, b"all");

    // A batch whose members live in three queues; its callback runs once.
    let batch = format!("{tag}-batch");
    for q in 0..3 {
        let req = pb::RegisterBatchRequest {
            batch: batch.clone(),
            queue: format!("{tag}-b{q}"),
            agents: (0..4).map(|i| one_shot(&format!("m{i}"))).collect(),
            callback_queue: root_q.clone(),
            on_success: if q == 0 { vec![one_shot("callback")] } else { vec![] },
            close: q == 2,
            ..Default::default()
        };
        c.register_batch(req).await.unwrap();
    }
    for q in 0..3 {
        for l in super::acquire(&mut c, &format!("{tag}-b{q}"), "w", 10).await {
            c.complete(super::complete_req(&l, pb::Outcome::Success)).await.unwrap();
        }
    }
    let mut callback = Vec::new();
    for _ in 0..60 {
        let req =
            pb::AcquireRequest { queue: root_q.clone(), worker_id: "w".into(), max_leases: 5, wait: super::dur(1_000) };
        callback.extend(c.acquire(req).await.unwrap().into_inner().leases);
        if !callback.is_empty() {
            break;
        }
    }
    assert_eq!(callback.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(), ["callback"]);
    let status = c.get_batch(pb::GetBatchRequest { batch }).await.unwrap().into_inner().status.unwrap();
    assert_eq!((status.total, status.succeeded, status.done), (12, 12, true));
}

fn channel_of(kind: &str, name: &str) -> String {
    let part = if matches!(kind, "q" | "r") { "wake" } else { "events" };
    format!("baton:{{{kind}:{name}}}:{part}")
}

/// Register, Acquire, Heartbeat, Complete on several queues; a long-polling Acquire is woken
/// by a Register on another connection.
pub async fn agents(channel: Channel, tag: &str, probe: &Probe) {
    use pb::agent_service_client::AgentServiceClient;
    let mut c = AgentServiceClient::new(channel.clone());
    for q in 0..6 {
        let queue = format!("{tag}-q{q}");
        let agents = (0..5).map(|i| agent(&format!("a{i}"), 3_600_000, 60_000)).collect();
        let r = super::register(&mut c, &queue, agents).await;
        assert_eq!(r.created, 5, "{queue}");
        let leases = super::acquire(&mut c, &queue, "w1", 10).await;
        assert_eq!(leases.len(), 5, "{queue}: every new agent is due");
        let refs = leases
            .iter()
            .map(|l| pb::LeaseRef {
                queue: l.queue.clone(),
                name: l.name.clone(),
                token: l.token,
                ..Default::default()
            })
            .collect();
        let hb = c.heartbeat(pb::HeartbeatRequest { worker_id: "w1".into(), leases: refs }).await.unwrap().into_inner();
        assert_eq!((hb.extended.len(), hb.lost.len()), (5, 0), "{queue}");
        let mut tokens: Vec<u64> = leases.iter().map(|l| l.token).collect();
        tokens.dedup();
        assert_eq!(tokens.len(), 5, "{queue}: one token per lease");
        for l in &leases {
            c.complete(super::complete_req(l, pb::Outcome::Success)).await.unwrap();
        }
        // A stale token changes nothing.
        let stale = c.complete(super::complete_req(&leases[0], pb::Outcome::Success)).await.unwrap_err();
        assert_eq!(super::reason(&stale), "LEASE_LOST");
    }
    // Long poll on an empty queue, woken by a Register through another connection.
    let queue = format!("{tag}-poll");
    let mut poller = AgentServiceClient::new(channel.clone());
    let poll = tokio::spawn({
        let queue = queue.clone();
        async move {
            let req = pb::AcquireRequest { queue, worker_id: "w2".into(), max_leases: 1, wait: dur(WAIT_MS) };
            poller.acquire(req).await.unwrap().into_inner().leases
        }
    });
    probe.until_subscribed(&channel_of("q", &queue)).await;
    super::register(&mut c, &queue, vec![agent("late", 3_600_000, 60_000)]).await;
    let got = poll.await.unwrap();
    assert_eq!(got.len(), 1, "the waiting Acquire was woken by the Register");
}

/// Campaign, a waiting Campaign woken by a Resign, and Observe seeing both terms; each
/// election's history (in its own slot) records both terms, and the registry of elections (one
/// slot of its own) lists every election.
pub async fn leaders(channel: Channel, tag: &str, probe: &Probe) {
    use pb::leader_service_client::LeaderServiceClient;
    let mut c = LeaderServiceClient::new(channel.clone());
    for e in 0..4 {
        let election = format!("{tag}-e{e}");
        let name = election.clone();
        let campaign = move |candidate: &str, wait: u64| pb::CampaignRequest {
            election: name.clone(),
            candidate_id: candidate.into(),
            ttl: dur(60_000),
            wait: if wait > 0 { dur(wait) } else { None },
        };
        let a = c.campaign(campaign("a", 0)).await.unwrap().into_inner();
        assert!(a.is_leader, "{election}");
        let mut observe = c.observe(pb::ObserveRequest { election: election.clone() }).await.unwrap().into_inner();
        let first = observe.next().await.unwrap().unwrap();
        assert_eq!(first.leader_id, "a");
        let mut b = LeaderServiceClient::new(channel.clone());
        let waiting = tokio::spawn(async move { b.campaign(campaign("b", WAIT_MS)).await.unwrap().into_inner() });
        // The Resign's event wakes b's Campaign (on a cluster, through the election's shard);
        // the Observe stream already follows the election, so b's Campaign may not have run its
        // first campaign yet: then it simply wins at once.
        probe.until_subscribed(&channel_of("e", &election)).await;
        c.resign(pb::ResignRequest { election: election.clone(), candidate_id: "a".into(), token: a.token })
            .await
            .unwrap();
        let b = waiting.await.unwrap();
        assert!(b.is_leader && b.token > a.token, "{election}: b took over with a greater token");
        let seen = tokio::time::timeout(Duration::from_millis(WAIT_MS), async {
            loop {
                let m = observe.next().await.unwrap().unwrap();
                if m.leader_id == "b" {
                    return m;
                }
            }
        })
        .await
        .expect("Observe sees b elected");
        assert_eq!(seen.token, b.token);
        let history = c
            .get_election_history(pb::GetElectionHistoryRequest { election: election.clone(), limit: 0 })
            .await
            .unwrap()
            .into_inner()
            .terms;
        let terms: Vec<(&str, u64, pb::TermEnd)> =
            history.iter().map(|t| (t.leader_id.as_str(), t.token, t.end())).collect();
        assert_eq!(
            terms,
            [("b", b.token, pb::TermEnd::Unspecified), ("a", a.token, pb::TermEnd::Resigned)],
            "{election}"
        );
    }
    let listed: Vec<String> = c
        .list_elections(pb::ListElectionsRequest { page_size: 1000, page_token: String::new() })
        .await
        .unwrap()
        .into_inner()
        .elections
        .into_iter()
        .filter(|e| e.leader_id == "b")
        .map(|e| e.election)
        .collect();
    for e in 0..4 {
        assert!(listed.contains(&format!("{tag}-e{e}")), "{tag}-e{e} listed, led by b: {listed:?}");
    }
}

/// Offer, Claim, Return on several pools; a waiting Claim is handed an Offer.
pub async fn claims(channel: Channel, tag: &str) {
    use pb::claim_service_client::ClaimServiceClient;
    let mut c = ClaimServiceClient::new(channel.clone());
    let resource = |id: &str| pb::Resource { id: id.into(), attributes: Default::default() };
    for p in 0..4 {
        let pool = format!("{tag}-p{p}");
        let offered = c
            .offer(pb::OfferRequest {
                request_id: String::new(),
                pool: pool.clone(),
                resources: vec![resource("r1"), resource("r2")],
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(offered.idle, 2, "{pool}");
        let claim = pb::ClaimRequest { pool: pool.clone(), claimer_id: "c1".into(), ..Default::default() };
        let got = c.claim(claim).await.unwrap().into_inner();
        let id = got.resource.as_ref().unwrap().id.clone();
        c.r#return(pb::ReturnRequest {
            request_id: String::new(),
            pool: pool.clone(),
            resource_id: id,
            token: got.token,
            reuse: true,
        })
        .await
        .unwrap();
        let status = c.get_pool(pb::GetPoolRequest { pool: pool.clone() }).await.unwrap().into_inner();
        let status = status.status.unwrap();
        assert_eq!((status.idle, status.claimed), (2, 0), "{pool}");
    }
    let pool = format!("{tag}-line");
    let mut claimer = ClaimServiceClient::new(channel.clone());
    let waiting = tokio::spawn({
        let pool = pool.clone();
        async move {
            let req = pb::ClaimRequest { pool, claimer_id: "c2".into(), wait: dur(WAIT_MS), ..Default::default() };
            claimer.claim(req).await.unwrap().into_inner()
        }
    });
    super::cluster::until("the claim waits in line", Duration::from_secs(30), || {
        let (mut c, pool) = (c.clone(), pool.clone());
        async move {
            let status = c.get_pool(pb::GetPoolRequest { pool }).await.unwrap().into_inner();
            status.status.is_some_and(|s| s.waiting_claims == 1)
        }
    })
    .await;
    let offered = c
        .offer(pb::OfferRequest { request_id: String::new(), pool: pool.clone(), resources: vec![resource("late")] })
        .await
        .unwrap();
    assert_eq!(offered.into_inner().handed, 1);
    let got = waiting.await.unwrap();
    assert_eq!(got.resource.unwrap().id, "late", "the waiting claim was handed the offer");
}

/// Schedule, Subscribe, Ack on several receivers; a message scheduled while the stream waits
/// is delivered through the wake-up.
pub async fn schedules(channel: Channel, tag: &str, probe: &Probe) {
    use pb::schedule_service_client::ScheduleServiceClient;
    let mut c = ScheduleServiceClient::new(channel.clone());
    for r in 0..4 {
        let receiver = format!("{tag}-r{r}");
        let mut stream = c
            .subscribe(pb::SubscribeRequest { receiver: receiver.clone(), consumer_id: "s1".into(), max_in_flight: 10 })
            .await
            .unwrap()
            .into_inner();
        // Scheduled once the stream follows the receiver: only a wake-up delivers it.
        probe.until_subscribed(&channel_of("r", &receiver)).await;
        let scheduled = c
            .schedule(pb::ScheduleRequest {
                receiver: receiver.clone(),
                payload: b"hello".to_vec(),
                key: "k1".into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert!(scheduled.created);
        let got = tokio::time::timeout(Duration::from_millis(WAIT_MS), stream.next())
            .await
            .expect("delivered")
            .unwrap()
            .unwrap();
        assert_eq!((got.id.as_str(), got.payload.as_slice()), (scheduled.id.as_str(), &b"hello"[..]));
        c.ack(pb::AckRequest { request_id: String::new(), receiver: receiver.clone(), id: got.id, token: got.token })
            .await
            .unwrap();
        let again = c
            .schedule(pb::ScheduleRequest { receiver, payload: b"x".to_vec(), key: "k1".into(), ..Default::default() })
            .await
            .unwrap()
            .into_inner();
        assert!(!again.created || again.id != scheduled.id, "the key is idempotent while the message lives");
    }
}

/// Dead letters from queues on different shards listed in one call, retried, and a purge and a
/// health check walking every registry.
pub async fn admin(channel: Channel, tag: &str) {
    use pb::{admin_service_client::AdminServiceClient, agent_service_client::AgentServiceClient};
    let mut agents = AgentServiceClient::new(channel.clone());
    let mut admin = AdminServiceClient::new(channel);
    let queues: Vec<String> = (0..5).map(|q| format!("{tag}-dlq{q}")).collect();
    for queue in &queues {
        let doomed = pb::Agent { max_attempts: 1, ..agent("doomed", 3_600_000, 60_000) };
        super::register(&mut agents, queue, vec![doomed]).await;
        let lease = super::acquire(&mut agents, queue, "w", 1).await.pop().expect("due");
        let done = agents.complete(super::complete_req(&lease, pb::Outcome::Transient)).await.unwrap();
        assert!(done.into_inner().dead_lettered, "{queue}");
    }
    let mut listed = Vec::new();
    let mut token = String::new();
    loop {
        let page = admin
            .list_dead_letters(pb::ListDeadLettersRequest { source: None, page_size: 2, page_token: token })
            .await
            .unwrap()
            .into_inner();
        listed.extend(page.dead_letters.into_iter().filter_map(|d| d.source.map(|s| s.name)));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    for queue in &queues {
        assert!(listed.contains(queue), "{queue} listed among {listed:?}");
    }
    let source = pb::Source { kind: pb::SourceKind::Queue as i32, name: queues[0].clone() };
    admin.retry_dead_letter(pb::RetryDeadLetterRequest { source: Some(source), id: "doomed".into() }).await.unwrap();
    assert_eq!(super::acquire(&mut agents, &queues[0], "w", 1).await.len(), 1, "retried agent is due again");
    admin.purge(pb::PurgeRequest { dry_run: true }).await.unwrap();
    admin.get_health(pb::GetHealthRequest {}).await.unwrap();
}

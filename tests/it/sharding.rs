//! Sharded queues, pools and receivers (`sharding.*`) on a real Redis Cluster (3 primaries):
//! each lives in several slots, and every call by the source's own name keeps working. What
//! changes is stated in docs/redis.md ("Sharded sources") and checked here: fencing tokens increase
//! per shard, a sharded pool's waiting claim takes an idle resource of another shard, a
//! consumer's `max_in_flight` bounds what it holds across a sharded receiver.

use crate::common;

use std::{
    collections::{BTreeSet, HashMap},
    time::Duration,
};

use common::{
    agent,
    cluster::{until, TestCluster},
    dur, ms, pb,
    scenarios::Probe,
    test_config, TestBaton,
};
use pb::{
    admin_service_client::AdminServiceClient, claim_service_client::ClaimServiceClient,
    schedule_service_client::ScheduleServiceClient,
};
use tokio_stream::StreamExt;

/// The shard of a member (agent name, resource id, message key) among `n`, as Baton computes it.
fn shard(name: &str, n: u16) -> u16 {
    crc16::State::<crc16::XMODEM>::calculate(name.as_bytes()) % n
}

// A queue declared with three shards (`sharding.queues = "hot=3"`) lives in three slots on the
// cluster; every AgentService call and the admin calls on its dead letters keep working by the
// queue's own name. What changes: fencing tokens increase per shard, not across the queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_queue_spreads_over_shards_and_keeps_the_agent_guarantees() {
    let cluster = TestCluster::start(3, 0).await;
    let mut config = test_config();
    config.sharding.queues = "hot=3".into();
    let baton = TestBaton::start(&cluster.url(), config).await;
    let mut c = baton.agents().await;
    let names: Vec<String> = (0..300).map(|i| format!("a{i:03}")).collect();
    let agents = names.iter().map(|n| agent(n, 3_600_000, 60_000)).collect();
    assert_eq!(common::register(&mut c, "hot", agents).await.created, 300);
    let mut primaries = BTreeSet::new();
    for i in 0..3 {
        primaries.insert(cluster.primary_of(&format!("baton:{{q:hot#{i}}}:defs")).await);
    }
    assert!(primaries.len() >= 2, "the shards live on {} primaries", primaries.len());

    // Every agent granted once; tokens strictly increase within each shard.
    let mut leases = Vec::new();
    while leases.len() < 300 {
        let got = common::acquire(&mut c, "hot", "w1", 64).await;
        assert!(!got.is_empty(), "all 300 are due, got {}", leases.len());
        leases.extend(got);
    }
    let mut last: HashMap<u16, u64> = HashMap::new();
    for l in &leases {
        assert_eq!(l.queue, "hot");
        let previous = last.insert(shard(&l.name, 3), l.token);
        assert!(previous.is_none_or(|p| p < l.token), "tokens strictly increase per shard");
    }
    let mut granted: Vec<&str> = leases.iter().map(|l| l.name.as_str()).collect();
    granted.sort();
    granted.dedup();
    assert_eq!(granted.len(), 300, "no agent granted twice");
    assert!(common::acquire(&mut c, "hot", "w1", 64).await.is_empty());

    let refs: Vec<pb::LeaseRef> = leases
        .iter()
        .map(|l| pb::LeaseRef { queue: l.queue.clone(), name: l.name.clone(), token: l.token, ..Default::default() })
        .collect();
    let hb = c.heartbeat(pb::HeartbeatRequest { worker_id: "w1".into(), leases: refs }).await.unwrap().into_inner();
    assert_eq!((hb.extended.len(), hb.lost.len()), (300, 0));
    for l in &leases {
        c.complete(common::complete_req(l, pb::Outcome::Success)).await.unwrap();
    }
    let stale = c.complete(common::complete_req(&leases[7], pb::Outcome::Success)).await.unwrap_err();
    assert_eq!(common::reason(&stale), "LEASE_LOST");

    // ListAgents pages through all shards, one after the other, each agent once.
    let (mut listed, mut token) = (Vec::new(), String::new());
    loop {
        let req = pb::ListAgentsRequest { queue: "hot".into(), page_size: 7, page_token: token, ..Default::default() };
        let page = c.list_agents(req).await.unwrap().into_inner();
        listed.extend(page.agents.into_iter().map(|a| a.agent.unwrap().name));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    listed.sort();
    assert_eq!(listed, names, "every agent once");
    // And by name prefix.
    let (mut listed, mut token) = (Vec::new(), String::new());
    loop {
        let req =
            pb::ListAgentsRequest { queue: "hot".into(), page_size: 3, page_token: token, name_prefix: "a12".into() };
        let page = c.list_agents(req).await.unwrap().into_inner();
        listed.extend(page.agents.into_iter().map(|a| a.agent.unwrap().name));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    listed.sort();
    assert_eq!(listed, (120..130).map(|i| format!("a{i}")).collect::<Vec<_>>(), "the prefix's agents once");
    let got = c.get_agent(pb::GetAgentRequest { queue: "hot".into(), name: "a123".into() }).await.unwrap();
    assert_eq!(got.into_inner().agent.unwrap().agent.unwrap().name, "a123");

    // A long poll on the sharded queue is woken by a Register landing in any shard.
    let probe = Probe::cluster(&cluster);
    let mut poller = baton.agents().await;
    let poll = tokio::spawn(async move {
        let req = pb::AcquireRequest {
            queue: "hot".into(),
            worker_id: "w2".into(),
            max_leases: 1,
            wait: common::dur(20_000),
        };
        poller.acquire(req).await.unwrap().into_inner().leases
    });
    for i in 0..3 {
        probe.until_subscribed(&format!("baton:{{q:hot#{i}}}:wake")).await;
    }
    common::register(&mut c, "hot", vec![agent("late", 3_600_000, 60_000)]).await;
    assert_eq!(poll.await.unwrap()[0].name, "late", "woken through the shard of `late`");

    // Dead letters by the queue's own name.
    let doomed = pb::Agent { max_attempts: 1, ..agent("doomed", 3_600_000, 60_000) };
    common::register(&mut c, "hot", vec![doomed]).await;
    let lease = common::acquire(&mut c, "hot", "w1", 1).await.pop().unwrap();
    assert_eq!(lease.name, "doomed");
    c.complete(common::complete_req(&lease, pb::Outcome::Transient)).await.unwrap();
    let mut admin = AdminServiceClient::new(baton.channel().await);
    let source = pb::Source { kind: pb::SourceKind::Queue as i32, name: "hot".into() };
    let req = pb::ListDeadLettersRequest { source: Some(source.clone()), page_size: 1, page_token: String::new() };
    let listed = admin.list_dead_letters(req).await.unwrap().into_inner();
    assert_eq!(listed.dead_letters.len(), 1);
    assert_eq!(listed.dead_letters[0].source.as_ref().unwrap().name, "hot");
    if !listed.next_page_token.is_empty() {
        let req = pb::ListDeadLettersRequest {
            source: Some(source.clone()),
            page_size: 1,
            page_token: listed.next_page_token,
        };
        assert!(admin.list_dead_letters(req).await.unwrap().into_inner().dead_letters.is_empty());
    }
    admin.retry_dead_letter(pb::RetryDeadLetterRequest { source: Some(source), id: "doomed".into() }).await.unwrap();
    assert_eq!(common::acquire(&mut c, "hot", "w1", 1).await[0].name, "doomed");
    let removed = c.unregister(pb::UnregisterRequest {
        queue: "hot".into(),
        names: vec!["a001".into(), "a002".into()],
        ..Default::default()
    });
    assert_eq!(removed.await.unwrap().into_inner().removed, 2);
    baton.stop().await.unwrap();
}

/// What a node of the cluster holds under `key` (a ZSET's size).
async fn zcard(cluster: &TestCluster, key: &str) -> u64 {
    let node = cluster.primary_of(key).await;
    cluster.nodes[node].cmd(redis::cmd("ZCARD").arg(key)).await.unwrap()
}

/// The shard of pool `gpu` whose line holds a claim.
async fn waiting_line(cluster: &TestCluster) -> Option<u16> {
    for i in 0..3u16 {
        if zcard(cluster, &format!("baton:{{p:gpu#{i}}}:line")).await == 1 {
            return Some(i);
        }
    }
    None
}

fn resource(id: &str) -> pb::Resource {
    pb::Resource { id: id.into(), attributes: Default::default() }
}

async fn pool_status(c: &mut ClaimServiceClient<tonic::transport::Channel>, pool: &str) -> pb::PoolStatus {
    c.get_pool(pb::GetPoolRequest { pool: pool.into() }).await.unwrap().into_inner().status.unwrap()
}

// A pool declared with three shards (`sharding.pools = "gpu=3"`): resources spread over the
// shards by id; claims take from every shard; tokens increase per shard; GetPool sums the
// shards; a claim waiting in one shard's line takes a resource returned to another; dead
// letters are listed and retried by the pool's own name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_pool_spreads_over_shards_and_keeps_the_claim_guarantees() {
    let cluster = TestCluster::start(3, 0).await;
    let mut config = test_config();
    config.sharding.pools = "gpu=3".into();
    let baton = TestBaton::start(&cluster.url(), config).await;
    let mut c = ClaimServiceClient::new(baton.channel().await);
    let ids: Vec<String> = (0..30).map(|i| format!("r{i:02}")).collect();
    let offered = c
        .offer(pb::OfferRequest {
            request_id: String::new(),
            pool: "gpu".into(),
            resources: ids.iter().map(|id| resource(id)).collect(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((offered.idle, offered.handed, offered.duplicates), (30, 0, 0));
    let mut primaries = BTreeSet::new();
    for i in 0..3 {
        let idle = format!("baton:{{p:gpu#{i}}}:idle");
        assert!(zcard(&cluster, &idle).await > 0, "shard {i} holds resources");
        primaries.insert(cluster.primary_of(&idle).await);
    }
    assert!(primaries.len() >= 2, "the shards live on {} primaries", primaries.len());
    assert_eq!(pool_status(&mut c, "gpu").await.idle, 30, "GetPool sums the shards");

    // Every resource claimed once, from every shard; tokens strictly increase per shard.
    let mut held = Vec::new();
    let mut last: HashMap<u16, u64> = HashMap::new();
    for _ in 0..30 {
        let claim = pb::ClaimRequest { pool: "gpu".into(), claimer_id: "c1".into(), ..Default::default() };
        let got = c.claim(claim).await.unwrap().into_inner();
        let id = got.resource.as_ref().expect("30 are idle").id.clone();
        let previous = last.insert(shard(&id, 3), got.token);
        assert!(previous.is_none_or(|p| p < got.token), "tokens strictly increase per shard");
        held.push((id, got.token));
    }
    let distinct: BTreeSet<&str> = held.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(distinct.len(), 30, "no resource claimed twice");
    let none = c.claim(pb::ClaimRequest { pool: "gpu".into(), claimer_id: "c1".into(), ..Default::default() });
    assert!(none.await.unwrap().into_inner().resource.is_none(), "nothing idle in any shard");
    let status = pool_status(&mut c, "gpu").await;
    assert_eq!((status.idle, status.claimed), (0, 30));

    // A claim waits in one shard's line; a resource returned to another shard reaches it.
    let mut claimer = c.clone();
    let waiting = tokio::spawn(async move {
        let req =
            pb::ClaimRequest { pool: "gpu".into(), claimer_id: "c2".into(), wait: dur(20_000), ..Default::default() };
        claimer.claim(req).await.unwrap().into_inner()
    });
    until("the claim waits in a shard's line", Duration::from_secs(30), || async {
        waiting_line(&cluster).await.is_some()
    })
    .await;
    let line = waiting_line(&cluster).await.unwrap();
    let (id, token) = held.iter().find(|(id, _)| shard(id, 3) != line).cloned().unwrap();
    c.r#return(pb::ReturnRequest {
        request_id: String::new(),
        pool: "gpu".into(),
        resource_id: id.clone(),
        token,
        reuse: true,
    })
    .await
    .unwrap();
    let got = waiting.await.unwrap();
    assert_eq!(got.resource.as_ref().unwrap().id, id, "the claim in shard {line}'s line took the idle resource");
    let status = pool_status(&mut c, "gpu").await;
    assert_eq!((status.idle, status.claimed, status.waiting_claims), (0, 30, 0), "it left its line");
    held.retain(|(h, _)| *h != id);
    held.push((id.clone(), got.token));

    // A stale token is refused; Fail dead-letters into the resource's shard, listed and
    // retried by the pool's own name.
    let stale = c.r#return(pb::ReturnRequest {
        request_id: String::new(),
        pool: "gpu".into(),
        resource_id: id.clone(),
        token,
        reuse: true,
    });
    assert_eq!(common::reason(&stale.await.unwrap_err()), "LEASE_LOST");
    let (failed, failed_token) = held.pop().unwrap();
    let fail = pb::FailRequest {
        request_id: String::new(),
        pool: "gpu".into(),
        resource_id: failed.clone(),
        token: failed_token,
        error: "broken".into(),
    };
    c.fail(fail).await.unwrap();
    assert_eq!(pool_status(&mut c, "gpu").await.dead_lettered, 1);
    let mut admin = AdminServiceClient::new(baton.channel().await);
    let source = pb::Source { kind: pb::SourceKind::Pool as i32, name: "gpu".into() };
    let req = pb::ListDeadLettersRequest { source: Some(source.clone()), page_size: 10, page_token: String::new() };
    let listed = admin.list_dead_letters(req).await.unwrap().into_inner().dead_letters;
    assert_eq!(listed.len(), 1);
    assert_eq!((listed[0].id.as_str(), listed[0].source.as_ref().unwrap().name.as_str()), (failed.as_str(), "gpu"));
    admin.retry_dead_letter(pb::RetryDeadLetterRequest { source: Some(source), id: failed.clone() }).await.unwrap();
    let again = c.claim(pb::ClaimRequest { pool: "gpu".into(), claimer_id: "c3".into(), ..Default::default() });
    assert_eq!(again.await.unwrap().into_inner().resource.unwrap().id, failed, "the retried resource is idle again");
    for (id, token) in held {
        c.r#return(pb::ReturnRequest {
            request_id: String::new(),
            pool: "gpu".into(),
            resource_id: id,
            token,
            reuse: true,
        })
        .await
        .unwrap();
    }
    assert_eq!(pool_status(&mut c, "gpu").await.idle, 29);
    baton.stop().await.unwrap();
}

// Request ids on sharded sources: a Schedule without a key is placed by its request id, so
// each retry reaches the shard holding the first answer (the same message, not one more in
// another shard); a Claim's retry finds its first answer in whichever shard holds it (the same
// resource and token, not a second resource).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_find_their_first_answer_on_sharded_sources() {
    let cluster = TestCluster::start(3, 0).await;
    let mut config = test_config();
    config.sharding.receivers = "retried=3".into();
    config.sharding.pools = "retried=3".into();
    let baton = TestBaton::start(&cluster.url(), config).await;
    let channel = baton.channel().await;

    let mut s = ScheduleServiceClient::new(channel.clone());
    let req = pb::ScheduleRequest {
        receiver: "retried".into(),
        payload: b"x".to_vec(),
        request_id: "sched-1".into(),
        ..Default::default()
    };
    let first = s.schedule(req.clone()).await.unwrap().into_inner();
    assert!(first.created);
    for _ in 0..3 {
        assert_eq!(s.schedule(req.clone()).await.unwrap().into_inner(), first, "a retry gets the first answer");
    }
    let list = pb::ListMessagesRequest { receiver: "retried".into(), ..Default::default() };
    assert_eq!(s.list_messages(list).await.unwrap().into_inner().messages.len(), 1, "one message in all");

    let mut c = ClaimServiceClient::new(channel);
    let ids: Vec<String> = (0..9).map(|i| format!("r{i}")).collect();
    let offer = pb::OfferRequest {
        pool: "retried".into(),
        resources: ids.iter().map(|id| resource(id)).collect(),
        request_id: String::new(),
    };
    c.offer(offer).await.unwrap();
    let claim = pb::ClaimRequest {
        pool: "retried".into(),
        claimer_id: "c1".into(),
        request_id: "claim-1".into(),
        ..Default::default()
    };
    let first = c.claim(claim.clone()).await.unwrap().into_inner();
    assert!(first.resource.is_some());
    for _ in 0..3 {
        assert_eq!(c.claim(claim.clone()).await.unwrap().into_inner(), first, "a retry gets the first answer");
    }
    assert_eq!(pool_status(&mut c, "retried").await.claimed, 1, "one resource claimed in all");
    baton.stop().await.unwrap();
}

async fn next_message(stream: &mut tonic::Streaming<pb::SubscribeResponse>) -> pb::SubscribeResponse {
    tokio::time::timeout(Duration::from_secs(20), stream.next()).await.expect("delivered").unwrap().unwrap()
}

/// Messages in flight across the shards of receiver `tick`.
async fn in_flight(cluster: &TestCluster) -> u64 {
    in_flight_of(cluster, "tick").await
}

// A receiver declared with three shards (`sharding.receivers = "tick=3"`): messages spread
// over the shards, their ids naming the shard; a key names one message across the receiver;
// Subscribe delivers from every shard, woken by any, holding at most max_in_flight across all
// of them; Ack, Cancel and the dead letters work by the receiver's own name and those ids.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sharded_receiver_spreads_over_shards_and_keeps_the_delivery_guarantees() {
    let cluster = TestCluster::start(3, 0).await;
    let mut config = test_config();
    config.sharding.receivers = "tick=3,tock=3".into();
    let baton = TestBaton::start(&cluster.url(), config.clone()).await;
    let mut c = ScheduleServiceClient::new(baton.channel().await);
    let schedule = |key: &str, delay_ms: u64| pb::ScheduleRequest {
        receiver: "tick".into(),
        payload: b"m".to_vec(),
        key: key.into(),
        when: Some(pb::schedule_request::When::Delay(dur(delay_ms).unwrap())),
        ..Default::default()
    };

    // A consumer subscribed before anything is scheduled: every delivery is a wake-up's.
    let subscribe = pb::SubscribeRequest { receiver: "tick".into(), consumer_id: "s1".into(), max_in_flight: 5 };
    let mut stream = c.subscribe(subscribe).await.unwrap().into_inner();
    let probe = Probe::cluster(&cluster);
    for i in 0..3 {
        probe.until_subscribed(&format!("baton:{{r:tick#{i}}}:wake")).await;
    }
    let mut scheduled = BTreeSet::new();
    for _ in 0..30 {
        let got = c.schedule(schedule("", 0)).await.unwrap().into_inner();
        assert!(got.created);
        scheduled.insert(got.id);
    }
    let keyed = c.schedule(schedule("k1", 0)).await.unwrap().into_inner();
    let again = c.schedule(schedule("k1", 0)).await.unwrap().into_inner();
    assert!(keyed.created && !again.created && again.id == keyed.id, "a key names one message across shards");
    assert!(keyed.id.starts_with(&format!("{}.", shard("k1", 3))), "{} lives in the key's shard", keyed.id);
    scheduled.insert(keyed.id);
    let shards: BTreeSet<&str> = scheduled.iter().map(|id| id.split_once('.').unwrap().0).collect();
    assert_eq!(shards.len(), 3, "ids name all three shards: {shards:?}");

    // At most max_in_flight across the shards; each message once; every Ack lands.
    let mut delivered = BTreeSet::new();
    let mut held = Vec::new();
    while delivered.len() < scheduled.len() {
        if held.len() < 5 && delivered.len() + held.len() < scheduled.len() {
            let m = next_message(&mut stream).await;
            assert!(delivered.insert(m.id.clone()), "{} delivered twice", m.id);
            held.push(m);
            continue;
        }
        assert!(in_flight(&cluster).await <= 5, "the consumer holds at most 5 across the shards");
        let m = held.remove(0);
        c.ack(pb::AckRequest { request_id: String::new(), receiver: "tick".into(), id: m.id.clone(), token: m.token })
            .await
            .unwrap();
        let stale = c
            .ack(pb::AckRequest { request_id: String::new(), receiver: "tick".into(), id: m.id, token: m.token })
            .await
            .unwrap_err();
        assert_eq!(common::reason(&stale), "LEASE_LOST");
    }
    assert_eq!(delivered, scheduled);
    for m in held {
        c.ack(pb::AckRequest { request_id: String::new(), receiver: "tick".into(), id: m.id, token: m.token })
            .await
            .unwrap();
    }
    for bad in ["garbage", "7.00000000000000000001", "1.", "-1.5"] {
        let ack = c
            .ack(pb::AckRequest { request_id: String::new(), receiver: "tick".into(), id: bad.into(), token: 1 })
            .await
            .unwrap_err();
        assert_eq!(common::reason(&ack), "LEASE_LOST", "{bad}");
        let cancel = c.cancel(pb::CancelRequest { receiver: "tick".into(), id: bad.into() }).await.unwrap_err();
        assert_eq!(cancel.code(), tonic::Code::NotFound, "{bad}");
    }

    // Cancel by id, in the message's shard.
    let later = c.schedule(schedule("", 3_600_000)).await.unwrap().into_inner();
    c.cancel(pb::CancelRequest { receiver: "tick".into(), id: later.id.clone() }).await.unwrap();
    let gone = c.cancel(pb::CancelRequest { receiver: "tick".into(), id: later.id }).await.unwrap_err();
    assert_eq!(gone.code(), tonic::Code::NotFound);

    // A consumer at its bound with a message due only in another shard: the Ack in the first
    // shard is what wakes it (every ack on a shard announces, since room spans the shards).
    // (Receiver `tock`, so that the first consumer, still subscribed to `tick`, takes nothing.)
    let tock = |key: &str, delay_ms: u64| pb::ScheduleRequest { receiver: "tock".into(), ..schedule(key, delay_ms) };
    let subscribe = pb::SubscribeRequest { receiver: "tock".into(), consumer_id: "s3".into(), max_in_flight: 1 };
    let mut one = c.subscribe(subscribe).await.unwrap().into_inner();
    let other = (0..).map(|i| format!("k{i}")).find(|k| shard(k, 3) != shard("ka", 3)).unwrap();
    let first = c.schedule(tock("ka", 0)).await.unwrap().into_inner();
    let m = next_message(&mut one).await;
    assert_eq!(m.id, first.id);
    let second = c.schedule(tock(&other, 0)).await.unwrap().into_inner();
    c.ack(pb::AckRequest { request_id: String::new(), receiver: "tock".into(), id: m.id, token: m.token })
        .await
        .unwrap();
    let m = next_message(&mut one).await;
    assert_eq!(m.id, second.id, "woken by the ack in another shard");
    c.ack(pb::AckRequest { request_id: String::new(), receiver: "tock".into(), id: m.id, token: m.token })
        .await
        .unwrap();

    baton.stop().await.unwrap();

    // A message never acked is dead-lettered after two deliveries (a replica with a short ack
    // timeout); listed and retried by the receiver's own name and its id.
    config.schedule.max_deliveries = 2;
    config.schedule.ack_timeout_ms = 300;
    let baton = TestBaton::start(&cluster.url(), config).await;
    let mut c = ScheduleServiceClient::new(baton.channel().await);
    let subscribe = pb::SubscribeRequest { receiver: "tick".into(), consumer_id: "s2".into(), max_in_flight: 5 };
    let mut stream = c.subscribe(subscribe).await.unwrap().into_inner();
    // Its key has a window, which outlives the message's dead letter, retry and ack.
    let windowed = || pb::ScheduleRequest { key_window: dur(3_600_000), ..schedule("doomed", 0) };
    let doomed = c.schedule(windowed()).await.unwrap().into_inner();
    for delivery in 1..=2 {
        let m = next_message(&mut stream).await;
        assert_eq!((m.id.as_str(), m.delivery_count), (doomed.id.as_str(), delivery));
    }
    let mut admin = AdminServiceClient::new(baton.channel().await);
    let source = pb::Source { kind: pb::SourceKind::Receiver as i32, name: "tick".into() };
    let list = || pb::ListDeadLettersRequest { source: Some(source.clone()), page_size: 10, page_token: String::new() };
    until("the message is dead-lettered", Duration::from_secs(60), || {
        let (mut admin, req) = (admin.clone(), list());
        async move { !admin.list_dead_letters(req).await.unwrap().into_inner().dead_letters.is_empty() }
    })
    .await;
    let listed = admin.list_dead_letters(list()).await.unwrap().into_inner().dead_letters;
    assert_eq!((listed[0].id.as_str(), listed[0].source.as_ref().unwrap().name.as_str()), (doomed.id.as_str(), "tick"));
    let dup = c.schedule(schedule("doomed", 0)).await.unwrap().into_inner();
    assert!(!dup.created && dup.id == doomed.id, "a dead letter's window holds its key");
    admin
        .retry_dead_letter(pb::RetryDeadLetterRequest { source: Some(source.clone()), id: doomed.id.clone() })
        .await
        .unwrap();
    let back = next_message(&mut stream).await;
    assert_eq!(back.id, doomed.id, "the retried message is delivered again");
    c.ack(pb::AckRequest { request_id: String::new(), receiver: "tick".into(), id: back.id, token: back.token })
        .await
        .unwrap();
    let req = pb::DeleteDeadLetterRequest { source: Some(source), id: doomed.id.clone() };
    assert_eq!(admin.delete_dead_letter(req).await.unwrap_err().code(), tonic::Code::NotFound, "acked, not dead");
    let dup = c.schedule(windowed()).await.unwrap().into_inner();
    assert!(!dup.created && dup.id == doomed.id, "acked: the window still answers it");
    assert_eq!(ms(&dup.key_held_until), ms(&doomed.key_held_until));
    // The window lives in the key's shard, in that shard's slot.
    let key = format!("baton:{{r:tick#{}}}:dedupat", shard("doomed", 3));
    assert_eq!(zcard(&cluster, &key).await, 1, "{key}");
    baton.stop().await.unwrap();
}

// The hot paths on sharded sources: a Session stream drains a three-shard queue (every agent
// once, never more leases out than its credit, every completion answered, none lost), and a
// Receive stream drains a three-shard receiver (every message once, never more than
// max_in_flight unacked across the shards, acks of several shards in one message all applied).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_and_receive_streams_drain_sharded_sources() {
    let cluster = TestCluster::start(3, 0).await;
    let mut config = test_config();
    config.sharding.queues = "hot=3".into();
    config.sharding.receivers = "tick=3".into();
    let baton = TestBaton::start(&cluster.url(), config).await;

    let mut c = baton.agents().await;
    let agents = (0..300).map(|i| agent(&format!("a{i:03}"), 0, 60_000)).collect();
    assert_eq!(common::register(&mut c, "hot", agents).await.created, 300);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let open = pb::SessionOpen { queue: "hot".into(), worker_id: "w".into() };
    tx.send(pb::SessionRequest { open: Some(open), credit: 16, ..Default::default() }).unwrap();
    let mut session = c.session(tokio_stream::wrappers::UnboundedReceiverStream::new(rx)).await.unwrap().into_inner();
    let (mut ran, mut completed, mut held) = (BTreeSet::new(), 0, 0usize);
    while completed < 300 {
        let r =
            tokio::time::timeout(Duration::from_secs(30), session.next()).await.expect("an answer").unwrap().unwrap();
        assert!(r.completed.iter().all(|c| !c.lease_lost), "no completion lost: {:?}", r.completed);
        completed += r.completed.len();
        held = held + r.leases.len() - r.completed.len();
        assert!(held <= 16, "{held} leases out, more than the credit 16");
        let completions: Vec<_> = r
            .leases
            .iter()
            .map(|l| {
                assert!(ran.insert(l.name.clone()), "{} ran twice", l.name);
                pb::SessionCompletion {
                    name: l.name.clone(),
                    token: l.token,
                    outcome: pb::Outcome::Success as i32,
                    ..Default::default()
                }
            })
            .collect();
        if !completions.is_empty() {
            let credit = completions.len() as u32;
            tx.send(pb::SessionRequest { credit, completions, ..Default::default() }).unwrap();
        }
    }
    assert_eq!(ran.len(), 300);
    drop(tx);

    let mut s = ScheduleServiceClient::new(baton.channel().await);
    let messages: Vec<_> = (0..200)
        .map(|i| pb::ScheduleRequest {
            receiver: "tick".into(),
            payload: format!("m{i}").into_bytes(),
            when: None,
            ..Default::default()
        })
        .collect();
    s.schedule_batch(pb::ScheduleBatchRequest { messages }).await.unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let open = pb::SubscribeRequest { receiver: "tick".into(), consumer_id: "c".into(), max_in_flight: 10 };
    tx.send(pb::ReceiveRequest { open: Some(open), acks: vec![] }).unwrap();
    let mut stream = s.receive(tokio_stream::wrappers::UnboundedReceiverStream::new(rx)).await.unwrap().into_inner();
    // Unacked from the consumer's side: received less acks sent (a confirmation can come after
    // deliveries that used the place its ack freed).
    let (mut seen, mut acked, mut sent, mut shards) = (BTreeSet::new(), 0, 0, BTreeSet::new());
    while acked < 200 {
        let r =
            tokio::time::timeout(Duration::from_secs(30), stream.next()).await.expect("an answer").unwrap().unwrap();
        assert!(r.lost.is_empty(), "no ack lost: {:?}", r.lost);
        acked += r.acked.len();
        let acks: Vec<_> = r
            .messages
            .iter()
            .map(|m| {
                assert!(seen.insert(m.id.clone()), "{} delivered twice", m.id);
                shards.insert(m.id.split_once('.').expect("a sharded id").0.to_string());
                pb::ReceiveAck { id: m.id.clone(), token: m.token }
            })
            .collect();
        assert!(seen.len() - sent <= 10, "{} unacked, more than max_in_flight 10", seen.len() - sent);
        sent += acks.len();
        if !acks.is_empty() {
            tx.send(pb::ReceiveRequest { open: None, acks }).unwrap();
        }
    }
    assert_eq!((seen.len(), shards.len()), (200, 3), "every message once, from every shard");
    assert_eq!(in_flight_of(&cluster, "tick").await, 0);
    baton.stop().await.unwrap();
}

/// Messages in flight across the three shards of `receiver`.
async fn in_flight_of(cluster: &TestCluster, receiver: &str) -> u64 {
    let mut n = 0;
    for i in 0..3 {
        n += zcard(cluster, &format!("baton:{{r:{receiver}#{i}}}:inflight")).await;
    }
    n
}

// A grant costs the same at any shard count: while the shard next in turn has enough due, an
// Acquire is that shard's script alone, with no peek at the others. Each of eight calls on a
// queue of eight shards, every shard holding more than it asks, must send no ZRANGE (the peek)
// at all; a queue whose shards are empty is peeked, which shows the count would see one.
#[tokio::test]
async fn an_acquire_served_by_the_shard_in_turn_peeks_at_no_other() {
    let redis = common::TestRedis::start().await;
    let mut config = test_config();
    config.sharding.queues = "wide=8,empty=8".into();
    let baton = TestBaton::start(&redis.url(), config).await;
    let mut c = baton.agents().await;
    let agents = (0..400).map(|i| agent(&format!("a{i:03}"), 3_600_000, 60_000)).collect();
    assert_eq!(common::register(&mut c, "wide", agents).await.created, 400);
    let per_shard = (0..8).map(|s| (0..400).filter(|i| shard(&format!("a{i:03}"), 8) == s).count());
    assert!(per_shard.clone().all(|n| n >= 5), "every shard holds at least one call's worth: {per_shard:?}");

    let mut conn = redis.conn().await;
    for (key, value) in [("slowlog-max-len", "100000"), ("slowlog-log-slower-than", "0")] {
        let _: () = redis::cmd("CONFIG").arg("SET").arg(key).arg(value).query_async(&mut conn).await.unwrap();
    }
    let peeks = |mut conn: redis::aio::MultiplexedConnection, queue: &'static str| async move {
        let log: Vec<redis::Value> = redis::cmd("SLOWLOG").arg("GET").arg(-1).query_async(&mut conn).await.unwrap();
        let _: () = redis::cmd("SLOWLOG").arg("RESET").query_async(&mut conn).await.unwrap();
        log.iter()
            .filter(|entry| {
                let redis::Value::Array(fields) = entry else { return false };
                let args: Vec<String> = redis::from_redis_value(fields[3].clone()).unwrap_or_default();
                // Sent by a client, not run inside a script (whose address SLOWLOG gives as "?:0").
                let sent: String = redis::from_redis_value(fields[4].clone()).unwrap_or_default();
                sent != "?:0"
                    && args.len() > 1
                    && args[0] == "ZRANGE"
                    && args[1].starts_with(&format!("baton:{{q:{queue}#"))
            })
            .count()
    };
    let _ = peeks(conn.clone(), "wide").await;
    for _ in 0..8 {
        assert_eq!(common::acquire(&mut c, "wide", "w1", 5).await.len(), 5);
    }
    assert_eq!(peeks(conn.clone(), "wide").await, 0, "an Acquire the shard in turn could serve peeked at others");
    assert!(common::acquire(&mut c, "empty", "w1", 5).await.is_empty());
    assert_eq!(peeks(conn.clone(), "empty").await, 7, "an empty queue's other seven shards are peeked");
}

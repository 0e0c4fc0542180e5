//! ClaimService end to end, with stress tests on two Baton replicas on one
//! Redis where it matters.
//!
//! Invariants checked:
//! - exactly once: no resource is handed to two claims; no claim gets two resources;
//! - nothing lost: every offered resource ends idle or claimed, never stuck in the line's
//!   hand-over (`assigned`) or held by a claim nobody knows of — except by a claimer that
//!   cancelled after the server answered it, which the claim record names;
//! - every claim ends: with a resource, or empty when its wait ends.

use crate::common;

use std::{
    collections::{HashMap, HashSet},
    time::{Duration, Instant},
};

use baton::pb::claim_service_client::ClaimServiceClient;
use common::*;
use tonic::{transport::Channel, Code};

const P: &str = "pool";

async fn claims(baton: &TestBaton) -> ClaimServiceClient<Channel> {
    ClaimServiceClient::new(baton.channel().await)
}

fn res(id: &str) -> pb::Resource {
    pb::Resource { id: id.into(), attributes: Default::default() }
}

async fn offer(c: &mut ClaimServiceClient<Channel>, ids: &[&str]) -> pb::OfferResponse {
    let resources = ids.iter().map(|id| res(id)).collect();
    c.offer(pb::OfferRequest { request_id: String::new(), pool: P.into(), resources }).await.unwrap().into_inner()
}

fn claim_req(claimer: &str, wait_ms: u64) -> pb::ClaimRequest {
    pb::ClaimRequest {
        request_id: String::new(),
        hold: None,
        pool: P.into(),
        claimer_id: claimer.into(),
        attributes: Default::default(),
        wait: if wait_ms == 0 { None } else { dur(wait_ms) },
    }
}

async fn status(c: &mut ClaimServiceClient<Channel>) -> pb::PoolStatus {
    c.get_pool(pb::GetPoolRequest { pool: P.into() }).await.unwrap().into_inner().status.unwrap()
}

/// Resource ids in a pool set (idle, claimed), and what remains of the line and hand-overs.
async fn pool_state(redis: &TestRedis) -> (HashSet<String>, HashMap<String, String>, usize, usize) {
    let mut conn = redis.conn().await;
    let k = |part: &str| format!("baton:{{p:{P}}}:{part}");
    let idle: Vec<String> = redis::cmd("ZRANGE").arg(k("idle")).arg(0).arg(-1).query_async(&mut conn).await.unwrap();
    let claims: HashMap<String, String> = redis::cmd("HGETALL").arg(k("claims")).query_async(&mut conn).await.unwrap();
    let line: usize = redis::cmd("ZCARD").arg(k("line")).query_async(&mut conn).await.unwrap();
    let assigned: usize = redis::cmd("HLEN").arg(k("assigned")).query_async(&mut conn).await.unwrap();
    // claims: resource id -> claimer id
    let claims = claims.into_iter().map(|(id, rec)| (id, rec.split('|').nth(1).unwrap().to_string())).collect();
    (idle.into_iter().collect(), claims, line, assigned)
}

// Offer, Claim (FIFO, attributes merged), dedup, Return with and without reuse, Fail to the
// dead-letter queue, stale tokens refused without change.
#[tokio::test]
async fn lifecycle() {
    let env = Env::start().await;
    let mut c = claims(&env.baton).await;
    let mut a = res("r1");
    a.attributes.insert("zone".into(), "eu".into());
    let r = c
        .offer(pb::OfferRequest { request_id: String::new(), pool: P.into(), resources: vec![a, res("r2"), res("r3")] })
        .await
        .unwrap();
    assert_eq!(r.into_inner().idle, 3);

    let mut req = claim_req("alice", 0);
    req.attributes.insert("job".into(), "42".into());
    let first = c.claim(req).await.unwrap().into_inner();
    let resource = first.resource.unwrap();
    assert_eq!(resource.id, "r1", "the earliest offered is claimed first");
    assert_eq!(resource.attributes["zone"], "eu");
    assert_eq!(resource.attributes["job"], "42", "the claim's attributes are attached");
    let second = c.claim(claim_req("bob", 0)).await.unwrap().into_inner();
    assert_eq!(second.resource.as_ref().unwrap().id, "r2");
    assert!(second.token > first.token);

    let dup = offer(&mut c, &["r1", "r3", "r4"]).await;
    assert_eq!((dup.idle, dup.duplicates), (1, 2), "claimed and idle resources are not offered twice");

    let before = env.redis.snapshot().await;
    for (id, token) in [("r1", first.token + 100), ("r1", second.token), ("nope", first.token)] {
        let ret =
            pb::ReturnRequest { request_id: String::new(), pool: P.into(), resource_id: id.into(), token, reuse: true };
        let err = c.r#return(ret).await.unwrap_err();
        assert_eq!((err.code(), reason(&err).as_str()), (Code::FailedPrecondition, "LEASE_LOST"));
        let fail = pb::FailRequest {
            request_id: String::new(),
            pool: P.into(),
            resource_id: id.into(),
            token,
            error: "x".into(),
        };
        assert_eq!(reason(&c.fail(fail).await.unwrap_err()), "LEASE_LOST");
    }
    assert_eq!(env.redis.snapshot().await, before, "stale tokens changed nothing");

    // Return with reuse: idle again, at the back of the ready queue.
    c.r#return(pb::ReturnRequest {
        request_id: String::new(),
        pool: P.into(),
        resource_id: "r1".into(),
        token: first.token,
        reuse: true,
    })
    .await
    .unwrap();
    // Return without reuse: out of the pool until offered again.
    c.r#return(pb::ReturnRequest {
        request_id: String::new(),
        pool: P.into(),
        resource_id: "r2".into(),
        token: second.token,
        reuse: false,
    })
    .await
    .unwrap();
    let order: Vec<String> = {
        let mut ids = Vec::new();
        while let Some(r) = c.claim(claim_req("carol", 0)).await.unwrap().into_inner().resource {
            ids.push(r.id);
        }
        ids
    };
    assert_eq!(order, ["r3", "r4", "r1"]);

    // Fail: dead-lettered with its context.
    let again = offer(&mut c, &["r2"]).await;
    assert_eq!(again.idle, 1);
    let got = c.claim(claim_req("dave", 0)).await.unwrap().into_inner();
    let fail = pb::FailRequest {
        request_id: String::new(),
        pool: P.into(),
        resource_id: "r2".into(),
        token: got.token,
        error: "disk full".into(),
    };
    c.fail(fail).await.unwrap();
    let s = status(&mut c).await;
    assert_eq!((s.idle, s.claimed, s.dead_lettered), (0, 3, 1));
    let mut conn = env.redis.conn().await;
    let info: String =
        redis::cmd("HGET").arg(format!("baton:{{p:{P}}}:dlqinfo")).arg("r2").query_async(&mut conn).await.unwrap();
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!(
        (info["error"].as_str(), info["claimer"].as_str(), info["source"].as_str()),
        (Some("disk full"), Some("dave"), Some("pool"))
    );
}

// A claim waits in line until a resource is offered; a wait that ends answers empty; a full
// line answers RESOURCE_EXHAUSTED at once with a pushback hint.
#[tokio::test]
async fn waiting_line_and_backpressure() {
    let mut config = test_config();
    config.pool.max_line = 2;
    let env = Env::with_config(config).await;
    let mut c = claims(&env.baton).await;
    let empty = c.claim(claim_req("x", 200)).await.unwrap().into_inner();
    assert!(empty.resource.is_none() && empty.token == 0, "the wait ended: an empty answer, not an error");

    let mut w1 = c.clone();
    let mut w2 = c.clone();
    let first = tokio::spawn(async move { w1.claim(claim_req("w1", 20_000)).await.unwrap().into_inner() });
    while status(&mut c).await.waiting_claims < 1 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let second = tokio::spawn(async move { w2.claim(claim_req("w2", 20_000)).await.unwrap().into_inner() });
    while status(&mut c).await.waiting_claims < 2 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let full = c.claim(claim_req("w3", 20_000)).await.unwrap_err();
    assert_eq!((full.code(), reason(&full).as_str()), (Code::ResourceExhausted, "LINE_FULL"));
    assert!(full.metadata().get("grpc-retry-pushback-ms").is_some());

    let handed = offer(&mut c, &["a", "b"]).await;
    assert_eq!(handed.handed, 2);
    assert_eq!(first.await.unwrap().resource.unwrap().id, "a", "first in line, first served");
    assert_eq!(second.await.unwrap().resource.unwrap().id, "b");
}

// Within a replica and across replicas, claims are served in the order they joined the line.
#[tokio::test]
async fn fifo_across_replicas() {
    let env = Env::start().await;
    let other = TestBaton::start(&env.redis.url(), test_config()).await;
    let clients = [claims(&env.baton).await, claims(&other).await];
    let mut c = clients[0].clone();
    let mut waiting = Vec::new();
    for i in 0..6u64 {
        let mut client = clients[(i % 2) as usize].clone();
        waiting.push(tokio::spawn(async move {
            client.claim(claim_req(&format!("c{i}"), 20_000)).await.unwrap().into_inner()
        }));
        while status(&mut c).await.waiting_claims < i + 1 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    for i in 0..6 {
        offer(&mut c, &[&format!("r{i}")]).await;
    }
    for (i, w) in waiting.into_iter().enumerate() {
        assert_eq!(w.await.unwrap().resource.unwrap().id, format!("r{i}"), "claim {i} got its turn");
    }
    other.stop().await.unwrap();
}

// The scale-up signal rises once for a burst of waiting claims and falls when the line drains;
// WatchPool shows it.
#[tokio::test]
async fn scale_up_signal_is_deduplicated() {
    let env = Env::start().await;
    let mut c = claims(&env.baton).await;
    let mut watch = c.watch_pool(pb::WatchPoolRequest { pool: P.into() }).await.unwrap().into_inner();
    let first = watch.message().await.unwrap().unwrap().status.unwrap();
    assert!(!first.scale_up_pending);

    let mut burst = Vec::new();
    for i in 0..10 {
        let mut c = c.clone();
        burst.push(tokio::spawn(
            async move { c.claim(claim_req(&format!("b{i}"), 20_000)).await.unwrap().into_inner() },
        ));
    }
    while status(&mut c).await.waiting_claims < 10 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(status(&mut c).await.scale_up_pending);
    let mut rises = 0;
    let mut pending = false;
    let mut next = async || {
        let s = tokio::time::timeout(Duration::from_secs(10), watch.message()).await.expect("a status in time");
        s.unwrap().unwrap().status.unwrap()
    };
    // WatchPool shows the signal…
    loop {
        let s = next().await;
        if s.scale_up_pending && !pending {
            rises += 1;
        }
        pending = s.scale_up_pending;
        if pending {
            break;
        }
    }
    let ids: Vec<String> = (0..10).map(|i| format!("r{i}")).collect();
    offer(&mut c, &ids.iter().map(String::as_str).collect::<Vec<_>>()).await;
    for b in burst {
        assert!(b.await.unwrap().resource.is_some());
    }
    // …and its fall once the line drains.
    loop {
        let s = next().await;
        if s.scale_up_pending && !pending {
            rises += 1;
        }
        pending = s.scale_up_pending;
        if s.claimed == 10 && s.waiting_claims == 0 {
            assert!(!s.scale_up_pending, "lowered once the line drained");
            break;
        }
    }
    assert_eq!(rises, 1, "one signal for the whole burst");
    let mut conn = env.redis.conn().await;
    let raised: Option<String> =
        redis::cmd("GET").arg(format!("baton:{{p:{P}}}:scaleup")).query_async(&mut conn).await.unwrap();
    assert!(raised.is_none());
}

// Extreme scale: 2,000 concurrent claims on two replicas against 500 resources
// offered over time: every resource dispatched exactly once, every claim ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn extreme_scale_exactly_once() {
    let env = Env::start().await;
    let other = TestBaton::start(&env.redis.url(), test_config()).await;
    let mut channels = Vec::new();
    for i in 0..16 {
        channels.push(if i % 2 == 0 { env.baton.channel().await } else { other.channel().await });
    }
    let mut tasks = Vec::new();
    for i in 0..2_000 {
        let mut c = ClaimServiceClient::new(channels[i % channels.len()].clone());
        tasks.push(tokio::spawn(async move { c.claim(claim_req(&format!("c{i}"), 4_000)).await }));
    }
    let mut c = ClaimServiceClient::new(channels[0].clone());
    for batch in 0..50 {
        let ids: Vec<String> = (0..10).map(|i| format!("r{}", batch * 10 + i)).collect();
        offer(&mut c, &ids.iter().map(String::as_str).collect::<Vec<_>>()).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut got = HashSet::new();
    let mut empty = 0;
    for t in tasks {
        let r = t.await.unwrap().expect("every claim ends without error").into_inner();
        match r.resource {
            Some(res) => assert!(got.insert(res.id.clone()), "{} handed out twice", res.id),
            None => empty += 1,
        }
    }
    assert_eq!(got.len() + empty, 2_000);
    let (idle, claimed, line, assigned) = pool_state(&env.redis).await;
    assert_eq!((line, assigned), (0, 0), "nothing left in line or mid-hand-over");
    assert_eq!(claimed.len() + idle.len(), 500, "every resource accounted for");
    assert_eq!(claimed.keys().cloned().collect::<HashSet<_>>(), got, "every claimed resource reached its claimer");
    other.stop().await.unwrap();
}

// About 30 % of claimers cancel at random moments: resources still end claimed once (by a
// claimer that received them, or one that cancelled after the server answered) or idle.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelled_claims_give_their_place_back() {
    let env = Env::start().await;
    let other = TestBaton::start(&env.redis.url(), test_config()).await;
    let channels = [env.baton.channel().await, other.channel().await];
    let mut tasks = Vec::new();
    let mut cancelled = HashSet::new();
    for i in 0..400u64 {
        let mut c = ClaimServiceClient::new(channels[(i % 2) as usize].clone());
        let claimer = format!("c{i}");
        // A deterministic spread of cancellation moments, 10–700 ms into the wait.
        let cancel_after = (i % 10 < 3).then(|| Duration::from_millis(10 + (i * 37) % 690));
        if cancel_after.is_some() {
            cancelled.insert(claimer.clone());
        }
        tasks.push(tokio::spawn(async move {
            let call = c.claim(claim_req(&claimer, 3_000));
            match cancel_after {
                Some(after) => tokio::time::timeout(after, call).await.ok().map(|r| r.unwrap().into_inner()),
                None => Some(call.await.unwrap().into_inner()),
            }
        }));
    }
    let mut c = ClaimServiceClient::new(channels[0].clone());
    for batch in 0..20 {
        let ids: Vec<String> = (0..10).map(|i| format!("r{}", batch * 10 + i)).collect();
        offer(&mut c, &ids.iter().map(String::as_str).collect::<Vec<_>>()).await;
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    let mut received = HashSet::new();
    for t in tasks {
        if let Some(r) = t.await.unwrap() {
            if let Some(res) = r.resource {
                assert!(received.insert(res.id.clone()), "{} handed out twice", res.id);
            }
        }
    }
    // Give-backs of cancelled claims run as the server notices the cancellation.
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let (idle, claims, line, assigned) = pool_state(&env.redis).await;
        let settled = line == 0 && assigned == 0 && idle.len() + claims.len() == 200;
        if settled || Instant::now() > until {
            assert!(settled, "line {line}, hand-overs {assigned}, idle {} + claimed {}", idle.len(), claims.len());
            for (id, claimer) in &claims {
                assert!(
                    received.contains(id) || cancelled.contains(claimer),
                    "{id} held by {claimer}, who neither received it nor cancelled"
                );
            }
            for id in &received {
                assert!(claims.contains_key(id), "{id} was received but is not claimed");
            }
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    other.stop().await.unwrap();
}

// Storm: continuous Claim, Return and Offer through two replicas, then one shuts down: the
// shutdown completes within 5 s and nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn storm_then_shutdown_loses_nothing() {
    let env = Env::start().await;
    let other = TestBaton::start(&env.redis.url(), test_config()).await;
    let channels = [env.baton.channel().await, other.channel().await];
    let mut c = ClaimServiceClient::new(channels[0].clone());
    let ids: Vec<String> = (0..100).map(|i| format!("r{i}")).collect();
    offer(&mut c, &ids.iter().map(String::as_str).collect::<Vec<_>>()).await;
    let stop = tokio_util::sync::CancellationToken::new();
    let mut tasks = Vec::new();
    for w in 0..16 {
        let mut c = ClaimServiceClient::new(channels[w % 2].clone());
        let stop = stop.clone();
        tasks.push(tokio::spawn(async move {
            let mut held = Vec::new();
            while !stop.is_cancelled() {
                match c.claim(claim_req(&format!("s{w}"), 500)).await {
                    Ok(r) => {
                        let r = r.into_inner();
                        if let Some(res) = r.resource {
                            held.push((res.id, r.token));
                        }
                    }
                    Err(s) => {
                        // Only the stopped replica's callers get here: its connection closed.
                        // A call sent as the server's GOAWAY arrived is refused by the client's
                        // own HTTP/2 layer, which tonic reports as INTERNAL "h2 protocol error:
                        // GoAway NO_ERROR" (seen under load; the GoAway may be only in the
                        // status's source, with the message "h2 protocol error: http2 error"):
                        // not an error of Baton's.
                        let goaway = s.code() == Code::Internal && format!("{s:?}").contains("GoAway(");
                        assert!(matches!(s.code(), Code::Unavailable | Code::Cancelled) || goaway, "{s:?}");
                        break;
                    }
                }
                if held.len() > 2 {
                    let (id, token) = held.remove(0);
                    let ret = pb::ReturnRequest {
                        request_id: String::new(),
                        pool: P.into(),
                        resource_id: id,
                        token,
                        reuse: true,
                    };
                    if c.r#return(ret).await.is_err() {
                        break;
                    }
                }
            }
            held
        }));
    }
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let started = Instant::now();
    other.stop().await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5), "shutdown within 5 s");
    stop.cancel();
    let mut held = HashSet::new();
    for t in tasks {
        for (id, _) in t.await.unwrap() {
            assert!(held.insert(id.clone()), "{id} held twice");
        }
    }
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let (idle, claims, line, assigned) = pool_state(&env.redis).await;
        if (line == 0 && assigned == 0 && idle.len() + claims.len() == 100) || Instant::now() > until {
            assert_eq!((line, assigned), (0, 0));
            assert_eq!(idle.len() + claims.len(), 100, "every resource idle or claimed");
            assert!(idle.is_disjoint(&claims.keys().cloned().collect()));
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// Bad input for every field.
#[tokio::test]
async fn claim_calls_reject_bad_fields() {
    let mut config = test_config();
    config.limits.max_batch = 2;
    config.limits.max_labels = 1;
    config.limits.max_label_bytes = 3;
    config.limits.max_wait_ms = 1_000;
    config.limits.max_message_bytes = 4;
    let env = Env::with_config(config).await;
    let mut c = claims(&env.baton).await;
    let bad = |s: tonic::Status, field: &str| {
        assert_eq!(s.code(), Code::InvalidArgument, "{field}: {s:?}");
        assert!(s.message().starts_with(field), "{field}: {}", s.message());
    };
    let o = |pool: &str, resources: Vec<pb::Resource>| pb::OfferRequest {
        request_id: String::new(),
        pool: pool.into(),
        resources,
    };
    bad(c.offer(o("", vec![res("a")])).await.unwrap_err(), "pool");
    bad(c.offer(o("p:q", vec![res("a")])).await.unwrap_err(), "pool");
    bad(c.offer(o(P, vec![])).await.unwrap_err(), "resources");
    bad(c.offer(o(P, vec![res("a"), res("b"), res("c")])).await.unwrap_err(), "resources");
    bad(c.offer(o(P, vec![res("a"), res("")])).await.unwrap_err(), "resources[1].id");
    bad(c.offer(o(P, vec![res("a"), res("a")])).await.unwrap_err(), "resources[1].id");
    let mut attrs = res("a");
    attrs.attributes.insert("k".into(), "long".into());
    bad(c.offer(o(P, vec![attrs])).await.unwrap_err(), "resources[0].attributes[k]");
    let mut many = res("a");
    many.attributes.insert("a".into(), "1".into());
    many.attributes.insert("b".into(), "2".into());
    bad(c.offer(o(P, vec![many])).await.unwrap_err(), "resources[0].attributes");

    bad(c.claim(pb::ClaimRequest { pool: "".into(), ..claim_req("x", 0) }).await.unwrap_err(), "pool");
    bad(c.claim(claim_req("", 0)).await.unwrap_err(), "claimer_id");
    bad(c.claim(claim_req("x y", 0)).await.unwrap_err(), "claimer_id");
    let mut with = claim_req("x", 0);
    with.attributes.insert("".into(), "1".into());
    bad(c.claim(with).await.unwrap_err(), "attributes");

    let ret = pb::ReturnRequest {
        request_id: String::new(),
        pool: P.into(),
        resource_id: "a".into(),
        token: 1,
        reuse: false,
    };
    bad(c.r#return(pb::ReturnRequest { pool: "".into(), ..ret.clone() }).await.unwrap_err(), "pool");
    bad(c.r#return(pb::ReturnRequest { resource_id: "".into(), ..ret.clone() }).await.unwrap_err(), "resource_id");
    bad(c.r#return(pb::ReturnRequest { token: 0, ..ret.clone() }).await.unwrap_err(), "token");
    let fail = pb::FailRequest {
        request_id: String::new(),
        pool: P.into(),
        resource_id: "a".into(),
        token: 1,
        error: "e".into(),
    };
    bad(c.fail(pb::FailRequest { pool: "{x}".into(), ..fail.clone() }).await.unwrap_err(), "pool");
    bad(c.fail(pb::FailRequest { resource_id: "a:b".into(), ..fail.clone() }).await.unwrap_err(), "resource_id");
    bad(c.fail(pb::FailRequest { token: 0, ..fail.clone() }).await.unwrap_err(), "token");
    bad(c.fail(pb::FailRequest { request_id: "a b".into(), ..fail.clone() }).await.unwrap_err(), "request_id");
    bad(c.get_pool(pb::GetPoolRequest { pool: "".into() }).await.unwrap_err(), "pool");
    bad(c.watch_pool(pb::WatchPoolRequest { pool: "a b".into() }).await.unwrap_err(), "pool");
    assert!(env.redis.snapshot().await.is_empty(), "rejected calls wrote nothing");
}

// A replica killed while its claim waits: a resource handed to that claim is never picked up;
// the sweeper gives it back after the wait plus the grace, and a new claim gets it.
#[tokio::test]
async fn unpicked_hand_over_of_a_dead_replica_is_reclaimed() {
    let redis = TestRedis::start().await;
    let mut doomed = BatonProcess::spawn(|cmd| {
        cmd.args(["--redis-url", &redis.url()])
            .env("BATON_ORPHAN_CLEANUP__ENABLED", "false")
            .env("BATON_ZOMBIE_CLEANUP__ENABLED", "false")
            .env("BATON_PURGE__ENABLED", "false");
    });
    let channel = doomed.channel().await;
    let mut via_doomed = ClaimServiceClient::new(channel);
    let waiter = tokio::spawn(async move { via_doomed.claim(claim_req("ghost", 1_000)).await });

    let mut config = test_config();
    config.orphan_cleanup.interval_ms = 100;
    config.orphan_cleanup.leadership_ttl_ms = 500;
    config.pool.assignment_grace_ms = 200;
    let survivor = TestBaton::start(&redis.url(), config).await;
    let mut c = claims(&survivor).await;
    while status(&mut c).await.waiting_claims < 1 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    doomed.child.kill().unwrap();
    doomed.child.wait().unwrap();
    assert!(waiter.await.unwrap().is_err(), "the doomed replica's caller lost its call");
    // The ghost claim is still in line (its wait has not ended): the offer is handed to it.
    assert_eq!(offer(&mut c, &["orphaned"]).await.handed, 1);
    let got = c.claim(claim_req("heir", 10_000)).await.unwrap().into_inner();
    assert_eq!(got.resource.unwrap().id, "orphaned", "given back by the sweeper and claimed again");
    let (_, claims, line, assigned) = pool_state(&redis).await;
    assert_eq!((line, assigned), (0, 0));
    assert_eq!(claims.get("orphaned").map(String::as_str), Some("heir"));
    survivor.stop().await.unwrap();
}

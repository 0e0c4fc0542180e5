//! LeaderService end to end, and the leadership of Baton's own sweepers (`baton-sweeper`).
//!
//! Invariant checked by the race: terms never overlap in Redis time. Term k starts at its
//! campaign's `expires_at - ttl` and ends at its resignation (`resigned_at`) or at the last
//! expiry any renewal granted it; term k+1 must start at or after term k ends, and tokens
//! number the terms 1, 2, 3, … in that order.

use crate::common;

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use baton::pb::leader_service_client::LeaderServiceClient;
use common::*;
use tonic::{transport::Channel, Code};

const E: &str = "primary";

async fn leaders(baton: &TestBaton) -> LeaderServiceClient<Channel> {
    LeaderServiceClient::new(baton.channel().await)
}

fn campaign(candidate: &str, ttl_ms: u64, wait_ms: u64) -> pb::CampaignRequest {
    pb::CampaignRequest {
        election: E.into(),
        candidate_id: candidate.into(),
        ttl: dur(ttl_ms),
        wait: if wait_ms == 0 { None } else { dur(wait_ms) },
    }
}

#[derive(Debug, Default, Clone)]
struct TermRecord {
    candidate: String,
    start: i64,
    end: i64,
    resigned: bool,
}

// 20 candidates racing Campaign / Renew / Resign until at least 30 terms have run (6 of them
// ended by expiry): never two valid leaders at once. The race stops on that count, not after a
// fixed time, so a slow machine runs it longer instead of proving less.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_candidates_never_overlap() {
    let env = Env::start().await;
    let second = TestBaton::start(&env.redis.url(), test_config()).await;
    let clients = [leaders(&env.baton).await, leaders(&second).await];
    let history = Arc::new(std::sync::Mutex::new(BTreeMap::<u64, TermRecord>::new()));
    const TTL: u64 = 150;
    const TERMS: usize = 30;
    const EXPIRED: usize = 6;
    let enough =
        |h: &BTreeMap<u64, TermRecord>| h.len() >= TERMS && h.values().filter(|t| !t.resigned).count() >= EXPIRED;
    let mut tasks = Vec::new();
    // A bound for a broken server only; the race ends on `enough`.
    let limit = std::time::Instant::now() + Duration::from_secs(120);
    for i in 0..20u64 {
        let mut c = clients[(i % 2) as usize].clone();
        let history = history.clone();
        tasks.push(tokio::spawn(async move {
            let me = format!("cand-{i}");
            let mut round = 0u64;
            while !enough(&history.lock().unwrap()) {
                assert!(std::time::Instant::now() < limit, "the race never reached {TERMS} terms");
                round += 1;
                let r = c.campaign(campaign(&me, TTL, 0)).await.unwrap().into_inner();
                if !r.is_leader {
                    tokio::time::sleep(Duration::from_millis(5 + (i * 7 + round) % 20)).await;
                    continue;
                }
                let expires = ms(&r.expires_at);
                let record = |h: &mut BTreeMap<u64, TermRecord>, end: i64, resigned: bool| {
                    let t = h.entry(r.token).or_default();
                    if t.candidate.is_empty() {
                        t.candidate = me.clone();
                        t.start = expires - TTL as i64;
                    }
                    assert_eq!(t.candidate, me, "token {} held by two candidates", r.token);
                    if resigned {
                        t.end = end;
                        t.resigned = true;
                    } else if !t.resigned {
                        t.end = t.end.max(end);
                    }
                };
                record(&mut history.lock().unwrap(), expires, false);
                // Renew 0-3 times a third of the ttl apart, then resign, or (every other
                // round) fall silent past the expiry as a crashed leader would.
                for _ in 0..(round % 4) {
                    tokio::time::sleep(Duration::from_millis(TTL / 3)).await;
                    let renew = pb::RenewRequest { election: E.into(), candidate_id: me.clone(), token: r.token };
                    match c.renew(renew).await {
                        Ok(ok) => record(&mut history.lock().unwrap(), ms(&ok.into_inner().expires_at), false),
                        Err(s) => assert_eq!(reason(&s), "LEASE_LOST"),
                    }
                }
                if round % 2 == 1 {
                    tokio::time::sleep(Duration::from_millis(TTL + 30)).await;
                } else {
                    let resign = pb::ResignRequest { election: E.into(), candidate_id: me.clone(), token: r.token };
                    match c.resign(resign).await {
                        Ok(ok) => record(&mut history.lock().unwrap(), ms(&ok.into_inner().resigned_at), true),
                        Err(s) => assert_eq!(reason(&s), "LEASE_LOST"),
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let history = history.lock().unwrap().clone();
    assert!(enough(&history), "the race stopped early");
    let tokens: Vec<u64> = history.keys().copied().collect();
    assert_eq!(tokens, (1..=tokens.len() as u64).collect::<Vec<_>>(), "every term seen, tokens 1, 2, 3, …");
    for (prev, next) in history.values().zip(history.values().skip(1)) {
        assert!(next.start >= prev.end, "overlapping terms: {prev:?} then {next:?}");
    }
    second.stop().await.unwrap();
}

// A leader that stops renewing is replaced once its ttl runs out; its late Renew is refused.
#[tokio::test]
async fn expired_leader_is_replaced() {
    let env = Env::start().await;
    let mut c = leaders(&env.baton).await;
    let a = c.campaign(campaign("a", 500, 0)).await.unwrap().into_inner();
    assert!(a.is_leader);
    let lost = c.campaign(campaign("b", 500, 0)).await.unwrap().into_inner();
    assert!(!lost.is_leader);
    assert_eq!((lost.leader_id.as_str(), lost.token), ("a", a.token));

    let started = std::time::Instant::now();
    let b = c.campaign(campaign("b", 500, 10_000)).await.unwrap().into_inner();
    assert!(b.is_leader, "b elected once a's term expired");
    assert!(b.token > a.token);
    assert!(ms(&b.expires_at) - 500 >= ms(&a.expires_at), "b's term starts after a's ended");
    assert!(started.elapsed() < Duration::from_secs(5), "within ttl plus a retry, not at the end of the wait");

    let err =
        c.renew(pb::RenewRequest { election: E.into(), candidate_id: "a".into(), token: a.token }).await.unwrap_err();
    assert_eq!((err.code(), reason(&err).as_str()), (Code::FailedPrecondition, "LEASE_LOST"));
}

// A term that expired with nobody replacing it (no campaign, no read has noticed the expiry
// yet) cannot be revived by its leader's late Renew: LEASE_LOST, and nobody leads.
#[tokio::test]
async fn renew_does_not_revive_an_expired_term() {
    let env = Env::start().await;
    let mut c = leaders(&env.baton).await;
    let a = c.campaign(campaign("a", 300, 0)).await.unwrap().into_inner();
    assert!(a.is_leader);
    let expires = ms(&a.expires_at);
    let redis = &env.redis;
    eventually(Duration::from_secs(10), "the term's expiry by the Redis clock", || async move {
        redis.now_ms().await > expires
    })
    .await;
    let err =
        c.renew(pb::RenewRequest { election: E.into(), candidate_id: "a".into(), token: a.token }).await.unwrap_err();
    assert_eq!((err.code(), reason(&err).as_str()), (Code::FailedPrecondition, "LEASE_LOST"));
    let got = c.get_leader(pb::GetLeaderRequest { election: E.into() }).await.unwrap().into_inner();
    assert!(got.leader_id.is_empty() && got.token == 0, "nobody leads: {got:?}");
}

// Resign hands over at once to a waiting campaigner; stale tokens change nothing.
#[tokio::test]
async fn resign_hands_over_at_once() {
    let env = Env::start().await;
    let mut c = leaders(&env.baton).await;
    let a = c.campaign(campaign("a", 60_000, 0)).await.unwrap().into_inner();
    let refreshed = c.campaign(campaign("a", 60_000, 0)).await.unwrap().into_inner();
    assert!(refreshed.is_leader && refreshed.token == a.token, "campaigning again while leading refreshes the term");

    let mut waiter = c.clone();
    let b = tokio::spawn(async move { waiter.campaign(campaign("b", 60_000, 30_000)).await.unwrap().into_inner() });
    tokio::time::sleep(Duration::from_millis(200)).await;

    let before = env.redis.snapshot().await;
    for (who, token) in [("a", a.token + 1), ("a", 0), ("b", a.token)] {
        let renew =
            c.renew(pb::RenewRequest { election: E.into(), candidate_id: who.into(), token }).await.unwrap_err();
        let resign =
            c.resign(pb::ResignRequest { election: E.into(), candidate_id: who.into(), token }).await.unwrap_err();
        if token == 0 {
            assert_eq!((renew.code(), resign.code()), (Code::InvalidArgument, Code::InvalidArgument));
        } else {
            assert_eq!((reason(&renew).as_str(), reason(&resign).as_str()), ("LEASE_LOST", "LEASE_LOST"));
        }
    }
    assert_eq!(env.redis.snapshot().await, before, "rejected Renew/Resign changed state");

    let started = std::time::Instant::now();
    c.resign(pb::ResignRequest { election: E.into(), candidate_id: "a".into(), token: a.token }).await.unwrap();
    let b = b.await.unwrap();
    assert!(b.is_leader && b.token > a.token);
    assert!(started.elapsed() < Duration::from_secs(10), "handed over at once, not after the 60 s ttl");
    let got = c.get_leader(pb::GetLeaderRequest { election: E.into() }).await.unwrap().into_inner();
    assert_eq!((got.leader_id.as_str(), got.token), ("b", b.token));
}

// GetLeader with no leader answers an empty leader, not an error.
#[tokio::test]
async fn get_leader_without_leader() {
    let env = Env::start().await;
    let mut c = leaders(&env.baton).await;
    let got = c.get_leader(pb::GetLeaderRequest { election: "nobody".into() }).await.unwrap().into_inner();
    assert!(got.leader_id.is_empty() && got.token == 0 && got.expires_at.is_none());
}

// Observe on replica B sees changes made through replica A: elected, resigned, expired; and the
// stream ends cleanly when B shuts down.
#[tokio::test]
async fn observe_follows_changes_across_replicas() {
    let env = Env::start().await;
    let b = TestBaton::start(&env.redis.url(), test_config()).await;
    let mut via_a = leaders(&env.baton).await;
    let mut stream = leaders(&b).await.observe(pb::ObserveRequest { election: E.into() }).await.unwrap().into_inner();
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(10), stream.message()).await.expect("event in time").unwrap().unwrap()
    };
    let first = next().await;
    assert_eq!(first.kind(), pb::LeadershipEventKind::Current);
    assert!(first.leader_id.is_empty());

    let a = via_a.campaign(campaign("a", 60_000, 0)).await.unwrap().into_inner();
    let e = next().await;
    assert_eq!((e.kind(), e.leader_id.as_str(), e.token), (pb::LeadershipEventKind::Elected, "a", a.token));
    via_a.resign(pb::ResignRequest { election: E.into(), candidate_id: "a".into(), token: a.token }).await.unwrap();
    let e = next().await;
    assert_eq!((e.kind(), e.token), (pb::LeadershipEventKind::Resigned, a.token));

    let c = via_a.campaign(campaign("c", 300, 0)).await.unwrap().into_inner();
    assert_eq!(next().await.kind(), pb::LeadershipEventKind::Elected);
    let e = next().await;
    assert_eq!((e.kind(), e.leader_id.as_str(), e.token), (pb::LeadershipEventKind::Expired, "c", c.token));

    b.stop().await.unwrap();
    let end = tokio::time::timeout(Duration::from_secs(10), stream.message()).await.expect("stream ends");
    assert!(matches!(end, Ok(None)), "clean end of stream, got {end:?}");
}

// Bad input for every field.
#[tokio::test]
async fn leader_calls_reject_bad_fields() {
    let env = Env::start().await;
    let mut c = leaders(&env.baton).await;
    let bad = |s: tonic::Status, field: &str| {
        assert_eq!(s.code(), Code::InvalidArgument, "{field}: {s:?}");
        assert!(s.message().starts_with(field), "{field}: {}", s.message());
    };
    let ok = campaign("a", 1_000, 0);
    bad(c.campaign(pb::CampaignRequest { election: "".into(), ..ok.clone() }).await.unwrap_err(), "election");
    bad(c.campaign(pb::CampaignRequest { election: "a:b".into(), ..ok.clone() }).await.unwrap_err(), "election");
    bad(c.campaign(pb::CampaignRequest { candidate_id: "".into(), ..ok.clone() }).await.unwrap_err(), "candidate_id");
    bad(
        c.campaign(pb::CampaignRequest { candidate_id: "a|b".into(), ..ok.clone() }).await.unwrap_err(),
        "candidate_id",
    );
    bad(c.campaign(pb::CampaignRequest { ttl: None, ..ok.clone() }).await.unwrap_err(), "ttl");
    bad(c.campaign(pb::CampaignRequest { ttl: dur(50), ..ok.clone() }).await.unwrap_err(), "ttl");
    bad(c.campaign(pb::CampaignRequest { ttl: dur(3_600_001), ..ok.clone() }).await.unwrap_err(), "ttl");
    let renew = pb::RenewRequest { election: E.into(), candidate_id: "a".into(), token: 1 };
    bad(c.renew(pb::RenewRequest { election: "".into(), ..renew.clone() }).await.unwrap_err(), "election");
    bad(c.renew(pb::RenewRequest { candidate_id: "".into(), ..renew.clone() }).await.unwrap_err(), "candidate_id");
    bad(c.renew(pb::RenewRequest { token: 0, ..renew.clone() }).await.unwrap_err(), "token");
    let resign = pb::ResignRequest { election: E.into(), candidate_id: "a".into(), token: 1 };
    bad(c.resign(pb::ResignRequest { election: "{x}".into(), ..resign.clone() }).await.unwrap_err(), "election");
    bad(
        c.resign(pb::ResignRequest { candidate_id: "x y".into(), ..resign.clone() }).await.unwrap_err(),
        "candidate_id",
    );
    bad(c.resign(pb::ResignRequest { token: 0, ..resign.clone() }).await.unwrap_err(), "token");
    bad(c.get_leader(pb::GetLeaderRequest { election: "".into() }).await.unwrap_err(), "election");
    bad(c.observe(pb::ObserveRequest { election: "a b".into() }).await.unwrap_err(), "election");
    assert!(env.redis.snapshot().await.is_empty(), "rejected calls wrote nothing");
}

// Baton's own background leadership (the `baton-sweeper` election, which picks the one replica
// that sweeps), between two real replicas: one of them leads; when it shuts down it resigns and
// the other takes over without waiting for the ttl (30 s here).
#[tokio::test]
async fn internal_leadership_fails_over_on_shutdown() {
    let redis = TestRedis::start().await;
    let url = redis.url();
    let replica = |name: &str| {
        let mut config = test_config();
        config.replica_id = name.into();
        config.orphan_cleanup.leadership_ttl_ms = 30_000;
        TestBaton::start(&url, config)
    };
    let (one, two) = (replica("one").await, replica("two").await);
    let sweeper = || pb::GetLeaderRequest { election: "baton-sweeper".into() };
    let mut c = leaders(&one).await;
    let end = std::time::Instant::now() + Duration::from_secs(30);
    let first = loop {
        let l = c.get_leader(sweeper()).await.unwrap().into_inner();
        if !l.leader_id.is_empty() {
            break l;
        }
        assert!(std::time::Instant::now() < end, "no replica was elected");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let (leader, follower, follower_id) = match first.leader_id.as_str() {
        "one" => (one, two, "two"),
        "two" => (two, one, "one"),
        other => panic!("the sweeper's leader is {other}, neither replica"),
    };
    let c = leaders(&follower).await;
    let started = std::time::Instant::now();
    leader.stop().await.unwrap();
    eventually(Duration::from_secs(10), "the other replica takes over", || {
        let mut c = c.clone();
        async move {
            let l = c.get_leader(sweeper()).await.unwrap().into_inner();
            l.leader_id == follower_id && l.token > first.token
        }
    })
    .await;
    assert!(started.elapsed() < Duration::from_secs(10), "took over on resignation, not after the 30 s ttl");
    follower.stop().await.unwrap();
}

// A Campaign whose caller left while its script waited in Redis: the term it won is resigned,
// not held for a ttl by nobody.
#[tokio::test]
async fn dropped_campaign_resigns_what_it_won() {
    let env = Env::start().await;
    let mut c = leaders(&env.baton).await;
    // A busy script holds Redis so the campaign's script waits in line after it was sent; the
    // caller gives up meanwhile (its stream is reset).
    let hold = env.redis.hold_busy(300).await;
    let call = c.campaign(campaign("gone", 60_000, 10_000));
    assert!(tokio::time::timeout(Duration::from_millis(100), call).await.is_err(), "held behind the busy script");
    hold.await.unwrap();
    // The campaign did win the election's first term, and that term ends resigned, long before
    // its 60 s ttl.
    let history = || {
        let mut c = c.clone();
        async move {
            let req = pb::GetElectionHistoryRequest { election: E.into(), limit: 0 };
            c.get_election_history(req).await.unwrap().into_inner().terms
        }
    };
    eventually(Duration::from_secs(10), "the dropped campaign's term is resigned", || async {
        let terms = history().await;
        matches!(&terms[..], [t] if t.token == 1 && t.leader_id == "gone" && t.end() == pb::TermEnd::Resigned)
    })
    .await;
    let l = c.get_leader(pb::GetLeaderRequest { election: E.into() }).await.unwrap().into_inner();
    assert!(l.leader_id.is_empty(), "nobody leads: {l:?}");
}

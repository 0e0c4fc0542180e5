//! The registry of elections (LeaderService.ListElections) and each election's history of
//! terms (GetElectionHistory), end to end through the generated client.
//!
//! Invariants checked: every term a Campaign starts is recorded, newest first, with its leader,
//! token and start; its end is recorded by whatever ends it — Resign (resigned, at the
//! resignation), an expiry noticed by a Campaign or an Observe stream (expired, at the expiry),
//! a new term over a term whose end went unrecorded (superseded); a history keeps the newest
//! 50 terms; the registry lists every election a term began in, newest term first, page by
//! page without loss or repeat, and the sweeper's discovery scan puts back an entry that is
//! missing; bad input is INVALID_ARGUMENT naming the field and changes nothing.

use crate::common;

use std::time::Duration;

use baton::pb::leader_service_client::LeaderServiceClient;
use common::*;
use tonic::{transport::Channel, Code};

async fn leaders(baton: &TestBaton) -> LeaderServiceClient<Channel> {
    LeaderServiceClient::new(baton.channel().await)
}

fn campaign(election: &str, candidate: &str, ttl_ms: u64) -> pb::CampaignRequest {
    pb::CampaignRequest { election: election.into(), candidate_id: candidate.into(), ttl: dur(ttl_ms), wait: None }
}

async fn history(c: &mut LeaderServiceClient<Channel>, election: &str) -> Vec<pb::ElectionTerm> {
    let req = pb::GetElectionHistoryRequest { election: election.into(), limit: 0 };
    c.get_election_history(req).await.unwrap().into_inner().terms
}

/// The history as (leader, token, end, ended_at) rows, newest first.
fn rows(terms: &[pb::ElectionTerm]) -> Vec<(String, u64, pb::TermEnd, Option<i64>)> {
    terms.iter().map(|t| (t.leader_id.clone(), t.token, t.end(), t.ended_at.map(|_| ms(&t.ended_at)))).collect()
}

async fn all_elections(c: &mut LeaderServiceClient<Channel>, page_size: u32) -> Vec<pb::ElectionSummary> {
    let mut all = Vec::new();
    let mut page_token = String::new();
    loop {
        let page = c.list_elections(pb::ListElectionsRequest { page_size, page_token }).await.unwrap().into_inner();
        assert!(page.elections.len() <= page_size as usize);
        all.extend(page.elections);
        if page.next_page_token.is_empty() {
            return all;
        }
        page_token = page.next_page_token;
    }
}

// A term begun by Campaign, ended by Resign; one that expires, seen ended by a read before
// anyone notices and recorded as expired by the Campaign that notices; the registry follows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terms_are_recorded_as_they_begin_and_end() {
    let env = Env::start().await;
    let mut c = leaders(&env.baton).await;
    const E: &str = "billing";
    assert!(history(&mut c, E).await.is_empty(), "no term yet, no history");

    let a = c.campaign(campaign(E, "a", 60_000)).await.unwrap().into_inner();
    let refreshed = c.campaign(campaign(E, "a", 60_000)).await.unwrap().into_inner();
    assert_eq!(refreshed.token, a.token, "a refresh is no new term");
    let terms = history(&mut c, E).await;
    assert_eq!(rows(&terms), [("a".into(), a.token, pb::TermEnd::Unspecified, None)]);
    assert_eq!(ms(&terms[0].started_at), ms(&a.expires_at) - 60_000, "started at the campaign (Redis time)");
    assert_eq!(ms(&terms[0].expires_at), ms(&refreshed.expires_at), "the current term's expiry");

    let listed = all_elections(&mut c, 100).await;
    let entry = listed.iter().find(|e| e.election == E).expect("registered by its first term");
    assert_eq!((entry.leader_id.as_str(), entry.token), ("a", a.token));
    assert_eq!(ms(&entry.last_term_started_at), ms(&terms[0].started_at));

    let resigned = c
        .resign(pb::ResignRequest { election: E.into(), candidate_id: "a".into(), token: a.token })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        rows(&history(&mut c, E).await),
        [("a".into(), a.token, pb::TermEnd::Resigned, Some(ms(&resigned.resigned_at)))]
    );

    // b's term runs out. A read answers it expired at once (nothing written yet)…
    let b = c.campaign(campaign(E, "b", 300)).await.unwrap().into_inner();
    let expired_at = ms(&b.expires_at);
    eventually(Duration::from_secs(10), "b's term read as expired", || {
        let mut c = c.clone();
        async move { history(&mut c, E).await[0].end() == pb::TermEnd::Expired }
    })
    .await;
    let terms = history(&mut c, E).await;
    assert_eq!(rows(&terms)[0], ("b".into(), b.token, pb::TermEnd::Expired, Some(expired_at)));
    assert!(terms[0].expires_at.is_none(), "an ended term has no expiry");
    // …and the Campaign that notices the expiry records it.
    let d = c.campaign(campaign(E, "d", 60_000)).await.unwrap().into_inner();
    let mut conn = env.redis.conn().await;
    let stored: Vec<String> = redis::cmd("LRANGE")
        .arg(format!("baton:{{e:{E}}}:history"))
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(stored[1], format!("{}|b|{}|{expired_at}|expired", b.token, expired_at - 300));
    assert_eq!(
        rows(&history(&mut c, E).await),
        [
            ("d".into(), d.token, pb::TermEnd::Unspecified, None),
            ("b".into(), b.token, pb::TermEnd::Expired, Some(expired_at)),
            ("a".into(), a.token, pb::TermEnd::Resigned, Some(ms(&resigned.resigned_at))),
        ]
    );
    let entry = all_elections(&mut c, 100).await.into_iter().find(|e| e.election == E).unwrap();
    assert_eq!((entry.leader_id.as_str(), entry.token), ("d", d.token));
    assert_eq!(ms(&entry.last_term_started_at), ms(&d.expires_at) - 60_000, "moved to d's term");
}

// An expiry noticed by an Observe stream (readLeader announcing it) is recorded as expired.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expiry_an_observer_notices_is_recorded() {
    let env = Env::start().await;
    let mut c = leaders(&env.baton).await;
    const E: &str = "watched";
    let a = c.campaign(campaign(E, "a", 300)).await.unwrap().into_inner();
    let mut stream = c.observe(pb::ObserveRequest { election: E.into() }).await.unwrap().into_inner();
    let expired = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let m = stream.message().await.unwrap().unwrap();
            if m.kind() == pb::LeadershipEventKind::Expired {
                return m;
            }
        }
    })
    .await
    .expect("EXPIRED within 10 s");
    assert_eq!(expired.token, a.token);
    let mut conn = env.redis.conn().await;
    let stored: Vec<String> = redis::cmd("LRANGE")
        .arg(format!("baton:{{e:{E}}}:history"))
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    let at = ms(&a.expires_at);
    assert_eq!(stored, [format!("{}|a|{}|{at}|expired", a.token, at - 300)], "recorded by the announcing read");
}

// A term whose end no script recorded (ended by a Baton older than the history: its term
// record says inactive, its history entry is still open) reads as ended, and the next term
// marks it superseded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_term_ended_unrecorded_is_superseded_by_the_next() {
    let env = Env::start().await;
    let mut c = leaders(&env.baton).await;
    const E: &str = "mixed";
    let a = c.campaign(campaign(E, "a", 60_000)).await.unwrap().into_inner();
    // What an older replica's resignLeader does: the term record only.
    let mut conn = env.redis.conn().await;
    let term = format!("baton:{{e:{E}}}:term");
    let now = env.redis.now_ms().await;
    let _: i64 = redis::cmd("HSET")
        .arg(&term)
        .arg("active")
        .arg("0")
        .arg("expires_at")
        .arg(now)
        .query_async(&mut conn)
        .await
        .unwrap();
    let terms = history(&mut c, E).await;
    assert_eq!(rows(&terms), [("a".into(), a.token, pb::TermEnd::Unspecified, Some(now))], "ended, how unrecorded");

    let b = c.campaign(campaign(E, "b", 60_000)).await.unwrap().into_inner();
    assert!(b.is_leader);
    let terms = history(&mut c, E).await;
    assert_eq!(
        rows(&terms),
        [
            ("b".into(), b.token, pb::TermEnd::Unspecified, None),
            ("a".into(), a.token, pb::TermEnd::Superseded, Some(now))
        ]
    );
    assert!(ms(&terms[1].ended_at) <= ms(&terms[0].started_at));
}

// 55 terms: the history keeps the newest 50, newest first; `limit` takes the newest few.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_history_keeps_the_last_50_terms() {
    let env = Env::start().await;
    let mut c = leaders(&env.baton).await;
    const E: &str = "busy";
    let mut tokens = Vec::new();
    for i in 0..55 {
        let who = format!("node-{i}");
        let t = c.campaign(campaign(E, &who, 60_000)).await.unwrap().into_inner();
        c.resign(pb::ResignRequest { election: E.into(), candidate_id: who, token: t.token }).await.unwrap();
        tokens.push(t.token);
    }
    let terms = history(&mut c, E).await;
    assert_eq!(terms.len(), 50);
    let kept: Vec<u64> = terms.iter().map(|t| t.token).collect();
    let newest: Vec<u64> = tokens.iter().rev().take(50).copied().collect();
    assert_eq!(kept, newest);
    assert!(terms.iter().all(|t| t.end() == pb::TermEnd::Resigned));
    assert_eq!(terms[0].leader_id, "node-54");
    let mut conn = env.redis.conn().await;
    let len: i64 = redis::cmd("LLEN").arg(format!("baton:{{e:{E}}}:history")).query_async(&mut conn).await.unwrap();
    assert_eq!(len, 50, "trimmed in Redis");
    let few = c.get_election_history(pb::GetElectionHistoryRequest { election: E.into(), limit: 3 }).await.unwrap();
    let few: Vec<u64> = few.into_inner().terms.iter().map(|t| t.token).collect();
    assert_eq!(few, newest[..3]);
}

// Nine elections (and the sweeper's) listed in pages of two: each once, newest term first; an
// entry missing from the registry is put back by the discovery scan of the next replica that
// takes the sweeps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_registry_lists_every_election_page_by_page() {
    // No background discovery on the first replica: the second one's start runs it.
    let mut config = test_config();
    config.orphan_cleanup.enabled = false;
    config.purge.enabled = false;
    let env = Env::with_config(config).await;
    let mut c = leaders(&env.baton).await;
    let names: Vec<String> = (0..9).map(|i| format!("job-{i}")).collect();
    for n in &names {
        c.campaign(campaign(n, "me", 60_000)).await.unwrap();
    }
    let listed = all_elections(&mut c, 2).await;
    let mut seen: Vec<&str> = listed.iter().map(|e| e.election.as_str()).collect();
    let started: Vec<i64> = listed.iter().map(|e| ms(&e.last_term_started_at)).collect();
    assert!(started.windows(2).all(|w| w[0] >= w[1]), "newest term first: {started:?}");
    seen.sort();
    let mut want: Vec<&str> = names.iter().map(String::as_str).collect();
    want.push("baton-sweeper");
    want.sort();
    assert_eq!(seen, want, "every election once");
    assert!(listed.iter().filter(|e| e.election.starts_with("job-")).all(|e| e.leader_id == "me" && e.token == 1));

    // A term whose registry write was lost: the discovery scan registers the election.
    let mut conn = env.redis.conn().await;
    let _: i64 =
        redis::cmd("ZREM").arg("baton:{registry}:elections").arg("job-4").query_async(&mut conn).await.unwrap();
    assert!(!all_elections(&mut c, 100).await.iter().any(|e| e.election == "job-4"));
    // The next replica on duty for the sweeps scans at its first orphan pass.
    let Env { redis, baton, .. } = env;
    baton.stop().await.unwrap();
    let mut config = test_config();
    config.orphan_cleanup.interval_ms = 50;
    let next = TestBaton::start(&redis.url(), config).await;
    let mut c = leaders(&next).await;
    eventually(Duration::from_secs(30), "the discovery scan lists job-4 again", || {
        let mut c = c.clone();
        async move { all_elections(&mut c, 100).await.into_iter().any(|e| e.election == "job-4") }
    })
    .await;
    let back = all_elections(&mut c, 100).await.into_iter().find(|e| e.election == "job-4").expect("listed again");
    assert_eq!(ms(&back.last_term_started_at), ms(&back.expires_at) - 60_000, "at its term's start");
}

// Bad input: INVALID_ARGUMENT naming the field, and nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_naming_the_field() {
    let env = Env::start().await;
    let mut c = leaders(&env.baton).await;
    c.campaign(campaign("fine", "a", 60_000)).await.unwrap();
    let before = env.redis.snapshot().await;
    let bad = |s: tonic::Status, field: &str| {
        assert_eq!(s.code(), Code::InvalidArgument, "{field}: {s:?}");
        assert!(s.message().starts_with(field), "{field}: {}", s.message());
    };
    let history = |election: &str, limit: u32| pb::GetElectionHistoryRequest { election: election.into(), limit };
    bad(c.get_election_history(history("", 0)).await.unwrap_err(), "election");
    bad(c.get_election_history(history("a:b", 0)).await.unwrap_err(), "election");
    bad(c.get_election_history(history("{x}", 0)).await.unwrap_err(), "election");
    bad(c.get_election_history(history("fine", 1001)).await.unwrap_err(), "limit");
    let list = |page_size: u32, page_token: &str| pb::ListElectionsRequest { page_size, page_token: page_token.into() };
    bad(c.list_elections(list(1001, "")).await.unwrap_err(), "page_size");
    for token in ["garbage", "12", "x.fine", "12.a:b", "12."] {
        bad(c.list_elections(list(10, token)).await.unwrap_err(), "page_token");
    }
    assert_eq!(env.redis.snapshot().await, before, "refused calls changed nothing");
}

//! Policy the server owns so that no client carries a copy (issue: thin helpers): long failure
//! messages are clipped and said so, failures are classified from what the handler's error
//! carried, and Campaign / Renew answer the leadership rule.
//!
//! Invariants checked: a clipped message is at most max_message_bytes, valid UTF-8, a prefix of
//! what was sent plus "…", on every path that takes one (Complete, Session, Claim's Fail); the
//! outcome applied is the one sent, or the server's classification, and the answer names it.

use crate::common;

use std::collections::HashMap;

use common::*;
use pb::{admin_service_client::AdminServiceClient, claim_service_client::ClaimServiceClient};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

const Q: &str = "policy";
const MAX: usize = 64;

fn config() -> baton::config::Config {
    let mut config = test_config();
    config.limits.max_message_bytes = MAX;
    config
}

/// 4-byte, 3-byte and 2-byte characters, so a cut at MAX bytes lands inside one.
fn long_message() -> String {
    "😀€é".repeat(40)
}

fn assert_clipped(kept: &str, sent: &str) {
    assert!(kept.len() <= MAX, "{} bytes kept", kept.len());
    let body = kept.strip_suffix('…').expect("a clipped message ends with …");
    assert!(sent.starts_with(body), "{kept:?} is a prefix of what was sent");
    assert!(body.len() > MAX - 8, "clipped close to the limit: {} bytes", body.len());
}

async fn dead_letter_messages(env: &Env) -> HashMap<String, (String, String)> {
    let mut admin = AdminServiceClient::new(env.baton.channel().await);
    let source = Some(pb::Source { kind: pb::SourceKind::Queue as i32, name: Q.into() });
    let req = pb::ListDeadLettersRequest { source, page_size: 0, page_token: String::new() };
    let letters = admin.list_dead_letters(req).await.unwrap().into_inner().dead_letters;
    letters.into_iter().map(|d| (d.id, (d.error_class, d.message))).collect()
}

async fn one_attempt_agents(env: &mut Env, names: &[&str]) {
    let agents = names
        .iter()
        .map(|n| {
            let mut a = agent(n, 0, 30_000);
            a.max_attempts = 1;
            a
        })
        .collect();
    register(&mut env.client, Q, agents).await;
}

// Complete and CompleteBatch: a long message is kept clipped and the answer says so; an
// unspecified outcome is classified from http_status first, then from error_class's words.
#[tokio::test]
async fn complete_clips_and_classifies() {
    let mut env = Env::with_config(config()).await;
    one_attempt_agents(&mut env, &["a", "b", "c", "d"]).await;
    let mut leases: HashMap<String, pb::Lease> =
        acquire(&mut env.client, Q, "w", 4).await.into_iter().map(|l| (l.name.clone(), l)).collect();
    assert_eq!(leases.len(), 4);
    let sent = long_message();
    let with = |l: &pb::Lease, outcome: pb::Outcome, class: &str, status: u32| pb::CompleteRequest {
        message: sent.clone(),
        error_class: class.into(),
        http_status: status,
        ..complete_req(l, outcome)
    };
    let a = leases.remove("a").unwrap();
    let answer = env.client.complete(with(&a, pb::Outcome::Unspecified, "RateLimitError", 503)).await.unwrap();
    let answer = answer.into_inner();
    assert!(answer.message_clipped && answer.dead_lettered, "{answer:?}");
    assert_eq!(answer.outcome, pb::Outcome::ServerError as i32, "http_status wins over error_class");
    let batch = vec![
        with(&leases["b"], pb::Outcome::Unspecified, "java.net.SocketTimeoutException", 0),
        with(&leases["c"], pb::Outcome::Unspecified, "", 429),
        pb::CompleteRequest {
            message: "short".into(),
            ..with(&leases["d"], pb::Outcome::PermanentForbidden, "IOError", 0)
        },
    ];
    let results = env.client.complete_batch(pb::CompleteBatchRequest { completions: batch }).await.unwrap();
    let got: Vec<(String, i32, bool)> = results
        .into_inner()
        .results
        .into_iter()
        .map(|r| {
            let response = r.response.unwrap();
            (r.name, response.outcome, response.message_clipped)
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("b".into(), pb::Outcome::Transient as i32, true),
            ("c".into(), pb::Outcome::Throttled as i32, true),
            ("d".into(), pb::Outcome::PermanentForbidden as i32, false),
        ],
        "an explicit outcome is applied as sent"
    );
    let letters = dead_letter_messages(&env).await;
    for name in ["a", "b", "c"] {
        assert_clipped(&letters[name].1, &sent);
    }
    assert_eq!(letters["d"].1, "short");
    assert_eq!(
        [&letters["a"].0, &letters["b"].0, &letters["c"].0, &letters["d"].0],
        ["SERVER_ERROR", "TRANSIENT", "THROTTLED", "PERMANENT_FORBIDDEN"]
    );
}

// The Session stream clips and classifies as Complete does.
#[tokio::test]
async fn session_completions_are_clipped_and_classified() {
    let mut env = Env::with_config(config()).await;
    one_attempt_agents(&mut env, &["s"]).await;
    let (tx, rx) = mpsc::channel(8);
    let open = pb::SessionOpen { queue: Q.into(), worker_id: "w".into() };
    tx.send(pb::SessionRequest { open: Some(open), credit: 1, ..Default::default() }).await.unwrap();
    let mut client = env.baton.agents().await;
    let mut rx = client.session(ReceiverStream::new(rx)).await.unwrap().into_inner();
    let lease = loop {
        if let Some(l) = rx.message().await.unwrap().unwrap().leases.pop() {
            break l;
        }
    };
    let sent = long_message();
    let completion = pb::SessionCompletion {
        name: lease.name.clone(),
        token: lease.token,
        message: sent.clone(),
        error_class: "ECONNRESET".into(),
        ..Default::default()
    };
    tx.send(pb::SessionRequest { completions: vec![completion], ..Default::default() }).await.unwrap();
    let done = loop {
        let r = rx.message().await.unwrap().unwrap();
        if let Some(done) = r.completed.into_iter().next() {
            break done.response.unwrap();
        }
    };
    assert_eq!((done.outcome, done.message_clipped), (pb::Outcome::Transient as i32, true), "{done:?}");
    assert_clipped(&dead_letter_messages(&env).await["s"].1, &sent);
}

// Claim's Fail keeps a long error clipped and says so.
#[tokio::test]
async fn fail_clips_the_error() {
    let env = Env::with_config(config()).await;
    let mut c = ClaimServiceClient::new(env.baton.channel().await);
    let resources = vec![pb::Resource { id: "r".into(), attributes: Default::default() }];
    c.offer(pb::OfferRequest { request_id: String::new(), pool: "p".into(), resources }).await.unwrap();
    let claim = pb::ClaimRequest { pool: "p".into(), claimer_id: "x".into(), ..Default::default() };
    let got = c.claim(claim).await.unwrap().into_inner();
    let resource = got.resource.expect("the offered resource");
    let sent = long_message();
    let fail = pb::FailRequest {
        pool: "p".into(),
        resource_id: resource.id.clone(),
        token: got.token,
        error: sent.clone(),
        request_id: String::new(),
    };
    assert!(c.fail(fail).await.unwrap().into_inner().error_clipped);
    let mut admin = AdminServiceClient::new(env.baton.channel().await);
    let source = Some(pb::Source { kind: pb::SourceKind::Pool as i32, name: "p".into() });
    let req = pb::ListDeadLettersRequest { source, page_size: 0, page_token: String::new() };
    let letters = admin.list_dead_letters(req).await.unwrap().into_inner().dead_letters;
    assert_clipped(&letters[0].message, &sent);
}

// Campaign (when it wins) and Renew answer the leadership rule: renew at a third of the ttl,
// step down at two thirds.
#[tokio::test]
async fn campaign_and_renew_state_the_leadership_rule() {
    let env = Env::start().await;
    let mut c = pb::leader_service_client::LeaderServiceClient::new(env.baton.channel().await);
    let campaign =
        |id: &str| pb::CampaignRequest { election: "e".into(), candidate_id: id.into(), ttl: dur(3_000), wait: None };
    let won = c.campaign(campaign("a")).await.unwrap().into_inner();
    assert!(won.is_leader);
    assert_eq!((won.renew_in, won.step_down_in), (dur(1_000), dur(2_000)));
    let lost = c.campaign(campaign("b")).await.unwrap().into_inner();
    assert!(!lost.is_leader);
    assert_eq!((lost.renew_in, lost.step_down_in), (None, None), "only a leader is told when to renew");
    let renew = pb::RenewRequest { election: "e".into(), candidate_id: "a".into(), token: won.token };
    let renewed = c.renew(renew).await.unwrap().into_inner();
    assert_eq!((renewed.renew_in, renewed.step_down_in), (dur(1_000), dur(2_000)));
}

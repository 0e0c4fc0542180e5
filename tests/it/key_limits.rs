//! Per-key weights and overrides (AdminService.SetKeyLimits, GetKeyLimits, ListKeyLimits) and
//! the recount of the leases each key holds (RecountKeys), end to end against real Redis and a
//! Baton on loopback.
//!
//! Checked:
//! - with every key backlogged, grants go by weight: over N grants, a key of weight w gets
//!   exactly w / (sum of weights) of them (counted, not timed);
//! - a key's concurrency override replaces key_concurrency for that key (0: no limit), a rate
//!   override gives it a bucket of its own, and clearing the record returns it to the queue's;
//! - every field is validated (INVALID_ARGUMENT naming it) and a refusal changes nothing;
//! - ListKeyLimits pages in key order;
//! - a corrupted `held|<key>` is corrected by RecountKeys.
//!
//! That a recount is right while leases come and go under it, in many small steps, is checked
//! in the queues' own tests (`src/queues/tests.rs`): RecountKeys takes steps of a fixed size.

use crate::common;

use std::collections::BTreeMap;

use baton::pb::admin_service_client::AdminServiceClient;
use common::*;
use tonic::{transport::Channel, Code};
use tonic_types::StatusExt;

const Q: &str = "tenants";

fn keyed(name: &str, key: &str) -> pb::Agent {
    pb::Agent { key: key.into(), ..agent(name, 0, 600_000) }
}

fn key_of(l: &pb::Lease) -> String {
    l.agent.as_ref().expect("lease carries its agent").key.clone()
}

async fn admin(env: &Env) -> AdminServiceClient<Channel> {
    AdminServiceClient::new(env.baton.channel().await)
}

fn limits(weight: u32, concurrency: Option<u32>, rate: Option<(f64, u32)>) -> Option<pb::KeyLimits> {
    Some(pb::KeyLimits {
        weight,
        concurrency,
        rate: rate.map(|(per_second, burst)| pb::RateLimit { per_second, burst }),
    })
}

async fn set_key(a: &mut AdminServiceClient<Channel>, key: &str, l: Option<pb::KeyLimits>) -> pb::SetKeyLimitsResponse {
    a.set_key_limits(pb::SetKeyLimitsRequest { queue: Q.into(), key: key.into(), limits: l })
        .await
        .expect("set key limits")
        .into_inner()
}

async fn get_key(a: &mut AdminServiceClient<Channel>, key: &str) -> pb::KeyLimitsEntry {
    a.get_key_limits(pb::GetKeyLimitsRequest { queue: Q.into(), key: key.into() })
        .await
        .expect("get key limits")
        .into_inner()
        .key_limits
        .unwrap()
}

/// Makes the queue known (SetKeyLimits refuses a queue that never existed) without a key.
async fn create_queue(env: &mut Env) {
    register(&mut env.client, Q, vec![agent("seed", 0, 600_000)]).await;
    env.client
        .unregister(pb::UnregisterRequest { queue: Q.into(), names: vec!["seed".into()], ..Default::default() })
        .await
        .unwrap();
}

async fn register_key(env: &mut Env, key: &str, n: usize) {
    let defs: Vec<_> = (0..n).map(|i| keyed(&format!("{key}-{i:04}"), key)).collect();
    for chunk in defs.chunks(100) {
        register(&mut env.client, Q, chunk.to_vec()).await;
    }
}

/// Grants `rounds` Acquires of `max` (completing each lease) and counts them by key.
async fn grants_by_key(env: &mut Env, rounds: usize, max: u32) -> BTreeMap<String, usize> {
    let mut per_key = BTreeMap::new();
    for _ in 0..rounds {
        let leases = acquire(&mut env.client, Q, "w", max).await;
        assert_eq!(leases.len(), max as usize, "every key is backlogged");
        for l in &leases {
            *per_key.entry(key_of(l)).or_default() += 1;
            env.client.complete(complete_req(l, pb::Outcome::Success)).await.unwrap();
        }
    }
    per_key
}

// Weights 3, 2 and 1, 300 agents each, all due: 20 Acquires of 6 (one round each) grant exactly
// 60, 40 and 20, whichever key registered first.
#[tokio::test]
async fn weights_give_each_key_its_share() {
    let mut env = Env::start().await;
    create_queue(&mut env).await;
    let mut a = admin(&env).await;
    set_key(&mut a, "heavy", limits(3, None, None)).await;
    set_key(&mut a, "mid", limits(2, None, None)).await;
    // The light key registers first, so its backlog is ahead in due order.
    for key in ["light", "heavy", "mid"] {
        register_key(&mut env, key, 300).await;
    }
    let per_key = grants_by_key(&mut env, 20, 6).await;
    println!("weights 3:2:1 over 120 grants: {per_key:?}");
    let want = BTreeMap::from([("heavy".to_string(), 60), ("mid".to_string(), 40), ("light".to_string(), 20)]);
    assert_eq!(per_key, want);

    // Back to weight 1 (the record removed): agents promoted from now on take equal turns.
    let r = set_key(&mut a, "heavy", None).await;
    assert!(r.replaced);
    assert_eq!(r.key_limits.unwrap().limits.unwrap().weight, 1);
    set_key(&mut a, "mid", None).await;
    let listed = a.list_key_limits(pb::ListKeyLimitsRequest { queue: Q.into(), ..Default::default() }).await;
    assert!(listed.unwrap().into_inner().keys.is_empty(), "no key has a record left");
}

// A weight applies to what is promoted after it: two keys registered at weight 1, then one
// set to 4 and both registered again (a drained queue starts over).
#[tokio::test]
async fn a_weight_set_at_runtime_applies_to_the_next_agents() {
    let mut env = Env::start().await;
    create_queue(&mut env).await;
    register_key(&mut env, "a", 10).await;
    register_key(&mut env, "b", 10).await;
    let before = grants_by_key(&mut env, 5, 2).await;
    assert_eq!(before, BTreeMap::from([("a".to_string(), 5), ("b".to_string(), 5)]));
    let mut a = admin(&env).await;
    set_key(&mut a, "a", limits(4, None, None)).await;
    register(&mut env.client, Q, (0..200).map(|i| keyed(&format!("a2-{i:03}"), "a")).collect()).await;
    register(&mut env.client, Q, (0..200).map(|i| keyed(&format!("b2-{i:03}"), "b")).collect()).await;
    // Drain the 5 + 5 left from before first (they keep their turns), then rounds of 4 + 1.
    let left = grants_by_key(&mut env, 5, 2).await;
    assert_eq!(left.values().sum::<usize>(), 10);
    let after = grants_by_key(&mut env, 20, 5).await;
    println!("weight 4:1 set at runtime, over 100 grants: {after:?}");
    assert_eq!(after, BTreeMap::from([("a".to_string(), 80), ("b".to_string(), 20)]));
}

// key_concurrency 1 for the queue; "vip" overrides it with 3, then with 0 (no limit), then
// its record is removed and it is back at 1.
#[tokio::test]
async fn a_concurrency_override_replaces_the_queues_for_its_key() {
    let mut env = Env::start().await;
    create_queue(&mut env).await;
    let mut a = admin(&env).await;
    let queue_limits = pb::QueueLimits { key_concurrency: 1, ..Default::default() };
    a.set_limits(pb::SetLimitsRequest { queue: Q.into(), limits: Some(queue_limits), create: false }).await.unwrap();
    set_key(&mut a, "vip", limits(0, Some(3), None)).await;
    register_key(&mut env, "vip", 20).await;
    register_key(&mut env, "free", 20).await;
    let count = |ls: &[pb::Lease]| {
        let mut m = BTreeMap::new();
        for l in ls {
            *m.entry(key_of(l)).or_insert(0usize) += 1;
        }
        m
    };
    let first = acquire(&mut env.client, Q, "w", 40).await;
    assert_eq!(count(&first), BTreeMap::from([("free".to_string(), 1), ("vip".to_string(), 3)]));
    assert_eq!(get_key(&mut a, "vip").await.held, 3);

    // 0: no limit for vip; free stays at the queue's 1.
    set_key(&mut a, "vip", limits(0, Some(0), None)).await;
    let more = acquire(&mut env.client, Q, "w", 40).await;
    assert_eq!(count(&more), BTreeMap::from([("vip".to_string(), 17)]));
    assert_eq!(get_key(&mut a, "vip").await.held, 20);

    // Removed: vip is back at 1. Complete all of vip's but 0 and register more: one at a time.
    set_key(&mut a, "vip", None).await;
    for l in first.iter().chain(&more).filter(|l| key_of(l) == "vip") {
        env.client.complete(complete_req(l, pb::Outcome::Success)).await.unwrap();
    }
    register(&mut env.client, Q, (0..5).map(|i| keyed(&format!("vip2-{i}"), "vip")).collect()).await;
    let again = acquire(&mut env.client, Q, "w", 40).await;
    assert_eq!(count(&again), BTreeMap::from([("vip".to_string(), 1)]), "free is still at its limit");
}

// No queue key_rate; "slow" gets a bucket of 2 refilling once in 1,000 s: it is granted 2 while
// "fast" is granted all of its own; removing the override lets slow's rest go.
#[tokio::test]
async fn a_rate_override_gives_its_key_a_bucket_of_its_own() {
    let mut env = Env::start().await;
    create_queue(&mut env).await;
    let mut a = admin(&env).await;
    let r = set_key(&mut a, "slow", limits(0, None, Some((0.001, 2)))).await;
    let rate = r.key_limits.unwrap().limits.unwrap().rate.unwrap();
    assert_eq!((rate.per_second, rate.burst), (0.001, 2));
    register_key(&mut env, "slow", 10).await;
    register_key(&mut env, "fast", 10).await;
    let leases = acquire(&mut env.client, Q, "w", 40).await;
    let slow = leases.iter().filter(|l| key_of(l) == "slow").count();
    assert_eq!((slow, leases.len() - slow), (2, 10));
    assert!(acquire(&mut env.client, Q, "w", 40).await.is_empty(), "slow's bucket is empty");
    set_key(&mut a, "slow", None).await;
    assert_eq!(acquire(&mut env.client, Q, "w", 40).await.len(), 8);
}

// Every field of SetKeyLimits and ListKeyLimits: INVALID_ARGUMENT naming it, nothing changed.
#[tokio::test]
async fn every_field_is_validated_and_a_refusal_changes_nothing() {
    let mut env = Env::start().await;
    create_queue(&mut env).await;
    let mut a = admin(&env).await;
    set_key(&mut a, "k", limits(2, Some(5), None)).await;
    let before = get_key(&mut a, "k").await;
    let rate = |per_second: f64, burst: u32| Some(pb::RateLimit { per_second, burst });
    let long = "k".repeat(129);
    let cases: Vec<(&str, &str, Option<pb::KeyLimits>, &str)> = vec![
        ("", "k", None, "queue"),
        ("a:b", "k", None, "queue"),
        (Q, "", None, "key"),
        (Q, "a{b", None, "key"),
        (Q, &long, None, "key"),
        (Q, "k", limits(1001, None, None), "limits.weight"),
        (Q, "k", limits(1, Some(1_000_001), None), "limits.concurrency"),
        (Q, "k", Some(pb::KeyLimits { rate: rate(0.0, 1), ..Default::default() }), "limits.rate.per_second"),
        (Q, "k", Some(pb::KeyLimits { rate: rate(f64::NAN, 1), ..Default::default() }), "limits.rate.per_second"),
        (Q, "k", Some(pb::KeyLimits { rate: rate(2e6, 1), ..Default::default() }), "limits.rate.per_second"),
        (Q, "k", Some(pb::KeyLimits { rate: rate(1.0, 1_000_001), ..Default::default() }), "limits.rate.burst"),
    ];
    for (queue, key, l, field) in cases {
        let msg = pb::SetKeyLimitsRequest { queue: queue.into(), key: key.into(), limits: l };
        let e = a.set_key_limits(msg).await.expect_err("refused");
        assert_eq!(e.code(), Code::InvalidArgument, "{field}: {e:?}");
        let violations = e.get_details_bad_request().expect("BadRequest").field_violations;
        assert_eq!(violations[0].field, field, "{e:?}");
    }
    assert_eq!(get_key(&mut a, "k").await, before, "nothing changed");
    for (page_size, token, field) in [(1001, "", "page_size"), (10, "a|b", "page_token")] {
        let msg = pb::ListKeyLimitsRequest { queue: Q.into(), page_size, page_token: token.into() };
        let e = a.list_key_limits(msg).await.expect_err("refused");
        assert_eq!(e.code(), Code::InvalidArgument);
        assert_eq!(e.get_details_bad_request().unwrap().field_violations[0].field, field);
    }
    let e = a.get_key_limits(pb::GetKeyLimitsRequest { queue: Q.into(), key: String::new() }).await.unwrap_err();
    assert_eq!(e.get_details_bad_request().unwrap().field_violations[0].field, "key");
    let msg = pb::SetKeyLimitsRequest { queue: "never-existed".into(), key: "k".into(), limits: limits(2, None, None) };
    assert_eq!(a.set_key_limits(msg).await.unwrap_err().code(), Code::NotFound);
    let e = a.recount_keys(pb::RecountKeysRequest { queue: "never-existed".into() }).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
}

// Five keys with records, pages of 2: three pages in key order; defaults filled in.
#[tokio::test]
async fn key_limits_list_in_pages_in_key_order() {
    let mut env = Env::start().await;
    create_queue(&mut env).await;
    let mut a = admin(&env).await;
    for (i, key) in ["e", "b", "d", "a", "c"].into_iter().enumerate() {
        set_key(&mut a, key, limits(i as u32 + 1, None, Some((5.0, 0)))).await;
    }
    let mut keys = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let msg = pb::ListKeyLimitsRequest { queue: Q.into(), page_size: 2, page_token: token };
        let page = a.list_key_limits(msg).await.unwrap().into_inner();
        pages += 1;
        for e in page.keys {
            let l = e.limits.unwrap();
            assert_eq!(l.rate.unwrap().burst, 5, "burst filled in");
            keys.push((e.key, l.weight));
        }
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    let want: Vec<(String, u32)> =
        [("a", 4), ("b", 2), ("c", 5), ("d", 3), ("e", 1)].into_iter().map(|(k, w)| (k.to_string(), w)).collect();
    assert_eq!(keys, want);
    assert_eq!(pages, 3);
}

/// The limits hash of the queue, where each key's count of held leases is kept ("held|<key>").
const LIMITS: &str = "baton:{q:tenants}:limits";

/// The leases each key holds, by the leases the test holds, and the stored counts, which carry
/// no recount state once a recount is over.
async fn truth_and_counts(env: &Env, held: &[pb::Lease]) -> (BTreeMap<String, i64>, BTreeMap<String, i64>) {
    let mut truth = BTreeMap::new();
    for l in held {
        *truth.entry(key_of(l)).or_insert(0) += 1;
    }
    let fields: Vec<(String, String)> =
        redis::cmd("HGETALL").arg(LIMITS).query_async(&mut env.redis.conn().await).await.unwrap();
    let mut counts = BTreeMap::new();
    for (f, v) in fields {
        assert!(!f.starts_with("rc|") && !f.starts_with("rn|") && f != "recount", "recount state left: {f}");
        if let Some(key) = f.strip_prefix("held|") {
            counts.insert(key.to_string(), v.parse().unwrap());
        }
    }
    (truth, counts)
}

/// Sets the queue's key_concurrency (None: removes it), so its keys' leases are counted or not.
async fn set_key_concurrency(a: &mut AdminServiceClient<Channel>, c: Option<u32>) {
    let limits = pb::QueueLimits { key_concurrency: c.unwrap_or(0), ..Default::default() };
    a.set_limits(pb::SetLimitsRequest { queue: Q.into(), limits: Some(limits), create: false }).await.unwrap();
}

// Leases held by three keys (a key_concurrency that never binds, so the queue counts them);
// held|a raised, held|b deleted, held|ghost invented: RecountKeys puts every count back to what
// the lease records say.
#[tokio::test]
async fn recount_corrects_a_corrupted_count() {
    let mut env = Env::start().await;
    create_queue(&mut env).await;
    set_key_concurrency(&mut admin(&env).await, Some(100)).await;
    for (key, n) in [("a", 3), ("b", 2), ("c", 1)] {
        register_key(&mut env, key, n).await;
    }
    let held = acquire(&mut env.client, Q, "w", 10).await;
    assert_eq!(held.len(), 6);
    let mut conn = env.redis.conn().await;
    let _: () = redis::cmd("HSET").arg(LIMITS).arg("held|a").arg(7).query_async(&mut conn).await.unwrap();
    let _: () = redis::cmd("HDEL").arg(LIMITS).arg("held|b").query_async(&mut conn).await.unwrap();
    let _: () = redis::cmd("HSET").arg(LIMITS).arg("held|ghost").arg(3).query_async(&mut conn).await.unwrap();
    let mut a = admin(&env).await;
    let r = a.recount_keys(pb::RecountKeysRequest { queue: Q.into() }).await.unwrap().into_inner();
    println!("recount: {} leases counted, {} keys corrected", r.leases, r.corrected);
    assert_eq!((r.leases, r.corrected), (6, 3));
    let (truth, counts) = truth_and_counts(&env, &held).await;
    assert_eq!(counts, truth);
    assert_eq!(counts, BTreeMap::from([("a".into(), 3), ("b".into(), 2), ("c".into(), 1)]));
    assert_eq!(get_key(&mut a, "ghost").await.held, 0);
    // A second recount finds nothing to correct.
    let r = a.recount_keys(pb::RecountKeysRequest { queue: Q.into() }).await.unwrap().into_inner();
    assert_eq!((r.leases, r.corrected), (6, 0));
}

/// The per-key fields of the queue's limits hash: counts, and a recount's state.
async fn per_key_fields(env: &Env) -> Vec<String> {
    let fields: Vec<String> = redis::cmd("HKEYS").arg(LIMITS).query_async(&mut env.redis.conn().await).await.unwrap();
    fields
        .into_iter()
        .filter(|f| f.starts_with("held|") || f.starts_with("rc|") || f.starts_with("rn|") || f == "recount")
        .collect()
}

// A keyed queue without a limit on keys' concurrency (keys for fair queuing only) counts no
// key's leases: no per-key field is written at the grant, none read at the end.
#[tokio::test]
async fn keys_without_a_concurrency_limit_are_not_counted() {
    let mut env = Env::start().await;
    create_queue(&mut env).await;
    for (key, n) in [("a", 3), ("b", 2)] {
        register_key(&mut env, key, n).await;
    }
    let held = acquire(&mut env.client, Q, "w", 10).await;
    assert_eq!(held.len(), 5);
    assert_eq!(per_key_fields(&env).await, Vec::<String>::new(), "counts written while leases are held");
    for l in &held {
        env.client.complete(complete_req(l, pb::Outcome::Success)).await.unwrap();
    }
    assert_eq!(per_key_fields(&env).await, Vec::<String>::new());
}

// Leases held while nothing counted them; then key_concurrency 2 is set. SetLimits answers once
// the counts are true (its recount), so the limit binds on the leases already held: key a holds
// 3 and gets nothing more until two of them end. Removed, the counts are dropped.
#[tokio::test]
async fn a_key_limit_set_while_leases_are_held_counts_them_first() {
    let mut env = Env::start().await;
    create_queue(&mut env).await;
    let mut a = admin(&env).await;
    for (key, n) in [("a", 3), ("b", 1)] {
        register_key(&mut env, key, n).await;
    }
    let held = acquire(&mut env.client, Q, "w", 10).await;
    assert_eq!(held.len(), 4);
    assert_eq!(per_key_fields(&env).await, Vec::<String>::new());

    set_key_concurrency(&mut a, Some(2)).await;
    assert_eq!((get_key(&mut a, "a").await.held, get_key(&mut a, "b").await.held), (3, 1));
    assert_eq!(per_key_fields(&env).await, vec!["held|a".to_string(), "held|b".to_string()], "no recount state left");
    register(&mut env.client, Q, vec![keyed("a-more", "a")]).await;
    assert_eq!(acquire(&mut env.client, Q, "w", 10).await.len(), 0, "a holds 3 against a limit of 2");
    let of_a: Vec<_> = held.iter().filter(|l| key_of(l) == "a").collect();
    for l in &of_a[..2] {
        env.client.complete(complete_req(l, pb::Outcome::Success)).await.unwrap();
    }
    let more = acquire(&mut env.client, Q, "w", 10).await;
    assert_eq!(more.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(), vec!["a-more"]);
    assert_eq!(get_key(&mut a, "a").await.held, 2);

    set_key_concurrency(&mut a, None).await;
    assert_eq!(per_key_fields(&env).await, Vec::<String>::new(), "counts left once nothing limits keys");
}

// A key's own record counts too: the first SetKeyLimits recounts the leases held, and removing
// the last record (no key_concurrency) drops the counts.
#[tokio::test]
async fn a_key_record_counts_the_keys_leases() {
    let mut env = Env::start().await;
    create_queue(&mut env).await;
    let mut a = admin(&env).await;
    register_key(&mut env, "a", 2).await;
    let held = acquire(&mut env.client, Q, "w", 10).await;
    assert_eq!(held.len(), 2);
    set_key(&mut a, "b", limits(2, None, None)).await;
    assert_eq!(get_key(&mut a, "a").await.held, 2);
    set_key(&mut a, "b", None).await;
    assert_eq!(per_key_fields(&env).await, Vec::<String>::new());
}

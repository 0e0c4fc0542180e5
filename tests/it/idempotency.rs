//! Idempotent retries (request ids) and claim holds, end to end.
//!
//! For each of Register, Complete, Offer, Claim, Return, Fail, Schedule and Ack: a retry with
//! the first call's request id gets the first answer and changes nothing in Redis; another
//! request id is a new call; and for the lease-ending calls a stale holder still gets
//! LEASE_LOST, whatever request id it brings (a request id answers for one lease, delivery or
//! claim). Then: request ids are validated, the memory is bounded and lasts its retention, and a
//! claim's hold gives an unreturned resource back.

use crate::common;

use std::time::Duration;

use baton::pb::{claim_service_client::ClaimServiceClient, schedule_service_client::ScheduleServiceClient};
use common::*;
use tonic::{transport::Channel, Code};

const Q: &str = "idem";
const P: &str = "idem";
const R: &str = "idem";

/// Runs a retried call and asserts it changed nothing in Redis; returns its answer.
macro_rules! changes_nothing {
    ($env:expr, $call:expr) => {{
        let before = $env.redis.snapshot().await;
        let answer = $call.await.expect("a retry succeeds").into_inner();
        assert_eq!($env.redis.snapshot().await, before, "a retry changed Redis");
        answer
    }};
}

fn lease_lost(status: tonic::Status) {
    assert_eq!((status.code(), reason(&status).as_str()), (Code::FailedPrecondition, "LEASE_LOST"), "{status:?}");
}

async fn claims(env: &Env) -> ClaimServiceClient<Channel> {
    ClaimServiceClient::new(env.baton.channel().await)
}

async fn schedules(env: &Env) -> ScheduleServiceClient<Channel> {
    ScheduleServiceClient::new(env.baton.channel().await)
}

fn offer_req(ids: &[&str], request_id: &str) -> pb::OfferRequest {
    let resources = ids.iter().map(|id| pb::Resource { id: id.to_string(), attributes: Default::default() }).collect();
    pb::OfferRequest { pool: P.into(), resources, request_id: request_id.into() }
}

fn claim_req(claimer: &str, request_id: &str) -> pb::ClaimRequest {
    pb::ClaimRequest { pool: P.into(), claimer_id: claimer.into(), request_id: request_id.into(), ..Default::default() }
}

fn return_req(c: &pb::ClaimResponse, request_id: &str) -> pb::ReturnRequest {
    let resource_id = c.resource.as_ref().expect("claimed").id.clone();
    pb::ReturnRequest { pool: P.into(), resource_id, token: c.token, reuse: true, request_id: request_id.into() }
}

async fn next(stream: &mut tonic::Streaming<pb::SubscribeResponse>) -> pb::SubscribeResponse {
    tokio::time::timeout(Duration::from_secs(10), stream.message()).await.expect("a delivery in time").unwrap().unwrap()
}

async fn pool_status(c: &mut ClaimServiceClient<Channel>) -> pb::PoolStatus {
    c.get_pool(pb::GetPoolRequest { pool: P.into() }).await.unwrap().into_inner().status.unwrap()
}

// Register: the retry answers "created" as the first call did (not "updated"), writes nothing.
#[tokio::test]
async fn register_retry_returns_the_first_answer() {
    let env = Env::start().await;
    let mut c = env.client.clone();
    let req = |request_id: &str| pb::RegisterRequest {
        queue: Q.into(),
        agents: vec![agent("a", 60_000, 1_000), agent("b", 60_000, 1_000)],
        reset_schedule: false,
        request_id: request_id.into(),
    };
    let first = c.register(req("reg-1")).await.unwrap().into_inner();
    assert_eq!((first.created, first.updated), (2, 0));
    let again = changes_nothing!(env, c.register(req("reg-1")));
    assert_eq!(again, first);
    let other = c.register(req("reg-2")).await.unwrap().into_inner();
    assert_eq!((other.created, other.updated), (0, 2), "another request id is a new call");
}

// Complete: (a) the retry of an applied Complete gets its answer, not LEASE_LOST, and changes
// nothing, even after the next holder took the agent; (b) the old token with any other request
// id is still LEASE_LOST; (c) the agent ran once per lease: the next holder's lease is intact.
#[tokio::test]
async fn complete_retry_returns_the_first_answer_and_keeps_fencing() {
    let env = Env::start().await;
    let mut c = env.client.clone();
    register(&mut c, Q, vec![agent("job", 1, 60_000)]).await;
    let first_lease = acquire(&mut c, Q, "w1", 1).await.remove(0);
    let done = pb::CompleteRequest { request_id: "done-1".into(), ..complete_req(&first_lease, pb::Outcome::Success) };
    let first = c.complete(done.clone()).await.unwrap().into_inner();
    assert!(!first.removed && first.next_run_at.is_some());

    let again = changes_nothing!(env, c.complete(done.clone()));
    assert_eq!(again, first);

    // Due again at once (interval 1 ms): the next holder takes it.
    let second_lease = acquire(&mut c, Q, "w2", 1).await.remove(0);
    assert!(second_lease.token > first_lease.token);
    let again = changes_nothing!(env, c.complete(done.clone()));
    assert_eq!(again, first, "the retry after the next acquire still gets the first answer");

    // A stale holder of the first token, with another request id or none: LEASE_LOST.
    for request_id in ["done-2", ""] {
        let before = env.redis.snapshot().await;
        lease_lost(
            c.complete(pb::CompleteRequest { request_id: request_id.into(), ..done.clone() }).await.unwrap_err(),
        );
        assert_eq!(env.redis.snapshot().await, before);
    }
    // The request id answers for its own token only: the second holder's lease is not ended
    // by it, and completes normally.
    let reused =
        pb::CompleteRequest { request_id: "done-1".into(), ..complete_req(&second_lease, pb::Outcome::Success) };
    let second = c.complete(reused).await.unwrap().into_inner();
    assert!(ms(&second.next_run_at) >= ms(&first.next_run_at));
    let done_batch = pb::CompleteBatchRequest { completions: vec![done] };
    let batch = c.complete_batch(done_batch).await.unwrap().into_inner();
    assert!(!batch.results[0].lease_lost, "a batch item retried with its request id gets the first answer");
}

// A request id answers for one lease: a recurring agent whose runs send the same request id
// (a client deriving it from the agent's name and the day) has each run's Complete applied, not
// answered from the run before. Run 2's Complete ends its lease (its token is then fenced off)
// and makes run 3 due; each run's retry still gets its own answer and changes nothing.
#[tokio::test]
async fn each_run_of_a_recurring_agent_is_completed_under_one_request_id() {
    let env = Env::start().await;
    let mut c = env.client.clone();
    register(&mut c, Q, vec![agent("daily", 1, 60_000)]).await;
    let poll = || pb::AcquireRequest { queue: Q.into(), worker_id: "w".into(), max_leases: 1, wait: dur(10_000) };
    let done = |l: &pb::Lease| pb::CompleteRequest {
        request_id: "daily-2026-11-27".into(),
        ..complete_req(l, pb::Outcome::Success)
    };
    let run1 = c.acquire(poll()).await.unwrap().into_inner().leases.remove(0);
    let first = c.complete(done(&run1)).await.unwrap().into_inner();
    let run2 = c.acquire(poll()).await.unwrap().into_inner().leases.remove(0);
    assert!(run2.token > run1.token);
    let second = c.complete(done(&run2)).await.unwrap().into_inner();

    let fenced = c.complete(complete_req(&run2, pb::Outcome::Success)).await;
    lease_lost(fenced.expect_err("run 2's Complete was applied: its lease ended and its token is fenced off"));
    let run3 = c.acquire(poll()).await.unwrap().into_inner().leases;
    assert_eq!(run3.len(), 1, "run 3 is due once run 2's Complete was applied");
    assert!(run3[0].token > run2.token);

    assert_eq!(changes_nothing!(env, c.complete(done(&run2))), second);
    assert_eq!(changes_nothing!(env, c.complete(done(&run1))), first);
}

/// `baton_agents_completed_total` of queue `Q`, outcome SUCCESS, on the /metrics page at `addr`.
async fn completed_total(addr: &str) -> Option<f64> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut page = String::new();
    tcp.read_to_string(&mut page).await.unwrap();
    page.lines()
        .filter(|l| l.starts_with("baton_agents_completed_total{"))
        .filter(|l| l.contains(&format!("queue=\"{Q}\"")) && l.contains("outcome=\"SUCCESS\""))
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
}

// A Complete answered from memory is told apart from a fresh one (completeAgents answers its
// code + 10), so the server leaves it out of baton_agents_completed_total: one run, one count,
// whether the retry comes alone or as an item of a CompleteBatch; without the request id the
// stale token is LEASE_LOST. A `baton serve` process of its own, for its own metrics.
#[tokio::test]
async fn a_replayed_complete_is_told_apart_from_a_fresh_one() {
    let redis = TestRedis::start().await;
    let baton = BatonProcess::spawn_with_metrics("127.0.0.1:0", |cmd| {
        cmd.args(["--redis-url", &redis.url()]);
    });
    let metrics = baton
        .log
        .lock()
        .unwrap()
        .iter()
        .find(|l| l.contains("prometheus metrics at /metrics"))
        .and_then(|l| l.split_whitespace().find_map(|w| w.strip_prefix("addr=")).map(str::to_string))
        .expect("the bound /metrics address is logged");
    let mut c = pb::agent_service_client::AgentServiceClient::new(baton.channel().await);
    register(&mut c, Q, vec![agent("job", 3_600_000, 60_000)]).await;
    let lease = acquire(&mut c, Q, "w1", 1).await.remove(0);
    let done = pb::CompleteRequest { request_id: "done-1".into(), ..complete_req(&lease, pb::Outcome::Success) };
    let first = c.complete(done.clone()).await.unwrap().into_inner();
    assert_eq!(completed_total(&metrics).await, Some(1.0), "the first Complete is counted");
    let again = c.complete(done.clone()).await.unwrap().into_inner();
    assert_eq!(again, first);
    let without_id = pb::CompleteRequest { request_id: String::new(), ..done.clone() };
    let batch = c.complete_batch(pb::CompleteBatchRequest { completions: vec![done, without_id] }).await.unwrap();
    let results = batch.into_inner().results;
    assert_eq!((results[0].lease_lost, results[0].response.as_ref()), (false, Some(&first)), "answered from memory");
    assert!(results[1].lease_lost, "no request id: the stale token is refused");
    assert_eq!(completed_total(&metrics).await, Some(1.0), "one run, one count");
}

// Offer: the retry answers "idle 2" as the first did, not "duplicates 2".
#[tokio::test]
async fn offer_retry_returns_the_first_answer() {
    let env = Env::start().await;
    let mut c = claims(&env).await;
    let first = c.offer(offer_req(&["r1", "r2"], "offer-1")).await.unwrap().into_inner();
    assert_eq!((first.idle, first.duplicates), (2, 0));
    let again = changes_nothing!(env, c.offer(offer_req(&["r1", "r2"], "offer-1")));
    assert_eq!(again, first);
    let other = c.offer(offer_req(&["r1", "r2"], "offer-2")).await.unwrap().into_inner();
    assert_eq!((other.idle, other.duplicates), (0, 2), "another request id is a new call");
}

// Claim: the retry gets the same resource and token, not a second resource; the request id
// answers for its claimer only; a claim served from the line is remembered when picked up.
#[tokio::test]
async fn claim_retry_returns_the_first_answer() {
    let env = Env::start().await;
    let mut c = claims(&env).await;
    c.offer(offer_req(&["r1", "r2"], "")).await.unwrap();
    let first = c.claim(claim_req("alice", "claim-1")).await.unwrap().into_inner();
    assert_eq!(first.resource.as_ref().unwrap().id, "r1");
    let again = changes_nothing!(env, c.claim(claim_req("alice", "claim-1")));
    assert_eq!(again, first);
    assert_eq!((pool_status(&mut c).await.idle, pool_status(&mut c).await.claimed), (1, 1));

    let bob = c.claim(claim_req("bob", "claim-1")).await.unwrap().into_inner();
    assert_eq!(bob.resource.unwrap().id, "r2", "the same request id of another claimer is another call");

    // Nothing idle: the claim waits in line, is handed r3 by an Offer, and its retry gets r3.
    let mut waiting = claim_req("carol", "claim-2");
    waiting.wait = dur(10_000);
    let mut waiter = c.clone();
    let call = tokio::spawn(async move { waiter.claim(waiting).await.unwrap().into_inner() });
    let mut probe = c.clone();
    eventually(Duration::from_secs(10), "the claim waits in line", || {
        let mut probe = probe.clone();
        async move { pool_status(&mut probe).await.waiting_claims == 1 }
    })
    .await;
    c.offer(offer_req(&["r3"], "")).await.unwrap();
    let served = call.await.unwrap();
    assert_eq!(served.resource.as_ref().unwrap().id, "r3");
    let again = changes_nothing!(env, probe.claim(claim_req("carol", "claim-2")));
    assert_eq!(again, served);
}

// Return: (a) the retry succeeds instead of LEASE_LOST, even after the resource was claimed
// again; (b) a stale token with another request id is LEASE_LOST; (c) the new claim is intact.
#[tokio::test]
async fn return_retry_returns_the_first_answer_and_keeps_fencing() {
    let env = Env::start().await;
    let mut c = claims(&env).await;
    c.offer(offer_req(&["r1"], "")).await.unwrap();
    let first = c.claim(claim_req("alice", "")).await.unwrap().into_inner();
    c.r#return(return_req(&first, "ret-1")).await.unwrap();
    changes_nothing!(env, c.r#return(return_req(&first, "ret-1")));

    let second = c.claim(claim_req("bob", "")).await.unwrap().into_inner();
    assert_eq!(second.resource.as_ref().unwrap().id, "r1");
    changes_nothing!(env, c.r#return(return_req(&first, "ret-1")));
    for request_id in ["ret-2", ""] {
        let before = env.redis.snapshot().await;
        lease_lost(c.r#return(return_req(&first, request_id)).await.unwrap_err());
        assert_eq!(env.redis.snapshot().await, before);
    }
    assert_eq!(pool_status(&mut c).await.claimed, 1, "bob's claim is intact");
    c.r#return(return_req(&second, "ret-1")).await.unwrap();
    assert_eq!(pool_status(&mut c).await.idle, 1);
}

// Fail: the retry succeeds instead of LEASE_LOST and dead-letters nothing more; a stale token
// with another request id is LEASE_LOST.
#[tokio::test]
async fn fail_retry_returns_the_first_answer() {
    let env = Env::start().await;
    let mut c = claims(&env).await;
    c.offer(offer_req(&["r1"], "")).await.unwrap();
    let first = c.claim(claim_req("alice", "")).await.unwrap().into_inner();
    let fail = |request_id: &str| pb::FailRequest {
        pool: P.into(),
        resource_id: "r1".into(),
        token: first.token,
        error: "broken".into(),
        request_id: request_id.into(),
    };
    c.fail(fail("fail-1")).await.unwrap();
    changes_nothing!(env, c.fail(fail("fail-1")));
    lease_lost(c.fail(fail("fail-2")).await.unwrap_err());
    assert_eq!(pool_status(&mut c).await.dead_lettered, 1);
}

// Schedule: the retry gets the first message's id (created), and no second message exists,
// also after the message was delivered and acked (where a key alone would no longer match).
#[tokio::test]
async fn schedule_retry_returns_the_first_answer() {
    let env = Env::start().await;
    let mut c = schedules(&env).await;
    let req = |request_id: &str| pb::ScheduleRequest {
        receiver: R.into(),
        payload: b"x".to_vec(),
        request_id: request_id.into(),
        ..Default::default()
    };
    let first = c.schedule(req("sched-1")).await.unwrap().into_inner();
    assert!(first.created);
    let again = changes_nothing!(env, c.schedule(req("sched-1")));
    assert_eq!(again, first);

    let sub = pb::SubscribeRequest { receiver: R.into(), consumer_id: "c".into(), max_in_flight: 1 };
    let mut stream = c.subscribe(sub).await.unwrap().into_inner();
    let m = next(&mut stream).await;
    assert_eq!(m.id, first.id);
    c.ack(pb::AckRequest { receiver: R.into(), id: m.id.clone(), token: m.token, request_id: String::new() })
        .await
        .unwrap();
    let again = changes_nothing!(env, c.schedule(req("sched-1")));
    assert_eq!(again, first, "after the ack too");

    let other = c.schedule(req("sched-2")).await.unwrap().into_inner();
    assert_ne!(other.id, first.id, "another request id is a new message");
}

// Ack: the retry succeeds instead of LEASE_LOST; a stale token with another request id is
// LEASE_LOST; the retried ack of the first delivery does not ack the redelivery.
#[tokio::test]
async fn ack_retry_returns_the_first_answer_and_keeps_fencing() {
    let env = Env::start().await;
    let mut c = schedules(&env).await;
    for key in ["m1", "m2"] {
        c.schedule(pb::ScheduleRequest { receiver: R.into(), key: key.into(), ..Default::default() }).await.unwrap();
    }
    let sub = pb::SubscribeRequest { receiver: R.into(), consumer_id: "c".into(), max_in_flight: 2 };
    let mut stream = c.subscribe(sub).await.unwrap().into_inner();
    let (m1, m2) = (next(&mut stream).await, next(&mut stream).await);
    let ack = |m: &pb::SubscribeResponse, request_id: &str| pb::AckRequest {
        receiver: R.into(),
        id: m.id.clone(),
        token: m.token,
        request_id: request_id.into(),
    };
    c.ack(ack(&m1, "ack-1")).await.unwrap();
    changes_nothing!(env, c.ack(ack(&m1, "ack-1")));
    for request_id in ["ack-2", ""] {
        lease_lost(c.ack(ack(&m1, request_id)).await.unwrap_err());
    }
    // The same request id on another message is another call: it acks m2, once.
    c.ack(ack(&m2, "ack-1")).await.unwrap();
    let batch = c.ack_batch(pb::AckBatchRequest { acks: vec![ack(&m1, "ack-1"), ack(&m2, "ack-1")] }).await.unwrap();
    assert!(batch.into_inner().results.iter().all(|r| !r.lease_lost), "batch retries get the first answers");
}

// An Ack's request id answers for its delivery only: once the redelivery was acked with a
// request id, the stale first delivery's token with that same request id is LEASE_LOST and
// changes nothing (not the redelivery's answer).
#[tokio::test]
async fn an_ack_request_id_answers_for_its_delivery_only() {
    let mut config = test_config();
    config.schedule.ack_timeout_ms = 300;
    let env = Env::with_config(config).await;
    let mut c = schedules(&env).await;
    c.schedule(pb::ScheduleRequest { receiver: R.into(), ..Default::default() }).await.unwrap();
    let sub = pb::SubscribeRequest { receiver: R.into(), consumer_id: "c".into(), max_in_flight: 2 };
    let mut stream = c.subscribe(sub).await.unwrap().into_inner();
    let first = next(&mut stream).await;
    let again = next(&mut stream).await;
    assert_eq!((again.id.as_str(), again.delivery_count), (first.id.as_str(), 2), "redelivered past the ack timeout");
    assert!(again.token > first.token);
    let ack = |m: &pb::SubscribeResponse| pb::AckRequest {
        receiver: R.into(),
        id: m.id.clone(),
        token: m.token,
        request_id: "ack-1".into(),
    };
    c.ack(ack(&again)).await.unwrap();
    let before = env.redis.snapshot().await;
    lease_lost(c.ack(ack(&first)).await.expect_err("the stale delivery's token is refused, whatever its request id"));
    assert_eq!(env.redis.snapshot().await, before);
}

// Bad request ids (and holds) answer INVALID_ARGUMENT naming the field, and change nothing.
#[tokio::test]
async fn request_ids_and_holds_are_validated() {
    let mut config = test_config();
    config.limits.max_duration_ms = 10_000;
    let env = Env::with_config(config).await;
    let mut a = env.client.clone();
    let mut cl = claims(&env).await;
    let mut s = schedules(&env).await;
    register(&mut a, Q, vec![agent("job", 5_000, 5_000)]).await;
    let lease = acquire(&mut a, Q, "w", 1).await.remove(0);
    cl.offer(offer_req(&["r1"], "")).await.unwrap();
    let claimed = cl.claim(claim_req("alice", "")).await.unwrap().into_inner();

    let bad = |status: tonic::Status, field: &str| {
        assert_eq!(status.code(), Code::InvalidArgument, "{field}: {status:?}");
        assert!(status.message().starts_with(field), "{:?} should name {field}", status.message());
    };
    for id in ["a|b", "a:b", "has space", "{x}", &"r".repeat(129)] {
        let before = env.redis.snapshot().await;
        let rid = || id.to_string();
        let reg = pb::RegisterRequest {
            queue: Q.into(),
            agents: vec![agent("x", 1_000, 1_000)],
            reset_schedule: false,
            request_id: rid(),
        };
        bad(a.register(reg).await.unwrap_err(), "request_id");
        let done = pb::CompleteRequest { request_id: rid(), ..complete_req(&lease, pb::Outcome::Success) };
        bad(a.complete(done.clone()).await.unwrap_err(), "request_id");
        let batch = pb::CompleteBatchRequest { completions: vec![done] };
        bad(a.complete_batch(batch).await.unwrap_err(), "completions[0].request_id");
        bad(cl.offer(offer_req(&["r9"], id)).await.unwrap_err(), "request_id");
        bad(cl.claim(claim_req("bob", id)).await.unwrap_err(), "request_id");
        bad(cl.r#return(return_req(&claimed, id)).await.unwrap_err(), "request_id");
        let fail = pb::FailRequest {
            pool: P.into(),
            resource_id: "r1".into(),
            token: claimed.token,
            error: String::new(),
            request_id: rid(),
        };
        bad(cl.fail(fail).await.unwrap_err(), "request_id");
        let sched = pb::ScheduleRequest { receiver: R.into(), request_id: rid(), ..Default::default() };
        bad(s.schedule(sched.clone()).await.unwrap_err(), "request_id");
        bad(
            s.schedule_batch(pb::ScheduleBatchRequest { messages: vec![sched] }).await.unwrap_err(),
            "messages[0].request_id",
        );
        let ack = pb::AckRequest { receiver: R.into(), id: "1".into(), token: 1, request_id: rid() };
        bad(s.ack(ack.clone()).await.unwrap_err(), "request_id");
        bad(s.ack_batch(pb::AckBatchRequest { acks: vec![ack] }).await.unwrap_err(), "acks[0].request_id");
        assert_eq!(env.redis.snapshot().await, before, "{id:?}: a rejected call changed Redis");
    }
    for hold in [dur(10_001), Some(prost_types::Duration { seconds: -1, nanos: 0 })] {
        let before = env.redis.snapshot().await;
        bad(cl.claim(pb::ClaimRequest { hold, ..claim_req("bob", "") }).await.unwrap_err(), "hold");
        assert_eq!(env.redis.snapshot().await, before);
    }
    // The longest valid request id is taken.
    cl.offer(offer_req(&["r2"], &"r".repeat(128))).await.unwrap();
}

// The memory is bounded: with max_entries 2, an old request id is forgotten (its retry is a
// new call) and the source keeps at most a few entries.
#[tokio::test]
async fn memory_is_bounded_by_max_entries() {
    let mut config = test_config();
    config.idempotency.max_entries = 2;
    let env = Env::with_config(config).await;
    let mut c = claims(&env).await;
    for (i, id) in ["o1", "o2", "o3", "o4", "o5"].iter().enumerate() {
        c.offer(offer_req(&[&format!("r{i}")], id)).await.unwrap();
    }
    let mut conn = env.redis.conn().await;
    let remembered: u64 =
        redis::cmd("HLEN").arg(format!("baton:{{p:{P}}}:answers")).query_async(&mut conn).await.unwrap();
    assert!(remembered <= 3, "{remembered} answers remembered");
    let old = c.offer(offer_req(&["r0"], "o1")).await.unwrap().into_inner();
    assert_eq!(old.duplicates, 1, "a forgotten request id is a new call");
    let recent = c.offer(offer_req(&["r4"], "o5")).await.unwrap().into_inner();
    assert_eq!(recent.idle, 1, "a recent one is remembered");
}

// The memory lasts idempotency.retention_ms: a retry within it gets the first answer, even
// after later calls that remembered something (each drops only answers older than the
// retention); past it the source keeps nothing (its memory expired) and a retry is a new call.
#[tokio::test]
async fn answers_are_remembered_for_the_retention_then_forgotten() {
    let mut config = test_config();
    config.idempotency.retention_ms = 2_000;
    let env = Env::with_config(config).await;
    let mut c = claims(&env).await;
    let first = c.offer(offer_req(&["r1"], "o1")).await.unwrap().into_inner();
    let at = env.redis.now_ms().await;
    // Later calls on a later Redis millisecond each remember an answer.
    eventually(Duration::from_secs(10), "the Redis clock moves on", || async { env.redis.now_ms().await > at }).await;
    c.offer(offer_req(&["r2"], "o2")).await.unwrap();
    c.offer(offer_req(&["r3"], "o3")).await.unwrap();
    assert_eq!(changes_nothing!(env, c.offer(offer_req(&["r1"], "o1"))), first, "within the retention");

    let last = env.redis.now_ms().await;
    eventually(Duration::from_secs(10), "the retention passes", || async { env.redis.now_ms().await > last + 2_050 })
        .await;
    let mut conn = env.redis.conn().await;
    let left: i64 = redis::cmd("EXISTS")
        .arg(format!("baton:{{p:{P}}}:answers"))
        .arg(format!("baton:{{p:{P}}}:requests"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(left, 0, "a quiet source remembers nothing past the retention");
    let again = c.offer(offer_req(&["r1"], "o1")).await.unwrap().into_inner();
    assert_eq!((again.idle, again.duplicates), (0, 1), "a retry past the retention is a new call");
}

// A claim with a hold comes back once the hold ends unreturned, and its token is then refused;
// a claim returned in time is not touched.
#[tokio::test]
async fn claim_hold_gives_an_unreturned_resource_back() {
    let mut config = test_config();
    config.orphan_cleanup.interval_ms = 100;
    config.orphan_cleanup.leadership_ttl_ms = 500;
    let env = Env::with_config(config).await;
    let mut c = claims(&env).await;
    c.offer(offer_req(&["r1", "r2"], "")).await.unwrap();
    let held = c.claim(pb::ClaimRequest { hold: dur(300), ..claim_req("alice", "") }).await.unwrap().into_inner();
    let kept = c.claim(pb::ClaimRequest { hold: dur(60_000), ..claim_req("bob", "") }).await.unwrap().into_inner();
    let mut probe = c.clone();
    eventually(Duration::from_secs(10), "the held resource comes back", || {
        let mut probe = probe.clone();
        async move { pool_status(&mut probe).await.idle == 1 }
    })
    .await;
    lease_lost(c.r#return(return_req(&held, "")).await.unwrap_err());
    let again = probe.claim(claim_req("carol", "")).await.unwrap().into_inner();
    assert_eq!(again.resource.unwrap().id, "r1");
    c.r#return(return_req(&kept, "")).await.unwrap();
}

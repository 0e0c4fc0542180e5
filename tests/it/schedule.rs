//! ScheduleService end to end: real Redis, real Baton servers and processes.
//!
//! Invariants checked: a message is never delivered before its time by the Redis clock; every
//! message Schedule acknowledged is delivered (again, if its Ack did not come) until acked,
//! whatever dies; a message is in flight at one consumer at a time.

use crate::common;

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use baton::pb::schedule_service_client::ScheduleServiceClient;

use baton::runtime::embedded::Persistence;
use common::*;
use tonic::{transport::Channel, Code, Streaming};

const R: &str = "inbox";

async fn schedules(baton: &TestBaton) -> ScheduleServiceClient<Channel> {
    ScheduleServiceClient::new(baton.channel().await)
}

fn later(payload: &str, delay_ms: u64, key: &str) -> pb::ScheduleRequest {
    pb::ScheduleRequest {
        receiver: R.into(),
        payload: payload.as_bytes().to_vec(),
        when: Some(pb::schedule_request::When::Delay(dur(delay_ms).unwrap())),
        key: key.into(),
        ..Default::default()
    }
}

async fn subscribe(
    c: &mut ScheduleServiceClient<Channel>,
    consumer: &str,
    max: u32,
) -> Streaming<pb::SubscribeResponse> {
    let req = pb::SubscribeRequest { receiver: R.into(), consumer_id: consumer.into(), max_in_flight: max };
    c.subscribe(req).await.unwrap().into_inner()
}

async fn next(s: &mut Streaming<pb::SubscribeResponse>) -> pb::SubscribeResponse {
    tokio::time::timeout(Duration::from_secs(20), s.message()).await.expect("a delivery in time").unwrap().unwrap()
}

fn ack(m: &pb::SubscribeResponse) -> pb::AckRequest {
    pb::AckRequest { request_id: String::new(), receiver: R.into(), id: m.id.clone(), token: m.token }
}

fn config_with(ack_timeout_ms: u64, max_deliveries: u32) -> baton::config::Config {
    let mut config = test_config();
    config.schedule.ack_timeout_ms = ack_timeout_ms;
    config.schedule.max_deliveries = max_deliveries;
    config
}

// Never delivered before its time by the Redis clock, and delivered promptly after; messages
// wait while nobody is subscribed.
#[tokio::test]
async fn never_early_and_waiting_for_a_subscriber() {
    let env = Env::start().await;
    let mut c = schedules(&env.baton).await;
    let mut due = HashMap::new();
    for i in 0..30u64 {
        let r = c.schedule(later(&format!("m{i}"), (i * 37) % 900, "")).await.unwrap().into_inner();
        due.insert(r.id, ms(&r.deliver_at));
    }
    let mut stream = subscribe(&mut c, "reader", 100).await;
    let started = Instant::now();
    for _ in 0..30 {
        let m = next(&mut stream).await;
        let now = env.redis.now_ms().await;
        assert!(now >= due[&m.id], "{} delivered before {} (Redis time {now})", m.id, due[&m.id]);
        assert_eq!(ms(&m.deliver_at), due[&m.id]);
        assert_eq!(m.delivery_count, 1);
        c.ack(ack(&m)).await.unwrap();
    }
    assert!(started.elapsed() < Duration::from_secs(10), "delivered promptly once due");
}

// An idempotency key keeps one message while it is not acked; Cancel removes one; unknown ids
// are NOT_FOUND.
#[tokio::test]
async fn idempotency_key_and_cancel() {
    let env = Env::start().await;
    let mut c = schedules(&env.baton).await;
    let first = c.schedule(later("a", 60_000, "order-7")).await.unwrap().into_inner();
    let again = c.schedule(later("b", 1, "order-7")).await.unwrap().into_inner();
    assert!(first.created && !again.created);
    assert_eq!((again.id.as_str(), ms(&again.deliver_at)), (first.id.as_str(), ms(&first.deliver_at)));
    c.cancel(pb::CancelRequest { receiver: R.into(), id: first.id.clone() }).await.unwrap();
    let err = c.cancel(pb::CancelRequest { receiver: R.into(), id: first.id.clone() }).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    // The key is free again once its message is gone.
    let third = c.schedule(later("c", 0, "order-7")).await.unwrap().into_inner();
    assert!(third.created && third.id != first.id);
    let mut stream = subscribe(&mut c, "r", 1).await;
    let m = next(&mut stream).await;
    assert_eq!(
        (m.id.as_str(), m.payload.as_slice()),
        (third.id.as_str(), b"c".as_slice()),
        "the cancelled one never came"
    );
}

// Unacked past the ack timeout → delivered again with a new token; the old token is refused;
// past the delivery limit → the receiver's dead-letter queue, from where a retry delivers it.
#[tokio::test]
async fn redelivery_stale_tokens_and_dead_letters() {
    let env = Env::with_config(config_with(300, 2)).await;
    let mut c = schedules(&env.baton).await;
    let id = c.schedule(later("x", 0, "")).await.unwrap().into_inner().id;
    let mut stream = subscribe(&mut c, "slow", 5).await;
    let first = next(&mut stream).await;
    let second = next(&mut stream).await;
    assert_eq!((second.id.as_str(), second.delivery_count), (id.as_str(), 2));
    assert!(second.token > first.token);
    let stale = c.ack(ack(&first)).await.unwrap_err();
    assert_eq!((stale.code(), reason(&stale).as_str()), (Code::FailedPrecondition, "LEASE_LOST"));

    // Not acked again: past max_deliveries (2) it is dead-lettered.
    let mut admin = baton::pb::admin_service_client::AdminServiceClient::new(env.baton.channel().await);
    let source = Some(pb::Source { kind: pb::SourceKind::Receiver as i32, name: R.into() });
    let list = pb::ListDeadLettersRequest { source: source.clone(), page_size: 0, page_token: String::new() };
    let until = Instant::now() + Duration::from_secs(20);
    let dead = loop {
        let dl = admin.list_dead_letters(list.clone()).await.unwrap().into_inner().dead_letters;
        if !dl.is_empty() {
            break dl;
        }
        assert!(Instant::now() < until, "never dead-lettered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        (dead[0].id.as_str(), dead[0].error_class.as_str(), dead[0].attempts),
        (id.as_str(), "MAX_DELIVERIES", 2)
    );
    assert_eq!((dead[0].payload.as_slice(), dead[0].holder.as_str()), (b"x".as_slice(), "slow"));
    assert_eq!(reason(&c.ack(ack(&second)).await.unwrap_err()), "LEASE_LOST");

    admin.retry_dead_letter(pb::RetryDeadLetterRequest { source, id: id.clone() }).await.unwrap();
    let back = next(&mut stream).await;
    assert_eq!((back.id.as_str(), back.delivery_count), (id.as_str(), 1));
    c.ack(ack(&back)).await.unwrap();
}

// Two consumers (on two replicas) share one receiver's messages; none is in flight at both.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_consumers_share_without_overlap() {
    let env = Env::with_config(config_with(10_000, 5)).await;
    let other = TestBaton::start(&env.redis.url(), config_with(10_000, 5)).await;
    let mut c = schedules(&env.baton).await;
    for i in 0..400 {
        c.schedule(later(&format!("m{i}"), 0, "")).await.unwrap();
    }
    let in_flight = Arc::new(Mutex::new(HashSet::new()));
    let acked = Arc::new(Mutex::new(HashMap::<String, String>::new()));
    let mut consumers = Vec::new();
    for (name, baton) in [("left", &env.baton), ("right", &other)] {
        let mut client = schedules(baton).await;
        let mut stream = subscribe(&mut client, name, 8).await;
        let (in_flight, acked) = (in_flight.clone(), acked.clone());
        consumers.push(tokio::spawn(async move {
            let mut n = 0u64;
            while acked.lock().unwrap().len() < 400 {
                let Ok(Ok(Some(m))) = tokio::time::timeout(Duration::from_millis(500), stream.message()).await else {
                    continue;
                };
                assert!(in_flight.lock().unwrap().insert(m.id.clone()), "{} in flight at two consumers", m.id);
                n += 1;
                if n % 3 == 0 {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                in_flight.lock().unwrap().remove(&m.id);
                client.ack(ack(&m)).await.unwrap();
                assert!(acked.lock().unwrap().insert(m.id.clone(), name.to_string()).is_none(), "{} acked twice", m.id);
            }
        }));
    }
    for c in consumers {
        tokio::time::timeout(Duration::from_secs(60), c).await.expect("all acked in time").unwrap();
    }
    let acked = std::mem::take(&mut *acked.lock().unwrap());
    assert_eq!(acked.len(), 400);
    let left = acked.values().filter(|v| *v == "left").count();
    assert!(left > 0 && left < 400, "both consumers got a share: left {left}");
    other.stop().await.unwrap();
}

// A replica killed with SIGKILL while 10,000 messages are scheduled and some are in flight:
// another replica delivers them all; those in flight at the dead one again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replica_killed_with_ten_thousand_scheduled() {
    let redis = TestRedis::start().await;
    let mut doomed = BatonProcess::spawn(|cmd| {
        cmd.args(["--redis-url", &redis.url()]).env("BATON_SCHEDULE__ACK_TIMEOUT_MS", "1000");
    });
    let channel = doomed.channel().await;
    let mut via_doomed = ScheduleServiceClient::new(channel);
    let mut ids = HashSet::new();
    let mut tasks = Vec::new();
    for t in 0..20 {
        let mut c = via_doomed.clone();
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for i in 0..500 {
                let r = c.schedule(later(&format!("{t}-{i}"), (i % 50) * 20, "")).await.unwrap();
                ids.push(r.into_inner().id);
            }
            ids
        }));
    }
    for t in tasks {
        ids.extend(t.await.unwrap());
    }
    assert_eq!(ids.len(), 10_000);
    // A consumer on the doomed replica takes some and never acks them.
    let mut stream = subscribe(&mut via_doomed, "lost", 50).await;
    let mut stranded = HashSet::new();
    while stranded.len() < 50 {
        stranded.insert(next(&mut stream).await.id);
    }
    doomed.child.kill().unwrap();
    doomed.child.wait().unwrap();

    let survivor = TestBaton::start(&redis.url(), config_with(30_000, 5)).await;
    let mut c = schedules(&survivor).await;
    let mut stream = subscribe(&mut c, "heir", 500).await;
    let mut acked = HashSet::new();
    let mut again = HashSet::new();
    while acked.len() < 10_000 {
        let m = next(&mut stream).await;
        if m.delivery_count > 1 {
            again.insert(m.id.clone());
        }
        c.ack(ack(&m)).await.unwrap();
        assert!(acked.insert(m.id), "acked twice");
    }
    assert_eq!(acked, ids, "every message delivered");
    assert_eq!(again, stranded, "exactly those in flight at the dead replica came again");
    survivor.stop().await.unwrap();
}

// redis-server killed and restarted from its append-only file: nothing Schedule acknowledged
// is lost.
#[tokio::test]
async fn redis_restart_loses_no_acknowledged_message() {
    let mut redis = TestRedis::with_persistence(Persistence::Always).await;
    let baton = TestBaton::start(&redis.url(), test_config()).await;
    let mut c = schedules(&baton).await;
    let mut ids = HashSet::new();
    for i in 0..500 {
        ids.insert(c.schedule(later(&format!("m{i}"), 300, "")).await.unwrap().into_inner().id);
    }
    redis.kill().await;
    redis.restart().await;
    let mut stream = loop {
        let req = pb::SubscribeRequest { receiver: R.into(), consumer_id: "after".into(), max_in_flight: 500 };
        match c.subscribe(req).await {
            Ok(s) => break s.into_inner(),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    let mut got = HashSet::new();
    while got.len() < 500 {
        let m = match tokio::time::timeout(Duration::from_secs(20), stream.message()).await.expect("in time") {
            Ok(Some(m)) => m,
            _ => {
                // The stream ended on a Redis error while it reconnected: subscribe again.
                stream = subscribe(&mut c, "after", 500).await;
                continue;
            }
        };
        if c.ack(ack(&m)).await.is_ok() {
            got.insert(m.id);
        }
    }
    assert_eq!(got, ids);
    baton.stop().await.unwrap();
}

// Bad input for every field.
#[tokio::test]
async fn schedule_calls_reject_bad_fields() {
    let mut config = test_config();
    config.limits.max_payload_bytes = 4;
    config.limits.max_duration_ms = 10_000;
    config.limits.max_batch = 10;
    config.dedup.default_window_ms = 1_000;
    config.dedup.max_window_ms = 10_000;
    let env = Env::with_config(config).await;
    let mut c = schedules(&env.baton).await;
    let bad = |s: tonic::Status, field: &str| {
        assert_eq!(s.code(), Code::InvalidArgument, "{field}: {s:?}");
        assert!(s.message().starts_with(field), "{field}: {}", s.message());
    };
    let ok = later("x", 0, "");
    bad(c.schedule(pb::ScheduleRequest { receiver: "".into(), ..ok.clone() }).await.unwrap_err(), "receiver");
    bad(c.schedule(pb::ScheduleRequest { receiver: "a:b".into(), ..ok.clone() }).await.unwrap_err(), "receiver");
    bad(c.schedule(pb::ScheduleRequest { payload: vec![0; 5], ..ok.clone() }).await.unwrap_err(), "payload");
    bad(c.schedule(pb::ScheduleRequest { key: "a b".into(), ..ok.clone() }).await.unwrap_err(), "key");
    bad(c.schedule(later("x", 10_001, "")).await.unwrap_err(), "delay");
    let neg = pb::schedule_request::When::Delay(prost_types::Duration { seconds: -1, nanos: 0 });
    bad(c.schedule(pb::ScheduleRequest { when: Some(neg), ..ok.clone() }).await.unwrap_err(), "delay");
    // A past instant means now (tests/it/malformed.rs); a malformed one is refused.
    let at = pb::schedule_request::When::DeliverAt(prost_types::Timestamp { seconds: 5, nanos: -1 });
    bad(c.schedule(pb::ScheduleRequest { when: Some(at), ..ok.clone() }).await.unwrap_err(), "deliver_at");
    // key_window: only with a key, at least 1 ms, at most dedup.max_window_ms, a valid duration.
    bad(c.schedule(windowed("x", 0, "", 1_000)).await.unwrap_err(), "key_window");
    bad(c.schedule(windowed("x", 0, "k", 0)).await.unwrap_err(), "key_window");
    bad(c.schedule(windowed("x", 0, "k", 10_001)).await.unwrap_err(), "key_window");
    let negative = Some(prost_types::Duration { seconds: -1, nanos: 0 });
    bad(
        c.schedule(pb::ScheduleRequest { key_window: negative, ..later("x", 0, "k") }).await.unwrap_err(),
        "key_window",
    );
    let nanos = Some(prost_types::Duration { seconds: 1, nanos: 1_000_000_000 });
    bad(c.schedule(pb::ScheduleRequest { key_window: nanos, ..later("x", 0, "k") }).await.unwrap_err(), "key_window");
    let sub = |receiver: &str, consumer: &str, max| pb::SubscribeRequest {
        receiver: receiver.into(),
        consumer_id: consumer.into(),
        max_in_flight: max,
    };
    bad(c.subscribe(sub("", "c", 1)).await.unwrap_err(), "receiver");
    bad(c.subscribe(sub(R, "", 1)).await.unwrap_err(), "consumer_id");
    bad(c.subscribe(sub(R, "c", 11)).await.unwrap_err(), "max_in_flight");
    let a = pb::AckRequest { request_id: String::new(), receiver: R.into(), id: "1".into(), token: 1 };
    bad(c.ack(pb::AckRequest { receiver: "{r}".into(), ..a.clone() }).await.unwrap_err(), "receiver");
    bad(c.ack(pb::AckRequest { id: "".into(), ..a.clone() }).await.unwrap_err(), "id");
    bad(c.ack(pb::AckRequest { token: 0, ..a.clone() }).await.unwrap_err(), "token");
    bad(c.cancel(pb::CancelRequest { receiver: "".into(), id: "1".into() }).await.unwrap_err(), "receiver");
    bad(c.cancel(pb::CancelRequest { receiver: R.into(), id: "x y".into() }).await.unwrap_err(), "id");
    assert!(env.redis.snapshot().await.is_empty(), "rejected calls wrote nothing");
}

// ScheduleBatch answers each message in order (a repeated key keeps one message); AckBatch
// ends each delivery, a stale token (or a second ack of one message) rejected on its item only. Bad items are refused whole,
// naming the field, before anything changes.
#[tokio::test]
async fn schedule_batch_and_ack_batch() {
    let env = Env::start().await;
    let mut c = schedules(&env.baton).await;
    let messages = vec![later("a", 0, ""), later("b", 0, "k1"), later("b-again", 0, "k1")];
    let r = c.schedule_batch(pb::ScheduleBatchRequest { messages }).await.unwrap().into_inner().results;
    let created: Vec<bool> = r.iter().map(|x| x.created).collect();
    assert_eq!(created, [true, true, false]);
    assert_eq!(r[1].id, r[2].id, "the repeated key names the first message");

    let mut s = subscribe(&mut c, "c1", 10).await;
    let (m1, m2) = (next(&mut s).await, next(&mut s).await);
    let stale = pb::AckRequest { token: m1.token + 100, ..ack(&m1) };
    let acks = vec![ack(&m1), stale, ack(&m2), ack(&m2)];
    let r = c.ack_batch(pb::AckBatchRequest { acks }).await.unwrap().into_inner().results;
    let lost: Vec<bool> = r.iter().map(|x| x.lease_lost).collect();
    assert_eq!(lost, [false, true, false, true], "a stale token, and a message listed twice, are lost on their item");
    assert_eq!(r[0].id, m1.id);

    let before = env.redis.snapshot().await;
    let bad_receiver = pb::ScheduleRequest { receiver: "in:box".into(), ..later("x", 0, "") };
    let e = c
        .schedule_batch(pb::ScheduleBatchRequest { messages: vec![later("x", 0, ""), bad_receiver] })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().starts_with("messages[1].receiver:"), "{e:?}");
    let e = c.schedule_batch(pb::ScheduleBatchRequest { messages: vec![] }).await.unwrap_err();
    assert!(e.message().starts_with("messages:"), "{e:?}");
    let unkeyed = windowed("x", 0, "", 1_000);
    let e = c
        .schedule_batch(pb::ScheduleBatchRequest { messages: vec![windowed("x", 0, "k2", 1_000), unkeyed] })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().starts_with("messages[1].key_window:"), "{e:?}");
    let zero = pb::AckRequest { token: 0, ..ack(&m1) };
    let e = c.ack_batch(pb::AckBatchRequest { acks: vec![ack(&m1), zero] }).await.unwrap_err();
    assert!(e.message().starts_with("acks[1].token:"), "{e:?}");
    let e = c.ack_batch(pb::AckBatchRequest { acks: vec![] }).await.unwrap_err();
    assert!(e.message().starts_with("acks:"), "{e:?}");
    assert_eq!(env.redis.snapshot().await, before, "refused batches changed nothing");
}

// An ack frees the message's idempotency key, whether its delivery record carries the key (as
// deliveries do now) or was written before it did ("token|consumer|delivered_at"): either way
// the key names no message once acked, and scheduling with it creates a new one.
#[tokio::test]
async fn ack_frees_the_key_of_old_and_new_delivery_records() {
    let env = Env::start().await;
    let mut c = schedules(&env.baton).await;
    c.schedule(later("a", 0, "ka")).await.unwrap();
    c.schedule(later("b", 0, "kb")).await.unwrap();
    let mut s = subscribe(&mut c, "c1", 10).await;
    let (m1, m2) = (next(&mut s).await, next(&mut s).await);
    let old = m2.clone();
    let mut conn = env.redis.conn().await;
    let tokens = format!("baton:{{r:{R}}}:tokens");
    let rec: String = redis::cmd("HGET").arg(&tokens).arg(&old.id).query_async(&mut conn).await.unwrap();
    let fields: Vec<&str> = rec.split('|').collect();
    assert_eq!(fields.len(), 4, "a delivery record carries the key: {rec}");
    let before_key = fields[..3].join("|");
    let _: () = redis::cmd("HSET").arg(&tokens).arg(&old.id).arg(&before_key).query_async(&mut conn).await.unwrap();
    c.ack(ack(&m1)).await.unwrap();
    c.ack(ack(&m2)).await.unwrap();
    for (payload, key) in [("a2", "ka"), ("b2", "kb")] {
        let r = c.schedule(later(payload, 0, key)).await.unwrap().into_inner();
        assert!(r.created, "key {key} was freed by the ack");
    }
}

/// Every message ListMessages shows, page by page.
async fn list_all(
    c: &mut ScheduleServiceClient<Channel>,
    receiver: &str,
    state: pb::MessageState,
) -> Vec<pb::MessageInfo> {
    let mut all = Vec::new();
    let mut page_token = String::new();
    loop {
        let req = pb::ListMessagesRequest {
            receiver: receiver.into(),
            state: state as i32,
            page_size: 2,
            page_token,
            payload_bytes: 3,
        };
        let page = c.list_messages(req).await.unwrap().into_inner();
        assert!(page.messages.len() <= 2, "within the page size");
        all.extend(page.messages);
        if page.next_page_token.is_empty() {
            return all;
        }
        page_token = page.next_page_token;
    }
}

// ListMessages pages through the scheduled messages by delivery time, then the in-flight ones
// with their consumer and token; payload heads are cut to what was asked; a sharded receiver's
// ids are the ones Cancel takes; bad fields and an unknown receiver are refused, naming the
// field.
#[tokio::test]
async fn list_messages_pages_through_scheduled_and_in_flight() {
    let mut config = test_config();
    config.sharding.receivers = "tick=3".into();
    let env = Env::with_config(config).await;
    let mut c = schedules(&env.baton).await;
    let mut ids = Vec::new();
    for (i, delay) in [50_000u64, 10_000, 30_000, 40_000, 20_000].iter().enumerate() {
        ids.push(c.schedule(later(&format!("payload-{i}"), *delay, &format!("k{i}"))).await.unwrap().into_inner().id);
    }
    c.schedule(later("due", 0, "")).await.unwrap();
    let mut stream = subscribe(&mut c, "consumer-1", 1).await;
    let flying = next(&mut stream).await;
    assert_eq!(flying.payload, b"due");

    let scheduled = list_all(&mut c, R, pb::MessageState::Scheduled).await;
    let order: Vec<&str> = scheduled.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(order, [&ids[1], &ids[4], &ids[2], &ids[3], &ids[0]], "by delivery time");
    assert_eq!((scheduled[0].payload_head.as_slice(), scheduled[0].payload_bytes), (b"pay".as_slice(), 9));
    assert_eq!(scheduled[0].key, "k1");
    let in_flight = list_all(&mut c, R, pb::MessageState::InFlight).await;
    assert_eq!(in_flight.len(), 1);
    let m = &in_flight[0];
    assert_eq!(
        (m.id.as_str(), m.consumer_id.as_str(), m.token, m.delivery_count),
        (flying.id.as_str(), "consumer-1", flying.token, 1)
    );
    assert!(m.ack_deadline.is_some());
    assert_eq!(list_all(&mut c, R, pb::MessageState::Unspecified).await.len(), 6, "both states");

    // A sharded receiver lists every shard; its ids cancel.
    for i in 0..5 {
        let mut m = later("t", 60_000, &format!("t{i}"));
        m.receiver = "tick".into();
        c.schedule(m).await.unwrap();
    }
    let ticks = list_all(&mut c, "tick", pb::MessageState::Unspecified).await;
    assert_eq!(ticks.len(), 5);
    c.cancel(pb::CancelRequest { receiver: "tick".into(), id: ticks[0].id.clone() }).await.unwrap();
    assert_eq!(list_all(&mut c, "tick", pb::MessageState::Scheduled).await.len(), 4);

    let bad = |f: fn(&mut pb::ListMessagesRequest)| {
        let mut r = pb::ListMessagesRequest { receiver: R.into(), ..Default::default() };
        f(&mut r);
        r
    };
    for (req, field) in [
        (bad(|r| r.receiver = "a:b".into()), "receiver"),
        (bad(|r| r.page_size = 1001), "page_size"),
        (bad(|r| r.payload_bytes = 1025), "payload_bytes"),
        (bad(|r| r.state = 9), "state"),
        (bad(|r| r.page_token = "x".into()), "page_token"),
        (bad(|r| r.page_token = "7:0".into()), "page_token"),
    ] {
        let e = c.list_messages(req).await.unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{field}: {e:?}");
        assert!(e.message().starts_with(field), "{field}: {}", e.message());
    }
    let e = c.list_messages(pb::ListMessagesRequest { receiver: "nobody".into(), ..Default::default() }).await;
    assert_eq!(e.unwrap_err().code(), Code::NotFound);
}

fn windowed(payload: &str, delay_ms: u64, key: &str, window_ms: u64) -> pb::ScheduleRequest {
    pb::ScheduleRequest { key_window: dur(window_ms), ..later(payload, delay_ms, key) }
}

/// A receiver key's value as Redis holds it: (type, length).
async fn key_len(env: &Env, part: &str) -> (String, i64) {
    let mut conn = env.redis.conn().await;
    let key = format!("baton:{{r:{R}}}:{part}");
    let kind: String = redis::cmd("TYPE").arg(&key).query_async(&mut conn).await.unwrap();
    let len: i64 = match kind.as_str() {
        "hash" => redis::cmd("HLEN").arg(&key).query_async(&mut conn).await.unwrap(),
        "zset" => redis::cmd("ZCARD").arg(&key).query_async(&mut conn).await.unwrap(),
        _ => 0,
    };
    (kind, len)
}

/// Waits on the Redis clock (not a sleep standing in for it) until it is past `ms`.
async fn until_redis_time(env: &Env, ms: i64) {
    while env.redis.now_ms().await <= ms {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

// A key with a key_window answers the first message for the whole window, whatever became of
// it: delivered and acked, or cancelled; the deduplicated call schedules nothing. Without a
// key_window a key holds only while its message exists, as before, and no window is kept.
#[tokio::test]
async fn a_key_window_answers_the_first_message_after_it_was_acked_or_cancelled() {
    let env = Env::start().await;
    let mut c = schedules(&env.baton).await;
    let before = env.redis.now_ms().await;
    let first = c.schedule(windowed("a", 0, "order-9", 3_600_000)).await.unwrap().into_inner();
    let after = env.redis.now_ms().await;
    assert!(first.created);
    let held = ms(&first.key_held_until);
    assert!((before + 3_600_000..=after + 3_600_000).contains(&held), "held for the window from the Schedule: {held}");

    let mut stream = subscribe(&mut c, "reader", 10).await;
    let m = next(&mut stream).await;
    assert_eq!((m.id.as_str(), m.payload.as_slice()), (first.id.as_str(), b"a".as_slice()));
    c.ack(ack(&m)).await.unwrap();

    // Acked and gone: the key still answers it, with or without a window of its own.
    for again in [windowed("b", 0, "order-9", 60_000), later("c", 0, "order-9")] {
        let r = c.schedule(again).await.unwrap().into_inner();
        assert!(!r.created, "deduplicated");
        assert_eq!((r.id.as_str(), ms(&r.deliver_at)), (first.id.as_str(), ms(&first.deliver_at)));
        assert_eq!(ms(&r.key_held_until), held, "the first Schedule's window, not extended");
    }
    assert_eq!(key_len(&env, "scheduled").await.1, 0, "nothing scheduled again");
    let mut conn = env.redis.conn().await;
    let stats: i64 =
        redis::cmd("HGET").arg(format!("baton:{{r:{R}}}:stats")).arg("scheduled").query_async(&mut conn).await.unwrap();
    assert_eq!(stats, 1);

    // Cancelled: the same.
    let doomed = c.schedule(windowed("d", 60_000, "order-10", 3_600_000)).await.unwrap().into_inner();
    c.cancel(pb::CancelRequest { receiver: R.into(), id: doomed.id.clone() }).await.unwrap();
    let r = c.schedule(later("e", 0, "order-10")).await.unwrap().into_inner();
    assert!(!r.created && r.id == doomed.id, "a cancelled message's window holds");

    // Without key_window, as before: the key is free once its message was acked, and no
    // window is written.
    let plain = c.schedule(later("f", 0, "plain")).await.unwrap().into_inner();
    assert!(plain.created && plain.key_held_until.is_none());
    let again = c.schedule(later("g", 0, "plain")).await.unwrap().into_inner();
    assert!(!again.created && again.id == plain.id && again.key_held_until.is_none());
    let m = next(&mut stream).await;
    assert_eq!(m.id, plain.id);
    c.ack(ack(&m)).await.unwrap();
    let fresh = c.schedule(later("h", 0, "plain")).await.unwrap().into_inner();
    assert!(fresh.created && fresh.id != plain.id, "the key is free again");
    let mut conn = env.redis.conn().await;
    let mut windows: Vec<String> =
        redis::cmd("HKEYS").arg(format!("baton:{{r:{R}}}:dedup")).query_async(&mut conn).await.unwrap();
    windows.sort();
    assert_eq!(windows, ["order-10", "order-9"], "only keys given a window have one");
}

// A window lapses on the Redis clock: the key is then free (a new message, a new window),
// unless its message still exists (it holds while it does, as a key always has). A Schedule
// that opens a window drops lapsed ones, and the window keys expire with the longest window:
// a receiver that opens no more windows keeps none.
#[tokio::test]
async fn a_key_window_lapses_and_is_dropped() {
    let env = Env::start().await;
    let mut c = schedules(&env.baton).await;
    c.schedule(windowed("k", 3_600_000, "keeper", 60_000)).await.unwrap();
    // Wide enough for the Cancel and the Schedule after it to fall within it on a busy machine.
    let short = c.schedule(windowed("a", 0, "brief", 2_000)).await.unwrap().into_inner();
    let waiting = c.schedule(windowed("b", 3_600_000, "waiting", 50)).await.unwrap().into_inner();
    c.cancel(pb::CancelRequest { receiver: R.into(), id: short.id.clone() }).await.unwrap();
    let again = c.schedule(later("a2", 0, "brief")).await.unwrap().into_inner();
    assert!(!again.created && again.id == short.id, "within the window");
    until_redis_time(&env, ms(&waiting.key_held_until).max(ms(&short.key_held_until))).await;

    let fresh = c.schedule(windowed("a3", 0, "brief", 50)).await.unwrap().into_inner();
    assert!(fresh.created && fresh.id != short.id, "the window lapsed: a new message");
    assert!(ms(&fresh.key_held_until) > ms(&short.key_held_until), "and a new window");
    let still = c.schedule(later("b2", 0, "waiting")).await.unwrap().into_inner();
    assert!(!still.created && still.id == waiting.id, "its message still holds the key");
    assert!(still.key_held_until.is_none(), "by the message, no window");
    // The Schedule that opened "brief" again dropped the lapsed "waiting".
    assert_eq!(key_len(&env, "dedupat").await, ("zset".into(), 2));
    until_redis_time(&env, ms(&fresh.key_held_until)).await;

    // "brief" lapsed beside "keeper"; the next window opened drops it.
    c.schedule(windowed("c", 0, "long", 60_000)).await.unwrap();
    let mut conn = env.redis.conn().await;
    let mut open: Vec<String> = redis::cmd("ZRANGE")
        .arg(format!("baton:{{r:{R}}}:dedupat"))
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    open.sort();
    assert_eq!(open, ["keeper", "long"], "the lapsed windows were dropped");
    assert_eq!(key_len(&env, "dedup").await, ("hash".into(), 2));
    for part in ["dedup", "dedupat"] {
        let ttl: i64 = redis::cmd("PTTL").arg(format!("baton:{{r:{R}}}:{part}")).query_async(&mut conn).await.unwrap();
        assert!((1..=60_000).contains(&ttl), "{part} expires with the longest window: {ttl}");
    }

    // A receiver whose windows all lapsed keeps none.
    let quiet = pb::ScheduleRequest { receiver: "quiet".into(), ..windowed("q", 0, "once", 50) };
    let q = c.schedule(quiet).await.unwrap().into_inner();
    // Both keys expire at the window's end exactly, not at a later clock reading plus the window.
    for part in ["dedup", "dedupat"] {
        let at: i64 =
            redis::cmd("PEXPIRETIME").arg(format!("baton:{{r:quiet}}:{part}")).query_async(&mut conn).await.unwrap();
        assert_eq!(at, ms(&q.key_held_until), "{part} expires when its window lapses");
    }
    until_redis_time(&env, ms(&q.key_held_until)).await;
    let left: i64 = redis::cmd("EXISTS")
        .arg("baton:{r:quiet}:dedup")
        .arg("baton:{r:quiet}:dedupat")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(left, 0, "expired with the window");
}

// The window keys expire with the longest window open, whatever the order the windows came in:
// a shorter window opened before or after a longer one does not cut the longer one short. The
// longer window's message is gone (cancelled), so only its window holds its key: once the
// shorter windows lapsed (and with them any expiry they set), a Schedule with the longer
// window's key still answers its message.
#[tokio::test]
async fn a_shorter_key_window_does_not_cut_a_longer_one_short() {
    let env = Env::start().await;
    let mut c = schedules(&env.baton).await;
    let before = c.schedule(windowed("a", 0, "short-before", 200)).await.unwrap().into_inner();
    let long = c.schedule(windowed("b", 3_600_000, "long", 5_000)).await.unwrap().into_inner();
    let after = c.schedule(windowed("c", 0, "short-after", 200)).await.unwrap().into_inner();
    c.cancel(pb::CancelRequest { receiver: R.into(), id: long.id.clone() }).await.unwrap();
    // Past both short windows by more than a Redis expiry's resolution.
    until_redis_time(&env, ms(&before.key_held_until).max(ms(&after.key_held_until)) + 50).await;

    let again = c.schedule(later("d", 0, "long")).await.unwrap().into_inner();
    assert!(env.redis.now_ms().await < ms(&long.key_held_until), "still within the long window");
    assert!(!again.created, "the long window still holds its key: {again:?}");
    assert_eq!((again.id.as_str(), ms(&again.key_held_until)), (long.id.as_str(), ms(&long.key_held_until)));
    let mut conn = env.redis.conn().await;
    for part in ["dedup", "dedupat"] {
        let ttl: i64 = redis::cmd("PTTL").arg(format!("baton:{{r:{R}}}:{part}")).query_async(&mut conn).await.unwrap();
        let left = ms(&long.key_held_until) - env.redis.now_ms().await;
        assert!(ttl >= left - 50, "{part} expires with the long window: {ttl} ms left, {left} ms of the window");
    }
}

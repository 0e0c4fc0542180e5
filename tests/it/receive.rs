//! ScheduleService.Receive end to end: deliveries and acks on one bidirectional stream.
//!
//! Invariants checked: a consumer never holds more than max_in_flight unacked messages; every
//! message is delivered until acked, exactly once when nothing fails (nothing is lost when a
//! stream breaks mid-batch: what it held comes back after the ack timeout); a stale ack is
//! refused on that item only and the stream goes on; a consumer that stops acking does not
//! starve another; bad input ends the stream with INVALID_ARGUMENT naming the field, after the
//! acks before it are applied, and changes nothing itself.

use crate::common;

use std::{
    collections::{HashMap, HashSet},
    time::Duration,
};

use baton::pb::{admin_service_client::AdminServiceClient, schedule_service_client::ScheduleServiceClient};
use common::*;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{transport::Channel, Code, Streaming};

const R: &str = "inbox";

async fn schedules(env: &Env) -> ScheduleServiceClient<Channel> {
    ScheduleServiceClient::new(env.baton.channel().await)
}

/// A Receive stream as a test drives it: the request sender and the response stream.
struct Stream {
    tx: mpsc::Sender<pb::ReceiveRequest>,
    rx: Streaming<pb::ReceiveResponse>,
}

fn open(consumer: &str, max_in_flight: u32) -> pb::SubscribeRequest {
    pb::SubscribeRequest { receiver: R.into(), consumer_id: consumer.into(), max_in_flight }
}

impl Stream {
    async fn open(env: &Env, consumer: &str, max_in_flight: u32) -> Self {
        Self::open_with(env, pb::ReceiveRequest { open: Some(open(consumer, max_in_flight)), acks: vec![] })
            .await
            .unwrap()
    }

    async fn open_with(env: &Env, first: pb::ReceiveRequest) -> Result<Self, tonic::Status> {
        let (tx, rx) = mpsc::channel(64);
        tx.send(first).await.unwrap();
        let rx = schedules(env).await.receive(ReceiverStream::new(rx)).await?.into_inner();
        Ok(Self { tx, rx })
    }

    async fn ack(&self, acks: Vec<pb::ReceiveAck>) {
        self.tx.send(pb::ReceiveRequest { open: None, acks }).await.unwrap();
    }

    async fn next(&mut self) -> pb::ReceiveResponse {
        tokio::time::timeout(Duration::from_secs(30), self.rx.message())
            .await
            .expect("a response within 30 s")
            .expect("the stream is healthy")
            .expect("the stream is open")
    }

    /// Responses until `n` messages have come, acking none of them.
    async fn messages(&mut self, n: usize) -> Vec<pb::SubscribeResponse> {
        let mut got = Vec::new();
        while got.len() < n {
            got.extend(self.next().await.messages);
        }
        assert_eq!(got.len(), n, "no more than asked for");
        got
    }
}

fn ack_of(m: &pb::SubscribeResponse) -> pb::ReceiveAck {
    pb::ReceiveAck { id: m.id.clone(), token: m.token }
}

async fn schedule_now(c: &mut ScheduleServiceClient<Channel>, n: usize) -> HashSet<String> {
    let messages: Vec<_> = (0..n)
        .map(|i| pb::ScheduleRequest {
            receiver: R.into(),
            payload: format!("m{i}").into_bytes(),
            ..Default::default()
        })
        .collect();
    let mut ids = HashSet::new();
    for chunk in messages.chunks(500) {
        let r = c.schedule_batch(pb::ScheduleBatchRequest { messages: chunk.to_vec() }).await.unwrap();
        ids.extend(r.into_inner().results.into_iter().map(|r| r.id));
    }
    ids
}

/// The receiver's figures as AdminService.GetHealth reports them.
async fn health(env: &Env) -> pb::SourceHealth {
    let mut admin = AdminServiceClient::new(env.baton.channel().await);
    let all = admin.get_health(pb::GetHealthRequest {}).await.unwrap().into_inner();
    let receiver =
        |s: &pb::SourceHealth| s.source.as_ref().is_some_and(|s| s.kind() == pb::SourceKind::Receiver && s.name == R);
    all.sources.into_iter().find(receiver).expect("GetHealth checks the receiver")
}

/// Whether the receiver holds nothing (GetHealth): nothing due, nothing waiting for its time,
/// nothing in flight, nothing dead-lettered. Nothing is cancelled or purged in these tests, so
/// every message scheduled was acked.
async fn all_acked(env: &Env) -> bool {
    let h = health(env).await;
    (h.size, h.idle, h.in_use, h.dead_lettered) == (0, 0, 0, 0)
}

fn config_with(ack_timeout_ms: u64) -> baton::config::Config {
    let mut config = test_config();
    config.schedule.ack_timeout_ms = ack_timeout_ms;
    config
}

// A consumer with max_in_flight 7 receives and acks 400 messages on one stream: after every
// response it holds at most 7 unacked (received less confirmed acks), every message arrives
// exactly once, each ack is confirmed, and the receiver ends with nothing in flight.
#[tokio::test]
async fn receive_delivers_within_max_in_flight_and_confirms_acks() {
    let env = Env::start().await;
    let mut c = schedules(&env).await;
    let ids = schedule_now(&mut c, 400).await;
    let mut s = Stream::open(&env, "reader", 7).await;
    let (mut seen, mut confirmed) = (HashMap::new(), HashSet::new());
    let mut most_held = 0;
    while confirmed.len() < ids.len() {
        let r = s.next().await;
        assert!(r.lost.is_empty(), "no ack is stale: {:?}", r.lost);
        for a in &r.acked {
            assert!(confirmed.insert(a.id.clone()), "{} confirmed twice", a.id);
        }
        for m in &r.messages {
            assert_eq!(m.delivery_count, 1);
            assert!(seen.insert(m.id.clone(), m.token).is_none(), "{} delivered twice", m.id);
        }
        let held = seen.len() - confirmed.len();
        assert!(held <= 7, "the consumer holds {held} unacked, more than max_in_flight 7");
        most_held = most_held.max(held);
        // Ack what came, in one message per response (so acks coalesce on the server too).
        let acks: Vec<_> = r.messages.iter().map(ack_of).collect();
        if !acks.is_empty() {
            s.ack(acks).await;
        }
    }
    assert_eq!(seen.keys().cloned().collect::<HashSet<_>>(), ids, "every message, once");
    assert!(most_held >= 2, "several in flight at once (held at most {most_held})");
    let h = health(&env).await;
    assert_eq!((h.in_use, h.size + h.idle, h.dead_lettered), (0, 0, 0), "every message acked: {h:?}");
}

// An ack with a stale token (and a second ack of the same message) is refused on its item only;
// the stream goes on and later acks apply.
#[tokio::test]
async fn stale_ack_is_lost_on_its_item_and_the_stream_goes_on() {
    let env = Env::start().await;
    let mut c = schedules(&env).await;
    schedule_now(&mut c, 3).await;
    let mut s = Stream::open(&env, "reader", 10).await;
    let got = s.messages(3).await;
    let stale = pb::ReceiveAck { token: got[0].token + 1_000, ..ack_of(&got[0]) };
    s.ack(vec![stale.clone(), ack_of(&got[1]), ack_of(&got[1])]).await;
    let r = s.next().await;
    assert_eq!(r.acked, vec![ack_of(&got[1])]);
    assert_eq!(r.lost, vec![stale, ack_of(&got[1])]);
    s.ack(vec![ack_of(&got[0]), ack_of(&got[2])]).await;
    let r = s.next().await;
    assert_eq!(r.acked, vec![ack_of(&got[0]), ack_of(&got[2])]);
    assert!(r.lost.is_empty());
    let h = health(&env).await;
    assert_eq!((h.in_use, h.size + h.idle, h.dead_lettered), (0, 0, 0), "all 3 acked: {h:?}");
}

// A stream dropped mid-batch (5 of 20 acked, 5 more received unacked): the 5 unacked come back
// after the ack timeout, to another consumer, with delivery count 2; nothing is lost, nothing
// acked comes back.
#[tokio::test]
async fn stream_dropped_mid_batch_loses_nothing() {
    let env = Env::with_config(config_with(1_000)).await;
    let mut c = schedules(&env).await;
    let ids = schedule_now(&mut c, 20).await;
    let mut s = Stream::open(&env, "doomed", 10).await;
    let first = s.messages(10).await;
    s.ack(first[..5].iter().map(ack_of).collect()).await;
    // The acks are confirmed (and 5 more delivered into the freed places).
    let mut confirmed = 0;
    let mut held: Vec<pb::SubscribeResponse> = first[5..].to_vec();
    while confirmed < 5 || held.len() < 10 {
        let r = s.next().await;
        confirmed += r.acked.len();
        held.extend(r.messages);
    }
    drop(s);

    let mut other = Stream::open(&env, "survivor", 100).await;
    let mut delivered: HashMap<String, u32> = first[..5].iter().map(|m| (m.id.clone(), 1)).collect();
    let held_ids: HashSet<String> = held.iter().map(|m| m.id.clone()).collect();
    while delivered.len() < ids.len() || delivered.values().any(|&c| c == 0) {
        let r = other.next().await;
        let acks: Vec<_> = r.messages.iter().map(ack_of).collect();
        for m in r.messages {
            assert!(!first[..5].iter().any(|a| a.id == m.id), "acked message {} came back", m.id);
            let expected = if held_ids.contains(&m.id) { 2 } else { 1 };
            assert_eq!(m.delivery_count, expected, "{} delivered with the wrong count", m.id);
            assert!(delivered.insert(m.id, m.delivery_count).is_none(), "delivered twice to the survivor");
        }
        if !acks.is_empty() {
            other.ack(acks).await;
        }
    }
    assert_eq!(delivered.keys().cloned().collect::<HashSet<_>>(), ids);
    eventually(Duration::from_secs(30), "everything acked", || all_acked(&env)).await;
}

// A consumer that takes one message and never acks it does not hold back the receiver: another
// consumer gets every other message.
#[tokio::test]
async fn a_consumer_that_stops_acking_does_not_starve_another() {
    let env = Env::start().await;
    let mut c = schedules(&env).await;
    let ids = schedule_now(&mut c, 60).await;
    let mut stuck = Stream::open(&env, "stuck", 1).await;
    let held = stuck.messages(1).await.remove(0);
    let mut busy = Stream::open(&env, "busy", 5).await;
    let mut got = HashSet::new();
    while got.len() < ids.len() - 1 {
        let r = busy.next().await;
        let acks: Vec<_> = r.messages.iter().map(ack_of).collect();
        got.extend(r.messages.into_iter().map(|m| m.id));
        if !acks.is_empty() {
            busy.ack(acks).await;
        }
    }
    assert!(!got.contains(&held.id), "the stuck consumer's message is in flight there only");
    assert_eq!(got.len() + 1, ids.len());
}

// Half-closing the request stream is a graceful end: the acks sent before it are applied and
// answered, then the stream ends with OK. Server shutdown ends a stream cleanly too.
#[tokio::test]
async fn half_close_applies_acks_then_ends_cleanly() {
    let env = Env::start().await;
    let mut c = schedules(&env).await;
    schedule_now(&mut c, 4).await;
    let mut s = Stream::open(&env, "reader", 4).await;
    let got = s.messages(4).await;
    s.ack(got.iter().map(ack_of).collect()).await;
    let Stream { tx, mut rx } = s;
    drop(tx);
    let mut acked = 0;
    loop {
        match tokio::time::timeout(Duration::from_secs(30), rx.message()).await.expect("an answer in time") {
            Ok(Some(r)) => acked += r.acked.len(),
            Ok(None) => break,
            Err(e) => panic!("the stream ended with {e:?}"),
        }
    }
    assert_eq!(acked, 4, "every ack answered before the end");
    assert!(all_acked(&env).await, "all 4 acked: {:?}", health(&env).await);

    let mut s = Stream::open(&env, "reader", 4).await;
    let Env { baton, .. } = env;
    let stopped = tokio::spawn(baton.stop());
    let end = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match s.rx.message().await {
                Ok(Some(_)) => continue,
                other => return other.map(|_| ()),
            }
        }
    });
    end.await.expect("the stream ends on shutdown").expect("cleanly");
    stopped.await.unwrap().unwrap();
}

// Bad first messages are refused (INVALID_ARGUMENT naming the field); an invalid ack ends the
// stream naming it, after the acks before it are applied; nothing refused changes anything.
#[tokio::test]
async fn receive_rejects_bad_messages() {
    let env = Env::start().await;
    let bad = |r: Result<Stream, tonic::Status>, field: &str| {
        let e = r.err().expect("refused");
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
        assert!(e.message().starts_with(&format!("{field}:")), "{field}: {e:?}");
    };
    let before = env.redis.snapshot().await;
    bad(Stream::open_with(&env, pb::ReceiveRequest { open: None, acks: vec![] }).await, "open");
    let too_many = pb::ReceiveRequest { open: Some(open("c", 100_000)), acks: vec![] };
    bad(Stream::open_with(&env, too_many).await, "open.max_in_flight");
    let no_receiver =
        pb::ReceiveRequest { open: Some(pb::SubscribeRequest { receiver: "".into(), ..open("c", 1) }), acks: vec![] };
    bad(Stream::open_with(&env, no_receiver).await, "open.receiver");
    let bad_consumer = pb::ReceiveRequest { open: Some(open("a b", 1)), acks: vec![] };
    bad(Stream::open_with(&env, bad_consumer).await, "open.consumer_id");
    let zero = pb::ReceiveRequest { open: Some(open("c", 1)), acks: vec![pb::ReceiveAck { id: "1".into(), token: 0 }] };
    bad(Stream::open_with(&env, zero).await, "acks[0].token");
    assert_eq!(env.redis.snapshot().await, before, "refused streams wrote nothing");

    // Later messages: an ack before the invalid one is applied and answered first.
    let mut c = schedules(&env).await;
    schedule_now(&mut c, 2).await;
    for (invalid, field) in [
        (pb::ReceiveRequest { open: Some(open("c", 1)), acks: vec![] }, "open"),
        (pb::ReceiveRequest { open: None, acks: vec![pb::ReceiveAck { id: "".into(), token: 1 }] }, "acks[0].id"),
    ] {
        let mut s = Stream::open(&env, "c", 1).await;
        let m = s.messages(1).await.remove(0);
        s.ack(vec![ack_of(&m)]).await;
        s.tx.send(invalid).await.unwrap();
        let mut acked = 0;
        let e = loop {
            match tokio::time::timeout(Duration::from_secs(30), s.rx.message()).await.expect("an answer in time") {
                Ok(Some(r)) => acked += r.acked.len(),
                Ok(None) => panic!("the stream ended without an error"),
                Err(e) => break e,
            }
        };
        assert_eq!(acked, 1, "the ack before the invalid message was applied and answered");
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
        assert!(e.message().starts_with(&format!("{field}:")), "{field}: {e:?}");
    }
    assert!(all_acked(&env).await, "both acked: {:?}", health(&env).await);
}

// A consumer whose process dies (its connection cut: no half-close) while it holds 3 unacked
// messages: they are delivered again after the stream grace (300 ms here), to another consumer,
// with delivery count 2, long before the ack timeout (10 minutes here); the one it acked stays
// acked.
#[tokio::test]
async fn a_broken_stream_gives_its_deliveries_back_after_the_grace() {
    let mut config = config_with(600_000);
    config.orphan_cleanup.stream_grace_ms = 300;
    let env = Env::with_config(config).await;
    let mut c = schedules(&env).await;
    schedule_now(&mut c, 4).await;
    let proxy = common::proxy::Proxy::start(env.baton.addr).await;
    let (tx, rx) = mpsc::channel(8);
    tx.send(pb::ReceiveRequest { open: Some(open("doomed", 4)), acks: vec![] }).await.unwrap();
    let rx = ScheduleServiceClient::new(proxy.channel().await).receive(ReceiverStream::new(rx)).await.unwrap();
    let mut s = Stream { tx, rx: rx.into_inner() };
    let got = s.messages(4).await;
    s.ack(vec![ack_of(&got[0])]).await;
    while s.next().await.acked.is_empty() {}
    proxy.cut().await;

    let mut other = Stream::open(&env, "survivor", 10).await;
    let again = other.messages(3).await;
    let mut ids: Vec<_> = again.iter().map(|m| (m.id.clone(), m.delivery_count)).collect();
    ids.sort();
    let mut want: Vec<_> = got[1..].iter().map(|m| (m.id.clone(), 2)).collect();
    want.sort();
    assert_eq!(ids, want);
    drop(s);
}

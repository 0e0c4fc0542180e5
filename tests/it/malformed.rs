//! Hostile bodies and forged values: undecodable requests, forged page tokens, oversized
//! values that errors would echo, instants before 1970. The caller's fault is INVALID_ARGUMENT
//! (never INTERNAL, which means a Baton bug), every error is small enough to read, and nothing
//! changes.

use crate::common;

use std::collections::HashSet;

use bytes::{Buf, BufMut};
use common::*;
use pb::{admin_service_client::AdminServiceClient, schedule_service_client::ScheduleServiceClient};
use prost::Message;
use tonic::{
    codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder},
    Code, Status,
};
use tonic_types::StatusExt;

/// Sends raw bytes as the request body and ignores whatever body comes back: a client that can
/// say anything.
#[derive(Clone, Default)]
struct RawCodec;

struct RawEncoder;
struct RawDecoder;

impl Encoder for RawEncoder {
    type Item = Vec<u8>;
    type Error = Status;
    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawDecoder {
    type Item = Vec<u8>;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        let bytes = src.copy_to_bytes(src.remaining());
        Ok(Some(bytes.to_vec()))
    }
}

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawEncoder;
    type Decoder = RawDecoder;
    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }
    fn decoder(&mut self) -> RawDecoder {
        RawDecoder
    }
}

/// Every method of every Baton service, as (path, request message has fields), from the
/// descriptors the server itself serves: a new RPC is covered without editing this test.
fn methods() -> Vec<(String, bool)> {
    let set = prost_types::FileDescriptorSet::decode(pb::FILE_DESCRIPTOR_SET).unwrap();
    let mut with_fields = HashSet::new();
    for file in &set.file {
        for m in &file.message_type {
            if !m.field.is_empty() {
                with_fields.insert(format!(".{}.{}", file.package(), m.name()));
            }
        }
    }
    let mut out = Vec::new();
    for file in &set.file {
        for service in &file.service {
            for method in &service.method {
                let path = format!("/{}.{}/{}", file.package(), service.name(), method.name());
                out.push((path, with_fields.contains(method.input_type())));
            }
        }
    }
    assert!(out.len() >= 25, "every Baton RPC: {out:?}");
    out
}

async fn send_raw(channel: &tonic::transport::Channel, path: &str, body: Vec<u8>) -> Result<(), Status> {
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready().await.map_err(|e| Status::unknown(e.to_string()))?;
    let path: http::uri::PathAndQuery = path.parse().unwrap();
    grpc.unary(tonic::Request::new(body), path, RawCodec).await.map(drop)
}

// A body that does not decode — invalid UTF-8 in a string, a truncated field, a wrong wire
// type — is INVALID_ARGUMENT with an ErrorInfo on every RPC of every service, and changes
// nothing. A body above the maximum message size is OUT_OF_RANGE.
#[tokio::test]
async fn undecodable_bodies_are_invalid_argument_on_every_rpc() {
    let env = Env::start().await;
    let channel = env.baton.channel().await;
    register(&mut env.client.clone(), "m", vec![agent("a", 60_000, 60_000)]).await;
    let before = env.redis.snapshot().await;
    for (path, has_fields) in methods() {
        let mut bodies = vec![("truncated", vec![0x0a, 0x05, b'a'])];
        if has_fields {
            // Field 1, length-delimited: invalid UTF-8 where field 1 is a string, a malformed
            // nested message where it is one, a wrong wire type where it is a scalar.
            bodies.push(("invalid UTF-8 or wrong type in field 1", vec![0x0a, 0x02, 0xff, 0xfe]));
            // Field 1 as a 64-bit fixed value: the wrong wire type for every first field here.
            bodies.push(("wrong wire type", vec![0x09, 1, 2, 3, 4, 5, 6, 7, 8]));
        }
        for (what, body) in bodies {
            let status = send_raw(&channel, &path, body).await.expect_err(&format!("{path}: {what} refused"));
            assert_eq!(status.code(), Code::InvalidArgument, "{path}, {what}: {status:?}");
            let info = status.get_details_error_info().expect("ErrorInfo");
            assert_eq!((info.reason.as_str(), info.domain.as_str()), ("INVALID_ARGUMENT", "baton"), "{path}");
            assert_eq!(info.metadata.get("field").map(String::as_str), Some("request"), "{path}");
        }
    }
    let huge = [vec![0x0a, 0x80, 0x80, 0x80, 0x03], vec![b'x'; 6 * 1024 * 1024]].concat();
    let status = send_raw(&channel, "/baton.v1.AgentService/Acquire", huge).await.unwrap_err();
    assert_eq!(status.code(), Code::OutOfRange, "{status:?}");
    assert_error_info(&status, "OUT_OF_RANGE");
    assert_eq!(env.redis.snapshot().await, before, "a refused body changed nothing");
}

/// `status` carries a `google.rpc.ErrorInfo` of domain `baton` with `reason`.
fn assert_error_info(status: &Status, reason: &str) {
    let info = status.get_details_error_info().unwrap_or_else(|| panic!("no ErrorInfo: {status:?}"));
    assert_eq!((info.reason.as_str(), info.domain.as_str()), (reason, "baton"), "{status:?}");
}

// Statuses Baton's handlers never made carry an ErrorInfo too: a call whose grpc-timeout runs
// out (a long poll asked to wait longer than its deadline) is DEADLINE_EXCEEDED, not tonic's
// bare CANCELLED "Timeout expired"; an unknown method is UNIMPLEMENTED.
#[tokio::test]
async fn deadlines_and_unknown_methods_carry_error_info() {
    let env = Env::start().await;
    // Serving already (the deadline runs from when the call is sent).
    register(&mut env.client.clone(), "other", vec![agent("a", 60_000, 60_000)]).await;
    let mut poll = tonic::Request::new(pb::AcquireRequest {
        queue: "empty".into(),
        worker_id: "w".into(),
        max_leases: 1,
        wait: common::dur(10_000),
    });
    // Baton answers 1/20 of the timeout early, at most 50 ms: 1 s gets the whole 50 ms ahead of
    // the client's own timer, which a busy machine needs.
    poll.set_timeout(std::time::Duration::from_secs(1));
    let started = std::time::Instant::now();
    let status = env.client.clone().acquire(poll).await.unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert_error_info(&status, "DEADLINE_EXCEEDED");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "ended by its deadline, not its wait");

    let channel = env.baton.channel().await;
    let status = send_raw(&channel, "/baton.v1.AgentService/NoSuchMethod", vec![]).await.unwrap_err();
    assert_eq!(status.code(), Code::Unimplemented, "{status:?}");
    assert_error_info(&status, "UNIMPLEMENTED");
}

async fn dead_letter_everywhere(env: &Env) {
    let channel = env.baton.channel().await;
    let mut agents = env.client.clone();
    let mut claims = pb::claim_service_client::ClaimServiceClient::new(channel.clone());
    let mut schedules = ScheduleServiceClient::new(channel.clone());
    for q in ["q1", "q2"] {
        let dying: Vec<_> =
            (0..3).map(|i| pb::Agent { max_attempts: 1, ..agent(&format!("{q}-a{i}"), 60_000, 60_000) }).collect();
        register(&mut agents, q, dying).await;
        for l in acquire(&mut agents, q, "w", 3).await {
            let done = agents.complete(complete_req(&l, pb::Outcome::Unknown)).await.unwrap().into_inner();
            assert!(done.dead_lettered);
        }
    }
    let offer = pb::OfferRequest {
        request_id: String::new(),
        pool: "p1".into(),
        resources: (0..2).map(|i| pb::Resource { id: format!("r{i}"), ..Default::default() }).collect(),
    };
    claims.offer(offer).await.unwrap();
    for _ in 0..2 {
        let c = claims
            .claim(pb::ClaimRequest { pool: "p1".into(), claimer_id: "c".into(), ..Default::default() })
            .await
            .unwrap()
            .into_inner();
        let r = c.resource.unwrap();
        let fail = pb::FailRequest {
            request_id: String::new(),
            pool: "p1".into(),
            resource_id: r.id,
            token: c.token,
            error: "broken".into(),
        };
        claims.fail(fail).await.unwrap();
    }
    // A receiver's dead letters, written as the delivery limit would (the dead-letter shape is
    // the receiver scripts'; the listing only reads it).
    schedules
        .schedule(pb::ScheduleRequest { receiver: "r1".into(), payload: b"x".to_vec(), ..Default::default() })
        .await
        .unwrap();
    let mut conn = env.redis.conn().await;
    let id: Vec<String> =
        redis::cmd("ZRANGE").arg("baton:{r:r1}:scheduled").arg(0).arg(-1).query_async(&mut conn).await.unwrap();
    let _: () = redis::cmd("ZREM").arg("baton:{r:r1}:scheduled").arg(&id[0]).query_async(&mut conn).await.unwrap();
    let _: () = redis::cmd("ZADD").arg("baton:{r:r1}:dlq").arg(1).arg(&id[0]).query_async(&mut conn).await.unwrap();
    let _: () =
        redis::cmd("HSET").arg("baton:{r:r1}:dlqinfo").arg(&id[0]).arg("{}").query_async(&mut conn).await.unwrap();
}

// `ListDeadLetters {}` lists every dead letter of every kind — queues, then pools, then
// receivers — paged with tokens that carry on across kinds: each entry exactly once.
#[tokio::test]
async fn list_dead_letters_without_a_source_lists_every_kind() {
    let env = Env::start().await;
    dead_letter_everywhere(&env).await;
    let mut admin = AdminServiceClient::new(env.baton.channel().await);
    for request in [
        pb::ListDeadLettersRequest { source: None, page_size: 2, page_token: String::new() },
        pb::ListDeadLettersRequest { source: Some(pb::Source::default()), page_size: 2, page_token: String::new() },
    ] {
        let mut seen = Vec::new();
        let mut req = request.clone();
        loop {
            let page = admin.list_dead_letters(req.clone()).await.unwrap().into_inner();
            assert!(page.dead_letters.len() <= 2);
            for d in page.dead_letters {
                let s = d.source.unwrap();
                seen.push((s.kind, s.name, d.id));
            }
            if page.next_page_token.is_empty() {
                break;
            }
            req.page_token = page.next_page_token;
        }
        let kinds: Vec<i32> = seen.iter().map(|s| s.0).collect();
        assert!(kinds.windows(2).all(|w| w[0] <= w[1]), "queues, then pools, then receivers: {seen:?}");
        assert_eq!(seen.len(), 6 + 2 + 1, "every dead letter: {seen:?}");
        assert_eq!(seen.iter().collect::<HashSet<_>>().len(), seen.len(), "each once: {seen:?}");
    }
}

// Forged page tokens are INVALID_ARGUMENT naming page_token, never INTERNAL: every shape a
// token can be wrong in, for ListDeadLetters and ListAgents.
#[tokio::test]
async fn forged_page_tokens_are_invalid_argument() {
    let env = Env::start().await;
    dead_letter_everywhere(&env).await;
    let mut admin = AdminServiceClient::new(env.baton.channel().await);
    let queues = Some(pb::Source { kind: pb::SourceKind::Queue as i32, name: String::new() });
    let forged = [
        "queue|fx|100000000000000000",
        "queue|q1|18446744073709551615",
        "queue|q1|99999999999999999999999",
        "queue|q1|-1",
        "queue|q1|+1",
        "queue|q1|1e3",
        "queue|q1|",
        "queue|q1",
        "queue",
        "pool|p1|0",
        "nonsense|q1|0",
        "queue|a:b|0",
        "queue|{x}|0",
        "||",
        "\u{1F600}",
    ];
    for token in forged {
        let req = pb::ListDeadLettersRequest { source: queues.clone(), page_size: 1, page_token: token.into() };
        let status = admin.list_dead_letters(req).await.expect_err(token);
        assert_eq!(status.code(), Code::InvalidArgument, "{token}: {status:?}");
        assert!(status.message().starts_with("page_token"), "{token}: {}", status.message());
    }
    // Across kinds (no source), a pool token is fine; a huge offset is not.
    let req = pb::ListDeadLettersRequest { source: None, page_size: 1, page_token: "pool|p1|1".into() };
    assert_eq!(admin.list_dead_letters(req).await.unwrap().into_inner().dead_letters.len(), 1);
    let req =
        pb::ListDeadLettersRequest { source: None, page_size: 1, page_token: "pool|p1|100000000000000000".into() };
    assert_eq!(admin.list_dead_letters(req).await.unwrap_err().code(), Code::InvalidArgument);
    let mut agents = env.client.clone();
    for token in ["", "12345", "a:b", "\u{1F600}"].into_iter().skip(1) {
        let req =
            pb::ListAgentsRequest { queue: "q1".into(), page_size: 1, page_token: token.into(), ..Default::default() };
        let status = agents.list_agents(req).await.expect_err(token);
        assert_eq!(status.code(), Code::InvalidArgument, "{token}: {status:?}");
    }
}

// Errors quote at most a short prefix of what was sent: a 4 KiB label key, a huge name, a huge
// id still give a readable INVALID_ARGUMENT whose message and details stay small.
#[tokio::test]
async fn errors_never_echo_unbounded_input() {
    let env = Env::start().await;
    let channel = env.baton.channel().await;
    let mut agents = env.client.clone();
    let mut claims = pb::claim_service_client::ClaimServiceClient::new(channel.clone());
    let mut schedules = ScheduleServiceClient::new(channel.clone());
    let big = "k".repeat(4096);
    let wide = "é".repeat(3000);
    let mut statuses = Vec::new();
    let labelled = pb::Agent { labels: [(big.clone(), "v".to_string())].into(), ..agent("a", 1_000, 1_000) };
    let req = pb::RegisterRequest {
        request_id: String::new(),
        queue: "q".into(),
        agents: vec![labelled],
        reset_schedule: false,
    };
    statuses.push(agents.register(req).await.unwrap_err());
    let labelled = pb::Agent { labels: [(wide.clone(), wide.clone())].into(), ..agent("a", 1_000, 1_000) };
    let req = pb::RegisterRequest {
        request_id: String::new(),
        queue: "q".into(),
        agents: vec![labelled],
        reset_schedule: false,
    };
    statuses.push(agents.register(req).await.unwrap_err());
    let req = pb::RegisterRequest {
        request_id: String::new(),
        queue: big.clone(),
        agents: vec![agent("a", 1_000, 1_000)],
        reset_schedule: false,
    };
    statuses.push(agents.register(req).await.unwrap_err());
    let req = pb::AcquireRequest { queue: "q".into(), worker_id: wide.clone(), max_leases: 1, wait: None };
    statuses.push(agents.acquire(req).await.unwrap_err());
    let req = pb::ClaimRequest {
        request_id: String::new(),
        hold: None,
        pool: "p".into(),
        claimer_id: "c".into(),
        attributes: [(big.clone(), big.clone())].into(),
        wait: None,
    };
    statuses.push(claims.claim(req).await.unwrap_err());
    let req = pb::ScheduleRequest { receiver: "r".into(), key: big.clone(), ..Default::default() };
    statuses.push(schedules.schedule(req).await.unwrap_err());
    let req = pb::AckRequest { request_id: String::new(), receiver: "r".into(), id: big.clone(), token: 1 };
    statuses.push(schedules.ack(req).await.unwrap_err());
    for status in statuses {
        assert_eq!(status.code(), Code::InvalidArgument, "{:?}", status.message());
        assert!(status.message().len() <= 1024, "a bounded message: {} bytes", status.message().len());
        let info = status.get_details_error_info().expect("the details are readable");
        let field = info.metadata.get("field").unwrap();
        assert!(field.len() <= 160, "a bounded field path: {} bytes", field.len());
        let bad = status.get_details_bad_request().unwrap();
        assert!(bad.field_violations.iter().all(|v| v.field.len() <= 160 && v.description.len() <= 512));
    }
}

// Schedule's deliver_at in the past means now, for any past instant — before 1970 too — and a
// malformed instant is INVALID_ARGUMENT.
#[tokio::test]
async fn deliver_at_in_the_past_means_now() {
    let env = Env::start().await;
    let mut schedules = ScheduleServiceClient::new(env.baton.channel().await);
    let now = env.redis.now_ms().await;
    for seconds in [-62_135_596_800i64, -1, 0, 1, now / 1000 - 10] {
        let req = pb::ScheduleRequest {
            receiver: "past".into(),
            payload: b"x".to_vec(),
            when: Some(pb::schedule_request::When::DeliverAt(prost_types::Timestamp { seconds, nanos: 0 })),
            ..Default::default()
        };
        let r = schedules.schedule(req).await.unwrap_or_else(|s| panic!("{seconds}: {s:?}")).into_inner();
        assert!(ms(&r.deliver_at) <= env.redis.now_ms().await, "{seconds}: due at once");
    }
    let mut sub = schedules
        .subscribe(pb::SubscribeRequest { receiver: "past".into(), consumer_id: "c".into(), max_in_flight: 10 })
        .await
        .unwrap()
        .into_inner();
    let mut got = 0;
    while got < 5 {
        got += tokio::time::timeout(std::time::Duration::from_secs(30), sub.message())
            .await
            .unwrap()
            .unwrap()
            .map_or(0, |_| 1);
    }
    for (seconds, nanos) in [(-62_135_596_801i64, 0), (253_402_300_800, 0), (0, -1), (0, 1_000_000_000)] {
        let req = pb::ScheduleRequest {
            receiver: "past".into(),
            when: Some(pb::schedule_request::When::DeliverAt(prost_types::Timestamp { seconds, nanos })),
            ..Default::default()
        };
        let status = schedules.schedule(req).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{seconds}/{nanos}");
        assert!(status.message().starts_with("deliver_at"));
    }
}

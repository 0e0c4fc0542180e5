//! Trace context from producer to worker (Agent.traceparent, ScheduleRequest.traceparent),
//! against real Redis and a real Baton.
//!
//! Invariants checked:
//! - a producer's `traceparent` (call metadata, or the explicit field, which wins) is handed to
//!   the worker with every lease of the agent, and to the consumer with every delivery of the
//!   message, redeliveries and dead-letter retries included;
//! - an invalid `traceparent` header is ignored (W3C), an invalid field is INVALID_ARGUMENT
//!   naming it and changes nothing.

mod common;

use std::{collections::HashMap, time::Duration};

use baton::pb::{
    admin_service_client::AdminServiceClient, agent_service_client::AgentServiceClient,
    schedule_service_client::ScheduleServiceClient,
};
use common::*;
use tonic::{transport::Channel, Code, Request};

const PRODUCER: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const EXPLICIT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

fn with_traceparent<T>(message: T, traceparent: &str) -> Request<T> {
    let mut request = Request::new(message);
    request.metadata_mut().insert("traceparent", traceparent.parse().unwrap());
    request
}

#[tokio::test]
async fn an_agents_leases_carry_the_producers_trace_context() {
    let env = Env::start().await;
    let mut c = env.baton.agents().await;
    let register = |agents: Vec<pb::Agent>| pb::RegisterRequest { queue: "q".into(), agents, reset_schedule: false };
    c.register(with_traceparent(register(vec![agent("from-header", 0, 5_000)]), PRODUCER)).await.unwrap();
    let explicit = pb::Agent { traceparent: EXPLICIT.into(), ..agent("explicit", 0, 5_000) };
    c.register(with_traceparent(register(vec![explicit]), PRODUCER)).await.unwrap();
    c.register(with_traceparent(register(vec![agent("bad-header", 0, 5_000)]), "00-zz-zz-01")).await.unwrap();
    c.register(register(vec![agent("none", 0, 5_000)])).await.unwrap();

    let leases = acquire_n(&mut c, 4).await;
    let tp = |name: &str| leases.iter().find(|l| l.name == name).unwrap().agent.as_ref().unwrap().traceparent.clone();
    assert_eq!(tp("from-header"), PRODUCER);
    assert_eq!(tp("explicit"), EXPLICIT, "the explicit field wins over the header");
    assert_eq!(tp("bad-header"), "", "an invalid header is ignored");
    assert_eq!(tp("none"), "");

    // A failed run comes back with the same context.
    let l = leases.iter().find(|l| l.name == "from-header").unwrap();
    let mut fail = complete_req(l, pb::Outcome::Unknown);
    fail.retry_after = dur(1);
    c.complete(fail).await.unwrap();
    let again = acquire_n(&mut c, 1).await;
    assert_eq!(again[0].name, "from-header");
    assert_eq!(again[0].agent.as_ref().unwrap().traceparent, PRODUCER);

    let got = c.get_agent(pb::GetAgentRequest { queue: "q".into(), name: "explicit".into() }).await.unwrap();
    assert_eq!(got.into_inner().agent.unwrap().agent.unwrap().traceparent, EXPLICIT, "GetAgent shows it");
}

/// Long-polls queue "q" until `n` leases are held.
async fn acquire_n(c: &mut AgentServiceClient<Channel>, n: usize) -> Vec<pb::Lease> {
    let mut leases = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        while leases.len() < n {
            let poll =
                pb::AcquireRequest { queue: "q".into(), worker_id: "w".into(), max_leases: 10, wait: dur(1_000) };
            leases.extend(c.acquire(poll).await.unwrap().into_inner().leases);
        }
    })
    .await
    .expect("leases in time");
    leases
}

#[tokio::test]
async fn a_messages_deliveries_carry_the_producers_trace_context() {
    let mut config = test_config();
    config.schedule.ack_timeout_ms = 300;
    let env = Env::with_config(config).await;
    let mut s = ScheduleServiceClient::new(env.baton.channel().await);
    let message =
        |payload: &str| pb::ScheduleRequest { receiver: "r".into(), payload: payload.into(), ..Default::default() };
    s.schedule(with_traceparent(message("header"), PRODUCER)).await.unwrap();
    s.schedule(pb::ScheduleRequest { traceparent: EXPLICIT.into(), key: "k".into(), ..message("explicit") })
        .await
        .unwrap();
    s.schedule(message("none")).await.unwrap();
    let batch = pb::ScheduleBatchRequest { messages: vec![message("batch")] };
    s.schedule_batch(with_traceparent(batch, PRODUCER)).await.unwrap();

    let open = pb::SubscribeRequest { receiver: "r".into(), consumer_id: "c".into(), max_in_flight: 10 };
    let mut stream = s.subscribe(open).await.unwrap().into_inner();
    let mut seen: HashMap<String, Vec<String>> = HashMap::new();
    // Never acked: each message comes back after the ack timeout, still with its context.
    tokio::time::timeout(Duration::from_secs(30), async {
        while seen.len() < 4 || seen.values().any(|v| v.len() < 2) {
            let m = stream.message().await.unwrap().unwrap();
            seen.entry(String::from_utf8(m.payload).unwrap()).or_default().push(m.traceparent);
        }
    })
    .await
    .expect("every message delivered twice in time");
    for (payload, want) in [("header", PRODUCER), ("explicit", EXPLICIT), ("none", ""), ("batch", PRODUCER)] {
        assert!(seen[payload].iter().all(|tp| tp == want), "{payload}: {:?}", seen[payload]);
    }
}

#[tokio::test]
async fn bad_traceparents_are_refused_naming_the_field() {
    let env = Env::start().await;
    let mut c = env.baton.agents().await;
    for bad in ["nope", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", &"0".repeat(600)] {
        let a = pb::Agent { traceparent: bad.to_string(), ..agent("a", 0, 5_000) };
        let status = c
            .register(pb::RegisterRequest {
                queue: "q".into(),
                agents: vec![agent("ok", 0, 5_000), a],
                reset_schedule: false,
            })
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(status.message().starts_with("agents[1].traceparent"), "{}", status.message());
        let mut s = ScheduleServiceClient::new(env.baton.channel().await);
        let m = pb::ScheduleRequest { receiver: "r".into(), traceparent: bad.to_string(), ..Default::default() };
        let status = s.schedule(m.clone()).await.unwrap_err();
        assert!(status.message().starts_with("traceparent"), "{}", status.message());
        let ok = pb::ScheduleRequest { receiver: "r".into(), ..Default::default() };
        let status = s.schedule_batch(pb::ScheduleBatchRequest { messages: vec![ok, m] }).await.unwrap_err();
        assert!(status.message().starts_with("messages[1].traceparent"), "{}", status.message());
    }
    let listed = c.list_agents(pb::ListAgentsRequest { queue: "q".into(), ..Default::default() }).await.unwrap();
    assert!(listed.into_inner().agents.is_empty(), "nothing registered");
    let mut a = AdminServiceClient::new(env.baton.channel().await);
    let health = a.get_health(pb::GetHealthRequest {}).await.unwrap().into_inner();
    assert!(health.sources.iter().all(|s| s.source.as_ref().unwrap().name != "r"), "nothing scheduled");
}

//! Trace context from producer to worker (Agent.traceparent, ScheduleRequest.traceparent),
//! against real Redis and a real Baton.
//!
//! Invariants checked:
//! - a producer's `traceparent` (call metadata, or the explicit field, which wins) is handed to
//!   the worker with every lease of the agent, and to the consumer with every delivery of the
//!   message, redeliveries and dead-letter retries included;
//! - an invalid `traceparent` header is ignored (W3C), an invalid field is INVALID_ARGUMENT
//!   naming it and changes nothing;
//! - with OpenTelemetry on (OTEL_* variables), one job's spans reach an OTLP collector as one
//!   trace: producer → Baton's RPC span → its script span, and the worker's run a child of the
//!   RPC span that created the agent;
//! - a child (Agent.after) keeps the trace context of its first 128 parents, in `after` order
//!   (an agent's own, never a label's), also when it is registered again, and its lease hands
//!   them out (Lease.parents[].traceparent), with tracing on or off; with tracing on, the
//!   Register span that creates the child and the Acquire span that grants it link to them.

use crate::common;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use baton::pb::{
    admin_service_client::AdminServiceClient, agent_service_client::AgentServiceClient,
    schedule_service_client::ScheduleServiceClient,
};
use common::*;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_proto::tonic::{
    self as otlp,
    collector::trace::v1::{
        trace_service_server::{TraceService, TraceServiceServer},
        ExportTraceServiceRequest, ExportTraceServiceResponse,
    },
    common::v1::any_value,
};
use tokio_util::sync::CancellationToken;
use tonic::{transport::Channel, Code, Request};
use tracing::Instrument;

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
    let register = |agents: Vec<pb::Agent>| pb::RegisterRequest {
        request_id: String::new(),
        queue: "q".into(),
        agents,
        reset_schedule: false,
    };
    // Leases long enough that none expires while the failed run waits its error interval
    // (a lease taken back would be granted again in its place).
    let from_header = pb::Agent { error_interval: dur(200), ..agent("from-header", 0, 60_000) };
    c.register(with_traceparent(register(vec![from_header]), PRODUCER)).await.unwrap();
    let explicit = pb::Agent { traceparent: EXPLICIT.into(), ..agent("explicit", 0, 60_000) };
    c.register(with_traceparent(register(vec![explicit]), PRODUCER)).await.unwrap();
    c.register(with_traceparent(register(vec![agent("bad-header", 0, 60_000)]), "00-zz-zz-01")).await.unwrap();
    c.register(register(vec![agent("none", 0, 60_000)])).await.unwrap();

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
                request_id: String::new(),
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

/// An OTLP/gRPC trace receiver on loopback: every span exported to it, with its service name.
#[derive(Clone, Default)]
struct Receiver {
    spans: Arc<Mutex<Vec<(String, otlp::trace::v1::Span)>>>,
}

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut spans = self.spans.lock().unwrap();
        for resource_spans in request.into_inner().resource_spans {
            let service = (resource_spans.resource.iter().flat_map(|r| &r.attributes))
                .find(|a| a.key == "service.name")
                .and_then(|a| a.value.as_ref())
                .and_then(|v| match &v.value {
                    Some(any_value::Value::StringValue(s)) => Some(s.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            for scope in resource_spans.scope_spans {
                spans.extend(scope.spans.into_iter().map(|s| (service.clone(), s)));
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

impl Receiver {
    async fn start() -> (Self, String) {
        let receiver = Receiver::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let service = TraceServiceServer::new(receiver.clone());
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
        );
        (receiver, format!("http://{addr}"))
    }

    fn find(&self, service: &str, name: &str) -> Option<otlp::trace::v1::Span> {
        let spans = self.spans.lock().unwrap();
        spans.iter().find(|(s, span)| s == service && span.name == name).map(|(_, span)| span.clone())
    }
}

fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

fn attribute(span: &otlp::trace::v1::Span, key: &str) -> Option<any_value::Value> {
    span.attributes.iter().find(|a| a.key == key).and_then(|a| a.value.clone()).and_then(|v| v.value)
}

// One job's trace, producer → Baton → worker, as an OTLP collector receives it: the producer's
// span (this process, through baton-client and tracing-opentelemetry), Baton's Register span (a
// child of it) and its script span, and the worker's run of the agent (a child of Baton's
// Register span, as stored with the agent). Baton is a separate process exporting by the
// standard OTEL_* variables.
#[tokio::test]
async fn one_jobs_spans_reach_a_collector_from_producer_through_baton_to_worker() {
    use tracing_subscriber::layer::SubscriberExt;

    let (receiver, endpoint) = Receiver::start().await;
    let redis = TestRedis::start().await;
    let baton = BatonProcess::spawn(|cmd| {
        cmd.args(["--redis-url", &redis.url()])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
            .env("OTEL_BSP_SCHEDULE_DELAY", "100")
            .env("OTEL_SERVICE_NAME", "baton");
    });
    assert!(
        baton.log.lock().unwrap().iter().any(|l| l.contains("OpenTelemetry traces over OTLP")),
        "Baton says it exports traces"
    );

    // This process: producer and worker, exporting to the same receiver.
    let exporter =
        opentelemetry_otlp::SpanExporter::builder().with_tonic().with_endpoint(endpoint.as_str()).build().unwrap();
    let resource = opentelemetry_sdk::Resource::builder().with_service_name("shop").build();
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    let tracer = opentelemetry::trace::TracerProvider::tracer(&provider, "shop");
    // A current-thread runtime: every task the helpers spawn sees this thread's subscriber.
    let _subscriber = tracing::subscriber::set_default(
        tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(tracer)),
    );

    let client = baton::client::Client::builder(baton.url()).connect().await.unwrap();
    let produce = tracing::info_span!("produce", otel.kind = "producer");
    let producer_tp = {
        let mut agents = client.agents();
        let register = pb::RegisterRequest {
            request_id: String::new(),
            queue: "orders".into(),
            agents: vec![agent("order-1", 0, 30_000)],
            reset_schedule: false,
        };
        async {
            agents.register(register).await.unwrap();
            baton::client::otel::current_traceparent().expect("the producer's span has a context")
        }
        .instrument(produce)
        .await
    };
    let trace_id = producer_tp[3..35].to_string();

    let worker = baton::client::worker::Worker::new(&client, "orders", "w1");
    let stop = CancellationToken::new();
    let seen = Arc::new(Mutex::new(None));
    let (stop_in, seen_in) = (stop.clone(), seen.clone());
    worker
        .run(stop.clone(), move |lease, _cancel| {
            let (stop, seen) = (stop_in.clone(), seen_in.clone());
            async move {
                *seen.lock().unwrap() =
                    Some((lease.agent.unwrap().traceparent, baton::client::otel::current_traceparent()));
                stop.cancel();
                Ok(())
            }
        })
        .await
        .unwrap();
    let (stored, in_handler) = seen.lock().unwrap().clone().expect("the worker ran the agent");
    assert_eq!(&stored[3..35], trace_id, "Baton stored a context in the producer's trace: {stored}");
    assert_ne!(stored, producer_tp, "with tracing on, the stored context is Baton's Register span");
    let in_handler = in_handler.expect("the handler runs in a span");
    assert_eq!(&in_handler[3..35], trace_id, "the handler runs in the producer's trace");

    let flushed = provider.clone();
    tokio::task::spawn_blocking(move || flushed.force_flush()).await.unwrap().unwrap();
    eventually(Duration::from_secs(60), "every span of the job at the receiver", || {
        let receiver = receiver.clone();
        async move {
            receiver.find("shop", "produce").is_some()
                && receiver.find("baton", "baton.v1.AgentService/Register").is_some()
                && receiver.find("baton", "FCALL registerAgents").is_some()
                && receiver.find("shop", "process orders").is_some()
        }
    })
    .await;
    let produce = receiver.find("shop", "produce").unwrap();
    let register = receiver.find("baton", "baton.v1.AgentService/Register").unwrap();
    let script = receiver.find("baton", "FCALL registerAgents").unwrap();
    let process = receiver.find("shop", "process orders").unwrap();
    for span in [&produce, &register, &script, &process] {
        assert_eq!(hex(&span.trace_id), trace_id, "{} is in the job's trace", span.name);
    }
    assert_eq!(register.parent_span_id, produce.span_id, "Baton's Register span is the producer's child");
    assert_eq!(register.kind, otlp::trace::v1::span::SpanKind::Server as i32);
    assert_eq!(attribute(&register, "rpc.system"), Some(any_value::Value::StringValue("grpc".into())));
    assert_eq!(attribute(&register, "rpc.method"), Some(any_value::Value::StringValue("Register".into())));
    assert_eq!(script.parent_span_id, register.span_id, "the script's span is the Register span's child");
    assert_eq!(script.kind, otlp::trace::v1::span::SpanKind::Client as i32);
    assert_eq!(attribute(&script, "db.system.name"), Some(any_value::Value::StringValue("redis".into())));
    assert_eq!(stored, format!("00-{trace_id}-{}-01", hex(&register.span_id)));
    assert_eq!(process.parent_span_id, register.span_id, "the worker's run is a child of Baton's Register span");
    assert_eq!(process.kind, otlp::trace::v1::span::SpanKind::Consumer as i32);
    assert_eq!(attribute(&process, "baton.agent.name"), Some(any_value::Value::StringValue("order-1".into())));
    assert_eq!(attribute(&process, "baton.outcome"), Some(any_value::Value::StringValue("SUCCESS".into())));
    assert_eq!(&in_handler[36..52], hex(&process.span_id), "the handler's current span is the run's");
    // The job's trace as the collector holds it (`cargo test --test it trace:: -- --nocapture`).
    for (service, span) in [("shop", &produce), ("baton", &register), ("baton", &script), ("shop", &process)] {
        eprintln!(
            "trace {trace_id}  span {}  parent {:16}  {service:5}  {}",
            hex(&span.span_id),
            hex(&span.parent_span_id),
            span.name
        );
    }

    // A recurring agent's run starts a trace of its own, linked to the one that registered it.
    let recurring = tracing::info_span!("produce-recurring");
    let registered_in = async {
        let register = pb::RegisterRequest {
            request_id: String::new(),
            queue: "reports".into(),
            agents: vec![agent("daily", 3_600_000, 30_000)],
            reset_schedule: false,
        };
        client.agents().register(register).await.unwrap();
        baton::client::otel::current_traceparent().unwrap()
    }
    .instrument(recurring)
    .await;
    let stop = CancellationToken::new();
    let stop_in = stop.clone();
    let runs = Arc::new(Mutex::new(Vec::new()));
    let runs_in = runs.clone();
    baton::client::worker::Worker::new(&client, "reports", "w2")
        .run(stop.clone(), move |_lease, _cancel| {
            let (stop, runs) = (stop_in.clone(), runs_in.clone());
            async move {
                runs.lock().unwrap().push(baton::client::otel::current_traceparent().unwrap());
                stop.cancel();
                Ok(())
            }
        })
        .await
        .unwrap();
    let run_tp = runs.lock().unwrap()[0].clone();
    assert_ne!(&run_tp[3..35], &registered_in[3..35], "a recurring run is a trace of its own");
    let flushed = provider.clone();
    tokio::task::spawn_blocking(move || flushed.force_flush()).await.unwrap().unwrap();
    eventually(Duration::from_secs(60), "the recurring run's span at the receiver", || {
        let receiver = receiver.clone();
        async move { receiver.find("shop", "process reports").is_some() }
    })
    .await;
    let run = receiver.find("shop", "process reports").unwrap();
    assert!(run.parent_span_id.is_empty(), "a root span");
    assert_eq!(hex(&run.trace_id), &run_tp[3..35]);
    assert_eq!(run.links.len(), 1, "linked to the registration");
    assert_eq!(hex(&run.links[0].trace_id), &registered_in[3..35], "the link names the registering trace");
    let _ = provider.shutdown();
}

/// A traceparent of its own for each `i`.
fn numbered(i: usize) -> String {
    format!("00-{:032x}-{:016x}-01", i + 1, i + 1)
}

fn after(name: &str, parents: &[(&str, &str)]) -> pb::Agent {
    let after = parents
        .iter()
        .map(|(q, n)| pb::AgentRef { queue: q.to_string(), name: n.to_string(), on_failure: 0, ..Default::default() })
        .collect();
    pb::Agent { after, ..agent(name, 0, 30_000) }
}

fn register_in(queue: &str, agents: Vec<pb::Agent>) -> pb::RegisterRequest {
    pb::RegisterRequest { queue: queue.into(), agents, ..Default::default() }
}

/// Long-polls `queue` until `n` leases are held, each Acquire with `traceparent` when given.
async fn acquire_in(c: &mut AgentServiceClient<Channel>, queue: &str, n: usize, traceparent: &str) -> Vec<pb::Lease> {
    let mut leases = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        while leases.len() < n {
            let poll = pb::AcquireRequest {
                queue: queue.into(),
                worker_id: "w".into(),
                max_leases: (n - leases.len()) as u32,
                wait: dur(1_000),
            };
            let request = if traceparent.is_empty() { Request::new(poll) } else { with_traceparent(poll, traceparent) };
            leases.extend(c.acquire(request).await.unwrap().into_inner().leases);
        }
    })
    .await
    .expect("leases in time");
    leases
}

async fn complete_all(c: &mut AgentServiceClient<Channel>, leases: &[pb::Lease]) {
    for l in leases {
        c.complete(complete_req(l, pb::Outcome::Success)).await.unwrap();
    }
}

// With tracing off (this process exports nothing): a child keeps the trace context of its
// first 128 parents in `after` order (one registered by the same call: the context it was
// registered with; a label named "tp" is no trace context), read in script-sized steps, kept
// when the child is registered again, and handed out in its lease's parents.
#[tokio::test]
async fn a_childs_lease_carries_its_parents_trace_contexts() {
    const FAN: usize = 130;
    let mut config = test_config();
    config.limits.script_batch = 8; // knownAgents reads 32 names a step: five steps for the fan
    let env = Env::with_config(config).await;
    let mut c = env.baton.agents().await;
    let fan: Vec<pb::Agent> =
        (0..FAN).map(|i| pb::Agent { traceparent: numbered(i), ..agent(&format!("p{i:03}"), 0, 30_000) }).collect();
    c.register(register_in("fan", fan)).await.unwrap();
    c.register(with_traceparent(register_in("q", vec![agent("header", 0, 30_000)]), PRODUCER)).await.unwrap();
    let plain = pb::Agent { labels: [("tp".to_string(), EXPLICIT.to_string())].into(), ..agent("plain", 0, 30_000) };
    c.register(register_in("q", vec![plain])).await.unwrap();

    // After: header, plain, same (this call's), then the fan in reverse: p129 … p000.
    let names: Vec<String> = (0..FAN).rev().map(|i| format!("p{i:03}")).collect();
    let mut parents = vec![("q", "header"), ("q", "plain"), ("", "same")];
    parents.extend(names.iter().map(|n| ("fan", n.as_str())));
    let same = pb::Agent { traceparent: EXPLICIT.into(), ..agent("same", 0, 30_000) };
    let third = numbered(1_000);
    // A second child whose first parent is the first's 133rd: traced for one, not the other.
    let agents = vec![same, after("child", &parents), after("second", &[("fan", "p000")])];
    let r = c.register(with_traceparent(register_in("q", agents), &third)).await.unwrap();
    assert_eq!(r.into_inner().created, 3);
    // Registered again without parents: it keeps them, and their contexts.
    let again = c.register(register_in("q", vec![agent("child", 0, 30_000)])).await.unwrap().into_inner();
    assert_eq!(again.updated, 1);

    let fan = acquire_in(&mut c, "fan", FAN, "").await;
    complete_all(&mut c, &fan).await;
    let mut q = acquire_in(&mut c, "q", 3, "").await;
    q.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(q.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(), ["header", "plain", "same"]);
    complete_all(&mut c, &q).await;
    let mut children = acquire_in(&mut c, "q", 2, "").await;
    children.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(children.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(), ["child", "second"]);
    let second = children.pop().unwrap();
    assert_eq!(second.parents.len(), 1);
    assert_eq!(second.parents[0].traceparent, numbered(0), "p000 is the second child's first parent");
    let lease = children.pop().unwrap();
    assert_eq!(lease.parents.len(), FAN + 3);
    let got: HashMap<(&str, &str), &str> =
        lease.parents.iter().map(|p| ((p.queue.as_str(), p.name.as_str()), p.traceparent.as_str())).collect();
    assert_eq!(got[&("q", "header")], PRODUCER, "the header's context, stored with the parent");
    assert_eq!(got[&("q", "plain")], "", "a label is no trace context");
    assert_eq!(got[&("q", "same")], EXPLICIT, "a parent of the same call: its own context");
    // The first 128 in `after` order: p129 … p005 (125 of the fan); not p004 … p000.
    for i in 0..FAN {
        let want = if i >= 5 { numbered(i) } else { String::new() };
        assert_eq!(got[&("fan", format!("p{i:03}").as_str())], want, "p{i:03}");
    }
    let carried = lease.parents.iter().filter(|p| !p.traceparent.is_empty()).count();
    println!("trace: a child of {} parents carried {carried} parents' trace contexts", lease.parents.len());
}

// With tracing on, as a collector receives Baton's spans: the Register span that creates a
// child links to each parent's stored trace context (Baton's Register span of that parent), and
// so does the Acquire span that grants the child, whose lease carries the same contexts.
#[tokio::test]
async fn a_childs_register_and_acquire_spans_link_to_its_parents_traces() {
    let (receiver, endpoint) = Receiver::start().await;
    let redis = TestRedis::start().await;
    let baton = BatonProcess::spawn(|cmd| {
        cmd.args(["--redis-url", &redis.url()])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
            .env("OTEL_BSP_SCHEDULE_DELAY", "100")
            .env("OTEL_SERVICE_NAME", "baton");
    });
    let mut c = AgentServiceClient::new(baton.channel().await);
    let (ta, tb, tc, td, te) = (numbered(1), numbered(2), numbered(3), numbered(4), numbered(5));
    c.register(with_traceparent(register_in("q", vec![agent("a", 0, 30_000)]), &ta)).await.unwrap();
    c.register(with_traceparent(register_in("other", vec![agent("b", 0, 30_000)]), &tb)).await.unwrap();
    let stored = |leases: &[pb::Lease]| leases[0].agent.as_ref().unwrap().traceparent.clone();
    let child = after("c", &[("q", "a"), ("other", "b")]);
    c.register(with_traceparent(register_in("q", vec![child]), &tc)).await.unwrap();
    // A batch member with a parent: RegisterBatch links the same way.
    let batch = pb::RegisterBatchRequest {
        batch: "nightly".into(),
        queue: "members".into(),
        agents: vec![after("m", &[("q", "a")])],
        ..Default::default()
    };
    c.register_batch(with_traceparent(batch, &te)).await.unwrap();
    let a = acquire_in(&mut c, "q", 1, "").await;
    let b = acquire_in(&mut c, "other", 1, "").await;
    let (stored_a, stored_b) = (stored(&a), stored(&b));
    assert_eq!(&stored_a[3..35], &ta[3..35], "a's context is in its producer's trace");
    assert_ne!(stored_a, ta, "with tracing on, the stored context is Baton's Register span");
    complete_all(&mut c, &a).await;
    complete_all(&mut c, &b).await;
    // Long polls in trace D until the child is granted (released by its parents' Completes).
    let mut calls = 0;
    let lease = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            calls += 1;
            let poll = pb::AcquireRequest { queue: "q".into(), worker_id: "w".into(), max_leases: 1, wait: dur(1_000) };
            if let Some(l) = c.acquire(with_traceparent(poll, &td)).await.unwrap().into_inner().leases.pop() {
                break l;
            }
        }
    })
    .await
    .expect("the child granted in time");
    assert_eq!(lease.name, "c");
    let carried: Vec<(&str, &str)> = lease.parents.iter().map(|p| (p.name.as_str(), p.traceparent.as_str())).collect();
    assert_eq!(carried, [("b", stored_b.as_str()), ("a", stored_a.as_str())], "in name order of queue and name");

    let trace = |tp: &str| tp[3..35].to_string();
    let spans_in = |name: &'static str, trace_id: String| {
        let spans = receiver.spans.lock().unwrap();
        spans
            .iter()
            .filter(|(s, span)| s == "baton" && span.name == name && hex(&span.trace_id) == trace_id)
            .map(|(_, span)| span.clone())
            .collect::<Vec<_>>()
    };
    let linked = |span: &otlp::trace::v1::Span| {
        let mut links: Vec<String> =
            span.links.iter().map(|l| format!("00-{}-{}-01", hex(&l.trace_id), hex(&l.span_id))).collect();
        links.sort();
        links
    };
    let mut want = vec![stored_a.clone(), stored_b.clone()];
    want.sort();
    eventually(Duration::from_secs(60), "the child's Register and Acquire spans at the receiver", || {
        let ready = !spans_in("baton.v1.AgentService/Register", trace(&tc)).is_empty()
            && spans_in("baton.v1.AgentService/Acquire", trace(&td)).len() == calls
            && !spans_in("baton.v1.AgentService/RegisterBatch", trace(&te)).is_empty();
        async move { ready }
    })
    .await;
    let register = spans_in("baton.v1.AgentService/Register", trace(&tc)).pop().unwrap();
    assert_eq!(linked(&register), want, "the child's Register span links to each parent's context");
    let parent_register = spans_in("baton.v1.AgentService/Register", trace(&ta)).pop().unwrap();
    assert!(parent_register.links.is_empty(), "a Register without parents links to nothing");
    let batch = spans_in("baton.v1.AgentService/RegisterBatch", trace(&te)).pop().unwrap();
    assert_eq!(linked(&batch), vec![stored_a.clone()], "RegisterBatch links its member to its parent");
    let acquires = spans_in("baton.v1.AgentService/Acquire", trace(&td));
    let granted: Vec<_> = acquires.iter().filter(|s| !s.links.is_empty()).collect();
    assert_eq!(granted.len(), 1, "one Acquire granted the child; polls that found nothing link to nothing");
    let acquire = granted[0];
    assert_eq!(linked(acquire), want, "the Acquire span that granted the child links to its parents");
    for (name, span) in [("Register c", &register), ("Acquire c", acquire)] {
        eprintln!("trace {}  span {}  {name}  links {:?}", hex(&span.trace_id), hex(&span.span_id), linked(span));
    }
}

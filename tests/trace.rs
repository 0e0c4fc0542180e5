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
//!   RPC span that created the agent.

mod common;

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
                && receiver.find("baton", "EVALSHA registerAgents").is_some()
                && receiver.find("shop", "process orders").is_some()
        }
    })
    .await;
    let produce = receiver.find("shop", "produce").unwrap();
    let register = receiver.find("baton", "baton.v1.AgentService/Register").unwrap();
    let script = receiver.find("baton", "EVALSHA registerAgents").unwrap();
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
    // The job's trace as the collector holds it (`cargo test --test trace -- --nocapture`).
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

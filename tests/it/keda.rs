//! KEDA's external scaler, served by Baton on its gRPC port, called through a client generated
//! from KEDA's own proto (`proto/keda/externalscaler.proto`), as KEDA's operator calls it.
//!
//! Invariants checked: the metric is the source's backlog (due + working for a queue, due + in
//! flight for a receiver, waiting + claimed for a pool; a paused queue or receiver counts only
//! what is held, and a blocked child is not due) and IsActive says whether it is above
//! `activationTargetSize`; StreamIsActive answers at once and pushes `true` when the first item
//! falls due, both for an item that arrives (a wake-up) and for one whose time comes (the next
//! due time), without polling; a stream watching a queue takes no wake-up from its long polls;
//! bad metadata is INVALID_ARGUMENT naming the key; with authentication on, the scaler needs
//! read access within the caller's scopes.

use crate::common;

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use baton::keda_pb::{GetMetricsRequest, ScaledObjectRef};

use baton::keda_pb::external_scaler_client::ExternalScalerClient;
use common::*;
use pb::{
    admin_service_client::AdminServiceClient, claim_service_client::ClaimServiceClient,
    schedule_service_client::ScheduleServiceClient,
};
use tonic::{metadata::MetadataValue, transport::Channel, Code, Request};

fn scaled(pairs: &[(&str, &str)]) -> ScaledObjectRef {
    ScaledObjectRef {
        name: "workers".into(),
        namespace: "jobs".into(),
        // KEDA passes the trigger's whole metadata, its own keys included.
        scaler_metadata: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .chain([("scalerAddress".to_string(), "baton.baton.svc:50051".to_string())])
            .collect::<HashMap<_, _>>(),
    }
}

/// (IsActive, metric value) as KEDA reads them.
async fn read(keda: &mut ExternalScalerClient<Channel>, r: &ScaledObjectRef) -> (bool, f64) {
    let active = keda.is_active(r.clone()).await.unwrap().into_inner().result;
    let req = GetMetricsRequest { scaled_object_ref: Some(r.clone()), metric_name: "s0-baton-queue-fill".into() };
    let values = keda.get_metrics(req).await.unwrap().into_inner().metric_values;
    assert_eq!(values.len(), 1);
    assert_eq!(values[0].metric_value as f64, values[0].metric_value_float);
    (active, values[0].metric_value_float)
}

// A queue as it fills and drains: the metric is due + working, the spec's target is
// targetSize, and IsActive follows the backlog.
#[tokio::test]
async fn a_queue_filling_and_draining() {
    let mut env = Env::start().await;
    let mut keda = ExternalScalerClient::new(env.baton.channel().await);
    let r = scaled(&[("queue", "fill"), ("targetSize", "10")]);

    let spec = keda.get_metric_spec(r.clone()).await.unwrap().into_inner().metric_specs;
    assert_eq!(spec.len(), 1);
    assert_eq!(
        (spec[0].metric_name.as_str(), spec[0].target_size_float, spec[0].target_size),
        ("baton-queue-fill", 10.0, 10)
    );

    let mut figures = vec![("empty", read(&mut keda, &r).await)];
    let agents: Vec<_> = (0..25).map(|i| agent(&format!("job-{i}"), 0, 60_000)).collect();
    register(&mut env.client, "fill", agents).await;
    figures.push(("25 registered", read(&mut keda, &r).await));
    let leases = acquire(&mut env.client, "fill", "w1", 10).await;
    assert_eq!(leases.len(), 10);
    figures.push(("10 of them leased", read(&mut keda, &r).await));
    for l in &leases {
        env.client.complete(complete_req(l, pb::Outcome::Success)).await.unwrap();
    }
    figures.push(("10 completed", read(&mut keda, &r).await));
    loop {
        let leases = acquire(&mut env.client, "fill", "w1", 10).await;
        if leases.is_empty() {
            break;
        }
        for l in &leases {
            env.client.complete(complete_req(l, pb::Outcome::Success)).await.unwrap();
        }
    }
    figures.push(("all completed", read(&mut keda, &r).await));
    for (when, (active, value)) in &figures {
        println!(
            "queue fill, {when}: IsActive={active} GetMetrics={value} (replicas at targetSize 10: {})",
            (value / 10.0).ceil()
        );
    }
    let seen: Vec<(bool, f64)> = figures.iter().map(|(_, f)| *f).collect();
    assert_eq!(seen, [(false, 0.0), (true, 25.0), (true, 25.0), (true, 15.0), (false, 0.0)]);

    // activationTargetSize: active only above it.
    register(&mut env.client, "fill", (0..3).map(|i| agent(&format!("more-{i}"), 0, 60_000)).collect()).await;
    assert_eq!(read(&mut keda, &scaled(&[("queue", "fill"), ("activationTargetSize", "3")])).await, (false, 3.0));
    assert_eq!(read(&mut keda, &scaled(&[("queue", "fill"), ("activationTargetSize", "2")])).await, (true, 3.0));
}

/// The next answer of a StreamIsActive stream, within `limit`.
async fn next(stream: &mut tonic::Streaming<baton::keda_pb::IsActiveResponse>, limit: Duration) -> bool {
    tokio::time::timeout(limit, stream.message())
        .await
        .expect("a StreamIsActive answer in time")
        .expect("the stream is healthy")
        .expect("the stream is open")
        .result
}

// Scale from zero: StreamIsActive says false at once, then true as soon as the first item is
// due, whether it arrives (Register: a wake-up) or its time comes (a recurring agent's next
// run: the next due time). A long poll on the same queue still gets its wake-up.
#[tokio::test]
async fn stream_is_active_pushes_the_first_due_item() {
    let mut env = Env::start().await;
    let mut keda = ExternalScalerClient::new(env.baton.channel().await);

    // A worker long-polls the queue: once its subscription is confirmed, any wake-up reaches it
    // (a wake-up before it waits is kept as a permit).
    let mut worker = env.baton.agents().await;
    let polling = tokio::spawn(async move {
        let req = pb::AcquireRequest { queue: "zero".into(), worker_id: "w".into(), max_leases: 1, wait: dur(60_000) };
        let started = Instant::now();
        let leases = worker.acquire(req).await.unwrap().into_inner().leases;
        (leases, started.elapsed())
    });
    // The queue's wake-up channel, as ARCHITECTURE.md names it (`{q:Q}:wake`).
    let channel = "baton:{q:zero}:wake".to_string();
    let redis = env.redis.conn().await;
    eventually(Duration::from_secs(30), "the long poll follows the queue's channel", || {
        let (mut redis, channel) = (redis.clone(), channel.clone());
        async move {
            let n: Vec<(String, u64)> =
                redis::cmd("PUBSUB").arg("NUMSUB").arg(&channel).query_async(&mut redis).await.unwrap();
            n.first().is_some_and(|(_, n)| *n > 0)
        }
    })
    .await;

    let mut stream = keda.stream_is_active(scaled(&[("queue", "zero")])).await.unwrap().into_inner();
    assert!(!next(&mut stream, Duration::from_secs(30)).await, "inactive at first");

    let registered = Instant::now();
    register(&mut env.client, "zero", vec![agent("first", 1_500, 60_000)]).await;
    assert!(next(&mut stream, Duration::from_secs(30)).await, "active once an agent is due");
    println!("queue zero: StreamIsActive true {:?} after the first agent was registered", registered.elapsed());
    let (leases, waited) = polling.await.unwrap();
    assert_eq!(leases.len(), 1, "the long poll got the agent (waited {waited:?})");
    assert!(waited < Duration::from_secs(60), "woken, not timed out");

    // Its run succeeds: nothing due or working; the next run is 1.5 s away.
    env.client.complete(complete_req(&leases[0], pb::Outcome::Success)).await.unwrap();
    let mut stream = keda.stream_is_active(scaled(&[("queue", "zero")])).await.unwrap().into_inner();
    assert!(!next(&mut stream, Duration::from_secs(30)).await, "inactive between runs");
    let got = next(&mut stream, Duration::from_secs(30)).await;
    let due = ms(&env
        .client
        .get_agent(pb::GetAgentRequest { queue: "zero".into(), name: "first".into() })
        .await
        .unwrap()
        .into_inner()
        .agent
        .unwrap()
        .next_run_at);
    let late = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64 - due;
    assert!(got, "active when the next run falls due");
    println!("queue zero: StreamIsActive true {late} ms after the recurring agent's next run fell due");
}

// A receiver: a message scheduled 1 s ahead makes it active when it falls due; a pool: a
// claim waiting with nothing idle raises its scale-up signal.
#[tokio::test]
async fn receivers_and_pools_scale_too() {
    let env = Env::start().await;
    let channel = env.baton.channel().await;
    let mut keda = ExternalScalerClient::new(channel.clone());

    let r = scaled(&[("receiver", "mail"), ("targetSize", "5")]);
    let mut stream = keda.stream_is_active(r.clone()).await.unwrap().into_inner();
    assert!(!next(&mut stream, Duration::from_secs(30)).await);
    let mut schedules = ScheduleServiceClient::new(channel.clone());
    let req = pb::ScheduleRequest {
        receiver: "mail".into(),
        payload: b"hi".to_vec(),
        when: Some(pb::schedule_request::When::Delay(dur(1_000).unwrap())),
        ..Default::default()
    };
    let scheduled = Instant::now();
    schedules.schedule(req).await.unwrap();
    assert_eq!(read(&mut keda, &r).await, (false, 0.0), "not due yet");
    assert!(next(&mut stream, Duration::from_secs(30)).await);
    let after = scheduled.elapsed();
    assert!(after >= Duration::from_millis(1_000), "not before it is due: {after:?}");
    println!("receiver mail: StreamIsActive true {:?} after a message scheduled 1 s ahead", after);
    assert_eq!(read(&mut keda, &r).await, (true, 1.0));

    let p = scaled(&[("pool", "vms")]);
    let mut stream = keda.stream_is_active(p.clone()).await.unwrap().into_inner();
    assert!(!next(&mut stream, Duration::from_secs(30)).await);
    let mut claims = ClaimServiceClient::new(channel.clone());
    let claiming = tokio::spawn(async move {
        let req =
            pb::ClaimRequest { pool: "vms".into(), claimer_id: "c1".into(), wait: dur(60_000), ..Default::default() };
        claims.claim(req).await
    });
    assert!(next(&mut stream, Duration::from_secs(30)).await, "a waiting claim makes the pool active");
    assert_eq!(read(&mut keda, &p).await, (true, 1.0));
    claiming.abort();
}

// A paused source hands nothing out, so what waits in it is no worker's backlog: a paused
// queue counts only its leases, a paused receiver only its deliveries in flight (a paused
// queue keeps no worker scaled up for its waiting agents); Resume counts them again. Nor is a
// child blocked on its parent backlog.
#[tokio::test]
async fn a_paused_source_counts_only_what_is_held() {
    let mut env = Env::start().await;
    let channel = env.baton.channel().await;
    let mut keda = ExternalScalerClient::new(channel.clone());
    let mut admin = AdminServiceClient::new(channel.clone());
    let source = |kind: pb::SourceKind, name: &str| Some(pb::Source { kind: kind as i32, name: name.into() });

    let q = scaled(&[("queue", "held")]);
    register(&mut env.client, "held", (0..3).map(|i| agent(&format!("job-{i}"), 0, 60_000)).collect()).await;
    let lease = acquire(&mut env.client, "held", "w1", 1).await.remove(0);
    assert_eq!(read(&mut keda, &q).await, (true, 3.0), "2 due + 1 leased");
    admin.pause(pb::PauseRequest { source: source(pb::SourceKind::Queue, "held"), create: false }).await.unwrap();
    assert_eq!(read(&mut keda, &q).await, (true, 1.0), "paused: the lease only");
    env.client.complete(complete_req(&lease, pb::Outcome::Success)).await.unwrap();
    assert_eq!(read(&mut keda, &q).await, (false, 0.0), "paused with 2 waiting: inactive");
    let mut stream = keda.stream_is_active(q.clone()).await.unwrap().into_inner();
    assert!(!next(&mut stream, Duration::from_secs(30)).await, "StreamIsActive: inactive while paused");
    admin.resume(pb::ResumeRequest { source: source(pb::SourceKind::Queue, "held"), create: false }).await.unwrap();
    assert_eq!(read(&mut keda, &q).await, (true, 2.0), "resumed: the waiting agents count again");
    // A child blocked on its parent is not due: no backlog until the parent succeeded.
    let parent = pb::AgentRef { queue: String::new(), name: "job-1".into(), on_failure: 0, batch: String::new() };
    register(&mut env.client, "held", vec![pb::Agent { after: vec![parent], ..agent("child", 0, 60_000) }]).await;
    assert_eq!(read(&mut keda, &q).await, (true, 2.0), "a blocked child is no backlog");

    let r = scaled(&[("receiver", "held")]);
    let mut schedules = ScheduleServiceClient::new(channel.clone());
    for _ in 0..3 {
        schedules.schedule(pb::ScheduleRequest { receiver: "held".into(), ..Default::default() }).await.unwrap();
    }
    let sub = pb::SubscribeRequest { receiver: "held".into(), consumer_id: "c1".into(), max_in_flight: 1 };
    let mut deliveries = schedules.subscribe(sub).await.unwrap().into_inner();
    let delivered = tokio::time::timeout(Duration::from_secs(30), deliveries.message()).await.unwrap().unwrap();
    assert!(delivered.is_some());
    assert_eq!(read(&mut keda, &r).await, (true, 3.0), "2 due + 1 in flight");
    admin.pause(pb::PauseRequest { source: source(pb::SourceKind::Receiver, "held"), create: false }).await.unwrap();
    assert_eq!(read(&mut keda, &r).await, (true, 1.0), "paused: the delivery in flight only");
}

// Bad metadata: INVALID_ARGUMENT naming the key, on every method.
#[tokio::test]
async fn bad_metadata_names_the_key() {
    let env = Env::start().await;
    let mut keda = ExternalScalerClient::new(env.baton.channel().await);
    let cases: &[(&[(&str, &str)], &str)] = &[
        (&[], "scalerMetadata"),
        (&[("queue", "a"), ("pool", "b")], "scalerMetadata"),
        (&[("queue", "no:colons")], "scalerMetadata.queue"),
        (&[("queue", "a"), ("targetSize", "0")], "scalerMetadata.targetSize"),
        (&[("queue", "a"), ("targetSize", "many")], "scalerMetadata.targetSize"),
        (&[("queue", "a"), ("activationTargetSize", "-1")], "scalerMetadata.activationTargetSize"),
    ];
    for (pairs, field) in cases {
        let r = scaled(pairs);
        let errors = [
            keda.is_active(r.clone()).await.unwrap_err(),
            keda.get_metric_spec(r.clone()).await.unwrap_err(),
            keda.get_metrics(GetMetricsRequest { scaled_object_ref: Some(r.clone()), metric_name: String::new() })
                .await
                .unwrap_err(),
            keda.stream_is_active(r.clone()).await.unwrap_err(),
        ];
        for e in errors {
            assert_eq!(e.code(), Code::InvalidArgument, "{pairs:?}: {e:?}");
            assert!(e.message().contains(field), "{field} named in {:?}", e.message());
        }
    }
    let e = keda.get_metrics(GetMetricsRequest::default()).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("scaledObjectRef"), "{e:?}");
}

// With authentication on: no credentials are refused; a read-only identity reads the sources
// within its scopes, and no others.
#[tokio::test]
async fn the_scaler_needs_read_access_within_scopes() {
    let mut config = test_config();
    config.auth.tokens = vec![baton::config::TokenEntry {
        name: "keda".into(),
        sha256: baton::config::token_hash("tok-keda"),
        roles: vec!["read-only".into()],
        scopes: vec!["billing.*".into()],
    }];
    let env = Env::with_config(config).await;
    let mut keda = ExternalScalerClient::new(env.baton.channel().await);
    let with_token = |r: ScaledObjectRef| {
        let mut req = Request::new(r);
        req.metadata_mut().insert("authorization", MetadataValue::from_static("Bearer tok-keda"));
        req
    };
    let e = keda.is_active(scaled(&[("queue", "billing.jobs")])).await.unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated);
    assert!(!keda.is_active(with_token(scaled(&[("queue", "billing.jobs")]))).await.unwrap().into_inner().result);
    let e = keda.is_active(with_token(scaled(&[("queue", "ops.jobs")]))).await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    let e = keda.stream_is_active(with_token(scaled(&[("pool", "ops.vms")]))).await.unwrap_err();
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
}

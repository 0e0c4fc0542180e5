//! Bad input: every validation rule answers INVALID_ARGUMENT naming the field, with an
//! ErrorInfo (reason INVALID_ARGUMENT, metadata field) and a BadRequest violation, and changes
//! nothing in Redis.

use crate::common;

use common::*;
use tonic::Code;
use tonic_types::StatusExt;

const Q: &str = "v";

/// Asserts a rejected call named `field` and left Redis exactly as it was.
macro_rules! rejects {
    ($env:expr, $field:expr, $call:expr) => {{
        let before = $env.redis.snapshot().await;
        let status = $call.await.expect_err(concat!("expected INVALID_ARGUMENT for ", $field));
        assert_eq!(status.code(), Code::InvalidArgument, "{}: {}", $field, status.message());
        assert!(status.message().starts_with($field), "message {:?} should name {}", status.message(), $field);
        let info = status.get_details_error_info().expect("ErrorInfo detail");
        assert_eq!((info.reason.as_str(), info.domain.as_str()), ("INVALID_ARGUMENT", "baton"));
        assert_eq!(info.metadata.get("field").map(String::as_str), Some($field));
        let bad = status.get_details_bad_request().expect("BadRequest detail");
        assert_eq!(bad.field_violations[0].field, $field);
        assert_eq!($env.redis.snapshot().await, before, "{}: a rejected call changed Redis", $field);
    }};
}

fn reg(agents: Vec<pb::Agent>) -> pb::RegisterRequest {
    pb::RegisterRequest { request_id: String::new(), queue: Q.into(), agents, reset_schedule: false }
}

fn good() -> pb::Agent {
    agent("ok", 1_000, 1_000)
}

fn d(seconds: i64, nanos: i32) -> Option<prost_types::Duration> {
    Some(prost_types::Duration { seconds, nanos })
}

#[tokio::test]
async fn register_and_unregister_reject_bad_fields() {
    let mut config = test_config();
    config.limits.max_batch = 3;
    config.limits.max_payload_bytes = 8;
    config.limits.max_labels = 1;
    config.limits.max_label_bytes = 4;
    config.limits.max_duration_ms = 10_000;
    let env = Env::with_config(config).await;
    register(&mut env.client.clone(), Q, vec![agent("existing", 1_000, 1_000)]).await;
    let mut c = env.client.clone();

    for bad in ["", "a:b", "a{b}", "has space", &"q".repeat(129)] {
        rejects!(env, "queue", c.register(pb::RegisterRequest { queue: bad.into(), ..reg(vec![good()]) }));
    }
    rejects!(env, "agents", c.register(reg(vec![])));
    rejects!(env, "agents", c.register(reg((0..4).map(|i| agent(&format!("a{i}"), 1_000, 1_000)).collect())));
    rejects!(env, "agents[1].name", c.register(reg(vec![good(), pb::Agent { name: "".into(), ..good() }])));
    rejects!(env, "agents[0].name", c.register(reg(vec![pb::Agent { name: "12345".into(), ..good() }])));
    rejects!(env, "agents[0].name", c.register(reg(vec![pb::Agent { name: "x}y".into(), ..good() }])));
    rejects!(env, "agents[1].name", c.register(reg(vec![good(), good()])));
    rejects!(env, "agents[0].interval", c.register(reg(vec![pb::Agent { interval: d(-1, 0), ..good() }])));
    rejects!(env, "agents[0].interval", c.register(reg(vec![pb::Agent { interval: d(11, 0), ..good() }])));
    rejects!(env, "agents[0].interval", c.register(reg(vec![pb::Agent { interval: d(1, 1_000_000_000), ..good() }])));
    rejects!(env, "agents[0].timeout", c.register(reg(vec![pb::Agent { timeout: d(0, 0), ..good() }])));
    rejects!(env, "agents[0].timeout", c.register(reg(vec![pb::Agent { timeout: d(0, 500), ..good() }])));
    rejects!(env, "agents[0].timeout", c.register(reg(vec![pb::Agent { timeout: d(60, 0), ..good() }])));
    rejects!(env, "agents[0].error_interval", c.register(reg(vec![pb::Agent { error_interval: d(0, -1), ..good() }])));
    rejects!(env, "agents[0].payload", c.register(reg(vec![pb::Agent { payload: vec![0; 9], ..good() }])));
    let two_labels = [("a".to_string(), "1".to_string()), ("b".to_string(), "2".to_string())].into();
    rejects!(env, "agents[0].labels", c.register(reg(vec![pb::Agent { labels: two_labels, ..good() }])));
    let empty_key = [(String::new(), "1".to_string())].into();
    rejects!(env, "agents[0].labels", c.register(reg(vec![pb::Agent { labels: empty_key, ..good() }])));
    let long_value = [("k".to_string(), "12345".to_string())].into();
    rejects!(env, "agents[0].labels[k]", c.register(reg(vec![pb::Agent { labels: long_value, ..good() }])));

    rejects!(
        env,
        "queue",
        c.unregister(pb::UnregisterRequest { queue: "".into(), names: vec!["existing".into()], ..Default::default() })
    );
    rejects!(
        env,
        "names",
        c.unregister(pb::UnregisterRequest { queue: Q.into(), names: vec![], ..Default::default() })
    );
    rejects!(
        env,
        "names",
        c.unregister(pb::UnregisterRequest { queue: Q.into(), names: vec!["a".into(); 4], ..Default::default() })
    );
    rejects!(
        env,
        "names[1]",
        c.unregister(pb::UnregisterRequest {
            queue: Q.into(),
            names: vec!["existing".into(), "a:b".into()],
            ..Default::default()
        })
    );
}

#[tokio::test]
async fn lease_calls_reject_bad_fields() {
    let mut config = test_config();
    config.limits.max_batch = 3;
    config.limits.max_wait_ms = 1_000;
    config.limits.max_duration_ms = 10_000;
    config.limits.max_message_bytes = 4;
    let env = Env::with_config(config).await;
    let mut c = env.client.clone();
    register(&mut c, Q, vec![good()]).await;
    let lease = acquire(&mut c, Q, "w", 1).await.pop().unwrap();
    let acq = |queue: &str, worker: &str, max: u32, wait| pb::AcquireRequest {
        queue: queue.into(),
        worker_id: worker.into(),
        max_leases: max,
        wait,
    };

    rejects!(env, "queue", c.acquire(acq("", "w", 1, None)));
    rejects!(env, "worker_id", c.acquire(acq(Q, "", 1, None)));
    rejects!(env, "worker_id", c.acquire(acq(Q, "w:1", 1, None)));
    rejects!(env, "max_leases", c.acquire(acq(Q, "w", 4, None)));
    rejects!(env, "wait", c.acquire(acq(Q, "w", 1, d(-1, 0))));

    let lref = |queue: &str, name: &str, token| pb::LeaseRef {
        queue: queue.into(),
        name: name.into(),
        token,
        ..Default::default()
    };
    let hb = |worker: &str, leases| pb::HeartbeatRequest { worker_id: worker.into(), leases };
    rejects!(env, "worker_id", c.heartbeat(hb("", vec![lref(Q, "ok", lease.token)])));
    rejects!(env, "leases", c.heartbeat(hb("w", vec![lref(Q, "ok", lease.token); 4])));
    rejects!(env, "leases[1].queue", c.heartbeat(hb("w", vec![lref(Q, "ok", lease.token), lref("a{b", "ok", 1)])));
    rejects!(env, "leases[0].name", c.heartbeat(hb("w", vec![lref(Q, "", lease.token)])));
    rejects!(env, "leases[0].token", c.heartbeat(hb("w", vec![lref(Q, "ok", 0)])));

    let ok = complete_req(&lease, pb::Outcome::Success);
    rejects!(env, "queue", c.complete(pb::CompleteRequest { queue: "".into(), ..ok.clone() }));
    rejects!(env, "name", c.complete(pb::CompleteRequest { name: "a b".into(), ..ok.clone() }));
    rejects!(env, "token", c.complete(pb::CompleteRequest { token: 0, ..ok.clone() }));
    rejects!(env, "outcome", c.complete(pb::CompleteRequest { outcome: 0, ..ok.clone() }));
    rejects!(env, "outcome", c.complete(pb::CompleteRequest { outcome: 99, ..ok.clone() }));
    rejects!(env, "http_status", c.complete(pb::CompleteRequest { outcome: 0, http_status: 600, ..ok.clone() }));
    rejects!(env, "http_status", c.complete(pb::CompleteRequest { http_status: 99, ..ok.clone() }));
    rejects!(
        env,
        "error_class",
        c.complete(pb::CompleteRequest { outcome: 0, error_class: "x".repeat(257), ..ok.clone() })
    );
    rejects!(env, "retry_after", c.complete(pb::CompleteRequest { retry_after: d(11, 0), ..ok.clone() }));
    rejects!(env, "retry_after", c.complete(pb::CompleteRequest { retry_after: d(-5, 0), ..ok.clone() }));

    let rel = pb::ReleaseRequest { queue: Q.into(), name: "ok".into(), token: lease.token, delay: None };
    rejects!(env, "queue", c.release(pb::ReleaseRequest { queue: "x:y".into(), ..rel.clone() }));
    rejects!(env, "name", c.release(pb::ReleaseRequest { name: "".into(), ..rel.clone() }));
    rejects!(env, "token", c.release(pb::ReleaseRequest { token: 0, ..rel.clone() }));
    rejects!(env, "delay", c.release(pb::ReleaseRequest { delay: d(11, 0), ..rel.clone() }));

    rejects!(env, "queue", c.get_agent(pb::GetAgentRequest { queue: "".into(), name: "ok".into() }));
    rejects!(env, "name", c.get_agent(pb::GetAgentRequest { queue: Q.into(), name: "".into() }));
    let list = |queue: &str, size, token: &str| pb::ListAgentsRequest {
        queue: queue.into(),
        page_size: size,
        page_token: token.into(),
        name_prefix: String::new(),
    };
    rejects!(env, "queue", c.list_agents(list("", 10, "")));
    rejects!(env, "page_size", c.list_agents(list(Q, 1001, "")));
    rejects!(env, "page_token", c.list_agents(list(Q, 10, "a:b")));
    rejects!(env, "name_prefix", c.list_agents(pb::ListAgentsRequest { name_prefix: "a b".into(), ..list(Q, 10, "") }));
    rejects!(
        env,
        "name_prefix",
        c.list_agents(pb::ListAgentsRequest { name_prefix: "x".repeat(129), ..list(Q, 10, "") })
    );

    // The lease survived all of it.
    c.complete(ok).await.expect("the valid lease is intact");
}

// A bad configuration is refused at start with a message naming the setting.
#[test]
fn bad_config_is_refused() {
    use baton::config::Config;
    use figment::providers::{Format, Toml};
    let bad = [
        ("agent.jitter_ratio", "[agent]\njitter_ratio = 1.5"),
        ("limits.max_batch", "[limits]\nmax_batch = 0"),
        ("limits.script_batch", "[limits]\nscript_batch = 0"),
        ("agent.throttled_multiplier", "[agent]\nthrottled_multiplier = 0.5"),
        ("key_prefix", "key_prefix = \"a{b}\""),
        ("unknown field", "no_such_knob = 1"),
    ];
    for (what, toml) in bad {
        let err = Config::from_figment(Config::figment(None).merge(Toml::string(toml))).unwrap_err();
        assert!(err.to_string().contains(what.split('.').next_back().unwrap()), "{what}: {err}");
    }
}

// A `wait` above limits.max_wait_ms is cut to it, as the proto promises ("at most the server's
// max_wait"), on every call that long-polls: each answers as a wait that ended, not an error.
#[tokio::test]
async fn a_wait_above_max_wait_is_cut_to_it() {
    use baton::pb::{claim_service_client::ClaimServiceClient, leader_service_client::LeaderServiceClient};
    let mut config = test_config();
    config.limits.max_wait_ms = 300;
    let env = Env::with_config(config).await;
    let mut c = env.client.clone();
    register(&mut c, Q, vec![good()]).await;
    let held = acquire(&mut c, Q, "w", 1).await;
    assert_eq!(held.len(), 1);
    let hour = d(3_600, 0);
    let cut = |what: &str, started: std::time::Instant| {
        let took = started.elapsed();
        println!("{what}: a 1 h wait answered after {} ms (max_wait 300 ms)", took.as_millis());
        assert!(took >= std::time::Duration::from_millis(250), "{what} waited {took:?}");
    };
    let limit = std::time::Duration::from_secs(10);

    let started = std::time::Instant::now();
    let acq = pb::AcquireRequest { queue: Q.into(), worker_id: "w".into(), max_leases: 1, wait: hour };
    let got = tokio::time::timeout(limit, c.acquire(acq)).await.expect("cut").expect("not an error");
    assert!(got.into_inner().leases.is_empty());
    cut("Acquire", started);

    let started = std::time::Instant::now();
    let wait = pb::AwaitRequest { queue: Q.into(), name: "ok".into(), wait: hour, after_token: 0 };
    let got = tokio::time::timeout(limit, c.r#await(wait)).await.expect("cut").expect("not an error");
    assert!(!got.into_inner().done);
    cut("Await", started);

    let mut l = LeaderServiceClient::new(env.baton.channel().await);
    let campaign = |candidate: &str, wait| pb::CampaignRequest {
        election: "e".into(),
        candidate_id: candidate.into(),
        ttl: dur(30_000),
        wait,
    };
    assert!(l.campaign(campaign("first", None)).await.unwrap().into_inner().is_leader);
    let started = std::time::Instant::now();
    let got =
        tokio::time::timeout(limit, l.campaign(campaign("second", hour))).await.expect("cut").expect("not an error");
    assert!(!got.into_inner().is_leader);
    cut("Campaign", started);

    let mut p = ClaimServiceClient::new(env.baton.channel().await);
    let claim = pb::ClaimRequest { pool: "empty".into(), claimer_id: "x".into(), wait: hour, ..Default::default() };
    let started = std::time::Instant::now();
    let got = tokio::time::timeout(limit, p.claim(claim)).await.expect("cut").expect("not an error");
    assert!(got.into_inner().resource.is_none());
    cut("Claim", started);
}

//! Transport security and access control, on real processes: TLS with the right and a wrong
//! CA, mutual TLS, certificates reloaded in place, and every RPC of every service refused —
//! with nothing changed in Redis — to a caller without credentials, with a wrong token, without
//! the role, or scoped to other names.

mod common;

use std::{path::Path, time::Duration};

use baton::{
    config::{AuthConfig, CertificateEntry, Config, TokenEntry},
    devcerts::{self, DevCerts},
};
use common::{agent, pb, test_config, BatonProcess, TestBaton, TestRedis};
use pb::{
    admin_service_client::AdminServiceClient, agent_service_client::AgentServiceClient,
    claim_service_client::ClaimServiceClient, leader_service_client::LeaderServiceClient,
    schedule_service_client::ScheduleServiceClient,
};
use tonic::{
    metadata::MetadataValue,
    transport::{Certificate, Channel, ClientTlsConfig, Identity},
    Code, Request, Status,
};
use tonic_types::StatusExt;

fn certs(dir: &Path) -> DevCerts {
    devcerts::generate(dir, &["localhost".into(), "127.0.0.1".into()], "worker-7").unwrap()
}

/// A TLS channel to `addr` trusting `ca`, with a client certificate if given.
async fn tls_channel(
    addr: std::net::SocketAddr,
    ca: &Path,
    client: Option<(&Path, &Path)>,
) -> Result<Channel, tonic::transport::Error> {
    let mut tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(std::fs::read(ca).unwrap()))
        .domain_name("localhost");
    if let Some((cert, key)) = client {
        tls = tls.identity(Identity::from_pem(std::fs::read(cert).unwrap(), std::fs::read(key).unwrap()));
    }
    Channel::from_shared(format!("https://localhost:{}", addr.port()))
        .unwrap()
        .tls_config(tls)?
        .connect_timeout(Duration::from_secs(10))
        .connect()
        .await
}

fn tls_config(c: &DevCerts, mutual: bool) -> Config {
    let mut config = test_config();
    config.tls.cert_file = c.server_cert.display().to_string();
    config.tls.key_file = c.server_key.display().to_string();
    if mutual {
        config.tls.client_ca_file = c.ca.display().to_string();
    }
    config
}

async fn health(channel: Channel) -> Result<(), Status> {
    let mut admin = AdminServiceClient::new(channel);
    admin.get_health(pb::GetHealthRequest {}).await.map(|_| ())
}

// TLS: the right CA connects, another CA does not; with a client CA set, a caller without a
// client certificate is refused, and a certificate's common name is an identity with roles
// and scopes like a token's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_needs_the_right_ca_and_mutual_tls_a_client_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let c = certs(&dir.path().join("a"));
    let other = certs(&dir.path().join("b"));
    let redis = TestRedis::start().await;
    let mut config = tls_config(&c, true);
    config.auth.certificates = vec![CertificateEntry {
        common_name: "worker-7".into(),
        roles: vec!["worker".into()],
        scopes: vec!["billing.*".into()],
    }];
    let baton = TestBaton::start(&redis.url(), config).await;

    let client = Some((c.client_cert.as_path(), c.client_key.as_path()));
    let good = tls_channel(baton.addr, &c.ca, client).await.expect("the right CA and a client certificate");
    health(good.clone()).await.expect("GetHealth as worker-7 (read)");
    let mut agents = AgentServiceClient::new(good);
    let acquire =
        |queue: &str| pb::AcquireRequest { queue: queue.into(), worker_id: "w".into(), max_leases: 1, wait: None };
    agents.acquire(acquire("billing.q")).await.expect("worker-7 works on billing.*");
    let denied = agents.acquire(acquire("ops.q")).await.unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied:?}");

    // A CA that did not sign the server's certificate.
    let wrong = tls_channel(baton.addr, &other.ca, client).await;
    assert!(wrong.is_err(), "a wrong CA must fail the handshake");
    // No client certificate: the server ends the handshake (TLS 1.3 reports it on first use).
    let refused = match tls_channel(baton.addr, &c.ca, None).await {
        Err(_) => true,
        Ok(channel) => health(channel).await.is_err(),
    };
    assert!(refused, "mutual TLS refuses a client without a certificate");
    // A certificate signed by another CA.
    let foreign = Some((other.client_cert.as_path(), other.client_key.as_path()));
    let refused = match tls_channel(baton.addr, &c.ca, foreign).await {
        Err(_) => true,
        Ok(channel) => health(channel).await.is_err(),
    };
    assert!(refused, "mutual TLS refuses a certificate of another CA");
    baton.stop().await.unwrap();
}

/// Replaces `to`'s server certificate and key with `from`'s, each by an atomic rename.
fn replace_certificate(from: &DevCerts, to: &DevCerts) {
    for (src, dst) in [(&from.server_cert, &to.server_cert), (&from.server_key, &to.server_key)] {
        let tmp = dst.with_extension("new");
        std::fs::copy(src, &tmp).unwrap();
        std::fs::rename(&tmp, dst).unwrap();
    }
}

// A certificate replaced on disk is served to new connections without a restart; connections
// made before keep working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_certificate_is_reloaded_without_dropping_connections() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (certs(&dir.path().join("old")), certs(&dir.path().join("new")));
    let redis = TestRedis::start().await;
    let mut config = tls_config(&old, false);
    config.tls.reload_interval_ms = 100;
    let baton = TestBaton::start(&redis.url(), config).await;
    let before = tls_channel(baton.addr, &old.ca, None).await.unwrap();
    health(before.clone()).await.unwrap();
    assert!(tls_channel(baton.addr, &new.ca, None).await.is_err(), "not the new certificate yet");

    replace_certificate(&new, &old);
    common::cluster::until("the new certificate is served", Duration::from_secs(30), || async {
        match tls_channel(baton.addr, &new.ca, None).await {
            Ok(channel) => health(channel).await.is_ok(),
            Err(_) => false,
        }
    })
    .await;
    health(before).await.expect("a connection made before the reload still works");
    assert!(tls_channel(baton.addr, &old.ca, None).await.is_err(), "new connections get the new certificate");
    baton.stop().await.unwrap();
}

// SIGHUP reloads at once (with no file polling), in a real `baton serve`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_the_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (certs(&dir.path().join("old")), certs(&dir.path().join("new")));
    let redis = TestRedis::start().await;
    let process = BatonProcess::spawn(|cmd| {
        cmd.args(["--redis-url", &redis.url()])
            .env("BATON_TLS__CERT_FILE", &old.server_cert)
            .env("BATON_TLS__KEY_FILE", &old.server_key)
            .env("BATON_TLS__RELOAD_INTERVAL_MS", "0");
    });
    health(tls_channel(process.addr, &old.ca, None).await.unwrap()).await.unwrap();
    replace_certificate(&new, &old);
    process.signal(libc::SIGHUP);
    common::cluster::until("the reload after SIGHUP", Duration::from_secs(30), || async {
        process.log.lock().unwrap().iter().any(|l| l.contains("TLS certificate reloaded"))
    })
    .await;
    health(tls_channel(process.addr, &new.ca, None).await.expect("the new certificate")).await.unwrap();
}

const ADMIN: &str = "tok-admin";
const BILLING_WORKER: &str = "tok-billing-worker";
const BILLING_PRODUCER: &str = "tok-billing-producer";
const BILLING_READER: &str = "tok-billing-reader";
const BILLING_ADMIN: &str = "tok-billing-admin";

fn token(name: &str, token: &str, role: &str, scopes: &[&str]) -> TokenEntry {
    TokenEntry {
        name: name.into(),
        sha256: baton::auth::token_hash(token),
        roles: vec![role.into()],
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
    }
}

fn auth_config() -> AuthConfig {
    AuthConfig {
        tokens: vec![
            token("admin", ADMIN, "admin", &[]),
            token("billing-worker", BILLING_WORKER, "worker", &["billing.*"]),
            token("billing-producer", BILLING_PRODUCER, "producer", &["billing.*"]),
            token("billing-reader", BILLING_READER, "read-only", &["billing.*"]),
            token("billing-admin", BILLING_ADMIN, "admin", &["billing.*"]),
        ],
        ..AuthConfig::default()
    }
}

/// `msg` with an `authorization` header: a bearer token, a raw header value, or none.
fn req<T>(msg: T, auth: Option<&str>) -> Request<T> {
    let mut r = Request::new(msg);
    if let Some(auth) = auth {
        let value = if auth.contains(' ') { auth.to_string() } else { format!("Bearer {auth}") };
        r.metadata_mut().insert("authorization", MetadataValue::try_from(value).unwrap());
    }
    r
}

/// Every RPC of every service: (name, permission it needs).
const RPCS: &[(&str, &str)] = &[
    ("Register", "produce"),
    ("Unregister", "produce"),
    ("Acquire", "work"),
    ("Heartbeat", "work"),
    ("Complete", "work"),
    ("CompleteBatch", "work"),
    ("Release", "work"),
    ("Session", "work"),
    ("GetAgent", "read"),
    ("ListAgents", "read"),
    ("CancelRun", "produce"),
    ("Offer", "produce"),
    ("Claim", "work"),
    ("Return", "work"),
    ("Fail", "work"),
    ("GetPool", "read"),
    ("WatchPool", "read"),
    ("Campaign", "work"),
    ("Renew", "work"),
    ("Resign", "work"),
    ("GetLeader", "read"),
    ("Observe", "read"),
    ("ListElections", "read"),
    ("GetElectionHistory", "read"),
    ("Schedule", "produce"),
    ("ScheduleBatch", "produce"),
    ("Subscribe", "work"),
    ("Receive", "work"),
    ("Ack", "work"),
    ("AckBatch", "work"),
    ("Cancel", "produce"),
    ("ListMessages", "read"),
    ("GetHealth", "read"),
    ("ListDeadLetters", "read"),
    ("RetryDeadLetter", "admin"),
    ("DeleteDeadLetter", "admin"),
    ("Purge", "admin"),
    ("SetLimits", "admin"),
    ("Pause", "admin"),
    ("Resume", "admin"),
];

// The table above lists every RPC of the baton.v1 services, so a new one cannot escape the
// access checks below.
#[test]
fn rpc_table_lists_every_method() {
    use prost::Message;
    let set = prost_types::FileDescriptorSet::decode(pb::FILE_DESCRIPTOR_SET).unwrap();
    let mut methods: Vec<&str> =
        (set.file.iter().flat_map(|f| &f.service).flat_map(|s| &s.method)).map(|m| m.name()).collect();
    let mut listed: Vec<&str> = RPCS.iter().map(|(name, _)| *name).collect();
    methods.sort();
    listed.sort();
    assert_eq!(listed, methods);
}

/// Calls `rpc` on the `ops.*` names with `auth`; Ok if it was served.
async fn call(channel: &Channel, rpc: &str, auth: Option<&str>) -> Result<(), Status> {
    let (q, p, e, r) = ("ops.q".to_string(), "ops.p".to_string(), "ops.e".to_string(), "ops.r".to_string());
    let mut agents = AgentServiceClient::new(channel.clone());
    let mut claims = ClaimServiceClient::new(channel.clone());
    let mut leaders = LeaderServiceClient::new(channel.clone());
    let mut schedules = ScheduleServiceClient::new(channel.clone());
    let mut admin = AdminServiceClient::new(channel.clone());
    let source = Some(pb::Source { kind: pb::SourceKind::Queue as i32, name: q.clone() });
    let done = |r: Result<(), Status>| r;
    match rpc {
        "Register" => done(
            agents
                .register(req(
                    pb::RegisterRequest {
                        request_id: String::new(),
                        queue: q,
                        agents: vec![agent("x", 60_000, 60_000)],
                        reset_schedule: false,
                    },
                    auth,
                ))
                .await
                .map(drop),
        ),
        "Unregister" => {
            agents.unregister(req(pb::UnregisterRequest { queue: q, names: vec!["a1".into()] }, auth)).await.map(drop)
        }
        "Acquire" => agents
            .acquire(req(pb::AcquireRequest { queue: q, worker_id: "w".into(), max_leases: 1, wait: None }, auth))
            .await
            .map(drop),
        "Heartbeat" => {
            let lease = pb::LeaseRef { queue: q, name: "a1".into(), token: 1, ..Default::default() };
            agents
                .heartbeat(req(pb::HeartbeatRequest { worker_id: "w".into(), leases: vec![lease] }, auth))
                .await
                .map(drop)
        }
        "Complete" => {
            let c = pb::CompleteRequest {
                queue: q,
                name: "a1".into(),
                token: 1,
                outcome: pb::Outcome::Success as i32,
                ..Default::default()
            };
            agents.complete(req(c, auth)).await.map(drop)
        }
        "CompleteBatch" => {
            let c = pb::CompleteRequest {
                queue: q,
                name: "a1".into(),
                token: 1,
                outcome: pb::Outcome::Success as i32,
                ..Default::default()
            };
            agents.complete_batch(req(pb::CompleteBatchRequest { completions: vec![c] }, auth)).await.map(drop)
        }
        "Session" => {
            let open = pb::SessionOpen { queue: q, worker_id: "w".into() };
            let first = pb::SessionRequest { open: Some(open), credit: 1, ..Default::default() };
            agents.session(req(tokio_stream::iter(vec![first]), auth)).await.map(drop)
        }
        "Release" => agents
            .release(req(pb::ReleaseRequest { queue: q, name: "a1".into(), token: 1, ..Default::default() }, auth))
            .await
            .map(drop),
        "GetAgent" => agents.get_agent(req(pb::GetAgentRequest { queue: q, name: "a1".into() }, auth)).await.map(drop),
        "ListAgents" => {
            agents.list_agents(req(pb::ListAgentsRequest { queue: q, ..Default::default() }, auth)).await.map(drop)
        }
        "CancelRun" => {
            agents.cancel_run(req(pb::CancelRunRequest { queue: q, name: "a1".into() }, auth)).await.map(drop)
        }
        "Offer" => {
            let resource = pb::Resource { id: "r9".into(), attributes: Default::default() };
            claims
                .offer(req(pb::OfferRequest { request_id: String::new(), pool: p, resources: vec![resource] }, auth))
                .await
                .map(drop)
        }
        "Claim" => claims
            .claim(req(pb::ClaimRequest { pool: p, claimer_id: "c".into(), ..Default::default() }, auth))
            .await
            .map(drop),
        "Return" => claims
            .r#return(req(
                pb::ReturnRequest {
                    request_id: String::new(),
                    pool: p,
                    resource_id: "r1".into(),
                    token: 1,
                    reuse: true,
                },
                auth,
            ))
            .await
            .map(drop),
        "Fail" => claims
            .fail(req(
                pb::FailRequest {
                    request_id: String::new(),
                    pool: p,
                    resource_id: "r1".into(),
                    token: 1,
                    error: "x".into(),
                },
                auth,
            ))
            .await
            .map(drop),
        "GetPool" => claims.get_pool(req(pb::GetPoolRequest { pool: p }, auth)).await.map(drop),
        "WatchPool" => claims.watch_pool(req(pb::WatchPoolRequest { pool: p }, auth)).await.map(drop),
        "Campaign" => leaders
            .campaign(req(
                pb::CampaignRequest { election: e, candidate_id: "x".into(), ttl: common::dur(10_000), wait: None },
                auth,
            ))
            .await
            .map(drop),
        "Renew" => leaders
            .renew(req(pb::RenewRequest { election: e, candidate_id: "leader".into(), token: 1 }, auth))
            .await
            .map(drop),
        "Resign" => leaders
            .resign(req(pb::ResignRequest { election: e, candidate_id: "leader".into(), token: 1 }, auth))
            .await
            .map(drop),
        "GetLeader" => leaders.get_leader(req(pb::GetLeaderRequest { election: e }, auth)).await.map(drop),
        "Observe" => leaders.observe(req(pb::ObserveRequest { election: e }, auth)).await.map(drop),
        "ListElections" => {
            leaders.list_elections(req(pb::ListElectionsRequest::default(), auth)).await.map(|r| {
                // The listing names nothing: a scoped caller is served, and sees none of ops.*.
                let names: Vec<String> = r.into_inner().elections.into_iter().map(|e| e.election).collect();
                assert!(!names.contains(&e) || auth == Some(ADMIN), "{auth:?} sees {names:?}");
            })
        }
        "GetElectionHistory" => leaders
            .get_election_history(req(pb::GetElectionHistoryRequest { election: e, limit: 0 }, auth))
            .await
            .map(drop),
        "Schedule" => schedules
            .schedule(req(pb::ScheduleRequest { receiver: r, payload: b"x".to_vec(), ..Default::default() }, auth))
            .await
            .map(drop),
        "Subscribe" => schedules
            .subscribe(req(pb::SubscribeRequest { receiver: r, consumer_id: "s".into(), max_in_flight: 1 }, auth))
            .await
            .map(drop),
        "Receive" => {
            let open = pb::SubscribeRequest { receiver: r, consumer_id: "s".into(), max_in_flight: 1 };
            let first = pb::ReceiveRequest { open: Some(open), acks: vec![] };
            schedules.receive(req(tokio_stream::iter(vec![first]), auth)).await.map(drop)
        }
        "ScheduleBatch" => {
            let m = pb::ScheduleRequest { receiver: r, payload: b"x".to_vec(), ..Default::default() };
            schedules.schedule_batch(req(pb::ScheduleBatchRequest { messages: vec![m] }, auth)).await.map(drop)
        }
        "AckBatch" => {
            let a = pb::AckRequest { request_id: String::new(), receiver: r, id: "1".into(), token: 1 };
            schedules.ack_batch(req(pb::AckBatchRequest { acks: vec![a] }, auth)).await.map(drop)
        }
        "Ack" => schedules
            .ack(req(pb::AckRequest { request_id: String::new(), receiver: r, id: "1".into(), token: 1 }, auth))
            .await
            .map(drop),
        "Cancel" => schedules.cancel(req(pb::CancelRequest { receiver: r, id: "1".into() }, auth)).await.map(drop),
        "ListMessages" => schedules
            .list_messages(req(pb::ListMessagesRequest { receiver: r, ..Default::default() }, auth))
            .await
            .map(drop),
        "GetHealth" => admin.get_health(req(pb::GetHealthRequest {}, auth)).await.map(drop),
        "ListDeadLetters" => admin
            .list_dead_letters(req(pb::ListDeadLettersRequest { source, ..Default::default() }, auth))
            .await
            .map(drop),
        "RetryDeadLetter" => {
            admin.retry_dead_letter(req(pb::RetryDeadLetterRequest { source, id: "dead".into() }, auth)).await.map(drop)
        }
        "DeleteDeadLetter" => admin
            .delete_dead_letter(req(pb::DeleteDeadLetterRequest { source, id: "dead".into() }, auth))
            .await
            .map(drop),
        "Purge" => admin.purge(req(pb::PurgeRequest { dry_run: false }, auth)).await.map(drop),
        "SetLimits" => {
            let limits = Some(pb::QueueLimits { concurrency: 1, ..Default::default() });
            admin.set_limits(req(pb::SetLimitsRequest { queue: q, limits }, auth)).await.map(drop)
        }
        "Pause" => admin.pause(req(pb::PauseRequest { source }, auth)).await.map(drop),
        "Resume" => admin.resume(req(pb::ResumeRequest { source }, auth)).await.map(drop),
        other => panic!("no call for {other}"),
    }
}

/// The `ErrorInfo` metadata "permission" of a refusal.
fn permission(status: &Status) -> String {
    status.get_details_error_info().and_then(|i| i.metadata.get("permission").cloned()).unwrap_or_default()
}

/// State in `ops.*` for every kind of name: agents (one dead-lettered), a pool, a receiver, an
/// election; made with the admin token.
async fn seed(channel: &Channel) {
    let admin = Some(ADMIN);
    let mut agents = AgentServiceClient::new(channel.clone());
    let dead = pb::Agent { max_attempts: 1, ..agent("dead", 3_600_000, 60_000) };
    let defs = vec![agent("a1", 3_600_000, 60_000), dead];
    agents
        .register(req(
            pb::RegisterRequest {
                request_id: String::new(),
                queue: "ops.q".into(),
                agents: defs,
                reset_schedule: false,
            },
            admin,
        ))
        .await
        .unwrap();
    let got = agents
        .acquire(req(
            pb::AcquireRequest { queue: "ops.q".into(), worker_id: "w".into(), max_leases: 2, wait: None },
            admin,
        ))
        .await
        .unwrap()
        .into_inner()
        .leases;
    let dead = got.iter().find(|l| l.name == "dead").expect("both due");
    let mut fail = common::complete_req(dead, pb::Outcome::Transient);
    fail.message = "boom".into();
    agents.complete(req(fail, admin)).await.unwrap();
    let resource = pb::Resource { id: "r1".into(), attributes: Default::default() };
    let mut claims = ClaimServiceClient::new(channel.clone());
    claims
        .offer(req(
            pb::OfferRequest { request_id: String::new(), pool: "ops.p".into(), resources: vec![resource] },
            admin,
        ))
        .await
        .unwrap();
    let mut schedules = ScheduleServiceClient::new(channel.clone());
    let later = Some(pb::schedule_request::When::Delay(common::dur(3_600_000).unwrap()));
    let msg =
        pb::ScheduleRequest { receiver: "ops.r".into(), payload: b"m".to_vec(), when: later, ..Default::default() };
    schedules.schedule(req(msg, admin)).await.unwrap();
    let mut leaders = LeaderServiceClient::new(channel.clone());
    let campaign = pb::CampaignRequest {
        election: "ops.e".into(),
        candidate_id: "leader".into(),
        ttl: common::dur(3_600_000),
        wait: None,
    };
    leaders.campaign(req(campaign, admin)).await.unwrap();
}

// The access-control table, RPC by RPC: no credentials and a wrong (or malformed) token are
// UNAUTHENTICATED; a token without the role, and a token scoped to billing.* naming ops.*, are
// PERMISSION_DENIED naming what is missing; and none of it changes Redis. Listings that name
// nothing (GetHealth, ListDeadLetters without a source, Purge) show a scoped caller its own
// sources only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rpc_refuses_callers_without_credentials_role_or_scope_and_changes_nothing() {
    let redis = TestRedis::start().await;
    let mut config = test_config();
    config.auth = auth_config();
    let baton = TestBaton::start(&redis.url(), config).await;
    let channel = baton.channel().await;
    seed(&channel).await;
    let before = redis.snapshot().await;

    let with_role = |p: &str| match p {
        "work" => BILLING_WORKER,
        "produce" => BILLING_PRODUCER,
        "read" => BILLING_READER,
        _ => BILLING_ADMIN,
    };
    let without_role = |p: &str| match p {
        "work" => Some(BILLING_PRODUCER),
        "produce" | "admin" => Some(BILLING_WORKER),
        _ => None, // every role may read
    };
    for &(rpc, needs) in RPCS {
        for (auth, why) in
            [(None, "no token"), (Some("baton_wrong"), "a wrong token"), (Some("Basic YWxpY2U6"), "not a bearer")]
        {
            let e = call(&channel, rpc, auth).await.unwrap_err();
            assert_eq!(
                (e.code(), common::reason(&e).as_str()),
                (Code::Unauthenticated, "UNAUTHENTICATED"),
                "{rpc}, {why}: {e:?}"
            );
        }
        if let Some(token) = without_role(needs) {
            let e = call(&channel, rpc, Some(token)).await.unwrap_err();
            assert_eq!(e.code(), Code::PermissionDenied, "{rpc} without the role: {e:?}");
            assert_eq!(permission(&e), needs, "{rpc}: names the missing permission");
        }
        let scoped = call(&channel, rpc, Some(with_role(needs))).await;
        match rpc {
            // They name no source: served, over the caller's own sources (checked below).
            "GetHealth" | "Purge" | "ListElections" => scoped.unwrap_or_else(|e| panic!("{rpc}: {e:?}")),
            _ => {
                let e = scoped.unwrap_err();
                assert_eq!(e.code(), Code::PermissionDenied, "{rpc} outside the scopes: {e:?}");
                assert!(permission(&e).contains(":ops."), "{rpc}: names the source: {}", permission(&e));
            }
        }
    }
    assert_eq!(redis.snapshot().await, before, "no refused call changed anything");

    // Listings a scoped caller makes show none of ops.*; the admin's show them.
    let mut admin = AdminServiceClient::new(channel.clone());
    let names =
        |h: pb::GetHealthResponse| -> Vec<String> { h.sources.into_iter().map(|s| s.source.unwrap().name).collect() };
    let all = names(admin.get_health(req(pb::GetHealthRequest {}, Some(ADMIN))).await.unwrap().into_inner());
    assert!(all.contains(&"ops.q".to_string()) && all.contains(&"ops.p".to_string()), "{all:?}");
    let scoped =
        names(admin.get_health(req(pb::GetHealthRequest {}, Some(BILLING_READER))).await.unwrap().into_inner());
    assert!(scoped.is_empty(), "billing-reader sees {scoped:?}");
    let list = || pb::ListDeadLettersRequest { page_size: 100, ..Default::default() };
    let dead = admin.list_dead_letters(req(list(), Some(ADMIN))).await.unwrap().into_inner().dead_letters;
    assert_eq!(dead.len(), 1, "the admin sees ops.q's dead letter");
    let dead = admin.list_dead_letters(req(list(), Some(BILLING_READER))).await.unwrap().into_inner().dead_letters;
    assert!(dead.is_empty(), "billing-reader sees {dead:?}");

    // The roles do serve their own names.
    let mut agents = AgentServiceClient::new(channel.clone());
    let defs = vec![agent("b1", 3_600_000, 60_000)];
    let register = pb::RegisterRequest {
        request_id: String::new(),
        queue: "billing.q".into(),
        agents: defs,
        reset_schedule: false,
    };
    agents.register(req(register, Some(BILLING_PRODUCER))).await.unwrap();
    let acquire = pb::AcquireRequest { queue: "billing.q".into(), worker_id: "w".into(), max_leases: 1, wait: None };
    let leases = agents.acquire(req(acquire, Some(BILLING_WORKER))).await.unwrap().into_inner().leases;
    assert_eq!(leases[0].name, "b1");

    // Health (and reflection) stay open for probes by default.
    let mut probe = tonic_health::pb::health_client::HealthClient::new(channel.clone());
    probe.check(tonic_health::pb::HealthCheckRequest { service: String::new() }).await.expect("open health");
    baton.stop().await.unwrap();
}

// With `auth.open_health = false`, health needs a token too (any role may read it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_health_needs_a_token() {
    let redis = TestRedis::start().await;
    let mut config = test_config();
    config.auth = AuthConfig { open_health: false, ..auth_config() };
    let baton = TestBaton::start(&redis.url(), config).await;
    let mut probe = tonic_health::pb::health_client::HealthClient::new(baton.channel().await);
    let check = || tonic_health::pb::HealthCheckRequest { service: String::new() };
    let e = probe.check(req(check(), None)).await.unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated);
    probe.check(req(check(), Some(BILLING_READER))).await.expect("a reader may check health");
    baton.stop().await.unwrap();
}

// The Rust client's connection object: one `Client` with TLS, a client certificate and a token,
// shared by a Worker and a Claimer; without the token every call is UNAUTHENTICATED; a wrong
// CA does not connect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_client_connects_over_mutual_tls_with_a_token_and_runs_a_worker() {
    use baton::client::{claim::Claimer, worker::Worker, Client};
    use tokio_util::sync::CancellationToken;
    let dir = tempfile::tempdir().unwrap();
    let c = certs(dir.path());
    let redis = TestRedis::start().await;
    let mut config = tls_config(&c, true);
    config.auth = auth_config();
    let baton = TestBaton::start(&redis.url(), config).await;
    let target = format!("https://localhost:{}", baton.addr.port());
    let builder = |token: Option<&str>| {
        let b = Client::builder(target.clone()).ca_file(&c.ca).client_certificate(&c.client_cert, &c.client_key);
        match token {
            Some(t) => b.token(t),
            None => b,
        }
    };
    let client = builder(Some(ADMIN)).connect().await.expect("mutual TLS with the right CA");

    client
        .agents()
        .register(pb::RegisterRequest {
            request_id: String::new(),
            queue: "billing.q".into(),
            agents: vec![agent("job", 3_600_000, 60_000)],
            reset_schedule: false,
        })
        .await
        .unwrap();
    let mut worker = Worker::new(&client, "billing.q", "rusty");
    worker.wait = Duration::from_millis(500);
    let stop = CancellationToken::new();
    let (ran_tx, mut ran) = tokio::sync::mpsc::unbounded_channel();
    let run = tokio::spawn(worker.run(stop.clone(), move |lease, _| {
        let ran_tx = ran_tx.clone();
        async move {
            let _ = ran_tx.send(lease.name);
            Ok(())
        }
    }));
    let name = tokio::time::timeout(Duration::from_secs(20), ran.recv()).await.expect("the worker ran the job");
    assert_eq!(name.as_deref(), Some("job"));
    common::cluster::until("the run is completed", Duration::from_secs(20), || async {
        let mut agents = client.agents();
        let got = agents.get_agent(pb::GetAgentRequest { queue: "billing.q".into(), name: "job".into() });
        // It ran (above); back to waiting means its Complete landed.
        got.await.unwrap().into_inner().agent.unwrap().state == pb::AgentState::Waiting as i32
    })
    .await;
    stop.cancel();
    run.await.unwrap().unwrap();

    let resource = pb::Resource { id: "r1".into(), attributes: Default::default() };
    client
        .claims()
        .offer(pb::OfferRequest { request_id: String::new(), pool: "billing.p".into(), resources: vec![resource] })
        .await
        .unwrap();
    let held = Claimer::new(&client, "billing.p", "me").claim(Default::default(), Duration::ZERO).await.unwrap();
    held.expect("the offered resource").give_back(true).await.unwrap();

    let anonymous = builder(None).connect().await.unwrap();
    let e = anonymous.admin().get_health(pb::GetHealthRequest {}).await.unwrap_err();
    assert_eq!(e.code(), Code::Unauthenticated);
    let other = certs(&dir.path().join("other"));
    let wrong = Client::builder(target.clone()).ca_file(&other.ca).client_certificate(&c.client_cert, &c.client_key);
    assert!(wrong.connect().await.is_err(), "a wrong CA does not connect");
    baton.stop().await.unwrap();
}

/// GET `path` over HTTPS from `addr`, trusting `ca`; the whole response, or the error.
async fn https_get(addr: std::net::SocketAddr, ca: &Path, path: &str) -> std::io::Result<String> {
    use rustls_pki_types::{pem::PemObject, CertificateDer, ServerName};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::rustls;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_file(ca).unwrap()).unwrap();
    let config =
        rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let mut tls = connector.connect(ServerName::try_from("localhost").unwrap(), tcp).await?;
    tls.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes()).await?;
    let mut out = String::new();
    tls.read_to_string(&mut out).await?;
    Ok(out)
}

// `tls.metrics`: /metrics answers over HTTPS with the server's certificate, not in plaintext.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_served_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let (c, other) = (certs(&dir.path().join("a")), certs(&dir.path().join("b")));
    let redis = TestRedis::start().await;
    let process = BatonProcess::spawn_with_metrics("127.0.0.1:0", |cmd| {
        cmd.args(["--redis-url", &redis.url()])
            .env("BATON_TLS__CERT_FILE", &c.server_cert)
            .env("BATON_TLS__KEY_FILE", &c.server_key)
            .env("BATON_TLS__METRICS", "true");
    });
    let addr: std::net::SocketAddr = process
        .log
        .lock()
        .unwrap()
        .iter()
        .find(|l| l.contains("prometheus metrics at /metrics (TLS)"))
        .and_then(|l| l.split_whitespace().find_map(|w| w.strip_prefix("addr=")).map(|a| a.parse().unwrap()))
        .expect("the metrics address is logged before gRPC serves");
    let page = https_get(addr, &c.ca, "/metrics").await.unwrap();
    assert!(page.starts_with("HTTP/1.1 200") && page.contains("# TYPE"), "{}", &page[..page.len().min(300)]);
    assert!(https_get(addr, &other.ca, "/metrics").await.is_err(), "a wrong CA fails");
    let mut plain = tokio::net::TcpStream::connect(addr).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    plain.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(15), plain.read_to_end(&mut answer)).await;
    assert!(!String::from_utf8_lossy(&answer).contains("# TYPE"), "no metrics in plaintext");
}

// Admin actions are logged with the caller's identity (target `baton::audit`), in a real
// `baton serve`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_actions_are_audited_with_the_identity() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.toml");
    let entry = token("ops-admin", ADMIN, "admin", &[]);
    std::fs::write(
        &tokens,
        format!("[[tokens]]\nname = {:?}\nsha256 = {:?}\nroles = [\"admin\"]\n", entry.name, entry.sha256),
    )
    .unwrap();
    let redis = TestRedis::start().await;
    let process = BatonProcess::spawn(|cmd| {
        cmd.args(["--redis-url", &redis.url()]).env("BATON_AUTH__TOKENS_FILE", &tokens);
    });
    let channel = process.channel().await;
    let mut admin = AdminServiceClient::new(channel.clone());
    admin.purge(req(pb::PurgeRequest { dry_run: true }, Some(ADMIN))).await.unwrap();
    let mut agents = AgentServiceClient::new(channel);
    let unregister = pb::UnregisterRequest { queue: "q".into(), names: vec!["gone".into()] };
    agents.unregister(req(unregister, Some(ADMIN))).await.unwrap();
    common::cluster::until("the audit lines", Duration::from_secs(30), || async {
        let log = process.log.lock().unwrap();
        let audited =
            |what: &str| log.iter().any(|l| l.contains("baton::audit") && l.contains("ops-admin") && l.contains(what));
        audited("purge") && audited("unregister")
    })
    .await;
    let log = process.log.lock().unwrap().join("\n");
    assert!(!log.contains(ADMIN), "the token itself is never logged");
}

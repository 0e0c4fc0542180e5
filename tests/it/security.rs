//! Transport security and access control, on real processes: TLS with the right and a wrong
//! CA, mutual TLS, certificates reloaded in place, and every RPC of every service refused —
//! with nothing changed in Redis — to a caller without credentials, with a wrong token, without
//! the role, or scoped to other names.

use crate::common;

use std::{path::Path, time::Duration};

use baton::config::{AuthConfig, CertificateEntry, Config, TokenEntry};

use baton::tools::devcerts;

use baton::tools::devcerts::DevCerts;
use common::{agent, dur, pb, test_config, BatonProcess, TestBaton, TestRedis};
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
        sha256: baton::config::token_hash(token),
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
    ("RecordStep", "work"),
    ("Signal", "produce"),
    ("GetAgent", "read"),
    ("ListAgents", "read"),
    ("CancelRun", "produce"),
    ("Await", "read"),
    ("WatchAgent", "read"),
    ("RegisterBatch", "produce"),
    ("CloseBatch", "produce"),
    ("GetBatch", "read"),
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
    ("SetKeyLimits", "admin"),
    ("GetKeyLimits", "read"),
    ("ListKeyLimits", "read"),
    ("RecountKeys", "admin"),
    ("SetGroupLimits", "admin"),
    ("GetGroupLimits", "read"),
    ("ListGroupLimits", "read"),
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
        "Unregister" => agents
            .unregister(req(pb::UnregisterRequest { queue: q, names: vec!["a1".into()], ..Default::default() }, auth))
            .await
            .map(drop),
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
        "RecordStep" => agents
            .record_step(req(
                pb::RecordStepRequest {
                    queue: q,
                    name: "a1".into(),
                    token: 1,
                    step: "s1".into(),
                    ..Default::default()
                },
                auth,
            ))
            .await
            .map(drop),
        "WatchAgent" => agents
            .watch_agent(req(pb::WatchAgentRequest { queue: q, name: "a1".into(), ..Default::default() }, auth))
            .await
            .map(drop),
        "Signal" => agents
            .signal(req(
                pb::SignalRequest { queue: q, name: "a1".into(), event: "e1".into(), ..Default::default() },
                auth,
            ))
            .await
            .map(drop),
        "GetAgent" => agents.get_agent(req(pb::GetAgentRequest { queue: q, name: "a1".into() }, auth)).await.map(drop),
        "ListAgents" => {
            agents.list_agents(req(pb::ListAgentsRequest { queue: q, ..Default::default() }, auth)).await.map(drop)
        }
        "CancelRun" => agents
            .cancel_run(req(pb::CancelRunRequest { queue: q, name: "a1".into(), ..Default::default() }, auth))
            .await
            .map(drop),
        "RegisterBatch" => agents
            .register_batch(req(pb::RegisterBatchRequest { batch: q.clone(), queue: q, ..Default::default() }, auth))
            .await
            .map(drop),
        "CloseBatch" => agents.close_batch(req(pb::CloseBatchRequest { batch: q }, auth)).await.map(drop),
        "GetBatch" => agents.get_batch(req(pb::GetBatchRequest { batch: q }, auth)).await.map(drop),
        "Await" => agents
            .r#await(req(pb::AwaitRequest { queue: q, name: "a1".into(), ..Default::default() }, auth))
            .await
            .map(drop),
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
            admin.set_limits(req(pb::SetLimitsRequest { queue: q, limits, create: false }, auth)).await.map(drop)
        }
        "SetKeyLimits" => admin
            .set_key_limits(req(
                pb::SetKeyLimitsRequest {
                    queue: q,
                    key: "k".into(),
                    limits: Some(pb::KeyLimits { weight: 2, ..Default::default() }),
                },
                auth,
            ))
            .await
            .map(drop),
        "GetKeyLimits" => {
            admin.get_key_limits(req(pb::GetKeyLimitsRequest { queue: q, key: "k".into() }, auth)).await.map(drop)
        }
        "ListKeyLimits" => admin
            .list_key_limits(req(pb::ListKeyLimitsRequest { queue: q, ..Default::default() }, auth))
            .await
            .map(drop),
        "RecountKeys" => admin.recount_keys(req(pb::RecountKeysRequest { queue: q }, auth)).await.map(drop),
        "SetGroupLimits" => {
            let limits = Some(pb::GroupLimits { concurrency: 1, ..Default::default() });
            admin.set_group_limits(req(pb::SetGroupLimitsRequest { group: q, limits }, auth)).await.map(drop)
        }
        "GetGroupLimits" => admin.get_group_limits(req(pb::GetGroupLimitsRequest { group: q }, auth)).await.map(drop),
        "ListGroupLimits" => admin.list_group_limits(req(pb::ListGroupLimitsRequest::default(), auth)).await.map(drop),
        "Pause" => admin.pause(req(pb::PauseRequest { source, create: false }, auth)).await.map(drop),
        "Resume" => admin.resume(req(pb::ResumeRequest { source, create: false }, auth)).await.map(drop),
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
            "GetHealth" | "Purge" | "ListElections" | "ListGroupLimits" => {
                scoped.unwrap_or_else(|e| panic!("{rpc}: {e:?}"))
            }
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
    let worker = Worker::new(&client, "billing.q", "rusty");
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

/// The /metrics address `process` logged on the line saying `what`.
fn metrics_addr(process: &BatonProcess, what: &str) -> std::net::SocketAddr {
    process
        .log
        .lock()
        .unwrap()
        .iter()
        .find(|l| l.contains(what))
        .and_then(|l| l.split_whitespace().find_map(|w| w.strip_prefix("addr=")).map(|a| a.parse().unwrap()))
        .expect("the metrics address is logged before gRPC serves")
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
    let addr = metrics_addr(&process, "prometheus metrics at /metrics (TLS)");
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
    let unregister = pb::UnregisterRequest { queue: "q".into(), names: vec!["gone".into()], ..Default::default() };
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

/// Writes `entries` as the tokens file `path`, by an atomic rename (a reload never reads half).
fn write_tokens(path: &Path, entries: &[TokenEntry]) {
    #[derive(serde::Serialize)]
    struct File<'a> {
        tokens: &'a [TokenEntry],
    }
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, toml::to_string(&File { tokens: entries }).unwrap()).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// A Baton whose identities come from the tokens file `path` (reread when it changes).
async fn with_tokens_file(redis: &TestRedis, path: &Path, entries: &[TokenEntry]) -> TestBaton {
    write_tokens(path, entries);
    let mut config = test_config();
    config.auth.tokens_file = path.display().to_string();
    config.tls.reload_interval_ms = 50;
    TestBaton::start(&redis.url(), config).await
}

/// Until a new Acquire (a worker's call) with `token` gets `code`: the reload is in force.
async fn until_refused(channel: &Channel, token: &str, code: Code) {
    common::cluster::until("the reload is in force", Duration::from_secs(30), || async {
        let mut agents = AgentServiceClient::new(channel.clone());
        let acquire =
            pb::AcquireRequest { queue: "billing.x".into(), worker_id: "w".into(), max_leases: 1, wait: None };
        agents.acquire(req(acquire, Some(token))).await.is_err_and(|e| e.code() == code)
    })
    .await;
}

/// The next message of a stream, waited for (bounded).
async fn next<T>(stream: &mut tonic::Streaming<T>) -> Result<Option<T>, Status> {
    tokio::time::timeout(Duration::from_secs(20), stream.message()).await.expect("the stream answers")
}

/// A stream's next message must be the end: `code`, then nothing.
async fn ends_with<T: std::fmt::Debug>(what: &str, stream: &mut tonic::Streaming<T>, code: Code) {
    let e = next(stream).await.expect_err(what);
    assert_eq!(e.code(), code, "{what}: {e:?}");
    assert!(matches!(next(stream).await, Ok(None) | Err(_)), "{what}: nothing after the end");
}

// A token removed from the tokens file ends every stream and long poll it opened, with
// UNAUTHENTICATED, at the reload: a Session (its completion sent afterwards is not applied, an
// agent due afterwards is not granted to it), a Receive and a Subscribe (a message due
// afterwards is not delivered), Observe, WatchPool and WatchAgent (no more events), and an Acquire waiting
// in a long poll.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_ends_the_streams_it_opened_and_nothing_is_applied_after() {
    const WORKER: &str = "tok-revoked-worker";
    const READER: &str = "tok-revoked-reader";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens.toml");
    let admin = token("admin", ADMIN, "admin", &[]);
    let entries =
        [admin.clone(), token("w", WORKER, "worker", &["billing.*"]), token("r", READER, "read-only", &["billing.*"])];
    let redis = TestRedis::start().await;
    let baton = with_tokens_file(&redis, &path, &entries).await;
    let channel = baton.channel().await;
    let mut agents = AgentServiceClient::new(channel.clone());
    let mut leaders = LeaderServiceClient::new(channel.clone());
    let mut claims = ClaimServiceClient::new(channel.clone());
    let mut schedules = ScheduleServiceClient::new(channel.clone());
    let register = |name: &str| {
        let defs = vec![agent(name, 3_600_000, 60_000)];
        req(pb::RegisterRequest { queue: "billing.q".into(), agents: defs, ..Default::default() }, Some(ADMIN))
    };
    agents.register(register("a1")).await.unwrap();

    let (session_tx, session_rx) = tokio::sync::mpsc::channel(8);
    let open = pb::SessionOpen { queue: "billing.q".into(), worker_id: "w".into() };
    session_tx.send(pb::SessionRequest { open: Some(open), credit: 2, ..Default::default() }).await.unwrap();
    let stream = tokio_stream::wrappers::ReceiverStream::new(session_rx);
    let mut session = agents.session(req(stream, Some(WORKER))).await.unwrap().into_inner();
    let lease = next(&mut session).await.unwrap().unwrap().leases.remove(0);
    assert_eq!(lease.name, "a1");

    let (_receive_tx, receive_rx) = tokio::sync::mpsc::channel(8);
    let open = pb::SubscribeRequest { receiver: "billing.r".into(), consumer_id: "c1".into(), max_in_flight: 5 };
    _receive_tx.send(pb::ReceiveRequest { open: Some(open), acks: vec![] }).await.unwrap();
    let stream = tokio_stream::wrappers::ReceiverStream::new(receive_rx);
    let mut receive = schedules.receive(req(stream, Some(WORKER))).await.unwrap().into_inner();
    let subscribe = pb::SubscribeRequest { receiver: "billing.r".into(), consumer_id: "c2".into(), max_in_flight: 5 };
    let mut subscribe = schedules.subscribe(req(subscribe, Some(WORKER))).await.unwrap().into_inner();
    let observe = pb::ObserveRequest { election: "billing.e".into() };
    let mut observe = leaders.observe(req(observe, Some(READER))).await.unwrap().into_inner();
    next(&mut observe).await.unwrap().expect("the current state");
    let watch = pb::WatchPoolRequest { pool: "billing.p".into() };
    let mut watch = claims.watch_pool(req(watch, Some(READER))).await.unwrap().into_inner();
    next(&mut watch).await.unwrap().expect("the pool's status");
    let follow = pb::WatchAgentRequest { queue: "billing.q".into(), name: "a1".into(), ..Default::default() };
    let mut follow = agents.clone().watch_agent(req(follow, Some(READER))).await.unwrap().into_inner();
    next(&mut follow).await.unwrap().expect("the agent's snapshot");
    let mut waiting = AgentServiceClient::new(channel.clone());
    let poll = pb::AcquireRequest {
        queue: "billing.none".into(),
        worker_id: "w".into(),
        max_leases: 1,
        wait: common::dur(60_000),
    };
    let long_poll = tokio::spawn(async move { waiting.acquire(req(poll, Some(WORKER))).await });

    write_tokens(&path, &entries[..1]);
    until_refused(&channel, WORKER, Code::Unauthenticated).await;

    // After the reload: work the revoked streams would have been handed, and a completion.
    agents.register(register("a2")).await.unwrap();
    let completion = pb::SessionCompletion {
        name: lease.name.clone(),
        token: lease.token,
        outcome: pb::Outcome::Success as i32,
        ..Default::default()
    };
    let _ = session_tx.send(pb::SessionRequest { completions: vec![completion], ..Default::default() }).await;
    let msg = pb::ScheduleRequest { receiver: "billing.r".into(), payload: b"m".to_vec(), ..Default::default() };
    schedules.schedule(req(msg, Some(ADMIN))).await.unwrap();
    let campaign = pb::CampaignRequest {
        election: "billing.e".into(),
        candidate_id: "x".into(),
        ttl: common::dur(60_000),
        wait: None,
    };
    leaders.campaign(req(campaign, Some(ADMIN))).await.unwrap();
    let resource = pb::Resource { id: "r1".into(), attributes: Default::default() };
    let offer = pb::OfferRequest { pool: "billing.p".into(), resources: vec![resource], ..Default::default() };
    claims.offer(req(offer, Some(ADMIN))).await.unwrap();

    ends_with("Session", &mut session, Code::Unauthenticated).await;
    ends_with("Receive", &mut receive, Code::Unauthenticated).await;
    ends_with("Subscribe", &mut subscribe, Code::Unauthenticated).await;
    ends_with("Observe", &mut observe, Code::Unauthenticated).await;
    ends_with("WatchPool", &mut watch, Code::Unauthenticated).await;
    ends_with("WatchAgent", &mut follow, Code::Unauthenticated).await;
    let polled = tokio::time::timeout(Duration::from_secs(20), long_poll).await.expect("the long poll ends").unwrap();
    assert_eq!(polled.unwrap_err().code(), Code::Unauthenticated, "the long poll");

    // Nothing was applied for the revoked token: a1 is still held under its lease, a2 waits.
    let get = |name: &str| req(pb::GetAgentRequest { queue: "billing.q".into(), name: name.into() }, Some(ADMIN));
    let a1 = agents.get_agent(get("a1")).await.unwrap().into_inner();
    assert_eq!(a1.agent.as_ref().unwrap().state, pb::AgentState::Working as i32, "the completion was not applied");
    let a2 = agents.get_agent(get("a2")).await.unwrap().into_inner();
    assert_eq!(a2.agent.as_ref().unwrap().state, pb::AgentState::Waiting as i32, "a2 was not granted");
    baton.stop().await.unwrap();
}

// A reload that keeps a token but takes its permission (worker → producer) or a name's scope
// (billing.* → ops.*) ends its streams PERMISSION_DENIED; a token the reload did not touch keeps
// its stream, which goes on receiving events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_that_takes_a_permission_or_scope_ends_only_those_streams() {
    const WORKER: &str = "tok-demoted-worker";
    const READER: &str = "tok-rescoped-reader";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens.toml");
    let (admin, reader) = (token("admin", ADMIN, "admin", &[]), token("kept", BILLING_READER, "read-only", &[]));
    let before = [
        admin.clone(),
        reader.clone(),
        token("w", WORKER, "worker", &["billing.*"]),
        token("r", READER, "read-only", &["billing.*"]),
    ];
    let redis = TestRedis::start().await;
    let baton = with_tokens_file(&redis, &path, &before).await;
    let channel = baton.channel().await;
    let mut agents = AgentServiceClient::new(channel.clone());
    let mut leaders = LeaderServiceClient::new(channel.clone());

    let open = pb::SessionOpen { queue: "billing.q".into(), worker_id: "w".into() };
    let first = pb::SessionRequest { open: Some(open), credit: 1, ..Default::default() };
    let (_session_tx, session_rx) = tokio::sync::mpsc::channel(8);
    _session_tx.send(first).await.unwrap();
    let stream = tokio_stream::wrappers::ReceiverStream::new(session_rx);
    let mut session = agents.session(req(stream, Some(WORKER))).await.unwrap().into_inner();
    let observe = || pb::ObserveRequest { election: "billing.e".into() };
    let mut rescoped = leaders.observe(req(observe(), Some(READER))).await.unwrap().into_inner();
    let mut kept = leaders.observe(req(observe(), Some(BILLING_READER))).await.unwrap().into_inner();
    next(&mut rescoped).await.unwrap().expect("the current state");
    next(&mut kept).await.unwrap().expect("the current state");

    let after =
        [admin, reader, token("w", WORKER, "producer", &["billing.*"]), token("r", READER, "read-only", &["ops.*"])];
    write_tokens(&path, &after);
    until_refused(&channel, WORKER, Code::PermissionDenied).await;
    ends_with("Session of a worker made producer", &mut session, Code::PermissionDenied).await;
    ends_with("Observe outside the new scopes", &mut rescoped, Code::PermissionDenied).await;

    let campaign = pb::CampaignRequest {
        election: "billing.e".into(),
        candidate_id: "x".into(),
        ttl: common::dur(60_000),
        wait: None,
    };
    leaders.campaign(req(campaign, Some(ADMIN))).await.unwrap();
    let event = next(&mut kept).await.expect("the untouched token's stream goes on").expect("an event");
    assert_eq!(event.kind, pb::LeadershipEventKind::Elected as i32, "{event:?}");
    baton.stop().await.unwrap();
}

// A flood of TCP connections that never start TLS (300, from 127.0.0.2) takes at most
// `tls.max_handshakes_per_peer` handshake slots, each for at most `tls.hello_timeout_ms`: a TLS
// client from another address is served within 1 s during the flood, and every silent
// connection is closed long before the (here 30 s) handshake bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_silent_connections_does_not_stall_tls_clients() {
    let dir = tempfile::tempdir().unwrap();
    let c = certs(dir.path());
    let redis = TestRedis::start().await;
    let mut config = tls_config(&c, false);
    config.tls.handshake_timeout_ms = 30_000;
    let baton = TestBaton::start(&redis.url(), config).await;
    health(tls_channel(baton.addr, &c.ca, None).await.unwrap()).await.expect("served before the flood");

    let mut flood = Vec::new();
    for _ in 0..300 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
        flood.push(socket.connect(baton.addr).await.unwrap());
    }
    let started = std::time::Instant::now();
    let channel = tls_channel(baton.addr, &c.ca, None).await.expect("a TLS client during the flood");
    health(channel).await.expect("served during the flood");
    let took = started.elapsed();
    eprintln!("a TLS client connected and was served in {took:?} during a flood of 300 silent connections");
    assert!(took < Duration::from_secs(1), "served in {took:?} during the flood");

    // The server closes every silent connection (hello timeout, or over the peer's share).
    use tokio::io::AsyncReadExt;
    for (i, mut tcp) in flood.into_iter().enumerate() {
        let read = tokio::time::timeout(Duration::from_secs(15), tcp.read(&mut [0u8; 1])).await;
        assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "silent connection {i} still open: {read:?}");
    }
    baton.stop().await.unwrap();
}

// HTTP/2 limits per connection: Baton announces `limits.max_concurrent_streams` and
// `limits.max_header_list_bytes` in its SETTINGS; with that many Observe streams open on one
// connection, one more is held back by HTTP/2 until one of them ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_connection_gets_at_most_max_concurrent_streams() {
    const STREAMS: u32 = 8;
    let redis = TestRedis::start().await;
    let mut config = test_config();
    config.limits.max_concurrent_streams = STREAMS;
    config.limits.max_header_list_bytes = 8192;
    let baton = TestBaton::start(&redis.url(), config).await;

    // The SETTINGS, as a raw HTTP/2 client reads them (after one call, so they have arrived).
    let tcp = tokio::net::TcpStream::connect(baton.addr).await.unwrap();
    let (mut client, mut connection) = h2::client::handshake(tcp).await.unwrap();
    let call = http::Request::post(format!("http://{}/grpc.health.v1.Health/Check", baton.addr))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap();
    let (response, mut body) = client.send_request(call, false).unwrap();
    body.send_data(bytes::Bytes::from_static(&[0, 0, 0, 0, 0]), true).unwrap();
    tokio::select! {
        r = response => { r.unwrap(); }
        r = &mut connection => panic!("connection ended: {r:?}"),
    }
    assert_eq!(connection.max_concurrent_send_streams(), STREAMS as usize, "SETTINGS_MAX_CONCURRENT_STREAMS");

    let channel = baton.channel().await;
    let observe = || {
        let mut leaders = LeaderServiceClient::new(channel.clone());
        async move {
            let mut s =
                leaders.observe(pb::ObserveRequest { election: "e".into() }).await.expect("observe").into_inner();
            s.message().await.expect("the current state").expect("a message");
            s
        }
    };
    let mut open = Vec::new();
    for _ in 0..STREAMS {
        open.push(observe().await);
    }
    let extra = tokio::spawn(observe());
    // Round trips on another connection: time enough for a stream the server let through to
    // answer (it would, within one of them).
    for _ in 0..20 {
        health(baton.channel().await).await.unwrap();
    }
    assert!(!extra.is_finished(), "a stream past max_concurrent_streams was served");
    drop(open.pop());
    let served = tokio::time::timeout(Duration::from_secs(20), extra).await.expect("served once one ends").unwrap();
    drop((open, served));
    baton.stop().await.unwrap();
}

// `baton config` prints the Redis URL's and the sentinels' passwords masked, as the logs do.
#[test]
fn baton_config_masks_passwords() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["config", "--redis-url", "redis://app:s3cret-pw@redis.internal:6379/0"])
        .env("BATON_REDIS__SENTINEL_PASSWORD", "sentinel-pw")
        .output()
        .unwrap();
    let printed = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{printed}");
    assert!(!printed.contains("s3cret-pw") && !printed.contains("sentinel-pw"), "{printed}");
    assert!(printed.contains("redis://app:***@redis.internal:6379/0"), "{printed}");
    assert!(printed.contains(r#"sentinel_password = "***""#), "{printed}");
}

// `baton dev-certs` writes private keys (and the tokens file) readable by their owner only.
#[test]
fn dev_certs_keys_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let c = certs(dir.path());
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    for private in [dir.path().join("ca.key"), c.server_key.clone(), c.client_key.clone(), c.tokens_file.clone()] {
        assert_eq!(mode(&private), 0o600, "{}", private.display());
    }
    assert_eq!(mode(&c.ca) & 0o044, 0o044, "certificates stay readable");
}

/// GET /metrics over plain HTTP from `addr` with `token`; the status code.
async fn metrics_status(addr: std::net::SocketAddr, token: Option<&str>) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let auth = token.map(|t| format!("authorization: Bearer {t}\r\n")).unwrap_or_default();
    let request = format!("GET /metrics HTTP/1.1\r\nhost: x\r\n{auth}connection: close\r\n\r\n");
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).await.unwrap();
    answer.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("a status line")
}

// With `metrics_token_sha256`, /metrics answers 401 without that bearer token (and with another
// one), and the metrics with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_behind_a_token() {
    let redis = TestRedis::start().await;
    let hash = baton::config::token_hash("scrape-me");
    let process = BatonProcess::spawn_with_metrics("127.0.0.1:0", |cmd| {
        cmd.args(["--redis-url", &redis.url()]).env("BATON_METRICS_TOKEN_SHA256", &hash);
    });
    let addr = metrics_addr(&process, "prometheus metrics at /metrics");
    assert_eq!(metrics_status(addr, None).await, 401);
    assert_eq!(metrics_status(addr, Some(ADMIN)).await, 401, "another token");
    assert_eq!(metrics_status(addr, Some("scrape-me")).await, 200);
}

// A group- or world-readable tokens file and configuration file are warned about at start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_files_readable_by_others_are_warned_about() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.toml");
    write_tokens(&tokens, &[token("admin", ADMIN, "admin", &[])]);
    let file = dir.path().join("baton.toml");
    std::fs::write(&file, "shutdown_timeout_ms = 5000\n").unwrap();
    for path in [&tokens, &file] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let redis = TestRedis::start().await;
    let process = BatonProcess::spawn(|cmd| {
        cmd.args(["--redis-url", &redis.url(), "--config"]).arg(&file).env("BATON_AUTH__TOKENS_FILE", &tokens);
    });
    let log = process.log.lock().unwrap().clone();
    for what in ["configuration file", "auth.tokens_file"] {
        assert!(
            log.iter().any(|l| l.contains("WARN") && l.contains(what) && l.contains("readable by other users")),
            "{what}: {log:#?}"
        );
    }
}

// The role table of docs/security.md lists, for `read-only`, exactly the RPCs that need only `read`.
#[test]
fn the_security_page_lists_every_read_only_rpc() {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/security.md")).unwrap();
    let row = page.lines().find(|l| l.starts_with("| `read-only` |")).expect("the read-only row");
    let mut listed: Vec<&str> =
        row.split('|').nth(2).unwrap().split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    let mut reads: Vec<&str> = RPCS.iter().filter(|(_, p)| *p == "read").map(|(rpc, _)| *rpc).collect();
    listed.sort();
    reads.sort();
    assert_eq!(listed, reads, "the read-only row of docs/security.md");
}

// Every request that names several sources is checked name by name: a batch mixing a name of
// the caller's scopes (billing.*) with one outside them (ops.*), the allowed one first, is
// PERMISSION_DENIED as a whole and changes nothing — CompleteBatch, Heartbeat, ScheduleBatch,
// AckBatch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_with_one_name_outside_the_scopes_is_refused_whole() {
    let redis = TestRedis::start().await;
    let mut config = test_config();
    config.auth = auth_config();
    let baton = TestBaton::start(&redis.url(), config).await;
    let channel = baton.channel().await;
    seed(&channel).await;
    let mut agents = AgentServiceClient::new(channel.clone());
    let mut schedules = ScheduleServiceClient::new(channel.clone());
    // A lease in each queue, held by the admin's worker.
    let defs = vec![agent("b1", 3_600_000, 60_000)];
    let register = pb::RegisterRequest { queue: "billing.q".into(), agents: defs, ..Default::default() };
    agents.register(req(register, Some(ADMIN))).await.unwrap();
    let acquire =
        |queue: &str| pb::AcquireRequest { queue: queue.into(), worker_id: "w".into(), max_leases: 1, wait: None };
    let billing = agents.acquire(req(acquire("billing.q"), Some(ADMIN))).await.unwrap().into_inner().leases.remove(0);
    let ops = agents.acquire(req(acquire("ops.q"), Some(ADMIN))).await.unwrap().into_inner().leases;
    let ops = ops.into_iter().next().unwrap_or_else(|| pb::Lease {
        queue: "ops.q".into(),
        name: "a1".into(),
        token: 1,
        ..Default::default()
    });
    let before = redis.snapshot().await;

    // Each refusal checked, and all reported together: every RPC's mistake shows at once.
    let mut wrong = Vec::new();
    let mut expect = |rpc: &str, answer: Result<(), Status>, name: &str| match answer {
        Err(e) if e.code() == Code::PermissionDenied && permission(&e) == name => {}
        other => wrong.push(format!("{rpc}: {other:?}")),
    };
    let complete = |l: &pb::Lease| common::complete_req(l, pb::Outcome::Success);
    let batch = pb::CompleteBatchRequest { completions: vec![complete(&billing), complete(&ops)] };
    expect("CompleteBatch", agents.complete_batch(req(batch, Some(BILLING_WORKER))).await.map(drop), "queue:ops.q");

    let lease_ref = |l: &pb::Lease| pb::LeaseRef {
        queue: l.queue.clone(),
        name: l.name.clone(),
        token: l.token,
        ..Default::default()
    };
    let beat = pb::HeartbeatRequest { worker_id: "w".into(), leases: vec![lease_ref(&billing), lease_ref(&ops)] };
    expect("Heartbeat", agents.heartbeat(req(beat, Some(BILLING_WORKER))).await.map(drop), "queue:ops.q");

    let message = |receiver: &str| pb::ScheduleRequest {
        receiver: receiver.into(),
        payload: b"m".to_vec(),
        ..Default::default()
    };
    let batch = pb::ScheduleBatchRequest { messages: vec![message("billing.r"), message("ops.r")] };
    let answer = schedules.schedule_batch(req(batch, Some(BILLING_PRODUCER))).await.map(drop);
    expect("ScheduleBatch", answer, "receiver:ops.r");

    let ack =
        |receiver: &str| pb::AckRequest { receiver: receiver.into(), id: "1".into(), token: 1, ..Default::default() };
    let batch = pb::AckBatchRequest { acks: vec![ack("billing.r"), ack("ops.r")] };
    expect("AckBatch", schedules.ack_batch(req(batch, Some(BILLING_WORKER))).await.map(drop), "receiver:ops.r");
    assert!(wrong.is_empty(), "not refused PERMISSION_DENIED naming the name outside the scopes: {wrong:#?}");

    assert_eq!(redis.snapshot().await, before, "no refused batch changed anything");
    baton.stop().await.unwrap();
}

const WORKER: &str = "tok-worker";

/// The series of a /metrics page: its sample lines (`name{labels} value`).
async fn metric_series(addr: std::net::SocketAddr) -> Vec<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(b"GET /metrics HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").await.unwrap();
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).await.unwrap();
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    body.lines().filter(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_string).collect()
}

/// `n` calls, each naming made-up things `junk-<round>-<i>`: unauthenticated calls of made-up
/// methods over gRPC and as JSON, and a worker's calls that name a made-up election, pool and
/// queue (NOT_FOUND, or answered empty).
async fn junk_calls(process: &BatonProcess, round: usize, n: usize) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let channel = process.channel().await;
    for i in 0..n {
        let junk = format!("junk-{round}-{i}");
        let mut grpc = tonic::client::Grpc::new(channel.clone());
        grpc.ready().await.unwrap();
        let path: http::uri::PathAndQuery = format!("/baton.v1.AgentService/GrpcJunk{round}x{i}").parse().unwrap();
        let codec = tonic_prost::ProstCodec::<pb::GetHealthRequest, pb::GetHealthResponse>::default();
        let status = grpc.unary(Request::new(pb::GetHealthRequest {}), path, codec).await.unwrap_err();
        assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");

        let mut tcp = tokio::net::TcpStream::connect(process.addr).await.unwrap();
        let json = format!(
            "POST /baton.v1.AgentService/JsonJunk{round}x{i} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
             content-length: 2\r\nconnection: close\r\n\r\n{{}}"
        );
        tcp.write_all(json.as_bytes()).await.unwrap();
        let mut answer = String::new();
        tcp.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");

        let mut leaders = LeaderServiceClient::new(channel.clone());
        let get = pb::GetLeaderRequest { election: junk.clone() };
        assert!(leaders.get_leader(req(get, Some(WORKER))).await.unwrap().into_inner().leader_id.is_empty());
        let mut claims = ClaimServiceClient::new(channel.clone());
        claims.get_pool(req(pb::GetPoolRequest { pool: junk.clone() }, Some(WORKER))).await.unwrap();
        let claim = pb::ClaimRequest { pool: junk.clone(), claimer_id: "c".into(), ..Default::default() };
        claims.claim(req(claim, Some(WORKER))).await.unwrap();
        let mut agents = AgentServiceClient::new(channel.clone());
        let acquire = pb::AcquireRequest { queue: junk.clone(), worker_id: "w".into(), max_leases: 1, wait: None };
        agents.acquire(req(acquire, Some(WORKER))).await.unwrap();
        let get = pb::GetAgentRequest { queue: junk.clone(), name: "x".into() };
        assert_eq!(agents.get_agent(req(get, Some(WORKER))).await.unwrap_err().code(), Code::NotFound);
    }
}

// Calls naming made-up things add no series to /metrics: unauthenticated calls of made-up
// methods (gRPC and JSON) are counted under method "unknown", and a worker's calls naming a
// made-up election, pool or queue (GetLeader, GetPool, Claim, Acquire, GetAgent) add no series
// of that name. The series count after 10 such calls and after 40 more is the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn made_up_names_add_no_metric_series() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.toml");
    write_tokens(&tokens, &[token("worker", WORKER, "worker", &[])]);
    let redis = TestRedis::start().await;
    let process = BatonProcess::spawn_with_metrics("127.0.0.1:0", |cmd| {
        cmd.args(["--redis-url", &redis.url()]).env("BATON_AUTH__TOKENS_FILE", &tokens);
    });
    let addr = metrics_addr(&process, "prometheus metrics at /metrics");
    junk_calls(&process, 0, 10).await;
    let first = metric_series(addr).await;
    junk_calls(&process, 1, 40).await;
    let then = metric_series(addr).await;
    let junk: Vec<&String> = then.iter().filter(|l| l.to_ascii_lowercase().contains("junk")).collect();
    println!("series after 10 junk calls: {}; after 40 more: {}", first.len(), then.len());
    assert!(junk.is_empty(), "series named by a caller's made-up names: {junk:#?}");
    // The families these calls touch (others, such as the sweepers', appear on their own time).
    let touched = ["baton_rpc", "baton_leader", "baton_pool", "baton_claim", "baton_agents"];
    let grew: Vec<&String> = then
        .iter()
        .filter(|l| touched.iter().any(|t| l.starts_with(t)))
        .filter(|l| !first.iter().any(|f| f.split(' ').next() == l.split(' ').next()))
        .collect();
    assert!(grew.is_empty(), "new series after 40 more junk calls: {grew:#?}");
    let unknown = then.iter().find(|l| l.starts_with("baton_rpc_denied_total") && l.contains("method=\"unknown\""));
    let counted = unknown.and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse::<f64>().ok());
    assert_eq!(counted, Some(100.0), "every made-up method refused, counted as unknown: {unknown:?}");
}

/// A one-shot agent that runs after `parents` (queue, name).
fn child_of(name: &str, parents: &[(&str, &str)]) -> pb::Agent {
    pb::Agent {
        after: parents
            .iter()
            .map(|(q, n)| pb::AgentRef {
                queue: q.to_string(),
                name: n.to_string(),
                on_failure: 0,
                batch: String::new(),
            })
            .collect(),
        ..agent(name, 0, 30_000)
    }
}

// A family across scopes, linked by an admin: a `billing.*` token is never shown an `ops.*`
// parent, child or callback, nor an ops parent's result — GetAgent lists only the parents and
// children within its scopes (the counts still count every parent), GetBatch only the callbacks
// within them, and a lease granted by Acquire or pushed on a Session carries only the parents
// within them. An unscoped admin sees the whole family.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn family_members_outside_the_scopes_are_withheld_from_answers_and_leases() {
    let redis = TestRedis::start().await;
    let mut config = test_config();
    config.auth = auth_config();
    let baton = TestBaton::start(&redis.url(), config).await;
    let channel = baton.channel().await;
    let mut agents = AgentServiceClient::new(channel.clone());
    let register = |queue: &str, agents: Vec<pb::Agent>| {
        req(pb::RegisterRequest { queue: queue.into(), agents, ..Default::default() }, Some(ADMIN))
    };
    agents.register(register("ops.fq", vec![agent("parent", 0, 30_000)])).await.unwrap();
    agents.register(register("billing.own", vec![agent("own", 0, 30_000)])).await.unwrap();
    agents.register(register("billing.p", vec![agent("p2", 0, 30_000)])).await.unwrap();
    let both = [("ops.fq", "parent"), ("billing.own", "own")];
    let children = vec![child_of("xlinked", &both), child_of("xlinked2", &both)];
    agents.register(register("billing.fq", children)).await.unwrap();
    agents.register(register("ops.fq", vec![child_of("c2", &[("billing.p", "p2")])])).await.unwrap();
    let batch = pb::RegisterBatchRequest {
        batch: "billing.b".into(),
        queue: "billing.bm".into(),
        callback_queue: "ops.cb".into(),
        agents: vec![agent("member", 0, 30_000)],
        on_success: vec![agent("done", 0, 30_000)],
        ..Default::default()
    };
    AgentServiceClient::new(channel.clone()).register_batch(req(batch, Some(ADMIN))).await.unwrap();

    let get = |queue: &str, name: &str, token: &str| {
        req(pb::GetAgentRequest { queue: queue.into(), name: name.into() }, Some(token))
    };
    let seen =
        agents.get_agent(get("billing.fq", "xlinked", BILLING_READER)).await.unwrap().into_inner().agent.unwrap();
    let names: Vec<String> = seen.parents.iter().map(|p| p.parent.clone().unwrap().queue).collect();
    assert_eq!(names, ["billing.own"], "only the parent within the scopes is listed: {seen:?}");
    assert_eq!((seen.parents_total, seen.parents_pending), (2, 2), "both still counted");
    assert!(!format!("{seen:?}").contains("ops."), "{seen:?}");
    let p2 = agents.get_agent(get("billing.p", "p2", BILLING_READER)).await.unwrap().into_inner().agent.unwrap();
    assert!(p2.children.is_empty(), "the ops child is not named: {p2:?}");
    let full = agents.get_agent(get("billing.fq", "xlinked", ADMIN)).await.unwrap().into_inner().agent.unwrap();
    assert_eq!(full.parents.len(), 2, "an admin sees both parents: {full:?}");
    let p2 = agents.get_agent(get("billing.p", "p2", ADMIN)).await.unwrap().into_inner().agent.unwrap();
    assert_eq!(p2.children.len(), 1, "and the ops child: {p2:?}");
    let batch = pb::GetBatchRequest { batch: "billing.b".into() };
    let status = agents.get_batch(req(batch.clone(), Some(BILLING_READER))).await.unwrap().into_inner().status.unwrap();
    assert!(status.callbacks.is_empty(), "the ops callback is not named: {status:?}");
    let status = agents.get_batch(req(batch, Some(ADMIN))).await.unwrap().into_inner().status.unwrap();
    assert_eq!(status.callbacks.len(), 1, "an admin sees it: {status:?}");

    // The parents finish, the ops one with a result; the children are granted to billing workers.
    for (queue, name, result) in [("ops.fq", "parent", b"ops-secret".as_slice()), ("billing.own", "own", b"billing-ok")]
    {
        let acquire =
            pb::AcquireRequest { queue: queue.into(), worker_id: "w".into(), max_leases: 1, wait: dur(5_000) };
        let lease = agents.acquire(req(acquire, Some(ADMIN))).await.unwrap().into_inner().leases.remove(0);
        assert_eq!(lease.name, name);
        let done =
            pb::CompleteRequest { result: result.to_vec(), ..common::complete_req(&lease, pb::Outcome::Success) };
        agents.complete(req(done, Some(ADMIN))).await.unwrap();
    }
    let acquire =
        pb::AcquireRequest { queue: "billing.fq".into(), worker_id: "w".into(), max_leases: 1, wait: dur(5_000) };
    let by_acquire = agents.acquire(req(acquire, Some(BILLING_WORKER))).await.unwrap().into_inner().leases;
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let open = pb::SessionOpen { queue: "billing.fq".into(), worker_id: "s".into() };
    tx.send(pb::SessionRequest { open: Some(open), credit: 1, ..Default::default() }).await.unwrap();
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
    let mut session = agents.session(req(stream, Some(BILLING_WORKER))).await.unwrap().into_inner();
    let pushed = loop {
        let response =
            tokio::time::timeout(Duration::from_secs(30), session.message()).await.unwrap().unwrap().unwrap();
        if !response.leases.is_empty() {
            break response.leases;
        }
    };
    let leases: Vec<&pb::Lease> = by_acquire.iter().chain(&pushed).collect();
    let mut granted: Vec<&str> = leases.iter().map(|l| l.name.as_str()).collect();
    granted.sort();
    assert_eq!(granted, ["xlinked", "xlinked2"], "one by Acquire, one on the Session");
    for lease in leases {
        let parents: Vec<(&str, &str, &[u8])> =
            lease.parents.iter().map(|p| (p.queue.as_str(), p.name.as_str(), p.result.as_slice())).collect();
        assert_eq!(parents, [("billing.own", "own", b"billing-ok".as_slice())], "{lease:?}");
        assert!(!format!("{lease:?}").contains("ops."), "{lease:?}");
    }
    drop(tx);
}

// Clients behind one address (a NAT, an L4 load balancer) are served during a flood of silent
// connections from that same address: with `tls.max_handshakes_per_peer` at 2 and 10 silent
// TCP connections from 127.0.0.1, a real TLS client from 127.0.0.1 sends its ClientHello at
// once and is served; the silent ones are still closed long before the (here 30 s) handshake
// bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_client_is_served_beside_a_flood_from_its_own_address() {
    let dir = tempfile::tempdir().unwrap();
    let c = certs(dir.path());
    let redis = TestRedis::start().await;
    let mut config = tls_config(&c, false);
    config.tls.handshake_timeout_ms = 30_000;
    config.tls.max_handshakes_per_peer = 2;
    let baton = TestBaton::start(&redis.url(), config).await;
    health(tls_channel(baton.addr, &c.ca, None).await.unwrap()).await.expect("served before the flood");

    let mut flood = Vec::new();
    for _ in 0..10 {
        flood.push(tokio::net::TcpStream::connect(baton.addr).await.unwrap());
    }
    let started = std::time::Instant::now();
    let channel = tls_channel(baton.addr, &c.ca, None).await.expect("a TLS client from the flood's address");
    health(channel).await.expect("served beside the flood");
    let took = started.elapsed();
    println!("a TLS client from the address of 10 silent connections (per-address limit 2) was served in {took:?}");
    assert!(took < Duration::from_secs(1), "served in {took:?}");

    use tokio::io::AsyncReadExt;
    for (i, mut tcp) in flood.into_iter().enumerate() {
        let read = tokio::time::timeout(Duration::from_secs(15), tcp.read(&mut [0u8; 1])).await;
        assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "silent connection {i} still open: {read:?}");
    }
    baton.stop().await.unwrap();
}

//! The web console's HTTP side (the browser test is clients/typescript/test/console.browser.ts):
//! the page and its API on a real server, behind the same authentication and permissions as
//! gRPC, read-only mode, and the live event stream.
//!
//! Invariants checked: without a token the API answers 401 once auth is configured, and a
//! refused call changes nothing; a read-only token reads but may not pause (403); an admin may;
//! a read-only console refuses every change whoever asks; the event stream sends overviews.

use crate::common;

use std::{sync::Arc, time::Duration};

use baton::config::{Config, TokenEntry};
use common::*;
use serde_json::Value;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};
use tokio_util::sync::CancellationToken;

/// A Baton with its console on a port of its own; (gRPC address, console address, stop).
async fn start(redis: &TestRedis, config: Config) -> (String, String, CancellationToken) {
    let grpc = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let console = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (grpc_addr, console_addr) = (grpc.local_addr().unwrap(), console.local_addr().unwrap());
    let stop = CancellationToken::new();
    let (url, done) = (redis.url(), stop.clone());
    tokio::spawn(async move {
        baton::server::run_with_console(Arc::new(config), &url, grpc, Some(console), done.cancelled_owned()).await
    });
    (format!("http://{grpc_addr}"), console_addr.to_string(), stop)
}

/// A `baton serve` process with its console on a port of its own; (process, gRPC address,
/// console address). For what the console reports of its whole process (RPC latency, open
/// worker connections), which the in-process servers of other tests would add to.
async fn start_process(redis: &TestRedis) -> (BatonProcess, String, String) {
    let process = BatonProcess::spawn(|cmd| {
        cmd.args(["--redis-url", &redis.url()]).env("BATON_CONSOLE__LISTEN", "127.0.0.1:0");
    });
    let console = || {
        let log = process.log.lock().unwrap();
        let line = log.iter().find(|l| l.contains("console serving HTTP"))?;
        let addr = line.split_whitespace().find_map(|w| w.strip_prefix("addr=Some("))?;
        Some(addr.trim_end_matches(')').to_string())
    };
    eventually(Duration::from_secs(60), "the console's address in the log", || async { console().is_some() }).await;
    let console = console().unwrap();
    let grpc = process.url();
    (process, grpc, console)
}

/// One HTTP/1.1 request; (status, body).
async fn http(addr: &str, method: &str, path: &str, token: Option<&str>, body: Option<&str>) -> (u16, String) {
    http_to(addr, addr, method, path, token, body).await
}

/// One HTTP/1.1 request to `addr` naming `host`; (status, body).
async fn http_to(
    addr: &str,
    host: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> (u16, String) {
    http_from(addr, host, None, method, path, token, body).await
}

/// One HTTP/1.1 request to `addr` naming `host`, from a page of `origin` if given; (status, body).
async fn http_from(
    addr: &str,
    host: &str,
    origin: Option<&str>,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> (u16, String) {
    let mut request = format!("{method} {path} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n");
    if let Some(origin) = origin {
        request.push_str(&format!("origin: {origin}\r\n"));
    }
    if let Some(t) = token {
        request.push_str(&format!("authorization: Bearer {t}\r\n"));
    }
    if let Some(b) = body {
        request.push_str(&format!("content-type: application/json\r\ncontent-length: {}\r\n", b.len()));
    }
    request.push_str("\r\n");
    request.push_str(body.unwrap_or(""));
    // The console may still be starting: connect until it listens (it was bound before start).
    let mut stream = TcpStream::connect(addr).await.expect("console listening");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut raw)).await.expect("answer").unwrap();
    let text = String::from_utf8_lossy(&raw).to_string();
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("a status line");
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

fn token_entry(name: &str, role: &str) -> (String, TokenEntry) {
    let token = baton::config::new_token();
    let entry = TokenEntry {
        name: name.into(),
        sha256: baton::config::token_hash(&token),
        roles: vec![role.into()],
        scopes: vec![],
    };
    (token, entry)
}

// With tokens configured: no token is 401 (nothing changes), a read-only token reads but may
// not pause (403), an admin pauses (the queue is paused in the overview); the page is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_is_behind_the_grpc_authentication() {
    let redis = TestRedis::start().await;
    let (admin, admin_entry) = token_entry("ops", "admin");
    let (reader, reader_entry) = token_entry("dashboard", "read-only");
    let mut config = test_config();
    config.auth.tokens = vec![admin_entry, reader_entry];
    let (grpc, console, stop) = start(&redis, config).await;
    let client = baton::client::Client::builder(grpc).token(admin.clone()).connect().await.unwrap();
    let defs = vec![agent("a", 60_000, 60_000)];
    let register = pb::RegisterRequest { queue: "mail".into(), agents: defs, ..Default::default() };
    client.agents().register(register).await.unwrap();

    let (status, page) = http(&console, "GET", "/", None, None).await;
    assert_eq!(status, 200);
    assert!(page.contains("<title>Baton console</title>"));

    let before = redis.snapshot().await;
    let pause = r#"{"kind":"queue","name":"mail"}"#;
    assert_eq!(http(&console, "GET", "/api/overview", None, None).await.0, 401);
    assert_eq!(http(&console, "POST", "/api/pause", None, Some(pause)).await.0, 401);
    assert_eq!(http(&console, "GET", "/api/overview", Some("wrong"), None).await.0, 401);
    let (status, body) = http(&console, "POST", "/api/pause", Some(&reader), Some(pause)).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("admin"), "names the permission: {body}");
    assert_eq!(redis.snapshot().await, before, "refused calls changed nothing");

    let (status, body) = http(&console, "GET", "/api/overview", Some(&reader), None).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = http(&console, "POST", "/api/pause", Some(&admin), Some(pause)).await;
    assert_eq!((status, body.as_str()), (200, r#"{"changed":true}"#));
    let (_, body) = http(&console, "GET", "/api/overview", Some(&reader), None).await;
    let overview: Value = serde_json::from_str(&body).unwrap();
    let mail =
        overview["health"]["sources"].as_array().unwrap().iter().find(|s| s["source"]["name"] == "mail").unwrap();
    assert_eq!(overview["breakers"]["dispatch"], "closed", "{overview}");
    assert_eq!(overview["breakers"]["writeBack"], "closed", "{overview}");
    let nodes = overview["breakers"]["nodes"].as_array().expect("each Redis node's breakers");
    assert_eq!(nodes.len(), 1, "one node: {overview}");
    assert_eq!((&nodes[0]["dispatch"], &nodes[0]["writeBack"]), (&Value::from("closed"), &Value::from("closed")));
    assert_eq!(mail["paused"], true);
    // Bad input is the gRPC validation's, as 400.
    let (status, body) =
        http(&console, "POST", "/api/pause", Some(&admin), Some(r#"{"kind":"queue","name":"a:b"}"#)).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("source.name"), "{body}");
    stop.cancel();
}

// A read-only console refuses every change, whoever asks, and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_console_changes_nothing() {
    let redis = TestRedis::start().await;
    let mut config = test_config();
    config.console.read_only = true;
    let (_, console, stop) = start(&redis, config).await;
    let before = redis.snapshot().await;
    for (path, body) in [
        ("/api/pause", r#"{"kind":"queue","name":"mail"}"#),
        ("/api/resume", r#"{"kind":"queue","name":"mail"}"#),
        ("/api/deadletters/retry", r#"{"items":[{"kind":"queue","source":"mail","id":"x"}]}"#),
        ("/api/deadletters/delete", r#"{"items":[{"kind":"queue","source":"mail","id":"x"}]}"#),
        ("/api/messages/cancel", r#"{"receiver":"mail","ids":["x"]}"#),
    ] {
        let (status, answer) = http(&console, "POST", path, None, Some(body)).await;
        assert_eq!(status, 403, "{path}: {answer}");
        assert!(answer.contains("read-only"), "{answer}");
    }
    assert_eq!(redis.snapshot().await, before);
    let (_, body) = http(&console, "GET", "/api/overview", None, None).await;
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["readOnly"], true);
    stop.cancel();
}

// A console on loopback answers only requests that name this machine: a page elsewhere that
// rebinds its own host name to 127.0.0.1 gets 403 (and the console has no auth here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loopback_console_answers_only_to_localhost() {
    let redis = TestRedis::start().await;
    let (_, console, stop) = start(&redis, test_config()).await;
    let port = console.rsplit_once(':').unwrap().1;
    for host in [format!("evil.example:{port}"), "evil.example".into(), format!("localhost.evil.example:{port}")] {
        let (status, body) = http_to(&console, &host, "GET", "/api/overview", None, None).await;
        assert_eq!(status, 403, "{host}: {body}");
    }
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}"), "localhost".into()] {
        assert_eq!(http_to(&console, &host, "GET", "/api/overview", None, None).await.0, 200, "{host}");
    }
    stop.cancel();
}

// A name that merely starts like a loopback address is a DNS name an attacker controls
// (`127.0.0.1.rebind.attacker.example`): refused, reads and changes alike, with its own Origin
// too. A change whose Origin is another site (or another port) is refused even when its Host is
// local; the console's own page, and a caller without Origin (curl), may change things.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loopback_console_refuses_rebound_names_and_foreign_origins() {
    let redis = TestRedis::start().await;
    let (grpc, console, stop) = start(&redis, test_config()).await;
    let channel = tonic::transport::Channel::from_shared(grpc).unwrap().connect().await.unwrap();
    register(&mut pb::agent_service_client::AgentServiceClient::new(channel), "mail", vec![agent("a", 60_000, 60_000)])
        .await;
    let port = console.rsplit_once(':').unwrap().1;
    let pause = r#"{"kind":"queue","name":"mail"}"#;
    let before = redis.snapshot().await;
    for host in [format!("127.0.0.1.rebind.attacker.example:{port}"), format!("127.evil.example:{port}")] {
        let origin = format!("http://{host}");
        let (status, body) = http_from(&console, &host, Some(&origin), "POST", "/api/pause", None, Some(pause)).await;
        assert_eq!(status, 403, "{host}: {body}");
        assert_eq!(http_to(&console, &host, "GET", "/api/overview", None, None).await.0, 403, "{host}");
    }
    let local = format!("127.0.0.1:{port}");
    for origin in ["http://evil.example".to_string(), format!("http://localhost:{port}"), "null".into()] {
        let (status, body) = http_from(&console, &local, Some(&origin), "POST", "/api/pause", None, Some(pause)).await;
        assert_eq!(status, 403, "Origin {origin}: {body}");
    }
    assert_eq!(redis.snapshot().await, before, "no refused request changed anything");
    let own = format!("http://{local}");
    let (status, body) = http_from(&console, &local, Some(&own), "POST", "/api/pause", None, Some(pause)).await;
    assert_eq!(status, 200, "the console's own page: {body}");
    assert_eq!(http_from(&console, &local, None, "POST", "/api/resume", None, Some(pause)).await.0, 200, "no Origin");
    stop.cancel();
}

// The event stream sends the overview as "overview" events, with the agents the test put there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_sends_overviews() {
    let redis = TestRedis::start().await;
    let (grpc, console, stop) = start(&redis, test_config()).await;
    let channel = tonic::transport::Channel::from_shared(grpc).unwrap().connect().await.unwrap();
    let mut agents = pb::agent_service_client::AgentServiceClient::new(channel);
    register(&mut agents, "mail", vec![agent("a", 60_000, 60_000)]).await;

    let mut stream = TcpStream::connect(&console).await.unwrap();
    stream.write_all(format!("GET /events HTTP/1.1\r\nhost: {console}\r\n\r\n").as_bytes()).await.unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    tokio::time::timeout(Duration::from_secs(30), async {
        while !(seen.contains("event: overview") && seen.contains("\"name\":\"mail\"")) {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0, "the stream ended: {seen}");
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    })
    .await
    .expect("an overview event within 30 s");
    assert!(seen.contains("text/event-stream"), "{seen}");
    stop.cancel();
}

// With Redis gone, the event stream says the figures are stale, why, and the breakers as the
// server has them (open), never an old "closed"; once Redis is back, overviews again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_marks_an_outage_stale_with_the_real_breakers() {
    let mut redis = TestRedis::start().await;
    let mut config = test_config();
    config.circuit_breaker.failure_threshold = 1;
    let (_, console, stop) = start(&redis, config).await;
    let mut stream = TcpStream::connect(&console).await.unwrap();
    stream.write_all(format!("GET /events HTTP/1.1\r\nhost: {console}\r\n\r\n").as_bytes()).await.unwrap();
    let mut seen = String::new();
    read_until(&mut stream, &mut seen, "event: overview").await;
    redis.kill().await;
    read_until(&mut stream, &mut seen, r#""dispatch":"open""#).await;
    let stale = seen.rsplit("event: ").next().unwrap();
    assert!(stale.starts_with("stale"), "an outage is a stale event: {stale}");
    assert!(stale.contains(r#""error":"#), "says why: {stale}");
    redis.restart().await;
    read_until(&mut stream, &mut seen, "event: overview").await;
    stop.cancel();
}

/// Reads an event stream into `seen` until what arrived since the call holds `what`.
async fn read_until(stream: &mut TcpStream, seen: &mut String, what: &str) {
    let from = seen.len();
    let mut buf = [0u8; 4096];
    let found = tokio::time::timeout(Duration::from_secs(60), async {
        while !seen[from..].contains(what) {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0, "the stream ended: {seen}");
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    })
    .await;
    assert!(found.is_ok(), "{what:?} within 60 s: {seen}");
}

// A bulk dead-letter retry goes on past an item that fails and reports every item: how many
// took effect, how many did not, and why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_retry_reports_each_item() {
    let redis = TestRedis::start().await;
    let (grpc, console, stop) = start(&redis, test_config()).await;
    let channel = tonic::transport::Channel::from_shared(grpc).unwrap().connect().await.unwrap();
    let mut agents = pb::agent_service_client::AgentServiceClient::new(channel);
    let doomed = |n: &str| pb::Agent { max_attempts: 1, ..agent(n, 3_600_000, 60_000) };
    register(&mut agents, "mail", vec![doomed("d1"), doomed("d2")]).await;
    for l in acquire(&mut agents, "mail", "w", 2).await {
        agents.complete(complete_req(&l, pb::Outcome::Unknown)).await.unwrap();
    }
    let items = r#"{"items":[{"kind":"queue","source":"mail","id":"d1"},{"kind":"queue","source":"mail","id":"missing"},{"kind":"queue","source":"mail","id":"d2"}]}"#;
    let (status, body) = http(&console, "POST", "/api/deadletters/retry", None, Some(items)).await;
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (answer["done"].as_u64(), answer["failed"].as_u64(), answer["total"].as_u64()),
        (Some(2), Some(1), Some(3))
    );
    let results = answer["results"].as_array().unwrap();
    assert_eq!(results[1]["id"], "missing");
    assert_eq!(results[1]["ok"], false);
    assert!(results[1]["error"].as_str().unwrap().contains("missing"), "{body}");
    assert_eq!((results[0]["ok"].as_bool(), results[2]["ok"].as_bool()), (Some(true), Some(true)), "went on past it");
    assert_eq!(acquire(&mut agents, "mail", "w", 5).await.len(), 2, "both retried");
    stop.cancel();
}

// The overview carries this process's RPC latency: after 20 GetAgent calls, GetAgent's counts
// (per bucket, with p50 and p99) are there, at least those 20. An Acquire that waited is a long
// poll, counted apart from the Acquires that asked to wait for nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_overview_carries_rpc_latency_per_method() {
    let redis = TestRedis::start().await;
    let (_process, grpc, console) = start_process(&redis).await;
    let channel = tonic::transport::Channel::from_shared(grpc).unwrap().connect().await.unwrap();
    let mut agents = pb::agent_service_client::AgentServiceClient::new(channel);
    register(&mut agents, "mail", vec![agent("a", 60_000, 60_000)]).await;
    for _ in 0..20 {
        agents.get_agent(pb::GetAgentRequest { queue: "mail".into(), name: "a".into() }).await.unwrap();
    }
    // A long poll on an empty queue waits out its 300 ms.
    let poll = pb::AcquireRequest { queue: "empty".into(), worker_id: "w".into(), max_leases: 1, wait: dur(300) };
    assert!(agents.acquire(poll).await.unwrap().into_inner().leases.is_empty());
    let (status, body) = http(&console, "GET", "/api/overview", None, None).await;
    assert_eq!(status, 200, "{body}");
    let overview: Value = serde_json::from_str(&body).unwrap();
    let latency = &overview["latency"];
    let bounds = latency["boundsSeconds"].as_array().unwrap();
    assert_eq!(bounds.first().and_then(Value::as_f64), Some(0.0005), "the Prometheus histogram's bounds");
    assert!(latency["atMs"].is_u64(), "{latency}");
    let methods = latency["methods"].as_array().unwrap();
    let get = methods.iter().find(|m| m["method"] == "GetAgent").unwrap_or_else(|| panic!("GetAgent in {latency}"));
    let calls = get["calls"].as_u64().unwrap();
    assert!(calls >= 20, "{get}");
    let buckets: Vec<u64> = get["buckets"].as_array().unwrap().iter().map(|b| b.as_u64().unwrap()).collect();
    assert_eq!(buckets.len(), bounds.len() + 1, "one bucket per bound and one beyond");
    assert_eq!(buckets.iter().sum::<u64>(), calls);
    let (p50, p99) = (get["p50Seconds"].as_f64().unwrap(), get["p99Seconds"].as_f64().unwrap());
    assert!(p50 > 0.0 && p50 <= p99, "{get}");
    assert!(get["sumSeconds"].as_f64().unwrap() > 0.0);
    // The console's own reads are RPCs too.
    assert!(methods.iter().any(|m| m["method"] == "GetHealth"), "{latency}");
    let waited = methods.iter().find(|m| m["method"] == "Acquire (long poll)").expect("the long poll, apart");
    assert_eq!(waited["longPoll"], true);
    assert!(waited["sumSeconds"].as_f64().unwrap() >= 0.3, "{waited}");
    let slow = |m: &Value| m["buckets"].as_array().unwrap()[8..].iter().map(|b| b.as_u64().unwrap()).sum::<u64>();
    if let Some(unary) = methods.iter().find(|m| m["method"] == "Acquire") {
        assert_eq!(slow(unary), 0, "no 250 ms+ wait among the Acquires that asked for none: {unary}");
    }
}

// The elections API lists every registered election with its current term, and an election's
// history; bad input is the gRPC validation's, as 400 naming the field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_elections_api_lists_registered_elections_and_their_history() {
    let redis = TestRedis::start().await;
    let (grpc, console, stop) = start(&redis, test_config()).await;
    let channel = tonic::transport::Channel::from_shared(grpc).unwrap().connect().await.unwrap();
    let mut leaders = pb::leader_service_client::LeaderServiceClient::new(channel);
    let campaign = |who: &str| pb::CampaignRequest {
        election: "reports".into(),
        candidate_id: who.into(),
        ttl: dur(60_000),
        wait: None,
    };
    let a = leaders.campaign(campaign("a")).await.unwrap().into_inner();
    leaders
        .resign(pb::ResignRequest { election: "reports".into(), candidate_id: "a".into(), token: a.token })
        .await
        .unwrap();
    let b = leaders.campaign(campaign("b")).await.unwrap().into_inner();

    let (status, body) = http(&console, "GET", "/api/elections", None, None).await;
    assert_eq!(status, 200, "{body}");
    let listed: Value = serde_json::from_str(&body).unwrap();
    let elections = listed["elections"].as_array().unwrap();
    let reports = elections.iter().find(|e| e["election"] == "reports").unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(
        (reports["leaderId"].as_str(), reports["token"].as_str()),
        (Some("b"), Some(b.token.to_string().as_str()))
    );
    assert!(reports["lastTermStartedAt"].is_string() && reports["expiresAt"].is_string(), "{reports}");
    if let Some(sweeper) = elections.iter().position(|e| e["election"] == "baton-sweeper") {
        assert_eq!(sweeper, 0, "Baton's own election first");
    }

    let (status, body) = http(&console, "GET", "/api/elections/history?election=reports", None, None).await;
    assert_eq!(status, 200, "{body}");
    let history: Value = serde_json::from_str(&body).unwrap();
    let terms: Vec<(&str, u64, &str)> = history["terms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let token = t["token"].as_str().unwrap().parse().unwrap();
            (t["leaderId"].as_str().unwrap(), token, t["end"].as_str().unwrap_or("(current)"))
        })
        .collect();
    assert_eq!(terms, [("b", b.token, "(current)"), ("a", a.token, "TERM_END_RESIGNED")]);
    assert!(history["terms"][1]["endedAt"].is_string() && history["terms"][0]["expiresAt"].is_string());

    let (status, body) = http(&console, "GET", "/api/elections/history?election=a:b", None, None).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("election"), "{body}");
    stop.cancel();
}

/// `/api/agents` with `query`, as JSON; panics unless 200.
async fn agents_page(console: &str, query: &str) -> Value {
    let (status, body) = http(console, "GET", &format!("/api/agents?{query}"), None, None).await;
    assert_eq!(status, 200, "{query}: {body}");
    serde_json::from_str(&body).unwrap()
}

fn names(page: &Value) -> Vec<String> {
    let agents = page["agents"].as_array().map(Vec::as_slice).unwrap_or_default();
    agents.iter().map(|a| a["agent"]["name"].as_str().unwrap().to_string()).collect()
}

/// A page's `nextPageToken`: "" when it is the last (proto3 JSON leaves an empty string out).
fn next_page(page: &Value) -> String {
    page["nextPageToken"].as_str().unwrap_or_default().to_string()
}

/// Bytes as proto3 JSON writes them (base64), decoded.
fn bytes(v: &Value) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(v.as_str().unwrap_or_default()).unwrap()
}

// The agents API answers one page at a time: 7 agents at limit 3 are three pages, every agent
// exactly once in name order, each page at most 3 rows, with the queue's total counted exactly
// (no search); a name-prefix search finds the queue's last agent on its first page, and a filter
// finds agents by key; an agent's view carries its definition, lease and payload (the page
// shows it as text, or as hex when it is not UTF-8), and the list leaves payloads out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_api_pages_by_cursor_and_searches_by_name_prefix() {
    let redis = TestRedis::start().await;
    let (grpc, console, stop) = start(&redis, test_config()).await;
    let channel = tonic::transport::Channel::from_shared(grpc).unwrap().connect().await.unwrap();
    let mut client = pb::agent_service_client::AgentServiceClient::new(channel);
    let mut defs: Vec<_> = (0..7).map(|i| agent(&format!("job-{i}"), 60_000, 60_000)).collect();
    defs[6].key = "acme".into();
    defs[6].payload = b"{\"to\":\"ops@example.com\"}".to_vec();
    defs[6].labels.insert("team".into(), "growth".into());
    defs[5].payload = [0xff, 0x00].repeat(2_500);
    register(&mut client, "mail", defs).await;

    let mut seen = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let page = agents_page(&console, &format!("queue=mail&limit=3&page_token={token}")).await;
        pages += 1;
        assert!(page["agents"].as_array().unwrap().len() <= 3, "{page}");
        assert_eq!((page["count"].as_u64(), page["countExact"].as_bool()), (Some(7), Some(true)), "{page}");
        seen.extend(names(&page));
        token = next_page(&page);
        if token.is_empty() {
            break;
        }
    }
    assert!(pages >= 3, "{pages} pages of at most 3 rows held 7");
    seen.sort();
    assert_eq!(seen, (0..7).map(|i| format!("job-{i}")).collect::<Vec<_>>(), "every agent once");

    // The default page is 50 rows: all 7 here, and no next page.
    let all = agents_page(&console, "queue=mail").await;
    assert_eq!((names(&all).len(), next_page(&all).as_str(), all["limit"].as_u64()), (7, "", Some(50)));
    assert!(all["agents"].as_array().unwrap().iter().all(|a| a["agent"]["payload"].is_null()), "{all}");

    let found = agents_page(&console, "queue=mail&limit=3&search=job-6").await;
    assert_eq!(names(&found), ["job-6"]);
    assert_eq!((found["count"].as_u64(), found["countExact"].as_bool()), (Some(1), Some(true)), "{found}");
    let prefix = agents_page(&console, "queue=mail&limit=3&search=job-").await;
    assert!(names(&prefix).len() == 3 && names(&prefix).iter().all(|n| n.starts_with("job-")), "{prefix}");
    assert_eq!((prefix["count"].as_u64(), prefix["countExact"].as_bool()), (Some(7), Some(false)), "{prefix}");
    let by_key = agents_page(&console, "queue=mail&filter=ACME").await;
    assert_eq!(names(&by_key), ["job-6"]);
    assert_eq!(by_key["scanned"].as_u64(), Some(7));

    let (status, body) = http(&console, "GET", "/api/agent?queue=mail&name=job-6", None, None).await;
    assert_eq!(status, 200, "{body}");
    let one = &serde_json::from_str::<Value>(&body).unwrap()["agent"];
    let def = &one["agent"];
    assert_eq!(
        (def["name"].as_str(), def["key"].as_str(), one["state"].as_str()),
        (Some("job-6"), Some("acme"), Some("AGENT_STATE_WAITING"))
    );
    assert_eq!(def["labels"]["team"], "growth");
    assert_eq!(bytes(&def["payload"]), b"{\"to\":\"ops@example.com\"}");
    let (_, body) = http(&console, "GET", "/api/agent?queue=mail&name=job-5", None, None).await;
    let binary: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(bytes(&binary["agent"]["agent"]["payload"]), [0xff, 0x00].repeat(2_500));
    let (status, body) = http(&console, "GET", "/api/agent?queue=mail&name=nobody", None, None).await;
    assert_eq!(status, 404, "{body}");
    stop.cancel();
}

// The console answers Baton's messages in the one JSON mapping the JSON calls on the gRPC port
// answer (proto3 JSON): an agent's view is GetAgent's answer exactly as
// POST /baton.v1.AgentService/GetAgent writes it, with its 64-bit token a string, its state the
// enum's name, its payload base64 and a field at its default left out; the overview's health is
// GetHealth's answer, its counts strings and its source a Source.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_answers_the_json_mapping_of_the_grpc_port() {
    let redis = TestRedis::start().await;
    let (grpc, console, stop) = start(&redis, test_config()).await;
    let channel = tonic::transport::Channel::from_shared(grpc.clone()).unwrap().connect().await.unwrap();
    let mut client = pb::agent_service_client::AgentServiceClient::new(channel);
    let def = pb::Agent { payload: b"weekly".to_vec(), ..agent("report", 60_000, 60_000) };
    register(&mut client, "mail", vec![def]).await;
    let lease = acquire(&mut client, "mail", "w-1", 1).await.remove(0);

    let (status, body) = http(&console, "GET", "/api/agent?queue=mail&name=report", None, None).await;
    assert_eq!(status, 200, "{body}");
    let from_console: Value = serde_json::from_str(&body).unwrap();
    let port = grpc.trim_start_matches("http://");
    let call = r#"{"queue":"mail","name":"report"}"#;
    let (status, body) = http(port, "POST", "/baton.v1.AgentService/GetAgent", None, Some(call)).await;
    assert_eq!(status, 200, "{body}");
    let from_grpc_port: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(from_console, from_grpc_port, "one mapping");
    let a = &from_console["agent"];
    assert_eq!(a["token"], Value::String(lease.token.to_string()), "a uint64 is a string: {a}");
    assert_eq!(a["state"], "AGENT_STATE_WORKING", "an enum is its value's name: {a}");
    assert_eq!(a["agent"]["payload"], "d2Vla2x5", "bytes are base64: {a}");
    assert_eq!(a["agent"]["interval"], "60s", "a Duration is seconds: {a}");
    assert!(a.get("failureStreak").is_none(), "a field at its default is left out: {a}");

    let (_, body) = http(&console, "GET", "/api/overview", None, None).await;
    let overview: Value = serde_json::from_str(&body).unwrap();
    let sources = overview["health"]["sources"].as_array().unwrap();
    let mail = sources.iter().find(|s| s["source"]["name"] == "mail").unwrap_or_else(|| panic!("{overview}"));
    assert_eq!((&mail["source"]["kind"], &mail["inUse"]), (&Value::from("SOURCE_KIND_QUEUE"), &Value::from("1")));
    stop.cancel();
}

// The last of many agents is found by its name prefix on the first page of a search, whatever
// the queue holds before it (a console that read the queue up to a cap missed it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_finds_the_last_agent_of_the_queue() {
    let redis = TestRedis::start().await;
    let (grpc, console, stop) = start(&redis, test_config()).await;
    let channel = tonic::transport::Channel::from_shared(grpc).unwrap().connect().await.unwrap();
    let mut client = pb::agent_service_client::AgentServiceClient::new(channel);
    for batch in 0..3 {
        let defs = (0..1000).map(|i| agent(&format!("a-{:05}", batch * 1000 + i), 60_000, 60_000)).collect();
        register(&mut client, "big", defs).await;
    }
    let page = agents_page(&console, "queue=big&search=a-02999").await;
    assert_eq!(names(&page), ["a-02999"]);
    let first = agents_page(&console, "queue=big").await;
    assert_eq!(names(&first).len(), 50, "one page, not the queue");
    assert_eq!(first["count"].as_u64(), Some(3000));
    assert!(!next_page(&first).is_empty());
    stop.cancel();
}

// Bad paging input is a 400 naming the field, and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_paging_input_names_its_field() {
    let redis = TestRedis::start().await;
    let (_, console, stop) = start(&redis, test_config()).await;
    let before = redis.snapshot().await;
    for (path, field) in [
        ("/api/agents?queue=mail&limit=0", "limit"),
        ("/api/agents?queue=mail&limit=501", "limit"),
        ("/api/agents?queue=mail&limit=ten", "limit"),
        ("/api/agents?queue=mail&page_token=a:b", "page_token"),
        ("/api/agents?queue=mail&page_token=12345", "page_token"),
        ("/api/agents?queue=mail&search=a%20b", "search"),
        ("/api/agents?queue=", "queue"),
        ("/api/deadletters?limit=1000", "limit"),
        ("/api/deadletters?page_token=garbage", "page_token"),
        ("/api/history?since=yesterday", "since"),
        ("/api/history?since=-1", "since"),
        ("/api/messages?receiver=mail&state=done", "state"),
        ("/api/messages?receiver=mail&limit=0", "limit"),
        ("/api/messages?receiver=mail&page_token=garbage", "page_token"),
        ("/api/messages?receiver=a:b", "receiver"),
        ("/api/message?receiver=mail", "id"),
        ("/api/message?receiver=a:b&id=1", "receiver"),
        ("/api/deadletter?kind=queue&source=mail", "id"),
        ("/api/deadletter?kind=heap&source=mail&id=d1", "kind"),
        ("/api/deadletter?kind=queue&id=d1", "source"),
        ("/api/deadletter?kind=queue&source=a:b&id=d1", "source"),
        ("/api/workers?limit=0", "limit"),
    ] {
        let (status, body) = http(&console, "GET", path, None, None).await;
        assert_eq!(status, 400, "{path}: {body}");
        let error = serde_json::from_str::<Value>(&body).unwrap()["error"].as_str().unwrap().to_string();
        assert!(error.starts_with(field), "{path}: {error:?} should name {field}");
    }
    assert_eq!(redis.snapshot().await, before);
    stop.cancel();
}

// Dead letters page by cursor too: 7 at limit 3 are three pages of at most 3 rows, each once;
// a search (here, every one of them has the error class) keeps pages within the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_page_by_cursor_within_the_limit() {
    let redis = TestRedis::start().await;
    let (grpc, console, stop) = start(&redis, test_config()).await;
    let channel = tonic::transport::Channel::from_shared(grpc).unwrap().connect().await.unwrap();
    let mut agents = pb::agent_service_client::AgentServiceClient::new(channel);
    let doomed = |i: usize| pb::Agent { max_attempts: 1, ..agent(&format!("d{i}"), 3_600_000, 60_000) };
    register(&mut agents, "mail", (0..7).map(doomed).collect()).await;
    for l in acquire(&mut agents, "mail", "w", 7).await {
        let failed = pb::CompleteRequest {
            message: format!("smtp 550 for {}", l.name),
            ..complete_req(&l, pb::Outcome::Unknown)
        };
        agents.complete(failed).await.unwrap();
    }
    for search in ["", "UNKNOWN"] {
        let mut ids = Vec::new();
        let mut token = String::new();
        loop {
            let path = format!("/api/deadletters?limit=3&search={search}&page_token={token}");
            let (status, body) = http(&console, "GET", &path, None, None).await;
            assert_eq!(status, 200, "{body}");
            let page: Value = serde_json::from_str(&body).unwrap();
            let rows = page["deadLetters"].as_array().unwrap();
            assert!(rows.len() <= 3, "{page}");
            assert_eq!(page["count"].as_u64(), Some(7), "{page}");
            ids.extend(rows.iter().map(|d| d["id"].as_str().unwrap().to_string()));
            token = next_page(&page);
            if token.is_empty() {
                break;
            }
        }
        ids.sort();
        assert_eq!(ids, (0..7).map(|i| format!("d{i}")).collect::<Vec<_>>(), "search {search:?}");
    }
    // A dead-lettered agent's view names the error that dead-lettered it, as its dead letter does.
    let (_, body) = http(&console, "GET", "/api/deadletters?search=d3", None, None).await;
    let letter: Value = serde_json::from_str(&body).unwrap();
    let letter = &letter["deadLetters"][0];
    let (status, body) = http(&console, "GET", "/api/agent?queue=mail&name=d3", None, None).await;
    assert_eq!(status, 200, "{body}");
    let one = serde_json::from_str::<Value>(&body).unwrap()["agent"].take();
    assert_eq!(one["state"], "AGENT_STATE_DEAD_LETTERED", "{one}");
    assert_eq!(one["lastErrorMessage"], "smtp 550 for d3", "{one}");
    assert_eq!(one["lastErrorClass"], letter["errorClass"], "{one} {letter}");
    assert_eq!(one["lastErrorMessage"], letter["message"], "{one} {letter}");
    assert!(!one["lastErrorClass"].as_str().unwrap().is_empty());
    // The dead letter's own view: its error, attempts, holder and labels, found in its source.
    let (status, body) = http(&console, "GET", "/api/deadletter?kind=queue&source=mail&id=d3", None, None).await;
    assert_eq!(status, 200, "{body}");
    let view: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (&view["id"], &view["errorClass"], &view["message"]),
        (&letter["id"], &letter["errorClass"], &letter["message"])
    );
    assert_eq!((view["attempts"].as_u64(), view["holder"].as_str()), (Some(1), Some("w")), "{view}");
    assert!(view["payload"].is_null(), "no payload: {view}");
    assert!(view["attributes"].is_null(), "the agent has no labels: {view}");
    let (status, body) = http(&console, "GET", "/api/deadletter?kind=queue&source=mail&id=d9", None, None).await;
    assert_eq!(status, 404, "{body}");
    // One that never failed has none.
    register(&mut agents, "mail", vec![agent("fine", 3_600_000, 60_000)]).await;
    let (_, body) = http(&console, "GET", "/api/agent?queue=mail&name=fine", None, None).await;
    assert!(serde_json::from_str::<Value>(&body).unwrap()["agent"]["lastErrorClass"].is_null(), "{body}");
    stop.cancel();
}

/// `/api/history`'s samples (with `since`, if given), once there are some.
async fn history(console: &str, since: u64) -> Vec<Value> {
    let (status, body) = http(console, "GET", &format!("/api/history?since={since}"), None, None).await;
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!((answer["perReplica"].as_bool(), answer["intervalSeconds"].as_u64()), (Some(true), Some(5)), "{answer}");
    answer["samples"].as_array().unwrap().clone()
}

// The history is the replica's own samples, taken whether or not a page is open: the backlog
// the test made shows up in a sample, samples go forward in time, and `since` answers only the
// samples after it (what a page that has the rest asks for).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_history_keeps_samples_that_a_page_reads_from_since() {
    let redis = TestRedis::start().await;
    let (grpc, console, stop) = start(&redis, test_config()).await;
    let channel = tonic::transport::Channel::from_shared(grpc).unwrap().connect().await.unwrap();
    let mut agents = pb::agent_service_client::AgentServiceClient::new(channel);
    register(&mut agents, "mail", (0..3).map(|i| agent(&format!("a{i}"), 60_000, 60_000)).collect()).await;
    eventually(Duration::from_secs(30), "a sample with the backlog of 3", || async {
        history(&console, 0).await.iter().any(|s| s["backlog"] == 3)
    })
    .await;
    let samples = history(&console, 0).await;
    let times: Vec<u64> = samples.iter().map(|s| s["atMs"].as_u64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]), "oldest first, forward in time: {times:?}");
    let last = *times.last().unwrap();
    eventually(Duration::from_secs(30), "a sample after the last one read", || async {
        !history(&console, last).await.is_empty()
    })
    .await;
    let newer = history(&console, last).await;
    assert!(newer.iter().all(|s| s["atMs"].as_u64().unwrap() > last), "only newer samples: {newer:?}");
    stop.cancel();
}

// The history sums every source: a token that may read health sees it, no token is 401, and a
// token scoped to some names is refused (403) rather than shown figures of sources outside
// its scopes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_history_is_behind_authentication_and_refused_to_scoped_tokens() {
    let redis = TestRedis::start().await;
    let (reader, reader_entry) = token_entry("dashboard", "read-only");
    let (scoped, mut scoped_entry) = token_entry("billing-dashboard", "read-only");
    scoped_entry.scopes = vec!["billing.*".into()];
    let mut config = test_config();
    config.auth.tokens = vec![reader_entry, scoped_entry];
    let (_, console, stop) = start(&redis, config).await;
    assert_eq!(http(&console, "GET", "/api/history", None, None).await.0, 401);
    let (status, body) = http(&console, "GET", "/api/history", Some(&scoped), None).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("scoped"), "{body}");
    let (status, body) = http(&console, "GET", "/api/history", Some(&reader), None).await;
    assert_eq!(status, 200, "{body}");
    stop.cancel();
}

/// One GET of the console's JSON API that must answer 200.
async fn get_json(console: &str, path: &str) -> Value {
    let (status, body) = http(console, "GET", path, None, None).await;
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap()
}

// A receiver's scheduled messages page by cursor in delivery order (7 at limit 3: three pages,
// each message once, with the receiver's count); one message's view shows its payload as text
// when it is UTF-8 and as hex when not, capped at 1 KiB; a cancel of two messages, one of them
// unknown, cancels the one and says why not the other, and the cancelled message is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_messages_api_pages_a_receivers_messages_shows_one_and_cancels() {
    let redis = TestRedis::start().await;
    let (grpc, console, stop) = start(&redis, test_config()).await;
    let channel = tonic::transport::Channel::from_shared(grpc).unwrap().connect().await.unwrap();
    let mut schedules = pb::schedule_service_client::ScheduleServiceClient::new(channel);
    let mut ids = Vec::new();
    for i in 0..7u64 {
        let payload = match i {
            0 => b"{\"to\":\"ops@example.com\"}".to_vec(),
            1 => vec![0xff, 0x00, 0x10],
            2 => vec![b'x'; 3000],
            _ => Vec::new(),
        };
        let msg = pb::ScheduleRequest {
            receiver: "mail-out".into(),
            payload,
            when: Some(pb::schedule_request::When::Delay(dur(3_600_000 + i * 1_000).unwrap())),
            ..Default::default()
        };
        ids.push(schedules.schedule(msg).await.unwrap().into_inner().id);
    }
    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let page = get_json(&console, &format!("/api/messages?receiver=mail-out&limit=3&page_token={token}")).await;
        let rows = page["messages"].as_array().unwrap();
        assert!(rows.len() <= 3, "{page}");
        assert_eq!((page["count"].as_u64(), page["countExact"].as_bool()), (Some(7), Some(true)), "{page}");
        assert!(rows.iter().all(|m| m["state"] == "MESSAGE_STATE_SCHEDULED"), "{page}");
        seen.extend(rows.iter().map(|m| m["id"].as_str().unwrap().to_string()));
        token = next_page(&page);
        if token.is_empty() {
            break;
        }
    }
    assert_eq!(seen, ids, "each message once, by delivery time");
    let one = |id: &str| format!("/api/message?receiver=mail-out&id={id}");
    let text = get_json(&console, &one(&ids[0])).await;
    assert_eq!(text["state"], "MESSAGE_STATE_SCHEDULED", "{text}");
    assert_eq!(bytes(&text["payloadHead"]), br#"{"to":"ops@example.com"}"#, "{text}");
    let binary = get_json(&console, &one(&ids[1])).await;
    assert_eq!(bytes(&binary["payloadHead"]), [0xff, 0x00, 0x10], "{binary}");
    // The view reads the first 1,024 bytes of a payload, and says its size.
    let big = get_json(&console, &one(&ids[2])).await;
    assert_eq!((bytes(&big["payloadHead"]).len(), big["payloadBytes"].as_str()), (1024, Some("3000")), "{big}");

    let body = format!(r#"{{"receiver":"mail-out","ids":["{}","missing"]}}"#, ids[0]);
    let (status, answer) = http(&console, "POST", "/api/messages/cancel", None, Some(&body)).await;
    assert_eq!(status, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!((answer["done"].as_u64(), answer["failed"].as_u64()), (Some(1), Some(1)), "{answer}");
    assert_eq!(answer["results"][1]["ok"], false, "{answer}");
    assert_eq!(http(&console, "GET", &one(&ids[0]), None, None).await.0, 404, "cancelled");
    let page = get_json(&console, "/api/messages?receiver=mail-out").await;
    assert_eq!(page["messages"].as_array().unwrap().len(), 6, "{page}");
    stop.cancel();
}

/// `/api/workers`' rows.
async fn workers(console: &str) -> Vec<Value> {
    let answer = get_json(console, "/api/workers").await;
    assert_eq!(answer["perReplica"], true, "{answer}");
    answer["workers"].as_array().unwrap().clone()
}

// The workers view lists this replica's open connections: a Session stream with its worker id
// and the credit it granted, a long poll while it waits; each is gone once it ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workers_api_lists_open_sessions_and_long_polls() {
    let redis = TestRedis::start().await;
    let (_process, grpc, console) = start_process(&redis).await;
    let channel = tonic::transport::Channel::from_shared(grpc).unwrap().connect().await.unwrap();
    let mut agents = pb::agent_service_client::AgentServiceClient::new(channel);
    register(&mut agents, "mail", vec![agent("a", 60_000, 60_000)]).await;
    let mut held = acquire(&mut agents, "mail", "w-0", 1).await;
    assert_eq!(held.len(), 1, "nothing due left for the session and the long poll");
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let open = pb::SessionRequest {
        open: Some(pb::SessionOpen { queue: "mail".into(), worker_id: "w-session".into() }),
        credit: 3,
        ..Default::default()
    };
    tx.send(open).await.unwrap();
    let mut session = agents.session(tokio_stream::wrappers::ReceiverStream::new(rx)).await.unwrap().into_inner();
    let session_row = |rows: &[Value]| {
        rows.iter().any(|w| w["kind"] == "session" && w["workerId"] == "w-session" && w["credit"] == 3)
    };
    eventually(Duration::from_secs(30), "the session listed with its credit", || async {
        session_row(&workers(&console).await)
    })
    .await;
    let mut poller = agents.clone();
    let poll = tokio::spawn(async move {
        let req =
            pb::AcquireRequest { queue: "mail".into(), worker_id: "w-poll".into(), max_leases: 2, wait: dur(60_000) };
        poller.acquire(req).await
    });
    eventually(Duration::from_secs(30), "the long poll listed while it waits", || async {
        workers(&console)
            .await
            .iter()
            .any(|w| w["kind"] == "long poll" && w["workerId"] == "w-poll" && w["queue"] == "mail")
    })
    .await;
    // The held agent comes back: the long poll or the session takes it, and the long poll ends.
    let lease = held.pop().unwrap();
    agents
        .release(pb::ReleaseRequest {
            queue: "mail".into(),
            name: lease.name,
            token: lease.token,
            ..Default::default()
        })
        .await
        .unwrap();
    drop(tx);
    while let Some(Ok(_)) = session.message().await.transpose() {}
    poll.abort();
    eventually(Duration::from_secs(30), "both gone once they ended", || async {
        workers(&console).await.iter().all(|w| w["workerId"] != "w-session" && w["workerId"] != "w-poll")
    })
    .await;
}

// An agent's view lists its parents (how each finished, or pending) and its children; a batch's
// view counts its members and names its callbacks; a batch that does not exist is 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_and_batch_views_show_dependencies() {
    let redis = TestRedis::start().await;
    let (grpc, console, stop) = start(&redis, test_config()).await;
    let channel = tonic::transport::Channel::from_shared(grpc).unwrap().connect().await.unwrap();
    let mut agents = baton::pb::agent_service_client::AgentServiceClient::new(channel);
    let one_shot = |name: &str| pb::Agent { name: name.into(), timeout: dur(30_000), ..Default::default() };
    agents
        .register(pb::RegisterRequest {
            queue: "etl".into(),
            agents: vec![one_shot("extract"), one_shot("audit")],
            ..Default::default()
        })
        .await
        .unwrap();
    agents
        .register(pb::RegisterRequest {
            queue: "etl".into(),
            agents: vec![pb::Agent {
                after: vec![
                    pb::AgentRef { queue: "etl".into(), name: "extract".into(), on_failure: 0, ..Default::default() },
                    pb::AgentRef { queue: "etl".into(), name: "audit".into(), on_failure: 0, ..Default::default() },
                ],
                ..one_shot("load")
            }],
            ..Default::default()
        })
        .await
        .unwrap();
    // extract succeeds; audit is still pending.
    let lease = agents
        .acquire(pb::AcquireRequest { queue: "etl".into(), worker_id: "w".into(), max_leases: 2, wait: None })
        .await
        .unwrap()
        .into_inner()
        .leases
        .into_iter()
        .find(|l| l.name == "extract")
        .unwrap();
    let done = pb::CompleteRequest {
        queue: "etl".into(),
        name: "extract".into(),
        token: lease.token,
        outcome: pb::Outcome::Success as i32,
        result: b"42 rows".to_vec(),
        ..Default::default()
    };
    agents.complete(done).await.unwrap();
    let mut view = Value::Null;
    for _ in 0..300 {
        let (status, body) = http(&console, "GET", "/api/agent?queue=etl&name=load", None, None).await;
        assert_eq!(status, 200, "{body}");
        view = serde_json::from_str::<Value>(&body).unwrap()["agent"].take();
        if view["parentsPending"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        (view["state"].as_str(), view["parentsTotal"].as_u64()),
        (Some("AGENT_STATE_BLOCKED"), Some(2)),
        "{view}"
    );
    let finishes: Vec<(&str, &str)> = view["parents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["parent"]["name"].as_str().unwrap(), p["result"]["finish"].as_str().unwrap_or("(pending)")))
        .collect();
    assert_eq!(finishes, [("audit", "(pending)"), ("extract", "FINISH_SUCCEEDED")]);
    // What a finished parent returned; nothing for a pending one.
    assert_eq!(bytes(&view["parents"][1]["result"]["result"]), b"42 rows", "{view}");
    assert_eq!(view["parents"][0]["result"], Value::Null, "{view}");
    // A finished one-shot agent is gone, but its finish is kept: the agent page shows it.
    let (status, _) = http(&console, "GET", "/api/agent?queue=etl&name=extract", None, None).await;
    assert_eq!(status, 404);
    let (status, body) = http(&console, "GET", "/api/result?queue=etl&name=extract", None, None).await;
    assert_eq!(status, 200, "{body}");
    let kept: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (kept["done"].as_bool(), kept["result"]["finish"].as_str()),
        (Some(true), Some("FINISH_SUCCEEDED")),
        "{kept}"
    );
    assert_eq!(bytes(&kept["result"]["result"]), b"42 rows", "{kept}");
    let (status, body) = http(&console, "GET", "/api/result?queue=etl&name=audit", None, None).await;
    assert_eq!((status, serde_json::from_str::<Value>(&body).unwrap()["done"].as_bool()), (200, None), "{body}");
    let (status, _) = http(&console, "GET", "/api/result?queue=etl&name=nope", None, None).await;
    assert_eq!(status, 404);
    // The queue's page counts the blocked agent, which GetHealth leaves out of its figures.
    let page = agents_page(&console, "queue=etl").await;
    assert_eq!((page["count"].as_u64(), page["countExact"].as_bool()), (Some(2), Some(true)), "{page}");
    let (_, body) = http(&console, "GET", "/api/agent?queue=etl&name=audit", None, None).await;
    let audit: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(audit["agent"]["children"][0]["name"], "load", "{audit}");

    agents
        .register_batch(pb::RegisterBatchRequest {
            batch: "nightly".into(),
            queue: "etl".into(),
            agents: vec![one_shot("m-1")],
            on_complete: vec![one_shot("report")],
            ..Default::default()
        })
        .await
        .unwrap();
    let (status, body) = http(&console, "GET", "/api/batch?batch=nightly", None, None).await;
    assert_eq!(status, 200, "{body}");
    let b = serde_json::from_str::<Value>(&body).unwrap()["status"].take();
    assert_eq!((b["total"].as_u64(), b["pending"].as_u64(), b["closed"].as_bool()), (Some(1), Some(1), None));
    assert_eq!(b["callbacks"][0]["name"], "report");
    let (status, _) = http(&console, "GET", "/api/batch?batch=nope", None, None).await;
    assert_eq!(status, 404);
    stop.cancel();
}

// An operator scoped to some names (read-only, `billing.*`) opens the overview: it shows the
// sources within its scopes and leaves out the rest — the other tenants' queues and the
// sweeper's election (null); an unscoped reader sees both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scoped_operator_sees_the_overview_within_its_scopes() {
    let redis = TestRedis::start().await;
    let (admin, admin_entry) = token_entry("ops", "admin");
    let (reader, reader_entry) = token_entry("dashboard", "read-only");
    let (scoped, mut scoped_entry) = token_entry("billing-dashboard", "read-only");
    scoped_entry.scopes = vec!["billing.*".into()];
    let mut config = test_config();
    config.auth.tokens = vec![admin_entry, reader_entry, scoped_entry];
    let (grpc, console, stop) = start(&redis, config).await;
    let client = baton::client::Client::builder(grpc).token(admin).connect().await.unwrap();
    for queue in ["billing.mail", "ops.mail"] {
        let register =
            pb::RegisterRequest { queue: queue.into(), agents: vec![agent("a", 60_000, 60_000)], ..Default::default() };
        client.agents().register(register).await.unwrap();
    }
    let overview = |token: String| {
        let console = console.clone();
        async move {
            let (status, body) = http(&console, "GET", "/api/overview", Some(&token), None).await;
            assert_eq!(status, 200, "{body}");
            serde_json::from_str::<Value>(&body).unwrap()
        }
    };
    let names = |o: &Value| -> Vec<String> {
        let sources = o["health"]["sources"].as_array().unwrap().iter();
        sources.map(|s| s["source"]["name"].as_str().unwrap().to_string()).collect()
    };
    let mine = overview(scoped.clone()).await;
    assert_eq!(names(&mine), ["billing.mail"], "{mine}");
    assert!(mine["sweeper"].is_null(), "the sweeper's election is outside its scopes: {mine}");
    assert_eq!(mine["scoped"], true, "{mine}");
    assert!(!mine.to_string().contains("ops.mail"), "{mine}");
    let all = overview(reader).await;
    let mut all_names = names(&all);
    all_names.sort();
    assert_eq!(all_names, ["billing.mail", "ops.mail"], "{all}");
    assert!(all["sweeper"].is_object(), "{all}");
    assert_eq!(all["scoped"], false, "{all}");
    stop.cancel();
}

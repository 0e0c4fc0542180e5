//! Browsers and curl on the gRPC port (`src/edge/web.rs`), against a real redis-server and a real
//! Baton: JSON calls made by the `curl` binary, gRPC-Web calls framed by hand from the generated
//! messages (unary and a server stream read message by message), CORS, TLS.
//!
//! Invariants checked: a JSON or gRPC-Web call meets the same authentication, scopes,
//! validation and error details as the gRPC call; input that is not a request is refused naming
//! its field and changes nothing; CORS headers appear only for configured origins.

use crate::common;

use std::net::SocketAddr;

use baton::config::{AuthConfig, Config, TokenEntry};
use common::*;
use http_body_util::BodyExt;
use pb::{admin_service_client::AdminServiceClient, claim_service_client::ClaimServiceClient};
use prost::Message;
use serde_json::{json, Value};
use tonic::codegen::Bytes;

const ADMIN: &str = "tok-admin";
const BILLING_PRODUCER: &str = "tok-billing-producer";
const BILLING_WORKER: &str = "tok-billing-worker";

/// What curl got: the status, the headers (names lowercase) and the body.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// The `field` of the BadRequest detail of a Connect error.
    fn bad_field(&self) -> String {
        let json = self.json();
        let details = json["details"].as_array().unwrap_or_else(|| panic!("no details: {json}"));
        let bad = details.iter().find(|d| d["type"] == "google.rpc.BadRequest").expect("a BadRequest detail");
        assert!(bad["value"].as_str().is_some_and(|v| !v.is_empty()), "the detail's protobuf is there too");
        bad["debug"]["fieldViolations"][0]["field"].as_str().unwrap().to_string()
    }
}

/// Runs curl with `args` (`-sS -i` first) and reads its answer; prints the command and what came
/// back, for the record.
async fn curl(args: &[&str]) -> Answer {
    let out = tokio::process::Command::new("curl").args(["-sS", "-i"]).args(args).output().await.expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "curl {args:?} failed: {}{text}", String::from_utf8_lossy(&out.stderr));
    // A 100 Continue (curl asks for one before a large body) comes before the answer.
    let mut text = text.as_str();
    while text.starts_with("HTTP/1.1 100") {
        text = text.split_once("\r\n\r\n").map_or("", |(_, rest)| rest);
    }
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text, ""));
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|s| s.parse().ok()).expect("a status");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let shown: Vec<&str> = args.iter().map(|a| if a.len() > 300 { "<long>" } else { *a }).collect();
    println!("$ curl {}\n{status} {body}\n", shown.join(" "));
    Answer { status, headers, body: body.to_string() }
}

/// POSTs `json` to `path` with curl, with a bearer token if given and any `extra` arguments.
async fn post(addr: SocketAddr, path: &str, json: &str, token: Option<&str>, extra: &[&str]) -> Answer {
    let url = format!("http://{addr}{path}");
    let auth = token.map(|t| format!("authorization: Bearer {t}"));
    let mut args = vec!["-X", "POST", "-H", "content-type: application/json", "--data-binary", json];
    if let Some(auth) = &auth {
        args.extend(["-H", auth]);
    }
    args.extend(extra);
    args.push(&url);
    curl(&args).await
}

fn token(name: &str, token: &str, role: &str, scopes: &[&str]) -> TokenEntry {
    TokenEntry {
        name: name.into(),
        sha256: baton::config::token_hash(token),
        roles: vec![role.into()],
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
    }
}

fn auth_config() -> Config {
    let mut config = test_config();
    config.auth = AuthConfig {
        tokens: vec![
            token("admin", ADMIN, "admin", &[]),
            token("billing-producer", BILLING_PRODUCER, "producer", &["billing.*"]),
            token("billing-worker", BILLING_WORKER, "worker", &["billing.*"]),
        ],
        ..AuthConfig::default()
    };
    config
}

/// A gRPC-Web answer: its HTTP status, headers, messages and trailers (from the body's trailer
/// frame, or the headers of a trailers-only answer).
struct WebAnswer {
    status: u16,
    headers: http::HeaderMap,
    messages: Vec<Vec<u8>>,
    trailers: String,
}

impl WebAnswer {
    fn grpc_status(&self) -> String {
        let from_trailers = self.trailers.lines().find_map(|l| l.strip_prefix("grpc-status:")).map(str::trim);
        let from_headers = self.headers.get("grpc-status").and_then(|v| v.to_str().ok());
        from_trailers.or(from_headers).expect("a grpc-status").to_string()
    }
}

/// An HTTP/1.1 connection to `addr` sending one gRPC-Web request for `path` with `message`;
/// the response, its body to be read frame by frame.
async fn grpc_web_request(
    addr: SocketAddr,
    path: &str,
    message: &impl Message,
    token: Option<&str>,
    text: bool,
) -> http::Response<hyper::body::Incoming> {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.unwrap();
    tokio::spawn(connection);
    let mut framed = vec![0u8];
    framed.extend_from_slice(&(message.encoded_len() as u32).to_be_bytes());
    message.encode(&mut framed).unwrap();
    let (content_type, body) = if text {
        use base64::Engine;
        ("application/grpc-web-text", Bytes::from(base64::engine::general_purpose::STANDARD.encode(&framed)))
    } else {
        ("application/grpc-web+proto", Bytes::from(framed))
    };
    let mut request = http::Request::post(path)
        .header("host", addr.to_string())
        .header("content-type", content_type)
        .header("x-grpc-web", "1");
    if text {
        // As grpc-web's JavaScript client asks for a text answer.
        request = request.header("accept", "application/grpc-web-text");
    }
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let request = request.body(http_body_util::Full::new(body)).unwrap();
    sender.send_request(request).await.unwrap()
}

/// Reads gRPC-Web frames (1 byte flags, 4 bytes length, payload) from a response body as they
/// arrive.
struct Frames {
    body: hyper::body::Incoming,
    buf: Vec<u8>,
    text: bool,
    /// Base64 text not decoded yet (`text`).
    pending: Vec<u8>,
}

impl Frames {
    /// The next frame: (is trailers, payload), or None at the end of the body.
    async fn next(&mut self) -> Option<(bool, Vec<u8>)> {
        loop {
            if self.buf.len() >= 5 {
                let len = u32::from_be_bytes(self.buf[1..5].try_into().unwrap()) as usize;
                if self.buf.len() >= 5 + len {
                    let frame: Vec<u8> = self.buf.drain(..5 + len).collect();
                    return Some((frame[0] & 0x80 != 0, frame[5..].to_vec()));
                }
            }
            let frame = self.body.frame().await?.unwrap();
            if let Ok(data) = frame.into_data() {
                if self.text {
                    // Each frame is encoded on its own, padding included: decode by groups of 4.
                    use base64::Engine;
                    self.pending.extend_from_slice(&data);
                    let whole = self.pending.len() / 4 * 4;
                    for group in self.pending.drain(..whole).collect::<Vec<u8>>().chunks(4) {
                        let decoded = base64::engine::general_purpose::STANDARD.decode(group).expect("base64");
                        self.buf.extend_from_slice(&decoded);
                    }
                } else {
                    self.buf.extend_from_slice(&data);
                }
            }
        }
    }
}

/// One whole gRPC-Web call.
async fn grpc_web(addr: SocketAddr, path: &str, message: &impl Message, token: Option<&str>, text: bool) -> WebAnswer {
    let response = grpc_web_request(addr, path, message, token, text).await;
    let (parts, body) = response.into_parts();
    let mut frames = Frames { body, buf: Vec::new(), text, pending: Vec::new() };
    let (mut messages, mut trailers) = (Vec::new(), String::new());
    while let Some((is_trailers, payload)) = frames.next().await {
        if is_trailers {
            trailers = String::from_utf8(payload).unwrap();
        } else {
            messages.push(payload);
        }
    }
    WebAnswer { status: parts.status.as_u16(), headers: parts.headers, messages, trailers }
}

// Register, Acquire and Complete with curl and JSON; gRPC sees the agent's run recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_registers_acquires_and_completes_an_agent_with_json() {
    let mut env = Env::start().await;
    let addr = env.baton.addr;

    let registered = post(
        addr,
        "/baton.v1.AgentService/Register",
        r#"{"queue":"billing","agents":[{"name":"invoice-7","interval":"3600s","timeout":"30s","labels":{"team":"ops"}}]}"#,
        None,
        &["-H", "Connect-Protocol-Version: 1"],
    )
    .await;
    assert_eq!(
        (registered.status, registered.json()),
        (200, json!({"created": 1, "agents": [{"name": "invoice-7", "created": true}]}))
    );
    assert_eq!(registered.header("content-type"), Some("application/json"));

    // The proto's own field names are accepted as well as the camelCase JSON names.
    let acquired = post(
        addr,
        "/baton.v1.AgentService/Acquire",
        r#"{"queue":"billing","worker_id":"w-1","maxLeases":1}"#,
        None,
        &[],
    )
    .await;
    assert_eq!(acquired.status, 200);
    let lease = acquired.json()["leases"][0].clone();
    assert_eq!((lease["name"].as_str(), lease["attempt"].as_u64()), (Some("invoice-7"), Some(1)));
    assert_eq!(lease["agent"]["labels"], json!({"team": "ops"}));
    // uint64 is a string in proto3 JSON; Timestamp an RFC 3339 time.
    let token = lease["token"].as_str().expect("the token, as a string").to_string();
    assert!(lease["deadline"].as_str().unwrap().ends_with('Z'));

    let status = env.client.get_agent(pb::GetAgentRequest { queue: "billing".into(), name: "invoice-7".into() }).await;
    let agent = status.unwrap().into_inner().agent.unwrap();
    assert_eq!((agent.state(), agent.holder.as_str()), (pb::AgentState::Working, "w-1"));
    assert_eq!(agent.token.to_string(), token);

    let completed = post(
        addr,
        "/baton.v1.AgentService/Complete",
        &format!(r#"{{"queue":"billing","name":"invoice-7","token":"{token}","outcome":"OUTCOME_SUCCESS"}}"#),
        None,
        &[],
    )
    .await;
    assert_eq!(completed.status, 200, "{}", completed.body);
    assert_eq!(completed.json()["outcome"], "OUTCOME_SUCCESS", "{}", completed.body);

    let agent = env.client.get_agent(pb::GetAgentRequest { queue: "billing".into(), name: "invoice-7".into() }).await;
    let agent = agent.unwrap().into_inner().agent.unwrap();
    assert_eq!(agent.state(), pb::AgentState::Waiting, "completed: waiting for its next run");
    assert!(agent.holder.is_empty());

    // The same lease again: its token is spent, the Connect error says so (FAILED_PRECONDITION).
    let again = post(
        addr,
        "/baton.v1.AgentService/Complete",
        &format!(r#"{{"queue":"billing","name":"invoice-7","token":"{token}","outcome":"OUTCOME_SUCCESS"}}"#),
        None,
        &[],
    )
    .await;
    assert_eq!((again.status, again.json()["code"].as_str()), (400, Some("failed_precondition")));
    let info =
        again.json()["details"].as_array().unwrap().iter().find(|d| d["type"] == "google.rpc.ErrorInfo").cloned();
    assert_eq!(info.unwrap()["debug"]["reason"], "LEASE_LOST");
}

// Authentication, roles and scopes hold for JSON and gRPC-Web as for gRPC.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_and_grpc_web_calls_are_authenticated_and_scoped() {
    let env = Env::with_config(auth_config()).await;
    let addr = env.baton.addr;
    let register = |queue: &str| format!(r#"{{"queue":"{queue}","agents":[{{"name":"a","timeout":"30s"}}]}}"#);
    let path = "/baton.v1.AgentService/Register";

    let none = post(addr, path, &register("billing.eu"), None, &[]).await;
    assert_eq!((none.status, none.json()["code"].as_str()), (401, Some("unauthenticated")));
    let wrong = post(addr, path, &register("billing.eu"), Some("nope"), &[]).await;
    assert_eq!(wrong.status, 401);
    let out_of_scope = post(addr, path, &register("ops.eu"), Some(BILLING_PRODUCER), &[]).await;
    assert_eq!((out_of_scope.status, out_of_scope.json()["code"].as_str()), (403, Some("permission_denied")));
    assert!(out_of_scope.json()["message"].as_str().unwrap().contains("ops.eu"), "{}", out_of_scope.body);
    let no_role = post(addr, path, &register("billing.eu"), Some(BILLING_WORKER), &[]).await;
    assert_eq!(no_role.status, 403, "a worker may not Register");
    let allowed = post(addr, path, &register("billing.eu"), Some(BILLING_PRODUCER), &[]).await;
    assert_eq!(
        (allowed.status, allowed.json()),
        (200, json!({"created": 1, "agents": [{"name": "a", "created": true}]}))
    );

    // Bad JSON and unknown methods are not told to a caller who may not call: authentication first.
    let bad = post(addr, path, "{", None, &[]).await;
    assert_eq!(bad.status, 401);
    let unknown = post(addr, "/baton.v1.AgentService/Nope", "{}", Some(BILLING_PRODUCER), &[]).await;
    assert_eq!(unknown.status, 403, "an unknown method needs the admin permission, as over gRPC");
    let stream = post(addr, "/baton.v1.LeaderService/Observe", r#"{"election":"x"}"#, None, &[]).await;
    assert_eq!(stream.status, 401, "a stream asked for as JSON: authentication first");

    // gRPC-Web: the same answers, as grpc-status.
    let request = pb::GetAgentRequest { queue: "billing.eu".into(), name: "a".into() };
    let get = "/baton.v1.AgentService/GetAgent";
    assert_eq!(grpc_web(addr, get, &request, None, false).await.grpc_status(), "16");
    let other = pb::GetAgentRequest { queue: "ops.eu".into(), name: "a".into() };
    assert_eq!(grpc_web(addr, get, &other, Some(BILLING_WORKER), false).await.grpc_status(), "7");
    let ok = grpc_web(addr, get, &request, Some(BILLING_WORKER), false).await;
    assert_eq!((ok.status, ok.grpc_status().as_str(), ok.messages.len()), (200, "0", 1));
    let agent = pb::GetAgentResponse::decode(ok.messages[0].as_slice()).unwrap().agent.unwrap();
    assert_eq!(agent.agent.unwrap().name, "a");
}

// Input that is not a request is refused naming its field, and nothing changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_json_is_refused_naming_the_field_and_changes_nothing() {
    let env = Env::start().await;
    let addr = env.baton.addr;
    let path = "/baton.v1.AgentService/Register";
    assert_eq!(post(addr, path, r#"{"queue":"billing","agents":[{"name":"kept"}]}"#, None, &[]).await.status, 200);
    let before = env.redis.snapshot().await;

    for (json, field) in [
        (r#"{"queue":"billing","agents":[{"name":"a","intervalMs":5}]}"#, "agents[0].intervalMs"),
        (r#"{"queue":"billing","agents":[{"name":5}]}"#, "agents[0].name"),
        (r#"{"queue":"billing","agents":[{"name":"a","timeout":"soon"}]}"#, "agents[0].timeout"),
        (r#"{"queue":"billing","agents":[{"name":"a"}]"#, "request body"),
        (r#"{"queue":"billing"} trailing"#, "request body"),
        // Valid JSON, refused by the service's own validation, as over gRPC.
        (r#"{"queue":"bill ing","agents":[{"name":"a"}]}"#, "queue"),
    ] {
        let answer = post(addr, path, json, None, &[]).await;
        assert_eq!((answer.status, answer.json()["code"].as_str()), (400, Some("invalid_argument")), "{json}");
        assert_eq!(answer.bad_field(), field, "{json}");
        assert!(answer.json()["message"].as_str().unwrap().starts_with(field), "{}", answer.body);
    }
    let timeout = post(addr, path, "{}", None, &["-H", "Connect-Timeout-Ms: soon"]).await;
    assert_eq!((timeout.status, timeout.bad_field().as_str()), (400, "Connect-Timeout-Ms"));
    let version = post(addr, path, "{}", None, &["-H", "Connect-Protocol-Version: 2"]).await;
    assert_eq!((version.status, version.bad_field().as_str()), (400, "Connect-Protocol-Version"));
    let big = format!(r#"{{"queue":"billing","agents":[{{"name":"a","payload":"{}"}}]}}"#, "A".repeat(5 << 20));
    let body_file = env.redis.dir.path().join("big.json");
    std::fs::write(&body_file, big).unwrap();
    let big = post(addr, path, &format!("@{}", body_file.display()), None, &[]).await;
    assert_eq!((big.status, big.bad_field().as_str()), (400, "request body"));

    let unknown = post(addr, "/baton.v1.AgentService/Nope", "{}", None, &[]).await;
    assert_eq!((unknown.status, unknown.json()["code"].as_str()), (404, Some("unimplemented")));
    assert!(unknown.json()["message"].as_str().unwrap().contains("/baton.v1.AgentService/Nope"));
    let stream = post(addr, "/baton.v1.LeaderService/Observe", r#"{"election":"x"}"#, None, &[]).await;
    assert_eq!((stream.status, stream.json()["code"].as_str()), (501, Some("unimplemented")));
    assert!(stream.json()["message"].as_str().unwrap().contains("server-streaming RPC"), "{}", stream.body);
    let session = post(addr, "/baton.v1.AgentService/Session", "{}", None, &[]).await;
    assert!(session.status == 501 && session.body.contains("bidirectional-streaming"), "{}", session.body);

    // Other requests on the port say what it serves.
    let get = curl(&[&format!("http://{addr}/")]).await;
    assert_eq!(get.status, 405);
    let form = curl(&["-d", "a=b", &format!("http://{addr}{path}")]).await;
    assert_eq!(form.status, 415);
    assert!(form.json()["message"].as_str().unwrap().contains("application/json"));

    assert_eq!(env.redis.snapshot().await, before, "nothing changed");
}

// Connect-Timeout-Ms bounds a long poll (504); a refusal with a retry hint keeps it (429).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadlines_and_retry_hints_reach_json_callers() {
    let mut config = test_config();
    config.pool.max_line = 1;
    let env = Env::with_config(config).await;
    let addr = env.baton.addr;
    let poll = r#"{"queue":"empty","workerId":"w","wait":"2s"}"#;
    let late = post(addr, "/baton.v1.AgentService/Acquire", poll, None, &["-H", "Connect-Timeout-Ms: 300"]).await;
    assert_eq!((late.status, late.json()["code"].as_str()), (504, Some("deadline_exceeded")), "{}", late.body);

    // A claim waits in the pool's line of one; the next finds the line full.
    let url = format!("http://{addr}/baton.v1.ClaimService/Claim");
    let waiting = tokio::process::Command::new("curl")
        .args(["-sS", "-X", "POST", "-H", "content-type: application/json", "--data-binary"])
        .arg(r#"{"pool":"gpus","claimerId":"first","wait":"30s"}"#)
        .arg(&url)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let claims = ClaimServiceClient::new(env.baton.channel().await);
    eventually(std::time::Duration::from_secs(10), "the first claim waits in line", || {
        let mut claims = claims.clone();
        async move {
            let pool = claims.get_pool(pb::GetPoolRequest { pool: "gpus".into() }).await.unwrap().into_inner();
            pool.status.is_some_and(|s| s.waiting_claims == 1)
        }
    })
    .await;
    let full =
        post(addr, "/baton.v1.ClaimService/Claim", r#"{"pool":"gpus","claimerId":"second","wait":"5s"}"#, None, &[])
            .await;
    drop(waiting);
    assert_eq!((full.status, full.json()["code"].as_str()), (429, Some("resource_exhausted")), "{}", full.body);
    let pushback = full.header("grpc-retry-pushback-ms").and_then(|v| v.parse::<u64>().ok()).expect("a pushback");
    let retry_after = full.header("retry-after").and_then(|v| v.parse::<u64>().ok()).expect("Retry-After");
    assert_eq!(retry_after, pushback.div_ceil(1000).max(1), "Retry-After is the pushback in whole seconds");
    assert!(full.json()["details"].as_array().unwrap().iter().any(|d| d["type"] == "google.rpc.RetryInfo"));
}

// CORS: no headers by default; the configured origin only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_is_off_by_default_and_allows_only_configured_origins() {
    let redis = TestRedis::start().await;
    let preflight = |addr: SocketAddr, origin: &'static str| async move {
        let url = format!("http://{addr}/baton.v1.AgentService/Register");
        let origin = format!("Origin: {origin}");
        curl(&[
            "-X",
            "OPTIONS",
            "-H",
            &origin,
            "-H",
            "Access-Control-Request-Method: POST",
            "-H",
            "Access-Control-Request-Headers: content-type,authorization,x-grpc-web",
            &url,
        ])
        .await
    };

    let closed = TestBaton::start(&redis.url(), test_config()).await;
    let answer = preflight(closed.addr, "http://page.example").await;
    assert_eq!(answer.header("access-control-allow-origin"), None, "no CORS by default: {answer:?}");
    let post_answer =
        post(closed.addr, "/baton.v1.AdminService/GetHealth", "{}", None, &["-H", "Origin: http://page.example"]).await;
    assert_eq!(post_answer.status, 200);
    assert_eq!(post_answer.header("access-control-allow-origin"), None);
    closed.stop().await.unwrap();

    let mut config = test_config();
    config.web.cors_allowed_origins = vec!["http://page.example".into()];
    let open = TestBaton::start(&redis.url(), config).await;
    let allowed = preflight(open.addr, "http://page.example").await;
    assert_eq!(allowed.header("access-control-allow-origin"), Some("http://page.example"), "{allowed:?}");
    let headers = allowed.header("access-control-allow-headers").unwrap();
    assert!(headers.contains("authorization") && headers.contains("x-grpc-web"), "{headers}");
    let other = preflight(open.addr, "http://evil.example").await;
    assert_eq!(other.header("access-control-allow-origin"), None, "{other:?}");
    let post_answer =
        post(open.addr, "/baton.v1.AdminService/GetHealth", "{}", None, &["-H", "Origin: http://page.example"]).await;
    assert_eq!(post_answer.header("access-control-allow-origin"), Some("http://page.example"));
    assert!(post_answer.header("access-control-expose-headers").unwrap().contains("grpc-status"));
    open.stop().await.unwrap();
}

// gRPC-Web unary (binary and text) and a server stream read message by message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_web_serves_unary_calls_and_server_streams() {
    let env = Env::start().await;
    let addr = env.baton.addr;
    let mut claims = ClaimServiceClient::new(env.baton.channel().await);
    let offer = |id: &str| pb::OfferRequest {
        pool: "gpus".into(),
        resources: vec![pb::Resource { id: id.into(), ..Default::default() }],
        ..Default::default()
    };
    claims.offer(offer("gpu-1")).await.unwrap();

    for text in [false, true] {
        let answer =
            grpc_web(addr, "/baton.v1.ClaimService/GetPool", &pb::GetPoolRequest { pool: "gpus".into() }, None, text)
                .await;
        assert_eq!((answer.status, answer.grpc_status().as_str()), (200, "0"), "text={text}: {}", answer.trailers);
        let expected = if text { "application/grpc-web-text+proto" } else { "application/grpc-web+proto" };
        assert_eq!(answer.headers["content-type"], expected);
        let pool = pb::GetPoolResponse::decode(answer.messages[0].as_slice()).unwrap().status.unwrap();
        assert_eq!(pool.idle, 1, "text={text}");
    }

    // WatchPool: the current status first, then one after a change made over gRPC.
    let response = grpc_web_request(
        addr,
        "/baton.v1.ClaimService/WatchPool",
        &pb::WatchPoolRequest { pool: "gpus".into() },
        None,
        false,
    )
    .await;
    assert_eq!(response.status(), 200);
    let mut frames = Frames { body: response.into_body(), buf: Vec::new(), text: false, pending: Vec::new() };
    let (trailers, first) = frames.next().await.expect("the current status");
    assert!(!trailers);
    assert_eq!(pb::WatchPoolResponse::decode(first.as_slice()).unwrap().status.unwrap().idle, 1);
    claims.offer(offer("gpu-2")).await.unwrap();
    loop {
        let (trailers, next) = frames.next().await.expect("a status after the change");
        assert!(!trailers, "the stream goes on");
        if pb::WatchPoolResponse::decode(next.as_slice()).unwrap().status.unwrap().idle == 2 {
            break;
        }
    }

    // The admin service's errors keep their details over gRPC-Web.
    let mut admin = AdminServiceClient::new(env.baton.channel().await);
    assert!(admin.get_health(pb::GetHealthRequest::default()).await.is_ok());
    let bad =
        grpc_web(addr, "/baton.v1.ClaimService/GetPool", &pb::GetPoolRequest { pool: "no pe".into() }, None, false)
            .await;
    assert_eq!(bad.grpc_status(), "3");
    assert!(bad.headers.contains_key("grpc-status-details-bin") || bad.trailers.contains("grpc-status-details-bin"));
}

// Turned off, each refuses with 415; gRPC is unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_protocols_can_be_turned_off() {
    let mut config = test_config();
    config.web.json = false;
    let env = Env::with_config(config).await;
    let json = post(env.baton.addr, "/baton.v1.AdminService/GetHealth", "{}", None, &[]).await;
    assert_eq!(json.status, 415);
    assert!(json.json()["message"].as_str().unwrap().contains("web.json = false"));
    let web =
        grpc_web(env.baton.addr, "/baton.v1.AdminService/GetHealth", &pb::GetHealthRequest::default(), None, false)
            .await;
    assert_eq!(web.grpc_status(), "0", "gRPC-Web still on");

    let mut config = test_config();
    config.web.grpc_web = false;
    let baton = TestBaton::start(&env.redis.url(), config).await;
    let web =
        grpc_web(baton.addr, "/baton.v1.AdminService/GetHealth", &pb::GetHealthRequest::default(), None, false).await;
    assert_eq!((web.status, web.grpc_status().as_str()), (415, "12"));
    let mut admin = AdminServiceClient::new(baton.channel().await);
    assert!(admin.get_health(pb::GetHealthRequest::default()).await.is_ok(), "gRPC still served");
}

// Over TLS: curl with the CA, over HTTP/1.1 (ALPN http/1.1) and HTTP/2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_over_tls_with_curl() {
    let dir = tempfile::tempdir().unwrap();
    let certs =
        baton::tools::devcerts::generate(dir.path(), &["localhost".into(), "127.0.0.1".into()], "worker-7").unwrap();
    let mut config = auth_config();
    config.tls.cert_file = certs.server_cert.display().to_string();
    config.tls.key_file = certs.server_key.display().to_string();
    let redis = TestRedis::start().await;
    let baton = TestBaton::start(&redis.url(), config).await;
    let url = format!("https://localhost:{}/baton.v1.AgentService/Register", baton.addr.port());
    let ca = certs.ca.display().to_string();
    let body = r#"{"queue":"billing.tls","agents":[{"name":"a","timeout":"30s"}]}"#;
    for (version, created) in [("--http1.1", 1), ("--http2", 0)] {
        let answer = curl(&[
            version,
            "--cacert",
            &ca,
            "-H",
            "content-type: application/json",
            "-H",
            &format!("authorization: Bearer {BILLING_PRODUCER}"),
            "--data-binary",
            body,
            &url,
        ])
        .await;
        assert_eq!(answer.status, 200, "{version}: {}", answer.body);
        assert_eq!(answer.json()["created"].as_u64().unwrap_or(0), created, "{version}: {}", answer.body);
    }
    let refused = curl(&["--http1.1", "--cacert", &ca, "-H", "content-type: application/json", "-d", body, &url]).await;
    assert_eq!(refused.status, 401, "the same authentication over TLS");
    baton.stop().await.unwrap();
}

/// Resident memory of process `pid`, in MiB (`/proc/<pid>/status`).
fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb / 1024.0
}

/// Sends the head of a POST to `path` of `content_type` announcing a body of `length` bytes,
/// without a credential, then `body` bytes of it (never all of it).
async fn unauthenticated_post(
    addr: SocketAddr,
    path: &str,
    content_type: &str,
    length: usize,
    body: usize,
) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: baton\r\ncontent-type: {content_type}\r\ncontent-length: {length}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    // The server may answer and close before the body is all sent: that is the point.
    let chunk = vec![b' '; 64 * 1024];
    let mut sent = 0;
    while sent < body {
        let n = chunk.len().min(body - sent);
        if stream.write_all(&chunk[..n]).await.is_err() {
            break;
        }
        sent += n;
    }
    stream
}

/// The head of the answer on `stream` (up to the blank line), within `limit`.
async fn answer_head(stream: &mut tokio::net::TcpStream, limit: std::time::Duration) -> Option<String> {
    use tokio::io::AsyncReadExt;
    let mut got = Vec::new();
    tokio::time::timeout(limit, async {
        let mut buf = [0u8; 4096];
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .ok()?;
    Some(String::from_utf8_lossy(&got).to_string())
}

// A JSON or gRPC-Web call without a credential is refused on its headers, before its body is
// read: a Register announcing 3 MB that never sends them is answered 401 (grpc-status 16 over
// gRPC-Web) at once; and 20 such callers, each 1 byte short of a 4 MB body, leave a real `baton
// serve` holding none of it (resident memory from /proc).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unauthenticated_call_is_refused_before_its_body_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.toml");
    let entry = token("admin", ADMIN, "admin", &[]);
    std::fs::write(
        &tokens,
        format!("[[tokens]]\nname = \"admin\"\nsha256 = {:?}\nroles = [\"admin\"]\n", entry.sha256),
    )
    .unwrap();
    let redis = TestRedis::start().await;
    let process = BatonProcess::spawn(|cmd| {
        cmd.args(["--redis-url", &redis.url()]).env("BATON_AUTH__TOKENS_FILE", &tokens);
    });
    let addr = process.addr;
    let register = "/baton.v1.AgentService/Register";
    for (content_type, refused) in
        [("application/json", "HTTP/1.1 401"), ("application/grpc-web+proto", "grpc-status: 16")]
    {
        let started = std::time::Instant::now();
        let mut stream = unauthenticated_post(addr, register, content_type, 3_000_000, 0).await;
        let head = answer_head(&mut stream, std::time::Duration::from_secs(5)).await;
        let took = started.elapsed();
        println!("{content_type}: no credential, Content-Length 3000000, no body: answered in {took:?}");
        let head = head.unwrap_or_else(|| panic!("{content_type}: no answer within 5 s (waiting for the body)"));
        assert!(head.contains(refused), "{content_type}: {head}");
    }

    let before = rss_mib(process.child.id());
    // The largest JSON body Baton reads, as docs/web.md states it (4 MiB).
    let size = 4 * 1024 * 1024;
    let mut held = futures::future::join_all(
        (0..20).map(|_| unauthenticated_post(addr, register, "application/json", size, size - 1)),
    )
    .await;
    // Each is answered 401 and closed (the reset of a close with the body unread may overtake the
    // answer), none left waiting for its last byte.
    let mut ended = 0;
    for stream in &mut held {
        ended += answer_head(stream, std::time::Duration::from_secs(5)).await.is_some() as usize;
    }
    let after = rss_mib(process.child.id());
    println!("20 unauthenticated connections 1 byte short of a {size}-byte body: RSS {before:.1} -> {after:.1} MiB");
    assert_eq!(ended, 20, "every one refused, none waiting for its body");
    assert!(after - before < 20.0, "RSS grew from {before:.1} to {after:.1} MiB");
    drop(held);
}

//! The web console: a page served by `baton serve` on its own address (`console.listen`,
//! loopback by default), and the JSON API it reads, with live updates by server-sent events.
//!
//! Every API call is a call of a gRPC method, made in-process on the same service
//! implementations the gRPC server runs, after the same authentication and permission check
//! (`Identities::check`, with the method's path) and carrying the caller's identity, so scopes,
//! validation and audit lines are the gRPC ones. The browser sends its token as
//! `authorization: Bearer …` (or `?token=` for the event stream, which cannot set headers).
//! The page, its script and its style are compiled into the binary (no CDN).
//!
//! The overview's charts read [`history`]: samples this replica keeps in memory for the last
//! hour (per replica, lost on restart).
//!
//! What a gRPC method answered is written in Baton's one JSON mapping (`web::to_json`: proto3
//! JSON, as the JSON calls on the gRPC port answer it): `/api/agents` is a `ListAgentsResponse`,
//! `/api/agent` a `GetAgentResponse`, and so on (each handler says which). What the page shows
//! beyond the message (dates, durations, state names, a payload as text or hex) it derives
//! itself; the server adds only what the page cannot know, named in each handler's doc: paging
//! figures (`count`, `countExact`, `limit`, `scanned`), the caller's `readOnly` and `scoped`, and
//! this replica's own state (`latency`, `breakers`, the history, the open workers), which is no
//! message.

pub(crate) mod history;

use std::{convert::Infallible, net::SocketAddr, sync::Arc, time::Duration};

use axum::{
    extract::{Query, State},
    http::{header, HeaderMap, StatusCode},
    response::{
        sse::{Event, KeepAlive, Sse},
        IntoResponse, Response,
    },
    routing::{get, post},
    Json, Router,
};
use futures::{Stream, StreamExt};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::pb;

use crate::admin::service::AdminServiceImpl;

use crate::rpc::auth::Keyring;

use crate::elections::service::LeaderServiceImpl;

use crate::pb::admin_service_server::AdminService;

use crate::pb::agent_service_server::AgentService;

use crate::pb::claim_service_server::ClaimService;

use crate::pb::leader_service_server::LeaderService;

use crate::pb::schedule_service_server::ScheduleService;

use crate::pools::service::ClaimServiceImpl;

use crate::queues::service::AgentServiceImpl;

use crate::receivers::service::ScheduleServiceImpl;

use crate::edge::web::to_json;

const INDEX: &str = include_str!("console/index.html");
const SCRIPT: &str = include_str!("console/app.js");
const STYLE: &str = include_str!("console/style.css");

/// The election Baton's sweepers hold, shown on the overview.
const SWEEPER_ELECTION: &str = "baton-sweeper";

/// What the console calls.
pub(crate) struct Console {
    pub admin: AdminServiceImpl,
    pub agents: AgentServiceImpl,
    pub leaders: LeaderServiceImpl,
    pub claims: ClaimServiceImpl,
    pub schedules: ScheduleServiceImpl,
    pub identities: Arc<Keyring>,
    pub read_only: bool,
    /// This replica's store: the state of its circuit breakers.
    pub store: crate::store::Core,
    /// The last hour of samples the charts show (this replica's, in memory; see [`history`]).
    pub history: history::History,
}

/// Serves the console on `listener` until `stopping` is cancelled.
pub(crate) async fn serve(console: Console, listener: tokio::net::TcpListener, stopping: CancellationToken) {
    let addr = listener.local_addr().ok();
    let loopback = addr.is_some_and(|a| a.ip().is_loopback());
    let state = Arc::new(console);
    tokio::spawn(sample(state.clone(), stopping.clone()));
    let stop = stopping.clone();
    let app = Router::new()
        .route("/", get(|| async { page(INDEX, "text/html; charset=utf-8") }))
        .route("/app.js", get(|| async { page(SCRIPT, "text/javascript; charset=utf-8") }))
        .route("/style.css", get(|| async { page(STYLE, "text/css; charset=utf-8") }))
        .route("/api/overview", get(overview))
        .route("/api/agents", get(agents))
        .route("/api/agent", get(agent))
        .route("/api/result", get(result))
        .route("/api/batch", get(batch))
        .route("/api/deadletters", get(dead_letters))
        .route("/api/deadletter", get(dead_letter))
        .route("/api/deadletters/retry", post(|s, h, b| dead_letter_action(s, h, b, true)))
        .route("/api/deadletters/delete", post(|s, h, b| dead_letter_action(s, h, b, false)))
        .route("/api/pause", post(|s, h, b| pause(s, h, b, true)))
        .route("/api/resume", post(|s, h, b| pause(s, h, b, false)))
        .route("/api/elections", get(elections))
        .route("/api/elections/history", get(election_history))
        .route("/api/pools", get(pools))
        .route("/api/history", get(history))
        .route("/api/workers", get(workers))
        .route("/api/messages", get(messages))
        .route("/api/message", get(message))
        .route("/api/messages/cancel", post(cancel_messages))
        .route("/events", get(move |s, h, q| events(s, h, q, stop.clone())))
        .with_state(state)
        .layer(axum::middleware::from_fn(
            move |req: axum::extract::Request, next: axum::middleware::Next| async move {
                if loopback && !local_host(req.headers()) {
                    return ApiError(StatusCode::FORBIDDEN, "a console on loopback answers only to localhost".into())
                        .into_response();
                }
                if !matches!(req.method(), &axum::http::Method::GET | &axum::http::Method::HEAD)
                    && !same_origin(req.headers())
                {
                    return ApiError(
                        StatusCode::FORBIDDEN,
                        "a change must come from the console's own page (Origin)".into(),
                    )
                    .into_response();
                }
                next.run(req).await
            },
        ));
    tracing::info!(addr = ?addr, "console serving HTTP");
    if let Err(e) = axum::serve(listener, app).with_graceful_shutdown(stopping.cancelled_owned()).await {
        tracing::warn!(error = %e, "console stopped");
    }
}

/// Binds `console.listen`, when it is set and allowed; None (with a warning) otherwise: the
/// console is an aid, and its port being taken (say, a second replica on one host) must not
/// stop gRPC.
pub(crate) async fn bind(config: &crate::config::ConsoleConfig) -> Option<tokio::net::TcpListener> {
    if config.listen.is_empty() {
        return None;
    }
    let addr: SocketAddr = match config.listen.parse() {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!(listen = %config.listen, error = %e, "console.listen is not an address; no console");
            return None;
        }
    };
    if !addr.ip().is_loopback() && !config.allow_remote {
        tracing::warn!(%addr, "console.listen is beyond loopback and console.allow_remote is off; no console");
        return None;
    }
    match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => Some(l),
        Err(e) => {
            tracing::warn!(%addr, error = %e, "cannot listen for the console; no console");
            None
        }
    }
}

/// Whether the request names this machine (`localhost`, a loopback IP address such as
/// `127.0.0.1` or `[::1]`, any port): a page on another site that rebinds its own name to
/// 127.0.0.1 (DNS rebinding) must not reach a console on loopback, which may have no
/// authentication at all. The name is parsed, not compared by prefix: `127.0.0.1.evil.example`
/// is a DNS name, not an address.
fn local_host(headers: &HeaderMap) -> bool {
    headers.get(header::HOST).and_then(|h| h.to_str().ok()).is_some_and(is_local_authority)
}

/// Whether `authority` (`host[:port]`, an IPv6 address in brackets) names a loopback address or
/// exactly `localhost`.
fn is_local_authority(authority: &str) -> bool {
    let host = match authority.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((v6, port)) if port.is_empty() || is_port(port) => {
                return v6.parse::<std::net::Ipv6Addr>().is_ok_and(|ip| ip.is_loopback())
            }
            _ => return false,
        },
        None => match authority.rsplit_once(':') {
            Some((host, port)) if is_port(&format!(":{port}")) => host,
            Some(_) => return false,
            None => authority,
        },
    };
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

/// `:` and 1 to 5 digits.
fn is_port(s: &str) -> bool {
    s.strip_prefix(':').is_some_and(|p| (1..=5).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()))
}

/// For a request that changes something: an `Origin`, when the browser sends one, must be this
/// console itself (`http://` or `https://` and the same host and port as `Host`), so another
/// site's page cannot make the browser post to it. No `Origin` (curl, the CLI) passes: such a
/// caller is no browser carrying someone else's page.
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else { return true };
    let (Ok(origin), Some(Ok(host))) = (origin.to_str(), headers.get(header::HOST).map(|h| h.to_str())) else {
        return false;
    };
    let authority = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"));
    authority.is_some_and(|a| a.eq_ignore_ascii_case(host))
}

fn page(body: &'static str, content_type: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache")], body).into_response()
}

/// An API error: the gRPC status's meaning as an HTTP status, and its message.
struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

impl From<tonic::Status> for ApiError {
    fn from(s: tonic::Status) -> Self {
        use tonic::Code;
        let code = match s.code() {
            Code::Unauthenticated => StatusCode::UNAUTHORIZED,
            Code::PermissionDenied => StatusCode::FORBIDDEN,
            Code::InvalidArgument | Code::OutOfRange => StatusCode::BAD_REQUEST,
            Code::NotFound => StatusCode::NOT_FOUND,
            Code::FailedPrecondition | Code::AlreadyExists | Code::Aborted => StatusCode::CONFLICT,
            Code::Unavailable | Code::ResourceExhausted => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError(code, s.message().to_string())
    }
}

type ApiResult = Result<Json<Value>, ApiError>;

#[derive(Deserialize, Default)]
struct Params {
    token: Option<String>,
    queue: Option<String>,
    search: Option<String>,
    /// Text an agent's name, key, holder or labels hold (a bounded scan; see `agents`).
    filter: Option<String>,
    /// Where a page starts: the `nextPageToken` of the previous page.
    page_token: Option<String>,
    /// Rows per page (text, so a bad one is answered naming `limit`).
    limit: Option<String>,
    /// One agent's name (`/api/agent`).
    name: Option<String>,
    /// One batch (`/api/batch`).
    batch: Option<String>,
    /// Comma-separated election names.
    names: Option<String>,
    /// One election (its history).
    election: Option<String>,
    /// `/api/history`: only the samples taken after this (ms since the Unix epoch).
    since: Option<String>,
    /// A receiver (`/api/messages`, `/api/message`).
    receiver: Option<String>,
    /// `/api/messages`: "scheduled", "in-flight", or absent for both (scheduled first).
    state: Option<String>,
    /// One message's or dead letter's id (`/api/message`, `/api/deadletter`).
    id: Option<String>,
    /// A dead letter's source kind (`/api/deadletter`): queue, pool or receiver.
    kind: Option<String>,
    /// A dead letter's source name (`/api/deadletter`).
    source: Option<String>,
}

impl Console {
    /// A request for gRPC method `path` (e.g. `/baton.v1.AdminService/GetHealth`), once the
    /// caller may make it: authenticated and permitted as the gRPC server would.
    fn request<T>(
        &self,
        headers: &HeaderMap,
        token: Option<&str>,
        path: &str,
        message: T,
    ) -> Result<tonic::Request<T>, ApiError> {
        let mut probe = http::Request::builder().uri(path);
        if let Some(value) = headers.get(header::AUTHORIZATION) {
            probe = probe.header(header::AUTHORIZATION, value);
        } else if let Some(token) = token.filter(|t| !t.is_empty()) {
            probe = probe.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let probe = probe.body(()).map_err(|e| ApiError(StatusCode::BAD_REQUEST, e.to_string()))?;
        let identity = self.identities.load().check(&probe).map_err(tonic::Status::from)?;
        let mut request = tonic::Request::new(message);
        if let Some(identity) = identity {
            request.extensions_mut().insert(identity);
        }
        Ok(request)
    }

    fn writable(&self) -> Result<(), ApiError> {
        if self.read_only {
            return Err(ApiError(StatusCode::FORBIDDEN, "the console is read-only (console.read_only)".into()));
        }
        Ok(())
    }

    async fn health(&self, headers: &HeaderMap, token: Option<&str>) -> Result<pb::GetHealthResponse, ApiError> {
        let req = self.request(headers, token, "/baton.v1.AdminService/GetHealth", pb::GetHealthRequest {})?;
        Ok(self.admin.get_health(req).await?.into_inner())
    }

    async fn leader(
        &self,
        headers: &HeaderMap,
        token: Option<&str>,
        election: &str,
    ) -> Result<pb::GetLeaderResponse, ApiError> {
        let msg = pb::GetLeaderRequest { election: election.to_string() };
        let req = self.request(headers, token, "/baton.v1.LeaderService/GetLeader", msg)?;
        Ok(self.leaders.get_leader(req).await?.into_inner())
    }

    /// The overview, as the caller's scopes allow: `health`, the GetHealthResponse (only the
    /// caller's sources); `sweeper`, the GetLeaderResponse of Baton's sweeper election, null to
    /// an identity scoped to other names; `scoped`, whether the caller is limited to some names
    /// (so the history, which sums every source, is not for it either); `readOnly`; this
    /// replica's `latency` and `breakers`.
    async fn overview(&self, headers: &HeaderMap, token: Option<&str>) -> ApiResult {
        let health = self.health(headers, token).await?;
        let caller =
            crate::rpc::auth::identity(&self.request(headers, token, "/baton.v1.LeaderService/GetLeader", ())?);
        let sweeper = if crate::rpc::auth::sees(&caller, crate::rpc::auth::NameKind::Election, SWEEPER_ELECTION) {
            to_json(&self.leader(headers, token, SWEEPER_ELECTION).await?)
        } else {
            Value::Null
        };
        Ok(Json(json!({
            "readOnly": self.read_only,
            "scoped": caller.is_some_and(|c| c.scoped()),
            "health": to_json(&health),
            "sweeper": sweeper,
            "latency": latency_json(),
            "breakers": breakers_json(&self.store),
        })))
    }
}

/// This replica's circuit breakers (`crate::breaker`): per Redis node, "closed", "open" or
/// "half_open"; `dispatch` and `writeBack` are the worst state of each path over the nodes.
fn breakers_json(store: &crate::store::Core) -> Value {
    use crate::store::breaker::State;
    let states = store.breaker_states();
    let rank = |s: &State| match s {
        State::Closed => 0,
        State::HalfOpen => 1,
        State::Open => 2,
    };
    let worst = |pick: fn(&(std::sync::Arc<str>, State, State)) -> State| {
        states.iter().map(pick).max_by_key(rank).unwrap_or(State::Closed).as_str()
    };
    let nodes: Vec<Value> = states
        .iter()
        .map(|(node, d, w)| json!({ "node": node.as_ref(), "dispatch": d.as_str(), "writeBack": w.as_str() }))
        .collect();
    json!({ "dispatch": worst(|s| s.1), "writeBack": worst(|s| s.2), "nodes": nodes })
}

/// This process's RPC latency (`crate::latency`), cumulative since it started: per method the
/// calls in each bucket (bounds in `boundsSeconds`, one more bucket beyond the last), their
/// sum, and p50/p99 since the start; `atMs` to turn two snapshots into calls per second. Long
/// polls are entries of their own, "<method> (long poll)" with `longPoll`.
fn latency_json() -> Value {
    let (at_ms, methods) = crate::rpc::latency::snapshot();
    let methods: Vec<Value> = methods
        .iter()
        .map(|m| {
            let method = if m.long_poll { format!("{} (long poll)", m.method) } else { m.method.to_string() };
            json!({
                "method": method, "longPoll": m.long_poll, "calls": m.calls(), "buckets": m.buckets.to_vec(), "sumSeconds": m.sum_seconds,
                "p50Seconds": m.quantile(0.5), "p99Seconds": m.quantile(0.99),
            })
        })
        .collect();
    json!({ "atMs": at_ms, "boundsSeconds": crate::rpc::latency::BOUNDS_SECONDS.to_vec(), "methods": methods })
}

async fn overview(State(c): State<Arc<Console>>, headers: HeaderMap, Query(p): Query<Params>) -> ApiResult {
    c.overview(&headers, p.token.as_deref()).await
}

/// Whether `text` holds `search` (case-insensitive); an empty search matches everything.
fn matches(search: &str, texts: &[&str]) -> bool {
    let search = search.to_lowercase();
    search.is_empty() || texts.iter().any(|t| t.to_lowercase().contains(&search))
}

/// Rows of one console page when the caller names none.
const DEFAULT_LIMIT: u32 = 50;
/// The most rows of one console page.
const MAX_LIMIT: u32 = 500;
/// The most agents or dead letters one filtered request reads (`filter`): a filter that matches
/// little goes on from `next_page_token` on the next request rather than reading a whole queue.
const SCAN_MAX: usize = 5_000;
/// The most ListAgents calls one searched or filtered page of agents makes: a rare prefix goes
/// on from `next_page_token` on the next request.
const SEARCH_CALLS: u32 = 256;
/// The most ListDeadLetters calls one searched page of dead letters makes.
const SCAN_CALLS: usize = 100;

/// `limit`: absent means [`DEFAULT_LIMIT`]; otherwise 1 to [`MAX_LIMIT`].
fn limit(p: &Params) -> Result<u32, ApiError> {
    let Some(raw) = p.limit.as_deref().filter(|l| !l.is_empty()) else { return Ok(DEFAULT_LIMIT) };
    match raw.parse::<u32>() {
        Ok(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
        _ => Err(ApiError(
            StatusCode::BAD_REQUEST,
            format!("limit: must be a whole number from 1 to {MAX_LIMIT}, got {raw:?}"),
        )),
    }
}

/// What a queue's agents add up to by GetHealth: due, scheduled, working and dead-lettered.
fn queue_total(health: &pb::GetHealthResponse, queue: &str) -> u64 {
    health
        .sources
        .iter()
        .filter(|s| s.source.as_ref().is_some_and(|s| s.kind == pb::SourceKind::Queue as i32 && s.name == queue))
        .map(|s| s.size + s.idle + s.in_use + s.dead_lettered)
        .sum()
}

/// One page of a queue's agents (`limit`, default 50, at most 500), from `page_token`, as a
/// ListAgentsResponse (its `nextPageToken` this page's; payloads left out: the list does not
/// show them, the agent's own view does), with `count`, `countExact`, `limit` and `scanned`:
/// - no `search` or `filter`: one ListAgents page (sorted by name);
/// - `search`: the agents whose name starts with it (ListAgents `name_prefix`), paged on until
///   the page is full, the queue ends or [`SEARCH_CALLS`] ListAgents calls were made (a page of
///   a rare prefix may come back short or empty);
/// - `filter`: agents whose name, key, holder or a label's key or value holds it
///   (case-insensitive), read at most [`SCAN_MAX`] agents per request;
///   `scanned` says how many were read, and `next_page_token` goes on from there.
///
/// A page is never cut: each ListAgents call asks for at most the rows still wanted, so the
/// next page token is always one ListAgents handed out.
///
/// `count` is the number of rows when this page holds them all (the first page, with no next);
/// else the queue's total by GetHealth (due, scheduled, working, dead-lettered: not the agents
/// blocked on their parents, which GetHealth does not count; null when the caller may not call
/// GetHealth);
/// `countExact` is false when a search or filter is active and the matches span more than this
/// page (then `count` bounds them, blocked agents aside), true when `count` is the number of
/// rows to page through (blocked agents aside, on a queue of more than one page).
async fn agents(State(c): State<Arc<Console>>, headers: HeaderMap, Query(p): Query<Params>) -> ApiResult {
    let queue = p.queue.clone().unwrap_or_default();
    let token = p.token.as_deref();
    let limit = limit(&p)?;
    let search = p.search.clone().unwrap_or_default();
    if let Some(bad) = search.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))) {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            format!("search: a name prefix of [A-Za-z0-9._-]; {bad:?} is not allowed (use filter for other text)"),
        ));
    }
    let filter = p.filter.clone().unwrap_or_default();
    let started = p.page_token.clone().unwrap_or_default();
    let list = |page_token: String, page_size: u32| {
        let msg = pb::ListAgentsRequest { queue: queue.clone(), page_size, page_token, name_prefix: search.clone() };
        c.request(&headers, token, "/baton.v1.AgentService/ListAgents", msg)
    };
    let (rows, next, scanned) = if filter.is_empty() && search.is_empty() {
        let page = c.agents.list_agents(list(started.clone(), limit)?).await?.into_inner();
        let n = page.agents.len();
        (page.agents, page.next_page_token, n)
    } else {
        let mut rows = Vec::new();
        let (mut scanned, mut calls) = (0, 0);
        let mut page_token = started.clone();
        let next = loop {
            let want = limit - rows.len() as u32;
            let page = c.agents.list_agents(list(page_token, want)?).await?.into_inner();
            calls += 1;
            for a in page.agents {
                scanned += 1;
                let Some(d) = &a.agent else { continue };
                let mut texts = vec![d.name.as_str(), d.key.as_str(), a.holder.as_str()];
                texts.extend(d.labels.iter().flat_map(|(k, v)| [k.as_str(), v.as_str()]));
                if filter.is_empty() || matches(&filter, &texts) {
                    rows.push(a);
                }
            }
            if rows.len() == limit as usize
                || page.next_page_token.is_empty()
                || scanned >= SCAN_MAX
                || calls >= SEARCH_CALLS
            {
                break page.next_page_token;
            }
            page_token = page.next_page_token;
        };
        rows.sort_by(|a, b| a.agent.as_ref().map(|d| &d.name).cmp(&b.agent.as_ref().map(|d| &d.name)));
        (rows, next, scanned)
    };
    let narrowed = !search.is_empty() || !filter.is_empty();
    let whole = started.is_empty() && next.is_empty();
    let (count, exact) = if whole {
        (Some(rows.len() as u64), true)
    } else {
        // A caller who may list the queue but not call GetHealth gets its page without a count.
        let health = c.health(&headers, token).await.ok();
        (health.map(|h| queue_total(&h, &queue)), !narrowed)
    };
    let mut rows = rows;
    for a in &mut rows {
        if let Some(d) = a.agent.as_mut() {
            d.payload.clear();
        }
    }
    let mut out = to_json(&pb::ListAgentsResponse { agents: rows, next_page_token: next });
    out["count"] = json!(count);
    out["countExact"] = json!(exact);
    out["limit"] = json!(limit);
    out["scanned"] = json!(scanned);
    Ok(Json(out))
}

/// One agent: the GetAgentResponse (its definition with the payload, state, lease, the error
/// that dead-lettered it, its parents with their finishes and results, its children).
async fn agent(State(c): State<Arc<Console>>, headers: HeaderMap, Query(p): Query<Params>) -> ApiResult {
    let msg =
        pb::GetAgentRequest { queue: p.queue.clone().unwrap_or_default(), name: p.name.clone().unwrap_or_default() };
    let req = c.request(&headers, p.token.as_deref(), "/baton.v1.AgentService/GetAgent", msg)?;
    Ok(Json(to_json(&c.agents.get_agent(req).await?.into_inner())))
}

/// An agent's kept finish: the AwaitResponse, answered at once (`done` with the `result`: how
/// it finished, when, the outcome and what its worker returned). The agent page shows it for an
/// agent that is gone (a one-shot agent is removed when it finishes); NOT_FOUND when the queue
/// has no such agent and keeps no finish of it.
async fn result(State(c): State<Arc<Console>>, headers: HeaderMap, Query(p): Query<Params>) -> ApiResult {
    let msg = pb::AwaitRequest {
        queue: p.queue.clone().unwrap_or_default(),
        name: p.name.clone().unwrap_or_default(),
        wait: None,
        after_token: 0,
    };
    let req = c.request(&headers, p.token.as_deref(), "/baton.v1.AgentService/Await", msg)?;
    Ok(Json(to_json(&c.agents.r#await(req).await?.into_inner())))
}

/// One batch's counts and callbacks: the GetBatchResponse.
async fn batch(State(c): State<Arc<Console>>, headers: HeaderMap, Query(p): Query<Params>) -> ApiResult {
    let msg = pb::GetBatchRequest { batch: p.batch.clone().unwrap_or_default() };
    let req = c.request(&headers, p.token.as_deref(), "/baton.v1.AgentService/GetBatch", msg)?;
    Ok(Json(to_json(&c.agents.get_batch(req).await?.into_inner())))
}

/// `state`: absent or empty is every state (scheduled first); else "scheduled" or "in-flight".
fn message_state(p: &Params) -> Result<pb::MessageState, ApiError> {
    match p.state.as_deref().unwrap_or("") {
        "" => Ok(pb::MessageState::Unspecified),
        "scheduled" => Ok(pb::MessageState::Scheduled),
        "in-flight" => Ok(pb::MessageState::InFlight),
        other => Err(ApiError(
            StatusCode::BAD_REQUEST,
            format!("state: {other:?} is not scheduled or in-flight (or empty for both)"),
        )),
    }
}

/// One page of a receiver's messages (the ListMessagesResponse, `limit` default 50, at most 500,
/// from `page_token`): the scheduled ones by delivery time, then the in-flight ones by ack
/// deadline, or only those of `state`; with `count`, `countExact` and `limit`. `count` is the receiver's messages by GetHealth (due, scheduled and
/// in flight; null when the caller may not call GetHealth), `countExact` whether it is the
/// number of rows to page through (no `state`).
async fn messages(State(c): State<Arc<Console>>, headers: HeaderMap, Query(p): Query<Params>) -> ApiResult {
    let token = p.token.as_deref();
    let limit = limit(&p)?;
    let state = message_state(&p)?;
    let receiver = p.receiver.clone().unwrap_or_default();
    let msg = pb::ListMessagesRequest {
        receiver: receiver.clone(),
        state: state as i32,
        page_size: limit,
        page_token: p.page_token.clone().unwrap_or_default(),
        payload_bytes: 0,
    };
    let req = c.request(&headers, token, "/baton.v1.ScheduleService/ListMessages", msg)?;
    let page = c.schedules.list_messages(req).await?.into_inner();
    let count = c.health(&headers, token).await.ok().map(|h| {
        h.sources
            .iter()
            .filter(|s| {
                s.source.as_ref().is_some_and(|s| s.kind == pb::SourceKind::Receiver as i32 && s.name == receiver)
            })
            .map(|s| s.size + s.idle + s.in_use)
            .sum::<u64>()
    });
    let mut out = to_json(&page);
    out["count"] = json!(count);
    out["countExact"] = json!(state == pb::MessageState::Unspecified);
    out["limit"] = json!(limit);
    Ok(Json(out))
}

/// The most payload bytes a message's view shows (ListMessages' own bound).
const MESSAGE_PAYLOAD_SHOWN: u32 = 1024;

/// One message of a receiver, by id: its MessageInfo (state, delivery time, deliveries, key,
/// consumer, token and ack deadline while in flight, and its payload's first
/// [`MESSAGE_PAYLOAD_SHOWN`] bytes), with `scanned`. Baton has no call that reads one message by
/// id, so this reads the receiver's listing (ListMessages) in pages until it finds it, at most
/// [`SCAN_MAX`] messages: 404 when it is not among them (`scanned` says how many were read).
async fn message(State(c): State<Arc<Console>>, headers: HeaderMap, Query(p): Query<Params>) -> ApiResult {
    let token = p.token.as_deref();
    let receiver = p.receiver.clone().unwrap_or_default();
    let id = p.id.clone().unwrap_or_default();
    if id.is_empty() {
        return Err(ApiError(StatusCode::BAD_REQUEST, "id: the message's id is required".into()));
    }
    let mut page_token = String::new();
    let mut scanned = 0;
    loop {
        let msg = pb::ListMessagesRequest {
            receiver: receiver.clone(),
            state: pb::MessageState::Unspecified as i32,
            page_size: MAX_LIMIT,
            page_token,
            payload_bytes: MESSAGE_PAYLOAD_SHOWN,
        };
        let req = c.request(&headers, token, "/baton.v1.ScheduleService/ListMessages", msg)?;
        let page = c.schedules.list_messages(req).await?.into_inner();
        scanned += page.messages.len();
        if let Some(m) = page.messages.iter().find(|m| m.id == id) {
            let mut out = to_json(m);
            out["scanned"] = json!(scanned);
            return Ok(Json(out));
        }
        if page.next_page_token.is_empty() || scanned >= SCAN_MAX {
            return Err(ApiError(
                StatusCode::NOT_FOUND,
                format!("no message {id:?} among the {scanned} of receiver {receiver:?} read (acked, cancelled, dead-lettered, or further than {SCAN_MAX})"),
            ));
        }
        page_token = page.next_page_token;
    }
}

#[derive(Deserialize)]
struct Cancel {
    receiver: String,
    ids: Vec<String>,
}

/// Cancels the listed messages of a receiver, one Cancel each, going on past a refusal, and
/// answers each item's result as a dead-letter action does.
async fn cancel_messages(State(c): State<Arc<Console>>, headers: HeaderMap, Json(body): Json<Cancel>) -> ApiResult {
    c.writable()?;
    let path = "/baton.v1.ScheduleService/Cancel";
    c.request(&headers, None, path, ())?;
    let total = body.ids.len();
    let mut results = Vec::with_capacity(total);
    for id in body.ids {
        let msg = pb::CancelRequest { receiver: body.receiver.clone(), id: id.clone() };
        let outcome = match c.request(&headers, None, path, msg) {
            Ok(req) => c.schedules.cancel(req).await.map(|_| ()).map_err(ApiError::from),
            Err(e) => Err(e),
        };
        results.push(match outcome {
            Ok(()) => json!({ "id": id, "ok": true }),
            Err(ApiError(_, error)) => json!({ "id": id, "ok": false, "error": error }),
        });
    }
    let done = results.iter().filter(|r| r["ok"] == true).count();
    Ok(Json(json!({ "done": done, "failed": total - done, "total": total, "results": results })))
}

/// One page of dead letters of every source (`limit`, default 50, at most 500), from
/// `page_token`, those matching `search` (id, source, error class or message; read in pages,
/// at most [`SCAN_MAX`] per request, `scanned` saying how many), as a ListDeadLettersResponse
/// (payloads left out: the list does not show them, a dead letter's own view does) with
/// `count`, `countExact`, `limit` and `scanned`. A page never holds more than `limit` rows: each ListDeadLetters call asks only for
/// the room left (at most [`SCAN_CALLS`] calls). `count` is the dead letters of every source by
/// GetHealth (null when the caller may not call it).
async fn dead_letters(State(c): State<Arc<Console>>, headers: HeaderMap, Query(p): Query<Params>) -> ApiResult {
    let token = p.token.as_deref();
    let limit = limit(&p)?;
    let search = p.search.clone().unwrap_or_default();
    let mut rows = Vec::new();
    let mut scanned = 0;
    let mut page_token = p.page_token.clone().unwrap_or_default();
    let started = page_token.clone();
    let mut calls = 0;
    let next = loop {
        // Only as many as the page still has room for: a page token is opaque (it cannot resume
        // inside a page), so a page read is shown whole and the rows never pass `limit`.
        let page_size = limit - rows.len() as u32;
        calls += 1;
        let msg = pb::ListDeadLettersRequest { source: None, page_size, page_token };
        let req = c.request(&headers, token, "/baton.v1.AdminService/ListDeadLetters", msg)?;
        let page = c.admin.list_dead_letters(req).await?.into_inner();
        scanned += page.dead_letters.len();
        rows.extend(page.dead_letters.into_iter().filter(|d| {
            let source = d.source.as_ref().map(|s| s.name.as_str()).unwrap_or("");
            matches(&search, &[d.id.as_str(), source, d.error_class.as_str(), d.message.as_str()])
        }));
        if page.next_page_token.is_empty() || rows.len() >= limit as usize || scanned >= SCAN_MAX || calls >= SCAN_CALLS
        {
            break page.next_page_token;
        }
        page_token = page.next_page_token;
    };
    let whole = started.is_empty() && next.is_empty();
    let (count, exact) = if whole {
        (Some(rows.len() as u64), true)
    } else {
        let health = c.health(&headers, token).await.ok();
        (health.map(|h| h.sources.iter().map(|s| s.dead_lettered).sum::<u64>()), search.is_empty())
    };
    for d in &mut rows {
        d.payload.clear();
    }
    let mut out = to_json(&pb::ListDeadLettersResponse { dead_letters: rows, next_page_token: next });
    out["count"] = json!(count);
    out["countExact"] = json!(exact);
    out["limit"] = json!(limit);
    out["scanned"] = json!(scanned);
    Ok(Json(out))
}

/// One dead letter of a source, by id: its DeadLetter (where it came from, its error class and
/// message, when it failed, attempts, last holder, payload, and attributes: a resource's, or an
/// agent's labels, read from its definition by GetAgent, since an agent's dead letter does not
/// carry them), with `scanned`. Baton has no call that reads one dead letter by id, so this
/// reads the source's ListDeadLetters pages until it finds it, at most [`SCAN_MAX`] entries:
/// 404 when it is not among them.
async fn dead_letter(State(c): State<Arc<Console>>, headers: HeaderMap, Query(p): Query<Params>) -> ApiResult {
    let token = p.token.as_deref();
    let kind = kind(p.kind.as_deref().unwrap_or(""))?;
    let id = p.id.clone().unwrap_or_default();
    if id.is_empty() {
        return Err(ApiError(StatusCode::BAD_REQUEST, "id: the dead letter's id is required".into()));
    }
    let name = p.source.clone().unwrap_or_default();
    if name.is_empty() {
        return Err(ApiError(StatusCode::BAD_REQUEST, "source: the dead letter's source is required".into()));
    }
    let source = Some(pb::Source { kind: kind as i32, name });
    let mut page_token = String::new();
    let mut scanned = 0;
    loop {
        let msg = pb::ListDeadLettersRequest { source: source.clone(), page_size: MAX_LIMIT, page_token };
        let req = c.request(&headers, token, "/baton.v1.AdminService/ListDeadLetters", msg)?;
        let page = c.admin.list_dead_letters(req).await?.into_inner();
        scanned += page.dead_letters.len();
        if let Some(d) = page.dead_letters.iter().find(|d| d.id == id) {
            let mut d = d.clone();
            // An agent's dead letter does not carry its labels; its definition (which stays while
            // it is dead-lettered) does, when the caller may read it.
            if kind == pb::SourceKind::Queue && d.attributes.is_empty() {
                let name = source.as_ref().map(|s| s.name.clone()).unwrap_or_default();
                let msg = pb::GetAgentRequest { queue: name, name: id.clone() };
                if let Ok(req) = c.request(&headers, token, "/baton.v1.AgentService/GetAgent", msg) {
                    if let Ok(got) = c.agents.get_agent(req).await {
                        let def = got.into_inner().agent.and_then(|a| a.agent).unwrap_or_default();
                        d.attributes = def.labels;
                    }
                }
            }
            let mut out = to_json(&d);
            out["scanned"] = json!(scanned);
            return Ok(Json(out));
        }
        if page.next_page_token.is_empty() || scanned >= SCAN_MAX {
            let name = source.as_ref().map(|s| s.name.as_str()).unwrap_or("");
            return Err(ApiError(
                StatusCode::NOT_FOUND,
                format!("no dead letter {id:?} among the {scanned} of {name:?} read (retried, deleted, expired, or further than {SCAN_MAX})"),
            ));
        }
        page_token = page.next_page_token;
    }
}

#[derive(Deserialize)]
struct Item {
    kind: String,
    source: String,
    id: String,
}

#[derive(Deserialize)]
struct Items {
    items: Vec<Item>,
}

fn kind(name: &str) -> Result<pb::SourceKind, ApiError> {
    match name {
        "queue" => Ok(pb::SourceKind::Queue),
        "pool" => Ok(pb::SourceKind::Pool),
        "receiver" => Ok(pb::SourceKind::Receiver),
        other => Err(ApiError(StatusCode::BAD_REQUEST, format!("kind: {other:?} is not queue, pool or receiver"))),
    }
}

/// Retries (or deletes) the listed dead letters, one call each, going on past a refusal:
/// answers how many took effect and, for every item, whether it did and why not, so a bulk
/// action is never reported as all-or-nothing. Refused before any item when the caller may not
/// act at all (no token, no permission: 401/403, as for one item).
async fn dead_letter_action(
    State(c): State<Arc<Console>>,
    headers: HeaderMap,
    Json(body): Json<Items>,
    retry: bool,
) -> ApiResult {
    c.writable()?;
    let path = if retry { "/baton.v1.AdminService/RetryDeadLetter" } else { "/baton.v1.AdminService/DeleteDeadLetter" };
    c.request(&headers, None, path, ())?;
    let total = body.items.len();
    let mut results = Vec::with_capacity(total);
    for item in body.items {
        let id = item.id.clone();
        let outcome: Result<(), ApiError> = async {
            let source = Some(pb::Source { kind: kind(&item.kind)? as i32, name: item.source });
            if retry {
                let msg = pb::RetryDeadLetterRequest { source, id: item.id };
                c.admin.retry_dead_letter(c.request(&headers, None, path, msg)?).await?;
            } else {
                let msg = pb::DeleteDeadLetterRequest { source, id: item.id };
                c.admin.delete_dead_letter(c.request(&headers, None, path, msg)?).await?;
            }
            Ok(())
        }
        .await;
        results.push(match outcome {
            Ok(()) => json!({ "id": id, "ok": true }),
            Err(ApiError(_, error)) => json!({ "id": id, "ok": false, "error": error }),
        });
    }
    let done = results.iter().filter(|r| r["ok"] == true).count();
    Ok(Json(json!({ "done": done, "failed": total - done, "total": total, "results": results })))
}

#[derive(Deserialize)]
struct SourceBody {
    kind: String,
    name: String,
}

async fn pause(
    State(c): State<Arc<Console>>,
    headers: HeaderMap,
    Json(body): Json<SourceBody>,
    paused: bool,
) -> ApiResult {
    c.writable()?;
    let source = Some(pb::Source { kind: kind(&body.kind)? as i32, name: body.name });
    let changed = if paused {
        let req =
            c.request(&headers, None, "/baton.v1.AdminService/Pause", pb::PauseRequest { source, create: false })?;
        c.admin.pause(req).await?.into_inner().changed
    } else {
        let req =
            c.request(&headers, None, "/baton.v1.AdminService/Resume", pb::ResumeRequest { source, create: false })?;
        c.admin.resume(req).await?.into_inner().changed
    };
    Ok(Json(json!({ "changed": changed })))
}

/// Every election of the registry with its current term (Baton's own sweeper election first),
/// then any named in `names` that the registry does not hold (GetLeader), as one
/// ListElectionsResponse.
async fn elections(State(c): State<Arc<Console>>, headers: HeaderMap, Query(p): Query<Params>) -> ApiResult {
    /// A bound on what one page of the console shows.
    const MAX: usize = 5_000;
    let token = p.token.as_deref();
    let mut all = Vec::new();
    let mut page_token = String::new();
    loop {
        let msg = pb::ListElectionsRequest { page_size: 1000, page_token };
        let req = c.request(&headers, token, "/baton.v1.LeaderService/ListElections", msg)?;
        let page = c.leaders.list_elections(req).await?.into_inner();
        all.extend(page.elections);
        if page.next_page_token.is_empty() || all.len() >= MAX {
            break;
        }
        page_token = page.next_page_token;
    }
    all.sort_by_key(|e| e.election != SWEEPER_ELECTION);
    for n in p.names.unwrap_or_default().split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if !all.iter().any(|e| e.election == n) {
            let l = c.leader(&headers, token, n).await?;
            all.push(pb::ElectionSummary {
                election: n.to_string(),
                leader_id: l.leader_id,
                token: l.token,
                expires_at: l.expires_at,
                last_term_started_at: None,
            });
        }
    }
    Ok(Json(to_json(&pb::ListElectionsResponse { elections: all, next_page_token: String::new() })))
}

/// One election's last terms, newest first: the GetElectionHistoryResponse.
async fn election_history(State(c): State<Arc<Console>>, headers: HeaderMap, Query(p): Query<Params>) -> ApiResult {
    let msg = pb::GetElectionHistoryRequest { election: p.election.unwrap_or_default(), limit: 0 };
    let req = c.request(&headers, p.token.as_deref(), "/baton.v1.LeaderService/GetElectionHistory", msg)?;
    Ok(Json(to_json(&c.leaders.get_election_history(req).await?.into_inner())))
}

/// Every pool's counts and scale-up signal: `pools`, the PoolStatus of each GetPoolResponse.
async fn pools(State(c): State<Arc<Console>>, headers: HeaderMap, Query(p): Query<Params>) -> ApiResult {
    let token = p.token.as_deref();
    let health = c.health(&headers, token).await?;
    let mut statuses = Vec::new();
    for s in health.sources.iter().filter_map(|s| s.source.as_ref()).filter(|s| s.kind == pb::SourceKind::Pool as i32) {
        let req =
            c.request(&headers, token, "/baton.v1.ClaimService/GetPool", pb::GetPoolRequest { pool: s.name.clone() })?;
        if let Some(status) = c.claims.get_pool(req).await?.into_inner().status {
            statuses.push(status);
        }
    }
    Ok(Json(json!({ "pools": statuses.iter().map(to_json).collect::<Vec<_>>() })))
}

/// Takes a [`history::Sample`] every [`history::INTERVAL`] until `stopping` is cancelled:
/// GetHealth run in-process as the replica itself (no caller, so every source), summed over the
/// sources, and the busiest methods of this replica's latency since the previous sample. A
/// failed read (Redis down) takes no sample: the chart shows the gap.
async fn sample(c: Arc<Console>, stopping: CancellationToken) {
    let mut ticks = tokio::time::interval(history::INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut before = crate::rpc::latency::snapshot().1;
    loop {
        tokio::select! {
            _ = stopping.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let now = crate::rpc::latency::snapshot().1;
        let latency = history::busiest(&before, &now);
        before = now;
        let Ok(health) = c.admin.get_health(tonic::Request::new(pb::GetHealthRequest {})).await else { continue };
        let sources = &health.get_ref().sources;
        let at_ms =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        c.history.push(history::Sample {
            at_ms,
            throughput_per_minute: sources.iter().map(|s| s.processing_rate).sum(),
            backlog: sources.iter().map(|s| s.size).sum(),
            in_use: sources.iter().map(|s| s.in_use).sum(),
            dead_letters: sources.iter().map(|s| s.dead_lettered).sum(),
            latency,
        });
    }
}

/// The samples of [`history`] taken after `since` (ms since the Unix epoch; absent: all of
/// them, the last hour), oldest first, to whoever may call GetHealth unscoped: a sample sums
/// every source, which a token scoped to some names may not see (403).
async fn history(State(c): State<Arc<Console>>, headers: HeaderMap, Query(p): Query<Params>) -> ApiResult {
    let since = match p.since.as_deref().filter(|s| !s.is_empty()) {
        None => 0,
        Some(raw) => raw.parse::<u64>().map_err(|_| {
            ApiError(
                StatusCode::BAD_REQUEST,
                format!("since: must be a time in ms since the Unix epoch (a whole number), got {raw:?}"),
            )
        })?,
    };
    let req = c.request(&headers, p.token.as_deref(), "/baton.v1.AdminService/GetHealth", ())?;
    if crate::rpc::auth::identity(&req).is_some_and(|i| i.scoped()) {
        return Err(ApiError(
            StatusCode::FORBIDDEN,
            "the history sums every source; a token scoped to some names may not read it".into(),
        ));
    }
    Ok(Json(json!({
        "intervalSeconds": history::INTERVAL.as_secs(),
        "capacity": history::SAMPLES,
        "perReplica": true,
        "samples": c.history.since(since),
    })))
}

/// This replica's open worker connections (`crate::workers`): Session streams and long-poll
/// Acquires, with queue, worker id, credit, when each opened and when its worker last sent
/// something; at most `limit` (default 50, at most 500) and the `total` open, `untracked` those
/// beyond the registry's bound. To whoever may call GetHealth, the queues within its scopes only.
/// Per replica: a worker connected to another replica is not here.
async fn workers(State(c): State<Arc<Console>>, headers: HeaderMap, Query(p): Query<Params>) -> ApiResult {
    let limit = limit(&p)?;
    let req = c.request(&headers, p.token.as_deref(), "/baton.v1.AdminService/GetHealth", ())?;
    let identity = crate::rpc::auth::identity(&req);
    let (open, untracked) = crate::rpc::workers::snapshot();
    let seen: Vec<_> = open
        .iter()
        .filter(|w| crate::rpc::auth::sees(&identity, crate::rpc::auth::NameKind::Queue, &w.queue))
        .collect();
    let time = |ms: u64| {
        chrono::DateTime::from_timestamp_millis(ms as i64)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
    };
    let rows: Vec<Value> = seen
        .iter()
        .take(limit as usize)
        .map(|w| {
            json!({
                "kind": w.kind.as_str(), "queue": w.queue, "workerId": w.worker, "credit": w.credit(),
                "openedAt": time(w.opened_ms), "lastSeenAt": time(w.last_seen_ms()),
            })
        })
        .collect();
    Ok(Json(
        json!({ "perReplica": true, "workers": rows, "total": seen.len(), "untracked": untracked, "limit": limit }),
    ))
}

/// The overview every two seconds, as server-sent events ("overview"; "stale" with the error
/// and the breakers when a read fails), until the caller leaves or the server stops.
async fn events(
    State(c): State<Arc<Console>>,
    headers: HeaderMap,
    Query(p): Query<Params>,
    stopping: CancellationToken,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    // Refused at once when the caller may not read, rather than as an endless stream of errors.
    c.request(&headers, p.token.as_deref(), "/baton.v1.AdminService/GetHealth", ())?;
    let ticks = tokio_stream::wrappers::IntervalStream::new(tokio::time::interval(Duration::from_secs(2)));
    let stream = ticks
        .then(move |_| {
            let (c, headers, token) = (c.clone(), headers.clone(), p.token.clone());
            async move {
                // A failed read (Redis down, a breaker open) is said with this replica's breakers
                // as they are now, so the page marks what it shows as stale and never shows a
                // breaker "closed" that the server has open.
                let event = match c.overview(&headers, token.as_deref()).await {
                    Ok(Json(v)) => Event::default().event("overview").data(v.to_string()),
                    Err(ApiError(_, message)) => Event::default()
                        .event("stale")
                        .data(json!({ "error": message, "breakers": breakers_json(&c.store) }).to_string()),
                };
                Ok::<_, Infallible>(event)
            }
        })
        .take_until(stopping.cancelled_owned());
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_and_localhost_are_local() {
        for local in [
            "localhost",
            "LOCALHOST:80",
            "localhost:9465",
            "127.0.0.1",
            "127.0.0.1:9465",
            "127.1.2.3:1",
            "[::1]",
            "[::1]:9465",
        ] {
            assert!(is_local_authority(local), "{local}");
        }
        for remote in [
            "127.0.0.1.rebind.attacker.example:9465",
            "127.0.0.1.nip.io",
            "127.evil.example",
            "localhost.evil.example:9465",
            "evil.example",
            "10.0.0.1:9465",
            "[::2]:1",
            "[::1]x",
            "localhost:",
            "localhost:abc",
            "",
        ] {
            assert!(!is_local_authority(remote), "{remote}");
        }
    }
}

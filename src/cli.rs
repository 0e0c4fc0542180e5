//! The operator CLI: `baton health`, `queues`, `agents`, `dlq`, `purge`, `leaders`, `pools`,
//! `pause` and `resume` are gRPC calls to a running Baton (any replica), with TLS, a client
//! certificate and a token as for any client. Each prints a table, or with `--json` one JSON
//! document (field names as grpcurl prints them). Nothing here touches Redis.

use std::{fmt::Write as _, path::PathBuf, time::Duration};

use baton_client::{pb, Client};
use clap::{Args, Subcommand, ValueEnum};
use serde_json::{json, Value};

use crate::error::{Error, Result};

/// Where Baton is, and how to talk to it.
#[derive(Args, Clone, Debug)]
pub struct Target {
    /// Baton's gRPC address: http://host:port, or https://host:port for TLS.
    #[arg(long, env = "BATON_ADDR", default_value = "http://127.0.0.1:50051")]
    pub addr: String,
    /// API token (sent as `authorization: Bearer …`).
    #[arg(long, env = "BATON_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// CA certificate (PEM) that signed Baton's certificate; absent: the system's roots.
    #[arg(long, env = "BATON_CA_FILE")]
    pub ca_file: Option<PathBuf>,
    /// Client certificate (PEM), for mutual TLS; with --client-key.
    #[arg(long, env = "BATON_CLIENT_CERT", requires = "client_key")]
    pub client_cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, env = "BATON_CLIENT_KEY", requires = "client_cert")]
    pub client_key: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The environment variables of [`Target`], which are not server configuration.
pub const ENV: [&str; 5] = ["addr", "token", "ca_file", "client_cert", "client_key"];

/// An operator command.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Health of every queue, pool and receiver (AdminService.GetHealth).
    Health(Target),
    /// Queues: size, due, working, dead letters, limits, paused.
    Queues(Target),
    /// The agents of a queue: state, next run or deadline, holder, token, streak, key, priority.
    Agents {
        /// The queue.
        queue: String,
        #[command(flatten)]
        target: Target,
    },
    /// Dead letters: list, retry or delete.
    Dlq {
        #[command(subcommand)]
        action: Dlq,
    },
    /// Run one purge pass now (AdminService.Purge).
    Purge {
        /// Only list what would be purged.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        target: Target,
    },
    /// Elections: with no names, every election of the registry and its leader
    /// (LeaderService.ListElections); with names, their leaders (GetLeader), or with --history
    /// their last terms (GetElectionHistory).
    Leaders {
        /// Elections to show (default: every registered election).
        elections: Vec<String>,
        /// Show the named elections' last terms: leader, token, start, end and how it ended.
        #[arg(long, requires = "elections")]
        history: bool,
        #[command(flatten)]
        target: Target,
    },
    /// Pools: idle, claimed, waiting claims, oldest wait, the scale-up signal.
    Pools(Target),
    /// Pause a queue, pool or receiver: nothing is handed out until resumed.
    Pause(SourceArgs),
    /// Resume a paused queue, pool or receiver.
    Resume(SourceArgs),
}

/// A dead-letter action.
#[derive(Subcommand, Debug)]
pub enum Dlq {
    /// List dead letters, of every source or of one.
    List {
        /// Only this source's (with --name).
        #[arg(long, requires = "name")]
        kind: Option<Kind>,
        /// The source's name.
        #[arg(long, requires = "kind")]
        name: Option<String>,
        #[command(flatten)]
        target: Target,
    },
    /// Put dead letters back (agent due at once, resource idle, message scheduled now).
    Retry(DeadLetterArgs),
    /// Delete dead letters for good.
    Delete(DeadLetterArgs),
}

#[derive(Args, Debug)]
pub struct DeadLetterArgs {
    /// queue, pool or receiver.
    pub kind: Kind,
    /// Its name.
    pub name: String,
    /// Ids of the dead letters (agent names, resource ids, message ids).
    #[arg(required = true)]
    pub ids: Vec<String>,
    #[command(flatten)]
    pub target: Target,
}

#[derive(Args, Debug)]
pub struct SourceArgs {
    /// queue, pool or receiver.
    pub kind: Kind,
    /// Its name.
    pub name: String,
    #[command(flatten)]
    pub target: Target,
}

/// A kind of source.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum Kind {
    Queue,
    Pool,
    Receiver,
}

impl Kind {
    fn pb(self) -> pb::SourceKind {
        match self {
            Kind::Queue => pb::SourceKind::Queue,
            Kind::Pool => pb::SourceKind::Pool,
            Kind::Receiver => pb::SourceKind::Receiver,
        }
    }
}

/// Runs one operator command; what it prints goes to stdout.
pub async fn run(command: Command) -> Result<()> {
    let out = match command {
        Command::Health(t) => health(&connect(&t).await?, &t, None).await?,
        Command::Queues(t) => health(&connect(&t).await?, &t, Some(pb::SourceKind::Queue)).await?,
        Command::Pools(t) => pools(&connect(&t).await?, &t).await?,
        Command::Agents { queue, target } => agents(&connect(&target).await?, &target, &queue).await?,
        Command::Dlq { action: Dlq::List { kind, name, target } } => {
            let source = kind.zip(name).map(|(k, n)| source(k, &n));
            dead_letters(&connect(&target).await?, &target, source).await?
        }
        Command::Dlq { action: Dlq::Retry(a) } => dead_letter_action(&connect(&a.target).await?, &a, true).await?,
        Command::Dlq { action: Dlq::Delete(a) } => dead_letter_action(&connect(&a.target).await?, &a, false).await?,
        Command::Purge { dry_run, target } => purge(&connect(&target).await?, &target, dry_run).await?,
        Command::Leaders { elections, history: true, target } => {
            histories(&connect(&target).await?, &target, &elections).await?
        }
        Command::Leaders { elections, target, .. } if elections.is_empty() => {
            registered(&connect(&target).await?, &target).await?
        }
        Command::Leaders { elections, target, .. } => leaders(&connect(&target).await?, &target, &elections).await?,
        Command::Pause(a) => pause(&connect(&a.target).await?, &a, true).await?,
        Command::Resume(a) => pause(&connect(&a.target).await?, &a, false).await?,
    };
    print!("{out}");
    Ok(())
}

async fn connect(t: &Target) -> Result<Client> {
    let mut b = Client::builder(t.addr.clone()).timeout(Duration::from_secs(30));
    if let Some(ca) = &t.ca_file {
        b = b.ca_file(ca);
    }
    if let (Some(cert), Some(key)) = (&t.client_cert, &t.client_key) {
        b = b.client_certificate(cert, key);
    }
    if let Some(token) = &t.token {
        b = b.token(token.clone());
    }
    b.connect().await.map_err(|e| Error::Config(format!("cannot reach Baton at {}: {e}", t.addr)))
}

/// A failed call, as the operator should read it: the code and Baton's message.
fn failed(what: &str, status: tonic::Status) -> Error {
    Error::Config(format!("{what}: {:?}: {}", status.code(), status.message()))
}

fn source(kind: Kind, name: &str) -> pb::Source {
    pb::Source { kind: kind.pb() as i32, name: name.to_string() }
}

fn kind_name(kind: i32) -> &'static str {
    match pb::SourceKind::try_from(kind) {
        Ok(pb::SourceKind::Queue) => "queue",
        Ok(pb::SourceKind::Pool) => "pool",
        Ok(pb::SourceKind::Receiver) => "receiver",
        _ => "?",
    }
}

fn status_name(status: i32) -> &'static str {
    match pb::HealthStatus::try_from(status) {
        Ok(pb::HealthStatus::Healthy) => "HEALTHY",
        Ok(pb::HealthStatus::Degraded) => "DEGRADED",
        Ok(pb::HealthStatus::Unhealthy) => "UNHEALTHY",
        _ => "?",
    }
}

fn seconds(d: &Option<prost_types::Duration>) -> Option<f64> {
    d.as_ref().map(|d| d.seconds as f64 + d.nanos as f64 / 1e9)
}

fn millis(t: &Option<prost_types::Timestamp>) -> Option<i64> {
    t.as_ref().map(|t| t.seconds * 1000 + t.nanos as i64 / 1_000_000)
}

/// An instant as RFC 3339 (UTC, milliseconds), or "-" (absent, or the zero instant).
fn instant(t: &Option<prost_types::Timestamp>) -> String {
    millis(t)
        .filter(|ms| *ms != 0)
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_else(|| "-".into())
}

fn age(d: &Option<prost_types::Duration>) -> String {
    seconds(d).map(|s| format!("{s:.1}s")).unwrap_or_else(|| "-".into())
}

/// Columns aligned to their widest cell, two spaces apart.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<String>| {
        let text: Vec<String> = cells.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        let _ = writeln!(out, "{}", text.join("  ").trim_end());
    };
    line(header.iter().map(|h| h.to_string()).collect());
    for row in rows {
        line(row.clone());
    }
    out
}

fn json_out(v: Value) -> String {
    format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default())
}

fn limits_text(l: &Option<pb::QueueLimits>) -> String {
    let Some(l) = l else { return "-".into() };
    let mut parts = Vec::new();
    if l.concurrency > 0 {
        parts.push(format!("concurrency {}", l.concurrency));
    }
    if let Some(r) = &l.rate {
        parts.push(format!("rate {}/s burst {}", r.per_second, r.burst));
    }
    if l.key_concurrency > 0 {
        parts.push(format!("per key {}", l.key_concurrency));
    }
    if let Some(r) = &l.key_rate {
        parts.push(format!("per key {}/s burst {}", r.per_second, r.burst));
    }
    if l.priority_aging.is_some() {
        parts.push(format!("priority aging {}", age(&l.priority_aging)));
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

fn limits_json(l: &Option<pb::QueueLimits>) -> Value {
    let rate = |r: &Option<pb::RateLimit>| r.as_ref().map(|r| json!({"perSecond": r.per_second, "burst": r.burst}));
    match l {
        None => Value::Null,
        Some(l) => json!({
            "concurrency": l.concurrency, "rate": rate(&l.rate),
            "keyConcurrency": l.key_concurrency, "keyRate": rate(&l.key_rate),
            "priorityAgingSeconds": seconds(&l.priority_aging),
        }),
    }
}

/// GetHealth as JSON (only the sources of one kind, when given).
pub fn health_json(h: &pb::GetHealthResponse, only: Option<pb::SourceKind>) -> Value {
    let items: Vec<Value> = h
        .sources
        .iter()
        .filter(|s| only.is_none_or(|k| s.source.as_ref().is_some_and(|s| s.kind == k as i32)))
        .map(|s| {
            let (kind, name) = s.source.as_ref().map_or(("?", String::new()), |s| (kind_name(s.kind), s.name.clone()));
            json!({
                "kind": kind, "name": name, "status": status_name(s.status), "size": s.size,
                "inUse": s.in_use, "idle": s.idle, "oldestAgeSeconds": seconds(&s.oldest_age),
                "averageAgeSeconds": seconds(&s.average_age), "stuck": s.stuck,
                "deadLettered": s.dead_lettered, "processingRate": s.processing_rate, "paused": s.paused,
                "limits": limits_json(&s.limits), "rateTokens": s.rate_tokens, "reasons": s.reasons,
            })
        })
        .collect();
    json!({ "status": status_name(h.status), "checkedAt": instant(&h.checked_at), "sources": items })
}

async fn health(c: &Client, t: &Target, only: Option<pb::SourceKind>) -> Result<String> {
    let h = c.admin().get_health(pb::GetHealthRequest {}).await.map_err(|s| failed("GetHealth", s))?.into_inner();
    let sources: Vec<&pb::SourceHealth> = h
        .sources
        .iter()
        .filter(|s| only.is_none_or(|k| s.source.as_ref().is_some_and(|s| s.kind == k as i32)))
        .collect();
    let name = |s: &pb::SourceHealth| s.source.as_ref().map(|s| s.name.clone()).unwrap_or_default();
    let kind = |s: &pb::SourceHealth| kind_name(s.source.as_ref().map_or(0, |s| s.kind));
    if t.json {
        return Ok(json_out(health_json(&h, only)));
    }
    let mut out = String::new();
    if only.is_none() {
        let _ = writeln!(out, "status {} (checked {})", status_name(h.status), instant(&h.checked_at));
    }
    let queues = only == Some(pb::SourceKind::Queue);
    let header: &[&str] = if queues {
        &["QUEUE", "STATUS", "WAITING", "WORKING", "OLDEST", "STUCK", "DLQ", "RATE/MIN", "LIMITS", "PAUSED"]
    } else {
        &["KIND", "NAME", "STATUS", "SIZE", "IN USE", "IDLE", "OLDEST", "STUCK", "DLQ", "RATE/MIN", "PAUSED", "REASONS"]
    };
    let rows: Vec<Vec<String>> = sources
        .iter()
        .map(|s| {
            let paused = if s.paused { "yes" } else { "no" }.to_string();
            if queues {
                vec![
                    name(s),
                    status_name(s.status).into(),
                    s.size.to_string(),
                    s.in_use.to_string(),
                    age(&s.oldest_age),
                    s.stuck.to_string(),
                    s.dead_lettered.to_string(),
                    format!("{:.1}", s.processing_rate),
                    limits_text(&s.limits),
                    paused,
                ]
            } else {
                vec![
                    kind(s).into(),
                    name(s),
                    status_name(s.status).into(),
                    s.size.to_string(),
                    s.in_use.to_string(),
                    s.idle.to_string(),
                    age(&s.oldest_age),
                    s.stuck.to_string(),
                    s.dead_lettered.to_string(),
                    format!("{:.1}", s.processing_rate),
                    paused,
                    s.reasons.join("; "),
                ]
            }
        })
        .collect();
    out.push_str(&table(header, &rows));
    Ok(out)
}

/// Pools' GetPool answers as JSON.
pub fn pools_json(statuses: &[pb::PoolStatus]) -> Value {
    let items: Vec<Value> = statuses
        .iter()
        .map(|p| {
            json!({
                "pool": p.pool, "idle": p.idle, "claimed": p.claimed, "waitingClaims": p.waiting_claims,
                "oldestWaitSeconds": seconds(&p.oldest_wait), "scaleUpPending": p.scale_up_pending,
                "deadLettered": p.dead_lettered,
            })
        })
        .collect();
    json!({ "pools": items })
}

async fn pools(c: &Client, t: &Target) -> Result<String> {
    let h = c.admin().get_health(pb::GetHealthRequest {}).await.map_err(|s| failed("GetHealth", s))?.into_inner();
    let mut statuses = Vec::new();
    for s in h.sources.iter().filter_map(|s| s.source.as_ref()).filter(|s| s.kind == pb::SourceKind::Pool as i32) {
        let got = c
            .claims()
            .get_pool(pb::GetPoolRequest { pool: s.name.clone() })
            .await
            .map_err(|e| failed("GetPool", e))?
            .into_inner();
        if let Some(status) = got.status {
            statuses.push(status);
        }
    }
    if t.json {
        return Ok(json_out(pools_json(&statuses)));
    }
    let rows: Vec<Vec<String>> = statuses
        .iter()
        .map(|p| {
            vec![
                p.pool.clone(),
                p.idle.to_string(),
                p.claimed.to_string(),
                p.waiting_claims.to_string(),
                age(&p.oldest_wait),
                if p.scale_up_pending { "yes" } else { "no" }.into(),
                p.dead_lettered.to_string(),
            ]
        })
        .collect();
    Ok(table(&["POOL", "IDLE", "CLAIMED", "WAITING", "OLDEST WAIT", "SCALE UP", "DLQ"], &rows))
}

fn state_name(state: i32) -> &'static str {
    match pb::AgentState::try_from(state) {
        Ok(pb::AgentState::Waiting) => "waiting",
        Ok(pb::AgentState::Working) => "working",
        Ok(pb::AgentState::DeadLettered) => "dead-lettered",
        _ => "detached",
    }
}

/// A queue's agents as JSON.
pub fn agents_json(queue: &str, agents: &[pb::AgentStatus]) -> Value {
    let items: Vec<Value> = agents
        .iter()
        .map(|a| {
            let d = a.agent.clone().unwrap_or_default();
            json!({
                "name": d.name, "state": state_name(a.state),
                "nextRunAt": millis(&a.next_run_at).map(|_| instant(&a.next_run_at)),
                "deadline": millis(&a.deadline).map(|_| instant(&a.deadline)), "holder": a.holder, "token": a.token,
                "failureStreak": a.failure_streak, "key": d.key, "priority": d.priority, "progress": a.progress,
                "cancelRequested": a.cancel_requested, "labels": d.labels,
            })
        })
        .collect();
    json!({ "queue": queue, "agents": items })
}

/// Every agent of a queue, page by page.
pub async fn all_agents(c: &Client, queue: &str) -> Result<Vec<pb::AgentStatus>> {
    let mut all = Vec::new();
    let mut page_token = String::new();
    loop {
        let page = c
            .agents()
            .list_agents(pb::ListAgentsRequest { queue: queue.into(), page_size: 500, page_token })
            .await
            .map_err(|s| failed("ListAgents", s))?
            .into_inner();
        all.extend(page.agents);
        if page.next_page_token.is_empty() {
            return Ok(all);
        }
        page_token = page.next_page_token;
    }
}

async fn agents(c: &Client, t: &Target, queue: &str) -> Result<String> {
    let all = all_agents(c, queue).await?;
    let def = |a: &pb::AgentStatus| a.agent.clone().unwrap_or_default();
    if t.json {
        return Ok(json_out(agents_json(queue, &all)));
    }
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|a| {
            let d = def(a);
            let working = a.state == pb::AgentState::Working as i32;
            vec![
                d.name,
                state_name(a.state).into(),
                if working { instant(&a.deadline) } else { instant(&a.next_run_at) },
                if working { a.holder.clone() } else { "-".into() },
                if working { a.token.to_string() } else { "-".into() },
                a.failure_streak.to_string(),
                if d.key.is_empty() { "-".into() } else { d.key },
                d.priority.to_string(),
            ]
        })
        .collect();
    Ok(table(&["NAME", "STATE", "NEXT RUN / DEADLINE", "HOLDER", "TOKEN", "STREAK", "KEY", "PRIORITY"], &rows))
}

fn source_of(d: &pb::DeadLetter) -> (&'static str, String) {
    d.source.as_ref().map(|s| (kind_name(s.kind), s.name.clone())).unwrap_or(("?", String::new()))
}

/// Dead letters as JSON.
pub fn dead_letters_json(all: &[pb::DeadLetter]) -> Value {
    let items: Vec<Value> = all
        .iter()
        .map(|d| {
            let (kind, name) = source_of(d);
            json!({
                "kind": kind, "source": name, "id": d.id, "errorClass": d.error_class, "message": d.message,
                "failedAt": instant(&d.failed_at), "attempts": d.attempts, "holder": d.holder,
            })
        })
        .collect();
    json!({ "deadLetters": items })
}

async fn dead_letters(c: &Client, t: &Target, source: Option<pb::Source>) -> Result<String> {
    let mut all = Vec::new();
    let mut page_token = String::new();
    loop {
        let page = c
            .admin()
            .list_dead_letters(pb::ListDeadLettersRequest { source: source.clone(), page_size: 500, page_token })
            .await
            .map_err(|s| failed("ListDeadLetters", s))?
            .into_inner();
        all.extend(page.dead_letters);
        if page.next_page_token.is_empty() {
            break;
        }
        page_token = page.next_page_token;
    }
    if t.json {
        return Ok(json_out(dead_letters_json(&all)));
    }
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|d| {
            let (kind, name) = source_of(d);
            vec![
                kind.into(),
                name,
                d.id.clone(),
                d.error_class.clone(),
                d.attempts.to_string(),
                instant(&d.failed_at),
                d.message.chars().take(80).collect(),
            ]
        })
        .collect();
    Ok(table(&["KIND", "SOURCE", "ID", "ERROR", "ATTEMPTS", "FAILED AT", "MESSAGE"], &rows))
}

async fn dead_letter_action(c: &Client, a: &DeadLetterArgs, retry: bool) -> Result<String> {
    let verb = if retry { "retried" } else { "deleted" };
    let mut done = Vec::new();
    for id in &a.ids {
        let source = Some(source(a.kind, &a.name));
        let result = if retry {
            c.admin().retry_dead_letter(pb::RetryDeadLetterRequest { source, id: id.clone() }).await.map(|_| ())
        } else {
            c.admin().delete_dead_letter(pb::DeleteDeadLetterRequest { source, id: id.clone() }).await.map(|_| ())
        };
        result
            .map_err(|s| failed(&format!("{} {id}", if retry { "RetryDeadLetter" } else { "DeleteDeadLetter" }), s))?;
        done.push(id.clone());
    }
    if a.target.json {
        return Ok(json_out(json!({ verb: done })));
    }
    Ok(done.iter().map(|id| format!("{verb} {id}\n")).collect())
}

async fn purge(c: &Client, t: &Target, dry_run: bool) -> Result<String> {
    let p = c.admin().purge(pb::PurgeRequest { dry_run }).await.map_err(|s| failed("Purge", s))?.into_inner();
    let src = |i: &pb::PurgedItem| {
        i.source.as_ref().map(|s| (kind_name(s.kind), s.name.clone())).unwrap_or(("?", String::new()))
    };
    if t.json {
        let items: Vec<Value> = p
            .items
            .iter()
            .map(|i| {
                let (kind, name) = src(i);
                json!({"kind": kind, "source": name, "id": i.id, "reason": i.reason, "action": i.action})
            })
            .collect();
        return Ok(json_out(json!({ "dryRun": p.dry_run, "items": items })));
    }
    let mut out = format!(
        "{} item(s){}\n",
        p.items.len(),
        if p.dry_run { " would be purged (dry run: nothing changed)" } else { " purged" }
    );
    let rows: Vec<Vec<String>> = p
        .items
        .iter()
        .map(|i| {
            let (kind, name) = src(i);
            vec![kind.into(), name, i.id.clone(), i.action.clone(), i.reason.clone()]
        })
        .collect();
    if !rows.is_empty() {
        out.push_str(&table(&["KIND", "SOURCE", "ID", "ACTION", "REASON"], &rows));
    }
    Ok(out)
}

/// Elections' GetLeader answers as JSON.
pub fn leaders_json(found: &[(String, pb::GetLeaderResponse)]) -> Value {
    let items: Vec<Value> = found
        .iter()
        .map(|(e, l)| {
            json!({
                "election": e, "leaderId": l.leader_id, "token": l.token,
                "expiresAt": millis(&l.expires_at).map(|_| instant(&l.expires_at)),
            })
        })
        .collect();
    json!({ "elections": items })
}

async fn leaders(c: &Client, t: &Target, elections: &[String]) -> Result<String> {
    let mut found = Vec::new();
    for e in elections {
        let l = c
            .leaders()
            .get_leader(pb::GetLeaderRequest { election: e.clone() })
            .await
            .map_err(|s| failed(&format!("GetLeader {e}"), s))?
            .into_inner();
        found.push((e.clone(), l));
    }
    if t.json {
        return Ok(json_out(leaders_json(&found)));
    }
    let rows: Vec<Vec<String>> = found
        .iter()
        .map(|(e, l)| {
            let leader = if l.leader_id.is_empty() { "(none)".to_string() } else { l.leader_id.clone() };
            vec![e.clone(), leader, l.token.to_string(), instant(&l.expires_at)]
        })
        .collect();
    Ok(table(&["ELECTION", "LEADER", "TERM TOKEN", "EXPIRES"], &rows))
}

/// ListElections answers as JSON: each election, its current term, when its last term began.
pub fn elections_json(all: &[pb::ElectionSummary]) -> Value {
    let items: Vec<Value> = all
        .iter()
        .map(|e| {
            json!({
                "election": e.election, "leaderId": e.leader_id, "token": e.token,
                "expiresAt": millis(&e.expires_at).map(|_| instant(&e.expires_at)),
                "lastTermStartedAt": millis(&e.last_term_started_at).map(|_| instant(&e.last_term_started_at)),
            })
        })
        .collect();
    json!({ "elections": items })
}

/// Every election of the registry, page by page.
pub async fn all_elections(c: &Client) -> Result<Vec<pb::ElectionSummary>> {
    let mut all = Vec::new();
    let mut page_token = String::new();
    loop {
        let page = c
            .leaders()
            .list_elections(pb::ListElectionsRequest { page_size: 500, page_token })
            .await
            .map_err(|s| failed("ListElections", s))?
            .into_inner();
        all.extend(page.elections);
        if page.next_page_token.is_empty() {
            return Ok(all);
        }
        page_token = page.next_page_token;
    }
}

async fn registered(c: &Client, t: &Target) -> Result<String> {
    let all = all_elections(c).await?;
    if t.json {
        return Ok(json_out(elections_json(&all)));
    }
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|e| {
            let leader = if e.leader_id.is_empty() { "(none)".to_string() } else { e.leader_id.clone() };
            let token = if e.token == 0 { "-".to_string() } else { e.token.to_string() };
            vec![e.election.clone(), leader, token, instant(&e.expires_at), instant(&e.last_term_started_at)]
        })
        .collect();
    Ok(table(&["ELECTION", "LEADER", "TERM TOKEN", "EXPIRES", "LAST TERM STARTED"], &rows))
}

/// How a term ended, as the console and `--json` name it.
fn term_end(t: &pb::ElectionTerm) -> &'static str {
    match (pb::TermEnd::try_from(t.end), t.ended_at.is_some()) {
        (Ok(pb::TermEnd::Resigned), _) => "resigned",
        (Ok(pb::TermEnd::Expired), _) => "expired",
        (Ok(pb::TermEnd::Superseded), _) => "superseded",
        (_, false) => "current",
        (_, true) => "ended",
    }
}

/// GetElectionHistory's answer as JSON.
pub fn history_json(election: &str, terms: &[pb::ElectionTerm]) -> Value {
    let items: Vec<Value> = terms
        .iter()
        .map(|t| {
            json!({
                "token": t.token, "leaderId": t.leader_id, "startedAt": instant(&t.started_at),
                "endedAt": millis(&t.ended_at).map(|_| instant(&t.ended_at)), "end": term_end(t),
                "expiresAt": millis(&t.expires_at).map(|_| instant(&t.expires_at)),
            })
        })
        .collect();
    json!({ "election": election, "terms": items })
}

async fn histories(c: &Client, t: &Target, elections: &[String]) -> Result<String> {
    let mut found = Vec::new();
    for e in elections {
        let h = c
            .leaders()
            .get_election_history(pb::GetElectionHistoryRequest { election: e.clone(), limit: 0 })
            .await
            .map_err(|s| failed(&format!("GetElectionHistory {e}"), s))?
            .into_inner();
        found.push((e, h.terms));
    }
    if t.json {
        let all: Vec<Value> = found.iter().map(|(e, terms)| history_json(e, terms)).collect();
        return Ok(json_out(json!({ "histories": all })));
    }
    let mut out = String::new();
    for (i, (e, terms)) in found.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = writeln!(out, "election {e}: {} term(s) kept", terms.len());
        let rows: Vec<Vec<String>> = terms
            .iter()
            .map(|t| {
                let until = if t.ended_at.is_some() { instant(&t.ended_at) } else { instant(&t.expires_at) };
                vec![t.token.to_string(), t.leader_id.clone(), instant(&t.started_at), until, term_end(t).into()]
            })
            .collect();
        out.push_str(&table(&["TOKEN", "LEADER", "STARTED", "ENDED / EXPIRES", "HOW"], &rows));
    }
    Ok(out)
}

async fn pause(c: &Client, a: &SourceArgs, paused: bool) -> Result<String> {
    let source = Some(source(a.kind, &a.name));
    let changed = if paused {
        c.admin().pause(pb::PauseRequest { source }).await.map_err(|s| failed("Pause", s))?.into_inner().changed
    } else {
        c.admin().resume(pb::ResumeRequest { source }).await.map_err(|s| failed("Resume", s))?.into_inner().changed
    };
    let verb = if paused { "paused" } else { "resumed" };
    let kind = kind_name(a.kind.pb() as i32);
    if a.target.json {
        return Ok(json_out(json!({ "kind": kind, "name": a.name, verb: true, "changed": changed })));
    }
    Ok(if changed { format!("{kind} {} {verb}\n", a.name) } else { format!("{kind} {} was already {verb}\n", a.name) })
}

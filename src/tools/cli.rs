//! The operator CLI: `baton probe`, `health`, `queues`, `agents`, `agent`, `cancel`, `limits`, `dlq`,
//! `purge`, `leaders`, `pools`, `pause` and `resume` are gRPC calls to a running Baton (any replica), with TLS, a client
//! certificate and a token as for any client. Each prints a table, or with `--json` one JSON
//! document: the answer in Baton's one JSON mapping (`web::to_json`: proto3 JSON, as grpcurl and
//! the JSON calls on the gRPC port print it; a listing read in pages is one answer holding every
//! page's items). Nothing here touches Redis.

use std::{fmt::Write as _, path::PathBuf, time::Duration};

use baton_client::{pb, Client};
use clap::{Args, Subcommand, ValueEnum};
use serde_json::{json, Value};

use crate::edge::web::to_json;

/// What an operator command can fail with. Runtime failures say what failed and how, never
/// "invalid configuration" (that is `baton serve`'s word for a bad configuration).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Baton could not be reached (or the target is malformed).
    #[error("cannot reach Baton at {addr}: {detail}")]
    Unreachable { addr: String, detail: String },
    /// Baton answered a call with an error.
    #[error("{what}: {code:?}: {message}")]
    Call { what: String, code: tonic::Code, message: String },
    /// A change whose answer never came: Baton may or may not have applied it.
    #[error(
        "{what}: no answer ({code:?}: {message}); it may or may not have taken effect: check, and run the \
         command again (it is safe to repeat)"
    )]
    Unknown { what: String, code: tonic::Code, message: String },
    /// Some items of a multi-item command failed (the others took effect; each is listed).
    #[error("{failed} of {total} failed (the other {done} took effect; each is listed above)")]
    Partial { done: usize, failed: usize, total: usize },
    /// Baton answered, and is not serving (shutting down, or Redis unreachable).
    #[error("{0} is not serving: {1}")]
    NotServing(String, String),
    /// An argument the server was never asked about.
    #[error("{0}")]
    Usage(String),
    /// Awaited work did not finish in time.
    #[error("{0}")]
    NotFinished(String),
}

type Result<T> = std::result::Result<T, CliError>;

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

/// An operator command.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Is Baton serving? grpc.health.v1 Check, the question Kubernetes' and the image's health
    /// checks ask: prints SERVING and exits 0, or exits 1. Needs no token.
    Probe {
        /// The service to ask about ("" is the whole server, or e.g. baton.v1.AgentService).
        #[arg(long, default_value = "")]
        service: String,
        /// Give up after this long (milliseconds).
        #[arg(long, default_value_t = 3000)]
        timeout_ms: u64,
        #[command(flatten)]
        target: Target,
    },
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
    /// One agent in full: definition, state, holder, token, streak, progress, its run's steps
    /// (GetAgent).
    Agent {
        /// The queue.
        queue: String,
        /// The agent's name.
        name: String,
        #[command(flatten)]
        target: Target,
    },
    /// Wait for an agent to finish and print how (AgentService.Await): succeeded,
    /// dead-lettered, cancelled, unregistered or expired, with its outcome and result. Exits 1 when it
    /// has not finished within --wait-ms.
    Await {
        /// The queue.
        queue: String,
        /// The agent's name.
        name: String,
        /// How long to wait (milliseconds; 0: answer at once).
        #[arg(long, default_value_t = 0)]
        wait_ms: u64,
        #[command(flatten)]
        target: Target,
    },
    /// Follow an agent's run (AgentService.WatchAgent): a snapshot, then each grant, progress
    /// and step as it happens, one line each (--json: one JSON object per line), until the
    /// finish, printed as `baton await` prints it. Exits 1 when it has not finished within
    /// --wait-ms.
    Watch {
        /// The queue.
        queue: String,
        /// The agent's name.
        name: String,
        /// How long to follow it (milliseconds; 0: as long as the server lets a stream wait).
        #[arg(long, default_value_t = 0)]
        wait_ms: u64,
        #[command(flatten)]
        target: Target,
    },
    /// A batch's counts: members total, pending, succeeded, failed; closed, done; its
    /// callbacks (AgentService.GetBatch). --close closes it first (CloseBatch).
    Batch {
        /// The batch.
        batch: String,
        /// Close the batch: no member may be added; it is done once its members finished.
        #[arg(long)]
        close: bool,
        #[command(flatten)]
        target: Target,
    },
    /// Deliver an event to an agent (AgentService.Signal): an agent waiting for it is due at
    /// once, its next lease carrying the event; otherwise it is kept for the wait that names it.
    Signal {
        /// The queue.
        queue: String,
        /// The agent's name.
        name: String,
        /// The event's name.
        event: String,
        /// The event's payload (text).
        #[arg(long, default_value = "")]
        payload: String,
        #[command(flatten)]
        target: Target,
    },
    /// Ask the holder of an agent's current run to stop it (AgentService.CancelRun): the run
    /// ends at the holder's next heartbeat. --cascade also cancels its descendants.
    Cancel {
        /// The queue.
        queue: String,
        /// The agent's name.
        name: String,
        /// Also cancel the agent's descendants in every queue (its children, theirs, ...),
        /// whatever their on_parent_failure policy; running ones at their next heartbeat.
        #[arg(long)]
        cascade: bool,
        #[command(flatten)]
        target: Target,
    },
    /// Show a queue's flow-control limits, or change the ones given (AdminService.SetLimits);
    /// the others stay. 0 removes a limit; --clear removes them all.
    Limits(LimitsArgs),
    /// Per-key weights and overrides of a queue (AdminService.SetKeyLimits, GetKeyLimits,
    /// ListKeyLimits), and a recount of the leases each key holds (RecountKeys).
    Keys {
        #[command(subcommand)]
        action: Keys,
    },
    /// Shared concurrency groups: limits over several queues together (AdminService.SetGroupLimits,
    /// GetGroupLimits, ListGroupLimits); a queue joins with `baton limits QUEUE --group NAME`.
    Group {
        #[command(subcommand)]
        action: Group,
    },
    /// A receiver's messages: list the scheduled and in-flight ones, or cancel some.
    Messages {
        #[command(subcommand)]
        action: Messages,
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

/// A per-key action.
#[derive(Subcommand, Debug)]
pub enum Keys {
    /// List the keys with a weight or overrides, in key order, with the leases each holds.
    List {
        /// The queue.
        queue: String,
        #[command(flatten)]
        target: Target,
    },
    /// Show one key's weight, overrides and the leases it holds.
    Show {
        /// The queue.
        queue: String,
        /// The key (Agent.key).
        key: String,
        #[command(flatten)]
        target: Target,
    },
    /// Change the given weight or overrides of a key; the others stay. --clear returns the key
    /// to the queue's defaults.
    Set(KeySetArgs),
    /// Recount the leases each key holds from the lease records and correct the counts.
    Recount {
        /// The queue.
        queue: String,
        #[command(flatten)]
        target: Target,
    },
}

#[derive(Subcommand, Debug)]
pub enum Group {
    /// List the groups, in name order, with their limits and the leases held under each.
    List {
        #[command(flatten)]
        target: Target,
    },
    /// Show one group's limits and the leases held under it.
    Show {
        /// The group.
        group: String,
        #[command(flatten)]
        target: Target,
    },
    /// Create a group or change the limits given; the others stay. 0 removes a limit.
    Set(GroupSetArgs),
}

#[derive(Args, Debug)]
pub struct GroupSetArgs {
    /// The group.
    pub group: String,
    /// Most leases held at once over every member queue (0: no limit).
    #[arg(long)]
    pub concurrency: Option<u32>,
    /// Grants per second over every member queue (0: no limit).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Most grants at once from a full bucket (with --rate).
    #[arg(long, requires = "rate")]
    pub burst: Option<u32>,
    /// Most leases held at once by the agents of one key over every member queue (0: no limit).
    #[arg(long)]
    pub key_concurrency: Option<u32>,
    #[command(flatten)]
    pub target: Target,
}

#[derive(Args, Debug)]
pub struct KeySetArgs {
    /// The queue.
    pub queue: String,
    /// The key (Agent.key).
    pub key: String,
    /// Share of the fair queuing across keys, 1 to 1000 (default 1).
    #[arg(long)]
    pub weight: Option<u32>,
    /// Most leases the key holds at once, in place of the queue's key_concurrency (0: no limit
    /// for this key).
    #[arg(long, conflicts_with = "queue_concurrency")]
    pub concurrency: Option<u32>,
    /// Take the queue's key_concurrency again.
    #[arg(long)]
    pub queue_concurrency: bool,
    /// Grants per second for this key, in place of the queue's key_rate (0: the queue's again).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Burst of the key's bucket (with --rate).
    #[arg(long, requires = "rate")]
    pub burst: Option<u32>,
    /// Return the key to the queue's defaults.
    #[arg(long, conflicts_with_all = ["weight", "concurrency", "rate"])]
    pub clear: bool,
    #[command(flatten)]
    pub target: Target,
}

/// A scheduled-message action.
#[derive(Subcommand, Debug)]
pub enum Messages {
    /// List a receiver's messages (ScheduleService.ListMessages): scheduled ones by delivery
    /// time, then in-flight ones with their consumer.
    List {
        /// The receiver.
        receiver: String,
        /// Only these: scheduled or in-flight (default: both).
        #[arg(long)]
        state: Option<MessageStateArg>,
        /// Show at most this many.
        #[arg(long, default_value_t = 100)]
        limit: usize,
        #[command(flatten)]
        target: Target,
    },
    /// Cancel messages (ScheduleService.Cancel): each id's result is printed.
    Cancel {
        /// The receiver.
        receiver: String,
        /// Message ids.
        #[arg(required = true)]
        ids: Vec<String>,
        #[command(flatten)]
        target: Target,
    },
}

/// A message state to list.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum MessageStateArg {
    Scheduled,
    InFlight,
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
pub struct LimitsArgs {
    /// The queue.
    pub queue: String,
    /// Most leases held at once across the fleet (0: no limit).
    #[arg(long)]
    pub concurrency: Option<u32>,
    /// Grants per second, on average (0: no limit).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Most grants at once from a full bucket (with --rate; default: the rate, at least 1).
    #[arg(long, requires = "rate")]
    pub burst: Option<u32>,
    /// Most leases held at once by the agents of one key (0: no limit).
    #[arg(long)]
    pub key_concurrency: Option<u32>,
    /// Grants per second per key (0: no limit).
    #[arg(long)]
    pub key_rate: Option<f64>,
    /// Burst of each key's bucket (with --key-rate).
    #[arg(long, requires = "key_rate")]
    pub key_burst: Option<u32>,
    /// Join a shared concurrency group (`baton group set`); "" leaves the group.
    #[arg(long)]
    pub group: Option<String>,
    /// Remove every limit (and leave the group).
    #[arg(long, conflicts_with_all = ["concurrency", "rate", "key_concurrency", "key_rate", "group"])]
    pub clear: bool,
    /// Declare the queue if nothing was registered in it yet (configure it before its first
    /// producer); without it an unknown queue is an error.
    #[arg(long)]
    pub create: bool,
    #[command(flatten)]
    pub target: Target,
}

#[derive(Args, Debug)]
pub struct SourceArgs {
    /// queue, pool or receiver.
    pub kind: Kind,
    /// Its name.
    pub name: String,
    /// Declare the source if it is unknown (configure it before its first item); without it an
    /// unknown source is an error.
    #[arg(long)]
    pub create: bool,
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
        Command::Probe { service, timeout_ms, target } => probe(&target, &service, timeout_ms).await?,
        Command::Health(t) => health(&connect(&t).await?, &t, None).await?,
        Command::Queues(t) => health(&connect(&t).await?, &t, Some(pb::SourceKind::Queue)).await?,
        Command::Pools(t) => pools(&connect(&t).await?, &t).await?,
        Command::Agents { queue, target } => agents(&connect(&target).await?, &target, &queue).await?,
        Command::Agent { queue, name, target } => agent(&connect(&target).await?, &target, &queue, &name).await?,
        Command::Cancel { queue, name, cascade, target } => {
            cancel(&connect(&target).await?, &target, &queue, &name, cascade).await?
        }
        Command::Signal { queue, name, event, payload, target } => {
            signal(&connect(&target).await?, &target, &queue, &name, &event, payload).await?
        }
        Command::Await { queue, name, wait_ms, target } => {
            await_agent(&connect(&target).await?, &target, &queue, &name, wait_ms).await?
        }
        Command::Watch { queue, name, wait_ms, target } => {
            watch_agent(&connect(&target).await?, &target, &queue, &name, wait_ms).await?
        }
        Command::Batch { batch, close, target } => batch_cmd(&connect(&target).await?, &target, &batch, close).await?,
        Command::Limits(a) => limits(&connect(&a.target).await?, &a).await?,
        Command::Keys { action: Keys::List { queue, target } } => {
            keys_list(&connect(&target).await?, &target, &queue).await?
        }
        Command::Keys { action: Keys::Show { queue, key, target } } => {
            let c = connect(&target).await?;
            let msg = pb::GetKeyLimitsRequest { queue: queue.clone(), key };
            let e = c.admin().get_key_limits(msg).await.map_err(|s| failed("GetKeyLimits", s))?.into_inner();
            keys_out(&target, &queue, &e.key_limits.into_iter().collect::<Vec<_>>())?
        }
        Command::Keys { action: Keys::Set(a) } => keys_set(&connect(&a.target).await?, &a).await?,
        Command::Group { action: Group::List { target } } => {
            let c = connect(&target).await?;
            let mut groups = Vec::new();
            let mut token = String::new();
            loop {
                let msg = pb::ListGroupLimitsRequest { page_size: 1000, page_token: token };
                let page =
                    c.admin().list_group_limits(msg).await.map_err(|s| failed("ListGroupLimits", s))?.into_inner();
                groups.extend(page.groups);
                if page.next_page_token.is_empty() {
                    break;
                }
                token = page.next_page_token;
            }
            groups_out(&target, &groups)?
        }
        Command::Group { action: Group::Show { group, target } } => {
            let c = connect(&target).await?;
            let msg = pb::GetGroupLimitsRequest { group };
            let g = c.admin().get_group_limits(msg).await.map_err(|s| failed("GetGroupLimits", s))?.into_inner();
            groups_out(&target, &g.group.into_iter().collect::<Vec<_>>())?
        }
        Command::Group { action: Group::Set(a) } => group_set(&connect(&a.target).await?, &a).await?,
        Command::Keys { action: Keys::Recount { queue, target } } => {
            let c = connect(&target).await?;
            let msg = pb::RecountKeysRequest { queue: queue.clone() };
            let r = idempotent("RecountKeys", || {
                let (mut admin, msg) = (c.admin(), msg.clone());
                async move { admin.recount_keys(msg).await }
            })
            .await?;
            if target.json {
                json_out(json!({ "queue": queue, "leases": r.leases, "corrected": r.corrected }))
            } else {
                format!("{queue}: {} keyed leases counted, {} keys corrected\n", r.leases, r.corrected)
            }
        }
        Command::Messages { action: Messages::List { receiver, state, limit, target } } => {
            messages(&connect(&target).await?, &target, &receiver, state, limit).await?
        }
        Command::Messages { action: Messages::Cancel { receiver, ids, target } } => {
            cancel_messages(&connect(&target).await?, &target, &receiver, &ids).await?
        }
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

/// `baton probe`: grpc.health.v1 Check within `timeout_ms`, connecting included.
async fn probe(t: &Target, service: &str, timeout_ms: u64) -> Result<String> {
    use tonic_health::pb::{health_check_response::ServingStatus, health_client::HealthClient, HealthCheckRequest};
    let limit = Duration::from_millis(timeout_ms);
    let checked = tokio::time::timeout(limit, async {
        let channel = connect(t).await?.channel();
        let request = HealthCheckRequest { service: service.to_string() };
        HealthClient::new(channel).check(request).await.map_err(|s| failed("Check", s))
    })
    .await
    .map_err(|_| CliError::Unreachable {
        addr: t.addr.clone(),
        detail: format!("no answer within {timeout_ms} ms"),
    })??;
    match ServingStatus::try_from(checked.into_inner().status) {
        Ok(ServingStatus::Serving) => Ok("SERVING\n".into()),
        status => Err(CliError::NotServing(
            if service.is_empty() { t.addr.clone() } else { service.to_string() },
            status.map_or("UNKNOWN".into(), |s| s.as_str_name().to_string()),
        )),
    }
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
    b.connect().await.map_err(|e| CliError::Unreachable { addr: t.addr.clone(), detail: error_chain(&*e) })
}

/// An error and its causes, one after the other (tonic's transport errors say little alone).
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        cause = c.source();
    }
    text
}

/// A failed call, as the operator should read it: the code and Baton's message.
fn failed(what: &str, status: tonic::Status) -> CliError {
    CliError::Call { what: what.to_string(), code: status.code(), message: status.message().to_string() }
}

/// Whether a failed call's outcome is unknown: it may have been applied before the answer was
/// lost (a timeout, a connection that broke, a replica that stopped).
fn outcome_unknown(status: &tonic::Status) -> bool {
    matches!(status.code(), tonic::Code::Unavailable | tonic::Code::DeadlineExceeded | tonic::Code::Cancelled)
        && !status.message().starts_with("circuit breaker")
}

/// Runs an idempotent change (setting a state, not adding to one: pause, resume, limits), trying
/// again while its outcome is unknown, with backoff; after the last try says the outcome is
/// unknown rather than that it failed, since Baton may have applied it.
async fn idempotent<T, F, Fut>(what: &str, mut call: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = std::result::Result<tonic::Response<T>, tonic::Status>>,
{
    const TRIES: u32 = 4;
    let mut backoff = crate::client::Backoff::between(Duration::from_millis(200), Duration::from_secs(2));
    for attempt in 1..=TRIES {
        match call().await {
            Ok(answer) => return Ok(answer.into_inner()),
            Err(s) if outcome_unknown(&s) || s.code() == tonic::Code::Unavailable => {
                if attempt == TRIES {
                    let (code, message) = (s.code(), s.message().to_string());
                    return Err(if outcome_unknown(&s) {
                        CliError::Unknown { what: what.to_string(), code, message }
                    } else {
                        CliError::Call { what: what.to_string(), code, message }
                    });
                }
                tokio::time::sleep(backoff.after(&s).min(Duration::from_secs(5))).await;
            }
            Err(s) => return Err(failed(what, s)),
        }
    }
    unreachable!("the last try returns")
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
    if !l.group.is_empty() {
        parts.push(format!("group {}", l.group));
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
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
        // The GetHealthResponse, holding only the sources of the kind asked for.
        let only = pb::GetHealthResponse { sources: sources.into_iter().cloned().collect(), ..h };
        return Ok(json_out(to_json(&only)));
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
        // `pools`: each GetPoolResponse's PoolStatus.
        return Ok(json_out(json!({ "pools": statuses.iter().map(to_json).collect::<Vec<_>>() })));
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
        Ok(pb::AgentState::Blocked) => "blocked",
        Ok(pb::AgentState::WaitingForEvent) => "waiting for event",
        _ => "detached",
    }
}

/// Every agent of a queue, page by page, in name order (a name listed twice, which ListAgents
/// allows when the queue changes size between pages, is shown once).
pub async fn all_agents(c: &Client, queue: &str) -> Result<Vec<pb::AgentStatus>> {
    let mut all = Vec::new();
    let mut page_token = String::new();
    loop {
        let page = c
            .agents()
            .list_agents(pb::ListAgentsRequest {
                queue: queue.into(),
                page_size: 500,
                page_token,
                name_prefix: String::new(),
            })
            .await
            .map_err(|s| failed("ListAgents", s))?
            .into_inner();
        all.extend(page.agents);
        if page.next_page_token.is_empty() {
            let name = |a: &pb::AgentStatus| a.agent.as_ref().map(|d| d.name.clone()).unwrap_or_default();
            all.sort_by_key(name);
            all.dedup_by(|a, b| name(a) == name(b));
            return Ok(all);
        }
        page_token = page.next_page_token;
    }
}

async fn agents(c: &Client, t: &Target, queue: &str) -> Result<String> {
    let all = all_agents(c, queue).await?;
    let def = |a: &pb::AgentStatus| a.agent.clone().unwrap_or_default();
    if t.json {
        return Ok(json_out(to_json(&pb::ListAgentsResponse { agents: all, next_page_token: String::new() })));
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

/// An agent's payload as the operator reads it: text when it is UTF-8 with no control
/// characters, hex otherwise; at most 256 bytes shown.
pub fn payload_text(payload: &[u8]) -> String {
    const SHOWN: usize = 256;
    let head = &payload[..payload.len().min(SHOWN)];
    let more = if payload.len() > SHOWN { format!("… ({} bytes)", payload.len()) } else { String::new() };
    match std::str::from_utf8(head) {
        Ok(text) if !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t') => format!("{text}{more}"),
        _ => format!("hex {}{more}", head.iter().map(|b| format!("{b:02x}")).collect::<String>()),
    }
}

/// Text for a table cell: "-" for nothing.
fn or_dash(text: &str) -> String {
    if text.is_empty() {
        "-".into()
    } else {
        text.to_string()
    }
}

/// How an agent finished, as the CLI prints it.
pub fn finish_name(finish: i32) -> &'static str {
    match pb::Finish::try_from(finish) {
        Ok(pb::Finish::Succeeded) => "succeeded",
        Ok(pb::Finish::DeadLettered) => "dead-lettered",
        Ok(pb::Finish::Cancelled) => "cancelled",
        Ok(pb::Finish::Unregistered) => "unregistered",
        Ok(pb::Finish::Expired) => "expired",
        _ => "-",
    }
}

async fn agent(c: &Client, t: &Target, queue: &str, name: &str) -> Result<String> {
    let msg = pb::GetAgentRequest { queue: queue.into(), name: name.into() };
    let answer = c.agents().get_agent(msg).await.map_err(|s| failed("GetAgent", s))?.into_inner();
    if t.json {
        return Ok(json_out(to_json(&answer)));
    }
    let a = answer.agent.unwrap_or_default();
    let d = a.agent.clone().unwrap_or_default();
    let secs = |d: &Option<prost_types::Duration>| seconds(d).map_or("-".into(), |s| json!(s).to_string());
    let labels = if d.labels.is_empty() { "-".into() } else { json!(d.labels).to_string() };
    let mut rows: Vec<Vec<String>> = [
        ("queue", or_dash(queue)),
        ("name", or_dash(&d.name)),
        ("state", state_name(a.state).into()),
        ("next run", instant(&a.next_run_at)),
        ("deadline", instant(&a.deadline)),
        ("holder", or_dash(&a.holder)),
        ("token", a.token.to_string()),
        ("failure streak", a.failure_streak.to_string()),
        ("progress", or_dash(&a.progress)),
        ("cancel requested", a.cancel_requested.to_string()),
        ("interval (s)", secs(&d.interval)),
        ("timeout (s)", secs(&d.timeout)),
        ("error interval (s)", secs(&d.error_interval)),
        ("max attempts", d.max_attempts.to_string()),
        // Until its first run starts: then it never expires.
        ("expires at", instant(&d.expire_at)),
        ("cron", or_dash(&d.cron)),
        ("time zone", or_dash(&d.time_zone)),
        ("key", or_dash(&d.key)),
        ("priority", d.priority.to_string()),
        ("labels", labels),
        ("payload bytes", d.payload.len().to_string()),
        ("payload", or_dash(&payload_text(&d.payload))),
    ]
    .into_iter()
    .map(|(label, value)| vec![label.to_string(), value])
    .collect();
    if a.parents_total > 0 {
        rows.push(vec!["parents".into(), format!("{} ({} pending)", a.parents_total, a.parents_pending)]);
        for p in &a.parents {
            let r = p.parent.clone().unwrap_or_default();
            let finish = p.result.as_ref().map(|f| finish_name(f.finish)).unwrap_or("pending");
            let at = if r.queue.is_empty() { "batch ".to_string() } else { format!("{}/", r.queue) };
            rows.push(vec!["  parent".into(), format!("{at}{}: {finish}", r.name)]);
        }
    }
    for c in &a.children {
        rows.push(vec!["  child".into(), format!("{}/{}", c.queue, c.name)]);
    }
    if let Some(w) = &a.waiting_for {
        let event = if w.event.is_empty() { "(a time only)".to_string() } else { w.event.clone() };
        rows.push(vec!["waiting for".into(), event]);
        rows.push(vec!["  until".into(), instant(&w.until)]);
    }
    if a.signals_pending > 0 || a.waiting_for.is_some() {
        rows.push(vec!["signals pending".into(), a.signals_pending.to_string()]);
    }
    step_rows(&mut rows, &a.steps);
    Ok(table(&["FIELD", "VALUE"], &rows))
}

/// The steps of a run (RecordStep), one row each: "<name> at <time>: <result>".
fn step_rows(rows: &mut Vec<Vec<String>>, steps: &[pb::Step]) {
    if steps.is_empty() {
        return;
    }
    rows.push(vec!["steps".into(), steps.len().to_string()]);
    for s in steps {
        rows.push(vec![
            "  step".into(),
            format!("{} at {}: {}", s.name, instant(&s.recorded_at), payload_text(&s.result)),
        ]);
    }
}

async fn await_agent(c: &Client, t: &Target, queue: &str, name: &str, wait_ms: u64) -> Result<String> {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(wait_ms);
    // One call waits at most the server's max_wait: ask again until the deadline.
    let answer = loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let wait = (!left.is_zero())
            .then(|| prost_types::Duration { seconds: left.as_secs() as i64, nanos: left.subsec_nanos() as i32 });
        let msg = pb::AwaitRequest { queue: queue.into(), name: name.into(), wait, after_token: 0 };
        let a = c.agents().r#await(msg).await.map_err(|s| failed("Await", s))?.into_inner();
        if a.done || tokio::time::Instant::now() >= deadline {
            break a;
        }
    };
    let Some(r) = answer.result.clone().filter(|_| answer.done) else {
        let kept = if answer.result_not_kept {
            "; it keeps no result: only an Await that waits for its finish sees it (--wait-ms, or keep_result)"
        } else {
            ""
        };
        return Err(CliError::NotFinished(format!(
            "{queue}/{name} has not finished (it is {}){kept}",
            state_name(answer.state)
        )));
    };
    if t.json {
        return Ok(json_out(to_json(&answer)));
    }
    let outcome = pb::Outcome::try_from(r.outcome).map(|o| o.as_str_name()).unwrap_or("");
    let rows: Vec<Vec<String>> = [
        ("finish", finish_name(r.finish).to_string()),
        ("outcome", outcome.to_string()),
        ("token", r.token.to_string()),
        ("finishedAt", instant(&r.finished_at)),
        ("message", r.message.clone()),
        ("resultBytes", r.result.len().to_string()),
        ("result", payload_text(&r.result)),
    ]
    .into_iter()
    .map(|(k, v)| vec![k.to_string(), v])
    .collect();
    let mut rows = rows;
    step_rows(&mut rows, &answer.steps);
    Ok(table(&["FIELD", "VALUE"], &rows))
}

async fn watch_agent(c: &Client, t: &Target, queue: &str, name: &str, wait_ms: u64) -> Result<String> {
    use std::io::Write as _;
    let wait = (wait_ms > 0).then(|| prost_types::Duration {
        seconds: (wait_ms / 1000) as i64,
        nanos: ((wait_ms % 1000) * 1_000_000) as i32,
    });
    let msg = pb::WatchAgentRequest { queue: queue.into(), name: name.into(), after_token: 0, wait };
    let mut updates = c.agents().watch_agent(msg).await.map_err(|s| failed("WatchAgent", s))?.into_inner();
    let mut stdout = std::io::stdout();
    while let Some(u) = updates.message().await.map_err(|s| failed("WatchAgent", s))? {
        if t.json {
            let _ = writeln!(stdout, "{}", serde_json::to_string(&to_json(&u)).unwrap_or_default());
            let _ = stdout.flush();
            if u.update == pb::WatchUpdate::Finished as i32 {
                return Ok(String::new());
            }
            continue;
        }
        let line = match pb::WatchUpdate::try_from(u.update) {
            Ok(pb::WatchUpdate::Snapshot) if u.token == 0 => state_name(u.state).to_string(),
            Ok(pb::WatchUpdate::Snapshot) => format!(
                "working: token {} attempt {} progress {:?}, {} steps",
                u.token,
                u.attempt,
                u.progress,
                u.steps.len()
            ),
            Ok(pb::WatchUpdate::Granted) => format!("granted: token {} attempt {}", u.token, u.attempt),
            Ok(pb::WatchUpdate::Progress) => format!("progress: {}", u.progress),
            Ok(pb::WatchUpdate::Step) => u
                .steps
                .iter()
                .map(|s| format!("step {} at {}: {}", s.name, instant(&s.recorded_at), payload_text(&s.result)))
                .collect::<Vec<_>>()
                .join("\n"),
            Ok(pb::WatchUpdate::Finished) => {
                let finish = u.finish.unwrap_or_default();
                let Some(r) = finish.result.clone() else { continue };
                let outcome = pb::Outcome::try_from(r.outcome).map(|o| o.as_str_name()).unwrap_or("");
                let rows: Vec<Vec<String>> = [
                    ("finish", finish_name(r.finish).to_string()),
                    ("outcome", outcome.to_string()),
                    ("token", r.token.to_string()),
                    ("finishedAt", instant(&r.finished_at)),
                    ("message", r.message.clone()),
                    ("result", payload_text(&r.result)),
                ]
                .into_iter()
                .map(|(k, v)| vec![k.to_string(), v])
                .collect();
                let mut rows = rows;
                step_rows(&mut rows, &finish.steps);
                return Ok(table(&["FIELD", "VALUE"], &rows));
            }
            _ => continue,
        };
        let _ = writeln!(stdout, "{line}");
        let _ = stdout.flush();
    }
    Err(CliError::NotFinished(format!("{queue}/{name} has not finished (the stream's wait ended)")))
}

async fn batch_cmd(c: &Client, t: &Target, batch: &str, close: bool) -> Result<String> {
    let (answer, status) = if close {
        let msg = pb::CloseBatchRequest { batch: batch.into() };
        let answer = c.agents().close_batch(msg).await.map_err(|s| failed("CloseBatch", s))?.into_inner();
        (to_json(&answer), answer.status)
    } else {
        let msg = pb::GetBatchRequest { batch: batch.into() };
        let answer = c.agents().get_batch(msg).await.map_err(|s| failed("GetBatch", s))?.into_inner();
        (to_json(&answer), answer.status)
    };
    if t.json {
        return Ok(json_out(answer));
    }
    let status = status.unwrap_or_default();
    let state = if status.done {
        "done"
    } else if status.closed {
        "closed"
    } else {
        "open"
    };
    let rows = vec![vec![
        status.batch.clone(),
        state.to_string(),
        status.total.to_string(),
        status.pending.to_string(),
        status.succeeded.to_string(),
        status.failed.to_string(),
        status.callbacks.iter().map(|c| format!("{}/{}", c.queue, c.name)).collect::<Vec<_>>().join(", "),
    ]];
    Ok(table(&["BATCH", "STATE", "TOTAL", "PENDING", "SUCCEEDED", "FAILED", "CALLBACKS"], &rows))
}

async fn cancel(c: &Client, t: &Target, queue: &str, name: &str, cascade: bool) -> Result<String> {
    let msg = pb::CancelRunRequest { queue: queue.into(), name: name.into(), cascade };
    let r = idempotent("CancelRun", || {
        let (mut agents, msg) = (c.agents(), msg.clone());
        async move { agents.cancel_run(msg).await }
    })
    .await?;
    if t.json {
        return Ok(json_out(to_json(&r)));
    }
    let mut out = if r.requested {
        format!("run {} of {queue}/{name} asked to stop (it ends at its holder's next heartbeat)\n", r.token)
    } else {
        format!("{queue}/{name} is not running: nothing to cancel\n")
    };
    if cascade {
        out.push_str(&match r.cascaded {
            0 => "no children attached: nothing to cascade\n".to_string(),
            n => format!("cascade started: {n} direct children and their descendants are being cancelled\n"),
        });
    }
    Ok(out)
}

async fn signal(c: &Client, t: &Target, queue: &str, name: &str, event: &str, payload: String) -> Result<String> {
    // One request id for every try, so a retry whose first answer was lost gets that answer.
    let request_id = format!("cli-{:016x}", rand::random::<u64>());
    let msg = pb::SignalRequest {
        queue: queue.into(),
        name: name.into(),
        event: event.into(),
        payload: payload.into_bytes(),
        request_id,
    };
    let r = idempotent("Signal", || {
        let (mut agents, msg) = (c.agents(), msg.clone());
        async move { agents.signal(msg).await }
    })
    .await?;
    if t.json {
        return Ok(json_out(to_json(&r)));
    }
    Ok(match (r.delivered, r.duplicate, r.consumed) {
        (true, ..) => format!("{event} delivered to {queue}/{name}: it is due now\n"),
        (_, true, true) => format!("{queue}/{name}'s run consumed {event} already: nothing changed\n"),
        (_, true, false) => format!("{queue}/{name}'s run keeps {event} already: nothing changed\n"),
        _ => format!("{event} kept for {queue}/{name}: the wait that names it consumes it\n"),
    })
}

/// A rate flag: 0 removes the limit; otherwise the bucket, its burst given or the rate's ceiling.
fn rate_flag(rate: f64, burst: Option<u32>) -> Option<pb::RateLimit> {
    (rate > 0.0).then(|| pb::RateLimit { per_second: rate, burst: burst.unwrap_or(0) })
}

async fn limits(c: &Client, a: &LimitsArgs) -> Result<String> {
    let changing = a.clear
        || a.concurrency.is_some()
        || a.rate.is_some()
        || a.key_concurrency.is_some()
        || a.key_rate.is_some()
        || a.group.is_some();
    let health = c.admin().get_health(pb::GetHealthRequest {}).await.map_err(|s| failed("GetHealth", s))?.into_inner();
    let current = health
        .sources
        .iter()
        .find(|s| s.source.as_ref().is_some_and(|s| s.kind == pb::SourceKind::Queue as i32 && s.name == a.queue));
    // --create declares a queue nothing was registered in yet: it starts with no limits.
    let mut l = match current {
        Some(current) => current.limits.clone().unwrap_or_default(),
        None if a.create && changing => pb::QueueLimits::default(),
        None => {
            return Err(CliError::Call {
                what: "limits".into(),
                code: tonic::Code::NotFound,
                message: format!("no queue {:?} (--create declares it, with the limits given)", a.queue),
            })
        }
    };
    if changing {
        if a.clear {
            l = pb::QueueLimits::default();
        }
        if let Some(n) = a.concurrency {
            l.concurrency = n;
        }
        if let Some(r) = a.rate {
            l.rate = rate_flag(r, a.burst);
        }
        if let Some(n) = a.key_concurrency {
            l.key_concurrency = n;
        }
        if let Some(r) = a.key_rate {
            l.key_rate = rate_flag(r, a.key_burst);
        }
        if let Some(g) = &a.group {
            l.group = g.clone();
        }
        let msg = pb::SetLimitsRequest { queue: a.queue.clone(), limits: Some(l), create: a.create };
        l = idempotent("SetLimits", || {
            let (mut admin, msg) = (c.admin(), msg.clone());
            async move { admin.set_limits(msg).await }
        })
        .await?
        .limits
        .unwrap_or_default();
    }
    if a.target.json {
        return Ok(json_out(json!({ "queue": a.queue, "limits": to_json(&l), "changed": changing })));
    }
    Ok(format!("{} limits: {}\n", a.queue, limits_text(&Some(l))))
}

/// One group's limits and usage, as the CLI shows them.
fn group_text(g: &pb::GroupLimitsEntry) -> String {
    let l = g.limits.unwrap_or_default();
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
    let limits = if parts.is_empty() { "no limits".to_string() } else { parts.join(", ") };
    format!("{}\t{limits}\theld {}", g.group, g.held)
}

fn groups_out(target: &Target, groups: &[pb::GroupLimitsEntry]) -> Result<String> {
    if target.json {
        let items: Vec<Value> = groups.iter().map(to_json).collect();
        return Ok(json_out(json!({ "groups": items })));
    }
    let mut out = String::new();
    for g in groups {
        out.push_str(&group_text(g));
        out.push('\n');
    }
    if groups.is_empty() {
        out.push_str("no groups\n");
    }
    Ok(out)
}

async fn group_set(c: &Client, a: &GroupSetArgs) -> Result<String> {
    // The others stay: start from the group's limits, when it exists.
    let get = pb::GetGroupLimitsRequest { group: a.group.clone() };
    let mut l = match c.admin().get_group_limits(get).await {
        Ok(r) => r.into_inner().group.and_then(|g| g.limits).unwrap_or_default(),
        Err(s) if s.code() == tonic::Code::NotFound => pb::GroupLimits::default(),
        Err(s) => return Err(failed("GetGroupLimits", s)),
    };
    if let Some(n) = a.concurrency {
        l.concurrency = n;
    }
    if let Some(r) = a.rate {
        l.rate = rate_flag(r, a.burst);
    }
    if let Some(n) = a.key_concurrency {
        l.key_concurrency = n;
    }
    let msg = pb::SetGroupLimitsRequest { group: a.group.clone(), limits: Some(l) };
    let r = idempotent("SetGroupLimits", || {
        let (mut admin, msg) = (c.admin(), msg.clone());
        async move { admin.set_group_limits(msg).await }
    })
    .await?;
    groups_out(&a.target, &r.group.into_iter().collect::<Vec<_>>())
}

/// One key's weight and overrides, as the CLI shows them.
fn key_text(e: &pb::KeyLimitsEntry) -> String {
    let l = e.limits.unwrap_or_default();
    let concurrency = match l.concurrency {
        None => "queue's".to_string(),
        Some(0) => "none".to_string(),
        Some(n) => n.to_string(),
    };
    let rate = match l.rate {
        None => "queue's".to_string(),
        Some(r) => format!("{}/s burst {}", r.per_second, r.burst),
    };
    format!("{}\tweight {}\tconcurrency {concurrency}\trate {rate}\theld {}", e.key, l.weight, e.held)
}

fn keys_out(target: &Target, queue: &str, keys: &[pb::KeyLimitsEntry]) -> Result<String> {
    if target.json {
        let items: Vec<Value> = keys.iter().map(to_json).collect();
        return Ok(json_out(json!({ "queue": queue, "keys": items })));
    }
    let mut out = String::new();
    for e in keys {
        out.push_str(&key_text(e));
        out.push('\n');
    }
    if keys.is_empty() {
        out.push_str(&format!("{queue}: no key has a weight or overrides\n"));
    }
    Ok(out)
}

async fn keys_list(c: &Client, target: &Target, queue: &str) -> Result<String> {
    let mut all = Vec::new();
    let mut token = String::new();
    loop {
        let msg = pb::ListKeyLimitsRequest { queue: queue.into(), page_size: 1000, page_token: token };
        let page = c.admin().list_key_limits(msg).await.map_err(|s| failed("ListKeyLimits", s))?.into_inner();
        all.extend(page.keys);
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    keys_out(target, queue, &all)
}

async fn keys_set(c: &Client, a: &KeySetArgs) -> Result<String> {
    let get = pb::GetKeyLimitsRequest { queue: a.queue.clone(), key: a.key.clone() };
    let current = c.admin().get_key_limits(get).await.map_err(|s| failed("GetKeyLimits", s))?.into_inner();
    let mut l = current.key_limits.and_then(|e| e.limits).unwrap_or_default();
    if a.clear {
        l = pb::KeyLimits::default();
    }
    if let Some(w) = a.weight {
        l.weight = w;
    }
    if let Some(n) = a.concurrency {
        l.concurrency = Some(n);
    }
    if a.queue_concurrency {
        l.concurrency = None;
    }
    if let Some(r) = a.rate {
        l.rate = rate_flag(r, a.burst);
    }
    let msg = pb::SetKeyLimitsRequest { queue: a.queue.clone(), key: a.key.clone(), limits: Some(l) };
    let r = idempotent("SetKeyLimits", || {
        let (mut admin, msg) = (c.admin(), msg.clone());
        async move { admin.set_key_limits(msg).await }
    })
    .await?;
    keys_out(&a.target, &a.queue, &r.key_limits.into_iter().collect::<Vec<_>>())
}

fn source_of(d: &pb::DeadLetter) -> (&'static str, String) {
    d.source.as_ref().map(|s| (kind_name(s.kind), s.name.clone())).unwrap_or(("?", String::new()))
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
        return Ok(json_out(to_json(&pb::ListDeadLettersResponse {
            dead_letters: all,
            next_page_token: String::new(),
        })));
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

/// Prints each item's result of a multi-item command and, when any failed, fails saying how
/// many: the ones that took effect are never hidden behind the first failure.
fn per_item(verb: &str, results: &[(&String, std::result::Result<(), String>)], json: bool) -> Result<String> {
    let failures = results.iter().filter(|(_, r)| r.is_err()).count();
    let out = if json {
        let items: Vec<Value> = results
            .iter()
            .map(|(id, r)| match r {
                Ok(()) => json!({ "id": id, "ok": true }),
                Err(e) => json!({ "id": id, "ok": false, "error": e }),
            })
            .collect();
        let done: Vec<&&String> = results.iter().filter(|(_, r)| r.is_ok()).map(|(id, _)| id).collect();
        json_out(json!({ verb: done, "failed": failures, "items": items }))
    } else {
        results
            .iter()
            .map(|(id, r)| match r {
                Ok(()) => format!("{verb} {id}\n"),
                Err(e) => format!("FAILED {e}\n"),
            })
            .collect()
    };
    if failures > 0 {
        print!("{out}");
        return Err(CliError::Partial { done: results.len() - failures, failed: failures, total: results.len() });
    }
    Ok(out)
}

/// Retries (or deletes) each listed dead letter, one call each, going on past a refusal.
async fn dead_letter_action(c: &Client, a: &DeadLetterArgs, retry: bool) -> Result<String> {
    let method = if retry { "RetryDeadLetter" } else { "DeleteDeadLetter" };
    let mut results = Vec::new();
    for id in &a.ids {
        let source = Some(source(a.kind, &a.name));
        let result = if retry {
            c.admin().retry_dead_letter(pb::RetryDeadLetterRequest { source, id: id.clone() }).await.map(|_| ())
        } else {
            c.admin().delete_dead_letter(pb::DeleteDeadLetterRequest { source, id: id.clone() }).await.map(|_| ())
        };
        results.push((id, result.map_err(|s| failed(&format!("{method} {id}"), s).to_string())));
    }
    per_item(if retry { "retried" } else { "deleted" }, &results, a.target.json)
}

async fn cancel_messages(c: &Client, t: &Target, receiver: &str, ids: &[String]) -> Result<String> {
    let mut results = Vec::new();
    for id in ids {
        let msg = pb::CancelRequest { receiver: receiver.into(), id: id.clone() };
        let result = c.schedules().cancel(msg).await.map(|_| ());
        results.push((id, result.map_err(|s| failed(&format!("Cancel {id}"), s).to_string())));
    }
    per_item("cancelled", &results, t.json)
}

async fn messages(
    c: &Client,
    t: &Target,
    receiver: &str,
    state: Option<MessageStateArg>,
    limit: usize,
) -> Result<String> {
    let state = match state {
        None => pb::MessageState::Unspecified,
        Some(MessageStateArg::Scheduled) => pb::MessageState::Scheduled,
        Some(MessageStateArg::InFlight) => pb::MessageState::InFlight,
    };
    let mut all = Vec::new();
    let mut page_token = String::new();
    while all.len() < limit {
        let msg = pb::ListMessagesRequest {
            receiver: receiver.into(),
            state: state as i32,
            page_size: (limit - all.len()).min(500) as u32,
            page_token,
            payload_bytes: 64,
        };
        let page = c.schedules().list_messages(msg).await.map_err(|s| failed("ListMessages", s))?.into_inner();
        all.extend(page.messages);
        if page.next_page_token.is_empty() {
            break;
        }
        page_token = page.next_page_token;
    }
    if t.json {
        return Ok(json_out(to_json(&pb::ListMessagesResponse { messages: all, next_page_token: String::new() })));
    }
    let rows: Vec<Vec<String>> = all
        .iter()
        .map(|m| {
            let flying = m.state == pb::MessageState::InFlight as i32;
            vec![
                or_dash(&m.id),
                if flying { "in-flight" } else { "scheduled" }.into(),
                if flying { instant(&m.ack_deadline) } else { instant(&m.deliver_at) },
                m.delivery_count.to_string(),
                or_dash(&m.key),
                or_dash(&m.consumer_id),
                m.payload_bytes.to_string(),
                or_dash(&payload_text(&m.payload_head)).chars().take(40).collect(),
            ]
        })
        .collect();
    Ok(table(&["ID", "STATE", "DELIVER AT / ACK BY", "DELIVERIES", "KEY", "CONSUMER", "BYTES", "PAYLOAD"], &rows))
}

async fn purge(c: &Client, t: &Target, dry_run: bool) -> Result<String> {
    let p = c.admin().purge(pb::PurgeRequest { dry_run }).await.map_err(|s| failed("Purge", s))?.into_inner();
    let src = |i: &pb::PurgedItem| {
        i.source.as_ref().map(|s| (kind_name(s.kind), s.name.clone())).unwrap_or(("?", String::new()))
    };
    if t.json {
        return Ok(json_out(to_json(&p)));
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
        // As ListElections answers: an ElectionSummary per election named (GetLeader's answer).
        let elections = found
            .iter()
            .map(|(e, l)| pb::ElectionSummary {
                election: e.clone(),
                leader_id: l.leader_id.clone(),
                token: l.token,
                expires_at: l.expires_at,
                last_term_started_at: None,
            })
            .collect();
        return Ok(json_out(to_json(&pb::ListElectionsResponse { elections, next_page_token: String::new() })));
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
        return Ok(json_out(to_json(&pb::ListElectionsResponse { elections: all, next_page_token: String::new() })));
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

/// How a term ended, as the CLI prints it.
fn term_end(t: &pb::ElectionTerm) -> &'static str {
    match (pb::TermEnd::try_from(t.end), t.ended_at.is_some()) {
        (Ok(pb::TermEnd::Resigned), _) => "resigned",
        (Ok(pb::TermEnd::Expired), _) => "expired",
        (Ok(pb::TermEnd::Superseded), _) => "superseded",
        (_, false) => "current",
        (_, true) => "ended",
    }
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
        found.push((e, h));
    }
    if t.json {
        // Each election's GetElectionHistoryResponse, with the `election` it is of.
        let all: Vec<Value> = found
            .iter()
            .map(|(e, h)| {
                let mut v = to_json(h);
                v["election"] = json!(e);
                v
            })
            .collect();
        return Ok(json_out(json!({ "histories": all })));
    }
    let found: Vec<(&String, Vec<pb::ElectionTerm>)> = found.into_iter().map(|(e, h)| (e, h.terms)).collect();
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
        idempotent("Pause", || {
            let (mut admin, source) = (c.admin(), source.clone());
            async move { admin.pause(pb::PauseRequest { source, create: a.create }).await }
        })
        .await?
        .changed
    } else {
        idempotent("Resume", || {
            let (mut admin, source) = (c.admin(), source.clone());
            async move { admin.resume(pb::ResumeRequest { source, create: a.create }).await }
        })
        .await?
        .changed
    };
    let verb = if paused { "paused" } else { "resumed" };
    let kind = kind_name(a.kind.pb() as i32);
    if a.target.json {
        return Ok(json_out(json!({ "kind": kind, "name": a.name, verb: true, "changed": changed })));
    }
    Ok(if changed { format!("{kind} {} {verb}\n", a.name) } else { format!("{kind} {} was already {verb}\n", a.name) })
}

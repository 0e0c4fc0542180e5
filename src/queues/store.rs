//! Agent queues: the state transitions of AgentService, one script each.

use crate::store::keys::ChannelKind;

pub use super::records::StepRecord;
pub use super::records::{Delivery, WaitFor};
use super::records::{Idempotency, LeaseRecord, RunEvents, WaitRecord};
use crate::error::{Error, Result};
use crate::flows::store::Flows;
use crate::store::shards::Shard;
use crate::store::{over_core, reply::Reply, scripts::FromReply, scripts::Int, scripts::Pair, Core, Path};

pub(crate) use super::sweep::{OrphanPage, Reaps, Zombies};

/// The typed calls of `lua/queues/`, generated from the scripts' headers.
pub(crate) mod calls {
    use crate::store::keys::QueueKeys;
    include!(concat!(env!("OUT_DIR"), "/calls_queues.rs"));
}

/// What releaseAgent did: `{ -1 }`, `{ 0, nextRun }` or `{ 1, 0 }`.
pub(crate) enum Released {
    /// The token was stale or unknown: nothing changed.
    Lost,
    /// Due again at this time (ms).
    Rescheduled(i64),
    /// The agent was unregistered while held: dropped.
    Removed,
}

/// What heartbeatLeases did: per lease, in order, then how many outbox entries it wrote.
pub(crate) struct Beats(Vec<Beat>, i64);

impl FromReply for Beats {
    /// `{ (deadline | -1 lost | -2 cancelled)*, outboxed }`
    fn from_reply(r: Reply) -> Result<Self> {
        let mut codes = ints(r)?;
        let outboxed = codes.pop().unwrap_or(0);
        let beats = codes
            .into_iter()
            .map(|d| match d {
                -2 => Ok(Beat::Cancelled),
                -1 => Ok(Beat::Lost),
                d if d >= 0 => Ok(Beat::Extended(d)),
                d => Err(Error::Internal(format!("heartbeatLeases: unknown code {d}"))),
            })
            .collect::<Result<_>>()?;
        Ok(Beats(beats, outboxed))
    }
}

/// Every value of a reply of integers.
fn ints(mut r: Reply) -> Result<Vec<i64>> {
    let mut out = Vec::with_capacity(r.remaining());
    while !r.is_empty() {
        out.push(r.next()?);
    }
    Ok(out)
}

/// What registerAgents answered.
pub(crate) enum Registered {
    /// `{ -1, name }`: the existing agent `name` was given other parents; nothing written.
    ParentsFixed(String),
    /// `{ created, updated, deduplicated, outboxed, (code, other, finish)* }`: per agent, in
    /// order, code 0 created (`other`: the agent it replaced, or ""), 1 updated, 2 deduplicated
    /// (by `other`, with its kept finish record), 3 debounced into `other`; outboxed: outbox
    /// entries a replaced agent's finish wrote.
    Applied { created: u32, updated: u32, deduplicated: u32, outboxed: i64, items: Vec<(i64, String, Vec<u8>)> },
}

impl FromReply for Registered {
    fn from_reply(mut r: Reply) -> Result<Self> {
        let created: i64 = r.next()?;
        if created < 0 {
            return Ok(Registered::ParentsFixed(r.next()?));
        }
        let (updated, deduplicated, outboxed) = (r.next()?, r.next()?, r.next()?);
        let mut items = Vec::with_capacity(r.remaining() / 3);
        while !r.is_empty() {
            items.push((r.next()?, r.next()?, r.next()?));
        }
        Ok(Registered::Applied { created: created as u32, updated, deduplicated, outboxed, items })
    }
}

/// What completeAgents did: per item, in order, (code, time, streak), then how many outbox
/// entries it left for the flows task, and how many children of the queue it released.
pub(crate) struct Completions {
    items: Vec<(i64, i64, u32)>,
    outboxed: i64,
    released: i64,
    /// Children released that became due unannounced (`announceReleased` false).
    due: Vec<String>,
}

impl FromReply for Completions {
    /// `{ (code, time, streak)*, due name × n, n, released, outboxed }`
    fn from_reply(mut r: Reply) -> Result<Self> {
        let (outboxed, released, n): (i64, i64, usize) = (r.last()?, r.last()?, r.last()?);
        let mut due = (0..n).map(|_| r.last()).collect::<Result<Vec<String>>>()?;
        due.reverse();
        let mut items = Vec::with_capacity(r.remaining() / 3);
        while !r.is_empty() {
            items.push((r.next()?, r.next()?, r.next()?));
        }
        Ok(Completions { items, outboxed, released, due })
    }
}

/// What a completeAgents call answered beside its items: the children it released that became
/// due without a wake-up (asked for by a caller that acquires from the queue in the same round,
/// and announces them itself unless its acquire took them all; see `queues::session`).
pub(crate) type Unannounced = Vec<String>;

/// What an acquire script answered (acquireAgents, or acquireKeyed for a keyed queue).
pub(crate) enum Acquisition {
    /// `{ -1 }`: the queue is not this script's (keyed or not): nothing written.
    OtherPath,
    /// `{ now, nextDue, repaired, expired, outboxed, (name, token, deadline, attempt, definition,
    /// payload, steps)* }`: `expired` agents met past their expiry finished instead of being
    /// granted, and their finishes wrote `outboxed` outbox entries.
    Granted { now_ms: i64, next_due: i64, repaired: u64, expired: u64, outboxed: i64, leases: Vec<Lease> },
}

impl FromReply for Acquisition {
    fn from_reply(mut r: Reply) -> Result<Self> {
        let now_ms: i64 = r.next()?;
        if now_ms < 0 {
            return Ok(Acquisition::OtherPath);
        }
        let (next_due, repaired, expired, outboxed) = (r.next()?, r.next()?, r.next()?, r.next()?);
        let mut leases = Vec::with_capacity(r.remaining() / 7);
        while !r.is_empty() {
            let name: String = r.next()?;
            let token: u64 = r.next()?;
            let deadline_ms: i64 = r.next()?;
            let attempt: u32 = r.next()?;
            let json: Vec<u8> = r.next()?;
            let payload: Vec<u8> = r.next()?;
            let steps: Vec<u8> = r.next()?;
            // The parents' states when the script read them (-1: too many, read apart).
            let n: i64 = r.next()?;
            let parents = if n < 0 {
                None
            } else {
                let states = crate::flows::store::parent_states(&mut r, n as usize)?;
                Some(states.into_iter().filter_map(|(q, n, _, fin)| Some((q, n, fin?))).collect())
            };
            let def = AgentDef::parse(name.clone(), &json, payload)?;
            // The run's delivery after a wait rides in the same record (signals).
            let event = if steps.is_empty() { None } else { RunEvents::parse(&steps).delivery };
            // A record that does not parse is not worth failing a grant for: its lease has none.
            let steps = StepRecord::parse_list(&steps).unwrap_or_else(|| {
                tracing::warn!(agent = name, "the steps of a lease are not a steps record; handed over without them");
                Vec::new()
            });
            leases.push(Lease {
                name,
                token,
                granted_ms: now_ms,
                deadline_ms,
                attempt,
                parents_read: parents.is_some() || def.parents == 0,
                def,
                parents: parents.unwrap_or_default(),
                steps,
                event,
            });
        }
        Ok(Acquisition::Granted { now_ms, next_due, repaired, expired, outboxed, leases })
    }
}

impl FromReply for Released {
    fn from_reply(mut r: Reply) -> Result<Self> {
        match r.next::<i64>()? {
            -1 => Ok(Released::Lost),
            0 => Ok(Released::Rescheduled(r.next()?)),
            1 => Ok(Released::Removed),
            code => Err(Error::Internal(format!("releaseAgent: unknown code {code}"))),
        }
    }
}

pub(crate) use super::expiry::Expired;
pub(crate) use super::limits::{GroupRead, KeyLimitsEntries, RecountStep};
pub(crate) use super::sweep::{QueueStats, Repaired};

pub use super::records::AgentDef;

/// A lease named in a heartbeat: agent name, token, progress reported (`""`: none).
pub type HeartbeatItem<'a> = (&'a str, u64, &'a str);

/// What a heartbeat did to one lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Beat {
    /// Still held; the new deadline (ms).
    Extended(i64),
    /// Not held with that token.
    Lost,
    /// CancelRun marked it: ended now.
    Cancelled,
}

/// A granted lease.
#[derive(Clone, Debug)]
pub struct Lease {
    pub name: String,
    pub token: u64,
    /// When the lease was granted: the Redis TIME the acquire script read (no stored field).
    pub granted_ms: i64,
    pub deadline_ms: i64,
    pub attempt: u32,
    pub def: AgentDef,
    /// The finishes of the agent's parents: (physical queue, name, finish), in name order.
    pub parents: Vec<(String, String, crate::flows::store::FinishRecord)>,
    /// Whether `parents` was read (by the grant itself, for an agent with few parents);
    /// otherwise Baton reads them before handing the lease over (`fill_parents`).
    pub parents_read: bool,
    /// The steps earlier attempts of this run recorded (RecordStep), in order.
    pub steps: Vec<StepRecord>,
    /// The event (or timeout) that ended the run's latest wait; None when it never waited.
    pub event: Option<Delivery>,
}

/// What waitAgent answered (a Complete with wait_for).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Waited {
    /// The token does not hold the lease: nothing written.
    Lost,
    /// The run is marked cancelled (CancelRun, a cascade): nothing written; the lease's holder.
    Cancelled { worker: String },
    /// Waiting; until the wait's time (ms), 0 for none.
    Waiting { until_ms: i64, streak: u32 },
    /// Due now (at_ms) with the event: a signal kept before the wait, or consumed before.
    Due { at_ms: i64, streak: u32, timed_out: bool },
    /// The agent was unregistered while held: dropped.
    Removed,
}

impl FromReply for Waited {
    fn from_reply(mut r: Reply) -> Result<Self> {
        let code: i64 = r.next()?;
        if code == -1 {
            return Ok(Waited::Lost);
        }
        if code == -2 {
            return Ok(Waited::Cancelled { worker: r.next()? });
        }
        let (time, streak): (i64, u32) = (r.next()?, r.next()?);
        match code % 10 {
            0 => Ok(Waited::Waiting { until_ms: time, streak }),
            1 => Ok(Waited::Due { at_ms: time, streak, timed_out: false }),
            2 => Ok(Waited::Due { at_ms: time, streak, timed_out: true }),
            3 => Ok(Waited::Removed),
            _ => Err(Error::Internal(format!("waitAgent: unknown code {code}"))),
        }
    }
}

/// What signalAgent answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signalled {
    /// No such agent: nothing written.
    NotFound,
    /// The run keeps this many signals already (limits.max_pending_signals): nothing written.
    TooMany(u32),
    /// The agent waited for it: due now.
    Delivered(i64),
    /// Kept for a wait that names it.
    Kept(i64),
    /// Kept already since this time: nothing written.
    AlreadyKept(i64),
    /// Consumed already by this run (sent at this time): nothing written.
    AlreadyConsumed(i64),
}

impl FromReply for Signalled {
    fn from_reply(mut r: Reply) -> Result<Self> {
        let code: i64 = r.next()?;
        let at: i64 = r.next()?;
        match if code >= 10 { code - 10 } else { code } {
            -1 => Ok(Signalled::NotFound),
            -2 => Ok(Signalled::TooMany(at as u32)),
            0 => Ok(Signalled::Delivered(at)),
            1 => Ok(Signalled::Kept(at)),
            2 => Ok(Signalled::AlreadyKept(at)),
            3 => Ok(Signalled::AlreadyConsumed(at)),
            _ => Err(Error::Internal(format!("signalAgent: unknown code {code}"))),
        }
    }
}

/// What recordStep answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepAnswer {
    /// The token does not hold the lease: nothing written.
    Lost,
    /// The run has `count` steps already (limits.max_steps): nothing written.
    TooMany { count: u32 },
    /// The run's steps hold `bytes` result bytes already (limits.max_step_bytes).
    TooLarge { bytes: u64 },
    /// Recorded at this time (ms); the run has `count` steps now.
    Recorded { at_ms: i64, count: u32 },
    /// A step of that name was recorded already in this run: its first time and result.
    Kept { at_ms: i64, count: u32, result: Vec<u8> },
}

impl FromReply for StepAnswer {
    fn from_reply(mut r: Reply) -> Result<Self> {
        match r.next::<i64>()? {
            -1 => Ok(StepAnswer::Lost),
            -2 => Ok(StepAnswer::TooMany { count: r.next()? }),
            -3 => Ok(StepAnswer::TooLarge { bytes: r.next()? }),
            0 => Ok(StepAnswer::Recorded { at_ms: r.next()?, count: r.next()? }),
            1 => Ok(StepAnswer::Kept { at_ms: r.next()?, count: r.next()?, result: r.next()? }),
            code => Err(Error::Internal(format!("recordStep: unknown code {code}"))),
        }
    }
}

/// What watchAgent read (a WatchAgent stream's snapshot): the kept finish, where the agent is,
/// the steps kept with the finish (raw, as [`crate::flows::store::Flows::await_read`] answers
/// them), the current lease, the current run's steps, the failure streak, and the queue's token
/// counter (every later lease's token is above it).
#[derive(Clone, Debug)]
pub(crate) struct Watched {
    pub finish: Option<crate::flows::store::FinishRecord>,
    pub state: crate::flows::store::AwaitState,
    pub kept_steps: Vec<u8>,
    pub lease: Option<LeaseRecord>,
    pub steps: Vec<StepRecord>,
    pub streak: u32,
    pub seq: u64,
}

impl FromReply for Watched {
    /// See lua/queues/watchAgent-12.lua.
    fn from_reply(mut r: Reply) -> Result<Self> {
        use crate::flows::store::AwaitState;
        let record: Vec<u8> = r.next()?;
        let state = match r.next::<i64>()? {
            0 => AwaitState::Missing,
            1 => AwaitState::Waiting,
            2 => AwaitState::Working,
            3 => AwaitState::DeadLettered,
            4 => AwaitState::Blocked,
            _ => AwaitState::Detached,
        };
        let kept_steps: Vec<u8> = r.next()?;
        let lease: String = r.next()?;
        let steps: Vec<u8> = r.next()?;
        Ok(Watched {
            finish: crate::flows::store::FinishRecord::parse(&record),
            state,
            kept_steps,
            lease: LeaseRecord::parse(&lease),
            steps: StepRecord::parse_list(&steps).unwrap_or_default(),
            streak: r.next()?,
            seq: r.next()?,
        })
    }
}

/// What one Acquire found.
#[derive(Clone, Debug, Default)]
pub struct Acquired {
    /// Redis time of the acquire.
    pub now_ms: i64,
    /// Earliest next run left in waiting, if any.
    pub next_due_ms: Option<i64>,
    pub leases: Vec<Lease>,
}

/// A lease named by its holder: queue, agent name, token.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LeaseRef {
    pub queue: String,
    pub name: String,
    pub token: u64,
}

/// How a run ended, as a worker reports it. (The sweepers end leases as TIMEOUT and ORPHANED.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Success,
    PermanentForbidden,
    Throttled,
    Transient,
    ServerError,
    Unknown,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "SUCCESS",
            Outcome::PermanentForbidden => "PERMANENT_FORBIDDEN",
            Outcome::Throttled => "THROTTLED",
            Outcome::Transient => "TRANSIENT",
            Outcome::ServerError => "SERVER_ERROR",
            Outcome::Unknown => "UNKNOWN",
        }
    }
}

/// What one item of a Complete answered: what was done with the agent, and whether this is a
/// retry answered from memory (its request id's first answer: nothing was done now).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ended {
    pub how: Completed,
    pub replayed: bool,
}

/// What Complete did with the agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Completed {
    Rescheduled {
        next_run_ms: i64,
        streak: u32,
    },
    Removed,
    DeadLettered {
        at_ms: i64,
        streak: u32,
    },
    /// The lease ended by waiting (wait_for): waiting, or due at `next_run_ms` when the wait
    /// ended at once.
    Waiting {
        next_run_ms: Option<i64>,
        streak: u32,
    },
}

/// A Complete: which lease, how it ended.
#[derive(Clone, Debug)]
pub struct Completion {
    pub queue: String,
    pub name: String,
    pub token: u64,
    pub outcome: Outcome,
    pub message: String,
    pub retry_after_ms: u64,
    /// The caller's request id ("" for none): a retry with it gets the first answer.
    pub request_id: String,
    /// The message was cut to the server's limit (said in the answer; not stored).
    pub clipped: bool,
    /// The run's result, kept with a finish (success, or a dead-lettering failure).
    pub result: Vec<u8>,
    /// The lease ends by waiting for this instead (`CompleteRequest.wait_for`: waitAgent).
    pub wait: Option<WaitFor>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentState {
    Waiting,
    Working,
    DeadLettered,
    /// Holds no lease and is not due: waits for an event or a time (`waits`).
    WaitingForEvent,
    /// Defined but in no set: only seen between a crash-free repair and the next Register.
    Detached,
}

/// An agent's definition and where it is.
#[derive(Clone, Debug)]
pub struct AgentInfo {
    pub def: AgentDef,
    pub state: AgentState,
    pub next_run_ms: Option<i64>,
    pub deadline_ms: Option<i64>,
    pub holder: Option<String>,
    pub token: Option<u64>,
    pub streak: u32,
    /// What the holder last reported (while working).
    pub progress: String,
    /// CancelRun marked the current run.
    pub cancel_requested: bool,
    /// A dead-lettered agent's dead-letter context (JSON object: outcome, message, …).
    pub dead_letter: Option<serde_json::Value>,
    /// The steps its current run recorded (GetAgent only; ListAgents leaves it empty).
    pub steps: Vec<StepRecord>,
    /// What it waits for, while waiting for an event or a time.
    pub waiting_for: Option<WaitRecord>,
    /// Signals kept for its run, not consumed yet (GetAgent, and ListAgents while it waits).
    pub signals_pending: u32,
}

/// A page of a queue's agents, sorted by name (readAgents: one HSCAN walk of the definitions).
pub struct AgentPage {
    pub agents: Vec<AgentInfo>,
    /// Where the next page starts, when more may follow.
    pub next: Option<PagePosition>,
}

/// A position in a listing of agents: the shard (0 unless the queue is sharded), the HSCAN
/// cursor of its definitions, and the last name taken from the batch at that cursor ("" when
/// the batch was taken whole). As a page token: `<shard>/<cursor>/<after>`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PagePosition {
    pub shard: u32,
    pub cursor: String,
    pub after: String,
}

impl PagePosition {
    /// The page token a client passes back.
    pub fn token(&self) -> String {
        format!("{}/{}/{}", self.shard, self.cursor, self.after)
    }

    /// A page token back into a position; None for anything Baton did not hand out.
    pub fn parse(token: &str) -> Option<Self> {
        let mut fields = token.splitn(3, '/');
        let shard = fields.next()?.parse().ok()?;
        let cursor = fields.next()?;
        let after = fields.next()?;
        (!cursor.is_empty() && cursor.bytes().all(|b| b.is_ascii_digit())).then(|| Self {
            shard,
            cursor: cursor.to_string(),
            after: after.to_string(),
        })
    }
}

/// The queues store: agents registered, leased, heartbeated and completed, the index of active
/// queues, limits and the sweeps' reads and repairs, over the core. Its AgentService methods
/// take a queue's name and route to its shards (`queues::shards`) through the per-shard layer
/// below; the sweeps' take a physical queue.
#[derive(Clone)]
pub struct Queues {
    core: Core,
    /// Where a queue's transitions meet flows: finishes written, children to release, parents
    /// read with a lease. AgentService serves the flows calls through it too.
    pub(crate) flows: Flows,
    /// When this replica last marked each queue in the index of active queues (`active`).
    pub(super) marks: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>>,
    /// The queues last found keyed (by their limits key), so an Acquire calls acquireKeyed
    /// first. Only a hint: each acquire script checks the queue's "keyed" flag itself and
    /// answers `OtherPath` when it is not the queue's, and the other one is called.
    keyed: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    /// The shared concurrency group each queue was last found in (or its leases were granted
    /// under), so a call passes that group's keys first (`Queues::grouped_keys`). Only a hint:
    /// the scripts check it.
    groups: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, String>>>,
}

over_core!(Queues);

/// What a script answered about the group it was given (see [`Queues::group_hint`]).
pub(crate) enum GroupHint {
    /// Call again with this group's keys.
    Group(String),
    /// Leases of several groups: call once per lease.
    Several,
}

impl Queues {
    pub fn new(flows: Flows) -> Self {
        Self {
            core: Core::clone(&flows),
            flows,
            marks: Default::default(),
            keyed: Default::default(),
            groups: Default::default(),
        }
    }

    /// The keys of a queue with those of the group this replica last found it (or its leases)
    /// in, and that group's name ("" for none). Only a hint: every script that touches a group
    /// checks it against the queue's (or the lease's) and raises `BATON_GROUP <group>` before
    /// writing when it is another ([`Queues::group_hint`]).
    pub(crate) fn grouped_keys(&self, queue: &str) -> (crate::store::keys::QueueKeys, String) {
        let group = self.groups.lock().unwrap_or_else(|e| e.into_inner()).get(queue).cloned().unwrap_or_default();
        (self.keys.queue(queue).in_group(&self.keys, &group), group)
    }

    /// Remembers the group to try first for a queue ("" forgets it).
    pub(crate) fn learn_group(&self, queue: &str, group: &str) {
        let mut groups = self.groups.lock().unwrap_or_else(|e| e.into_inner());
        if group.is_empty() {
            groups.remove(queue);
        } else if groups.get(queue).map(String::as_str) != Some(group) {
            // Bounded memory: at worst a call more to learn a queue's group again.
            if groups.len() >= 100_000 {
                groups.clear();
            }
            groups.insert(queue.to_string(), group.to_string());
        }
    }

    /// What a script's error says about groups: `BATON_GROUP <group>` (the call met leases of,
    /// or a queue in, that group: it is learned, call again) or `BATON_GROUPS` (leases of several
    /// groups: call once per lease). None for any other error.
    pub(crate) fn group_hint(&self, queue: &str, e: &Error) -> Option<GroupHint> {
        let Error::Redis(e) = e else { return None };
        match e.code() {
            Some("BATON_GROUP") => {
                let group = e.detail().and_then(|d| d.split_whitespace().next()).unwrap_or("").to_string();
                crate::rpc::validate::name("group", &group).ok()?;
                self.learn_group(queue, &group);
                Some(GroupHint::Group(group))
            }
            Some("BATON_GROUPS") => Some(GroupHint::Several),
            _ => None,
        }
    }

    /// A script wrote `n` outbox entries in `queue` (see [`Flows::outboxed`]).
    pub(super) fn outboxed(&self, queue: &str, n: i64) {
        self.flows.outboxed(queue, n)
    }

    /// Reads each lease's parents' finishes (for leases whose agent has parents).
    pub(super) async fn fill_parents(&self, queue: &str, leases: &mut [Lease]) -> Result<()> {
        let names: Vec<&str> = leases.iter().filter(|l| !l.parents_read).map(|l| l.name.as_str()).collect();
        if names.is_empty() {
            return Ok(());
        }
        let families = self.flows.family(queue, &names, 0).await?;
        let mut families = families.into_iter();
        for lease in leases.iter_mut().filter(|l| !l.parents_read) {
            if let Some(f) = families.next() {
                lease.parents = f.parents.into_iter().filter_map(|(q, n, _, fin)| Some((q, n, fin?))).collect();
                lease.parents_read = true;
            }
        }
        Ok(())
    }
}

impl Shard<'_, Queues> {
    /// Upserts definitions (see [`RegisterAnswer`]); a retry with the same `request_id` gets the
    /// first call's answer. A cron agent's first fire is the first after the Redis clock of the
    /// queue's slot (`readClock`), read just before the write: a Baton host's clock never
    /// decides when an agent is due. New agents with parents are attached by the caller
    /// (`Queues::register`), once every shard has its agents.
    pub(super) async fn register(
        &self,
        queue: &str,
        agents: &[AgentDef],
        reset: bool,
        request_id: &str,
    ) -> Result<crate::flows::store::RegisterAnswer> {
        let k = self.keys.queue(queue);
        let mut agents = std::borrow::Cow::Borrowed(agents);
        if agents.iter().any(|def| !def.cron.is_empty() || def.ttl_ms > 0) {
            let Int(now) =
                self.call(Path::WriteBack, crate::flows::store::calls::ReadClock { routing: &k.defs }).await?;
            // A ttl counts from the Register, by the Redis clock (`super::expiry`).
            for def in agents.to_mut().iter_mut().filter(|def| def.ttl_ms > 0) {
                def.expire_at_ms = now.saturating_add(def.ttl_ms as i64);
            }
            for def in agents.to_mut().iter_mut().filter(|def| !def.cron.is_empty()) {
                // Checked at validation; an expression that fails here gets no first fire and is
                // due at once, as any new agent.
                def.first_fire_ms = crate::queues::cron::Schedule::parse(&def.cron, &def.time_zone)
                    .ok()
                    .and_then(|s| s.next_after(now));
            }
        }
        self.remember_queue(queue).await?;
        if agents.iter().any(|def| def.expire_at_ms > 0) {
            self.remember_expiring(queue).await?;
        }
        if agents.iter().any(|def| def.wait_for.as_ref().is_some_and(|w| w.until_ms > 0 || w.timeout_ms > 0)) {
            self.remember_timers(queue).await?;
        }
        // A batch larger than script_batch is applied in steps, each atomic; a retried call
        // finds each step's answer under its own request id.
        let mut out = crate::flows::store::RegisterAnswer::default();
        for (i, chunk) in self.policy.chunks(&agents).enumerate() {
            let step_id = crate::store::Policy::step_request_id(request_id, i);
            let part = self.register_script(queue, chunk, reset, &step_id).await?;
            out.created += part.created;
            out.updated += part.updated;
            out.deduplicated += part.deduplicated;
            out.items.extend(part.items);
        }
        Ok(out)
    }

    /// One registerAgents call: at most script_batch definitions.
    async fn register_script(
        &self,
        queue: &str,
        agents: &[AgentDef],
        reset: bool,
        request_id: &str,
    ) -> Result<crate::flows::store::RegisterAnswer> {
        let k = self.keys.queue(queue);
        let texts = agents
            .iter()
            .map(|def| {
                let json = def.record()?;
                let after = crate::flows::store::parents_arg(&def.after);
                let idempotency = def.idempotency.as_ref().map(Idempotency::arg).unwrap_or_default();
                let wait_for = def.wait_for.as_ref().map(WaitFor::arg).unwrap_or_default();
                Ok((json, after, idempotency, wait_for))
            })
            .collect::<Result<Vec<_>>>()?;
        let call = calls::RegisterAgents {
            keys: &k,
            reset,
            jitter_ms: self.policy.agent.initial_jitter_ms,
            seed: rand::random::<u32>().into(),
            channel: &self.keys.announce(ChannelKind::Queue, queue),
            queue,
            request: &crate::store::request_field(request_id, || "register".into()),
            retention_ms: self.policy.idempotency.retention_ms,
            max_entries: self.policy.idempotency.max_entries,
            finish_channel: &self.keys.announce_finishes(queue),
            result_ttl_ms: self.policy.results.retention_ms,
            result_max: self.policy.results.max_entries,
            agents: agents
                .iter()
                .zip(&texts)
                .map(|(def, (json, after, idempotency, wait_for))| calls::RegisterAgentsAgents {
                    name: &def.name,
                    def: json,
                    payload: &def.payload,
                    after,
                    idempotency,
                    wait_for,
                    _item: Default::default(),
                })
                .collect(),
        };
        let (created, updated, deduplicated, outboxed, items) = match self.call_items(Path::WriteBack, call, agents.len()).await? {
            Registered::ParentsFixed(name) => {
                return Err(Error::ParentsFixed {
                    field: "after".into(),
                    message: format!(
                        "agent {name:?} exists with other parents: they are fixed when it is created (an empty after keeps them)"
                    ),
                    agent: name,
                })
            }
            Registered::Applied { created, updated, deduplicated, outboxed, items } => {
                (created, updated, deduplicated, outboxed, items)
            }
        };
        let mut out = crate::flows::store::RegisterAnswer { created, updated, deduplicated, items: Vec::new() };
        for (def, (code, other, record)) in agents.iter().zip(items) {
            let held = code == 2 || code == 3;
            out.items.push(crate::flows::store::RegisteredItem {
                name: if held { other.clone() } else { def.name.clone() },
                created: code == 0,
                deduplicated: held,
                finish: crate::flows::store::FinishRecord::parse(&record),
                replaced: if code == 0 { other } else { String::new() },
                debounced: code == 3,
            });
        }
        self.outboxed(queue, outboxed);
        Ok(out)
    }

    /// Removes definitions; returns how many existed and, with `cascade` (their finishes
    /// cascade to their descendants), how many children their outbox entries took.
    pub(super) async fn unregister(&self, queue: &str, names: &[String], cascade: bool) -> Result<(u32, u32)> {
        let k = self.keys.queue(queue);
        let channel = self.keys.announce_finishes(queue);
        let (mut removed, mut cascaded) = (0, 0);
        for chunk in self.policy.chunks(names) {
            let call = calls::UnregisterAgents {
                keys: &k,
                channel: &channel,
                queue,
                result_ttl_ms: self.policy.results.retention_ms,
                result_max: self.policy.results.max_entries,
                cascade,
                agents: chunk
                    .iter()
                    .map(|name| calls::UnregisterAgentsAgents { name, _item: Default::default() })
                    .collect(),
            };
            let Unregistered(existed, outboxed, children) = self.call(Path::WriteBack, call).await?;
            removed += existed as u32;
            cascaded += children as u32;
            self.outboxed(queue, outboxed);
        }
        Ok((removed, cascaded))
    }

    /// Grants up to `max` due agents to `worker`: one script call per script_batch leases,
    /// while each call fills its part.
    pub(super) async fn acquire(&self, queue: &str, worker: &str, max: u32) -> Result<Acquired> {
        // Before any lease exists: the sweepers find leases through this index.
        self.mark_active(queue).await?;
        let step = self.policy.script_batch;
        let first = max.min(step);
        let mut got = self.acquire_script(queue, worker, first).await?;
        let mut full = got.leases.len() as u32 == first;
        while full && (got.leases.len() as u32) < max {
            let want = (max - got.leases.len() as u32).min(step);
            let part = match self.acquire_script(queue, worker, want).await {
                Ok(part) => part,
                // Leases granted already are held: hand them over; the caller asks again.
                Err(e) => {
                    tracing::debug!(queue, error = %e, "a later step of an Acquire failed; returning what was granted");
                    break;
                }
            };
            full = part.leases.len() as u32 == want;
            got.now_ms = part.now_ms;
            got.next_due_ms = part.next_due_ms;
            got.leases.extend(part.leases);
            if !full {
                break;
            }
        }
        Ok(got)
    }

    /// One acquire script call: acquireAgents, or acquireKeyed for a keyed queue.
    async fn acquire_script(&self, queue: &str, worker: &str, max: u32) -> Result<Acquired> {
        let (mut k, mut group) = self.grouped_keys(queue);
        let (max_leases, scan_limit) = (u64::from(max), u64::from(self.policy.scan_limit));
        // A keyed queue takes acquireKeyed, any other acquireAgents; the script checks.
        let mut keyed = self.keyed.lock().unwrap_or_else(|e| e.into_inner()).contains(&k.limits);
        let (mut tries, mut group_tries) = (0, 0);
        let channel = self.keys.announce_finishes(queue);
        let (result_ttl_ms, result_max) = (self.policy.results.retention_ms, self.policy.results.max_entries);
        let (now_ms, next_due, repaired, mut leases) = loop {
            let answer = if keyed {
                let call = calls::AcquireKeyed {
                    keys: &k,
                    worker,
                    max: max_leases,
                    scan_limit,
                    channel: &channel,
                    queue,
                    result_ttl_ms,
                    result_max,
                    group_name: &group,
                };
                self.call_items(Path::Dispatch, call, max as usize).await
            } else {
                let call = calls::AcquireAgents {
                    keys: &k,
                    worker,
                    max: max_leases,
                    scan_limit,
                    channel: &channel,
                    queue,
                    result_ttl_ms,
                    result_max,
                    group_name: &group,
                };
                self.call_items(Path::Dispatch, call, max as usize).await
            };
            // The queue is in another group than this replica knew: again with its keys.
            let answer = match answer {
                Err(e) => match self.group_hint(queue, &e) {
                    Some(GroupHint::Group(g)) if group_tries < 3 => {
                        group_tries += 1;
                        (k, group) = (self.keys.queue(queue).in_group(&self.keys, &g), g);
                        continue;
                    }
                    _ => return Err(e),
                },
                Ok(answer) => answer,
            };
            match answer {
                Acquisition::Granted { now_ms, next_due, repaired, expired, outboxed, leases } => {
                    self.expired(queue, expired, outboxed);
                    break (now_ms, next_due, repaired, leases);
                }
                Acquisition::OtherPath if tries < 2 => {
                    tries += 1;
                    keyed = !keyed;
                    let mut known = self.keyed.lock().unwrap_or_else(|e| e.into_inner());
                    if keyed {
                        known.insert(k.limits.clone());
                    } else {
                        known.remove(&k.limits);
                    }
                }
                Acquisition::OtherPath => {
                    return Err(Error::Internal(format!("acquire: queue {queue} changed paths twice in one call")))
                }
            }
        };
        if repaired > 0 {
            tracing::warn!(queue, repaired, "dropped waiting entries with no definition");
            metrics::counter!("baton_agents_repaired_total", "queue" => queue.to_string()).increment(repaired);
        }
        if leases.iter().any(|l| !l.def.cron.is_empty()) {
            leases = self.cron_runs(queue, leases).await;
        }
        // A lease carries its parents' finishes: one that cannot be read (Redis failing over
        // between the grant and the read) is read once more, and a lease still without them is
        // not handed over but given back at once, to be granted again with them.
        let mut filled = self.fill_parents(queue, &mut leases).await;
        if filled.is_err() {
            filled = self.fill_parents(queue, &mut leases).await;
        }
        if let Err(e) = filled {
            let (orphaned, kept): (Vec<Lease>, Vec<Lease>) = leases.into_iter().partition(|l| !l.parents_read);
            tracing::warn!(queue, error = %e, leases = orphaned.len(), "cannot read the parents' results of leases granted: given back");
            for l in &orphaned {
                if let Err(e) = self.release(queue, &l.name, l.token, 0).await {
                    tracing::warn!(queue, agent = %l.name, error = %e, "cannot give back a lease without its parents: it ends at its timeout");
                }
            }
            if kept.is_empty() {
                return Err(e);
            }
            leases = kept;
        }
        Ok(Acquired { now_ms, next_due_ms: (next_due >= 0).then_some(next_due), leases })
    }

    /// Records the next fire of each cron agent's run just acquired (the first fire after the
    /// run started); a run that starts after the fire following its own, of an agent whose
    /// policy is CATCH_UP_SKIP, is handed back to wait for that next fire and not returned. A
    /// run whose fire cannot be recorded still runs (its completion falls back to a minute
    /// after it started).
    async fn cron_runs(&self, queue: &str, leases: Vec<Lease>) -> Vec<Lease> {
        let k = self.keys.queue(queue);
        let mut out = Vec::with_capacity(leases.len());
        for lease in leases {
            if lease.def.cron.is_empty() {
                out.push(lease);
                continue;
            }
            let started = lease.deadline_ms - lease.def.timeout_ms as i64;
            let schedule = crate::queues::cron::Schedule::parse(&lease.def.cron, &lease.def.time_zone);
            let Some((schedule, next)) = schedule.ok().and_then(|s| s.next_after(started).map(|n| (s, n))) else {
                tracing::warn!(queue, agent = lease.name, cron = lease.def.cron, "cron expression no longer fires");
                out.push(lease);
                continue;
            };
            let call = calls::SetCronNext { keys: &k, name: &lease.name, token: lease.token, next_ms: next };
            let before = match self.call(Path::WriteBack, call).await {
                Ok(Int(before)) => before,
                Err(e) => {
                    tracing::warn!(queue, agent = lease.name, error = %e, "could not record the next fire");
                    out.push(lease);
                    continue;
                }
            };
            // The fire this run was scheduled for: the one recorded by the run before, or, for
            // the first run, the first fire computed at Register.
            let scheduled = if before >= 0 { Some(before) } else { lease.def.first_fire_ms };
            let late = scheduled.and_then(|s| schedule.next_after(s)).is_some_and(|following| following <= started);
            if lease.def.catch_up_skip && late {
                tracing::info!(
                    queue,
                    agent = lease.name,
                    next,
                    "cron run more than one fire late: skipped to the next fire"
                );
                metrics::counter!("baton_cron_skipped_total", "queue" => queue.to_string()).increment(1);
                if let Err(e) = self.release_with(queue, &lease.name, lease.token, 0, 0, Some(next)).await {
                    tracing::warn!(queue, agent = lease.name, error = %e, "could not skip the late run; running it");
                    out.push(lease);
                }
                continue;
            }
            out.push(lease);
        }
        out
    }

    /// Extends the leases of one queue, records the progress reported (`""`: none) and the
    /// worker alive; ends the leases CancelRun marked. Per lease, what happened.
    pub(super) async fn heartbeat(&self, queue: &str, worker: &str, leases: &[HeartbeatItem<'_>]) -> Result<Vec<Beat>> {
        let mut out = Vec::with_capacity(leases.len());
        for chunk in self.policy.chunks(leases) {
            out.extend(self.heartbeat_script(queue, worker, chunk).await?);
        }
        Ok(out)
    }

    /// One heartbeatLeases call.
    /// Marks a worker that holds leases of `queue` (one shard) seen now, as a heartbeat does:
    /// a worker that reconnects keeps what it held past a broken stream's grace.
    pub(super) async fn mark_seen(&self, queue: &str, worker: &str) -> Result<()> {
        self.heartbeat_script(queue, worker, &[]).await.map(drop)
    }

    async fn heartbeat_script(&self, queue: &str, worker: &str, leases: &[HeartbeatItem<'_>]) -> Result<Vec<Beat>> {
        let (mut k, mut group) = self.grouped_keys(queue);
        let mut tries = 0;
        loop {
            match self.heartbeat_call(queue, worker, leases, &k, &group).await {
                Err(e) => match self.group_hint(queue, &e) {
                    Some(GroupHint::Group(g)) if tries < 3 => {
                        tries += 1;
                        (k, group) = (self.keys.queue(queue).in_group(&self.keys, &g), g);
                    }
                    Some(GroupHint::Several) if leases.len() > 1 => {
                        // Cancelled runs of several groups: one call per lease.
                        let mut out = Vec::with_capacity(leases.len());
                        for one in leases.chunks(1) {
                            out.extend(Box::pin(self.heartbeat_script(queue, worker, one)).await?);
                        }
                        return Ok(out);
                    }
                    _ => return Err(e),
                },
                beats => return beats,
            }
        }
    }

    async fn heartbeat_call(
        &self,
        queue: &str,
        worker: &str,
        leases: &[HeartbeatItem<'_>],
        k: &crate::store::keys::QueueKeys,
        group: &str,
    ) -> Result<Vec<Beat>> {
        let texts: Vec<(String, String)> = leases
            .iter()
            .map(|(_, token, progress)| {
                (token.to_string(), if progress.is_empty() { String::new() } else { format!("={progress}") })
            })
            .collect();
        let call = calls::HeartbeatLeases {
            keys: k,
            group_name: group,
            worker,
            channel: &self.keys.announce_finishes(queue),
            queue,
            result_ttl_ms: self.policy.results.retention_ms,
            result_max: self.policy.results.max_entries,
            held: leases
                .iter()
                .zip(&texts)
                .map(|((name, _, _), (token, progress))| calls::HeartbeatLeasesHeld {
                    name,
                    token,
                    progress,
                    _item: Default::default(),
                })
                .collect(),
        };
        let Beats(beats, outboxed) = self.call(Path::WriteBack, call).await?;
        self.outboxed(queue, outboxed);
        Ok(beats)
    }
}

/// What unregisterAgents answered: agents removed, outbox entries written, children those
/// entries took for a cascade.
pub(crate) struct Unregistered(i64, i64, i64);

impl FromReply for Unregistered {
    fn from_reply(mut r: Reply) -> Result<Self> {
        Ok(Unregistered(r.next()?, r.next()?, r.next()?))
    }
}

impl Queues {
    /// A WatchAgent stream's read of agent `name` of `queue` (a physical queue): see
    /// [`Watched`]. With `mark_ms` > 0 an agent that exists is marked watched and awaited for
    /// that long (its current lease too); a name with no agent writes nothing.
    pub(crate) async fn watch_read(&self, queue: &str, name: &str, mark_ms: u64) -> Result<Watched> {
        let k = self.keys.queue(queue);
        self.call(Path::Dispatch, calls::WatchAgent { keys: &k, name, mark_ms }).await
    }

    /// Marks an agent's current run cancelled (it ends at the holder's next heartbeat); the
    /// lease's token, or None when the agent is not running. NotFound without such an agent
    /// (nothing written). With `cascade`, also freezes its children attached now under an
    /// outbox entry that cancels them and their descendants (cancelCascade; released by the
    /// flows task, page by page); the second value counts them.
    pub async fn cancel_run(&self, queue: &str, name: &str, cascade: bool) -> Result<(Option<u64>, u32)> {
        let queue_shard = self.shard_of(crate::store::SourceKind::Queue, queue, name).into_owned();
        let k = self.keys.queue(&queue_shard);
        let (code, cascaded) = if cascade {
            let channel = self.keys.announce_finishes(&queue_shard);
            let call = calls::CancelCascade { keys: &k, channel: &channel, queue: &queue_shard, name };
            let Pair(code, cascaded) = self.call(Path::WriteBack, call).await?;
            if cascaded > 0 {
                self.outboxed(&queue_shard, 1);
            }
            (code, cascaded as u32)
        } else {
            (self.call(Path::WriteBack, calls::CancelRun { keys: &k, name }).await?.0, 0)
        };
        match code {
            -1 => Err(Error::NotFound(format!("agent {name} in queue {queue}"))),
            0 => Ok((None, cascaded)),
            token => Ok((Some(token as u64), cascaded)),
        }
    }
}

impl Shard<'_, Queues> {
    /// Ends leases of one queue (all `items` name it), one script per script_batch items; per
    /// item, what happened, or None when its token was stale or unknown (that item changed
    /// nothing).
    /// `announce` false: children made due are not announced but answered (`Unannounced`).
    pub(super) async fn complete_batch(
        &self,
        queue: &str,
        items: &[&Completion],
        announce: bool,
    ) -> Result<(Vec<Option<Ended>>, Unannounced)> {
        let (mut out, mut due) = (Vec::with_capacity(items.len()), Vec::new());
        for chunk in self.policy.chunks(items) {
            let (ended, made_due) = self.complete_script(queue, chunk, announce).await?;
            out.extend(ended);
            due.extend(made_due);
        }
        Ok((out, due))
    }

    /// One completeAgents call.
    async fn complete_script(
        &self,
        queue: &str,
        items: &[&Completion],
        announce: bool,
    ) -> Result<(Vec<Option<Ended>>, Unannounced)> {
        let (mut k, mut group) = self.grouped_keys(queue);
        let mut tries = 0;
        loop {
            match self.complete_call(queue, items, &k, &group, announce).await {
                Err(e) => match self.group_hint(queue, &e) {
                    Some(GroupHint::Group(g)) if tries < 3 => {
                        tries += 1;
                        (k, group) = (self.keys.queue(queue).in_group(&self.keys, &g), g);
                    }
                    Some(GroupHint::Several) if items.len() > 1 => {
                        // Leases granted under several groups: one call per lease.
                        let (mut out, mut due) = (Vec::with_capacity(items.len()), Vec::new());
                        for one in items.chunks(1) {
                            let (ended, made_due) = Box::pin(self.complete_script(queue, one, announce)).await?;
                            out.extend(ended);
                            due.extend(made_due);
                        }
                        return Ok((out, due));
                    }
                    _ => return Err(e),
                },
                ended => return ended,
            }
        }
    }

    /// One completeAgents call with the keys of one group.
    async fn complete_call(
        &self,
        queue: &str,
        items: &[&Completion],
        k: &crate::store::keys::QueueKeys,
        group: &str,
        announce: bool,
    ) -> Result<(Vec<Option<Ended>>, Unannounced)> {
        let texts: Vec<(String, String)> = items
            .iter()
            .map(|c| {
                let request = crate::store::request_field(&c.request_id, || format!("complete|{}|{}", c.name, c.token));
                (c.token.to_string(), request)
            })
            .collect();
        let (agent, dead_letter) = (&self.policy.agent, &self.policy.dead_letter);
        let call = calls::CompleteAgents {
            keys: k,
            group_name: group,
            release_limit: self.policy.release_inline,
            announce_released: announce,
            forbidden_ms: agent.permanent_forbidden_backoff_ms,
            throttled_base_ms: agent.throttled_base_ms,
            throttled_multiplier: agent.throttled_multiplier,
            throttled_cap_ms: agent.throttled_cap_ms,
            max_immediate_retries: agent.max_immediate_retries.into(),
            jitter_ratio: agent.jitter_ratio,
            dlq_ttl_ms: dead_letter.ttl_ms,
            dlq_max_entries: dead_letter.max_entries,
            seed: rand::random::<u32>().into(),
            channel: &self.keys.announce_finishes(queue),
            queue,
            retention_ms: self.policy.idempotency.retention_ms,
            max_entries: self.policy.idempotency.max_entries,
            result_ttl_ms: self.policy.results.retention_ms,
            result_max: self.policy.results.max_entries,
            items: items
                .iter()
                .zip(&texts)
                .map(|(c, (token, request))| calls::CompleteAgentsItems {
                    name: &c.name,
                    token,
                    outcome: c.outcome.as_str(),
                    message: &c.message,
                    retry_after_ms: c.retry_after_ms,
                    request,
                    result: &c.result,
                    _item: Default::default(),
                })
                .collect(),
        };
        let Completions { items: codes, outboxed, released, due } =
            self.call_items(Path::WriteBack, call, items.len()).await?;
        if codes.len() != items.len() {
            return Err(Error::Internal(format!("completeAgents: {} answers for {} items", codes.len(), items.len())));
        }
        let mut out = Vec::with_capacity(items.len());
        for (code, time, streak) in codes {
            let (code, replayed) = if code >= 10 { (code - 10, true) } else { (code, false) };
            let how = match code {
                -1 => None,
                0 => Some(Completed::Rescheduled { next_run_ms: time, streak }),
                1 => Some(Completed::Removed),
                2 => Some(Completed::DeadLettered { at_ms: time, streak }),
                code => return Err(Error::Internal(format!("completeAgents: unknown code {code}"))),
            };
            out.push(how.map(|how| Ended { how, replayed }));
        }
        self.outboxed(queue, outboxed);
        if released > 0 {
            metrics::counter!("baton_flow_releases_total").increment(released as u64);
        }
        Ok((out, due))
    }

    /// Announces that agents of `queue` became due (what a script's addWaiting does), for
    /// children a completeAgents call made due unannounced.
    pub(super) async fn announce_due(&self, queue: &str) -> Result<()> {
        let channel = self.keys.channel(crate::store::keys::ChannelKind::Queue, queue);
        let command = if self.keys.is_sharded() { "SPUBLISH" } else { "PUBLISH" };
        self.redis.each(vec![redis::cmd(command).arg(channel).arg(queue).clone()]).await?;
        Ok(())
    }

    /// Hands a lease back; returns the next run, or None when the agent was unregistered.
    pub(super) async fn release(&self, queue: &str, name: &str, token: u64, delay_ms: u64) -> Result<Option<i64>> {
        self.release_with(queue, name, token, delay_ms, self.policy.agent.shutdown_jitter_ms, None).await
    }

    /// Release with an explicit jitter bound, or due exactly at `at_ms`.
    async fn release_with(
        &self,
        queue: &str,
        name: &str,
        token: u64,
        delay_ms: u64,
        jitter_ms: u64,
        at_ms: Option<i64>,
    ) -> Result<Option<i64>> {
        let (mut k, mut group) = self.grouped_keys(queue);
        let mut tries = 0;
        let released = loop {
            let call = calls::ReleaseAgent {
                keys: &k,
                name,
                token: &token.to_string(),
                delay_ms,
                jitter_ms,
                seed: rand::random::<u32>().into(),
                channel: &self.keys.announce(ChannelKind::Queue, queue),
                queue,
                at_ms: &at_ms.map(|t| t.to_string()).unwrap_or_default(),
                group_name: &group,
            };
            match self.call(Path::WriteBack, call).await {
                Err(e) => match self.group_hint(queue, &e) {
                    Some(GroupHint::Group(g)) if tries < 3 => {
                        tries += 1;
                        (k, group) = (self.keys.queue(queue).in_group(&self.keys, &g), g);
                    }
                    _ => return Err(e),
                },
                Ok(released) => break released,
            }
        };
        match released {
            Released::Lost => Err(Error::LeaseLost(format!("{queue}/{name} token {token}"))),
            Released::Rescheduled(next_run_ms) => Ok(Some(next_run_ms)),
            Released::Removed => Ok(None),
        }
    }

    /// One agent's definition and state, or None.
    pub(super) async fn get_agent(&self, queue: &str, name: &str) -> Result<Option<AgentInfo>> {
        let k = self.keys.queue(queue);
        let names = vec![calls::ReadAgentsNames { name, _item: Default::default() }];
        let call = calls::ReadAgents { keys: &k, paged: false, cursor: "", after: "", page_size: 0, prefix: "", names };
        let mut page = self.call(Path::Dispatch, call).await?;
        Ok(page.agents.pop())
    }

    /// Records a step of the run `token` holds (recordStep).
    pub(super) async fn record_step(
        &self,
        queue: &str,
        name: &str,
        token: u64,
        step: &str,
        result: &[u8],
    ) -> Result<StepAnswer> {
        let k = self.keys.queue(queue);
        let call = calls::RecordStep {
            keys: &k,
            name,
            token: &token.to_string(),
            step,
            result,
            max_steps: self.policy.max_steps.into(),
            max_bytes: self.policy.max_step_bytes as u64,
            channel: &self.keys.announce(ChannelKind::Queue, queue),
            queue,
        };
        self.call(Path::WriteBack, call).await
    }

    /// A page of agents from `cursor` (past `after` in its batch), sorted by name, only names
    /// starting with `prefix` (empty: every name; `[A-Za-z0-9._-]` only, as validated names
    /// are). The page's `next` names shard 0.
    pub(super) async fn list_agents(
        &self,
        queue: &str,
        cursor: &str,
        after: &str,
        page_size: u32,
        prefix: &str,
    ) -> Result<AgentPage> {
        let k = self.keys.queue(queue);
        let call = calls::ReadAgents {
            keys: &k,
            paged: true,
            cursor,
            after,
            page_size: page_size.into(),
            prefix,
            names: Vec::new(),
        };
        let mut page: AgentPage = self.call(Path::Dispatch, call).await?;
        // A page reads a run's record only for an agent waiting for an event (its signals).
        page.agents.iter_mut().for_each(|a| a.steps.clear());
        Ok(page)
    }
}

impl crate::store::scripts::FromReply for AgentPage {
    /// See lua/queues/readAgents-10.lua.
    fn from_reply(mut r: Reply) -> Result<Self> {
        let cursor: String = r.next()?;
        let after: String = r.next()?;
        let mut agents = Vec::new();
        while !r.is_empty() {
            let name: String = r.next()?;
            let json: Option<Vec<u8>> = r.next_opt()?;
            let payload: Vec<u8> = r.next()?;
            let waiting: Option<f64> = r.next_opt()?;
            let working: Option<f64> = r.next_opt()?;
            let lease: Option<String> = r.next_opt()?;
            let streak: Option<u32> = r.next_opt()?;
            let dlq: Option<f64> = r.next_opt()?;
            let dlq_context: Option<Vec<u8>> = r.next_opt()?;
            let steps: Vec<u8> = r.next()?;
            let wait: String = r.next()?;
            let Some(json) = json else { continue };
            let def = AgentDef::parse(name, &json, payload)?;
            let waiting_for = WaitRecord::parse(&wait);
            let state = if working.is_some() {
                AgentState::Working
            } else if waiting_for.is_some() {
                AgentState::WaitingForEvent
            } else if waiting.is_some() {
                AgentState::Waiting
            } else if dlq.is_some() {
                AgentState::DeadLettered
            } else {
                AgentState::Detached
            };
            let lease = lease.as_deref().and_then(LeaseRecord::parse);
            agents.push(AgentInfo {
                def,
                state,
                // A keyed queue's due agents wait at minus their due time (acquireAgents).
                next_run_ms: waiting.map(|s| s.abs() as i64),
                deadline_ms: working.map(|s| s as i64),
                holder: working.and(lease.as_ref().map(|l| l.worker.clone())),
                token: working.and(lease.as_ref().map(|l| l.token)),
                streak: streak.unwrap_or(0),
                progress: working.and(lease.as_ref().map(|l| l.progress.clone())).unwrap_or_default(),
                cancel_requested: working.is_some() && lease.as_ref().is_some_and(|l| l.cancel),
                dead_letter: dlq_context.and_then(|c| serde_json::from_slice(&c).ok()),
                // The steps of the run: read for the agents named (GetAgent), not for a page.
                steps: StepRecord::parse_list(&steps).unwrap_or_default(),
                signals_pending: RunEvents::parse(&steps).pending,
                waiting_for,
            });
        }
        let next = (!cursor.is_empty()).then_some(PagePosition { shard: 0, cursor, after });
        Ok(AgentPage { agents, next })
    }
}

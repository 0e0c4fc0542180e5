//! Work that depends on work: results kept after an agent finishes, Await, dependencies between
//! agents of any queues, and their release.
//!
//! Every step runs in one slot. A finish is written by the script that ends the agent
//! (`lua/includes/finished.lua`), in the parent's slot: its result record, and, if children are
//! attached, an outbox entry whose own set of children is frozen at that moment. Releasing those
//! children is a step in each child's slot (`lua/includes/releaseChild.lua`), keyed by the child
//! and the parent, and applied only while that parent is pending, so a release replayed after any
//! crash — of Baton, of a Redis primary — applies once. Baton walks the outbox page by page
//! ([`Flows::drain_outbox`]), a page being up to [`PAGE`] children across entries: in the
//! parents' slot, `releaseOutbox` releases the children of the same queue and drops what it
//! released in the same script; children of other queues are released in their slots, then
//! dropped from their entries (`advanceOutbox`). A replica that dies in between leaves the
//! entries where they were; the flows sweep ([`Flows::sweep_flows`]) finds them.
//!
//! A child is created blocked, with its parents pending, before it is attached to them
//! (`attachChildren`, in each parent's slot, which also answers parents that finished already);
//! until all are attached it is listed in `unattached`, and the sweep attaches what a crash left
//! out. Attaching is idempotent too.

use std::collections::BTreeMap;

use tokio::sync::mpsc;

use crate::error::Result;
use crate::store::{over_core, reply::Reply, Core, Path};

/// The typed calls of `lua/flows/`, generated from the scripts' headers.
pub(crate) mod calls {
    use crate::store::keys::QueueKeys;
    include!(concat!(env!("OUT_DIR"), "/calls_flows.rs"));
}
use crate::store::scripts::{FromReply, Int};

/// What releaseChildren answered: per item whether it is done (false: kept, WAIT on a
/// failure), and how many outbox entries the script wrote.
pub(crate) struct Released {
    done: Vec<bool>,
    outboxed: i64,
}

impl FromReply for Released {
    /// `{ (1 or 0)*, outboxed }`
    fn from_reply(mut r: Reply) -> Result<Self> {
        let mut codes = Vec::new();
        while !r.is_empty() {
            codes.push(r.next::<i64>()?);
        }
        let outboxed = codes.pop().unwrap_or(0);
        Ok(Released { done: codes.into_iter().map(|c| c == 1).collect(), outboxed })
    }
}

/// What releaseOutbox answered: the children released in the parents' slot, the outbox entries
/// it wrote, the entries that remain, and the page's entries with children of other queues.
pub(crate) struct OutboxRelease {
    here: usize,
    outboxed: i64,
    remaining: i64,
    page: Vec<OutboxEntry>,
}

impl FromReply for OutboxRelease {
    /// `{ here, outboxed, remaining, (member, record, n, child * n)* }`
    fn from_reply(mut r: Reply) -> Result<Self> {
        Ok(OutboxRelease { here: r.next()?, outboxed: r.next()?, remaining: r.next()?, page: parse_page(r)? })
    }
}

/// What knownAgents answered: per name asked, whether it is known and whether this call marked
/// it; then the trace context of the first names, as many as asked for.
pub(crate) struct KnownAgents {
    pub(crate) known: Vec<bool>,
    pub(crate) marked: Vec<bool>,
    pub(crate) contexts: Vec<String>,
}

impl FromReply for KnownAgents {
    /// `{ n, known (1 or 0) * n, marked (1 or 0) * n, traceparent* }`
    fn from_reply(mut r: Reply) -> Result<Self> {
        let n: usize = r.next()?;
        let known = (0..n).map(|_| Ok(r.next::<i64>()? == 1)).collect::<Result<_>>()?;
        let marked = (0..n).map(|_| Ok(r.next::<i64>()? == 1)).collect::<Result<_>>()?;
        let mut contexts = Vec::new();
        while !r.is_empty() {
            contexts.push(r.next()?);
        }
        Ok(KnownAgents { known, marked, contexts })
    }
}

/// Parents knownAgents marked for a Register, (physical queue, name): taken back if the
/// Register is refused after the check (`Flows::unmark`).
pub type Marks = Vec<(String, String)>;

/// What attachChildren answered: per child, "" (attached), "m" (parent missing) or the
/// parent's finish record.
pub(crate) struct Attached(Vec<Vec<u8>>);

impl FromReply for Attached {
    fn from_reply(mut r: Reply) -> Result<Self> {
        let mut out = Vec::new();
        while !r.is_empty() {
            out.push(r.next()?);
        }
        Ok(Attached(out))
    }
}

/// What awaitAgent answered: the kept finish, where the agent is, whether its next finish
/// will be kept, and the steps kept with the finish (raw: "<token>|<at>|<steps record>", or empty;
/// `queues::records::StepRecord::parse_kept` reads it).
pub(crate) struct Awaited(Option<FinishRecord>, AwaitState, bool, Vec<u8>);

impl FromReply for Awaited {
    /// `{ record or "", state, keeps, steps or "" }`
    fn from_reply(mut r: Reply) -> Result<Self> {
        let record: Vec<u8> = r.next()?;
        let state = match r.next::<i64>()? {
            0 => AwaitState::Missing,
            1 => AwaitState::Waiting,
            2 => AwaitState::Working,
            3 => AwaitState::DeadLettered,
            4 => AwaitState::Blocked,
            6 => AwaitState::WaitingForEvent,
            _ => AwaitState::Detached,
        };
        let keeps = r.next::<i64>()? == 1;
        let steps: Vec<u8> = r.next()?;
        Ok(Awaited(FinishRecord::parse(&record), state, keeps, steps))
    }
}

/// What readFamily answered: per agent asked about, its family.
pub(crate) struct Families(Vec<Family>);

impl FromReply for Families {
    /// Per name: `pending, #parents, (parent, state)*, #children, child*`.
    fn from_reply(mut r: Reply) -> Result<Self> {
        let mut out = Vec::new();
        while !r.is_empty() {
            let mut f = Family { pending: r.next()?, ..Default::default() };
            let n: usize = r.next()?;
            f.parents = parent_states(&mut r, n)?;
            let n: usize = r.next()?;
            for _ in 0..n {
                let member: String = r.next()?;
                if let Some((q, c)) = split_ref(&member) {
                    f.children.push((q.to_string(), c.to_string()));
                }
            }
            out.push(f);
        }
        Ok(Families(out))
    }
}

/// One of an agent's parents as its deps hash holds it: (parent queue, parent, its policy, its
/// finish once it released the agent).
pub(crate) type ParentState = (String, String, ParentPolicy, Option<FinishRecord>);

/// `n` (member, state) pairs of an agent's deps hash (`"<parent queue>|<parent>"` -> `p<policy>`
/// while pending, or the parent's result record), in (queue, name) order: as readFamily and
/// the acquire scripts answer them.
pub(crate) fn parent_states(r: &mut Reply, n: usize) -> Result<Vec<ParentState>> {
    let mut parents = Vec::with_capacity(n);
    for _ in 0..n {
        let member: String = r.next()?;
        let state: Vec<u8> = r.next()?;
        let Some((pq, p)) = split_ref(&member) else { continue };
        let (policy, finish) = if state.first() == Some(&b'p') {
            (ParentPolicy::from_letter(state.get(1).copied().unwrap_or(b'W')), None)
        } else {
            (ParentPolicy::Wait, FinishRecord::parse(&state))
        };
        parents.push((pq.to_string(), p.to_string(), policy, finish));
    }
    parents.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    Ok(parents)
}

/// Children released per page of an outbox entry.
pub const PAGE: usize = crate::config::RELEASE_PAGE as usize;

/// What a parent's failure does to a child waiting for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParentPolicy {
    Wait,
    Cancel,
    RunAnyway,
}

impl ParentPolicy {
    fn letter(self) -> char {
        match self {
            ParentPolicy::Wait => 'W',
            ParentPolicy::Cancel => 'C',
            ParentPolicy::RunAnyway => 'A',
        }
    }

    fn from_letter(c: u8) -> Self {
        match c {
            b'C' => ParentPolicy::Cancel,
            b'A' => ParentPolicy::RunAnyway,
            _ => ParentPolicy::Wait,
        }
    }
}

/// A parent named by a child: its physical queue, name, and policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParentRef {
    pub queue: String,
    pub name: String,
    pub policy: ParentPolicy,
}

pub use super::records::{Finish, FinishRecord};

/// What Register did with one agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisteredItem {
    /// The agent's name, or the holder of its idempotency key when deduplicated.
    pub name: String,
    pub created: bool,
    pub deduplicated: bool,
    /// The holder's kept finish, when deduplicated.
    pub finish: Option<FinishRecord>,
    /// The waiting agent this one replaced (idempotency mode replace); "" for none.
    pub replaced: String,
    /// Went into the waiting holder of its key (idempotency mode debounce).
    pub debounced: bool,
}

/// What one Register did.
#[derive(Clone, Debug, Default)]
pub struct RegisterAnswer {
    pub created: u32,
    pub updated: u32,
    pub deduplicated: u32,
    /// One per agent, in request order.
    pub items: Vec<RegisteredItem>,
}

/// Where an awaited agent is, when it has not finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AwaitState {
    Missing,
    Waiting,
    Working,
    DeadLettered,
    Blocked,
    /// Its run waits for an event or a time (`waits`).
    WaitingForEvent,
    Detached,
}

/// An agent's parents (with their finishes, once they released it) and first children.
#[derive(Clone, Debug, Default)]
pub struct Family {
    /// Parents still pending.
    pub pending: u32,
    /// (physical parent queue, parent name, policy, finish once applied), in name order.
    pub parents: Vec<(String, String, ParentPolicy, Option<FinishRecord>)>,
    /// (physical child queue, child name), up to the limit asked for.
    pub children: Vec<(String, String)>,
}

/// Queues whose outbox a script wrote to: drained by [`Flows::run_flows`].
pub struct Kicks {
    tx: mpsc::UnboundedSender<String>,
    rx: std::sync::Mutex<Option<mpsc::UnboundedReceiver<String>>>,
}

impl Default for Kicks {
    fn default() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self { tx, rx: std::sync::Mutex::new(Some(rx)) }
    }
}

/// The flows store: dependencies between agents, finishes kept, Await and batches, over the
/// core. The queues store writes through it where a queue's transition touches a flow.
#[derive(Clone)]
pub struct Flows {
    core: Core,
    /// Queues whose outbox a script wrote to, drained by the flows task (`run_flows`).
    kicks: std::sync::Arc<Kicks>,
}

over_core!(Flows);

impl Flows {
    pub fn new(core: Core) -> Self {
        Self { core, kicks: Default::default() }
    }
}

fn split_ref(member: &str) -> Option<(&str, &str)> {
    member.split_once('|')
}

/// An outbox entry in a page: its member ("<parent>|<seq>"), the parent's result record, and the
/// page's children of it ("<child queue>|<child>", each with whether its release is done: true
/// unless `releaseChildren` kept it).
struct OutboxEntry {
    member: String,
    record: Vec<u8>,
    children: Vec<(String, bool)>,
}

impl OutboxEntry {
    fn parent(&self) -> &str {
        self.member.rsplit_once('|').map_or(self.member.as_str(), |(p, _)| p)
    }
}

/// The rest of releaseOutbox's answer: per entry, member, record, n, then n children.
fn parse_page(mut r: Reply) -> Result<Vec<OutboxEntry>> {
    let mut page = Vec::new();
    while !r.is_empty() {
        let member: String = r.next()?;
        let record: Vec<u8> = r.next()?;
        let n: usize = r.next()?;
        let mut children = Vec::with_capacity(n);
        for _ in 0..n {
            children.push((r.next::<String>()?, true));
        }
        page.push(OutboxEntry { member, record, children });
    }
    Ok(page)
}

impl Flows {
    /// A script wrote `n` outbox entries in `queue`: release their children soon.
    pub(crate) fn outboxed(&self, queue: &str, n: i64) {
        if n > 0 {
            let _ = self.kicks.tx.send(queue.to_string());
        }
    }

    /// Notes queues that take part in dependencies, before anything is written there, so the
    /// flows sweep finds whatever a crash leaves behind in them.
    pub(crate) async fn remember_flow_queues(&self, queues: impl IntoIterator<Item = &str>) -> Result<()> {
        for q in queues {
            self.remember(self.keys.flows(), q).await?;
        }
        Ok(())
    }

    /// Which of `refs` (physical queue, name, traced) exist or have a finish kept; and for those
    /// `traced`, the trace context their definition carries ("" for none, or when only a finish
    /// is kept). Callers bound how many are traced (`trace::MAX_LINKS` per child).
    ///
    /// When every one is known, those that exist are marked as parents about to have a child
    /// (knownAgents' `mark`), so their finish is kept until the child is attached: in the same
    /// script when one call asks about them all, else in a second pass once all are known (a
    /// Register refused for an unknown parent writes nothing). Also answers the marks made, for
    /// a Register refused later to take back ([`Flows::unmark`]).
    pub async fn agents_known(&self, refs: &[(String, String, bool)]) -> Result<(Vec<(bool, String)>, Marks)> {
        let mut out = vec![(false, String::new()); refs.len()];
        let mut marks = Marks::new();
        let mut by_queue: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, (q, _, _)) in refs.iter().enumerate() {
            by_queue.entry(q).or_default().push(i);
        }
        let step = self.policy.script_batch as usize * 4;
        let mut steps = Vec::new();
        for (queue, mut positions) in by_queue {
            // The traced first: each step asks for the trace context of its first names.
            positions.sort_by_key(|&i| !refs[i].2);
            // In script-sized steps: a fan-in of 10,000 parents is not one long script.
            for chunk in positions.chunks(step) {
                steps.push((queue, chunk.to_vec()));
            }
        }
        let single = steps.len() == 1;
        for (queue, chunk) in &steps {
            let k = self.keys.queue(queue);
            let traced = chunk.iter().take_while(|&&i| refs[i].2).count();
            let names = chunk
                .iter()
                .map(|&i| calls::KnownAgentsNames { name: &refs[i].1, _item: Default::default() })
                .collect();
            let call = calls::KnownAgents { keys: &k, traced: traced as u64, mark: single, names };
            let KnownAgents { known, marked, contexts } = self.call(Path::Dispatch, call).await?;
            for (&i, known) in chunk.iter().zip(known) {
                out[i].0 = known;
            }
            for (&i, _) in chunk.iter().zip(marked).filter(|(_, m)| *m) {
                marks.push((refs[i].0.clone(), refs[i].1.clone()));
            }
            for (&i, context) in chunk[..traced].iter().zip(contexts) {
                out[i].1 = context;
            }
        }
        if !single && out.iter().all(|(known, _)| *known) {
            for (queue, chunk) in &steps {
                let k = self.keys.queue(queue);
                let names = chunk
                    .iter()
                    .map(|&i| calls::KnownAgentsNames { name: &refs[i].1, _item: Default::default() })
                    .collect();
                let call = calls::KnownAgents { keys: &k, traced: 0, mark: true, names };
                let KnownAgents { marked, .. } = self.call(Path::Dispatch, call).await?;
                for (&i, _) in chunk.iter().zip(marked).filter(|(_, m)| *m) {
                    marks.push((refs[i].0.clone(), refs[i].1.clone()));
                }
            }
        }
        Ok((out, marks))
    }

    /// Takes back the marks of a Register refused after its parents were checked
    /// (unmarkParents): a parent a child was attached to meanwhile keeps its mark.
    pub async fn unmark(&self, marks: &Marks) -> Result<()> {
        let mut by_queue: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (q, n) in marks {
            by_queue.entry(q).or_default().push(n);
        }
        for (queue, names) in by_queue {
            let k = self.keys.queue(queue);
            for chunk in names.chunks(self.policy.script_batch as usize * 4) {
                let names =
                    chunk.iter().map(|&name| calls::UnmarkParentsNames { name, _item: Default::default() }).collect();
                self.call(Path::WriteBack, calls::UnmarkParents { keys: &k, names }).await?;
            }
        }
        Ok(())
    }

    /// Attaches new children of `child_queue` (physical) to their parents, applies the parents
    /// that finished already, and marks the children attached.
    pub async fn attach(&self, child_queue: &str, children: &[(String, Vec<ParentRef>)]) -> Result<()> {
        if children.is_empty() {
            return Ok(());
        }
        // Triples by parent queue: (parent, child).
        let mut by_parent: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
        for (child, parents) in children {
            for p in parents {
                by_parent.entry(&p.queue).or_default().push((&p.name, child));
            }
        }
        let mut finished: Vec<(String, String, Vec<u8>)> = Vec::new();
        for (parent_queue, pairs) in by_parent {
            let k = self.keys.queue(parent_queue);
            // Script-sized steps (each attach is a few commands).
            for chunk in pairs.chunks(self.policy.script_batch as usize * 2) {
                let items = chunk
                    .iter()
                    .map(|&(parent, child)| calls::AttachChildrenLinks {
                        parent,
                        child_queue,
                        child,
                        _item: Default::default(),
                    })
                    .collect();
                let call = calls::AttachChildren { keys: &k, links: items };
                let Attached(answers) = self.call(Path::WriteBack, call).await?;
                for ((parent, child), answer) in chunk.iter().zip(answers) {
                    let record = match &answer[..] {
                        b"" => continue,
                        b"m" => FinishRecord::missing(),
                        _ => answer,
                    };
                    finished.push((child.to_string(), format!("{parent_queue}|{parent}"), record));
                }
            }
        }
        for chunk in finished.chunks(PAGE) {
            self.release_children(child_queue, chunk).await?;
        }
        let k = self.keys.queue(child_queue);
        let mut conn = self.redis.conn().await?;
        for chunk in children.chunks(PAGE) {
            let mut cmd = redis::cmd("ZREM");
            cmd.arg(&k.unattached);
            for (child, _) in chunk {
                cmd.arg(child);
            }
            cmd.query_async::<i64>(&mut conn).await?;
        }
        Ok(())
    }

    /// Applies parents' finishes to children of `queue` (physical): (child, "<parent queue>|
    /// <parent>", record). Per item, whether it is done (false: kept waiting for a retry).
    pub async fn release_children(&self, queue: &str, items: &[(String, String, Vec<u8>)]) -> Result<Vec<bool>> {
        let items: Vec<(&str, &str, &[u8])> = items.iter().map(|(c, p, r)| (c.as_str(), p.as_str(), &r[..])).collect();
        self.release_items(queue, &items).await
    }

    async fn release_items(&self, queue: &str, items: &[(&str, &str, &[u8])]) -> Result<Vec<bool>> {
        let k = self.keys.queue(queue);
        let call = calls::ReleaseChildren {
            keys: &k,
            channel: &self.keys.announce_finishes(queue),
            queue,
            result_ttl_ms: self.policy.results.retention_ms,
            result_max: self.policy.results.max_entries,
            releases: items
                .iter()
                .map(|&(child, parent, record)| calls::ReleaseChildrenReleases {
                    child,
                    parent,
                    record,
                    _item: Default::default(),
                })
                .collect(),
        };
        let Released { done, outboxed } = self.call_items(Path::WriteBack, call, items.len()).await?;
        self.outboxed(queue, outboxed);
        Ok(done)
    }

    /// Releases the children of `queue`'s outbox entries written at or before `before_ms`
    /// (None: all), page by page; returns how many children were released or kept.
    ///
    /// A page holds up to [`PAGE`] children across as many entries as they fit in (a fan-in's
    /// parents each leave an entry of one child). `releaseOutbox`, in the parents' slot, reads
    /// it, releases the children of the same queue there and then, and drops the entries it
    /// released; children of other queues come back, are released by one `releaseChildren` per
    /// child queue, and leave their entries with one `advanceOutbox`. So a page costs one script
    /// call when parents and children share a queue, and two plus one per other child queue
    /// when they do not. Every step is idempotent; a crash between them leaves the entries for
    /// the sweep, whose cutoff applies to each entry.
    pub async fn drain_outbox(&self, queue: &str, before_ms: Option<i64>) -> Result<usize> {
        let k = self.keys.queue(queue);
        let before = before_ms.map_or_else(|| "+inf".to_string(), |t| t.to_string());
        let channel = self.keys.announce_finishes(queue);
        let mut handled = 0;
        loop {
            let call = calls::ReleaseOutbox {
                keys: &k,
                channel: &channel,
                queue,
                result_ttl_ms: self.policy.results.retention_ms,
                result_max: self.policy.results.max_entries,
                before: &before,
                limit: PAGE as u64,
            };
            let OutboxRelease { here, outboxed, mut remaining, mut page } =
                self.call_items(Path::WriteBack, call, PAGE).await?;
            self.outboxed(queue, outboxed);
            metrics::counter!("baton_flow_releases_total").increment(here as u64);
            handled += here;
            if !page.is_empty() {
                handled += self.release_page(queue, &mut page).await?;
                remaining = self.advance_outbox(queue, &page, &before).await?;
            }
            if remaining == 0 {
                return Ok(handled);
            }
        }
    }

    /// Applies a page's finishes in the children's slots, one `releaseChildren` per child
    /// queue (in page order), and notes in the page whether each is done. Returns how many
    /// children were handled.
    async fn release_page(&self, queue: &str, page: &mut [OutboxEntry]) -> Result<usize> {
        // (entry, child) positions by child queue, in page order.
        let mut by_queue: BTreeMap<&str, Vec<(usize, usize)>> = BTreeMap::new();
        for (e, entry) in page.iter().enumerate() {
            for (c, child) in entry.children.iter().enumerate() {
                if let Some((q, _)) = split_ref(&child.0) {
                    by_queue.entry(q).or_default().push((e, c));
                }
            }
        }
        let from: Vec<String> = page.iter().map(|e| format!("{queue}|{}", e.parent())).collect();
        let mut answers: Vec<((usize, usize), bool)> = Vec::new();
        for (child_queue, positions) in by_queue {
            // A page holds at most PAGE children: one call per child queue.
            for chunk in positions.chunks(PAGE) {
                let items: Vec<(&str, &str, &[u8])> = chunk
                    .iter()
                    .map(|&(e, c)| {
                        let child = split_ref(&page[e].children[c].0).map_or("", |(_, c)| c);
                        (child, from[e].as_str(), &page[e].record[..])
                    })
                    .collect();
                let done = self.release_items(child_queue, &items).await?;
                answers.extend(chunk.iter().copied().zip(done));
            }
        }
        for ((e, c), done) in answers {
            page[e].children[c].1 = done;
        }
        let n = page.iter().map(|e| e.children.len()).sum();
        metrics::counter!("baton_flow_releases_total").increment(n as u64);
        Ok(n)
    }

    /// Drops a released page's children from their entries (the parents' slot); returns how
    /// many entries written at or before `before` remain.
    async fn advance_outbox(&self, queue: &str, page: &[OutboxEntry], before: &str) -> Result<i64> {
        let k = self.keys.queue(queue);
        let mut settled = Vec::new();
        for entry in page {
            let item = |child, released| calls::AdvanceOutboxSettled {
                member: &entry.member,
                child,
                released,
                _item: Default::default(),
            };
            if entry.children.is_empty() {
                settled.push(item("", true));
            }
            settled.extend(entry.children.iter().map(|(child, done)| item(child, *done)));
        }
        Ok(self.call(Path::WriteBack, calls::AdvanceOutbox { keys: &k, before, settled }).await?.0)
    }

    /// An agent's kept finish, or where it is, and whether its next finish will be kept (it
    /// keeps its result, has children, or is awaited); with `wait_ms` > 0 an agent that exists
    /// is marked awaited for that long, so its finish is kept and announced (a name with no
    /// agent writes nothing). Last, the steps kept with the finish, raw (see [`Awaited`]).
    pub async fn await_read(
        &self,
        queue: &str,
        name: &str,
        wait_ms: u64,
    ) -> Result<(Option<FinishRecord>, AwaitState, bool, Vec<u8>)> {
        let k = self.keys.queue(queue);
        let Awaited(record, state, keeps, steps) =
            self.call(Path::Dispatch, calls::AwaitAgent { keys: &k, name, wait_ms }).await?;
        Ok((record, state, keeps, steps))
    }

    /// The parents and first `children` children of agents of `queue` (physical).
    pub async fn family(&self, queue: &str, names: &[&str], children: usize) -> Result<Vec<Family>> {
        let k = self.keys.queue(queue);
        let names = names.iter().map(|name| calls::ReadFamilyNames { name, _item: Default::default() }).collect();
        let call = calls::ReadFamily { keys: &k, child_limit: children as u64, names };
        let Families(out) = self.call(Path::Dispatch, call).await?;
        Ok(out)
    }

    /// One pass of the flows sweep: in every queue that took part in dependencies, releases
    /// the children of outbox entries older than `older_than_ms` (a replica died draining
    /// them), and attaches children left unattached that long. Returns (entries' children
    /// handled, children attached).
    pub async fn sweep_flows(&self, older_than_ms: u64) -> Result<(usize, usize)> {
        let mut conn = self.redis.conn().await?;
        let queues: Vec<String> = redis::cmd("SMEMBERS").arg(self.keys.flows()).query_async(&mut conn).await?;
        drop(conn);
        let (mut released, mut attached) = (0, 0);
        for queue in queues {
            let now = self.redis_time_ms(&queue).await?;
            let cutoff = now - older_than_ms as i64;
            released += self.drain_outbox(&queue, Some(cutoff)).await?;
            attached += self.repair_unattached(&queue, cutoff).await?;
        }
        Ok((released, attached))
    }

    async fn redis_time_ms(&self, queue: &str) -> Result<i64> {
        let k = self.keys.queue(queue);
        let call = calls::ReadClock { routing: &k.defs };
        Ok(self.call(Path::Dispatch, call).await?.0)
    }

    /// Attaches the children of `queue` registered before `cutoff_ms` and still unattached.
    async fn repair_unattached(&self, queue: &str, cutoff_ms: i64) -> Result<usize> {
        let k = self.keys.queue(queue);
        let mut conn = self.redis.conn().await?;
        let names: Vec<String> = redis::cmd("ZRANGEBYSCORE")
            .arg(&k.unattached)
            .arg("-inf")
            .arg(cutoff_ms)
            .arg("LIMIT")
            .arg(0)
            .arg(PAGE)
            .query_async(&mut conn)
            .await?;
        drop(conn);
        if names.is_empty() {
            return Ok(0);
        }
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let families = self.family(queue, &refs, 0).await?;
        let children: Vec<(String, Vec<ParentRef>)> = names
            .iter()
            .zip(families)
            .map(|(name, f)| {
                let parents = f
                    .parents
                    .into_iter()
                    .filter(|p| p.3.is_none())
                    .map(|(queue, name, policy, _)| ParentRef { queue, name, policy })
                    .collect();
                (name.clone(), parents)
            })
            .collect();
        self.attach(queue, &children).await?;
        Ok(names.len())
    }

    /// Releases children whose parents finished, as scripts report outbox entries, until
    /// `shutdown`; and every `sweep` runs the flows sweep for what a crash left behind.
    ///
    /// With `takeover` (the outbox announcements of every replica, and a grace), a queue
    /// announced is looked at once the grace has passed since it was announced: entries older
    /// than half the grace are still there only if the replica that wrote them died before
    /// releasing them (it drains its own at once), and this replica releases them. One look
    /// per queue per grace, however many announcements: a TIME and a ZCOUNT when nothing is
    /// left, which is the rule.
    pub async fn run_flows(
        self,
        sweep: std::time::Duration,
        takeover: Option<(crate::store::wake::Outboxes, std::time::Duration)>,
        shutdown: tokio_util::sync::CancellationToken,
    ) {
        use tokio::time::Instant;
        let Some(mut rx) = self.kicks.rx.lock().expect("flow kicks").take() else {
            tracing::error!("the flows task runs once per store");
            return;
        };
        let mut tick = tokio::time::interval(sweep);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let (mut announced, grace) = match takeover {
            Some((outboxes, grace)) => (Some(outboxes), grace),
            None => (None, std::time::Duration::ZERO),
        };
        // Queue -> (first announcement not looked at yet, last announcement).
        let mut heard: BTreeMap<String, (Instant, Instant)> = BTreeMap::new();
        loop {
            let next_look = heard.values().map(|(first, _)| *first + grace).min();
            let announcement = async {
                match &mut announced {
                    Some(a) => a.rx.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = shutdown.cancelled() => return,
                a = announcement => match a {
                    Some(Some(queue)) => {
                        let now = Instant::now();
                        heard.entry(queue).and_modify(|e| e.1 = now).or_insert((now, now));
                    }
                    // Announcements may have been missed: the sweep looks at every queue.
                    Some(None) => {
                        if let Err(e) = self.sweep_flows(grace.as_millis() as u64).await {
                            tracing::warn!(error = %e, "flows sweep failed");
                        }
                    }
                    None => announced = None,
                },
                _ = tokio::time::sleep_until(next_look.unwrap_or_else(|| Instant::now() + sweep)), if next_look.is_some() => {
                    let now = Instant::now();
                    let due: Vec<String> =
                        heard.iter().filter(|(_, (first, _))| *first + grace <= now).map(|(q, _)| q.clone()).collect();
                    for queue in due {
                        if let Some((first, last)) = heard.remove(&queue) {
                            if last > first {
                                // Announced again since: looked at again a grace after that.
                                heard.insert(queue.clone(), (last, last));
                            }
                        }
                        match self.take_over(&queue, grace.as_millis() as u64 / 2).await {
                            Ok(0) => {}
                            Ok(released) => tracing::info!(queue, released, "released children a replica left in the outbox"),
                            Err(e) => tracing::warn!(queue, error = %e, "releasing children left in the outbox failed; the flows sweep retries"),
                        }
                    }
                }
                queue = rx.recv() => {
                    let Some(queue) = queue else { return };
                    // Every queue kicked meanwhile, once.
                    let mut queues = std::collections::BTreeSet::from([queue]);
                    while let Ok(q) = rx.try_recv() {
                        queues.insert(q);
                    }
                    for queue in queues {
                        if let Err(e) = self.drain_outbox(&queue, None).await {
                            // Left in the outbox: the sweep takes it up.
                            tracing::warn!(queue, error = %e, "releasing children failed; the flows sweep retries");
                        }
                    }
                }
                _ = tick.tick() => {
                    match self.sweep_flows(sweep.as_millis() as u64).await {
                        Ok((0, 0)) => {}
                        Ok((released, attached)) => tracing::info!(released, attached, "flows sweep repaired releases a crash left behind"),
                        Err(e) => tracing::warn!(error = %e, "flows sweep failed"),
                    }
                }
            }
        }
    }

    /// Releases the children of `queue`'s outbox entries older than `older_than_ms`, if it has
    /// any (a TIME and a ZCOUNT when it has none); returns how many were handled.
    async fn take_over(&self, queue: &str, older_than_ms: u64) -> Result<usize> {
        let queues = [queue.to_string()];
        if self.queues_with_old_entries(&queues, older_than_ms, |k| k.outbox.clone()).await?.is_empty() {
            return Ok(0);
        }
        let cutoff = self.redis_time_ms(queue).await? - older_than_ms as i64;
        self.drain_outbox(queue, Some(cutoff)).await
    }
}

/// The parents of a new agent as registerAgents takes them: "<queue>|<name>|<policy>" lines.
pub(crate) fn parents_arg(parents: &[ParentRef]) -> String {
    let mut s = String::new();
    for p in parents {
        if !s.is_empty() {
            s.push('\n');
        }
        s.push_str(&p.queue);
        s.push('|');
        s.push_str(&p.name);
        s.push('|');
        s.push(p.policy.letter());
    }
    s
}

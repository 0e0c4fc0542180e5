//! AgentService.Session: a worker's hot path on one bidirectional stream (see the proto for the
//! contract). One task per session:
//!
//! - takes in, without waiting, every message that has arrived (credit, completions,
//!   heartbeats, releases, steps), validating each message whole before any of it counts;
//! - flushes what it took in (one completeAgents script per queue shard, one heartbeat script,
//!   the releases side by side) while, in the same round trip, it acquires as many leases as
//!   the worker has credit for;
//! - answers both in one SessionResponse, then waits for the next message, a wake-up of its
//!   queue (from any replica), the earliest due time, or the end.
//!
//! So a busy worker's completions coalesce by themselves: whatever arrived while the previous
//! flush ran goes to Redis in the next one. With no credit the session reads nothing from Redis
//! and does not take its queue's wake-ups (it passes them on to other waiters).
//!
//! Invariants: leases pushed never exceed credit granted; a lease is pushed to one session only
//! (the acquire script grants it once); leases granted but not written to a stream that is gone
//! are released at once; everything else a broken session held follows the rules of a worker
//! that went silent (deadlines, the sweepers).

use std::{collections::HashMap, pin::Pin, sync::Arc, time::Duration};

use futures::{stream::FuturesOrdered, FutureExt, StreamExt};
use tokio::{sync::mpsc, time::Instant};
use tokio_stream::{wrappers::ReceiverStream, Stream};
use tonic::{Request, Response, Status, Streaming};

use crate::rpc::validate;

use crate::error::{Error, Result};
use crate::pb;
use crate::queues::leases::{complete_results, lease_pb};
use crate::queues::store::Queues;
use crate::queues::store::{Acquired, Completion, HeartbeatItem, Lease, Unannounced};
use crate::rpc::auth;
use crate::store::keys::ChannelKind;
use crate::store::SourceKind;

pub(crate) type SessionStream = Pin<Box<dyn Stream<Item = Result<pb::SessionResponse, Status>> + Send>>;

/// Rounds (a flush and an acquire) a session may have in flight at once: while Redis runs one,
/// the next is already queued behind it, so Redis never waits on the network or on Baton.
const ROUNDS: usize = 3;

/// How long a new stream may take to send its open message.
const OPEN_TIMEOUT: Duration = Duration::from_secs(30);

/// What opening a Session takes from the AgentService that serves it.
pub(crate) struct Opener<'a> {
    pub store: &'a Queues,
    /// Wake-ups: the session waits on its queue's.
    pub wakeups: &'a crate::store::wake::Wakeups,
    pub config: &'a Arc<crate::config::Config>,
    /// Cancelled when the server begins a graceful shutdown.
    pub shutdown: &'a tokio_util::sync::CancellationToken,
}

/// Reads the open message, checks it, and starts the session's task.
pub(crate) async fn open(
    service: &Opener<'_>,
    request: Request<Streaming<pb::SessionRequest>>,
) -> Result<Response<SessionStream>> {
    let identity = auth::identity(&request);
    let grant = auth::grant(&request);
    let mut inbound = request.into_inner();
    let first = first_message(&mut inbound).await?;
    let Some(open) = first.open.as_ref() else {
        return Err(Error::invalid("open", "is required on the first message"));
    };
    validate::name("open.queue", &open.queue)?;
    validate::name("open.worker_id", &open.worker_id)?;
    auth::authorize_as(&identity, open)?;
    let grant = grant.map(|g| g.scoped(open));
    let mut session = Session {
        store: service.store.clone(),
        queue: open.queue.clone(),
        worker: open.worker_id.clone(),
        max_batch: service.config.limits.max_batch as usize,
        config: service.config.clone(),
        credit: 0,
        pending: Pending::default(),
        held: HashMap::new(),
        gone: false,
        last_round: Instant::now(),
        grant: grant.clone(),
        registration: crate::rpc::workers::register(
            crate::rpc::workers::Kind::Session,
            &open.queue,
            &open.worker_id,
            0,
        ),
        identity,
    };
    session.take(first, true)?;
    let waiter = service
        .wakeups
        .waiter(ChannelKind::Queue, &session.queue, &session.store.shard_names(SourceKind::Queue, &session.queue))
        .await?;
    // Responses go boxed: a tokio channel allocates a block of 32 slots when it is made, and
    // 32 unboxed responses would be 4.6 KB more of every idle stream.
    let (tx, rx) = mpsc::channel::<Outgoing>(4);
    let shutdown = service.shutdown.clone();
    let grace = Duration::from_millis(service.config.orphan_cleanup.stream_grace_ms);
    // A worker reconnecting after a broken stream keeps what it held there (abandon below): the
    // new stream marks it seen. Opened with credit on a queue of one shard, its first round's
    // acquire does that already (every acquire script records the worker alive, granted or
    // not), so only a stream without credit, or on a sharded queue (whose acquire may not visit
    // every shard), pays a script call of its own at open.
    let first_round_marks = session.credit > 0 && session.store.shard_count(SourceKind::Queue, &session.queue) == 1;
    if !grace.is_zero() && !first_round_marks {
        let (store, queue, worker) = (session.store.clone(), session.queue.clone(), session.worker.clone());
        tokio::spawn(async move {
            if let Err(e) = store.mark_seen(&queue, &worker).await {
                tracing::debug!(queue, worker, error = %e, "could not mark a reconnecting worker seen");
            }
        });
    }
    let counted = crate::rpc::opens::Counted::new();
    tokio::spawn(async move {
        let _counted = counted;
        let _open = metrics::gauge!("baton_sessions_open");
        _open.increment(1.0);
        let queue = session.queue.clone();
        if let Err(e) = session.run(inbound, &tx, &waiter.notify, &shutdown).await {
            if matches!(e.code(), tonic::Code::Internal | tonic::Code::Unavailable) {
                tracing::warn!(queue, error = %e, "session ended");
            }
            let _ = tx.send(Err(Status::from(e))).await;
        }
        _open.decrement(1.0);
        if session.gone && !grace.is_zero() && !session.held.is_empty() && !shutdown.is_cancelled() {
            // Boxed: only a broken stream needs it, and the task of every open one would
            // otherwise be as large as it.
            Box::pin(session.abandon(grace)).await;
        }
    });
    let responses = ReceiverStream::new(rx).map(|r| r.map(|boxed| *boxed));
    Ok(Response::new(auth::guard(grant, responses)))
}

/// A response on its way to the worker (boxed: see where the channel is made).
type Outgoing = Result<Box<pb::SessionResponse>, Status>;

/// What the worker sent that is not yet flushed to Redis.
#[derive(Default)]
struct Pending {
    completions: Vec<Completion>,
    heartbeats: Vec<(String, u64, String)>,
    releases: Vec<(String, u64, u64)>,
    /// Steps to record (RecordStep): applied before the rest of the round.
    steps: Vec<pb::SessionStep>,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.completions.is_empty() && self.heartbeats.is_empty() && self.releases.is_empty() && self.steps.is_empty()
    }

    fn len(&self) -> usize {
        self.completions.len() + self.heartbeats.len() + self.releases.len() + self.steps.len()
    }
}

struct Session {
    store: Queues,
    queue: String,
    worker: String,
    max_batch: usize,
    config: Arc<crate::config::Config>,
    /// Leases the worker may still be pushed.
    credit: usize,
    pending: Pending,
    /// Leases pushed to the worker and not yet completed, released or reported lost: what a
    /// stream that breaks leaves behind (name → token).
    held: HashMap<String, u64>,
    /// The stream broke without the worker's half-close: its process may have died.
    gone: bool,
    /// When the last round's answer came: every script of this stream that marked the worker
    /// seen ran before it.
    last_round: Instant,
    /// What the stream was opened with: checked before each round, so nothing a worker sends
    /// after its token was revoked is applied, and no lease is granted to it.
    grant: Option<auth::Grant>,
    /// Its entry in the console's list of open connections (removed when the session ends).
    registration: crate::rpc::workers::Registration,
    /// Who opened it: its leases show only the parents within its scopes.
    identity: Option<Arc<auth::Identity>>,
}

impl Session {
    /// Takes one message in: validated whole first, so an invalid one changes nothing.
    fn take(&mut self, m: pb::SessionRequest, first: bool) -> Result<()> {
        if m.open.is_some() && !first {
            return Err(Error::invalid("open", "is allowed on the first message only"));
        }
        let credit = self.credit + m.credit as usize;
        if credit > self.max_batch {
            return Err(Error::invalid(
                "credit",
                format!("outstanding credit would be {credit}, more than max_batch ({})", self.max_batch),
            ));
        }
        validate::count("completions", m.completions.len(), 0, self.max_batch)?;
        validate::count("heartbeats", m.heartbeats.len(), 0, self.max_batch)?;
        validate::count("releases", m.releases.len(), 0, self.max_batch)?;
        validate::count("steps", m.steps.len(), 0, self.max_batch)?;
        for (i, st) in m.steps.iter().enumerate() {
            let field = format!("steps[{i}].");
            crate::queues::leases::check_step(&self.config.limits, &field, &st.name, st.token, &st.step, &st.result)?;
        }
        let mut completions = Vec::with_capacity(m.completions.len());
        for (i, c) in m.completions.into_iter().enumerate() {
            let wire = pb::CompleteRequest {
                queue: self.queue.clone(),
                name: c.name,
                token: c.token,
                outcome: c.outcome,
                message: c.message,
                retry_after: c.retry_after,
                request_id: String::new(),
                error_class: c.error_class,
                http_status: c.http_status,
                result: c.result,
                wait_for: c.wait_for,
            };
            let c = crate::queues::leases::completion(&self.config.limits, wire);
            completions.push(c.map_err(|e| e.within(format_args!("completions[{i}].")))?);
        }
        for (i, h) in m.heartbeats.iter().enumerate() {
            let valid = validate::agent_name("name", &h.name)
                .and_then(|()| validate::token("token", h.token))
                .and_then(|()| validate::progress("progress", &h.progress));
            valid.map_err(|e| e.within(format_args!("heartbeats[{i}].")))?;
        }
        let mut releases = Vec::with_capacity(m.releases.len());
        for (i, r) in m.releases.iter().enumerate() {
            let delay = validate::agent_name("name", &r.name)
                .and_then(|()| validate::token("token", r.token))
                .and_then(|()| validate::duration_ms("delay", r.delay.as_ref(), self.config.limits.max_duration_ms))
                .map_err(|e| e.within(format_args!("releases[{i}].")))?;
            releases.push((r.name.clone(), r.token, delay.unwrap_or(0)));
        }
        self.credit = credit;
        self.registration.credit(credit);
        self.registration.seen();
        for c in &completions {
            self.forget(&c.name, c.token);
        }
        for (name, token, _) in &releases {
            self.forget(name, *token);
        }
        self.pending.completions.extend(completions);
        self.pending.heartbeats.extend(m.heartbeats.into_iter().map(|h| (h.name, h.token, h.progress)));
        self.pending.releases.extend(releases);
        self.pending.steps.extend(m.steps);
        Ok(())
    }

    async fn run(
        &mut self,
        mut inbound: Streaming<pb::SessionRequest>,
        tx: &mpsc::Sender<Outgoing>,
        notify: &tokio::sync::Notify,
        shutdown: &tokio_util::sync::CancellationToken,
    ) -> Result<()> {
        let ctx = Arc::new(Ctx {
            store: self.store.clone(),
            queue: self.queue.clone(),
            worker: self.worker.clone(),
            limits: self.config.limits.clone(),
        });
        let mut open = true; // the worker has not half-closed
        let mut closed = false; // nobody reads the answers
        let mut want = true; // something may be due: acquire when there is credit
        let mut due_at: Option<Instant> = None;
        let mut notified = Box::pin(notify.notified());
        // An invalid message ends the session, once what came before it is flushed and answered.
        let mut fail: Option<Error> = None;
        // Rounds in flight, answered in the order they started. Each round is boxed: the set
        // allocates a stub task the size of its future for as long as the stream lives, and an
        // unboxed round (a flush and an acquire, joined) is kilobytes in every idle stream.
        let mut rounds = FuturesOrdered::new();
        loop {
            // Everything that has arrived, without waiting (bounded, so a flood still flushes).
            while open && self.pending.len() < self.max_batch {
                match inbound.message().now_or_never() {
                    None => break,
                    Some(Ok(Some(m))) => self.receive(m, &mut want, &mut open, &mut fail),
                    Some(Ok(None)) => open = false,
                    Some(Err(status)) => match undecodable(status) {
                        Ok(e) => (fail, open) = (Some(e), false),
                        // The worker is gone: nobody to answer; what is in flight still ends.
                        Err(_) => (self.gone, open) = (true, false),
                    },
                }
            }
            let stopping = shutdown.is_cancelled();
            if rounds.len() < ROUNDS {
                let acquire = want && self.credit > 0 && !stopping && open;
                if acquire || !self.pending.is_empty() {
                    auth::still_granted(&self.grant)?;
                    let asked = if acquire { self.credit.min(self.max_batch) } else { 0 };
                    if acquire {
                        // Armed before the acquire, so a wake-up between it and the wait is not
                        // missed.
                        notified.set(notify.notified());
                        notified.as_mut().enable();
                        want = false;
                        due_at = None;
                    }
                    self.credit -= asked;
                    rounds.push_back(Box::pin(round(ctx.clone(), std::mem::take(&mut self.pending), asked)));
                }
            }
            if rounds.is_empty() && self.pending.is_empty() {
                if let Some(e) = fail.take() {
                    return Err(e);
                }
                if !open || stopping {
                    return Ok(()); // answered everything; the stream ends cleanly
                }
            }
            // Waiting for work: credit to use, and no acquire already wanted (one that is wanted
            // starts as soon as a round is free; a fired wake-up or timer must not spin meanwhile).
            let waiting = self.credit > 0 && !stopping && open && !want;
            let timer = async {
                match due_at {
                    Some(at) if waiting => tokio::time::sleep_until(at).await,
                    _ => std::future::pending().await,
                }
            };
            tokio::select! {
                Some((answers, got, asked)) = rounds.next(), if !rounds.is_empty() => {
                    self.last_round = Instant::now();
                    let mut leases = Vec::new();
                    let mut failed = None;
                    match got {
                        None => {}
                        Some(Err(e)) => {
                            self.credit += asked;
                            failed = Some(e);
                        }
                        Some(Ok(got)) => {
                            let n = got.leases.len();
                            self.credit += asked - n;
                            self.registration.credit(self.credit);
                            if n > 0 {
                                metrics::counter!("baton_agents_acquired_total", "queue" => self.queue.clone())
                                    .increment(n as u64);
                            }
                            // Full: more may be due now. Otherwise wait for a wake-up or the
                            // next due time.
                            if n == asked {
                                want = true;
                            } else {
                                due_at = got.next_due_ms.map(|due| {
                                    Instant::now() + Duration::from_millis((due - got.now_ms).max(1) as u64)
                                });
                            }
                            if self.credit == 0 {
                                // Out of credit: stop taking the queue's wake-ups (one taken
                                // already is passed on when the armed future is dropped), and
                                // hand one on, since more may be due.
                                notified.set(notify.notified());
                                if n == asked {
                                    notify.notify_one();
                                }
                            }
                            leases = got.leases;
                        }
                    }
                    if let Err(e) = auth::still_granted(&self.grant) {
                        // Revoked while the round ran: its leases go back at once, unsent.
                        Box::pin(ctx.release_unsent(leases)).await;
                        return Err(e);
                    }
                    let mut response = match answers {
                        Ok(response) => response,
                        Err(e) => {
                            Box::pin(ctx.release_unsent(leases)).await;
                            return Err(e);
                        }
                    };
                    response.leases = leases.into_iter().map(|l| lease_pb(&self.queue, l, &self.identity)).collect();
                    for l in &response.lost {
                        self.forget(&l.name, l.token);
                    }
                    if closed {
                        Box::pin(ctx.release_pairs(response.leases.into_iter().map(|l| (l.name, l.token)))).await;
                    } else if !is_empty(&response) {
                        let pushed: Vec<(String, u64)> =
                            response.leases.iter().map(|l| (l.name.clone(), l.token)).collect();
                        if let Err(mpsc::error::SendError(Ok(unsent))) = tx.send(Ok(Box::new(response))).await {
                            let unsent = unsent.leases.into_iter().map(|l| (l.name, l.token));
                            Box::pin(ctx.release_pairs(unsent)).await;
                            self.gone |= open;
                            (open, closed) = (false, true);
                        } else {
                            self.held.extend(pushed);
                        }
                    }
                    if let Some(e) = failed {
                        return Err(e);
                    }
                }
                m = inbound.message(), if open => match m {
                    Ok(Some(m)) => self.receive(m, &mut want, &mut open, &mut fail),
                    Ok(None) => open = false,
                    Err(status) => match undecodable(status) {
                        Ok(e) => (fail, open) = (Some(e), false),
                        Err(_) => (self.gone, open) = (true, false),
                    },
                },
                _ = &mut notified, if waiting => want = true,
                _ = timer => want = true,
                _ = shutdown.cancelled(), if !stopping => {}
                _ = tx.closed(), if !closed => {
                    // Nobody reads the answers any more: the worker went without a half-close
                    // (if it had not half-closed already). Rounds in flight still end.
                    self.gone |= open;
                    (open, closed) = (false, true);
                }
            }
        }
    }

    /// A lease the worker ended (completed, released) or was told it lost: no longer held.
    fn forget(&mut self, name: &str, token: u64) {
        if self.held.get(name) == Some(&token) {
            self.held.remove(name);
        }
    }

    /// After a broken stream's grace, takes back what it held, as the orphan sweep would, unless
    /// the worker was seen after this stream's last round (it reconnected, to this replica or
    /// another: a new stream marks it seen when it opens).
    async fn abandon(&mut self, grace: Duration) {
        tokio::time::sleep(grace).await;
        let held: Vec<(String, u64)> = self.held.drain().collect();
        // "Not seen since this stream's last round", however late this runs.
        let silent_ms = self.last_round.elapsed().as_millis() as u64;
        match self.store.reap_abandoned(&self.queue, &self.worker, &held, silent_ms).await {
            Ok(taken) => {
                tracing::info!(
                    queue = self.queue,
                    worker = self.worker,
                    held = held.len(),
                    taken,
                    "stream broke; leases taken back"
                );
                metrics::counter!("baton_stream_leases_reclaimed_total", "kind" => "session").increment(taken as u64);
            }
            Err(e) => {
                tracing::warn!(queue = self.queue, error = %e, "could not take back a broken stream's leases; the orphan sweep will")
            }
        }
    }

    /// One message in: more credit means something may be due for it; an invalid message
    /// stops the reading (`fail`), and what came before it is still flushed.
    fn receive(&mut self, m: pb::SessionRequest, want: &mut bool, open: &mut bool, fail: &mut Option<Error>) {
        let credit = m.credit;
        match self.take(m, false) {
            Ok(()) => *want |= credit > 0,
            Err(e) => {
                *fail = Some(e);
                *open = false;
            }
        }
    }
}

/// What a session's rounds share: where they go.
struct Ctx {
    store: Queues,
    queue: String,
    worker: String,
    limits: crate::config::Limits,
}

impl Ctx {
    /// Applies completions, heartbeats and releases side by side; their answers.
    /// `quiet`: an acquire from this queue (one shard) follows in the same round; children the
    /// completions make due are answered (the second part) instead of announced.
    async fn flush(&self, p: &Pending, quiet: bool) -> Result<(pb::SessionResponse, Unannounced)> {
        let mut response = pb::SessionResponse::default();
        if p.is_empty() {
            return Ok((response, Vec::new()));
        }
        let store = &self.store;
        let queue = self.queue.as_str();
        // Steps first, one by one in the order sent, so a completion in the same round ends a
        // run whose steps are all recorded.
        for st in &p.steps {
            response.steps.push(self.record_step(st).await?);
        }
        let completions = async {
            if p.completions.is_empty() {
                return Ok((Vec::new(), Vec::new()));
            }
            if quiet {
                return store.complete_batch_unannounced(&p.completions).await;
            }
            Ok((store.complete_batch(&p.completions).await?, Vec::new()))
        };
        let heartbeats = async {
            if p.heartbeats.is_empty() {
                return Ok(Vec::new());
            }
            let items: Vec<HeartbeatItem> =
                p.heartbeats.iter().map(|(n, t, progress)| (n.as_str(), *t, progress.as_str())).collect();
            store.heartbeat(queue, &self.worker, &items).await
        };
        let releases = futures::future::join_all(
            p.releases.iter().map(|(name, token, delay)| store.release(queue, name, *token, *delay)),
        );
        let (done, deadlines, released) = tokio::join!(completions, heartbeats, releases);
        let (done, due) = done?;
        response.completed = complete_results(&p.completions, done);
        let lease_ref = |name: &str, token: u64| pb::LeaseRef {
            queue: queue.to_string(),
            name: name.to_string(),
            token,
            ..Default::default()
        };
        for ((name, token, _), beat) in p.heartbeats.iter().zip(deadlines?) {
            let answer = (&mut response.extended, &mut response.lost, &mut response.cancelled);
            crate::queues::leases::beat_answer(queue, name, *token, beat, answer);
        }
        for ((name, token, _), result) in p.releases.iter().zip(released) {
            match result {
                Ok(_) => response.released.push(lease_ref(name, *token)),
                Err(Error::LeaseLost(_)) => response.lost.push(lease_ref(name, *token)),
                Err(e) => return Err(e),
            }
        }
        if !response.lost.is_empty() {
            metrics::counter!("baton_leases_lost_total", "rpc" => "Session").increment(response.lost.len() as u64);
        }
        Ok((response, due))
    }

    /// Records one step; its answer (a lost lease or a limit is answered on the item, as
    /// CompleteBatch answers a lost lease; only a failing Redis ends the session).
    async fn record_step(&self, st: &pb::SessionStep) -> Result<pb::StepResult> {
        use crate::queues::store::StepAnswer;
        let answer = self.store.record_step(&self.queue, &st.name, st.token, &st.step, &st.result).await?;
        let mut out =
            pb::StepResult { name: st.name.clone(), token: st.token, step: st.step.clone(), ..Default::default() };
        match answer {
            StepAnswer::Lost => {
                metrics::counter!("baton_leases_lost_total", "rpc" => "Session").increment(1);
                out.lease_lost = true;
            }
            StepAnswer::TooMany { .. } => out.refused = "limits.max_steps".into(),
            StepAnswer::TooLarge { .. } => out.refused = "limits.max_step_bytes".into(),
            answer => {
                let lease = (self.queue.as_str(), st.name.as_str(), st.token);
                out.response = Some(crate::queues::leases::step_answer(
                    &self.limits,
                    "",
                    lease,
                    &st.step,
                    st.result.clone(),
                    answer,
                )?);
            }
        }
        Ok(out)
    }

    /// Leases granted that nobody will ever see (the stream went away, or the round failed):
    /// back to waiting at once rather than at their deadline.
    async fn release_unsent(&self, leases: Vec<Lease>) {
        self.release_pairs(leases.into_iter().map(|l| (l.name, l.token))).await
    }

    async fn release_pairs(&self, leases: impl Iterator<Item = (String, u64)>) {
        for (name, token) in leases {
            tracing::info!(queue = self.queue, agent = name, "session gone before its lease was sent; releasing");
            if let Err(e) = self.store.release(&self.queue, &name, token, 0).await {
                tracing::warn!(queue = self.queue, agent = name, error = %e, "could not release; the sweepers will");
            }
        }
    }
}

/// One round: flush what the worker sent, and (asked > 0) acquire up to `asked` leases, side by
/// side, so both share a round trip.
async fn round(
    ctx: Arc<Ctx>,
    pending: Pending,
    asked: usize,
) -> (Result<pb::SessionResponse>, Option<Result<Acquired>>, usize) {
    // Each part boxed, and made only when the round has it to do: inline, a round would be as
    // large as both parts together (kilobytes), whatever it does, for as long as it waits.
    // Children of this queue the completions make due are not announced when this round's
    // acquire reads the same queue: it usually takes them (a chain's next step), and a wake-up
    // would only bring this session, or another waiting here, an acquire that finds nothing.
    let quiet = asked > 0 && ctx.store.shard_count(SourceKind::Queue, &ctx.queue) == 1;
    let flush = async {
        if pending.is_empty() {
            return Ok((pb::SessionResponse::default(), Vec::new()));
        }
        Box::pin(ctx.flush(&pending, quiet)).await
    };
    let acquire = async {
        if asked == 0 {
            return None;
        }
        Some(Box::pin(ctx.store.acquire(&ctx.queue, &ctx.worker, asked as u32)).await)
    };
    // Polled in this order every time (tokio's join! starts with a different branch at each
    // poll), so the completions' script is queued on the connection before the acquire, which
    // then sees what they made due, unless the flush awaits something first.
    let (answers, got) = futures::join!(flush, acquire);
    let answers = match answers {
        Ok((response, due)) => {
            if !due.is_empty() && !took_all(&got, &due) {
                announce_due(&ctx);
            }
            Ok(response)
        }
        Err(e) => {
            // The completions may have run (an answer lost): what they made due is announced.
            if quiet {
                announce_due(&ctx);
            }
            Err(e)
        }
    };
    (answers, got, asked)
}

/// Announces that agents of the queue became due (completions of a quiet flush made them due
/// and the round's acquire did not take them all), on a task of its own: the round does not
/// wait for it (nor hold its answers meanwhile). A failure is logged: the agents are due, and
/// the next acquire of any worker takes them.
fn announce_due(ctx: &Arc<Ctx>) {
    let ctx = ctx.clone();
    tokio::spawn(async move {
        if let Err(e) = ctx.store.announce_due(&ctx.queue).await {
            tracing::warn!(queue = ctx.queue, error = %e, "could not announce agents made due");
        }
    });
}

/// Whether an acquire took every agent in `due`: then nobody needs a wake-up for them. Work due
/// before them was announced when it became due; this acquire taking its share of that, or not,
/// changes nothing for the others.
fn took_all(got: &Option<Result<Acquired>>, due: &[String]) -> bool {
    let Some(Ok(got)) = got else { return false };
    let granted: std::collections::HashSet<&str> = got.leases.iter().map(|l| l.name.as_str()).collect();
    due.iter().all(|name| granted.contains(name.as_str()))
}

/// The first message of a client stream (Session, Receive), which opens it: INVALID_ARGUMENT
/// ("open") if it does not come within `OPEN_TIMEOUT` or the stream ends first, ("request") if
/// it cannot be decoded.
pub(crate) async fn first_message<T>(inbound: &mut Streaming<T>) -> Result<T> {
    match tokio::time::timeout(OPEN_TIMEOUT, inbound.message()).await {
        Err(_) => Err(Error::invalid("open", "the first message did not arrive in time")),
        Ok(Err(status)) => Err(undecodable(status).unwrap_or_else(|s| Error::Internal(format!("stream: {s}")))),
        Ok(Ok(None)) => Err(Error::invalid("open", "the stream ended before its first message")),
        Ok(Ok(Some(first))) => Ok(first),
    }
}

/// A message the codec could not decode (INVALID_ARGUMENT, field "request", as for every unary
/// call): the error to end the session with; any other stream error means the worker is gone.
pub(crate) fn undecodable(status: Status) -> std::result::Result<Error, Status> {
    if status.code() != tonic::Code::InvalidArgument {
        return Err(status);
    }
    let reason = status.message().trim_start_matches("request: ").to_string();
    Ok(Error::invalid("request", reason))
}

fn is_empty(r: &pb::SessionResponse) -> bool {
    r.leases.is_empty()
        && r.completed.is_empty()
        && r.extended.is_empty()
        && r.lost.is_empty()
        && r.released.is_empty()
        && r.steps.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestRedis;

    /// A round holds its flush and its acquire boxed, each only when it has one to do: every
    /// open stream has a round in flight while it waits for work, and inline both parts would be
    /// kilobytes of it, whatever the round does.
    #[tokio::test]
    async fn a_round_in_flight_is_small() {
        let redis = TestRedis::start().await;
        let stores = redis.stores().await;
        let ctx = Arc::new(Ctx {
            store: stores.queues.clone(),
            queue: "q".into(),
            worker: "w".into(),
            limits: crate::config::Config::default().limits,
        });
        let acquire = std::mem::size_of_val(&ctx.store.acquire("q", "w", 1));
        let round = std::mem::size_of_val(&round(ctx.clone(), Pending::default(), 1));
        assert!(round * 4 < acquire, "a round is {round} B, the acquire it awaits {acquire} B");
    }
}

//! A worker loop for Rust workers, on one `Session` stream per worker: the server pushes leases
//! (never more than `max_leases` running at once) → the handler runs → its completion goes back
//! on the stream, coalesced with whatever else finished meanwhile, and heartbeats extend the
//! leases whose handlers still run. A lease reported lost, or its run cancelled (CancelRun,
//! answered in `lost` too), cancels its handler (its result would be refused anyway); handlers
//! report progress through [`Progress`] (a heartbeat carries it at once), end a run by waiting
//! for an event ([`Failure::wait_for`]; `Lease::event` then says what came), and their run's result
//! through [`Results`], sent with the completion; a lease's `parents` are its parents' results;
//! a run's steps are recorded through [`Steps`], and a retried run's lease carries them.
//!
//! A graceful stop (the shutdown token) completes every handler that had finished and waits for
//! the server's answer, cancels the handlers still running and hands their leases back, then
//! half-closes the stream and reads it to its end.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use baton_client::worker::{Failure, Worker};
//! let worker = Worker::connect("127.0.0.1:50051", "emails", "worker-1").await?;
//! let shutdown = tokio_util::sync::CancellationToken::new();
//! worker
//!     .run(shutdown, |lease, _cancelled| async move {
//!         // … do the work of lease.name with lease.agent.payload; `?` on any error …
//!         Err(Failure::from_http_status(429, "rate limited"))
//!     })
//!     .await?;
//! # Ok(()) }
//! ```

use std::{
    collections::{HashMap, HashSet},
    error::Error as StdError,
    future::Future,
    sync::{
        atomic::{AtomicU8, Ordering},
        Arc,
    },
    time::Duration,
};

use tokio::{
    sync::{mpsc, oneshot},
    time::Instant,
};
use tokio_util::{sync::CancellationToken, task::TaskTracker};
use tracing::Instrument;

use super::{Backoff, Conn};
use crate::pb::{self, agent_service_client::AgentServiceClient};

/// Why a run failed. An explicit `outcome` is applied as it is; without one the server
/// classifies the failure from `http_status` and `error_class` (the table above `enum Outcome`
/// in `agent.proto`). Any error converts into one with `?`: its message, its type as the class
/// (`"io"` or `"timeout"` for an I/O error anywhere in its chain).
#[derive(Clone, Debug, Default)]
pub struct Failure {
    /// The outcome to apply; None: the server's classification.
    pub outcome: Option<pb::Outcome>,
    /// What went wrong, sent whole (the server clips it to its limit).
    pub message: String,
    /// The error's type or code (at most 256 bytes).
    pub error_class: String,
    /// The HTTP status the error carried; 0: none.
    pub http_status: u16,
    /// A Retry-After the handler was told to respect.
    pub retry_after: Option<Duration>,
    /// Set by [`Failure::wait_for`]: the run ends its lease by waiting, not by failing.
    pub wait_for: Option<pb::WaitFor>,
}

impl Failure {
    /// A failure with an explicit outcome.
    pub fn new(outcome: pb::Outcome, message: impl Into<String>) -> Self {
        Self { outcome: Some(outcome), message: message.into(), ..Default::default() }
    }

    /// A failure carrying an HTTP status (e.g. from a response that was not a success), for the
    /// server to classify (429 → THROTTLED, 5xx → SERVER_ERROR, ...).
    pub fn from_http_status(status: u16, message: impl Into<String>) -> Self {
        Self { http_status: status, message: message.into(), ..Default::default() }
    }

    /// I/O errors, connection resets, timeouts: retried at once (up to the server's limit).
    pub fn transient(message: impl Into<String>) -> Self {
        Self::new(pb::Outcome::Transient, message)
    }

    /// Not a failure: the run waits for `event` (Signal), or until `timeout` passed ("" event: a
    /// durable timer), and is leased again with the event (`Lease::event`; timed out, if so).
    pub fn wait_for(event: impl Into<String>, timeout: Option<Duration>) -> Self {
        let wait_for = pb::WaitFor { event: event.into(), timeout: timeout.map(super::pb_duration), until: None };
        Self { wait_for: Some(wait_for), ..Default::default() }
    }

    pub fn retry_after(mut self, after: Duration) -> Self {
        self.retry_after = Some(after);
        self
    }

    /// The completion of a lease whose handler failed so.
    fn completion(self, lease: &pb::Lease) -> pb::SessionCompletion {
        let outcome = match self.outcome {
            Some(outcome) => outcome,
            // Nothing for the server to classify.
            None if self.wait_for.is_some() => pb::Outcome::Unspecified,
            None if self.error_class.is_empty() && self.http_status == 0 => pb::Outcome::Unknown,
            None => pb::Outcome::Unspecified,
        };
        pb::SessionCompletion {
            name: lease.name.clone(),
            token: lease.token,
            outcome: outcome as i32,
            message: self.message,
            retry_after: self.retry_after.map(super::pb_duration),
            error_class: self.error_class,
            http_status: self.http_status.into(),
            result: Vec::new(),
            wait_for: self.wait_for,
        }
    }
}

/// Any error is a failure for the server to classify; `Failure` itself is not an error type,
/// so `?` converts every other one.
impl<E: StdError + Send + Sync + 'static> From<E> for Failure {
    fn from(e: E) -> Self {
        let name = std::any::type_name::<E>();
        // The path without generic arguments (the server splits it into words).
        let mut error_class = name.split('<').next().unwrap_or(name).to_string();
        let mut source: Option<&(dyn StdError + 'static)> = Some(&e);
        while let Some(cause) = source {
            if let Some(io) = cause.downcast_ref::<std::io::Error>() {
                let timeout = io.kind() == std::io::ErrorKind::TimedOut;
                error_class = if timeout { "timeout" } else { "io" }.into();
                break;
            }
            source = cause.source();
        }
        if error_class.len() > 256 {
            error_class = name.rsplit("::").next().unwrap_or("error").chars().take(64).collect();
        }
        Self { message: e.to_string(), error_class, ..Default::default() }
    }
}

/// A worker of one queue.
#[derive(Clone)]
pub struct Worker {
    client: AgentServiceClient<Conn>,
    queue: String,
    worker_id: String,
    /// The most handlers running at once (the stream's credit).
    pub max_leases: u32,
    /// How often held leases are extended; should be well under the agents' timeout.
    pub heartbeat_every: Duration,
    progress: Progress,
    results: Results,
}

/// Progress reports of a worker's running handlers: a report makes the worker heartbeat at once,
/// carrying it (GetAgent shows the last one while the run is held; WatchAgent streams it). Cheap
/// to clone: take it from [`Worker::progress`] before `run` and move a clone into the handler.
#[derive(Clone, Default)]
pub struct Progress(Arc<std::sync::Mutex<Reports>>, Arc<tokio::sync::Notify>);

#[derive(Default)]
struct Reports {
    /// Reported, not yet sent: the latest value, and who waits for its heartbeat's answer.
    due: HashMap<Key, (String, Vec<oneshot::Sender<()>>)>,
    /// Sent on a heartbeat not yet answered: who waits for its answer.
    sent: HashMap<Key, Vec<oneshot::Sender<()>>>,
}

impl Progress {
    /// Reports `value` (a small text, at most 256 bytes) for the run of `lease`.
    pub fn report(&self, lease: &pb::Lease, value: impl Into<String>) {
        self.due(lease, value.into(), None);
    }

    /// [`Progress::report`], then waits (at most [`super::CALL_TIMEOUT`]) until Baton answered
    /// the heartbeat carrying it: what the handler does next (a step) comes after it.
    pub async fn send(&self, lease: &pb::Lease, value: impl Into<String>) {
        let (tx, rx) = oneshot::channel();
        self.due(lease, value.into(), Some(tx));
        let _ = tokio::time::timeout(super::CALL_TIMEOUT, rx).await;
    }

    fn due(&self, lease: &pb::Lease, value: String, waiter: Option<oneshot::Sender<()>>) {
        let mut reports = self.0.lock().unwrap();
        let due = reports.due.entry((lease.name.clone(), lease.token)).or_default();
        due.0 = value;
        due.1.extend(waiter);
        self.1.notify_one();
    }

    /// What to send with this lease's heartbeat: the latest report not yet sent, or "".
    fn take(&self, name: &str, token: u64) -> String {
        let mut reports = self.0.lock().unwrap();
        let key = (name.to_string(), token);
        let Some((value, waiters)) = reports.due.remove(&key) else { return String::new() };
        reports.sent.entry(key).or_default().extend(waiters);
        value
    }

    /// Baton answered these leases' heartbeats (extended, or lost): their waiters go on. A run
    /// that ended drops its reports (`ended`).
    fn answered<'a>(&self, leases: impl Iterator<Item = (&'a String, u64)>, ended: bool) {
        let mut reports = self.0.lock().unwrap();
        for key in leases.map(|(name, token)| (name.clone(), token)) {
            for waiter in reports.sent.remove(&key).unwrap_or_default() {
                let _ = waiter.send(());
            }
            if ended {
                reports.due.remove(&key);
            }
        }
    }
}

/// The results of a worker's runs: a handler that sets one for its lease and then returns `Ok`
/// sends it with the completion, for `Await` and the agent's children (their leases'
/// `parents`). Cheap to clone: take it from [`Worker::results`] before `run` and move a clone
/// into the handler.
#[derive(Clone, Default)]
pub struct Results(Arc<std::sync::Mutex<HashMap<Key, Vec<u8>>>>);

impl Results {
    /// Sets the result of the run of `lease` (at most the server's `limits.max_result_bytes`).
    pub fn set(&self, lease: &pb::Lease, result: impl Into<Vec<u8>>) {
        self.0.lock().unwrap().insert((lease.name.clone(), lease.token), result.into());
    }

    /// The result set for this run, taken (empty when none was).
    fn take(&self, key: &Key) -> Vec<u8> {
        self.0.lock().unwrap().remove(key).unwrap_or_default()
    }
}

/// Records the steps of a worker's runs (RecordStep, fenced by the lease's token): a retried
/// run's lease carries the steps its earlier attempts recorded, so a handler skips those
/// ([`Steps::recorded`]). Cheap to clone: take it from [`Worker::steps`] before `run`.
#[derive(Clone)]
pub struct Steps {
    client: AgentServiceClient<Conn>,
}

impl Steps {
    /// The result of `step` as an earlier attempt of this run recorded it, or None.
    pub fn recorded<'a>(lease: &'a pb::Lease, step: &str) -> Option<&'a [u8]> {
        lease.steps.iter().find(|s| s.name == step).map(|s| s.result.as_slice())
    }

    /// Records `step` of the run of `lease` with its result. A step recorded already keeps its
    /// first result (answered with `recorded` false); a lost lease is FAILED_PRECONDITION
    /// (LEASE_LOST).
    pub async fn record(
        &self,
        lease: &pb::Lease,
        step: &str,
        result: impl Into<Vec<u8>>,
    ) -> Result<pb::RecordStepResponse, tonic::Status> {
        let request = pb::RecordStepRequest {
            queue: lease.queue.clone(),
            name: lease.name.clone(),
            token: lease.token,
            step: step.into(),
            result: result.into(),
        };
        Ok(self.client.clone().record_step(request).await?.into_inner())
    }
}

/// A lease by (agent name, token).
type Key = (String, u64);

/// Where a handler is: running, returned (its result is to be completed), or interrupted
/// (its lease was lost, or the worker is stopping: no completion). Whichever comes first wins,
/// so a handler that returned just as the worker stopped is completed, not handed back.
const RUNNING: u8 = 0;
const RETURNED: u8 = 1;
const INTERRUPTED: u8 = 2;

/// A running handler: its cancel token and where it is.
struct Running {
    cancel: CancellationToken,
    state: Arc<AtomicU8>,
}

impl Running {
    /// Interrupts the handler unless it has returned already; true when it was interrupted.
    fn interrupt(&self) -> bool {
        let interrupted =
            self.state.compare_exchange(RUNNING, INTERRUPTED, Ordering::AcqRel, Ordering::Acquire).is_ok();
        if interrupted {
            self.cancel.cancel();
        }
        interrupted
    }
}

/// A handler that ended: its completion, or None when it was interrupted.
struct Done {
    key: Key,
    completion: Option<pb::SessionCompletion>,
}

/// What the worker tracks across the streams it opens.
#[derive(Default)]
struct SessionState {
    /// Leases whose handlers run.
    held: HashMap<Key, Running>,
    /// Completions sent and not yet answered: sent again on a new stream.
    unanswered: HashMap<Key, pb::SessionCompletion>,
    /// Releases sent and not yet answered: sent again on a new stream.
    releasing: HashSet<Key>,
    /// Leases the server reported lost, whose handlers are being cancelled.
    lost: HashSet<Key>,
}

fn release(key: &Key) -> pb::SessionRelease {
    pb::SessionRelease { name: key.0.clone(), token: key.1, delay: None }
}

impl SessionState {
    /// A handler ended: its completion is to be sent, or, interrupted by the stop (not by a lost
    /// lease), its lease handed back.
    fn finished(&mut self, done: Done, m: &mut pb::SessionRequest) {
        self.held.remove(&done.key);
        match done.completion {
            Some(c) => {
                self.unanswered.insert(done.key, c.clone());
                m.completions.push(c);
            }
            None if self.lost.remove(&done.key) => {}
            None => {
                m.releases.push(release(&done.key));
                self.releasing.insert(done.key);
            }
        }
    }

    /// The server's answers: completions and releases acknowledged, lost leases' handlers
    /// cancelled.
    fn answered(&mut self, r: &pb::SessionResponse) {
        for c in &r.completed {
            self.unanswered.remove(&(c.name.clone(), c.token));
            if c.lease_lost {
                tracing::warn!(name = c.name, token = c.token, "completion refused: the lease was lost");
            }
        }
        for released in r.released.iter().chain(&r.lost) {
            self.releasing.remove(&(released.name.clone(), released.token));
        }
        for lost in &r.lost {
            let key = (lost.name.clone(), lost.token);
            if self.held.get(&key).is_some_and(Running::interrupt) {
                tracing::warn!(name = lost.name, token = lost.token, "lease lost; cancelling its handler");
                self.lost.insert(key);
            }
        }
    }

    /// The stop: every handler still running is interrupted (its lease handed back once it
    /// returns); those that returned are completed.
    fn interrupt_all(&mut self) {
        for running in self.held.values() {
            running.interrupt();
        }
    }

    /// Nothing running and nothing unanswered: a stopping worker may end its stream.
    fn settled(&self) -> bool {
        self.held.is_empty() && self.unanswered.is_empty() && self.releasing.is_empty()
    }

    /// The leases to extend: those whose handlers still run, with the progress reported since
    /// the last beat.
    fn beating(&self, progress: &Progress) -> Vec<pb::SessionLease> {
        (self.held.iter())
            .filter(|(_, running)| running.state.load(Ordering::Acquire) == RUNNING)
            .map(|((name, token), _)| pb::SessionLease {
                name: name.clone(),
                token: *token,
                progress: progress.take(name, *token),
            })
            .collect()
    }
}

impl Worker {
    /// Connects to the Baton at `addr` (`host:port`, `http://host:port`); a malformed address
    /// is an error.
    pub async fn connect(
        addr: &str,
        queue: &str,
        worker_id: &str,
    ) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        let client = super::Client::builder(addr).connect().await?;
        Ok(Self::new(&client, queue, worker_id))
    }

    /// A worker over `client` (a [`super::Client`], or a plain `Channel`).
    pub fn new(client: impl Into<super::Client>, queue: &str, worker_id: &str) -> Self {
        Self {
            client: client.into().agents(),
            queue: queue.into(),
            worker_id: worker_id.into(),
            max_leases: 1,
            // Three beats within the server's default orphan threshold (10 s).
            heartbeat_every: Duration::from_secs(3),
            progress: Progress::default(),
            results: Results::default(),
        }
    }

    /// The handle handlers report progress with (see [`Progress`]).
    pub fn progress(&self) -> Progress {
        self.progress.clone()
    }

    /// The handle handlers set their run's result with (see [`Results`]).
    pub fn results(&self) -> Results {
        self.results.clone()
    }

    /// The handle handlers record their run's steps with (see [`Steps`]).
    pub fn steps(&self) -> Steps {
        Steps { client: self.client.clone() }
    }

    /// Runs until `shutdown`, then stops gracefully (see the module's documentation). The
    /// handler gets the lease and a token cancelled when the lease is lost or the worker stops.
    ///
    /// A broken stream is opened again after a [`Backoff`]; completions and releases it did not
    /// answer are sent again on the next one (the token fences a repeat). A stream the server
    /// refuses for good (INVALID_ARGUMENT, UNAUTHENTICATED, PERMISSION_DENIED, UNIMPLEMENTED)
    /// is an error.
    pub async fn run<H, F>(self, shutdown: CancellationToken, handler: H) -> Result<(), tonic::Status>
    where
        H: Fn(pb::Lease, CancellationToken) -> F + Send + Sync + 'static,
        F: Future<Output = Result<(), Failure>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let mut state = SessionState::default();
        let running = TaskTracker::new();
        let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Done>();
        let mut backoff = Backoff::new();
        let max = self.max_leases.max(1) as usize;
        let mut stopping = false;
        // Once stopping with every handler returned: how long unanswered completions and
        // releases are waited for (a dead server is not waited for).
        let mut give_up: Option<Instant> = None;
        let result = 'session: loop {
            if shutdown.is_cancelled() && !stopping {
                stopping = true;
                state.interrupt_all();
            }
            if stopping && give_up.is_none() && state.held.is_empty() {
                give_up = Some(Instant::now() + super::CALL_TIMEOUT);
            }
            if stopping && (state.settled() || give_up.is_some_and(|at| Instant::now() >= at)) {
                break Ok(());
            }
            let (tx, rx) = mpsc::channel::<pb::SessionRequest>(64);
            // Credit: the free slots; completions and releases not yet answered go again.
            let first = pb::SessionRequest {
                open: Some(pb::SessionOpen { queue: self.queue.clone(), worker_id: self.worker_id.clone() }),
                credit: if stopping { 0 } else { (max - state.held.len()) as u32 },
                completions: state.unanswered.values().cloned().collect(),
                releases: state.releasing.iter().map(release).collect(),
                ..Default::default()
            };
            tx.send(first).await.expect("the receiver is here");
            let mut client = self.client.clone();
            let opened = tokio::select! {
                _ = shutdown.cancelled(), if !stopping => continue, // opened again as stopping
                r = client.session(tokio_stream::wrappers::ReceiverStream::new(rx)) => r,
            };
            let mut stream = match opened {
                Ok(s) => s.into_inner(),
                Err(status) if is_final(&status) => break Err(status),
                Err(status) => {
                    tracing::warn!(%status, "session failed to open");
                    tokio::time::sleep(backoff.after(&status)).await;
                    continue;
                }
            };
            let mut beat = tokio::time::interval_at(Instant::now() + self.heartbeat_every, self.heartbeat_every);
            loop {
                if stopping && give_up.is_none() && state.held.is_empty() {
                    give_up = Some(Instant::now() + super::CALL_TIMEOUT);
                }
                if stopping && state.settled() {
                    drop(tx); // half-close: the server answers what it has and ends the stream
                    self.drain(&mut stream).await;
                    break 'session Ok(());
                }
                let mut m = pb::SessionRequest::default();
                tokio::select! {
                    _ = shutdown.cancelled(), if !stopping => {
                        stopping = true;
                        state.interrupt_all();
                    }
                    _ = tokio::time::sleep_until(give_up.unwrap_or_else(Instant::now)), if give_up.is_some() => {
                        tracing::warn!("stopping: the server did not answer the last completions in time");
                        break 'session Ok(());
                    }
                    r = stream.message() => match r {
                        Ok(Some(r)) => {
                            backoff.reset();
                            state.answered(&r);
                            let extended = r.extended.iter().map(|e| (&e.name, e.token));
                            self.progress.answered(extended.chain(r.lost.iter().map(|l| (&l.name, l.token))), false);
                            for lease in r.leases {
                                let key = (lease.name.clone(), lease.token);
                                if stopping {
                                    // Pushed for credit given before the stop: handed back.
                                    m.releases.push(release(&key));
                                    state.releasing.insert(key);
                                    continue;
                                }
                                let run = Running { cancel: CancellationToken::new(), state: Arc::default() };
                                let (cancel, at) = (run.cancel.clone(), run.state.clone());
                                state.held.insert(key, run);
                                let (handler, done, results) = (handler.clone(), done_tx.clone(), self.results.clone());
                                running.spawn(async move {
                                    let span = crate::otel::lease_span(&lease);
                                    let result = handler(lease.clone(), cancel).instrument(span.clone()).await;
                                    crate::otel::record_outcome(&span, result.as_ref().map(|_| ()).map_err(|f| f.outcome));
                                    let returned =
                                        at.compare_exchange(RUNNING, RETURNED, Ordering::AcqRel, Ordering::Acquire).is_ok();
                                    let value = results.take(&(lease.name.clone(), lease.token));
                                    let completion = returned.then(|| completion(&lease, result.map(|()| value)));
                                    let _ = done.send(Done { key: (lease.name, lease.token), completion });
                                });
                            }
                        }
                        Ok(None) => continue 'session, // the server ended it (shutting down)
                        Err(status) => {
                            tracing::warn!(%status, "session broke; opening another");
                            tokio::time::sleep(backoff.after(&status)).await;
                            continue 'session;
                        }
                    },
                    Some(done) = done_rx.recv() => {
                        // Everything finished by now goes in one message, with a credit for
                        // each freed slot (none once stopping).
                        let mut finished = 1;
                        self.progress.answered(std::iter::once((&done.key.0, done.key.1)), true);
                        state.finished(done, &mut m);
                        while let Ok(done) = done_rx.try_recv() {
                            self.progress.answered(std::iter::once((&done.key.0, done.key.1)), true);
                            state.finished(done, &mut m);
                            finished += 1;
                        }
                        m.credit = if stopping { 0 } else { finished };
                    }
                    _ = beat.tick() => m.heartbeats = state.beating(&self.progress),
                    _ = self.progress.1.notified() => m.heartbeats = state.beating(&self.progress),
                }
                let empty =
                    m.credit == 0 && m.completions.is_empty() && m.releases.is_empty() && m.heartbeats.is_empty();
                if !empty && tx.send(m).await.is_err() {
                    continue 'session;
                }
            }
        };
        running.close();
        running.wait().await;
        result
    }

    /// After the half-close: reads the stream to its end. A lease pushed by an acquire the
    /// server started before it saw the half-close is handed back by a Release call.
    async fn drain(&self, stream: &mut tonic::Streaming<pb::SessionResponse>) {
        let drain = async {
            while let Ok(Some(r)) = stream.message().await {
                for lease in r.leases {
                    let release = pb::ReleaseRequest {
                        queue: self.queue.clone(),
                        name: lease.name,
                        token: lease.token,
                        delay: None,
                    };
                    let _ = self.client.clone().release(release).await;
                }
            }
        };
        let _ = tokio::time::timeout(super::CALL_TIMEOUT, drain).await;
    }
}

/// A stream refused for a reason another attempt will not change.
fn is_final(status: &tonic::Status) -> bool {
    use tonic::Code::*;
    matches!(status.code(), InvalidArgument | Unauthenticated | PermissionDenied | Unimplemented)
}

/// The completion a handler's result maps to.
fn completion(lease: &pb::Lease, result: Result<Vec<u8>, Failure>) -> pb::SessionCompletion {
    match result {
        Ok(result) => pb::SessionCompletion {
            name: lease.name.clone(),
            token: lease.token,
            outcome: pb::Outcome::Success as i32,
            result,
            ..Default::default()
        },
        Err(failure) => failure.completion(lease),
    }
}

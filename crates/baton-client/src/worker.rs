//! A worker loop for Rust workers, over the generated client: leases pushed on a `Session`
//! stream (or, from a server without it, long-poll Acquire) → run the handler → heartbeat
//! while it runs → complete with the outcome the handler's result maps to.
//! A lease reported lost, or its run cancelled (CancelRun, answered in `lost` too), cancels its
//! handler (its result would be refused anyway); handlers report progress through [`Progress`],
//! sent with the next heartbeat. On shutdown
//! the loop stops acquiring, cancels running handlers and Releases their leases, so another
//! worker takes them at once.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use baton_client::worker::{Failure, Worker};
//! let worker = Worker::connect("http://127.0.0.1:50051", "emails", "worker-1").await?;
//! let shutdown = tokio_util::sync::CancellationToken::new();
//! worker
//!     .run(shutdown, |lease, _cancelled| async move {
//!         // … do the work of lease.name with lease.agent.payload …
//!         Err(Failure::from_http_status(429, "rate limited"))
//!     })
//!     .await?;
//! # Ok(()) }
//! ```

use std::{collections::HashMap, future::Future, sync::Arc, time::Duration};

use super::Conn;
use tokio::sync::{mpsc, Mutex};
use tokio_util::{sync::CancellationToken, task::TaskTracker};
use tracing::Instrument;

use crate::pb::{self, agent_service_client::AgentServiceClient};

/// Why a run failed, and so how Baton reschedules it.
#[derive(Clone, Debug)]
pub struct Failure {
    pub outcome: pb::Outcome,
    pub message: String,
    /// A Retry-After the handler was told to respect.
    pub retry_after: Option<Duration>,
}

impl Failure {
    pub fn new(outcome: pb::Outcome, message: impl Into<String>) -> Self {
        Self { outcome, message: message.into(), retry_after: None }
    }

    /// The documented mapping of HTTP status codes: 401/403 → PERMANENT_FORBIDDEN, 429 →
    /// THROTTLED, 408 → TRANSIENT, 5xx → SERVER_ERROR, anything else → UNKNOWN.
    pub fn from_http_status(status: u16, message: impl Into<String>) -> Self {
        let outcome = match status {
            401 | 403 => pb::Outcome::PermanentForbidden,
            429 => pb::Outcome::Throttled,
            408 => pb::Outcome::Transient,
            500..=599 => pb::Outcome::ServerError,
            _ => pb::Outcome::Unknown,
        };
        Self::new(outcome, message)
    }

    /// I/O errors, connection resets, timeouts: retried at once (up to the server's limit).
    pub fn transient(message: impl Into<String>) -> Self {
        Self::new(pb::Outcome::Transient, message)
    }

    pub fn retry_after(mut self, after: Duration) -> Self {
        self.retry_after = Some(after);
        self
    }
}

/// A worker of one queue.
#[derive(Clone)]
pub struct Worker {
    client: AgentServiceClient<Conn>,
    queue: String,
    worker_id: String,
    /// Leases asked for per Acquire, and the most handlers running at once.
    pub max_leases: u32,
    /// Long-poll wait of each Acquire.
    pub wait: Duration,
    /// How often held leases are extended; should be well under the agents' timeout.
    pub heartbeat_every: Duration,
    progress: Progress,
}

/// Progress reports of a worker's running handlers: each is sent with the lease's next
/// heartbeat, and GetAgent shows the last one while the run is held. Cheap to clone: take it
/// from [`Worker::progress`] before `run` and move a clone into the handler.
#[derive(Clone, Default)]
pub struct Progress(Arc<std::sync::Mutex<HashMap<Key, String>>>);

impl Progress {
    /// Reports `value` (a small text, at most 256 bytes) for the run of `lease`.
    pub fn report(&self, lease: &pb::Lease, value: impl Into<String>) {
        self.0.lock().unwrap().insert((lease.name.clone(), lease.token), value.into());
    }

    /// What to send with this lease's heartbeat: the latest report not yet sent, or "".
    fn take(&self, name: &str, token: u64) -> String {
        self.0.lock().unwrap().remove(&(name.to_string(), token)).unwrap_or_default()
    }
}

/// The leases this worker holds, with the cancel token of each handler.
type Held = Arc<Mutex<HashMap<(String, u64), CancellationToken>>>;

/// A lease by (agent name, token).
type Key = (String, u64);

/// A handler that ended: its completion, or None when it was cancelled (lost, shutting down).
struct Done {
    key: Key,
    completion: Option<pb::SessionCompletion>,
}

/// What the session loop tracks across the streams it opens.
#[derive(Default)]
struct SessionState {
    /// Leases whose handlers run, with their cancel tokens.
    held: HashMap<Key, CancellationToken>,
    /// Completions sent and not yet answered: sent again on a new stream.
    unanswered: HashMap<Key, pb::SessionCompletion>,
    /// Leases the server reported lost, whose handlers are being cancelled.
    lost: std::collections::HashSet<Key>,
}

impl SessionState {
    /// A handler ended: its slot is free again (credit), and its completion is to be sent; a
    /// handler cancelled by the shutdown (not by a lost lease) has its lease handed back.
    fn finished(&mut self, done: Done, m: &mut pb::SessionRequest) {
        self.held.remove(&done.key);
        m.credit += 1;
        match done.completion {
            Some(c) => {
                self.unanswered.insert(done.key, c.clone());
                m.completions.push(c);
            }
            None if self.lost.remove(&done.key) => {}
            None => m.releases.push(pb::SessionRelease { name: done.key.0, token: done.key.1, delay: None }),
        }
    }

    /// The server's answers: completions acknowledged, lost leases' handlers cancelled.
    fn answered(&mut self, r: &pb::SessionResponse) {
        for c in &r.completed {
            self.unanswered.remove(&(c.name.clone(), c.token));
            if c.lease_lost {
                tracing::warn!(name = c.name, token = c.token, "completion refused: the lease was lost");
            }
        }
        for lost in &r.lost {
            let key = (lost.name.clone(), lost.token);
            if let Some(cancel) = self.held.get(&key) {
                tracing::warn!(name = lost.name, token = lost.token, "lease lost; cancelling its handler");
                cancel.cancel();
                self.lost.insert(key);
            }
        }
    }

    /// The leases to extend: those whose handlers still run for a result, with the progress
    /// reported since the last beat.
    fn beating(&self, progress: &Progress) -> Vec<pb::SessionLease> {
        (self.held.iter())
            .filter(|(_, cancel)| !cancel.is_cancelled())
            .map(|((name, token), _)| pb::SessionLease {
                name: name.clone(),
                token: *token,
                progress: progress.take(name, *token),
            })
            .collect()
    }
}

/// The outcome a handler's result maps to.
fn outcome_of(result: &Result<(), Failure>) -> pb::Outcome {
    result.as_ref().err().map_or(pb::Outcome::Success, |f| f.outcome)
}

/// The completion a handler's result maps to.
fn completion(lease: &pb::Lease, result: Result<(), Failure>) -> pb::SessionCompletion {
    let f = result.err();
    pb::SessionCompletion {
        name: lease.name.clone(),
        token: lease.token,
        outcome: f.as_ref().map_or(pb::Outcome::Success, |f| f.outcome) as i32,
        message: f
            .as_ref()
            .map(|f| super::truncate_utf8(&f.message, super::MAX_MESSAGE_BYTES).to_string())
            .unwrap_or_default(),
        retry_after: f.and_then(|f| f.retry_after).map(super::pb_duration),
        ..Default::default()
    }
}

impl Worker {
    /// Connects to the Baton at `addr` (`http://host:port`); a malformed address is an error.
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
            wait: Duration::from_secs(30),
            // Three beats within the server's default orphan threshold (10 s).
            heartbeat_every: Duration::from_secs(3),
            progress: Progress::default(),
        }
    }

    /// The handle handlers report progress with (see [`Progress`]).
    pub fn progress(&self) -> Progress {
        self.progress.clone()
    }

    /// Runs until `shutdown`, then releases what it holds. The handler gets the lease and a
    /// token cancelled when the lease is lost or the worker shuts down.
    ///
    /// The hot path is one `Session` stream: the server pushes leases as they become due, up
    /// to `max_leases` running at once (the credit), and the worker streams back completions
    /// (coalesced: whatever finished while the last message was being sent goes in the next)
    /// and heartbeats. A broken stream is opened again with backoff; completions it did not
    /// answer are sent again on the next one (the token fences a repeat). A server without
    /// `Session` (UNIMPLEMENTED) is served by the unary loop: Acquire, Heartbeat, Complete.
    pub async fn run<H, F>(self, shutdown: CancellationToken, handler: H) -> Result<(), tonic::Status>
    where
        H: Fn(pb::Lease, CancellationToken) -> F + Send + Sync + 'static,
        F: Future<Output = Result<(), Failure>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let mut state = SessionState::default();
        let running = TaskTracker::new();
        let (done_tx, mut done_rx) = mpsc::unbounded_channel::<Done>();
        let mut backoff = Duration::from_millis(100);
        let max = self.max_leases.max(1) as usize;
        'session: while !shutdown.is_cancelled() {
            let (tx, rx) = mpsc::channel::<pb::SessionRequest>(64);
            let open = pb::SessionOpen { queue: self.queue.clone(), worker_id: self.worker_id.clone() };
            // Credit: the free slots; completions not yet answered go again.
            let first = pb::SessionRequest {
                open: Some(open),
                credit: (max - state.held.len()) as u32,
                completions: state.unanswered.values().cloned().collect(),
                ..Default::default()
            };
            tx.send(first).await.expect("the receiver is here");
            let mut client = self.client.clone();
            let mut stream = tokio::select! {
                _ = shutdown.cancelled() => break,
                r = client.session(tokio_stream::wrappers::ReceiverStream::new(rx)) => match r {
                    Ok(s) => s.into_inner(),
                    Err(status) if status.code() == tonic::Code::Unimplemented => {
                        tracing::info!("the server has no Session; using Acquire/Complete");
                        return self.run_unary(shutdown, handler).await;
                    }
                    Err(status) => {
                        tracing::warn!(%status, "session failed to open");
                        tokio::time::sleep(super::pushback(&status).unwrap_or(backoff)).await;
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                        continue;
                    }
                },
            };
            let mut beat = tokio::time::interval(self.heartbeat_every);
            beat.tick().await;
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => {
                        self.close_session(&mut state, tx, &mut stream, &running, &mut done_rx).await;
                        return Ok(());
                    }
                    r = stream.message() => match r {
                        Ok(Some(r)) => {
                            backoff = Duration::from_millis(100);
                            state.answered(&r);
                            for lease in r.leases {
                                let cancel = shutdown.child_token();
                                state.held.insert((lease.name.clone(), lease.token), cancel.clone());
                                let (handler, done) = (handler.clone(), done_tx.clone());
                                running.spawn(async move {
                                    let span = crate::otel::lease_span(&lease);
                                    let result = handler(lease.clone(), cancel.clone()).instrument(span.clone()).await;
                                    crate::otel::record_outcome(&span, outcome_of(&result));
                                    // Lost or shutting down: no completion (the lease is gone,
                                    // or released below).
                                    let completion = (!cancel.is_cancelled()).then(|| completion(&lease, result));
                                    let _ = done.send(Done { key: (lease.name, lease.token), completion });
                                });
                            }
                        }
                        Ok(None) => continue 'session, // the server ended it (shutting down)
                        Err(status) => {
                            tracing::warn!(%status, "session broke; opening another");
                            tokio::time::sleep(super::pushback(&status).unwrap_or(backoff)).await;
                            backoff = (backoff * 2).min(Duration::from_secs(5));
                            continue 'session;
                        }
                    },
                    Some(done) = done_rx.recv() => {
                        // Everything finished by now goes in one message.
                        let mut m = pb::SessionRequest::default();
                        state.finished(done, &mut m);
                        while let Ok(done) = done_rx.try_recv() {
                            state.finished(done, &mut m);
                        }
                        if tx.send(m).await.is_err() {
                            continue 'session;
                        }
                    }
                    _ = beat.tick() => {
                        let heartbeats = state.beating(&self.progress);
                        if !heartbeats.is_empty()
                            && tx.send(pb::SessionRequest { heartbeats, ..Default::default() }).await.is_err()
                        {
                            continue 'session;
                        }
                    }
                }
            }
        }
        running.close();
        running.wait().await;
        Ok(())
    }

    /// Shutdown on a live session: cancel the handlers, hand their leases back, let the server
    /// answer, and end the stream (bounded: a dead server is not waited for).
    async fn close_session(
        &self,
        state: &mut SessionState,
        tx: mpsc::Sender<pb::SessionRequest>,
        stream: &mut tonic::Streaming<pb::SessionResponse>,
        running: &TaskTracker,
        done_rx: &mut mpsc::UnboundedReceiver<Done>,
    ) {
        running.close();
        running.wait().await;
        // Finished runs are completed; cancelled ones are handed back.
        let mut m = pb::SessionRequest::default();
        while let Ok(done) = done_rx.try_recv() {
            state.finished(done, &mut m);
        }
        m.credit = 0;
        let _ = tx.send(m).await;
        drop(tx); // half-close: the server answers what it has and ends the stream
        let close = async {
            while let Ok(Some(r)) = stream.message().await {
                state.answered(&r);
            }
        };
        let _ = tokio::time::timeout(super::CALL_TIMEOUT, close).await;
    }

    /// The unary loop, for a server without `Session`.
    async fn run_unary<H, F>(self, shutdown: CancellationToken, handler: Arc<H>) -> Result<(), tonic::Status>
    where
        H: Fn(pb::Lease, CancellationToken) -> F + Send + Sync + 'static,
        F: Future<Output = Result<(), Failure>> + Send + 'static,
    {
        let held: Held = Arc::default();
        let running = TaskTracker::new();
        let beats = tokio::spawn(self.clone().heartbeat_loop(held.clone(), shutdown.clone()));
        let slots = Arc::new(tokio::sync::Semaphore::new(self.max_leases.max(1) as usize));
        let mut client = self.client.clone();
        let mut backoff = Duration::from_millis(100);
        while !shutdown.is_cancelled() {
            let free = tokio::select! {
                _ = shutdown.cancelled() => break,
                permit = slots.clone().acquire_many_owned(1) => permit.expect("never closed"),
            };
            drop(free);
            let want = slots.available_permits() as u32;
            let request = pb::AcquireRequest {
                queue: self.queue.clone(),
                worker_id: self.worker_id.clone(),
                max_leases: want,
                wait: Some(super::pb_duration(self.wait)),
            };
            let leases = tokio::select! {
                _ = shutdown.cancelled() => break,
                r = client.acquire(super::with_deadline(request, self.wait + super::CALL_TIMEOUT)) => match r {
                    Ok(r) => r.into_inner().leases,
                    Err(status) => {
                        // Baton says when to come back (pushback) on UNAVAILABLE.
                        tracing::warn!(%status, "acquire failed");
                        tokio::time::sleep(super::pushback(&status).unwrap_or(backoff)).await;
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                        continue;
                    }
                },
            };
            backoff = Duration::from_millis(100);
            for lease in leases {
                let permit = slots.clone().acquire_owned().await.expect("never closed");
                let cancel = shutdown.child_token();
                held.lock().await.insert((lease.name.clone(), lease.token), cancel.clone());
                let (handler, held, client) = (handler.clone(), held.clone(), client.clone());
                running.spawn(async move {
                    let _permit = permit;
                    let key = (lease.name.clone(), lease.token);
                    let complete = |result: Result<(), Failure>| {
                        let c = completion(&lease, result);
                        pb::CompleteRequest {
                            request_id: String::new(), // set per call below
                            queue: lease.queue.clone(),
                            name: c.name,
                            token: c.token,
                            outcome: c.outcome,
                            message: c.message,
                            retry_after: c.retry_after,
                            error_class: c.error_class,
                            http_status: c.http_status,
                        }
                    };
                    let span = crate::otel::lease_span(&lease);
                    let result = handler(lease.clone(), cancel.clone()).instrument(span.clone()).await;
                    crate::otel::record_outcome(&span, outcome_of(&result));
                    if cancel.is_cancelled() {
                        return; // lost, or shutting down: the release loop below handles it
                    }
                    held.lock().await.remove(&key);
                    let request = complete(result);
                    let done = super::idempotent(|request_id| {
                        let req = pb::CompleteRequest { request_id, ..request.clone() };
                        let mut client = client.clone();
                        async move { client.complete(super::with_deadline(req, super::CALL_TIMEOUT)).await }
                    });
                    if let Err(status) = done.await {
                        tracing::warn!(%status, name = lease.name, "complete failed");
                    }
                });
            }
        }
        // Shutdown: cancel handlers, hand their leases back, stop heartbeating.
        running.close();
        running.wait().await;
        beats.abort();
        let leases: Vec<_> = held.lock().await.drain().map(|(k, _)| k).collect();
        for (name, token) in leases {
            let release = pb::ReleaseRequest { queue: self.queue.clone(), name, token, delay: None };
            let _ = client.release(super::with_deadline(release, super::CALL_TIMEOUT)).await;
        }
        Ok(())
    }

    async fn heartbeat_loop(self, held: Held, shutdown: CancellationToken) {
        let mut client = self.client.clone();
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(self.heartbeat_every) => {}
            }
            let leases: Vec<pb::LeaseRef> = held
                .lock()
                .await
                .keys()
                .map(|(name, token)| pb::LeaseRef {
                    queue: self.queue.clone(),
                    name: name.clone(),
                    token: *token,
                    progress: self.progress.take(name, *token),
                })
                .collect();
            let request = pb::HeartbeatRequest { worker_id: self.worker_id.clone(), leases };
            match client
                .heartbeat(super::with_deadline(request, super::CALL_TIMEOUT.min(self.heartbeat_every * 3)))
                .await
            {
                Ok(r) => {
                    let mut held = held.lock().await;
                    for lost in r.into_inner().lost {
                        if let Some(cancel) = held.remove(&(lost.name.clone(), lost.token)) {
                            tracing::warn!(name = lost.name, token = lost.token, "lease lost; cancelling its handler");
                            cancel.cancel();
                        }
                    }
                }
                Err(status) => tracing::warn!(%status, "heartbeat failed"),
            }
        }
    }
}

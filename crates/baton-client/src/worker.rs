//! A worker loop for Rust workers, over the generated client: long-poll Acquire → run the
//! handler → Heartbeat while it runs → Complete with the outcome the handler's result maps to.
//! A lease reported lost cancels its handler (its result would be refused anyway); on shutdown
//! the loop stops acquiring, cancels running handlers and Releases their leases, so another
//! worker takes them at once.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
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
use tokio::sync::Mutex;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

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
}

/// The leases this worker holds, with the cancel token of each handler.
type Held = Arc<Mutex<HashMap<(String, u64), CancellationToken>>>;

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
        }
    }

    /// Runs until `shutdown`, then releases what it holds. The handler gets the lease and a
    /// token cancelled when the lease is lost or the worker shuts down.
    pub async fn run<H, F>(self, shutdown: CancellationToken, handler: H) -> Result<(), tonic::Status>
    where
        H: Fn(pb::Lease, CancellationToken) -> F + Send + Sync + 'static,
        F: Future<Output = Result<(), Failure>> + Send + 'static,
    {
        let handler = Arc::new(handler);
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
                let (handler, held, mut client) = (handler.clone(), held.clone(), client.clone());
                running.spawn(async move {
                    let _permit = permit;
                    let key = (lease.name.clone(), lease.token);
                    let complete = |result: Result<(), Failure>| {
                        let f = result.err();
                        pb::CompleteRequest {
                            queue: lease.queue.clone(),
                            name: lease.name.clone(),
                            token: lease.token,
                            outcome: f.as_ref().map_or(pb::Outcome::Success, |f| f.outcome) as i32,
                            message: f
                                .as_ref()
                                .map(|f| super::truncate_utf8(&f.message, super::MAX_MESSAGE_BYTES).to_string())
                                .unwrap_or_default(),
                            retry_after: f.and_then(|f| f.retry_after).map(super::pb_duration),
                        }
                    };
                    let result = handler(lease.clone(), cancel.clone()).await;
                    if cancel.is_cancelled() {
                        return; // lost, or shutting down: the release loop below handles it
                    }
                    held.lock().await.remove(&key);
                    if let Err(status) =
                        client.complete(super::with_deadline(complete(result), super::CALL_TIMEOUT)).await
                    {
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
                .map(|(name, token)| pb::LeaseRef { queue: self.queue.clone(), name: name.clone(), token: *token })
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

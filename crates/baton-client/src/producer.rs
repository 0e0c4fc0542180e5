//! [`Producer`]: what the code that creates work calls — register agents (with parents and
//! idempotency keys), wait for an agent's result, batches with callbacks, schedule messages,
//! offer pooled resources — without building generated requests. Every call that changes
//! something carries a request id of its own (or the caller's) and is sent again with it while
//! its outcome is unknown (UNAVAILABLE, DEADLINE_EXCEEDED), so a retry never applies twice.
//! Waiting is the server's: `Await` holds each call until the agent finishes (no polling).
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use std::time::Duration;
//! use baton_client::{producer::{after, one_shot, Batch, Producer, When}, Client};
//! let client = Client::builder("127.0.0.1:50051").connect().await?;
//! let producer = Producer::new(&client);
//! producer.register("emails", vec![one_shot("welcome-42", b"{\"to\":42}".to_vec())]).await?;
//! let load = after(one_shot("load", vec![]), [("etl", "extract")]);
//! producer.register("etl", vec![load]).await?;
//! let done = producer.register_and_await("resize", one_shot("img-7", vec![]), Some(Duration::from_secs(30))).await?;
//! let nightly = Batch { on_complete: vec![one_shot("report", vec![])], close: true, ..Batch::new("nightly", "etl") };
//! producer.register_batch(nightly, vec![one_shot("a", vec![]), one_shot("b", vec![])]).await?;
//! producer.schedule("reminders", b"ping".to_vec(), When::After(std::time::Duration::from_secs(60))).await?;
//! producer.offer("browsers", ["chrome-1", "chrome-2"]).await?;
//! # Ok(()) }
//! ```

use std::time::{Duration, SystemTime};

use tokio::time::Instant;
use tonic::Status;

use super::{idempotent_as, pb_duration, request_id, with_deadline, Backoff, Client, Conn, CALL_TIMEOUT};
use crate::pb::{
    self, agent_service_client::AgentServiceClient, claim_service_client::ClaimServiceClient,
    schedule_service_client::ScheduleServiceClient,
};

/// A one-shot agent: due at once, removed after its first success. Other fields (timeout,
/// max_attempts, key, priority, labels) by struct update: `pb::Agent { key: "k".into(), ..one_shot(..) }`.
pub fn one_shot(name: impl Into<String>, payload: Vec<u8>) -> pb::Agent {
    pb::Agent { name: name.into(), payload, ..Default::default() }
}

/// A recurring agent, run every `interval` (from the start of one successful run to the next).
pub fn every(name: impl Into<String>, interval: Duration, payload: Vec<u8>) -> pb::Agent {
    pb::Agent { interval: Some(pb_duration(interval)), ..one_shot(name, payload) }
}

/// A recurring agent run by a cron expression (in UTC; set `time_zone` for another).
pub fn cron(name: impl Into<String>, expression: impl Into<String>, payload: Vec<u8>) -> pb::Agent {
    pb::Agent { cron: expression.into(), ..one_shot(name, payload) }
}

/// `agent` with parents (`(queue, name)`; queue "" is the agent's own): it runs once every
/// parent succeeded, and its lease carries their results (`Lease::parents`). A parent's own
/// failure policy, or the agent's `on_parent_failure`, by struct update.
pub fn after<'a>(agent: pb::Agent, parents: impl IntoIterator<Item = (&'a str, &'a str)>) -> pb::Agent {
    let after = parents
        .into_iter()
        .map(|(queue, name)| pb::AgentRef { queue: queue.into(), name: name.into(), ..Default::default() })
        .collect();
    pb::Agent { after, ..agent }
}

/// `agent` waiting, before its first run, for `event` (a Signal: an approval gate), or until
/// `timeout` passed; its first lease carries the event (`Lease::event`).
pub fn wait_for(agent: pb::Agent, event: &str, timeout: Option<Duration>) -> pb::Agent {
    let wait_for = pb::WaitFor { event: event.into(), timeout: timeout.map(pb_duration), until: None };
    pb::Agent { wait_for: Some(wait_for), ..agent }
}

/// The most one `Await` call is held before it is made again (as the leadership helper's
/// campaign wait): the server refuses waits beyond its `limits.max_wait_ms`.
pub const AWAIT_WAIT: Duration = Duration::from_secs(30);

/// A batch to create or extend with [`Producer::register_batch`]: its callbacks (agents of
/// `callback_queue`, default the members' queue) run once when it is done — `on_success` only
/// when every member succeeded, `on_complete` however they finished — and their leases carry
/// the batch's finish. Callbacks count on the call that creates it only; `close` closes it after
/// this call's members.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    pub name: String,
    pub queue: String,
    pub callback_queue: String,
    pub on_success: Vec<pb::Agent>,
    pub on_complete: Vec<pb::Agent>,
    pub close: bool,
}

impl Batch {
    /// Batch `name` of members in `queue`, without callbacks.
    pub fn new(name: impl Into<String>, queue: impl Into<String>) -> Self {
        Self { name: name.into(), queue: queue.into(), ..Default::default() }
    }
}

/// When a scheduled message is due.
#[derive(Clone, Copy, Debug)]
pub enum When {
    Now,
    After(Duration),
    At(SystemTime),
}

/// Registers, schedules and offers through one [`Client`].
#[derive(Clone)]
pub struct Producer {
    agents: AgentServiceClient<Conn>,
    schedules: ScheduleServiceClient<Conn>,
    claims: ClaimServiceClient<Conn>,
}

impl Producer {
    /// A producer over `client` (a [`Client`], or a plain `Channel`).
    pub fn new(client: impl Into<Client>) -> Self {
        let client = client.into();
        Self { agents: client.agents(), schedules: client.schedules(), claims: client.claims() }
    }

    /// Registers (creates or updates) `agents` in `queue`.
    pub async fn register(&self, queue: &str, agents: Vec<pb::Agent>) -> Result<pb::RegisterResponse, Status> {
        self.register_as(request_id(), queue, agents).await
    }

    /// [`Producer::register`] with the caller's request id (to retry a call of its own whose
    /// outcome it does not know).
    pub async fn register_as(
        &self,
        request_id: String,
        queue: &str,
        agents: Vec<pb::Agent>,
    ) -> Result<pb::RegisterResponse, Status> {
        let request =
            pb::RegisterRequest { queue: queue.into(), agents, reset_schedule: false, request_id: String::new() };
        idempotent_as(request_id, |request_id| {
            let (request, mut client) = (pb::RegisterRequest { request_id, ..request.clone() }, self.agents.clone());
            async move { client.register(with_deadline(request, CALL_TIMEOUT)).await.map(|r| r.into_inner()) }
        })
        .await
    }

    /// Request/reply over the fleet: registers `agent` (one-shot) in `queue` and waits for its
    /// finish ([`Producer::await_result`]). A deduplicated registration waits for the key's
    /// holder, or answers its kept result at once. `None` when `timeout` (None: no limit) passed
    /// first; the agent stays registered.
    pub async fn register_and_await(
        &self,
        queue: &str,
        agent: pb::Agent,
        timeout: Option<Duration>,
    ) -> Result<Option<pb::AgentResult>, Status> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let answer = self.register(queue, vec![agent]).await?;
        let Some(registered) = answer.agents.into_iter().next() else {
            return Err(Status::internal("Register answered no agent"));
        };
        if registered.result.is_some() {
            return Ok(registered.result);
        }
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        self.await_result(queue, &registered.name, left, 0).await
    }

    /// Waits for the agent's finish (succeeded, dead-lettered, cancelled or unregistered) and
    /// returns it, with the result its worker set; a finish the server still keeps answers at
    /// once. Each `Await` call is held at most [`AWAIT_WAIT`] and made again until the finish,
    /// or `timeout` (None: no limit; then `None`). `after_token` skips finishes of a recurring
    /// agent's runs up to that lease token. NOT_FOUND: no such agent and no finish kept;
    /// UNAVAILABLE is retried.
    pub async fn await_result(
        &self,
        queue: &str,
        name: &str,
        timeout: Option<Duration>,
        after_token: u64,
    ) -> Result<Option<pb::AgentResult>, Status> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut backoff = Backoff::new();
        loop {
            let wait = deadline.map_or(AWAIT_WAIT, |d| AWAIT_WAIT.min(d.saturating_duration_since(Instant::now())));
            let request =
                pb::AwaitRequest { queue: queue.into(), name: name.into(), wait: Some(pb_duration(wait)), after_token };
            match self.agents.clone().r#await(with_deadline(request, wait + CALL_TIMEOUT)).await {
                Err(status) if status.code() == tonic::Code::Unavailable => {
                    tokio::time::sleep(backoff.after(&status)).await;
                }
                Err(status) => return Err(status),
                Ok(answer) => {
                    let answer = answer.into_inner();
                    if answer.done {
                        return Ok(answer.result);
                    }
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Ok(None);
                    }
                    backoff.reset();
                }
            }
        }
    }

    /// Signals `event`, with `payload`, to the agent: a run waiting for it is due at once (its
    /// lease carries the event), otherwise the signal is kept for the wait that names it. Sent
    /// with a new request id, retried with it while the outcome is unknown. NOT_FOUND: no such
    /// agent.
    pub async fn signal(
        &self,
        queue: &str,
        name: &str,
        event: &str,
        payload: impl Into<Vec<u8>>,
    ) -> Result<pb::SignalResponse, Status> {
        self.signal_as(request_id(), queue, name, event, payload).await
    }

    /// [`Producer::signal`] with the caller's request id (to retry a call of its own).
    pub async fn signal_as(
        &self,
        request_id: String,
        queue: &str,
        name: &str,
        event: &str,
        payload: impl Into<Vec<u8>>,
    ) -> Result<pb::SignalResponse, Status> {
        let request = pb::SignalRequest {
            queue: queue.into(),
            name: name.into(),
            event: event.into(),
            payload: payload.into(),
            request_id: String::new(),
        };
        idempotent_as(request_id, |request_id| {
            let (request, mut client) = (pb::SignalRequest { request_id, ..request.clone() }, self.agents.clone());
            async move { client.signal(with_deadline(request, CALL_TIMEOUT)).await.map(|r| r.into_inner()) }
        })
        .await
    }

    /// Follows the agent's run as it happens (WatchAgent): a stream of updates, first a
    /// snapshot, then each lease granted, progress reported and step recorded, and last the
    /// finish (`WATCH_UPDATE_FINISHED`, as Await answers). It ends after the finish, or after
    /// `timeout` (at most the server's `limits.max_wait_ms`) without one. `after_token` skips
    /// finishes up to that lease token, as for [`Producer::await_result`].
    pub async fn watch(
        &self,
        queue: &str,
        name: &str,
        timeout: Duration,
        after_token: u64,
    ) -> Result<tonic::Streaming<pb::WatchAgentResponse>, Status> {
        let request = pb::WatchAgentRequest {
            queue: queue.into(),
            name: name.into(),
            after_token,
            wait: Some(pb_duration(timeout)),
        };
        let answer = self.agents.clone().watch_agent(with_deadline(request, timeout + CALL_TIMEOUT)).await?;
        Ok(answer.into_inner())
    }

    /// Adds `members` (agents of `batch.queue`) to the batch, creating it on its first call with
    /// its callbacks; answers the batch's status after the call.
    pub async fn register_batch(
        &self,
        batch: Batch,
        members: Vec<pb::Agent>,
    ) -> Result<pb::RegisterBatchResponse, Status> {
        let request = pb::RegisterBatchRequest {
            batch: batch.name,
            queue: batch.queue,
            agents: members,
            callback_queue: batch.callback_queue,
            on_success: batch.on_success,
            on_complete: batch.on_complete,
            close: batch.close,
        };
        self.agents.clone().register_batch(with_deadline(request, CALL_TIMEOUT)).await.map(|r| r.into_inner())
    }

    /// Closes `batch`: no member may be added; it is done once its members finished.
    pub async fn close_batch(&self, batch: &str) -> Result<pb::BatchStatus, Status> {
        let request = pb::CloseBatchRequest { batch: batch.into() };
        let answer = self.agents.clone().close_batch(with_deadline(request, CALL_TIMEOUT)).await?.into_inner();
        answer.status.ok_or_else(|| Status::internal("CloseBatch answered no status"))
    }

    /// The batch's members counted by how they finished (total, pending, succeeded, failed),
    /// whether it is closed and done, and its callbacks.
    pub async fn batch(&self, batch: &str) -> Result<pb::BatchStatus, Status> {
        let request = pb::GetBatchRequest { batch: batch.into() };
        let answer = self.agents.clone().get_batch(with_deadline(request, CALL_TIMEOUT)).await?.into_inner();
        answer.status.ok_or_else(|| Status::internal("GetBatch answered no status"))
    }

    /// Schedules a message for `receiver`; its id and when it is due.
    pub async fn schedule(&self, receiver: &str, payload: Vec<u8>, when: When) -> Result<pb::ScheduleResponse, Status> {
        use pb::schedule_request::When as W;
        let when = match when {
            When::Now => None,
            When::After(delay) => Some(W::Delay(pb_duration(delay))),
            When::At(at) => Some(W::DeliverAt(at.into())),
        };
        let request = pb::ScheduleRequest { receiver: receiver.into(), payload, when, ..Default::default() };
        idempotent_as(request_id(), |request_id| {
            let (request, mut client) = (pb::ScheduleRequest { request_id, ..request.clone() }, self.schedules.clone());
            async move { client.schedule(with_deadline(request, CALL_TIMEOUT)).await.map(|r| r.into_inner()) }
        })
        .await
    }

    /// Cancels a scheduled message; NOT_FOUND when there is no such message.
    pub async fn cancel(&self, receiver: &str, id: &str) -> Result<(), Status> {
        let request = pb::CancelRequest { receiver: receiver.into(), id: id.into() };
        self.schedules.clone().cancel(with_deadline(request, CALL_TIMEOUT)).await.map(drop)
    }

    /// Offers resources to `pool` (idle at once, or handed to a waiting claim): ids, or
    /// [`pb::Resource`]s with attributes.
    pub async fn offer<R: IntoResource>(
        &self,
        pool: &str,
        resources: impl IntoIterator<Item = R>,
    ) -> Result<pb::OfferResponse, Status> {
        let resources = resources.into_iter().map(IntoResource::into_resource).collect();
        let request = pb::OfferRequest { pool: pool.into(), resources, request_id: String::new() };
        idempotent_as(request_id(), |request_id| {
            let (request, mut client) = (pb::OfferRequest { request_id, ..request.clone() }, self.claims.clone());
            async move { client.offer(with_deadline(request, CALL_TIMEOUT)).await.map(|r| r.into_inner()) }
        })
        .await
    }
}

/// What [`Producer::offer`] takes: a resource id, or a [`pb::Resource`] with attributes.
pub trait IntoResource {
    fn into_resource(self) -> pb::Resource;
}

impl IntoResource for pb::Resource {
    fn into_resource(self) -> pb::Resource {
        self
    }
}

impl IntoResource for &str {
    fn into_resource(self) -> pb::Resource {
        pb::Resource { id: self.into(), attributes: Default::default() }
    }
}

impl IntoResource for String {
    fn into_resource(self) -> pb::Resource {
        pb::Resource { id: self, attributes: Default::default() }
    }
}

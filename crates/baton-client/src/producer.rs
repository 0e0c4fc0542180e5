//! [`Producer`]: what the code that creates work calls — register agents, schedule messages,
//! offer pooled resources — without building generated requests. Every call carries a request
//! id of its own (or the caller's) and is sent again with it while its outcome is unknown
//! (UNAVAILABLE, DEADLINE_EXCEEDED), so a retry never applies twice.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use baton_client::{producer::{one_shot, Producer, When}, Client};
//! let client = Client::builder("127.0.0.1:50051").connect().await?;
//! let producer = Producer::new(&client);
//! producer.register("emails", vec![one_shot("welcome-42", b"{\"to\":42}".to_vec())]).await?;
//! producer.schedule("reminders", b"ping".to_vec(), When::After(std::time::Duration::from_secs(60))).await?;
//! producer.offer("browsers", ["chrome-1", "chrome-2"]).await?;
//! # Ok(()) }
//! ```

use std::time::{Duration, SystemTime};

use tonic::Status;

use super::{idempotent_as, pb_duration, request_id, with_deadline, Client, Conn, CALL_TIMEOUT};
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

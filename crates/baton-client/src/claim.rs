//! Claiming pooled resources from Rust: claim one (waiting in the pool's line if need be) and
//! give it back correctly. [`Claimer::with`] is the scoped form: the body's success returns the
//! resource for reuse, its error dead-letters it (`Fail`, with the error's text).
//!
//! A full waiting line is [`ClaimError::LineFull`], with the server's pushback hint; this
//! helper does not retry it by itself (shedding load is the point of the signal).

use std::{collections::HashMap, future::Future, time::Duration};

use tonic::{Code, Status};

use super::{idempotent, pb_duration, pushback, with_deadline, Conn, CALL_TIMEOUT};
use crate::pb::{self, claim_service_client::ClaimServiceClient};

/// Why a claim failed.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// The pool's waiting line is full; retry after the hint (if any).
    #[error("the waiting line of the pool is full")]
    LineFull { retry_after: Option<Duration> },
    #[error(transparent)]
    Status(#[from] Status),
}

/// A resource held under a claim. Give it back with `give_back` or `fail`; dropping it keeps
/// the claim until the pool's purge takes it back.
#[derive(Debug)]
pub struct Held {
    pub resource: pb::Resource,
    pub token: u64,
    pool: String,
    client: ClaimServiceClient<Conn>,
}

impl Held {
    /// Ends the claim; with `reuse` the resource is idle again at once. Retried with one
    /// request id while the outcome is unknown.
    pub async fn give_back(self, reuse: bool) -> Result<(), Status> {
        idempotent(|request_id| {
            let req = pb::ReturnRequest {
                request_id,
                pool: self.pool.clone(),
                resource_id: self.resource.id.clone(),
                token: self.token,
                reuse,
            };
            let mut client = self.client.clone();
            async move { client.r#return(with_deadline(req, CALL_TIMEOUT)).await.map(|_| ()) }
        })
        .await
    }

    /// Ends the claim by dead-lettering the resource with `error` (sent whole: the server clips
    /// it to its limit). Retried with one request id while the outcome is unknown.
    pub async fn fail(self, error: &str) -> Result<(), Status> {
        idempotent(|request_id| {
            let req = pb::FailRequest {
                request_id,
                pool: self.pool.clone(),
                resource_id: self.resource.id.clone(),
                token: self.token,
                error: error.to_string(),
            };
            let mut client = self.client.clone();
            async move { client.fail(with_deadline(req, CALL_TIMEOUT)).await.map(|_| ()) }
        })
        .await
    }
}

/// A claimer of one pool.
#[derive(Clone)]
pub struct Claimer {
    client: ClaimServiceClient<Conn>,
    pool: String,
    claimer_id: String,
}

impl Claimer {
    /// A claimer over `client` (a [`super::Client`], or a plain `Channel`).
    pub fn new(client: impl Into<super::Client>, pool: &str, claimer_id: &str) -> Self {
        Self { client: client.into().claims(), pool: pool.into(), claimer_id: claimer_id.into() }
    }

    /// Claims a resource, waiting in line up to `wait`; None when the wait ended. Retried with
    /// one request id while the outcome is unknown, so a claim taken but not answered is
    /// answered by the retry instead of a second resource being taken.
    pub async fn claim(&self, attributes: HashMap<String, String>, wait: Duration) -> Result<Option<Held>, ClaimError> {
        let client = self.client.clone();
        let got = idempotent(|request_id| {
            let req = pb::ClaimRequest {
                request_id,
                hold: None,
                pool: self.pool.clone(),
                claimer_id: self.claimer_id.clone(),
                attributes: attributes.clone(),
                wait: (!wait.is_zero()).then(|| pb_duration(wait)),
            };
            let mut client = client.clone();
            async move { client.claim(with_deadline(req, wait + CALL_TIMEOUT)).await }
        })
        .await
        .map_err(|s| match s.code() {
            Code::ResourceExhausted => ClaimError::LineFull { retry_after: pushback(&s) },
            _ => ClaimError::Status(s),
        })?;
        let got = got.into_inner();
        Ok(got.resource.map(|resource| Held { resource, token: got.token, pool: self.pool.clone(), client }))
    }

    /// Claims a resource and runs `body` with it: Ok gives it back for reuse, Err dead-letters
    /// it with the error's text. None when the wait ended without a resource.
    pub async fn with<T, E, F, Fut>(&self, wait: Duration, body: F) -> Result<Option<Result<T, E>>, ClaimError>
    where
        F: FnOnce(pb::Resource) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: std::fmt::Display,
    {
        let Some(held) = self.claim(HashMap::new(), wait).await? else { return Ok(None) };
        let outcome = body(held.resource.clone()).await;
        match &outcome {
            Ok(_) => held.give_back(true).await?,
            Err(e) => held.fail(&e.to_string()).await?,
        }
        Ok(Some(outcome))
    }
}

//! Receiving scheduled messages from Rust: subscribe, run a handler per message (at most
//! `max_in_flight` at once), ack on success, leave a failed message unacked (the server
//! delivers it again after its ack timeout), and subscribe again with backoff when the stream
//! ends or fails, until stopped. On stop, no new message is taken and running handlers finish.

use std::{future::Future, sync::Arc, time::Duration};

use tokio_util::{sync::CancellationToken, task::TaskTracker};

use super::{pushback, Conn};
use crate::pb::{self, schedule_service_client::ScheduleServiceClient};

/// A consumer of one receiver.
pub struct Subscriber {
    client: ScheduleServiceClient<Conn>,
    receiver: String,
    consumer_id: String,
    /// Messages handled at once (the subscription's max_in_flight).
    pub max_in_flight: u32,
}

impl Subscriber {
    /// A consumer over `client` (a [`super::Client`], or a plain `Channel`).
    pub fn new(client: impl Into<super::Client>, receiver: &str, consumer_id: &str) -> Self {
        Self {
            client: client.into().schedules(),
            receiver: receiver.into(),
            consumer_id: consumer_id.into(),
            max_in_flight: 16,
        }
    }

    /// Handles messages until `shutdown`. A handler's Err leaves its message unacked.
    pub async fn run<H, F, E>(self, shutdown: CancellationToken, handler: H)
    where
        H: Fn(pb::SubscribeResponse) -> F + Send + Sync + 'static,
        F: Future<Output = Result<(), E>> + Send + 'static,
        E: std::fmt::Display + Send + 'static,
    {
        let handler = Arc::new(handler);
        let running = TaskTracker::new();
        let slots = Arc::new(tokio::sync::Semaphore::new(self.max_in_flight.max(1) as usize));
        let mut backoff = Duration::from_millis(100);
        'subscribe: while !shutdown.is_cancelled() {
            let req = pb::SubscribeRequest {
                receiver: self.receiver.clone(),
                consumer_id: self.consumer_id.clone(),
                max_in_flight: self.max_in_flight,
            };
            let mut client = self.client.clone();
            let mut stream = tokio::select! {
                _ = shutdown.cancelled() => break,
                r = client.subscribe(req) => match r {
                    Ok(s) => s.into_inner(),
                    Err(status) => {
                        tracing::warn!(%status, receiver = self.receiver, "subscribe failed");
                        tokio::time::sleep(pushback(&status).unwrap_or(backoff)).await;
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                        continue;
                    }
                },
            };
            backoff = Duration::from_millis(100);
            loop {
                let message = tokio::select! {
                    _ = shutdown.cancelled() => break 'subscribe,
                    m = stream.message() => m,
                };
                let message = match message {
                    Ok(Some(m)) => m,
                    Ok(None) => continue 'subscribe,
                    Err(status) => {
                        tracing::warn!(%status, receiver = self.receiver, "subscription ended; subscribing again");
                        continue 'subscribe;
                    }
                };
                let permit = slots.clone().acquire_owned().await.expect("never closed");
                let (handler, mut client, receiver) = (handler.clone(), self.client.clone(), self.receiver.clone());
                running.spawn(async move {
                    let _permit = permit;
                    let (id, token) = (message.id.clone(), message.token);
                    match handler(message).await {
                        Ok(()) => {
                            if let Err(status) = client
                                .ack(super::with_deadline(pb::AckRequest { receiver, id, token }, super::CALL_TIMEOUT))
                                .await
                            {
                                tracing::warn!(%status, "ack failed; the message will come again");
                            }
                        }
                        Err(e) => tracing::warn!(id, error = %e, "handler failed; the message will come again"),
                    }
                });
            }
        }
        running.close();
        running.wait().await;
    }
}

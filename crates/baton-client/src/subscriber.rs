//! Receiving scheduled messages from Rust: run a handler per message (at most `max_in_flight`
//! at once), ack on success, leave a failed message unacked (the server delivers it again after
//! its ack timeout), and open the stream again with backoff when it ends or fails, until
//! stopped. On stop, no new message is taken, running handlers finish and their acks are sent.
//!
//! The hot path is one `Receive` stream: the server pushes due messages and the subscriber
//! streams acks back on it, coalesced (whatever finished while the last message was being sent
//! goes in the next). Acks the server has not answered when a stream breaks are sent again on
//! the next one (the token fences a repeat).

use std::{collections::HashSet, future::Future, sync::Arc};

use tokio::sync::mpsc;
use tokio_util::{sync::CancellationToken, task::TaskTracker};
use tracing::Instrument;

use super::{Backoff, Conn};
use crate::pb::{self, schedule_service_client::ScheduleServiceClient};

/// Acks in one message at most (the server's default `limits.max_batch`).
const MAX_ACKS: usize = 1000;

/// A consumer of one receiver.
pub struct Subscriber {
    client: ScheduleServiceClient<Conn>,
    receiver: String,
    consumer_id: String,
    /// Messages handled at once (the stream's max_in_flight).
    pub max_in_flight: u32,
}

/// An ack as the stream knows it: (message id, delivery token).
type AckKey = (String, u64);

fn ack_pb((id, token): &AckKey) -> pb::ReceiveAck {
    pb::ReceiveAck { id: id.clone(), token: *token }
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

    fn open(&self) -> pb::SubscribeRequest {
        pb::SubscribeRequest {
            receiver: self.receiver.clone(),
            consumer_id: self.consumer_id.clone(),
            max_in_flight: self.max_in_flight,
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
        let (done_tx, mut done_rx) = mpsc::unbounded_channel::<AckKey>();
        // Acks sent and not yet answered; `resent`: those sent again on a new stream, whose
        // `lost` answer may only mean the first stream applied them.
        let mut unanswered: HashSet<AckKey> = HashSet::new();
        let mut backoff = Backoff::new();
        'stream: while !shutdown.is_cancelled() {
            let (tx, rx) = mpsc::channel::<pb::ReceiveRequest>(64);
            let resent: HashSet<AckKey> = unanswered.iter().take(MAX_ACKS).cloned().collect();
            let first = pb::ReceiveRequest { open: Some(self.open()), acks: resent.iter().map(ack_pb).collect() };
            tx.send(first).await.expect("the receiver is here");
            let mut client = self.client.clone();
            let mut stream = tokio::select! {
                _ = shutdown.cancelled() => break,
                r = client.receive(tokio_stream::wrappers::ReceiverStream::new(rx)) => match r {
                    Ok(s) => s.into_inner(),
                    Err(status) => {
                        tracing::warn!(%status, receiver = self.receiver, "receive stream failed to open");
                        tokio::time::sleep(backoff.after(&status)).await;
                        continue;
                    }
                },
            };
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => {
                        self.close(tx, &mut stream, &running, &mut done_rx, &mut unanswered, &resent).await;
                        return;
                    }
                    r = stream.message() => match r {
                        Ok(Some(r)) => {
                            backoff.reset();
                            self.answered(&r, &mut unanswered, &resent);
                            for message in r.messages {
                                let permit = slots.clone().acquire_owned().await.expect("never closed");
                                let (handler, done) = (handler.clone(), done_tx.clone());
                                let span = crate::otel::message_span(&self.receiver, &message);
                                running.spawn(async move {
                                    let _permit = permit;
                                    let key = (message.id.clone(), message.token);
                                    match handler(message).instrument(span.clone()).await {
                                        Ok(()) => {
                                            let _ = done.send(key);
                                        }
                                        Err(e) => {
                                            span.record("otel.status_code", "ERROR");
                                            tracing::warn!(id = key.0, error = %e, "handler failed; the message will come again")
                                        }
                                    }
                                });
                            }
                        }
                        Ok(None) => continue 'stream, // the server ended it (shutting down)
                        Err(status) => {
                            tracing::warn!(%status, receiver = self.receiver, "receive stream broke; opening another");
                            tokio::time::sleep(backoff.after(&status)).await;
                            continue 'stream;
                        }
                    },
                    Some(key) = done_rx.recv() => {
                        // Everything finished by now goes in one message.
                        let m = collect(key, &mut done_rx, &mut unanswered);
                        if tx.send(m).await.is_err() {
                            continue 'stream;
                        }
                    }
                }
            }
        }
        running.close();
        running.wait().await;
    }

    /// The server's answers to acks: applied, or refused (the message was delivered again).
    fn answered(&self, r: &pb::ReceiveResponse, unanswered: &mut HashSet<AckKey>, resent: &HashSet<AckKey>) {
        for a in &r.acked {
            unanswered.remove(&(a.id.clone(), a.token));
        }
        for a in &r.lost {
            let key = (a.id.clone(), a.token);
            unanswered.remove(&key);
            if !resent.contains(&key) {
                tracing::warn!(
                    receiver = self.receiver,
                    id = a.id,
                    "ack refused: the message was delivered again (handler slower than the ack timeout)"
                );
            }
        }
    }

    /// Shutdown on a live stream: let running handlers finish, send their acks, let the server
    /// answer, and end the stream (bounded: a dead server is not waited for).
    async fn close(
        &self,
        tx: mpsc::Sender<pb::ReceiveRequest>,
        stream: &mut tonic::Streaming<pb::ReceiveResponse>,
        running: &TaskTracker,
        done_rx: &mut mpsc::UnboundedReceiver<AckKey>,
        unanswered: &mut HashSet<AckKey>,
        resent: &HashSet<AckKey>,
    ) {
        running.close();
        running.wait().await;
        while let Ok(key) = done_rx.try_recv() {
            let m = collect(key, done_rx, unanswered);
            let _ = tx.send(m).await;
        }
        drop(tx); // half-close: the server applies and answers what it has, then ends the stream
        let close = async {
            while let Ok(Some(r)) = stream.message().await {
                self.answered(&r, unanswered, resent);
            }
        };
        let _ = tokio::time::timeout(super::CALL_TIMEOUT, close).await;
    }
}

/// One message of acks: `first` and whatever else has finished (at most `MAX_ACKS`), each
/// remembered as unanswered until the server answers it.
fn collect(
    first: AckKey,
    done_rx: &mut mpsc::UnboundedReceiver<AckKey>,
    unanswered: &mut HashSet<AckKey>,
) -> pb::ReceiveRequest {
    let mut acks = vec![ack_pb(&first)];
    unanswered.insert(first);
    while acks.len() < MAX_ACKS {
        let Ok(key) = done_rx.try_recv() else { break };
        acks.push(ack_pb(&key));
        unanswered.insert(key);
    }
    pb::ReceiveRequest { open: None, acks }
}

//! ScheduleService.Receive: a consumer's deliveries and acks on one bidirectional stream (see
//! the proto for the contract). One task per stream, shaped like a worker Session:
//!
//! - takes in, without waiting, every message that has arrived, validating each whole before
//!   any of its acks counts;
//! - runs a *round*: the acks taken in (one ackMessages script per receiver shard) and, in the
//!   same round trip, a delivery round (deliverMessages), which the freed places feed at once;
//! - answers both in one ReceiveResponse, then waits for the next message, a wake-up of the
//!   receiver (from any replica), the earliest due time or ack deadline, or the end.
//!
//! Acks coalesce by themselves: whatever arrived while the previous round ran goes to Redis in
//! the next one. Up to `ROUNDS` rounds are in flight, answered in order.
//!
//! Invariants: the consumer never holds more than max_in_flight unacked messages (counted in
//! Redis by the delivery script, whatever the rounds in flight; on a sharded receiver, whose
//! count spans shards, one delivery is in flight at a time); a message is in flight at one
//! consumer only; what a stream that broke without a half-close held is due again after
//! `orphan_cleanup.stream_grace_ms` (else after the ack timeout, as for a Subscribe stream).

use std::{collections::HashMap, pin::Pin, time::Duration};

use futures::{stream::FuturesOrdered, FutureExt, StreamExt};
use tokio::{sync::mpsc, time::Instant};
use tokio_stream::{wrappers::ReceiverStream, Stream};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status, Streaming};

use crate::rpc::validate;

use crate::queues::session::{first_message, undecodable};

use crate::error::{Error, Result};
use crate::pb;
use crate::receivers::deliveries::{delivered, delivery_limits};
use crate::receivers::store::Receivers;
use crate::receivers::store::{Delivered, DeliveryLimits};
use crate::rpc::auth;
use crate::store::keys::ChannelKind;
use crate::store::SourceKind;

pub(crate) type ReceiveStream = Pin<Box<dyn Stream<Item = Result<pb::ReceiveResponse, Status>> + Send>>;

/// Rounds (acks and a delivery) a stream may have in flight at once.
const ROUNDS: usize = 3;

/// What opening a Receive stream takes from the ScheduleService that serves it.
pub(crate) struct Opener<'a> {
    pub store: &'a Receivers,
    /// Wake-ups: the stream waits on its receiver's.
    pub wakeups: &'a crate::store::wake::Wakeups,
    pub config: &'a std::sync::Arc<crate::config::Config>,
    /// Cancelled when the server begins a graceful shutdown.
    pub shutdown: &'a CancellationToken,
}

/// Reads the open message, checks it, and starts the stream's task.
pub(crate) async fn open(
    service: &Opener<'_>,
    request: Request<Streaming<pb::ReceiveRequest>>,
) -> Result<Response<ReceiveStream>> {
    let identity = auth::identity(&request);
    let grant = auth::grant(&request);
    let mut inbound = request.into_inner();
    let first = first_message(&mut inbound).await?;
    let Some(open) = first.open.as_ref() else {
        return Err(Error::invalid("open", "is required on the first message"));
    };
    let limits = delivery_limits(service.config, service.shutdown, "open.", open)?;
    auth::authorize_as(&identity, open)?;
    let grant = grant.map(|g| g.scoped(open));
    let mut consumer = Consumer {
        store: service.store.clone(),
        receiver: open.receiver.clone(),
        consumer: open.consumer_id.clone(),
        limits,
        max_batch: service.config.limits.max_batch as usize,
        sharded: service.store.shard_count(SourceKind::Receiver, &open.receiver) > 1,
        pending: Vec::new(),
        held: HashMap::new(),
        gone: false,
        grant: grant.clone(),
    };
    consumer.take(first, true)?;
    let shards = consumer.store.shard_names(SourceKind::Receiver, &consumer.receiver);
    let waiter = service.wakeups.waiter(ChannelKind::Receiver, &consumer.receiver, &shards).await?;
    let (tx, rx) = mpsc::channel(4);
    let shutdown = service.shutdown.clone();
    let grace = Duration::from_millis(service.config.orphan_cleanup.stream_grace_ms);
    let counted = crate::rpc::opens::Counted::new();
    tokio::spawn(async move {
        let _counted = counted;
        let _open = metrics::gauge!("baton_receive_streams_open");
        _open.increment(1.0);
        if let Err(e) = consumer.run(inbound, &tx, &waiter.notify, &shutdown).await {
            if matches!(e.code(), tonic::Code::Internal | tonic::Code::Unavailable) {
                tracing::warn!(receiver = consumer.receiver, error = %e, "receive stream ended");
            }
            let _ = tx.send(Err(Status::from(e))).await;
        }
        _open.decrement(1.0);
        if consumer.gone && !grace.is_zero() && !consumer.held.is_empty() && !shutdown.is_cancelled() {
            consumer.abandon(grace).await;
        }
    });
    Ok(Response::new(auth::guard(grant, ReceiverStream::new(rx))))
}

struct Consumer {
    store: Receivers,
    receiver: String,
    consumer: String,
    limits: DeliveryLimits,
    max_batch: usize,
    /// The receiver has several shards.
    sharded: bool,
    /// Acks received, not yet applied.
    pending: Vec<pb::ReceiveAck>,
    /// Messages sent to the consumer and not yet acked (id → token): what a stream that breaks
    /// leaves behind.
    held: HashMap<String, u64>,
    /// The stream broke without the consumer's half-close: its process may have died.
    gone: bool,
    /// What the stream was opened with: checked before each round, so no ack sent after the
    /// consumer's token was revoked is applied and nothing more is delivered to it.
    grant: Option<auth::Grant>,
}

/// A round's answer: the acks applied (in order, whether each was), and the delivery if one ran.
type RoundResult = (Vec<pb::ReceiveAck>, Result<Vec<bool>>, Option<Result<Delivered>>);

impl Consumer {
    /// Takes one message in: validated whole first, so an invalid one changes nothing.
    fn take(&mut self, m: pb::ReceiveRequest, first: bool) -> Result<()> {
        if m.open.is_some() && !first {
            return Err(Error::invalid("open", "is allowed on the first message only"));
        }
        validate::count("acks", m.acks.len(), 0, self.max_batch)?;
        for (i, a) in m.acks.iter().enumerate() {
            validate::name(&format!("acks[{i}].id"), &a.id)?;
            validate::token(&format!("acks[{i}].token"), a.token)?;
        }
        for a in &m.acks {
            if self.held.get(&a.id) == Some(&a.token) {
                self.held.remove(&a.id);
            }
        }
        self.pending.extend(m.acks);
        Ok(())
    }

    async fn run(
        &mut self,
        mut inbound: Streaming<pb::ReceiveRequest>,
        tx: &mpsc::Sender<Result<pb::ReceiveResponse, Status>>,
        notify: &tokio::sync::Notify,
        shutdown: &CancellationToken,
    ) -> Result<()> {
        let mut open = true; // the consumer has not half-closed
        let mut want = true; // something may be deliverable: run a delivery round
        let mut due_at: Option<Instant> = None;
        let mut notified = Box::pin(notify.notified());
        // An invalid message ends the stream, once the acks before it are applied and answered.
        let mut fail: Option<Error> = None;
        let mut rounds = FuturesOrdered::new();
        let mut delivering = 0; // rounds in flight with a delivery
        loop {
            // Everything that has arrived, without waiting (bounded, so a flood still flushes).
            while open && self.pending.len() < self.max_batch {
                match inbound.message().now_or_never() {
                    None => break,
                    Some(m) => {
                        if !self.receive(m.transpose(), &mut want, &mut open, &mut fail) {
                            self.gone = true;
                            return Ok(()); // the consumer is gone: nobody to answer
                        }
                    }
                }
            }
            let stopping = shutdown.is_cancelled();
            if rounds.len() < ROUNDS {
                // On a sharded receiver the bound spans shards, which one script cannot see at
                // once: one delivery at a time there.
                let deliver = want && open && !stopping && (delivering == 0 || !self.sharded);
                if deliver || !self.pending.is_empty() {
                    auth::still_granted(&self.grant)?;
                    if deliver {
                        delivering += 1;
                        // Armed before the delivery, so a wake-up between it and the wait is
                        // not missed.
                        notified.set(notify.notified());
                        notified.as_mut().enable();
                        want = false;
                        due_at = None;
                    }
                    let acks = std::mem::take(&mut self.pending);
                    rounds.push_back(round(
                        self.store.clone(),
                        self.receiver.clone(),
                        self.consumer.clone(),
                        self.limits,
                        acks,
                        deliver,
                    ));
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
            let waiting = open && !stopping && !want;
            let timer = async {
                match due_at {
                    Some(at) if waiting => tokio::time::sleep_until(at).await,
                    _ => std::future::pending().await,
                }
            };
            tokio::select! {
                Some((acks, acked, delivery)) = rounds.next(), if !rounds.is_empty() => {
                    let mut response = pb::ReceiveResponse::default();
                    let acked = acked?;
                    let mut lost = 0;
                    for (a, ok) in acks.into_iter().zip(acked) {
                        if ok {
                            response.acked.push(a);
                        } else {
                            lost += 1;
                            response.lost.push(a);
                        }
                    }
                    if !response.acked.is_empty() {
                        metrics::counter!("baton_schedule_acked_total", "receiver" => self.receiver.clone())
                            .increment(response.acked.len() as u64);
                    }
                    if lost > 0 {
                        metrics::counter!("baton_leases_lost_total", "rpc" => "Receive").increment(lost);
                    }
                    if let Some(got) = delivery {
                        delivering -= 1;
                        let got = got?;
                        // Full: more may be due now. Otherwise wait for a wake-up, an ack, or
                        // the next due time (or ack deadline).
                        if got.deliveries.len() as u32 == self.limits.batch {
                            want = true;
                        } else {
                            due_at = got.next_due_ms.map(|due| {
                                Instant::now() + Duration::from_millis((due - got.now_ms).max(0) as u64 + 1)
                            });
                        }
                        response.messages =
                            delivered(&self.receiver, got.now_ms, got.redelivered, got.dead_lettered, got.deliveries);
                    }
                    let empty = response.messages.is_empty() && response.acked.is_empty() && response.lost.is_empty();
                    // A consumer gone with messages handed to it: they come back after the stream
                    // grace (abandon).
                    let sent: Vec<(String, u64)> = response.messages.iter().map(|m| (m.id.clone(), m.token)).collect();
                    if !empty {
                        self.held.extend(sent);
                        if tx.send(Ok(response)).await.is_err() {
                            self.gone |= open;
                            return Ok(());
                        }
                    }
                }
                m = inbound.message(), if open => {
                    if !self.receive(m.transpose(), &mut want, &mut open, &mut fail) {
                        self.gone = true;
                        return Ok(());
                    }
                }
                _ = &mut notified, if waiting => want = true,
                _ = timer => want = true,
                _ = shutdown.cancelled(), if !stopping => {}
                _ = tx.closed() => {
                    self.gone |= open;
                    return Ok(());
                }
            }
        }
    }

    /// After a broken stream's grace, makes what it held due again (each only while still in
    /// flight with the token it was sent with), instead of waiting for the ack timeout. At least
    /// once, as before: a consumer that reconnects and acks late finds the token refused.
    async fn abandon(&mut self, grace: Duration) {
        tokio::time::sleep(grace).await;
        let held: Vec<(String, u64)> = self.held.drain().collect();
        match self.store.expire_deliveries(&self.receiver, &held).await {
            Ok(n) => {
                tracing::info!(
                    receiver = self.receiver,
                    consumer = self.consumer,
                    held = held.len(),
                    expired = n,
                    "stream broke; deliveries due again"
                );
                metrics::counter!("baton_stream_leases_reclaimed_total", "kind" => "receive").increment(n);
            }
            Err(e) => {
                tracing::warn!(receiver = self.receiver, error = %e, "could not give back a broken stream's deliveries; the ack timeout will")
            }
        }
    }

    /// One read from the stream: acks (which free places: deliver), its end, or an invalid or
    /// undecodable message (stops the reading; what came before is still applied). False: the
    /// stream broke, the consumer is gone.
    fn receive(
        &mut self,
        m: Option<std::result::Result<pb::ReceiveRequest, Status>>,
        want: &mut bool,
        open: &mut bool,
        fail: &mut Option<Error>,
    ) -> bool {
        match m {
            None => *open = false,
            Some(Ok(m)) => match self.take(m, false) {
                Ok(()) => *want = true,
                Err(e) => (*fail, *open) = (Some(e), false),
            },
            Some(Err(status)) => match undecodable(status) {
                Ok(e) => (*fail, *open) = (Some(e), false),
                Err(_) => return false,
            },
        }
        true
    }
}

/// One round: apply `acks` and (deliver) run a delivery round, side by side on the multiplexed
/// connection, the acks first, so the places they free are filled in the same round trip.
async fn round(
    store: Receivers,
    receiver: String,
    consumer: String,
    limits: DeliveryLimits,
    acks: Vec<pb::ReceiveAck>,
    deliver: bool,
) -> RoundResult {
    let applied = async {
        if acks.is_empty() {
            return Ok(Vec::new());
        }
        let items: Vec<(&str, &str, u64, &str)> =
            acks.iter().map(|a| (receiver.as_str(), a.id.as_str(), a.token, "")).collect();
        store.ack_batch(&items).await
    };
    let delivery = async {
        if !deliver {
            return None;
        }
        Some(store.deliver(&receiver, &consumer, limits).await)
    };
    let (applied, delivery) = tokio::join!(applied, delivery);
    (acks, applied, delivery)
}

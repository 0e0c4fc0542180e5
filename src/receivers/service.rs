//! ScheduleService: Schedule, Subscribe, Ack, Cancel.

use std::{pin::Pin, sync::Arc, time::Duration};

use tokio::sync::mpsc;
use tokio_stream::{wrappers::ReceiverStream, Stream};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::pb;
use crate::pb::schedule_service_server::ScheduleService;
use crate::receivers::deliveries::{delivered, delivery_limits};
use crate::receivers::store::Receivers;
use crate::receivers::store::{DeliveryLimits, MessageInfo, MessageState, NewMessage, Scheduled, When};
use crate::rpc::auth;
use crate::rpc::validate;
use crate::rpc::{observe, timestamp};
use crate::store::keys::ChannelKind;
use crate::store::wake::Wakeups;
use crate::store::SourceKind;

pub(crate) struct ScheduleServiceImpl {
    pub(crate) store: Receivers,
    pub(crate) wakeups: Wakeups,
    pub(crate) config: Arc<Config>,
    /// Cancelled when the server begins a graceful shutdown: streams end.
    pub(crate) shutdown: CancellationToken,
}

impl ScheduleServiceImpl {
    pub(crate) fn new(store: Receivers, wakeups: Wakeups, config: Arc<Config>, shutdown: CancellationToken) -> Self {
        Self { store, wakeups, config, shutdown }
    }
}

/// What one Subscribe stream follows.
struct Subscription {
    receiver: String,
    consumer: String,
    limits: DeliveryLimits,
    /// What the stream was opened with: checked before each delivery round.
    grant: Option<auth::Grant>,
}

/// Feeds one Subscribe stream: a delivery round, then sleep until the next message is due or
/// an ack deadline passes (timer on what Redis said) or the receiver is announced (a new earlier
/// message, an ack that freed room), until the consumer leaves or the server stops.
async fn deliver_loop(
    store: Receivers,
    wakeups: Wakeups,
    shutdown: CancellationToken,
    subscription: Subscription,
    tx: mpsc::Sender<Result<pb::SubscribeResponse, Status>>,
) {
    let Subscription { receiver, consumer, limits, grant } = subscription;
    let shards = store.shard_names(SourceKind::Receiver, &receiver);
    let waiter = match wakeups.waiter(ChannelKind::Receiver, &receiver, &shards).await {
        Ok(waiter) => waiter,
        Err(e) => {
            let _ = tx.send(Err(Status::from(e))).await;
            return;
        }
    };
    let notify = &waiter.notify;
    loop {
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        // Nothing more is handed to a consumer whose token a reload revoked.
        if let Err(e) = auth::still_granted(&grant) {
            let _ = tx.send(Err(Status::from(e))).await;
            break;
        }
        let round = match store.deliver(&receiver, &consumer, limits).await {
            Ok(round) => round,
            Err(e) => {
                let _ = tx.send(Err(Status::from(e))).await;
                break;
            }
        };
        let (now_ms, next_due_ms) = (round.now_ms, round.next_due_ms);
        let full = round.deliveries.len() as u32 == limits.batch;
        let mut gone = false;
        for msg in delivered(&receiver, round.now_ms, round.redelivered, round.dead_lettered, round.deliveries) {
            // A consumer gone with messages handed to it: they come back after the ack timeout.
            if tx.send(Ok(msg)).await.is_err() {
                gone = true;
                break;
            }
        }
        if gone {
            break;
        }
        if full {
            continue;
        }
        let timer = async {
            match next_due_ms {
                Some(due) => tokio::time::sleep(Duration::from_millis((due - now_ms).max(0) as u64 + 1)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = &mut notified => {}
            _ = timer => {}
            _ = shutdown.cancelled() => break,
            _ = tx.closed() => break,
        }
    }
}

impl ScheduleServiceImpl {
    /// Checks a subscription (`field` prefixes its fields' names in errors: "" for Subscribe,
    /// "open." for Receive); the delivery settings of its consumer.
    pub(crate) fn delivery_limits(&self, field: &str, req: &pb::SubscribeRequest) -> Result<DeliveryLimits> {
        delivery_limits(&self.config, &self.shutdown, field, req)
    }

    /// Checks one message to schedule (`field` prefixes its fields' names in errors: "" for a
    /// lone Schedule, "messages[3]." in a batch); the message as the store takes it, with
    /// `traceparent` the one it carries (see `trace::for_item`).
    fn message<'a>(&self, field: &str, req: &'a pb::ScheduleRequest, traceparent: &'a str) -> Result<NewMessage<'a>> {
        validate::name(&format!("{field}receiver"), &req.receiver)?;
        validate::size(&format!("{field}payload"), req.payload.len(), self.config.limits.max_payload_bytes)?;
        if !req.key.is_empty() {
            validate::name(&format!("{field}key"), &req.key)?;
        }
        let wf = format!("{field}key_window");
        let key_window_ms = match validate::duration_ms(&wf, req.key_window.as_ref(), self.config.dedup.max_window_ms)?
        {
            Some(_) if req.key.is_empty() => return Err(Error::invalid(wf, "applies only with key")),
            Some(0) => return Err(Error::invalid(wf, "must be at least 1 ms")),
            Some(ms) => ms,
            None => 0,
        };
        crate::trace::check_field(&format!("{field}traceparent"), &req.traceparent)?;
        validate::request_id(&format!("{field}request_id"), &req.request_id)?;
        Ok(NewMessage {
            payload: &req.payload,
            when: self.when(field, req)?,
            key: &req.key,
            key_window_ms,
            traceparent,
            request_id: &req.request_id,
        })
    }

    /// When a checked message is due.
    fn when(&self, field: &str, req: &pb::ScheduleRequest) -> Result<When> {
        let max = self.config.limits.max_duration_ms;
        Ok(match &req.when {
            None => When::After(0),
            Some(pb::schedule_request::When::Delay(d)) => {
                When::After(validate::duration_ms(&format!("{field}delay"), Some(d), max)?.unwrap_or(0))
            }
            Some(pb::schedule_request::When::DeliverAt(t)) => {
                // The range of google.protobuf.Timestamp: years 1 to 9999.
                if !(0..1_000_000_000).contains(&t.nanos) || !(-62_135_596_800..=253_402_300_799).contains(&t.seconds) {
                    return Err(Error::invalid(
                        format!("{field}deliver_at"),
                        "must be a valid instant (years 1 to 9999, nanos below 1e9)",
                    ));
                }
                match t.seconds * 1000 + (t.nanos / 1_000_000) as i64 {
                    // Any past instant means now (before 1970 too).
                    at if at <= 0 => When::After(0),
                    at => When::At(at),
                }
            }
        })
    }
}

/// The answer to one Schedule, counted in the receiver's metrics: scheduled, or deduplicated
/// (its key held by a message not yet acked, or by a window).
fn scheduled(receiver: &str, done: Scheduled) -> pb::ScheduleResponse {
    let name = if done.created { "baton_schedule_scheduled_total" } else { "baton_schedule_deduplicated_total" };
    metrics::counter!(name, "receiver" => receiver.to_string()).increment(1);
    pb::ScheduleResponse {
        id: done.id,
        deliver_at: Some(timestamp(done.deliver_at_ms)),
        created: done.created,
        key_held_until: done.key_held_until_ms.map(timestamp),
    }
}

/// Per-item results of a batch of acks (`acked[i]` for `acks[i]`), counted per receiver.
pub(crate) fn ack_results(acks: Vec<pb::AckRequest>, acked: &[bool]) -> Vec<pb::AckResult> {
    let mut counts: Vec<(String, u64)> = Vec::new();
    let mut lost = 0;
    let results = acks
        .into_iter()
        .zip(acked)
        .map(|(a, &acked)| {
            if acked {
                match counts.iter_mut().find(|(r, _)| *r == a.receiver) {
                    Some((_, n)) => *n += 1,
                    None => counts.push((a.receiver.clone(), 1)),
                }
            } else {
                lost += 1;
            }
            pb::AckResult { receiver: a.receiver, id: a.id, lease_lost: !acked }
        })
        .collect();
    for (receiver, n) in counts {
        metrics::counter!("baton_schedule_acked_total", "receiver" => receiver).increment(n);
    }
    if lost > 0 {
        metrics::counter!("baton_leases_lost_total", "rpc" => "Ack").increment(lost);
    }
    results
}

type SubscribeStream = Pin<Box<dyn Stream<Item = Result<pb::SubscribeResponse, Status>> + Send>>;

#[tonic::async_trait]
impl ScheduleService for ScheduleServiceImpl {
    async fn schedule(&self, request: Request<pb::ScheduleRequest>) -> Result<Response<pb::ScheduleResponse>, Status> {
        observe("Schedule", async {
            auth::authorize(&request)?;
            let incoming = crate::trace::incoming(request.metadata());
            let req = request.into_inner();
            let traceparent = crate::trace::for_item(&req.traceparent, &incoming);
            let msg = self.message("", &req, &traceparent)?;
            let done = self.store.schedule(&req.receiver, &msg).await?;
            Ok(Response::new(scheduled(&req.receiver, done)))
        })
        .await
    }

    async fn schedule_batch(
        &self,
        request: Request<pb::ScheduleBatchRequest>,
    ) -> Result<Response<pb::ScheduleBatchResponse>, Status> {
        observe("ScheduleBatch", async {
            auth::authorize(&request)?;
            let incoming = crate::trace::incoming(request.metadata());
            let req = request.into_inner();
            validate::count("messages", req.messages.len(), 1, self.config.limits.max_batch as usize)?;
            let traceparents: Vec<String> =
                req.messages.iter().map(|m| crate::trace::for_item(&m.traceparent, &incoming)).collect();
            let msgs = (req.messages.iter().zip(&traceparents).enumerate())
                .map(|(i, (m, tp))| self.message(&format!("messages[{i}]."), m, tp))
                .collect::<Result<Vec<_>>>()?;
            // Side by side on the multiplexed connection: pipelined, one round trip for the lot.
            let results = futures::future::try_join_all(
                req.messages.iter().zip(&msgs).map(|(m, msg)| self.store.schedule(&m.receiver, msg)),
            )
            .await?;
            let results = req.messages.iter().zip(results).map(|(m, done)| scheduled(&m.receiver, done)).collect();
            Ok(Response::new(pb::ScheduleBatchResponse { results }))
        })
        .await
    }

    type SubscribeStream = SubscribeStream;

    async fn subscribe(
        &self,
        request: Request<pb::SubscribeRequest>,
    ) -> Result<Response<Self::SubscribeStream>, Status> {
        observe("Subscribe", async {
            auth::authorize(&request)?;
            let grant = auth::grant(&request).map(|g| g.scoped(request.get_ref()));
            let req = request.into_inner();
            let limits = self.delivery_limits("", &req)?;
            let (tx, rx) = mpsc::channel(16);
            let counted = crate::rpc::opens::Counted::new();
            let delivers = deliver_loop(
                self.store.clone(),
                self.wakeups.clone(),
                self.shutdown.clone(),
                Subscription { receiver: req.receiver, consumer: req.consumer_id, limits, grant: grant.clone() },
                tx,
            );
            tokio::spawn(async move {
                let _counted = counted;
                delivers.await
            });
            Ok(Response::new(auth::guard(grant, ReceiverStream::new(rx))))
        })
        .await
    }

    type ReceiveStream = crate::receivers::receive::ReceiveStream;

    async fn receive(
        &self,
        request: Request<tonic::Streaming<pb::ReceiveRequest>>,
    ) -> Result<Response<Self::ReceiveStream>, Status> {
        observe(
            "Receive",
            crate::receivers::receive::open(
                &crate::receivers::receive::Opener {
                    store: &self.store,
                    wakeups: &self.wakeups,
                    config: &self.config,
                    shutdown: &self.shutdown,
                },
                request,
            ),
        )
        .await
    }

    async fn ack(&self, request: Request<pb::AckRequest>) -> Result<Response<pb::AckResponse>, Status> {
        observe("Ack", async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("receiver", &req.receiver)?;
            validate::name("id", &req.id)?;
            validate::token("token", req.token)?;
            validate::request_id("request_id", &req.request_id)?;
            self.store.ack(&req.receiver, &req.id, req.token, &req.request_id).await.inspect_err(|e| {
                if matches!(e, Error::LeaseLost(_)) {
                    metrics::counter!("baton_leases_lost_total", "rpc" => "Ack").increment(1);
                }
            })?;
            metrics::counter!("baton_schedule_acked_total", "receiver" => req.receiver).increment(1);
            Ok(Response::new(pb::AckResponse {}))
        })
        .await
    }

    async fn ack_batch(&self, request: Request<pb::AckBatchRequest>) -> Result<Response<pb::AckBatchResponse>, Status> {
        observe("AckBatch", async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::count("acks", req.acks.len(), 1, self.config.limits.max_batch as usize)?;
            for (i, a) in req.acks.iter().enumerate() {
                validate::name(&format!("acks[{i}].receiver"), &a.receiver)?;
                validate::name(&format!("acks[{i}].id"), &a.id)?;
                validate::token(&format!("acks[{i}].token"), a.token)?;
                validate::request_id(&format!("acks[{i}].request_id"), &a.request_id)?;
            }
            let items: Vec<(&str, &str, u64, &str)> = (req.acks.iter())
                .map(|a| (a.receiver.as_str(), a.id.as_str(), a.token, a.request_id.as_str()))
                .collect();
            let done = self.store.ack_batch(&items).await?;
            let results = ack_results(req.acks, &done);
            Ok(Response::new(pb::AckBatchResponse { results }))
        })
        .await
    }

    async fn cancel(&self, request: Request<pb::CancelRequest>) -> Result<Response<pb::CancelResponse>, Status> {
        observe("Cancel", async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("receiver", &req.receiver)?;
            validate::name("id", &req.id)?;
            if !self.store.cancel(&req.receiver, &req.id).await? {
                return Err(Error::NotFound(format!("message {:?} of receiver {:?}", req.id, req.receiver)));
            }
            Ok(Response::new(pb::CancelResponse {}))
        })
        .await
    }

    async fn list_messages(
        &self,
        request: Request<pb::ListMessagesRequest>,
    ) -> Result<Response<pb::ListMessagesResponse>, Status> {
        observe("ListMessages", async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("receiver", &req.receiver)?;
            let states = match pb::MessageState::try_from(req.state) {
                Ok(pb::MessageState::Unspecified) => vec![MessageState::Scheduled, MessageState::InFlight],
                Ok(pb::MessageState::Scheduled) => vec![MessageState::Scheduled],
                Ok(pb::MessageState::InFlight) => vec![MessageState::InFlight],
                Err(_) => return Err(Error::invalid("state", format!("unknown state {}", req.state))),
            };
            let page_size = if req.page_size == 0 { 100 } else { req.page_size };
            if page_size > 1000 {
                return Err(Error::invalid("page_size", "must be at most 1000"));
            }
            if req.payload_bytes > 1024 {
                return Err(Error::invalid("payload_bytes", "must be at most 1024"));
            }
            // The listing's segments in order: each state, each shard of it.
            let shards = self.store.shard_names(SourceKind::Receiver, &req.receiver);
            let segments: Vec<(MessageState, &String)> =
                states.iter().flat_map(|&st| shards.iter().map(move |sh| (st, sh))).collect();
            let (mut segment, mut offset) = match req.page_token.as_str() {
                "" => (0, 0),
                token => token
                    .split_once(':')
                    .and_then(|(s, o)| Some((s.parse::<usize>().ok()?, o.parse::<u64>().ok()?)))
                    .filter(|(s, _)| *s < segments.len())
                    .ok_or_else(|| Error::invalid("page_token", "is not a token this listing gave"))?,
            };
            if !self.store.known(SourceKind::Receiver, &req.receiver).await? {
                return Err(Error::NotFound(format!(
                    "no receiver {:?}: nothing was ever scheduled there",
                    req.receiver
                )));
            }
            let mut messages = Vec::new();
            let mut next = String::new();
            while segment < segments.len() {
                let (state, shard) = segments[segment];
                let want = page_size - messages.len() as u32;
                let (total, page) = self.store.list_messages(shard, state, offset, want, req.payload_bytes).await?;
                let got = page.len() as u64;
                messages.extend(page.into_iter().map(|m| message_pb(shard, state, m)));
                if messages.len() as u32 == page_size {
                    if offset + got < total {
                        next = format!("{segment}:{}", offset + got);
                    } else if segment + 1 < segments.len() {
                        next = format!("{}:0", segment + 1);
                    }
                    break;
                }
                segment += 1;
                offset = 0;
            }
            Ok(Response::new(pb::ListMessagesResponse { messages, next_page_token: next }))
        })
        .await
    }
}

/// A listed message as the API shows it: its id as callers know it (a shard's carry the shard).
fn message_pb(shard: &str, state: MessageState, m: MessageInfo) -> pb::MessageInfo {
    pb::MessageInfo {
        id: crate::receivers::shards::public_id(shard, &m.id),
        state: match state {
            MessageState::Scheduled => pb::MessageState::Scheduled,
            MessageState::InFlight => pb::MessageState::InFlight,
        } as i32,
        deliver_at: Some(timestamp(m.deliver_at_ms)),
        delivery_count: m.delivery_count,
        key: m.key,
        ack_deadline: m.ack_deadline_ms.map(timestamp),
        consumer_id: m.consumer,
        token: m.token,
        payload_bytes: m.payload_bytes,
        payload_head: m.payload_head,
    }
}

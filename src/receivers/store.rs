//! Receivers: the state transitions of ScheduleService, one script each.

use super::records::MessageMeta;
use crate::error::{Error, Result};
use crate::store::keys::ChannelKind;
use crate::store::shards::Shard;
use crate::store::{over_core, reply::Reply, scripts::FromReply, scripts::Int, scripts::PurgePage, Core, Path};

/// The typed calls of `lua/receivers/`, generated from the scripts' headers.
pub(crate) mod calls {
    use crate::store::keys::ReceiverKeys;
    include!(concat!(env!("OUT_DIR"), "/calls_receivers.rs"));
}

/// What ackMessages answered: per ack, in order, whether it was acked.
pub(crate) struct Acked(Vec<bool>);

impl FromReply for Acked {
    /// One integer per ack: 0 acked, -1 LEASE_LOST.
    fn from_reply(mut r: Reply) -> Result<Self> {
        let mut out = Vec::new();
        while !r.is_empty() {
            out.push(r.next::<i64>()? == 0);
        }
        Ok(Acked(out))
    }
}

/// What readMessages answered: how many the set holds, and per message its score (deliver at,
/// or ack deadline in flight) and figures.
pub(crate) struct MessagePage(u64, Vec<(i64, MessageInfo)>);

impl FromReply for MessagePage {
    /// `{ total, (id, score, meta, delivery, payload bytes, payload head)* }`
    fn from_reply(mut r: Reply) -> Result<Self> {
        let total = r.next()?;
        let mut page = Vec::new();
        while !r.is_empty() {
            let id: String = r.next()?;
            let score: i64 = r.next()?;
            let meta: String = r.next()?;
            let delivery: String = r.next()?;
            let mut m = MessageInfo { id, payload_bytes: r.next()?, payload_head: r.next()?, ..Default::default() };
            match MessageMeta::parse(&meta) {
                Some(meta) => {
                    (m.deliver_at_ms, m.delivery_count, m.key) = (meta.deliver_at_ms, meta.delivery_count, meta.key)
                }
                None => m.deliver_at_ms = score,
            }
            // delivery (in flight): token|consumer|delivered_at|key
            let mut d = delivery.splitn(4, '|');
            m.token = d.next().and_then(|v| v.parse().ok()).unwrap_or(0);
            m.consumer = d.next().unwrap_or_default().to_string();
            page.push((score, m));
        }
        Ok(MessagePage(total, page))
    }
}

/// When a message is due.
#[derive(Clone, Copy, Debug)]
pub enum When {
    At(i64),
    After(u64),
}

/// A message to schedule, checked (ScheduleRequest).
#[derive(Clone, Copy, Debug)]
pub struct NewMessage<'a> {
    pub payload: &'a [u8],
    pub when: When,
    /// Idempotency key; "" for none.
    pub key: &'a str,
    /// How long `key` holds from this Schedule, whatever becomes of the message (ms); 0: only
    /// while the message exists.
    pub key_window_ms: u64,
    /// The producer's W3C trace context; "" for none.
    pub traceparent: &'a str,
    /// Request id of the call, for a retry; "" for none.
    pub request_id: &'a str,
}

/// What one Schedule did (a retry with the same request id: what the first call did).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scheduled {
    /// False: deduplicated, `id` is the message holding the key.
    pub created: bool,
    pub id: String,
    pub deliver_at_ms: i64,
    /// When the key's window ends; None when it has no open window.
    pub key_held_until_ms: Option<i64>,
}

/// One delivery to a consumer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub id: String,
    pub payload: Vec<u8>,
    pub deliver_at_ms: i64,
    pub count: u32,
    pub token: u64,
    /// The producer's W3C trace context; "" for none.
    pub traceparent: String,
}

/// One round of delivery.
#[derive(Clone, Debug)]
pub struct Delivered {
    pub now_ms: i64,
    /// The earliest of the next due message and the next ack deadline.
    pub next_due_ms: Option<i64>,
    pub redelivered: u64,
    pub dead_lettered: u64,
    pub deliveries: Vec<Delivery>,
}

/// Delivery settings of a receiver's consumer.
#[derive(Clone, Copy, Debug)]
pub struct DeliveryLimits {
    pub max_in_flight: u32,
    pub ack_timeout_ms: u64,
    pub max_deliveries: u32,
    pub batch: u32,
}

/// A receiver's figures.
#[derive(Clone, Debug, Default)]
pub struct ReceiverStats {
    pub now_ms: i64,
    pub scheduled: u64,
    pub due: u64,
    pub oldest_due_ms: Option<i64>,
    pub average_overdue_ms: i64,
    pub in_flight: u64,
    pub overdue_in_flight: u64,
    pub dead_lettered: u64,
    pub acked: u64,
    /// Paused (AdminService.Pause).
    pub paused: bool,
    /// The earliest delivery time after now (a message waiting for its time).
    pub next_due_ms: Option<i64>,
}

/// Which of a receiver's messages a listing pages through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageState {
    /// Waiting for their time, by delivery time.
    Scheduled,
    /// Delivered and not yet acked, by ack deadline.
    InFlight,
}

/// A message as a listing shows it.
#[derive(Clone, Debug, Default)]
pub struct MessageInfo {
    /// The id in its physical receiver (`shards::public_id` makes a caller's id of it).
    pub id: String,
    pub deliver_at_ms: i64,
    pub delivery_count: u32,
    pub key: String,
    /// While in flight: its ack deadline, consumer and delivery token.
    pub ack_deadline_ms: Option<i64>,
    pub consumer: String,
    pub token: u64,
    pub payload_bytes: u64,
    /// The payload's first bytes (at most the `head` asked for).
    pub payload_head: Vec<u8>,
}

pub use crate::store::keys::wake_name;

/// The receivers store: messages scheduled, delivered and acknowledged, over the core. Its
/// methods take a receiver's name and route to its shards (`receivers::shards`); the sweeps'
/// and the listing's take a physical receiver.
#[derive(Clone)]
pub struct Receivers {
    core: Core,
}

over_core!(Receivers);

impl Receivers {
    pub fn new(core: Core) -> Self {
        Self { core }
    }
}

impl Shard<'_, Receivers> {
    /// Persists a message in one physical receiver (a retry with the same `request_id`: the
    /// first call's answer).
    pub(super) async fn schedule(&self, receiver: &str, msg: &NewMessage<'_>) -> Result<Scheduled> {
        let k = self.keys.receiver(receiver);
        let (at, delay) = match msg.when {
            When::At(at) => (at, 0),
            When::After(delay) => (-1, delay),
        };
        let (channel, wake_name) = (self.keys.announce(ChannelKind::Receiver, receiver), wake_name(receiver));
        let request = crate::store::request_field(msg.request_id, || "schedule".into());
        let call = calls::ScheduleMessage {
            keys: &k,
            payload: msg.payload,
            deliver_at_ms: at,
            delay_ms: delay,
            key: msg.key,
            channel: &channel,
            wake_name: &wake_name,
            traceparent: msg.traceparent,
            request: &request,
            retention_ms: self.policy.idempotency.retention_ms,
            max_entries: self.policy.idempotency.max_entries,
            window_ms: if msg.key.is_empty() { 0 } else { msg.key_window_ms },
        };
        self.remember(self.keys.receivers(), receiver).await?;
        self.call(Path::WriteBack, call).await
    }

    /// One round of delivery to `consumer`.
    pub(super) async fn deliver(&self, receiver: &str, consumer: &str, limits: DeliveryLimits) -> Result<Delivered> {
        let k = self.keys.receiver(receiver);
        let call = calls::DeliverMessages {
            keys: &k,
            consumer,
            max_in_flight: limits.max_in_flight as u64,
            ack_timeout_ms: limits.ack_timeout_ms,
            max_deliveries: limits.max_deliveries as u64,
            limit: limits.batch as u64,
            receiver,
            dlq_ttl_ms: self.policy.dead_letter.ttl_ms,
            dlq_max: self.policy.dead_letter.max_entries,
        };
        self.call_items(Path::Dispatch, call, limits.batch as usize).await
    }
}

impl FromReply for Scheduled {
    /// `{ created (1/0), id, deliverAt, heldUntil }` (an answer remembered before key windows
    /// existed has no heldUntil).
    fn from_reply(mut r: Reply) -> Result<Self> {
        let (created, id, deliver_at_ms) = (r.next::<i64>()? == 1, r.next()?, r.next()?);
        let held: i64 = if r.is_empty() { 0 } else { r.next()? };
        Ok(Scheduled { created, id, deliver_at_ms, key_held_until_ms: (held > 0).then_some(held) })
    }
}

impl FromReply for Delivered {
    /// `{ now, next due (-1), redelivered, dead-lettered, (id, payload, "deliverAt|count|token[|traceparent]")* }`
    fn from_reply(mut r: Reply) -> Result<Self> {
        let now_ms = r.next()?;
        let next: i64 = r.next()?;
        let redelivered = r.next()?;
        let dead_lettered = r.next()?;
        let mut deliveries = Vec::new();
        while !r.is_empty() {
            let (id, payload, rest): (String, Vec<u8>, String) = (r.next()?, r.next()?, r.next()?);
            let mut fields = rest.splitn(4, '|');
            let mut field = || match fields.next().map(str::parse::<i64>) {
                Some(Ok(v)) => Ok(v),
                _ => Err(Error::Internal(format!("deliverMessages: malformed delivery {rest:?}"))),
            };
            let (deliver_at_ms, count, token) = (field()?, field()?, field()?);
            let traceparent = fields.next().unwrap_or_default().to_owned();
            deliveries.push(Delivery {
                id,
                payload,
                deliver_at_ms,
                count: count as u32,
                token: token as u64,
                traceparent,
            });
        }
        Ok(Delivered { now_ms, next_due_ms: (next >= 0).then_some(next), redelivered, dead_lettered, deliveries })
    }
}

impl Shard<'_, Receivers> {
    /// Ends delivered messages of one physical receiver, one script per script_batch: per (id, token,
    /// request id), in order, whether it was acked (false: not in flight with that token, or
    /// listed twice; a retry with the request id of an ack applied: true again).
    /// `sharded`: `receiver` is a shard, whose consumers' room spans the other shards:
    /// announce after every batch that acked something.
    pub(super) async fn ack_batch(
        &self,
        receiver: &str,
        acks: &[(&str, u64, &str)],
        sharded: bool,
    ) -> Result<Vec<bool>> {
        let mut out = Vec::with_capacity(acks.len());
        for chunk in self.policy.chunks(acks) {
            out.extend(self.ack_script(receiver, chunk, sharded).await?);
        }
        Ok(out)
    }

    /// One ackMessages call.
    async fn ack_script(&self, receiver: &str, acks: &[(&str, u64, &str)], sharded: bool) -> Result<Vec<bool>> {
        let k = self.keys.receiver(receiver);
        let (channel, wake_name) = (self.keys.announce(ChannelKind::Receiver, receiver), wake_name(receiver));
        let fields: Vec<(String, String)> = acks
            .iter()
            .map(|(id, token, request_id)| {
                (token.to_string(), crate::store::request_field(request_id, || format!("ack|{id}|{token}")))
            })
            .collect();
        let call = calls::AckMessages {
            keys: &k,
            channel: &channel,
            wake_name: &wake_name,
            always: if sharded { "1" } else { "" },
            retention_ms: self.policy.idempotency.retention_ms,
            max_entries: self.policy.idempotency.max_entries,
            acks: acks
                .iter()
                .zip(&fields)
                .map(|((id, _, _), (token, request))| calls::AckMessagesAcks {
                    id,
                    token,
                    request,
                    _item: Default::default(),
                })
                .collect(),
        };
        let Acked(out) = self.call_items(Path::WriteBack, call, acks.len()).await?;
        if out.len() != acks.len() {
            return Err(Error::Internal(format!("ackMessages: {} answers for {} acks", out.len(), acks.len())));
        }
        Ok(out)
    }

    /// Makes deliveries of one physical receiver, each still in flight with its token, due
    /// again now (a broken Receive stream's, see `expireDeliveries`); how many were.
    pub(super) async fn expire_deliveries(&self, receiver: &str, items: &[(String, u64)]) -> Result<u64> {
        let k = self.keys.receiver(receiver);
        let mut expired = 0;
        for chunk in self.policy.chunks(items) {
            let tokens: Vec<String> = chunk.iter().map(|(_, token)| token.to_string()).collect();
            let deliveries = chunk
                .iter()
                .zip(&tokens)
                .map(|((id, _), token)| calls::ExpireDeliveriesDeliveries { id, token, _item: Default::default() })
                .collect();
            let channel = self.keys.announce(ChannelKind::Receiver, receiver);
            let call =
                calls::ExpireDeliveries { keys: &k, channel: &channel, wake_name: &wake_name(receiver), deliveries };
            expired += self.call(Path::WriteBack, call).await?.0 as u64;
        }
        Ok(expired)
    }

    /// Removes a scheduled or in-flight message; false if there is none.
    pub(super) async fn cancel(&self, receiver: &str, id: &str) -> Result<bool> {
        let k = self.keys.receiver(receiver);
        Ok(self.call(Path::WriteBack, calls::CancelMessage { keys: &k, id }).await?.0 == 1)
    }
}

impl Receivers {
    /// One page of a physical receiver's scheduled or in-flight messages, from rank `offset`:
    /// (how many the set holds, the page). Bounded by the page, whatever the receiver holds.
    pub async fn list_messages(
        &self,
        receiver: &str,
        state: MessageState,
        offset: u64,
        count: u32,
        head: u32,
    ) -> Result<(u64, Vec<MessageInfo>)> {
        let k = self.keys.receiver(receiver);
        let in_flight = state == MessageState::InFlight;
        let call = calls::ReadMessages {
            keys: &k,
            state: if in_flight { "inflight" } else { "scheduled" },
            offset,
            count: count as u64,
            head: head as u64,
        };
        let MessagePage(total, page) = self.call(Path::Dispatch, call).await?;
        let page = page
            .into_iter()
            .map(|(score, mut m)| {
                if in_flight {
                    m.ack_deadline_ms = Some(score);
                } else {
                    (m.token, m.consumer) = (0, String::new());
                }
                m
            })
            .collect();
        Ok((total, page))
    }

    /// A receiver's figures.
    pub async fn receiver_stats(&self, receiver: &str) -> Result<ReceiverStats> {
        let k = self.keys.receiver(receiver);
        self.call(Path::Dispatch, calls::ReceiverStats { keys: &k }).await
    }
}

impl FromReply for ReceiverStats {
    /// `{ now, scheduled, due, oldest due (-1), average overdue, in flight, overdue in flight,
    /// dead-lettered, acked, paused, next due (-1) }`
    fn from_reply(mut r: Reply) -> Result<Self> {
        let now_ms = r.next()?;
        let scheduled = r.next()?;
        let due = r.next()?;
        let oldest: i64 = r.next()?;
        Ok(ReceiverStats {
            now_ms,
            scheduled,
            due,
            oldest_due_ms: (oldest >= 0).then_some(oldest),
            average_overdue_ms: r.next()?,
            in_flight: r.next()?,
            overdue_in_flight: r.next()?,
            dead_lettered: r.next()?,
            acked: r.next()?,
            paused: r.next::<i64>()? == 1,
            next_due_ms: Some(r.next::<i64>()?).filter(|n| *n >= 0),
        })
    }
}

impl Receivers {
    /// Every receiver ever scheduled to.
    pub async fn receivers(&self) -> Result<Vec<String>> {
        let mut conn = self.redis.conn().await?;
        Ok(redis::cmd("SMEMBERS").arg(self.keys.receivers()).query_async(&mut conn).await?)
    }
}

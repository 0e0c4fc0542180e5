//! ScheduleService entry points over sharded receivers. A message with a key lives in shard
//! CRC16(key) mod N (so a key names one message across the receiver), one without in the
//! next shard in turn. Its id names its shard: `<shard>.<id in the shard>`. Subscribe delivers
//! from every shard, the consumer's `max_in_flight` bounding what it holds across all of them.

use crate::error::{Error, Result};
use crate::receivers::store::Receivers;
use crate::receivers::store::{Delivered, DeliveryLimits, NewMessage, Scheduled};
use crate::store::shards::Shard;
use crate::store::shards::{head_score, in_turn, peek, NEXT};
use crate::store::SourceKind;
use std::sync::atomic::Ordering;

/// A sharded receiver's message id: `<shard>.<id in the shard>`.
fn message_id(shard: usize, id: &str) -> String {
    format!("{shard}.{id}")
}

/// The id callers know a message of physical receiver `source` by (a shard's messages carry
/// the shard's index).
pub(crate) fn public_id(source: &str, id: &str) -> String {
    match crate::store::shards::index(source) {
        Some(shard) => message_id(shard as usize, id),
        None => id.to_string(),
    }
}

impl Receivers {
    /// Where a message id of `receiver` lives: (physical receiver, id in it). None for an id a
    /// sharded receiver cannot have given.
    pub fn message_shard(&self, receiver: &str, id: &str) -> Option<(String, String)> {
        match self.shard_count(SourceKind::Receiver, receiver) {
            1 => Some((receiver.to_string(), id.to_string())),
            n => {
                let (shard, inner) = id.split_once('.')?;
                let shard: u32 = shard.parse().ok().filter(|&i| i < n && !shard.starts_with('+'))?;
                (!inner.is_empty()).then(|| (format!("{receiver}#{shard}"), inner.to_string()))
            }
        }
    }

    /// Persists a message; what Schedule did (a retry with the same `request_id`: the first
    /// call's). On a sharded receiver a message without a key but with a request id lives in
    /// shard CRC16(request id), so its retry finds the first answer; one with a key in shard
    /// CRC16(key), where its key's window lives too.
    pub async fn schedule(&self, receiver: &str, msg: &NewMessage<'_>) -> Result<Scheduled> {
        let n = self.shard_count(SourceKind::Receiver, receiver) as usize;
        if n == 1 {
            return Shard(self).schedule(receiver, msg).await;
        }
        let shard = match (msg.key, msg.request_id) {
            ("", "") => NEXT.fetch_add(1, Ordering::Relaxed) % n,
            ("", request_id) => crate::store::shards::slot_of(request_id, n as u32) as usize,
            (key, _) => crate::store::shards::slot_of(key, n as u32) as usize,
        };
        let done = Shard(self).schedule(&format!("{receiver}#{shard}"), msg).await?;
        Ok(Scheduled { id: message_id(shard, &done.id), ..done })
    }

    /// One round of delivery to `consumer`. On a sharded receiver: one round of peeks at every
    /// shard (earliest due message, earliest ack deadline, what the consumer holds there), then
    /// the delivery script on the shards with something to do, in turn, sharing out the room
    /// the consumer has left under `max_in_flight`.
    pub async fn deliver(&self, receiver: &str, consumer: &str, limits: DeliveryLimits) -> Result<Delivered> {
        if self.shard_count(SourceKind::Receiver, receiver) == 1 {
            return Shard(self).deliver(receiver, consumer, limits).await;
        }
        let shards = self.shard_names(SourceKind::Receiver, receiver);
        let mut cmds = Vec::with_capacity(shards.len() * 3);
        for shard in &shards {
            let k = self.keys.receiver(shard);
            cmds.push(redis::cmd("ZRANGE").arg(&k.scheduled).arg(0).arg(0).arg("WITHSCORES").clone());
            cmds.push(redis::cmd("ZRANGE").arg(&k.inflight).arg(0).arg(0).arg("WITHSCORES").clone());
            cmds.push(redis::cmd("HGET").arg(&k.consumers).arg(consumer).clone());
        }
        let (now_ms, mut answers) = peek(self, cmds).await?;
        let (mut due, mut deadline, mut held) = (Vec::new(), Vec::new(), Vec::new());
        for _ in &shards {
            due.push(answers.next().and_then(head_score));
            deadline.push(answers.next().and_then(head_score));
            held.push(
                answers.next().and_then(|v| redis::from_redis_value::<Option<u32>>(v).ok().flatten()).unwrap_or(0),
            );
        }
        let mut room = limits.max_in_flight.saturating_sub(held.iter().sum());
        let mut batch = limits.batch;
        let ready = |i: usize| deadline[i].is_some_and(|d| d <= now_ms) || due[i].is_some_and(|d| d <= now_ms);
        let turn = in_turn(shards.len(), ready);
        let mut out = Delivered { now_ms, next_due_ms: None, redelivered: 0, dead_lettered: 0, deliveries: Vec::new() };
        let mut called = vec![false; shards.len()];
        for i in turn {
            if batch == 0 {
                break;
            }
            let share = DeliveryLimits { max_in_flight: held[i] + room.min(batch), batch, ..limits };
            let part = Shard(self).deliver(&shards[i], consumer, share).await?;
            called[i] = true;
            let got = part.deliveries.len() as u32;
            room = room.saturating_sub(got);
            batch = batch.saturating_sub(got);
            out.now_ms = out.now_ms.max(part.now_ms);
            out.redelivered += part.redelivered;
            out.dead_lettered += part.dead_lettered;
            out.next_due_ms = out.next_due_ms.into_iter().chain(part.next_due_ms).min();
            let index = crate::store::shards::index(&shards[i]).unwrap_or_default() as usize;
            out.deliveries.extend(part.deliveries.into_iter().map(|mut d| {
                d.id = message_id(index, &d.id);
                d
            }));
        }
        // The shards not visited this round: their next ack deadline, and their next due
        // message while the consumer has room (at its bound, an Ack's announcement wakes it).
        for i in (0..shards.len()).filter(|&i| !called[i]) {
            let due = due[i].filter(|_| room > 0);
            out.next_due_ms = out.next_due_ms.into_iter().chain(deadline[i]).chain(due).min();
        }
        Ok(out)
    }

    /// Ends a delivered message; `Error::LeaseLost` for a stale token (or an id that is not the
    /// receiver's).
    pub async fn ack(&self, receiver: &str, id: &str, token: u64, request_id: &str) -> Result<()> {
        match self.ack_batch(&[(receiver, id, token, request_id)]).await?[..] {
            [true] => Ok(()),
            _ => {
                Err(Error::LeaseLost(format!("receiver {receiver}: message {id} is not in flight with token {token}")))
            }
        }
    }

    /// Makes a broken Receive stream's deliveries of `receiver` due again now, each only while
    /// still in flight with its token; how many were.
    pub async fn expire_deliveries(&self, receiver: &str, items: &[(String, u64)]) -> Result<u64> {
        let mut groups: Vec<(String, Vec<(String, u64)>)> = Vec::new();
        for (id, token) in items {
            let Some((physical, inner)) = self.message_shard(receiver, id) else { continue };
            match groups.iter_mut().find(|(p, _)| *p == physical) {
                Some((_, group)) => group.push((inner, *token)),
                None => groups.push((physical, vec![(inner, *token)])),
            }
        }
        let per_shard = Shard(self);
        let counts = futures::future::try_join_all(
            groups.iter().map(|(physical, group)| per_shard.expire_deliveries(physical, group)),
        )
        .await?;
        Ok(counts.into_iter().sum())
    }

    /// Ends many delivered messages, of any receivers: one script per receiver (per shard of a
    /// sharded receiver), run side by side. Per (receiver, id, token, request id), in order,
    /// whether it
    /// was acked (false: a stale token, an id the receiver cannot have given, or the same
    /// message listed twice; that item changed nothing).
    pub async fn ack_batch(&self, acks: &[(&str, &str, u64, &str)]) -> Result<Vec<bool>> {
        // (physical receiver, whether it is a shard, [(position, id in it, token, request id)]).
        type Group<'a> = (String, bool, Vec<(usize, String, u64, &'a str)>);
        let mut groups: Vec<Group> = Vec::new();
        for (i, &(receiver, id, token, request_id)) in acks.iter().enumerate() {
            let Some((physical, inner)) = self.message_shard(receiver, id) else { continue };
            let sharded = physical != receiver;
            match groups.iter_mut().find(|(p, _, _)| *p == physical) {
                Some((_, _, items)) => items.push((i, inner, token, request_id)),
                None => groups.push((physical, sharded, vec![(i, inner, token, request_id)])),
            }
        }
        let done = futures::future::try_join_all(groups.iter().map(|(physical, sharded, items)| {
            let batch: Vec<(&str, u64, &str)> =
                items.iter().map(|(_, id, token, request_id)| (id.as_str(), *token, *request_id)).collect();
            async move { Shard(self).ack_batch(physical, &batch, *sharded).await }
        }))
        .await?;
        let mut out = vec![false; acks.len()];
        for ((_, _, items), results) in groups.into_iter().zip(done) {
            for ((i, _, _, _), acked) in items.into_iter().zip(results) {
                out[i] = acked;
            }
        }
        Ok(out)
    }

    /// Removes a scheduled or in-flight message; false if there is none.
    pub async fn cancel(&self, receiver: &str, id: &str) -> Result<bool> {
        match self.message_shard(receiver, id) {
            Some((shard, inner)) => Shard(self).cancel(&shard, &inner).await,
            None => Ok(false),
        }
    }
}

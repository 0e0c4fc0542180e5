//! Signals and durable timers: a run ends its lease by waiting for a named event, a time, or the
//! first of both (`waitAgent`); `Signal` delivers an event (`signalAgent`); a wait's time is a
//! durable timer, fired by the sweeper's bounded step (`fireTimers`). The agent waiting holds
//! no lease and no worker and is not due (`waits`; `waitat` for a wait with a time, written only
//! for such agents, so a plain job pays nothing). A run's signals and its delivery ride in the
//! run's record beside its steps (`steps`, entries `?`/`!`/`~` of `lua/includes/stepRecord.lua`),
//! so they are carried by the run's leases and go with the run as its steps do; each event is
//! consumed once per run, decided in the one script that consumes it. The registry
//! `Keys::timer_queues` lists the queues that ever had a wait with a time.

use super::store::GroupHint;
use super::store::{calls, Signalled, WaitFor, Waited};
use crate::error::{Error, Result};
use crate::queues::store::Queues;
use crate::store::keys::ChannelKind;
use crate::store::shards::Shard;
use crate::store::{scripts::Pair, Path};

impl Queues {
    /// Adds `queue` (physical) to the registry of queues with timers, before the script that
    /// writes one (a registry entry is written before the data it announces).
    pub(super) async fn remember_timers(&self, queue: &str) -> Result<()> {
        self.remember(self.keys.timer_queues(), queue).await
    }

    /// The queues (physical) whose `waitat` set holds an entry whose time has come.
    pub async fn queues_with_timers(&self) -> Result<Vec<String>> {
        let mut conn = self.redis.conn().await?;
        let queues: Vec<String> = redis::cmd("SMEMBERS").arg(self.keys.timer_queues()).query_async(&mut conn).await?;
        self.queues_with_old_entries(&queues, 0, |k| k.waitat.clone()).await
    }

    /// One sweeper step over `queue` (physical): takes at most `limit` timers whose time has
    /// come and times their waits out. Returns (fired, taken).
    pub async fn fire_timers(&self, queue: &str, limit: u32) -> Result<(u64, u64)> {
        let k = self.keys.queue(queue);
        let call = calls::FireTimers {
            keys: &k,
            channel: &self.keys.announce(ChannelKind::Queue, queue),
            queue,
            limit: limit.into(),
        };
        let Pair(fired, taken) = self.call(Path::WriteBack, call).await?;
        if fired > 0 {
            metrics::counter!("baton_waits_timed_out_total", "queue" => queue.to_string()).increment(fired as u64);
        }
        Ok((fired as u64, taken as u64))
    }

    /// Ends the lease `token` holds by waiting (a Complete with wait_for); see [`Waited`]. A
    /// retry with the same `request_id` gets the first answer.
    pub async fn wait(&self, queue: &str, name: &str, token: u64, wait: &WaitFor, request_id: &str) -> Result<Waited> {
        let physical = self.shard_of(crate::store::SourceKind::Queue, queue, name);
        Shard(self).wait(&physical, name, token, wait, request_id).await
    }

    /// Delivers `event` to agent `name` (Signal); see [`Signalled`].
    pub async fn signal(
        &self,
        queue: &str,
        name: &str,
        event: &str,
        payload: &[u8],
        request_id: &str,
    ) -> Result<Signalled> {
        let physical = self.shard_of(crate::store::SourceKind::Queue, queue, name);
        Shard(self).signal(&physical, name, event, payload, request_id).await
    }
}

impl Shard<'_, Queues> {
    async fn wait(&self, queue: &str, name: &str, token: u64, wait: &WaitFor, request_id: &str) -> Result<Waited> {
        if wait.until_ms > 0 || wait.timeout_ms > 0 {
            self.remember_timers(queue).await?;
        }
        let (mut k, mut group) = self.grouped_keys(queue);
        let request = crate::store::request_field(request_id, || format!("wait|{name}|{token}"));
        let channel = self.keys.announce(ChannelKind::Queue, queue);
        let mut tries = 0;
        let waited = loop {
            let call = calls::WaitAgent {
                keys: &k,
                name,
                token: &token.to_string(),
                event: &wait.event,
                until_ms: wait.until_ms,
                timeout_ms: wait.timeout_ms,
                request: &request,
                channel: &channel,
                queue,
                retention_ms: self.policy.idempotency.retention_ms,
                max_entries: self.policy.idempotency.max_entries,
                group_name: &group,
            };
            match self.call(Path::WriteBack, call).await {
                Err(e) => match self.group_hint(queue, &e) {
                    Some(GroupHint::Group(g)) if tries < 3 => {
                        tries += 1;
                        (k, group) = (self.keys.queue(queue).in_group(&self.keys, &g), g);
                    }
                    _ => return Err(e),
                },
                Ok(waited) => break waited,
            }
        };
        match waited {
            Waited::Lost => Err(Error::LeaseLost(format!("{queue}/{name} token {token}"))),
            Waited::Cancelled { worker } => {
                // A cancelled run does not wait: it ends here as the holder's next heartbeat would
                // end it (cancelled, its place given back), and the holder is told its lease is gone.
                self.heartbeat(queue, &worker, &[(name, token, "")]).await?;
                Err(Error::LeaseLost(format!("{queue}/{name} token {token}: the run was cancelled")))
            }
            waited => Ok(waited),
        }
    }

    async fn signal(
        &self,
        queue: &str,
        name: &str,
        event: &str,
        payload: &[u8],
        request_id: &str,
    ) -> Result<Signalled> {
        let k = self.keys.queue(queue);
        let call = calls::SignalAgent {
            keys: &k,
            name,
            event,
            payload,
            request: &crate::store::request_field(request_id, || format!("signal|{name}|{event}")),
            max_pending: self.policy.max_pending_signals.into(),
            channel: &self.keys.announce(ChannelKind::Queue, queue),
            queue,
            retention_ms: self.policy.idempotency.retention_ms,
            max_entries: self.policy.idempotency.max_entries,
        };
        self.call(Path::WriteBack, call).await
    }
}

//! Cross-replica notifications over Redis pub/sub, followed by one subscription per replica.
//!
//! - Queue wake-ups: scripts PUBLISH a queue's name on the wake channel when an entry becomes
//!   the earliest of its waiting set; long-polling Acquires on that queue re-check.
//! - Leadership events: election scripts PUBLISH elected / resigned / expired; Observe streams
//!   and waiting Campaigns on every replica receive them.
//! - Pool events: pool scripts PUBLISH "A|pool|claim" when a waiting claim is handed a
//!   resource (its replica picks it up) and "C|pool" on every change (WatchPool streams).
//!
//! After a lost subscription every waiter is woken and every observer told to resync, since
//! messages may have been missed while it was down.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::StreamExt;
use tokio::sync::{broadcast, watch, Notify};
use tokio_util::sync::CancellationToken;

use super::{Keys, LeaderEvent};

/// What an election's observers hear.
#[derive(Clone, Debug)]
pub enum ElectionSignal {
    Event(LeaderEvent),
    /// Events may have been missed: read the state again.
    Resync,
}

/// How long a stream (Observe, WatchPool, Subscribe) waits for its replica's pub/sub
/// subscription before it answers UNAVAILABLE.
pub const SUBSCRIBE_LIMIT: Duration = Duration::from_secs(5);

/// Observers buffered per election before a slow one must resync.
const ELECTION_BUFFER: usize = 64;

/// The waiters and observers on this replica.
#[derive(Clone)]
pub struct Wakeups {
    queues: Arc<Mutex<HashMap<String, Arc<Notify>>>>,
    elections: Arc<Mutex<HashMap<String, broadcast::Sender<ElectionSignal>>>>,
    /// Waiting claims on this replica, by "pool|claim id".
    claims: Arc<Mutex<HashMap<String, Arc<Notify>>>>,
    /// WatchPool streams on this replica, by pool.
    pools: Arc<Mutex<HashMap<String, broadcast::Sender<()>>>>,
    /// True while the subscription is live.
    subscribed: Arc<watch::Sender<bool>>,
}

impl Default for Wakeups {
    fn default() -> Self {
        Self {
            queues: Default::default(),
            elections: Default::default(),
            claims: Default::default(),
            pools: Default::default(),
            subscribed: Arc::new(watch::channel(false).0),
        }
    }
}

impl Wakeups {
    /// Waits until the subscription is live, at most `limit`; false if it is not.
    pub async fn subscribed(&self, limit: Duration) -> bool {
        let mut rx = self.subscribed.subscribe();
        tokio::time::timeout(limit, rx.wait_for(|live| *live)).await.is_ok_and(|r| r.is_ok())
    }

    /// The notifier of a queue's waiters. Hold it while waiting; `release` it afterwards.
    pub fn waiter(&self, queue: &str) -> Arc<Notify> {
        let mut queues = self.queues.lock().expect("wakeups lock");
        queues.entry(queue.to_string()).or_default().clone()
    }

    /// Forgets a queue's notifier when no call waits on it any more.
    pub fn release(&self, queue: &str, notify: Arc<Notify>) {
        let mut queues = self.queues.lock().expect("wakeups lock");
        drop(notify);
        if queues.get(queue).is_some_and(|n| Arc::strong_count(n) == 1) {
            queues.remove(queue);
        }
    }

    /// How many long polls on this replica wait on a queue.
    pub fn waiters(&self, queue: &str) -> usize {
        self.queues.lock().expect("wakeups lock").get(queue).map_or(0, |n| Arc::strong_count(n) - 1)
    }

    /// Follows an election's events. Subscribe before reading the state, so nothing between
    /// the read and the first event is missed.
    pub fn election(&self, election: &str) -> broadcast::Receiver<ElectionSignal> {
        let mut elections = self.elections.lock().expect("wakeups lock");
        elections.entry(election.to_string()).or_insert_with(|| broadcast::channel(ELECTION_BUFFER).0).subscribe()
    }

    /// The notifier of one waiting claim; `forget_claim` it when settled.
    pub fn claim(&self, pool: &str, claim_id: &str) -> Arc<Notify> {
        let mut claims = self.claims.lock().expect("wakeups lock");
        claims.entry(format!("{pool}|{claim_id}")).or_default().clone()
    }

    pub fn forget_claim(&self, pool: &str, claim_id: &str) {
        self.claims.lock().expect("wakeups lock").remove(&format!("{pool}|{claim_id}"));
    }

    /// Follows a pool's changes.
    pub fn pool(&self, pool: &str) -> broadcast::Receiver<()> {
        let mut pools = self.pools.lock().expect("wakeups lock");
        pools.entry(pool.to_string()).or_insert_with(|| broadcast::channel(1).0).subscribe()
    }

    fn pool_event(&self, payload: &str) {
        let mut parts = payload.splitn(3, '|');
        match (parts.next(), parts.next(), parts.next()) {
            (Some("A"), Some(pool), Some(claim)) => {
                if let Some(n) = self.claims.lock().expect("wakeups lock").get(&format!("{pool}|{claim}")) {
                    // notify_one stores a permit: a pickup racing with the message still wakes.
                    n.notify_one();
                }
            }
            (Some("C"), Some(pool), None) => {
                let mut pools = self.pools.lock().expect("wakeups lock");
                if let Some(tx) = pools.get(pool) {
                    if tx.send(()).is_err() {
                        pools.remove(pool);
                    }
                }
            }
            _ => {}
        }
    }

    /// Wakes one long poll of the queue (not all: one due agent would otherwise rerun every
    /// waiter's script). A waiter that fills its max_leases passes the wake-up on, since more may
    /// be due; one that leaves unwoken forwards it (tokio's `notify_one` semantics).
    fn wake(&self, queue: &str) {
        if let Some(n) = self.queues.lock().expect("wakeups lock").get(queue) {
            n.notify_one();
        }
    }

    fn announce(&self, event: LeaderEvent) {
        let mut elections = self.elections.lock().expect("wakeups lock");
        if let Some(tx) = elections.get(&event.election) {
            if tx.receiver_count() == 0 {
                elections.remove(&event.election);
            } else {
                let _ = tx.send(ElectionSignal::Event(event));
            }
        }
    }

    fn resync_all(&self) {
        for n in self.queues.lock().expect("wakeups lock").values() {
            n.notify_waiters();
        }
        let mut elections = self.elections.lock().expect("wakeups lock");
        elections.retain(|_, tx| tx.send(ElectionSignal::Resync).is_ok());
        for n in self.claims.lock().expect("wakeups lock").values() {
            n.notify_one();
        }
        self.pools.lock().expect("wakeups lock").retain(|_, tx| tx.send(()).is_ok());
    }

    /// Follows the wake, leader and pool channels until `shutdown`, reconnecting with backoff.
    pub async fn run(self, url: String, keys: Keys, shutdown: CancellationToken) {
        let (wake_channel, leader_channel, pool_channel) =
            (keys.wake_channel(), keys.leader_channel(), keys.pool_channel());
        let mut backoff = Duration::from_millis(100);
        loop {
            let attempt = async {
                let client = redis::Client::open(url.as_str())?;
                let mut pubsub = client.get_async_pubsub().await?;
                pubsub.subscribe(&[&wake_channel, &leader_channel, &pool_channel]).await?;
                Ok::<_, redis::RedisError>(pubsub)
            };
            let pubsub = tokio::select! {
                _ = shutdown.cancelled() => return,
                r = attempt => r,
            };
            match pubsub {
                Ok(pubsub) => {
                    backoff = Duration::from_millis(100);
                    self.subscribed.send_replace(true);
                    self.resync_all();
                    let mut messages = pubsub.into_on_message();
                    loop {
                        let msg = tokio::select! {
                            _ = shutdown.cancelled() => return,
                            msg = messages.next() => msg,
                        };
                        let Some(msg) = msg else { break };
                        let Ok(payload) = msg.get_payload::<String>() else { continue };
                        let channel = msg.get_channel_name();
                        if channel == wake_channel {
                            self.wake(&payload);
                        } else if channel == pool_channel {
                            self.pool_event(&payload);
                        } else if let Some(event) = LeaderEvent::parse(&payload) {
                            self.announce(event);
                        }
                    }
                    self.subscribed.send_replace(false);
                    tracing::warn!("pub/sub subscription lost; resubscribing");
                    self.resync_all();
                }
                Err(e) => {
                    tracing::warn!(error = %e, retry_in_ms = backoff.as_millis() as u64, "cannot subscribe to pub/sub");
                }
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
    }
}

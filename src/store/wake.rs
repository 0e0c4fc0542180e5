//! Cross-replica notifications over Redis pub/sub.
//!
//! Every queue, receiver, pool and election has a channel of its own, carrying its hash tag
//! (`Keys::channel`); the scripts that change a source announce on its channel (SPUBLISH on
//! Redis Cluster, so a message reaches only the shard that holds the source, PUBLISH on one
//! node). A replica subscribes to a channel only while something on it waits or watches:
//!
//! - queue and receiver wake-ups: a script announces when an entry becomes the earliest of a
//!   waiting set; long-polling Acquires and Subscribe streams re-check;
//! - election events (elected / resigned / expired): Observe streams and waiting Campaigns;
//! - pool events: "A|pool|claim" when a waiting claim is handed a resource (its replica picks
//!   it up) and "C|pool" on every change (WatchPool streams);
//! - agent updates: "w|queue|name|token|n|kind|data" when a watched agent's lease is granted,
//!   reports progress or records a step (WatchAgent streams, [`Wakeups::watch_agent`]), and the
//!   finishes of awaited agents ("d|queue|name…"), which WatchAgent streams hear as Awaits do;
//! - outbox announcements: one channel of no slot (`Keys::outbox_channel`), followed by every
//!   replica for as long as it runs, carries the queues whose scripts wrote outbox entries, so
//!   a live replica releases the children a replica that died right after its script left
//!   behind ([`Wakeups::outboxes`], `Flows::run_flows`).
//!
//! A sharded source (`store::shards`) has a channel per shard; its waiters hold every shard's
//! channel and are woken by any.
//!
//! An [`Interest`] holds a channel subscribed; a channel nobody holds is dropped after
//! [`LINGER`], so a queue long-polled in a loop is not subscribed and unsubscribed every call.
//! Whenever a subscription is (re)confirmed — after a reconnect, a failover or a slot move — the
//! channel's waiters are woken to read the state again, since messages may have been missed.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use futures::StreamExt;
use redis::PushKind;
use tokio::sync::{broadcast, mpsc, watch, Notify};
use tokio_util::sync::CancellationToken;

use crate::store::Keys;

use crate::store::conn::Feed;

use crate::store::keys::ChannelKind;

use crate::store::shards::logical;

/// The name long polls wait under: a queue's name, `r:<receiver>` (what receiver scripts
/// announce), `p:<pool>` (claims of a sharded pool looking beyond their shard).
fn waiter_key(kind: ChannelKind, name: &str) -> String {
    match kind {
        ChannelKind::Receiver => super::keys::wake_name(name),
        ChannelKind::Pool => format!("p:{name}"),
        _ => name.to_string(),
    }
}
use crate::error::{Error, Result};

/// What an election's observers hear.
#[derive(Clone, Debug)]
pub enum ElectionSignal {
    Event(LeaderEvent),
    /// Events may have been missed: read the state again.
    Resync,
}

/// How long a waiter waits for its channel's subscription before it answers UNAVAILABLE.
pub const SUBSCRIBE_LIMIT: Duration = Duration::from_secs(5);

/// How long a channel nobody follows stays subscribed.
pub const LINGER: Duration = Duration::from_secs(30);

/// The waits between attempts to open the pub/sub connection: 100 ms doubling to 5 s.
fn reconnect_backoff() -> crate::client::Backoff {
    crate::client::Backoff::between(Duration::from_millis(100), Duration::from_secs(5))
}

/// Observers buffered per election before a slow one must resync.
const ELECTION_BUFFER: usize = 64;

/// The subscription state of one channel on this replica.
struct Channel {
    /// Interests held.
    held: usize,
    /// Subscribed (confirmed by Redis) on the current connection.
    live: bool,
    /// When the last interest was dropped.
    idle_since: Option<Instant>,
}

struct Inner {
    keys: Keys,
    /// Long polls by waiter name: the queue, or `r:<receiver>`.
    queues: Mutex<HashMap<String, Arc<Notify>>>,
    elections: Mutex<HashMap<String, broadcast::Sender<ElectionSignal>>>,
    /// Waiting claims on this replica, by "pool|claim id".
    claims: Mutex<HashMap<String, Arc<Notify>>>,
    /// Awaits on this replica, by "<physical queue>|<agent>": told when the agent finishes.
    awaits: Mutex<HashMap<String, Arc<Notify>>>,
    /// WatchAgent streams on this replica, by "<physical queue>|<agent>".
    agents: Mutex<HashMap<String, broadcast::Sender<AgentSignal>>>,
    /// WatchPool streams on this replica, by pool.
    pools: Mutex<HashMap<String, broadcast::Sender<()>>>,
    /// Observers of queues and receivers (KEDA's StreamIsActive), by waiter name: told of every
    /// wake-up its long polls get, without taking one from them.
    watchers: Mutex<HashMap<String, broadcast::Sender<()>>>,
    channels: Mutex<HashMap<String, Channel>>,
    /// Bumped whenever a channel goes live.
    live: watch::Sender<u64>,
    /// The outbox channel (`Keys::outbox_channel`): subscribed with SUBSCRIBE on every
    /// deployment, since its messages come from every slot.
    outbox_channel: String,
    /// Where outbox announcements go (the flows task): Some(queue), or None when some may have
    /// been missed.
    outboxes: Mutex<Option<mpsc::UnboundedSender<Option<String>>>>,
    /// Channels newly wanted, for the follower to subscribe.
    wanted: mpsc::UnboundedSender<String>,
    wanted_rx: Mutex<Option<mpsc::UnboundedReceiver<String>>>,
}

/// The waiters and observers on this replica. Cheap to clone.
#[derive(Clone)]
pub struct Wakeups {
    inner: Arc<Inner>,
}

/// Holds a channel subscribed while alive.
pub struct Interest {
    inner: Arc<Inner>,
    channel: String,
}

impl Drop for Interest {
    fn drop(&mut self) {
        let mut channels = self.inner.channels.lock().expect("wakeups lock");
        if let Some(c) = channels.get_mut(&self.channel) {
            c.held -= 1;
            if c.held == 0 {
                c.idle_since = Some(Instant::now());
            }
        }
    }
}

/// A long poll's notifier: woken when its queue or receiver may have work.
pub struct Waiter {
    pub notify: Arc<Notify>,
    name: String,
    wakeups: Wakeups,
    _interests: Vec<Interest>,
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let mut queues = self.wakeups.inner.queues.lock().expect("wakeups lock");
        if queues.get(&self.name).is_some_and(|n| Arc::ptr_eq(n, &self.notify) && Arc::strong_count(n) == 2) {
            queues.remove(&self.name);
        }
    }
}

/// An election's events, while followed.
pub struct ElectionEvents {
    rx: broadcast::Receiver<ElectionSignal>,
    election: String,
    inner: Arc<Inner>,
    _interest: Interest,
}

impl Drop for ElectionEvents {
    /// The last stream of an election on this replica forgets it: Observe on names nobody
    /// campaigns in (a flood of made-up names) leaves nothing behind.
    fn drop(&mut self) {
        forget_if_last(&self.inner.elections, &self.election);
    }
}

/// Forgets `key`'s sender in `map` when the receiver being dropped is its last.
fn forget_if_last<T>(map: &Mutex<HashMap<String, broadcast::Sender<T>>>, key: &str) {
    let mut map = map.lock().expect("wakeups lock");
    if map.get(key).is_some_and(|tx| tx.receiver_count() <= 1) {
        map.remove(key);
    }
}

impl ElectionEvents {
    pub async fn recv(&mut self) -> std::result::Result<ElectionSignal, broadcast::error::RecvError> {
        self.rx.recv().await
    }
}

/// A source's changes, while followed: a pool's (WatchPool), or a queue's or receiver's
/// wake-ups ([`Wakeups::watch`]).
pub struct Changes {
    rx: broadcast::Receiver<()>,
    /// Its sender's key, in `inner.watchers` or `inner.pools`.
    key: String,
    pool: bool,
    inner: Arc<Inner>,
    _interests: Vec<Interest>,
}

impl Drop for Changes {
    /// The last follower of a source on this replica forgets it.
    fn drop(&mut self) {
        forget_if_last(if self.pool { &self.inner.pools } else { &self.inner.watchers }, &self.key);
    }
}

impl Changes {
    pub async fn recv(&mut self) -> std::result::Result<(), broadcast::error::RecvError> {
        self.rx.recv().await
    }
}

/// What a WatchAgent stream hears about its agent.
#[derive(Clone, Debug)]
pub enum AgentSignal {
    /// An update of a watched lease, as its script announced it.
    Update(Arc<AgentUpdate>),
    /// The agent finished (announced to awaiters): read its finish.
    Finished,
    /// Updates may have been missed (a resubscription): read the state again.
    Resync,
}

/// One update of a watched lease: "w|<queue>|<name>|<token>|<n>|<kind>|<data>"
/// (`lua/includes/watchEvent.lua`); `data` is raw, the queue domain reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentUpdate {
    pub token: u64,
    /// The lease's update number: 0 at its grant.
    pub n: u64,
    pub kind: u8,
    pub data: Vec<u8>,
}

/// Updates buffered per watched agent before a slow stream must read the state again.
const AGENT_BUFFER: usize = 256;

/// A watched agent's signals, while followed.
pub struct AgentEvents {
    rx: broadcast::Receiver<AgentSignal>,
    key: String,
    inner: Arc<Inner>,
    _interest: Interest,
}

impl Drop for AgentEvents {
    /// The last stream of an agent on this replica forgets it.
    fn drop(&mut self) {
        forget_if_last(&self.inner.agents, &self.key);
    }
}

impl AgentEvents {
    /// The next signal; a stream that lagged behind hears Resync.
    pub async fn recv(&mut self) -> Option<AgentSignal> {
        match self.rx.recv().await {
            Ok(signal) => Some(signal),
            Err(broadcast::error::RecvError::Lagged(_)) => Some(AgentSignal::Resync),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }
}

/// One waiting claim's notifier.
pub struct ClaimWaiter {
    pub notify: Arc<Notify>,
    key: String,
    wakeups: Wakeups,
}

/// The outbox announcements this replica hears, while followed: the queues whose scripts wrote
/// outbox entries (Some), or None when announcements may have been missed (a resubscription).
pub struct Outboxes {
    pub rx: mpsc::UnboundedReceiver<Option<String>>,
    _interest: Interest,
}

/// One Await's notifier: woken when its agent finishes (or the channel resynced).
pub struct AwaitWaiter {
    pub notify: Arc<Notify>,
    key: String,
    wakeups: Wakeups,
    _interest: Interest,
}

impl Drop for AwaitWaiter {
    fn drop(&mut self) {
        let mut awaits = self.wakeups.inner.awaits.lock().expect("wakeups lock");
        if awaits.get(&self.key).is_some_and(|n| Arc::ptr_eq(n, &self.notify) && Arc::strong_count(n) == 2) {
            awaits.remove(&self.key);
        }
    }
}

impl Drop for ClaimWaiter {
    fn drop(&mut self) {
        self.wakeups.inner.claims.lock().expect("wakeups lock").remove(&self.key);
    }
}

impl Wakeups {
    pub fn new(keys: Keys) -> Self {
        let (wanted, wanted_rx) = mpsc::unbounded_channel();
        Self {
            inner: Arc::new(Inner {
                outbox_channel: keys.outbox_channel(),
                outboxes: Mutex::new(None),
                keys,
                queues: Default::default(),
                elections: Default::default(),
                claims: Default::default(),
                awaits: Default::default(),
                agents: Default::default(),
                pools: Default::default(),
                watchers: Default::default(),
                channels: Default::default(),
                live: watch::channel(0).0,
                wanted,
                wanted_rx: Mutex::new(Some(wanted_rx)),
            }),
        }
    }

    /// Wakeups of `store`'s keys, followed by a task of their own until `shutdown`.
    pub fn spawn(store: &crate::store::Core, shutdown: CancellationToken) -> Self {
        let wakeups = Self::new(store.keys().clone());
        tokio::spawn(wakeups.clone().run(store.feed(), shutdown));
        wakeups
    }

    /// Holds `kind`/`name`'s channel subscribed; resolves once Redis confirmed the subscription
    /// (at most [`SUBSCRIBE_LIMIT`]; UNAVAILABLE if it did not).
    pub async fn interest(&self, kind: ChannelKind, name: &str) -> Result<Interest> {
        let channel = self.inner.keys.channel(kind, name);
        let mut live = self.inner.live.subscribe();
        let interest = self.hold(&channel);
        let is_live = || self.inner.channels.lock().expect("wakeups lock").get(&channel).is_some_and(|c| c.live);
        let confirmed = tokio::time::timeout(SUBSCRIBE_LIMIT, async {
            while !is_live() {
                if live.changed().await.is_err() {
                    return false;
                }
            }
            true
        })
        .await;
        match confirmed {
            Ok(true) => Ok(interest),
            _ => Err(Error::Unavailable(format!(
                "cannot follow the pub/sub channel {channel} (Redis did not confirm it)"
            ))),
        }
    }

    /// Holds `channel` subscribed (asked for now; confirmed by Redis later).
    fn hold(&self, channel: &str) -> Interest {
        let mut channels = self.inner.channels.lock().expect("wakeups lock");
        let c = channels.entry(channel.to_string()).or_insert_with(|| {
            let _ = self.inner.wanted.send(channel.to_string());
            Channel { held: 0, live: false, idle_since: None }
        });
        c.held += 1;
        c.idle_since = None;
        Interest { inner: self.inner.clone(), channel: channel.to_string() }
    }

    /// Follows the outbox channel: the queues whose scripts wrote outbox entries, on any
    /// replica. One follower per replica (a later call replaces the earlier one's feed).
    pub fn outboxes(&self) -> Outboxes {
        let (tx, rx) = mpsc::unbounded_channel();
        *self.inner.outboxes.lock().expect("wakeups lock") = Some(tx);
        Outboxes { rx, _interest: self.hold(&self.inner.outbox_channel) }
    }

    /// Tells the outbox follower, if any.
    fn outboxed(&self, queue: Option<String>) {
        let mut outboxes = self.inner.outboxes.lock().expect("wakeups lock");
        if outboxes.as_ref().is_some_and(|tx| tx.send(queue).is_err()) {
            *outboxes = None;
        }
    }

    /// A long poll's notifier, subscribed to the channels of `shards` (the physical sources
    /// of `name`, see `store::shards`; just `name` when unsharded) and woken by a wake-up on
    /// any of them: for a queue ([`ChannelKind::Queue`]), a receiver
    /// ([`ChannelKind::Receiver`]), or the claims of a sharded pool waiting for an idle
    /// resource in another shard ([`ChannelKind::Pool`]).
    pub async fn waiter(&self, kind: ChannelKind, name: &str, shards: &[String]) -> Result<Waiter> {
        let mut interests = Vec::with_capacity(shards.len());
        for shard in shards {
            interests.push(self.interest(kind, shard).await?);
        }
        let key = waiter_key(kind, name);
        let notify = self.inner.queues.lock().expect("wakeups lock").entry(key.clone()).or_default().clone();
        Ok(Waiter { notify, name: key, wakeups: self.clone(), _interests: interests })
    }

    /// How many long polls on this replica wait on a queue.
    pub fn waiters(&self, queue: &str) -> usize {
        self.inner.queues.lock().expect("wakeups lock").get(queue).map_or(0, |n| Arc::strong_count(n) - 1)
    }

    /// Follows an election's events. Follow before reading the state, so nothing between the
    /// read and the first event is missed.
    pub async fn election(&self, election: &str) -> Result<ElectionEvents> {
        let interest = self.interest(ChannelKind::Election, election).await?;
        let mut elections = self.inner.elections.lock().expect("wakeups lock");
        let rx =
            elections.entry(election.to_string()).or_insert_with(|| broadcast::channel(ELECTION_BUFFER).0).subscribe();
        Ok(ElectionEvents { rx, election: election.to_string(), inner: self.inner.clone(), _interest: interest })
    }

    /// The notifier of one waiting claim in the line of `pool` (a physical pool, whose channel
    /// a [`Waiter`] holds); it forgets the claim when dropped.
    pub fn claim(&self, pool: &str, claim_id: &str) -> ClaimWaiter {
        let key = format!("{pool}|{claim_id}");
        let notify = self.inner.claims.lock().expect("wakeups lock").entry(key.clone()).or_default().clone();
        ClaimWaiter { notify, key, wakeups: self.clone() }
    }

    /// The notifier of an Await on agent `name` of `queue` (a physical queue), subscribed to
    /// the queue's channel, where scripts announce finishes of awaited agents ("d|queue|name…").
    /// Follow before reading the state, so a finish between the read and the wait is not missed.
    pub async fn await_finish(&self, queue: &str, name: &str) -> Result<AwaitWaiter> {
        let interest = self.interest(ChannelKind::Queue, queue).await?;
        let key = format!("{queue}|{name}");
        let notify = self.inner.awaits.lock().expect("wakeups lock").entry(key.clone()).or_default().clone();
        Ok(AwaitWaiter { notify, key, wakeups: self.clone(), _interest: interest })
    }

    /// Follows agent `name` of `queue` (a physical queue): its watched lease's updates, its
    /// finish, and resyncs, on the queue's channel. Follow before reading the state, so nothing
    /// between the read and the first update is missed.
    pub async fn watch_agent(&self, queue: &str, name: &str) -> Result<AgentEvents> {
        let interest = self.interest(ChannelKind::Queue, queue).await?;
        let key = format!("{queue}|{name}");
        let mut agents = self.inner.agents.lock().expect("wakeups lock");
        let rx = agents.entry(key.clone()).or_insert_with(|| broadcast::channel(AGENT_BUFFER).0).subscribe();
        Ok(AgentEvents { rx, key, inner: self.inner.clone(), _interest: interest })
    }

    /// Tells the streams watching "<queue>|<name>" (`key`), forgetting it when none is left.
    fn tell_agent(agents: &mut HashMap<String, broadcast::Sender<AgentSignal>>, key: &str, signal: AgentSignal) {
        if agents.get(key).is_some_and(|tx| tx.send(signal).is_err()) {
            agents.remove(key);
        }
    }

    /// "w|<queue>|<name>|<token>|<n>|<kind>|<data>": an update of a watched lease.
    fn agent_update(&self, payload: &[u8]) {
        let mut f = payload.splitn(7, |b| *b == b'|');
        let (Some(b"w"), Some(queue), Some(name), Some(token), Some(n), Some(kind), Some(data)) =
            (f.next(), f.next(), f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            return;
        };
        let num = |b: &[u8]| std::str::from_utf8(b).ok().and_then(|t| t.parse::<u64>().ok());
        let (Some(token), Some(n), [kind]) = (num(token), num(n), kind) else { return };
        let key = format!("{}|{}", String::from_utf8_lossy(queue), String::from_utf8_lossy(name));
        let mut agents = self.inner.agents.lock().expect("wakeups lock");
        if agents.contains_key(&key) {
            let update = AgentUpdate { token, n, kind: *kind, data: data.to_vec() };
            Self::tell_agent(&mut agents, &key, AgentSignal::Update(Arc::new(update)));
        }
    }

    /// Follows the wake-ups of a queue ([`ChannelKind::Queue`]) or a receiver
    /// ([`ChannelKind::Receiver`]) on any of its `shards`, as its long polls get them, without
    /// taking one from them. Follow before reading the state, so nothing between the read and
    /// the first wake-up is missed.
    pub async fn watch(&self, kind: ChannelKind, name: &str, shards: &[String]) -> Result<Changes> {
        let mut interests = Vec::with_capacity(shards.len());
        for shard in shards {
            interests.push(self.interest(kind, shard).await?);
        }
        let key = waiter_key(kind, name);
        let mut watchers = self.inner.watchers.lock().expect("wakeups lock");
        let rx = watchers.entry(key.clone()).or_insert_with(|| broadcast::channel(1).0).subscribe();
        Ok(Changes { rx, key, pool: false, inner: self.inner.clone(), _interests: interests })
    }

    /// Follows a pool's changes, on any of its `shards` (its physical pools).
    pub async fn pool(&self, pool: &str, shards: &[String]) -> Result<Changes> {
        let mut interests = Vec::with_capacity(shards.len());
        for shard in shards {
            interests.push(self.interest(ChannelKind::Pool, shard).await?);
        }
        let mut pools = self.inner.pools.lock().expect("wakeups lock");
        let rx = pools.entry(pool.to_string()).or_insert_with(|| broadcast::channel(1).0).subscribe();
        Ok(Changes { rx, key: pool.to_string(), pool: true, inner: self.inner.clone(), _interests: interests })
    }

    /// Handles one message on a channel this replica follows, as bytes: an agent update may
    /// carry a step's binary result; every other message is text.
    fn message_bytes(&self, channel: &str, payload: &[u8]) {
        if payload.starts_with(b"w|") {
            if self.inner.keys.parse_channel(channel) == Some(ChannelKind::Queue) {
                self.agent_update(payload);
            }
            return;
        }
        if let Ok(text) = std::str::from_utf8(payload) {
            self.message(channel, text);
        }
    }

    /// Handles one message on a channel this replica follows.
    fn message(&self, channel: &str, payload: &str) {
        if channel == self.inner.outbox_channel {
            return self.outboxed(Some(payload.to_string()));
        }
        match self.inner.keys.parse_channel(channel) {
            Some(ChannelKind::Queue) => match payload.strip_prefix("d|") {
                Some(finished) => self.finished(finished),
                None => self.wake(logical(payload)),
            },
            Some(ChannelKind::Receiver) => self.wake(logical(payload)),
            Some(ChannelKind::Pool) => self.pool_event(payload),
            Some(ChannelKind::Election) => {
                if let Some(event) = LeaderEvent::parse(payload) {
                    self.announce(event);
                }
            }
            None => {}
        }
    }

    /// "<physical queue>|<name>|<name>…": awaited agents finished.
    fn finished(&self, payload: &str) {
        let mut parts = payload.split('|');
        let Some(queue) = parts.next() else { return };
        let awaits = self.inner.awaits.lock().expect("wakeups lock");
        let mut agents = self.inner.agents.lock().expect("wakeups lock");
        for name in parts {
            let key = format!("{queue}|{name}");
            if let Some(n) = awaits.get(&key) {
                n.notify_waiters();
                n.notify_one();
            }
            Self::tell_agent(&mut agents, &key, AgentSignal::Finished);
        }
    }

    fn pool_event(&self, payload: &str) {
        let mut parts = payload.splitn(3, '|');
        match (parts.next(), parts.next(), parts.next()) {
            (Some("A"), Some(pool), Some(claim)) => {
                if let Some(n) = self.inner.claims.lock().expect("wakeups lock").get(&format!("{pool}|{claim}")) {
                    // notify_one stores a permit: a pickup racing with the message still wakes.
                    n.notify_one();
                }
            }
            (Some("C"), Some(shard), None) => {
                let pool = logical(shard);
                if pool != shard {
                    // A sharded pool's claims waiting in one shard's line look for an idle
                    // resource in the others.
                    self.wake(&waiter_key(ChannelKind::Pool, pool));
                }
                let mut pools = self.inner.pools.lock().expect("wakeups lock");
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
    fn wake(&self, name: &str) {
        if let Some(n) = self.inner.queues.lock().expect("wakeups lock").get(name) {
            n.notify_one();
        }
        self.tell_watchers(name);
    }

    /// Tells the observers of waiter name `name` (see [`Wakeups::watch`]).
    fn tell_watchers(&self, name: &str) {
        let mut watchers = self.inner.watchers.lock().expect("wakeups lock");
        if watchers.get(name).is_some_and(|tx| tx.send(()).is_err()) {
            watchers.remove(name);
        }
    }

    fn announce(&self, event: LeaderEvent) {
        let mut elections = self.inner.elections.lock().expect("wakeups lock");
        if let Some(tx) = elections.get(&event.election) {
            if tx.receiver_count() == 0 {
                elections.remove(&event.election);
            } else {
                let _ = tx.send(ElectionSignal::Event(event));
            }
        }
    }

    /// Messages of `channel` may have been missed: every waiter and observer of its source
    /// reads the state again.
    fn resync(&self, channel: &str) {
        if channel == self.inner.outbox_channel {
            return self.outboxed(None);
        }
        let Some(kind) = self.inner.keys.parse_channel(channel) else { return };
        let name = channel_name(channel);
        match kind {
            ChannelKind::Queue | ChannelKind::Receiver => {
                if kind == ChannelKind::Queue {
                    let prefix = format!("{name}|");
                    for (key, n) in self.inner.awaits.lock().expect("wakeups lock").iter() {
                        if key.starts_with(&prefix) {
                            n.notify_waiters();
                            n.notify_one();
                        }
                    }
                    let mut agents = self.inner.agents.lock().expect("wakeups lock");
                    let watched: Vec<String> = agents.keys().filter(|k| k.starts_with(&prefix)).cloned().collect();
                    for key in watched {
                        Self::tell_agent(&mut agents, &key, AgentSignal::Resync);
                    }
                }
                self.wake_all(&waiter_key(kind, logical(name)))
            }
            ChannelKind::Election => {
                let mut elections = self.inner.elections.lock().expect("wakeups lock");
                if elections.get(name).is_some_and(|tx| tx.send(ElectionSignal::Resync).is_err()) {
                    elections.remove(name);
                }
            }
            ChannelKind::Pool => {
                let prefix = format!("{name}|");
                for (key, n) in self.inner.claims.lock().expect("wakeups lock").iter() {
                    if key.starts_with(&prefix) {
                        n.notify_one();
                    }
                }
                self.wake_all(&waiter_key(kind, logical(name)));
                let mut pools = self.inner.pools.lock().expect("wakeups lock");
                if pools.get(logical(name)).is_some_and(|tx| tx.send(()).is_err()) {
                    pools.remove(logical(name));
                }
            }
        }
    }

    fn wake_all(&self, name: &str) {
        if let Some(n) = self.inner.queues.lock().expect("wakeups lock").get(name) {
            n.notify_waiters();
        }
        self.tell_watchers(name);
    }

    /// Every channel's subscription is gone (lost connection): mark them not live and make
    /// every waiter read again.
    fn lost_all(&self) {
        let channels: Vec<String> = {
            let mut channels = self.inner.channels.lock().expect("wakeups lock");
            channels.values_mut().for_each(|c| c.live = false);
            channels.keys().cloned().collect()
        };
        for channel in channels {
            self.resync(&channel);
        }
    }

    /// Redis confirmed `channel`: waiters may go on; anything before was possibly missed.
    fn confirmed(&self, channel: &str) {
        if let Some(c) = self.inner.channels.lock().expect("wakeups lock").get_mut(channel) {
            c.live = true;
        }
        self.inner.live.send_modify(|n| *n += 1);
        self.resync(channel);
    }

    /// Forgets the channels nobody held for [`LINGER`]; returns them, to unsubscribe.
    fn expired(&self) -> Vec<String> {
        let mut channels = self.inner.channels.lock().expect("wakeups lock");
        let gone: Vec<String> = channels
            .iter()
            .filter(|(_, c)| c.held == 0 && c.idle_since.is_some_and(|at| at.elapsed() >= LINGER))
            .map(|(name, _)| name.clone())
            .collect();
        for name in &gone {
            channels.remove(name);
        }
        gone
    }

    /// Every channel wanted now.
    fn all_channels(&self) -> Vec<String> {
        self.inner.channels.lock().expect("wakeups lock").keys().cloned().collect()
    }

    /// Follows the wanted channels until `shutdown`: one pub/sub connection per replica (one
    /// node or the master Sentinel names), or a RESP3 cluster connection (sharded pub/sub).
    pub async fn run(self, feed: Arc<Feed>, shutdown: CancellationToken) {
        let Some(wanted) = self.inner.wanted_rx.lock().expect("wakeups lock").take() else {
            tracing::error!("the pub/sub follower runs once per Wakeups");
            return;
        };
        if matches!(feed.target, crate::store::target::Target::Cluster(_)) {
            self.run_cluster(feed, wanted, shutdown).await
        } else {
            self.run_node(feed, wanted, shutdown).await
        }
    }

    async fn run_node(self, feed: Arc<Feed>, mut wanted: mpsc::UnboundedReceiver<String>, shutdown: CancellationToken) {
        let mut backoff = reconnect_backoff();
        let mut sweep = tokio::time::interval(LINGER / 2);
        // Sentinel: the master changed under this connection (a failover); follow the new one.
        let mut master_check = tokio::time::interval(Duration::from_millis(500));
        loop {
            let generation = feed.generation();
            let connected = tokio::select! {
                _ = shutdown.cancelled() => return,
                r = feed.pubsub() => r,
            };
            let mut pause = backoff.next_delay();
            match connected {
                Ok(pubsub) => {
                    backoff.reset();
                    let (mut sink, mut stream) = pubsub.split();
                    // Wanted before this connection: subscribe them all at once.
                    while wanted.try_recv().is_ok() {}
                    let all = self.all_channels();
                    let mut healthy = all.is_empty() || sink.subscribe(&all).await.is_ok();
                    if healthy {
                        all.iter().for_each(|c| self.confirmed(c));
                    }
                    while healthy {
                        tokio::select! {
                            _ = shutdown.cancelled() => return,
                            channel = wanted.recv() => {
                                let Some(channel) = channel else { return };
                                healthy = sink.subscribe(&channel).await.is_ok();
                                if healthy {
                                    self.confirmed(&channel);
                                }
                            }
                            _ = sweep.tick() => {
                                let gone = self.expired();
                                if !gone.is_empty() {
                                    healthy = sink.unsubscribe(&gone).await.is_ok();
                                }
                            }
                            _ = master_check.tick() => {
                                if feed.generation() != generation {
                                    tracing::info!("the sentinels name another master; following it");
                                    healthy = false;
                                }
                            }
                            msg = stream.next() => {
                                let Some(msg) = msg else { break };
                                self.message_bytes(msg.get_channel_name(), msg.get_payload_bytes());
                            }
                        }
                    }
                    tracing::warn!("pub/sub connection lost; resubscribing");
                    self.lost_all();
                    pause = backoff.next_delay();
                }
                Err(e) => {
                    tracing::warn!(error = %e, retry_in_ms = pause.as_millis() as u64, "cannot open the pub/sub connection");
                }
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(pause) => {}
            }
        }
    }

    async fn run_cluster(
        self,
        feed: Arc<Feed>,
        mut wanted: mpsc::UnboundedReceiver<String>,
        shutdown: CancellationToken,
    ) {
        let (push_tx, mut pushes) = mpsc::unbounded_channel();
        let mut backoff = reconnect_backoff();
        let mut conn = loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                r = feed.cluster(push_tx.clone()) => match r {
                    Ok(conn) => break conn,
                    Err(e) => tracing::warn!(error = %e, "cannot open the cluster pub/sub connection"),
                }
            }
            tokio::time::sleep(backoff.next_delay()).await;
        };
        let mut sweep = tokio::time::interval(LINGER / 2);
        // Channels whose SSUBSCRIBE failed, retried on the next tick.
        let mut retry: Vec<String> = Vec::new();
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                channel = wanted.recv() => {
                    let Some(channel) = channel else { return };
                    // Confirmed by the (S)SUBSCRIBE push below (also after every resubscription).
                    if let Err(e) = self.cluster_subscribe(&mut conn, &channel).await {
                        tracing::warn!(channel, error = %e, "SSUBSCRIBE failed; retrying");
                        retry.push(channel);
                    }
                }
                _ = sweep.tick() => {
                    for channel in self.expired() {
                        let _ = conn.sunsubscribe(&channel).await;
                    }
                    for channel in std::mem::take(&mut retry) {
                        if let Err(e) = self.cluster_subscribe(&mut conn, &channel).await {
                            tracing::warn!(channel, error = %e, "SSUBSCRIBE failed; retrying");
                            retry.push(channel);
                        }
                    }
                }
                push = pushes.recv() => {
                    let Some(push) = push else { return };
                    let text = |i: usize| push.data.get(i).and_then(|v| redis::from_redis_value_ref::<String>(v).ok());
                    match push.kind {
                        PushKind::SMessage | PushKind::Message => {
                            let payload = push.data.get(1).and_then(|v| redis::from_redis_value_ref::<Vec<u8>>(v).ok());
                            if let (Some(channel), Some(payload)) = (text(0), payload) {
                                self.message_bytes(&channel, &payload);
                            }
                        }
                        PushKind::SSubscribe | PushKind::Subscribe => {
                            if let Some(channel) = text(0) {
                                self.confirmed(&channel);
                            }
                        }
                        PushKind::Disconnection => {
                            // One node's connection: redis-rs reconnects and resubscribes its
                            // channels (each confirmation resyncs again). Channels on the other
                            // nodes stay live, so waiters are not held back meanwhile.
                            tracing::warn!("a cluster pub/sub connection was lost; redis-rs resubscribes it");
                            self.all_channels().iter().for_each(|c| self.resync(c));
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}

impl Wakeups {
    /// SSUBSCRIBE on a cluster: a source's channel lives in its slot; the outbox channel, which
    /// scripts of every slot PUBLISH on, with SUBSCRIBE.
    async fn cluster_subscribe(
        &self,
        conn: &mut redis::cluster_async::ClusterConnection,
        channel: &str,
    ) -> redis::RedisResult<()> {
        if channel == self.inner.outbox_channel {
            conn.subscribe(channel).await
        } else {
            conn.ssubscribe(channel).await
        }
    }
}

/// The source name inside a channel's hash tag: `…{q:billing}:wake` → `billing`.
fn channel_name(channel: &str) -> &str {
    let tag = channel.rsplit_once('{').map_or("", |(_, rest)| rest);
    let tag = tag.split_once('}').map_or(tag, |(tag, _)| tag);
    tag.split_once(':').map_or(tag, |(_, name)| name)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaderEventKind {
    Elected,
    Resigned,
    Expired,
}

/// A leadership change, as published by the election scripts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderEvent {
    pub election: String,
    pub kind: LeaderEventKind,
    pub token: u64,
    pub leader: String,
    /// The new term's expiry (Elected) or the old term's end (Resigned, Expired).
    pub at_ms: i64,
}

impl LeaderEvent {
    /// Parses "election|kind|token|candidate|at".
    pub fn parse(payload: &str) -> Option<Self> {
        let mut f = payload.split('|');
        let election = f.next()?.to_string();
        let kind = match f.next()? {
            "ELECTED" => LeaderEventKind::Elected,
            "RESIGNED" => LeaderEventKind::Resigned,
            "EXPIRED" => LeaderEventKind::Expired,
            _ => return None,
        };
        let token = f.next()?.parse().ok()?;
        let leader = f.next()?.to_string();
        let at_ms = f.next()?.parse().ok()?;
        Some(Self { election, kind, token, leader, at_ms })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn followed(wakeups: &Wakeups) -> [usize; 4] {
        let inner = &wakeups.inner;
        [
            inner.elections.lock().unwrap().len(),
            inner.watchers.lock().unwrap().len(),
            inner.pools.lock().unwrap().len(),
            inner.agents.lock().unwrap().len(),
        ]
    }

    /// A replica forgets an election, a watched source, a pool and a watched agent when the
    /// last stream that followed it ends, so streams on ever new names (an Observe flood on
    /// made-up elections) leave nothing behind.
    #[tokio::test]
    async fn what_streams_follow_is_forgotten_with_the_last_of_them() {
        let redis = crate::testing::TestRedis::start().await;
        let core = redis.stores().await.core;
        let wakeups = Wakeups::new(core.keys().clone());
        let stop = CancellationToken::new();
        let follower = tokio::spawn(wakeups.clone().run(core.feed(), stop.clone()));
        let one = wakeups.election("e").await.unwrap();
        let two = wakeups.election("e").await.unwrap();
        let other = wakeups.election("f").await.unwrap();
        let watch = wakeups.watch(ChannelKind::Queue, "q", &["q".to_string()]).await.unwrap();
        let pool = wakeups.pool("p", &["p".to_string()]).await.unwrap();
        let agent = wakeups.watch_agent("q", "a").await.unwrap();
        assert_eq!(followed(&wakeups), [2, 1, 1, 1]);
        drop(one);
        assert_eq!(followed(&wakeups), [2, 1, 1, 1], "e still has a stream");
        drop((two, other, watch, pool, agent));
        assert_eq!(followed(&wakeups), [0, 0, 0, 0]);
        stop.cancel();
        follower.await.unwrap();
    }
}

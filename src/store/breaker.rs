//! Circuit breakers, per Redis node: for each node, one for the dispatch path (Acquire,
//! Campaign, reads) and one for the write-back path (Register, Heartbeat, Complete, Release,
//! Renew, Resign, sweeps). A call passes the breakers of the node serving its keys (on a
//! cluster, the primary of its slot; otherwise the one node), so a dead shard fails its own
//! calls fast while every other shard keeps serving ([`Breakers`]).
//!
//! CLOSED → OPEN after `failure_threshold` Redis failures within `failure_window_ms`; while
//! OPEN every call fails fast (UNAVAILABLE, reason CIRCUIT_OPEN) with a pushback hint of when
//! to try again. Two ways back:
//!
//! - the replica's Redis probe (`server::watch_redis`) pings every node every
//!   `probe_interval_ms` while something is wrong, and a node's first answer closes its breakers
//!   ([`Breaker::probed`]): calls succeed within one probe interval of Redis answering again,
//!   whatever the outage cost;
//! - without a probe answer, after `cooldown_ms` → HALF_OPEN, where calls go through as probes:
//!   the first success closes the breaker, a failure (or no success within
//!   `half_open_duration_ms`, or a failed probe) opens it again.
//!
//! The pushback hint is the time to the next probe (at most the cooldown left). Only Redis
//! unavailability counts as a failure, never a refused token, bad input, a full Redis or a
//! change the replicas did not confirm in time (the node answered).

use std::{
    collections::{BTreeMap, VecDeque},
    sync::{Arc, Mutex, RwLock},
    time::{Duration, Instant},
};

use tokio::sync::Notify;

use crate::{config::BreakerConfig, error::Error};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Closed,
    Open,
    HalfOpen,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open => "open",
            State::HalfOpen => "half_open",
        }
    }

    fn gauge(self) -> f64 {
        match self {
            State::Closed => 0.0,
            State::HalfOpen => 1.0,
            State::Open => 2.0,
        }
    }
}

pub(crate) struct Breaker {
    path: &'static str,
    /// The Redis node it guards (metrics label `node`).
    node: Arc<str>,
    config: BreakerConfig,
    inner: Mutex<Inner>,
    /// Told of every state change, so the Redis probe and health react at once.
    changed: Arc<Notify>,
}

struct Inner {
    state: State,
    /// Failures within the window, oldest first (CLOSED).
    failures: VecDeque<Instant>,
    /// When the breaker last changed to OPEN or HALF_OPEN.
    since: Instant,
}

impl Breaker {
    /// A closed breaker; `changed` is notified of each state change.
    pub(crate) fn new(path: &'static str, node: Arc<str>, config: BreakerConfig, changed: Arc<Notify>) -> Self {
        metrics::gauge!("baton_circuit_breaker_state", "path" => path, "node" => node.to_string()).set(0.0);
        Self {
            path,
            node,
            config,
            inner: Mutex::new(Inner { state: State::Closed, failures: VecDeque::new(), since: Instant::now() }),
            changed,
        }
    }

    pub(crate) fn state(&self) -> State {
        self.inner.lock().expect("breaker lock").state
    }

    /// Before a call: Ok to go ahead, or the fail-fast error.
    pub(crate) fn check(&self) -> Result<(), Error> {
        if !self.config.enabled {
            return Ok(());
        }
        let mut inner = self.inner.lock().expect("breaker lock");
        let now = Instant::now();
        match inner.state {
            State::Closed => Ok(()),
            State::Open => {
                let cooldown = Duration::from_millis(self.config.cooldown_ms);
                let waited = now - inner.since;
                if waited >= cooldown {
                    self.set(&mut inner, State::HalfOpen, now);
                    Ok(())
                } else {
                    self.count("baton_circuit_breaker_blocked_total");
                    Err(Error::CircuitOpen {
                        path: self.path,
                        node: self.node.to_string(),
                        retry_after_ms: self.pushback_ms(cooldown - waited),
                    })
                }
            }
            State::HalfOpen => {
                if now - inner.since > Duration::from_millis(self.config.half_open_duration_ms) {
                    // No probe succeeded in time: back to failing fast.
                    self.set(&mut inner, State::Open, now);
                    self.count("baton_circuit_breaker_blocked_total");
                    let cooldown = Duration::from_millis(self.config.cooldown_ms);
                    return Err(Error::CircuitOpen {
                        path: self.path,
                        node: self.node.to_string(),
                        retry_after_ms: self.pushback_ms(cooldown),
                    });
                }
                Ok(())
            }
        }
    }

    /// When a caller should try again: at the next Redis probe, or when the cooldown ends.
    fn pushback_ms(&self, cooldown_left: Duration) -> u64 {
        let left = cooldown_left.as_millis() as u64 + 1;
        left.min(self.config.probe_interval_ms.max(1))
    }

    /// The outcome of a Redis probe (a PING outside any call): an answer closes an open or
    /// half-open breaker; no answer counts as a failure like any call's. Probes are never
    /// blocked, so they do not count in `baton_circuit_breaker_blocked_total`.
    pub(crate) fn probed<T>(&self, result: &Result<T, Error>) {
        if !self.config.enabled {
            return;
        }
        let failed = matches!(result, Err(Error::Unavailable(_)));
        let mut inner = self.inner.lock().expect("breaker lock");
        match (inner.state, failed) {
            (State::Open | State::HalfOpen, false) => self.close(&mut inner, "the Redis probe"),
            (State::Closed, true) => self.failed(&mut inner),
            // The node still does not answer: no more calls through as probes.
            (State::HalfOpen, true) => self.set(&mut inner, State::Open, Instant::now()),
            (State::Open, true) | (State::Closed, false) => {}
        }
    }

    /// After a call: what happened to it.
    pub(crate) fn record<T>(&self, result: &Result<T, Error>) {
        if !self.config.enabled {
            return;
        }
        let failed = matches!(result, Err(Error::Unavailable(_)));
        let mut inner = self.inner.lock().expect("breaker lock");
        let now = Instant::now();
        match (inner.state, failed) {
            (State::Closed, false) => {}
            (State::Closed, true) => self.failed(&mut inner),
            (State::HalfOpen, false) => self.close(&mut inner, "a call"),
            (State::HalfOpen, true) => self.set(&mut inner, State::Open, now),
            // A call let through before the breaker opened: nothing to learn.
            (State::Open, _) => {}
        }
    }

    /// A Redis failure while CLOSED: opens the breaker once the window holds enough of them.
    fn failed(&self, inner: &mut Inner) {
        let now = Instant::now();
        let window = Duration::from_millis(self.config.failure_window_ms);
        inner.failures.push_back(now);
        while inner.failures.front().is_some_and(|t| now - *t > window) {
            inner.failures.pop_front();
        }
        if inner.failures.len() >= self.config.failure_threshold as usize {
            tracing::warn!(
                path = self.path,
                node = %self.node,
                failures = inner.failures.len(),
                "circuit breaker tripped: calls to this Redis node fail fast"
            );
            self.count("baton_circuit_breaker_trips_total");
            self.set(inner, State::Open, now);
        }
    }

    fn close(&self, inner: &mut Inner, by: &str) {
        tracing::info!(path = self.path, node = %self.node, by, "circuit breaker closed: Redis answers again");
        self.count("baton_circuit_breaker_recoveries_total");
        self.set(inner, State::Closed, Instant::now());
    }

    fn set(&self, inner: &mut Inner, state: State, now: Instant) {
        inner.state = state;
        inner.since = now;
        inner.failures.clear();
        metrics::gauge!("baton_circuit_breaker_state", "path" => self.path, "node" => self.node.to_string())
            .set(state.gauge());
        self.changed.notify_one();
    }

    fn count(&self, name: &'static str) {
        metrics::counter!(name, "path" => self.path, "node" => self.node.to_string()).increment(1);
    }

    /// Whether Redis failures were seen lately (closed, but counting toward a trip).
    fn failing(&self) -> bool {
        let inner = self.inner.lock().expect("breaker lock");
        inner.state != State::Closed || !inner.failures.is_empty()
    }
}

/// The (dispatch, write-back) breakers of one Redis node.
pub(crate) type Pair = Arc<[Breaker; 2]>;

/// Every node's breakers, made on first use of a node. Cheap to share.
pub(crate) struct Breakers {
    config: BreakerConfig,
    /// Told of every state change of any breaker.
    changed: Arc<Notify>,
    nodes: RwLock<BTreeMap<Arc<str>, Pair>>,
}

impl Breakers {
    pub(crate) fn new(config: BreakerConfig) -> Self {
        Self { config, changed: Arc::new(Notify::new()), nodes: RwLock::default() }
    }

    /// The breakers of `node`.
    pub(crate) fn of(&self, node: &Arc<str>) -> Pair {
        if let Some(pair) = self.nodes.read().expect("breakers lock").get(node) {
            return pair.clone();
        }
        let mut nodes = self.nodes.write().expect("breakers lock");
        nodes
            .entry(node.clone())
            .or_insert_with(|| {
                let make = |path| Breaker::new(path, node.clone(), self.config.clone(), self.changed.clone());
                Arc::new([make("dispatch"), make("writeback")])
            })
            .clone()
    }

    /// Every node's (dispatch, write-back) states, by node.
    pub(crate) fn states(&self) -> Vec<(Arc<str>, State, State)> {
        let nodes = self.nodes.read().expect("breakers lock");
        nodes.iter().map(|(node, pair)| (node.clone(), pair[0].state(), pair[1].state())).collect()
    }

    /// Keeps the breakers of `current` nodes only (a node that left the cluster, or lost its
    /// slots to a promoted replica, no longer guards anything).
    pub(crate) fn retain(&self, current: &[Arc<str>]) {
        self.nodes.write().expect("breakers lock").retain(|node, _| current.contains(node));
    }

    /// Whether any breaker is open or half-open.
    pub(crate) fn any_open(&self) -> bool {
        self.states().iter().any(|(_, d, w)| *d != State::Closed || *w != State::Closed)
    }

    /// Whether any breaker is open or counting recent failures: the probe should look often.
    pub(crate) fn any_failing(&self) -> bool {
        self.nodes.read().expect("breakers lock").values().any(|pair| pair.iter().any(Breaker::failing))
    }

    /// Resolves at the next state change of any breaker (or at once if one went unobserved).
    pub(crate) async fn changed(&self) {
        self.changed.notified().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> BreakerConfig {
        BreakerConfig {
            enabled: true,
            failure_threshold: 3,
            failure_window_ms: 60_000,
            cooldown_ms: 50,
            half_open_duration_ms: 60_000,
            probe_interval_ms: 1_000,
        }
    }

    fn breaker(config: BreakerConfig) -> Breaker {
        Breaker::new("test", "node".into(), config, Arc::new(Notify::new()))
    }

    fn down() -> Result<(), Error> {
        Err(Error::Unavailable("down".into()))
    }

    #[test]
    fn opens_after_threshold_then_half_opens_and_closes() {
        let b = breaker(config());
        for _ in 0..2 {
            b.check().unwrap();
            b.record(&down());
        }
        assert_eq!(b.state(), State::Closed);
        b.record(&Err::<(), _>(Error::LeaseLost("not a Redis failure".into())));
        assert_eq!(b.state(), State::Closed);
        b.record(&down());
        assert_eq!(b.state(), State::Open);
        assert!(matches!(b.check(), Err(Error::CircuitOpen { retry_after_ms, .. }) if retry_after_ms <= 51));
        std::thread::sleep(Duration::from_millis(60));
        b.check().expect("a probe goes through after the cooldown");
        assert_eq!(b.state(), State::HalfOpen);
        b.record(&down());
        assert_eq!(b.state(), State::Open, "a failed probe opens it again");
        std::thread::sleep(Duration::from_millis(60));
        b.check().unwrap();
        b.record(&Ok(()));
        assert_eq!(b.state(), State::Closed);
    }

    #[test]
    fn disabled_never_opens() {
        let b = breaker(BreakerConfig { enabled: false, ..config() });
        for _ in 0..10 {
            b.record(&down());
        }
        b.check().unwrap();
    }

    // An answered probe closes an open breaker at once, long before its cooldown ends; the
    // hint while open points at the next probe, not the end of the cooldown.
    #[test]
    fn an_answered_probe_closes_an_open_breaker() {
        let b = breaker(BreakerConfig { cooldown_ms: 60_000, probe_interval_ms: 250, ..config() });
        for _ in 0..3 {
            b.record(&down());
        }
        assert_eq!(b.state(), State::Open);
        assert!(matches!(b.check(), Err(Error::CircuitOpen { retry_after_ms: 250, .. })));
        b.probed(&down());
        assert_eq!(b.state(), State::Open, "an unanswered probe changes nothing");
        b.record(&Err::<(), _>(Error::NotReplicated("no replica".into())));
        assert_eq!(b.state(), State::Open);
        b.probed(&Ok(()));
        assert_eq!(b.state(), State::Closed);
        b.check().expect("calls go through again");
    }

    // Failed probes count like failed calls while closed (Redis down and idle replica).
    #[test]
    fn failed_probes_open_a_closed_breaker() {
        let b = breaker(config());
        for _ in 0..3 {
            b.probed(&down());
        }
        assert_eq!(b.state(), State::Open);
    }
}

#[cfg(test)]
mod node_tests {
    use super::*;

    // A node's failures open its own breakers only; the other nodes' calls go on. A change the
    // replicas did not confirm is no failure of the node (it answered).
    #[test]
    fn one_node_failing_leaves_the_others_closed() {
        let breakers = Breakers::new(BreakerConfig {
            enabled: true,
            failure_threshold: 3,
            failure_window_ms: 60_000,
            cooldown_ms: 60_000,
            half_open_duration_ms: 60_000,
            probe_interval_ms: 250,
        });
        let (dead, alive): (Arc<str>, Arc<str>) = ("10.0.0.1:6379".into(), "10.0.0.2:6379".into());
        for _ in 0..5 {
            breakers.of(&alive)[1].record(&Err::<(), _>(Error::NotReplicated("0 of 1 replicas".into())));
        }
        for _ in 0..3 {
            breakers.of(&dead)[0].record(&Err::<(), _>(Error::Unavailable("down".into())));
        }
        assert!(matches!(breakers.of(&dead)[0].check(), Err(Error::CircuitOpen { .. })));
        breakers.of(&alive)[0].check().expect("another node's calls go on");
        breakers.of(&alive)[1].check().expect("unconfirmed replication trips nothing");
        assert!(breakers.any_open());
        breakers.retain(std::slice::from_ref(&alive));
        assert!(!breakers.any_open(), "a node that left guards nothing");
    }
}

//! Circuit breakers: one for the dispatch path (Acquire, Campaign, reads), one for
//! the write-back path (Register, Heartbeat, Complete, Release, Renew, Resign, sweeps).
//!
//! CLOSED → OPEN after `failure_threshold` Redis failures within `failure_window_ms`; while
//! OPEN every call fails fast (UNAVAILABLE, reason CIRCUIT_OPEN) with a pushback hint of when
//! to try again. Two ways back:
//!
//! - the replica's Redis probe (`server::watch_redis`) pings Redis every `probe_interval_ms`
//!   while a breaker is open, and the first answer closes it ([`Breaker::probed`]): calls
//!   succeed within one probe interval of Redis answering again, whatever the outage cost;
//! - without a probe answer, after `cooldown_ms` → HALF_OPEN, where calls go through as probes:
//!   the first success closes the breaker, a failure (or no success within
//!   `half_open_duration_ms`) opens it again.
//!
//! The pushback hint is the time to the next probe (at most the cooldown left). Only Redis
//! unavailability counts as a failure, never a refused token, bad input or a full Redis.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
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

pub struct Breaker {
    path: &'static str,
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
    pub fn new(path: &'static str, config: BreakerConfig, changed: Arc<Notify>) -> Self {
        metrics::gauge!("baton_circuit_breaker_state", "path" => path).set(0.0);
        Self {
            path,
            config,
            inner: Mutex::new(Inner { state: State::Closed, failures: VecDeque::new(), since: Instant::now() }),
            changed,
        }
    }

    pub fn state(&self) -> State {
        self.inner.lock().expect("breaker lock").state
    }

    /// Before a call: Ok to go ahead, or the fail-fast error.
    pub fn check(&self) -> Result<(), Error> {
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
                    metrics::counter!("baton_circuit_breaker_blocked_total", "path" => self.path).increment(1);
                    Err(Error::CircuitOpen { path: self.path, retry_after_ms: self.pushback_ms(cooldown - waited) })
                }
            }
            State::HalfOpen => {
                if now - inner.since > Duration::from_millis(self.config.half_open_duration_ms) {
                    // No probe succeeded in time: back to failing fast.
                    self.set(&mut inner, State::Open, now);
                    metrics::counter!("baton_circuit_breaker_blocked_total", "path" => self.path).increment(1);
                    let cooldown = Duration::from_millis(self.config.cooldown_ms);
                    return Err(Error::CircuitOpen { path: self.path, retry_after_ms: self.pushback_ms(cooldown) });
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
    pub fn probed<T>(&self, result: &Result<T, Error>) {
        if !self.config.enabled {
            return;
        }
        let failed = matches!(result, Err(Error::Unavailable(_)));
        let mut inner = self.inner.lock().expect("breaker lock");
        match (inner.state, failed) {
            (State::Open | State::HalfOpen, false) => self.close(&mut inner, "the Redis probe"),
            (State::Closed, true) => self.failed(&mut inner),
            _ => {}
        }
    }

    /// After a call: what happened to it.
    pub fn record<T>(&self, result: &Result<T, Error>) {
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
            tracing::warn!(path = self.path, failures = inner.failures.len(), "circuit breaker tripped: failing fast");
            metrics::counter!("baton_circuit_breaker_trips_total", "path" => self.path).increment(1);
            self.set(inner, State::Open, now);
        }
    }

    fn close(&self, inner: &mut Inner, by: &str) {
        tracing::info!(path = self.path, by, "circuit breaker closed: Redis answers again");
        metrics::counter!("baton_circuit_breaker_recoveries_total", "path" => self.path).increment(1);
        self.set(inner, State::Closed, Instant::now());
    }

    fn set(&self, inner: &mut Inner, state: State, now: Instant) {
        inner.state = state;
        inner.since = now;
        inner.failures.clear();
        metrics::gauge!("baton_circuit_breaker_state", "path" => self.path).set(state.gauge());
        self.changed.notify_one();
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
        Breaker::new("test", config, Arc::new(Notify::new()))
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

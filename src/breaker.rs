//! Circuit breakers (seed 000): one for the dispatch path (Acquire, Campaign, reads), one for
//! the write-back path (Register, Heartbeat, Complete, Release, Renew, Resign, sweeps).
//!
//! CLOSED → OPEN after `failure_threshold` Redis failures within `failure_window_ms`; while
//! OPEN every call fails fast (UNAVAILABLE, reason CIRCUIT_OPEN, with a pushback of the
//! cooldown left); after `cooldown_ms` → HALF_OPEN, where calls go through as probes: the first
//! success closes the breaker, a failure (or no success within `half_open_duration_ms`) opens it
//! again. Only Redis unavailability counts as a failure, never a refused token or bad input.

use std::{
    collections::VecDeque,
    sync::Mutex,
    time::{Duration, Instant},
};

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
}

struct Inner {
    state: State,
    /// Failures within the window, oldest first (CLOSED).
    failures: VecDeque<Instant>,
    /// When the breaker last changed to OPEN or HALF_OPEN.
    since: Instant,
}

impl Breaker {
    pub fn new(path: &'static str, config: BreakerConfig) -> Self {
        metrics::gauge!("baton_circuit_breaker_state", "path" => path).set(0.0);
        Self {
            path,
            config,
            inner: Mutex::new(Inner { state: State::Closed, failures: VecDeque::new(), since: Instant::now() }),
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
                    Err(Error::CircuitOpen {
                        path: self.path,
                        retry_after_ms: (cooldown - waited).as_millis() as u64 + 1,
                    })
                }
            }
            State::HalfOpen => {
                if now - inner.since > Duration::from_millis(self.config.half_open_duration_ms) {
                    // No probe succeeded in time: back to failing fast.
                    self.set(&mut inner, State::Open, now);
                    metrics::counter!("baton_circuit_breaker_blocked_total", "path" => self.path).increment(1);
                    return Err(Error::CircuitOpen { path: self.path, retry_after_ms: self.config.cooldown_ms });
                }
                Ok(())
            }
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
            (State::Closed, true) => {
                let window = Duration::from_millis(self.config.failure_window_ms);
                inner.failures.push_back(now);
                while inner.failures.front().is_some_and(|t| now - *t > window) {
                    inner.failures.pop_front();
                }
                if inner.failures.len() >= self.config.failure_threshold as usize {
                    tracing::warn!(
                        path = self.path,
                        failures = inner.failures.len(),
                        "circuit breaker tripped: failing fast"
                    );
                    metrics::counter!("baton_circuit_breaker_trips_total", "path" => self.path).increment(1);
                    self.set(&mut inner, State::Open, now);
                }
            }
            (State::HalfOpen, false) => {
                tracing::info!(path = self.path, "circuit breaker closed: Redis answers again");
                metrics::counter!("baton_circuit_breaker_recoveries_total", "path" => self.path).increment(1);
                self.set(&mut inner, State::Closed, now);
            }
            (State::HalfOpen, true) => self.set(&mut inner, State::Open, now),
            // A call let through before the breaker opened: nothing to learn.
            (State::Open, _) => {}
        }
    }

    fn set(&self, inner: &mut Inner, state: State, now: Instant) {
        inner.state = state;
        inner.since = now;
        inner.failures.clear();
        metrics::gauge!("baton_circuit_breaker_state", "path" => self.path).set(state.gauge());
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
        }
    }

    fn down() -> Result<(), Error> {
        Err(Error::Unavailable("down".into()))
    }

    #[test]
    fn opens_after_threshold_then_half_opens_and_closes() {
        let b = Breaker::new("test", config());
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
        let b = Breaker::new("test", BreakerConfig { enabled: false, ..config() });
        for _ in 0..10 {
            b.record(&down());
        }
        b.check().unwrap();
    }
}

//! [`Backoff`]: how long a helper waits before it opens a stream or sends a call again. The
//! server's retry hint (`grpc-retry-pushback-ms`, sent with UNAVAILABLE and
//! RESOURCE_EXHAUSTED) wins; otherwise an exponential backoff with jitter (`backon`), from
//! 100 ms doubling to 5 s, reset once a call gets through. The server's own loops that wait
//! before trying again (reconnecting, restarting the embedded Redis) use it too, with their
//! own bounds ([`Backoff::between`]).

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};

/// The delays between attempts of one helper's calls.
#[derive(Debug)]
pub struct Backoff {
    delays: ExponentialBackoff,
    /// The first delay, and the one after a reset.
    min: Duration,
    /// The longest delay.
    max: Duration,
}

fn delays(min: Duration, max: Duration) -> ExponentialBackoff {
    ExponentialBuilder::default().with_min_delay(min).with_max_delay(max).with_jitter().without_max_times().build()
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new()
    }
}

impl Backoff {
    /// From 100 ms doubling to 5 s: the helpers' backoff.
    pub fn new() -> Self {
        Self::between(Duration::from_millis(100), Duration::from_secs(5))
    }

    /// From `min` doubling to `max`, with jitter.
    pub fn between(min: Duration, max: Duration) -> Self {
        Self { delays: delays(min, max), min, max }
    }

    /// The wait before the next attempt, the previous one having failed with `status`: the
    /// server's hint when it sent one, else the next delay.
    pub fn after(&mut self, status: &tonic::Status) -> Duration {
        let delay = self.next_delay();
        pushback(status).unwrap_or(delay)
    }

    /// The next delay (no hint to follow).
    pub fn next_delay(&mut self) -> Duration {
        self.delays.next().expect("unbounded")
    }

    /// A call got through: the next failure starts from the shortest delay again.
    pub fn reset(&mut self) {
        self.delays = delays(self.min, self.max);
    }
}

/// The server's `grpc-retry-pushback-ms` hint of a status, if any.
pub fn pushback(status: &tonic::Status) -> Option<Duration> {
    let ms = status.metadata().get("grpc-retry-pushback-ms")?.to_str().ok()?.parse().ok()?;
    Some(Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_with_jitter_to_a_cap_and_the_hint_wins() {
        let mut b = Backoff::new();
        let first = b.next_delay();
        assert!(first >= Duration::from_millis(100) && first <= Duration::from_millis(200), "{first:?}");
        let late = (0..20).map(|_| b.next_delay()).last().unwrap();
        assert!(late >= Duration::from_secs(5) && late <= Duration::from_secs(10), "{late:?}");
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(200));
        let mut status = tonic::Status::unavailable("busy");
        status.metadata_mut().insert("grpc-retry-pushback-ms", "750".parse().unwrap());
        assert_eq!(b.after(&status), Duration::from_millis(750));
    }
}

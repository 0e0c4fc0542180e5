//! Per-method RPC latency, kept in process for the console: every call `service::observe` ends
//! is counted in one of fixed buckets (the bounds of the `baton_rpc_duration_seconds`
//! histogram) of its method's slot. Recording costs a binary search over the method names and
//! two relaxed atomic adds: no lock, no allocation, no label lookup. Streams (Session, Receive,
//! Subscribe, Observe, WatchPool, WatchAgent) count once, when they open, as in the Prometheus metrics.
//! Long polls (an Acquire, Claim or Campaign that asked to wait) are counted apart, in slots of
//! their own: their time is mostly the wait they asked for, and mixed with the calls that wait
//! for nothing it made a p50 of 17 s out of 5 s waits beside 1 ms calls.
//!
//! The counts are the process's (like /metrics), cumulative since it started; the console
//! shows their differences between two snapshots (p50/p99 and calls per second over the
//! interval).

use std::{
    sync::{
        atomic::{AtomicU64, Ordering::Relaxed},
        LazyLock,
    },
    time::{Duration, Instant},
};

/// Upper bounds (seconds) of the buckets; a last bucket holds everything slower. Shared with
/// the `baton_rpc_duration_seconds` Prometheus histogram (`telemetry.rs`).
pub(crate) const BOUNDS_SECONDS: [f64; 13] =
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0];

/// The same bounds in microseconds (a call lands in the first bucket whose bound it does not
/// exceed, as Prometheus's `le`).
const BOUNDS_MICROS: [u64; 13] =
    [500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 5_000_000, 30_000_000];

/// Buckets per method: one per bound, and one beyond the last.
pub(crate) const BUCKETS: usize = BOUNDS_MICROS.len() + 1;

/// Every RPC method of the baton.v1 services, sorted (names are unique across services); a
/// unit test keeps it equal to the protos.
pub(crate) const METHODS: [&str; 54] = [
    "Ack",
    "AckBatch",
    "Acquire",
    "Await",
    "Campaign",
    "Cancel",
    "CancelRun",
    "Claim",
    "CloseBatch",
    "Complete",
    "CompleteBatch",
    "DeleteDeadLetter",
    "Fail",
    "GetAgent",
    "GetBatch",
    "GetElectionHistory",
    "GetGroupLimits",
    "GetHealth",
    "GetKeyLimits",
    "GetLeader",
    "GetPool",
    "Heartbeat",
    "ListAgents",
    "ListDeadLetters",
    "ListElections",
    "ListGroupLimits",
    "ListKeyLimits",
    "ListMessages",
    "Observe",
    "Offer",
    "Pause",
    "Purge",
    "Receive",
    "RecordStep",
    "RecountKeys",
    "Register",
    "RegisterBatch",
    "Release",
    "Renew",
    "Resign",
    "Resume",
    "RetryDeadLetter",
    "Return",
    "Schedule",
    "ScheduleBatch",
    "Session",
    "SetGroupLimits",
    "SetKeyLimits",
    "SetLimits",
    "Signal",
    "Subscribe",
    "Unregister",
    "WatchAgent",
    "WatchPool",
];

struct Slot {
    buckets: [AtomicU64; BUCKETS],
    sum_micros: AtomicU64,
}

impl Slot {
    const fn new() -> Self {
        Self { buckets: [const { AtomicU64::new(0) }; BUCKETS], sum_micros: AtomicU64::new(0) }
    }
}

static SLOTS: [Slot; METHODS.len()] = [const { Slot::new() }; METHODS.len()];
/// The same, for calls that asked to wait (long polls).
static WAIT_SLOTS: [Slot; METHODS.len()] = [const { Slot::new() }; METHODS.len()];

/// The instant snapshots measure their time from (the first snapshot's).
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

/// Counts one call of `method` that took `elapsed`, a long poll's apart (`waited`: the call
/// asked to wait). A name that is not a method is ignored.
#[inline]
pub(crate) fn record(method: &str, waited: bool, elapsed: Duration) {
    let Ok(i) = METHODS.binary_search(&method) else { return };
    let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
    let bucket = BOUNDS_MICROS.partition_point(|&bound| bound < micros);
    let slot = if waited { &WAIT_SLOTS[i] } else { &SLOTS[i] };
    slot.buckets[bucket].fetch_add(1, Relaxed);
    slot.sum_micros.fetch_add(micros, Relaxed);
}

/// One method's counts since the process started.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MethodLatency {
    pub method: &'static str,
    /// Long polls of the method (calls that asked to wait), counted apart from its other calls.
    pub long_poll: bool,
    /// Calls per bucket (not cumulative), `BUCKETS` of them.
    pub buckets: [u64; BUCKETS],
    pub sum_seconds: f64,
}

impl MethodLatency {
    pub(crate) fn calls(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// The `q` quantile (0..=1), interpolated within its bucket as Prometheus's
    /// `histogram_quantile` does; the last bound for calls beyond it; None without calls.
    pub(crate) fn quantile(&self, q: f64) -> Option<f64> {
        quantile(&self.buckets, q)
    }
}

/// The `q` quantile of counts per bucket (see [`MethodLatency::quantile`]).
pub(crate) fn quantile(buckets: &[u64; BUCKETS], q: f64) -> Option<f64> {
    let total: u64 = buckets.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = q.clamp(0.0, 1.0) * total as f64;
    let mut below = 0u64;
    for (i, &n) in buckets.iter().enumerate() {
        if n > 0 && (below + n) as f64 >= rank {
            let Some(&upper) = BOUNDS_SECONDS.get(i) else { return Some(BOUNDS_SECONDS[BOUNDS_SECONDS.len() - 1]) };
            let lower = if i == 0 { 0.0 } else { BOUNDS_SECONDS[i - 1] };
            return Some(lower + (upper - lower) * ((rank - below as f64) / n as f64));
        }
        below += n;
    }
    Some(BOUNDS_SECONDS[BOUNDS_SECONDS.len() - 1])
}

/// A snapshot: the time it was taken (ms since the first snapshot) and every method called at
/// least once.
pub(crate) fn snapshot() -> (u64, Vec<MethodLatency>) {
    let at_ms = EPOCH.elapsed().as_millis() as u64;
    let unary = METHODS.iter().zip(SLOTS.iter()).map(|(m, s)| (m, false, s));
    let waits = METHODS.iter().zip(WAIT_SLOTS.iter()).map(|(m, s)| (m, true, s));
    let methods = unary
        .chain(waits)
        .map(|(&method, long_poll, slot)| MethodLatency {
            method,
            long_poll,
            buckets: std::array::from_fn(|b| slot.buckets[b].load(Relaxed)),
            sum_seconds: slot.sum_micros.load(Relaxed) as f64 / 1e6,
        })
        .filter(|m| m.calls() > 0)
        .collect();
    (at_ms, methods)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_are_sorted_and_every_rpc_of_the_protos() {
        use prost::Message;
        assert!(METHODS.windows(2).all(|w| w[0] < w[1]), "sorted, no duplicates");
        let set = prost_types::FileDescriptorSet::decode(crate::pb::FILE_DESCRIPTOR_SET).unwrap();
        let mut rpcs: Vec<&str> =
            set.file.iter().flat_map(|f| &f.service).flat_map(|s| &s.method).map(|m| m.name()).collect();
        rpcs.sort();
        assert_eq!(rpcs, METHODS);
    }

    #[test]
    fn bounds_agree() {
        for (s, us) in BOUNDS_SECONDS.iter().zip(BOUNDS_MICROS) {
            assert_eq!((s * 1e6).round() as u64, us);
        }
    }

    #[test]
    fn calls_land_in_their_bucket_and_quantiles_interpolate() {
        // "Fail" is called by no other unit test.
        let fail = |m: &MethodLatency| m.method == "Fail" && !m.long_poll;
        let before = snapshot().1.into_iter().find(fail).map_or([0; BUCKETS], |m| m.buckets);
        record("Fail", false, Duration::from_micros(500)); // on a bound: that bucket (le)
        record("Fail", false, Duration::from_micros(501));
        record("Fail", false, Duration::from_secs(60));
        record("NoSuchMethod", false, Duration::from_secs(1));
        // A long poll counts apart: not in Fail's unary slot.
        record("Fail", true, Duration::from_secs(10));
        let after = snapshot().1.into_iter().find(fail).unwrap();
        let waited = snapshot().1.into_iter().find(|m| m.method == "Fail" && m.long_poll).unwrap();
        assert_eq!(waited.buckets[BUCKETS - 2], 1, "the 10 s wait, in its own slot");
        let added: Vec<u64> = after.buckets.iter().zip(before).map(|(a, b)| a - b).collect();
        assert_eq!((added[0], added[1], added[BUCKETS - 1]), (1, 1, 1));
        assert_eq!(added.iter().sum::<u64>(), 3);

        let mut b = [0; BUCKETS];
        assert_eq!(quantile(&b, 0.5), None);
        b[2] = 10; // 1 ms .. 2.5 ms
        assert!((quantile(&b, 0.5).unwrap() - 0.00175).abs() < 1e-9);
        assert!((quantile(&b, 1.0).unwrap() - 0.0025).abs() < 1e-9);
        b[BUCKETS - 1] = 90;
        assert_eq!(quantile(&b, 0.99), Some(30.0));
    }
}

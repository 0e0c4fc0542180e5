//! The console's history: one [`Sample`] of what this replica sees every [`INTERVAL`], the last
//! [`SAMPLES`] of them (one hour) kept in memory, so the overview's charts show the last hour
//! however recently the page was opened.
//!
//! **Per replica, and lost on restart.** Each replica samples on its own — GetHealth, run
//! in-process as the console runs it, and its own latency recorder (`crate::latency`) — and
//! keeps its samples in its own memory: two replicas behind a load balancer keep two histories
//! (their throughput and backlog agree, being Redis's; their latency is each one's own calls),
//! and a restarted replica starts an empty one. Nothing of it is written to Redis: a fleet-wide
//! or longer history is Prometheus's job.
//!
//! Bounded whatever the load: a sample holds sums over sources (not one figure per source) and
//! the latency of at most [`TOP_METHODS`] methods, and the ring drops its oldest sample when full.

use std::{collections::VecDeque, sync::Mutex, time::Duration};

use serde::Serialize;

use crate::rpc::latency;

use crate::rpc::latency::{MethodLatency, BUCKETS};

/// How often a sample is taken.
pub(crate) const INTERVAL: Duration = Duration::from_secs(5);
/// How many samples are kept: one hour at [`INTERVAL`].
pub(crate) const SAMPLES: usize = 720;
/// The busiest methods whose latency a sample keeps.
pub(crate) const TOP_METHODS: usize = 5;

/// What the overview charts, at one moment.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Sample {
    /// When it was taken: ms since the Unix epoch by this replica's clock. Only a chart's time
    /// axis; no score, deadline or expiry is ever computed from it.
    pub at_ms: u64,
    /// GetHealth's processing rates summed over every source: completions, claims and
    /// deliveries per minute.
    pub throughput_per_minute: f64,
    /// Items waiting for a worker (GetHealth `size`: due agents, waiting claims, due messages),
    /// summed over every source.
    pub backlog: u64,
    /// Items held (leases, claims, messages in flight), summed over every source.
    pub in_use: u64,
    /// Dead letters, summed over every source.
    pub dead_letters: u64,
    /// The busiest methods since the previous sample (long polls left out, as in the latency
    /// chart: their time is mostly the wait they asked for), busiest first.
    pub latency: Vec<MethodSample>,
}

/// One method's calls since the previous sample.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MethodSample {
    pub method: &'static str,
    pub calls: u64,
    pub p50_seconds: Option<f64>,
    pub p99_seconds: Option<f64>,
}

/// The ring of samples.
pub(crate) struct History {
    samples: Mutex<VecDeque<Sample>>,
    capacity: usize,
}

impl Default for History {
    fn default() -> Self {
        Self::new(SAMPLES)
    }
}

impl History {
    pub(crate) fn new(capacity: usize) -> Self {
        Self { samples: Mutex::new(VecDeque::with_capacity(capacity)), capacity }
    }

    /// Keeps `sample`, dropping the oldest when the ring is full.
    pub(crate) fn push(&self, sample: Sample) {
        let mut samples = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        if samples.len() == self.capacity {
            samples.pop_front();
        }
        samples.push_back(sample);
    }

    /// The samples taken after `after_ms` (0: every one kept), oldest first.
    pub(crate) fn since(&self, after_ms: u64) -> Vec<Sample> {
        let samples = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        samples.iter().filter(|s| s.at_ms > after_ms).cloned().collect()
    }
}

/// The [`TOP_METHODS`] methods with the most calls between two snapshots of
/// `crate::rpc::latency::snapshot` (long polls left out), with their p50 and p99 over those calls.
pub(crate) fn busiest(before: &[MethodLatency], now: &[MethodLatency]) -> Vec<MethodSample> {
    let mut methods: Vec<MethodSample> = now
        .iter()
        .filter(|m| !m.long_poll)
        .filter_map(|m| {
            let earlier = before.iter().find(|b| b.method == m.method && !b.long_poll);
            let delta: [u64; BUCKETS] =
                std::array::from_fn(|i| m.buckets[i].saturating_sub(earlier.map_or(0, |b| b.buckets[i])));
            let calls: u64 = delta.iter().sum();
            (calls > 0).then(|| MethodSample {
                method: m.method,
                calls,
                p50_seconds: latency::quantile(&delta, 0.5),
                p99_seconds: latency::quantile(&delta, 0.99),
            })
        })
        .collect();
    methods.sort_by(|a, b| b.calls.cmp(&a.calls).then(a.method.cmp(b.method)));
    methods.truncate(TOP_METHODS);
    methods
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at_ms: u64) -> Sample {
        Sample { at_ms, throughput_per_minute: 0.0, backlog: at_ms, in_use: 0, dead_letters: 0, latency: Vec::new() }
    }

    #[test]
    fn the_ring_keeps_the_newest_samples_up_to_its_capacity() {
        let history = History::new(3);
        for at in 1..=5 {
            history.push(sample(at));
        }
        let kept: Vec<u64> = history.since(0).iter().map(|s| s.at_ms).collect();
        assert_eq!(kept, [3, 4, 5]);
        let newer: Vec<u64> = history.since(3).iter().map(|s| s.at_ms).collect();
        assert_eq!(newer, [4, 5]);
    }

    #[test]
    fn busiest_counts_the_calls_between_two_snapshots_without_long_polls() {
        let slot = |method, long_poll, first: u64, calls: u64| {
            let mut buckets = [0; BUCKETS];
            buckets[first as usize] = calls;
            MethodLatency { method, long_poll, buckets, sum_seconds: 0.0 }
        };
        let before = [slot("GetAgent", false, 2, 10), slot("Acquire", true, 9, 4)];
        let now = [
            slot("GetAgent", false, 2, 13),
            slot("Acquire", true, 9, 40),
            slot("Complete", false, 3, 7),
            slot("Heartbeat", false, 1, 0),
        ];
        let top = busiest(&before, &now);
        let calls: Vec<(&str, u64)> = top.iter().map(|m| (m.method, m.calls)).collect();
        assert_eq!(calls, [("Complete", 7), ("GetAgent", 3)]);
        assert!(top.iter().all(|m| m.p50_seconds.is_some() && m.p99_seconds.is_some()));
    }
}

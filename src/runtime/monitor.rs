//! The periodic health summary line and watchdog signals:
//!
//! - `redis_stall`: Redis did not answer, answered slower than `health.redis_stall_ms`, or a
//!   circuit breaker is not closed;
//! - `zero_progress`: some queue's oldest due agent has been due for longer than a whole
//!   summary period: nothing is taking work from it;
//! - `capacity_skew`: a queue has due agents while long polls on this replica wait on it: work
//!   and idle workers are not meeting (a wake-up path is broken).
//!
//! Each signal is a gauge (`baton_watchdog{signal}`), and the line logs at WARN while any is up.

use std::{sync::Arc, time::Duration};

use tokio::time::Instant;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::config::Config;

use crate::queues::sweep::QueueStats;

use crate::admin::health;

use crate::store::wake::Wakeups;

use crate::admin::store::Admin;
use crate::store::breaker;

/// What one look at a queue found, with the long polls waiting on it here.
pub(crate) struct QueueLook<'a> {
    pub queue: &'a str,
    pub stats: &'a QueueStats,
    pub waiters: usize,
}

/// The watchdog verdict of one look.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Signals {
    pub redis_stall: bool,
    pub zero_progress: Vec<String>,
    pub capacity_skew: Vec<String>,
}

impl Signals {
    pub(crate) fn healthy(&self) -> bool {
        !self.redis_stall && self.zero_progress.is_empty() && self.capacity_skew.is_empty()
    }
}

/// Judges the watchdog signals; pure, so the rules are tested on their own.
pub(crate) fn assess(
    redis_rtt: Option<Duration>,
    stall: Duration,
    breakers_closed: bool,
    looks: &[QueueLook],
    period: Duration,
) -> Signals {
    let mut s =
        Signals { redis_stall: redis_rtt.is_none_or(|rtt| rtt > stall) || !breakers_closed, ..Default::default() };
    for look in looks {
        if let Some(oldest) = look.stats.oldest_due_ms {
            if look.stats.now_ms - oldest > period.as_millis() as i64 {
                s.zero_progress.push(look.queue.to_string());
            }
        }
        if look.stats.due > 0 && look.waiters > 0 {
            s.capacity_skew.push(look.queue.to_string());
        }
    }
    s
}

pub(crate) fn spawn(
    store: Admin,
    wakeups: Wakeups,
    config: Arc<Config>,
    shutdown: CancellationToken,
    tasks: &TaskTracker,
) {
    if config.health.summary_period_ms == 0 {
        return;
    }
    let period = Duration::from_millis(config.health.summary_period_ms);
    tasks.spawn(async move {
        let mut ticks = tokio::time::interval(period);
        ticks.tick().await;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = ticks.tick() => summarize(&store, &wakeups, &config, period).await,
            }
        }
    });
}

async fn summarize(store: &Admin, wakeups: &Wakeups, config: &Config, period: Duration) {
    let started = Instant::now();
    let rtt = store.ping().await.ok().map(|()| started.elapsed());
    let closed = !store.breaker_open();
    // The breakers not closed, as `node:path=state`; "closed" when none.
    let breakers: Vec<String> = store
        .breaker_states()
        .iter()
        .flat_map(|(node, d, w)| [(node, "dispatch", *d), (node, "writeback", *w)])
        .filter(|(_, _, state)| *state != breaker::State::Closed)
        .map(|(node, path, state)| format!("{node}:{path}={}", state.as_str()))
        .collect();
    let breakers = if breakers.is_empty() { "closed".to_string() } else { breakers.join(",") };
    let checked = match rtt {
        Some(_) => {
            health::check(store, config).await.map_err(|e| tracing::warn!(error = %e, "health check failed")).ok()
        }
        None => None,
    };
    let sources_status = checked.as_ref().map_or(health::Status::Unhealthy, |h| h.status);
    let stats = checked.map(|h| h.queue_stats).unwrap_or_default();
    let looks: Vec<QueueLook> =
        stats.iter().map(|(q, s)| QueueLook { queue: q, stats: s, waiters: wakeups.waiters(q) }).collect();
    let signals = assess(rtt, Duration::from_millis(config.health.redis_stall_ms), closed, &looks, period);

    let mut total = QueueStats::default();
    let mut oldest_overdue_ms = 0;
    for (queue, s) in &stats {
        let overdue = s.oldest_due_ms.map_or(0, |o| s.now_ms - o);
        oldest_overdue_ms = oldest_overdue_ms.max(overdue);
        let release_age = s.oldest_release_ms.map_or(0, |o| (s.now_ms - o).max(0));
        for (name, value) in [
            ("baton_queue_waiting", s.waiting as f64),
            ("baton_queue_due", s.due as f64),
            ("baton_queue_working", s.working as f64),
            ("baton_queue_overdue_leases", s.overdue_leases as f64),
            ("baton_queue_dead_lettered", s.dead_lettered as f64),
            ("baton_queue_oldest_overdue_seconds", overdue as f64 / 1000.0),
            ("baton_queue_blocked", s.blocked as f64),
            ("baton_queue_releasing", s.releasing as f64),
            ("baton_queue_oldest_release_seconds", release_age as f64 / 1000.0),
        ] {
            metrics::gauge!(name, "queue" => queue.clone()).set(value);
        }
        total.waiting += s.waiting;
        total.due += s.due;
        total.working += s.working;
        total.overdue_leases += s.overdue_leases;
        total.dead_lettered += s.dead_lettered;
    }
    metrics::gauge!("baton_watchdog", "signal" => "redis_stall").set(signals.redis_stall as u8 as f64);
    metrics::gauge!("baton_watchdog", "signal" => "zero_progress").set(!signals.zero_progress.is_empty() as u8 as f64);
    metrics::gauge!("baton_watchdog", "signal" => "capacity_skew").set(!signals.capacity_skew.is_empty() as u8 as f64);
    metrics::gauge!("baton_health_degraded").set(!signals.healthy() as u8 as f64);

    let watchdogs = if signals.healthy() { health::Status::Healthy } else { health::Status::Degraded };
    let health = sources_status.max(watchdogs).as_str();
    let rtt_ms = rtt.map_or(-1.0, |d| d.as_secs_f64() * 1000.0);
    let line = format!(
        "Baton health | health={health} | [queues={} waiting={} due={} working={} overdue_leases={} dead_lettered={}] \
         [backlog oldest_overdue={}s] [breakers {breakers}] [redis rtt={rtt_ms:.1}ms] \
         [watchdogs redis_stall={} zero_progress={:?} capacity_skew={:?}]",
        stats.len(),
        total.waiting,
        total.due,
        total.working,
        total.overdue_leases,
        total.dead_lettered,
        oldest_overdue_ms / 1000,
        signals.redis_stall,
        signals.zero_progress,
        signals.capacity_skew,
    );
    if health == "HEALTHY" {
        tracing::info!("{line}");
    } else {
        tracing::warn!("{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(now: i64, due: u64, oldest: Option<i64>) -> QueueStats {
        QueueStats { now_ms: now, waiting: due, due, oldest_due_ms: oldest, ..Default::default() }
    }

    #[test]
    fn watchdog_rules() {
        let period = Duration::from_secs(60);
        let stall = Duration::from_secs(1);
        let fresh = stats(100_000, 3, Some(90_000));
        let stuck = stats(100_000, 3, Some(10_000));
        let looks = [
            QueueLook { queue: "fresh", stats: &fresh, waiters: 0 },
            QueueLook { queue: "stuck", stats: &stuck, waiters: 2 },
        ];
        let s = assess(Some(Duration::from_millis(2)), stall, true, &looks, period);
        assert!(!s.redis_stall);
        assert_eq!(s.zero_progress, ["stuck"]);
        assert_eq!(s.capacity_skew, ["stuck"]);
        assert!(!s.healthy());

        assert!(assess(None, stall, true, &[], period).redis_stall, "no answer");
        assert!(assess(Some(Duration::from_secs(2)), stall, true, &[], period).redis_stall, "slow answer");
        assert!(assess(Some(Duration::from_millis(1)), stall, false, &[], period).redis_stall, "open breaker");
        assert!(assess(Some(Duration::from_millis(1)), stall, true, &looks[..1], period).healthy());
    }
}

//! Health of every queue, pool and receiver: size, oldest and average age, stuck count,
//! dead letters, processing rate, graded HEALTHY / DEGRADED / UNHEALTHY by the thresholds of
//! `config.health`. One check feeds everything that shows health: AdminService.GetHealth, the
//! Redis hash `{registry}:health`, the Prometheus gauges and the periodic log line.

use futures::future::try_join_all;
use serde::{Deserialize, Serialize};

use crate::store::SourceKind;

use crate::config::{Config, HealthConfig};

use crate::error::Result;

use crate::queues::limits::QueueLimits;

use crate::queues::sweep::QueueStats;

use crate::admin::store::Admin;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub(crate) enum Status {
    Healthy,
    Degraded,
    Unhealthy,
}

impl Status {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Status::Healthy => "HEALTHY",
            Status::Degraded => "DEGRADED",
            Status::Unhealthy => "UNHEALTHY",
        }
    }
}

/// One source's figures.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct SourceHealth {
    pub kind: SourceKind,
    pub name: String,
    /// Backlog: due agents (queue), waiting claims (pool), due messages (receiver).
    pub size: u64,
    pub oldest_age_ms: i64,
    pub average_age_ms: i64,
    pub stuck: u64,
    pub dead_lettered: u64,
    /// Completions (queue) or claims (pool) per minute since the previous check.
    pub processing_rate: f64,
    pub status: Status,
    pub reasons: Vec<String>,
    /// Working leases / claimed resources.
    pub in_use: u64,
    /// Waiting agents not yet due / idle resources.
    pub idle: u64,
    /// Paused (AdminService.Pause).
    #[serde(default)]
    pub paused: bool,
    /// A queue's flow-control limits (AdminService.SetLimits).
    #[serde(default)]
    pub limits: QueueLimits,
    /// What a rate-limited queue's bucket holds now.
    #[serde(default)]
    pub rate_tokens: f64,
    /// Agents of a queue finished as expired so far (a counter: `Agent.expire_at`, `ttl`).
    #[serde(default)]
    pub expired: u64,
    /// The counter behind the rate, and when it was read (Redis time), for the next check.
    pub counter: u64,
    pub checked_at_ms: i64,
}

/// The health of everything.
pub(crate) struct Health {
    pub status: Status,
    pub checked_at_ms: i64,
    pub sources: Vec<SourceHealth>,
    /// The raw queue figures, for the watchdogs.
    pub queue_stats: Vec<(String, QueueStats)>,
}

/// Grades a source against the thresholds; fills `status` and `reasons`.
pub(crate) fn grade(h: &mut SourceHealth, t: &HealthConfig) {
    let mut status = Status::Healthy;
    let mut reasons = Vec::new();
    let mut raise = |s: Status, why: String| {
        status = status.max(s);
        reasons.push(why);
    };
    if h.dead_lettered >= t.dead_letter_critical {
        raise(Status::Unhealthy, format!("dead_lettered {} >= {}", h.dead_lettered, t.dead_letter_critical));
    } else if h.dead_lettered >= t.dead_letter_warning {
        raise(Status::Degraded, format!("dead_lettered {} >= {}", h.dead_lettered, t.dead_letter_warning));
    }
    if h.stuck >= t.stuck_critical {
        raise(Status::Unhealthy, format!("stuck {} >= {}", h.stuck, t.stuck_critical));
    } else if h.stuck >= t.stuck_warning {
        raise(Status::Degraded, format!("stuck {} >= {}", h.stuck, t.stuck_warning));
    }
    if h.size > t.backlog_warning {
        raise(Status::Degraded, format!("backlog {} > {}", h.size, t.backlog_warning));
    }
    h.status = status;
    h.reasons = reasons;
}

fn field(kind: SourceKind, name: &str) -> String {
    format!("{}:{name}", kind.as_str())
}

/// Checks every queue, pool and receiver (up to `health.max_queues` of each) and records the
/// result.
pub(crate) async fn check(store: &Admin, config: &Config) -> Result<Health> {
    let t = &config.health;
    // Up to 3 x max_queues reads: asked all at once (pipelined on a multiplexed connection),
    // so the check costs about one round trip, not one per source.
    let n = t.max_queues;
    let (previous, queues, pools, receivers) = tokio::try_join!(
        store.read_health(),
        store.first_registered(SourceKind::Queue, n),
        store.first_registered(SourceKind::Pool, n),
        store.first_registered(SourceKind::Receiver, n),
    )?;
    let (all_queue_stats, all_pool_stats, all_receiver_stats) = tokio::try_join!(
        try_join_all(queues.iter().map(|q| store.queues.queue_stats(q, t.stuck_age_ms))),
        try_join_all(pools.iter().map(|p| store.pools.pool_stats(p, t.stuck_age_ms))),
        try_join_all(receivers.iter().map(|r| store.receivers.receiver_stats(r))),
    )?;
    let rate = |kind: SourceKind, name: &str, counter: u64, now: i64| -> f64 {
        let prev: Option<SourceHealth> = previous.get(&field(kind, name)).and_then(|j| serde_json::from_str(j).ok());
        match prev {
            Some(p) if now > p.checked_at_ms && counter >= p.counter => {
                (counter - p.counter) as f64 * 60_000.0 / (now - p.checked_at_ms) as f64
            }
            _ => 0.0,
        }
    };
    let mut sources = Vec::new();
    let mut queue_stats = Vec::new();
    let mut checked_at_ms = 0;

    for (queue, s) in queues.into_iter().zip(all_queue_stats) {
        checked_at_ms = checked_at_ms.max(s.now_ms);
        let mut h = SourceHealth {
            kind: SourceKind::Queue,
            name: queue.clone(),
            size: s.due,
            oldest_age_ms: s.oldest_due_ms.map_or(0, |o| s.now_ms - o),
            average_age_ms: s.average_overdue_ms,
            stuck: s.stuck,
            dead_lettered: s.dead_lettered,
            processing_rate: rate(SourceKind::Queue, &queue, s.completed, s.now_ms),
            status: Status::Healthy,
            reasons: Vec::new(),
            in_use: s.working,
            idle: s.waiting - s.due,
            paused: s.paused,
            limits: s.limits.clone(),
            rate_tokens: s.tokens.unwrap_or(0.0),
            expired: s.expired,
            counter: s.completed,
            checked_at_ms: s.now_ms,
        };
        grade(&mut h, t);
        sources.push(h);
        queue_stats.push((queue, s));
    }
    for (pool, s) in pools.into_iter().zip(all_pool_stats) {
        checked_at_ms = checked_at_ms.max(s.now_ms);
        let mut h = SourceHealth {
            kind: SourceKind::Pool,
            name: pool.clone(),
            size: s.waiting,
            oldest_age_ms: s.oldest_idle_since_ms.map_or(0, |o| s.now_ms - o),
            average_age_ms: s.average_idle_ms,
            stuck: s.stuck,
            dead_lettered: s.dead_lettered,
            processing_rate: rate(SourceKind::Pool, &pool, s.claimed_total, s.now_ms),
            status: Status::Healthy,
            reasons: Vec::new(),
            in_use: s.claimed,
            idle: s.idle,
            paused: s.paused,
            limits: QueueLimits::default(),
            rate_tokens: 0.0,
            expired: 0,
            counter: s.claimed_total,
            checked_at_ms: s.now_ms,
        };
        grade(&mut h, t);
        sources.push(h);
    }
    for (receiver, s) in receivers.into_iter().zip(all_receiver_stats) {
        checked_at_ms = checked_at_ms.max(s.now_ms);
        let mut h = SourceHealth {
            kind: SourceKind::Receiver,
            name: receiver.clone(),
            size: s.due,
            oldest_age_ms: s.oldest_due_ms.map_or(0, |o| s.now_ms - o),
            average_age_ms: s.average_overdue_ms,
            stuck: s.overdue_in_flight,
            dead_lettered: s.dead_lettered,
            processing_rate: rate(SourceKind::Receiver, &receiver, s.acked, s.now_ms),
            status: Status::Healthy,
            reasons: Vec::new(),
            in_use: s.in_flight,
            idle: s.scheduled - s.due,
            paused: s.paused,
            limits: QueueLimits::default(),
            rate_tokens: 0.0,
            expired: 0,
            counter: s.acked,
            checked_at_ms: s.now_ms,
        };
        grade(&mut h, t);
        sources.push(h);
    }
    let status = sources.iter().map(|s| s.status).max().unwrap_or(Status::Healthy);

    let mut fields =
        vec![("status".to_string(), status.as_str().to_string()), ("checked_at".into(), checked_at_ms.to_string())];
    for h in &sources {
        fields.push((field(h.kind, &h.name), serde_json::to_string(h).expect("serializable")));
        let labels = [("kind", h.kind.as_str().to_string()), ("name", h.name.clone())];
        for (metric, value) in [
            ("baton_source_size", h.size as f64),
            ("baton_source_oldest_age_seconds", h.oldest_age_ms as f64 / 1000.0),
            ("baton_source_average_age_seconds", h.average_age_ms as f64 / 1000.0),
            ("baton_source_stuck", h.stuck as f64),
            ("baton_source_dead_lettered", h.dead_lettered as f64),
            ("baton_source_processing_rate_per_minute", h.processing_rate),
            ("baton_source_status", h.status as u8 as f64),
            ("baton_source_paused", if h.paused { 1.0 } else { 0.0 }),
        ] {
            metrics::gauge!(metric, &labels).set(value);
        }
        if h.kind == SourceKind::Queue {
            let labels = [("queue", h.name.clone())];
            let (rate, burst) = h.limits.rate.map_or((0.0, 0.0), |r| (r.per_second, r.burst as f64));
            for (metric, value) in [
                ("baton_queue_concurrency_limit", h.limits.concurrency.map_or(0.0, f64::from)),
                ("baton_queue_rate_limit_per_second", rate),
                ("baton_queue_rate_limit_burst", burst),
                ("baton_queue_rate_tokens", h.rate_tokens),
                ("baton_queue_key_concurrency_limit", h.limits.key_concurrency.map_or(0.0, f64::from)),
                ("baton_queue_key_rate_limit_per_second", h.limits.key_rate.map_or(0.0, |r| r.per_second)),
            ] {
                metrics::gauge!(metric, &labels).set(value);
            }
        }
    }
    metrics::gauge!("baton_health_status").set(status as u8 as f64);
    // The hash is a copy for Redis-side readers: a full Redis refuses it, and the health is
    // still worth answering (it is how an operator sees the Redis is full).
    if let Err(e) = store.write_health(&fields).await {
        tracing::warn!(error = %e, "could not write the health hash");
    }
    Ok(Health { status, checked_at_ms, sources, queue_stats })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(size: u64, stuck: u64, dead: u64) -> SourceHealth {
        SourceHealth {
            kind: SourceKind::Queue,
            name: "q".into(),
            size,
            oldest_age_ms: 0,
            average_age_ms: 0,
            stuck,
            dead_lettered: dead,
            processing_rate: 0.0,
            status: Status::Healthy,
            reasons: Vec::new(),
            in_use: 0,
            idle: 0,
            paused: false,
            limits: QueueLimits::default(),
            rate_tokens: 0.0,
            expired: 0,
            counter: 0,
            checked_at_ms: 0,
        }
    }

    #[test]
    fn grading_follows_the_thresholds() {
        let t = HealthConfig::default();
        let cases = [
            (source(0, 0, 0), Status::Healthy),
            (source(101, 0, 0), Status::Degraded),
            (source(0, 10, 0), Status::Degraded),
            (source(0, 50, 0), Status::Unhealthy),
            (source(0, 0, 100), Status::Degraded),
            (source(0, 0, 1_000), Status::Unhealthy),
            (source(500, 0, 999), Status::Degraded),
        ];
        for (mut h, want) in cases {
            grade(&mut h, &t);
            assert_eq!(h.status, want, "{h:?}");
            assert_eq!(h.reasons.is_empty(), want == Status::Healthy);
        }
    }
}

//! What the sweepers and the health monitor read and repair: zombie and orphan leases,
//! worker liveness, corrupt names, per-queue counts.

use super::store::calls;
use crate::error::{Error, Result};
use crate::queues::store::Queues;
use crate::store::{reply::Reply, scripts::FromReply, scripts::Int, Path};

/// A lease a sweeper may take back.
#[derive(Clone, Debug)]
pub struct Suspect {
    pub name: String,
    /// Empty when the working entry has no lease record (a repair).
    pub token: String,
    pub deadline_ms: i64,
    pub worker: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReapKind {
    /// Past deadline + threshold without a heartbeat: ends as TIMEOUT, due at once (an attempt).
    Zombie,
    /// Held by a worker silent for the threshold: ends as ORPHANED, due at once (an attempt).
    Orphan,
}

/// What a reap did to one suspect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reaped {
    /// Re-checked and found healthy (heartbeat, completion, worker back).
    Skipped,
    Rescheduled,
    Removed,
    DeadLettered,
    /// A working entry with no lease record, put back in waiting.
    Repaired,
}

/// What findZombies found: the Redis time, and the leases late past the grace.
pub(crate) struct Zombies(pub i64, pub Vec<Suspect>);

impl FromReply for Zombies {
    /// `{ now, (name, token, deadline, worker)* }`
    fn from_reply(mut r: Reply) -> Result<Self> {
        let now = r.next()?;
        let mut out = Vec::new();
        while !r.is_empty() {
            out.push(Suspect { name: r.next()?, token: r.next()?, deadline_ms: r.next()?, worker: r.next()? });
        }
        Ok(Zombies(now, out))
    }
}

/// What reapLeases did: per suspect, in order, then how many outbox entries it wrote.
pub(crate) struct Reaps(pub Vec<Reaped>, pub i64);

impl FromReply for Reaps {
    /// `{ code*, outboxed }`
    fn from_reply(mut r: Reply) -> Result<Self> {
        let mut codes: Vec<i64> = Vec::with_capacity(r.remaining());
        while !r.is_empty() {
            codes.push(r.next()?);
        }
        let outboxed = codes.pop().unwrap_or(0);
        let reaped = codes
            .into_iter()
            .map(|c| match c {
                -1 => Ok(Reaped::Skipped),
                0 => Ok(Reaped::Rescheduled),
                1 => Ok(Reaped::Removed),
                2 => Ok(Reaped::DeadLettered),
                3 => Ok(Reaped::Repaired),
                c => Err(Error::Internal(format!("reapLeases: unknown code {c}"))),
            })
            .collect::<Result<_>>()?;
        Ok(Reaps(reaped, outboxed))
    }
}

impl FromReply for OrphanPage {
    /// `{ now, nextCursor, deadWorkers, (name, token, worker)* }`
    fn from_reply(mut r: Reply) -> Result<Self> {
        let mut page =
            OrphanPage { now_ms: r.next()?, cursor: r.next()?, dead_workers: r.next()?, suspects: Vec::new() };
        while !r.is_empty() {
            page.suspects.push(Suspect { name: r.next()?, token: r.next()?, deadline_ms: 0, worker: r.next()? });
        }
        Ok(page)
    }
}

/// One page of an orphan scan.
pub struct OrphanPage {
    pub now_ms: i64,
    /// "0" when the scan is complete.
    pub cursor: String,
    pub dead_workers: u32,
    pub suspects: Vec<Suspect>,
}

/// A queue's counts.
#[derive(Clone, Debug, Default)]
pub struct QueueStats {
    pub now_ms: i64,
    pub waiting: u64,
    pub due: u64,
    /// Earliest next run among due agents.
    pub oldest_due_ms: Option<i64>,
    pub working: u64,
    /// Leases past their deadline.
    pub overdue_leases: u64,
    pub dead_lettered: u64,
    /// Average time due agents have been due (over at most 1,000).
    pub average_overdue_ms: i64,
    /// Leases past their deadline by more than the stuck age asked for.
    pub stuck: u64,
    /// Successful completions so far (a counter).
    pub completed: u64,
    /// Paused (AdminService.Pause).
    pub paused: bool,
    /// Flow-control limits (AdminService.SetLimits).
    pub limits: crate::queues::limits::QueueLimits,
    /// What the rate limit's bucket holds now (with a rate limit).
    pub tokens: Option<f64>,
    /// The earliest next run after now (an agent waiting for its time).
    pub next_due_ms: Option<i64>,
    /// Agents waiting for their parents (blocked).
    pub blocked: u64,
    /// Finishes whose children are not all released yet (outbox entries).
    pub releasing: u64,
    /// When the oldest of them was written.
    pub oldest_release_ms: Option<i64>,
    /// Agents finished as expired so far (a counter).
    pub expired: u64,
}

impl Queues {
    /// Every registered queue.
    pub async fn queues(&self) -> Result<Vec<String>> {
        let mut conn = self.redis.conn().await?;
        Ok(redis::cmd("SMEMBERS").arg(self.keys.queues()).query_async(&mut conn).await?)
    }

    /// The queues among `queues` whose `working` set holds a lease more than `grace_ms` past
    /// its deadline: the ones a zombie pass must look at.
    pub async fn queues_with_late_leases(&self, queues: &[String], grace_ms: u64) -> Result<Vec<String>> {
        self.queues_with_old_entries(queues, grace_ms, |k| k.working.clone()).await
    }

    /// The queues among `queues` with a worker silent for `threshold_ms`: the ones an orphan
    /// pass must look at.
    pub async fn queues_with_dead_workers(&self, queues: &[String], threshold_ms: u64) -> Result<Vec<String>> {
        self.queues_with_old_entries(queues, threshold_ms, |k| k.workers.clone()).await
    }

    /// Leases more than `grace_ms` past their deadline, earliest first, after the first `skip`.
    pub async fn find_zombies(&self, queue: &str, grace_ms: u64, skip: u32, limit: u32) -> Result<(i64, Vec<Suspect>)> {
        let k = self.keys.queue(queue);
        let call = calls::FindZombies { keys: &k, grace_ms, limit: limit.into(), offset: skip.into() };
        let Zombies(now, out) = self.call(Path::WriteBack, call).await?;
        Ok((now, out))
    }

    /// One page of leases held by workers silent for `threshold_ms`.
    pub async fn find_orphans(&self, queue: &str, threshold_ms: u64, cursor: &str, limit: u32) -> Result<OrphanPage> {
        let k = self.keys.queue(queue);
        self.call(Path::WriteBack, calls::FindOrphans { keys: &k, threshold_ms, cursor, limit: limit.into() }).await
    }

    /// Takes back suspects, each re-checked by the script: (suspect, kind, threshold).
    pub async fn reap(&self, queue: &str, items: &[(&Suspect, ReapKind, u64)]) -> Result<Vec<Reaped>> {
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let (mut k, mut group) = self.grouped_keys(queue);
        let mut tries = 0;
        loop {
            match self.reap_call(queue, items, &k, &group).await {
                Err(e) => match self.group_hint(queue, &e) {
                    Some(super::store::GroupHint::Group(g)) if tries < 3 => {
                        tries += 1;
                        (k, group) = (self.keys.queue(queue).in_group(&self.keys, &g), g);
                    }
                    Some(super::store::GroupHint::Several) if items.len() > 1 => {
                        // Leases granted under several groups: one call per lease.
                        let mut out = Vec::with_capacity(items.len());
                        for one in items.chunks(1) {
                            out.extend(Box::pin(self.reap(queue, one)).await?);
                        }
                        return Ok(out);
                    }
                    _ => return Err(e),
                },
                reaped => return reaped,
            }
        }
    }

    /// One reapLeases call with the keys of one group.
    async fn reap_call(
        &self,
        queue: &str,
        items: &[(&Suspect, ReapKind, u64)],
        k: &crate::store::keys::QueueKeys,
        group: &str,
    ) -> Result<Vec<Reaped>> {
        let (agent, dead_letter) = (&self.policy.agent, &self.policy.dead_letter);
        let call = calls::ReapLeases {
            keys: k,
            group_name: group,
            queue,
            channel: &self.keys.announce_finishes(queue),
            seed: rand::random::<u32>().into(),
            forbidden_ms: agent.permanent_forbidden_backoff_ms,
            throttled_base_ms: agent.throttled_base_ms,
            throttled_multiplier: agent.throttled_multiplier,
            throttled_cap_ms: agent.throttled_cap_ms,
            max_immediate_retries: agent.max_immediate_retries.into(),
            jitter_ratio: agent.jitter_ratio,
            dlq_ttl_ms: dead_letter.ttl_ms,
            dlq_max_entries: dead_letter.max_entries,
            result_ttl_ms: self.policy.results.retention_ms,
            result_max: self.policy.results.max_entries,
            suspects: items
                .iter()
                .map(|(s, kind, threshold)| calls::ReapLeasesSuspects {
                    name: &s.name,
                    token: &s.token,
                    kind: match kind {
                        ReapKind::Zombie => "ZOMBIE",
                        ReapKind::Orphan => "ORPHAN",
                    },
                    threshold_ms: *threshold,
                    _item: Default::default(),
                })
                .collect(),
        };
        let Reaps(reaped, outboxed) = self.call(Path::WriteBack, call).await?;
        self.outboxed(queue, outboxed);
        Ok(reaped)
    }

    /// Drops dead workers that hold nothing; returns how many.
    pub async fn forget_workers(&self, queue: &str, threshold_ms: u64, limit: u32) -> Result<u64> {
        let k = self.keys.queue(queue);
        let Int(forgotten) =
            self.call(Path::WriteBack, calls::ForgetWorkers { keys: &k, threshold_ms, limit: limit.into() }).await?;
        Ok(forgotten as u64)
    }

    /// One page of the numeric-name repair over `set` ("waiting" or "working").
    pub async fn repair_names(&self, queue: &str, set: &str, cursor: &str, limit: u32) -> Result<(String, u64)> {
        let k = self.keys.queue(queue);
        let call = super::store::calls::RepairNames { keys: &k, set, cursor, limit: limit.into() };
        let Repaired(next, removed) = self.call(Path::WriteBack, call).await?;
        Ok((next, removed))
    }

    /// A queue's counts; `stuck_age_ms` decides which leases count as stuck.
    pub async fn queue_stats(&self, queue: &str, stuck_age_ms: u64) -> Result<QueueStats> {
        let k = self.keys.queue(queue);
        self.call(Path::Dispatch, super::store::calls::QueueStats { keys: &k, stuck_age_ms }).await
    }

    /// Counts one sweep pass by this replica (observable with HGETALL on `Keys::sweeps`).
    pub async fn record_sweep(&self, sweep: &str, replica: &str) -> Result<()> {
        let mut conn = self.redis.conn().await?;
        redis::cmd("HINCRBY")
            .arg(self.keys.sweeps())
            .arg(format!("{sweep}:{replica}"))
            .arg(1)
            .query_async::<i64>(&mut conn)
            .await?;
        Ok(())
    }
}

impl crate::store::scripts::FromReply for QueueStats {
    /// See lua/queues/queueStats-7.lua.
    fn from_reply(mut r: Reply) -> Result<Self> {
        let now_ms = r.next()?;
        let waiting = r.next()?;
        let due = r.next()?;
        let oldest: i64 = r.next()?;
        let mut stats = QueueStats {
            now_ms,
            waiting,
            due,
            oldest_due_ms: (oldest >= 0).then_some(oldest),
            working: r.next()?,
            overdue_leases: r.next()?,
            dead_lettered: r.next()?,
            average_overdue_ms: r.next()?,
            stuck: r.next()?,
            completed: r.next()?,
            paused: r.next::<i64>()? == 1,
            limits: {
                let (concurrency, rate, burst): (String, String, String) = (r.next()?, r.next()?, r.next()?);
                let (key_concurrency, key_rate, key_burst): (String, String, String) =
                    (r.next()?, r.next()?, r.next()?);
                let number = |what: &str, s: &str| {
                    s.parse::<f64>().map_err(|_| Error::Internal(format!("queueStats: {what} {s:?}")))
                };
                let count = |what: &str, s: &str| -> Result<Option<u32>> {
                    Ok(if s.is_empty() { None } else { Some(number(what, s)? as u32) })
                };
                let bucket = |rate: &str, burst: &str| -> Result<Option<crate::queues::limits::RateLimit>> {
                    Ok(if rate.is_empty() {
                        None
                    } else {
                        Some(crate::queues::limits::RateLimit {
                            per_second: number("rate", rate)?,
                            burst: number("burst", burst)? as u32,
                        })
                    })
                };
                crate::queues::limits::QueueLimits {
                    concurrency: count("concurrency", &concurrency)?,
                    rate: bucket(&rate, &burst)?,
                    key_concurrency: count("key_concurrency", &key_concurrency)?,
                    key_rate: bucket(&key_rate, &key_burst)?,
                    priority_aging_ms: None, // the last value of the reply, read below
                    group: None,             // read below
                }
            },
            tokens: {
                let t: String = r.next()?;
                t.parse().ok()
            },
            next_due_ms: None, // read below
            blocked: 0,
            releasing: 0,
            oldest_release_ms: None,
            expired: 0,
        };
        let aging: String = r.next()?;
        if !aging.is_empty() {
            let ms = aging.parse().map_err(|_| Error::Internal(format!("queueStats: priority_aging {aging:?}")))?;
            stats.limits.priority_aging_ms = Some(ms);
        }
        let next: i64 = r.next()?;
        stats.next_due_ms = (next >= 0).then_some(next);
        stats.blocked = r.next()?;
        stats.releasing = r.next()?;
        let oldest: i64 = r.next()?;
        stats.oldest_release_ms = (oldest >= 0).then_some(oldest);
        stats.expired = r.next()?;
        let group: String = r.next()?;
        stats.limits.group = (!group.is_empty()).then_some(group);
        Ok(stats)
    }
}

/// One step of repairNames: the next cursor ("0": done) and how many agents it removed.
pub(crate) struct Repaired(String, u64);

impl crate::store::scripts::FromReply for Repaired {
    fn from_reply(mut r: Reply) -> Result<Self> {
        Ok(Repaired(r.next()?, r.next()?))
    }
}

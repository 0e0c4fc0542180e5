//! Server-owned cleanup, run by one replica at a time (the holder of the `baton-sweeper`
//! election, or every replica with `orphan_cleanup.force_all_pods`):
//!
//! - the zombie sweep takes back leases past deadline + threshold (TIMEOUT: an attempt, due
//!   again at once), with a longer threshold for agents matching
//!   `zombie_cleanup.exceptional_pattern`;
//! - with it, the expiry step finishes as expired the agents whose expiry (`Agent.expire_at`,
//!   `ttl`) came before any run started, from the `expiring` sets of the queues that have
//!   them, at most `PAGE` per script call (`queues::expiry`), and the timers step times out the
//!   waits whose time came (`WaitFor.until`, `timeout`), from the `waitat` sets of the queues
//!   that have them, at most `PAGE` per script call (`queues::signals`);
//! - the orphan sweep takes back, at once, the leases of workers silent for the orphan
//!   threshold (ORPHANED, due again immediately) and gives back pool resources handed to
//!   claims that were never picked up (their replica died); every `repair_interval_ms` it also
//!   repairs working entries with no lease record and names that are only digits (a bounded
//!   slice of each queue per pass, `runtime::names`), and forgets
//!   dead workers that hold nothing. For one threshold after this replica starts, and after
//!   Redis failed it, it declares nobody dead: workers whose heartbeats could not get through
//!   are heard first;
//! - the purge (`crate::purge`) dead-letters, requeues or removes stale entries; before it,
//!   and when this replica first sweeps, queues, pools and receivers with data but no registry
//!   entry are found and registered (`Core::discover`).
//!
//! Each pass walks the index of active queues (`store::active`: the queues that may hold leases
//! or workers), in pages, within its run budget; a census adds what the index missed, a slice
//! of the registry per repair pass, so an idle queue costs a pass nothing. Every take-back is
//! re-checked inside its script, so a worker that heartbeats meanwhile keeps its lease.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use regex::Regex;
use tokio::time::Instant;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::config::Config;

use crate::error::Result;

use crate::queues::sweep::{ReapKind, Reaped, Suspect};

use crate::runtime::leadership::Leadership;
use crate::runtime::names::NameRepair;

use crate::store::wake::Wakeups;

use crate::admin::store::Admin;
use crate::elections::store::Elections;

/// The election that picks the sweeping replica; visible through LeaderService.GetLeader.
pub(crate) const SWEEPER_ELECTION: &str = "baton-sweeper";

/// Entries read per script call.
const PAGE: u32 = 200;

/// Registered queues the census looks at per repair pass (an SSCAN hint).
const CENSUS: u32 = 500;

/// Starts the sweepers on `tasks`; they stop (and resign) on `shutdown`.
pub(crate) fn spawn(
    store: Admin,
    elections: Elections,
    wakeups: Wakeups,
    config: Arc<Config>,
    shutdown: CancellationToken,
    tasks: &TaskTracker,
) {
    if !config.zombie_cleanup.enabled && !config.orphan_cleanup.enabled && !config.purge.enabled {
        return;
    }
    let replica = config.replica();
    let leadership = if config.orphan_cleanup.force_all_pods {
        None
    } else {
        let ttl = Duration::from_millis(config.orphan_cleanup.leadership_ttl_ms);
        let (leadership, task) =
            Leadership::spawn(elections, wakeups, SWEEPER_ELECTION.into(), replica.clone(), ttl, shutdown.clone());
        tasks.spawn(async move {
            let _ = task.await;
        });
        Some(leadership)
    };
    let threshold = Duration::from_millis(config.orphan_cleanup.threshold_ms);
    let sweeper = Arc::new(Sweeper {
        store,
        config: config.clone(),
        replica,
        leadership,
        // Workers could not reach a Baton that was not running: hear from them first.
        quiet_until: Mutex::new(Instant::now() + threshold),
        repairs_at: Mutex::new(Instant::now()),
        discovered: std::sync::atomic::AtomicBool::new(false),
        censused: std::sync::atomic::AtomicBool::new(false),
        census_cursor: Mutex::new("0".into()),
        names: NameRepair::default(),
        exceptional: match config.zombie_cleanup.exceptional_pattern.as_str() {
            "" => None,
            p => Some(Regex::new(p).expect("checked by Config::check")),
        },
    });
    if config.zombie_cleanup.enabled {
        let s = sweeper.clone();
        let every = Duration::from_millis(config.zombie_cleanup.interval_ms);
        tasks.spawn(every_tick(every, shutdown.clone(), move || {
            let s = s.clone();
            async move { s.zombie_pass().await }
        }));
    }
    if config.orphan_cleanup.enabled {
        let s = sweeper.clone();
        let every = Duration::from_millis(config.orphan_cleanup.interval_ms);
        tasks.spawn(every_tick(every, shutdown.clone(), move || {
            let s = s.clone();
            async move { s.orphan_pass().await }
        }));
    }
    if config.purge.enabled {
        let s = sweeper.clone();
        let every = Duration::from_millis(config.purge.interval_ms);
        tasks.spawn(every_tick(every, shutdown, move || {
            let s = s.clone();
            async move { s.purge_pass().await }
        }));
    }
}

/// Runs `pass` every `period` until `shutdown`.
async fn every_tick<F, Fut>(period: Duration, shutdown: CancellationToken, pass: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticks.tick() => pass().await,
        }
    }
}

struct Sweeper {
    store: Admin,
    config: Arc<Config>,
    replica: String,
    /// None: every replica sweeps (`force_all_pods`).
    leadership: Option<Leadership>,
    exceptional: Option<Regex>,
    /// No worker is declared dead before this: after this replica starts, and after Redis
    /// failed it (a pass failed or a breaker opened), workers whose heartbeats failed meanwhile
    /// get one orphan threshold to be heard again.
    quiet_until: Mutex<Instant>,
    /// When the orphan pass next repairs names and forgets dead workers.
    repairs_at: Mutex<Instant>,
    /// Whether this replica has looked for unregistered queues, pools and receivers since it
    /// started (it does once when it first sweeps, and at every purge pass).
    discovered: std::sync::atomic::AtomicBool,
    /// Whether this replica's census has walked every queue once (it does at its first repair).
    censused: std::sync::atomic::AtomicBool,
    /// Where the census goes on (an SSCAN cursor of the queue registry; "0": from the start).
    census_cursor: Mutex<String>,
    /// Where each queue's repair of numeric-only names goes on.
    names: NameRepair,
}

/// Counts of one pass.
#[derive(Default, Debug)]
struct Tally {
    queues: usize,
    reaped: u64,
    dead_lettered: u64,
    repaired: u64,
    skipped: u64,
    /// Agents finished as expired (`expire`).
    expired: u64,
    /// Waits timed out (`fire_timers`).
    timed_out: u64,
}

impl Tally {
    fn add(&mut self, outcomes: &[Reaped]) {
        for o in outcomes {
            match o {
                Reaped::Skipped => self.skipped += 1,
                Reaped::Rescheduled | Reaped::Removed => self.reaped += 1,
                Reaped::DeadLettered => self.dead_lettered += 1,
                Reaped::Repaired => self.repaired += 1,
            }
        }
    }
}

impl Sweeper {
    fn on_duty(&self) -> bool {
        self.leadership.as_ref().is_none_or(Leadership::is_leader)
    }

    fn budget(ms: u64) -> Option<Instant> {
        (ms > 0).then(|| Instant::now() + Duration::from_millis(ms))
    }

    async fn zombie_pass(&self) {
        if !self.on_duty() {
            return;
        }
        let budget = Self::budget(self.config.zombie_cleanup.run_budget_ms);
        let mut tally = Tally::default();
        let mut result = self.zombies(budget, &mut tally).await;
        if result.is_ok() {
            result = self.expire(budget, &mut tally).await;
        }
        if result.is_ok() {
            result = self.fire_timers(budget, &mut tally).await;
        }
        self.finish("zombie", result, tally).await;
    }

    async fn orphan_pass(&self) {
        if !self.on_duty() {
            return;
        }
        if !self.discovered.swap(true, std::sync::atomic::Ordering::Relaxed) {
            self.discover().await;
        }
        let threshold = Duration::from_millis(self.config.orphan_cleanup.threshold_ms);
        if self.store.breaker_open() {
            *self.quiet_until.lock().expect("sweeper lock") = Instant::now() + threshold;
            return;
        }
        let budget = Self::budget(self.config.orphan_cleanup.run_budget_ms);
        let mut tally = Tally::default();
        let result = self.orphans(budget, &mut tally).await;
        if result.is_err() {
            *self.quiet_until.lock().expect("sweeper lock") = Instant::now() + threshold;
        }
        self.finish("orphan", result, tally).await;
    }

    /// Registers queues, pools and receivers that have data but no registry entry, so every
    /// sweep and the health see them (and elections with a term but no registry entry, so
    /// ListElections does).
    async fn discover(&self) {
        match self.store.discover().await {
            Ok(found) if !found.is_empty() => {
                tracing::warn!(?found, "registered sources that had data but no registry entry")
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "could not look for unregistered sources; the next purge pass retries")
            }
        }
    }

    async fn purge_pass(&self) {
        if !self.on_duty() {
            return;
        }
        self.discover().await;
        let result = crate::admin::purge::run(&self.store, &self.config, self.config.purge.dry_run, |_, _| true)
            .await
            .map(|found| {
                if !found.is_empty() {
                    tracing::info!(found = found.len(), dry_run = self.config.purge.dry_run, "purge pass");
                }
            });
        self.finish("purge", result, Tally::default()).await;
    }

    async fn finish(&self, sweep: &'static str, result: Result<()>, tally: Tally) {
        metrics::counter!("baton_sweeper_passes_total", "sweep" => sweep).increment(1);
        metrics::counter!("baton_sweeper_reaped_total", "sweep" => sweep).increment(tally.reaped + tally.dead_lettered);
        metrics::counter!("baton_sweeper_repaired_total", "sweep" => sweep).increment(tally.repaired);
        match result {
            Ok(()) => {
                if tally.reaped + tally.dead_lettered + tally.repaired + tally.expired + tally.timed_out > 0 {
                    tracing::info!(sweep, ?tally, "sweep took back leases");
                } else {
                    tracing::debug!(sweep, ?tally, "sweep pass");
                }
            }
            Err(e) => tracing::warn!(sweep, error = %e, ?tally, "sweep pass failed; the next one retries"),
        }
        if let Err(e) = self.store.queues.record_sweep(sweep, &self.replica).await {
            tracing::debug!(sweep, error = %e, "could not record the sweep pass");
        }
    }

    fn zombie_threshold(&self, name: &str) -> u64 {
        let z = &self.config.zombie_cleanup;
        match &self.exceptional {
            Some(re) if re.is_match(name) => z.exceptional_threshold_ms,
            _ => z.threshold_ms,
        }
    }

    async fn zombies(&self, budget: Option<Instant>, tally: &mut Tally) -> Result<()> {
        let z = &self.config.zombie_cleanup;
        let grace = match &self.exceptional {
            Some(_) => z.threshold_ms.min(z.exceptional_threshold_ms),
            None => z.threshold_ms,
        };
        let (_, active) = self.store.queues.active_queues().await?;
        let queues: Vec<String> = active.into_iter().map(|a| a.queue).collect();
        tally.queues += queues.len();
        for queue in self.store.queues.queues_with_late_leases(&queues, grace).await? {
            // Entries seen and left alone (a longer threshold not reached yet) stay in
            // `working`: the next page starts after them, so they can never stall the pass.
            let mut left_alone = 0;
            loop {
                if budget.is_some_and(|b| Instant::now() >= b) || !self.on_duty() {
                    return Ok(());
                }
                let (now, suspects) = self.store.queues.find_zombies(&queue, grace, left_alone, PAGE).await?;
                let full_page = suspects.len() == PAGE as usize;
                let due: Vec<(&Suspect, ReapKind, u64)> = suspects
                    .iter()
                    .filter_map(|s| {
                        let threshold = self.zombie_threshold(&s.name);
                        (s.token.is_empty() || s.deadline_ms + (threshold as i64) < now).then_some((
                            s,
                            ReapKind::Zombie,
                            threshold,
                        ))
                    })
                    .collect();
                let reaped = self.store.queues.reap(&queue, &due).await?;
                // A reap that found the lease healthy after all may leave it in range too.
                let kept = reaped.iter().filter(|r| **r == Reaped::Skipped).count();
                left_alone += (suspects.len() - due.len() + kept) as u32;
                tally.add(&reaped);
                if !full_page {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Expires the agents whose expiry came before any run started, queue by queue, a page
    /// per script call, within the pass's budget.
    async fn expire(&self, budget: Option<Instant>, tally: &mut Tally) -> Result<()> {
        for queue in self.store.queues.queues_with_expiring().await? {
            loop {
                if budget.is_some_and(|b| Instant::now() >= b) || !self.on_duty() {
                    return Ok(());
                }
                let (expired, taken) = self.store.queues.expire_due(&queue, PAGE).await?;
                tally.expired += expired;
                if taken < u64::from(PAGE) {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Times out the waits whose time came (durable timers), queue by queue, a page per script
    /// call, within the pass's budget.
    async fn fire_timers(&self, budget: Option<Instant>, tally: &mut Tally) -> Result<()> {
        for queue in self.store.queues.queues_with_timers().await? {
            loop {
                if budget.is_some_and(|b| Instant::now() >= b) || !self.on_duty() {
                    return Ok(());
                }
                let (fired, taken) = self.store.queues.fire_timers(&queue, PAGE).await?;
                tally.timed_out += fired;
                if taken < u64::from(PAGE) {
                    break;
                }
            }
        }
        Ok(())
    }

    async fn orphans(&self, budget: Option<Instant>, tally: &mut Tally) -> Result<()> {
        let o = &self.config.orphan_cleanup;
        let reap = Instant::now() >= *self.quiet_until.lock().expect("sweeper lock");
        let repair = {
            let mut at = self.repairs_at.lock().expect("sweeper lock");
            let due = Instant::now() >= *at;
            if due {
                *at = Instant::now() + Duration::from_millis(o.repair_interval_ms);
            }
            due
        };
        // The census's slice of the registry, repaired below with the active queues.
        let censused = if repair { self.census().await? } else { Vec::new() };
        let (now_ms, active) = self.store.queues.active_queues().await?;
        let queues: Vec<String> = active.iter().map(|a| a.queue.clone()).collect();
        tally.queues += queues.len();
        let suspects = match reap {
            true => self.store.queues.queues_with_dead_workers(&queues, o.threshold_ms).await?,
            false => Vec::new(),
        };
        for queue in &suspects {
            let mut cursor = "0".to_string();
            loop {
                if budget.is_some_and(|b| Instant::now() >= b) || !self.on_duty() {
                    return Ok(());
                }
                let page = self.store.queues.find_orphans(queue, o.threshold_ms, &cursor, PAGE).await?;
                let items: Vec<_> = page.suspects.iter().map(|s| (s, ReapKind::Orphan, o.threshold_ms)).collect();
                tally.add(&self.store.queues.reap(queue, &items).await?);
                cursor = page.cursor;
                if cursor == "0" {
                    break;
                }
            }
        }
        // Repairs, every `repair_interval_ms`: dead workers in every active queue; numeric-only
        // names in those and in the census's slice, each queue once (a bounded slice of it).
        for queue in queues.iter().filter(|_| repair) {
            if budget.is_some_and(|b| Instant::now() >= b) || !self.on_duty() {
                return Ok(());
            }
            // Reads every lease record of the queue in one script: skipped above 1,000 of them, so the
            // call stays short; dead workers are forgotten once the queue holds fewer.
            self.store.queues.forget_workers(queue, o.threshold_ms, 1_000).await?;
        }
        if repair && o.remove_numeric_only_agents {
            let mut seen = std::collections::HashSet::new();
            for queue in censused.iter().chain(&queues).filter(|q| seen.insert(q.as_str())) {
                if budget.is_some_and(|b| Instant::now() >= b) || !self.on_duty() {
                    return Ok(());
                }
                tally.repaired += self.names.step(&self.store.queues, queue, budget).await?;
            }
        }
        if repair {
            let retired = self.store.queues.retire_idle(now_ms, &active).await?;
            if retired > 0 {
                tracing::debug!(retired, "queues left the index of active queues");
            }
        }
        // Resources handed to claims whose replica died before picking them up.
        let pools = self.store.pools.pools().await?;
        for pool in self.store.pools.pools_with_assignments(&pools).await? {
            if budget.is_some_and(|b| Instant::now() >= b) || !self.on_duty() {
                return Ok(());
            }
            tally.repaired +=
                self.store.pools.reclaim_assignments(&pool, self.config.pool.assignment_grace_ms, PAGE).await?;
        }
        Ok(())
    }

    /// The census (see `store::active`): one slice of about [`CENSUS`] registered queues per
    /// repair pass, marking those that hold leases or workers, and returned for the repair of
    /// their names (`NameRepair`: a bounded slice of each); every queue when this replica first
    /// sweeps. So what the index does not know of yet (data from
    /// before it, entries written behind Baton's back) is found within a bounded number of
    /// passes, at a cost per pass that does not grow with the number of queues.
    async fn census(&self) -> Result<Vec<String>> {
        let mut found = Vec::new();
        let whole = !self.censused.swap(true, std::sync::atomic::Ordering::Relaxed);
        loop {
            let cursor = self.census_cursor.lock().expect("sweeper lock").clone();
            let (next, queues) = match self.store.queues.census(&cursor, CENSUS).await {
                Ok(page) => page,
                Err(e) => {
                    // Walked again from the start next time.
                    self.censused.store(!whole, std::sync::atomic::Ordering::Relaxed);
                    return Err(e);
                }
            };
            *self.census_cursor.lock().expect("sweeper lock") = next.clone();
            found.extend(queues);
            if next == "0" || !whole {
                return Ok(found);
            }
        }
    }
}

//! Long-poll dispatch: an Acquire with `wait` sleeps until the earliest waiting entry is due
//! (a timer on the score the acquire script returned) or a wake-up arrives for its queue
//! (another call, on any replica, made something due earlier), or the wait or the server ends.
//! It never polls Redis on a timer of its own. A waiting Campaign works the same way on
//! leadership events, and a waiting Claim on the hand-over of a resource to it.

use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::store::SourceKind;

use crate::elections::store::Campaigned;

use crate::error::{Error, Result};

use crate::pools::store::{ClaimEnd, ClaimStart, ClaimTerms, Claimed, Pickup};

use crate::queues::store::Lease;

use crate::store::wake::Wakeups;

use crate::store::Store;

use crate::store::keys::ChannelKind;

/// An Acquire that may wait. Like a Claim, it runs in a task of its own: when its caller goes
/// away (tonic drops the call of a client that cancelled or disconnected), the task stops
/// waiting, and leases granted in that instant, which nobody would ever see, are released at
/// once instead of waiting for a sweeper.
pub async fn acquire(
    store: &Store,
    wakeups: &Wakeups,
    shutdown: &CancellationToken,
    queue: &str,
    worker: &str,
    max: u32,
    wait: Duration,
) -> Result<Vec<Lease>> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let (store, wakeups, shutdown) = (store.clone(), wakeups.clone(), shutdown.clone());
    let (queue, worker) = (queue.to_string(), worker.to_string());
    tokio::spawn(async move {
        let mut tx = tx;
        let result = acquire_task(&store, &wakeups, &shutdown, &queue, &worker, max, wait, &mut tx).await;
        if let Err(Ok(leases)) = tx.send(result) {
            for l in leases {
                tracing::info!(queue, agent = l.name, "caller left before its Acquire was answered; releasing");
                if let Err(e) = store.release(&queue, &l.name, l.token, 0).await {
                    tracing::warn!(queue, agent = l.name, error = %e, "could not release; the sweepers will");
                }
            }
        }
    });
    rx.await.map_err(|_| Error::Internal("acquire task ended without an answer".into()))?
}

#[allow(clippy::too_many_arguments)]
async fn acquire_task(
    store: &Store,
    wakeups: &Wakeups,
    shutdown: &CancellationToken,
    queue: &str,
    worker: &str,
    max: u32,
    wait: Duration,
    caller: &mut tokio::sync::oneshot::Sender<Result<Vec<Lease>>>,
) -> Result<Vec<Lease>> {
    // With a breaker open the acquire fails fast (CIRCUIT_OPEN) instead of waiting on a
    // subscription Redis cannot confirm.
    let shards = store.shard_names(SourceKind::Queue, queue);
    if wait.is_zero() || shards.iter().all(|s| store.known_down(&store.keys().queue(s).waiting)) {
        return Ok(store.acquire(queue, worker, max).await?.leases);
    }
    let until = Instant::now() + wait;
    let waiter = wakeups.waiter(ChannelKind::Queue, queue, &shards).await?;
    let notify = &waiter.notify;
    async {
        loop {
            // Registered before the acquire, so a wake-up between the acquire and the sleep
            // is not missed.
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let got = store.acquire(queue, worker, max).await?;
            if got.leases.len() == max as usize {
                // Full: more may be due; wake the next waiter (see `Wakeups::wake`).
                notify.notify_one();
            }
            if !got.leases.is_empty() || shutdown.is_cancelled() {
                return Ok(got.leases);
            }
            let remaining = until.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Ok(Vec::new());
            }
            let timer = match got.next_due_ms {
                Some(due) => Duration::from_millis((due - got.now_ms).max(1) as u64).min(remaining),
                None => remaining,
            };
            tokio::select! {
                _ = &mut notified => {}
                _ = tokio::time::sleep(timer) => {}
                _ = shutdown.cancelled() => return Ok(Vec::new()),
                _ = caller.closed() => return Ok(Vec::new()),
            }
        }
    }
    .await
}

/// A Campaign that may wait: re-campaigns when the leader's term would expire (a timer on the
/// expiry Redis returned) or when a leadership event for the election arrives from any replica,
/// until elected, the wait ends, or the server shuts down. It runs in a task of its own, so a
/// term won in the instant its caller went away is resigned at once rather than held for a ttl.
pub async fn campaign(
    store: &Store,
    wakeups: &Wakeups,
    shutdown: &CancellationToken,
    election: &str,
    candidate: &str,
    ttl_ms: u64,
    wait: Duration,
) -> Result<Campaigned> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let (store, wakeups, shutdown) = (store.clone(), wakeups.clone(), shutdown.clone());
    let (election, candidate) = (election.to_string(), candidate.to_string());
    tokio::spawn(async move {
        let mut tx = tx;
        let result = campaign_task(&store, &wakeups, &shutdown, &election, &candidate, ttl_ms, wait, &mut tx).await;
        if let Err(Ok(got)) = tx.send(result) {
            if got.is_leader && got.new_term {
                tracing::info!(election, candidate, "caller left before its Campaign was answered; resigning");
                let _ = store.resign(&election, &candidate, got.term.token).await;
            }
        }
    });
    rx.await.map_err(|_| Error::Internal("campaign task ended without an answer".into()))?
}

#[allow(clippy::too_many_arguments)]
async fn campaign_task(
    store: &Store,
    wakeups: &Wakeups,
    shutdown: &CancellationToken,
    election: &str,
    candidate: &str,
    ttl_ms: u64,
    wait: Duration,
    caller: &mut tokio::sync::oneshot::Sender<Result<Campaigned>>,
) -> Result<Campaigned> {
    // Subscribed before the first campaign, so a resignation right after it is not missed.
    let mut events = wakeups.election(election).await?;
    let until = Instant::now() + wait;
    loop {
        let got = store.campaign(election, candidate, ttl_ms).await?;
        let remaining = until.saturating_duration_since(Instant::now());
        if got.is_leader || remaining.is_zero() || shutdown.is_cancelled() {
            return Ok(got);
        }
        // One millisecond past the expiry, so the next campaign finds it expired.
        let timer = Duration::from_millis((got.term.expires_ms - got.now_ms).max(0) as u64 + 1).min(remaining);
        tokio::select! {
            _ = events.recv() => {}
            _ = tokio::time::sleep(timer) => {}
            _ = shutdown.cancelled() => return Ok(got),
            _ = caller.closed() => return Ok(got),
        }
    }
}

/// A Claim that may wait in the pool's line: woken when the claim is handed a resource (on
/// any replica's Offer or Return), or when the wait or the server ends, then settled in Redis.
///
/// The claim runs in a task of its own, so no Redis step is ever cut in half when the caller
/// goes away (tonic drops the call when a client cancels or disconnects): the task sees the
/// caller gone, leaves the line, and gives back any resource it got, to the front of the ready
/// queue (or to the next claim in line).
#[allow(clippy::too_many_arguments)]
pub async fn claim(
    store: &Store,
    wakeups: &Wakeups,
    shutdown: &CancellationToken,
    pool: &str,
    claimer: &str,
    attrs: &std::collections::BTreeMap<String, String>,
    terms: &ClaimTerms,
    wait: Duration,
    line: (u32, u64),
) -> Result<Option<Claimed>> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let (store, wakeups, shutdown) = (store.clone(), wakeups.clone(), shutdown.clone());
    let (pool, claimer, attrs, terms) = (pool.to_string(), claimer.to_string(), attrs.clone(), terms.clone());
    tokio::spawn(async move {
        let mut tx = tx;
        let result =
            claim_task(&store, &wakeups, &shutdown, &pool, &claimer, &attrs, &terms, wait, line, &mut tx).await;
        if let Err(Ok(Some(c))) = tx.send(result) {
            tracing::info!(
                pool,
                resource = c.id,
                "caller left before its claim was answered; giving the resource back"
            );
            // Its remembered answer goes with it: a retry of this Claim claims afresh.
            let field = terms.field(&claimer);
            if let Err(e) = store.end_claim(&pool, &c.id, c.token, ClaimEnd::GiveBack, "", &field).await {
                tracing::warn!(pool, resource = c.id, error = %e, "could not give the resource back");
            }
        }
    });
    rx.await.map_err(|_| Error::Internal("claim task ended without an answer".into()))?
}

#[allow(clippy::too_many_arguments)]
async fn claim_task(
    store: &Store,
    wakeups: &Wakeups,
    shutdown: &CancellationToken,
    pool: &str,
    claimer: &str,
    attrs: &std::collections::BTreeMap<String, String>,
    terms: &ClaimTerms,
    wait: Duration,
    line: (u32, u64),
    caller: &mut tokio::sync::oneshot::Sender<Result<Option<Claimed>>>,
) -> Result<Option<Claimed>> {
    let (max_line, pushback_ms) = line;
    let wait_ms = if shutdown.is_cancelled() { 0 } else { wait.as_millis() as u64 };
    // Followed before the claim may join a line; the first peek below finds a hand-over that
    // came before the claim's notifier existed. A claim in one shard's line of a sharded pool
    // also hears the other shards' changes, to take an idle resource there.
    let shards = store.shard_names(SourceKind::Pool, pool);
    let elsewhere = if wait_ms > 0 { Some(wakeups.waiter(ChannelKind::Pool, pool, &shards).await?) } else { None };
    let (line_pool, claim_id) = match store.claim(pool, claimer, attrs, wait_ms, max_line, terms).await? {
        ClaimStart::Claimed(c) => return Ok(Some(c)),
        ClaimStart::Nothing => return Ok(None),
        ClaimStart::LineFull => {
            return Err(Error::Exhausted {
                what: format!("the waiting line of pool {pool}"),
                retry_after_ms: pushback_ms,
            })
        }
        ClaimStart::Waiting { pool: line_pool, claim_id, scale_up } => {
            if scale_up {
                tracing::info!(pool, "scale-up signal raised: claims wait and nothing is idle");
                metrics::counter!("baton_pool_scale_up_signals_total", "pool" => pool.to_string()).increment(1);
            }
            (line_pool, claim_id)
        }
    };
    let line = line_pool.as_str();
    let waiter = wakeups.claim(line, &claim_id);
    let notify = &waiter.notify;
    // Wakes when another shard of a sharded pool changed (never for one shard).
    let other_shards = || async {
        match &elsewhere {
            Some(w) if shards.len() > 1 => w.notify.notified().await,
            _ => std::future::pending().await,
        }
    };
    let until = Instant::now() + wait;
    let (field, hold_ms) = (terms.field(claimer), terms.hold_ms);
    let pickup = |mode| store.pickup(line, &claim_id, mode, &field, hold_ms);
    let result = async {
        loop {
            // The notifier keeps a permit, so a hand-over between this peek and the wait still
            // wakes it.
            if let Some(c) = pickup(Pickup::Peek).await? {
                return Ok(Some(c));
            }
            tokio::select! {
                _ = notify.notified() => {}
                _ = other_shards() => {
                    if let Some(c) = store.claim_elsewhere(pool, line, claimer, attrs, terms).await? {
                        // More may be idle there: pass the wake-up on to the next claim.
                        if let Some(w) = &elsewhere {
                            w.notify.notify_one();
                        }
                        // Leave this line; a resource handed here meanwhile goes to the next.
                        pickup(Pickup::Abandon).await?;
                        return Ok(Some(c));
                    }
                }
                _ = tokio::time::sleep_until(until) => return pickup(Pickup::End).await,
                _ = shutdown.cancelled() => return pickup(Pickup::End).await,
                _ = caller.closed() => return pickup(Pickup::Abandon).await,
            }
        }
    }
    .await;
    drop(waiter);
    if result.is_err() {
        // A Redis failure mid-wait: leave the line (or give back) once Redis answers again;
        // failing that, the sweeper reclaims the hand-over after the wait.
        let _ = pickup(Pickup::Abandon).await;
    }
    result
}

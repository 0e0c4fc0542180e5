//! A Claim that waits in the pool's line, woken by the hand-over of a resource to it.

use crate::error::{Error, Result};
use crate::pools::store::{ClaimEnd, ClaimStart, ClaimTerms, Claimed, Pickup, Pools};
use crate::store::keys::ChannelKind;
use crate::store::wake::Wakeups;
use crate::store::SourceKind;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A Claim that may wait in the pool's line: woken when the claim is handed a resource (on
/// any replica's Offer or Return), or when the wait or the server ends, then settled in Redis.
///
/// The claim runs in a task of its own, so no Redis step is ever cut in half when the caller
/// goes away (tonic drops the call when a client cancels or disconnects): the task sees the
/// caller gone, leaves the line, and gives back any resource it got, to the front of the ready
/// queue (or to the next claim in line).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn claim(
    store: &Pools,
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
    store: &Pools,
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

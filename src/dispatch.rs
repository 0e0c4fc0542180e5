//! Long-poll dispatch: an Acquire with `wait` sleeps until the earliest waiting entry is due
//! (a timer on the score the acquire script returned) or a wake-up arrives for its queue
//! (another call, on any replica, made something due earlier), or the wait or the server ends.
//! It never polls Redis on a timer of its own. A waiting Campaign works the same way on
//! leadership events.

use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::{
    error::Result,
    store::{wake::Wakeups, Campaigned, Lease, Store},
};

pub async fn acquire(
    store: &Store,
    wakeups: &Wakeups,
    shutdown: &CancellationToken,
    queue: &str,
    worker: &str,
    max: u32,
    wait: Duration,
) -> Result<Vec<Lease>> {
    if wait.is_zero() {
        return Ok(store.acquire(queue, worker, max).await?.leases);
    }
    let until = Instant::now() + wait;
    let notify = wakeups.waiter(queue);
    let result = async {
        loop {
            // Registered before the acquire, so a wake-up between the acquire and the sleep
            // is not missed.
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let got = store.acquire(queue, worker, max).await?;
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
            }
        }
    }
    .await;
    wakeups.release(queue, notify);
    result
}

/// A Campaign that may wait: re-campaigns when the leader's term would expire (a timer on the
/// expiry Redis returned) or when a leadership event for the election arrives from any replica,
/// until elected, the wait ends, or the server shuts down.
pub async fn campaign(
    store: &Store,
    wakeups: &Wakeups,
    shutdown: &CancellationToken,
    election: &str,
    candidate: &str,
    ttl_ms: u64,
    wait: Duration,
) -> Result<Campaigned> {
    // Subscribed before the first campaign, so a resignation right after it is not missed.
    let mut events = wakeups.election(election);
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
        }
    }
}

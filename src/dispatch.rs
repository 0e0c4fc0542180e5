//! Long-poll dispatch: an Acquire with `wait` sleeps until the earliest waiting entry is due
//! (a timer on the score the acquire script returned) or a wake-up arrives for its queue
//! (another call, on any replica, made something due earlier), or the wait or the server ends.
//! It never polls Redis on a timer of its own.

use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::{
    error::Result,
    store::{wake::Wakeups, Lease, Store},
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

//! A long-poll Acquire: it sleeps until the earliest waiting entry is due (a timer on the score
//! the acquire script returned) or a wake-up arrives for its queue (another call, on any replica,
//! made something due earlier), or the wait or the server ends. It never polls Redis on a timer
//! of its own.

use crate::error::{Error, Result};
use crate::queues::store::{Lease, Queues};
use crate::store::keys::ChannelKind;
use crate::store::wake::Wakeups;
use crate::store::SourceKind;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// An Acquire that may wait. Like a Claim, it runs in a task of its own: when its caller goes
/// away (tonic drops the call of a client that cancelled or disconnected), the task stops
/// waiting, and leases granted in that instant, which nobody would ever see, are released at
/// once instead of waiting for a sweeper.
pub async fn acquire(
    store: &Queues,
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
    store: &Queues,
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

//! A waiting Campaign: like a long-poll Acquire, it sleeps on the term's expiry and on
//! leadership events, never on a timer of its own.

use crate::elections::store::{Campaigned, Elections};
use crate::error::{Error, Result};
use crate::store::wake::Wakeups;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A Campaign that may wait: re-campaigns when the leader's term would expire (a timer on the
/// expiry Redis returned) or when a leadership event for the election arrives from any replica,
/// until elected, the wait ends, or the server shuts down. It runs in a task of its own, so a
/// term won in the instant its caller went away is resigned at once rather than held for a ttl.
pub async fn campaign(
    store: &Elections,
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
    store: &Elections,
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

//! Leadership for Baton's own background duties (sweepers that must run on one replica): the
//! same elections as LeaderService, held by a task that campaigns, renews every third of the
//! ttl, and resigns on shutdown.
//!
//! `is_leader()` turns false as soon as a renewal is refused, or when no renewal succeeded for
//! a whole ttl (Redis unreachable): a duty must then stop, since another replica may be elected.

use std::time::Duration;

use tokio::{sync::watch, time::Instant};
use tokio_util::sync::CancellationToken;

use crate::{
    dispatch,
    error::Error,
    store::{wake::Wakeups, Store},
};

/// A handle on a leadership held by a background task.
#[derive(Clone)]
pub struct Leadership {
    /// The token of the term this replica holds, or None.
    state: watch::Receiver<Option<u64>>,
}

impl Leadership {
    /// Starts campaigning for `election` as `candidate` until `shutdown`.
    pub fn spawn(
        store: Store,
        wakeups: Wakeups,
        election: String,
        candidate: String,
        ttl: Duration,
        shutdown: CancellationToken,
    ) -> (Self, tokio::task::JoinHandle<()>) {
        let (tx, rx) = watch::channel(None);
        let task = tokio::spawn(hold(store, wakeups, election, candidate, ttl, shutdown, tx));
        (Self { state: rx }, task)
    }

    /// The token of the term this replica holds, if it leads.
    pub fn token(&self) -> Option<u64> {
        *self.state.borrow()
    }

    pub fn is_leader(&self) -> bool {
        self.token().is_some()
    }

    /// Waits until leadership is gained or lost.
    pub async fn changed(&mut self) {
        let _ = self.state.changed().await;
    }
}

async fn hold(
    store: Store,
    wakeups: Wakeups,
    election: String,
    candidate: String,
    ttl: Duration,
    shutdown: CancellationToken,
    tx: watch::Sender<Option<u64>>,
) {
    let ttl_ms = ttl.as_millis() as u64;
    let period = ttl / 3;
    let mut backoff = Duration::from_millis(100);
    loop {
        if shutdown.is_cancelled() {
            break;
        }
        let held = *tx.borrow();
        let token = match held {
            Some(token) => token,
            None => {
                // Waits for a vacancy without polling: woken by resign / expiry events.
                match dispatch::campaign(&store, &wakeups, &shutdown, &election, &candidate, ttl_ms, ttl).await {
                    Ok(got) if got.is_leader => {
                        tracing::info!(election, candidate, token = got.term.token, "leadership gained");
                        tx.send_replace(Some(got.term.token));
                        backoff = Duration::from_millis(100);
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(election, error = %e, "campaign failed");
                        sleep_or_stop(&shutdown, backoff).await;
                        backoff = (backoff * 2).min(ttl);
                    }
                }
                continue;
            }
        };
        let mut last_renewed = Instant::now();
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(period) => {}
            }
            match store.renew(&election, &candidate, token).await {
                Ok(_) => last_renewed = Instant::now(),
                Err(Error::LeaseLost(_)) => {
                    tracing::warn!(election, candidate, token, "leadership lost");
                    tx.send_replace(None);
                    break;
                }
                Err(e) => {
                    tracing::warn!(election, error = %e, "renewal failed");
                    if last_renewed.elapsed() >= ttl {
                        tracing::warn!(election, candidate, token, "no renewal for a whole ttl; stepping down");
                        tx.send_replace(None);
                        break;
                    }
                }
            }
        }
    }
    if let Some(token) = tx.send_replace(None) {
        match store.resign(&election, &candidate, token).await {
            Ok(_) => tracing::info!(election, candidate, token, "leadership resigned on shutdown"),
            Err(e) => tracing::warn!(election, error = %e, "could not resign on shutdown; the term will expire"),
        }
    }
}

async fn sleep_or_stop(shutdown: &CancellationToken, d: Duration) {
    tokio::select! {
        _ = shutdown.cancelled() => {}
        _ = tokio::time::sleep(d) => {}
    }
}

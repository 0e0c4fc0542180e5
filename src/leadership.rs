//! Leadership for Baton's own background duties (sweepers that must run on one replica): the
//! same elections as LeaderService, held by a task that campaigns, renews every third of the
//! ttl, and resigns on shutdown.
//!
//! The rule (the same in every client library): each renewal has a deadline, and `is_leader()`
//! turns false as soon as a renewal is refused, or once no renewal *sent* within the last 2/3
//! of the ttl has succeeded — checked on a timer, so a Redis that never answers cannot keep a
//! replica believing it leads after its term could have expired and another replica been
//! elected. A won campaign is confirmed by one renewal at once, so the clock starts from a send
//! time this task knows.

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
    let mut backoff = Duration::from_millis(100);
    while !shutdown.is_cancelled() {
        // Waits for a vacancy without polling: woken by resign / expiry events.
        let token = match dispatch::campaign(&store, &wakeups, &shutdown, &election, &candidate, ttl_ms, ttl).await {
            Ok(got) if got.is_leader => got.term.token,
            Ok(_) => continue,
            Err(e) => {
                tracing::warn!(election, error = %e, "campaign failed");
                sleep_or_stop(&shutdown, backoff).await;
                backoff = (backoff * 2).min(ttl);
                continue;
            }
        };
        backoff = Duration::from_millis(100);
        hold_term(&store, &election, &candidate, token, ttl, &shutdown, &tx).await;
        tx.send_replace(None);
        if shutdown.is_cancelled() {
            match store.resign(&election, &candidate, token).await {
                Ok(_) => tracing::info!(election, candidate, token, "leadership resigned on shutdown"),
                Err(e) => tracing::warn!(election, error = %e, "could not resign on shutdown; the term will expire"),
            }
        }
    }
}

/// Holds a won term: confirms it by a renewal at once (reporting the token only then), renews
/// every ttl/3 (sooner after a failure), and returns when the term is refused, when no renewal
/// sent within the last 2/3 ttl succeeded, or at shutdown.
async fn hold_term(
    store: &Store,
    election: &str,
    candidate: &str,
    token: u64,
    ttl: Duration,
    shutdown: &CancellationToken,
    tx: &watch::Sender<Option<u64>>,
) {
    let won = Instant::now();
    let rule = crate::pb::leadership::rule(ttl);
    // The latest successful renewal's send time: the term lasts at least a ttl from it.
    let mut renewed_sent: Option<Instant> = None;
    let mut next = Duration::ZERO;
    loop {
        let step_down = renewed_sent.unwrap_or(won) + rule.step_down_in;
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep_until(step_down) => {
                tracing::warn!(election, candidate, token, "no renewal succeeded within 2/3 ttl; stepping down");
                return;
            }
            _ = tokio::time::sleep(next) => {}
        }
        let sent = Instant::now();
        // Bounded: an answer after the step-down moment is worth nothing.
        match tokio::time::timeout_at(step_down, store.renew(election, candidate, token)).await {
            Ok(Ok(_)) => {
                if renewed_sent.is_none() {
                    tracing::info!(election, candidate, token, "leadership gained");
                    tx.send_replace(Some(token));
                }
                renewed_sent = Some(sent);
                next = rule.renew_in;
            }
            Ok(Err(Error::LeaseLost(_))) => {
                tracing::warn!(election, candidate, token, "leadership lost");
                return;
            }
            Ok(Err(e)) => {
                tracing::warn!(election, error = %e, "renewal failed; retrying");
                next = ttl / 12;
            }
            Err(_) => {
                tracing::warn!(election, candidate, token, "renewal unanswered within 2/3 ttl; stepping down");
                return;
            }
        }
    }
}

async fn sleep_or_stop(shutdown: &CancellationToken, d: Duration) {
    tokio::select! {
        _ = shutdown.cancelled() => {}
        _ = tokio::time::sleep(d) => {}
    }
}

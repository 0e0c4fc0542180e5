//! Leadership for Baton's own background duties (sweepers that must run on one replica): the
//! same elections as LeaderService, held by a task that campaigns, holds the term, and resigns
//! on shutdown.
//!
//! The term is held by `baton_client::term::hold`, the state machine every Rust leader uses,
//! here renewing through the store and following the rule LeaderService answers
//! (`pb::leadership::rule`): `is_leader()` turns true once a renewal confirmed the won
//! campaign, and false as soon as a renewal is refused, or once none sent in time has answered
//! by the step-down moment — so a Redis that never answers cannot keep a replica believing it
//! leads after its term could have expired and another replica been elected.

use std::time::Duration;

use baton_client::{
    term::{self, Ended, Renewal},
    Backoff,
};
use tokio::{sync::watch, time::Instant};
use tokio_util::sync::CancellationToken;

use crate::error::Error;

use crate::elections::wait;

use crate::store::wake::Wakeups;

use crate::elections::store::Elections;

/// A handle on a leadership held by a background task.
#[derive(Clone)]
pub struct Leadership {
    /// The token of the term this replica holds, or None.
    state: watch::Receiver<Option<u64>>,
}

impl Leadership {
    /// Starts campaigning for `election` as `candidate` until `shutdown`.
    pub fn spawn(
        store: Elections,
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
    store: Elections,
    wakeups: Wakeups,
    election: String,
    candidate: String,
    ttl: Duration,
    shutdown: CancellationToken,
    tx: watch::Sender<Option<u64>>,
) {
    let ttl_ms = ttl.as_millis() as u64;
    let rule = crate::pb::leadership::rule(ttl);
    let mut backoff = Backoff::new();
    while !shutdown.is_cancelled() {
        // Waits for a vacancy without polling: woken by resign / expiry events.
        let token = match wait::campaign(&store, &wakeups, &shutdown, &election, &candidate, ttl_ms, ttl).await {
            Ok(got) if got.is_leader => got.term.token,
            Ok(_) => continue,
            Err(e) => {
                tracing::warn!(election, error = %e, "campaign failed");
                sleep_or_stop(&shutdown, backoff.next_delay()).await;
                continue;
            }
        };
        backoff.reset();
        let renew = |_deadline| async {
            match store.renew(&election, &candidate, token).await {
                Ok(_) => Renewal::Renewed(rule),
                Err(Error::LeaseLost(_)) => Renewal::Lost,
                Err(e) => Renewal::Failed(e),
            }
        };
        let gained = || {
            tracing::info!(election, candidate, token, "leadership gained");
            tx.send_replace(Some(token));
        };
        let ended = term::hold(Instant::now(), rule, &shutdown, renew, gained).await;
        tx.send_replace(None);
        match ended {
            Ended::Shutdown => match store.resign(&election, &candidate, token).await {
                Ok(_) => tracing::info!(election, candidate, token, "leadership resigned on shutdown"),
                Err(e) => tracing::warn!(election, error = %e, "could not resign on shutdown; the term will expire"),
            },
            Ended::Lost => tracing::warn!(election, candidate, token, "leadership lost"),
            Ended::SteppedDown => {
                tracing::warn!(election, candidate, token, "no renewal answered by the step-down moment; stepping down")
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

//! Leadership for Rust processes: campaign (waiting for a vacancy without polling), renew every
//! third of the ttl, and report each gain and loss through a watch channel; resign on shutdown.
//!
//! The rule of every client language: each Renew has a deadline, and the loss is reported as
//! soon as a Renew is refused, or once no Renew *sent* within the last 2/3 of the ttl has
//! succeeded — on a timer, so a connection that never answers cannot keep a process believing
//! it leads after its term could have expired. A won Campaign is confirmed by a Renew at once,
//! and the token reported only then, so the clock starts at a send time the helper knows.
//!
//! ```no_run
//! # async fn example(channel: tonic::transport::Channel) {
//! use baton_client::leadership::Leadership;
//! let shutdown = tokio_util::sync::CancellationToken::new();
//! let (mut term, _task) = Leadership::new(channel, "billing", "replica-1", std::time::Duration::from_secs(15))
//!     .spawn(shutdown.clone());
//! while term.changed().await.is_ok() {
//!     match *term.borrow() {
//!         Some(token) => println!("leading with fencing token {token}"),
//!         None => println!("not leading: stop leader-only work"),
//!     }
//! }
//! # }
//! ```

use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tonic::Code;

use super::{pb_duration, pushback, with_deadline, Conn, CALL_TIMEOUT};
use crate::pb::{self, leader_service_client::LeaderServiceClient};

/// One candidate in one election.
pub struct Leadership {
    client: LeaderServiceClient<Conn>,
    election: String,
    candidate: String,
    ttl: Duration,
}

impl Leadership {
    /// A candidate over `client` (a [`super::Client`], or a plain `Channel`).
    pub fn new(client: impl Into<super::Client>, election: &str, candidate: &str, ttl: Duration) -> Self {
        Self { client: client.into().leaders(), election: election.into(), candidate: candidate.into(), ttl }
    }

    /// Campaigns until `shutdown`; the receiver holds the term's fencing token while this
    /// candidate leads, None otherwise. A renewal refused, or none sent within the last 2/3 ttl
    /// succeeding, reports None at once: the caller must stop acting as leader.
    pub fn spawn(self, shutdown: CancellationToken) -> (watch::Receiver<Option<u64>>, tokio::task::JoinHandle<()>) {
        let (tx, rx) = watch::channel(None);
        (rx, tokio::spawn(self.run(shutdown, tx)))
    }

    async fn run(mut self, shutdown: CancellationToken, tx: watch::Sender<Option<u64>>) {
        let mut backoff = Duration::from_millis(100);
        while !shutdown.is_cancelled() {
            let wait = self.ttl.max(Duration::from_secs(1));
            let campaign = pb::CampaignRequest {
                election: self.election.clone(),
                candidate_id: self.candidate.clone(),
                ttl: Some(pb_duration(self.ttl)),
                wait: Some(pb_duration(wait)),
            };
            let token = tokio::select! {
                _ = shutdown.cancelled() => break,
                r = self.client.campaign(with_deadline(campaign, wait + CALL_TIMEOUT)) => match r {
                    Ok(r) if r.get_ref().is_leader => r.into_inner().token,
                    Ok(_) => continue,
                    Err(status) => {
                        tracing::warn!(%status, election = self.election, "campaign failed");
                        tokio::time::sleep(pushback(&status).unwrap_or(backoff)).await;
                        backoff = (backoff * 2).min(self.ttl);
                        continue;
                    }
                },
            };
            backoff = Duration::from_millis(100);
            self.hold(token, &shutdown, &tx).await;
            tx.send_replace(None);
            if shutdown.is_cancelled() {
                let resign =
                    pb::ResignRequest { election: self.election.clone(), candidate_id: self.candidate.clone(), token };
                let _ = self.client.resign(with_deadline(resign, CALL_TIMEOUT)).await;
            }
        }
    }

    /// Holds a won term: confirms it by a Renew at once (reporting the token only then), renews
    /// every ttl/3 (sooner after a failure), each Renew bounded by the step-down moment; returns
    /// when a Renew is refused, when none sent within the last 2/3 ttl succeeded, or at shutdown.
    async fn hold(&mut self, token: u64, shutdown: &CancellationToken, tx: &watch::Sender<Option<u64>>) {
        let won = tokio::time::Instant::now();
        let mut renewed_sent: Option<tokio::time::Instant> = None;
        let mut next = Duration::ZERO;
        loop {
            let step_down = renewed_sent.unwrap_or(won) + self.ttl * 2 / 3;
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep_until(step_down) => {
                    tracing::warn!(election = self.election, "no renewal succeeded within 2/3 ttl; reporting the loss");
                    return;
                }
                _ = tokio::time::sleep(next) => {}
            }
            let sent = tokio::time::Instant::now();
            let renew =
                pb::RenewRequest { election: self.election.clone(), candidate_id: self.candidate.clone(), token };
            let left = step_down.saturating_duration_since(sent).max(Duration::from_millis(1));
            let answer = tokio::select! {
                _ = shutdown.cancelled() => return,
                r = self.client.renew(with_deadline(renew, left)) => r,
            };
            match answer {
                Ok(_) => {
                    if renewed_sent.is_none() {
                        tx.send_replace(Some(token));
                    }
                    renewed_sent = Some(sent);
                    next = self.ttl / 3;
                }
                Err(s) if s.code() == Code::FailedPrecondition => return,
                Err(s) => {
                    tracing::warn!(status = %s, election = self.election, "renewal failed; retrying");
                    next = self.ttl / 12;
                }
            }
        }
    }
}

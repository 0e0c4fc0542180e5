//! Leadership for Rust processes: campaign (waiting for a vacancy without polling), hold the
//! term by the rule the server answers ([`crate::term`]), and report each gain and loss through
//! a watch channel; resign on shutdown.
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

use tokio::{sync::watch, time::Instant};
use tokio_util::sync::CancellationToken;
use tonic::Code;

use super::{pb_duration, std_duration, with_deadline, Backoff, Conn, CALL_TIMEOUT};
use crate::{
    pb::{self, leader_service_client::LeaderServiceClient},
    term::{self, Renewal, Rule},
};

/// One candidate in one election.
pub struct Leadership {
    client: LeaderServiceClient<Conn>,
    election: String,
    candidate: String,
    ttl: Duration,
}

/// The rule a Campaign or Renew answered (both set it while the caller leads).
fn rule_of(renew_in: Option<prost_types::Duration>, step_down_in: Option<prost_types::Duration>) -> Option<Rule> {
    Some(Rule { renew_in: std_duration(&renew_in?), step_down_in: std_duration(&step_down_in?) })
}

impl Leadership {
    /// A candidate over `client` (a [`super::Client`], or a plain `Channel`).
    pub fn new(client: impl Into<super::Client>, election: &str, candidate: &str, ttl: Duration) -> Self {
        Self { client: client.into().leaders(), election: election.into(), candidate: candidate.into(), ttl }
    }

    /// Campaigns until `shutdown`; the receiver holds the term's fencing token while this
    /// candidate leads, None otherwise. A renewal refused, or none answered by the step-down
    /// moment, reports None at once: the caller must stop acting as leader.
    pub fn spawn(self, shutdown: CancellationToken) -> (watch::Receiver<Option<u64>>, tokio::task::JoinHandle<()>) {
        let (tx, rx) = watch::channel(None);
        (rx, tokio::spawn(self.run(shutdown, tx)))
    }

    async fn run(mut self, shutdown: CancellationToken, tx: watch::Sender<Option<u64>>) {
        let mut backoff = Backoff::new();
        while !shutdown.is_cancelled() {
            let wait = self.ttl.max(Duration::from_secs(1));
            let campaign = pb::CampaignRequest {
                election: self.election.clone(),
                candidate_id: self.candidate.clone(),
                ttl: Some(pb_duration(self.ttl)),
                wait: Some(pb_duration(wait)),
            };
            let won = tokio::select! {
                _ = shutdown.cancelled() => break,
                r = self.client.campaign(with_deadline(campaign, wait + CALL_TIMEOUT)) => r,
            };
            let (token, rule) = match won.map(|r| r.into_inner()) {
                Ok(r) if r.is_leader => match rule_of(r.renew_in, r.step_down_in) {
                    Some(rule) => (r.token, rule),
                    None => {
                        tracing::error!(
                            election = self.election,
                            "Campaign answered no leadership rule (a Baton too old)"
                        );
                        return;
                    }
                },
                Ok(_) => continue,
                Err(status) => {
                    tracing::warn!(%status, election = self.election, "campaign failed");
                    tokio::time::sleep(backoff.after(&status)).await;
                    continue;
                }
            };
            backoff.reset();
            let renew = |deadline: Instant| {
                let request =
                    pb::RenewRequest { election: self.election.clone(), candidate_id: self.candidate.clone(), token };
                let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
                let mut client = self.client.clone();
                async move {
                    match client.renew(with_deadline(request, left)).await {
                        Ok(r) => match rule_of(r.get_ref().renew_in, r.get_ref().step_down_in) {
                            Some(rule) => Renewal::Renewed(rule),
                            None => Renewal::Failed(tonic::Status::internal("Renew answered no rule")),
                        },
                        Err(s) if s.code() == Code::FailedPrecondition => Renewal::Lost,
                        Err(s) => Renewal::Failed(s),
                    }
                }
            };
            let ended = term::hold(Instant::now(), rule, &shutdown, renew, || {
                tx.send_replace(Some(token));
            })
            .await;
            tx.send_replace(None);
            match ended {
                term::Ended::Shutdown => {
                    let resign = pb::ResignRequest {
                        election: self.election.clone(),
                        candidate_id: self.candidate.clone(),
                        token,
                    };
                    let _ = self.client.resign(with_deadline(resign, CALL_TIMEOUT)).await;
                }
                ended => tracing::warn!(election = self.election, token, ?ended, "leadership lost"),
            }
        }
    }
}

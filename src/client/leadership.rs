//! Leadership for Rust processes: campaign (waiting for a vacancy without polling), renew every
//! third of the ttl, and report each gain and loss through a watch channel; resign on shutdown.
//!
//! ```no_run
//! # async fn example(channel: tonic::transport::Channel) {
//! use baton::client::leadership::Leadership;
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
use tonic::{transport::Channel, Code};

use super::{pb_duration, pushback};
use crate::pb::{self, leader_service_client::LeaderServiceClient};

/// One candidate in one election.
pub struct Leadership {
    client: LeaderServiceClient<Channel>,
    election: String,
    candidate: String,
    ttl: Duration,
}

impl Leadership {
    pub fn new(channel: Channel, election: &str, candidate: &str, ttl: Duration) -> Self {
        Self { client: LeaderServiceClient::new(channel), election: election.into(), candidate: candidate.into(), ttl }
    }

    /// Campaigns until `shutdown`; the receiver holds the term's fencing token while this
    /// candidate leads, None otherwise. A renewal refused, or none succeeding for a whole ttl,
    /// reports None at once: the caller must stop acting as leader.
    pub fn spawn(self, shutdown: CancellationToken) -> (watch::Receiver<Option<u64>>, tokio::task::JoinHandle<()>) {
        let (tx, rx) = watch::channel(None);
        (rx, tokio::spawn(self.run(shutdown, tx)))
    }

    async fn run(mut self, shutdown: CancellationToken, tx: watch::Sender<Option<u64>>) {
        let mut backoff = Duration::from_millis(100);
        while !shutdown.is_cancelled() {
            let campaign = pb::CampaignRequest {
                election: self.election.clone(),
                candidate_id: self.candidate.clone(),
                ttl: Some(pb_duration(self.ttl)),
                wait: Some(pb_duration(self.ttl.max(Duration::from_secs(1)))),
            };
            let token = tokio::select! {
                _ = shutdown.cancelled() => break,
                r = self.client.campaign(campaign) => match r {
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
            tx.send_replace(Some(token));
            let mut renewed = tokio::time::Instant::now();
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tokio::time::sleep(self.ttl / 3) => {}
                }
                let renew =
                    pb::RenewRequest { election: self.election.clone(), candidate_id: self.candidate.clone(), token };
                match self.client.renew(renew).await {
                    Ok(_) => renewed = tokio::time::Instant::now(),
                    Err(s) if s.code() == Code::FailedPrecondition => break,
                    Err(s) if renewed.elapsed() >= self.ttl => {
                        tracing::warn!(status = %s, election = self.election, "no renewal for a whole ttl");
                        break;
                    }
                    Err(s) => tracing::warn!(status = %s, election = self.election, "renewal failed; retrying"),
                }
            }
            tx.send_replace(None);
            if shutdown.is_cancelled() {
                let resign =
                    pb::ResignRequest { election: self.election.clone(), candidate_id: self.candidate.clone(), token };
                let _ = self.client.resign(resign).await;
            }
        }
    }
}

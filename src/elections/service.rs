//! LeaderService: Campaign, Renew, Resign, GetLeader, Observe; ListElections (the registry of
//! elections) and GetElectionHistory (an election's last terms).

use std::{pin::Pin, sync::Arc, time::Duration};

use futures::{StreamExt, TryStreamExt};
use tokio::sync::{broadcast::error::RecvError, mpsc};
use tokio_stream::{wrappers::ReceiverStream, Stream};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use crate::rpc::validate;

use crate::config::Config;
use crate::elections::store::{Elections, LeaderState, PastTerm, TermEnd};
use crate::elections::wait;
use crate::error::{Error, Result};
use crate::pb;
use crate::pb::leader_service_server::LeaderService;
use crate::rpc::auth;
use crate::rpc::{duration, observe, observe_call, timestamp, waits};
use crate::store::wake::LeaderEventKind;
use crate::store::wake::{ElectionSignal, Wakeups};

/// How many elections' current terms a listing reads at once.
const READ_AHEAD: usize = 16;

/// A ListElections page token: "<last term ms>.<election>" of the last entry given.
fn page_token(ms: i64, election: &str) -> String {
    format!("{ms}.{election}")
}

/// INVALID_ARGUMENT naming `page_token` unless it is one this listing returned.
fn parse_page_token(token: &str) -> Result<Option<(i64, String)>> {
    if token.is_empty() {
        return Ok(None);
    }
    let bad = || Error::invalid("page_token", "is not a token this listing returned");
    let (ms, election) = token.split_once('.').ok_or_else(bad)?;
    let ms: i64 = ms.parse().map_err(|_| bad())?;
    validate::name("page_token", election).map_err(|_| bad())?;
    Ok(Some((ms, election.to_string())))
}

fn term_pb(t: PastTerm) -> pb::ElectionTerm {
    let (ended_at, end) = match t.ended {
        None => (None, pb::TermEnd::Unspecified),
        Some((at, how)) => (
            Some(timestamp(at)),
            match how {
                TermEnd::Resigned => pb::TermEnd::Resigned,
                TermEnd::Expired => pb::TermEnd::Expired,
                TermEnd::Superseded => pb::TermEnd::Superseded,
                TermEnd::Unrecorded => pb::TermEnd::Unspecified,
            },
        ),
    };
    pb::ElectionTerm {
        token: t.token,
        leader_id: t.leader,
        started_at: Some(timestamp(t.started_ms)),
        ended_at,
        end: end as i32,
        expires_at: t.expires_ms.map(timestamp),
    }
}

pub(crate) struct LeaderServiceImpl {
    store: Elections,
    wakeups: Wakeups,
    config: Arc<Config>,
    /// Cancelled when the server begins a graceful shutdown: waits answer, streams end.
    shutdown: CancellationToken,
}

impl LeaderServiceImpl {
    pub(crate) fn new(store: Elections, wakeups: Wakeups, config: Arc<Config>, shutdown: CancellationToken) -> Self {
        Self { store, wakeups, config, shutdown }
    }
}

fn gauge(election: &str, state: &LeaderState) {
    metrics::gauge!("baton_leader_has_leader", "election" => election.to_string()).set(if state.term.is_some() {
        1.0
    } else {
        0.0
    });
}

fn current(state: LeaderState) -> pb::ObserveResponse {
    let kind = pb::LeadershipEventKind::Current as i32;
    match state.term {
        Some(t) => {
            pb::ObserveResponse { kind, leader_id: t.leader, token: t.token, expires_at: Some(timestamp(t.expires_ms)) }
        }
        None => pb::ObserveResponse { kind, ..Default::default() },
    }
}

/// Follows one election for one Observe stream until the client leaves or the server stops.
/// Between events, a timer on the term's expiry asks Redis whether it expired (the script
/// announces an expiry once, whichever replica notices first).
async fn follow(
    store: Elections,
    wakeups: Wakeups,
    shutdown: CancellationToken,
    election: String,
    tx: mpsc::Sender<Result<pb::ObserveResponse, Status>>,
) {
    // Followed (subscription confirmed) before the first read, so no event is missed.
    let mut events = match wakeups.election(&election).await {
        Ok(events) => events,
        Err(e) => {
            let _ = tx.send(Err(Status::from(e))).await;
            return;
        }
    };
    let mut resync = true;
    let mut last_sent: Option<Option<u64>> = None;
    let mut expires: Option<tokio::time::Instant> = None;
    loop {
        if resync {
            resync = false;
            match store.leader(&election, true).await {
                Ok(state) => {
                    expires = state.term.as_ref().map(|t| deadline(t.expires_ms - state.now_ms));
                    // After a gap, tell the state again only if it changed.
                    let token = state.term.as_ref().map(|t| t.token);
                    if last_sent != Some(token) {
                        last_sent = Some(token);
                        if tx.send(Ok(current(state))).await.is_err() {
                            return;
                        }
                    }
                }
                Err(e) => {
                    let _ = tx.send(Err(Status::from(e))).await;
                    return;
                }
            }
        }
        let expiry = async {
            match expires {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tx.closed() => return,
            _ = expiry => {
                // Ends and announces the term if it really expired; the event arrives below.
                if let Ok(state) = store.leader(&election, true).await {
                    expires = state.term.as_ref().map(|t| deadline(t.expires_ms - state.now_ms));
                }
            }
            signal = events.recv() => match signal {
                Ok(ElectionSignal::Event(e)) => {
                    let kind = match e.kind {
                        LeaderEventKind::Elected => pb::LeadershipEventKind::Elected,
                        LeaderEventKind::Resigned => pb::LeadershipEventKind::Resigned,
                        LeaderEventKind::Expired => pb::LeadershipEventKind::Expired,
                    };
                    // A new term: read its expiry (renewals move it) before trusting a timer.
                    expires = (e.kind == LeaderEventKind::Elected).then(tokio::time::Instant::now);
                    last_sent = Some((e.kind == LeaderEventKind::Elected).then_some(e.token));
                    let msg = pb::ObserveResponse {
                        kind: kind as i32,
                        leader_id: e.leader,
                        token: e.token,
                        expires_at: Some(timestamp(e.at_ms)),
                    };
                    if tx.send(Ok(msg)).await.is_err() {
                        return;
                    }
                }
                Ok(ElectionSignal::Resync) | Err(RecvError::Lagged(_)) => resync = true,
                Err(RecvError::Closed) => return,
            },
        }
    }
}

fn deadline(in_ms: i64) -> tokio::time::Instant {
    tokio::time::Instant::now() + Duration::from_millis(in_ms.max(0) as u64 + 1)
}

type ObserveStream = Pin<Box<dyn Stream<Item = Result<pb::ObserveResponse, Status>> + Send>>;

#[tonic::async_trait]
impl LeaderService for LeaderServiceImpl {
    async fn campaign(&self, request: Request<pb::CampaignRequest>) -> Result<Response<pb::CampaignResponse>, Status> {
        observe_call("Campaign", waits(&request.get_ref().wait), async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("election", &req.election)?;
            validate::name("candidate_id", &req.candidate_id)?;
            let limits = &self.config.limits;
            let ttl_ms = validate::duration_ms("ttl", req.ttl.as_ref(), limits.max_ttl_ms)?
                .ok_or_else(|| Error::invalid("ttl", "is required"))?;
            if ttl_ms < limits.min_ttl_ms {
                return Err(Error::invalid("ttl", format!("must be at least {} ms", limits.min_ttl_ms)));
            }
            let wait = Duration::from_millis(validate::wait_ms("wait", req.wait.as_ref(), limits.max_wait_ms)?);
            let got = wait::campaign(
                &self.store,
                &self.wakeups,
                &self.shutdown,
                &req.election,
                &req.candidate_id,
                ttl_ms,
                wait,
            )
            .await?;
            let election = req.election.clone();
            match (got.is_leader, got.new_term) {
                (true, true) => {
                    metrics::counter!("baton_leader_claimed_total", "election" => election.clone()).increment(1);
                    metrics::counter!("baton_leader_term_changes_total", "election" => election.clone()).increment(1);
                    tracing::info!(election, leader = req.candidate_id, token = got.term.token, "elected");
                }
                (true, false) => {
                    metrics::counter!("baton_leader_refreshed_total", "election" => election.clone()).increment(1)
                }
                (false, _) => metrics::counter!("baton_leader_read_total", "election" => election.clone()).increment(1),
            }
            metrics::gauge!("baton_leader_has_leader", "election" => election).set(1.0);
            let rule = got.is_leader.then(|| pb::leadership::rule(Duration::from_millis(ttl_ms)));
            Ok(Response::new(pb::CampaignResponse {
                is_leader: got.is_leader,
                leader_id: got.term.leader,
                token: got.term.token,
                expires_at: Some(timestamp(got.term.expires_ms)),
                renew_in: rule.and_then(|r| duration(r.renew_in.as_millis() as u64)),
                step_down_in: rule.and_then(|r| duration(r.step_down_in.as_millis() as u64)),
            }))
        })
        .await
    }

    async fn renew(&self, request: Request<pb::RenewRequest>) -> Result<Response<pb::RenewResponse>, Status> {
        observe("Renew", async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("election", &req.election)?;
            validate::name("candidate_id", &req.candidate_id)?;
            validate::token("token", req.token)?;
            let (expires, ttl_ms) =
                self.store.renew(&req.election, &req.candidate_id, req.token).await.inspect_err(|e| {
                    if matches!(e, Error::LeaseLost(_)) {
                        metrics::counter!("baton_leases_lost_total", "rpc" => "Renew").increment(1);
                    }
                })?;
            metrics::counter!("baton_leader_refreshed_total", "election" => req.election).increment(1);
            let rule = pb::leadership::rule(Duration::from_millis(ttl_ms));
            Ok(Response::new(pb::RenewResponse {
                expires_at: Some(timestamp(expires)),
                renew_in: duration(rule.renew_in.as_millis() as u64),
                step_down_in: duration(rule.step_down_in.as_millis() as u64),
            }))
        })
        .await
    }

    async fn resign(&self, request: Request<pb::ResignRequest>) -> Result<Response<pb::ResignResponse>, Status> {
        observe("Resign", async {
            let caller = auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("election", &req.election)?;
            validate::name("candidate_id", &req.candidate_id)?;
            validate::token("token", req.token)?;
            let at = self.store.resign(&req.election, &req.candidate_id, req.token).await.inspect_err(|e| {
                if matches!(e, Error::LeaseLost(_)) {
                    metrics::counter!("baton_leases_lost_total", "rpc" => "Resign").increment(1);
                }
            })?;
            // Audited: with a token, a term's holder may be resigned by another process.
            tracing::info!(
                target: "baton::audit",
                identity = auth::who(&caller),
                election = req.election,
                leader = req.candidate_id,
                token = req.token,
                "resigned"
            );
            metrics::counter!("baton_leader_term_changes_total", "election" => req.election.clone()).increment(1);
            metrics::gauge!("baton_leader_has_leader", "election" => req.election).set(0.0);
            Ok(Response::new(pb::ResignResponse { resigned_at: Some(timestamp(at)) }))
        })
        .await
    }

    async fn get_leader(
        &self,
        request: Request<pb::GetLeaderRequest>,
    ) -> Result<Response<pb::GetLeaderResponse>, Status> {
        observe("GetLeader", async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("election", &req.election)?;
            let state = self.store.leader(&req.election, false).await?;
            // A name nobody campaigned in gets no series: a caller cannot grow /metrics with
            // names it makes up.
            if state.known {
                metrics::counter!("baton_leader_read_total", "election" => req.election.clone()).increment(1);
                gauge(&req.election, &state);
            }
            Ok(Response::new(match state.term {
                Some(t) => pb::GetLeaderResponse {
                    leader_id: t.leader,
                    token: t.token,
                    expires_at: Some(timestamp(t.expires_ms)),
                },
                None => pb::GetLeaderResponse::default(),
            }))
        })
        .await
    }

    async fn list_elections(
        &self,
        request: Request<pb::ListElectionsRequest>,
    ) -> Result<Response<pb::ListElectionsResponse>, Status> {
        observe("ListElections", async {
            let caller = auth::authorize(&request)?;
            let req = request.into_inner();
            let page_size = if req.page_size == 0 { 100 } else { req.page_size };
            if page_size > 1000 {
                return Err(Error::invalid("page_size", "must be at most 1000"));
            }
            let after = parse_page_token(&req.page_token)?;
            let page = self.store.list_elections(after, page_size as usize).await?;
            let next_page_token = page.next.map(|(ms, e)| page_token(ms, &e)).unwrap_or_default();
            // A scoped caller sees the elections within its scopes only.
            let visible: Vec<_> = page
                .elections
                .into_iter()
                .filter(|e| auth::sees(&caller, auth::NameKind::Election, &e.election))
                .collect();
            let store = &self.store;
            let elections = futures::stream::iter(visible)
                .map(|e| async move {
                    let state = store.leader(&e.election, false).await?;
                    let mut summary = pb::ElectionSummary {
                        election: e.election,
                        last_term_started_at: Some(timestamp(e.last_term_ms)),
                        ..Default::default()
                    };
                    if let Some(t) = state.term {
                        summary.leader_id = t.leader;
                        summary.token = t.token;
                        summary.expires_at = Some(timestamp(t.expires_ms));
                    }
                    Ok::<_, Error>(summary)
                })
                .buffered(READ_AHEAD)
                .try_collect()
                .await?;
            Ok(Response::new(pb::ListElectionsResponse { elections, next_page_token }))
        })
        .await
    }

    async fn get_election_history(
        &self,
        request: Request<pb::GetElectionHistoryRequest>,
    ) -> Result<Response<pb::GetElectionHistoryResponse>, Status> {
        observe("GetElectionHistory", async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("election", &req.election)?;
            if req.limit > 1000 {
                return Err(Error::invalid("limit", "must be at most 1000"));
            }
            let terms = self.store.history(&req.election, req.limit as usize).await?;
            Ok(Response::new(pb::GetElectionHistoryResponse { terms: terms.into_iter().map(term_pb).collect() }))
        })
        .await
    }

    type ObserveStream = ObserveStream;

    async fn observe(&self, request: Request<pb::ObserveRequest>) -> Result<Response<Self::ObserveStream>, Status> {
        observe("Observe", async {
            auth::authorize(&request)?;
            let grant = auth::grant(&request).map(|g| g.scoped(request.get_ref()));
            let req = request.into_inner();
            validate::name("election", &req.election)?;
            if self.shutdown.is_cancelled() {
                return Err(Error::Unavailable("server is shutting down".into()));
            }
            let (tx, rx) = mpsc::channel(16);
            let counted = crate::rpc::opens::Counted::new();
            let follows = follow(self.store.clone(), self.wakeups.clone(), self.shutdown.clone(), req.election, tx);
            tokio::spawn(async move {
                let _counted = counted;
                follows.await
            });
            // Ended by a reload that revokes the caller (its task sees the receiver dropped).
            Ok(Response::new(auth::guard(grant, ReceiverStream::new(rx))))
        })
        .await
    }
}

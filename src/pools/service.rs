//! ClaimService: Offer, Claim, Return, Fail, GetPool, WatchPool.

use std::{collections::BTreeMap, collections::HashSet, pin::Pin, sync::Arc, time::Duration};

use tokio::sync::{broadcast::error::RecvError, mpsc};
use tokio_stream::{wrappers::ReceiverStream, Stream};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use crate::rpc::validate;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::pb;
use crate::pb::claim_service_server::ClaimService;
use crate::pools::store::Pools;
use crate::pools::store::{ClaimEnd, ClaimTerms, Claimed, PoolStats};
use crate::pools::wait;
use crate::rpc::auth;
use crate::rpc::{duration, observe, observe_call, timestamp, waits};
use crate::store::wake::Wakeups;
use crate::store::SourceKind;

pub(crate) struct ClaimServiceImpl {
    store: Pools,
    wakeups: Wakeups,
    config: Arc<Config>,
    /// Cancelled when the server begins a graceful shutdown: waits answer, streams end.
    shutdown: CancellationToken,
}

impl ClaimServiceImpl {
    pub(crate) fn new(store: Pools, wakeups: Wakeups, config: Arc<Config>, shutdown: CancellationToken) -> Self {
        Self { store, wakeups, config, shutdown }
    }

    fn attributes(
        &self,
        field: &str,
        attrs: &std::collections::HashMap<String, String>,
    ) -> Result<BTreeMap<String, String>> {
        let limits = &self.config.limits;
        validate::count(field, attrs.len(), 0, limits.max_labels)?;
        for (k, v) in attrs {
            if k.is_empty() {
                return Err(Error::invalid(field, "keys must not be empty"));
            }
            validate::size(&format!("{field}[{k}]"), k.len().max(v.len()), limits.max_label_bytes)?;
        }
        Ok(attrs.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    }
}

fn resource_pb(c: Claimed) -> pb::ClaimResponse {
    pb::ClaimResponse {
        resource: Some(pb::Resource { id: c.id, attributes: c.attributes.into_iter().collect() }),
        token: c.token,
        claimed_at: Some(timestamp(c.claimed_at_ms)),
    }
}

/// Sets a pool's gauges from `s`, for a pool that exists: a name nothing was ever offered to
/// or lined up for (every count zero, and not in the pool registry) gets no series, so a caller
/// cannot grow /metrics with names it makes up.
async fn record(store: &Pools, pool: &str, s: &PoolStats) {
    let used = s.idle + s.claimed + s.waiting + s.dead_lettered + s.claimed_total > 0 || s.paused || s.scale_up;
    if !used && !store.known(SourceKind::Pool, pool).await.unwrap_or(false) {
        return;
    }
    for (name, value) in [
        ("baton_pool_idle", s.idle as f64),
        ("baton_pool_claimed", s.claimed as f64),
        ("baton_pool_waiting_claims", s.waiting as f64),
        ("baton_pool_scale_up_pending", s.scale_up as u8 as f64),
        ("baton_pool_oldest_wait_seconds", s.first_arrival_ms.map_or(0.0, |f| (s.now_ms - f) as f64 / 1000.0)),
    ] {
        metrics::gauge!(name, "pool" => pool.to_string()).set(value);
    }
}

fn status_pb(pool: &str, s: &PoolStats) -> pb::PoolStatus {
    pb::PoolStatus {
        pool: pool.to_string(),
        idle: s.idle,
        claimed: s.claimed,
        waiting_claims: s.waiting,
        oldest_wait: s.first_arrival_ms.map(|f| duration((s.now_ms - f).max(1) as u64).expect("non-zero")),
        scale_up_pending: s.scale_up,
        dead_lettered: s.dead_lettered,
    }
}

/// After a status message, the pause before the next: the first change of a burst is
/// reported at once, the rest of the burst in one message.
const WATCH_COALESCE: Duration = Duration::from_millis(20);

/// Feeds one WatchPool stream: the status now, then after each change that altered it.
async fn watch(
    store: Pools,
    wakeups: Wakeups,
    shutdown: CancellationToken,
    pool: String,
    tx: mpsc::Sender<Result<pb::WatchPoolResponse, Status>>,
) {
    let mut changes = match wakeups.pool(&pool, &store.shard_names(SourceKind::Pool, &pool)).await {
        Ok(changes) => changes,
        Err(e) => {
            let _ = tx.send(Err(Status::from(e))).await;
            return;
        }
    };
    let mut last: Option<PoolStats> = None;
    loop {
        match store.pool_stats(&pool, 0).await {
            Ok(stats) => {
                // Ages move with the clock; a message is worth sending when a count or flag moved.
                let same = last.as_ref().is_some_and(|l| {
                    PoolStats { now_ms: stats.now_ms, average_idle_ms: stats.average_idle_ms, ..l.clone() } == stats
                });
                if !same {
                    record(&store, &pool, &stats).await;
                    let msg = pb::WatchPoolResponse { status: Some(status_pb(&pool, &stats)) };
                    if tx.send(Ok(msg)).await.is_err() {
                        return;
                    }
                    last = Some(stats);
                }
            }
            Err(e) => {
                let _ = tx.send(Err(Status::from(e))).await;
                return;
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tx.closed() => return,
            // Changes during the pause are not lost: they wait in the channel (or lag it).
            _ = tokio::time::sleep(WATCH_COALESCE) => {}
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tx.closed() => return,
            change = changes.recv() => if let Err(RecvError::Closed) = change { return },
        }
    }
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<pb::WatchPoolResponse, Status>> + Send>>;

#[tonic::async_trait]
impl ClaimService for ClaimServiceImpl {
    async fn offer(&self, request: Request<pb::OfferRequest>) -> Result<Response<pb::OfferResponse>, Status> {
        observe("Offer", async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("pool", &req.pool)?;
            validate::count("resources", req.resources.len(), 1, self.config.limits.max_batch as usize)?;
            validate::request_id("request_id", &req.request_id)?;
            let mut seen = HashSet::new();
            let mut resources = Vec::with_capacity(req.resources.len());
            for (i, r) in req.resources.iter().enumerate() {
                validate::name(&format!("resources[{i}].id"), &r.id)?;
                if !seen.insert(r.id.as_str()) {
                    return Err(Error::invalid(format!("resources[{i}].id"), format!("{:?} is listed twice", r.id)));
                }
                resources.push((r.id.clone(), self.attributes(&format!("resources[{i}].attributes"), &r.attributes)?));
            }
            let (idle, handed, duplicates) = self.store.offer(&req.pool, &resources, &req.request_id).await?;
            metrics::counter!("baton_pool_offered_total", "pool" => req.pool).increment((idle + handed) as u64);
            Ok(Response::new(pb::OfferResponse { idle, handed, duplicates }))
        })
        .await
    }

    async fn claim(&self, request: Request<pb::ClaimRequest>) -> Result<Response<pb::ClaimResponse>, Status> {
        observe_call("Claim", waits(&request.get_ref().wait), async {
            let started = std::time::Instant::now();
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("pool", &req.pool)?;
            validate::name("claimer_id", &req.claimer_id)?;
            let attrs = self.attributes("attributes", &req.attributes)?;
            let wait = validate::wait_ms("wait", req.wait.as_ref(), self.config.limits.max_wait_ms)?;
            validate::request_id("request_id", &req.request_id)?;
            let hold_ms =
                validate::duration_ms("hold", req.hold.as_ref(), self.config.limits.max_duration_ms)?.unwrap_or(0);
            let terms = ClaimTerms { request_id: req.request_id.clone(), hold_ms };
            let pool = &self.config.pool;
            let got = wait::claim(
                &self.store,
                &self.wakeups,
                &self.shutdown,
                &req.pool,
                &req.claimer_id,
                &attrs,
                &terms,
                Duration::from_millis(wait),
                (pool.max_line, pool.full_line_pushback_ms),
            )
            .await
            .inspect_err(|e| {
                if matches!(e, Error::Exhausted { .. }) {
                    metrics::counter!("baton_claims_total", "pool" => req.pool.clone(), "result" => "line_full")
                        .increment(1);
                }
            })?;
            let result = if got.is_some() { "claimed" } else { "empty" };
            // An empty answer without a wait wrote nothing: counted only for a pool that exists,
            // so a caller cannot grow /metrics with names it makes up.
            if got.is_some() || wait > 0 || self.store.known(SourceKind::Pool, &req.pool).await.unwrap_or(false) {
                metrics::counter!("baton_claims_total", "pool" => req.pool.clone(), "result" => result).increment(1);
            }
            Ok(Response::new(match got {
                Some(c) => {
                    metrics::histogram!("baton_claim_dispatch_seconds", "pool" => req.pool)
                        .record(started.elapsed().as_secs_f64());
                    resource_pb(c)
                }
                None => pb::ClaimResponse::default(),
            }))
        })
        .await
    }

    async fn r#return(&self, request: Request<pb::ReturnRequest>) -> Result<Response<pb::ReturnResponse>, Status> {
        observe("Return", async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("pool", &req.pool)?;
            validate::name("resource_id", &req.resource_id)?;
            validate::token("token", req.token)?;
            validate::request_id("request_id", &req.request_id)?;
            let end = if req.reuse { ClaimEnd::Reuse } else { ClaimEnd::Return };
            self.store.end_claim(&req.pool, &req.resource_id, req.token, end, "", &req.request_id).await?;
            Ok(Response::new(pb::ReturnResponse {}))
        })
        .await
    }

    async fn fail(&self, request: Request<pb::FailRequest>) -> Result<Response<pb::FailResponse>, Status> {
        observe("Fail", async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("pool", &req.pool)?;
            validate::name("resource_id", &req.resource_id)?;
            validate::token("token", req.token)?;
            validate::request_id("request_id", &req.request_id)?;
            let max = self.config.limits.max_message_bytes;
            let error_clipped = req.error.len() > max;
            let error = if error_clipped { crate::error::clip(&req.error, max) } else { req.error };
            (self.store)
                .end_claim(&req.pool, &req.resource_id, req.token, ClaimEnd::Fail, &error, &req.request_id)
                .await?;
            metrics::counter!("baton_pool_dead_lettered_total", "pool" => req.pool).increment(1);
            Ok(Response::new(pb::FailResponse { error_clipped }))
        })
        .await
    }

    async fn get_pool(&self, request: Request<pb::GetPoolRequest>) -> Result<Response<pb::GetPoolResponse>, Status> {
        observe("GetPool", async {
            auth::authorize(&request)?;
            let req = request.into_inner();
            validate::name("pool", &req.pool)?;
            let stats = self.store.pool_stats(&req.pool, 0).await?;
            record(&self.store, &req.pool, &stats).await;
            Ok(Response::new(pb::GetPoolResponse { status: Some(status_pb(&req.pool, &stats)) }))
        })
        .await
    }

    type WatchPoolStream = WatchStream;

    async fn watch_pool(
        &self,
        request: Request<pb::WatchPoolRequest>,
    ) -> Result<Response<Self::WatchPoolStream>, Status> {
        observe("WatchPool", async {
            auth::authorize(&request)?;
            let grant = auth::grant(&request).map(|g| g.scoped(request.get_ref()));
            let req = request.into_inner();
            validate::name("pool", &req.pool)?;
            if self.shutdown.is_cancelled() {
                return Err(Error::Unavailable("server is shutting down".into()));
            }
            let (tx, rx) = mpsc::channel(16);
            tokio::spawn(watch(self.store.clone(), self.wakeups.clone(), self.shutdown.clone(), req.pool, tx));
            // Ended by a reload that revokes the caller (its task sees the receiver dropped).
            Ok(Response::new(auth::guard(grant, ReceiverStream::new(rx))))
        })
        .await
    }
}

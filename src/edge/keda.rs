//! KEDA's external scaler (`externalscaler.ExternalScaler`, `proto/keda`), served on Baton's
//! own gRPC port, so a worker Deployment scales on a queue's, pool's or receiver's backlog with
//! no adapter in between.
//!
//! A ScaledObject's trigger metadata (`scalerMetadata`) names one source and a target:
//! - `queue`, `pool` or `receiver` (exactly one): the source;
//! - `targetSize` (default 10): the backlog one worker replica should carry; the HPA runs
//!   ceil(backlog / targetSize) replicas;
//! - `activationTargetSize` (default 0): the source is active (KEDA scales from zero) when its
//!   backlog is above this.
//!
//! Other keys (`scalerAddress`, KEDA's TLS settings) are KEDA's and are ignored. The backlog:
//! - a queue: due agents + leases being worked (a paused queue: only the leases);
//! - a receiver: due messages + deliveries in flight (paused: only those in flight);
//! - a pool: claims waiting in line + resources claimed; also active while the pool's
//!   scale-up signal (`scale_up_pending`) is raised.
//!
//! StreamIsActive answers at once, then again whenever activity changes, re-reading the source
//! on the wake-ups its long polls get ([`Wakeups::watch`], or a pool's changes) and at the time
//! the next scheduled entry falls due: no polling. A source that becomes active is pushed at
//! once; one that drains is seen at its next wake-up (reads of an active source are at most one
//! per [`ACTIVE_COALESCE`]), and by KEDA's own IsActive and GetMetrics calls, which it makes
//! every `pollingInterval` anyway.

use std::{collections::HashMap, pin::Pin, time::Duration};

use tokio::sync::{broadcast::error::RecvError, mpsc};
use tokio_stream::{wrappers::ReceiverStream, Stream};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use crate::rpc::validate;

use crate::error::{Error, Result};
use crate::pools::store::Pools;
use crate::queues::store::Queues;
use crate::receivers::store::Receivers;
use crate::rpc::auth;
use crate::rpc::auth::{NameKind, Scoped};
use crate::rpc::observe;
use crate::store::keys::ChannelKind;
use crate::store::wake::{Changes, Wakeups};
use crate::store::SourceKind;

/// The generated messages and stubs of KEDA's contract.
pub use crate::keda_pb as pb;

use pb::external_scaler_server::ExternalScaler;

/// `targetSize` when the metadata has none.
pub const DEFAULT_TARGET_SIZE: f64 = 10.0;

/// While a source is active, StreamIsActive reads it at most this often (a busy queue wakes up
/// on every registration).
pub const ACTIVE_COALESCE: Duration = Duration::from_secs(1);

/// What a ScaledObject's metadata asks about.
#[derive(Clone, Debug, PartialEq)]
pub struct Scaled {
    pub kind: SourceKind,
    pub name: String,
    pub target_size: f64,
    pub activation: f64,
}

impl Scaled {
    /// Reads `scalerMetadata`; INVALID_ARGUMENT naming the key that is wrong.
    pub fn parse(metadata: &HashMap<String, String>) -> Result<Self> {
        let named: Vec<(SourceKind, &String)> = [SourceKind::Queue, SourceKind::Pool, SourceKind::Receiver]
            .into_iter()
            .filter_map(|kind| metadata.get(kind.as_str()).map(|name| (kind, name)))
            .collect();
        let (kind, name) = match named.as_slice() {
            [one] => *one,
            [] => {
                return Err(Error::invalid(
                    "scalerMetadata",
                    "must name a source: queue, pool or receiver (e.g. queue: billing)",
                ))
            }
            _ => {
                return Err(Error::invalid(
                    "scalerMetadata",
                    "must name one source, not several of queue, pool and receiver",
                ))
            }
        };
        validate::name(&format!("scalerMetadata.{}", kind.as_str()), name)?;
        let number = |key: &str, default: f64, positive: bool| -> Result<f64> {
            let Some(text) = metadata.get(key) else { return Ok(default) };
            let field = format!("scalerMetadata.{key}");
            let value: f64 =
                text.trim().parse().map_err(|_| Error::invalid(&field, format!("{text:?} is not a number")))?;
            if !value.is_finite() || value < 0.0 || (positive && value == 0.0) {
                let bound = if positive { "above 0" } else { "0 or more" };
                return Err(Error::invalid(&field, format!("must be {bound}, got {text:?}")));
            }
            Ok(value)
        };
        Ok(Self {
            kind,
            name: name.clone(),
            target_size: number("targetSize", DEFAULT_TARGET_SIZE, true)?,
            activation: number("activationTargetSize", 0.0, false)?,
        })
    }

    /// The metric's name: `baton-<kind>-<name>`, lower case, with what Kubernetes does not
    /// allow in a metric name (`_`) as `-`.
    pub fn metric_name(&self) -> String {
        format!("baton-{}-{}", self.kind.as_str(), self.name)
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '.') { c.to_ascii_lowercase() } else { '-' })
            .collect()
    }

    fn spec(&self) -> pb::GetMetricSpecResponse {
        pb::GetMetricSpecResponse {
            metric_specs: vec![pb::MetricSpec {
                metric_name: self.metric_name(),
                target_size: self.target_size.ceil() as i64,
                target_size_float: self.target_size,
            }],
        }
    }
}

/// A source's backlog as read now.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backlog {
    pub value: u64,
    /// The pool's scale-up signal (pools only).
    pub scale_up: bool,
    pub now_ms: i64,
    /// When the next entry waiting for its time falls due (queues and receivers).
    pub next_due_ms: Option<i64>,
}

impl Backlog {
    pub fn active(&self, scaled: &Scaled) -> bool {
        self.value as f64 > scaled.activation || self.scale_up
    }
}

/// Reads the backlog of `scaled`'s source, over every shard of a sharded one.
pub async fn backlog(store: &Backlogs, scaled: &Scaled) -> Result<Backlog> {
    let earliest = |a: Option<i64>, b: Option<i64>| match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let mut total = Backlog { value: 0, scale_up: false, now_ms: 0, next_due_ms: None };
    match scaled.kind {
        SourceKind::Queue => {
            for shard in store.queues.shard_names(SourceKind::Queue, &scaled.name) {
                let s = store.queues.queue_stats(&shard, 0).await?;
                total.value += if s.paused { 0 } else { s.due } + s.working;
                total.now_ms = total.now_ms.max(s.now_ms);
                total.next_due_ms = earliest(total.next_due_ms, s.next_due_ms);
            }
        }
        SourceKind::Receiver => {
            for shard in store.queues.shard_names(SourceKind::Receiver, &scaled.name) {
                let s = store.receivers.receiver_stats(&shard).await?;
                total.value += if s.paused { 0 } else { s.due } + s.in_flight;
                total.now_ms = total.now_ms.max(s.now_ms);
                total.next_due_ms = earliest(total.next_due_ms, s.next_due_ms);
            }
        }
        SourceKind::Pool => {
            let s = store.pools.pool_stats(&scaled.name, 0).await?;
            total = Backlog { value: s.waiting + s.claimed, scale_up: s.scale_up, now_ms: s.now_ms, next_due_ms: None };
        }
    }
    Ok(total)
}

/// The stores whose sources KEDA scales on.
#[derive(Clone)]
pub struct Backlogs {
    pub queues: Queues,
    pub pools: Pools,
    pub receivers: Receivers,
}

/// KEDA's ExternalScaler over the stores of the sources it reads.
pub struct KedaScalerImpl {
    store: Backlogs,
    wakeups: Wakeups,
    /// Cancelled when the server begins a graceful shutdown: streams end.
    shutdown: CancellationToken,
}

impl KedaScalerImpl {
    pub fn new(store: Backlogs, wakeups: Wakeups, shutdown: CancellationToken) -> Self {
        Self { store, wakeups, shutdown }
    }
}

/// The source the metadata names, for the scope check (what `Scaled::parse` will read; a
/// request naming none or several is refused by the parse).
fn metadata_names(metadata: &HashMap<String, String>) -> Vec<(NameKind, &str)> {
    [SourceKind::Queue, SourceKind::Pool, SourceKind::Receiver]
        .into_iter()
        .filter_map(|kind| metadata.get(kind.as_str()).map(|name| (kind.into(), name.as_str())))
        .collect()
}

impl Scoped for pb::ScaledObjectRef {
    fn names(&self) -> Vec<(NameKind, &str)> {
        metadata_names(&self.scaler_metadata)
    }
}

impl Scoped for pb::GetMetricsRequest {
    fn names(&self) -> Vec<(NameKind, &str)> {
        self.scaled_object_ref.as_ref().map_or_else(Vec::new, |r| metadata_names(&r.scaler_metadata))
    }
}

/// Feeds one StreamIsActive stream: activity now, then each change of it.
async fn stream_activity(
    store: Backlogs,
    wakeups: Wakeups,
    shutdown: CancellationToken,
    scaled: Scaled,
    tx: mpsc::Sender<std::result::Result<pb::IsActiveResponse, Status>>,
) {
    // Followed before the first read, so a change between the read and the wait is not missed.
    let shards = store.queues.shard_names(scaled.kind, &scaled.name);
    let followed = match scaled.kind {
        SourceKind::Queue => wakeups.watch(ChannelKind::Queue, &scaled.name, &shards).await,
        SourceKind::Receiver => wakeups.watch(ChannelKind::Receiver, &scaled.name, &shards).await,
        SourceKind::Pool => wakeups.pool(&scaled.name, &shards).await,
    };
    let mut changes: Changes = match followed {
        Ok(changes) => changes,
        Err(e) => {
            let _ = tx.send(Err(Status::from(e))).await;
            return;
        }
    };
    let mut last = None;
    loop {
        let read = match backlog(&store, &scaled).await {
            Ok(read) => read,
            Err(e) => {
                let _ = tx.send(Err(Status::from(e))).await;
                return;
            }
        };
        let active = read.active(&scaled);
        if last != Some(active) {
            if tx.send(Ok(pb::IsActiveResponse { result: active })).await.is_err() {
                return;
            }
            last = Some(active);
        }
        if active {
            // Changes during the pause wait in the channel (or lag it).
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tx.closed() => return,
                _ = tokio::time::sleep(ACTIVE_COALESCE) => {}
            }
        }
        // An inactive source becomes active by a wake-up, or when its next entry falls due.
        let due = read
            .next_due_ms
            .filter(|_| !active)
            .map(|due| Duration::from_millis((due - read.now_ms).max(1) as u64))
            .unwrap_or(Duration::MAX);
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tx.closed() => return,
            _ = tokio::time::sleep(due.min(Duration::from_secs(86_400))) => {}
            change = changes.recv() => if let Err(RecvError::Closed) = change { return },
        }
    }
}

type ActivityStream = Pin<Box<dyn Stream<Item = std::result::Result<pb::IsActiveResponse, Status>> + Send>>;
type SpecStream = Pin<Box<dyn Stream<Item = std::result::Result<pb::GetMetricSpecResponse, Status>> + Send>>;

#[tonic::async_trait]
impl ExternalScaler for KedaScalerImpl {
    async fn is_active(
        &self,
        request: Request<pb::ScaledObjectRef>,
    ) -> std::result::Result<Response<pb::IsActiveResponse>, Status> {
        observe("IsActive", async {
            auth::authorize(&request)?;
            let scaled = Scaled::parse(&request.get_ref().scaler_metadata)?;
            let read = backlog(&self.store, &scaled).await?;
            Ok(Response::new(pb::IsActiveResponse { result: read.active(&scaled) }))
        })
        .await
    }

    type StreamIsActiveStream = ActivityStream;

    async fn stream_is_active(
        &self,
        request: Request<pb::ScaledObjectRef>,
    ) -> std::result::Result<Response<Self::StreamIsActiveStream>, Status> {
        observe("StreamIsActive", async {
            auth::authorize(&request)?;
            let grant = auth::grant(&request).map(|g| g.scoped(request.get_ref()));
            let scaled = Scaled::parse(&request.get_ref().scaler_metadata)?;
            if self.shutdown.is_cancelled() {
                return Err(Error::Unavailable("server is shutting down".into()));
            }
            let (tx, rx) = mpsc::channel(4);
            let (store, wakeups, shutdown) = (self.store.clone(), self.wakeups.clone(), self.shutdown.clone());
            tokio::spawn(stream_activity(store, wakeups, shutdown, scaled, tx));
            // Ended by a reload that revokes the caller (its task sees the receiver dropped).
            Ok(Response::new(auth::guard(grant, ReceiverStream::new(rx))))
        })
        .await
    }

    async fn get_metric_spec(
        &self,
        request: Request<pb::ScaledObjectRef>,
    ) -> std::result::Result<Response<pb::GetMetricSpecResponse>, Status> {
        observe("GetMetricSpec", async {
            auth::authorize(&request)?;
            Ok(Response::new(Scaled::parse(&request.get_ref().scaler_metadata)?.spec()))
        })
        .await
    }

    async fn get_metrics(
        &self,
        request: Request<pb::GetMetricsRequest>,
    ) -> std::result::Result<Response<pb::GetMetricsResponse>, Status> {
        observe("GetMetrics", async {
            auth::authorize(&request)?;
            let Some(scaled_ref) = &request.get_ref().scaled_object_ref else {
                return Err(Error::invalid("scaledObjectRef", "must be set"));
            };
            let scaled = Scaled::parse(&scaled_ref.scaler_metadata)?;
            let read = backlog(&self.store, &scaled).await?;
            Ok(Response::new(pb::GetMetricsResponse {
                metric_values: vec![pb::MetricValue {
                    metric_name: scaled.metric_name(),
                    metric_value: read.value as i64,
                    metric_value_float: read.value as f64,
                }],
            }))
        })
        .await
    }

    type StreamMetricSpecStream = SpecStream;

    /// The spec is fixed by the metadata: sent once, the stream then stays open until the
    /// caller leaves or the server shuts down.
    async fn stream_metric_spec(
        &self,
        request: Request<pb::ScaledObjectRef>,
    ) -> std::result::Result<Response<Self::StreamMetricSpecStream>, Status> {
        observe("StreamMetricSpec", async {
            auth::authorize(&request)?;
            let spec = Scaled::parse(&request.get_ref().scaler_metadata)?.spec();
            let (tx, rx) = mpsc::channel(1);
            let shutdown = self.shutdown.clone();
            tokio::spawn(async move {
                if tx.send(Ok(spec)).await.is_ok() {
                    tokio::select! {
                        _ = shutdown.cancelled() => {}
                        _ = tx.closed() => {}
                    }
                }
            });
            Ok(Response::new(Box::pin(ReceiverStream::new(rx)) as SpecStream))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn metadata_names_one_source_and_its_targets() {
        let s = Scaled::parse(&meta(&[("queue", "Billing_jobs"), ("scalerAddress", "baton:50051")])).unwrap();
        assert_eq!((s.kind, s.target_size, s.activation), (SourceKind::Queue, DEFAULT_TARGET_SIZE, 0.0));
        assert_eq!(s.metric_name(), "baton-queue-billing-jobs");
        let s = Scaled::parse(&meta(&[("pool", "vms"), ("targetSize", "2.5"), ("activationTargetSize", "3")])).unwrap();
        assert_eq!((s.kind, s.target_size, s.activation), (SourceKind::Pool, 2.5, 3.0));
        assert_eq!(s.spec().metric_specs[0].target_size, 3);
    }

    #[test]
    fn bad_metadata_names_the_key() {
        let field = |pairs: &[(&str, &str)]| match Scaled::parse(&meta(pairs)) {
            Err(Error::InvalidArgument { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field(&[]), "scalerMetadata");
        assert_eq!(field(&[("queue", "a"), ("receiver", "b")]), "scalerMetadata");
        assert_eq!(field(&[("queue", "a{b}")]), "scalerMetadata.queue");
        assert_eq!(field(&[("receiver", "")]), "scalerMetadata.receiver");
        for bad in ["0", "-1", "ten", "NaN", "inf"] {
            assert_eq!(field(&[("queue", "a"), ("targetSize", bad)]), "scalerMetadata.targetSize", "{bad}");
        }
        assert_eq!(field(&[("queue", "a"), ("activationTargetSize", "-2")]), "scalerMetadata.activationTargetSize");
    }
}

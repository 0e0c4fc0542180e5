//! What every gRPC service shares: who may call what (`auth`, `scopes`), input rules
//! (`validate`), the replica's places for new work (`admission`), the open worker connections
//! (`workers`), observing a call (latency, metrics, status mapping) and the proto time types.
//! The services themselves live in their domains; each is thin: validate, call its domain's
//! store, map the answer. Generated proto types stop there.

pub(crate) mod admission;
pub mod auth;
pub(crate) mod latency;
pub(crate) mod opens;
pub(crate) mod scopes;
pub(crate) mod validate;
pub(crate) mod workers;

use std::{future::Future, time::Instant};

use tonic::{Code, Status};

use crate::error::Error;

/// Runs one RPC, recording its latency (Prometheus, and the console's `latency` recorder) and
/// status code, and mapping errors to `Status`.
pub(crate) async fn observe<T>(
    method: &'static str,
    call: impl Future<Output = Result<T, Error>>,
) -> Result<T, Status> {
    observe_call(method, false, call).await
}

/// Whether a call's `wait` asks it to wait (a long poll).
pub(crate) fn waits(wait: &Option<prost_types::Duration>) -> bool {
    wait.as_ref().is_some_and(|d| d.seconds > 0 || d.nanos > 0)
}

/// [`observe`] for a call that may be a long poll (`waited`: it asked to wait): its time goes to
/// `baton_long_poll_duration_seconds` and the console's long-poll figures, not among the calls
/// that wait for nothing.
pub(crate) async fn observe_call<T>(
    method: &'static str,
    waited: bool,
    call: impl Future<Output = Result<T, Error>>,
) -> Result<T, Status> {
    let started = Instant::now();
    let result = call.await.map_err(|e| {
        if matches!(e.code(), Code::Internal | Code::Unavailable) {
            tracing::warn!(method, error = %e, "call failed");
        }
        Status::from(e)
    });
    let code = match &result {
        Ok(_) => Code::Ok,
        Err(s) => s.code(),
    };
    let elapsed = started.elapsed();
    crate::rpc::latency::record(method, waited, elapsed);
    let code = format!("{code:?}");
    let histogram = if waited { "baton_long_poll_duration_seconds" } else { "baton_rpc_duration_seconds" };
    metrics::histogram!(histogram, "method" => method, "code" => code.clone()).record(elapsed.as_secs_f64());
    metrics::counter!("baton_rpc_total", "method" => method, "code" => code).increment(1);
    result
}

pub(crate) fn timestamp(ms: i64) -> prost_types::Timestamp {
    prost_types::Timestamp { seconds: ms.div_euclid(1000), nanos: (ms.rem_euclid(1000) * 1_000_000) as i32 }
}

pub(crate) fn duration(ms: u64) -> Option<prost_types::Duration> {
    (ms > 0).then(|| prost_types::Duration { seconds: (ms / 1000) as i64, nanos: ((ms % 1000) * 1_000_000) as i32 })
}

//! Baton's Rust client: the generated stubs (`pb`, from `baton-proto`) and the helpers the
//! other languages' client libraries have (see clients/). What a Rust worker depends on: no
//! Redis, no server.
//!
//! - [`Client`]: the connection every helper shares (target, TLS, token, keepalive, deadline);
//!   a helper also takes a plain `tonic::transport::Channel`.
//! - [`producer::Producer`]: register agents, schedule messages, offer pooled resources.
//! - [`worker::Worker`]: leases pushed on a Session stream → handler → completion.
//! - [`leadership::Leadership`]: campaign, keep renewing, report gain and loss; the term itself
//!   is [`term::hold`], shared with Baton's own background leadership.
//! - [`claim::Claimer`]: claim a pooled resource and give it back (or fail it) correctly.
//! - [`subscriber::Subscriber`]: receive scheduled messages, ack them, reconnect.
//! - [`backoff::Backoff`]: how every helper waits before trying again.
//! - [`otel`]: trace context from producer to worker, spans around handlers.
//!
//! Policy is the server's: it clips over-long failure messages, classifies failures from the
//! error's class and HTTP status, and states the leadership timing in its answers.

pub use baton_proto as pb;

pub mod backoff;
pub mod claim;
mod connection;
pub mod leadership;
pub mod otel;
pub mod producer;
pub mod subscriber;
pub mod term;
pub mod worker;

use std::{
    future::Future,
    hash::{BuildHasher, RandomState},
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

pub use backoff::{pushback, Backoff};
pub use connection::{CallDefaults, Client, ClientBuilder, Conn};

/// The reason of the `google.rpc.ErrorInfo` Baton sends with every error (`LEASE_LOST`,
/// `NOT_FOUND`, `LINE_FULL`, `PARENTS_FIXED`, …; docs/errors.md), if `status` carries one. Its
/// retry hint is [`pushback`].
pub fn reason(status: &tonic::Status) -> Option<String> {
    use tonic_types::StatusExt;
    status.get_details_error_info().map(|info| info.reason)
}

/// How long a unary call may take before the helper gives up on it (a hung connection must not
/// hang a helper); long polls get their wait on top.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// A request with a deadline (`grpc-timeout`).
pub(crate) fn with_deadline<T>(message: T, timeout: Duration) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.set_timeout(timeout);
    request
}

/// A `google.protobuf.Duration` from a `std::time::Duration`.
pub(crate) fn pb_duration(d: Duration) -> prost_types::Duration {
    prost_types::Duration { seconds: d.as_secs() as i64, nanos: d.subsec_nanos() as i32 }
}

/// A `std::time::Duration` from a `google.protobuf.Duration` (negative: zero).
pub(crate) fn std_duration(d: &prost_types::Duration) -> Duration {
    Duration::try_from(*d).unwrap_or_default()
}

/// A new request id for one logical call (the server's idempotent retries): 32 hex digits,
/// 64 random bits and a per-process counter.
pub fn request_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{:016x}{n:016x}", RandomState::new().hash_one(n))
}

/// How many times a helper sends one mutating call whose outcome stays unknown.
const IDEMPOTENT_ATTEMPTS: u32 = 4;

/// Sends a mutating call, `send(request id)`, again with the same request id while its outcome
/// is unknown (UNAVAILABLE, DEADLINE_EXCEEDED), after the server's hint or the [`Backoff`]: a
/// call that was applied answers its retry with the first answer, so nothing is applied twice.
/// Other errors (LEASE_LOST, ...) are answered at once.
pub(crate) async fn idempotent<T, F, Fut>(send: F) -> Result<T, tonic::Status>
where
    F: FnMut(String) -> Fut,
    Fut: Future<Output = Result<T, tonic::Status>>,
{
    idempotent_as(request_id(), send).await
}

/// [`idempotent`] with the caller's request id.
pub(crate) async fn idempotent_as<T, F, Fut>(id: String, mut send: F) -> Result<T, tonic::Status>
where
    F: FnMut(String) -> Fut,
    Fut: Future<Output = Result<T, tonic::Status>>,
{
    let mut backoff = Backoff::new();
    let mut attempt = 1;
    loop {
        match send(id.clone()).await {
            Err(status)
                if attempt < IDEMPOTENT_ATTEMPTS
                    && matches!(status.code(), tonic::Code::Unavailable | tonic::Code::DeadlineExceeded) =>
            {
                tokio::time::sleep(backoff.after(&status)).await;
                attempt += 1;
            }
            result => return result,
        }
    }
}

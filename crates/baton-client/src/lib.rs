//! Baton's Rust client: the generated stubs (`pb`, from `baton-proto`) and the helpers the
//! other languages' client libraries have (see clients/). What a Rust worker depends on: no
//! Redis, no server.
//!
//! - [`Client`]: the connection every helper shares (target, TLS, token, keepalive, deadline);
//!   a helper also takes a plain `tonic::transport::Channel`.
//! - [`worker::Worker`]: acquire → handler → heartbeat → complete, for AgentService.
//! - [`leadership::Leadership`]: campaign, keep renewing, report gain and loss.
//! - [`claim::Claimer`]: claim a pooled resource and give it back (or fail it) correctly.
//! - [`subscriber::Subscriber`]: receive scheduled messages, ack them, reconnect.
//! - [`otel`]: trace context from producer to worker, spans around handlers.

pub use baton_proto as pb;

pub mod claim;
mod connection;
pub mod leadership;
pub mod otel;
pub mod subscriber;
pub mod worker;

use std::{
    future::Future,
    hash::{BuildHasher, RandomState},
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

pub use connection::{CallDefaults, Client, ClientBuilder, Conn};

/// The longest failure message the server takes by default (`limits.max_message_bytes`):
/// Complete's `message` and Fail's `error`, in UTF-8 bytes.
pub const MAX_MESSAGE_BYTES: usize = 4096;

/// How long a unary call may take before the helper gives up on it (a hung connection must not
/// hang a helper); long polls get their wait on top.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// At most `max` bytes of `s`, cut on a character boundary: how every helper bounds a failure
/// message to the server's limit (the same rule in every client language).
pub fn truncate_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

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

/// A new request id for one logical call (the server's idempotent retries): 32 hex digits,
/// 64 random bits and a per-process counter.
pub fn request_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let random = RandomState::new().hash_one(COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("{random:016x}{:016x}", COUNTER.load(Ordering::Relaxed))
}

/// How many times a helper sends one mutating call whose outcome stays unknown.
const IDEMPOTENT_ATTEMPTS: u32 = 4;

/// Sends a mutating call, `send(request id)`, again with the same request id while its outcome
/// is unknown (UNAVAILABLE, DEADLINE_EXCEEDED), after the server's pushback hint or a doubling
/// backoff from 100 ms: a call that was applied answers its retry with the first answer, so
/// nothing is applied twice. Other errors (LEASE_LOST, ...) are answered at once.
pub(crate) async fn idempotent<T, F, Fut>(mut send: F) -> Result<T, tonic::Status>
where
    F: FnMut(String) -> Fut,
    Fut: Future<Output = Result<T, tonic::Status>>,
{
    let id = request_id();
    let mut backoff = Duration::from_millis(100);
    let mut attempt = 1;
    loop {
        match send(id.clone()).await {
            Err(status)
                if attempt < IDEMPOTENT_ATTEMPTS
                    && matches!(status.code(), tonic::Code::Unavailable | tonic::Code::DeadlineExceeded) =>
            {
                tokio::time::sleep(pushback(&status).unwrap_or(backoff)).await;
                backoff *= 2;
                attempt += 1;
            }
            result => return result,
        }
    }
}

/// The server's `grpc-retry-pushback-ms` hint of a status, if any.
pub fn pushback(status: &tonic::Status) -> Option<Duration> {
    let ms = status.metadata().get("grpc-retry-pushback-ms")?.to_str().ok()?.parse().ok()?;
    Some(Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    // The shared truncation case of every client language: 2-, 3- and 4-byte characters, cut
    // by bytes on a character boundary.
    #[test]
    fn truncate_utf8_cuts_on_a_character_boundary() {
        let s = "é€😀".repeat(1000); // 9 bytes a round
        let cut = truncate_utf8(&s, MAX_MESSAGE_BYTES);
        assert!(cut.len() <= MAX_MESSAGE_BYTES && cut.len() > MAX_MESSAGE_BYTES - 4);
        assert!(s.starts_with(cut));
        assert_eq!(truncate_utf8("abc", 3), "abc");
        assert_eq!(truncate_utf8("é", 1), "");
        assert_eq!(truncate_utf8("a😀", 4), "a");
        assert_eq!(truncate_utf8("a😀", 5), "a😀");
    }
}

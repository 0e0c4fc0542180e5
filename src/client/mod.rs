//! Client-side helpers for Rust workers, over the generated client (`crate::pb`): the same
//! helpers the other languages' client libraries have (see clients/).
//!
//! - [`worker::Worker`]: acquire → handler → heartbeat → complete, for AgentService.
//! - [`leadership::Leadership`]: campaign, keep renewing, report gain and loss.
//! - [`claim::Claimer`]: claim a pooled resource and give it back (or fail it) correctly.
//! - [`subscriber::Subscriber`]: receive scheduled messages, ack them, reconnect.

pub mod claim;
pub mod leadership;
pub mod subscriber;
pub mod worker;

use std::time::Duration;

/// A `google.protobuf.Duration` from a `std::time::Duration`.
pub(crate) fn pb_duration(d: Duration) -> prost_types::Duration {
    prost_types::Duration { seconds: d.as_secs() as i64, nanos: d.subsec_nanos() as i32 }
}

/// The server's `grpc-retry-pushback-ms` hint of a status, if any.
pub fn pushback(status: &tonic::Status) -> Option<Duration> {
    let ms = status.metadata().get("grpc-retry-pushback-ms")?.to_str().ok()?.parse().ok()?;
    Some(Duration::from_millis(ms))
}

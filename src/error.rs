//! Baton's one error type, and its one mapping to a gRPC `Status` with a `google.rpc.ErrorInfo`
//! detail (domain `baton`). Codes follow the litmus test of google/rpc/code.proto.

use std::collections::HashMap;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

/// The domain of every `ErrorInfo` Baton sends.
pub const DOMAIN: &str = "baton";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request field is missing, malformed or out of bounds. Nothing was changed.
    #[error("{field}: {reason}")]
    InvalidArgument { field: String, reason: String },
    /// The fencing token presented is stale or unknown. Nothing was changed.
    #[error("lease lost: {0}")]
    LeaseLost(String),
    /// The named thing does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// Redis could not be reached or answered in time: retry this call later.
    #[error("redis unavailable: {0}")]
    Unavailable(String),
    /// A circuit breaker is open: calls on this path to this Redis node fail fast until it
    /// answers again.
    #[error("circuit breaker of the {path} path to Redis node {node} is open: that node is failing; retry in {retry_after_ms} ms")]
    CircuitOpen { path: &'static str, node: String, retry_after_ms: u64 },
    /// The change is applied on its primary, but fewer replicas than `redis.min_replicas_ack`
    /// confirmed it in time: retry later (fenced and idempotent calls are safe to repeat). Not a
    /// failure of the node (it answered), so no breaker counts it.
    #[error("not replicated: {0}")]
    NotReplicated(String),
    /// A bounded resource is full (a pool's waiting line): shed load, retry after the hint.
    #[error("{what} is full; retry in {retry_after_ms} ms")]
    Exhausted { what: String, retry_after_ms: u64 },
    /// This replica has as much new work in progress as `limits.max_inflight_work` allows: the
    /// call was shed before it did anything; retry after the hint.
    #[error("{rpc} shed: this replica is at limits.max_inflight_work; nothing was done; retry in {retry_after_ms} ms")]
    Overloaded { rpc: &'static str, retry_after_ms: u64 },
    /// Redis is out of memory (`maxmemory` reached with `noeviction`): the script was refused
    /// before it wrote anything. Shed load, retry after the hint; an operator must make room.
    #[error("redis is out of memory (maxmemory reached): nothing was written; retry in {retry_after_ms} ms")]
    RedisFull { retry_after_ms: u64 },
    /// Redis answered with an error Baton did not expect.
    #[error("redis error: {0}")]
    Redis(redis::RedisError),
    /// The caller presented no credentials, or ones Baton does not know.
    #[error("unauthenticated: {0}")]
    Unauthenticated(String),
    /// The caller is known but may not do this (a role or a scope is missing).
    #[error("permission denied: {message}")]
    PermissionDenied { permission: String, message: String },
    /// An existing agent was registered with other parents (`after`), which are fixed when it is
    /// created. Nothing was changed. `field` is `after` from the store; the service names the
    /// request's field (`agents[i].after`) by the `agent`'s name.
    #[error("{field}: {message}")]
    ParentsFixed { agent: String, field: String, message: String },
    /// A batch is closed: no member may be added (RegisterBatch). Nothing was changed.
    #[error("batch closed: {0}")]
    BatchClosed(String),
    /// An agent's run keeps as many signals as `limits.max_pending_signals` allows (Signal):
    /// nothing was written; a wait that consumes one makes room.
    #[error("{0}")]
    SignalsFull(String),
    /// The call is valid but cannot apply to this source as it is configured (e.g. limits on a
    /// sharded queue): don't retry until the configuration changes.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A queue cannot join the shared concurrency group named in `limits.group` (it does not
    /// exist, or the store is a Redis Cluster). Nothing was changed.
    #[error("limits.group: {0}")]
    GroupRefused(String),
    /// The configuration is invalid.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A bug: a script answered in a shape Baton does not know.
    #[error("internal error: {0}")]
    Internal(String),
}

/// How long a client should wait before retrying an UNAVAILABLE call.
const UNAVAILABLE_PUSHBACK_MS: u64 = 1_000;

/// How long a client should wait before retrying a call refused by a full Redis.
const REDIS_FULL_PUSHBACK_MS: u64 = 5_000;

impl Error {
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidArgument { field: field.into(), reason: reason.into() }
    }

    /// The same error with the field it names placed within `prefix` ("completions[3]."): an
    /// item of a batch is checked with its own field names, and the item's place is written
    /// only when it fails (the hot path formats nothing). Other errors are unchanged.
    pub fn within(self, prefix: std::fmt::Arguments<'_>) -> Self {
        match self {
            Error::InvalidArgument { field, reason } => {
                Error::InvalidArgument { field: format!("{prefix}{field}"), reason }
            }
            e => e,
        }
    }

    /// The UPPER_SNAKE reason sent in `ErrorInfo`.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::InvalidArgument { .. } => "INVALID_ARGUMENT",
            Error::LeaseLost(_) => "LEASE_LOST",
            Error::NotFound(_) => "NOT_FOUND",
            Error::Unavailable(_) => "REDIS_UNAVAILABLE",
            Error::CircuitOpen { .. } => "CIRCUIT_OPEN",
            Error::NotReplicated(_) => "NOT_REPLICATED",
            Error::Exhausted { .. } => "LINE_FULL",
            Error::Overloaded { .. } => "OVERLOADED",
            Error::RedisFull { .. } => "REDIS_FULL",
            Error::Redis(_) => "REDIS_ERROR",
            Error::Unauthenticated(_) => "UNAUTHENTICATED",
            Error::PermissionDenied { .. } => "PERMISSION_DENIED",
            Error::Unsupported(_) => "UNSUPPORTED",
            Error::GroupRefused(_) => "GROUP_REFUSED",
            Error::BatchClosed(_) => "BATCH_CLOSED",
            Error::SignalsFull(_) => "SIGNALS_FULL",
            Error::ParentsFixed { .. } => "PARENTS_FIXED",
            Error::Config(_) => "INVALID_CONFIG",
            Error::Internal(_) => "INTERNAL",
        }
    }

    pub fn code(&self) -> Code {
        match self {
            Error::InvalidArgument { .. } => Code::InvalidArgument,
            Error::LeaseLost(_)
            | Error::Unsupported(_)
            | Error::GroupRefused(_)
            | Error::BatchClosed(_)
            | Error::ParentsFixed { .. } => Code::FailedPrecondition,
            Error::NotFound(_) => Code::NotFound,
            Error::Unavailable(_) | Error::CircuitOpen { .. } | Error::NotReplicated(_) => Code::Unavailable,
            Error::Exhausted { .. } | Error::Overloaded { .. } | Error::RedisFull { .. } | Error::SignalsFull(_) => {
                Code::ResourceExhausted
            }
            Error::Unauthenticated(_) => Code::Unauthenticated,
            Error::PermissionDenied { .. } => Code::PermissionDenied,
            Error::Redis(_) | Error::Config(_) | Error::Internal(_) => Code::Internal,
        }
    }
}

/// How an error caused by Redis's ACL (NOPERM) begins.
pub const ACL_REFUSED: &str = "Redis refused Baton's ACL user";

impl From<redis::RedisError> for Error {
    fn from(e: redis::RedisError) -> Self {
        if e.is_io_error() || e.is_connection_refusal() || e.is_timeout() || e.is_connection_dropped() {
            Error::Unavailable(e.to_string())
        } else if matches!(
            e.kind(),
            redis::ErrorKind::ClusterConnectionNotFound | redis::ErrorKind::MasterNameNotFoundBySentinel
        ) {
            // No node of the cluster answers (yet), or the sentinels name no master (yet).
            Error::Unavailable(e.to_string())
        } else if matches!(e.code(), Some("CLUSTERDOWN" | "TRYAGAIN" | "MASTERDOWN" | "READONLY" | "LOADING"))
            || e.to_string().contains("WAIT cannot be used with replica")
        {
            // A failover, a slot move or a restart in progress: over within seconds.
            Error::Unavailable(e.to_string())
        } else if e.code() == Some("NOPERM") || e.to_string().contains("The user executing the script can't") {
            Error::Unavailable(format!("{ACL_REFUSED} ({e}); docs/redis.md lists the permissions Baton needs"))
        } else if e.code() == Some("OOM") {
            // Redis refuses a script's first write when over maxmemory, so nothing was applied.
            Error::RedisFull { retry_after_ms: REDIS_FULL_PUSHBACK_MS }
        } else {
            Error::Redis(e)
        }
    }
}

impl From<bb8::RunError<redis::RedisError>> for Error {
    fn from(e: bb8::RunError<redis::RedisError>) -> Self {
        match e {
            bb8::RunError::User(e) => e.into(),
            bb8::RunError::TimedOut => Error::Unavailable("timed out waiting for a Redis connection".into()),
        }
    }
}

/// Longest field path an error quotes (a label key is part of one).
const MAX_FIELD_BYTES: usize = 160;
/// Longest reason or message an error carries. A status travels in HTTP/2 headers, which
/// clients bound (8–16 KiB): an error that echoed a large input could not be read at all.
const MAX_MESSAGE_BYTES: usize = 512;

/// At most `max` bytes of `s`, cut on a character boundary, with "…" where it was cut: how an
/// error quotes whatever the caller sent.
pub fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

impl From<Error> for Status {
    fn from(e: Error) -> Self {
        let mut metadata = HashMap::new();
        let mut details = ErrorDetails::new();
        // Every text below is bounded: fields and reasons may quote what the caller sent.
        let e = match e {
            Error::InvalidArgument { field, reason } => {
                let (field, reason) = (clip(&field, MAX_FIELD_BYTES), clip(&reason, MAX_MESSAGE_BYTES));
                metadata.insert("field".to_string(), field.clone());
                details.add_bad_request_violation(field.clone(), reason.clone());
                Error::InvalidArgument { field, reason }
            }
            Error::ParentsFixed { agent, field, message } => {
                let field = clip(&field, MAX_FIELD_BYTES);
                metadata.insert("field".to_string(), field.clone());
                Error::ParentsFixed { agent, field, message: clip(&message, MAX_MESSAGE_BYTES) }
            }
            Error::PermissionDenied { permission, message } => {
                let permission = clip(&permission, MAX_FIELD_BYTES);
                metadata.insert("permission".to_string(), permission.clone());
                Error::PermissionDenied { permission, message: clip(&message, MAX_MESSAGE_BYTES) }
            }
            Error::CircuitOpen { path, node, retry_after_ms } => {
                metadata.insert("path".to_string(), path.to_string());
                metadata.insert("node".to_string(), node.clone());
                Error::CircuitOpen { path, node, retry_after_ms }
            }
            other => other,
        };
        let pushback_ms = match &e {
            Error::Unavailable(_) | Error::NotReplicated(_) | Error::SignalsFull(_) => Some(UNAVAILABLE_PUSHBACK_MS),
            Error::CircuitOpen { retry_after_ms, .. }
            | Error::Exhausted { retry_after_ms, .. }
            | Error::Overloaded { retry_after_ms, .. }
            | Error::RedisFull { retry_after_ms } => Some(*retry_after_ms),
            _ => None,
        };
        if let Some(ms) = pushback_ms {
            details.set_retry_info(Some(std::time::Duration::from_millis(ms)));
        }
        details.set_error_info(e.reason(), DOMAIN, metadata);
        let message = clip(&e.to_string(), MAX_FIELD_BYTES + MAX_MESSAGE_BYTES + 2);
        let mut status = Status::with_error_details(e.code(), message, details);
        if let Some(ms) = pushback_ms {
            status.metadata_mut().insert("grpc-retry-pushback-ms", ms.to_string().parse().expect("ascii"));
        }
        status
    }
}

/// A status of `code` that did not come from an `Error` (a deadline, or a status tonic made,
/// found bare by `status::ErrorInfoLayer`), with an ErrorInfo whose reason is the code's name.
pub fn detailed(code: Code, message: impl Into<String>) -> Status {
    let reason = match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    };
    let mut details = ErrorDetails::new();
    details.set_error_info(reason, DOMAIN, HashMap::new());
    // Every UNAVAILABLE and RESOURCE_EXHAUSTED carries a retry hint, whoever made it, so no
    // client needs a delay of its own for them.
    let pushback = matches!(code, Code::Unavailable | Code::ResourceExhausted).then_some(UNAVAILABLE_PUSHBACK_MS);
    if let Some(ms) = pushback {
        details.set_retry_info(Some(std::time::Duration::from_millis(ms)));
    }
    let message = clip(&message.into(), MAX_FIELD_BYTES + MAX_MESSAGE_BYTES + 2);
    let mut status = Status::with_error_details(code, message, details);
    if let Some(ms) = pushback {
        status.metadata_mut().insert("grpc-retry-pushback-ms", ms.to_string().parse().expect("ascii"));
    }
    status
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unavailable_and_exhausted_status_carries_a_retry_hint() {
        use tonic_types::StatusExt;
        for code in [Code::Unavailable, Code::ResourceExhausted] {
            let status = detailed(code, "bare");
            assert!(status.get_details_retry_info().is_some(), "{code:?}");
            assert!(status.metadata().get("grpc-retry-pushback-ms").is_some(), "{code:?}");
        }
        let status = detailed(Code::Internal, "bare");
        assert!(status.get_details_retry_info().is_none());
    }

    #[test]
    fn clip_cuts_on_a_character_boundary() {
        assert_eq!(clip("short", 10), "short");
        let long = "é".repeat(100); // 200 bytes
        let cut = clip(&long, 64);
        assert!(cut.len() <= 64 && cut.ends_with('…'), "{cut}");
        assert!(long.starts_with(cut.trim_end_matches('…')));
        assert_eq!(clip("abcdef", 4), "a…");
    }
}

//! OpenTelemetry in the helpers, through `tracing` and `tracing-opentelemetry` (the application
//! installs the SDK and its `tracing_opentelemetry::layer()`; without them all of this is a
//! plain `tracing` span or nothing):
//!
//! - every call through a [`super::Client`] carries the caller's trace context as W3C
//!   `traceparent` metadata, so Baton stores it with the agents and messages the call creates;
//! - the worker runs each lease's handler in a span `process <queue>` (kind consumer): a child of
//!   the agent's `traceparent` for a one-shot agent, a new trace linked to it for a recurring
//!   one (its runs must not pile into the registration's trace); the subscriber runs each
//!   message's handler in a span `process <receiver>`, a child of the message's `traceparent`.

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use tonic::metadata::{AsciiMetadataValue, MetadataMap};
use tracing::{field, Span};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::pb;

/// The `tracing` target of the helpers' spans.
pub const TARGET: &str = "baton_client";

/// The caller's trace context as a W3C `traceparent`: the current `tracing` span's (through
/// `tracing-opentelemetry`), else OpenTelemetry's current context; None when neither is valid.
pub fn current_traceparent() -> Option<String> {
    let from_span = Span::current().context();
    let sc = from_span.span().span_context().clone();
    let sc = if sc.is_valid() { sc } else { opentelemetry::Context::current().span().span_context().clone() };
    format_traceparent(&sc)
}

/// A span context as a W3C `traceparent` (version 00), or None when it is not valid.
pub fn format_traceparent(sc: &SpanContext) -> Option<String> {
    sc.is_valid().then(|| format!("00-{}-{}-{:02x}", sc.trace_id(), sc.span_id(), sc.trace_flags().to_u8()))
}

/// Adds `traceparent` to a call's metadata, unless the caller set one.
pub(crate) fn inject(metadata: &mut MetadataMap) {
    if metadata.contains_key("traceparent") {
        return;
    }
    if let Some(value) = current_traceparent().and_then(|tp| AsciiMetadataValue::try_from(tp).ok()) {
        metadata.insert("traceparent", value);
    }
}

/// A remote span context from a W3C `traceparent` (version 00 fields), or None.
pub fn parse_traceparent(tp: &str) -> Option<SpanContext> {
    let mut parts = tp.split('-');
    let (version, trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if version.len() != 2 || version == "ff" || trace.len() != 32 || span.len() != 16 || flags.len() != 2 {
        return None;
    }
    if version == "00" && parts.next().is_some() {
        return None;
    }
    let lower = |s: &str| s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
    if !(lower(version) && lower(trace) && lower(span) && lower(flags)) {
        return None;
    }
    let trace_id = TraceId::from_hex(trace).ok()?;
    let span_id = SpanId::from_hex(span).ok()?;
    let flags = TraceFlags::new(u8::from_str_radix(flags, 16).ok()? & 1);
    let sc = SpanContext::new(trace_id, span_id, flags, true, TraceState::default());
    sc.is_valid().then_some(sc)
}

/// The span a lease's handler runs in (see the module's documentation).
pub(crate) fn lease_span(lease: &pb::Lease) -> Span {
    let agent = lease.agent.as_ref();
    let span = tracing::info_span!(
        target: TARGET,
        "process",
        otel.name = format!("process {}", lease.queue),
        otel.kind = "consumer",
        otel.status_code = field::Empty,
        messaging.system = "baton",
        messaging.operation.type = "process",
        messaging.destination.name = lease.queue.as_str(),
        baton.agent.name = lease.name.as_str(),
        baton.lease.token = lease.token,
        baton.attempt = lease.attempt,
        baton.outcome = field::Empty,
    );
    let producer = agent.and_then(|a| parse_traceparent(&a.traceparent));
    let one_shot = agent.is_none_or(|a| a.interval.is_none() && a.cron.is_empty());
    match producer {
        Some(sc) if one_shot => {
            let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(sc));
        }
        producer => {
            let _ = span.set_parent(opentelemetry::Context::new());
            if let Some(sc) = producer {
                span.add_link(sc);
            }
        }
    }
    span
}

/// Records what a handler's run came to on its span: Ok, or Err with the failure's outcome
/// when the handler chose one (None: the server classifies it after the span ends).
pub(crate) fn record_outcome(span: &Span, result: Result<(), Option<pb::Outcome>>) {
    let outcome = match result {
        Ok(()) => Some(pb::Outcome::Success),
        Err(outcome) => {
            span.record("otel.status_code", "ERROR");
            outcome
        }
    };
    if let Some(outcome) = outcome {
        span.record("baton.outcome", outcome.as_str_name().trim_start_matches("OUTCOME_"));
    }
}

/// The span a message's handler runs in: a child of the message's `traceparent`.
pub(crate) fn message_span(receiver: &str, message: &pb::SubscribeResponse) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "process",
        otel.name = format!("process {receiver}"),
        otel.kind = "consumer",
        otel.status_code = field::Empty,
        messaging.system = "baton",
        messaging.operation.type = "process",
        messaging.destination.name = receiver,
        messaging.message.id = message.id.as_str(),
        baton.delivery_count = message.delivery_count,
    );
    let parent = match parse_traceparent(&message.traceparent) {
        Some(sc) => opentelemetry::Context::new().with_remote_span_context(sc),
        None => opentelemetry::Context::new(),
    };
    let _ = span.set_parent(parent);
    span
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparents() {
        let sc = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(sc.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
        assert!(sc.is_sampled() && sc.is_remote());
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert!(parse_traceparent(bad).is_none(), "{bad}");
        }
    }
}

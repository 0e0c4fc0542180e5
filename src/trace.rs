//! Traces. Two halves:
//!
//! - **OpenTelemetry**, off by default: when the standard `OTEL_*` variables ask for OTLP
//!   ([`pipeline`]), every gRPC call gets a server span ([`TraceLayer`]), a child of the caller's
//!   `traceparent`, and every script it runs a client span beneath it (`store::scripts`).
//! - **Trace context carried with work**: the `traceparent` a producer's call brings is stored
//!   with the agent or message it creates and handed to the worker that runs it, so one job's
//!   trace spans producer → Baton → worker. With OpenTelemetry on, what is stored is the context
//!   of Baton's own span for that call, a child of the producer's.
//! - **A child's trace linked to its parents'**: an agent with parents (`Agent.after`) keeps the
//!   stored trace context of its first [`MAX_LINKS`] parents, read as Register checks that they
//!   exist (`knownAgents`); the Register (or RegisterBatch) span that creates it links to them,
//!   its lease hands them out (`Lease.parents[].traceparent`), and the Acquire span that grants
//!   it links to them too ([`link_current`]).
//!
//! Spans are `tracing` spans of target [`TARGET`], turned into OpenTelemetry spans by
//! `tracing-opentelemetry`; the log layer never sees them.

use std::{
    sync::atomic::{AtomicBool, Ordering},
    task::{Context, Poll},
};

use futures::future::BoxFuture;
use opentelemetry::{
    propagation::{Extractor, TextMapPropagator},
    trace::TraceContextExt,
    KeyValue,
};
use opentelemetry_sdk::{propagation::TraceContextPropagator, trace::SdkTracerProvider, Resource};
use tonic::metadata::MetadataMap;
use tracing::{field, Instrument, Span};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::error::{Error, Result};

/// The `tracing` target of every span meant for OpenTelemetry.
pub const TARGET: &str = "baton_otel";

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Whether OpenTelemetry tracing is on in this process.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Whether the `OTEL_*` variables (read through `var`) ask for traces over OTLP: an OTLP
/// endpoint is set, or `OTEL_TRACES_EXPORTER=otlp`; never with `OTEL_SDK_DISABLED=true` or
/// `OTEL_TRACES_EXPORTER=none`. Baton exports over OTLP/gRPC only: another exporter or protocol
/// is a configuration error, not silence.
pub fn otlp_requested(var: impl Fn(&str) -> Option<String>) -> Result<bool> {
    let get = |name: &str| var(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    if get("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Ok(false);
    }
    match get("OTEL_TRACES_EXPORTER").as_deref() {
        Some("none") => return Ok(false),
        Some("otlp") => {}
        Some(other) => {
            return Err(Error::Config(format!(
                "OTEL_TRACES_EXPORTER={other}: Baton exports traces over OTLP only (otlp, or none)"
            )))
        }
        None => {
            if get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_none() && get("OTEL_EXPORTER_OTLP_ENDPOINT").is_none() {
                return Ok(false);
            }
        }
    }
    let protocol = get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or_else(|| get("OTEL_EXPORTER_OTLP_PROTOCOL"));
    match protocol.as_deref() {
        None | Some("grpc") => Ok(true),
        Some(other) => Err(Error::Config(format!(
            "OTEL_EXPORTER_OTLP_PROTOCOL={other}: Baton exports traces over OTLP/gRPC only; set it to grpc \
             (a collector's port 4317)"
        ))),
    }
}

/// The OTLP trace pipeline, when the `OTEL_*` variables ask for it (see [`otlp_requested`]);
/// the exporter reads the rest of them itself (endpoint, headers, timeout, compression), the
/// SDK the sampler (`OTEL_TRACES_SAMPLER`) and resource (`OTEL_SERVICE_NAME`, by default
/// "baton"; `OTEL_RESOURCE_ATTRIBUTES`). Call inside the tokio runtime, once.
pub fn pipeline() -> Result<Option<SdkTracerProvider>> {
    if !otlp_requested(|name| std::env::var(name).ok())? {
        return Ok(None);
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .build()
        .map_err(|e| Error::Config(format!("OTLP trace exporter: {e}")))?;
    let mut resource = Resource::builder().with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| v.contains("service.name="));
    if !named {
        resource = resource.with_service_name("baton");
    }
    let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource.build()).build();
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    ENABLED.store(true, Ordering::Relaxed);
    Ok(Some(provider))
}

/// A server span around every gRPC call (when tracing is on), child of the caller's
/// `traceparent`: `baton.v1.AgentService/Register`, with the `rpc.*` attributes and, when the
/// call ends with an error status before its body, `rpc.grpc.status_code` and an error status.
#[derive(Clone, Copy, Debug, Default)]
pub struct TraceLayer;

impl<S> tower::Layer<S> for TraceLayer {
    type Service = Traced<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Traced { inner }
    }
}

#[derive(Clone, Debug)]
pub struct Traced<S> {
    inner: S,
}

impl<S, B, R> tower::Service<http::Request<B>> for Traced<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, std::result::Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<std::result::Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        if !enabled() {
            return Box::pin(self.inner.call(req));
        }
        let path = req.uri().path();
        let full = path.strip_prefix('/').unwrap_or(path);
        let (service, method) = full.split_once('/').unwrap_or((full, ""));
        let span = tracing::info_span!(
            target: TARGET,
            "rpc",
            otel.name = full,
            otel.kind = "server",
            rpc.system = "grpc",
            rpc.service = service,
            rpc.method = method,
            rpc.grpc.status_code = field::Empty,
            otel.status_code = field::Empty,
        );
        let parent = TraceContextPropagator::new().extract(&Headers(req.headers()));
        let _ = span.set_parent(parent);
        let call = {
            let _entered = span.enter();
            self.inner.call(req)
        };
        let record = span.clone();
        Box::pin(
            async move {
                let result = call.await;
                if let Ok(response) = &result {
                    let code = (response.headers().get("grpc-status").and_then(|v| v.to_str().ok()))
                        .and_then(|v| v.parse::<i32>().ok())
                        .unwrap_or(0);
                    record.record("rpc.grpc.status_code", code);
                    // Server errors, as OpenTelemetry's gRPC conventions count them: UNKNOWN,
                    // DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS.
                    if matches!(code, 2 | 4 | 12 | 13 | 14 | 15) {
                        record.record("otel.status_code", "ERROR");
                    }
                }
                result
            }
            .instrument(span),
        )
    }
}

struct Headers<'a>(&'a http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// A client span for one script call (op: FCALL or EVALSHA), when tracing is on and the call runs inside a traced
/// RPC (background sweeps and stream rounds make no traces of their own); else none.
pub fn script_span(op: &'static str, script: &'static str) -> Option<Span> {
    if !enabled() || !Span::current().context().span().span_context().is_valid() {
        return None;
    }
    Some(tracing::info_span!(
        target: TARGET,
        "script",
        otel.name = format!("{op} {script}"),
        otel.kind = "client",
        db.system.name = "redis",
        db.operation.name = op,
        baton.script = script,
        otel.status_code = field::Empty,
        error.type = field::Empty,
    ))
}

/// Marks a script span failed.
pub fn script_failed(span: &Span, error: &Error) {
    span.record("otel.status_code", "ERROR");
    span.record("error.type", format!("{:?}", error.code()).as_str());
}

/// The W3C `traceparent` of the current span, when OpenTelemetry tracing is on.
pub fn current_traceparent() -> Option<String> {
    if !enabled() {
        return None;
    }
    baton_client::otel::format_traceparent(Span::current().context().span().span_context())
}

/// Most parents of one agent whose trace context Baton keeps with it (the first, in `after`
/// order), and most links Baton adds to one span: OpenTelemetry's own default limit of links per
/// span (`OTEL_SPAN_LINK_COUNT_LIMIT`) is 128 too.
pub const MAX_LINKS: usize = 128;

/// Links the current call's span to each trace context of `traceparents`, when tracing is on
/// and the call is traced: the first [`MAX_LINKS`] distinct valid ones, never the span itself
/// (a parent registered by the same call). Returns how many links it added.
pub fn link_current<'a>(traceparents: impl IntoIterator<Item = &'a str>) -> usize {
    if !enabled() {
        return 0;
    }
    let span = Span::current();
    let own = span.context().span().span_context().clone();
    if !own.is_valid() {
        return 0;
    }
    let mut linked = std::collections::HashSet::new();
    for tp in traceparents {
        if linked.len() == MAX_LINKS {
            break;
        }
        let Some(cx) = baton_client::otel::parse_traceparent(tp) else { continue };
        if (cx.trace_id(), cx.span_id()) == (own.trace_id(), own.span_id()) {
            continue;
        }
        if linked.insert((cx.trace_id(), cx.span_id())) {
            span.add_link(cx);
        }
    }
    linked.len()
}

/// The W3C `traceparent` header: `version-traceid-parentid-flags`, lowercase hex.
pub const HEADER: &str = "traceparent";

/// Whether `s` is a usable `traceparent`: version 00 exactly, or a later version (not ff) with
/// the same first four fields; trace and parent ids not all zeros (the client's parser).
pub fn is_valid(s: &str) -> bool {
    baton_client::otel::parse_traceparent(s).is_some()
}

/// Checks an explicit `traceparent` field: empty, or a valid one (at most 512 bytes).
pub fn check_field(field: &str, value: &str) -> Result<()> {
    if value.is_empty() || (value.len() <= 512 && is_valid(value)) {
        return Ok(());
    }
    Err(Error::invalid(field, "must be a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>) or empty"))
}

/// The trace context to store with what this call creates: an explicit field wins; else the
/// context of Baton's span for this call when tracing is on; else the call's own `traceparent`
/// metadata when it is valid (an invalid header is ignored, as W3C asks); else none.
pub fn for_item(explicit: &str, incoming: &str) -> String {
    if !explicit.is_empty() {
        return explicit.to_owned();
    }
    if let Some(current) = current_traceparent() {
        return current;
    }
    incoming.to_owned()
}

/// The call's valid `traceparent` metadata, or "".
pub fn incoming(metadata: &MetadataMap) -> String {
    match metadata.get(HEADER).and_then(|v| v.to_str().ok()) {
        Some(v) if v.len() <= 512 && is_valid(v) => v.to_owned(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparents() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert!(is_valid(good));
        assert!(is_valid("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-later"));
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-011",
        ] {
            assert!(!is_valid(bad), "{bad}");
        }
        assert!(check_field("agents[0].traceparent", "").is_ok());
        let err = check_field("agents[0].traceparent", "nope").unwrap_err();
        assert!(err.to_string().contains("agents[0].traceparent"), "{err}");
    }

    #[test]
    fn otel_variables() {
        let with = |vars: &'static [(&'static str, &'static str)]| {
            otlp_requested(|name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()))
        };
        assert!(!with(&[]).unwrap(), "off by default");
        assert!(with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317")]).unwrap());
        assert!(with(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://collector:4317")]).unwrap());
        assert!(with(&[("OTEL_TRACES_EXPORTER", "otlp")]).unwrap());
        assert!(!with(&[("OTEL_TRACES_EXPORTER", "none"), ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317")]).unwrap());
        assert!(!with(&[("OTEL_SDK_DISABLED", "true"), ("OTEL_TRACES_EXPORTER", "otlp")]).unwrap());
        assert!(with(&[("OTEL_TRACES_EXPORTER", "otlp"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]).unwrap());
        let err =
            with(&[("OTEL_TRACES_EXPORTER", "otlp"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")]).unwrap_err();
        assert!(err.to_string().contains("OTEL_EXPORTER_OTLP_PROTOCOL"), "{err}");
        let err = with(&[("OTEL_TRACES_EXPORTER", "zipkin")]).unwrap_err();
        assert!(err.to_string().contains("OTEL_TRACES_EXPORTER"), "{err}");
        assert!(!with(&[("OTEL_TRACES_PROTOCOL", "http/protobuf")]).unwrap(), "a protocol alone asks for nothing");
    }
}

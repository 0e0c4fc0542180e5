"""OpenTelemetry trace propagation (the API only: the application brings the SDK).

- Outgoing: every call made through a :class:`baton.Client` (or a helper's own "host:port"
  channel) carries the current OpenTelemetry context as W3C ``traceparent`` (and
  ``tracestate`` when non-empty) metadata, in the W3C TraceContext format whatever global
  propagator is configured; nothing when there is no valid current span context, and never
  over a ``traceparent`` the caller put in the call's metadata. Baton stores it with an agent
  (Register) or a scheduled message (Schedule) and hands it back with the lease / delivery.
- Incoming: the :class:`baton.Worker` runs each lease's handler inside a CONSUMER span
  ``process <queue>``, the :class:`baton.Subscriber` each message's handler inside a CONSUMER
  span ``process <receiver>`` (tracer ``baton-client``), current while the handler runs. A
  one-shot agent's run and a message's handling are children of the producer's context; a
  recurring agent's run is a new root span with a link to it (so its runs do not pile into the
  registration's trace forever).

Without an SDK the API's defaults make all of this a no-op.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, List, Optional, Sequence, Tuple

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

#: The tracer's (instrumentation scope's) name.
TRACER_NAME = "baton-client"

_PROPAGATOR = TraceContextTextMapPropagator()
_tracer: Optional[trace.Tracer] = None


def tracer() -> trace.Tracer:
    """The ``baton-client`` tracer of the global tracer provider (a proxy until the
    application sets one, then the application's)."""
    global _tracer
    if _tracer is None:
        _tracer = trace.get_tracer(TRACER_NAME)
    return _tracer


def outgoing(metadata: Optional[Sequence[Tuple[str, Any]]]) -> List[Tuple[str, str]]:
    """The trace context entries to add to a call's `metadata`: ``traceparent`` (and
    ``tracestate``) of the current span context; none when it is not valid or when the
    metadata has a ``traceparent`` already."""
    if not trace.get_current_span().get_span_context().is_valid:
        return []
    if metadata and any(str(k).lower() == "traceparent" for k, _ in metadata):
        return []
    carrier: dict = {}
    _PROPAGATOR.inject(carrier)
    return list(carrier.items())


def traceparent() -> str:
    """The current span context as a W3C traceparent ("" when there is none)."""
    carrier: dict = {}
    if trace.get_current_span().get_span_context().is_valid:
        _PROPAGATOR.inject(carrier)
    return carrier.get("traceparent", "")


def parse_traceparent(value: str) -> Optional[SpanContext]:
    """The (remote) span context of a W3C traceparent, or None when it is empty or not valid."""
    if not value:
        return None
    ctx = _PROPAGATOR.extract({"traceparent": value}, context=otel_context.Context())
    span_context = trace.get_current_span(ctx).get_span_context()
    return span_context if span_context.is_valid else None


def _is_recurring(agent: Any) -> bool:
    interval = agent.interval if agent.HasField("interval") else None
    return bool(agent.cron) or (interval is not None and (interval.seconds != 0 or interval.nanos != 0))


def _start(name: str, parent: Optional[SpanContext], link: bool, attributes: dict) -> Span:
    # Parent and root spans are both started from an explicit context, never the one the
    # helper's loop happens to run in.
    if parent is not None and not link:
        ctx = trace.set_span_in_context(trace.NonRecordingSpan(parent), otel_context.Context())
        links = None
    else:
        ctx = otel_context.Context()
        links = [Link(parent)] if parent is not None else None
    return tracer().start_span(name, context=ctx, kind=SpanKind.CONSUMER, attributes=attributes, links=links)


@contextlib.contextmanager
def lease_span(lease: Any) -> Iterator[Span]:
    """The span a lease's handler runs in (current inside the block; ended when it ends).
    Attributes: messaging.system, messaging.operation.type, messaging.destination.name (the
    queue), baton.agent.name, baton.lease.token, baton.attempt. Parent: a one-shot agent's
    valid ``lease.agent.traceparent``; a recurring agent's run is a new root linked to it."""
    attributes = {
        "messaging.system": "baton",
        "messaging.operation.type": "process",
        "messaging.destination.name": lease.queue,
        "baton.agent.name": lease.name,
        "baton.lease.token": int(lease.token),
        "baton.attempt": int(lease.attempt),
    }
    parent = parse_traceparent(lease.agent.traceparent)
    span = _start(f"process {lease.queue}", parent, parent is not None and _is_recurring(lease.agent), attributes)
    with trace.use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
        yield span


@contextlib.contextmanager
def message_span(receiver: str, message: Any) -> Iterator[Span]:
    """The span a scheduled message's handler runs in: child of the message's valid
    ``traceparent`` (else a new root). Attributes: messaging.system, messaging.operation.type,
    messaging.destination.name (the receiver), messaging.message.id, baton.delivery_count."""
    attributes = {
        "messaging.system": "baton",
        "messaging.operation.type": "process",
        "messaging.destination.name": receiver,
        "messaging.message.id": message.id,
        "baton.delivery_count": int(message.delivery_count),
    }
    span = _start(f"process {receiver}", parse_traceparent(message.traceparent), False, attributes)
    with trace.use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
        yield span


def failed(span: Span, exc: BaseException, outcome: Optional[str] = None) -> None:
    """Marks a handler's span as failed: status ERROR, the exception recorded, and
    ``baton.outcome`` when given."""
    if not span.is_recording():
        return
    if outcome is not None:
        span.set_attribute("baton.outcome", outcome)
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))


def succeeded(span: Span, outcome: Optional[str] = "SUCCESS") -> None:
    if outcome is not None and span.is_recording():
        span.set_attribute("baton.outcome", outcome)


def lost(span: Span) -> None:
    """Marks the span of a handler cancelled because its lease was lost: status ERROR."""
    if span.is_recording():
        span.set_status(Status(StatusCode.ERROR, "lease lost: handler cancelled"))

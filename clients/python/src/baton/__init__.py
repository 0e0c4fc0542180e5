"""Baton's Python client: the generated gRPC stubs (`baton.v1`), one shared connection
(:class:`Client`, :func:`connect`: TLS, mutual TLS, an API token, keepalive, a default
deadline), a worker loop (:class:`Worker`), a leadership helper (:class:`Leadership`), a claim
helper (:class:`Claimer`, :class:`Pool`) and scheduled messages (:class:`Scheduler`,
:class:`Subscriber`). Calls carry the current OpenTelemetry trace context, and the worker and
subscriber run handlers in spans (:mod:`baton.tracing`; the application brings the SDK)."""

from baton.client import Client, Keepalive, connect
from baton.claim import Claim, Claimer, LineFull, Pool
from baton.failure import MAX_MESSAGE_BYTES, Failure, Outcome, classify, outcome_for_http_status, truncate_utf8
from baton.leader import Leadership
from baton.schedule import Message, Scheduler, Subscriber
from baton.worker import Worker, duration, is_lease_lost

__all__ = [
    "MAX_MESSAGE_BYTES",
    "Claim",
    "Claimer",
    "Client",
    "Failure",
    "Keepalive",
    "Leadership",
    "LineFull",
    "Message",
    "Outcome",
    "Pool",
    "Scheduler",
    "Subscriber",
    "Worker",
    "classify",
    "connect",
    "duration",
    "is_lease_lost",
    "outcome_for_http_status",
    "truncate_utf8",
]

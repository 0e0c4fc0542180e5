"""Baton's Python client: the generated gRPC stubs (`baton.v1`), one shared connection
(:class:`Client`, :func:`connect`), a worker (:class:`Worker`, on the Session stream), a
producer (:class:`Producer`, :func:`agent`, :func:`ref`: parents, idempotency keys, awaiting a
result, batches), a leadership helper (:class:`Leadership`), a
claim helper (:class:`Claimer`, :class:`Pool`) and scheduled messages (:class:`Scheduler`,
:class:`Subscriber`, on the Receive stream). Calls carry the current OpenTelemetry trace
context, and the worker and subscriber run handlers in spans (:mod:`baton.tracing`). A call
Baton refused raises grpc's error: :func:`reason` reads its ErrorInfo reason and
:func:`pushback_seconds` its retry hint."""

from baton._rpc import backoff, duration, is_lease_lost, pushback_seconds, reason
from baton.claim import Claim, Claimer, LineFull, Pool
from baton.client import Client, Keepalive, connect
from baton.failure import Failure, Outcome, WaitFor
from baton.leader import Leadership
from baton.producer import AgentResult, Finish, IdempotencyMode, ParentFailure, Producer, WatchUpdate, agent, ref
from baton.schedule import Message, Scheduler, Subscriber
from baton.worker import Worker, lease_event, recorded_step

__all__ = [
    "AgentResult",
    "Claim",
    "Claimer",
    "Client",
    "Failure",
    "Finish",
    "IdempotencyMode",
    "Keepalive",
    "Leadership",
    "LineFull",
    "Message",
    "Outcome",
    "ParentFailure",
    "Pool",
    "Producer",
    "Scheduler",
    "Subscriber",
    "WaitFor",
    "WatchUpdate",
    "Worker",
    "lease_event",
    "recorded_step",
    "agent",
    "backoff",
    "connect",
    "duration",
    "is_lease_lost",
    "pushback_seconds",
    "reason",
    "ref",
]

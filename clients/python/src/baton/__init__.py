"""Baton's Python client: the generated gRPC stubs (`baton.v1`), a worker loop
(:class:`Worker`) and a leadership helper (:class:`Leadership`)."""

from baton.failure import Failure, Outcome, classify, outcome_for_http_status
from baton.leader import Leadership
from baton.worker import Worker, duration, is_lease_lost

__all__ = [
    "Failure",
    "Leadership",
    "Outcome",
    "Worker",
    "classify",
    "duration",
    "is_lease_lost",
    "outcome_for_http_status",
]

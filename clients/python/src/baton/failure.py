"""How a run failed, as the worker tells Baton. Baton classifies (the table above `enum Outcome`
in proto/baton/v1/agent.proto): the helper sends the error's HTTP status, its Retry-After and
its type name, not an outcome of its own making."""

from __future__ import annotations

import asyncio
import email.utils
import time
from typing import Optional

from baton._rpc import Seconds, duration, seconds
from baton.v1 import agent_pb2

Outcome = agent_pb2.Outcome


class Failure(Exception):
    """Raise from a handler to end its run with an explicit outcome (and optional Retry-After),
    or with an HTTP status for Baton to classify (:meth:`from_http_status`). Any other exception
    becomes :meth:`of` it."""

    def __init__(self, outcome: "agent_pb2.Outcome" = Outcome.OUTCOME_UNSPECIFIED, message: str = "",
                 retry_after: Optional[Seconds] = None, *, http_status: int = 0, error_class: str = ""):
        super().__init__(message)
        if outcome == Outcome.OUTCOME_SUCCESS:
            raise ValueError("a Failure needs a failure outcome")
        self.outcome = outcome
        self.message = message
        self.retry_after = seconds(retry_after)
        self.http_status = http_status
        # With the outcome left to Baton, something to classify: at worst UNKNOWN.
        self.error_class = error_class or ("" if outcome or http_status else type(self).__name__)

    @classmethod
    def from_http_status(cls, status: int, message: str = "", retry_after: Optional[Seconds] = None) -> "Failure":
        """A failure Baton classifies by `status` (429 → THROTTLED, 5xx → SERVER_ERROR, …)."""
        return cls(message=message or f"HTTP {status}", retry_after=retry_after, http_status=status)

    @classmethod
    def transient(cls, message: str = "", retry_after: Optional[Seconds] = None) -> "Failure":
        return cls(Outcome.OUTCOME_TRANSIENT, message, retry_after)

    @classmethod
    def of(cls, exc: BaseException) -> "Failure":
        """What is sent for a handler's exception: a Failure as it is; any other with its HTTP
        status and Retry-After (as requests, httpx, aiohttp and urllib carry them) and its type
        name as the error class ("timeout" for a timeout, "io" for another OSError or EOFError),
        the outcome left to Baton. The message is sent whole: Baton clips a long one."""
        if isinstance(exc, Failure):
            return exc
        return cls(message=f"{type(exc).__name__}: {exc}", retry_after=_retry_after(exc),
                   http_status=_http_status(exc) or 0, error_class=_error_class(exc))

    def __repr__(self) -> str:
        return (f"Failure({Outcome.Name(self.outcome)}, {self.message!r}, retry_after={self.retry_after}, "
                f"http_status={self.http_status}, error_class={self.error_class!r})")


def _error_class(exc: BaseException) -> str:
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return "timeout"
    if isinstance(exc, (OSError, EOFError)):
        return "io"
    kind = type(exc)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _http_status(exc: BaseException) -> Optional[int]:
    """The HTTP status an exception carries, as the common libraries spell it: requests and
    httpx (`exc.response.status_code`), aiohttp (`exc.status`), urllib (`exc.code`), or any
    exception with `status_code` / `status`."""
    for obj in (exc, getattr(exc, "response", None)):
        for attr in ("status_code", "status", "code"):
            value = getattr(obj, attr, None)
            if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
                return value
    return None


def _retry_after(exc: BaseException) -> Optional[float]:
    """A Retry-After header (seconds or an HTTP date) on the exception or its response."""
    for obj in (exc, getattr(exc, "response", None)):
        try:
            headers = getattr(obj, "headers", None)
            value = headers and (headers.get("Retry-After") or headers.get("retry-after"))
        except Exception:  # noqa: BLE001 - headers of an unknown kind
            continue
        if not value:
            continue
        value = str(value).strip()
        if value.isdigit():
            return float(value)
        try:
            return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            continue
    return None


class WaitFor(Exception):
    """Raise from a handler to end its run by waiting (CompleteRequest.wait_for): for `event` (a
    Signal of it), for a time (`timeout` seconds after now, or `until`, a datetime), or for the
    first of both. The agent is not finished: its next lease comes when the event (or the time)
    does, and carries it (:func:`baton.lease_event`). Also :func:`baton.agent`'s `wait_for` (an
    approval gate before the first run)."""

    def __init__(self, event: str = "", *, timeout: Optional[Seconds] = None, until=None):
        super().__init__(event)
        self.event, self.timeout, self.until = event, timeout, until

    def proto(self) -> agent_pb2.WaitFor:
        w = agent_pb2.WaitFor(event=self.event)
        if self.timeout is not None:
            w.timeout.CopyFrom(duration(self.timeout))
        if self.until is not None:
            w.until.FromDatetime(self.until)
        return w

"""How a run ended, and the documented rule that maps errors to outcomes."""

from __future__ import annotations

import asyncio
import email.utils
import socket
import ssl
import time
from datetime import timedelta
from typing import Optional, Union

from baton.v1 import agent_pb2

Outcome = agent_pb2.Outcome
Seconds = Union[float, int, timedelta]


def _seconds(value: Optional[Seconds]) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, timedelta):
        return value.total_seconds()
    return float(value)


def outcome_for_http_status(status: int) -> int:
    """401/403 → PERMANENT_FORBIDDEN, 429 → THROTTLED, 408 → TRANSIENT, 5xx → SERVER_ERROR,
    anything else → UNKNOWN."""
    if status in (401, 403):
        return Outcome.OUTCOME_PERMANENT_FORBIDDEN
    if status == 429:
        return Outcome.OUTCOME_THROTTLED
    if status == 408:
        return Outcome.OUTCOME_TRANSIENT
    if 500 <= status <= 599:
        return Outcome.OUTCOME_SERVER_ERROR
    return Outcome.OUTCOME_UNKNOWN


class Failure(Exception):
    """Raise from a handler to end its run with an explicit outcome (and optional Retry-After).

    Any other exception is classified by :func:`classify`.
    """

    def __init__(self, outcome: int, message: str = "", retry_after: Optional[Seconds] = None):
        super().__init__(message)
        if outcome in (Outcome.OUTCOME_UNSPECIFIED, Outcome.OUTCOME_SUCCESS):
            raise ValueError("a Failure needs a failure outcome")
        self.outcome = outcome
        self.message = message
        self.retry_after = _seconds(retry_after)

    @classmethod
    def from_http_status(cls, status: int, message: str = "", retry_after: Optional[Seconds] = None) -> "Failure":
        return cls(outcome_for_http_status(status), message or f"HTTP {status}", retry_after)

    @classmethod
    def transient(cls, message: str = "", retry_after: Optional[Seconds] = None) -> "Failure":
        return cls(Outcome.OUTCOME_TRANSIENT, message, retry_after)

    def __repr__(self) -> str:
        return f"Failure({Outcome.Name(self.outcome)}, {self.message!r}, retry_after={self.retry_after})"


def _http_status(exc: BaseException) -> Optional[int]:
    """The HTTP status an exception carries, as the common libraries spell it: requests and
    httpx (`exc.response.status_code`), aiohttp (`exc.status`), urllib (`exc.code`), or any
    exception with `status_code` / `status`."""
    candidates = [exc, getattr(exc, "response", None)]
    for obj in candidates:
        if obj is None:
            continue
        for attr in ("status_code", "status", "code"):
            value = getattr(obj, attr, None)
            if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
                return value
    return None


def _retry_after(exc: BaseException) -> Optional[float]:
    """A Retry-After header (seconds or an HTTP date) on the exception or its response."""
    for obj in (exc, getattr(exc, "response", None)):
        headers = getattr(obj, "headers", None)
        if headers is None:
            continue
        try:
            value = headers.get("Retry-After") or headers.get("retry-after")
        except Exception:  # noqa: BLE001 - headers of an unknown kind
            continue
        if not value:
            continue
        value = str(value).strip()
        if value.isdigit():
            return float(value)
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            continue
        return max(0.0, when.timestamp() - time.time())
    return None


_TRANSIENT_TYPES = (
    TimeoutError,
    asyncio.TimeoutError,
    ConnectionError,
    EOFError,
    socket.gaierror,
    ssl.SSLError,
    OSError,
)


def classify(exc: BaseException) -> Failure:
    """The documented rule: an explicit :class:`Failure` wins; an HTTP status maps by
    :func:`outcome_for_http_status` (with its Retry-After); I/O, connection errors and timeouts
    are TRANSIENT; anything else is UNKNOWN."""
    if isinstance(exc, Failure):
        return exc
    message = f"{type(exc).__name__}: {exc}"[:4000]
    status = _http_status(exc)
    if status is not None:
        return Failure(outcome_for_http_status(status), message, _retry_after(exc))
    if isinstance(exc, _TRANSIENT_TYPES) or _looks_transient(exc):
        return Failure(Outcome.OUTCOME_TRANSIENT, message)
    return Failure(Outcome.OUTCOME_UNKNOWN, message)


def _looks_transient(exc: BaseException) -> bool:
    # Client libraries wrap I/O errors in their own types (httpx.TransportError,
    # requests.ConnectionError, aiohttp.ClientConnectionError…): look at the chain and the names.
    seen = set()
    cause: Optional[BaseException] = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, _TRANSIENT_TYPES):
            return True
        name = type(cause).__name__
        if any(word in name for word in ("Timeout", "Connect", "Transport", "NetworkError")):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


#: The longest failure message the server takes by default (limits.max_message_bytes): Complete's
#: message and Fail's error, in UTF-8 bytes.
MAX_MESSAGE_BYTES = 4096


def truncate_utf8(text: str, limit: int = MAX_MESSAGE_BYTES) -> str:
    """At most `limit` UTF-8 bytes of `text`, cut on a character boundary: how every helper
    bounds a failure message to the server's limit (the same rule in every client language)."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", errors="ignore")

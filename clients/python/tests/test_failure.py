"""What the worker sends for a handler's error (Baton classifies it), without a server."""

import asyncio
import urllib.error
from email.message import Message

import pytest

from baton import Failure, Outcome


class HTTPStatusError(Exception):
    """Shaped like requests/httpx errors: the status is on .response."""

    def __init__(self, status, headers=None):
        super().__init__(f"HTTP {status}")
        self.response = type("Response", (), {"status_code": status, "headers": headers or {}})()


class ClientResponseError(Exception):
    """Shaped like aiohttp's: .status and .headers on the exception."""

    def __init__(self, status, headers=None):
        super().__init__(f"HTTP {status}")
        self.status = status
        self.headers = headers or {}


@pytest.mark.parametrize("make", [HTTPStatusError, ClientResponseError])
def test_the_http_status_and_retry_after_are_read_off_the_error(make):
    failure = Failure.of(make(503, {"Retry-After": "30"}))
    assert (failure.outcome, failure.http_status, failure.retry_after) == (Outcome.OUTCOME_UNSPECIFIED, 503, 30.0)
    assert failure.message == "HTTP 503" or failure.message.endswith(": HTTP 503")


def test_urllib_http_error_carries_its_status_and_retry_after():
    headers = Message()
    headers["Retry-After"] = "120"
    failure = Failure.of(urllib.error.HTTPError("http://x", 429, "Too Many Requests", headers, None))
    assert (failure.http_status, failure.retry_after) == (429, 120.0)


@pytest.mark.parametrize("exc,error_class", [
    (TimeoutError(), "timeout"), (asyncio.TimeoutError(), "timeout"), (ConnectionResetError(), "io"),
    (BrokenPipeError(), "io"), (OSError("io"), "io"), (EOFError(), "io"), (ValueError("bad"), "ValueError"),
    (urllib.error.URLError("refused"), "io"),
])
def test_the_error_class_is_the_type_name_or_io_or_timeout(exc, error_class):
    failure = Failure.of(exc)
    assert (failure.outcome, failure.http_status, failure.error_class) == (Outcome.OUTCOME_UNSPECIFIED, 0, error_class)


class ConnectError(Exception):
    """Named as httpx.ConnectError."""


ConnectError.__module__ = "httpx"


def test_a_library_error_is_named_with_its_module():
    failure = Failure.of(ConnectError("refused"))
    assert failure.error_class == "httpx.ConnectError"
    assert failure.message == "ConnectError: refused"


def test_a_long_message_is_kept_whole():
    long = "é€😀" * 5000
    assert Failure.of(ValueError(long)).message == f"ValueError: {long}"


def test_explicit_failures():
    f = Failure(Outcome.OUTCOME_THROTTLED, "quota", retry_after=90)
    assert Failure.of(f) is f and f.retry_after == 90.0 and f.error_class == ""
    assert Failure.from_http_status(429).http_status == 429
    assert Failure.from_http_status(429).outcome == Outcome.OUTCOME_UNSPECIFIED
    assert Failure.transient("x").outcome == Outcome.OUTCOME_TRANSIENT
    assert Failure(message="odd").error_class == "Failure"
    with pytest.raises(ValueError):
        Failure(Outcome.OUTCOME_SUCCESS)

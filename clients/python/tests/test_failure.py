"""The documented error → outcome rule, without a server."""

import asyncio
import urllib.error
from email.message import Message

import pytest

from baton import Failure, Outcome, classify, outcome_for_http_status


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


@pytest.mark.parametrize(
    "status,outcome",
    [
        (401, Outcome.OUTCOME_PERMANENT_FORBIDDEN),
        (403, Outcome.OUTCOME_PERMANENT_FORBIDDEN),
        (429, Outcome.OUTCOME_THROTTLED),
        (408, Outcome.OUTCOME_TRANSIENT),
        (500, Outcome.OUTCOME_SERVER_ERROR),
        (503, Outcome.OUTCOME_SERVER_ERROR),
        (599, Outcome.OUTCOME_SERVER_ERROR),
        (400, Outcome.OUTCOME_UNKNOWN),
        (404, Outcome.OUTCOME_UNKNOWN),
    ],
)
def test_http_status_rule(status, outcome):
    assert outcome_for_http_status(status) == outcome
    assert Failure.from_http_status(status).outcome == outcome
    assert classify(HTTPStatusError(status)).outcome == outcome
    assert classify(ClientResponseError(status)).outcome == outcome


def test_urllib_http_error_is_classified_by_status_not_as_io():
    headers = Message()
    headers["Retry-After"] = "120"
    err = urllib.error.HTTPError("http://x", 429, "Too Many Requests", headers, None)
    failure = classify(err)
    assert failure.outcome == Outcome.OUTCOME_THROTTLED
    assert failure.retry_after == 120.0


def test_retry_after_header_is_read():
    failure = classify(HTTPStatusError(503, {"Retry-After": "30"}))
    assert failure.outcome == Outcome.OUTCOME_SERVER_ERROR
    assert failure.retry_after == 30.0


@pytest.mark.parametrize(
    "exc",
    [TimeoutError(), asyncio.TimeoutError(), ConnectionResetError(), ConnectionRefusedError(), BrokenPipeError(),
     OSError("io"), EOFError()],
)
def test_io_and_timeouts_are_transient(exc):
    assert classify(exc).outcome == Outcome.OUTCOME_TRANSIENT


def test_wrapped_connection_error_is_transient():
    class ConnectError(Exception):  # httpx.ConnectError's name, no OSError base
        pass

    assert classify(ConnectError("refused")).outcome == Outcome.OUTCOME_TRANSIENT
    try:
        try:
            raise ConnectionResetError("reset by peer")
        except ConnectionResetError as e:
            raise RuntimeError("fetch failed") from e
    except RuntimeError as wrapped:
        assert classify(wrapped).outcome == Outcome.OUTCOME_TRANSIENT


def test_anything_else_is_unknown():
    assert classify(ValueError("bad payload")).outcome == Outcome.OUTCOME_UNKNOWN
    assert classify(KeyError("x")).outcome == Outcome.OUTCOME_UNKNOWN


def test_explicit_failure_wins():
    f = Failure(Outcome.OUTCOME_THROTTLED, "quota", retry_after=90)
    assert classify(f) is f
    assert f.retry_after == 90.0
    with pytest.raises(ValueError):
        Failure(Outcome.OUTCOME_SUCCESS)

"""What every helper shares: the channel a target means, durations, the server's retry hint,
the one backoff, and the retry of a call made safe by its request id."""

from __future__ import annotations

import asyncio
import random
import uuid
from datetime import timedelta
from typing import Any, Awaitable, Callable, Dict, Optional, Tuple, TypeVar, Union

import grpc
from google.protobuf import duration_pb2

from baton.client import Client, _interceptors

Seconds = Union[float, int, timedelta]
#: What every helper connects with: a :class:`baton.Client` (shared; TLS, token, keepalive), a
#: grpc.aio.Channel of the caller's, or a "host:port" string (a plaintext channel of the helper's own).
ChannelLike = Union[Client, str, grpc.aio.Channel]
T = TypeVar("T")


def seconds(value: Optional[Seconds]) -> Optional[float]:
    if value is None:
        return None
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def duration(value: Seconds) -> duration_pb2.Duration:
    d = duration_pb2.Duration()
    d.FromNanoseconds(int(round((seconds(value) or 0.0) * 1e9)))
    return d


def channel_for(target: ChannelLike) -> Tuple[grpc.aio.Channel, bool]:
    """The channel for `target`, and whether the helper owns it (and closes it when done): a
    Client's shared channel and a caller's channel are not owned; "host:port" opens a plaintext
    channel that is (its calls carry the trace context, as a Client's do)."""
    if isinstance(target, Client):
        return target.channel, False
    if isinstance(target, str):
        return grpc.aio.insecure_channel(target, interceptors=_interceptors(None, None)), True
    return target, False


H = TypeVar("H", bound="Helper")


class Helper:
    """The channel of a helper made from a target (see :func:`channel_for`); :meth:`close` (or
    leaving ``async with``) closes it only if the helper opened it."""

    def __init__(self, target: ChannelLike) -> None:
        self._channel, self._owned = channel_for(target)

    async def close(self) -> None:
        if self._owned:
            await self._channel.close()

    async def __aenter__(self: H) -> H:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


def is_lease_lost(error: grpc.aio.AioRpcError) -> bool:
    """Whether Baton refused a stale token (FAILED_PRECONDITION, ErrorInfo reason LEASE_LOST):
    the lease or term is gone and the work must stop."""
    return error.code() == grpc.StatusCode.FAILED_PRECONDITION and reason(error) in (None, "LEASE_LOST")


def _varint(data: bytes, i: int) -> Tuple[int, int]:
    value = shift = 0
    while True:
        b = data[i]
        value, shift, i = value | (b & 0x7F) << shift, shift + 7, i + 1
        if b < 0x80:
            return value, i


def _fields(data: bytes) -> Dict[int, list]:
    """A protobuf message's varint and length-delimited fields, by number (enough for
    google.rpc.Status, Any and ErrorInfo, which grpcio does not ship)."""
    fields: Dict[int, list] = {}
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        if key & 7 == 0:
            value, i = _varint(data, i)
        elif key & 7 == 2:
            n, i = _varint(data, i)
            value, i = data[i:i + n], i + n
        else:
            break  # Status, Any and ErrorInfo have no other wire types
        fields.setdefault(key >> 3, []).append(value)
    return fields


def reason(error: Optional[BaseException]) -> Optional[str]:
    """The reason of the google.rpc.ErrorInfo Baton sends with every error (``LEASE_LOST``,
    ``NOT_FOUND``, ``LINE_FULL``, ``PARENTS_FIXED``, …; docs/errors.md), read from the
    ``grpc-status-details-bin`` trailer; None if `error` carries none."""
    if not isinstance(error, grpc.RpcError) or not hasattr(error, "trailing_metadata"):
        return None
    for key, value in error.trailing_metadata() or ():
        if key != "grpc-status-details-bin" or not isinstance(value, bytes):
            continue
        try:
            for detail in _fields(value).get(3, []):  # Status.details: repeated Any
                any_ = _fields(detail)
                if any_.get(1) == [b"type.googleapis.com/google.rpc.ErrorInfo"]:
                    return _fields(any_.get(2, [b""])[0]).get(1, [b""])[0].decode()
        except (IndexError, UnicodeDecodeError, AttributeError):
            return None
    return None


def pushback_seconds(error: Optional[BaseException]) -> Optional[float]:
    """The server's retry hint in seconds (`grpc-retry-pushback-ms`, sent with UNAVAILABLE and
    RESOURCE_EXHAUSTED), if `error` carries one."""
    if not isinstance(error, grpc.RpcError) or not hasattr(error, "trailing_metadata"):
        return None
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-retry-pushback-ms":
            try:
                return int(value) / 1000.0
            except ValueError:
                return None
    return None


def backoff(attempt: int, error: Optional[BaseException] = None) -> float:
    """How long to wait before retry number `attempt` (0 first): the server's hint when `error`
    carries one, else 100 ms doubling up to 5 s, with full jitter on the upper half. The one
    backoff of every helper."""
    hint = pushback_seconds(error)
    if hint is not None:
        return hint
    ceiling = min(5.0, 0.1 * 2 ** min(attempt, 6))
    return random.uniform(ceiling / 2, ceiling)


async def sleep_unless(stopping: asyncio.Event, delay: float) -> None:
    """Sleeps `delay` seconds, or less if `stopping` is set first."""
    try:
        await asyncio.wait_for(stopping.wait(), timeout=delay)
    except asyncio.TimeoutError:
        pass


def request_id() -> str:
    """A request id for one logical call (every attempt of it carries the same one)."""
    return str(uuid.uuid4())


async def idempotent(call: Callable[..., Awaitable[T]], request: Any, *, attempts: int = 4,
                     timeout: float = 10.0) -> T:
    """Sends `request` by `call`, again on UNAVAILABLE (after :func:`backoff`), every attempt with
    the same request id (one is made when it has none): a retry of a call Baton applied, whose
    answer was lost, gets the first call's answer and changes nothing more."""
    if not request.request_id:
        request.request_id = request_id()
    for attempt in range(attempts):
        try:
            return await call(request, timeout=timeout)
        except grpc.aio.AioRpcError as e:
            if e.code() != grpc.StatusCode.UNAVAILABLE or attempt == attempts - 1:
                raise
            await asyncio.sleep(backoff(attempt, e))
    raise AssertionError("unreachable")

"""One connection to Baton, shared by every helper: the target, TLS (a CA file, a client
certificate and key for mutual TLS, a server name override), an API token sent on every call,
keepalive, and a default deadline for unary calls.

    client = baton.connect("baton.internal:50051", ca_file="ca.pem",
                           cert_file="client.pem", key_file="client.key",   # mutual TLS
                           token=os.environ["BATON_TOKEN"])
    async with client:
        worker = baton.Worker(client, queue="emails", worker_id="w1", handler=handle)
        await worker.run()

Helpers given a Client use its channel and leave it open; `await client.close()` (or leaving
`async with client`) closes it. The channel is opened on first use, in the running event loop,
so a Client may be made before `asyncio.run(...)`.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, Tuple, TypeVar

import grpc

from baton import tracing

#: Margin added to a long poll's `wait` for its deadline (as the helpers do).
LONG_POLL_MARGIN = 10.0

#: Default deadline of a unary call that sets none (seconds).
DEFAULT_TIMEOUT = 10.0

Stub = TypeVar("Stub")


@dataclass(frozen=True)
class Keepalive:
    """HTTP/2 keepalive pings: one after `time` seconds without activity, the connection dropped
    (and redialled) if no answer within `timeout` seconds; `permit_without_calls` pings an idle
    connection too, so a dead peer or a silently dropped NAT/load balancer mapping is noticed
    before the next call, not by it."""

    time: float = 30.0
    timeout: float = 10.0
    permit_without_calls: bool = True

    def options(self) -> list:
        return [
            ("grpc.keepalive_time_ms", max(1, int(self.time * 1000))),
            ("grpc.keepalive_timeout_ms", max(1, int(self.timeout * 1000))),
            ("grpc.keepalive_permit_without_calls", 1 if self.permit_without_calls else 0),
            # Pings are not limited to a few between data frames (an idle long poll sends none).
            ("grpc.http2.max_pings_without_data", 0),
        ]


def _read(path: Optional[str], what: str) -> Optional[bytes]:
    if path is None:
        return None
    try:
        with open(os.fspath(path), "rb") as f:
            return f.read()
    except OSError as e:
        raise ValueError(f"cannot read the {what} {path!r}: {e.strerror or e}") from e


def _long_poll_wait(request: Any) -> Optional[float]:
    """The `wait` (seconds) of a long-poll request (Acquire, Claim, Campaign), if it sets one."""
    try:
        if request.HasField("wait"):
            return request.wait.ToNanoseconds() / 1e9
    except (AttributeError, ValueError, TypeError):
        pass
    return None


class _Calls:
    """What the interceptors add: the current OpenTelemetry trace context (`traceparent`,
    `tracestate`) and `authorization: Bearer <token>` on every call, and the default deadline on
    unary-unary calls that set none (at least a long poll's wait + margin)."""

    def __init__(self, token: Optional[str], timeout: Optional[float]) -> None:
        self._auth = ("authorization", f"Bearer {token}") if token else None
        self._timeout = timeout

    def details(self, details: grpc.aio.ClientCallDetails, request: Any = None, *,
                unary: bool = False) -> grpc.aio.ClientCallDetails:
        metadata, timeout = details.metadata, details.timeout
        # The interceptor runs in a task made when the call is, with a copy of the caller's
        # context: the current span is the caller's.
        extra = tracing.outgoing(metadata)
        if self._auth is not None and not any(k.lower() == "authorization" for k, _ in (metadata or ())):
            extra.append(self._auth)
        if extra:
            metadata = grpc.aio.Metadata(*tuple(metadata or ()), *extra)
        if unary and timeout is None and self._timeout is not None:
            wait = _long_poll_wait(request)
            timeout = self._timeout if wait is None else max(self._timeout, wait + LONG_POLL_MARGIN)
        return details._replace(metadata=metadata, timeout=timeout)


# grpc.aio files each interceptor under the first call shape it implements, so one per shape.
class _UnaryUnary(grpc.aio.UnaryUnaryClientInterceptor):
    def __init__(self, calls: _Calls) -> None:
        self._calls = calls

    async def intercept_unary_unary(self, continuation, client_call_details, request):
        return await continuation(self._calls.details(client_call_details, request, unary=True), request)


class _UnaryStream(grpc.aio.UnaryStreamClientInterceptor):
    def __init__(self, calls: _Calls) -> None:
        self._calls = calls

    async def intercept_unary_stream(self, continuation, client_call_details, request):
        return await continuation(self._calls.details(client_call_details), request)


class _StreamUnary(grpc.aio.StreamUnaryClientInterceptor):
    def __init__(self, calls: _Calls) -> None:
        self._calls = calls

    async def intercept_stream_unary(self, continuation, client_call_details, request_iterator):
        return await continuation(self._calls.details(client_call_details), request_iterator)


class _StreamStream(grpc.aio.StreamStreamClientInterceptor):
    def __init__(self, calls: _Calls) -> None:
        self._calls = calls

    async def intercept_stream_stream(self, continuation, client_call_details, request_iterator):
        return await continuation(self._calls.details(client_call_details), request_iterator)


def _interceptors(token: Optional[str], timeout: Optional[float]) -> list:
    calls = _Calls(token, timeout)
    return [_UnaryUnary(calls), _UnaryStream(calls), _StreamUnary(calls), _StreamStream(calls)]


class Client:
    """A connection to Baton, to pass to every helper (:class:`Worker`, :class:`Leadership`,
    :class:`Claimer`, :class:`Pool`, :class:`Scheduler`, :class:`Subscriber`) or to the generated
    stubs (``client.stub(AgentServiceStub)`` or ``AgentServiceStub(client.channel)``).

    - `target`: "host:port" (an "http://" prefix is dropped; "https://" turns TLS on).
    - TLS is on when `tls` is True, or, by default, when any of `ca_file`, `cert_file`,
      `key_file`, `server_name` is given or the target starts with "https://". `ca_file`: the
      PEM CA bundle the server's certificate is checked against (None: the system's roots).
      `cert_file` + `key_file`: a client certificate for mutual TLS (both or neither).
      `server_name`: the name the server's certificate is checked for, when it is not the
      target's host (e.g. connecting by IP address).
    - Every call carries the current OpenTelemetry trace context (W3C `traceparent` and
      `tracestate` metadata) when there is a valid one (see :mod:`baton.tracing`).
    - `token`: an API token, sent on every call (unary and streaming) as the metadata
      ``authorization: Bearer <token>``; over plaintext too (then anyone on the path can read it:
      use TLS beyond a trusted network).
    - `keepalive`: a :class:`Keepalive` (default: a ping after 30 s idle, 10 s to answer, idle
      connections too), or None for gRPC's defaults (no pings).
    - `timeout`: the default deadline (seconds) of a unary call that sets none; a long poll
      (a request with a `wait`: Acquire, Claim, Campaign) gets at least its wait + 10 s. None:
      no default deadline. Streams (Subscribe, Observe, WatchPool) get none. The helpers set
      their own deadline on each of their calls.
    - `options`: more gRPC channel options, e.g. ``[("grpc.max_receive_message_length", …)]``.
    """

    def __init__(
        self,
        target: str,
        *,
        ca_file: Optional[str] = None,
        cert_file: Optional[str] = None,
        key_file: Optional[str] = None,
        token: Optional[str] = None,
        server_name: Optional[str] = None,
        keepalive: Optional[Keepalive] = Keepalive(),
        timeout: Optional[float] = DEFAULT_TIMEOUT,
        tls: Optional[bool] = None,
        options: Sequence[Tuple[str, Any]] = (),
    ) -> None:
        if not isinstance(target, str) or not target:
            raise ValueError("target must be a non-empty \"host:port\" string")
        https = target.startswith("https://")
        target = target.removeprefix("https://").removeprefix("http://").rstrip("/")
        if (cert_file is None) != (key_file is None):
            raise ValueError("mutual TLS needs both cert_file and key_file")
        wants_tls = https or any(v is not None for v in (ca_file, cert_file, key_file, server_name))
        if tls is None:
            tls = wants_tls
        elif not tls and wants_tls:
            raise ValueError("tls=False, but a TLS setting (ca_file, cert_file, key_file, server_name "
                             "or an https:// target) was given")
        if token is not None:
            token = token.strip()
            if not token:
                token = None
            elif not (token.isascii() and token.isprintable()) or " " in token:
                raise ValueError("the token must be one word of printable ASCII (no spaces or line breaks)")
        if timeout is not None and timeout <= 0:
            raise ValueError("timeout must be positive (or None: no default deadline)")

        self.target = target
        self.tls = bool(tls)
        self.server_name = server_name
        self.timeout = timeout
        self.keepalive = keepalive
        self._token = token
        self._credentials: Optional[grpc.ChannelCredentials] = None
        if self.tls:
            self._credentials = grpc.ssl_channel_credentials(
                root_certificates=_read(ca_file, "CA file"),
                private_key=_read(key_file, "client key file"),
                certificate_chain=_read(cert_file, "client certificate file"),
            )
        opts: list = list(keepalive.options()) if keepalive is not None else []
        if server_name is not None:
            opts.append(("grpc.ssl_target_name_override", server_name))
        # The caller's options replace the defaults of the same name.
        given = [tuple(o) for o in options]
        names = {name for name, _ in given}
        self._options = [o for o in opts if o[0] not in names] + given
        self._interceptors = _interceptors(token, timeout)
        self._channel: Optional[grpc.aio.Channel] = None
        self._closed = False

    @property
    def has_token(self) -> bool:
        return self._token is not None

    @property
    def channel(self) -> grpc.aio.Channel:
        """The shared channel (opened on first use, in the running event loop)."""
        if self._closed:
            raise RuntimeError("the Baton client is closed")
        if self._channel is None:
            if self._credentials is not None:
                self._channel = grpc.aio.secure_channel(self.target, self._credentials, options=self._options,
                                                        interceptors=self._interceptors)
            else:
                self._channel = grpc.aio.insecure_channel(self.target, options=self._options,
                                                          interceptors=self._interceptors)
        return self._channel

    def stub(self, stub_class: Callable[[grpc.aio.Channel], Stub]) -> Stub:
        """A generated stub over the shared channel, e.g. ``client.stub(agent_pb2_grpc.AgentServiceStub)``."""
        return stub_class(self.channel)

    async def wait_ready(self, timeout: Optional[float] = None) -> None:
        """Waits until the channel is connected (TLS handshake done); raises asyncio.TimeoutError
        after `timeout` seconds. Optional: calls connect by themselves."""
        await asyncio.wait_for(self.channel.channel_ready(), timeout)

    async def close(self, grace: Optional[float] = None) -> None:
        """Closes the channel (calls still running are cancelled, after `grace` seconds if given).
        Idempotent."""
        self._closed = True
        channel, self._channel = self._channel, None
        if channel is not None:
            await channel.close(grace)

    @property
    def closed(self) -> bool:
        return self._closed

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    def __repr__(self) -> str:
        return (f"baton.Client({self.target!r}, tls={self.tls}, token={'set' if self._token else None}, "
                f"timeout={self.timeout})")


def connect(
    target: str,
    *,
    ca_file: Optional[str] = None,
    cert_file: Optional[str] = None,
    key_file: Optional[str] = None,
    token: Optional[str] = None,
    server_name: Optional[str] = None,
    keepalive: Optional[Keepalive] = Keepalive(),
    timeout: Optional[float] = DEFAULT_TIMEOUT,
    tls: Optional[bool] = None,
    options: Sequence[Tuple[str, Any]] = (),
) -> Client:
    """A :class:`Client` for `target` (see there for the arguments). Nothing is dialled yet: the
    first call connects, and a bad CA, certificate or address shows as that call's error
    (UNAVAILABLE)."""
    return Client(target, ca_file=ca_file, cert_file=cert_file, key_file=key_file, token=token,
                  server_name=server_name, keepalive=keepalive, timeout=timeout, tls=tls, options=options)

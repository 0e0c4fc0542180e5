"""baton.Client / baton.connect: one connection shared by the helpers, against a Baton with TLS,
mutual TLS and API tokens (certificates from `baton dev-certs`, an admin token from `baton
token`); and the token and default deadline on every call shape, against a local gRPC server."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass

import grpc
import pytest

import baton
from baton.v1 import agent_pb2, agent_pb2_grpc, claim_pb2, claim_pb2_grpc, schedule_pb2, schedule_pb2_grpc
from conftest import QUICK_ENV, REPO, BatonServer


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def eventually(predicate, timeout=15.0, every=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        await asyncio.sleep(every)
    raise AssertionError("condition not met within %.1fs" % timeout)


def baton_binary() -> str:
    return os.environ.get("TEST_BATON_BIN") or str(REPO / "target" / "debug" / "baton")


@dataclass
class Secure:
    server: BatonServer
    token: str
    ca: str
    cert: str
    key: str
    other_ca: str  # a CA that did not sign the server's certificate

    @property
    def addr(self) -> str:
        return self.server.addr

    def connect(self, **overrides) -> baton.Client:
        settings = dict(ca_file=self.ca, cert_file=self.cert, key_file=self.key, token=self.token)
        settings.update(overrides)
        return baton.connect(self.addr, **settings)


@pytest.fixture(scope="module")
def secure(tmp_path_factory):
    """A Baton with TLS, mutual TLS (client certificates signed by the dev CA) and tokens on."""
    certs = tmp_path_factory.mktemp("baton-certs")
    other = tmp_path_factory.mktemp("baton-other-certs")
    for d in (certs, other):
        subprocess.run([baton_binary(), "dev-certs", "--dir", str(d)], check=True, capture_output=True, timeout=60)
    out = subprocess.run([baton_binary(), "token", "--name", "py-admin", "--role", "admin"],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    token, _, entry = out.partition("\n")
    tokens = certs / "py-tokens.toml"
    tokens.write_text(entry)
    server = BatonServer({
        **QUICK_ENV,
        "BATON_TLS__CERT_FILE": str(certs / "server.pem"),
        "BATON_TLS__KEY_FILE": str(certs / "server.key"),
        "BATON_TLS__CLIENT_CA_FILE": str(certs / "ca.pem"),
        "BATON_AUTH__TOKENS_FILE": str(tokens),
    })
    try:
        yield Secure(server, token.strip(), str(certs / "ca.pem"), str(certs / "client.pem"),
                     str(certs / "client.key"), str(other / "ca.pem"))
    finally:
        server.stop()


async def stop(helper, task: asyncio.Task) -> None:
    helper.stop()
    await asyncio.wait_for(task, 15)


# --- against a secured Baton ------------------------------------------------------------------

async def test_a_worker_runs_an_agent_over_mutual_tls_with_a_token(secure):
    queue = unique("py-tls")
    async with secure.connect() as client:
        agents = client.stub(agent_pb2_grpc.AgentServiceStub)
        # No timeout given: the client's default deadline applies.
        await agents.Register(agent_pb2.RegisterRequest(queue=queue, agents=[
            agent_pb2.Agent(name="a1", timeout=baton.duration(30), error_interval=baton.duration(3600))]))
        seen = []

        async def handle(lease):
            seen.append((lease.name, lease.token))

        worker = baton.Worker(client, queue, unique("w"), handle, heartbeat_every=0.2)
        task = asyncio.create_task(worker.run())
        await eventually(lambda: [name for name, _ in seen] == ["a1"])

        # Completed with SUCCESS: a one-shot agent is removed once it succeeds.
        async def removed():
            return list((await agents.ListAgents(agent_pb2.ListAgentsRequest(queue=queue))).agents) == []

        await eventually(removed)
        await stop(worker, task)
        assert len(seen) == 1 and seen[0][1] > 0
        # The worker left the shared channel open.
        assert not client.closed
        await agents.ListAgents(agent_pb2.ListAgentsRequest(queue=queue))
    assert client.closed


async def test_one_client_shared_by_claims_pools_schedules_subscribers_and_leadership(secure):
    async with secure.connect() as client:
        pool = baton.Pool(client, unique("py-tls-pool"))
        claimer = baton.Claimer(client, pool.pool, "c1", wait=5)
        offered = await pool.offer(["r1"])
        assert offered.idle == 1
        async with claimer.claimed() as claim:
            assert claim is not None and claim.id == "r1" and claim.token > 0
            assert (await pool.status()).claimed == 1
        status = await pool.status()
        assert (status.idle, status.claimed, status.dead_lettered) == (1, 0, 0)
        # Closing a helper does not close the client's channel.
        await claimer.close()
        await pool.close()

        receiver = unique("py-tls-rcv")
        got = []

        async def handle(message):
            got.append(message.payload)

        async with baton.Scheduler(client) as scheduler:
            scheduled = await scheduler.schedule(receiver, b"hello", key="k1")
            assert scheduled.created
        sub = baton.Subscriber(client, receiver, "c1", handle)  # a stream: the token goes on it too
        task = asyncio.create_task(sub.run())
        await eventually(lambda: sub.acked == 1)
        await stop(sub, task)
        assert got == [b"hello"] and sub.failed == 0

        # Campaign is a long poll; Renew, Resign.
        async with baton.Leadership(client, unique("py-tls-el"), "cand-a", ttl=5) as lead:
            token = await lead.wait_elected(15)
            assert token > 0 and lead.is_leader

        # Still usable after every helper closed.
        status = await client.stub(claim_pb2_grpc.ClaimServiceStub).GetPool(claim_pb2.GetPoolRequest(pool=pool.pool))
        assert status.status.idle == 1


async def test_a_long_poll_gets_its_wait_plus_a_margin_not_the_default_deadline(secure):
    async with secure.connect(timeout=0.5) as client:
        pool = unique("py-tls-empty")
        claims = client.stub(claim_pb2_grpc.ClaimServiceStub)
        started = time.monotonic()
        response = await claims.Claim(claim_pb2.ClaimRequest(
            pool=pool, claimer_id="c1", wait=baton.duration(1.5)))
        assert not response.HasField("resource")  # the wait ended: no DEADLINE_EXCEEDED at 0.5 s
        assert time.monotonic() - started >= 1.0


async def test_without_the_token_calls_are_unauthenticated(secure):
    async with secure.connect(token=None) as client:
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await client.stub(agent_pb2_grpc.AgentServiceStub).ListAgents(agent_pb2.ListAgentsRequest(queue="q"))
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
        # A stream too.
        call = client.stub(schedule_pb2_grpc.ScheduleServiceStub).Subscribe(
            schedule_pb2.SubscribeRequest(receiver="r", consumer_id="c", max_in_flight=1))
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await asyncio.wait_for(call.read(), 15)
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
    async with secure.connect(token="baton_not-a-real-token") as client:
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await client.stub(agent_pb2_grpc.AgentServiceStub).ListAgents(agent_pb2.ListAgentsRequest(queue="q"))
        assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_a_wrong_ca_fails_the_handshake(secure):
    async with secure.connect(ca_file=secure.other_ca) as client:
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await client.stub(agent_pb2_grpc.AgentServiceStub).ListAgents(
                agent_pb2.ListAgentsRequest(queue="q"), timeout=15)
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_server_name_override(secure):
    # The server's certificate names localhost and 127.0.0.1: checked for the name given.
    async with secure.connect(server_name="localhost") as client:
        await client.stub(agent_pb2_grpc.AgentServiceStub).ListAgents(agent_pb2.ListAgentsRequest(queue="q"))
    async with secure.connect(server_name="not-baton.example") as client:
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await client.stub(agent_pb2_grpc.AgentServiceStub).ListAgents(
                agent_pb2.ListAgentsRequest(queue="q"), timeout=15)
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_the_example_worker_over_mutual_tls_with_the_token_from_the_environment(secure):
    queue = unique("py-tls-example")
    async with secure.connect() as client:
        await client.stub(agent_pb2_grpc.AgentServiceStub).Register(agent_pb2.RegisterRequest(queue=queue, agents=[
            agent_pb2.Agent(name="e1", timeout=baton.duration(30), error_interval=baton.duration(3600))]))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(pathlib.Path(__file__).parents[1] / "examples" / "worker.py"),
        "--addr", secure.addr, "--queue", queue, "--worker-id", unique("ex"), "--work-ms", "50",
        "--heartbeat-ms", "500", "--ca-file", secure.ca, "--cert-file", secure.cert, "--key-file", secure.key,
        env={**os.environ, "BATON_TOKEN": secure.token}, stdout=asyncio.subprocess.PIPE)
    try:
        events = []
        while not events or events[-1]["event"] != "done":
            line = await asyncio.wait_for(proc.stdout.readline(), 30)
            assert line, "the example worker exited early"
            events.append(json.loads(line))
        assert [(e["event"], e["name"]) for e in events] == [("acquired", "e1"), ("done", "e1")]
        proc.send_signal(signal.SIGTERM)
        rest = await asyncio.wait_for(proc.stdout.read(), 30)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
        assert json.loads(rest.splitlines()[-1])["event"] == "stopped"
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_a_shared_client_reconnects_after_the_server_restarts(own_baton):
    # Plaintext, no token: the interceptors still wrap every call (default deadline).
    receiver = unique("py-cl-reconnect")
    seen = []

    async def handle(message):
        seen.append(message.payload)

    async with baton.connect(own_baton.addr) as client:
        scheduler = baton.Scheduler(client)
        await scheduler.schedule(receiver, b"before")
        sub = baton.Subscriber(client, receiver, "c1", handle)
        task = asyncio.create_task(sub.run())
        await eventually(lambda: seen == [b"before"])
        own_baton.restart()

        async def scheduled():
            try:
                await scheduler.schedule(receiver, b"after", key="after")
                return True
            except grpc.aio.AioRpcError as e:
                assert e.code() == grpc.StatusCode.UNAVAILABLE
                return False

        await eventually(scheduled, timeout=20)
        await eventually(lambda: seen == [b"before", b"after"], timeout=20)
        assert sub.reconnects >= 1
        await eventually(lambda: sub.acked == 2)
        await stop(sub, task)


# --- settings and call shapes, against a local gRPC server -----------------------------------

def test_settings_are_checked():
    with pytest.raises(ValueError, match="both cert_file and key_file"):
        baton.Client("127.0.0.1:1", cert_file="client.pem")
    with pytest.raises(ValueError, match="cannot read the CA file"):
        baton.Client("127.0.0.1:1", ca_file="/nonexistent/ca.pem")
    with pytest.raises(ValueError, match="token"):
        baton.Client("127.0.0.1:1", token="two words")
    with pytest.raises(ValueError, match="tls=False"):
        baton.Client("127.0.0.1:1", tls=False, server_name="x")
    assert baton.connect("http://127.0.0.1:1").target == "127.0.0.1:1"
    assert not baton.connect("127.0.0.1:1").tls
    assert baton.connect("https://127.0.0.1:1").tls
    assert "secret" not in repr(baton.connect("127.0.0.1:1", token="secret"))
    options = dict(baton.connect("127.0.0.1:1", options=[("grpc.keepalive_time_ms", 5000)])._options)
    assert options["grpc.keepalive_time_ms"] == 5000 and options["grpc.keepalive_permit_without_calls"] == 1
    assert "grpc.keepalive_time_ms" not in dict(baton.connect("127.0.0.1:1", keepalive=None)._options)


@pytest.fixture
async def echo_server():
    """A plaintext gRPC server with one method of each shape; each records its call's
    authorization metadata and remaining time."""
    seen = []

    def record(shape, context):
        metadata = dict(context.invocation_metadata())
        seen.append((shape, metadata.get("authorization"), context.time_remaining()))

    async def uu(request, context):
        record("uu", context)
        return b"ok"

    async def us(request, context):
        record("us", context)
        yield b"a"
        yield b"b"

    async def su(requests, context):
        record("su", context)
        return b"".join([r async for r in requests])

    async def ss(requests, context):
        record("ss", context)
        async for r in requests:
            yield r

    server = grpc.aio.server()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("test.Echo", {
        "UU": grpc.unary_unary_rpc_method_handler(uu),
        "US": grpc.unary_stream_rpc_method_handler(us),
        "SU": grpc.stream_unary_rpc_method_handler(su),
        "SS": grpc.stream_stream_rpc_method_handler(ss),
    }),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"127.0.0.1:{port}", seen
    finally:
        await server.stop(None)


async def test_the_token_goes_on_every_call_shape_over_plaintext_too(echo_server):
    addr, seen = echo_server
    async with baton.connect(addr, token="tok-1", timeout=5) as client:
        channel = client.channel
        assert await channel.unary_unary("/test.Echo/UU")(b"x") == b"ok"
        assert [m async for m in channel.unary_stream("/test.Echo/US")(b"x")] == [b"a", b"b"]

        async def requests():
            yield b"1"
            yield b"2"

        assert await channel.stream_unary("/test.Echo/SU")(requests()) == b"12"
        assert [m async for m in channel.stream_stream("/test.Echo/SS")(requests())] == [b"1", b"2"]
        # A caller's own metadata is kept alongside.
        await channel.unary_unary("/test.Echo/UU")(b"x", metadata=(("x-trace", "t1"),))
    assert [(shape, auth) for shape, auth, _ in seen] == [
        ("uu", "Bearer tok-1"), ("us", "Bearer tok-1"), ("su", "Bearer tok-1"), ("ss", "Bearer tok-1"),
        ("uu", "Bearer tok-1")]


async def test_the_default_deadline_applies_to_unary_calls_that_set_none(echo_server):
    addr, seen = echo_server
    acquire = agent_pb2.AcquireRequest.SerializeToString
    async with baton.connect(addr, timeout=3) as client:
        uu = client.channel.unary_unary("/test.Echo/UU", request_serializer=acquire)
        await uu(agent_pb2.AcquireRequest(queue="q"))                                   # the default
        await uu(agent_pb2.AcquireRequest(queue="q"), timeout=60)                       # its own
        await uu(agent_pb2.AcquireRequest(queue="q", wait=baton.duration(40)))          # a long poll
        await client.channel.unary_stream("/test.Echo/US")(b"x").read()                 # a stream: none
    (_, auth, default), (_, _, own), (_, _, long_poll), (_, _, stream) = seen
    assert auth is None
    # (The server's clock reading may run a little ahead of the client's.)
    assert 0 < default <= 3.5
    assert 40 < own <= 60.5
    assert 40 < long_poll <= 50.5
    assert stream is None or stream > 3600


async def test_a_helper_leaves_a_caller_channel_and_a_client_open(echo_server):
    addr, _ = echo_server
    client = baton.connect(addr)
    scheduler = baton.Scheduler(client)
    await scheduler.close()
    assert not client.closed
    assert await client.channel.unary_unary("/test.Echo/UU")(b"x") == b"ok"
    await client.close()
    await client.close()  # idempotent
    with pytest.raises(RuntimeError):
        client.channel

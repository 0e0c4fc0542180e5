"""The worker loop against a live Baton."""

from __future__ import annotations

import asyncio
import time
import uuid

import grpc
import pytest

import baton
from baton import Failure, Outcome
from baton.v1 import agent_pb2, agent_pb2_grpc


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def register(stub, queue, names, *, timeout=30.0, interval=0.0, error_interval=3600.0):
    agents = [
        agent_pb2.Agent(
            name=n,
            timeout=baton.duration(timeout),
            error_interval=baton.duration(error_interval),
            **({"interval": baton.duration(interval)} if interval else {}),
        )
        for n in names
    ]
    await stub.Register(agent_pb2.RegisterRequest(queue=queue, agents=agents))


async def eventually(predicate, timeout=10.0, every=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        await asyncio.sleep(every)
    raise AssertionError("condition not met within %.1fs" % timeout)


@pytest.fixture
async def stub(baton_server):
    async with grpc.aio.insecure_channel(baton_server.addr) as channel:
        yield agent_pb2_grpc.AgentServiceStub(channel)


async def stop(worker: baton.Worker, task: asyncio.Task) -> None:
    worker.stop()
    await asyncio.wait_for(task, 10)


async def test_happy_path_runs_each_agent_once(baton_server, stub):
    queue = unique("py-happy")
    names = [f"a{i}" for i in range(6)]
    await register(stub, queue, names)
    seen: list[str] = []

    async def handle(lease):
        assert lease.queue == queue and lease.token > 0
        await asyncio.sleep(0.05)
        seen.append(lease.name)

    worker = baton.Worker(baton_server.addr, queue, unique("w"), handle, max_leases=2, heartbeat_every=0.2)
    task = asyncio.create_task(worker.run())
    await eventually(lambda: len(seen) == len(names))
    # One-shot agents are removed once they succeed.
    await eventually(lambda: baton_server.completed(queue).get("SUCCESS") == len(names))
    listing = await stub.ListAgents(agent_pb2.ListAgentsRequest(queue=queue))
    assert list(listing.agents) == []
    await stop(worker, task)
    assert sorted(seen) == names


async def test_heartbeats_keep_a_long_run_alive(baton_server, stub):
    queue = unique("py-long")
    await register(stub, queue, ["slow"], timeout=1.0)
    cancelled = []

    async def handle(lease):
        try:
            await asyncio.sleep(2.5)  # 2.5 × the lease's timeout
        except asyncio.CancelledError:
            cancelled.append(lease.token)
            raise

    worker = baton.Worker(baton_server.addr, queue, unique("w"), handle, heartbeat_every=0.25)
    task = asyncio.create_task(worker.run())
    await eventually(lambda: baton_server.completed(queue).get("SUCCESS") == 1, timeout=10)
    await stop(worker, task)
    assert cancelled == []


async def test_progress_is_shown_and_a_cancelled_run_cancels_the_handler(baton_server, stub):
    queue = unique("py-cancel")
    await register(stub, queue, ["crawl"], timeout=30.0, interval=3600.0)
    started, cancelled = asyncio.Event(), []

    async def handle(lease):
        worker.report_progress(lease, "page 3 of 10")
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(lease.token)
            raise

    worker = baton.Worker(baton_server.addr, queue, unique("w"), handle, heartbeat_every=0.1)
    task = asyncio.create_task(worker.run())
    await asyncio.wait_for(started.wait(), 10)

    async def status():
        return (await stub.GetAgent(agent_pb2.GetAgentRequest(queue=queue, name="crawl"))).agent

    deadline = time.monotonic() + 10
    while (await status()).progress != "page 3 of 10":
        assert time.monotonic() < deadline, "progress never shown"
        await asyncio.sleep(0.05)
    token = (await status()).token
    assert (await stub.CancelRun(agent_pb2.CancelRunRequest(queue=queue, name="crawl"))).requested
    await eventually(lambda: cancelled == [token], timeout=10)
    deadline = time.monotonic() + 10
    while (await status()).state != agent_pb2.AGENT_STATE_WAITING:
        assert time.monotonic() < deadline, "the cancelled run never ended"
        await asyncio.sleep(0.05)
    await stop(worker, task)
    assert baton_server.completed(queue) == {}, "a cancelled run is neither completed nor failed"


class HTTPError(Exception):
    def __init__(self, status, retry_after=None):
        super().__init__(f"HTTP {status}")
        self.status_code = status
        self.headers = {"Retry-After": str(retry_after)} if retry_after else {}


class ThrottledError(Exception):
    """A library's error that only its name says is a throttling."""


class PermissionDeniedError(Exception):
    pass


# What the worker sends (an HTTP status, the error's type name) and Baton's classification of it:
# HTTPError, ThrottledError and PermissionDeniedError mean nothing to the helper itself.
CASES = {
    "http401": (HTTPError(401), "PERMANENT_FORBIDDEN"),
    "http403": (HTTPError(403), "PERMANENT_FORBIDDEN"),
    "http429": (HTTPError(429), "THROTTLED"),
    "http408": (HTTPError(408), "TRANSIENT"),
    "http503": (HTTPError(503), "SERVER_ERROR"),
    "http503-after": (HTTPError(503, retry_after=7200), "SERVER_ERROR"),
    "http404": (HTTPError(404), "UNKNOWN"),
    "reset": (ConnectionResetError("reset"), "TRANSIENT"),
    "timeout": (TimeoutError("slow"), "TRANSIENT"),
    "bug": (ValueError("bad"), "UNKNOWN"),
    "named-throttled": (ThrottledError("slow down"), "THROTTLED"),
    "named-denied": (PermissionDeniedError("no"), "PERMANENT_FORBIDDEN"),
    "from-status": (Failure.from_http_status(429, "quota"), "THROTTLED"),
    "explicit": (Failure(Outcome.OUTCOME_THROTTLED, "quota", retry_after=7200), "THROTTLED"),
}


async def test_errors_map_to_outcomes(baton_server, stub):
    prefix = unique("py-outcome")
    workers = []
    for case, (exc, _) in CASES.items():
        queue = f"{prefix}-{case}"
        await register(stub, queue, ["job"])

        async def handle(lease, exc=exc):
            raise exc

        worker = baton.Worker(baton_server.addr, queue, unique("w"), handle, heartbeat_every=0.5)
        workers.append((worker, asyncio.create_task(worker.run())))
    for case, (_, outcome) in CASES.items():
        queue = f"{prefix}-{case}"
        got = await eventually(lambda q=queue: baton_server.completed(q) or None)
        assert got == {outcome: 1}, case
    # An explicit retry_after longer than the computed backoff wins, as does a Retry-After header.
    for case in ("explicit", "http503-after"):
        status = (await stub.GetAgent(agent_pb2.GetAgentRequest(queue=f"{prefix}-{case}", name="job"))).agent
        assert status.next_run_at.seconds >= time.time() + 7000, case
    for worker, task in workers:
        await stop(worker, task)


async def test_cancelling_run_stops_the_worker_like_stop(baton_server, stub):
    """Python's own way to stop: cancelling the task of run() stops as stop() does (the
    conformance scenario shutdown_releases_running_work covers stop() in every language), then
    raises CancelledError."""
    queue = unique("py-release")
    await register(stub, queue, ["held"], interval=3600.0)
    started, cancelled = asyncio.Event(), []

    async def handle(lease):
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(lease.name)
            raise

    worker = baton.Worker(baton_server.addr, queue, unique("w"), handle, heartbeat_every=0.2)
    task = asyncio.create_task(worker.run())
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 10)
    assert cancelled == ["held"]
    status = (await stub.GetAgent(agent_pb2.GetAgentRequest(queue=queue, name="held"))).agent
    assert status.state == agent_pb2.AGENT_STATE_WAITING and status.holder == ""
    assert baton_server.completed(queue) == {}
    # Released, not failed: due again at once, no failure counted.
    assert status.failure_streak == 0
    again = await stub.Acquire(agent_pb2.AcquireRequest(queue=queue, worker_id="other", max_leases=1))
    assert [lease.name for lease in again.leases] == ["held"]


async def test_a_blocking_handler_runs_in_a_thread_while_heartbeats_go_on(baton_server, stub):
    queue = unique("py-sync")
    await register(stub, queue, ["blocking"], timeout=1.0)
    ran = []

    def handle(lease):  # a plain function: blocking calls are fine here
        time.sleep(2.0)  # twice the lease's timeout
        ran.append(lease.name)

    worker = baton.Worker(baton_server.addr, queue, unique("w"), handle, heartbeat_every=0.25)
    task = asyncio.create_task(worker.run())
    await eventually(lambda: baton_server.completed(queue).get("SUCCESS") == 1, timeout=10)
    await stop(worker, task)
    assert ran == ["blocking"]


async def test_a_long_failure_message_is_sent_whole_and_clipped_by_the_server(baton_server, stub):
    """Shared case of every client language: a message far over the server's 4,096-byte limit,
    of 2-, 3- and 4-byte characters, is sent whole: Complete succeeds (the run is dead-lettered at
    once, not timed out) and the stored message is clipped by Baton on a character boundary,
    ending in "…", within the limit."""
    from baton.v1 import admin_pb2, admin_pb2_grpc

    queue = unique("py-clip")
    agent = agent_pb2.Agent(name="dies", timeout=baton.duration(60), error_interval=baton.duration(3600),
                            max_attempts=1)
    await stub.Register(agent_pb2.RegisterRequest(queue=queue, agents=[agent]))
    long = "é€😀" * 1000

    async def handle(lease):
        raise Failure(Outcome.OUTCOME_UNKNOWN, long)

    worker = baton.Worker(baton_server.addr, queue, unique("w"), handle)
    task = asyncio.create_task(worker.run())
    async with grpc.aio.insecure_channel(baton_server.addr) as channel:
        admin = admin_pb2_grpc.AdminServiceStub(channel)
        source = admin_pb2.Source(kind=admin_pb2.SOURCE_KIND_QUEUE, name=queue)

        async def dead():
            page = await admin.ListDeadLetters(admin_pb2.ListDeadLettersRequest(source=source))
            return page.dead_letters[0] if page.dead_letters else None

        letter = await eventually(dead, timeout=30)
    await stop(worker, task)
    stored = letter.message.encode("utf-8")  # a str from protobuf: valid UTF-8
    assert 4096 - 8 < len(stored) <= 4096, len(stored)
    assert letter.message.endswith("…")
    assert long.startswith(letter.message.removesuffix("…"))


async def test_a_handler_waits_for_an_event_and_a_signal_wakes_it(baton_server, stub):
    queue = unique("py-wait")
    runs = []

    async def handle(lease):
        event = baton.lease_event(lease)
        runs.append(event and (event.event, event.payload))
        if event is None:
            raise baton.WaitFor("approve", timeout=3600)
        return b"approved " + event.payload

    async with baton.Producer(baton_server.addr) as producer:
        await producer.register(queue, "run", "other")
        worker = baton.Worker(baton_server.addr, queue, unique("w"), handle, max_leases=2)
        task = asyncio.create_task(worker.run())

        async def state(name):
            return (await stub.GetAgent(agent_pb2.GetAgentRequest(queue=queue, name=name))).agent.state

        await eventually(lambda: runs.count(None) == 2)  # both runs waiting, neither finished
        await eventually(async_equal(state, "run", agent_pb2.AGENT_STATE_WAITING_FOR_EVENT))
        answer = await producer.signal(queue, "run", "approve", "yes")  # the helper makes the request id
        assert (answer.delivered, answer.kept) == (True, False)
        await eventually(lambda: ("approve", b"yes") in runs)

        async def left():
            return [a.agent.name for a in (await stub.ListAgents(agent_pb2.ListAgentsRequest(queue=queue))).agents]
        await eventually(async_equal(lambda _: left(), None, ["other"]))  # the woken run succeeded; other waits
        await stop(worker, task)


def async_equal(read, name, want):
    async def check():
        return await read(name) == want
    return check


async def test_an_agent_registered_with_wait_for_waits_for_its_event(baton_server, stub):
    queue = unique("py-gate")
    async with baton.Producer(baton_server.addr) as producer:
        await producer.register(queue, baton.agent("gate", wait_for=baton.WaitFor("approve", timeout=60)))
        status = (await stub.GetAgent(agent_pb2.GetAgentRequest(queue=queue, name="gate"))).agent
        assert status.state == agent_pb2.AGENT_STATE_WAITING_FOR_EVENT
        assert (status.waiting_for.event, status.waiting_for.HasField("until")) == ("approve", True)
        answer = await producer.signal(queue, "gate", "approve", b"ok", request_id="r-1")
        again = await producer.signal(queue, "gate", "approve", b"other", request_id="r-1")
        assert answer.delivered and again == answer, "a retry with the request id answers the first call"


async def test_progress_goes_at_once_and_watch_streams_it_in_order(baton_server, stub):
    queue = unique("py-watch")
    await register(stub, queue, ["job"])

    async def handle(lease):
        await worker.progress(lease, "1/1")  # answered long before the 30 s heartbeat
        await worker.record_step(lease, "s1", "r")
        return "done"

    worker = baton.Worker(baton_server.addr, queue, unique("w"), handle, heartbeat_every=30)
    async with baton.Producer(baton_server.addr) as producer:
        updates = producer.watch(queue, "job", timeout=20)
        first = await updates.__anext__()
        assert first.update == baton.WatchUpdate.Value("WATCH_UPDATE_SNAPSHOT")
        task = asyncio.create_task(worker.run())
        seen = [u async for u in updates]
        await stop(worker, task)
    kinds = [(baton.WatchUpdate.Name(u.update), u.progress, [s.name for s in u.steps]) for u in seen]
    assert kinds[:3] == [("WATCH_UPDATE_GRANTED", "", []), ("WATCH_UPDATE_PROGRESS", "1/1", []),
                         ("WATCH_UPDATE_STEP", "", ["s1"])], kinds
    assert kinds[-1][0] == "WATCH_UPDATE_FINISHED" and seen[-1].finish.result.result == b"done"

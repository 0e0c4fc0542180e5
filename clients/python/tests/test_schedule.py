"""Scheduled messages and the subscriber against a live Baton (ack timeout 0.5 s)."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import datetime, timedelta, timezone

import grpc
import pytest

import baton
from baton.v1 import schedule_pb2, schedule_pb2_grpc


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


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
async def scheduler(quick_baton):
    async with baton.Scheduler(quick_baton.addr) as s:
        yield s


async def stop(sub: baton.Subscriber, task: asyncio.Task) -> None:
    sub.stop()
    await asyncio.wait_for(task, 10)


async def ack_again(addr, receiver, message) -> grpc.aio.AioRpcError:
    async with grpc.aio.insecure_channel(addr) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await schedule_pb2_grpc.ScheduleServiceStub(channel).Ack(
                schedule_pb2.AckRequest(receiver=receiver, id=message.id, token=message.token))
    return refused.value


async def test_messages_are_handled_and_acked(quick_baton, scheduler):
    receiver = unique("py-rcv")
    first = await scheduler.schedule(receiver, b"now")
    later = await scheduler.schedule(receiver, "later", delay=0.3)
    assert first.created and later.id != first.id
    got, seen = [], []

    async def handle(message):
        got.append((message.payload, message.delivery_count, time.time()))
        seen.append(message)

    sub = baton.Subscriber(quick_baton.addr, receiver, "c1", handle, max_in_flight=2)
    task = asyncio.create_task(sub.run())
    await eventually(lambda: sub.acked == 2)
    assert sorted(p for p, _, _ in got) == [b"later", b"now"]
    assert all(count == 1 for _, count, _ in got)
    # Not before its time (by the Redis clock, which is this machine's).
    [(_, _, at)] = [g for g in got if g[0] == b"later"]
    assert at >= later.deliver_at.ToDatetime(tzinfo=timezone.utc).timestamp() - 0.01
    # Acked for good: the token is spent, and nothing comes back after the ack timeout.
    for message in seen:
        assert baton.is_lease_lost(await ack_again(quick_baton.addr, receiver, message))
    await asyncio.sleep(1.0)
    assert len(got) == 2 and sub.failed == 0
    await stop(sub, task)


async def test_at_most_max_in_flight_handlers_at_once(quick_baton, scheduler):
    receiver = unique("py-par")
    for i in range(6):
        await scheduler.schedule(receiver, f"m{i}")
    running, peak = 0, 0

    async def handle(message):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.15)
        running -= 1

    sub = baton.Subscriber(quick_baton.addr, receiver, "c1", handle, max_in_flight=3)
    task = asyncio.create_task(sub.run())
    await eventually(lambda: sub.acked == 6)
    assert peak == 3
    await stop(sub, task)


async def test_a_failed_message_is_not_acked_and_comes_back(quick_baton, scheduler):
    receiver = unique("py-fail")
    await scheduler.schedule(receiver, b"flaky")
    counts, failures = [], []

    def handle(message):  # a plain function runs in a thread
        counts.append(message.delivery_count)
        if message.delivery_count == 1:
            raise ConnectionError("downstream unavailable")

    async def on_failure(message, exc):
        failures.append((message.delivery_count, str(exc)))

    sub = baton.Subscriber(quick_baton.addr, receiver, "c1", handle, on_failure=on_failure)
    task = asyncio.create_task(sub.run())
    await eventually(lambda: sub.acked == 1, timeout=10)
    assert counts == [1, 2]
    assert failures == [(1, "downstream unavailable")]
    assert sub.failed == 1
    await stop(sub, task)


async def test_stop_lets_running_handlers_finish_and_acks_them(quick_baton, scheduler):
    receiver = unique("py-drain")
    await scheduler.schedule(receiver, b"m")
    started, finished = asyncio.Event(), []

    async def handle(message):
        started.set()
        await asyncio.sleep(0.3)
        finished.append(message.id)

    sub = baton.Subscriber(quick_baton.addr, receiver, "c1", handle, shutdown_grace=5)
    task = asyncio.create_task(sub.run())
    await asyncio.wait_for(started.wait(), 10)
    await stop(sub, task)
    assert len(finished) == 1 and sub.acked == 1
    # Nothing left: a new subscriber gets nothing, even after the ack timeout.
    seen = []
    other = baton.Subscriber(quick_baton.addr, receiver, "c2", seen.append)
    task = asyncio.create_task(other.run())
    await asyncio.sleep(1.0)
    await stop(other, task)
    assert seen == []


async def test_stop_cancels_handlers_past_the_grace_and_a_new_subscriber_gets_their_messages(quick_baton, scheduler):
    receiver = unique("py-stop")
    await scheduler.schedule(receiver, b"stuck")
    started, cancelled = asyncio.Event(), []

    async def hang(message):
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(message.delivery_count)
            raise

    sub = baton.Subscriber(quick_baton.addr, receiver, "c1", hang, shutdown_grace=0.2)
    task = asyncio.create_task(sub.run())
    await asyncio.wait_for(started.wait(), 10)
    began = time.monotonic()
    await stop(sub, task)
    assert time.monotonic() - began < 2
    assert cancelled == [1] and sub.acked == 0
    # Unacked, so delivered again after the ack timeout, to whoever subscribes.
    seen = []

    async def handle(message):
        seen.append((message.payload, message.delivery_count))

    other = baton.Subscriber(quick_baton.addr, receiver, "c2", handle)
    task = asyncio.create_task(other.run())
    await eventually(lambda: other.acked == 1, timeout=10)
    # Delivery 2 or later: while c1 let its handler finish (the grace) the message could expire and
    # go out to c1 again, which, stopping, left it unhandled.
    assert len(seen) == 1 and seen[0][0] == b"stuck" and seen[0][1] >= 2, seen
    await stop(other, task)


async def test_it_subscribes_again_after_the_server_restarts(own_baton):
    receiver = unique("py-reconnect")
    seen = []

    async def handle(message):
        seen.append(message.payload)

    async with baton.Scheduler(own_baton.addr) as scheduler:
        await scheduler.schedule(receiver, b"before")
    sub = baton.Subscriber(own_baton.addr, receiver, "c1", handle)
    task = asyncio.create_task(sub.run())
    await eventually(lambda: seen == [b"before"])
    # SIGTERM ends the stream cleanly; the subscriber retries until Baton is back.
    own_baton.restart()
    async with baton.Scheduler(own_baton.addr) as scheduler:
        await scheduler.schedule(receiver, b"after")
    await eventually(lambda: seen == [b"before", b"after"], timeout=20)
    assert sub.reconnects >= 1
    await eventually(lambda: sub.acked == 2)
    await stop(sub, task)


async def test_an_invalid_subscription_is_raised_not_retried(quick_baton):
    sub = baton.Subscriber(quick_baton.addr, "not a valid name!", "c1", lambda m: None)
    with pytest.raises(grpc.aio.AioRpcError) as bad:
        await asyncio.wait_for(sub.run(), 5)
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_schedule_keys_deliver_at_and_cancel(quick_baton, scheduler):
    receiver = unique("py-sched")
    a = await scheduler.schedule(receiver, b"x", delay=timedelta(hours=1), key="invoice-7")
    b = await scheduler.schedule(receiver, b"y", delay=5, key="invoice-7")
    assert a.created and not b.created and b.id == a.id
    at = datetime.now(timezone.utc) + timedelta(hours=2)
    c = await scheduler.schedule(receiver, b"z", deliver_at=at)
    assert abs(c.deliver_at.ToDatetime(tzinfo=timezone.utc).timestamp() - at.timestamp()) < 0.01
    with pytest.raises(ValueError):
        await scheduler.schedule(receiver, b"", delay=1, deliver_at=at)
    assert await scheduler.cancel(receiver, a.id)
    assert not await scheduler.cancel(receiver, a.id)
    # The key is free again once its message is gone.
    d = await scheduler.schedule(receiver, b"x2", key="invoice-7")
    assert d.created and d.id != a.id


async def test_each_message_handled_once_within_max_in_flight(quick_baton, scheduler):
    """On the Receive stream: 200 messages each handled
    once, never more than max_in_flight handlers at once, every ack confirmed, none late."""
    receiver = unique("py-many")
    for i in range(200):
        await scheduler.schedule(receiver, f"m{i}".encode())
    seen: dict = {}
    running = peak = 0

    async def handle(message):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        seen[message.payload] = seen.get(message.payload, 0) + 1
        await asyncio.sleep(0)
        running -= 1

    sub = baton.Subscriber(quick_baton.addr, receiver, "c1", handle, max_in_flight=5)
    task = asyncio.create_task(sub.run())
    await eventually(lambda: sub.acked == 200, timeout=30)
    await stop(sub, task)
    assert len(seen) == 200 and set(seen.values()) == {1}
    assert peak <= 5 and sub.late_acks == 0, (peak, sub.late_acks)


async def test_a_late_ack_on_the_stream_is_counted_and_the_stream_goes_on(quick_baton, scheduler):
    """A handler slower than the ack timeout (0.5 s): the message goes out again, the first
    handler's ack comes back lost (late_acks), and the second delivery is acked."""
    receiver = unique("py-late")
    await scheduler.schedule(receiver, b"slow")
    release = asyncio.Event()
    deliveries = []

    async def handle(message):
        deliveries.append(message.delivery_count)
        if message.delivery_count == 1:
            await release.wait()

    sub = baton.Subscriber(quick_baton.addr, receiver, "c1", handle, max_in_flight=2)
    task = asyncio.create_task(sub.run())
    await eventually(lambda: len(deliveries) == 2, timeout=20)
    await eventually(lambda: sub.acked == 1)
    release.set()
    await eventually(lambda: sub.late_acks == 1)
    await stop(sub, task)
    assert sub.acked == 1 and deliveries == [1, 2]

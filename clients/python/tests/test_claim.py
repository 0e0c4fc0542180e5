"""The claim helper and the pool manager against a live Baton."""

from __future__ import annotations

import asyncio
import time
import uuid

import grpc
import pytest

import baton
from baton.v1 import admin_pb2, admin_pb2_grpc


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


async def dead_letters(addr: str, pool: str):
    async with grpc.aio.insecure_channel(addr) as channel:
        response = await admin_pb2_grpc.AdminServiceStub(channel).ListDeadLetters(admin_pb2.ListDeadLettersRequest(
            source=admin_pb2.Source(kind=admin_pb2.SOURCE_KIND_POOL, name=pool)))
    return list(response.dead_letters)


@pytest.fixture
async def pool(quick_baton):
    async with baton.Pool(quick_baton.addr, unique("py-pool")) as p:
        yield p


@pytest.fixture
async def claimer(quick_baton, pool):
    async with baton.Claimer(quick_baton.addr, pool.pool, "py-claimer", wait=2, attributes={"job": "t"}) as c:
        yield c


async def test_a_block_that_succeeds_returns_the_resource_for_reuse(pool, claimer):
    offered = await pool.offer([("vm-1", {"zone": "a"}), "vm-2"])
    assert (offered.idle, offered.handed, offered.duplicates) == (2, 0, 0)
    async with claimer.claimed() as claim:
        assert claim is not None and claim.id == "vm-1" and claim.token > 0
        assert claim.attributes == {"zone": "a", "job": "t"}
        assert claim.claimed_at is not None
        status = await pool.status()
        assert (status.idle, status.claimed) == (1, 1)
    status = await pool.status()
    assert (status.idle, status.claimed, status.dead_lettered) == (2, 0, 0)
    # Idle again, at the back of the ready queue: vm-2 first, then vm-1 with a newer token.
    second = await claimer.claim()
    third = await claimer.claim()
    assert (second.id, third.id) == ("vm-2", "vm-1")
    assert third.token > claim.token
    await second.return_()
    await third.return_()


async def test_a_block_that_raises_dead_letters_the_resource(quick_baton, pool, claimer):
    await pool.offer(["vm-1"])
    with pytest.raises(RuntimeError, match="disk full"):
        async with claimer.claimed() as claim:
            assert claim.id == "vm-1"
            raise RuntimeError("disk full")
    status = await pool.status()
    assert (status.idle, status.claimed, status.dead_lettered) == (0, 0, 1)
    [dead] = await dead_letters(quick_baton.addr, pool.pool)
    assert dead.id == "vm-1"
    assert dead.message == "RuntimeError: disk full"
    assert dead.holder == "py-claimer"


async def test_the_wait_ends_with_nothing(pool, claimer):
    started = time.monotonic()
    assert await claimer.claim(wait=0.3) is None
    assert time.monotonic() - started >= 0.25
    async with claimer.claimed(wait=0.2) as claim:
        assert claim is None
    assert await claimer.claim(wait=0) is None
    assert (await pool.status()).waiting_claims == 0


async def test_a_cancelled_block_returns_the_resource(quick_baton, pool, claimer):
    await pool.offer(["vm-1"])
    inside = asyncio.Event()

    async def use():
        async with claimer.claimed() as claim:
            assert claim is not None
            inside.set()
            await asyncio.sleep(60)

    task = asyncio.create_task(use())
    await asyncio.wait_for(inside.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    status = await pool.status()
    assert (status.idle, status.claimed, status.dead_lettered) == (1, 0, 0)
    assert await dead_letters(quick_baton.addr, pool.pool) == []


async def test_explicit_return_and_fail(quick_baton, pool, claimer):
    await pool.offer(["vm-1"])
    claim = await claimer.claim()
    await claim.return_(reuse=False)  # leaves the pool until offered again
    status = await pool.status()
    assert (status.idle, status.claimed) == (0, 0)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await claim.return_()
    assert baton.is_lease_lost(refused.value)
    assert baton.reason(refused.value) == "LEASE_LOST"
    await pool.offer(["vm-1"])
    claim = await claimer.claim()
    await claim.fail(ValueError("bad image"))
    [dead] = await dead_letters(quick_baton.addr, pool.pool)
    assert (dead.id, dead.message) == ("vm-1", "ValueError: bad image")
    # A block that ends its claim itself is left alone.
    await pool.offer(["vm-2"])
    async with claimer.claimed() as claim:
        await claim.return_(reuse=False)
    status = await pool.status()
    assert (status.idle, status.claimed, status.dead_lettered) == (0, 0, 1)


async def test_a_full_line_raises_line_full_with_the_pushback_hint(quick_baton, pool, claimer):
    # This Baton's line holds one waiting claim (pool.max_line = 1).
    first = asyncio.create_task(claimer.claim(wait=10))
    await eventually(lambda: _waiting(pool), timeout=5)
    other = baton.Claimer(quick_baton.addr, pool.pool, "py-other")
    with pytest.raises(baton.LineFull) as full:
        await other.claim(wait=10)
    assert full.value.retry_after == 0.25 and full.value.pool == pool.pool
    # The error under it: its reason and retry hint, read as any caller of the raw stubs would.
    cause = full.value.__cause__
    assert (baton.reason(cause), baton.pushback_seconds(cause)) == ("LINE_FULL", 0.25)
    assert full.value.reason == "LINE_FULL"
    await other.close()
    # An offer serves the waiting claim at once.
    offered = await pool.offer(["vm-1"])
    assert offered.handed == 1
    claim = await asyncio.wait_for(first, 5)
    assert claim.id == "vm-1"
    await claim.return_()


async def _waiting(pool):
    return (await pool.status()).waiting_claims == 1

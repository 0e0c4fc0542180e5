"""The worker's session stream against a live Baton: lost leases, broken streams."""

from __future__ import annotations

import asyncio

import grpc

import baton
from baton.v1 import agent_pb2, agent_pb2_grpc
from test_worker import eventually, register, stop, stub, unique  # noqa: F401 (stub: a fixture)


async def test_completion_of_a_lost_lease_is_refused_and_the_worker_goes_on(baton_server, stub):
    """The lease expires while its handler runs; another worker takes it over; the first
    worker's completion changes nothing, and the worker still takes new work."""
    queue = unique("py-lostc")
    await register(stub, queue, ["slow"], timeout=0.3, error_interval=0.01)
    started: asyncio.Queue = asyncio.Queue()
    release = asyncio.Event()
    done: list[str] = []

    async def handle(lease):
        if lease.name == "slow" and not release.is_set():
            started.put_nowait(lease.token)
            await release.wait()
        done.append(lease.name)

    worker = baton.Worker(baton_server.addr, queue, unique("w"), handle, heartbeat_every=3600)
    task = asyncio.create_task(worker.run())
    first = await asyncio.wait_for(started.get(), 30)

    async def taken_over():
        r = await stub.Acquire(agent_pb2.AcquireRequest(queue=queue, worker_id="other", max_leases=1))
        return r.leases[0] if r.leases else None

    taken = await eventually(taken_over, timeout=30)
    assert taken.token > first
    release.set()
    await register(stub, queue, ["next"])
    await eventually(lambda: "next" in done, timeout=30)
    status = (await stub.GetAgent(agent_pb2.GetAgentRequest(queue=queue, name="slow"))).agent
    assert (status.state, status.token, status.holder) == (agent_pb2.AGENT_STATE_WORKING, taken.token, "other")
    await stop(worker, task)


async def test_a_broken_session_loses_nothing(own_baton):
    """Baton restarts mid-batch: every agent still runs to completion (at least once)."""
    queue = unique("py-broken")
    names = [f"b-{i:03d}" for i in range(100)]
    async with grpc.aio.insecure_channel(own_baton.addr) as channel:
        stub = agent_pb2_grpc.AgentServiceStub(channel)
        await register(stub, queue, names, timeout=2.0)
    runs: dict[str, int] = {}
    gate = asyncio.Event()
    holding = 0

    async def handle(lease):
        nonlocal holding
        runs[lease.name] = runs.get(lease.name, 0) + 1
        if not gate.is_set():
            holding += 1
            await gate.wait()

    worker = baton.Worker(own_baton.addr, queue, unique("w"), handle, max_leases=10, heartbeat_every=0.2)
    task = asyncio.create_task(worker.run())
    await eventually(lambda: holding == 10, timeout=30)
    await asyncio.to_thread(own_baton.restart)
    gate.set()

    async def empty():
        try:
            async with grpc.aio.insecure_channel(own_baton.addr) as channel:
                stub = agent_pb2_grpc.AgentServiceStub(channel)
                listing = await stub.ListAgents(agent_pb2.ListAgentsRequest(queue=queue, page_size=1))
                return not listing.agents
        except grpc.aio.AioRpcError:
            return False

    await eventually(empty, timeout=60, every=0.2)
    await stop(worker, task)
    assert all(runs.get(n, 0) >= 1 for n in names)

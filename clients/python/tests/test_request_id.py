"""Idempotent retries against a live Baton: Return, Fail and the producer's Register, Schedule
and Offer send one request id with every attempt, so a retry of a call that Baton applied (its
answer lost on the way back) gets the first call's answer: not LEASE_LOST, not a second copy."""

from __future__ import annotations

import asyncio
import time
import uuid

import grpc
import pytest

import baton
from baton.v1 import agent_pb2, agent_pb2_grpc


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


class LoseFirstAnswer(grpc.aio.UnaryUnaryClientInterceptor):
    """Lets every call of `method` reach Baton and records (request_id, status) of each; the first
    one's answer is then dropped and UNAVAILABLE raised instead, as if the connection broke
    after Baton applied it. Other methods pass through untouched."""

    def __init__(self, method: str) -> None:
        self.method = method
        self.attempts: list[tuple[str, grpc.StatusCode]] = []

    async def intercept_unary_unary(self, continuation, details, request):
        method = details.method.decode() if isinstance(details.method, bytes) else details.method
        if method != self.method:
            return await continuation(details, request)
        call = await continuation(details, request)
        try:
            await call
            code = grpc.StatusCode.OK
        except grpc.aio.AioRpcError as e:
            code = e.code()
        self.attempts.append((request.request_id, code))
        if len(self.attempts) == 1:
            raise grpc.aio.AioRpcError(grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(), grpc.aio.Metadata(),
                                       details="answer lost (test)")
        return call


def assert_one_id_and_the_first_answer(lost: LoseFirstAnswer) -> None:
    # Two attempts: the applied one whose answer was lost, and the retry, which Baton answers
    # with the first call's answer because it carries the same request id.
    assert len(lost.attempts) == 2, lost.attempts
    (first_id, first_code), (retry_id, retry_code) = lost.attempts
    assert first_id != "" and retry_id == first_id, lost.attempts
    assert (first_code, retry_code) == (grpc.StatusCode.OK, grpc.StatusCode.OK), lost.attempts


@pytest.mark.parametrize("end", ["return", "fail"])
async def test_a_retried_return_or_fail_of_an_applied_call_gets_its_answer_not_lease_lost(quick_baton, end):
    method = "/baton.v1.ClaimService/Return" if end == "return" else "/baton.v1.ClaimService/Fail"
    lost = LoseFirstAnswer(method)
    async with grpc.aio.insecure_channel(quick_baton.addr, interceptors=[lost]) as channel:
        async with baton.Pool(channel, unique("py-rid")) as pool, \
                baton.Claimer(channel, pool.pool, "py-claimer", wait=2) as claimer:
            await pool.offer(["vm-1"])
            claim = await claimer.claim()
            assert claim is not None and claim.id == "vm-1"
            if end == "return":
                await claim.return_()  # LEASE_LOST (raised) without the request id
            else:
                await claim.fail("disk full")
            status = await pool.status()
            expected = (1, 0, 0) if end == "return" else (0, 0, 1)
            assert (status.idle, status.claimed, status.dead_lettered) == expected
    assert_one_id_and_the_first_answer(lost)


async def test_a_retried_register_after_a_lost_answer_registers_once(baton_server):
    queue = unique("py-rid")
    lost = LoseFirstAnswer("/baton.v1.AgentService/Register")
    async with grpc.aio.insecure_channel(baton_server.addr, interceptors=[lost]) as channel:
        async with baton.Producer(channel) as producer:
            answer = await producer.register(queue, "a1", baton.agent("a2", interval=3600, payload="p"))
            # The first call's answer: both created (a second Register would answer "updated").
            assert (answer.created, answer.updated) == (2, 0)
            listing = await agent_pb2_grpc.AgentServiceStub(channel).ListAgents(
                agent_pb2.ListAgentsRequest(queue=queue))
            assert sorted(a.agent.name for a in listing.agents) == ["a1", "a2"]
    assert_one_id_and_the_first_answer(lost)


async def test_a_retried_schedule_after_a_lost_answer_schedules_once(quick_baton):
    receiver = unique("py-rid")
    lost = LoseFirstAnswer("/baton.v1.ScheduleService/Schedule")
    async with grpc.aio.insecure_channel(quick_baton.addr, interceptors=[lost]) as channel:
        async with baton.Producer(channel) as producer:
            first = await producer.schedule(receiver, b"once")
        got: list[bytes] = []

        async def handle(message):
            got.append(message.payload)

        sub = baton.Subscriber(channel, receiver, "c1", handle)
        task = asyncio.create_task(sub.run())
        try:
            await eventually(lambda: sub.acked == 1)
            # Nothing else was scheduled: no second message after the first is acked (the ack
            # timeout is 0.5 s, so a second copy would be delivered by now).
            await asyncio.sleep(1.0)
        finally:
            sub.stop()
            await asyncio.wait_for(task, 10)
    assert first.created and got == [b"once"]
    assert_one_id_and_the_first_answer(lost)


async def test_a_retried_offer_after_a_lost_answer_gets_the_first_answer(quick_baton):
    lost = LoseFirstAnswer("/baton.v1.ClaimService/Offer")
    pool = unique("py-rid")
    async with grpc.aio.insecure_channel(quick_baton.addr, interceptors=[lost]) as channel:
        async with baton.Producer(channel) as producer:
            answer = await producer.offer(pool, ["vm-1", ("vm-2", {"zone": "a"})])
            # The first call's answer: both offered (a second Offer would count duplicates).
            assert (answer.idle, answer.duplicates) == (2, 0)
            async with baton.Pool(channel, pool) as p:
                assert (await p.status()).idle == 2
    assert_one_id_and_the_first_answer(lost)

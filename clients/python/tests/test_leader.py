"""The leadership helper against a live Baton."""

from __future__ import annotations

import asyncio
import uuid

import grpc

import baton
from baton.v1 import leader_pb2, leader_pb2_grpc


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class Recorder:
    def __init__(self):
        self.events: list[tuple[str, int]] = []

    def elected(self, token):
        self.events.append(("elected", token))

    async def lost(self, token):  # callbacks may be sync or async
        self.events.append(("lost", token))


async def test_gain_renew_and_hand_over_on_close(baton_server):
    election = unique("py-election")
    ra, rb = Recorder(), Recorder()
    a = baton.Leadership(baton_server.addr, election, "a", ttl=0.6, on_elected=ra.elected, on_lost=ra.lost).start()
    token_a = await a.wait_elected(timeout=5)
    b = baton.Leadership(baton_server.addr, election, "b", ttl=0.6, on_elected=rb.elected, on_lost=rb.lost).start()
    # a keeps its term across several ttls by renewing every ttl/3; b waits.
    await asyncio.sleep(2.0)
    assert a.is_leader and a.token == token_a and not b.is_leader
    async with grpc.aio.insecure_channel(baton_server.addr) as channel:
        leader = await leader_pb2_grpc.LeaderServiceStub(channel).GetLeader(
            leader_pb2.GetLeaderRequest(election=election))
    assert (leader.leader_id, leader.token) == ("a", token_a)
    # Closing resigns: b's waiting campaign wins at once, with a greater token.
    await a.close()
    token_b = await b.wait_elected(timeout=2)
    assert token_b > token_a
    assert ra.events == [("elected", token_a), ("lost", token_a)]
    await b.close()
    assert rb.events == [("elected", token_b), ("lost", token_b)]


async def test_loss_is_reported_and_the_helper_campaigns_again(baton_server):
    election = unique("py-loss")
    rec = Recorder()
    lead = baton.Leadership(baton_server.addr, election, "a", ttl=0.9, on_elected=rec.elected, on_lost=rec.lost)
    async with lead:
        first = await lead.wait_elected(timeout=5)
        # The term ends behind the helper's back (an operator, or an expiry during a pause).
        async with grpc.aio.insecure_channel(baton_server.addr) as channel:
            await leader_pb2_grpc.LeaderServiceStub(channel).Resign(
                leader_pb2.ResignRequest(election=election, candidate_id="a", token=first))
        # The next Renew is refused: lost is reported, then the vacancy is won again.
        for _ in range(40):
            if len(rec.events) >= 3:
                break
            await asyncio.sleep(0.1)
        assert rec.events[:2] == [("elected", first), ("lost", first)]
        kind, second = rec.events[2]
        assert kind == "elected" and second > first
        assert lead.token == second


async def test_close_without_leading_does_not_resign_anyone(baton_server):
    election = unique("py-idle")
    a = baton.Leadership(baton_server.addr, election, "a", ttl=5).start()
    token = await a.wait_elected(timeout=5)
    b = baton.Leadership(baton_server.addr, election, "b", ttl=5).start()
    await asyncio.sleep(0.3)
    await b.close()
    assert a.is_leader and a.token == token
    await a.close()

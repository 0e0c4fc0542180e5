"""The producer helper against a live Baton: agents built by baton.agent() arrive as given."""

from __future__ import annotations

import uuid
from datetime import timedelta

import grpc

import baton
from baton.v1 import agent_pb2, agent_pb2_grpc


async def test_register_one_shot_and_recurring_agents_then_unregister(baton_server):
    queue = f"py-prod-{uuid.uuid4().hex[:8]}"
    async with baton.Producer(baton_server.addr) as producer:
        answer = await producer.register(
            queue,
            "once",
            baton.agent("hourly", interval=timedelta(hours=1), payload="p", labels={"team": "a"}, key="tenant-7",
                        priority=5, max_attempts=3, timeout=30),
            baton.agent("daily", cron="0 6 * * *", time_zone="Europe/Stockholm", catch_up_skip=True),
            baton.agent("kept", keep_result=True),
        )
        assert (answer.created, answer.updated) == (4, 0)
        async with grpc.aio.insecure_channel(baton_server.addr) as channel:
            stub = agent_pb2_grpc.AgentServiceStub(channel)

            async def get(name):
                return (await stub.GetAgent(agent_pb2.GetAgentRequest(queue=queue, name=name))).agent.agent

            once, hourly, daily, kept = await get("once"), await get("hourly"), await get("daily"), await get("kept")
        assert not once.HasField("interval") and once.cron == "" and once.payload == b""
        assert (hourly.interval.seconds, hourly.timeout.seconds, hourly.payload) == (3600, 30, b"p")
        assert (dict(hourly.labels), hourly.key, hourly.priority, hourly.max_attempts) == ({"team": "a"}, "tenant-7", 5, 3)
        assert (daily.cron, daily.time_zone, daily.catch_up) == ("0 6 * * *", "Europe/Stockholm", agent_pb2.CATCH_UP_SKIP)
        assert kept.keep_result and not once.keep_result
        assert await producer.unregister(queue, "once", "hourly", "daily", "kept", "never") == 4

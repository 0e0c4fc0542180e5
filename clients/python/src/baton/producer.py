"""The producer's side, without generated stubs: register one-shot and recurring agents,
schedule messages, offer pool resources.

    async with baton.Producer(client) as producer:
        await producer.register("emails", "welcome-42",                          # one-shot, due now
                                baton.agent("digest", interval=3600, payload=b"{}"))  # recurring
        await producer.schedule("billing", b"invoice-7", delay=10)
        await producer.offer("vms", ["vm-1", ("vm-2", {"zone": "a"})])

Every call carries a request id (made per call, or yours) and is sent again with it on
UNAVAILABLE, so a retry after an unknown outcome does not apply twice.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Optional, Union

from baton._rpc import ChannelLike, Helper, Seconds, duration, idempotent
from baton.claim import Pool, ResourceLike
from baton.schedule import Scheduler
from baton.v1 import agent_pb2, agent_pb2_grpc, claim_pb2

AgentLike = Union[str, agent_pb2.Agent]


def agent(
    name: str,
    *,
    payload: Union[bytes, str] = b"",
    interval: Optional[Seconds] = None,
    cron: str = "",
    time_zone: str = "",
    timeout: Optional[Seconds] = None,
    error_interval: Optional[Seconds] = None,
    max_attempts: int = 0,
    labels: Optional[Mapping[str, str]] = None,
    key: str = "",
    priority: int = 0,
    catch_up_skip: bool = False,
) -> agent_pb2.Agent:
    """An agent to register: one-shot (neither `interval` nor `cron`: removed after its first
    success) or recurring (every `interval` seconds, or on a `cron` expression in `time_zone`).
    Unset durations take the server's defaults. See `Agent` in proto/baton/v1/agent.proto."""
    a = agent_pb2.Agent(name=name, payload=payload.encode() if isinstance(payload, str) else bytes(payload),
                        cron=cron, time_zone=time_zone, max_attempts=max_attempts, labels=dict(labels or {}),
                        key=key, priority=priority,
                        catch_up=agent_pb2.CATCH_UP_SKIP if catch_up_skip else agent_pb2.CATCH_UP_UNSPECIFIED)
    for field, value in (("interval", interval), ("timeout", timeout), ("error_interval", error_interval)):
        if value is not None:
            getattr(a, field).CopyFrom(duration(value))
    return a


class Producer(Helper):
    """Registers agents, schedules messages and offers resources (see the module doc)."""

    def __init__(self, target: ChannelLike) -> None:
        super().__init__(target)
        self._agents = agent_pb2_grpc.AgentServiceStub(self._channel)
        self._scheduler = Scheduler(self._channel)

    async def register(self, queue: str, *agents: AgentLike, reset_schedule: bool = False,
                       request_id: str = "") -> agent_pb2.RegisterResponse:
        """Upserts `agents` (names of one-shot agents due now, or :func:`agent`\\ s) into `queue`
        in one call; returns the counts (created, updated)."""
        request = agent_pb2.RegisterRequest(queue=queue, reset_schedule=reset_schedule, request_id=request_id,
                                            agents=[agent(a) if isinstance(a, str) else a for a in agents])
        return await idempotent(self._agents.Register, request)

    async def unregister(self, queue: str, *names: str) -> int:
        """Removes agents; returns how many existed."""
        request = agent_pb2.UnregisterRequest(queue=queue, names=list(names))
        return (await self._agents.Unregister(request, timeout=10.0)).removed

    async def schedule(self, receiver: str, payload: Union[bytes, str], **options):
        """:meth:`baton.Scheduler.schedule`: a message for `receiver` (`delay`, `deliver_at`, `key`,
        `request_id`)."""
        return await self._scheduler.schedule(receiver, payload, **options)

    async def offer(self, pool: str, resources: Iterable[ResourceLike]) -> claim_pb2.OfferResponse:
        """:meth:`baton.Pool.offer`: makes resources of `pool` idle (ids, (id, attributes) pairs or
        Resources)."""
        return await Pool(self._channel, pool).offer(resources)

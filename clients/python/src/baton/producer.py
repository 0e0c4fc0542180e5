"""The producer's side, without generated stubs: register one-shot and recurring agents (with
parents and idempotency keys), wait for an agent's result, batches with callbacks, schedule
messages, offer pool resources.

    async with baton.Producer(client) as producer:
        await producer.register("emails", "welcome-42",                          # one-shot, due now
                                baton.agent("digest", interval=3600, payload=b"{}"))  # recurring
        await producer.register("etl", baton.agent("load", after=["extract", baton.ref("raw", "fetch")]))
        done = await producer.register_and_await("resize", baton.agent("img-7", payload=b"..."), timeout=30)
        await producer.register_batch("nightly", "etl", "a", "b", on_complete=[baton.agent("report")], close=True)
        await producer.schedule("billing", b"invoice-7", delay=10)
        await producer.offer("vms", ["vm-1", ("vm-2", {"zone": "a"})])

Every call that changes something carries a request id (made per call, or yours) and is sent
again with it on UNAVAILABLE, so a retry after an unknown outcome does not apply twice. Waiting
is Baton's: Await holds each call until the agent finishes (woken by the finish, no polling).
"""

from __future__ import annotations

import asyncio
import time
from typing import AsyncIterator, Iterable, Mapping, Optional, Union

import grpc

from baton._rpc import ChannelLike, Helper, Seconds, backoff, duration, idempotent, seconds
from baton.claim import Pool, ResourceLike
from baton.failure import WaitFor
from baton.schedule import Scheduler
from baton.v1 import agent_pb2, agent_pb2_grpc, claim_pb2

AgentLike = Union[str, agent_pb2.Agent]
#: A parent in `after`: a name of the same queue, or :func:`ref`.
ParentLike = Union[str, agent_pb2.AgentRef]
#: What a parent's failure does to its child (`Agent.on_parent_failure`, `AgentRef.on_failure`).
ParentFailure = agent_pb2.ParentFailure
#: What a registration whose idempotency key is held does (`Agent.idempotency_mode`).
IdempotencyMode = agent_pb2.IdempotencyMode
#: How an agent's work ended (`AgentResult.finish`).
Finish = agent_pb2.Finish
#: What a WatchAgentResponse carries (:meth:`Producer.watch`).
WatchUpdate = agent_pb2.WatchUpdate
#: An agent's finish: how it ended, the outcome and the result its worker returned.
AgentResult = agent_pb2.AgentResult
#: The most one Await call is held before it is made again (as the leadership helper's campaign
#: wait): the server refuses waits beyond its `limits.max_wait_ms`.
AWAIT_WAIT = 30.0


def ref(queue: str, name: str, on_failure: int = agent_pb2.PARENT_FAILURE_UNSPECIFIED) -> agent_pb2.AgentRef:
    """A parent of another queue for `after` (`queue` "" is the child's own), with its own failure
    policy (a :data:`ParentFailure`; unspecified: the child's `on_parent_failure`)."""
    return agent_pb2.AgentRef(queue=queue, name=name, on_failure=on_failure)


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
    after: Iterable[ParentLike] = (),
    on_parent_failure: int = agent_pb2.PARENT_FAILURE_UNSPECIFIED,
    idempotency_key: str = "",
    idempotency_window: Optional[Seconds] = None,
    idempotency_mode: int = agent_pb2.IDEMPOTENCY_MODE_UNSPECIFIED,
    debounce: Optional[Seconds] = None,
    ttl: Optional[Seconds] = None,
    wait_for: Optional[WaitFor] = None,
    keep_result: bool = False,
) -> agent_pb2.Agent:
    """An agent to register: one-shot (neither `interval` nor `cron`: removed after its first
    success) or recurring (every `interval` seconds, or on a `cron` expression in `time_zone`).
    `after` names its parents (names of the same queue, or :func:`ref`): it runs once they all
    succeeded, and its lease carries their results (`lease.parents`). A one-shot agent with an
    `idempotency_key` is created once per key within its window (Baton answers the holder);
    `idempotency_mode` (an :data:`IdempotencyMode`) says what a later registration of the key
    does instead: ``IDEMPOTENCY_MODE_REPLACE`` replaces a holder still waiting (`replaced` in
    the answer), ``IDEMPOTENCY_MODE_DEBOUNCE`` makes one run, `debounce` seconds after the
    latest registration (`debounced` in the answer). A one-shot agent with a `ttl` expires (FINISH_EXPIRED, never
    run) unless a run starts within it; an absolute time is the generated Agent's `expire_at`.
    A new agent with `wait_for` (a :class:`WaitFor`) waits for that event (or time) before its
    first run: an approval gate, opened by :meth:`Producer.signal`. `keep_result` keeps the
    agent's finish for an Await that comes after it finished (a plain one-shot's is not kept).
    Unset durations take the server's defaults. See `Agent` in proto/baton/v1/agent.proto."""
    a = agent_pb2.Agent(name=name, payload=payload.encode() if isinstance(payload, str) else bytes(payload),
                        cron=cron, time_zone=time_zone, max_attempts=max_attempts, labels=dict(labels or {}),
                        key=key, priority=priority,
                        catch_up=agent_pb2.CATCH_UP_SKIP if catch_up_skip else agent_pb2.CATCH_UP_UNSPECIFIED,
                        after=[agent_pb2.AgentRef(name=p) if isinstance(p, str) else p for p in after],
                        on_parent_failure=on_parent_failure, idempotency_key=idempotency_key,
                        idempotency_mode=idempotency_mode, keep_result=keep_result)
    for field, value in (("interval", interval), ("timeout", timeout), ("error_interval", error_interval),
                         ("idempotency_window", idempotency_window), ("debounce", debounce), ("ttl", ttl)):
        if value is not None:
            getattr(a, field).CopyFrom(duration(value))
    if wait_for is not None:
        a.wait_for.CopyFrom(wait_for.proto())
    return a


def _agents(agents: Iterable[AgentLike]) -> list:
    return [agent(a) if isinstance(a, str) else a for a in agents]


class Producer(Helper):
    """Registers agents, schedules messages and offers resources (see the module doc)."""

    def __init__(self, target: ChannelLike) -> None:
        super().__init__(target)
        self._agents = agent_pb2_grpc.AgentServiceStub(self._channel)
        self._scheduler = Scheduler(self._channel)

    async def register(self, queue: str, *agents: AgentLike, reset_schedule: bool = False,
                       request_id: str = "") -> agent_pb2.RegisterResponse:
        """Upserts `agents` (names of one-shot agents due now, or :func:`agent`\\ s) into `queue`
        in one call; returns the counts (created, updated, deduplicated) and what became of each
        agent (`agents`: a deduplicated one names the key's holder, with its result once it
        finished)."""
        request = agent_pb2.RegisterRequest(queue=queue, reset_schedule=reset_schedule, request_id=request_id,
                                            agents=_agents(agents))
        return await idempotent(self._agents.Register, request)

    async def register_and_await(self, queue: str, one: AgentLike, *, timeout: Optional[Seconds] = None,
                                 request_id: str = "") -> Optional[AgentResult]:
        """Request/reply over the fleet: registers one one-shot agent, then waits for its finish
        (:meth:`await_result`); a deduplicated registration waits for the key's holder, or
        answers its kept result at once. None when `timeout` (seconds; None: no limit) passed
        first: the agent stays registered."""
        started = time.monotonic()
        answer = (await self.register(queue, one, request_id=request_id)).agents[0]
        if answer.HasField("result"):
            return answer.result
        left = None if timeout is None else max(0.0, (seconds(timeout) or 0.0) - (time.monotonic() - started))
        return await self.await_result(queue, answer.name, timeout=left)

    async def await_result(self, queue: str, name: str, *, timeout: Optional[Seconds] = None,
                           after_token: int = 0) -> Optional[AgentResult]:
        """Waits for the agent's finish (succeeded, dead-lettered, cancelled or unregistered) and
        returns it, with the result its worker returned; a finish Baton still keeps answers at
        once. Each Await call is held at most :data:`AWAIT_WAIT` and made again until the finish
        or `timeout` (seconds; None: no limit), then None. `after_token` skips finishes of a
        recurring agent's runs up to that lease token. Raises the gRPC error (NOT_FOUND: no such
        agent and no finish kept); UNAVAILABLE is retried."""
        deadline = None if timeout is None else time.monotonic() + (seconds(timeout) or 0.0)
        attempt = 0
        while True:
            left = AWAIT_WAIT if deadline is None else min(AWAIT_WAIT, max(0.0, deadline - time.monotonic()))
            request = agent_pb2.AwaitRequest(queue=queue, name=name, after_token=after_token, wait=duration(left))
            try:
                answer = await self._agents.Await(request, timeout=left + 10.0)
            except grpc.aio.AioRpcError as e:
                if e.code() != grpc.StatusCode.UNAVAILABLE:
                    raise
                await asyncio.sleep(backoff(attempt, e))
                attempt += 1
                continue
            attempt = 0
            if answer.done:
                return answer.result
            if deadline is not None and time.monotonic() >= deadline:
                return None

    async def signal(self, queue: str, name: str, event: str, payload: Union[bytes, str] = b"", *,
                     request_id: str = "") -> agent_pb2.SignalResponse:
        """Delivers `event` with `payload` to the agent (AgentService.Signal): a run waiting for it
        (:class:`WaitFor`) is due at once, its lease carrying the event; otherwise it is kept for
        the wait that names it. Carries a request id (made when none is given): a retry after an
        unknown outcome answers the first call. NOT_FOUND: no such agent."""
        request = agent_pb2.SignalRequest(queue=queue, name=name, event=event, request_id=request_id,
                                          payload=payload.encode() if isinstance(payload, str) else bytes(payload))
        return await idempotent(self._agents.Signal, request)

    async def watch(self, queue: str, name: str, *, timeout: Optional[Seconds] = None,
                    after_token: int = 0) -> AsyncIterator[agent_pb2.WatchAgentResponse]:
        """Follows the agent (AgentService.WatchAgent): yields a snapshot, then each lease granted,
        progress reported and step recorded, in order, and last the FINISHED update (its `finish`
        as :meth:`await_result` answers it), after which it ends. It ends without a finish after
        `timeout` seconds (None: the server's longest wait). Raises the gRPC error (NOT_FOUND).

            async for update in producer.watch("etl", "load", timeout=60):
                print(baton.WatchUpdate.Name(update.update), update.progress)"""
        request = agent_pb2.WatchAgentRequest(queue=queue, name=name, after_token=after_token)
        if timeout is not None:
            request.wait.CopyFrom(duration(timeout))
        async for update in self._agents.WatchAgent(request, timeout=None if timeout is None else seconds(timeout) + 10.0):
            yield update
            if update.update == agent_pb2.WATCH_UPDATE_FINISHED:
                return

    async def register_batch(self, batch: str, queue: str, *agents: AgentLike, callback_queue: str = "",
                             on_success: Iterable[AgentLike] = (), on_complete: Iterable[AgentLike] = (),
                             close: bool = False) -> agent_pb2.RegisterBatchResponse:
        """Adds `agents` of `queue` to `batch`, creating it on its first call with its callbacks
        (agents of `callback_queue`, default `queue`): `on_success` run once when every member
        succeeded, `on_complete` once when every member finished; their leases carry the
        batch's finish. `close` closes it after these members. Returns the batch's status."""
        request = agent_pb2.RegisterBatchRequest(batch=batch, queue=queue, agents=_agents(agents),
                                                 callback_queue=callback_queue, on_success=_agents(on_success),
                                                 on_complete=_agents(on_complete), close=close)
        return await self._agents.RegisterBatch(request, timeout=10.0)

    async def close_batch(self, batch: str) -> agent_pb2.BatchStatus:
        """Closes `batch`: no member may be added, and it is done once its members finished."""
        return (await self._agents.CloseBatch(agent_pb2.CloseBatchRequest(batch=batch), timeout=10.0)).status

    async def batch(self, batch: str) -> agent_pb2.BatchStatus:
        """The batch's members counted by how they finished (total, pending, succeeded, failed),
        whether it is closed and done, and its callbacks."""
        return (await self._agents.GetBatch(agent_pb2.GetBatchRequest(batch=batch), timeout=10.0)).status

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

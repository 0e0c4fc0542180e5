"""A worker loop over the generated client, modelled on Baton's Rust `baton::worker::Worker`.

Long-poll Acquire → run the handler → Heartbeat while it runs → Complete with the outcome the
handler's result maps to (:func:`baton.classify`). A lease reported lost cancels its handler
(its result would be refused anyway); on shutdown the loop stops acquiring, cancels running
handlers and Releases their leases, so another worker takes them at once.

    async def handle(lease):
        ...  # raise baton.Failure.from_http_status(429, "slow down", retry_after=30)

    worker = baton.Worker("127.0.0.1:50051", queue="emails", worker_id="w1", handler=handle)
    await worker.run()          # until worker.stop() or the task is cancelled
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Dict, Optional, Tuple, Union

import grpc
from google.protobuf import duration_pb2

from baton.client import Client
from baton.failure import Failure, Seconds, _seconds, classify, truncate_utf8
from baton.v1 import agent_pb2, agent_pb2_grpc

log = logging.getLogger("baton.worker")

Lease = agent_pb2.Lease
Handler = Callable[[agent_pb2.Lease], Union[Awaitable[None], None]]
#: What every helper connects with: a :class:`baton.Client` (shared; TLS, token, keepalive), a
#: grpc.aio.Channel of the caller's, or a "host:port" string (a plaintext channel of the helper's own).
ChannelLike = Union[Client, str, grpc.aio.Channel]


def duration(seconds: Seconds) -> duration_pb2.Duration:
    d = duration_pb2.Duration()
    d.FromNanoseconds(int(round(_seconds(seconds) * 1e9)))
    return d


def pushback_seconds(error: grpc.aio.AioRpcError) -> Optional[float]:
    """Baton's `grpc-retry-pushback-ms` hint on UNAVAILABLE, if any."""
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-retry-pushback-ms":
            try:
                return int(value) / 1000.0
            except ValueError:
                return None
    return None


def is_lease_lost(error: grpc.aio.AioRpcError) -> bool:
    """Whether Baton refused a stale token (FAILED_PRECONDITION, ErrorInfo reason LEASE_LOST):
    the lease or term is gone and the work must stop. Baton uses FAILED_PRECONDITION for
    nothing else."""
    return error.code() == grpc.StatusCode.FAILED_PRECONDITION


def channel_for(target: ChannelLike) -> Tuple[grpc.aio.Channel, bool]:
    """The channel for `target`, and whether the helper owns it (and closes it when done): a
    Client's shared channel and a caller's channel are not owned; "host:port" opens a plaintext
    channel that is."""
    if isinstance(target, Client):
        return target.channel, False
    if isinstance(target, str):
        return grpc.aio.insecure_channel(target), True
    return target, False


STOPPED = object()


@dataclass
class _Run:
    lease: agent_pb2.Lease
    task: Optional[asyncio.Task] = None
    lost: bool = False


@dataclass
class Worker:
    """A worker of one queue. `handler(lease)` is a coroutine function (a plain function runs in
    a thread); raising ends the run with a failure (see :func:`baton.classify`), returning ends
    it with SUCCESS."""

    target: ChannelLike
    queue: str
    worker_id: str
    handler: Handler
    #: Leases asked for per Acquire, and the most handlers running at once.
    max_leases: int = 1
    #: Long-poll wait of each Acquire (seconds).
    wait: Seconds = 30.0
    #: How often held leases are extended: three beats within the server's default orphan
    #: threshold (10 s), and well under the agents' timeout. Also keeps this
    #: worker alive in Baton's eyes while it holds nothing.
    heartbeat_every: Seconds = 3.0
    #: Delay before a lease released on shutdown is due again.
    release_delay: Optional[Seconds] = None
    _held: Dict[Tuple[str, int], _Run] = field(default_factory=dict, init=False, repr=False)
    _stopping: Optional[asyncio.Event] = field(default=None, init=False, repr=False)

    def stop(self) -> None:
        """Asks `run()` to stop: no more Acquires; running handlers are cancelled and their
        leases released."""
        if self._stopping is not None:
            self._stopping.set()

    async def run(self) -> None:
        """Runs until :meth:`stop` (or until this task is cancelled), then releases what it holds."""
        if not callable(self.handler):
            raise TypeError("handler must be a coroutine function (or a function) taking a Lease")
        self._stopping = asyncio.Event()
        channel, owned = channel_for(self.target)
        stub = agent_pb2_grpc.AgentServiceStub(channel)
        slots = asyncio.Semaphore(max(1, self.max_leases))
        beats = asyncio.create_task(self._heartbeat_loop(stub), name=f"baton-heartbeat-{self.worker_id}")
        running: set = set()
        try:
            await self._acquire_loop(stub, slots, running)
        finally:
            # Shutdown: cancel handlers, hand their leases back, stop heartbeating.
            for run in list(self._held.values()):
                if run.task is not None:
                    run.task.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)
            beats.cancel()
            await asyncio.gather(beats, return_exceptions=True)
            held, self._held = self._held, {}
            for run in held.values():
                await self._release(stub, run.lease)
            if owned:
                await channel.close()

    async def _acquire_loop(self, stub, slots: asyncio.Semaphore, running: set) -> None:
        stopping = self._stopping
        assert stopping is not None
        backoff = 0.1
        wait = max(0.0, _seconds(self.wait) or 0.0)
        while not stopping.is_set():
            # Wait for a free slot, then ask for as many leases as there are free slots.
            if await self._until(slots.acquire(), stopping) is STOPPED:
                return
            slots.release()
            want = max(1, self.max_leases - len(running))
            request = agent_pb2.AcquireRequest(
                queue=self.queue, worker_id=self.worker_id, max_leases=want, wait=duration(wait)
            )
            call = stub.Acquire(request, timeout=wait + 10.0)
            try:
                response = await self._until(call, stopping)
            except grpc.aio.AioRpcError as e:
                delay = pushback_seconds(e) or backoff
                log.warning("acquire failed: %s %s; retrying in %.1fs", e.code().name, e.details(), delay)
                await self._sleep(delay, stopping)
                backoff = min(backoff * 2, 5.0)
                continue
            if response is STOPPED:
                call.cancel()
                return
            backoff = 0.1
            for lease in response.leases:
                await slots.acquire()
                run = _Run(lease)
                self._held[(lease.name, lease.token)] = run
                run.task = asyncio.create_task(self._run(stub, run, slots), name=f"baton-{lease.name}-{lease.token}")
                running.add(run.task)
                run.task.add_done_callback(running.discard)

    async def _run(self, stub, run: _Run, slots: asyncio.Semaphore) -> None:
        lease = run.lease
        try:
            try:
                if inspect.iscoroutinefunction(self.handler):
                    await self.handler(lease)
                else:
                    # A blocking handler runs in a thread, so heartbeats go on; a thread cannot
                    # be interrupted, so a lost lease only abandons its result.
                    await asyncio.to_thread(self.handler, lease)
                failure = None
            except asyncio.CancelledError:
                if run.lost:
                    log.warning("lease %s/%s token %d lost; handler cancelled", lease.queue, lease.name, lease.token)
                    return
                raise  # shutting down: run() releases the lease
            except Exception as exc:  # noqa: BLE001 - every handler error becomes an outcome
                failure = classify(exc)
            if run.lost:
                return
            self._held.pop((lease.name, lease.token), None)
            await self._complete(stub, lease, failure)
        finally:
            slots.release()

    async def _complete(self, stub, lease: agent_pb2.Lease, failure: Optional[Failure]) -> None:
        request = agent_pb2.CompleteRequest(queue=lease.queue, name=lease.name, token=lease.token)
        if failure is None:
            request.outcome = agent_pb2.OUTCOME_SUCCESS
        else:
            request.outcome = failure.outcome
            request.message = truncate_utf8(failure.message)
            if failure.retry_after is not None:
                request.retry_after.CopyFrom(duration(failure.retry_after))
        for attempt in range(3):
            try:
                await stub.Complete(request, timeout=10.0)
                return
            except grpc.aio.AioRpcError as e:
                if e.code() == grpc.StatusCode.UNAVAILABLE and attempt < 2:
                    await asyncio.sleep(pushback_seconds(e) or 0.2 * (attempt + 1))
                    continue
                log.warning("complete of %s token %d failed: %s %s", lease.name, lease.token, e.code().name, e.details())
                return

    async def _release(self, stub, lease: agent_pb2.Lease) -> None:
        request = agent_pb2.ReleaseRequest(queue=lease.queue, name=lease.name, token=lease.token)
        if self.release_delay is not None:
            request.delay.CopyFrom(duration(self.release_delay))
        try:
            await stub.Release(request, timeout=5.0)
        except grpc.aio.AioRpcError as e:
            log.warning("release of %s token %d failed: %s %s", lease.name, lease.token, e.code().name, e.details())

    async def _heartbeat_loop(self, stub) -> None:
        every = max(0.01, _seconds(self.heartbeat_every) or 3.0)
        while True:
            await asyncio.sleep(every)
            held = list(self._held.values())
            request = agent_pb2.HeartbeatRequest(
                worker_id=self.worker_id,
                leases=[agent_pb2.LeaseRef(queue=r.lease.queue, name=r.lease.name, token=r.lease.token) for r in held],
            )
            try:
                response = await stub.Heartbeat(request, timeout=max(5.0, every))
            except grpc.aio.AioRpcError as e:
                log.warning("heartbeat failed: %s %s", e.code().name, e.details())
                continue
            for lost in response.lost:
                run = self._held.pop((lost.name, lost.token), None)
                if run is not None and run.task is not None:
                    run.lost = True
                    run.task.cancel()

    @staticmethod
    async def _until(awaitable, stopping: asyncio.Event):
        """Awaits `awaitable` unless `stopping` is set first; then cancels it and returns STOPPED."""
        task = asyncio.ensure_future(awaitable)
        stop = asyncio.ensure_future(stopping.wait())
        try:
            await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            stop.cancel()
        if task.done():
            return task.result()
        task.cancel()
        return STOPPED

    @staticmethod
    async def _sleep(seconds: float, stopping: asyncio.Event) -> None:
        try:
            await asyncio.wait_for(stopping.wait(), timeout=seconds)
        except asyncio.TimeoutError:
            pass

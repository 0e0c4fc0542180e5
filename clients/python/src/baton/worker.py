"""A worker loop over the generated client, modelled on Baton's Rust `baton::worker::Worker`.

Leases pushed on one AgentService.Session stream → run the handler → heartbeat while it runs
→ complete with the outcome the handler's result maps to (:func:`baton.classify`). The worker
grants the server credit for `max_leases` leases; each message it sends back carries whatever
finished since the last one (completions, one credit per lease, releases). A broken stream is
opened again with backoff and unanswered completions go again (tokens fence a repeat). A
server without Session (UNIMPLEMENTED), or `unary=True`, gets the unary loop: long-poll
Acquire, Heartbeat, Complete. A lease reported lost, or its run cancelled (AgentService.CancelRun,
answered in `lost` too), cancels its handler (its result would be refused anyway); a handler
reports progress with :meth:`Worker.report_progress`, sent with the next heartbeat. On shutdown the loop stops acquiring, cancels running
handlers and Releases their leases, so another worker takes them at once.

    async def handle(lease):
        worker.report_progress(lease, "page 1 of 3")  # shown by GetAgent
        ...  # raise baton.Failure.from_http_status(429, "slow down", retry_after=30)

    worker = baton.Worker("127.0.0.1:50051", queue="emails", worker_id="w1", handler=handle)
    await worker.run()          # until worker.stop() or the task is cancelled
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import uuid
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Dict, Optional, Tuple, Union

import grpc
from google.protobuf import duration_pb2

from baton import tracing
from baton.client import Client, _interceptors
from baton.failure import Failure, Outcome, Seconds, _seconds, classify, truncate_utf8
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
    channel that is (its calls carry the trace context, as a Client's do)."""
    if isinstance(target, Client):
        return target.channel, False
    if isinstance(target, str):
        return grpc.aio.insecure_channel(target, interceptors=_interceptors(None, None)), True
    return target, False


STOPPED = object()


def _outcome_name(outcome: int) -> str:
    """SUCCESS, TRANSIENT, … (an Outcome's name without its prefix)."""
    try:
        return Outcome.Name(outcome).removeprefix("OUTCOME_")
    except ValueError:
        return str(outcome)


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
    #: Use Acquire, Heartbeat and Complete calls instead of a Session stream.
    unary: bool = False
    _held: Dict[Tuple[str, int], _Run] = field(default_factory=dict, init=False, repr=False)
    _progress: Dict[Tuple[str, int], str] = field(default_factory=dict, init=False, repr=False)
    _stopping: Optional[asyncio.Event] = field(default=None, init=False, repr=False)

    def report_progress(self, lease: agent_pb2.Lease, value: str) -> None:
        """Reports `value` (a small text, at most 256 bytes) for the run of `lease`: sent with the
        lease's next heartbeat; GetAgent shows the last one while the run is held."""
        self._progress[(lease.name, lease.token)] = value

    def _take_progress(self, lease: agent_pb2.Lease) -> str:
        return self._progress.pop((lease.name, lease.token), "")

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
            if self.unary or not await self._session(stub, running):
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

    async def _handle(self, run: _Run) -> Optional[Failure]:
        """Runs the handler inside the lease's span (see :mod:`baton.tracing`); returns how it
        failed (None: SUCCESS). Cancellation propagates."""
        lease = run.lease
        with tracing.lease_span(lease) as span:
            try:
                if inspect.iscoroutinefunction(self.handler):
                    await self.handler(lease)
                else:
                    # A blocking handler runs in a thread (with the span current there too), so
                    # heartbeats go on; a thread cannot be interrupted, so a lost lease only
                    # abandons its result.
                    await asyncio.to_thread(self.handler, lease)
            except asyncio.CancelledError:
                if run.lost:
                    tracing.lost(span)
                raise
            except Exception as exc:  # noqa: BLE001 - every handler error becomes an outcome
                failure = classify(exc)
                tracing.failed(span, exc, _outcome_name(failure.outcome))
                return failure
            tracing.succeeded(span)
            return None

    async def _run(self, stub, run: _Run, slots: asyncio.Semaphore) -> None:
        lease = run.lease
        try:
            try:
                failure = await self._handle(run)
            except asyncio.CancelledError:
                if run.lost:
                    log.warning("lease %s/%s token %d lost; handler cancelled", lease.queue, lease.name, lease.token)
                    return
                raise  # shutting down: run() releases the lease
            if run.lost:
                return
            self._held.pop((lease.name, lease.token), None)
            await self._complete(stub, lease, failure)
        finally:
            slots.release()

    async def _complete(self, stub, lease: agent_pb2.Lease, failure: Optional[Failure]) -> None:
        # One request id for every attempt below: a retry of an applied Complete gets its answer.
        request = agent_pb2.CompleteRequest(request_id=str(uuid.uuid4()), queue=lease.queue, name=lease.name,
                                            token=lease.token)
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
                leases=[
                    agent_pb2.LeaseRef(
                        queue=r.lease.queue, name=r.lease.name, token=r.lease.token, progress=self._take_progress(r.lease)
                    )
                    for r in held
                ],
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

    # --- the session stream ------------------------------------------------------------------

    async def _session(self, stub, running: set) -> bool:
        """Works on Session streams until stopped; False (having done nothing) when the server
        has no Session."""
        stopping = self._stopping
        assert stopping is not None
        done: asyncio.Queue = asyncio.Queue()
        unanswered: Dict[Tuple[str, int], agent_pb2.SessionCompletion] = {}
        backoff = 0.1
        while not stopping.is_set():
            call = stub.Session()
            first = agent_pb2.SessionRequest(
                open=agent_pb2.SessionOpen(queue=self.queue, worker_id=self.worker_id),
                credit=max(0, max(1, self.max_leases) - len(self._held)),
            )
            first.completions.extend(unanswered.values())
            reader = asyncio.create_task(self._session_reader(call, unanswered, running, done))
            try:
                await call.write(first)
                await self._session_writer(call, reader, unanswered, running, done)
            except (grpc.aio.AioRpcError, asyncio.InvalidStateError):
                pass  # the reader says why
            if stopping.is_set():
                reader.cancel()
                await asyncio.gather(reader, return_exceptions=True)
                call.cancel()
                return True
            result = await reader
            if result == "unimplemented":
                log.info("the server has no Session; using Acquire/Complete")
                return False
            if result == "served":
                backoff = 0.1
            await self._sleep(backoff, stopping)
            backoff = min(backoff * 2, 5.0)
        return True

    async def _session_reader(self, call, unanswered, running: set, done: asyncio.Queue) -> str:
        """Applies the server's messages: leases to run, completions answered, leases lost."""
        served = False
        try:
            async for response in call:
                served = True
                for c in response.completed:
                    unanswered.pop((c.name, c.token), None)
                    if c.lease_lost:
                        log.warning("completion of %s token %d refused: the lease was lost", c.name, c.token)
                for lost in response.lost:
                    run = self._held.get((lost.name, lost.token))
                    if run is not None and run.task is not None and not run.lost:
                        log.warning("lease %s token %d lost; cancelling its handler", lost.name, lost.token)
                        run.lost = True
                        run.task.cancel()
                for lease in response.leases:
                    run = _Run(lease)
                    self._held[(lease.name, lease.token)] = run
                    run.task = asyncio.create_task(self._session_run(run, done), name=f"baton-{lease.name}-{lease.token}")
                    running.add(run.task)
                    run.task.add_done_callback(running.discard)
        except grpc.aio.AioRpcError as e:
            if e.code() == grpc.StatusCode.UNIMPLEMENTED and not served:
                return "unimplemented"
            log.warning("session broke: %s %s; opening another", e.code().name, e.details())
        return "served" if served else "broken"

    async def _session_run(self, run: _Run, done: asyncio.Queue) -> None:
        """Runs one handler; reports how it ended to the writer: ("done", failure),
        ("lost", None) or ("cancelled", None)."""
        try:
            failure = await self._handle(run)
        except asyncio.CancelledError:
            done.put_nowait((run, "lost" if run.lost else "cancelled", None))
            raise
        done.put_nowait((run, "lost" if run.lost and failure is not None else "done", failure))

    def _finish(self, item, message: agent_pb2.SessionRequest, unanswered) -> None:
        """A handler that ended, into the next message: its slot back as credit, and its
        completion (or, cancelled by the shutdown, its release)."""
        run, kind, failure = item
        lease = run.lease
        self._held.pop((lease.name, lease.token), None)
        message.credit += 1
        if kind == "done":
            c = agent_pb2.SessionCompletion(name=lease.name, token=lease.token, outcome=agent_pb2.OUTCOME_SUCCESS)
            if failure is not None:
                c.outcome = failure.outcome
                c.message = truncate_utf8(failure.message)
                if failure.retry_after is not None:
                    c.retry_after.CopyFrom(duration(failure.retry_after))
            unanswered[(lease.name, lease.token)] = c
            message.completions.append(c)
        elif kind == "cancelled":
            r = agent_pb2.SessionRelease(name=lease.name, token=lease.token)
            if self.release_delay is not None:
                r.delay.CopyFrom(duration(self.release_delay))
            message.releases.append(r)

    async def _session_writer(self, call, reader: asyncio.Task, unanswered, running: set, done: asyncio.Queue) -> None:
        """Sends what finished (coalesced: everything queued by the time the last write ended
        goes in one message) and heartbeats, until the stream ends or the worker stops."""
        stopping = self._stopping
        assert stopping is not None
        every = max(0.01, _seconds(self.heartbeat_every) or 3.0)
        stop = asyncio.ensure_future(stopping.wait())
        try:
            while True:
                get = asyncio.ensure_future(done.get())
                ready, _ = await asyncio.wait({get, reader, stop}, timeout=every, return_when=asyncio.FIRST_COMPLETED)
                if reader in ready:
                    # The stream is gone: an item just taken goes on the next stream.
                    if get.done():
                        done.put_nowait(get.result())
                    else:
                        get.cancel()
                    return
                message = agent_pb2.SessionRequest()
                if get.done():
                    self._finish(get.result(), message, unanswered)
                    while not done.empty() and len(message.completions) + len(message.releases) < 1000:
                        self._finish(done.get_nowait(), message, unanswered)
                else:
                    get.cancel()
                if stop in ready:
                    await self._session_close(call, message, unanswered, running, done)
                    return
                if not ready:
                    message.heartbeats.extend(
                        agent_pb2.SessionLease(
                            name=r.lease.name, token=r.lease.token, progress=self._take_progress(r.lease)
                        )
                        for r in self._held.values()
                        if not r.lost
                    )
                if message.credit or message.completions or message.releases or message.heartbeats:
                    await call.write(message)
        finally:
            stop.cancel()

    async def _session_close(self, call, message, unanswered, running: set, done: asyncio.Queue) -> None:
        """Shutdown on a live stream: handlers cancelled, what finished completed, the rest
        released, the stream half-closed and its answers awaited (bounded)."""
        for run in list(self._held.values()):
            if run.task is not None:
                run.task.cancel()
        if running:
            await asyncio.gather(*list(running), return_exceptions=True)
        while not done.empty():
            self._finish(done.get_nowait(), message, unanswered)
        message.credit = 0
        try:
            if message.completions or message.releases:
                await call.write(message)
            await call.done_writing()
            await asyncio.wait_for(call.code(), timeout=10.0)
        except (grpc.aio.AioRpcError, asyncio.TimeoutError, asyncio.InvalidStateError):
            pass

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

"""A worker of one queue over AgentService.Session: Baton pushes leases within the credit the
worker grants (`max_leases`), the handler runs per lease, and each message back carries what
finished since the last one (completions, one credit per lease), plus heartbeats while
handlers run. A broken stream is opened again with :func:`baton._rpc.backoff`; completions it
did not answer go again (their tokens fence a repeat). A lease reported lost, or its run
cancelled (AgentService.CancelRun), cancels its handler.

    async def handle(lease):
        await worker.progress(lease, "page 1 of 3")  # GetAgent and WatchAgent show it
        if baton.lease_event(lease) is None:  # the run's first lease: wait for an approval
            raise baton.WaitFor("approve", timeout=3600)  # woken by Producer.signal, or timed out
        if baton.recorded_step(lease, "fetch") is None:  # a retried run skips what finished
            await worker.record_step(lease, "fetch", b"page 1")
        ...  # raise baton.Failure.from_http_status(429, "slow down", retry_after=30)
        return b"rows=7"  # optional: the run's result (Await, children's lease.parents)

    worker = baton.Worker("127.0.0.1:50051", queue="emails", worker_id="w1", handler=handle)
    await worker.run()          # until worker.stop() or the task is cancelled

Stopping: every handler that finished is completed and answered first; only leases whose
handler still runs are released (their handlers cancelled); then the stream is half-closed and
read to its end.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Dict, List, Optional, Tuple, Union

import grpc

from baton import tracing
from baton._rpc import ChannelLike, Seconds, backoff, channel_for, duration, seconds, sleep_unless
from baton.failure import Failure, Outcome, WaitFor
from baton.v1 import agent_pb2, agent_pb2_grpc

log = logging.getLogger("baton.worker")

Lease = agent_pb2.Lease
#: What a handler may return: nothing, or the run's result (bytes; a str is sent as UTF-8).
Result = Union[bytes, str, None]
Handler = Callable[[agent_pb2.Lease], Union[Awaitable[Result], Result]]
Key = Tuple[str, int]


def recorded_step(lease: agent_pb2.Lease, step: str) -> Optional[bytes]:
    """The result of `step` as an earlier attempt of this run recorded it (`lease.steps`), or None:
    a handler skips the steps a retried run's lease carries."""
    return next((s.result for s in lease.steps if s.name == step), None)


def lease_event(lease: agent_pb2.Lease) -> Optional[agent_pb2.EventDelivery]:
    """The event that ended the run's latest wait (:class:`WaitFor`; `timed_out` when its time
    passed first), or None on a run that did not wait."""
    return lease.event if lease.HasField("event") else None


@dataclass
class _Run:
    lease: agent_pb2.Lease
    task: Optional[asyncio.Task] = None
    lost: bool = False


@dataclass
class Worker:
    """A worker of one queue. `handler(lease)` is a coroutine function (a plain function runs in
    a thread); returning ends the run with SUCCESS, raising with a failure (:meth:`Failure.of`
    the exception, classified by Baton). What it returns (bytes or str) is the run's result, sent
    with the completion: Await answers it and the agent's children see it in `lease.parents`
    (the results of this lease's own parents)."""

    target: ChannelLike
    queue: str
    worker_id: str
    handler: Handler
    #: The most handlers running at once (the credit granted to Baton).
    max_leases: int = 1
    #: How often held leases are extended: three beats within the server's default orphan
    #: threshold (10 s), and well under the agents' timeout.
    heartbeat_every: Seconds = 3.0
    #: Delay before a lease released on shutdown is due again.
    release_delay: Optional[Seconds] = None
    _held: Dict[Key, _Run] = field(default_factory=dict, init=False, repr=False)
    _progress: Dict[Key, str] = field(default_factory=dict, init=False, repr=False)
    _stopping: asyncio.Event = field(default_factory=asyncio.Event, init=False, repr=False)
    _beat_now: asyncio.Event = field(default_factory=asyncio.Event, init=False, repr=False)
    _beaten: Dict[Key, asyncio.Future] = field(default_factory=dict, init=False, repr=False)
    _stub: Optional[agent_pb2_grpc.AgentServiceStub] = field(default=None, init=False, repr=False)

    def report_progress(self, lease: agent_pb2.Lease, value: str) -> None:
        """Reports `value` (a small text, at most 256 bytes) for the run of `lease`: sent on a
        heartbeat at once; GetAgent shows the last one while the run is held, and WatchAgent
        streams it."""
        self._progress[(lease.name, lease.token)] = value
        self._beat_now.set()

    async def progress(self, lease: agent_pb2.Lease, value: str, timeout: Seconds = 10.0) -> None:
        """:meth:`report_progress`, then waits (at most `timeout`) until Baton answered the
        heartbeat carrying it: what the handler does next (a step) comes after it."""
        beaten = self._beaten.setdefault((lease.name, lease.token), asyncio.get_running_loop().create_future())
        self.report_progress(lease, value)
        await asyncio.wait({beaten}, timeout=seconds(timeout))

    async def record_step(self, lease: agent_pb2.Lease, step: str,
                          result: Union[bytes, str] = b"") -> agent_pb2.RecordStepResponse:
        """Records `step` of the run of `lease` with its result (AgentService.RecordStep, fenced by
        the lease's token): the lease of a retried run carries it (:func:`recorded_step`). A step
        recorded already keeps its first result (`recorded` false); a lost lease raises
        (FAILED_PRECONDITION, LEASE_LOST)."""
        data = result.encode() if isinstance(result, str) else result
        request = agent_pb2.RecordStepRequest(queue=lease.queue, name=lease.name, token=lease.token, step=step,
                                              result=data)
        assert self._stub is not None, "record_step is for handlers of a running worker"
        return await self._stub.RecordStep(request, timeout=10.0)

    def stop(self) -> None:
        """Asks `run()` to stop gracefully (see the module doc)."""
        self._stopping.set()

    async def run(self) -> None:
        """Runs until :meth:`stop`. Cancelling this task stops the same way (then raises
        CancelledError); a stop before run() makes it return at once."""
        if not callable(self.handler):
            raise TypeError("handler must be a coroutine function (or a function) taking a Lease")
        work = asyncio.ensure_future(self._work())
        try:
            await asyncio.shield(work)
        except asyncio.CancelledError:
            self.stop()
            await work
            raise

    async def _work(self) -> None:
        if self._stopping.is_set():
            return
        channel, owned = channel_for(self.target)
        stub = self._stub = agent_pb2_grpc.AgentServiceStub(channel)
        done: asyncio.Queue = asyncio.Queue()
        unanswered: Dict[Key, agent_pb2.SessionCompletion] = {}
        try:
            attempt, last = 0, False
            while True:
                session = _Session(self, stub, done, unanswered)
                served, error = await session.run()
                if session.closed or last:
                    break
                # Stopped between streams: one more, only to complete and release.
                last = self._stopping.is_set()
                attempt = 0 if served else attempt + 1
                await sleep_unless(self._stopping, backoff(attempt, error))
        finally:
            tasks = [r.task for r in self._held.values() if r.task is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if owned:
                await channel.close()

    async def _handle(self, run: _Run) -> Union[Failure, bytes, agent_pb2.WaitFor]:
        """Runs the handler inside the lease's span (see :mod:`baton.tracing`); returns how it
        failed, or its result on SUCCESS. Cancellation propagates."""
        lease = run.lease
        with tracing.lease_span(lease) as span:
            try:
                if inspect.iscoroutinefunction(self.handler):
                    result = await self.handler(lease)
                else:
                    # A thread cannot be interrupted: a lost lease only abandons its result.
                    result = await asyncio.to_thread(self.handler, lease)
            except WaitFor as wait:
                tracing.succeeded(span)
                return wait.proto()
            except asyncio.CancelledError:
                if run.lost:
                    tracing.lost(span)
                raise
            except Exception as exc:  # noqa: BLE001 - every handler error is reported to Baton
                failure = Failure.of(exc)
                outcome = Outcome.Name(failure.outcome).removeprefix("OUTCOME_") if failure.outcome else None
                tracing.failed(span, exc, outcome)
                return failure
            tracing.succeeded(span)
            return result.encode() if isinstance(result, str) else bytes(result or b"")


def _completion(lease: agent_pb2.Lease, ended: Union[Failure, bytes, agent_pb2.WaitFor]) -> agent_pb2.SessionCompletion:
    if isinstance(ended, agent_pb2.WaitFor):
        return agent_pb2.SessionCompletion(name=lease.name, token=lease.token, wait_for=ended)
    c = agent_pb2.SessionCompletion(name=lease.name, token=lease.token, outcome=agent_pb2.OUTCOME_SUCCESS)
    if isinstance(ended, bytes):
        c.result = ended
        return c
    c.outcome, c.message = ended.outcome, ended.message
    c.error_class, c.http_status = ended.error_class, ended.http_status
    if ended.retry_after is not None:
        c.retry_after.CopyFrom(duration(ended.retry_after))
    return c


class _Session:
    """One Session stream of a worker: a reader applying Baton's messages and a writer sending
    what finished, heartbeats and, when the worker stops, the graceful close."""

    def __init__(self, worker: Worker, stub, done: asyncio.Queue, unanswered: Dict[Key, agent_pb2.SessionCompletion]):
        self.w, self.stub, self.done, self.unanswered = worker, stub, done, unanswered
        self.call = stub.Session()
        self.unstarted: List[agent_pb2.Lease] = []  # pushed while stopping: released, not run
        self.all_answered = asyncio.Event()
        self.served = self.closed = False

    async def run(self) -> Tuple[bool, Optional[BaseException]]:
        """Works on the stream until it ends or the worker has stopped; returns whether Baton
        answered anything, and the error that ended it."""
        w = self.w
        stopping = w._stopping
        first = agent_pb2.SessionRequest(open=agent_pb2.SessionOpen(queue=w.queue, worker_id=w.worker_id))
        if not stopping.is_set():
            first.credit = max(0, max(1, w.max_leases) - len(w._held))
        first.completions.extend(self.unanswered.values())
        reader = asyncio.create_task(self._read())
        error: Optional[BaseException] = None
        try:
            await self.call.write(first)
            await self._write(reader)
        except (grpc.aio.AioRpcError, asyncio.InvalidStateError):
            pass  # the reader says why
        finally:
            if stopping.is_set() and not reader.done():
                # Closing, and Baton did not end the stream in time.
                reader.cancel()
                self.call.cancel()
            error = (await asyncio.gather(reader, return_exceptions=True))[0]
        if isinstance(error, grpc.aio.AioRpcError) and error.code() == grpc.StatusCode.UNIMPLEMENTED:
            raise error  # a Baton without Session is not supported
        if self.unstarted:
            await self._release_by_call()
        return self.served, error if isinstance(error, BaseException) else None

    async def _read(self) -> None:
        """Applies Baton's messages: leases to run, completions answered, leases lost. Raises
        the stream's error."""
        w = self.w
        try:
            async for response in self.call:
                self.served = True
                for c in response.completed:
                    self.unanswered.pop((c.name, c.token), None)
                    if c.lease_lost:
                        log.warning("completion of %s token %d refused: the lease was lost", c.name, c.token)
                if not self.unanswered:
                    self.all_answered.set()
                for answered in (*response.extended, *response.lost):
                    beaten = w._beaten.pop((answered.name, answered.token), None)
                    if beaten is not None and not beaten.done():
                        beaten.set_result(None)
                for lost in response.lost:
                    run = w._held.get((lost.name, lost.token))
                    if run is not None and run.task is not None and not run.lost:
                        log.warning("lease %s token %d lost; cancelling its handler", lost.name, lost.token)
                        run.lost = True
                        run.task.cancel()
                for lease in response.leases:
                    if w._stopping.is_set():
                        self.unstarted.append(lease)
                        continue
                    run = w._held[(lease.name, lease.token)] = _Run(lease)
                    run.task = asyncio.create_task(self._run(run), name=f"baton-{lease.name}-{lease.token}")
        except grpc.aio.AioRpcError as e:
            log.warning("session of %s broke: %s %s", w.queue, e.code().name, e.details())
            raise

    async def _run(self, run: _Run) -> None:
        """Runs one handler; queues how it ended for the writer: ("done", failure or result),
        ("lost", None) or ("cancelled", None)."""
        try:
            ended = await self.w._handle(run)
        except asyncio.CancelledError:
            self.done.put_nowait((run, "lost" if run.lost else "cancelled", None))
            raise
        self.done.put_nowait((run, "lost" if run.lost else "done", ended))

    def _take(self, item, message: agent_pb2.SessionRequest) -> None:
        """A handler that ended, into `message`: its slot back as credit, and its completion (or,
        cancelled by the stop, its release)."""
        run, kind, ended = item
        lease = run.lease
        self.w._held.pop((lease.name, lease.token), None)
        self.w._progress.pop((lease.name, lease.token), None)
        beaten = self.w._beaten.pop((lease.name, lease.token), None)
        if beaten is not None and not beaten.done():
            beaten.set_result(None)
        message.credit += 1
        if kind == "done":
            c = self.unanswered[(lease.name, lease.token)] = _completion(lease, ended)
            message.completions.append(c)
        elif kind == "cancelled":
            message.releases.append(self._release(lease))

    def _release(self, lease: agent_pb2.Lease) -> agent_pb2.SessionRelease:
        r = agent_pb2.SessionRelease(name=lease.name, token=lease.token)
        if self.w.release_delay is not None:
            r.delay.CopyFrom(duration(self.w.release_delay))
        return r

    def _heartbeats(self, message: agent_pb2.SessionRequest) -> None:
        for (name, token), run in self.w._held.items():
            if not run.lost:
                message.heartbeats.append(
                    agent_pb2.SessionLease(name=name, token=token, progress=self.w._progress.pop((name, token), "")))

    async def _write(self, reader: asyncio.Task) -> None:
        """Sends what finished (coalesced: everything queued by the time the last write ended
        goes in one message) and heartbeats, until the stream ends or the worker stops."""
        w = self.w
        stopping = w._stopping
        every = max(0.01, seconds(w.heartbeat_every) or 3.0)
        beat = time.monotonic() + every
        stop = asyncio.ensure_future(stopping.wait())
        try:
            while True:
                get = asyncio.ensure_future(self.done.get())
                poke = asyncio.ensure_future(w._beat_now.wait())
                timeout = max(0.0, beat - time.monotonic())
                await asyncio.wait({get, poke, reader, stop}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
                for f in (get, poke):
                    if not f.done():
                        f.cancel()
                message = agent_pb2.SessionRequest()
                if get.done() and not get.cancelled():
                    self._take(get.result(), message)
                while not self.done.empty():
                    self._take(self.done.get_nowait(), message)
                if reader.done():
                    return  # the stream is gone: completions just taken go on the next one
                if stop.done():
                    await self._close(reader, message)
                    return
                if time.monotonic() >= beat or w._beat_now.is_set():
                    w._beat_now.clear()
                    self._heartbeats(message)
                    beat = time.monotonic() + every
                if message.credit or message.completions or message.releases or message.heartbeats:
                    await self.call.write(message)
        finally:
            stop.cancel()

    async def _close(self, reader: asyncio.Task, message: agent_pb2.SessionRequest) -> None:
        """The graceful stop on a live stream: completions of finished handlers sent and
        answered first; then the handlers still running cancelled and their leases released
        (with any pushed meanwhile); then the stream half-closed and read to its end."""
        message.credit = 0
        if message.completions:
            await self.call.write(message)
            message = agent_pb2.SessionRequest()
        if self.unanswered:
            self.all_answered.clear()
            answered = asyncio.ensure_future(self.all_answered.wait())
            await asyncio.wait({reader, answered}, timeout=10.0, return_when=asyncio.FIRST_COMPLETED)
            answered.cancel()
        running = [r.task for r in self.w._held.values() if r.task is not None and not r.task.done()]
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        while not self.done.empty():
            self._take(self.done.get_nowait(), message)
        message.credit = 0
        message.releases.extend(self._release(lease) for lease in self.unstarted)
        self.unstarted.clear()
        if message.completions or message.releases:
            await self.call.write(message)
        await self.call.done_writing()
        self.closed = True
        await asyncio.wait({reader}, timeout=10.0)

    async def _release_by_call(self) -> None:
        """Leases Baton pushed after the stream's last message out (a round in flight at the
        half-close), released by a call."""
        for lease in self.unstarted:
            request = agent_pb2.ReleaseRequest(queue=lease.queue, name=lease.name, token=lease.token)
            if self.w.release_delay is not None:
                request.delay.CopyFrom(duration(self.w.release_delay))
            try:
                await self.stub.Release(request, timeout=5.0)
            except grpc.aio.AioRpcError as e:
                log.warning("release of %s token %d failed: %s", lease.name, lease.token, e.code().name)
        self.unstarted.clear()

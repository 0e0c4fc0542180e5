"""Durable delayed messages (ScheduleService): schedule them, and a subscriber that runs a handler
per delivered message and acks it.

    scheduler = baton.Scheduler("127.0.0.1:50051")
    await scheduler.schedule("billing", b"invoice-7", delay=10, key="invoice-7")

    async def handle(message):           # baton.v1.schedule_pb2.SubscribeResponse
        ...                              # message.payload, message.delivery_count
        # returning acks the message; raising leaves it unacked: Baton delivers it again after
        # its ack timeout (schedule.ack_timeout_ms), with a higher delivery_count

    sub = baton.Subscriber("127.0.0.1:50051", "billing", "biller-1", handle, max_in_flight=10)
    await sub.run()                      # until sub.stop(); opens the stream again when it ends

The subscriber runs on one Receive stream: Baton pushes due messages, and the acks of whatever
handlers finished since the last message go back on it in one message. `unary=True`, or a Baton
without Receive, uses Subscribe and an Ack call per message.

Delivery is at least once: a handler can see a message again (after a failure, a crash before
the Ack, or a handler slower than the ack timeout, whose late Ack is then refused).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Awaitable, Callable, Dict, Optional, Tuple, Union

import grpc

from baton import tracing
from baton.failure import Seconds, _seconds
from baton.v1 import schedule_pb2, schedule_pb2_grpc
from baton.worker import STOPPED, ChannelLike, Worker, channel_for, duration, is_lease_lost, pushback_seconds

log = logging.getLogger("baton.schedule")

#: Acks in one message at most (the server's default limits.max_batch).
_MAX_ACKS = 1000

Message = schedule_pb2.SubscribeResponse
MessageHandler = Callable[[schedule_pb2.SubscribeResponse], Union[Awaitable[None], None]]
FailureCallback = Callable[[schedule_pb2.SubscribeResponse, BaseException], Union[Awaitable[None], None]]


class Scheduler:
    """Schedules and cancels messages."""

    def __init__(self, target: ChannelLike) -> None:
        self._channel, self._owned = channel_for(target)
        self._stub = schedule_pb2_grpc.ScheduleServiceStub(self._channel)

    async def schedule(
        self,
        receiver: str,
        payload: Union[bytes, str],
        *,
        delay: Optional[Seconds] = None,
        deliver_at: Optional[Union[datetime, float]] = None,
        key: str = "",
    ) -> schedule_pb2.ScheduleResponse:
        """Persists a message for `receiver`, due after `delay` seconds or at `deliver_at` (a
        datetime, naive meaning UTC, or a Unix time in seconds); neither: at once. With `key`,
        scheduling again while the first message is not yet acked returns the first message's id
        with `created` False. Returns the response (id, deliver_at, created)."""
        if delay is not None and deliver_at is not None:
            raise ValueError("give delay or deliver_at, not both")
        request = schedule_pb2.ScheduleRequest(
            receiver=receiver, payload=payload.encode() if isinstance(payload, str) else bytes(payload), key=key)
        if delay is not None:
            request.delay.CopyFrom(duration(max(0.0, _seconds(delay) or 0.0)))
        elif deliver_at is not None:
            if isinstance(deliver_at, datetime):
                if deliver_at.tzinfo is None:
                    deliver_at = deliver_at.replace(tzinfo=timezone.utc)
                request.deliver_at.FromDatetime(deliver_at)
            else:
                request.deliver_at.FromNanoseconds(int(round(float(deliver_at) * 1e9)))
        return await self._stub.Schedule(request, timeout=10.0)

    async def cancel(self, receiver: str, id: str) -> bool:
        """Removes a scheduled or in-flight message; False if there is no such message."""
        try:
            await self._stub.Cancel(schedule_pb2.CancelRequest(receiver=receiver, id=id), timeout=10.0)
            return True
        except grpc.aio.AioRpcError as e:
            if e.code() == grpc.StatusCode.NOT_FOUND:
                return False
            raise

    async def close(self) -> None:
        if self._owned:
            await self._channel.close()

    async def __aenter__(self) -> "Scheduler":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()


@dataclass
class Subscriber:
    """Subscribes to one receiver as one consumer and runs `handler(message)` per delivery, at
    most `max_in_flight` at once (a coroutine function; a plain function runs in a thread).

    - The handler returns: the message is acked, on the Receive stream with the acks of every
      handler that finished meanwhile, and counted in `acked` once Baton confirms it (an ack
      refused as stale — the handler outlived the ack timeout and the message went out again —
      is logged and counted in `late_acks`). Acks a broken stream did not answer go again on the
      next one (when stopping between streams, by one AckBatch).
    - The handler raises: the message is not acked; Baton delivers it again after its ack
      timeout (it keeps one of this consumer's `max_in_flight` places until then). The failure
      is logged and passed to `on_failure(message, exception)`, and counted in `failed`.
    - The stream ends (the server shut down) or fails (UNAVAILABLE …): it opens another after
      a backoff (`grpc-retry-pushback-ms` when the server sent one, else 0.1 s doubling up to
      `max_backoff`, back to 0.1 s after a delivery), until stopped. INVALID_ARGUMENT (a bad
      receiver, consumer id or max_in_flight) is not retried: run() raises it.
    - :meth:`stop`: stops reading at once; handlers already running get `shutdown_grace` seconds
      to finish (and are acked when they succeed; the stream is then half-closed and Baton's
      answers awaited), then are cancelled (not acked: delivered again after the ack timeout).
      Cancelling the run() task instead cancels them at once.
    - `unary=True` (or a Baton without Receive): Subscribe, and an Ack call per message.
    """

    target: ChannelLike
    receiver: str
    consumer_id: str
    handler: MessageHandler
    max_in_flight: int = 1
    #: How long stop() lets running handlers finish before cancelling them (seconds).
    shutdown_grace: Seconds = 10.0
    #: Called with (message, exception) when a handler raises (sync or async).
    on_failure: Optional[FailureCallback] = None
    #: Longest pause between two subscribes (seconds).
    max_backoff: Seconds = 5.0
    #: Subscribe and Ack each message by a call instead of the Receive stream.
    unary: bool = False
    #: Counters: handled and acked, handler failures, acks refused, subscribes after the first.
    acked: int = field(default=0, init=False)
    failed: int = field(default=0, init=False)
    late_acks: int = field(default=0, init=False)
    reconnects: int = field(default=0, init=False)
    _stopping: asyncio.Event = field(default_factory=asyncio.Event, init=False, repr=False)
    _subscribed: asyncio.Event = field(default_factory=asyncio.Event, init=False, repr=False)

    def stop(self) -> None:
        """Asks run() to stop (see the class doc); run() returns once handlers are done. Before
        run(), run() then returns at once."""
        self._stopping.set()

    async def wait_subscribed(self, timeout: Optional[float] = None) -> None:
        """Waits until a stream (Receive or Subscribe) is open (the server answered it)."""
        await asyncio.wait_for(self._subscribed.wait(), timeout)

    async def run(self) -> None:
        """Subscribes and handles deliveries until :meth:`stop` (or until this task is cancelled)."""
        if not callable(self.handler):
            raise TypeError("handler must be a coroutine function (or a function) taking a message")
        channel, owned = channel_for(self.target)
        stub = schedule_pb2_grpc.ScheduleServiceStub(channel)
        slots = asyncio.Semaphore(max(1, self.max_in_flight))
        running: set = set()
        graceful = False
        try:
            if self.unary or not await self._receive(stub, slots, running):
                await self._subscribe_loop(stub, slots, running)
            graceful = True
        finally:
            if running:
                grace = max(0.0, _seconds(self.shutdown_grace) or 0.0) if graceful else 0.0
                if grace > 0:
                    await asyncio.wait(set(running), timeout=grace)
                for task in list(running):
                    task.cancel()
                await asyncio.gather(*running, return_exceptions=True)
            if owned:
                await channel.close()

    async def _subscribe_loop(self, stub, slots: asyncio.Semaphore, running: set) -> None:
        stopping = self._stopping
        backoff, cap = 0.1, max(0.1, _seconds(self.max_backoff) or 5.0)
        first = True
        request = schedule_pb2.SubscribeRequest(
            receiver=self.receiver, consumer_id=self.consumer_id, max_in_flight=max(1, self.max_in_flight))
        while not stopping.is_set():
            if not first:
                self.reconnects += 1
            first = False
            call = stub.Subscribe(request)
            delay = backoff
            try:
                if await Worker._until(call.wait_for_connection(), stopping) is STOPPED:
                    call.cancel()
                    return
                self._subscribed.set()
                while True:
                    message = await Worker._until(call.read(), stopping)
                    if message is STOPPED:
                        call.cancel()
                        return
                    if message is grpc.aio.EOF:
                        log.info("subscription of %s ended (server shutdown); subscribing again", self.receiver)
                        break
                    backoff = 0.1
                    # A free place first (the server keeps to max_in_flight too, but a redelivery
                    # to this consumer can come while a slow handler still holds its message).
                    if await Worker._until(slots.acquire(), stopping) is STOPPED:
                        call.cancel()
                        return
                    task = asyncio.create_task(self._handle(stub, message, slots),
                                               name=f"baton-{self.receiver}-{message.id}")
                    running.add(task)
                    task.add_done_callback(running.discard)
            except grpc.aio.AioRpcError as e:
                if e.code() == grpc.StatusCode.INVALID_ARGUMENT:
                    raise
                delay = pushback_seconds(e) or backoff
                log.warning("subscription of %s failed: %s %s; subscribing again in %.1fs",
                            self.receiver, e.code().name, e.details(), delay)
            finally:
                self._subscribed.clear()
            await Worker._sleep(delay, stopping)
            backoff = min(backoff * 2, cap)

    async def _handle(self, stub, message: schedule_pb2.SubscribeResponse, slots: asyncio.Semaphore,
                      acks: Optional[asyncio.Queue] = None) -> None:
        """Runs the handler (inside the message's span, see :mod:`baton.tracing`); on success acks
        by a call, or (`acks`) queues the ack for the stream."""
        try:
            try:
                with tracing.message_span(self.receiver, message) as span:
                    try:
                        if inspect.iscoroutinefunction(self.handler):
                            await self.handler(message)
                        else:
                            await asyncio.to_thread(self.handler, message)
                    except Exception as exc:  # noqa: BLE001 - re-raised just below
                        tracing.failed(span, exc)
                        raise
            except asyncio.CancelledError:
                log.warning("handler of %s/%s cancelled (stopping); not acked", self.receiver, message.id)
                raise
            except Exception as exc:  # noqa: BLE001 - reported, and left for redelivery
                self.failed += 1
                log.warning("handler of %s/%s (delivery %d) failed: %s; not acked, Baton delivers it again "
                            "after its ack timeout", self.receiver, message.id, message.delivery_count, exc)
                await _call(self.on_failure, message, exc)
                return
            if acks is not None:
                acks.put_nowait((message.id, message.token))
            else:
                await self._ack(stub, message)
        finally:
            slots.release()

    def _late_ack(self, id: str, token: int) -> None:
        self.late_acks += 1
        log.warning("ack of %s/%s token %d refused: the message was delivered again (handler slower "
                    "than the ack timeout)", self.receiver, id, token)

    # --- the Receive stream ------------------------------------------------------------------

    async def _receive(self, stub, slots: asyncio.Semaphore, running: set) -> bool:
        """Works on Receive streams until stopped; False (having done nothing) when the server has
        no Receive."""
        stopping = self._stopping
        acks: asyncio.Queue = asyncio.Queue()
        # Acks sent and not yet answered; True: sent again on a newer stream (a "lost" answer may
        # then only mean an earlier stream applied it).
        unanswered: Dict[Tuple[str, int], bool] = {}
        backoff, cap = 0.1, max(0.1, _seconds(self.max_backoff) or 5.0)
        first = True
        while not stopping.is_set():
            if not first:
                self.reconnects += 1
            call = stub.Receive()
            opening = schedule_pb2.ReceiveRequest(open=schedule_pb2.SubscribeRequest(
                receiver=self.receiver, consumer_id=self.consumer_id, max_in_flight=max(1, self.max_in_flight)))
            for key in list(unanswered)[:_MAX_ACKS]:
                unanswered[key] = True
                opening.acks.append(schedule_pb2.ReceiveAck(id=key[0], token=key[1]))
            reader = asyncio.create_task(self._receive_reader(stub, call, unanswered, slots, running, acks))
            try:
                await call.write(opening)
                await self._receive_writer(call, reader, unanswered, running, acks)
            except (grpc.aio.AioRpcError, asyncio.InvalidStateError):
                pass  # the reader says why
            if stopping.is_set():
                if not reader.done():
                    reader.cancel()
                await asyncio.gather(reader, return_exceptions=True)
                call.cancel()
                return True
            result, error = await reader
            if result == "unimplemented" and first:
                log.info("the server has no Receive; using Subscribe/Ack")
                return False
            first = False
            if result == "invalid":
                raise error
            if result == "served":
                backoff = 0.1
            delay = (pushback_seconds(error) if error is not None else None) or backoff
            await Worker._sleep(delay, stopping)
            backoff = min(backoff * 2, cap)
        # Stopped between two streams: handlers of the last one may still run, and acks may be
        # unanswered. They go by AckBatch once the handlers are done.
        for key in unanswered:
            unanswered[key] = True
        await self._await_handlers(running)
        while not acks.empty():
            unanswered[acks.get_nowait()] = False
        await self._ack_left(stub, unanswered)
        return True

    async def _receive_reader(self, stub, call, unanswered, slots: asyncio.Semaphore, running: set,
                              acks: asyncio.Queue):
        """Applies the server's messages: deliveries to handle, acks answered. Returns how the
        stream ended: ("served" | "broken" | "unimplemented" | "invalid", error or None)."""
        served = False
        try:
            await call.wait_for_connection()
            self._subscribed.set()
            async for response in call:
                served = True
                self._answered(response, unanswered)
                for message in response.messages:
                    # Stopping: not handled (it comes again after its ack timeout); the answers to
                    # the last acks are still read.
                    if self._stopping.is_set() or await Worker._until(slots.acquire(), self._stopping) is STOPPED:
                        continue
                    task = asyncio.create_task(self._handle(stub, message, slots, acks),
                                               name=f"baton-{self.receiver}-{message.id}")
                    running.add(task)
                    task.add_done_callback(running.discard)
        except grpc.aio.AioRpcError as e:
            if e.code() == grpc.StatusCode.UNIMPLEMENTED and not served:
                return "unimplemented", e
            if e.code() == grpc.StatusCode.INVALID_ARGUMENT:
                return "invalid", e
            log.warning("receive stream of %s failed: %s %s; opening another", self.receiver, e.code().name,
                        e.details())
            return ("served" if served else "broken"), e
        finally:
            self._subscribed.clear()
        if not self._stopping.is_set():
            log.info("receive stream of %s ended (server shutdown); opening another", self.receiver)
        return ("served" if served else "broken"), None

    def _answered(self, response: schedule_pb2.ReceiveResponse, unanswered) -> None:
        for a in response.acked:
            if unanswered.pop((a.id, a.token), None) is not None:
                self.acked += 1
        for a in response.lost:
            if unanswered.pop((a.id, a.token), None) is False:
                self._late_ack(a.id, a.token)

    @staticmethod
    def _take(acks: asyncio.Queue, first, message: schedule_pb2.ReceiveRequest, unanswered) -> None:
        """`first` and every ack queued now (up to the bound) into one message."""
        item = first
        while True:
            unanswered[item] = False
            message.acks.append(schedule_pb2.ReceiveAck(id=item[0], token=item[1]))
            if acks.empty() or len(message.acks) >= _MAX_ACKS:
                return
            item = acks.get_nowait()

    async def _receive_writer(self, call, reader: asyncio.Task, unanswered, running: set,
                              acks: asyncio.Queue) -> None:
        """Sends the acks of handlers that finished (coalesced: everything queued by the time the
        last write ended goes in one message), until the stream ends or the subscriber stops."""
        stop = asyncio.ensure_future(self._stopping.wait())
        try:
            while True:
                get = asyncio.ensure_future(acks.get())
                ready, _ = await asyncio.wait({get, reader, stop}, return_when=asyncio.FIRST_COMPLETED)
                if reader in ready and stop not in ready:
                    # The stream is gone: an ack just taken goes on the next stream.
                    if get.done():
                        acks.put_nowait(get.result())
                    else:
                        get.cancel()
                    return
                message = schedule_pb2.ReceiveRequest()
                if get.done():
                    self._take(acks, get.result(), message, unanswered)
                else:
                    get.cancel()
                if stop in ready:
                    await self._receive_close(call, reader, message, unanswered, running, acks)
                    return
                await call.write(message)
        finally:
            stop.cancel()

    async def _receive_close(self, call, reader: asyncio.Task, message, unanswered, running: set,
                             acks: asyncio.Queue) -> None:
        """Stop on a live stream: running handlers get the shutdown grace, their acks are sent,
        the stream half-closed and Baton's answers awaited (bounded)."""
        await self._await_handlers(running)
        try:
            while not acks.empty():
                if len(message.acks) >= _MAX_ACKS:
                    await call.write(message)
                    message = schedule_pb2.ReceiveRequest()
                self._take(acks, acks.get_nowait(), message, unanswered)
            if message.acks:
                await call.write(message)
            await call.done_writing()
            await asyncio.wait_for(asyncio.shield(reader), timeout=10.0)
        except (grpc.aio.AioRpcError, asyncio.TimeoutError, asyncio.InvalidStateError):
            pass

    async def _await_handlers(self, running: set) -> None:
        """Lets running handlers finish for the shutdown grace, then cancels the rest."""
        if not running:
            return
        grace = max(0.0, _seconds(self.shutdown_grace) or 0.0)
        if grace > 0:
            await asyncio.wait(set(running), timeout=grace)
        for task in list(running):
            task.cancel()
        await asyncio.gather(*list(running), return_exceptions=True)

    async def _ack_left(self, stub, unanswered) -> None:
        """Acks no stream answered, by AckBatch calls (the subscriber is stopping)."""
        left = list(unanswered.items())
        for i in range(0, len(left), _MAX_ACKS):
            chunk = left[i:i + _MAX_ACKS]
            request = schedule_pb2.AckBatchRequest(acks=[
                schedule_pb2.AckRequest(receiver=self.receiver, id=id, token=token) for (id, token), _ in chunk])
            try:
                response = await stub.AckBatch(request, timeout=10.0)
            except grpc.aio.AioRpcError as e:
                log.warning("%d acks of %s not sent (%s); those messages come again after their ack timeout",
                            len(left) - i, self.receiver, e.code().name)
                return
            for ((id, token), resent), result in zip(chunk, response.results):
                if not result.lease_lost:
                    self.acked += 1
                elif not resent:
                    self._late_ack(id, token)

    async def _ack(self, stub, message: schedule_pb2.SubscribeResponse) -> None:
        # One request id for every attempt below: a retry of an applied Ack succeeds again.
        request = schedule_pb2.AckRequest(request_id=str(uuid.uuid4()), receiver=self.receiver, id=message.id,
                                          token=message.token)
        for attempt in range(3):
            try:
                await stub.Ack(request, timeout=10.0)
                self.acked += 1
                return
            except grpc.aio.AioRpcError as e:
                if e.code() == grpc.StatusCode.UNAVAILABLE and attempt < 2:
                    await asyncio.sleep(pushback_seconds(e) or 0.2 * (attempt + 1))
                    continue
                if is_lease_lost(e):
                    self._late_ack(message.id, message.token)
                else:
                    log.warning("ack of %s/%s failed: %s %s", self.receiver, message.id, e.code().name, e.details())
                return


async def _call(callback, *args) -> None:
    if callback is None:
        return
    try:
        result = callback(*args)
        if inspect.isawaitable(result):
            await result
    except Exception:  # noqa: BLE001 - a caller's callback must not stop the subscriber
        log.exception("subscriber callback failed")

"""Durable delayed messages (ScheduleService): schedule them, and a subscriber that runs a handler
per delivered message and acks it, on one Receive stream.

    scheduler = baton.Scheduler("127.0.0.1:50051")
    await scheduler.schedule("billing", b"invoice-7", delay=10, key="invoice-7")

    async def handle(message):           # baton.Message (a SubscribeResponse)
        ...                              # returning acks it; raising leaves it for redelivery

    sub = baton.Subscriber("127.0.0.1:50051", "billing", "biller-1", handle, max_in_flight=10)
    await sub.run()                      # until sub.stop(); opens the stream again when it ends

Delivery is at least once: a handler can see a message again (after a failure, a crash before
the ack, or a handler slower than the ack timeout, whose late ack is then refused).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Awaitable, Callable, Dict, Optional, Tuple, Union

import grpc

from baton import tracing
from baton._rpc import ChannelLike, Helper, Seconds, backoff, channel_for, duration, idempotent, seconds, sleep_unless
from baton.v1 import schedule_pb2, schedule_pb2_grpc

log = logging.getLogger("baton.schedule")

Message = schedule_pb2.SubscribeResponse
MessageHandler = Callable[[schedule_pb2.SubscribeResponse], Union[Awaitable[None], None]]
FailureCallback = Callable[[schedule_pb2.SubscribeResponse, BaseException], Union[Awaitable[None], None]]
Key = Tuple[str, int]


class Scheduler(Helper):
    """Schedules and cancels messages."""

    def __init__(self, target: ChannelLike) -> None:
        super().__init__(target)
        self._stub = schedule_pb2_grpc.ScheduleServiceStub(self._channel)

    async def schedule(
        self,
        receiver: str,
        payload: Union[bytes, str],
        *,
        delay: Optional[Seconds] = None,
        deliver_at: Optional[Union[datetime, float]] = None,
        key: str = "",
        request_id: str = "",
    ) -> schedule_pb2.ScheduleResponse:
        """Persists a message for `receiver`, due after `delay` seconds or at `deliver_at` (a
        datetime, naive meaning UTC, or a Unix time in seconds); neither: at once. With `key`,
        scheduling again while the first message is not yet acked returns the first message's id
        with `created` False. Retried on UNAVAILABLE with one request id (`request_id`, or a new
        one). Returns the response (id, deliver_at, created)."""
        if delay is not None and deliver_at is not None:
            raise ValueError("give delay or deliver_at, not both")
        request = schedule_pb2.ScheduleRequest(
            receiver=receiver, payload=payload.encode() if isinstance(payload, str) else bytes(payload), key=key,
            request_id=request_id)
        if delay is not None:
            request.delay.CopyFrom(duration(max(0.0, seconds(delay) or 0.0)))
        elif isinstance(deliver_at, datetime):
            request.deliver_at.FromDatetime(deliver_at if deliver_at.tzinfo else deliver_at.replace(tzinfo=timezone.utc))
        elif deliver_at is not None:
            request.deliver_at.FromNanoseconds(int(round(float(deliver_at) * 1e9)))
        return await idempotent(self._stub.Schedule, request)

    async def cancel(self, receiver: str, id: str) -> bool:
        """Removes a scheduled or in-flight message; False if there is no such message."""
        try:
            await self._stub.Cancel(schedule_pb2.CancelRequest(receiver=receiver, id=id), timeout=10.0)
            return True
        except grpc.aio.AioRpcError as e:
            if e.code() == grpc.StatusCode.NOT_FOUND:
                return False
            raise


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
    - The stream ends (the server shut down) or fails: it opens another after the shared
      backoff (the server's hint first), until stopped. INVALID_ARGUMENT (a bad receiver,
      consumer id or max_in_flight) is not retried: run() raises it.
    - :meth:`stop`: stops reading at once; handlers already running get `shutdown_grace` seconds
      to finish (and are acked when they succeed; the stream is then half-closed and read to its
      end), then are cancelled (not acked: delivered again after the ack timeout). Cancelling
      the run() task does the same without the grace.
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
    #: Counters: handled and acked, handler failures, acks refused, streams after the first.
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
        """Waits until a Receive stream is open (the server answered it)."""
        await asyncio.wait_for(self._subscribed.wait(), timeout)

    async def run(self) -> None:
        """Receives and handles deliveries until :meth:`stop`. Cancelling this task stops the
        same way but without the grace (then raises CancelledError)."""
        if not callable(self.handler):
            raise TypeError("handler must be a coroutine function (or a function) taking a message")
        work = asyncio.ensure_future(self._work())
        try:
            await asyncio.shield(work)
        except asyncio.CancelledError:
            self.shutdown_grace = 0
            self.stop()
            await work
            raise

    async def _work(self) -> None:
        channel, owned = channel_for(self.target)
        stub = schedule_pb2_grpc.ScheduleServiceStub(channel)
        slots = asyncio.Semaphore(max(1, self.max_in_flight))
        running: set = set()
        acks: asyncio.Queue = asyncio.Queue()
        # Acks sent and not yet answered; True: sent again on a newer stream (a "lost" answer may
        # then only mean an earlier stream applied it).
        unanswered: Dict[Key, bool] = {}
        try:
            attempt = 0
            while not self._stopping.is_set():
                served, error = await self._stream(stub, slots, running, acks, unanswered)
                if self._stopping.is_set():
                    break
                self.reconnects += 1
                attempt = 0 if served else attempt + 1
                await sleep_unless(self._stopping, backoff(attempt, error))
            else:
                # Stopped between two streams: handlers of the last one may still run, and acks
                # may be unanswered. They go by AckBatch once the handlers are done.
                for key in unanswered:
                    unanswered[key] = True
                await self._await_handlers(running)
                while not acks.empty():
                    unanswered[acks.get_nowait()] = False
                await self._ack_left(stub, unanswered)
        finally:
            for task in list(running):
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            if owned:
                await channel.close()

    async def _stream(self, stub, slots, running: set, acks: asyncio.Queue, unanswered: Dict[Key, bool]):
        """One Receive stream, until it ends or the subscriber stopped on it (then the loop in
        run() ends at once); returns whether it delivered anything and the error that ended it."""
        call = stub.Receive()
        opening = schedule_pb2.ReceiveRequest(open=schedule_pb2.SubscribeRequest(
            receiver=self.receiver, consumer_id=self.consumer_id, max_in_flight=max(1, self.max_in_flight)))
        for key in unanswered:
            unanswered[key] = True
            opening.acks.append(schedule_pb2.ReceiveAck(id=key[0], token=key[1]))
        reader = asyncio.create_task(self._read(stub, call, unanswered, slots, running, acks))
        try:
            await call.write(opening)
            await self._write(call, reader, unanswered, running, acks)
        except (grpc.aio.AioRpcError, asyncio.InvalidStateError):
            pass  # the reader says why
        if self._stopping.is_set() and not reader.done():
            reader.cancel()
            call.cancel()
        result = (await asyncio.gather(reader, return_exceptions=True))[0]
        served, error = result if isinstance(result, tuple) else (True, None)
        if isinstance(error, grpc.aio.AioRpcError) and error.code() in (
                grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNIMPLEMENTED):
            raise error
        return served, error

    async def _read(self, stub, call, unanswered, slots: asyncio.Semaphore, running: set, acks: asyncio.Queue):
        """Applies the server's messages: deliveries to handle, acks answered. Returns (served,
        the error that ended the stream or None)."""
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
                    if self._stopping.is_set() or not await self._slot(slots):
                        continue
                    task = asyncio.create_task(self._handle(message, slots, acks),
                                               name=f"baton-{self.receiver}-{message.id}")
                    running.add(task)
                    task.add_done_callback(running.discard)
        except grpc.aio.AioRpcError as e:
            log.warning("receive stream of %s failed: %s %s", self.receiver, e.code().name, e.details())
            return served, e
        finally:
            self._subscribed.clear()
        if not self._stopping.is_set():
            log.info("receive stream of %s ended (server shutdown); opening another", self.receiver)
        return served, None

    async def _slot(self, slots: asyncio.Semaphore) -> bool:
        """A free handler place (the server keeps to max_in_flight too, but a redelivery to this
        consumer can come while a slow handler still holds its message); False when stopping."""
        take, stop = asyncio.ensure_future(slots.acquire()), asyncio.ensure_future(self._stopping.wait())
        await asyncio.wait({take, stop}, return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        if take.done():
            if not self._stopping.is_set():
                return True
            slots.release()
        take.cancel()
        return False

    async def _handle(self, message: schedule_pb2.SubscribeResponse, slots: asyncio.Semaphore,
                      acks: asyncio.Queue) -> None:
        """Runs the handler (inside the message's span, see :mod:`baton.tracing`); on success
        queues the ack for the stream."""
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
            acks.put_nowait((message.id, message.token))
        finally:
            slots.release()

    def _late_ack(self, id: str, token: int) -> None:
        self.late_acks += 1
        log.warning("ack of %s/%s token %d refused: the message was delivered again (handler slower "
                    "than the ack timeout)", self.receiver, id, token)

    def _answered(self, response: schedule_pb2.ReceiveResponse, unanswered) -> None:
        for a in response.acked:
            if unanswered.pop((a.id, a.token), None) is not None:
                self.acked += 1
        for a in response.lost:
            if unanswered.pop((a.id, a.token), None) is False:
                self._late_ack(a.id, a.token)

    @staticmethod
    def _take(acks: asyncio.Queue, message: schedule_pb2.ReceiveRequest, unanswered) -> None:
        """Every ack queued now into one message."""
        while not acks.empty():
            key = acks.get_nowait()
            unanswered[key] = False
            message.acks.append(schedule_pb2.ReceiveAck(id=key[0], token=key[1]))

    async def _write(self, call, reader: asyncio.Task, unanswered, running: set, acks: asyncio.Queue) -> None:
        """Sends the acks of handlers that finished (coalesced: everything queued by the time the
        last write ended goes in one message), until the stream ends or the subscriber stops."""
        stop = asyncio.ensure_future(self._stopping.wait())
        try:
            while True:
                get = asyncio.ensure_future(acks.get())
                await asyncio.wait({get, reader, stop}, return_when=asyncio.FIRST_COMPLETED)
                if get.done():
                    acks.put_nowait(get.result())  # back in the queue: taken below with the rest
                else:
                    get.cancel()
                if stop.done():
                    await self._close(call, reader, unanswered, running, acks)
                    return
                if reader.done():
                    return  # the stream is gone: the acks go on the next one
                message = schedule_pb2.ReceiveRequest()
                self._take(acks, message, unanswered)
                await call.write(message)
        finally:
            stop.cancel()

    async def _close(self, call, reader: asyncio.Task, unanswered, running: set, acks: asyncio.Queue) -> None:
        """Stop on a live stream: running handlers get the shutdown grace, their acks are sent,
        the stream half-closed and read to its end (bounded)."""
        await self._await_handlers(running)
        try:
            message = schedule_pb2.ReceiveRequest()
            self._take(acks, message, unanswered)
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
        grace = max(0.0, seconds(self.shutdown_grace) or 0.0)
        if grace > 0:
            await asyncio.wait(set(running), timeout=grace)
        for task in list(running):
            task.cancel()
        await asyncio.gather(*list(running), return_exceptions=True)

    async def _ack_left(self, stub, unanswered) -> None:
        """Acks no stream answered, by one AckBatch call (the subscriber is stopping)."""
        if not unanswered:
            return
        left = list(unanswered.items())
        request = schedule_pb2.AckBatchRequest(acks=[
            schedule_pb2.AckRequest(receiver=self.receiver, id=id, token=token) for (id, token), _ in left])
        try:
            response = await stub.AckBatch(request, timeout=10.0)
        except grpc.aio.AioRpcError as e:
            log.warning("%d acks of %s not sent (%s); those messages come again after their ack timeout",
                        len(left), self.receiver, e.code().name)
            return
        for ((id, token), resent), result in zip(left, response.results):
            if not result.lease_lost:
                self.acked += 1
            elif not resent:
                self._late_ack(id, token)


async def _call(callback, *args) -> None:
    if callback is None:
        return
    try:
        result = callback(*args)
        if inspect.isawaitable(result):
            await result
    except Exception:  # noqa: BLE001 - a caller's callback must not stop the subscriber
        log.exception("subscriber callback failed")

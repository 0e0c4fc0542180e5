"""Durable delayed messages (ScheduleService): schedule them, and a subscriber that runs a handler
per delivered message and acks it.

    scheduler = baton.Scheduler("127.0.0.1:50051")
    await scheduler.schedule("billing", b"invoice-7", delay=10, key="invoice-7")

    async def handle(message):           # baton.v1.schedule_pb2.SubscribeResponse
        ...                              # message.payload, message.delivery_count
        # returning acks the message; raising leaves it unacked: Baton delivers it again after
        # its ack timeout (schedule.ack_timeout_ms), with a higher delivery_count

    sub = baton.Subscriber("127.0.0.1:50051", "billing", "biller-1", handle, max_in_flight=10)
    await sub.run()                      # until sub.stop(); re-subscribes when the stream ends

Delivery is at least once: a handler can see a message again (after a failure, a crash before
the Ack, or a handler slower than the ack timeout, whose late Ack is then refused).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Awaitable, Callable, Optional, Union

import grpc

from baton.failure import Seconds, _seconds
from baton.v1 import schedule_pb2, schedule_pb2_grpc
from baton.worker import STOPPED, ChannelLike, Worker, channel_for, duration, is_lease_lost, pushback_seconds

log = logging.getLogger("baton.schedule")

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

    - The handler returns: the message is acked (Ack refused as LEASE_LOST — the handler outlived
      the ack timeout and the message went out again — is logged and counted in `late_acks`).
    - The handler raises: the message is not acked; Baton delivers it again after its ack
      timeout (it keeps one of this consumer's `max_in_flight` places until then). The failure
      is logged and passed to `on_failure(message, exception)`, and counted in `failed`.
    - The stream ends (the server shut down) or fails (UNAVAILABLE …): it subscribes again after
      a backoff (`grpc-retry-pushback-ms` when the server sent one, else 0.1 s doubling up to
      `max_backoff`, back to 0.1 s after a delivery), until stopped. INVALID_ARGUMENT (a bad
      receiver, consumer id or max_in_flight) is not retried: run() raises it.
    - :meth:`stop`: stops reading at once; handlers already running get `shutdown_grace` seconds
      to finish (and are acked when they succeed), then are cancelled (not acked: delivered
      again after the ack timeout). Cancelling the run() task instead cancels them at once.
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
        """Waits until a Subscribe stream is open (the server answered it)."""
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

    async def _handle(self, stub, message: schedule_pb2.SubscribeResponse, slots: asyncio.Semaphore) -> None:
        try:
            try:
                if inspect.iscoroutinefunction(self.handler):
                    await self.handler(message)
                else:
                    await asyncio.to_thread(self.handler, message)
            except asyncio.CancelledError:
                log.warning("handler of %s/%s cancelled (stopping); not acked", self.receiver, message.id)
                raise
            except Exception as exc:  # noqa: BLE001 - reported, and left for redelivery
                self.failed += 1
                log.warning("handler of %s/%s (delivery %d) failed: %s; not acked, Baton delivers it again "
                            "after its ack timeout", self.receiver, message.id, message.delivery_count, exc)
                await _call(self.on_failure, message, exc)
                return
            await self._ack(stub, message)
        finally:
            slots.release()

    async def _ack(self, stub, message: schedule_pb2.SubscribeResponse) -> None:
        request = schedule_pb2.AckRequest(receiver=self.receiver, id=message.id, token=message.token)
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
                    self.late_acks += 1
                    log.warning("ack of %s/%s token %d refused: the message was delivered again (handler slower "
                                "than the ack timeout)", self.receiver, message.id, message.token)
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

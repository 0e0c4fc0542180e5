"""A leadership helper over LeaderService: campaign (waiting for a vacancy), renew when Baton
says, tell the caller when leadership is gained and lost, resign on close.

    async def elected(token): ...   # start leading; pass `token` to whatever you write
    async def lost(token): ...      # stop at once: another candidate may lead now

    async with baton.Leadership("127.0.0.1:50051", "billing", "replica-a", ttl=10,
                                on_elected=elected, on_lost=lost) as lead:
        await lead.wait_elected()
        ...

The rule is Baton's (RenewResponse in proto/baton/v1/leader.proto): each answer says when to
renew (`renew_in`) and when to step down (`step_down_in`), both from when the answered call was
*sent*. Leadership is lost as soon as a Renew is refused (LEASE_LOST), or at the step-down
moment of the last Renew that succeeded unless a later one, sent before that moment, has
answered — on a timer, so a connection that never answers cannot keep the caller believing it
leads after its term could have expired. Each Renew's deadline is that moment. A won Campaign
(whose wait may have outlasted part of the term) is confirmed by a Renew at once, and reported
only then. After a loss the helper campaigns again.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from typing import Awaitable, Callable, Optional, Union

import grpc

from baton._rpc import ChannelLike, Seconds, backoff, channel_for, duration, is_lease_lost, seconds
from baton.v1 import leader_pb2, leader_pb2_grpc

log = logging.getLogger("baton.leader")

Callback = Callable[[int], Union[None, Awaitable[None]]]


class Leadership:
    def __init__(
        self,
        target: ChannelLike,
        election: str,
        candidate_id: str,
        ttl: Seconds = 10.0,
        *,
        on_elected: Optional[Callback] = None,
        on_lost: Optional[Callback] = None,
        campaign_wait: Seconds = 30.0,
    ) -> None:
        self.election = election
        self.candidate_id = candidate_id
        self.ttl = seconds(ttl) or 10.0
        self.on_elected = on_elected
        self.on_lost = on_lost
        self.campaign_wait = seconds(campaign_wait) or 30.0
        self._channel, self._owned = channel_for(target)
        self._stub = leader_pb2_grpc.LeaderServiceStub(self._channel)
        self._token: Optional[int] = None
        self._changed = asyncio.Condition()
        self._task: Optional[asyncio.Task] = None
        self._closing = asyncio.Event()

    @property
    def token(self) -> Optional[int]:
        """The fencing token of the term this candidate holds, or None."""
        return self._token

    @property
    def is_leader(self) -> bool:
        return self._token is not None

    def start(self) -> "Leadership":
        if self._task is None:
            self._task = asyncio.create_task(self._hold(), name=f"baton-leadership-{self.election}")
        return self

    async def wait_elected(self, timeout: Optional[float] = None) -> int:
        """Waits until this candidate leads; returns the term's token."""

        async def wait() -> int:
            async with self._changed:
                await self._changed.wait_for(lambda: self._token is not None)
                assert self._token is not None
                return self._token

        return await asyncio.wait_for(wait(), timeout)

    async def wait_lost(self, timeout: Optional[float] = None) -> None:
        """Waits until this candidate does not lead."""

        async def wait() -> None:
            async with self._changed:
                await self._changed.wait_for(lambda: self._token is None)

        await asyncio.wait_for(wait(), timeout)

    async def close(self) -> None:
        """Stops campaigning and renewing, and resigns if leading (on_lost is called)."""
        self._closing.set()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        token = self._token
        if token is not None:
            try:
                await self._stub.Resign(
                    leader_pb2.ResignRequest(election=self.election, candidate_id=self.candidate_id, token=token),
                    timeout=5.0,
                )
            except grpc.aio.AioRpcError as e:
                log.warning("resign failed (the term will expire): %s %s", e.code().name, e.details())
            await self._set(None)
        if self._owned:
            await self._channel.close()

    async def __aenter__(self) -> "Leadership":
        return self.start()

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def _set(self, token: Optional[int]) -> None:
        old, self._token = self._token, token
        async with self._changed:
            self._changed.notify_all()
        if token is not None and old != token:
            log.info("leadership of %s gained by %s, token %d", self.election, self.candidate_id, token)
            await _call(self.on_elected, token)
        elif token is None and old is not None:
            log.warning("leadership of %s lost by %s, token %d", self.election, self.candidate_id, old)
            await _call(self.on_lost, old)

    async def _renew(self, token: int, deadline: float) -> Optional[BaseException]:
        """One Renew, bounded by `deadline` (monotonic); on success the next renew and step-down
        moments are Baton's, from its send time. Returns the error (None: renewed). A refused
        term (LEASE_LOST) reports the loss."""
        sent = time.monotonic()
        try:
            answer = await self._stub.Renew(
                leader_pb2.RenewRequest(election=self.election, candidate_id=self.candidate_id, token=token),
                timeout=max(0.001, deadline - sent),
            )
        except grpc.aio.AioRpcError as e:
            if is_lease_lost(e):
                await self._set(None)
            else:
                log.warning("renew failed: %s %s", e.code().name, e.details())
            return e
        self._renew_at = sent + answer.renew_in.ToTimedelta().total_seconds()
        self._step_down = sent + answer.step_down_in.ToTimedelta().total_seconds()
        return None

    async def _hold(self) -> None:
        attempt = 0
        while not self._closing.is_set():
            if self._token is None:
                request = leader_pb2.CampaignRequest(
                    election=self.election,
                    candidate_id=self.candidate_id,
                    ttl=duration(self.ttl),
                    wait=duration(self.campaign_wait),
                )
                try:
                    response = await self._stub.Campaign(request, timeout=self.campaign_wait + 10.0)
                except grpc.aio.AioRpcError as e:
                    log.warning("campaign failed: %s %s", e.code().name, e.details())
                    await asyncio.sleep(backoff(attempt, e))
                    attempt += 1
                    continue
                attempt = 0
                if response.is_leader:
                    deadline = time.monotonic() + response.step_down_in.ToTimedelta().total_seconds()
                    if await self._renew(response.token, deadline) is None:
                        await self._set(response.token)
                continue
            # Leading: renew when Baton said, sooner after a failure; step down at the moment
            # the last success set, answered or not.
            await asyncio.sleep(max(0.0, min(self._renew_at, self._step_down) - time.monotonic()))
            token = self._token
            if token is None:
                continue
            if time.monotonic() >= self._step_down:
                log.warning("no renewal of %s succeeded in time; stepping down", self.election)
                await self._set(None)
                continue
            error = await self._renew(token, self._step_down)
            attempt = 0 if error is None else attempt + 1
            if error is not None:
                self._renew_at = time.monotonic() + backoff(attempt, error)

    _renew_at: float = 0.0
    _step_down: float = 0.0


async def _call(callback: Optional[Callback], token: int) -> None:
    if callback is None:
        return
    try:
        result = callback(token)
        if inspect.isawaitable(result):
            await result
    except Exception:  # noqa: BLE001 - a caller's callback must not stop the helper
        log.exception("leadership callback failed")

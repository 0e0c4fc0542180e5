"""A leadership helper over LeaderService: campaign (waiting for a vacancy), renew every
ttl/3, tell the caller when leadership is gained and lost, resign on close.

    async def elected(token): ...   # start leading; pass `token` to whatever you write
    async def lost(token): ...      # stop at once: another candidate may lead now

    async with baton.Leadership("127.0.0.1:50051", "billing", "replica-a", ttl=10,
                                on_elected=elected, on_lost=lost) as lead:
        await lead.wait_elected()
        ...

The rule of every Baton client language: each Renew has a deadline, and leadership is
considered lost as soon as a Renew is refused (LEASE_LOST), or once no Renew *sent* within the
last 2/3 of the ttl has succeeded — on a timer, so a connection that never answers cannot keep
the caller believing it leads after its term could have expired and another candidate been
elected. A won Campaign is confirmed by a Renew at once, and reported only then. After a loss
the helper campaigns again.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from typing import Awaitable, Callable, Optional, Union

import grpc

from baton.failure import Seconds, _seconds
from baton.v1 import leader_pb2, leader_pb2_grpc
from baton.worker import ChannelLike, channel_for, duration, is_lease_lost, pushback_seconds

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
        self.ttl = _seconds(ttl) or 10.0
        self.on_elected = on_elected
        self.on_lost = on_lost
        self.campaign_wait = _seconds(campaign_wait) or 30.0
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

    async def _renew(self, token: int, deadline: float) -> bool:
        """One Renew, bounded by `deadline` (monotonic); True if it succeeded. A refused term
        (LEASE_LOST) reports the loss."""
        sent = time.monotonic()
        try:
            await self._stub.Renew(
                leader_pb2.RenewRequest(election=self.election, candidate_id=self.candidate_id, token=token),
                timeout=max(0.001, deadline - sent),
            )
        except grpc.aio.AioRpcError as e:
            if is_lease_lost(e):
                await self._set(None)
            else:
                log.warning("renew failed: %s %s", e.code().name, e.details())
            return False
        self._renewed = sent
        return True

    async def _hold(self) -> None:
        backoff = 0.1
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
                    await asyncio.sleep(pushback_seconds(e) or backoff)
                    backoff = min(backoff * 2, self.ttl)
                    continue
                backoff = 0.1
                # Confirmed by a Renew whose send time is known: the term lasts a ttl from it.
                if response.is_leader and await self._renew(response.token, time.monotonic() + self.ttl * 2 / 3):
                    self._next_renew = self._renewed + self.ttl / 3
                    await self._set(response.token)
                continue
            # Leading: renew every ttl/3 (sooner after a failure), and report the loss once no
            # Renew sent within the last 2/3 ttl has succeeded, answered or not.
            step_down = self._renewed + self.ttl * 2 / 3
            await asyncio.sleep(max(0.0, min(self._next_renew, step_down) - time.monotonic()))
            token = self._token
            if token is None:
                continue
            if time.monotonic() >= step_down:
                log.warning("no renewal of %s succeeded within 2/3 ttl", self.election)
                await self._set(None)
                continue
            if await self._renew(token, step_down):
                self._next_renew = self._renewed + self.ttl / 3
            else:
                self._next_renew = time.monotonic() + self.ttl / 12

    _renewed: float = 0.0
    _next_renew: float = 0.0


async def _call(callback: Optional[Callback], token: int) -> None:
    if callback is None:
        return
    try:
        result = callback(token)
        if inspect.isawaitable(result):
            await result
    except Exception:  # noqa: BLE001 - a caller's callback must not stop the helper
        log.exception("leadership callback failed")

"""Claiming pooled resources (ClaimService): a claim with a long-poll wait, ended by Return or
Fail, and a scoped form that ends it by how its block ended.

    claimer = baton.Claimer("127.0.0.1:50051", pool="vms", claimer_id="ci-7", wait=30)
    async with claimer.claimed() as claim:      # Claim, or None when the wait ended
        if claim is not None:
            await run_build(claim.id, claim.attributes)
    # the block returned: Return(reuse=True); it raised: Fail(error=the exception) and the
    # exception goes on; it was cancelled: Return(reuse=True)

    pool = baton.Pool("127.0.0.1:50051", "vms")  # the pool manager's side
    await pool.offer(["vm-1", ("vm-2", {"zone": "a"})])

A full waiting line (RESOURCE_EXHAUSTED, reason LINE_FULL) raises :class:`LineFull`, carrying
the server's `grpc-retry-pushback-ms` hint as `retry_after`: the caller chooses to shed load or
to claim again later. Nothing is retried behind its back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import AsyncIterator, Dict, Iterable, Mapping, Optional, Tuple, Union

import grpc

from baton._rpc import ChannelLike, Helper, Seconds, duration, idempotent, is_lease_lost, pushback_seconds, seconds
from baton.v1 import claim_pb2, claim_pb2_grpc

log = logging.getLogger("baton.claim")

Resource = claim_pb2.Resource
PoolStatus = claim_pb2.PoolStatus


class LineFull(Exception):
    """The pool's waiting line is full (RESOURCE_EXHAUSTED, ErrorInfo reason LINE_FULL). Shed
    load, or claim again after `retry_after` seconds (Baton's `grpc-retry-pushback-ms` hint;
    None if it sent none). `reason` is the ErrorInfo reason, LINE_FULL."""

    reason = "LINE_FULL"

    def __init__(self, pool: str, retry_after: Optional[float], details: str = "") -> None:
        super().__init__(f"the waiting line of pool {pool} is full" + (f": {details}" if details else ""))
        self.pool = pool
        self.retry_after = retry_after


def describe_error(error: Union[str, BaseException]) -> str:
    """The text a Fail keeps for `error`: a string as it is, an exception as "Type: message"."""
    if isinstance(error, BaseException):
        text = str(error)
        return f"{type(error).__name__}: {text}" if text else type(error).__name__
    return str(error)


@dataclass
class Claim:
    """A claimed resource and the claim's fencing token. End it once, with :meth:`return_` or
    :meth:`fail` (or leave that to :meth:`Claimer.claimed`)."""

    pool: str
    resource: claim_pb2.Resource
    token: int
    claimed_at: Optional[datetime]
    _stub: claim_pb2_grpc.ClaimServiceStub = field(repr=False)
    _ended: bool = field(default=False, repr=False)

    @property
    def id(self) -> str:
        return self.resource.id

    @property
    def attributes(self) -> Dict[str, str]:
        """The resource's attributes as offered, merged with the claim's."""
        return dict(self.resource.attributes)

    @property
    def ended(self) -> bool:
        """Whether return_() or fail() was called (successfully or not)."""
        return self._ended

    async def return_(self, reuse: bool = True) -> None:
        """Ends the claim (Return). With `reuse` the resource is idle again at once (handed to the
        next claim in line); without, it leaves the pool until the pool manager offers it again.
        Raises grpc.aio.AioRpcError; a stale token is FAILED_PRECONDITION (:func:`is_lease_lost`):
        the claim had already ended (e.g. purged)."""
        self._ended = True
        await idempotent(self._stub.Return, claim_pb2.ReturnRequest(pool=self.pool, resource_id=self.id,
                                                                    token=self.token, reuse=reuse))

    async def fail(self, error: Union[str, BaseException]) -> None:
        """Ends the claim by dead-lettering the resource (Fail) with `error` (an exception is kept as
        "Type: message"; Baton clips a long one). Raises like :meth:`return_`."""
        self._ended = True
        await idempotent(self._stub.Fail, claim_pb2.FailRequest(pool=self.pool, resource_id=self.id, token=self.token,
                                                                error=describe_error(error)))


class Claimer(Helper):
    """Claims resources of one pool for one claimer id.

    `wait` is the default long-poll wait of a claim (seconds; 0 answers at once), `attributes`
    the default attributes attached to each claimed resource."""

    def __init__(
        self,
        target: ChannelLike,
        pool: str,
        claimer_id: str,
        *,
        wait: Seconds = 30.0,
        attributes: Optional[Mapping[str, str]] = None,
    ) -> None:
        self.pool = pool
        self.claimer_id = claimer_id
        self.wait = max(0.0, seconds(wait) or 0.0)
        self.attributes = dict(attributes or {})
        super().__init__(target)
        self._stub = claim_pb2_grpc.ClaimServiceStub(self._channel)

    async def claim(self, *, wait: Optional[Seconds] = None, attributes: Optional[Mapping[str, str]] = None) -> Optional[Claim]:
        """Claims the oldest idle resource, waiting in the pool's line up to `wait` seconds (default:
        the claimer's). Returns None when the wait ended with nothing for this claim. Raises
        :class:`LineFull` when the line is full, grpc.aio.AioRpcError on any other error.
        Cancelling the call leaves the line (a resource handed over in that instant goes back)."""
        w = self.wait if wait is None else max(0.0, seconds(wait) or 0.0)
        request = claim_pb2.ClaimRequest(pool=self.pool, claimer_id=self.claimer_id,
                                         attributes={**self.attributes, **(attributes or {})})
        if w > 0:
            request.wait.CopyFrom(duration(w))
        try:
            response = await self._stub.Claim(request, timeout=w + 10.0)
        except grpc.aio.AioRpcError as e:
            if e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                raise LineFull(self.pool, pushback_seconds(e), e.details() or "") from e
            raise
        if not response.HasField("resource"):
            return None
        claimed_at = (response.claimed_at.ToDatetime(tzinfo=timezone.utc)
                      if response.HasField("claimed_at") else None)
        return Claim(self.pool, response.resource, response.token, claimed_at, self._stub)

    @contextlib.asynccontextmanager
    async def claimed(self, *, wait: Optional[Seconds] = None,
                      attributes: Optional[Mapping[str, str]] = None) -> AsyncIterator[Optional[Claim]]:
        """Claims (as :meth:`claim`) for the block, which gets the Claim, or None when the wait
        ended. When the block ends, unless it ended the claim itself: returned normally →
        Return(reuse=True); raised an exception → Fail with it (then the exception goes on);
        cancelled (asyncio.CancelledError, KeyboardInterrupt …) → Return(reuse=True).

        Ending the claim is retried on UNAVAILABLE; a refused token (LEASE_LOST: the claim was
        already ended, e.g. by the purge) is logged. Any other error of the Return after a
        successful block is raised; after a failed block it is logged (the block's exception
        wins)."""
        claim = await self.claim(wait=wait, attributes=attributes)
        if claim is None:
            yield None
            return
        try:
            yield claim
        except Exception as exc:  # the block failed: dead-letter the resource
            if not claim.ended:
                await self._quietly(claim.fail(exc), claim, "fail")
            raise
        except BaseException:  # cancelled or interrupted: the resource is fine
            if not claim.ended:
                # Shielded: a second cancellation does not abandon the Return half-way.
                await asyncio.shield(self._quietly(claim.return_(reuse=True), claim, "return"))
            raise
        if not claim.ended:
            try:
                await claim.return_(reuse=True)
            except grpc.aio.AioRpcError as e:
                if not is_lease_lost(e):
                    raise
                log.warning("return of %s/%s token %d refused: the claim had already ended", self.pool, claim.id, claim.token)

    async def _quietly(self, ending, claim: Claim, what: str) -> None:
        try:
            await ending
        except grpc.aio.AioRpcError as e:
            log.warning("%s of %s/%s token %d failed: %s %s", what, self.pool, claim.id, claim.token,
                        e.code().name, e.details())


ResourceLike = Union[str, Tuple[str, Mapping[str, str]], claim_pb2.Resource]


class Pool(Helper):
    """The pool manager's side of a pool: offer resources, read the pool's counts."""

    def __init__(self, target: ChannelLike, pool: str) -> None:
        self.pool = pool
        super().__init__(target)
        self._stub = claim_pb2_grpc.ClaimServiceStub(self._channel)

    async def offer(self, resources: Iterable[ResourceLike]) -> claim_pb2.OfferResponse:
        """Makes resources idle, in order (or hands them to waiting claims). Each is an id, an
        (id, attributes) pair or a Resource. Already idle or claimed ones are left alone (counted
        in `duplicates`). Retried on UNAVAILABLE with one request id."""
        items = []
        for r in resources:
            if isinstance(r, claim_pb2.Resource):
                items.append(r)
            elif isinstance(r, str):
                items.append(claim_pb2.Resource(id=r))
            else:
                rid, attrs = r
                items.append(claim_pb2.Resource(id=rid, attributes=dict(attrs)))
        return await idempotent(self._stub.Offer, claim_pb2.OfferRequest(pool=self.pool, resources=items))

    async def status(self) -> claim_pb2.PoolStatus:
        """The pool's counts (idle, claimed, waiting_claims, dead_lettered …)."""
        return (await self._stub.GetPool(claim_pb2.GetPoolRequest(pool=self.pool), timeout=10.0)).status

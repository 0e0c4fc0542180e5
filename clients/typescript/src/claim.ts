// Claiming pooled resources (ClaimService): a claim with a long-poll wait, ended by Return or
// Fail, and a scoped form, withClaim, that ends it by how its callback ended.
//
// A full waiting line (RESOURCE_EXHAUSTED, reason LINE_FULL) rejects with LineFullError, carrying
// the server's grpc-retry-pushback-ms hint as retryAfterMs: the caller chooses to shed load or to
// claim again later. Nothing is retried behind its back.

import { status } from "@grpc/grpc-js";
import { Client, stubFor } from "./client";
import {
  ClaimRequest,
  ClaimResponse,
  ClaimServiceClient,
  FailRequest,
  FailResponse,
  OfferRequest,
  OfferResponse,
  PoolStatus,
  Resource,
  ReturnRequest,
  ReturnResponse,
} from "./gen/baton/v1/claim";
import { describe, duration, idempotent, isServiceError, isLeaseLost, pushbackMs, unary } from "./rpc";
import { Logger } from "./worker";

/**
 * The pool's waiting line is full (RESOURCE_EXHAUSTED, ErrorInfo reason LINE_FULL). Shed load, or
 * claim again after `retryAfterMs` (Baton's grpc-retry-pushback-ms hint; undefined if none).
 */
export class LineFullError extends Error {
  /** The ErrorInfo reason of the refusal. */
  readonly reason = "LINE_FULL";
  constructor(readonly pool: string, readonly retryAfterMs: number | undefined, options?: { cause?: unknown }) {
    super(`the waiting line of pool ${pool} is full`, options);
    this.name = "LineFullError";
  }
}

/** The text a Fail keeps for `error`: a string as it is, an Error as "Name: message" (Baton
 *  clips it to its limit, limits.max_message_bytes). */
export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message ? `${error.name}: ${error.message}` : error.name;
  return String(error);
}

/** A claimed resource and the claim's fencing token. End it once, with return() or fail(). */
export class Claim {
  private done = false;

  constructor(
    private readonly client: ClaimServiceClient,
    readonly pool: string,
    readonly resource: Resource,
    readonly token: bigint,
    readonly claimedAt: Date | undefined,
  ) {}

  get id(): string {
    return this.resource.id;
  }

  /** The resource's attributes as offered, merged with the claim's. */
  get attributes(): Record<string, string> {
    return this.resource.attributes;
  }

  /** Whether return() or fail() was called (successfully or not). */
  get ended(): boolean {
    return this.done;
  }

  /**
   * Ends the claim (Return). With `reuse` (default) the resource is idle again at once (handed to
   * the next claim in line); without, it leaves the pool until the pool manager offers it again.
   * Rejects with the gRPC error; a stale token is FAILED_PRECONDITION (isLeaseLost): the claim
   * had already ended (e.g. purged).
   */
  async return(reuse = true): Promise<void> {
    this.done = true;
    await idempotent<ReturnRequest, ReturnResponse>(this.client.return.bind(this.client),
      { requestId: "", pool: this.pool, resourceId: this.id, token: this.token, reuse }, { timeoutMs: 10_000 });
  }

  /** Ends the claim by dead-lettering the resource (Fail) with `error` (see describeError). */
  async fail(error: unknown): Promise<void> {
    this.done = true;
    await idempotent<FailRequest, FailResponse>(this.client.fail.bind(this.client),
      { requestId: "", pool: this.pool, resourceId: this.id, token: this.token, error: describeError(error) }, { timeoutMs: 10_000 });
  }
}

export interface ClaimerOptions {
  /** Default long-poll wait of a claim (default 30 000 ms; 0 answers at once). */
  waitMs?: number;
  /** Default attributes attached to each claimed resource. */
  attributes?: Record<string, string>;
  logger?: Logger;
}

export interface ClaimOptions {
  /** This claim's long-poll wait (default: the claimer's). */
  waitMs?: number;
  /** Attributes for this claim, over the claimer's. */
  attributes?: Record<string, string>;
  /** Cancels the claim (leaving the pool's line) and, in withClaim, tells the callback to stop. */
  signal?: AbortSignal;
}

/** Claims resources of one pool for one claimer id. */
export class Claimer {
  readonly client: ClaimServiceClient;
  private readonly owned: boolean;
  private readonly waitMs: number;
  private readonly attributes: Record<string, string>;
  private readonly logger: Logger;

  /**
   * @param target a Client (its channel, token and TLS; left open), "host:port" (a plaintext
   *   channel of its own, closed by close()) or a generated ClaimServiceClient (left open).
   */
  constructor(target: Client | string | ClaimServiceClient, readonly pool: string, readonly claimerId: string, options: ClaimerOptions = {}) {
    ({ stub: this.client, owned: this.owned } = stubFor(target, ClaimServiceClient, (c) => c.claims));
    this.waitMs = Math.max(0, options.waitMs ?? 30_000);
    this.attributes = { ...(options.attributes ?? {}) };
    this.logger = options.logger ?? { warn: (m) => console.warn(`baton claimer ${this.claimerId}: ${m}`) };
  }

  /**
   * Claims the oldest idle resource, waiting in the pool's line up to the wait. Resolves with
   * undefined when the wait ended with nothing for this claim. Rejects with LineFullError when the
   * line is full, with the gRPC error otherwise (CANCELLED when `signal` aborted: the claim left
   * the line, and a resource handed over in that instant went back).
   */
  async claim(options: ClaimOptions = {}): Promise<Claim | undefined> {
    const waitMs = Math.max(0, options.waitMs ?? this.waitMs);
    let response: ClaimResponse;
    try {
      response = await idempotent<ClaimRequest, ClaimResponse>(this.client.claim.bind(this.client), {
        requestId: "",
        hold: undefined,
        pool: this.pool,
        claimerId: this.claimerId,
        attributes: { ...this.attributes, ...(options.attributes ?? {}) },
        wait: waitMs > 0 ? duration(waitMs) : undefined,
      }, { timeoutMs: waitMs + 10_000, signal: options.signal });
    } catch (err) {
      if (isServiceError(err) && err.code === status.RESOURCE_EXHAUSTED) {
        throw new LineFullError(this.pool, pushbackMs(err), { cause: err });
      }
      throw err;
    }
    if (!response.resource) return undefined;
    return new Claim(this.client, this.pool, response.resource, response.token, response.claimedAt);
  }

  /**
   * Claims (as claim()) and runs `fn(claim, signal)`; resolves with its result, or with
   * undefined (fn not called) when the wait ended. When fn settles, unless it ended the claim
   * itself: resolved → Return(reuse=true); rejected while `options.signal` is aborted
   * (cancellation) → Return(reuse=true); rejected otherwise → Fail with the error, then the
   * rejection goes on.
   *
   * Ending the claim is retried on UNAVAILABLE; a refused token (LEASE_LOST: the claim had already
   * ended, e.g. purged) is logged. Any other error of the Return after fn resolved is thrown;
   * after fn rejected it is logged (fn's error wins).
   */
  async withClaim<T>(fn: (claim: Claim, signal: AbortSignal) => Promise<T>, options: ClaimOptions = {}): Promise<T | undefined> {
    const claim = await this.claim(options);
    if (!claim) return undefined;
    const signal = options.signal ?? new AbortController().signal;
    let value: T;
    try {
      value = await fn(claim, signal);
    } catch (err) {
      if (!claim.ended) {
        const ending = signal.aborted ? claim.return(true) : claim.fail(err);
        await ending.catch((e) => this.logger.warn(`${signal.aborted ? "return" : "fail"} of ${this.pool}/${claim.id} token ${claim.token} failed: ${describe(e)}`));
      }
      throw err;
    }
    if (!claim.ended) {
      try {
        await claim.return(true);
      } catch (err) {
        if (!isLeaseLost(err)) throw err;
        this.logger.warn(`return of ${this.pool}/${claim.id} token ${claim.token} refused: the claim had already ended`);
      }
    }
    return value;
  }

  close(): void {
    if (this.owned) this.client.close();
  }
}

/** A resource to offer: an id, an [id, attributes] pair or a Resource. */
export type ResourceLike = string | [string, Record<string, string>] | Resource;

/** The pool manager's side of a pool: offer resources, read the pool's counts. */
export class Pool {
  readonly client: ClaimServiceClient;
  private readonly owned: boolean;

  /** @param target as Claimer's. */
  constructor(target: Client | string | ClaimServiceClient, readonly pool: string) {
    ({ stub: this.client, owned: this.owned } = stubFor(target, ClaimServiceClient, (c) => c.claims));
  }

  /**
   * Makes resources idle, in order (or hands them to waiting claims). Already idle or claimed ones
   * are left alone (counted in `duplicates`); safe to retry.
   */
  offer(resources: ResourceLike[]): Promise<OfferResponse> {
    return offer(this.client, this.pool, resources);
  }

  /** The pool's counts (idle, claimed, waitingClaims, deadLettered …; bigint). */
  async status(): Promise<PoolStatus> {
    const response = await unary(this.client.getPool.bind(this.client), { pool: this.pool }, { timeoutMs: 10_000 });
    return response.status!;
  }

  close(): void {
    if (this.owned) this.client.close();
  }
}

/** Offer (see Pool.offer), retried with one request id (see idempotent). */
export function offer(client: ClaimServiceClient, pool: string, resources: ResourceLike[], requestId = ""): Promise<OfferResponse> {
  const items: Resource[] = resources.map((r) =>
    typeof r === "string" ? { id: r, attributes: {} } : Array.isArray(r) ? { id: r[0], attributes: { ...r[1] } } : r);
  return idempotent<OfferRequest, OfferResponse>(client.offer.bind(client), { requestId, pool, resources: items }, { timeoutMs: 10_000 });
}

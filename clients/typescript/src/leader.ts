// A leadership helper over LeaderService: campaign (waiting for a vacancy), renew every ttl/3,
// tell the caller when leadership is gained and lost, resign on close.
//
// The rule of every Baton client language: each Renew has a deadline, and leadership is
// considered lost as soon as a Renew is refused (LEASE_LOST), or once no Renew *sent* within the
// last 2/3 of the ttl has succeeded — on a timer, so a connection that never answers cannot keep
// the caller believing it leads after its term could have expired and another candidate been
// elected. A won Campaign is confirmed by a Renew at once, and reported only then. After a loss
// the helper campaigns again.

import { EventEmitter, once } from "node:events";
import { Client, stubFor } from "./client";
import { CampaignRequest, CampaignResponse, LeaderServiceClient } from "./gen/baton/v1/leader";
import { duration, isLeaseLost, pushbackMs, sleep, unary } from "./rpc";

export interface LeadershipOptions {
  /** Term length without a Renew (default 10 000 ms). */
  ttlMs?: number;
  /** Long-poll wait of each Campaign while another candidate leads (default 30 000 ms). */
  campaignWaitMs?: number;
}

export interface LeadershipEvents {
  elected: [token: bigint];
  lost: [token: bigint];
}

/**
 * Emits `elected(token)` when this candidate starts leading (pass the token to whatever it
 * writes) and `lost(token)` when it must stop, including on close().
 */
export class Leadership extends EventEmitter<LeadershipEvents> {
  readonly client: LeaderServiceClient;
  private readonly ttlMs: number;
  private readonly campaignWaitMs: number;
  private current: bigint | undefined;
  private readonly closing = new AbortController();
  private loop: Promise<void> | undefined;
  private lastRenewSent = 0;
  private readonly owned: boolean;

  /**
   * @param target a Client (its channel, token and TLS; left open), "host:port" (a plaintext
   *   channel of its own, closed by close()) or a generated LeaderServiceClient (left open).
   */
  constructor(target: Client | string | LeaderServiceClient, readonly election: string, readonly candidateId: string, options: LeadershipOptions = {}) {
    super();
    ({ stub: this.client, owned: this.owned } = stubFor(target, LeaderServiceClient, (c) => c.leaders));
    this.ttlMs = options.ttlMs ?? 10_000;
    this.campaignWaitMs = options.campaignWaitMs ?? 30_000;
  }

  /** The fencing token of the term this candidate holds, or undefined. */
  get token(): bigint | undefined {
    return this.current;
  }

  get isLeader(): boolean {
    return this.current !== undefined;
  }

  start(): this {
    this.loop ??= this.hold();
    return this;
  }

  /** Resolves with the token once this candidate leads. */
  async waitElected(timeoutMs?: number): Promise<bigint> {
    if (this.current !== undefined) return this.current;
    const signal = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs);
    const [token] = await once(this, "elected", { signal });
    return token as bigint;
  }

  /** Stops campaigning and renewing, and resigns if leading (emitting `lost`). */
  async close(): Promise<void> {
    this.closing.abort();
    await this.loop;
    const token = this.current;
    if (token !== undefined) {
      try {
        await unary(this.client.resign.bind(this.client), { election: this.election, candidateId: this.candidateId, token }, { timeoutMs: 5_000 });
      } catch (err) {
        console.warn(`baton leadership ${this.election}: resign failed (the term will expire): ${String(err)}`);
      }
      this.set(undefined);
    }
    if (this.owned) this.client.close();
  }

  private set(token: bigint | undefined): void {
    const old = this.current;
    this.current = token;
    if (token !== undefined && token !== old) this.emit("elected", token);
    else if (token === undefined && old !== undefined) this.emit("lost", old);
  }

  /** One Renew bounded by `deadline` (ms since the epoch); true if it succeeded. A refused term reports the loss. */
  private async renew(token: bigint, deadline: number): Promise<boolean> {
    const sent = Date.now();
    try {
      await unary(this.client.renew.bind(this.client), { election: this.election, candidateId: this.candidateId, token },
        { timeoutMs: Math.max(1, deadline - sent) });
    } catch (err) {
      if (isLeaseLost(err)) this.set(undefined);
      return false;
    }
    this.lastRenewSent = sent;
    return true;
  }

  private async hold(): Promise<void> {
    const { signal } = this.closing;
    let backoff = 100;
    let nextRenew = 0;
    while (!signal.aborted) {
      if (this.current === undefined) {
        let response: CampaignResponse;
        try {
          response = await unary<CampaignRequest, CampaignResponse>(this.client.campaign.bind(this.client), {
            election: this.election,
            candidateId: this.candidateId,
            ttl: duration(this.ttlMs),
            wait: duration(this.campaignWaitMs),
          }, { timeoutMs: this.campaignWaitMs + 10_000, signal });
        } catch (err) {
          if (signal.aborted) return;
          await sleep(pushbackMs(err) ?? backoff, signal);
          backoff = Math.min(backoff * 2, this.ttlMs);
          continue;
        }
        backoff = 100;
        if (!response.isLeader) continue;
        if (signal.aborted) {
          this.current = response.token; // close() resigns it
          return;
        }
        // Confirmed by a Renew whose send time is known: the term lasts a ttl from it.
        if (await this.renew(response.token, Date.now() + (this.ttlMs * 2) / 3)) {
          nextRenew = this.lastRenewSent + this.ttlMs / 3;
          if (signal.aborted) this.current = response.token;
          else this.set(response.token);
        }
        continue;
      }
      // Leading: renew every ttl/3 (sooner after a failure), and report the loss once no Renew
      // sent within the last 2/3 ttl has succeeded, answered or not.
      const stepDown = this.lastRenewSent + (this.ttlMs * 2) / 3;
      await sleep(Math.max(0, Math.min(nextRenew, stepDown) - Date.now()), signal);
      const token = this.current;
      if (signal.aborted || token === undefined) return;
      if (Date.now() >= stepDown) {
        this.set(undefined);
        continue;
      }
      const renewing = this.renew(token, stepDown);
      // The step-down moment does not wait for an unanswered Renew.
      const answered = await Promise.race([renewing, sleep(Math.max(0, stepDown - Date.now()), signal).then(() => undefined)]);
      if (answered === undefined) {
        if (signal.aborted) return;
        if (this.current !== undefined && Date.now() >= this.lastRenewSent + (this.ttlMs * 2) / 3) this.set(undefined);
        continue;
      }
      nextRenew = answered ? this.lastRenewSent + this.ttlMs / 3 : Date.now() + this.ttlMs / 12;
    }
  }
}

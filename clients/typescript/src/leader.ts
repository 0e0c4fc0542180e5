// A leadership helper over LeaderService: campaign (waiting for a vacancy), renew every ttl/3,
// tell the caller when leadership is gained and lost, resign on close.
//
// Leadership is considered lost as soon as a Renew is refused (LEASE_LOST), or when no Renew
// succeeded for 2/3 of the ttl counted from when it was sent (Baton unreachable), which is before
// the server can give the term to someone else. After a loss the helper campaigns again.

import { EventEmitter, once } from "node:events";
import { credentials } from "@grpc/grpc-js";
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

  constructor(target: string | LeaderServiceClient, readonly election: string, readonly candidateId: string, options: LeadershipOptions = {}) {
    super();
    this.owned = typeof target === "string";
    this.client = typeof target === "string" ? new LeaderServiceClient(target, credentials.createInsecure()) : target;
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

  private async hold(): Promise<void> {
    const { signal } = this.closing;
    let backoff = 100;
    while (!signal.aborted) {
      if (this.current === undefined) {
        let response: CampaignResponse;
        const sent = Date.now();
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
        if (response.isLeader && !signal.aborted) {
          this.lastRenewSent = sent;
          this.set(response.token);
        } else if (response.isLeader && signal.aborted) {
          this.current = response.token; // close() resigns it
        }
        continue;
      }
      await sleep(this.ttlMs / 3, signal);
      const token = this.current;
      if (signal.aborted || token === undefined) return;
      const sent = Date.now();
      try {
        await unary(this.client.renew.bind(this.client), { election: this.election, candidateId: this.candidateId, token },
          { timeoutMs: Math.max(this.ttlMs / 3, 1_000) });
        this.lastRenewSent = sent;
      } catch (err) {
        if (isLeaseLost(err)) {
          this.set(undefined);
        } else if (Date.now() - this.lastRenewSent >= (this.ttlMs * 2) / 3) {
          // The next period would end past the ttl: step down while the term still covers us.
          this.set(undefined);
        }
      }
    }
  }
}

// A leadership helper over LeaderService: campaign (waiting for a vacancy), renew, tell the
// caller when leadership is gained and lost, resign on close.
//
// The timing is Baton's (RenewResponse.renew_in and step_down_in, measured from when this
// process sent the Renew they answer): renew at sent + renew_in; report the loss as soon as a
// Renew is refused (LEASE_LOST), or once no Renew sent before the step-down moment has
// succeeded by then — on a timer, so a connection that never answers cannot keep the caller
// believing it leads after its term could have expired. Each Renew's deadline is that moment. A
// won Campaign is confirmed by a Renew at once, and reported only then. After a loss the helper
// campaigns again.

import { EventEmitter, once } from "node:events";
import { Client, LONG_POLL_MARGIN_MS, stubFor } from "./client";
import { CampaignRequest, CampaignResponse, LeaderServiceClient } from "./gen/baton/v1/leader";
import { backoffMs, duration, isLeaseLost, millis, sleep, unary } from "./rpc";

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

  /**
   * One Renew bounded by `deadline` (ms since the epoch). Succeeded: the leadership rule Baton
   * answered (renewIn, stepDownIn), from this Renew's send time. A refused term reports the loss.
   */
  private async renew(token: bigint, deadline: number): Promise<{ nextRenew: number; stepDown: number } | undefined> {
    const sent = Date.now();
    try {
      const r = await unary(this.client.renew.bind(this.client), { election: this.election, candidateId: this.candidateId, token },
        { timeoutMs: Math.max(1, deadline - sent) });
      return { nextRenew: sent + millis(r.renewIn), stepDown: sent + millis(r.stepDownIn) };
    } catch (err) {
      if (isLeaseLost(err)) this.set(undefined);
      return undefined;
    }
  }

  private async hold(): Promise<void> {
    const { signal } = this.closing;
    let attempt = 0;
    // The rule of the last Renew that succeeded: when to send the next, when to step down.
    let rule = { nextRenew: 0, stepDown: 0 };
    while (!signal.aborted) {
      if (this.current === undefined) {
        let response: CampaignResponse;
        try {
          response = await unary<CampaignRequest, CampaignResponse>(this.client.campaign.bind(this.client), {
            election: this.election,
            candidateId: this.candidateId,
            ttl: duration(this.ttlMs),
            wait: duration(this.campaignWaitMs),
          }, { timeoutMs: this.campaignWaitMs + LONG_POLL_MARGIN_MS, signal });
        } catch (err) {
          if (signal.aborted) return;
          await sleep(backoffMs(attempt++, err), signal);
          continue;
        }
        attempt = 0;
        if (!response.isLeader) continue;
        if (signal.aborted) {
          this.current = response.token; // close() resigns it
          return;
        }
        // A won term is confirmed by a Renew whose send time is known (the Campaign may have
        // waited): its answer starts the rule; until then, the Campaign's step-down bounds it.
        const confirmed = await this.renew(response.token, Date.now() + millis(response.stepDownIn));
        if (confirmed) {
          rule = confirmed;
          if (signal.aborted) this.current = response.token;
          else this.set(response.token);
        }
        continue;
      }
      // Leading: renew when the rule says (sooner, with backoff, after a failed Renew); step
      // down once no Renew sent before the step-down moment has succeeded by then, answered or not.
      await sleep(Math.max(0, Math.min(rule.nextRenew, rule.stepDown) - Date.now()), signal);
      const token = this.current;
      if (signal.aborted || token === undefined) return;
      if (Date.now() >= rule.stepDown) {
        this.set(undefined);
        continue;
      }
      const stepDown = rule.stepDown;
      const answered = await Promise.race([
        this.renew(token, stepDown),
        sleep(Math.max(0, stepDown - Date.now()), signal).then(() => "step down" as const),
      ]);
      if (answered === "step down") {
        if (signal.aborted) return;
        if (this.current !== undefined && rule.stepDown <= Date.now()) this.set(undefined);
      } else if (answered) {
        rule = answered;
        attempt = 0;
      } else {
        rule.nextRenew = Date.now() + backoffMs(attempt++);
      }
    }
  }
}

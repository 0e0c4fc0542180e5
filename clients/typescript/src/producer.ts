// The producer's side of Baton without generated request types: register one-shot and
// recurring agents, schedule messages, offer pooled resources. Every call carries a request id
// and is sent again with it after UNAVAILABLE or DEADLINE_EXCEEDED (see idempotent), so a retry
// after an unknown outcome is not applied twice.

import { Client, connect } from "./client";
import { Agent, DeepPartial, RegisterRequest, RegisterResponse } from "./gen/baton/v1/agent";
import { OfferResponse } from "./gen/baton/v1/claim";
import { ScheduleResponse } from "./gen/baton/v1/schedule";
import { offer, ResourceLike } from "./claim";
import { idempotent } from "./rpc";
import { schedule, ScheduleOptions } from "./schedule";

/**
 * An agent to register: `name` and any other fields of the generated `Agent`, all optional
 * (`interval: duration(60_000)` or `cron` makes it recurring; neither, a one-shot agent due at
 * once). A string payload is sent as UTF-8.
 */
export type AgentSpec = Omit<DeepPartial<Agent>, "name" | "payload"> & { name: string; payload?: Uint8Array | string };

export interface RegisterOptions {
  /** Reschedule agents that already exist from now (default: keep their next run time). */
  resetSchedule?: boolean;
  /** The call's request id (default: a random one, the same for its retries). */
  requestId?: string;
  signal?: AbortSignal;
}

export class Producer {
  readonly client: Client;
  private readonly owned: boolean;

  /** @param target a Client (left open) or "host:port" (a plaintext Client of its own, closed by close()). */
  constructor(target: Client | string) {
    this.owned = typeof target === "string";
    this.client = typeof target === "string" ? connect(target) : target;
  }

  /** Registers (creates or replaces) agents of one queue, at most the server's max_batch per call. */
  register(queue: string, agents: AgentSpec[], options: RegisterOptions = {}): Promise<RegisterResponse> {
    const request: RegisterRequest = {
      requestId: options.requestId ?? "",
      queue,
      resetSchedule: options.resetSchedule ?? false,
      agents: agents.map(({ payload, ...spec }) => Agent.fromPartial({
        ...spec,
        payload: typeof payload === "string" ? Buffer.from(payload, "utf8") : payload === undefined ? undefined : Buffer.from(payload),
      })),
    };
    const agentsClient = this.client.agents;
    return idempotent(agentsClient.register.bind(agentsClient), request, { signal: options.signal });
  }

  /** Schedules a message for `receiver` (see Scheduler.schedule). */
  schedule(receiver: string, payload: Uint8Array | string, options: ScheduleOptions = {}): Promise<ScheduleResponse> {
    return schedule(this.client.schedules, receiver, payload, options);
  }

  /** Makes resources of `pool` idle (see Pool.offer). */
  offer(pool: string, resources: ResourceLike[], requestId?: string): Promise<OfferResponse> {
    return offer(this.client.claims, pool, resources, requestId);
  }

  close(): void {
    if (this.owned) this.client.close();
  }
}

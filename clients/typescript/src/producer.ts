// The producer's side of Baton without generated request types: register one-shot and
// recurring agents (with parents, `after`, and idempotency keys), wait for an agent's result,
// batches with callbacks, schedule messages, offer pooled resources. Every call that changes
// something carries a request id and is sent again with it after UNAVAILABLE or
// DEADLINE_EXCEEDED (see idempotent), so a retry after an unknown outcome is not applied twice.
// Waiting is Baton's: Await holds each call until the agent finishes (woken by the finish).

import { status } from "@grpc/grpc-js";
import { Client, connect } from "./client";
import {
  Agent,
  AgentResult,
  BatchStatus,
  DeepPartial,
  RegisterBatchResponse,
  RegisterRequest,
  RegisterResponse,
  SignalResponse,
  WatchAgentResponse,
  WatchUpdate,
} from "./gen/baton/v1/agent";
import { OfferResponse } from "./gen/baton/v1/claim";
import { ScheduleResponse } from "./gen/baton/v1/schedule";
import { offer, ResourceLike } from "./claim";
import { backoffMs, duration, idempotent, isServiceError, sleep, unary } from "./rpc";
import { schedule, ScheduleOptions } from "./schedule";

/**
 * An agent to register: `name` and any other fields of the generated `Agent`, all optional
 * (`interval: duration(60_000)` or `cron` makes it recurring; neither, a one-shot agent due at
 * once). A string payload is sent as UTF-8. `after: [{ name: "extract" }, { queue: "raw", name:
 * "fetch", onFailure: ParentFailure.PARENT_FAILURE_CANCEL }]` names its parents (it runs once
 * they all succeeded; its lease carries their results in `parents`); `idempotencyKey` (and
 * `idempotencyWindow`) registers a one-shot agent once per key. `idempotencyMode:
 * IdempotencyMode.IDEMPOTENCY_MODE_REPLACE` makes a later registration replace a waiting holder
 * instead (`replaced` in the answer); `IDEMPOTENCY_MODE_DEBOUNCE` with `debounce:
 * duration(ms)` makes one run, `debounce` after the latest registration (`debounced`).
 */
export type AgentSpec = Omit<DeepPartial<Agent>, "name" | "payload"> & { name: string; payload?: Uint8Array | string };

export interface RegisterOptions {
  /** Reschedule agents that already exist from now (default: keep their next run time). */
  resetSchedule?: boolean;
  /** The call's request id (default: a random one, the same for its retries). */
  requestId?: string;
  signal?: AbortSignal;
}

export interface AwaitOptions {
  /** How long to wait in all (default: no limit); then the answer is undefined. */
  timeoutMs?: number;
  /** Skip finishes of a recurring agent's runs up to this lease token. */
  afterToken?: bigint;
  signal?: AbortSignal;
}

export interface RegisterAndAwaitOptions {
  /** How long to wait in all, the Register included (default: no limit). */
  timeoutMs?: number;
  /** The Register's request id (default: a random one, the same for its retries). */
  requestId?: string;
  signal?: AbortSignal;
}

export interface BatchOptions {
  /** Queue of the callbacks (default: the members' queue). First call only. */
  callbackQueue?: string;
  /** Run once when every member succeeded. First call only. */
  onSuccess?: AgentSpec[];
  /** Run once when every member finished, however. First call only. */
  onComplete?: AgentSpec[];
  /** Close the batch after adding these members. */
  close?: boolean;
}

/** The most one Await call is held before it is made again (as a leadership campaign's wait):
 *  Baton refuses waits beyond its `limits.max_wait_ms`. */
export const AWAIT_WAIT_MS = 30_000;

const toAgent = ({ payload, ...spec }: AgentSpec): Agent => Agent.fromPartial({
  ...spec,
  payload: typeof payload === "string" ? Buffer.from(payload, "utf8") : payload === undefined ? undefined : Buffer.from(payload),
});

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
      agents: agents.map(toAgent),
    };
    const agentsClient = this.client.agents;
    return idempotent(agentsClient.register.bind(agentsClient), request, { signal: options.signal });
  }

  /**
   * Request/reply over the fleet: registers one one-shot agent, then waits for its finish
   * (awaitResult). A deduplicated registration waits for the key's holder, or answers its kept
   * result at once. Undefined when `timeoutMs` passed first (the agent stays registered).
   */
  async registerAndAwait(queue: string, agent: AgentSpec, options: RegisterAndAwaitOptions = {}): Promise<AgentResult | undefined> {
    const started = Date.now();
    const answer = await this.register(queue, [agent], { requestId: options.requestId, signal: options.signal });
    const registered = answer.agents[0];
    if (registered.result) return registered.result;
    const timeoutMs = options.timeoutMs === undefined ? undefined : Math.max(0, options.timeoutMs - (Date.now() - started));
    return this.awaitResult(queue, registered.name, { timeoutMs, signal: options.signal });
  }

  /**
   * Waits for the agent's finish (succeeded, dead-lettered, cancelled or unregistered) and
   * resolves with it, with the result its worker returned; a finish Baton still keeps answers
   * at once. Each Await call is held at most AWAIT_WAIT_MS and made again until the finish, or
   * `timeoutMs` (then undefined). Rejects with the gRPC error (NOT_FOUND: no such agent and no
   * finish kept); UNAVAILABLE is retried after backoffMs.
   */
  async awaitResult(queue: string, name: string, options: AwaitOptions = {}): Promise<AgentResult | undefined> {
    const deadline = options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs;
    const agents = this.client.agents;
    for (let attempt = 0; ;) {
      const waitMs = deadline === undefined ? AWAIT_WAIT_MS : Math.min(AWAIT_WAIT_MS, Math.max(0, deadline - Date.now()));
      let answer;
      try {
        answer = await unary(agents.await.bind(agents), { queue, name, afterToken: options.afterToken ?? 0n, wait: duration(waitMs) },
          { signal: options.signal });
      } catch (err) {
        if (!isServiceError(err) || err.code !== status.UNAVAILABLE || options.signal?.aborted) throw err;
        await sleep(backoffMs(attempt++, err), options.signal);
        continue;
      }
      attempt = 0;
      if (answer.done) return answer.result;
      if (deadline !== undefined && Date.now() >= deadline) return undefined;
    }
  }

  /**
   * Adds `agents` of `queue` to `batch`, creating it on its first call with its callbacks:
   * onSuccess run once when every member succeeded, onComplete once when every member finished;
   * their leases carry the batch's finish. Resolves with the batch's status after the call.
   */
  registerBatch(batch: string, queue: string, agents: AgentSpec[], options: BatchOptions = {}): Promise<RegisterBatchResponse> {
    const agentsClient = this.client.agents;
    return unary(agentsClient.registerBatch.bind(agentsClient), {
      batch,
      queue,
      agents: agents.map(toAgent),
      callbackQueue: options.callbackQueue ?? "",
      onSuccess: (options.onSuccess ?? []).map(toAgent),
      onComplete: (options.onComplete ?? []).map(toAgent),
      close: options.close ?? false,
    });
  }

  /** Closes `batch`: no member may be added; it is done once its members finished. */
  async closeBatch(batch: string): Promise<BatchStatus> {
    const agentsClient = this.client.agents;
    return (await unary(agentsClient.closeBatch.bind(agentsClient), { batch })).status!;
  }

  /** The batch's members counted by how they finished, whether it is closed and done, its callbacks. */
  async getBatch(batch: string): Promise<BatchStatus> {
    const agentsClient = this.client.agents;
    return (await unary(agentsClient.getBatch.bind(agentsClient), { batch })).status!;
  }

  /**
   * Sends `event` (with `payload`) to the agent: a run waiting for it is woken (`delivered`), else
   * it is kept for the agent's next wait (`kept`). The request id (default: a random one, the same
   * for its retries) makes a retry after an unknown outcome answer `duplicate` instead of sending
   * it twice. NOT_FOUND: no such agent.
   */
  signal(queue: string, name: string, event: string, payload: Uint8Array | string = "", requestId = ""): Promise<SignalResponse> {
    const agents = this.client.agents;
    const bytes = typeof payload === "string" ? Buffer.from(payload, "utf8") : Buffer.from(payload);
    return idempotent(agents.signal.bind(agents), { queue, name, event, payload: bytes, requestId });
  }

  /**
   * The agent's progress as it happens (AgentService.WatchAgent): a snapshot, then each update
   * (lease granted, progress, step), last the FINISHED update with its `finish`; then it ends. Each
   * stream is held at most AWAIT_WAIT_MS and opened again; it ends without a finish once
   * `timeoutMs` passed. Rejects with the gRPC error (NOT_FOUND: no such agent and no finish kept).
   */
  async *watch(queue: string, name: string, options: AwaitOptions = {}): AsyncGenerator<WatchAgentResponse> {
    const deadline = options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs;
    const agents = this.client.agents;
    for (;;) {
      const waitMs = deadline === undefined ? AWAIT_WAIT_MS : Math.min(AWAIT_WAIT_MS, Math.max(0, deadline - Date.now()));
      const call = agents.watchAgent({ queue, name, afterToken: options.afterToken ?? 0n, wait: duration(waitMs) },
        { deadline: Date.now() + waitMs + 5_000 });
      const cancel = () => call.cancel();
      options.signal?.addEventListener("abort", cancel, { once: true });
      try {
        for await (const update of call as AsyncIterable<WatchAgentResponse>) {
          yield update;
          if (update.update === WatchUpdate.WATCH_UPDATE_FINISHED) return;
        }
      } finally {
        options.signal?.removeEventListener("abort", cancel);
        call.cancel();
      }
      if (deadline !== undefined && Date.now() >= deadline) return;
    }
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

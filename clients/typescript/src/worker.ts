// A worker loop over the generated client, modelled on Baton's Rust `baton::worker::Worker`:
// long-poll Acquire → run the handler → Heartbeat while it runs → Complete with the outcome the
// handler's result maps to (see classify). A lease reported lost aborts its handler's signal
// (its result would be refused anyway); on shutdown the loop stops acquiring, aborts running
// handlers and Releases their leases, so another worker takes them at once.

import { status } from "@grpc/grpc-js";
import { Client, stubFor } from "./client";
import {
  AcquireResponse,
  AgentServiceClient,
  CompleteRequest,
  CompleteResponse,
  HeartbeatResponse,
  Lease,
  Outcome,
  ReleaseRequest,
  ReleaseResponse,
} from "./gen/baton/v1/agent";
import { classify, Failure, truncateUtf8 } from "./failure";
import { duration, isServiceError, pushbackMs, sleep, unary } from "./rpc";

/** Runs one lease. Resolving completes with SUCCESS; throwing completes with a failure outcome. */
export type Handler = (lease: Lease, signal: AbortSignal) => Promise<void>;

/** The reason of a handler's aborted signal when Baton reported its lease lost. */
export class LeaseLostError extends Error {
  constructor(readonly lease: Lease) {
    super(`lease lost: ${lease.queue}/${lease.name} token ${lease.token}`);
    this.name = "LeaseLostError";
  }
}

/** The reason of a handler's aborted signal when the worker is stopping. */
export class ShutdownError extends Error {
  constructor() {
    super("worker stopping");
    this.name = "ShutdownError";
  }
}

export interface Logger {
  warn(message: string): void;
}

export interface WorkerOptions {
  /** Leases asked for per Acquire, and the most handlers running at once (default 1). */
  maxLeases?: number;
  /** Long-poll wait of each Acquire (default 30 000 ms). */
  waitMs?: number;
  /** How often held leases are extended (default 10 000 ms); well under the agents' timeout.
   *  Also keeps the worker alive for Baton's orphan sweeper while it holds nothing. */
  heartbeatMs?: number;
  /** Delay before a lease released on shutdown is due again (default: at once). */
  releaseDelayMs?: number;
  /** How long stop() waits for aborted handlers to settle before releasing (default 10 000 ms). */
  shutdownGraceMs?: number;
  logger?: Logger;
}

interface Run {
  lease: Lease;
  abort: AbortController;
  done?: Promise<void>;
}

const key = (lease: { name: string; token: bigint }) => `${lease.name}\u0000${lease.token}`;

export class Worker {
  readonly client: AgentServiceClient;
  private readonly options: Required<Omit<WorkerOptions, "releaseDelayMs">> & { releaseDelayMs?: number };
  private readonly held = new Map<string, Run>();
  private readonly stopping = new AbortController();
  private freed: (() => void) | undefined;
  private running = 0;
  private readonly owned: boolean;

  /**
   * @param target a Client (its channel, token and TLS; left open), "host:port" (a plaintext
   *   channel of its own, closed when run() ends) or a generated AgentServiceClient (left open).
   */
  constructor(
    target: Client | string | AgentServiceClient,
    readonly queue: string,
    readonly workerId: string,
    private readonly handler: Handler,
    options: WorkerOptions = {},
  ) {
    ({ stub: this.client, owned: this.owned } = stubFor(target, AgentServiceClient, (c) => c.agents));
    this.options = {
      maxLeases: Math.max(1, options.maxLeases ?? 1),
      waitMs: options.waitMs ?? 30_000,
      heartbeatMs: options.heartbeatMs ?? 3_000,
      releaseDelayMs: options.releaseDelayMs,
      shutdownGraceMs: options.shutdownGraceMs ?? 10_000,
      logger: options.logger ?? { warn: (m) => console.warn(`baton worker ${this.workerId}: ${m}`) },
    };
  }

  /** Asks run() to stop: no more Acquires; running handlers are aborted and their leases released. */
  stop(): void {
    this.stopping.abort(new ShutdownError());
  }

  /** Runs until stop(), then releases what it holds. */
  async run(): Promise<void> {
    const beats = this.heartbeatLoop();
    try {
      await this.acquireLoop();
    } finally {
      this.stop();
      const runs = [...this.held.values()];
      for (const run of runs) run.abort.abort(new ShutdownError());
      const grace = new AbortController();
      await Promise.race([
        Promise.allSettled(runs.map((r) => r.done)),
        sleep(this.options.shutdownGraceMs, grace.signal),
      ]);
      grace.abort();
      await beats;
      const toRelease = [...this.held.values()];
      this.held.clear();
      await Promise.all(toRelease.map((r) => this.release(r.lease)));
      if (this.owned) this.client.close();
    }
  }

  private async acquireLoop(): Promise<void> {
    const { signal } = this.stopping;
    let backoff = 100;
    while (!signal.aborted) {
      if (this.running >= this.options.maxLeases) {
        await new Promise<void>((resolve) => {
          this.freed = resolve;
          signal.addEventListener("abort", () => resolve(), { once: true });
        });
        continue;
      }
      const want = this.options.maxLeases - this.running;
      let response: AcquireResponse;
      try {
        response = await unary(this.client.acquire.bind(this.client), {
          queue: this.queue,
          workerId: this.workerId,
          maxLeases: want,
          wait: duration(this.options.waitMs),
        }, { timeoutMs: this.options.waitMs + 10_000, signal });
      } catch (err) {
        if (signal.aborted) return;
        const delay = pushbackMs(err) ?? backoff;
        this.options.logger.warn(`acquire failed: ${describe(err)}; retrying in ${delay} ms`);
        await sleep(delay, signal);
        backoff = Math.min(backoff * 2, 5_000);
        continue;
      }
      backoff = 100;
      for (const lease of response.leases) this.start(lease);
    }
  }

  private start(lease: Lease): void {
    const run: Run = { lease, abort: new AbortController() };
    this.held.set(key(lease), run);
    this.running++;
    run.done = (async () => {
      let failure: Failure | undefined;
      try {
        await this.handler(lease, run.abort.signal);
      } catch (err) {
        failure = classify(err);
      }
      if (run.abort.signal.aborted) return; // lost, or stopping: run() releases what is held
      this.held.delete(key(lease));
      await this.complete(lease, failure);
    })().finally(() => {
      this.running--;
      const freed = this.freed;
      this.freed = undefined;
      freed?.();
    });
  }

  private async complete(lease: Lease, failure: Failure | undefined): Promise<void> {
    const request: CompleteRequest = {
      queue: lease.queue,
      name: lease.name,
      token: lease.token,
      outcome: failure ? failure.outcome : Outcome.OUTCOME_SUCCESS,
      message: failure ? truncateUtf8(failure.message) : "",
      retryAfter: failure?.retryAfterMs !== undefined ? duration(failure.retryAfterMs) : undefined,
    };
    for (let attempt = 0; ; attempt++) {
      try {
        await unary<CompleteRequest, CompleteResponse>(this.client.complete.bind(this.client), request, { timeoutMs: 10_000 });
        return;
      } catch (err) {
        if (isServiceError(err) && err.code === status.UNAVAILABLE && attempt < 2) {
          await sleep(pushbackMs(err) ?? 200 * (attempt + 1));
          continue;
        }
        this.options.logger.warn(`complete of ${lease.name} token ${lease.token} failed: ${describe(err)}`);
        return;
      }
    }
  }

  private async release(lease: Lease): Promise<void> {
    try {
      await unary<ReleaseRequest, ReleaseResponse>(this.client.release.bind(this.client), {
        queue: lease.queue,
        name: lease.name,
        token: lease.token,
        delay: this.options.releaseDelayMs !== undefined ? duration(this.options.releaseDelayMs) : undefined,
      }, { timeoutMs: 5_000 });
    } catch (err) {
      this.options.logger.warn(`release of ${lease.name} token ${lease.token} failed: ${describe(err)}`);
    }
  }

  private async heartbeatLoop(): Promise<void> {
    const { signal } = this.stopping;
    const every = Math.max(10, this.options.heartbeatMs);
    for (;;) {
      await sleep(every, signal);
      if (signal.aborted) return;
      const leases = [...this.held.values()].map(({ lease }) => ({ queue: lease.queue, name: lease.name, token: lease.token }));
      let response: HeartbeatResponse;
      try {
        response = await unary(this.client.heartbeat.bind(this.client), { workerId: this.workerId, leases },
          { timeoutMs: Math.max(5_000, every), signal });
      } catch (err) {
        if (!signal.aborted) this.options.logger.warn(`heartbeat failed: ${describe(err)}`);
        continue;
      }
      for (const lost of response.lost) {
        const run = this.held.get(key(lost));
        if (!run) continue;
        this.held.delete(key(lost));
        this.options.logger.warn(`lease ${lost.queue}/${lost.name} token ${lost.token} lost; aborting its handler`);
        run.abort.abort(new LeaseLostError(run.lease));
      }
    }
  }
}

function describe(err: unknown): string {
  if (isServiceError(err)) return `${status[err.code]} ${err.details}`;
  return err instanceof Error ? err.message : String(err);
}

// A worker loop over the generated client, modelled on Baton's Rust `baton::worker::Worker`:
// leases pushed on one AgentService.Session stream → run the handler → heartbeat while it runs
// → complete with the outcome the handler's result maps to (see classify). The worker grants
// the server credit for maxLeases leases; what finishes within one turn of the event loop goes
// back in one message (completions, one credit per lease, releases). A broken stream is opened
// again with backoff and unanswered completions go again (tokens fence a repeat). A server
// without Session (UNIMPLEMENTED), or `unary: true`, gets the unary loop: long-poll Acquire,
// Heartbeat, Complete. A lease reported lost, or its run cancelled (AgentService.CancelRun,
// answered in `lost` too), aborts its handler's signal (its result would be refused anyway); a
// handler reports progress with worker.reportProgress(lease, value), sent with the next
// heartbeat. On shutdown the loop stops acquiring, aborts running
// handlers and Releases their leases, so another worker takes them at once. Each handler runs
// inside an OpenTelemetry CONSUMER span `process <queue>` (see tracing.ts).

import { randomUUID } from "node:crypto";
import { status } from "@grpc/grpc-js";
import { context } from "@opentelemetry/api";
import { Client, stubFor } from "./client";
import {
  AcquireResponse,
  AgentServiceClient,
  CompleteRequest,
  CompleteResponse,
  HeartbeatResponse,
  Lease,
  Outcome,
  outcomeToJSON,
  ReleaseRequest,
  ReleaseResponse,
  SessionCompletion,
  SessionRequest,
  SessionResponse,
} from "./gen/baton/v1/agent";
import { classify, Failure, truncateUtf8 } from "./failure";
import { duration, isServiceError, pushbackMs, sleep, unary } from "./rpc";
import { endProcessSpan, startLeaseSpan } from "./tracing";

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
  /** Use Acquire, Heartbeat and Complete calls instead of a Session stream (default false). */
  unary?: boolean;
  logger?: Logger;
}

interface Run {
  lease: Lease;
  abort: AbortController;
  done?: Promise<void>;
  lost?: boolean;
}

const emptyRequest = (): SessionRequest => ({ open: undefined, credit: 0, completions: [], heartbeats: [], releases: [] });

const key = (lease: { name: string; token: bigint }) => `${lease.name}\u0000${lease.token}`;

export class Worker {
  readonly client: AgentServiceClient;
  private readonly options: Required<Omit<WorkerOptions, "releaseDelayMs">> & { releaseDelayMs?: number };
  private readonly held = new Map<string, Run>();
  private readonly progress = new Map<string, string>();
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
      unary: options.unary ?? false,
      logger: options.logger ?? { warn: (m) => console.warn(`baton worker ${this.workerId}: ${m}`) },
    };
  }

  /** Reports `value` (a small text, at most 256 bytes) for the run of `lease`: sent with the
   *  lease's next heartbeat; GetAgent shows the last one while the run is held. */
  reportProgress(lease: { name: string; token: bigint }, value: string): void {
    this.progress.set(key(lease), value);
  }

  private takeProgress(lease: { name: string; token: bigint }): string {
    const value = this.progress.get(key(lease)) ?? "";
    this.progress.delete(key(lease));
    return value;
  }

  /** Asks run() to stop: no more Acquires; running handlers are aborted and their leases released. */
  stop(): void {
    this.stopping.abort(new ShutdownError());
  }

  /** Runs until stop(), then releases what it holds. */
  async run(): Promise<void> {
    let beats: Promise<void> = Promise.resolve();
    try {
      if (this.options.unary || !(await this.sessionLoop())) {
        beats = this.heartbeatLoop();
        await this.acquireLoop();
      }
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

  // --- the session stream ----------------------------------------------------------------------

  private readonly unanswered = new Map<string, SessionCompletion>();
  private pending: SessionRequest = emptyRequest();
  private flushing = false;
  private closing = false;
  private call: ReturnType<AgentServiceClient["session"]> | undefined;

  /** Works on Session streams until stop(); false (having done nothing) when the server has none. */
  private async sessionLoop(): Promise<boolean> {
    const { signal } = this.stopping;
    let backoff = 100;
    while (!signal.aborted) {
      const result = await this.oneSession();
      if (result === "unimplemented") {
        this.options.logger.warn("the server has no Session; using Acquire/Complete");
        return false;
      }
      if (result === "served") backoff = 100;
      if (signal.aborted) break;
      await sleep(backoff, signal);
      backoff = Math.min(backoff * 2, 5_000);
    }
    return true;
  }

  /** One stream, until it breaks or the worker stops (then the worker's shutdown on it). */
  private oneSession(): Promise<"served" | "broken" | "unimplemented" | "stopped"> {
    const { signal } = this.stopping;
    return new Promise((resolve) => {
      let served = false;
      let ended = false;
      const call = this.client.session();
      this.call = call;
      const beat = setInterval(() => {
        const heartbeats = [...this.held.values()].filter((r) => !r.lost).map(({ lease }) => ({ name: lease.name, token: lease.token, progress: this.takeProgress(lease) }));
        if (heartbeats.length > 0 && !ended) call.write({ ...emptyRequest(), heartbeats });
      }, Math.max(10, this.options.heartbeatMs));
      const finish = (result: "served" | "broken" | "unimplemented" | "stopped") => {
        if (ended) return;
        ended = true;
        clearInterval(beat);
        signal.removeEventListener("abort", onStop);
        if (this.call === call) this.call = undefined;
        resolve(result);
      };
      call.on("data", (response: SessionResponse) => {
        served = true;
        this.answered(response);
      });
      call.on("error", (err) => {
        if (isServiceError(err) && err.code === status.UNIMPLEMENTED && !served) return finish("unimplemented");
        if (!signal.aborted) this.options.logger.warn(`session broke: ${describe(err)}; opening another`);
        finish(served ? "served" : "broken");
      });
      call.on("end", () => finish(signal.aborted ? "stopped" : served ? "served" : "broken"));
      const onStop = () => {
        void this.closeSession(call).then(() => {
          const timer = setTimeout(() => { call.cancel(); finish("stopped"); }, 10_000);
          call.on("close", () => { clearTimeout(timer); finish("stopped"); });
        });
      };
      signal.addEventListener("abort", onStop, { once: true });
      // What was not sent on the last stream: its completions are the unanswered ones, its
      // credit is counted afresh, its releases go now.
      const carried = this.pending;
      this.pending = emptyRequest();
      call.write({
        ...emptyRequest(),
        open: { queue: this.queue, workerId: this.workerId },
        credit: Math.max(0, this.options.maxLeases - this.running),
        completions: [...this.unanswered.values()],
        releases: carried.releases,
      });
    });
  }

  private answered(response: SessionResponse): void {
    for (const c of response.completed) {
      this.unanswered.delete(key(c));
      if (c.leaseLost) this.options.logger.warn(`completion of ${c.name} token ${c.token} refused: the lease was lost`);
    }
    for (const lost of response.lost) {
      const run = this.held.get(key(lost));
      if (!run || run.lost) continue;
      run.lost = true;
      this.options.logger.warn(`lease ${lost.queue}/${lost.name} token ${lost.token} lost; aborting its handler`);
      run.abort.abort(new LeaseLostError(run.lease));
    }
    for (const lease of response.leases) {
      if (this.stopping.signal.aborted) this.pending.releases.push({ name: lease.name, token: lease.token, delay: undefined });
      else this.startSession(lease);
    }
  }

  private startSession(lease: Lease): void {
    const run: Run = { lease, abort: new AbortController() };
    this.held.set(key(lease), run);
    this.running++;
    run.done = (async () => {
      const failure = await this.runHandler(run);
      this.held.delete(key(lease));
      this.running--;
      const p = this.pending;
      p.credit++;
      if (run.lost) {
        // its lease is gone: nothing to say
      } else if (run.abort.signal.aborted) {
        p.releases.push({ name: lease.name, token: lease.token, delay: this.releaseDelay() });
      } else {
        const c: SessionCompletion = {
          name: lease.name,
          token: lease.token,
          outcome: failure ? failure.outcome : Outcome.OUTCOME_SUCCESS,
          message: failure ? truncateUtf8(failure.message) : "",
          retryAfter: failure?.retryAfterMs !== undefined ? duration(failure.retryAfterMs) : undefined,
        };
        this.unanswered.set(key(lease), c);
        p.completions.push(c);
      }
      this.scheduleFlush();
    })();
  }

  /**
   * Runs the handler of `run` inside its `process <queue>` span (the active span while it runs;
   * see tracing.ts) and ends the span with the outcome: the classified failure, SUCCESS, or
   * LOST / RELEASED when its signal was aborted (lease lost or run cancelled / worker stopping).
   */
  private async runHandler(run: Run): Promise<Failure | undefined> {
    const { lease, abort } = run;
    const { span, context: spanContext } = startLeaseSpan(lease);
    let failure: Failure | undefined;
    let error: { error: unknown } | undefined;
    try {
      await context.with(spanContext, () => this.handler(lease, abort.signal));
    } catch (err) {
      failure = classify(err);
      error = { error: err };
    }
    const outcome = !abort.signal.aborted
      ? outcomeName(failure ? failure.outcome : Outcome.OUTCOME_SUCCESS)
      : abort.signal.reason instanceof LeaseLostError ? "LOST" : "RELEASED";
    endProcessSpan(span, outcome, error);
    return failure;
  }

  /** Sends what finished in this turn of the event loop, in one message. */
  private scheduleFlush(): void {
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => {
      this.flushing = false;
      const m = this.pending;
      this.pending = emptyRequest();
      if (this.stopping.signal.aborted) m.credit = 0;
      // Between streams (or once closing) nothing is written: completions go again on the next
      // stream (unanswered), and its credit is counted afresh.
      const call = this.closing ? undefined : this.call;
      if (call && (m.credit || m.completions.length || m.releases.length)) call.write(m);
    });
  }

  /** Shutdown on a live stream: handlers aborted (bounded by the grace), what finished
   *  completed, the rest released, the stream half-closed. */
  private async closeSession(call: ReturnType<AgentServiceClient["session"]>): Promise<void> {
    this.closing = true;
    const runs = [...this.held.values()];
    for (const run of runs) run.abort.abort(new ShutdownError());
    const grace = new AbortController();
    await Promise.race([Promise.allSettled(runs.map((r) => r.done)), sleep(this.options.shutdownGraceMs, grace.signal)]);
    grace.abort();
    const m = this.pending;
    this.pending = emptyRequest();
    m.credit = 0;
    for (const run of this.held.values()) {
      m.releases.push({ name: run.lease.name, token: run.lease.token, delay: undefined });
    }
    this.held.clear();
    if (m.completions.length || m.releases.length) call.write(m);
    call.end();
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
      const failure = await this.runHandler(run);
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
    // One request id for every attempt below: a retry of an applied Complete gets its answer.
    const request: CompleteRequest = {
      requestId: randomUUID(),
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

  /** The delay of a release on shutdown (releaseDelayMs), if set. */
  private releaseDelay(): ReturnType<typeof duration> | undefined {
    return this.options.releaseDelayMs !== undefined ? duration(this.options.releaseDelayMs) : undefined;
  }

  private async release(lease: Lease): Promise<void> {
    try {
      await unary<ReleaseRequest, ReleaseResponse>(this.client.release.bind(this.client), {
        queue: lease.queue,
        name: lease.name,
        token: lease.token,
        delay: this.releaseDelay(),
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
      const leases = [...this.held.values()].map(({ lease }) => ({
        queue: lease.queue,
        name: lease.name,
        token: lease.token,
        progress: this.takeProgress(lease),
      }));
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

/** "SUCCESS", "TRANSIENT", … (the outcome's name without its OUTCOME_ prefix). */
function outcomeName(outcome: Outcome): string {
  return outcomeToJSON(outcome).replace(/^OUTCOME_/, "");
}

function describe(err: unknown): string {
  if (isServiceError(err)) return `${status[err.code]} ${err.details}`;
  return err instanceof Error ? err.message : String(err);
}

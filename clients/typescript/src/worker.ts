// A worker on one AgentService.Session stream per queue: Baton pushes leases within the credit
// the worker grants (maxLeases), the worker runs the handler per lease and sends back, in one
// message per turn of the event loop, the completions and one credit per finished lease; it
// heartbeats held leases on the stream. A broken stream is opened again after backoffMs and the
// completions Baton has not answered go again (their tokens fence a repeat). A lease reported
// lost, or its run cancelled (AgentService.CancelRun), aborts its handler's signal and is not
// completed. stop() is graceful: the completions of handlers that returned are sent and
// answered, running handlers are aborted and released, and the stream is half-closed once Baton
// answered everything. Each handler runs inside an OpenTelemetry CONSUMER span (tracing.ts).

import { ClientDuplexStream, status } from "@grpc/grpc-js";
import { context, Span } from "@opentelemetry/api";
import { Client, stubFor } from "./client";
import {
  AgentServiceClient,
  Lease,
  Outcome,
  outcomeToJSON,
  RecordStepResponse,
  SessionCompletion,
  SessionRequest,
  SessionResponse,
} from "./gen/baton/v1/agent";
import { describeFailure } from "./failure";
import { backoffMs, describe, duration, isServiceError, sleep, unary } from "./rpc";
import { endProcessSpan, startLeaseSpan } from "./tracing";

/**
 * Runs one lease. Resolving completes it with SUCCESS, and what it resolves with (bytes, or a
 * string sent as UTF-8) is the run's result: Await answers it and the agent's children see it in
 * `lease.parents` (the results of this lease's own parents). Throwing completes it with a failure.
 */
export type Handler = (lease: Lease, signal: AbortSignal) => Promise<Uint8Array | string | WaitFor | void>;

/** Returned (or thrown) by a handler: the run ends its lease by waiting for `event` (a Signal of
 *  it), or for `timeoutMs` (then its next lease's `lease.event` is `timedOut`), or the first of
 *  both. Its next lease carries what woke it in `lease.event`. */
export class WaitFor {
  constructor(readonly event: string, readonly timeoutMs?: number) {}
}

/** `return waitFor({ event: "approve", timeoutMs: 60_000 })` from a handler (see WaitFor). */
export const waitFor = (o: { event?: string; timeoutMs?: number }) => new WaitFor(o.event ?? "", o.timeoutMs);

/** The result of `step` as an earlier attempt of this run recorded it (`lease.steps`), or
 *  undefined: a handler skips the steps a retried run's lease carries. */
export function recordedStep(lease: Lease, step: string): Uint8Array | undefined {
  return lease.steps.find((s) => s.name === step)?.result;
}

/** The reason of a handler's aborted signal when Baton reported its lease lost. */
export class LeaseLostError extends Error {
  constructor(readonly lease: Lease) {
    super(`lease lost: ${lease.queue}/${lease.name} token ${lease.token}`);
    this.name = "LeaseLostError";
  }
}

/** The reason of a handler's aborted signal when its run was cancelled (AgentService.CancelRun,
 *  or a cascade from an ancestor's). */
export class RunCancelledError extends LeaseLostError {
  constructor(lease: Lease) {
    super(lease);
    this.message = `run cancelled: ${lease.queue}/${lease.name} token ${lease.token}`;
    this.name = "RunCancelledError";
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
  /** The most leases held (handlers running) at once: the credit granted to Baton (default 1). */
  maxLeases?: number;
  /** How often held leases are extended (default 3 000 ms): three beats within Baton's default
   *  orphan threshold (10 s), well under the agents' timeout. */
  heartbeatMs?: number;
  /** Delay before a lease released on shutdown is due again (default: at once). */
  releaseDelayMs?: number;
  /** How long stop() waits for aborted handlers to settle before releasing their leases
   *  (default 10 000 ms). */
  shutdownGraceMs?: number;
  logger?: Logger;
}

type Session = ClientDuplexStream<SessionRequest, SessionResponse>;

interface Run {
  lease: Lease;
  abort: AbortController;
  done?: Promise<void>;
  /** Baton reported the lease lost: nothing more is said about it. */
  lost?: boolean;
  /** Released on shutdown while the handler still ran: its result is not sent. */
  released?: boolean;
}

/** How long a stopping worker waits for Baton's last answers before cancelling the stream. */
const CLOSE_TIMEOUT_MS = 10_000;

const emptyRequest = (): SessionRequest => ({ open: undefined, credit: 0, completions: [], heartbeats: [], releases: [], steps: [] });

const key = (lease: { name: string; token: bigint }) => `${lease.name}\u0000${lease.token}`;

export class Worker {
  readonly client: AgentServiceClient;
  private readonly options: Required<Omit<WorkerOptions, "releaseDelayMs">> & { releaseDelayMs?: number };
  private readonly owned: boolean;
  private readonly held = new Map<string, Run>();
  private readonly progress = new Map<string, string>();
  /** reportProgress calls whose heartbeat went, resolved by its answer. */
  private readonly progressSent = new Map<string, (() => void)[]>();
  private readonly stopping = new AbortController();
  /** Completions sent (or to send) that Baton has not answered, with their runs' spans. */
  private readonly unanswered = new Map<string, { completion: SessionCompletion; span: Span; failure?: { error: unknown } }>();
  /** What the next write says: completions, credit, releases (see scheduleFlush). */
  private pending = emptyRequest();
  private flushing = false;
  /** The stream writes go to; undefined between streams and once half-closed. */
  private call: Session | undefined;

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
      heartbeatMs: Math.max(10, options.heartbeatMs ?? 3_000),
      releaseDelayMs: options.releaseDelayMs,
      shutdownGraceMs: options.shutdownGraceMs ?? 10_000,
      logger: options.logger ?? { warn: (m) => console.warn(`baton worker ${this.workerId}: ${m}`) },
    };
  }

  /** Reports `value` (a small text, at most 256 bytes) for the run of `lease`: sent at once on a
   *  heartbeat of its own (WatchAgent streams it; GetAgent shows the last one while the run is
   *  held). Resolves once Baton answered that heartbeat (what the handler does next comes after
   *  the progress), or after heartbeatMs at most. */
  reportProgress(lease: { name: string; token: bigint }, value: string): Promise<void> {
    this.progress.set(key(lease), value);
    if (!this.call || !this.held.has(key(lease))) return Promise.resolve(); // sent on the next heartbeat
    this.progress.delete(key(lease));
    this.call.write({ ...emptyRequest(), heartbeats: [{ name: lease.name, token: lease.token, progress: value }] });
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, this.options.heartbeatMs);
      this.progressSent.set(key(lease), [...(this.progressSent.get(key(lease)) ?? []), () => { clearTimeout(timer); resolve(); }]);
    });
  }

  /** Records `step` of the run of `lease` with its result (AgentService.RecordStep, fenced by the
   *  lease's token): a retried run's lease carries it (recordedStep). A step recorded already keeps
   *  its first result (`recorded` false); a lost lease rejects (FAILED_PRECONDITION, LEASE_LOST). */
  recordStep(lease: Lease, step: string, result: Uint8Array | string = ""): Promise<RecordStepResponse> {
    const bytes = typeof result === "string" ? Buffer.from(result, "utf8") : Buffer.from(result);
    const request = { queue: lease.queue, name: lease.name, token: lease.token, step, result: bytes };
    return unary(this.client.recordStep.bind(this.client), request, { timeoutMs: 10_000 });
  }

  /** Asks run() to stop gracefully (see the module doc); run() resolves once it has. */
  stop(): void {
    this.stopping.abort(new ShutdownError());
  }

  /**
   * Works until stop(), then stops gracefully. Rejects when Baton refuses the session itself
   * (INVALID_ARGUMENT: a bad queue or worker id; UNIMPLEMENTED: a Baton without Session).
   */
  async run(): Promise<void> {
    const { signal } = this.stopping;
    try {
      for (let attempt = 0; ;) {
        if (signal.aborted && this.nothingToSay()) return;
        const stoppedBefore = signal.aborted;
        const { served, error } = await this.session();
        // Stopped: done once a stream ended gracefully, or after one more try on a new stream.
        if (signal.aborted && (stoppedBefore || this.nothingToSay())) return;
        if (!served && isServiceError(error) && (error.code === status.UNIMPLEMENTED || error.code === status.INVALID_ARGUMENT)) {
          throw error;
        }
        attempt = served ? 0 : attempt + 1;
        const delay = backoffMs(attempt, error);
        if (!signal.aborted) this.options.logger.warn(`session ${error ? `broke: ${describe(error)}` : "ended"}; opening another in ${Math.round(delay)} ms`);
        await sleep(delay, signal);
      }
    } finally {
      this.stop();
      for (const run of this.held.values()) run.abort.abort(new ShutdownError());
      for (const { span, failure } of this.unanswered.values()) endProcessSpan(span, undefined, failure);
      if (this.owned) this.client.close();
    }
  }

  private nothingToSay(): boolean {
    return this.held.size === 0 && this.unanswered.size === 0 && this.pending.releases.length === 0;
  }

  /** One stream, until it breaks, or until it is closed gracefully once the worker stops. */
  private session(): Promise<{ served: boolean; error?: unknown }> {
    const { signal } = this.stopping;
    return new Promise((resolve) => {
      let served = false;
      const call = this.client.session();
      const beat = setInterval(() => this.heartbeat(call), this.options.heartbeatMs);
      let closing = false;
      const close = () => {
        if (closing) return;
        closing = true;
        void this.close(call);
      };
      const ended = (error?: unknown) => {
        clearInterval(beat);
        signal.removeEventListener("abort", close);
        if (this.call === call) this.call = undefined;
        resolve({ served, error });
      };
      call.on("data", (response: SessionResponse) => {
        served = true;
        this.answered(response);
      });
      call.on("error", (err) => ended(err));
      call.on("end", () => ended());
      // The completions Baton has not answered go again; credit is counted afresh.
      const carried = this.pending;
      this.pending = emptyRequest();
      this.call = call;
      call.write({
        ...emptyRequest(),
        open: { queue: this.queue, workerId: this.workerId },
        credit: signal.aborted ? 0 : this.options.maxLeases - this.held.size,
        completions: [...this.unanswered.values()].map((u) => u.completion),
        releases: carried.releases,
      });
      if (signal.aborted) close();
      else signal.addEventListener("abort", close, { once: true });
    });
  }

  /**
   * The graceful end of a stream: what finished is sent at once; running handlers are aborted
   * and get the shutdown grace to settle (those that return are completed, those that give up
   * released); leases of handlers still running are released; then the stream is half-closed
   * and Baton's answers read until it ends it (bounded by CLOSE_TIMEOUT_MS).
   */
  private async close(call: Session): Promise<void> {
    this.flush();
    const runs = [...this.held.values()];
    for (const run of runs) run.abort.abort(new ShutdownError());
    const grace = new AbortController();
    await Promise.race([Promise.allSettled(runs.map((r) => r.done)), sleep(this.options.shutdownGraceMs, grace.signal)]);
    grace.abort();
    for (const run of this.held.values()) {
      run.released = true;
      this.pending.releases.push({ name: run.lease.name, token: run.lease.token, delay: this.releaseDelay() });
    }
    this.held.clear();
    if (this.call !== call) return; // the stream broke meanwhile: run() says the rest on a new one
    this.flush();
    this.call = undefined;
    call.end();
    const timer = setTimeout(() => call.cancel(), CLOSE_TIMEOUT_MS);
    call.on("close", () => clearTimeout(timer));
  }

  private heartbeat(call: Session): void {
    if (this.call !== call) return;
    const heartbeats = [...this.held.values()].filter((r) => !r.lost).map(({ lease }) => {
      const progress = this.progress.get(key(lease)) ?? "";
      this.progress.delete(key(lease));
      return { name: lease.name, token: lease.token, progress };
    });
    if (heartbeats.length > 0) call.write({ ...emptyRequest(), heartbeats });
  }

  private answered(response: SessionResponse): void {
    for (const c of response.completed) {
      const u = this.unanswered.get(key(c));
      this.unanswered.delete(key(c));
      if (c.leaseLost) this.options.logger.warn(`completion of ${c.name} token ${c.token} refused: the lease was lost`);
      if (u) endProcessSpan(u.span, c.leaseLost ? "LOST" : outcomeName(c.response?.outcome ?? u.completion.outcome), u.failure);
    }
    for (const ref of [...response.extended, ...response.lost]) {
      this.progressSent.get(key(ref))?.forEach((answered) => answered());
      this.progressSent.delete(key(ref));
    }
    const cancelled = new Set(response.cancelled.map(key));
    for (const lost of response.lost) {
      const run = this.held.get(key(lost));
      if (!run || run.lost) continue;
      run.lost = true;
      if (cancelled.has(key(lost))) {
        run.abort.abort(new RunCancelledError(run.lease));
        continue;
      }
      this.options.logger.warn(`lease ${lost.queue}/${lost.name} token ${lost.token} lost; aborting its handler`);
      run.abort.abort(new LeaseLostError(run.lease));
    }
    for (const lease of response.leases) {
      if (!this.stopping.signal.aborted) this.start(lease);
      else {
        this.pending.releases.push({ name: lease.name, token: lease.token, delay: undefined });
        this.scheduleFlush();
      }
    }
  }

  private start(lease: Lease): void {
    const run: Run = { lease, abort: new AbortController() };
    this.held.set(key(lease), run);
    const { span, context: spanContext } = startLeaseSpan(lease);
    run.done = (async () => {
      let failure: { error: unknown } | undefined;
      let result: Uint8Array | string | WaitFor | void = undefined;
      try {
        result = await context.with(spanContext, () => this.handler(lease, run.abort.signal));
      } catch (error) {
        if (error instanceof WaitFor) result = error;
        else failure = { error };
      }
      const wait = result instanceof WaitFor ? result : undefined;
      if (run.released) return endProcessSpan(span, "RELEASED", failure);
      this.held.delete(key(lease));
      this.progress.delete(key(lease));
      this.pending.credit++;
      if (run.lost) {
        endProcessSpan(span, "LOST", failure);
      } else if (failure && run.abort.signal.aborted) {
        // It gave up because the worker is stopping: another worker runs it at once. A handler
        // that returned is completed, even when the worker stopped meanwhile.
        this.pending.releases.push({ name: lease.name, token: lease.token, delay: this.releaseDelay() });
        endProcessSpan(span, "RELEASED", failure);
      } else {
        const report = failure ? describeFailure(failure.error) : undefined;
        const completion: SessionCompletion = {
          name: lease.name,
          token: lease.token,
          outcome: report ? report.outcome : wait ? Outcome.OUTCOME_UNSPECIFIED : Outcome.OUTCOME_SUCCESS,
          message: report?.message ?? "",
          retryAfter: report?.retryAfterMs !== undefined ? duration(report.retryAfterMs) : undefined,
          errorClass: report?.errorClass ?? "",
          httpStatus: report?.httpStatus ?? 0,
          result: failure || !result || wait ? Buffer.alloc(0) : typeof result === "string" ? Buffer.from(result, "utf8") : Buffer.from(result as Uint8Array),
          waitFor: wait && { event: wait.event, until: undefined, timeout: wait.timeoutMs === undefined ? undefined : duration(wait.timeoutMs) },
        };
        this.unanswered.set(key(lease), { completion, span, failure });
        this.pending.completions.push(completion);
      }
      this.scheduleFlush();
    })();
  }

  /** Sends what finished in this turn of the event loop in one message. */
  private scheduleFlush(): void {
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => {
      this.flushing = false;
      this.flush();
    });
  }

  /** Writes what is pending on the live stream; between streams it waits for the next one. */
  private flush(): void {
    const m = this.pending;
    if (!this.call || !(m.credit || m.completions.length || m.releases.length)) return;
    this.pending = emptyRequest();
    if (this.stopping.signal.aborted) m.credit = 0;
    this.call.write(m);
  }

  private releaseDelay(): ReturnType<typeof duration> | undefined {
    return this.options.releaseDelayMs !== undefined ? duration(this.options.releaseDelayMs) : undefined;
  }
}

/** "SUCCESS", "TRANSIENT", … (the outcome's name without its OUTCOME_ prefix). */
function outcomeName(outcome: Outcome): string {
  return outcomeToJSON(outcome).replace(/^OUTCOME_/, "");
}

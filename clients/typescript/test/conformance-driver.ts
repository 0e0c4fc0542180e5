// The TypeScript conformance driver (clients/conformance/DRIVER.md): commands on stdin, one JSON
// object a line, mapped onto the package's public helpers; events on stdout. Started from
// clients/typescript as `node --import tsx test/conformance-driver.ts`, with BATON_TARGET.

import { createInterface } from "node:readline";
import { status } from "@grpc/grpc-js";
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  agent, AgentResult, AgentSpec, BatchStatus, Claimer, duration, isServiceError, Leadership, Lease, LeaseLostError, parseTraceparent, Producer,
  recordedStep, RunCancelledError, ShutdownError, unary, waitFor, Worker,
} from "../src";

const target = process.env.BATON_TARGET;
if (!target) throw new Error("BATON_TARGET is not set");
// The application's part of OpenTelemetry: a context manager, so a context is active across await.
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

type Command = Record<string, any>;
const emit = (event: Record<string, unknown>) =>
  process.stdout.write(`${JSON.stringify(event, (_k, v) => (typeof v === "bigint" ? Number(v) : v))}\n`);
const codeName = (err: unknown) => (isServiceError(err) ? status[err.code] : String(err));
// The reason the helper gave a cancelled handler (its signal's reason), as DRIVER.md spells it.
const cancelReason = (reason: unknown) => {
  if (reason instanceof RunCancelledError) return "RUN_CANCELLED";
  if (reason instanceof LeaseLostError) return "LEASE_LOST";
  if (reason instanceof ShutdownError) return "SHUTDOWN";
  return String(reason);
};

const producer = new Producer(target);
const workers = new Map<string, { worker: Worker; running: Promise<void>; held: Map<string, () => void> }>();
const leaders = new Map<string, Leadership>();

function startWorker(c: Command): void {
  const held = new Map<string, () => void>();
  const id = c.id as string;
  const handler = async (lease: Lease, signal: AbortSignal) => {
    const run = { id, name: lease.name, token: lease.token };
    const parents = lease.parents.map((p) => ({ queue: p.queue, name: p.name, finish: agent.finishToJSON(p.finish), result: p.result.toString() }));
    const e = lease.event;
    const leaseEvent = e ? { event: e.event, payload: e.payload.toString(), timed_out: e.timedOut } : null;
    emit({ event: "started", ...run, parents, steps: lease.steps.map((s) => s.name), lease_event: leaseEvent });
    let waiting = false;
    try {
      if (c.handler?.mode === "wait_for_event") {
        if (e) return e.timedOut ? `timeout:${e.event}` : `${e.event}:${e.payload.toString()}`;
        waiting = true;
        return waitFor({ event: c.handler.event, timeoutMs: c.handler.timeout_ms });
      }
      let failing = c.handler?.mode === "fail";
      const steps: string[] = c.handler?.mode === "steps" ? c.handler.steps : [];
      for (const [i, step] of steps.entries()) {
        if (recordedStep(lease, step) !== undefined) continue;
        if (c.handler.progress) await worker.reportProgress(lease, `${i + 1}/${steps.length}`);
        const answer = await worker.recordStep(lease, step, `r-${step}`);
        emit({ event: "step", ...run, step, recorded: answer.recorded });
        if (step === c.handler.fail_after) { failing = true; break; }
      }
      if (c.handler?.mode === "hold") {
        await new Promise<void>((resolve, reject) => {
          held.set(lease.name, resolve);
          const cancelled = () => { emit({ event: "cancelled", ...run, reason: cancelReason(signal.reason) }); reject(signal.reason); };
          if (signal.aborted) cancelled();
          else signal.addEventListener("abort", cancelled, { once: true });
        }).finally(() => held.delete(lease.name));
      } else if (failing) {
        const message = c.handler.message ?? "failed";
        if (!c.handler.http_status) throw new Error(message);
        // As axios rejects on an HTTP error status (the most used Node HTTP client).
        throw Object.assign(new Error(message), { name: "AxiosError", code: "ERR_BAD_RESPONSE", response: { status: c.handler.http_status, headers: {} } });
      }
      return (c.handler?.result ?? "").replaceAll("{name}", lease.name) || undefined;
    } finally {
      emit({ event: waiting ? "waiting" : "finished", ...run });
    }
  };
  const worker = new Worker(target!, c.queue, c.worker_id ?? id, handler,
    { maxLeases: c.concurrency, heartbeatMs: c.heartbeat_ms });
  workers.set(id, { worker, held, running: worker.run().catch((err) => { emit({ event: "error", cmd: "worker", message: String(err) }); }) });
}

async function stopWorker(id: string): Promise<void> {
  const w = workers.get(id);
  if (!w) return;
  workers.delete(id);
  w.worker.stop();
  await w.running;
  emit({ event: "stopped", id });
}

async function closeLeader(id: string): Promise<void> {
  const lead = leaders.get(id);
  if (!lead) return;
  leaders.delete(id);
  await lead.close();
  emit({ event: "closed", id });
}

/** The command's "idempotency_mode" → IdempotencyMode. */
const MODES: Record<string, agent.IdempotencyMode> = {
  keep_first: agent.IdempotencyMode.IDEMPOTENCY_MODE_KEEP_FIRST,
  replace: agent.IdempotencyMode.IDEMPOTENCY_MODE_REPLACE,
  debounce: agent.IdempotencyMode.IDEMPOTENCY_MODE_DEBOUNCE,
};

/** A one-shot agent `name` with the command's parents, idempotency key, mode and ttl. */
const agentOf = (c: Command, name: string): AgentSpec => ({
  waitFor: c.wait_for && { event: c.wait_for.event, timeout: c.wait_for.timeout_ms === undefined ? undefined : duration(c.wait_for.timeout_ms) },
  name, after: (c.after ?? []).map((p: Command) => ({ queue: p.queue ?? "", name: p.name })), idempotencyKey: c.idempotency_key ?? "",
  idempotencyMode: MODES[c.idempotency_mode ?? ""], debounce: c.debounce_ms === undefined ? undefined : duration(c.debounce_ms),
  ttl: c.ttl_ms === undefined ? undefined : duration(c.ttl_ms),
});

async function register(c: Command): Promise<void> {
  try {
    const answer = await producer.register(c.queue, (c.names as string[]).map((name) => agentOf(c, name)), { requestId: c.request_id });
    emit({
      event: "registered", id: c.id, count: answer.created + answer.updated, deduplicated: answer.deduplicated,
      agents: answer.agents.map((a) => ({
        name: a.name, created: a.created, deduplicated: a.deduplicated, result: a.result?.result.toString() ?? "",
        replaced: a.replaced, debounced: a.debounced,
      })),
    });
  } catch (err) {
    emit({ event: "failed", id: c.id, code: codeName(err) });
  }
}

async function awaited(c: Command, waiting: Promise<AgentResult | undefined>): Promise<void> {
  try {
    const result = await waiting;
    if (!result) return void emit({ event: "awaited", id: c.id, done: false });
    emit({ event: "awaited", id: c.id, done: true, finish: agent.finishToJSON(result.finish), result: result.result.toString() });
  } catch (err) {
    emit({ event: "failed", id: c.id, code: codeName(err) });
  }
}

function emitBatch(c: Command, s: BatchStatus): void {
  emit({ event: "batch", id: c.id, total: s.total, pending: s.pending, succeeded: s.succeeded, failed: s.failed, closed: s.closed, done: s.done });
}
const named = (names: string[] | undefined) => (names ?? []).map((name) => ({ name }));

async function claim(c: Command): Promise<void> {
  const claimer = new Claimer(target!, c.pool, c.id);
  try {
    const got = await claimer.claim({ waitMs: c.wait_ms });
    if (!got) return void emit({ event: "nothing", id: c.id });
    emit({ event: "claimed", id: c.id, resource_id: got.id, token: got.token });
    await (c.fail_with !== undefined ? got.fail(c.fail_with) : got.return());
    emit({ event: "ended", id: c.id });
  } finally {
    claimer.close();
  }
}

async function watch(c: Command): Promise<void> {
  const names = (steps: { name: string }[]) => steps.map((s) => s.name);
  try {
    for await (const u of producer.watch(c.queue, c.name, { timeoutMs: c.timeout_ms })) {
      emit({ event: "watch_update", id: c.id, update: agent.watchUpdateToJSON(u.update), state: agent.agentStateToJSON(u.state),
        token: u.token, sequence: u.sequence, progress: u.progress, steps: names(u.steps) });
      const f = u.finish;
      if (f?.done) return void emit({ event: "watched", id: c.id, done: true, finish: agent.finishToJSON(f.result!.finish), result: f.result!.result.toString(), steps: names(f.steps) });
    }
    emit({ event: "watched", id: c.id, done: false });
  } catch (err) {
    emit({ event: "failed", id: c.id, code: codeName(err) });
  }
}

async function handle(c: Command): Promise<void> {
  switch (c.cmd) {
    case "register": return register(c);
    case "call": return awaited(c, producer.registerAndAwait(c.queue, agentOf(c, c.name), { timeoutMs: c.timeout_ms }));
    case "signal": {
      try {
        const a = await producer.signal(c.queue, c.name, c.event, c.payload, c.request_id);
        return void emit({ event: "signalled", id: c.id, delivered: a.delivered, kept: a.kept, duplicate: a.duplicate, consumed: a.consumed });
      } catch (err) {
        return void emit({ event: "failed", id: c.id, code: codeName(err) });
      }
    }
    case "watch": return watch(c);
    case "cancel": {
      const agents = producer.client.agents;
      try {
        const a = await unary(agents.cancelRun.bind(agents), { queue: c.queue, name: c.name, cascade: c.cascade ?? false });
        return void emit({ event: "cancel", id: c.id, requested: a.requested, cascaded: a.cascaded });
      } catch (err) {
        return void emit({ event: "failed", id: c.id, code: codeName(err) });
      }
    }
    case "await": return awaited(c, producer.awaitResult(c.queue, c.name, { timeoutMs: c.timeout_ms }));
    case "batch": {
      const answer = await producer.registerBatch(c.batch, c.queue, named(c.names),
        { callbackQueue: c.callback_queue, onSuccess: named(c.on_success), onComplete: named(c.on_complete), close: c.close });
      return emitBatch(c, answer.status!);
    }
    case "close_batch": return emitBatch(c, await producer.closeBatch(c.batch));
    case "batch_status": return emitBatch(c, await producer.getBatch(c.batch));
    case "traced_register": {
      const parent = parseTraceparent(c.traceparent);
      if (!parent) throw new Error(`invalid traceparent ${c.traceparent}`);
      return context.with(trace.setSpanContext(context.active(), parent), () => register(c));
    }
    case "worker": return startWorker(c);
    case "finish": return workers.get(c.id)?.held.get(c.name)?.();
    case "finish_all": return workers.get(c.id)?.held.forEach((finish) => finish());
    case "stop": return stopWorker(c.id);
    case "leader": {
      const lead = new Leadership(target!, c.election, c.candidate_id, { ttlMs: c.ttl_ms });
      lead.on("elected", (token) => emit({ event: "elected", id: c.id, token }));
      lead.on("lost", (token) => emit({ event: "lost", id: c.id, token }));
      leaders.set(c.id, lead.start());
      return;
    }
    case "close": return closeLeader(c.id);
    case "claim": return claim(c);
    default: throw new Error(`unknown command ${c.cmd}`);
  }
}

emit({ event: "ready" });
const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  if (!line.trim()) return;
  let c: Command = {};
  const fail = (err: unknown) => emit({ event: "error", cmd: c.cmd, message: err instanceof Error ? err.message : String(err) });
  try {
    c = JSON.parse(line);
    handle(c).catch(fail);
  } catch (err) {
    fail(err);
  }
});
lines.on("close", async () => {
  await Promise.all([...workers.keys()].map(stopWorker));
  await Promise.all([...leaders.keys()].map(closeLeader));
  producer.close();
  process.stdout.write("", () => process.exit(0));
});

// OpenTelemetry trace propagation against a live Baton: the producer's context goes with the
// agent or message (traceparent metadata on every Client call), and the Worker's and
// Subscriber's handlers run inside `process <queue>` CONSUMER spans joined to it. An SDK tracer
// provider with an in-memory exporter and a synchronous span processor is installed for this
// file only (node --test runs each file in its own process).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Metadata } from "@grpc/grpc-js";
import { context, ROOT_CONTEXT, Span, SpanContext, SpanKind, SpanStatusCode, trace, TraceFlags } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import {
  agent, Client, connect, duration, Failure, Lease, Message, parseTraceparent, Scheduler, Subscriber, traceparentOf,
  TRACER_NAME, unary, Worker,
} from "../src";
import { BatonServer, eventually, unique } from "./baton";

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager().enable();
context.setGlobalContextManager(contextManager);
trace.setGlobalTracerProvider(provider);
const tracer = trace.getTracer("baton-client-test");

let baton: BatonServer;
let client: Client;
before(async () => {
  // Baton's own OpenTelemetry off whatever the environment says: it stores the producer's context.
  baton = await BatonServer.start({ OTEL_SDK_DISABLED: "true" });
  client = connect(baton.addr);
});
after(async () => {
  client.close();
  await baton.stop();
  await provider.shutdown();
  contextManager.disable();
});

const quiet = { warn: () => {} };

function agentDef(name: string, o: { intervalMs?: number; cron?: string } = {}): agent.Agent {
  return {
    name,
    interval: o.intervalMs ? duration(o.intervalMs) : undefined,
    timeout: duration(30_000),
    errorInterval: duration(3_600_000),
    payload: Buffer.from(""),
    labels: {},
    maxAttempts: 0, cron: o.cron ?? "", timeZone: "", catchUp: 0, key: "", priority: 0,
    traceparent: "", // empty: Baton takes the call's traceparent metadata
    after: [], onParentFailure: 0, idempotencyKey: "", idempotencyWindow: undefined, keepResult: false, idempotencyMode: 0, debounce: undefined, expireAt: undefined, ttl: undefined, waitFor: undefined,
  };
}

/** Register through the plain generated stub over the Client (no explicit traceparent field). */
const register = (queue: string, agents: agent.Agent[]) =>
  unary(client.agents.register.bind(client.agents), { requestId: "", queue, resetSchedule: false, agents });
const getAgent = (queue: string, name: string) =>
  unary(client.agents.getAgent.bind(client.agents), { queue, name }).then((r) => r.agent!.agent!);

/** Runs `fn` inside a started (then ended) span "produce"; returns its span context. */
async function produce(fn: () => Promise<unknown>): Promise<SpanContext> {
  return tracer.startActiveSpan("produce", async (span: Span) => {
    try {
      await fn();
      return span.spanContext();
    } finally {
      span.end();
    }
  });
}

const exported = (name: string) => exporter.getFinishedSpans().filter((s) => s.name === name);
const waitSpan = (name: string) => eventually(() => exported(name)[0], 15_000);
const tp = (sc: SpanContext) => `00-${sc.traceId}-${sc.spanId}-01`;

/** Starts a worker on `queue`; returns a stop function. */
function work(queue: string, handler: (lease: Lease, signal: AbortSignal) => Promise<void>) {
  const worker = new Worker(client, queue, unique("w"), handler, { heartbeatMs: 200, logger: quiet });
  const running = worker.run();
  return async () => { worker.stop(); await running; };
}

test("traceparent: formatted from the active span, parsed back; invalid ones ignored", () => {
  assert.equal(traceparentOf(ROOT_CONTEXT), undefined);
  const sc: SpanContext = { traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", traceFlags: TraceFlags.SAMPLED };
  assert.deepEqual(traceparentOf(trace.setSpanContext(ROOT_CONTEXT, sc)), { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" });
  assert.deepEqual(parseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), { ...sc, isRemote: true });
  assert.equal(parseTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-x")?.traceFlags, 0);
  for (const bad of ["", "nope", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"]) {
    assert.equal(parseTraceparent(bad), undefined, bad);
  }
});

test(`a one-shot agent's run joins the producer's trace`, async () => {
  const queue = unique("ts-otel-once");
  const producer = await produce(() => register(queue, [agentDef("job")]));
  assert.equal((await getAgent(queue, "job")).traceparent, tp(producer));
  let seen: { active?: SpanContext; lease?: Lease } | undefined;
  const stop = work(queue, async (lease) => {
    // Nested work: a child of the run's span.
    tracer.startActiveSpan("inner", (span) => span.end());
    seen = { active: trace.getActiveSpan()?.spanContext(), lease };
  });
  const span = await waitSpan(`process ${queue}`);
  await stop();
  assert.equal(seen?.lease?.agent?.traceparent, tp(producer));
  assert.equal(seen?.active?.traceId, producer.traceId);
  assert.equal(seen?.active?.spanId, span.spanContext().spanId, "the handler's active span is the run's");
  assert.equal(span.kind, SpanKind.CONSUMER);
  assert.equal(span.instrumentationScope.name, TRACER_NAME);
  assert.equal(span.spanContext().traceId, producer.traceId);
  assert.equal(span.parentSpanContext?.spanId, producer.spanId);
  assert.equal(span.parentSpanContext?.isRemote, true);
  assert.deepEqual(span.links, []);
  assert.deepEqual(span.attributes, {
    "messaging.system": "baton",
    "messaging.operation.type": "process",
    "messaging.destination.name": queue,
    "baton.agent.name": "job",
    "baton.lease.token": Number(seen!.lease!.token),
    "baton.attempt": 1,
    "baton.outcome": "SUCCESS",
  });
  assert.equal(span.status.code, SpanStatusCode.UNSET);
  const inner = exporter.getFinishedSpans().find((s) => s.name === "inner" && s.spanContext().traceId === producer.traceId);
  assert.equal(inner?.parentSpanContext?.spanId, span.spanContext().spanId);
});

test("a recurring agent's run is a new root span linked to the producer's", async () => {
  const queue = unique("ts-otel-every");
  const producer = await produce(() => register(queue, [agentDef("tick", { intervalMs: 3_600_000 })]));
  assert.equal((await getAgent(queue, "tick")).traceparent, tp(producer));
  // The worker loop runs inside a span of its own: the run is not its child either.
  let loop: SpanContext | undefined;
  const stop = await tracer.startActiveSpan("worker-loop", async (span) => {
    loop = span.spanContext();
    const stop = work(queue, async () => {});
    span.end();
    return stop;
  });
  const span = await waitSpan(`process ${queue}`);
  await stop();
  assert.equal(span.kind, SpanKind.CONSUMER);
  assert.equal(span.parentSpanContext, undefined);
  assert.notEqual(span.spanContext().traceId, producer.traceId);
  assert.notEqual(span.spanContext().traceId, loop!.traceId);
  assert.equal(span.links.length, 1);
  assert.equal(span.links[0].context.traceId, producer.traceId);
  assert.equal(span.links[0].context.spanId, producer.spanId);
  assert.equal(span.attributes["baton.outcome"], "SUCCESS");
});

test("a call with no active span stores no traceparent; its run is a root span without links", async () => {
  const queue = unique("ts-otel-none");
  await register(queue, [agentDef("plain")]);
  assert.equal((await getAgent(queue, "plain")).traceparent, "");
  const stop = work(queue, async () => {});
  const span = await waitSpan(`process ${queue}`);
  await stop();
  assert.equal(span.parentSpanContext, undefined);
  assert.deepEqual(span.links, []);
});

test("a traceparent the caller set in the call's metadata is kept", async () => {
  const queue = unique("ts-otel-explicit");
  const mine = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  await produce(() => new Promise((resolve, reject) => {
    const metadata = new Metadata();
    metadata.set("traceparent", mine);
    client.agents.register({ requestId: "", queue, resetSchedule: false, agents: [agentDef("job")] }, metadata, {},
      (err, res) => (err ? reject(err) : resolve(res)));
  }));
  assert.equal((await getAgent(queue, "job")).traceparent, mine);
});

test("a failing handler's span has status ERROR, the exception and the outcome", async () => {
  const queue = unique("ts-otel-fail");
  const producer = await produce(() => register(queue, [agentDef("boom")]));
  const stop = work(queue, async () => { throw Failure.transient("downstream down"); });
  const span = await waitSpan(`process ${queue}`);
  await stop();
  assert.equal(span.spanContext().traceId, producer.traceId);
  assert.equal(span.status.code, SpanStatusCode.ERROR);
  assert.equal(span.attributes["baton.outcome"], "TRANSIENT");
  assert.equal(span.events.find((e) => e.name === "exception")?.attributes?.["exception.message"], "downstream down");
});

test(`a scheduled message is handled inside a child of the producer's span`, async () => {
  const receiver = unique("ts-otel-msg");
  const scheduler = new Scheduler(client);
  let id = "";
  const producer = await produce(async () => { id = (await scheduler.schedule(receiver, "hello")).id; });
  let seen: { active?: SpanContext; message: Message } | undefined;
  const sub = new Subscriber(client, receiver, "c1", async (message) => {
    seen = { active: trace.getActiveSpan()?.spanContext(), message };
  }, { logger: quiet });
  const running = sub.run();
  const span = await waitSpan(`process ${receiver}`);
  await eventually(() => sub.acked === 1);
  sub.stop();
  await running;
  assert.equal(seen?.message.traceparent, tp(producer));
  assert.equal(seen?.active?.traceId, producer.traceId);
  assert.equal(seen?.active?.spanId, span.spanContext().spanId);
  assert.equal(span.kind, SpanKind.CONSUMER);
  assert.equal(span.spanContext().traceId, producer.traceId);
  assert.equal(span.parentSpanContext?.spanId, producer.spanId);
  assert.deepEqual(span.attributes, {
    "messaging.system": "baton",
    "messaging.operation.type": "process",
    "messaging.destination.name": receiver,
    "messaging.message.id": id,
    "baton.delivery_count": 1,
  });
  assert.equal(span.status.code, SpanStatusCode.UNSET);
});

test("a failing message handler's span has status ERROR", async () => {
  const receiver = unique("ts-otel-msgfail");
  const scheduler = new Scheduler(client);
  const producer = await produce(() => scheduler.schedule(receiver, "bad"));
  const sub = new Subscriber(client, receiver, "c1", async () => { throw new Error("cannot"); }, { logger: quiet });
  const running = sub.run();
  const span = await waitSpan(`process ${receiver}`);
  sub.stop();
  await running;
  assert.equal(span.parentSpanContext?.spanId, producer.spanId);
  assert.equal(span.status.code, SpanStatusCode.ERROR);
  assert.equal(span.events.find((e) => e.name === "exception")?.attributes?.["exception.message"], "cannot");
});

test("spans of this file are only the expected ones (no stray spans from the helpers' own calls)", () => {
  const names = new Set(exporter.getFinishedSpans().map((s: ReadableSpan) => s.name.split(" ")[0]));
  assert.deepEqual([...names].sort(), ["inner", "process", "produce", "worker-loop"]);
});

// The worker loop against a live Baton.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { credentials } from "@grpc/grpc-js";
import { AdminServiceClient, agent, AgentServiceClient, duration, Failure, HttpError, Lease, Outcome, unary, Worker } from "../src";
import { SourceKind } from "../src/gen/baton/v1/admin";
import { BatonServer, eventually, unique } from "./baton";

let baton: BatonServer;
let client: AgentServiceClient;
before(async () => {
  baton = await BatonServer.start();
  client = new AgentServiceClient(baton.addr, credentials.createInsecure());
});
after(async () => {
  client.close();
  await baton.stop();
});

const call = {
  register: (r: agent.RegisterRequest) => unary(client.register.bind(client), r),
  getAgent: (queue: string, name: string) => unary(client.getAgent.bind(client), { queue, name, cascade: false }).then((r) => r.agent!),
  complete: (r: agent.CompleteRequest) => unary(client.complete.bind(client), r),
  listAgents: (queue: string) => unary(client.listAgents.bind(client), { queue, pageSize: 0, pageToken: "", namePrefix: "" }),
  cancelRun: (queue: string, name: string) => unary(client.cancelRun.bind(client), { queue, name, cascade: false }),
  acquire: (queue: string) => unary(client.acquire.bind(client), { queue, workerId: "other", maxLeases: 1, wait: undefined }),
};

async function register(queue: string, names: string[], o: { timeoutMs?: number; intervalMs?: number } = {}) {
  await call.register({
    requestId: "",
    queue,
    resetSchedule: false,
    agents: names.map((name) => ({
      name,
      interval: o.intervalMs ? duration(o.intervalMs) : undefined,
      timeout: duration(o.timeoutMs ?? 30_000),
      errorInterval: duration(3_600_000),
      payload: Buffer.from(""),
      labels: {},
      maxAttempts: 0, cron: "", timeZone: "", catchUp: 0, key: "", priority: 0, traceparent: "", after: [], onParentFailure: 0, idempotencyKey: "", idempotencyWindow: undefined, keepResult: false, idempotencyMode: 0, debounce: undefined, expireAt: undefined, ttl: undefined, waitFor: undefined,
    })),
  });
}

const quiet = { warn: () => {} };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
function work(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => { clearTimeout(timer); reject(signal.reason); }, { once: true });
  });
}

test("happy path: every agent runs once, completed with SUCCESS", async () => {
  const queue = unique("ts-happy");
  const names = ["a0", "a1", "a2", "a3", "a4", "a5"];
  await register(queue, names);
  const seen: string[] = [];
  const worker = new Worker(baton.addr, queue, unique("w"), async (lease) => {
    assert.equal(lease.queue, queue);
    assert.ok(lease.token > 0n);
    await sleep(50);
    seen.push(lease.name);
  }, { maxLeases: 2, heartbeatMs: 200, logger: quiet });
  const running = worker.run();
  await eventually(async () => (await baton.completed(queue)).SUCCESS === names.length);
  assert.deepEqual((await call.listAgents(queue)).agents, []);
  worker.stop();
  await running;
  assert.deepEqual(seen.sort(), names);
});

test("heartbeats keep a run longer than the lease timeout alive", async () => {
  const queue = unique("ts-long");
  await register(queue, ["slow"], { timeoutMs: 1_000 });
  let aborted = false;
  const worker = new Worker(baton.addr, queue, unique("w"), async (_lease, signal) => {
    await work(2_500, signal).catch((e) => { aborted = true; throw e; });
  }, { heartbeatMs: 250, logger: quiet });
  const running = worker.run();
  await eventually(async () => (await baton.completed(queue)).SUCCESS === 1);
  worker.stop();
  await running;
  assert.equal(aborted, false);
});

test(`progress is shown, and a cancelled run aborts its handler`, async () => {
  const queue = unique("ts-cancel");
  await register(queue, ["crawl"], { intervalMs: 3_600_000 });
  const aborted: unknown[] = [];
  let started: Lease | undefined;
  const worker: Worker = new Worker(baton.addr, queue, unique("w"), async (lease, signal) => {
    worker.reportProgress(lease, "page 3 of 10");
    started = lease;
    await work(60_000, signal).catch((e) => { aborted.push(e); throw e; });
  }, { heartbeatMs: 100, logger: quiet });
  const running = worker.run();
  await eventually(async () => (await call.getAgent(queue, "crawl")).progress === "page 3 of 10", 10_000);
  assert.equal((await call.cancelRun(queue, "crawl")).requested, true);
  await eventually(() => aborted.length === 1, 10_000);
  await eventually(async () => (await call.getAgent(queue, "crawl")).state === agent.AgentState.AGENT_STATE_WAITING, 10_000);
  worker.stop();
  await running;
  assert.ok(started);
  assert.deepEqual(await baton.completed(queue), {}, "a cancelled run is neither completed nor failed");
});

test("Baton classifies handler errors (explicit Failure, HTTP status, I/O, anything else)", async () => {
  const prefix = unique("ts-outcome");
  const cases: Record<string, [unknown, string]> = {
    http401: [Object.assign(new Error("401"), { status: 401 }), "PERMANENT_FORBIDDEN"],
    http403: [Object.assign(new Error("403"), { response: { status: 403 } }), "PERMANENT_FORBIDDEN"],
    http429: [Object.assign(new Error("429"), { statusCode: 429 }), "THROTTLED"],
    http408: [Object.assign(new Error("408"), { status: 408 }), "TRANSIENT"],
    http503: [new HttpError(503, "down"), "SERVER_ERROR"],
    http404: [Object.assign(new Error("404"), { status: 404 }), "UNKNOWN"],
    reset: [Object.assign(new Error("reset"), { code: "ECONNRESET" }), "TRANSIENT"],
    fetch: [new TypeError("fetch failed", { cause: Object.assign(new Error("refused"), { code: "ECONNREFUSED" }) }), "TRANSIENT"],
    timeout: [new DOMException("timed out", "TimeoutError"), "TRANSIENT"],
    bug: [new RangeError("bad"), "UNKNOWN"],
    explicit: [new Failure(Outcome.OUTCOME_THROTTLED, "quota", 7_200_000), "THROTTLED"],
  };
  const workers: [Worker, Promise<void>][] = [];
  for (const [name, [error]] of Object.entries(cases)) {
    const queue = `${prefix}-${name}`;
    await register(queue, ["job"]);
    const worker = new Worker(baton.addr, queue, unique("w"), async () => { throw error; }, { heartbeatMs: 500, logger: quiet });
    workers.push([worker, worker.run()]);
  }
  for (const [name, [, outcome]] of Object.entries(cases)) {
    const got = await eventually(async () => {
      const c = await baton.completed(`${prefix}-${name}`);
      return Object.keys(c).length ? c : undefined;
    });
    assert.deepEqual(got, { [outcome]: 1 }, name);
  }
  // An explicit retry-after longer than the computed backoff wins.
  const explicit = await call.getAgent(`${prefix}-explicit`, "job");
  assert.ok(explicit.nextRunAt!.getTime() >= Date.now() + 7_000_000);
  for (const [w] of workers) w.stop();
  await Promise.all(workers.map(([, r]) => r));
});

test("a failure message over Baton's limit is clipped by Baton on a character boundary (shared case)", async () => {
  // A message far over the server's 4,096-byte limit, of 2-, 3- and 4-byte characters (😀 is a
  // surrogate pair in UTF-16), sent whole: the run is dead-lettered at once (not timed out), and
  // the stored message is a valid prefix, clipped by Baton, within the limit.
  const queue = unique("ts-clip");
  await call.register({
    requestId: "",
    queue,
    resetSchedule: false,
    agents: [agent.Agent.fromPartial({ name: "dies", timeout: duration(60_000), errorInterval: duration(3_600_000), maxAttempts: 1 })],
  });
  const long = "é€😀".repeat(1000);
  const worker = new Worker(baton.addr, queue, unique("w"), async () => {
    throw new Failure(Outcome.OUTCOME_UNKNOWN, long);
  }, { logger: quiet });
  const running = worker.run();
  const admin = new AdminServiceClient(baton.addr, credentials.createInsecure());
  const source = { kind: SourceKind.SOURCE_KIND_QUEUE, name: queue };
  const letter = await eventually(async () => {
    const page = await unary(admin.listDeadLetters.bind(admin), { source, pageSize: 0, pageToken: "" });
    return page.deadLetters[0];
  }, 30_000);
  worker.stop();
  await running;
  admin.close();
  const stored = Buffer.byteLength(letter.message, "utf8");
  assert.ok(stored <= 4096 && stored > 4000, `${stored} bytes`);
  assert.ok(letter.message.endsWith("…"), letter.message.slice(-10));
  assert.ok(long.startsWith(letter.message.slice(0, -1)));
});

// The worker's session stream against a live Baton: credit, lost leases, broken streams.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { credentials } from "@grpc/grpc-js";
import { agent, AgentServiceClient, duration, unary, Worker } from "../src";
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

const quiet = { warn: () => {} };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function register(c: AgentServiceClient, queue: string, names: string[], timeoutMs = 30_000, errorIntervalMs = 3_600_000) {
  for (let i = 0; i < names.length; i += 500) {
    await unary(c.register.bind(c), {
      queue,
      resetSchedule: false,
      requestId: "",
      agents: names.slice(i, i + 500).map((name) => ({
        name,
        interval: undefined,
        timeout: duration(timeoutMs),
        errorInterval: duration(errorIntervalMs),
        payload: Buffer.from(""),
        labels: {},
        maxAttempts: 0, cron: "", timeZone: "", catchUp: 0, key: "", priority: 0, traceparent: "", after: [], onParentFailure: 0, idempotencyKey: "", idempotencyWindow: undefined,
      })),
    });
  }
}

const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(4, "0")}`);

test("session: 300 agents drained with maxLeases 6, never more than 6 at once, each once", async () => {
  const queue = unique("ts-drain");
  const all = names("job", 300);
  await register(client, queue, all);
  const runs = new Map<string, number>();
  let now = 0;
  let highest = 0;
  const worker = new Worker(baton.addr, queue, unique("w"), async (lease) => {
    runs.set(lease.name, (runs.get(lease.name) ?? 0) + 1);
    highest = Math.max(highest, ++now);
    await sleep(1);
    now--;
  }, { maxLeases: 6, heartbeatMs: 200, logger: quiet });
  const running = worker.run();
  await eventually(async () => (await baton.completed(queue)).SUCCESS === all.length, 60_000);
  worker.stop();
  await running;
  assert.ok(highest <= 6, `${highest} handlers at once`);
  assert.deepEqual([...runs.keys()].sort(), all);
  assert.ok([...runs.values()].every((n) => n === 1));
});

test("session: a completion of a lost lease is refused, and the worker goes on", async () => {
  const queue = unique("ts-lostc");
  await register(client, queue, ["slow"], 300, 10);
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let first: bigint | undefined;
  const done: string[] = [];
  const worker = new Worker(baton.addr, queue, unique("w"), async (lease) => {
    if (lease.name === "slow" && first === undefined) {
      first = lease.token;
      await released;
    }
    done.push(lease.name);
  }, { heartbeatMs: 3_600_000, logger: quiet });
  const running = worker.run();
  await eventually(() => first !== undefined, 30_000);
  const taken = await eventually(async () => {
    const r = await unary(client.acquire.bind(client), { queue, workerId: "other", maxLeases: 1, wait: undefined });
    return r.leases[0];
  }, 30_000);
  assert.ok(taken.token > first!);
  release();
  await register(client, queue, ["next"]);
  await eventually(() => done.includes("next"), 30_000);
  const status = (await unary(client.getAgent.bind(client), { queue, name: "slow" })).agent!;
  assert.equal(status.token, taken.token);
  assert.equal(status.holder, "other");
  worker.stop();
  await running;
});

test("session: Baton restarts mid-batch, and nothing is lost", async () => {
  const own = await BatonServer.start();
  const c = new AgentServiceClient(own.addr, credentials.createInsecure());
  try {
    const queue = unique("ts-broken");
    const all = names("b", 100);
    await register(c, queue, all, 2_000);
    const runs = new Map<string, number>();
    let holding = 0;
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let gated = true;
    const worker = new Worker(own.addr, queue, unique("w"), async (lease) => {
      runs.set(lease.name, (runs.get(lease.name) ?? 0) + 1);
      if (gated) {
        holding++;
        await gate;
      }
    }, { maxLeases: 10, heartbeatMs: 200, logger: quiet });
    const running = worker.run();
    await eventually(() => holding === 10, 30_000);
    await own.restart();
    gated = false;
    open();
    await eventually(async () => {
      try {
        const l = await unary(c.listAgents.bind(c), { queue, pageSize: 1, pageToken: "", namePrefix: "" });
        return l.agents.length === 0;
      } catch {
        return false;
      }
    }, 60_000);
    worker.stop();
    await running;
    assert.ok(all.every((n) => (runs.get(n) ?? 0) >= 1));
  } finally {
    c.close();
    await own.stop();
  }
});

test("stop right after the last handlers returned: every finished job is completed, none released", async () => {
  // 100 one-shot jobs, 10 at once; each batch of 10 returns together, and the worker is stopped
  // in the same turn of the event loop as the last batch returns, before the helper has sent
  // (or even recorded) those completions. A graceful stop must complete them, not release them.
  const queue = unique("ts-stopdone");
  const all = names("s", 100);
  await register(client, queue, all);
  let waiting: (() => void)[] = [];
  let finished = 0;
  let worker!: Worker;
  worker = new Worker(baton.addr, queue, unique("w"), async () => {
    await new Promise<void>((resolve) => {
      waiting.push(resolve);
      if (waiting.length === 10) {
        const batch = waiting;
        waiting = [];
        for (const r of batch) r();
      }
    });
    if (++finished === all.length) queueMicrotask(() => worker.stop());
  }, { maxLeases: 10, heartbeatMs: 1_000, logger: quiet });
  await worker.run();
  assert.equal(finished, all.length);
  // run() resolved: Baton answered every completion before the stream ended.
  assert.deepEqual(await baton.completed(queue), { SUCCESS: all.length });
  const left = await unary(client.listAgents.bind(client), { queue, pageSize: 0, pageToken: "", namePrefix: "" });
  assert.deepEqual(left.agents.map((a) => a.agent?.name), []);
});

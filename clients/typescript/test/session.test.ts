// The worker's session stream against a live Baton: lost leases, broken streams.
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
        maxAttempts: 0, cron: "", timeZone: "", catchUp: 0, key: "", priority: 0, traceparent: "", after: [], onParentFailure: 0, idempotencyKey: "", idempotencyWindow: undefined, keepResult: false, idempotencyMode: 0, debounce: undefined, expireAt: undefined, ttl: undefined, waitFor: undefined,
      })),
    });
  }
}

const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(4, "0")}`);

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

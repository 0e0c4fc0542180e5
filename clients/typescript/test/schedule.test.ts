// Scheduled messages and the subscriber against a live Baton (ack timeout 0.5 s).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { credentials, ServiceError, status } from "@grpc/grpc-js";
import { isLeaseLost, Message, Scheduler, ScheduleServiceClient, Subscriber, SubscriberOptions, unary } from "../src";
import { BatonServer, eventually, QUICK_ENV, unique } from "./baton";

let baton: BatonServer;
let client: ScheduleServiceClient;
let scheduler: Scheduler;
before(async () => {
  baton = await BatonServer.start(QUICK_ENV);
  client = new ScheduleServiceClient(baton.addr, credentials.createInsecure());
  scheduler = new Scheduler(client);
});
after(async () => {
  client.close();
  await baton.stop();
});

const quiet = { warn: () => {} };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function subscribe(addr: string, receiver: string, consumer: string, handler: (m: Message, s: AbortSignal) => Promise<void>,
  options: SubscriberOptions = {}): { sub: Subscriber; stop: () => Promise<void> } {
  const sub = new Subscriber(addr, receiver, consumer, handler, { logger: quiet, ...options });
  const running = sub.run();
  return { sub, stop: async () => { sub.stop(); await running; } };
}

test("messages are handled and acked", async () => {
  const receiver = unique("ts-rcv");
  const first = await scheduler.schedule(receiver, "now");
  const later = await scheduler.schedule(receiver, Buffer.from("later"), { delayMs: 300 });
  assert.ok(first.created && later.id !== first.id);
  const got: [string, number, number][] = [];
  const seen: Message[] = [];
  const { sub, stop } = subscribe(baton.addr, receiver, "c1", async (m) => {
    got.push([m.payload.toString(), m.deliveryCount, Date.now()]);
    seen.push(m);
  }, { maxInFlight: 2 });
  await eventually(() => sub.acked === 2);
  assert.deepEqual(got.map((g) => g[0]).sort(), ["later", "now"]);
  assert.ok(got.every((g) => g[1] === 1));
  const at = got.find((g) => g[0] === "later")![2];
  assert.ok(at >= later.deliverAt!.getTime() - 10, "not before its time");
  // Acked for good: the token is spent, and nothing comes back after the ack timeout.
  for (const m of seen) {
    await assert.rejects(unary(client.ack.bind(client), { requestId: "", receiver, id: m.id, token: m.token }), (err) => isLeaseLost(err));
  }
  await sleep(1_000);
  assert.equal(got.length, 2);
  assert.equal(sub.failed, 0);
  await stop();
});

test("at most maxInFlight handlers at once", async () => {
  const receiver = unique("ts-par");
  for (let i = 0; i < 6; i++) await scheduler.schedule(receiver, `m${i}`);
  let running = 0;
  let peak = 0;
  const { sub, stop } = subscribe(baton.addr, receiver, "c1", async () => {
    running++;
    peak = Math.max(peak, running);
    await sleep(150);
    running--;
  }, { maxInFlight: 3 });
  await eventually(() => sub.acked === 6);
  assert.equal(peak, 3);
  await stop();
});

test("a failed message is not acked and comes back with a higher delivery count", async () => {
  const receiver = unique("ts-fail");
  await scheduler.schedule(receiver, "flaky");
  const counts: number[] = [];
  const failures: [number, string][] = [];
  const { sub, stop } = subscribe(baton.addr, receiver, "c1", async (m) => {
    counts.push(m.deliveryCount);
    if (m.deliveryCount === 1) throw new Error("downstream unavailable");
  });
  sub.on("failed", (m, err) => failures.push([m.deliveryCount, (err as Error).message]));
  await eventually(() => sub.acked === 1);
  assert.deepEqual(counts, [1, 2]);
  assert.deepEqual(failures, [[1, "downstream unavailable"]]);
  assert.equal(sub.failed, 1);
  await stop();
});

test("stop() lets running handlers finish and acks them", async () => {
  const receiver = unique("ts-drain");
  await scheduler.schedule(receiver, "m");
  let started = false;
  const finished: string[] = [];
  const { sub, stop } = subscribe(baton.addr, receiver, "c1", async (m) => {
    started = true;
    await sleep(300);
    finished.push(m.id);
  }, { shutdownGraceMs: 5_000 });
  await eventually(() => started);
  await stop();
  assert.equal(finished.length, 1);
  assert.equal(sub.acked, 1);
  // Nothing left: a new subscriber gets nothing, even after the ack timeout.
  const seen: Message[] = [];
  const other = subscribe(baton.addr, receiver, "c2", async (m) => { seen.push(m); });
  await sleep(1_000);
  await other.stop();
  assert.deepEqual(seen, []);
});

test("stop() aborts handlers past the grace; a new subscriber gets their messages", async () => {
  const receiver = unique("ts-stop");
  await scheduler.schedule(receiver, "stuck");
  let started = false;
  const aborted: number[] = [];
  const { sub, stop } = subscribe(baton.addr, receiver, "c1", (m, signal) => new Promise((_, reject) => {
    started = true;
    signal.addEventListener("abort", () => { aborted.push(m.deliveryCount); reject(signal.reason); }, { once: true });
  }), { shutdownGraceMs: 200 });
  await eventually(() => started);
  const began = Date.now();
  await stop();
  assert.ok(Date.now() - began < 2_000);
  assert.deepEqual(aborted, [1]);
  assert.equal(sub.acked, 0);
  assert.equal(sub.failed, 0);
  // Unacked, so delivered again after the ack timeout, to whoever subscribes.
  const seen: [string, number][] = [];
  const other = subscribe(baton.addr, receiver, "c2", async (m) => { seen.push([m.payload.toString(), m.deliveryCount]); });
  await eventually(() => other.sub.acked === 1);
  // Delivery 2 or later: while c1 let its handler finish (the grace) the message could expire and
  // go out to c1 again, which, stopping, left it unhandled.
  assert.equal(seen.length, 1);
  assert.ok(seen[0][0] === "stuck" && seen[0][1] >= 2, JSON.stringify(seen));
  await other.stop();
});

test("it subscribes again after the server restarts", async () => {
  const own = await BatonServer.start(QUICK_ENV);
  try {
    const receiver = unique("ts-reconnect");
    const s = new Scheduler(own.addr);
    await s.schedule(receiver, "before");
    const seen: string[] = [];
    const disconnects: unknown[] = [];
    const { sub, stop } = subscribe(own.addr, receiver, "c1", async (m) => { seen.push(m.payload.toString()); });
    sub.on("disconnected", (err) => disconnects.push(err));
    await eventually(() => seen.length === 1);
    // SIGTERM ends the stream cleanly; the subscriber retries until Baton is back.
    await own.restart();
    // This channel may still be waiting out its reconnect backoff: try until it is back.
    await eventually(() => s.schedule(receiver, "after").then(() => true, (err: ServiceError) => {
      if (err.code !== status.UNAVAILABLE) throw err;
      return false;
    }), 20_000);
    await eventually(() => seen.length === 2, 20_000);
    assert.deepEqual(seen, ["before", "after"]);
    assert.ok(sub.reconnects >= 1 && disconnects.length >= 1);
    assert.equal(disconnects[0], undefined, "the first end is a clean one");
    await eventually(() => sub.acked === 2);
    await stop();
    s.close();
  } finally {
    await own.stop();
  }
});

test("an invalid subscription rejects, not retried", async () => {
  const sub = new Subscriber(baton.addr, "not a valid name!", "c1", async () => {}, { logger: quiet });
  await assert.rejects(sub.run(), (err: ServiceError) => err.code === status.INVALID_ARGUMENT);
});

test("schedule: keys, deliverAt and cancel", async () => {
  const receiver = unique("ts-sched");
  const a = await scheduler.schedule(receiver, "x", { delayMs: 3_600_000, key: "invoice-7" });
  const b = await scheduler.schedule(receiver, "y", { delayMs: 5_000, key: "invoice-7" });
  assert.ok(a.created && !b.created && b.id === a.id);
  const at = new Date(Date.now() + 7_200_000);
  const c = await scheduler.schedule(receiver, "z", { deliverAt: at });
  assert.equal(c.deliverAt!.getTime(), at.getTime());
  await assert.rejects(scheduler.schedule(receiver, "", { delayMs: 1, deliverAt: at }), TypeError);
  assert.equal(await scheduler.cancel(receiver, a.id), true);
  assert.equal(await scheduler.cancel(receiver, a.id), false);
  // The key is free again once its message is gone.
  const d = await scheduler.schedule(receiver, "x2", { key: "invoice-7" });
  assert.ok(d.created && d.id !== a.id);
  // With a window, the key outlives its message: a cancelled message's key still answers it.
  const e = await scheduler.schedule(receiver, "w", { delayMs: 3_600_000, key: "order-9", keyWindowMs: 600_000 });
  assert.ok(e.created && e.keyHeldUntil !== undefined);
  assert.equal(await scheduler.cancel(receiver, e.id), true);
  const f = await scheduler.schedule(receiver, "w2", { key: "order-9" });
  assert.ok(!f.created && f.id === e.id);
});

test(`200 messages each handled once within maxInFlight`, async () => {
  const receiver = unique("ts-many");
  for (let i = 0; i < 200; i++) await scheduler.schedule(receiver, `m${i}`);
  const seen = new Map<string, number>();
  let running = 0;
  let peak = 0;
  const { sub, stop } = subscribe(baton.addr, receiver, "c1", async (m) => {
    running++;
    peak = Math.max(peak, running);
    seen.set(m.payload.toString(), (seen.get(m.payload.toString()) ?? 0) + 1);
    await new Promise((r) => setImmediate(r));
    running--;
  }, { maxInFlight: 5 });
  await eventually(() => sub.acked === 200, 30_000);
  await stop();
  assert.equal(seen.size, 200);
  assert.ok([...seen.values()].every((n) => n === 1), "each message once");
  assert.ok(peak <= 5, `peak ${peak} handlers at once`);
  assert.equal(sub.lateAcks, 0);
});

test("a late ack on the Receive stream is counted and the stream goes on", async () => {
  const receiver = unique("ts-late");
  await scheduler.schedule(receiver, "slow");
  const deliveries: number[] = [];
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const { sub, stop } = subscribe(baton.addr, receiver, "c1", async (m) => {
    deliveries.push(m.deliveryCount);
    if (m.deliveryCount === 1) await released; // held until the message went out again
  }, { maxInFlight: 2 });
  await eventually(() => deliveries.length === 2, 20_000);
  await eventually(() => sub.acked === 1);
  release();
  await eventually(() => sub.lateAcks === 1);
  await stop();
  assert.deepEqual(deliveries, [1, 2]);
  assert.equal(sub.acked, 1);
});

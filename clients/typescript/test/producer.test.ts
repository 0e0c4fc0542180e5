// The producer helper against a live Baton: partial agents, request ids, schedule and offer.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { connect, Client, duration, Pool, Producer, unary, Worker } from "../src";
import { BatonServer, eventually, unique } from "./baton";

let baton: BatonServer;
let client: Client;
let producer: Producer;
before(async () => {
  baton = await BatonServer.start();
  client = connect(baton.addr);
  producer = new Producer(client);
});
after(async () => {
  client.close();
  await baton.stop();
});

const getAgent = (queue: string, name: string) => unary(client.agents.getAgent.bind(client.agents), { queue, name }).then((r) => r.agent!);

test("register takes partial agents: a one-shot runs once, a recurring one stays", async () => {
  const queue = unique("ts-produce");
  const answer = await producer.register(queue, [
    { name: "once", payload: "hello", labels: { tenant: "a" } },
    { name: "every-minute", interval: duration(60_000), priority: 5 },
  ]);
  assert.deepEqual([answer.created, answer.updated, answer.deduplicated], [2, 0, 0]);
  const recurring = await getAgent(queue, "every-minute");
  assert.equal(recurring.agent?.interval?.seconds, 60n);
  assert.equal(recurring.agent?.priority, 5);
  const seen: string[] = [];
  const worker = new Worker(client, queue, unique("w"), async (lease) => {
    seen.push(`${lease.name}:${lease.agent?.payload.toString()}:${lease.agent?.labels.tenant ?? ""}`);
  }, { maxLeases: 2, logger: { warn: () => {} } });
  const running = worker.run();
  await eventually(async () => (await baton.completed(queue)).SUCCESS === 2);
  worker.stop();
  await running;
  assert.deepEqual(seen.sort(), ["every-minute::", "once:hello:a"]);
  await assert.rejects(getAgent(queue, "once"), /NOT_FOUND|not found/i);
  assert.equal((await getAgent(queue, "every-minute")).agent?.name, "every-minute");
});

test("a call sent again with its request id is answered by the first answer, not applied twice", async () => {
  const queue = unique("ts-reqid");
  const requestId = unique("req");
  const first = await producer.register(queue, [{ name: "job", payload: "first" }], { requestId });
  const again = await producer.register(queue, [{ name: "job", payload: "second" }], { requestId });
  assert.deepEqual(again, first);
  assert.equal((await getAgent(queue, "job")).agent?.payload.toString(), "first");
});

test("schedule and offer need no generated types", async () => {
  const receiver = unique("ts-recv");
  const scheduled = await producer.schedule(receiver, "invoice-7", { delayMs: 60_000, key: "invoice-7" });
  assert.equal(scheduled.created, true);
  assert.equal((await producer.schedule(receiver, "invoice-7", { key: "invoice-7" })).id, scheduled.id);
  const pool = unique("ts-pool");
  const offered = await producer.offer(pool, ["vm-1", ["vm-2", { zone: "a" }]]);
  assert.deepEqual(offered, { idle: 2, handed: 0, duplicates: 0 });
  assert.equal((await new Pool(client, pool).status()).idle, 2n);
});

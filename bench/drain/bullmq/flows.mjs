// The flows benchmark's BullMQ side (bench/scenarios/flows.rs): one dependency shape run by a
// FlowProducer and one Worker, on the run's redis-server.
//   node flows.mjs <redis unix socket> <shape> <size> <concurrency>
// Shapes:
//   fan      one parent job with <size> children in one FlowProducer.add. BullMQ runs a parent
//            after its children, so this is a fan-in: <size> jobs first, then the parent.
//   addbulk  one job whose processor adds <size> jobs with Queue.addBulk (batches of 1000):
//            how a BullMQ user makes <size> jobs run after one (BullMQ has no edge from one
//            job to many children).
//   chain    <size> nested jobs in one FlowProducer.add: job i is the only child of job i+1,
//            so job 0 (the deepest) runs first and job size-1 (the root) last.
// Every job returns a small result; a job with children reads them (getChildrenValues), as a
// Baton child's lease carries its parents' results. Jobs are removed on completion, as in
// bench/drain/bullmq/drain.mjs (a child's result still reaches its parent's processed hash).
//
// Protocol (stdout, one JSON object a line): {"phase":"ready"} once the producer and the worker
// are connected (the worker not yet running); then it waits for a line on stdin, starts the
// clock, submits, starts the worker, and prints {"phase":"done",...} when every job completed.
import { FlowProducer, Queue, Worker } from "bullmq";
import readline from "node:readline";

const [socket, shape, sizeArg, concurrencyArg] = process.argv.slice(2);
const size = Number(sizeArg);
const concurrency = Number(concurrencyArg);
if (!["fan", "addbulk", "chain"].includes(shape) || !(size > 0) || !(concurrency > 0)) {
  console.error("usage: node flows.mjs <socket> fan|addbulk|chain <size> <concurrency>");
  process.exit(2);
}
const connection = { path: socket, maxRetriesPerRequest: null };
const queueName = "flows";
const opts = { removeOnComplete: true, removeOnFail: true };
// Jobs in all: the fan shapes have a parent besides the <size> others.
const total = shape === "chain" ? size : size + 1;

// The tree, built before the clock starts (as the Baton side builds its requests).
let tree;
if (shape === "fan") {
  const children = [];
  for (let i = 1; i <= size; i++) children.push({ name: "child", queueName, data: { i }, opts });
  tree = { name: "parent", queueName, data: { i: 0, parent: true }, opts, children };
} else if (shape === "chain") {
  tree = { name: "step", queueName, data: { i: 0 }, opts };
  for (let i = 1; i < size; i++) tree = { name: "step", queueName, data: { i, parent: true }, opts, children: [tree] };
}

const producer = new FlowProducer({ connection });
const queue = new Queue(queueName, { connection });
await producer.waitUntilReady();
await queue.waitUntilReady();

const runs = new Uint32Array(total);
const started = new Float64Array(total);
const ended = new Float64Array(total);
let badParents = 0;
const worker = new Worker(
  queueName,
  async (job) => {
    const i = job.data.i;
    started[i] = performance.now();
    runs[i]++;
    if (job.data.parent) {
      // A chain step reads the result of the step before it; the fan's parent its children's.
      const values = await job.getChildrenValues();
      const n = Object.keys(values).length;
      if (n !== (shape === "fan" ? size : 1)) badParents++;
    }
    if (job.data.fanout) {
      // The parent's result goes with each job, as a Baton child's lease carries it.
      for (let j = 1; j <= size; j += 1000) {
        const batch = [];
        for (let k = j; k < Math.min(size + 1, j + 1000); k++) {
          batch.push({ name: "child", data: { i: k, parentResult: `r${i}` }, opts });
        }
        await queue.addBulk(batch);
      }
    }
    ended[i] = performance.now();
    return `r${i}`;
  },
  { connection, concurrency, autorun: false },
);
await worker.waitUntilReady();
console.log(JSON.stringify({ phase: "ready" }));

const lines = readline.createInterface({ input: process.stdin });
await new Promise((resolve) => lines.once("line", resolve));

let completed = 0;
const done = new Promise((resolve) => {
  worker.on("completed", () => {
    if (++completed === total) resolve();
  });
});
const start = performance.now();
if (shape === "addbulk") {
  await queue.add("parent", { i: 0, fanout: true }, opts);
} else {
  await producer.add(tree);
}
const submitSeconds = (performance.now() - start) / 1000;
worker.run();
await done;
const seconds = (performance.now() - start) / 1000;

let duplicates = 0;
let missing = 0;
for (const n of runs) {
  if (n === 0) missing++;
  if (n > 1) duplicates += n - 1;
}
// Chain: from the end of step i's processor to the start of step i+1's, in µs.
const handoff = [];
if (shape === "chain") {
  for (let i = 0; i + 1 < size; i++) handoff.push(Math.round((started[i + 1] - ended[i]) * 1000));
}
console.log(
  JSON.stringify({ phase: "done", steps: total, seconds, submit_seconds: submitSeconds, duplicates, missing, bad_parents: badParents, handoff_us: handoff }),
);
lines.close();
await worker.close();
await producer.close();
await queue.close();

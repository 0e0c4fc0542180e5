// The drain benchmark's BullMQ side: enqueue N no-op jobs with addBulk (before the clock
// starts), then one Worker with the given concurrency drains them. Prints two JSON lines:
// {"phase":"enqueued",...} when the queue is full, {"phase":"done",...} when every job has
// completed at least once (BullMQ's "completed" event, after moveToFinished), with how many
// jobs ran twice or never. Jobs are removed on completion, as in BullMQ's own benchmarks.
//   node drain.mjs <redis unix socket> <jobs> <concurrency>
import { Queue, Worker } from "bullmq";

const [socket, jobsArg, concurrencyArg] = process.argv.slice(2);
const jobs = Number(jobsArg);
const concurrency = Number(concurrencyArg);
const connection = { path: socket, maxRetriesPerRequest: null };
const queue = new Queue("drain", { connection });

const enqueueStart = performance.now();
for (let i = 0; i < jobs; i += 1000) {
  const batch = [];
  for (let j = i; j < Math.min(jobs, i + 1000); j++) {
    batch.push({ name: "noop", data: { i: j }, opts: { removeOnComplete: true, removeOnFail: true } });
  }
  await queue.addBulk(batch);
}
const enqueueSeconds = (performance.now() - enqueueStart) / 1000;
console.log(JSON.stringify({ phase: "enqueued", jobs, enqueue_seconds: enqueueSeconds }));

const runs = new Uint32Array(jobs);
const completed = new Uint8Array(jobs);
let distinct = 0;
const start = performance.now();
const worker = await new Promise((resolve) => {
  const w = new Worker("drain", async (job) => { runs[job.data.i]++; }, { connection, concurrency });
  w.on("completed", (job) => {
    const i = job.data.i;
    if (!completed[i]) {
      completed[i] = 1;
      if (++distinct === jobs) resolve(w);
    }
  });
});
const seconds = (performance.now() - start) / 1000;
let duplicates = 0;
let missing = 0;
for (const n of runs) {
  if (n === 0) missing++;
  if (n > 1) duplicates += n - 1;
}
console.log(JSON.stringify({ phase: "done", jobs, seconds, duplicates, missing }));
await worker.close();
await queue.close();

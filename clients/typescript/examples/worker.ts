// An example Baton worker, with the same flags and output as the Rust `baton-worker`: it takes
// agents from one queue, "works" on each for --work-ms (or until its lease is lost) and completes
// it with SUCCESS, printing every lease it acquires and every end as a JSON line on stdout.
// SIGINT/SIGTERM release held leases before exiting.
//
//   npm run build && node dist/examples/worker.js --addr 127.0.0.1:50051 --queue demo --worker-id ts-1

import { parseArgs } from "node:util";
import { Lease, Worker } from "../src";

const { values: args } = parseArgs({
  options: {
    addr: { type: "string", default: "127.0.0.1:50051" },
    queue: { type: "string" },
    "worker-id": { type: "string" },
    "max-leases": { type: "string", default: "1" },
    "work-ms": { type: "string", default: "1000" },
    "heartbeat-ms": { type: "string", default: "10000" },
  },
});
if (!args.queue || !args["worker-id"]) {
  console.error("usage: worker --queue Q --worker-id ID [--addr HOST:PORT] [--max-leases N] [--work-ms MS] [--heartbeat-ms MS]");
  process.exit(2);
}

const emit = (event: string, lease: Lease) =>
  console.log(JSON.stringify({ event, name: lease.name, token: Number(lease.token), t: Date.now() }));

const workMs = Number(args["work-ms"]);
const worker = new Worker(args.addr!.replace(/^http:\/\//, ""), args.queue, args["worker-id"], (lease, signal) => {
  emit("acquired", lease);
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => { emit("done", lease); resolve(); }, workMs);
    signal.addEventListener("abort", () => { clearTimeout(timer); emit("cancelled", lease); reject(signal.reason); }, { once: true });
  });
}, { maxLeases: Number(args["max-leases"]), heartbeatMs: Number(args["heartbeat-ms"]) });

for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => worker.stop());
worker.run().then(() => console.log(JSON.stringify({ event: "stopped", worker_id: args["worker-id"] })));

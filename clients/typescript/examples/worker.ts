// An example Baton worker, with the same flags and output as the Rust `baton-worker`: it takes
// agents from one queue, "works" on each for --work-ms (or until its lease is lost) and completes
// it with SUCCESS, printing every lease it acquires and every end as a JSON line on stdout.
// SIGINT/SIGTERM release held leases before exiting.
//
//   npm run build && node dist/examples/worker.js --addr 127.0.0.1:50051 --queue demo --worker-id ts-1
//
// Against a Baton with TLS (and mutual TLS) and API tokens:
//
//   BATON_TOKEN=baton_… node dist/examples/worker.js --addr localhost:50051 --queue demo --worker-id ts-1 \
//     --ca-file ca.pem [--cert-file client.pem --key-file client.key] [--token baton_…]

import { parseArgs } from "node:util";
import { connect, Lease, Worker } from "../src";

const { values: args } = parseArgs({
  options: {
    addr: { type: "string", default: "127.0.0.1:50051" },
    queue: { type: "string" },
    "worker-id": { type: "string" },
    "max-leases": { type: "string", default: "1" },
    "work-ms": { type: "string", default: "1000" },
    "heartbeat-ms": { type: "string", default: "10000" },
    "ca-file": { type: "string" },
    "cert-file": { type: "string" },
    "key-file": { type: "string" },
    token: { type: "string" },
  },
});
if (!args.queue || !args["worker-id"]) {
  console.error("usage: worker --queue Q --worker-id ID [--addr HOST:PORT] [--max-leases N] [--work-ms MS] [--heartbeat-ms MS]\n"
    + "              [--ca-file PEM] [--cert-file PEM --key-file PEM] [--token TOKEN (default: $BATON_TOKEN)]");
  process.exit(2);
}
if ((args["cert-file"] === undefined) !== (args["key-file"] === undefined)) {
  console.error("worker: --cert-file and --key-file go together (mutual TLS)");
  process.exit(2);
}

// One connection for the worker: TLS when a CA or client certificate is given (or the address
// starts with https://), the token on every call.
const client = connect(args.addr!, {
  ca: args["ca-file"],
  cert: args["cert-file"],
  key: args["key-file"],
  token: args.token ?? process.env.BATON_TOKEN,
});

const emit = (event: string, lease: Lease) =>
  console.log(JSON.stringify({ event, name: lease.name, token: Number(lease.token), t: Date.now() }));

const workMs = Number(args["work-ms"]);
const worker = new Worker(client, args.queue, args["worker-id"], (lease, signal) => {
  emit("acquired", lease);
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => { emit("done", lease); resolve(); }, workMs);
    signal.addEventListener("abort", () => { clearTimeout(timer); emit("cancelled", lease); reject(signal.reason); }, { once: true });
  });
}, { maxLeases: Number(args["max-leases"]), heartbeatMs: Number(args["heartbeat-ms"]) });

for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => worker.stop());
worker.run().then(() => {
  client.close();
  console.log(JSON.stringify({ event: "stopped", worker_id: args["worker-id"] }));
});

"""An example Baton worker, with the same flags and output as the Rust `baton-worker`: it takes
agents from one queue, "works" on each for --work-ms (or until its lease is lost) and completes
it with SUCCESS, printing every lease it acquires and every end as a JSON line on stdout.
SIGINT/SIGTERM release held leases before exiting.

    python examples/worker.py --addr 127.0.0.1:50051 --queue demo --worker-id py-1

Against a Baton with TLS and tokens (the token may come from $BATON_TOKEN instead):

    python examples/worker.py --addr localhost:50051 --queue demo --worker-id py-1 \
        --ca-file ca.pem --cert-file client.pem --key-file client.key --token "$TOKEN"
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time

import baton


def emit(event: str, lease) -> None:
    line = {"event": event, "name": lease.name, "token": lease.token, "t": int(time.time() * 1000)}
    print(json.dumps(line), flush=True)


async def main() -> None:
    parser = argparse.ArgumentParser(description="An example Baton worker")
    parser.add_argument("--addr", default="127.0.0.1:50051", help="Baton's gRPC address")
    parser.add_argument("--queue", required=True)
    parser.add_argument("--worker-id", required=True)
    parser.add_argument("--max-leases", type=int, default=1, help="leases held at once")
    parser.add_argument("--work-ms", type=int, default=1000, help="how long each run takes")
    parser.add_argument("--heartbeat-ms", type=int, default=10_000)
    parser.add_argument("--ca-file", help="PEM CA to check Baton's certificate against (turns TLS on)")
    parser.add_argument("--cert-file", help="client certificate (PEM) for mutual TLS, with --key-file")
    parser.add_argument("--key-file", help="the client certificate's private key (PEM)")
    parser.add_argument("--token", default=os.environ.get("BATON_TOKEN") or None,
                        help="API token sent on every call (default: $BATON_TOKEN)")
    args = parser.parse_args()
    if (args.cert_file is None) != (args.key_file is None):
        parser.error("--cert-file and --key-file go together")
    try:
        client = baton.connect(args.addr, ca_file=args.ca_file, cert_file=args.cert_file,
                               key_file=args.key_file, token=args.token)
    except ValueError as e:
        parser.error(str(e))

    async def work(lease) -> None:
        emit("acquired", lease)
        try:
            await asyncio.sleep(args.work_ms / 1000)
        except asyncio.CancelledError:
            emit("cancelled", lease)
            raise
        emit("done", lease)

    worker = baton.Worker(
        client,
        queue=args.queue,
        worker_id=args.worker_id,
        handler=work,
        max_leases=args.max_leases,
        heartbeat_every=args.heartbeat_ms / 1000,
    )
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, worker.stop)
    async with client:
        await worker.run()
    print(json.dumps({"event": "stopped", "worker_id": args.worker_id}), flush=True)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(130)

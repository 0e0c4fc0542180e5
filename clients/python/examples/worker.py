"""An example Baton worker, with the same flags and output as the Rust `baton-worker`: it takes
agents from one queue, "works" on each for --work-ms (or until its lease is lost) and completes
it with SUCCESS, printing every lease it acquires and every end as a JSON line on stdout.
SIGINT/SIGTERM release held leases before exiting.

    python examples/worker.py --addr 127.0.0.1:50051 --queue demo --worker-id py-1
"""

from __future__ import annotations

import argparse
import asyncio
import json
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
    args = parser.parse_args()

    async def work(lease) -> None:
        emit("acquired", lease)
        try:
            await asyncio.sleep(args.work_ms / 1000)
        except asyncio.CancelledError:
            emit("cancelled", lease)
            raise
        emit("done", lease)

    worker = baton.Worker(
        args.addr.removeprefix("http://"),
        queue=args.queue,
        worker_id=args.worker_id,
        handler=work,
        max_leases=args.max_leases,
        heartbeat_every=args.heartbeat_ms / 1000,
    )
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, worker.stop)
    await worker.run()
    print(json.dumps({"event": "stopped", "worker_id": args.worker_id}), flush=True)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(130)

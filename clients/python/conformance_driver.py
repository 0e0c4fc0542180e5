"""The Python driver of the conformance suite (clients/conformance/DRIVER.md): JSON commands on
stdin, JSON events on stdout, mapped onto the public helpers of `baton` and nothing else.

    BATON_TARGET=127.0.0.1:50051 python3 clients/python/conformance_driver.py
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import urllib.error
from email.message import Message
from typing import Any, Callable, Dict, Optional

import grpc
from opentelemetry import context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

import baton
from baton.v1 import agent_pb2, agent_pb2_grpc


def emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


# The command's "idempotency_mode" → IdempotencyMode.
MODES = {"": "IDEMPOTENCY_MODE_UNSPECIFIED", "keep_first": "IDEMPOTENCY_MODE_KEEP_FIRST",
         "replace": "IDEMPOTENCY_MODE_REPLACE", "debounce": "IDEMPOTENCY_MODE_DEBOUNCE"}


def agent(cmd: dict, name: str):
    """A one-shot agent `name` with the command's parents, idempotency key, mode and ttl."""
    return baton.agent(name, after=[baton.ref(p.get("queue", ""), p["name"]) for p in cmd.get("after", [])],
                       idempotency_key=cmd.get("idempotency_key", ""),
                       idempotency_mode=baton.IdempotencyMode.Value(MODES[cmd.get("idempotency_mode", "")]),
                       debounce=cmd["debounce_ms"] / 1000 if "debounce_ms" in cmd else None,
                       ttl=cmd["ttl_ms"] / 1000 if "ttl_ms" in cmd else None, wait_for=wait_for(cmd.get("wait_for")))


def wait_for(spec: Optional[dict]) -> Optional[baton.WaitFor]:
    """The command's {"event", "timeout_ms"} as the wait sugar."""
    if spec is None:
        return None
    return baton.WaitFor(spec.get("event", ""), timeout=spec["timeout_ms"] / 1000 if "timeout_ms" in spec else None)


def emit_batch(cmd: dict, status) -> None:
    emit("batch", id=cmd["id"], total=status.total, pending=status.pending, succeeded=status.succeeded,
         failed=status.failed, closed=status.closed, done=status.done)


class Driver:
    def __init__(self, target: str) -> None:
        self.client = baton.connect(target, tls=False)
        self.producer = baton.Producer(self.client)
        self.workers: Dict[str, tuple] = {}  # id → (Worker, run task, {name: Event} of held runs)
        self.leaders: Dict[str, baton.Leadership] = {}
        self.tasks: set = set()

    def start(self, cmd: dict) -> None:
        """Starts what `cmd` asks, without waiting for it."""
        handler: Callable = getattr(self, "cmd_" + str(cmd.get("cmd")), None) or self.unknown
        task = asyncio.create_task(self.guarded(handler, cmd))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def guarded(self, handler: Callable, cmd: dict) -> None:
        try:
            await handler(cmd)
        except Exception as e:  # noqa: BLE001 - reported as the protocol's error event
            logging.exception("command %s failed", cmd.get("cmd"))
            emit("error", cmd=cmd.get("cmd"), message=f"{type(e).__name__}: {e}")

    async def unknown(self, cmd: dict) -> None:
        emit("error", cmd=cmd.get("cmd"), message="unknown command")

    async def cmd_register(self, cmd: dict) -> None:
        try:
            answer = await self.producer.register(cmd["queue"], *(agent(cmd, n) for n in cmd["names"]),
                                                  request_id=cmd.get("request_id", ""))
        except grpc.aio.AioRpcError as e:
            emit("failed", id=cmd["id"], code=e.code().name)
            return
        emit("registered", id=cmd["id"], count=answer.created + answer.updated, deduplicated=answer.deduplicated,
             agents=[dict(name=a.name, created=a.created, deduplicated=a.deduplicated, result=a.result.result.decode(),
                          replaced=a.replaced, debounced=a.debounced) for a in answer.agents])

    async def cmd_call(self, cmd: dict) -> None:
        await self.awaited(cmd, self.producer.register_and_await(cmd["queue"], agent(cmd, cmd["name"]),
                                                                 timeout=cmd["timeout_ms"] / 1000))

    async def cmd_await(self, cmd: dict) -> None:
        await self.awaited(cmd, self.producer.await_result(cmd["queue"], cmd["name"], timeout=cmd["timeout_ms"] / 1000))

    async def awaited(self, cmd: dict, waiting) -> None:
        try:
            result = await waiting
        except grpc.aio.AioRpcError as e:
            emit("failed", id=cmd["id"], code=e.code().name)
            return
        if result is None:
            emit("awaited", id=cmd["id"], done=False)
        else:
            emit("awaited", id=cmd["id"], done=True, finish=baton.Finish.Name(result.finish),
                 result=result.result.decode())

    async def cmd_signal(self, cmd: dict) -> None:
        try:
            answer = await self.producer.signal(cmd["queue"], cmd["name"], cmd["event"], cmd.get("payload", ""),
                                                request_id=cmd.get("request_id", ""))
        except grpc.aio.AioRpcError as e:
            emit("failed", id=cmd["id"], code=e.code().name)
            return
        emit("signalled", id=cmd["id"], delivered=answer.delivered, kept=answer.kept, duplicate=answer.duplicate,
             consumed=answer.consumed)

    async def cmd_watch(self, cmd: dict) -> None:
        finish = None
        try:
            async for u in self.producer.watch(cmd["queue"], cmd["name"], timeout=cmd["timeout_ms"] / 1000):
                emit("watch_update", id=cmd["id"], update=baton.WatchUpdate.Name(u.update),
                     state=agent_pb2.AgentState.Name(u.state), token=u.token, sequence=u.sequence,
                     progress=u.progress, steps=[s.name for s in u.steps])
                if u.update == baton.WatchUpdate.Value("WATCH_UPDATE_FINISHED"):
                    finish = u.finish
        except grpc.aio.AioRpcError as e:
            emit("failed", id=cmd["id"], code=e.code().name)
            return
        if finish is None or not finish.done:
            emit("watched", id=cmd["id"], done=False)
        else:
            emit("watched", id=cmd["id"], done=True, finish=baton.Finish.Name(finish.result.finish),
                 result=finish.result.result.decode(), steps=[s.name for s in finish.steps])

    async def cmd_cancel(self, cmd: dict) -> None:
        request = agent_pb2.CancelRunRequest(queue=cmd["queue"], name=cmd["name"], cascade=cmd.get("cascade", False))
        try:
            answer = await self.client.stub(agent_pb2_grpc.AgentServiceStub).CancelRun(request, timeout=10)
        except grpc.aio.AioRpcError as e:
            emit("failed", id=cmd["id"], code=e.code().name)
            return
        emit("cancel", id=cmd["id"], requested=answer.requested, cascaded=answer.cascaded)

    async def cmd_batch(self, cmd: dict) -> None:
        answer = await self.producer.register_batch(
            cmd["batch"], cmd["queue"], *cmd.get("names", []), callback_queue=cmd.get("callback_queue", ""),
            on_success=cmd.get("on_success", []), on_complete=cmd.get("on_complete", []), close=cmd.get("close", False))
        emit_batch(cmd, answer.status)

    async def cmd_close_batch(self, cmd: dict) -> None:
        emit_batch(cmd, await self.producer.close_batch(cmd["batch"]))

    async def cmd_batch_status(self, cmd: dict) -> None:
        emit_batch(cmd, await self.producer.batch(cmd["batch"]))

    async def cmd_traced_register(self, cmd: dict) -> None:
        token = context.attach(TraceContextTextMapPropagator().extract({"traceparent": cmd["traceparent"]}))
        try:
            await self.cmd_register(cmd)
        finally:
            context.detach(token)

    async def cmd_worker(self, cmd: dict) -> None:
        wid, mode = cmd["id"], cmd.get("handler", {"mode": "succeed"})
        held: Dict[str, asyncio.Event] = {}

        async def handle(lease) -> Optional[str]:
            ids = dict(id=wid, name=lease.name, token=lease.token)
            event = baton.lease_event(lease)
            emit("started", **ids, parents=[dict(queue=p.queue, name=p.name, finish=baton.Finish.Name(p.finish),
                                                  result=p.result.decode()) for p in lease.parents],
                 steps=[s.name for s in lease.steps],
                 lease_event=event and dict(event=event.event, payload=event.payload.decode(), timed_out=event.timed_out))
            if mode["mode"] == "wait_for_event":
                if event is None:
                    emit("waiting", **ids)
                    raise wait_for(mode)
                emit("finished", **ids)
                return f"timeout:{event.event}" if event.timed_out else f"{event.event}:{event.payload.decode()}"
            failing = mode["mode"] == "fail"
            steps = mode.get("steps", []) if mode["mode"] == "steps" else []
            for i, step in enumerate(steps):
                if baton.recorded_step(lease, step) is not None:
                    continue
                if mode.get("progress"):
                    await worker.progress(lease, f"{i + 1}/{len(steps)}")
                answer = await worker.record_step(lease, step, "r-" + step)
                emit("step", **ids, step=step, recorded=answer.recorded)
                if step == mode.get("fail_after"):
                    failing = True
                    break
            if mode["mode"] == "hold":
                release = held.setdefault(lease.name, asyncio.Event())
                try:
                    await release.wait()
                except asyncio.CancelledError:
                    emit("cancelled", **ids)
                    raise
                finally:
                    held.pop(lease.name, None)
            emit("finished", **ids)
            if failing:
                message = mode.get("message", "failed")
                if mode.get("http_status"):
                    raise urllib.error.HTTPError(f"http://{lease.queue}/{lease.name}", mode["http_status"], message,
                                                 Message(), None)
                raise RuntimeError(message)
            return mode.get("result", "").replace("{name}", lease.name) or None

        worker = baton.Worker(self.client, cmd["queue"], cmd.get("worker_id", wid), handle,
                              max_leases=cmd.get("concurrency", 1),
                              heartbeat_every=cmd.get("heartbeat_ms", 3000) / 1000)
        self.workers[wid] = (worker, asyncio.create_task(worker.run()), held)

    async def cmd_finish(self, cmd: dict) -> None:
        self.workers[cmd["id"]][2].setdefault(cmd["name"], asyncio.Event()).set()

    async def cmd_finish_all(self, cmd: dict) -> None:
        for release in self.workers[cmd["id"]][2].values():
            release.set()

    async def cmd_stop(self, cmd: dict) -> None:
        worker, task, _ = self.workers.pop(cmd["id"])
        worker.stop()
        await task
        emit("stopped", id=cmd["id"])

    async def cmd_leader(self, cmd: dict) -> None:
        lid = cmd["id"]
        self.leaders[lid] = baton.Leadership(
            self.client, cmd["election"], cmd["candidate_id"], ttl=cmd["ttl_ms"] / 1000,
            on_elected=lambda token: emit("elected", id=lid, token=token),
            on_lost=lambda token: emit("lost", id=lid, token=token)).start()

    async def cmd_close(self, cmd: dict) -> None:
        await self.leaders.pop(cmd["id"]).close()
        emit("closed", id=cmd["id"])

    async def cmd_claim(self, cmd: dict) -> None:
        claimer = baton.Claimer(self.client, cmd["pool"], cmd["id"])
        claim = await claimer.claim(wait=cmd.get("wait_ms", 0) / 1000)
        if claim is None:
            emit("nothing", id=cmd["id"])
            return
        emit("claimed", id=cmd["id"], resource_id=claim.id, token=claim.token)
        if cmd.get("fail_with"):
            await claim.fail(cmd["fail_with"])
        else:
            await claim.return_()
        emit("ended", id=cmd["id"])

    async def shutdown(self) -> None:
        """stdin ended: every worker stopped and every leader closed, as their commands would."""
        await asyncio.gather(*(self.guarded(self.cmd_stop, {"cmd": "stop", "id": w}) for w in list(self.workers)),
                             *(self.guarded(self.cmd_close, {"cmd": "close", "id": lid}) for lid in list(self.leaders)))
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.client.close()


async def main() -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    driver = Driver(os.environ["BATON_TARGET"])
    loop = asyncio.get_running_loop()
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
    emit("ready")
    while line := await stdin.readline():
        if not line.strip():
            continue
        try:
            cmd = json.loads(line)
        except json.JSONDecodeError as e:
            emit("error", cmd=None, message=f"not JSON: {e}")
            continue
        driver.start(cmd)
    await driver.shutdown()


if __name__ == "__main__":
    asyncio.run(main())

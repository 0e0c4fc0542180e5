"""OpenTelemetry: trace context from the producer's calls to the worker's and the subscriber's
handler spans, against a live Baton, with the SDK and an in-memory exporter."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import baton
from baton import tracing
from baton.v1 import agent_pb2, agent_pb2_grpc

EXPORTER = InMemorySpanExporter()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def eventually(predicate, timeout=15.0, every=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        await asyncio.sleep(every)
    raise AssertionError("condition not met within %.1fs" % timeout)


@pytest.fixture(scope="module")
def tracer():
    """The SDK as an application installs it: the global tracer provider (set once per process),
    spans exported synchronously to memory."""
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
        trace.set_tracer_provider(provider)
    assert isinstance(trace.get_tracer_provider(), TracerProvider)
    return trace.get_tracer("baton-tests")


@pytest.fixture
async def client(baton_server):
    async with baton.connect(baton_server.addr) as c:
        yield c


def spans(name: str):
    return [s for s in EXPORTER.get_finished_spans() if s.name == name]


def traceparent_of(span) -> str:
    """`00-<trace id>-<span id>-<flags>` of a sampled span. Flags: 01 (sampled), or 03 from an
    SDK that also sets W3C level 2's random-trace-id bit (opentelemetry-sdk 1.45 does)."""
    sc = span.get_span_context()
    assert sc.trace_flags & 0x01 and sc.trace_flags & ~0x03 == 0
    return f"00-{sc.trace_id:032x}-{sc.span_id:016x}-{sc.trace_flags:02x}"


async def register(client, queue, name, **fields):
    agent = agent_pb2.Agent(name=name, timeout=baton.duration(30), error_interval=baton.duration(3600), **fields)
    await client.stub(agent_pb2_grpc.AgentServiceStub).Register(agent_pb2.RegisterRequest(queue=queue, agents=[agent]))


async def get_agent(client, queue, name) -> agent_pb2.AgentStatus:
    return (await client.stub(agent_pb2_grpc.AgentServiceStub).GetAgent(
        agent_pb2.GetAgentRequest(queue=queue, name=name))).agent


async def run_worker(worker: baton.Worker, until, *, ambient=None):
    """Runs `worker` (its loop inside the `ambient` span, if given) until `until()` holds."""
    if ambient is not None:
        with trace.use_span(ambient):
            task = asyncio.create_task(worker.run())
    else:
        task = asyncio.create_task(worker.run())
    try:
        return await eventually(until)
    finally:
        worker.stop()
        await asyncio.wait_for(task, 15)


async def test_one_shot_run_joins_the_producers_trace(tracer, client):
    queue, name = unique("py-otel"), "job"
    with tracer.start_as_current_span("produce") as produce:
        await register(client, queue, name)  # no traceparent field: Baton takes the metadata's
    producer = produce.get_span_context()
    expected = traceparent_of(produce)
    assert (await get_agent(client, queue, name)).agent.traceparent == expected

    seen = []

    async def handle(lease):
        current = trace.get_current_span().get_span_context()
        with tracer.start_as_current_span("inner"):
            pass
        seen.append((lease.agent.traceparent, current))

    worker = baton.Worker(client, queue, unique("w"), handle, heartbeat_every=0.2)
    await run_worker(worker, lambda: spans(f"process {queue}"))

    assert len(seen) == 1
    lease_traceparent, current = seen[0]
    assert lease_traceparent == expected
    assert current.trace_id == producer.trace_id and current.span_id != producer.span_id
    (span,) = spans(f"process {queue}")
    assert span.kind == SpanKind.CONSUMER
    assert span.instrumentation_scope.name == "baton-client"
    assert span.parent is not None and span.parent.span_id == producer.span_id and span.parent.is_remote
    assert span.context.trace_id == producer.trace_id
    assert span.context.span_id == current.span_id
    assert span.status.status_code == StatusCode.UNSET
    attrs = dict(span.attributes)
    assert attrs == {
        "messaging.system": "baton",
        "messaging.operation.type": "process",
        "messaging.destination.name": queue,
        "baton.agent.name": name,
        "baton.lease.token": attrs["baton.lease.token"],
        "baton.attempt": attrs["baton.attempt"],
        "baton.outcome": "SUCCESS",
    }
    assert isinstance(attrs["baton.lease.token"], int) and attrs["baton.lease.token"] > 0
    assert isinstance(attrs["baton.attempt"], int)
    # The handler's own spans nest under the run's.
    inner = [s for s in spans("inner") if s.context.trace_id == producer.trace_id]
    assert len(inner) == 1 and inner[0].parent.span_id == span.context.span_id


async def test_recurring_run_is_a_new_root_linked_to_the_producer(tracer, client):
    queue, name = unique("py-otel-rec"), "every-hour"
    with tracer.start_as_current_span("produce") as produce:
        await register(client, queue, name, interval=baton.duration(3600))
    producer = produce.get_span_context()
    seen = []

    async def handle(lease):
        seen.append(trace.get_current_span().get_span_context())

    worker = baton.Worker(client, queue, unique("w"), handle, heartbeat_every=0.2)
    # The worker's loop runs inside a span of its own: the run must not become its child either.
    with tracer.start_as_current_span("worker-loop") as loop_span:
        pass
    await run_worker(worker, lambda: spans(f"process {queue}"), ambient=loop_span)

    (span,) = spans(f"process {queue}")
    assert span.kind == SpanKind.CONSUMER
    assert span.parent is None
    assert span.context.trace_id not in (producer.trace_id, loop_span.get_span_context().trace_id)
    assert [(link.context.trace_id, link.context.span_id) for link in span.links] == [
        (producer.trace_id, producer.span_id)]
    assert seen and seen[0].span_id == span.context.span_id


async def test_scheduled_message_is_handled_in_the_producers_trace(tracer, client):
    receiver = unique("py-otel-rcv")
    with tracer.start_as_current_span("produce") as produce:
        scheduled = await baton.Scheduler(client).schedule(receiver, b"hello")
    producer = produce.get_span_context()
    seen = []

    async def handle(message):
        seen.append((message.traceparent, trace.get_current_span().get_span_context()))

    sub = baton.Subscriber(client, receiver, unique("c"), handle)
    task = asyncio.create_task(sub.run())
    try:
        await eventually(lambda: spans(f"process {receiver}"))
    finally:
        sub.stop()
        await asyncio.wait_for(task, 15)

    assert seen[0][0] == traceparent_of(produce)
    assert seen[0][1].trace_id == producer.trace_id
    (span,) = spans(f"process {receiver}")
    assert span.kind == SpanKind.CONSUMER
    assert span.instrumentation_scope.name == "baton-client"
    assert span.parent is not None and span.parent.span_id == producer.span_id
    assert span.context.trace_id == producer.trace_id
    assert dict(span.attributes) == {
        "messaging.system": "baton",
        "messaging.operation.type": "process",
        "messaging.destination.name": receiver,
        "messaging.message.id": scheduled.id,
        "baton.delivery_count": 1,
    }


async def test_no_active_span_no_traceparent_and_a_root_run(tracer, client):
    queue, name = unique("py-otel-none"), "job"
    assert not trace.get_current_span().get_span_context().is_valid
    await register(client, queue, name)
    assert (await get_agent(client, queue, name)).agent.traceparent == ""
    seen = []

    def handle(lease):  # a plain function: runs in a thread, with the span current there too
        seen.append(trace.get_current_span().get_span_context())

    with tracer.start_as_current_span("worker-loop") as loop_span:
        pass
    worker = baton.Worker(client, queue, unique("w"), handle, heartbeat_every=0.2)
    await run_worker(worker, lambda: spans(f"process {queue}"), ambient=loop_span)
    (span,) = spans(f"process {queue}")
    assert span.parent is None and list(span.links) == []
    assert span.context.trace_id != loop_span.get_span_context().trace_id
    assert seen and seen[0].span_id == span.context.span_id


async def test_explicit_traceparent_metadata_is_not_overwritten(tracer, client):
    queue, name = unique("py-otel-explicit"), "job"
    explicit = f"00-{uuid.uuid4().hex}-{uuid.uuid4().hex[:16]}-01"
    with tracer.start_as_current_span("produce"):
        agent = agent_pb2.Agent(name=name, timeout=baton.duration(30))
        await client.stub(agent_pb2_grpc.AgentServiceStub).Register(
            agent_pb2.RegisterRequest(queue=queue, agents=[agent]), metadata=(("traceparent", explicit),))
    assert (await get_agent(client, queue, name)).agent.traceparent == explicit


async def test_failing_handler_span_is_an_error(tracer, client):
    queue, name = unique("py-otel-fail"), "job"
    with tracer.start_as_current_span("produce"):
        await register(client, queue, name, max_attempts=1)

    async def handle(lease):
        raise baton.Failure.transient("upstream down")

    worker = baton.Worker(client, queue, unique("w"), handle, heartbeat_every=0.2)
    await run_worker(worker, lambda: spans(f"process {queue}"))
    span = spans(f"process {queue}")[0]
    assert span.status.status_code == StatusCode.ERROR
    assert span.attributes["baton.outcome"] == "TRANSIENT"
    assert [e.name for e in span.events] == ["exception"]
    assert span.events[0].attributes["exception.message"] == "upstream down"


async def test_failing_message_handler_span_is_an_error(tracer, client):
    receiver = unique("py-otel-rcv-fail")
    await baton.Scheduler(client).schedule(receiver, b"x")

    def handle(message):
        raise RuntimeError("no")

    sub = baton.Subscriber(client, receiver, unique("c"), handle)
    task = asyncio.create_task(sub.run())
    try:
        await eventually(lambda: spans(f"process {receiver}"))
    finally:
        sub.stop()
        await asyncio.wait_for(task, 15)
    span = spans(f"process {receiver}")[0]
    assert span.status.status_code == StatusCode.ERROR
    assert span.parent is None
    assert [e.name for e in span.events] == ["exception"]


def test_outgoing_metadata_carries_tracestate_and_keeps_an_explicit_traceparent():
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

    assert tracing.outgoing(None) == []
    sc = SpanContext(trace_id=0x1234, span_id=0x42, is_remote=True, trace_flags=TraceFlags(1),
                     trace_state=TraceState([("vendor", "v1")]))
    with trace.use_span(NonRecordingSpan(sc)):
        assert dict(tracing.outgoing(None)) == {
            "traceparent": f"00-{0x1234:032x}-{0x42:016x}-01", "tracestate": "vendor=v1"}
        assert tracing.outgoing([("Traceparent", "00-x")]) == []
        assert tracing.traceparent() == f"00-{0x1234:032x}-{0x42:016x}-01"
    assert tracing.parse_traceparent("") is None
    assert tracing.parse_traceparent("00-00000000000000000000000000000000-0000000000000042-01") is None
    assert tracing.parse_traceparent("garbage") is None
    parsed = tracing.parse_traceparent(f"00-{0x1234:032x}-{0x42:016x}-01")
    assert parsed is not None and parsed.is_remote and (parsed.trace_id, parsed.span_id) == (0x1234, 0x42)


def test_without_an_sdk_it_is_a_no_op():
    # A fresh interpreter, no tracer provider set: the API's defaults.
    code = """
import baton
from baton import tracing
from baton.v1 import agent_pb2
from opentelemetry import trace
assert tracing.outgoing(None) == []
lease = agent_pb2.Lease(queue="q", name="n", token=1,
    agent=agent_pb2.Agent(traceparent="00-%032x-%016x-01" % (5, 6)))
with tracing.lease_span(lease) as span:
    assert not span.is_recording()
    # Recent APIs pass the producer's context on to the handler's calls; older ones (1.20)
    # make the no-op span invalid.
    assert tracing.traceparent() in ("00-%032x-%016x-01" % (5, 6), "")
with tracing.lease_span(agent_pb2.Lease(queue="q", name="n", token=1)) as span:
    assert not span.get_span_context().is_valid
    assert tracing.outgoing(None) == []
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"

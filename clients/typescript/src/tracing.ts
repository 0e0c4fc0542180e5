// OpenTelemetry trace propagation, through the OpenTelemetry API only (the application brings
// the SDK; without one every call here is the API's no-op).
//
// - Producer side: every call made through a Client (unary calls and streams, every helper)
//   carries the current context as W3C `traceparent` (and `tracestate` when non-empty) metadata,
//   unless the call set its own `traceparent`. Baton stores it with the agent or message.
// - Consumer side: the Worker runs each lease's handler, and the Subscriber each message's, inside
//   a CONSUMER span `process <queue|receiver>` (tracer "baton-client"), as the active span. A
//   one-shot agent's run and a message are children of the stored traceparent; a recurring
//   agent's run is a new root span with a link to it.

import {
  Attributes,
  context,
  Context,
  Link,
  ROOT_CONTEXT,
  Span,
  SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
  Tracer,
  isSpanContextValid,
} from "@opentelemetry/api";
import { InterceptingCall, Interceptor } from "@grpc/grpc-js";
import type { Lease } from "./gen/baton/v1/agent";
import type { SubscribeResponse } from "./gen/baton/v1/schedule";

/** The tracer (instrumentation scope) name of the Worker's and Subscriber's spans. */
export const TRACER_NAME = "baton-client";

const VERSION = "0.1.0";

function tracer(): Tracer {
  // Looked up per span (not cached): an SDK registered after the helper was made is used.
  return trace.getTracer(TRACER_NAME, VERSION);
}

/** The W3C `traceparent` (and `tracestate`, if any) of `ctx`'s span context (default: the active
 *  context); undefined when it has no valid span context. */
export function traceparentOf(ctx: Context = context.active()): { traceparent: string; tracestate?: string } | undefined {
  const sc = trace.getSpanContext(ctx);
  if (!sc || !isSpanContextValid(sc)) return undefined;
  const flags = (sc.traceFlags & 0xff).toString(16).padStart(2, "0");
  const traceparent = `00-${sc.traceId}-${sc.spanId}-${flags}`;
  const tracestate = sc.traceState?.serialize();
  return tracestate ? { traceparent, tracestate } : { traceparent };
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The remote span context of a W3C `traceparent` header; undefined when it is empty or invalid
 *  (version ff, all-zero ids, a version 00 header with extra fields, upper-case hex…). */
export function parseTraceparent(traceparent: string | undefined): SpanContext | undefined {
  const m = TRACEPARENT.exec((traceparent ?? "").trim());
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m;
  if (version === "ff" || (version === "00" && rest !== undefined)) return undefined;
  const sc: SpanContext = { traceId, spanId, traceFlags: parseInt(flags, 16), isRemote: true };
  return isSpanContextValid(sc) ? sc : undefined;
}

/**
 * A grpc-js interceptor that adds the current OpenTelemetry context (the one active when the call
 * is made) as `traceparent` / `tracestate` metadata. A call whose metadata already has a
 * `traceparent` is left as it is; with no valid active span context nothing is added. Every
 * Client installs it; add it to your own stubs with `{ interceptors: [tracingInterceptor] }`.
 */
export const tracingInterceptor: Interceptor = (options, nextCall) => {
  // Read now, in the caller's context (start may run later, after call credentials).
  const carrier = traceparentOf();
  const call = nextCall(options);
  if (carrier === undefined) return new InterceptingCall(call);
  return new InterceptingCall(call, {
    start: (metadata, listener, next) => {
      if (metadata.get("traceparent").length > 0) return next(metadata, listener);
      const traced = metadata.clone(); // the caller's Metadata may be reused: left as it was
      traced.set("traceparent", carrier.traceparent);
      if (carrier.tracestate) traced.set("tracestate", carrier.tracestate);
      next(traced, listener);
    },
  });
};

/** A span and the context to run its handler in (the span active). */
export interface ProcessSpan {
  span: Span;
  context: Context;
}

function startProcessSpan(destination: string, traceparent: string, recurring: boolean, attributes: Attributes): ProcessSpan {
  const parent = parseTraceparent(traceparent);
  const base = context.active();
  const name = `process ${destination}`;
  let span: Span;
  if (parent !== undefined && !recurring) {
    // One-shot: the run joins the producer's trace.
    span = tracer().startSpan(name, { kind: SpanKind.CONSUMER, attributes }, trace.setSpanContext(ROOT_CONTEXT, parent));
  } else {
    // A new trace (never a child of what the loop runs in); a recurring agent's run links to
    // the registration's context instead of piling into its trace.
    const links: Link[] = parent !== undefined ? [{ context: parent }] : [];
    span = tracer().startSpan(name, { kind: SpanKind.CONSUMER, attributes, links, root: true }, base);
  }
  return { span, context: trace.setSpan(base, span) };
}

/** The span of one lease's run (Worker): see the module doc. */
export function startLeaseSpan(lease: Lease): ProcessSpan {
  const agent = lease.agent;
  const recurring = agent !== undefined && (agent.interval !== undefined || agent.cron !== "");
  return startProcessSpan(lease.queue, agent?.traceparent ?? "", recurring, {
    "messaging.system": "baton",
    "messaging.operation.type": "process",
    "messaging.destination.name": lease.queue,
    "baton.agent.name": lease.name,
    "baton.lease.token": Number(lease.token),
    "baton.attempt": lease.attempt,
  });
}

/** The span of one delivery (Subscriber): a child of the message's traceparent when valid. */
export function startMessageSpan(receiver: string, message: SubscribeResponse): ProcessSpan {
  return startProcessSpan(receiver, message.traceparent, false, {
    "messaging.system": "baton",
    "messaging.operation.type": "process",
    "messaging.destination.name": receiver,
    "messaging.message.id": message.id,
    "baton.delivery_count": message.deliveryCount,
  });
}

/** Ends a process span: `baton.outcome` (if given); on `error`, status ERROR and the exception. */
export function endProcessSpan(span: Span, outcome: string | undefined, error?: { error: unknown }): void {
  if (span.isRecording()) {
    if (outcome !== undefined) span.setAttribute("baton.outcome", outcome);
    if (error !== undefined) {
      const e = error.error;
      span.recordException(e instanceof Error ? e : String(e));
      span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
    }
  }
  span.end();
}

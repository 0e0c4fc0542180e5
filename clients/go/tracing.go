package baton

import (
	"context"
	"reflect"
	"slices"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

// OpenTelemetry trace propagation (the API only: the application installs the SDK).
//
//   - Producer side: every call through a Client (Dial) carries the current span context of its
//     ctx as W3C "traceparent" (and "tracestate") metadata, so Baton stores it with the agents it
//     registers and the messages it schedules. A call without a valid span context carries none;
//     a traceparent the caller put in the outgoing metadata is left alone.
//   - Consumer side: Worker and Subscriber run each handler inside a CONSUMER span of the tracer
//     TracerName, the child of the stored traceparent (one-shot agents, messages) or a new root
//     linked to it (recurring agents). See the README's "Tracing (OpenTelemetry)".
//
// Without an SDK (otel's default no-op provider) none of it records anything.

// TracerName is the instrumentation scope of the spans the Worker and the Subscriber start.
const TracerName = "baton-client"

// The W3C trace context metadata keys.
const (
	traceparentKey = "traceparent"
	tracestateKey  = "tracestate"
)

// traceContext is the W3C TraceContext format itself, not the global propagator (which is a
// no-op until the application configures one).
var traceContext propagation.TraceContext

// PropagateTraceContext are the dial options that put the current span context of each
// call's ctx (unary calls and streams) into its metadata as W3C traceparent / tracestate. Dial
// adds them; pass them to grpc.NewClient for a connection of your own:
//
//	conn, err := grpc.NewClient(target, append(opts, baton.PropagateTraceContext()...)...)
func PropagateTraceContext() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
			invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(withTraceMetadata(ctx), method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn,
			method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(withTraceMetadata(ctx), desc, cc, method, opts...)
		}),
	}
}

// withTraceMetadata is ctx with the traceparent (and tracestate, when not empty) of its span
// context in its outgoing metadata; ctx itself when it has no valid span context or the caller
// set a traceparent already.
func withTraceMetadata(ctx context.Context) context.Context {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ctx
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	if len(md.Get(traceparentKey)) > 0 {
		return ctx
	}
	carrier := propagation.MapCarrier{}
	traceContext.Inject(ctx, carrier)
	tp := carrier[traceparentKey]
	if tp == "" {
		return ctx
	}
	kv := []string{traceparentKey, tp}
	if ts := carrier[tracestateKey]; ts != "" && len(md.Get(tracestateKey)) == 0 {
		kv = append(kv, tracestateKey, ts)
	}
	return metadata.AppendToOutgoingContext(ctx, kv...)
}

// parseTraceparent is the remote span context of a W3C traceparent; invalid (the zero value)
// when tp is empty or malformed.
func parseTraceparent(tp string) trace.SpanContext {
	if tp == "" {
		return trace.SpanContext{}
	}
	ctx := traceContext.Extract(context.Background(), propagation.MapCarrier{traceparentKey: tp})
	return trace.SpanContextFromContext(ctx)
}

// tracer is the tracer of the handlers' spans: of tp, or of the global provider when tp is nil.
func tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(TracerName)
}

// isRecurring reports whether an agent runs again after a run (an interval or a cron).
func isRecurring(agent *batonv1.Agent) bool {
	return agent.GetCron() != "" || agent.GetInterval().AsDuration() > 0
}

// leaseSpans starts the spans of one Worker's handlers ("process <queue>"): the child of the
// agent's traceparent for a one-shot agent, else a new root (linked to that traceparent for a
// recurring agent). At little cost per lease: the tracer is looked up again only when the
// provider changes (a global provider installed later still counts), the options every span
// shares are built once per queue, and a lease's own attributes are set once the span records
// (a sampler sees the kind and the messaging attributes; otel's no-op provider allocates next to
// nothing). Not safe for concurrent use.
type leaseSpans struct {
	provider    trace.TracerProvider // Worker.TracerProvider; nil: otel.GetTracerProvider()
	tp          trace.TracerProvider // the provider tracer is of
	comparable  bool                 // tp can be compared with ==
	tracer      trace.Tracer
	queue, name string                  // the queue of the options below; "process <queue>"
	child, root []trace.SpanStartOption // a child span's options; a new root's
}

// start starts the span of lease's handler; the returned ctx (derived from ctx) carries it.
func (l *leaseSpans) start(ctx context.Context, lease *batonv1.Lease) (context.Context, trace.Span) {
	tp := l.provider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if l.tracer == nil || !l.comparable || tp != l.tp {
		l.tp, l.tracer = tp, tracer(tp)
		l.comparable = tp != nil && reflect.TypeOf(tp).Comparable()
	}
	if q := lease.GetQueue(); l.child == nil || q != l.queue {
		l.queue, l.name = q, "process "+q
		l.child = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), messagingAttributes(q)}
		l.root = append(slices.Clip(l.child), trace.WithNewRoot())
	}
	agent := lease.GetAgent()
	opts := l.root
	if producer := parseTraceparent(agent.GetTraceparent()); producer.IsValid() && !isRecurring(agent) {
		ctx, opts = trace.ContextWithRemoteSpanContext(ctx, producer), l.child
	} else if producer.IsValid() {
		opts = append(slices.Clip(l.root), trace.WithLinks(trace.Link{SpanContext: producer}))
	}
	ctx, span := l.tracer.Start(ctx, l.name, opts...)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("baton.agent.name", lease.GetName()),
			attribute.Int64("baton.lease.token", int64(lease.GetToken())),
			attribute.Int64("baton.attempt", int64(lease.GetAttempt())))
	}
	return ctx, span
}

// messagingAttributes are the messaging attributes of a span processing destination.
func messagingAttributes(destination string) trace.SpanStartEventOption {
	return trace.WithAttributes(attribute.String("messaging.system", "baton"),
		attribute.String("messaging.operation.type", "process"),
		attribute.String("messaging.destination.name", destination))
}

// startMessageSpan starts the span of one delivery's handler ("process <receiver>"): the child
// of the message's traceparent when it is valid, else a new root.
func startMessageSpan(ctx context.Context, tp trace.TracerProvider, receiver string,
	msg *batonv1.SubscribeResponse) (context.Context, trace.Span) {
	return startSpan(ctx, tp, receiver, msg.GetTraceparent(), false,
		attribute.String("messaging.message.id", msg.GetId()),
		attribute.Int64("baton.delivery_count", int64(msg.GetDeliveryCount())))
}

// startSpan starts a CONSUMER span "process <destination>": the child of the producer's
// traceparent when valid (a new root linked to it when linkOnly), else a new root.
func startSpan(ctx context.Context, tp trace.TracerProvider, destination, traceparent string, linkOnly bool,
	attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindConsumer),
		messagingAttributes(destination),
		trace.WithAttributes(attrs...),
	}
	producer := parseTraceparent(traceparent)
	switch {
	case producer.IsValid() && !linkOnly:
		ctx = trace.ContextWithRemoteSpanContext(ctx, producer)
	case producer.IsValid():
		opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: producer}))
	default:
		opts = append(opts, trace.WithNewRoot())
	}
	return tracer(tp).Start(ctx, "process "+destination, opts...)
}

// recordHandlerError records a handler's error on its span: status ERROR, an exception event.
func recordHandlerError(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}

// endLeaseSpan ends the span of a run once Baton answered its completion: baton.outcome is the
// outcome Baton applied (none when the completion was refused, or for a run not completed).
func endLeaseSpan(span trace.Span, result *batonv1.CompleteResult) {
	if !result.GetLeaseLost() && span.IsRecording() {
		span.SetAttributes(attribute.String("baton.outcome", outcomeName(result.GetResponse().GetOutcome())))
	}
	span.End()
}

// outcomeName is an outcome without its OUTCOME_ prefix: SUCCESS, TRANSIENT …
func outcomeName(o batonv1.Outcome) string {
	return strings.TrimPrefix(o.String(), "OUTCOME_")
}

// endMessageSpan ends the span of a message handler that returned err (an error: status ERROR,
// recorded).
func endMessageSpan(span trace.Span, err error) {
	recordHandlerError(span, err)
	span.End()
}

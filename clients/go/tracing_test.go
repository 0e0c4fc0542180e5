package baton_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	baton "github.com/baton-project/baton/clients/go"
	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

// The tests of trace propagation: a spanRecorder (spanrecorder_test.go), installed as the global
// provider once (the tests before these
// run with otel's default no-op provider); spans are told apart by their queue or receiver.
var tracing struct {
	once sync.Once
	exp  *spanRecorder
}

func installTracing() (*spanRecorder, *spanRecorder) {
	tracing.once.Do(func() {
		tracing.exp = newSpanRecorder()
		otel.SetTracerProvider(tracing.exp)
	})
	return tracing.exp, tracing.exp
}

// dialed is a Client (Dial) of the package's Baton, closed when t ends.
func dialed(t *testing.T) *baton.Client {
	t.Helper()
	c, err := baton.Dial(server.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// produce runs call inside a new span "produce" of tp and returns that span's context.
func produce(tp trace.TracerProvider, call func(ctx context.Context)) trace.SpanContext {
	ctx, span := tp.Tracer("test").Start(context.Background(), "produce")
	defer span.End()
	call(ctx)
	return span.SpanContext()
}

func traceparentOf(sc trace.SpanContext) string {
	return fmt.Sprintf("00-%s-%s-01", sc.TraceID(), sc.SpanID())
}

// exported waits for the ended spans named name, at least n of them, in the order they ended.
func exported(t *testing.T, exp *spanRecorder, name string, n int) []spanStub {
	t.Helper()
	var found []spanStub
	eventually(t, 20*time.Second, "span "+name, func() bool {
		found = found[:0]
		for _, s := range exp.GetSpans() {
			if s.Name == name {
				found = append(found, s)
			}
		}
		return len(found) >= n
	})
	return found
}

func attrs(s spanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// checkAttrs fails t for each attribute of s that is not as in want (string or int64 values).
func checkAttrs(t *testing.T, s spanStub, want map[string]any) {
	t.Helper()
	got := attrs(s)
	for k, w := range want {
		v, ok := got[attribute.Key(k)]
		switch w := w.(type) {
		case string:
			if !ok || v.Type() != attribute.STRING || v.AsString() != w {
				t.Errorf("%s: attribute %s = %v, want %q", s.Name, k, v.Emit(), w)
			}
		case int64:
			if !ok || v.Type() != attribute.INT64 || v.AsInt64() != w {
				t.Errorf("%s: attribute %s = %v, want %d", s.Name, k, v.Emit(), w)
			}
		}
	}
}

// seen is what a handler saw: its span context and the lease.
type seen struct {
	sc    trace.SpanContext
	lease *batonv1.Lease
}

// runTraced registers agent on a new queue through client inside a "produce" span (or with no
// span when withSpan is false), then runs a Worker over client — inside an unrelated span of
// its own, which must not become any run's parent — until the handler returned once; it
// returns the producer's span context, what the handler saw, and the run's exported span.
func runTraced(t *testing.T, withSpan bool, agent *batonv1.Agent, handler baton.Handler) (trace.SpanContext, seen, spanStub) {
	t.Helper()
	tp, exp := installTracing()
	client := dialed(t)
	queue := unique("go-trace")
	register := func(ctx context.Context) {
		_, err := batonv1.NewAgentServiceClient(client).Register(ctx, &batonv1.RegisterRequest{Queue: queue, Agents: []*batonv1.Agent{agent}})
		if err != nil {
			t.Fatal(err)
		}
	}
	var producer trace.SpanContext
	if withSpan {
		producer = produce(tp, register)
	} else {
		register(context.Background())
	}
	saw := make(chan seen, 1)
	w := baton.NewWorker(client, queue, unique("w"))
	w.HeartbeatEvery = 200 * time.Millisecond
	loopCtx, loop := tp.Tracer("test").Start(context.Background(), "worker-loop")
	defer loop.End()
	ctx, cancel := context.WithCancel(loopCtx)
	done := make(chan struct{})
	go func() {
		_ = w.Run(ctx, func(ctx context.Context, lease *batonv1.Lease) error {
			select {
			case saw <- seen{trace.SpanContextFromContext(ctx), lease}:
			default:
			}
			return handler(ctx, lease)
		})
		close(done)
	}()
	defer func() { cancel(); <-done }()
	var got seen
	select {
	case got = <-saw:
	case <-time.After(20 * time.Second):
		t.Fatal("the handler never ran")
	}
	span := exported(t, exp, "process "+queue, 1)[0]
	if span.SpanKind != trace.SpanKindConsumer || span.InstrumentationScope.Name != baton.TracerName {
		t.Errorf("span kind %v, scope %q", span.SpanKind, span.InstrumentationScope.Name)
	}
	if !got.sc.IsValid() || got.sc.SpanID() != span.SpanContext.SpanID() || got.sc.TraceID() != span.SpanContext.TraceID() {
		t.Errorf("the handler's ctx carries %v, not its span %v", got.sc, span.SpanContext)
	}
	if span.Parent.SpanID() == loop.SpanContext().SpanID() || span.SpanContext.TraceID() == loop.SpanContext().TraceID() {
		t.Errorf("the run's span is a child of the worker loop's context")
	}
	checkAttrs(t, span, map[string]any{
		"messaging.system":           "baton",
		"messaging.operation.type":   "process",
		"messaging.destination.name": queue,
		"baton.agent.name":           agent.GetName(),
		"baton.lease.token":          int64(got.lease.GetToken()),
		"baton.attempt":              int64(got.lease.GetAttempt()),
	})
	return producer, got, span
}

func TestTraceOneShotAgentRunJoinsTheProducersTrace(t *testing.T) {
	agent := &batonv1.Agent{Name: "job", Timeout: durationpb.New(30 * time.Second)}
	producer, got, span := runTraced(t, true, agent, func(context.Context, *batonv1.Lease) error { return nil })
	if tp := got.lease.GetAgent().GetTraceparent(); tp != traceparentOf(producer) {
		t.Errorf("lease traceparent %q, want %q", tp, traceparentOf(producer))
	}
	if got.sc.TraceID() != producer.TraceID() {
		t.Errorf("handler trace %v, want the producer's %v", got.sc.TraceID(), producer.TraceID())
	}
	if !span.Parent.IsRemote() || span.Parent.SpanID() != producer.SpanID() || span.Parent.TraceID() != producer.TraceID() {
		t.Errorf("parent %v, want the producer span %v", span.Parent, producer)
	}
	checkAttrs(t, span, map[string]any{"baton.outcome": "SUCCESS", "baton.attempt": int64(1)})
	if span.Status.Code != codes.Unset || len(span.Links) != 0 {
		t.Errorf("status %v, links %v", span.Status, span.Links)
	}
}

func TestTraceRegisterStoresTheCallersTraceparent(t *testing.T) {
	tp, _ := installTracing()
	client := dialed(t)
	agents := batonv1.NewAgentServiceClient(client)
	queue := unique("go-trace-stored")
	job := func(name string) *batonv1.RegisterRequest {
		return &batonv1.RegisterRequest{Queue: queue, Agents: []*batonv1.Agent{{Name: name, Timeout: durationpb.New(time.Minute)}}}
	}
	var explicit string
	producer := produce(tp, func(ctx context.Context) {
		if _, err := agents.Register(ctx, job("from-span")); err != nil {
			t.Fatal(err)
		}
		// A traceparent set by the caller in the call's metadata is not overwritten.
		explicit = fmt.Sprintf("00-%032x-%016x-01", 42, 7)
		if _, err := agents.Register(metadata.AppendToOutgoingContext(ctx, "traceparent", explicit), job("explicit")); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := agents.Register(context.Background(), job("no-span")); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"from-span": traceparentOf(producer), "explicit": explicit, "no-span": ""} {
		if got := getAgent(t, queue, name).GetAgent().GetTraceparent(); got != want {
			t.Errorf("%s: stored traceparent %q, want %q", name, got, want)
		}
	}
}

func TestTraceRecurringAgentRunIsANewTraceLinkedToTheProducer(t *testing.T) {
	agent := &batonv1.Agent{Name: "tick", Timeout: durationpb.New(30 * time.Second), Interval: durationpb.New(time.Hour)}
	producer, got, span := runTraced(t, true, agent, func(context.Context, *batonv1.Lease) error { return nil })
	if tp := got.lease.GetAgent().GetTraceparent(); tp != traceparentOf(producer) {
		t.Errorf("lease traceparent %q, want %q", tp, traceparentOf(producer))
	}
	if span.Parent.IsValid() || span.SpanContext.TraceID() == producer.TraceID() {
		t.Errorf("the recurring run's span has parent %v, trace %v: want a new root", span.Parent, span.SpanContext.TraceID())
	}
	if len(span.Links) != 1 || span.Links[0].SpanContext.TraceID() != producer.TraceID() ||
		span.Links[0].SpanContext.SpanID() != producer.SpanID() {
		t.Errorf("links %v, want one to the producer span %v", span.Links, producer)
	}
}

func TestTraceRunWithoutTraceparentIsANewRoot(t *testing.T) {
	agent := &batonv1.Agent{Name: "plain", Timeout: durationpb.New(30 * time.Second)}
	_, got, span := runTraced(t, false, agent, func(context.Context, *batonv1.Lease) error { return nil })
	if tp := got.lease.GetAgent().GetTraceparent(); tp != "" {
		t.Errorf("lease traceparent %q, want none", tp)
	}
	if span.Parent.IsValid() || len(span.Links) != 0 {
		t.Errorf("parent %v, links %v: want a root without links", span.Parent, span.Links)
	}
}

func TestTraceFailingHandlerSpanIsAnError(t *testing.T) {
	agent := &batonv1.Agent{Name: "fails", Timeout: durationpb.New(30 * time.Second), ErrorInterval: durationpb.New(time.Hour)}
	producer, _, span := runTraced(t, true, agent, func(context.Context, *batonv1.Lease) error {
		return baton.HTTPFailure(429, "slow down")
	})
	if span.Parent.SpanID() != producer.SpanID() {
		t.Errorf("parent %v, want the producer span", span.Parent)
	}
	if span.Status.Code != codes.Error {
		t.Errorf("status %v, want Error", span.Status)
	}
	checkAttrs(t, span, map[string]any{"baton.outcome": "THROTTLED"})
	recorded := false
	for _, e := range span.Events {
		recorded = recorded || e.Name == "exception"
	}
	if !recorded {
		t.Errorf("no exception event in %v", span.Events)
	}
}

func TestTraceScheduledMessageIsHandledInTheProducersTrace(t *testing.T) {
	tp, exp := installTracing()
	client := dialed(t)
	receiver := unique("go-trace-rcv")
	var scheduled *batonv1.ScheduleResponse
	producer := produce(tp, func(ctx context.Context) {
		var err error
		if scheduled, err = baton.NewProducer(client).Schedule(ctx, receiver, []byte("x")); err != nil {
			t.Fatal(err)
		}
	})
	// The first delivery fails (a span with status Error), the second (after the 0.5 s
	// ack timeout) succeeds.
	var mu sync.Mutex
	var handled []trace.SpanContext
	var traceparents []string
	sub := newSubscriber(client, receiver, "c1")
	stop := subscribe(sub, func(ctx context.Context, m *batonv1.SubscribeResponse) error {
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, trace.SpanContextFromContext(ctx))
		traceparents = append(traceparents, m.GetTraceparent())
		if len(handled) == 1 {
			return errors.New("not yet")
		}
		return nil
	})
	defer stop()
	eventually(t, 20*time.Second, "acked", func() bool { return sub.Acked() == 1 })
	spans := exported(t, exp, "process "+receiver, 2)
	mu.Lock()
	defer mu.Unlock()
	for i, span := range spans[:2] {
		if span.SpanKind != trace.SpanKindConsumer || span.InstrumentationScope.Name != baton.TracerName {
			t.Errorf("span kind %v, scope %q", span.SpanKind, span.InstrumentationScope.Name)
		}
		if !span.Parent.IsRemote() || span.Parent.SpanID() != producer.SpanID() || span.SpanContext.TraceID() != producer.TraceID() {
			t.Errorf("delivery %d: parent %v trace %v, want the producer span %v", i+1, span.Parent, span.SpanContext.TraceID(), producer)
		}
		if handled[i].SpanID() != span.SpanContext.SpanID() {
			t.Errorf("delivery %d: the handler's ctx carries %v, not its span %v", i+1, handled[i], span.SpanContext)
		}
		if traceparents[i] != traceparentOf(producer) {
			t.Errorf("delivery %d: traceparent %q, want %q", i+1, traceparents[i], traceparentOf(producer))
		}
		checkAttrs(t, span, map[string]any{
			"messaging.system":           "baton",
			"messaging.operation.type":   "process",
			"messaging.destination.name": receiver,
			"messaging.message.id":       scheduled.GetId(),
			"baton.delivery_count":       int64(i + 1),
		})
	}
	if spans[0].Status.Code != codes.Error || spans[1].Status.Code != codes.Unset {
		t.Errorf("statuses %v, %v: want Error, then Unset", spans[0].Status, spans[1].Status)
	}
}

// The TracerProvider field wins over the global provider.
func TestTraceWorkerTracerProviderField(t *testing.T) {
	installTracing()
	exp := newSpanRecorder()
	own := exp
	queue := unique("go-trace-own")
	register(t, queue, []string{"job"}, 30*time.Second, 0)
	w := newWorker(queue)
	w.TracerProvider = own
	stop := start(w, func(context.Context, *batonv1.Lease) error { return nil })
	defer stop()
	exported(t, exp, "process "+queue, 1)
	for _, s := range tracing.exp.GetSpans() {
		if s.Name == "process "+queue {
			t.Fatal("the span went to the global provider")
		}
	}
}

// Unary calls and streams through a Client carry traceparent and tracestate; without a span
// context, nothing. Checked against a local gRPC server that records each call's metadata.
func TestTraceMetadataOnUnaryCallsAndStreams(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	calls := make(chan metadata.MD, 8)
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		md, _ := metadata.FromIncomingContext(stream.Context())
		calls <- md
		return status.Error(grpccodes.Unimplemented, "recorded")
	}))
	go srv.Serve(lis)
	defer srv.Stop()
	client, err := baton.Dial(lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	agents := batonv1.NewAgentServiceClient(client)

	state, _ := trace.ParseTraceState("vendor=x")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5},
		TraceFlags: trace.FlagsSampled, TraceState: state})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	want := traceparentOf(sc)
	next := func(what string) metadata.MD {
		select {
		case md := <-calls:
			return md
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: not received", what)
			return nil
		}
	}
	check := func(what string, md metadata.MD, traceparent, tracestate string) {
		if got := md.Get("traceparent"); traceparent == "" && len(got) != 0 || traceparent != "" && (len(got) != 1 || got[0] != traceparent) {
			t.Errorf("%s: traceparent %v, want %q", what, got, traceparent)
		}
		if got := md.Get("tracestate"); tracestate == "" && len(got) != 0 || tracestate != "" && (len(got) != 1 || got[0] != tracestate) {
			t.Errorf("%s: tracestate %v, want %q", what, got, tracestate)
		}
	}

	_, _ = agents.GetAgent(ctx, &batonv1.GetAgentRequest{Queue: "q", Name: "n"})
	check("unary", next("unary"), want, "vendor=x")
	stream, err := agents.Session(ctx)
	if err == nil {
		_, _ = stream.Recv()
	}
	check("stream", next("stream"), want, "vendor=x")
	_, _ = agents.GetAgent(context.Background(), &batonv1.GetAgentRequest{Queue: "q", Name: "n"})
	check("no span", next("no span"), "", "")
	explicit := fmt.Sprintf("00-%032x-%016x-00", 9, 9)
	_, _ = agents.GetAgent(metadata.AppendToOutgoingContext(ctx, "traceparent", explicit), &batonv1.GetAgentRequest{Queue: "q", Name: "n"})
	check("explicit", next("explicit"), explicit, "")
}

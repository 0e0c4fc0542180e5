package baton_test

import (
	"context"
	"crypto/rand"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// spanRecorder is a tracer provider for the tests that keeps every ended span in memory, written
// against the OpenTelemetry API alone: the module's dependencies stay the API's (an application
// brings its own SDK), tests included.
type spanRecorder struct {
	embedded.TracerProvider
	mu    sync.Mutex
	ended []spanStub
}

// spanStub is what the tests read of an ended span (the fields of the SDK's tracetest.SpanStub
// they use).
type spanStub struct {
	Name                 string
	SpanKind             trace.SpanKind
	InstrumentationScope struct{ Name string }
	SpanContext, Parent  trace.SpanContext
	Links                []trace.Link
	Attributes           []attribute.KeyValue
	Status               struct {
		Code        codes.Code
		Description string
	}
	Events []struct{ Name string }
}

func newSpanRecorder() *spanRecorder { return &spanRecorder{} }

// GetSpans is the spans ended so far, in the order they ended.
func (r *spanRecorder) GetSpans() []spanStub {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]spanStub(nil), r.ended...)
}

func (r *spanRecorder) Tracer(name string, _ ...trace.TracerOption) trace.Tracer {
	return &recordingTracer{provider: r, scope: name}
}

type recordingTracer struct {
	embedded.Tracer
	provider *spanRecorder
	scope    string
}

// Start makes a sampled span: the child of ctx's span context unless WithNewRoot.
func (t *recordingTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	cfg := trace.NewSpanStartConfig(opts...)
	s := &recordingSpan{provider: t.provider}
	s.stub.Name, s.stub.SpanKind, s.stub.InstrumentationScope.Name = name, cfg.SpanKind(), t.scope
	s.stub.Links, s.stub.Attributes = cfg.Links(), cfg.Attributes()
	var tid trace.TraceID
	var sid trace.SpanID
	_, _ = rand.Read(tid[:])
	_, _ = rand.Read(sid[:])
	if parent := trace.SpanContextFromContext(ctx); parent.IsValid() && !cfg.NewRoot() {
		s.stub.Parent, tid = parent, parent.TraceID()
	}
	s.stub.SpanContext = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	return trace.ContextWithSpan(ctx, s), s
}

type recordingSpan struct {
	embedded.Span
	provider *spanRecorder
	mu       sync.Mutex
	stub     spanStub
	ended    bool
}

func (s *recordingSpan) End(...trace.SpanEndOption) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.ended = true
		s.provider.mu.Lock()
		s.provider.ended = append(s.provider.ended, s.stub)
		s.provider.mu.Unlock()
	}
}

func (s *recordingSpan) AddEvent(name string, _ ...trace.EventOption) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stub.Events = append(s.stub.Events, struct{ Name string }{name})
}

func (s *recordingSpan) AddLink(link trace.Link) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stub.Links = append(s.stub.Links, link)
}

func (s *recordingSpan) IsRecording() bool { return true }

func (s *recordingSpan) RecordError(error, ...trace.EventOption) { s.AddEvent("exception") }

func (s *recordingSpan) SpanContext() trace.SpanContext { return s.stub.SpanContext }

func (s *recordingSpan) SetStatus(code codes.Code, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stub.Status.Code, s.stub.Status.Description = code, description
}

func (s *recordingSpan) SetName(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stub.Name = name
}

func (s *recordingSpan) SetAttributes(kv ...attribute.KeyValue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stub.Attributes = append(s.stub.Attributes, kv...)
}

func (s *recordingSpan) TracerProvider() trace.TracerProvider { return s.provider }

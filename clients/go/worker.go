// Package baton is the Go client of Baton: the generated stubs (package
// github.com/baton-project/baton/clients/go/gen/baton/v1), a connection shared by all of them
// (Dial, Client: TLS, API token, keepalive, default deadline), a producer (Producer: register
// agents, schedule messages, offer pool resources), a worker (Worker), a leadership helper
// (Leadership), a claim helper for pooled resources (Claimer) and a subscriber to scheduled
// messages (Subscriber).
package baton

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

// ErrLeaseLost is the cause of a handler's context when Baton reported its lease lost: the
// result would be refused, so the handler should stop.
var ErrLeaseLost = errors.New("baton: lease lost")

// ErrRunCancelled is the cause of a handler's context when its run was cancelled
// (AgentService.CancelRun): the lease has ended, so the handler should stop.
var ErrRunCancelled = errors.New("baton: run cancelled")

// ErrShutdown is the cause of a handler's context when the worker is stopping; its lease is
// released for another worker unless the handler still returns nil (then it is completed).
var ErrShutdown = errors.New("baton: worker stopping")

// Handler runs one lease. Returning nil completes it with SUCCESS. An error completes it as a
// failure that Baton classifies (a *Failure's outcome when it has one; else the HTTP status of a
// *Failure or an HTTPStatusError, else the error's type name); its message goes whole (Baton
// clips a long one). ctx is cancelled (cause ErrLeaseLost, ErrRunCancelled or ErrShutdown) when
// the result no longer matters. A handler reports progress with Worker.ReportProgress and sets
// the run's result with Worker.SetResult; its lease's Parents are its parents' results.
// Returning a WaitFor ends the run by waiting (its next lease's Event says what woke it). ctx
// carries the OpenTelemetry span of the run ("process <queue>").
type Handler func(ctx context.Context, lease *batonv1.Lease) error

// Worker works one queue on an AgentService.Session stream: it grants the server credit (its
// free slots), runs the handler per lease pushed, heartbeats held leases, and sends completions
// back coalesced (every message carries whatever finished since the last one). A lease reported
// lost, or its run cancelled (CancelRun), cancels its handler. A broken stream is opened again
// with backoff, and the completions it did not answer go again (their tokens fence a repeat).
type Worker struct {
	Client   batonv1.AgentServiceClient
	Queue    string
	WorkerID string
	// MaxLeases is the most handlers running at once (the session's credit).
	MaxLeases int
	// HeartbeatEvery is how often held leases are extended; well under the agents' timeout.
	HeartbeatEvery time.Duration
	// ReleaseDelay is the delay before a lease released on shutdown is due again.
	ReleaseDelay time.Duration
	// ShutdownGrace bounds how long a stopping worker waits for cancelled handlers, and then for
	// the server's last answers.
	ShutdownGrace time.Duration
	Logger        *slog.Logger
	// TracerProvider starts the span each handler runs in ("process <queue>", see the README's
	// "Tracing (OpenTelemetry)"); nil: otel.GetTracerProvider(), a no-op until the application
	// installs an SDK.
	TracerProvider trace.TracerProvider

	mu       sync.Mutex
	kick     chan struct{} // a progress report: heartbeat at once
	waiters  map[leaseKey][]chan struct{}
	sent     map[leaseKey][]chan struct{} // waiters whose progress went: closed on the answer
	held     map[leaseKey]*run
	progress map[leaseKey]string
	results  map[leaseKey][]byte
}

// NewWorker returns a Worker with the defaults: 1 lease, 3 s heartbeats (three within the
// server's default orphan threshold of 10 s), 10 s shutdown grace.
func NewWorker(conn grpc.ClientConnInterface, queue, workerID string) *Worker {
	return &Worker{
		Client:         batonv1.NewAgentServiceClient(conn),
		Queue:          queue,
		WorkerID:       workerID,
		MaxLeases:      1,
		HeartbeatEvery: 3 * time.Second,
		ShutdownGrace:  10 * time.Second,
	}
}

// ReportProgress reports value (a small text, at most 256 bytes) for the run of lease: sent at
// once on a heartbeat (WatchAgent streams it; GetAgent shows the last one while the run is
// held). It returns once Baton answered that heartbeat (what the handler does next comes after
// the progress), or after HeartbeatEvery at most.
func (w *Worker) ReportProgress(lease *batonv1.Lease, value string) {
	done := make(chan struct{})
	w.mu.Lock()
	if w.progress == nil {
		w.progress, w.waiters, w.sent = map[leaseKey]string{}, map[leaseKey][]chan struct{}{}, map[leaseKey][]chan struct{}{}
	}
	k := keyOf(lease)
	w.progress[k] = value
	w.waiters[k] = append(w.waiters[k], done)
	select {
	case w.kick <- struct{}{}:
	default: // a heartbeat is due already
	}
	every := w.HeartbeatEvery
	w.mu.Unlock()
	timer := time.NewTimer(cmp.Or(every, 3*time.Second))
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	}
}

// progressAnswered wakes the ReportProgress calls whose heartbeat of k was answered.
func (w *Worker) progressAnswered(k leaseKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, done := range w.sent[k] {
		close(done)
	}
	delete(w.sent, k)
}

// WaitFor, returned by a handler (as its error), ends the run by waiting for Event (a Signal of
// it), for Timeout (then the next lease's Event is TimedOut), or the first of both; the run's
// next lease carries what woke it (lease.GetEvent()). As a Job's WaitFor, it gates the first run.
type WaitFor struct {
	Event   string
	Timeout time.Duration
}

func (f WaitFor) Error() string { return "baton: waiting for " + f.Event }

func (f WaitFor) proto() *batonv1.WaitFor {
	p := &batonv1.WaitFor{Event: f.Event}
	if f.Timeout > 0 {
		p.Timeout = durationpb.New(f.Timeout)
	}
	return p
}

// SetResult sets the result of the run of lease, sent with its completion when the handler
// returns nil: Await answers it, and the agent's children see it in their leases' Parents.
func (w *Worker) SetResult(lease *batonv1.Lease, result []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.results == nil {
		w.results = map[leaseKey][]byte{}
	}
	w.results[keyOf(lease)] = result
}

// RecordStep records step of the run of lease with its result (AgentService.RecordStep, fenced
// by the lease's token): a retried run's lease carries it (RecordedStep). A step recorded
// already keeps its first result (Recorded false); a lost lease is FAILED_PRECONDITION
// (LEASE_LOST).
func (w *Worker) RecordStep(ctx context.Context, lease *batonv1.Lease, step string, result []byte) (*batonv1.RecordStepResponse, error) {
	return w.Client.RecordStep(ctx, &batonv1.RecordStepRequest{
		Queue: lease.GetQueue(), Name: lease.GetName(), Token: lease.GetToken(), Step: step, Result: result,
	})
}

// RecordedStep is the result of step as an earlier attempt of this run recorded it
// (lease.Steps), and whether it was: a handler skips the steps a retried run's lease carries.
func RecordedStep(lease *batonv1.Lease, step string) ([]byte, bool) {
	for _, s := range lease.GetSteps() {
		if s.GetName() == step {
			return s.GetResult(), true
		}
	}
	return nil, false
}

type leaseKey struct {
	name  string
	token uint64
}

func keyOf(lease *batonv1.Lease) leaseKey { return leaseKey{lease.GetName(), lease.GetToken()} }

// run is one lease whose handler runs (or ran).
type run struct {
	lease  *batonv1.Lease
	ctx    context.Context
	cancel context.CancelCauseFunc
	span   trace.Span
	err    error // the handler's result, once it returned
	lost   bool  // guarded by Worker.mu
}

// session is what Run keeps across the streams it opens.
type session struct {
	w          *Worker
	handler    Handler
	maxLeases  int
	running    int
	done       chan *run             // handlers that returned
	unanswered map[leaseKey]answered // completions sent, not yet answered
	base       context.Context       // Run's ctx without its cancellation: the handlers' parent
	stopped    bool                  // close ran: Run returns
	spans      leaseSpans            // the handlers' spans
}

// answered is a completion waiting for the server's answer, and the span that ends with it.
type answered struct {
	completion *batonv1.SessionCompletion
	span       trace.Span
}

func (w *Worker) logger() *slog.Logger {
	if w.Logger != nil {
		return w.Logger
	}
	return slog.Default()
}

// Run works until ctx is done, then stops gracefully and returns nil: the completions of every
// handler that finished go to the server first; running handlers are cancelled (cause
// ErrShutdown) and awaited for ShutdownGrace, a handler that still returns nil is completed and
// the others' leases released; then the stream is half-closed and the server's last answers
// read. It returns INVALID_ARGUMENT at once when Baton refuses the session (a bad queue or
// worker id).
func (w *Worker) Run(ctx context.Context, handler Handler) error {
	s := &session{w: w, handler: handler, maxLeases: max(1, w.MaxLeases), unanswered: map[leaseKey]answered{}}
	s.base = context.WithoutCancel(ctx)
	s.spans.provider = w.TracerProvider
	s.done = make(chan *run, s.maxLeases)
	w.mu.Lock()
	w.held = map[leaseKey]*run{}
	w.kick = make(chan struct{}, 1)
	kick := w.kick
	w.mu.Unlock()
	var b backoff
	for {
		served, err := s.stream(ctx, kick)
		if s.stopped {
			return nil
		}
		if status.Code(err) == codes.InvalidArgument && !served && s.running == 0 && len(s.unanswered) == 0 {
			return err // a bad queue or worker id: nothing to stop
		}
		if served {
			b.reset()
		}
		delay := b.next(err)
		w.logger().Warn("baton: session ended; opening another", "queue", w.Queue, "err", err, "retry_in", delay)
		sleepCtx(ctx, delay) // when ctx is done, the next stream stops the worker
	}
}

// stream opens one Session and works on it until it breaks (err: why; nil when the server
// ended it) or ctx is done (then it stops the worker, on this stream: the one open, or a last one
// opened to stop on). served: the server answered once.
func (s *session) stream(ctx context.Context, kick <-chan struct{}) (served bool, err error) {
	w := s.w
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	first := &batonv1.SessionRequest{Open: &batonv1.SessionOpen{Queue: w.Queue, WorkerId: w.WorkerID}}
	if ctx.Err() == nil {
		first.Credit = uint32(s.maxLeases - s.running)
	}
	for _, a := range s.unanswered {
		first.Completions = append(first.Completions, a.completion)
	}
	stream, err := w.Client.Session(sctx)
	if err == nil {
		if err = stream.Send(first); err == io.EOF {
			err = nil // Recv says why
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			s.close(nil, nil)
		}
		return false, err
	}
	responses := pump(sctx, stream.Recv)
	if ctx.Err() != nil {
		s.close(stream, responses)
		return false, nil
	}
	every := w.HeartbeatEvery
	if every <= 0 {
		every = 3 * time.Second
	}
	beat := time.NewTicker(every)
	defer beat.Stop()
	for {
		select {
		case got := <-responses:
			if got.err == io.EOF {
				return served, nil
			} else if got.err != nil {
				return served, got.err
			}
			served = true
			s.answer(ctx, got.resp)
		case r := <-s.done:
			// A failed Send means the stream broke: Recv says why, and the completions go again.
			_ = stream.Send(s.finished(r))
		case <-kick:
			if m := s.heartbeats(); len(m.Heartbeats) > 0 {
				_ = stream.Send(m)
			}
		case <-beat.C:
			if m := s.heartbeats(); len(m.Heartbeats) > 0 {
				_ = stream.Send(m)
			}
		case <-ctx.Done():
			s.close(stream, responses)
			return served, nil
		}
	}
}

// finished is the message reporting r and every other handler that returned meanwhile. When
// handlers still run once those are taken, it yields the processor once (runtime.Gosched, never a
// sleep) so handlers about to return do, and reports them in the same message: without it, short
// handlers and this loop take turns on a processor and each message carries one or two.
func (s *session) finished(r *run) *batonv1.SessionRequest {
	m := &batonv1.SessionRequest{Completions: make([]*batonv1.SessionCompletion, 0, s.running)}
	yielded := false
	for r != nil {
		s.finish(r, m)
		select {
		case r = <-s.done:
		default:
			r = nil
			if !yielded && s.running > 0 {
				yielded = true
				runtime.Gosched()
				select {
				case r = <-s.done:
				default:
				}
			}
		}
	}
	return m
}

// close stops the worker on stream (nil: none could be opened): the completions of handlers
// that finished go at once; running handlers are cancelled and awaited (ShutdownGrace); what
// they return is completed (nil, or an error not caused by the cancellation) or released, as are
// the leases of handlers still running after the grace; then the stream is half-closed and the
// server's answers read until it ends it (ShutdownGrace at most).
func (s *session) close(stream batonv1.AgentService_SessionClient, responses <-chan received[*batonv1.SessionResponse]) {
	s.stopped = true
	defer func() {
		for _, a := range s.unanswered {
			a.span.End() // never answered: no outcome
		}
	}()
	if len(s.done) > 0 && stream != nil {
		m := s.finished(<-s.done)
		m.Credit = 0 // no more leases: the worker is stopping
		_ = stream.Send(m)
	}
	m := &batonv1.SessionRequest{}
	for _, k := range s.cancelAndAwait(func(r *run) { s.finish(r, m) }) {
		m.Releases = append(m.Releases, s.w.releaseOf(k))
	}
	if stream == nil {
		return // Baton unreachable: the leases come back when it finds this worker gone
	}
	m.Credit = 0
	if len(m.Completions)+len(m.Releases) > 0 {
		_ = stream.Send(m)
	}
	_ = stream.CloseSend()
	deadline := time.After(s.w.grace())
	for {
		select {
		case got := <-responses:
			if got.err != nil {
				return
			}
			s.answer(nil, got.resp)
		case <-deadline:
			s.w.logger().Warn("baton: the server did not end the session in time", "queue", s.w.Queue)
			return
		}
	}
}

// cancelAndAwait cancels every running handler (cause ErrShutdown) and passes each that returns
// to each, until none runs or ShutdownGrace is over; it returns the leases of handlers still
// running then (forgotten: their leases are to be released).
func (s *session) cancelAndAwait(each func(*run)) (running []leaseKey) {
	w := s.w
	w.mu.Lock()
	for _, r := range w.held {
		r.cancel(ErrShutdown)
	}
	w.mu.Unlock()
	timeout := time.After(w.grace())
	for s.running > 0 {
		select {
		case r := <-s.done:
			each(r)
		case <-timeout:
			w.logger().Warn("baton: handlers still running after the shutdown grace; releasing their leases")
			w.mu.Lock()
			defer w.mu.Unlock()
			for k, r := range w.held {
				if !r.lost {
					running = append(running, k)
				}
			}
			clear(w.held)
			return running
		}
	}
	return nil
}

// answer applies one server message (ctx: nil once the worker stops): leases to run,
// completions answered, leases lost.
func (s *session) answer(ctx context.Context, resp *batonv1.SessionResponse) {
	w := s.w
	for _, c := range resp.GetCompleted() {
		k := leaseKey{c.GetName(), c.GetToken()}
		if a, ok := s.unanswered[k]; ok {
			endLeaseSpan(a.span, c)
			delete(s.unanswered, k)
		}
		if c.GetLeaseLost() {
			w.logger().Warn("baton: completion refused: the lease was lost", "name", c.GetName(), "token", c.GetToken())
		}
	}
	var cancelled map[leaseKey]bool
	if len(resp.GetCancelled()) > 0 {
		cancelled = map[leaseKey]bool{}
	}
	for _, c := range resp.GetCancelled() {
		cancelled[leaseKey{c.GetName(), c.GetToken()}] = true
	}
	for _, lost := range resp.GetLost() {
		w.markLost(leaseKey{lost.GetName(), lost.GetToken()}, cancelled)
		w.progressAnswered(leaseKey{lost.GetName(), lost.GetToken()})
	}
	for _, e := range resp.GetExtended() {
		w.progressAnswered(leaseKey{e.GetName(), e.GetToken()})
	}
	for _, lease := range resp.GetLeases() {
		if ctx == nil || ctx.Err() != nil {
			// Pushed as the worker stops: hand it back at once.
			rctx, cancel := context.WithTimeout(context.Background(), w.grace())
			w.release(rctx, w.releaseOf(keyOf(lease)))
			cancel()
			continue
		}
		s.start(lease)
	}
}

// start runs the handler of lease on a goroutine of its own, inside its span.
func (s *session) start(lease *batonv1.Lease) {
	hctx, cancel := context.WithCancelCause(s.base)
	hctx, span := s.spans.start(hctx, lease)
	r := &run{lease: lease, ctx: hctx, cancel: cancel, span: span}
	s.w.mu.Lock()
	s.w.held[keyOf(lease)] = r
	s.w.mu.Unlock()
	s.running++
	go func() {
		r.err = callHandler(hctx, lease, s.handler)
		s.done <- r
	}()
}

// finish adds a returned handler to m: a free slot (credit), and its completion; or, when it
// failed because it was cancelled, its lease handed back (unless lost: the server has it).
func (s *session) finish(r *run, m *batonv1.SessionRequest) {
	w := s.w
	k := keyOf(r.lease)
	w.mu.Lock()
	delete(w.held, k)
	delete(w.progress, k)
	result := w.results[k]
	delete(w.results, k)
	lost := r.lost
	w.mu.Unlock()
	s.running--
	m.Credit++
	var wait WaitFor
	waiting := errors.As(r.err, &wait)
	if !waiting {
		recordHandlerError(r.span, r.err)
	}
	switch {
	case lost:
		r.span.End()
	case waiting:
		c := &batonv1.SessionCompletion{Name: k.name, Token: k.token, WaitFor: wait.proto()}
		s.unanswered[k] = answered{c, r.span}
		m.Completions = append(m.Completions, c)
	case r.err != nil && r.ctx.Err() != nil:
		m.Releases = append(m.Releases, w.releaseOf(k))
		r.span.End()
	default:
		c := completion(r.lease, r.err)
		if r.err == nil {
			c.Result = result
		}
		s.unanswered[k] = answered{c, r.span}
		m.Completions = append(m.Completions, c)
	}
	r.cancel(nil)
}

// heartbeats is a message extending every lease whose handler still runs for a result.
func (s *session) heartbeats() *batonv1.SessionRequest {
	w := s.w
	m := &batonv1.SessionRequest{}
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, r := range w.held {
		if !r.lost {
			m.Heartbeats = append(m.Heartbeats, &batonv1.SessionLease{Name: k.name, Token: k.token, Progress: w.progress[k]})
			delete(w.progress, k)
			if len(w.waiters[k]) > 0 {
				w.sent[k] = append(w.sent[k], w.waiters[k]...)
				delete(w.waiters, k)
			}
		}
	}
	return m
}

// markLost marks a held lease lost and cancels its handler (cause ErrRunCancelled when its run
// was cancelled, else ErrLeaseLost); it stays held until the handler returns.
func (w *Worker) markLost(k leaseKey, cancelled map[leaseKey]bool) {
	w.mu.Lock()
	r, ok := w.held[k]
	if ok {
		r.lost = true
	}
	w.mu.Unlock()
	switch {
	case !ok:
	case cancelled[k]:
		w.logger().Info("baton: run cancelled; cancelling its handler", "queue", w.Queue, "name", k.name, "token", k.token)
		r.cancel(ErrRunCancelled)
	default:
		w.logger().Warn("baton: lease lost; cancelling its handler", "queue", w.Queue, "name", k.name, "token", k.token)
		r.cancel(ErrLeaseLost)
	}
}

func (w *Worker) releaseOf(k leaseKey) *batonv1.SessionRelease {
	rel := &batonv1.SessionRelease{Name: k.name, Token: k.token}
	if w.ReleaseDelay > 0 {
		rel.Delay = durationpb.New(w.ReleaseDelay)
	}
	return rel
}

// release hands a lease back by a Release call (pushed after the stream was half-closed).
func (w *Worker) release(ctx context.Context, rel *batonv1.SessionRelease) {
	_, err := w.Client.Release(ctx, &batonv1.ReleaseRequest{Queue: w.Queue, Name: rel.GetName(), Token: rel.GetToken(), Delay: rel.GetDelay()})
	if err != nil {
		w.logger().Warn("baton: release failed", "name", rel.GetName(), "token", rel.GetToken(), "err", err)
	}
}

func (w *Worker) grace() time.Duration {
	if w.ShutdownGrace > 0 {
		return w.ShutdownGrace
	}
	return 10 * time.Second
}

func callHandler(ctx context.Context, lease *batonv1.Lease, handler Handler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &Failure{Message: "handler panicked: " + toString(p)}
		}
	}()
	return handler(ctx, lease)
}

func toString(v any) string {
	if e, ok := v.(error); ok {
		return e.Error()
	}
	if s, ok := v.(string); ok {
		return s
	}
	return "panic"
}

// received is one Recv of a stream: a server message, or the error (io.EOF: a clean end) that
// ended it.
type received[T any] struct {
	resp T
	err  error
}

// pump reads a stream on a goroutine of its own, until the stream ends or ctx is done, so a
// loop can select on the server's messages beside its own events.
func pump[T any](ctx context.Context, recv func() (T, error)) <-chan received[T] {
	responses := make(chan received[T], 16)
	go func() {
		for {
			resp, err := recv()
			select {
			case responses <- received[T]{resp, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return responses
}

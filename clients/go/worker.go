// Package baton is the Go client of Baton: the generated stubs (package
// github.com/baton-project/baton/clients/go/gen/baton/v1), a connection shared by all of them
// (Dial, Client: TLS, API token, keepalive, default deadline), a worker loop (Worker), a
// leadership helper (Leadership), a claim helper for pooled resources (Claimer, Pool) and
// scheduled messages (Scheduler, Subscriber).
package baton

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
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
// released for another worker.
var ErrShutdown = errors.New("baton: worker stopping")

// Handler runs one lease. Returning nil completes it with SUCCESS; an error completes it with
// the outcome Classify gives. ctx is cancelled (cause ErrLeaseLost, ErrRunCancelled or
// ErrShutdown) when the result no longer matters. A handler reports progress with
// Worker.ReportProgress. ctx carries the OpenTelemetry span of the run ("process <queue>").
type Handler func(ctx context.Context, lease *batonv1.Lease) error

// Worker is a worker of one queue, modelled on Baton's Rust baton::worker::Worker: leases
// pushed on a Session stream (or long-poll Acquire) → run the handler → heartbeat while it
// runs → complete with the outcome. A lease
// reported lost, or its run cancelled (CancelRun), cancels its handler; progress reported with
// ReportProgress goes with the lease's next heartbeat; on shutdown the loop stops acquiring, cancels running
// handlers and Releases their leases, so another worker takes them at once.
type Worker struct {
	Client   batonv1.AgentServiceClient
	Queue    string
	WorkerID string
	// MaxLeases is the most handlers running at once (the session's credit; the most leases
	// asked for per Acquire).
	MaxLeases int
	// Wait is the long-poll wait of each Acquire.
	Wait time.Duration
	// HeartbeatEvery is how often held leases are extended; well under the agents' timeout. It
	// also keeps the worker alive for Baton's orphan sweeper while it holds nothing.
	HeartbeatEvery time.Duration
	// ReleaseDelay is the delay before a lease released on shutdown is due again.
	ReleaseDelay time.Duration
	// ShutdownGrace bounds how long Run waits for cancelled handlers before releasing.
	ShutdownGrace time.Duration
	// Unary makes Run use Acquire, Heartbeat and Complete calls instead of a Session stream.
	Unary  bool
	Logger *slog.Logger
	// TracerProvider starts the span each handler runs in ("process <queue>", see the README's
	// "Tracing (OpenTelemetry)"); nil: otel.GetTracerProvider(), a no-op until the application
	// installs an SDK.
	TracerProvider trace.TracerProvider

	mu       sync.Mutex
	held     map[leaseKey]*run
	progress map[leaseKey]string
}

// ReportProgress reports value (a small text, at most 256 bytes) for the run of lease: sent
// with the lease's next heartbeat; GetAgent shows the last one while the run is held.
func (w *Worker) ReportProgress(lease *batonv1.Lease, value string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.progress == nil {
		w.progress = map[leaseKey]string{}
	}
	w.progress[leaseKey{lease.GetName(), lease.GetToken()}] = value
}

// takeProgress is the report not yet sent for k, or ""; w.mu is held.
func (w *Worker) takeProgress(k leaseKey) string {
	v := w.progress[k]
	delete(w.progress, k)
	return v
}

type leaseKey struct {
	name  string
	token uint64
}

type run struct {
	lease  *batonv1.Lease
	cancel context.CancelCauseFunc
	lost   bool
}

// NewWorker returns a Worker with the defaults: 1 lease, 30 s wait, 3 s heartbeats (three
// within the server's default orphan threshold of 10 s).
func NewWorker(conn grpc.ClientConnInterface, queue, workerID string) *Worker {
	return &Worker{
		Client:         batonv1.NewAgentServiceClient(conn),
		Queue:          queue,
		WorkerID:       workerID,
		MaxLeases:      1,
		Wait:           30 * time.Second,
		HeartbeatEvery: 3 * time.Second,
		ShutdownGrace:  10 * time.Second,
	}
}

func (w *Worker) logger() *slog.Logger {
	if w.Logger != nil {
		return w.Logger
	}
	return slog.Default()
}

// Run works until ctx is done, then cancels running handlers, releases what it holds and
// returns nil.
//
// Its hot path is one AgentService.Session stream (session.go): the server pushes leases as
// they become due, at most MaxLeases running at once (the credit), and completions go back on
// the stream, batched. A server without Session (UNIMPLEMENTED) gets the unary loop: long-poll
// Acquire, Heartbeat, Complete. Unary forces the unary loop.
func (w *Worker) Run(ctx context.Context, handler Handler) error {
	maxLeases := max(1, w.MaxLeases)
	w.mu.Lock()
	w.held = map[leaseKey]*run{}
	w.mu.Unlock()
	if !w.Unary && w.runSession(ctx, handler, maxLeases) {
		return nil
	}
	return w.runUnary(ctx, handler, maxLeases)
}

// runUnary is the worker loop over unary calls.
func (w *Worker) runUnary(ctx context.Context, handler Handler, maxLeases int) error {
	slots := make(chan struct{}, maxLeases)
	var running sync.WaitGroup
	beatsDone := make(chan struct{})
	go func() { defer close(beatsDone); w.heartbeatLoop(ctx) }()

	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		// Wait for a free slot, then ask for as many leases as there are free slots.
		select {
		case slots <- struct{}{}:
			<-slots
		case <-ctx.Done():
			continue
		}
		want := maxLeases - len(slots)
		callCtx, cancel := context.WithTimeout(ctx, w.Wait+10*time.Second)
		var trailer metadata.MD
		resp, err := w.Client.Acquire(callCtx, &batonv1.AcquireRequest{
			Queue: w.Queue, WorkerId: w.WorkerID, MaxLeases: uint32(want), Wait: durationpb.New(w.Wait),
		}, grpc.Trailer(&trailer))
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			delay := pushback(trailer, backoff)
			w.logger().Warn("baton: acquire failed", "err", err, "retry_in", delay)
			sleepCtx(ctx, delay)
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		for _, lease := range resp.GetLeases() {
			slots <- struct{}{}
			hctx, hcancel := context.WithCancelCause(context.WithoutCancel(ctx))
			r := &run{lease: lease, cancel: hcancel}
			w.mu.Lock()
			w.held[leaseKey{lease.GetName(), lease.GetToken()}] = r
			w.mu.Unlock()
			running.Add(1)
			go func() {
				defer running.Done()
				defer func() { <-slots }()
				w.runOne(hctx, r, handler)
			}()
		}
	}

	// Shutdown: cancel handlers, hand their leases back, stop heartbeating.
	w.cancelHeld()
	done := make(chan struct{})
	go func() { running.Wait(); close(done) }()
	grace := w.ShutdownGrace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	select {
	case <-done:
	case <-time.After(grace):
		w.logger().Warn("baton: handlers still running after the shutdown grace; releasing their leases")
	}
	<-beatsDone
	w.mu.Lock()
	held := w.held
	w.held = map[leaseKey]*run{}
	w.mu.Unlock()
	for _, r := range held {
		w.release(r.lease)
	}
	return nil
}

func (w *Worker) runOne(ctx context.Context, r *run, handler Handler) {
	err := w.callHandler(ctx, r.lease, handler)
	w.mu.Lock()
	if ctx.Err() != nil || r.lost {
		w.mu.Unlock()
		return // lost, or shutting down: Run releases what is held
	}
	delete(w.held, leaseKey{r.lease.GetName(), r.lease.GetToken()})
	w.mu.Unlock()
	r.cancel(nil)
	w.complete(r.lease, err)
}

// callHandler runs handler on lease inside its span (startLeaseSpan), which ctx carries to the
// handler.
func (w *Worker) callHandler(ctx context.Context, lease *batonv1.Lease, handler Handler) error {
	sctx, span := startLeaseSpan(ctx, w.TracerProvider, lease)
	err := callHandler(sctx, lease, handler)
	endLeaseSpan(ctx, span, err)
	return err
}

func callHandler(ctx context.Context, lease *batonv1.Lease, handler Handler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = NewFailure(batonv1.Outcome_OUTCOME_UNKNOWN, "handler panicked: "+toString(p))
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

func (w *Worker) complete(lease *batonv1.Lease, err error) {
	// One request id for every attempt below: a retry of an applied Complete gets its answer.
	req := &batonv1.CompleteRequest{RequestId: newRequestID(), Queue: lease.GetQueue(), Name: lease.GetName(), Token: lease.GetToken(),
		Outcome: batonv1.Outcome_OUTCOME_SUCCESS}
	if err != nil {
		f := Classify(err)
		req.Outcome, req.Message = f.Outcome, TruncateUTF8(f.Message, MaxMessageBytes)
		if f.RetryAfter > 0 {
			req.RetryAfter = durationpb.New(f.RetryAfter)
		}
	}
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var trailer metadata.MD
		_, cerr := w.Client.Complete(ctx, req, grpc.Trailer(&trailer))
		cancel()
		if cerr == nil {
			return
		}
		if status.Code(cerr) == codes.Unavailable && attempt < 2 {
			time.Sleep(pushback(trailer, time.Duration(attempt+1)*200*time.Millisecond))
			continue
		}
		w.logger().Warn("baton: complete failed", "name", lease.GetName(), "token", lease.GetToken(), "err", cerr)
		return
	}
}

func (w *Worker) release(lease *batonv1.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := &batonv1.ReleaseRequest{Queue: lease.GetQueue(), Name: lease.GetName(), Token: lease.GetToken()}
	if w.ReleaseDelay > 0 {
		req.Delay = durationpb.New(w.ReleaseDelay)
	}
	if _, err := w.Client.Release(ctx, req); err != nil {
		w.logger().Warn("baton: release failed", "name", lease.GetName(), "token", lease.GetToken(), "err", err)
	}
}

func (w *Worker) heartbeatLoop(ctx context.Context) {
	every := w.HeartbeatEvery
	if every <= 0 {
		every = 10 * time.Second
	}
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		w.mu.Lock()
		refs := make([]*batonv1.LeaseRef, 0, len(w.held))
		for _, r := range w.held {
			k := leaseKey{r.lease.GetName(), r.lease.GetToken()}
			refs = append(refs, &batonv1.LeaseRef{Queue: r.lease.GetQueue(), Name: k.name, Token: k.token,
				Progress: w.takeProgress(k)})
		}
		w.mu.Unlock()
		callCtx, cancel := context.WithTimeout(ctx, max(every, 5*time.Second))
		resp, err := w.Client.Heartbeat(callCtx, &batonv1.HeartbeatRequest{WorkerId: w.WorkerID, Leases: refs})
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				w.logger().Warn("baton: heartbeat failed", "err", err)
			}
			continue
		}
		cancelled := cancelledKeys(resp.GetCancelled())
		for _, lost := range resp.GetLost() {
			w.markLost(lost, true, cancelled)
		}
	}
}

// cancelledKeys are the leases whose runs a response reports cancelled.
func cancelledKeys(refs []*batonv1.LeaseRef) map[leaseKey]bool {
	out := make(map[leaseKey]bool, len(refs))
	for _, c := range refs {
		out[leaseKey{c.GetName(), c.GetToken()}] = true
	}
	return out
}

// markLost marks a held lease lost and cancels its handler (cause ErrRunCancelled when its run
// was cancelled, else ErrLeaseLost); forget also drops it from what the worker holds.
func (w *Worker) markLost(lost *batonv1.LeaseRef, forget bool, cancelled map[leaseKey]bool) {
	k := leaseKey{lost.GetName(), lost.GetToken()}
	w.mu.Lock()
	r, ok := w.held[k]
	if ok {
		r.lost = true
		if forget {
			delete(w.held, k)
		}
	}
	w.mu.Unlock()
	if ok {
		if cancelled[k] {
			w.logger().Info("baton: run cancelled; cancelling its handler", "queue", lost.GetQueue(), "name", lost.GetName(), "token", lost.GetToken())
			r.cancel(ErrRunCancelled)
			return
		}
		w.logger().Warn("baton: lease lost; cancelling its handler", "queue", lost.GetQueue(), "name", lost.GetName(), "token", lost.GetToken())
		r.cancel(ErrLeaseLost)
	}
}

// cancelHeld cancels every running handler (cause ErrShutdown).
func (w *Worker) cancelHeld() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.held {
		r.cancel(ErrShutdown)
	}
}

// IsLeaseLost reports whether Baton refused a stale token (FAILED_PRECONDITION, ErrorInfo
// reason LEASE_LOST): the lease or term is gone and the work must stop. Baton uses
// FAILED_PRECONDITION for nothing else.
func IsLeaseLost(err error) bool {
	return status.Code(err) == codes.FailedPrecondition
}

// pushback is Baton's grpc-retry-pushback-ms hint, or fallback.
func pushback(trailer metadata.MD, fallback time.Duration) time.Duration {
	if v := trailer.Get("grpc-retry-pushback-ms"); len(v) > 0 {
		if ms, err := strconv.Atoi(v[0]); err == nil && ms >= 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	return fallback
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

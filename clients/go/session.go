package baton

import (
	"context"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

// The session loop: Worker's hot path on one AgentService.Session stream (see the comments of
// Session in proto/baton/v1/agent.proto). The worker grants credit (its free slots), the
// server pushes leases, and every message the worker sends carries whatever finished since
// the last one: completions, one credit per finished lease, releases. A broken stream is
// opened again with backoff; completions it did not answer go again on the next one (tokens
// fence a repeat).

// maxSessionItems bounds the completions and releases of one message (the server's default
// limits.max_batch).
const maxSessionItems = 1000

// finished is a handler that returned: its lease, and its completion, or nil when it was
// cancelled (lost, or shutting down).
type finished struct {
	r          *run
	completion *batonv1.SessionCompletion
}

// sessionState is what the loop keeps across the streams it opens.
type sessionState struct {
	unanswered map[leaseKey]*batonv1.SessionCompletion
	running    int
}

// runSession runs the worker on sessions until ctx is done. It returns false, having done
// nothing, when the server has no Session (an older Baton): the caller runs the unary loop.
func (w *Worker) runSession(ctx context.Context, handler Handler, maxLeases int) bool {
	st := &sessionState{unanswered: map[leaseKey]*batonv1.SessionCompletion{}}
	done := make(chan finished, maxLeases)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		served, fallback := w.oneSession(ctx, handler, maxLeases, st, done)
		if fallback {
			return false
		}
		if served {
			backoff = 100 * time.Millisecond
		}
		if ctx.Err() != nil {
			break
		}
		sleepCtx(ctx, backoff)
		backoff = min(backoff*2, 5*time.Second)
	}
	w.stopWithoutSession(st, done)
	return true
}

// stopWithoutSession stops the worker between two streams: handlers still running are
// cancelled (bounded by ShutdownGrace), what finished is completed and what completions no
// stream answered are sent again, by one CompleteBatch call, and the rest is released.
func (w *Worker) stopWithoutSession(st *sessionState, done chan finished) {
	var completions []*batonv1.CompleteRequest
	for _, c := range st.unanswered {
		completions = append(completions, completeRequest(w.Queue, c))
	}
	w.cancelAndAwait(st, done, func(f finished) {
		st.running--
		w.mu.Lock()
		delete(w.held, leaseKey{f.r.lease.GetName(), f.r.lease.GetToken()})
		w.mu.Unlock()
		switch {
		case f.completion != nil:
			completions = append(completions, completeRequest(w.Queue, f.completion))
		case !f.r.lost:
			w.release(f.r.lease)
		}
	})
	if len(completions) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := w.Client.CompleteBatch(ctx, &batonv1.CompleteBatchRequest{Completions: completions})
		cancel()
		if err != nil {
			w.logger().Warn("baton: completions not sent; those leases come back at their deadline", "count", len(completions), "err", err)
		}
	}
	w.mu.Lock()
	held := w.held
	w.held = map[leaseKey]*run{}
	w.mu.Unlock()
	for _, r := range held {
		w.release(r.lease)
	}
}

// cancelAndAwait cancels every running handler (cause ErrShutdown) and passes each that
// returns to each, which counts it off st.running, until none runs; false when ShutdownGrace
// ran out first.
func (w *Worker) cancelAndAwait(st *sessionState, done chan finished, each func(finished)) bool {
	w.cancelHeld()
	grace := w.ShutdownGrace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	timeout := time.After(grace)
	for st.running > 0 {
		select {
		case f := <-done:
			each(f)
		case <-timeout:
			return false
		}
	}
	return true
}

// completeRequest is the Complete call a session completion stands for.
func completeRequest(queue string, c *batonv1.SessionCompletion) *batonv1.CompleteRequest {
	return &batonv1.CompleteRequest{Queue: queue, Name: c.GetName(), Token: c.GetToken(), Outcome: c.GetOutcome(),
		Message: c.GetMessage(), RetryAfter: c.GetRetryAfter()}
}

// oneSession opens one stream and works on it until it breaks or ctx is done (then it shuts
// the worker down: handlers cancelled, their leases released). served: the server answered at
// least once; fallback: the server has no Session.
func (w *Worker) oneSession(ctx context.Context, handler Handler, maxLeases int, st *sessionState,
	done chan finished) (served, fallback bool) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stream, err := w.Client.Session(sctx)
	if err != nil {
		w.logger().Warn("baton: session failed to open", "err", err)
		return false, status.Code(err) == codes.Unimplemented
	}
	first := &batonv1.SessionRequest{
		Open:   &batonv1.SessionOpen{Queue: w.Queue, WorkerId: w.WorkerID},
		Credit: uint32(maxLeases - st.running),
	}
	for _, c := range st.unanswered {
		first.Completions = append(first.Completions, c)
	}
	if err := stream.Send(first); err != nil && err != io.EOF {
		w.logger().Warn("baton: session failed to open", "err", err)
		return false, false
	}
	responses := pump(sctx, stream.Recv)
	every := w.HeartbeatEvery
	if every <= 0 {
		every = 10 * time.Second
	}
	beat := time.NewTicker(every)
	defer beat.Stop()
	for {
		select {
		case got := <-responses:
			if got.err != nil {
				if status.Code(got.err) == codes.Unimplemented && !served {
					return false, true
				}
				if got.err != io.EOF {
					w.logger().Warn("baton: session broke; opening another", "err", got.err)
				}
				return served, false
			}
			served = true
			w.answered(ctx, got.resp, st, handler, done)
		case f := <-done:
			m := &batonv1.SessionRequest{}
			w.finish(f, m, st)
			for more := true; more && len(m.Completions)+len(m.Releases) < maxSessionItems; {
				select {
				case f := <-done:
					w.finish(f, m, st)
				default:
					more = false
				}
			}
			if err := stream.Send(m); err != nil {
				return served, false // Recv reports why
			}
		case <-beat.C:
			if m := w.heartbeats(); len(m.Heartbeats) > 0 {
				if err := stream.Send(m); err != nil {
					return served, false
				}
			}
		case <-ctx.Done():
			w.closeSession(stream, st, done)
			// Let the server answer what it was sent, then end (bounded: it may be gone).
			deadline := time.After(10 * time.Second)
			for {
				select {
				case got := <-responses:
					if got.err != nil {
						return served, false
					}
					w.answered(ctx, got.resp, st, handler, done)
				case <-deadline:
					return served, false
				}
			}
		}
	}
}

// answered applies one server message: leases to run, completions answered, leases lost.
func (w *Worker) answered(ctx context.Context, resp *batonv1.SessionResponse, st *sessionState, handler Handler,
	done chan finished) {
	for _, c := range resp.GetCompleted() {
		delete(st.unanswered, leaseKey{c.GetName(), c.GetToken()})
		if c.GetLeaseLost() {
			w.logger().Warn("baton: completion refused: the lease was lost", "name", c.GetName(), "token", c.GetToken())
		}
	}
	cancelled := cancelledKeys(resp.GetCancelled())
	for _, lost := range resp.GetLost() {
		// Kept in held until its handler returns (finish counts it off).
		w.markLost(lost, false, cancelled)
	}
	for _, lease := range resp.GetLeases() {
		if ctx.Err() != nil {
			// Pushed as the worker stops: hand it back at once.
			w.release(lease)
			continue
		}
		hctx, hcancel := context.WithCancelCause(context.WithoutCancel(ctx))
		r := &run{lease: lease, cancel: hcancel}
		w.mu.Lock()
		w.held[leaseKey{lease.GetName(), lease.GetToken()}] = r
		w.mu.Unlock()
		st.running++
		go func() {
			err := w.callHandler(hctx, lease, handler)
			f := finished{r: r}
			if hctx.Err() == nil {
				f.completion = sessionCompletion(lease, err)
			}
			hcancel(nil)
			done <- f
		}()
	}
}

// finish adds a returned handler to the next message: a free slot (credit), and its
// completion; a handler cancelled by the shutdown (not by a lost lease) has its lease handed
// back.
func (w *Worker) finish(f finished, m *batonv1.SessionRequest, st *sessionState) {
	k := leaseKey{f.r.lease.GetName(), f.r.lease.GetToken()}
	w.mu.Lock()
	delete(w.held, k)
	lost := f.r.lost
	w.mu.Unlock()
	st.running--
	m.Credit++
	switch {
	case f.completion != nil:
		st.unanswered[k] = f.completion
		m.Completions = append(m.Completions, f.completion)
	case !lost:
		rel := &batonv1.SessionRelease{Name: k.name, Token: k.token}
		if w.ReleaseDelay > 0 {
			rel.Delay = durationpb.New(w.ReleaseDelay)
		}
		m.Releases = append(m.Releases, rel)
	}
}

// heartbeats is a message extending every lease whose handler still runs for a result.
func (w *Worker) heartbeats() *batonv1.SessionRequest {
	m := &batonv1.SessionRequest{}
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, r := range w.held {
		if !r.lost {
			m.Heartbeats = append(m.Heartbeats, &batonv1.SessionLease{Name: k.name, Token: k.token, Progress: w.takeProgress(k)})
		}
	}
	return m
}

// closeSession stops the worker on a live stream: handlers cancelled (bounded by
// ShutdownGrace), what finished completed, the rest released, then the stream half-closed.
func (w *Worker) closeSession(stream batonv1.AgentService_SessionClient, st *sessionState, done chan finished) {
	m := &batonv1.SessionRequest{}
	if !w.cancelAndAwait(st, done, func(f finished) { w.finish(f, m, st) }) {
		w.logger().Warn("baton: handlers still running after the shutdown grace; releasing their leases")
		w.mu.Lock()
		for k := range w.held {
			m.Releases = append(m.Releases, &batonv1.SessionRelease{Name: k.name, Token: k.token})
		}
		w.held = map[leaseKey]*run{}
		w.mu.Unlock()
		st.running = 0
	}
	m.Credit = 0
	if len(m.Completions)+len(m.Releases) > 0 {
		_ = stream.Send(m)
	}
	_ = stream.CloseSend()
}

// sessionCompletion is the completion a handler's result maps to.
func sessionCompletion(lease *batonv1.Lease, err error) *batonv1.SessionCompletion {
	c := &batonv1.SessionCompletion{Name: lease.GetName(), Token: lease.GetToken(), Outcome: batonv1.Outcome_OUTCOME_SUCCESS}
	if err != nil {
		f := Classify(err)
		c.Outcome, c.Message = f.Outcome, TruncateUTF8(f.Message, MaxMessageBytes)
		if f.RetryAfter > 0 {
			c.RetryAfter = durationpb.New(f.RetryAfter)
		}
	}
	return c
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

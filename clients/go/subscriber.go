package baton

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

// MessageHandler handles one delivery. Returning nil acks it; an error leaves it unacked, so
// Baton delivers it again after its ack timeout. ctx is cancelled (cause ErrShutdown) when the
// subscriber stops and the shutdown grace is over; it carries the OpenTelemetry span of the
// delivery ("process <receiver>").
type MessageHandler func(ctx context.Context, msg *batonv1.SubscribeResponse) error

// Subscriber subscribes to one receiver as one consumer and runs a handler per delivery, at most
// MaxInFlight at once.
//
//   - The handler returns nil: the message is acked (an Ack refused as LEASE_LOST — the handler
//     outlived the ack timeout and the message went out again — is logged, counted in LateAcks).
//   - The handler returns an error (or panics): the message is not acked; Baton delivers it again
//     after its ack timeout (it keeps one of this consumer's MaxInFlight places until then). The
//     failure is logged, passed to OnFailure and counted in Failed.
//   - The stream ends (the server shut down) or fails: it opens another after a backoff (the
//     server's retry hint, else the helpers' backoff, reset by a delivery), until ctx is done.
//     INVALID_ARGUMENT is not retried: Run returns it.
//   - ctx done: Run stops reading at once; running handlers get ShutdownGrace to finish (acked
//     when they succeed), then their context is cancelled (cause ErrShutdown) and Run waits as
//     long again; a handler still running then is abandoned. Unacked messages come back after the
//     ack timeout. Run returns nil.
type Subscriber struct {
	Client      batonv1.ScheduleServiceClient
	Receiver    string
	ConsumerID  string
	MaxInFlight int
	// ShutdownGrace is how long running handlers may finish after ctx is done.
	ShutdownGrace time.Duration
	// OnFailure is called (on the handler's goroutine) when a handler fails.
	OnFailure func(msg *batonv1.SubscribeResponse, err error)
	Logger    *slog.Logger
	// TracerProvider starts the span each handler runs in ("process <receiver>", see the
	// README's "Tracing (OpenTelemetry)"); nil: otel.GetTracerProvider(), a no-op until the
	// application installs an SDK.
	TracerProvider trace.TracerProvider

	acked, failed, lateAcks, reconnects atomic.Int64
}

// NewSubscriber returns a Subscriber with the defaults: 1 in flight, 10 s shutdown grace.
func NewSubscriber(conn grpc.ClientConnInterface, receiver, consumerID string) *Subscriber {
	return &Subscriber{
		Client:        batonv1.NewScheduleServiceClient(conn),
		Receiver:      receiver,
		ConsumerID:    consumerID,
		MaxInFlight:   1,
		ShutdownGrace: 10 * time.Second,
	}
}

// Acked counts messages handled and acked.
func (s *Subscriber) Acked() int64 { return s.acked.Load() }

// Failed counts handler failures.
func (s *Subscriber) Failed() int64 { return s.failed.Load() }

// LateAcks counts acks refused because the message had been delivered again.
func (s *Subscriber) LateAcks() int64 { return s.lateAcks.Load() }

// Reconnects counts subscribes after the first.
func (s *Subscriber) Reconnects() int64 { return s.reconnects.Load() }

func (s *Subscriber) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// Run subscribes and handles deliveries until ctx is done (see Subscriber), then returns nil; or
// returns the INVALID_ARGUMENT error of a subscription Baton refuses. It runs on Receive
// streams: Baton pushes due messages, never more than MaxInFlight unacked, and the acks of every
// handler that finished since the last message go back in one. Acks a broken stream did not
// answer go again on the next (their tokens fence a repeat), or by AckBatch when stopping.
func (s *Subscriber) Run(ctx context.Context, handler MessageHandler) error {
	slots := max(1, s.MaxInFlight)
	r := &receiving{s: s, handler: handler, slots: make(chan struct{}, slots), unanswered: map[ackKey]bool{},
		acks: make(chan ackKey, slots)} // a handler sends at most one ack before it frees its slot
	r.hctx, r.hcancel = context.WithCancelCause(context.WithoutCancel(ctx))
	defer r.hcancel(nil)
	var b backoff
	for first := true; ctx.Err() == nil; first = false {
		if !first {
			s.reconnects.Add(1)
		}
		served, err := r.stream(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if served {
			b.reset()
		}
		delay := b.next(err)
		switch {
		case status.Code(err) == codes.InvalidArgument:
			r.await(func(ackKey) {})
			return err
		case err == nil:
			s.logger().Info("baton: receive stream ended (server shutdown); opening another", "receiver", s.Receiver)
		default:
			s.logger().Warn("baton: receive stream failed; opening another", "receiver", s.Receiver, "err", err, "retry_in", delay)
		}
		sleepCtx(ctx, delay)
	}
	// Stopped between two streams: handlers of the last one may still run, and acks may be
	// unanswered (sent on a stream that broke: maybe applied). They go by one AckBatch.
	for k := range r.unanswered {
		r.unanswered[k] = true
	}
	r.await(func(k ackKey) { r.unanswered[k] = false })
	var batch []*batonv1.AckRequest
	for k := range r.unanswered {
		batch = append(batch, &batonv1.AckRequest{Receiver: s.Receiver, Id: k.id, Token: k.token})
	}
	if len(batch) > 0 {
		actx, cancel := context.WithTimeout(context.Background(), s.grace())
		defer cancel()
		resp, err := s.Client.AckBatch(actx, &batonv1.AckBatchRequest{Acks: batch})
		if err != nil {
			s.logger().Warn("baton: acks not sent; those messages come again after their ack timeout", "receiver", s.Receiver, "count", len(batch), "err", err)
		}
		answers := &batonv1.ReceiveResponse{}
		for i, res := range resp.GetResults() {
			ack := &batonv1.ReceiveAck{Id: batch[i].GetId(), Token: batch[i].GetToken()}
			if res.GetLeaseLost() {
				answers.Lost = append(answers.Lost, ack)
			} else {
				answers.Acked = append(answers.Acked, ack)
			}
		}
		r.answer(ctx, answers)
	}
	return nil
}

// ackKey names one delivery.
type ackKey struct {
	id    string
	token uint64
}

// receiving is what Run keeps across the streams it opens.
type receiving struct {
	s          *Subscriber
	handler    MessageHandler
	slots      chan struct{} // one per running handler
	running    sync.WaitGroup
	hctx       context.Context // the handlers' context, cancelled after the shutdown grace
	hcancel    context.CancelCauseFunc
	acks       chan ackKey     // handlers that succeeded
	unanswered map[ackKey]bool // acks sent, not yet answered; true: sent again on a newer stream,
	// so a "lost" answer may only mean an earlier stream applied it
}

// stream opens one Receive stream and works on it until it breaks or ends (err nil: the server
// ended it) or ctx is done (then it stops the subscriber: handlers finish, acks are sent and
// answered, the stream is half-closed). served: the server answered at least once.
func (r *receiving) stream(ctx context.Context) (served bool, err error) {
	s := r.s
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stream, err := s.Client.Receive(sctx)
	if err != nil {
		return false, err
	}
	first := &batonv1.ReceiveRequest{Open: &batonv1.SubscribeRequest{
		Receiver: s.Receiver, ConsumerId: s.ConsumerID, MaxInFlight: uint32(cap(r.slots)),
	}}
	for k := range r.unanswered {
		r.unanswered[k] = true
		first.Acks = append(first.Acks, &batonv1.ReceiveAck{Id: k.id, Token: k.token})
	}
	if err := stream.Send(first); err != nil && err != io.EOF {
		return false, err
	}
	responses := pump(sctx, stream.Recv)
	// send puts k and every other ack ready now in one message; a failed Send means the stream
	// broke: Recv says why, and the acks go again on the next stream.
	send := func(k ackKey) {
		m := &batonv1.ReceiveRequest{}
		for more := true; more; {
			r.unanswered[k] = false
			m.Acks = append(m.Acks, &batonv1.ReceiveAck{Id: k.id, Token: k.token})
			select {
			case k = <-r.acks:
			default:
				more = false
			}
		}
		_ = stream.Send(m)
	}
	for {
		select {
		case got := <-responses:
			if got.err == io.EOF {
				return served, nil
			} else if got.err != nil {
				return served, got.err
			}
			served = true
			r.answer(ctx, got.resp)
		case k := <-r.acks:
			send(k)
		case <-ctx.Done():
			r.await(send)
			if len(r.acks) > 0 {
				send(<-r.acks)
			}
			_ = stream.CloseSend()
			// Let the server answer what it was sent, then end (bounded: it may be gone).
			deadline := time.After(s.grace())
			for {
				select {
				case got := <-responses:
					if got.err != nil {
						return served, nil
					}
					r.answer(ctx, got.resp)
				case <-deadline:
					return served, nil
				}
			}
		}
	}
}

// answer applies one server message: messages to handle (none once ctx is done: they come
// again after their ack timeout), and the answers to acks: applied (counted in Acked), or
// refused because the message was delivered again (counted in LateAcks, unless it was an ack
// sent again on a new stream, which an earlier stream may have applied).
func (r *receiving) answer(ctx context.Context, resp *batonv1.ReceiveResponse) {
	s := r.s
	for _, a := range resp.GetAcked() {
		k := ackKey{a.GetId(), a.GetToken()}
		if _, ok := r.unanswered[k]; ok {
			delete(r.unanswered, k)
			s.acked.Add(1)
		}
	}
	for _, a := range resp.GetLost() {
		k := ackKey{a.GetId(), a.GetToken()}
		resent, ok := r.unanswered[k]
		delete(r.unanswered, k)
		if ok && !resent {
			s.lateAck(a.GetId(), a.GetToken())
		}
	}
	for _, msg := range resp.GetMessages() {
		// A free place first (the server keeps to MaxInFlight, but a redelivery to this
		// consumer can come while a slow handler still holds its message).
		select {
		case r.slots <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		r.running.Add(1)
		go func() {
			defer r.running.Done()
			defer func() { <-r.slots }()
			if s.handled(r.hctx, r.handler, msg) {
				r.acks <- ackKey{msg.GetId(), msg.GetToken()}
			}
		}()
	}
}

// await waits for running handlers to finish, ShutdownGrace at most; then cancels their
// context (cause ErrShutdown) and waits as long again before abandoning them. Meanwhile it
// passes their acks to forward.
func (r *receiving) await(forward func(ackKey)) {
	done := make(chan struct{})
	go func() { r.running.Wait(); close(done) }()
	grace := r.s.grace()
	timeout, cancelled := time.After(grace), false
	for {
		select {
		case <-done:
			for len(r.acks) > 0 {
				forward(<-r.acks)
			}
			return
		case k := <-r.acks:
			forward(k)
		case <-timeout:
			if cancelled {
				r.s.logger().Warn("baton: handlers still running after twice the shutdown grace; abandoning them")
				return
			}
			r.hcancel(ErrShutdown)
			timeout, cancelled = time.After(grace), true
		}
	}
}

// handled runs the handler on one delivery, inside its span (startMessageSpan); true when it
// succeeded (the message is to be acked). A failure is logged, counted and passed to OnFailure.
func (s *Subscriber) handled(ctx context.Context, handler MessageHandler, msg *batonv1.SubscribeResponse) bool {
	sctx, span := startMessageSpan(ctx, s.TracerProvider, s.Receiver, msg)
	err := callMessageHandler(sctx, handler, msg)
	endMessageSpan(span, err)
	if err == nil {
		return true
	}
	if errors.Is(context.Cause(ctx), ErrShutdown) {
		s.logger().Warn("baton: handler cancelled (stopping); not acked", "receiver", s.Receiver, "id", msg.GetId())
		return false
	}
	s.failed.Add(1)
	s.logger().Warn("baton: handler failed; not acked, Baton delivers it again after its ack timeout",
		"receiver", s.Receiver, "id", msg.GetId(), "delivery", msg.GetDeliveryCount(), "err", err)
	if s.OnFailure != nil {
		s.OnFailure(msg, err)
	}
	return false
}

// lateAck counts and logs an ack refused because the message went out again.
func (s *Subscriber) lateAck(id string, token uint64) {
	s.lateAcks.Add(1)
	s.logger().Warn("baton: ack refused: the message was delivered again (handler slower than the ack timeout)",
		"receiver", s.Receiver, "id", id, "token", token)
}

func callMessageHandler(ctx context.Context, handler MessageHandler, msg *batonv1.SubscribeResponse) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = errors.New("handler panicked: " + toString(p))
		}
	}()
	return handler(ctx, msg)
}

func (s *Subscriber) grace() time.Duration {
	if s.ShutdownGrace > 0 {
		return s.ShutdownGrace
	}
	return 10 * time.Second
}

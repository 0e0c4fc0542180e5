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
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

// Scheduler schedules and cancels durable delayed messages.
type Scheduler struct {
	Client batonv1.ScheduleServiceClient
}

// NewScheduler returns a Scheduler over conn.
func NewScheduler(conn grpc.ClientConnInterface) *Scheduler {
	return &Scheduler{Client: batonv1.NewScheduleServiceClient(conn)}
}

// ScheduleOption sets when a message is due, or its idempotency key.
type ScheduleOption func(*batonv1.ScheduleRequest)

// After makes the message due after d (by the Redis clock).
func After(d time.Duration) ScheduleOption {
	return func(r *batonv1.ScheduleRequest) {
		r.When = &batonv1.ScheduleRequest_Delay{Delay: durationpb.New(max(d, 0))}
	}
}

// At makes the message due at t.
func At(t time.Time) ScheduleOption {
	return func(r *batonv1.ScheduleRequest) {
		r.When = &batonv1.ScheduleRequest_DeliverAt{DeliverAt: timestamppb.New(t)}
	}
}

// WithKey makes Schedule idempotent: scheduling again with key while the first message is not
// yet acked returns the first message's id (Created false) and changes nothing.
func WithKey(key string) ScheduleOption {
	return func(r *batonv1.ScheduleRequest) { r.Key = key }
}

// Schedule persists a message for receiver, due at once unless After or At says otherwise (the
// last one given wins). It returns the message's id, due time and whether it was created.
func (s *Scheduler) Schedule(ctx context.Context, receiver string, payload []byte, opts ...ScheduleOption) (*batonv1.ScheduleResponse, error) {
	req := &batonv1.ScheduleRequest{Receiver: receiver, Payload: payload}
	for _, o := range opts {
		o(req)
	}
	return s.Client.Schedule(ctx, req)
}

// Cancel removes a scheduled or in-flight message; false if there is no such message.
func (s *Scheduler) Cancel(ctx context.Context, receiver, id string) (bool, error) {
	_, err := s.Client.Cancel(ctx, &batonv1.CancelRequest{Receiver: receiver, Id: id})
	if status.Code(err) == codes.NotFound {
		return false, nil
	}
	return err == nil, err
}

// MessageHandler handles one delivery. Returning nil acks it; an error leaves it unacked, so
// Baton delivers it again after its ack timeout. ctx is cancelled (cause ErrShutdown) when the
// subscriber stops and the shutdown grace is over.
// ctx carries the OpenTelemetry span of the delivery ("process <receiver>").
type MessageHandler func(ctx context.Context, msg *batonv1.SubscribeResponse) error

// Subscriber subscribes to one receiver as one consumer and runs a handler per delivery, at most
// MaxInFlight at once.
//
//   - The handler returns nil: the message is acked (an Ack refused as LEASE_LOST — the handler
//     outlived the ack timeout and the message went out again — is logged, counted in LateAcks).
//   - The handler returns an error (or panics): the message is not acked; Baton delivers it again
//     after its ack timeout (it keeps one of this consumer's MaxInFlight places until then). The
//     failure is logged, passed to OnFailure and counted in Failed.
//   - The stream ends (the server shut down) or fails: it subscribes again after a backoff (the
//     server's pushback hint, else 100 ms doubling up to MaxBackoff, back to 100 ms after a
//     delivery), until ctx is done. INVALID_ARGUMENT is not retried: Run returns it.
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
	// MaxBackoff is the longest pause between two subscribes.
	MaxBackoff time.Duration
	// OnFailure is called (on the handler's goroutine) when a handler fails.
	OnFailure func(msg *batonv1.SubscribeResponse, err error)
	Logger    *slog.Logger
	// Unary makes Run use Subscribe and an Ack call per message instead of a Receive stream.
	Unary bool
	// TracerProvider starts the span each handler runs in ("process <receiver>", see the
	// README's "Tracing (OpenTelemetry)"); nil: otel.GetTracerProvider(), a no-op until the
	// application installs an SDK.
	TracerProvider trace.TracerProvider

	acked, failed, lateAcks, reconnects atomic.Int64
}

// NewSubscriber returns a Subscriber with the defaults: 1 in flight, 10 s shutdown grace, 5 s
// longest backoff.
func NewSubscriber(conn grpc.ClientConnInterface, receiver, consumerID string) *Subscriber {
	return &Subscriber{
		Client:        batonv1.NewScheduleServiceClient(conn),
		Receiver:      receiver,
		ConsumerID:    consumerID,
		MaxInFlight:   1,
		ShutdownGrace: 10 * time.Second,
		MaxBackoff:    5 * time.Second,
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
// returns the INVALID_ARGUMENT error of a subscription Baton refuses. Its hot path is one
// Receive stream (acks go back on it, coalesced); with Unary set, or against a server without
// Receive, it uses Subscribe and an Ack call per message.
func (s *Subscriber) Run(ctx context.Context, handler MessageHandler) error {
	maxInFlight := max(1, s.MaxInFlight)
	slots := make(chan struct{}, maxInFlight)
	hctx, hcancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer hcancel(nil)
	var running sync.WaitGroup
	if !s.Unary {
		err, fallback := s.receiveLoop(ctx, handler, slots, hctx, hcancel, &running)
		if !fallback {
			return err
		}
		s.logger().Info("baton: the server has no Receive; using Subscribe and Ack", "receiver", s.Receiver)
	}
	err := s.subscribeLoop(ctx, handler, slots, hctx, &running)
	s.awaitHandlers(&running, hcancel, nil, nil)
	return err
}

// awaitHandlers waits for running handlers to finish, ShutdownGrace at most; then cancels
// their context (cause ErrShutdown) and waits as long again before abandoning them. Meanwhile
// it passes what arrives on acks (if any) to forward.
func (s *Subscriber) awaitHandlers(running *sync.WaitGroup, hcancel context.CancelCauseFunc, acks <-chan ackKey, forward func(ackKey)) {
	done := make(chan struct{})
	go func() { running.Wait(); close(done) }()
	grace := s.ShutdownGrace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	timeout, cancelled := time.After(grace), false
	for {
		select {
		case <-done:
			return
		case k := <-acks:
			forward(k)
		case <-timeout:
			if cancelled {
				s.logger().Warn("baton: handlers still running after twice the shutdown grace; abandoning them")
				return
			}
			hcancel(ErrShutdown)
			timeout, cancelled = time.After(grace), true
		}
	}
}

func (s *Subscriber) subscribeLoop(ctx context.Context, handler MessageHandler, slots chan struct{}, hctx context.Context, running *sync.WaitGroup) error {
	req := &batonv1.SubscribeRequest{Receiver: s.Receiver, ConsumerId: s.ConsumerID, MaxInFlight: uint32(cap(slots))}
	maxBackoff := max(s.MaxBackoff, 100*time.Millisecond)
	backoff := 100 * time.Millisecond
	for first := true; ctx.Err() == nil; first = false {
		if !first {
			s.reconnects.Add(1)
		}
		err := func() error {
			streamCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			stream, err := s.Client.Subscribe(streamCtx, req)
			if err != nil {
				return err
			}
			for {
				msg, err := stream.Recv()
				if err != nil {
					if err == io.EOF {
						return nil
					}
					return streamError{err, pushback(stream.Trailer(), 0)}
				}
				backoff = 100 * time.Millisecond
				// A free place first (the server keeps to MaxInFlight too, but a redelivery to this
				// consumer can come while a slow handler still holds its message).
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					return nil
				}
				running.Add(1)
				go func() {
					defer running.Done()
					defer func() { <-slots }()
					s.handle(hctx, handler, msg)
				}()
			}
		}()
		if ctx.Err() != nil {
			return nil
		}
		delay := backoff
		var se streamError
		if errors.As(err, &se) && se.pushback > 0 {
			delay = se.pushback
		}
		switch {
		case status.Code(err) == codes.InvalidArgument:
			return err
		case err == nil:
			s.logger().Info("baton: subscription ended (server shutdown); subscribing again", "receiver", s.Receiver)
		default:
			s.logger().Warn("baton: subscription failed; subscribing again", "receiver", s.Receiver, "err", err, "retry_in", delay)
		}
		sleepCtx(ctx, delay)
		backoff = min(backoff*2, maxBackoff)
	}
	return nil
}

// streamError is a Recv error with the pushback hint of the stream's trailer.
type streamError struct {
	err      error
	pushback time.Duration
}

func (e streamError) Error() string              { return e.err.Error() }
func (e streamError) Unwrap() error              { return e.err }
func (e streamError) GRPCStatus() *status.Status { return status.Convert(e.err) }

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

// handle runs the handler and acks by a unary call (the Subscribe path).
func (s *Subscriber) handle(ctx context.Context, handler MessageHandler, msg *batonv1.SubscribeResponse) {
	if !s.handled(ctx, handler, msg) {
		return
	}
	// One request id for every attempt below: a retry of an applied Ack succeeds again.
	req := &batonv1.AckRequest{RequestId: newRequestID(), Receiver: s.Receiver, Id: msg.GetId(), Token: msg.GetToken()}
	ackErr := retryUnavailable(context.Background(), func(ctx context.Context, opts ...grpc.CallOption) error {
		_, err := s.Client.Ack(ctx, req, opts...)
		return err
	})
	switch {
	case ackErr == nil:
		s.acked.Add(1)
	case IsLeaseLost(ackErr):
		s.lateAck(msg.GetId(), msg.GetToken())
	default:
		s.logger().Warn("baton: ack failed", "receiver", s.Receiver, "id", msg.GetId(), "err", ackErr)
	}
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

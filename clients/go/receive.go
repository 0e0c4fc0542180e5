package baton

import (
	"context"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

// The receive loop: Subscriber's hot path on one ScheduleService.Receive stream (see the
// comments of Receive in proto/baton/v1/schedule.proto). The server pushes due messages, never
// more than MaxInFlight unacked; every message the subscriber sends carries the acks of
// whatever handlers finished since the last one. A broken stream is opened again with backoff;
// acks it did not answer go again on the next one (tokens fence a repeat).

// ackKey names one delivery.
type ackKey struct {
	id    string
	token uint64
}

// receiveState is what the loop keeps across the streams it opens: acks sent and not yet
// answered (true: sent again on a newer stream, so a "lost" answer may only mean an earlier
// stream applied it).
type receiveState struct {
	unanswered map[ackKey]bool
}

// receiveLoop runs the subscriber on Receive streams until ctx is done, then lets running
// handlers finish (ShutdownGrace) and sends their acks. fallback: the server has no Receive
// (nothing was done): the caller runs the Subscribe loop.
func (s *Subscriber) receiveLoop(ctx context.Context, handler MessageHandler, slots chan struct{}, hctx context.Context,
	hcancel context.CancelCauseFunc, running *sync.WaitGroup) (err error, fallback bool) {
	st := &receiveState{unanswered: map[ackKey]bool{}}
	// Each handler sends at most one ack before it frees its slot: never blocks.
	acks := make(chan ackKey, cap(slots))
	maxBackoff := max(s.MaxBackoff, 100*time.Millisecond)
	backoff := 100 * time.Millisecond
	for first := true; ctx.Err() == nil; first = false {
		if !first {
			s.reconnects.Add(1)
		}
		served, err := s.oneReceive(ctx, handler, slots, hctx, hcancel, running, st, acks)
		if first && !served && status.Code(err) == codes.Unimplemented {
			return nil, true
		}
		if ctx.Err() != nil {
			return nil, false
		}
		if served {
			backoff = 100 * time.Millisecond
		}
		delay := backoff
		if se, ok := err.(streamError); ok && se.pushback > 0 {
			delay = se.pushback
		}
		switch {
		case status.Code(err) == codes.InvalidArgument:
			s.awaitHandlers(running, hcancel, acks, func(ackKey) {})
			return err, false
		case err == nil:
			s.logger().Info("baton: receive stream ended (server shutdown); opening another", "receiver", s.Receiver)
		default:
			s.logger().Warn("baton: receive stream failed; opening another", "receiver", s.Receiver, "err", err, "retry_in", delay)
		}
		sleepCtx(ctx, delay)
		backoff = min(backoff*2, maxBackoff)
	}
	// Stopped between two streams: handlers of the last one may still run, and acks may be
	// unanswered (sent on a stream that broke: maybe applied). They go by AckBatch.
	for k := range st.unanswered {
		st.unanswered[k] = true
	}
	s.awaitHandlers(running, hcancel, acks, func(k ackKey) { st.unanswered[k] = false })
	for more := true; more; {
		select {
		case k := <-acks:
			st.unanswered[k] = false
		default:
			more = false
		}
	}
	s.ackLeft(st)
	return nil, false
}

// ackLeft sends the acks no stream answered by AckBatch calls (bounded in time: the
// subscriber is stopping).
func (s *Subscriber) ackLeft(st *receiveState) {
	var batch []*batonv1.AckRequest
	for k := range st.unanswered {
		batch = append(batch, &batonv1.AckRequest{Receiver: s.Receiver, Id: k.id, Token: k.token})
	}
	for len(batch) > 0 {
		n := min(len(batch), maxSessionItems)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := s.Client.AckBatch(ctx, &batonv1.AckBatchRequest{Acks: batch[:n]})
		cancel()
		if err != nil {
			s.logger().Warn("baton: acks not sent; those messages come again after their ack timeout", "receiver", s.Receiver, "count", len(batch), "err", err)
			return
		}
		for i, r := range resp.GetResults() {
			k := ackKey{batch[i].GetId(), batch[i].GetToken()}
			resent := st.unanswered[k]
			delete(st.unanswered, k)
			switch {
			case !r.GetLeaseLost():
				s.acked.Add(1)
			case !resent:
				s.lateAck(k.id, k.token)
			}
		}
		batch = batch[n:]
	}
}

// oneReceive opens one stream and works on it until it breaks or ends (err nil: the server
// ended it) or ctx is done (then it stops the subscriber: handlers finish, acks are sent and
// answered, the stream is half-closed). served: the server answered at least once.
func (s *Subscriber) oneReceive(ctx context.Context, handler MessageHandler, slots chan struct{}, hctx context.Context,
	hcancel context.CancelCauseFunc, running *sync.WaitGroup, st *receiveState, acks chan ackKey) (served bool, err error) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stream, err := s.Client.Receive(sctx)
	if err != nil {
		return false, err
	}
	first := &batonv1.ReceiveRequest{Open: &batonv1.SubscribeRequest{
		Receiver: s.Receiver, ConsumerId: s.ConsumerID, MaxInFlight: uint32(cap(slots)),
	}}
	for k := range st.unanswered {
		if len(first.Acks) == maxSessionItems {
			break
		}
		st.unanswered[k] = true
		first.Acks = append(first.Acks, &batonv1.ReceiveAck{Id: k.id, Token: k.token})
	}
	if err := stream.Send(first); err != nil && err != io.EOF {
		return false, err
	}
	responses := pump(sctx, stream.Recv)
	// send puts k and every other ack ready now in one message.
	send := func(k ackKey) error {
		m := &batonv1.ReceiveRequest{}
	collect:
		for {
			st.unanswered[k] = false
			m.Acks = append(m.Acks, &batonv1.ReceiveAck{Id: k.id, Token: k.token})
			if len(m.Acks) == maxSessionItems {
				break
			}
			select {
			case k = <-acks:
			default:
				break collect
			}
		}
		return stream.Send(m)
	}
	for {
		select {
		case got := <-responses:
			if got.err != nil {
				if got.err == io.EOF {
					return served, nil
				}
				return served, streamError{got.err, pushback(stream.Trailer(), 0)}
			}
			served = true
			s.answered(got.resp, st)
			for _, msg := range got.resp.GetMessages() {
				// A free place first (the server keeps to MaxInFlight, but a redelivery to this
				// consumer can come while a slow handler still holds its message).
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					// Not handled: it comes again after its ack timeout.
					continue
				}
				running.Add(1)
				go func() {
					defer running.Done()
					defer func() { <-slots }()
					if s.handled(hctx, handler, msg) {
						acks <- ackKey{msg.GetId(), msg.GetToken()}
					}
				}()
			}
		case k := <-acks:
			if err := send(k); err != nil {
				// The stream broke: Recv says why; the acks go again on the next stream.
				continue
			}
		case <-ctx.Done():
			s.awaitHandlers(running, hcancel, acks, func(k ackKey) { _ = send(k) })
			for more := true; more; {
				select {
				case k := <-acks:
					_ = send(k)
				default:
					more = false
				}
			}
			_ = stream.CloseSend()
			// Let the server answer what it was sent, then end (bounded: it may be gone).
			deadline := time.After(10 * time.Second)
			for {
				select {
				case got := <-responses:
					if got.err != nil {
						return served, nil
					}
					s.answered(got.resp, st)
				case <-deadline:
					return served, nil
				}
			}
		}
	}
}

// answered applies the server's answers to acks: applied (counted in Acked), or refused
// because the message was delivered again (counted in LateAcks, unless it was an ack sent
// again on a new stream, which an earlier stream may have applied).
func (s *Subscriber) answered(resp *batonv1.ReceiveResponse, st *receiveState) {
	for _, a := range resp.GetAcked() {
		k := ackKey{a.GetId(), a.GetToken()}
		if _, ok := st.unanswered[k]; ok {
			delete(st.unanswered, k)
			s.acked.Add(1)
		}
	}
	for _, a := range resp.GetLost() {
		k := ackKey{a.GetId(), a.GetToken()}
		resent, ok := st.unanswered[k]
		delete(st.unanswered, k)
		if ok && !resent {
			s.lateAck(a.GetId(), a.GetToken())
		}
	}
}

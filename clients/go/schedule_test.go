package baton_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	baton "github.com/baton-project/baton/clients/go"
	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

func schedule(t *testing.T, s *baton.Producer, receiver, payload string, opts ...baton.ScheduleOption) *batonv1.ScheduleResponse {
	t.Helper()
	r, err := s.Schedule(context.Background(), receiver, []byte(payload), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func newSubscriber(conn grpc.ClientConnInterface, receiver, consumer string) *baton.Subscriber {
	s := baton.NewSubscriber(conn, receiver, consumer)
	s.Logger = quiet
	return s
}

// subscribe runs s in the background; the returned stop cancels it and waits for Run.
func subscribe(s *baton.Subscriber, h baton.MessageHandler) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = s.Run(ctx, h); close(done) }()
	return func() { cancel(); <-done }
}

type deliveries struct {
	mu   sync.Mutex
	msgs []*batonv1.SubscribeResponse
	at   []time.Time
}

func (d *deliveries) add(m *batonv1.SubscribeResponse) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.msgs = append(d.msgs, m)
	d.at = append(d.at, time.Now())
}

func (d *deliveries) snapshot() []*batonv1.SubscribeResponse {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.msgs)
}

func TestSubscriberHandlesAndAcks(t *testing.T) {
	sched := baton.NewProducer(server.conn)
	receiver := unique("go-rcv")
	first := schedule(t, sched, receiver, "now")
	later := schedule(t, sched, receiver, "later", baton.After(300*time.Millisecond))
	if !first.GetCreated() || later.GetId() == first.GetId() {
		t.Fatalf("scheduled %v, %v", first, later)
	}
	var got deliveries
	sub := newSubscriber(server.conn, receiver, "c1")
	sub.MaxInFlight = 2
	stop := subscribe(sub, func(_ context.Context, m *batonv1.SubscribeResponse) error { got.add(m); return nil })
	defer stop()
	eventually(t, 10*time.Second, "both acked", func() bool { return sub.Acked() == 2 })
	got.mu.Lock()
	for i, m := range got.msgs {
		if m.GetDeliveryCount() != 1 {
			t.Errorf("%s delivered %d times", m.GetPayload(), m.GetDeliveryCount())
		}
		if string(m.GetPayload()) == "later" && got.at[i].Before(later.GetDeliverAt().AsTime().Add(-10*time.Millisecond)) {
			t.Errorf("later delivered at %v, before its time %v", got.at[i], later.GetDeliverAt().AsTime())
		}
	}
	got.mu.Unlock()
	// Acked for good: the token is spent, and nothing comes back after the ack timeout.
	for _, m := range got.snapshot() {
		_, err := sched.Schedules.Ack(context.Background(), &batonv1.AckRequest{Receiver: receiver, Id: m.GetId(), Token: m.GetToken()})
		if !baton.IsLeaseLost(err) {
			t.Errorf("second Ack of %s = %v, want LEASE_LOST", m.GetPayload(), err)
		}
	}
	time.Sleep(time.Second)
	if n := len(got.snapshot()); n != 2 || sub.Failed() != 0 {
		t.Fatalf("%d deliveries, %d failures", n, sub.Failed())
	}
}

func TestSubscriberRunsAtMostMaxInFlightHandlers(t *testing.T) {
	sched := baton.NewProducer(server.conn)
	receiver := unique("go-par")
	for i := range 6 {
		schedule(t, sched, receiver, string(rune('a'+i)))
	}
	var running, peak atomic.Int32
	sub := newSubscriber(server.conn, receiver, "c1")
	sub.MaxInFlight = 3
	stop := subscribe(sub, func(context.Context, *batonv1.SubscribeResponse) error {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(150 * time.Millisecond)
		running.Add(-1)
		return nil
	})
	defer stop()
	eventually(t, 10*time.Second, "all acked", func() bool { return sub.Acked() == 6 })
	if peak.Load() != 3 {
		t.Fatalf("peak %d handlers at once, want 3", peak.Load())
	}
}

func TestSubscriberFailedMessageComesBack(t *testing.T) {
	sched := baton.NewProducer(server.conn)
	receiver := unique("go-fail")
	schedule(t, sched, receiver, "flaky")
	var mu sync.Mutex
	var seen []uint32
	var failures []string
	sub := newSubscriber(server.conn, receiver, "c1")
	sub.OnFailure = func(m *batonv1.SubscribeResponse, err error) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, err.Error())
	}
	stop := subscribe(sub, func(_ context.Context, m *batonv1.SubscribeResponse) error {
		mu.Lock()
		seen = append(seen, m.GetDeliveryCount())
		mu.Unlock()
		if m.GetDeliveryCount() == 1 {
			return errors.New("downstream unavailable")
		}
		return nil
	})
	defer stop()
	eventually(t, 10*time.Second, "acked on the second delivery", func() bool { return sub.Acked() == 1 })
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, []uint32{1, 2}) || !slices.Equal(failures, []string{"downstream unavailable"}) || sub.Failed() != 1 {
		t.Fatalf("deliveries %v, failures %v (%d)", seen, failures, sub.Failed())
	}
}

func TestSubscriberStopLetsRunningHandlersFinish(t *testing.T) {
	sched := baton.NewProducer(server.conn)
	receiver := unique("go-drain")
	schedule(t, sched, receiver, "m")
	started := make(chan struct{})
	var finished atomic.Int32
	sub := newSubscriber(server.conn, receiver, "c1")
	sub.ShutdownGrace = 5 * time.Second
	stop := subscribe(sub, func(ctx context.Context, m *batonv1.SubscribeResponse) error {
		close(started)
		time.Sleep(300 * time.Millisecond)
		finished.Add(1)
		return nil
	})
	<-started
	stop()
	if finished.Load() != 1 || sub.Acked() != 1 {
		t.Fatalf("finished %d, acked %d", finished.Load(), sub.Acked())
	}
	// Nothing left: a new subscriber gets nothing, even after the ack timeout.
	var got deliveries
	stop = subscribe(newSubscriber(server.conn, receiver, "c2"), func(_ context.Context, m *batonv1.SubscribeResponse) error { got.add(m); return nil })
	time.Sleep(time.Second)
	stop()
	if n := len(got.snapshot()); n != 0 {
		t.Fatalf("%d redeliveries", n)
	}
}

func TestSubscriberStopCancelsHandlersPastTheGrace(t *testing.T) {
	sched := baton.NewProducer(server.conn)
	receiver := unique("go-stop")
	schedule(t, sched, receiver, "stuck")
	started := make(chan struct{})
	cause := make(chan error, 1)
	sub := newSubscriber(server.conn, receiver, "c1")
	sub.ShutdownGrace = 200 * time.Millisecond
	stop := subscribe(sub, func(ctx context.Context, m *batonv1.SubscribeResponse) error {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return ctx.Err()
	})
	<-started
	began := time.Now()
	stop()
	if d := time.Since(began); d > 2*time.Second {
		t.Fatalf("stop took %v", d)
	}
	if c := <-cause; !errors.Is(c, baton.ErrShutdown) || sub.Acked() != 0 || sub.Failed() != 0 {
		t.Fatalf("cause %v, acked %d, failed %d", c, sub.Acked(), sub.Failed())
	}
	// Unacked, so delivered again after the ack timeout, to whoever subscribes.
	var got deliveries
	other := newSubscriber(server.conn, receiver, "c2")
	stop = subscribe(other, func(_ context.Context, m *batonv1.SubscribeResponse) error { got.add(m); return nil })
	defer stop()
	eventually(t, 10*time.Second, "redelivered and acked", func() bool { return other.Acked() == 1 })
	// Delivery 2 or later: while c1 let its handler finish (the grace) the message could expire
	// and go out to c1 again, which, stopping, left it unhandled.
	if m := got.snapshot(); len(m) != 1 || string(m[0].GetPayload()) != "stuck" || m[0].GetDeliveryCount() < 2 {
		t.Fatalf("got %v", m)
	}
}

func TestSubscriberSubscribesAgainAfterTheServerRestarts(t *testing.T) {
	own, err := startBaton(quickEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer own.stop()
	conn, err := grpc.NewClient(own.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sched := baton.NewProducer(conn)
	receiver := unique("go-reconnect")
	schedule(t, sched, receiver, "before")
	var got deliveries
	sub := newSubscriber(conn, receiver, "c1")
	stop := subscribe(sub, func(_ context.Context, m *batonv1.SubscribeResponse) error { got.add(m); return nil })
	defer stop()
	eventually(t, 10*time.Second, "first message", func() bool { return len(got.snapshot()) == 1 })
	// SIGTERM ends the stream cleanly; the subscriber retries until Baton is back.
	if err := own.restart(); err != nil {
		t.Fatal(err)
	}
	// This connection may still be waiting out its reconnect backoff: try until it is back.
	eventually(t, 20*time.Second, "scheduled after the restart", func() bool {
		_, err := sched.Schedule(context.Background(), receiver, []byte("after"))
		if err != nil && status.Code(err) != codes.Unavailable {
			t.Fatal(err)
		}
		return err == nil
	})
	eventually(t, 20*time.Second, "second message", func() bool { return len(got.snapshot()) == 2 })
	var payloads []string
	for _, m := range got.snapshot() {
		payloads = append(payloads, string(m.GetPayload()))
	}
	if !slices.Equal(payloads, []string{"before", "after"}) || sub.Reconnects() < 1 {
		t.Fatalf("payloads %v, reconnects %d", payloads, sub.Reconnects())
	}
	eventually(t, 5*time.Second, "both acked", func() bool { return sub.Acked() == 2 })
}

func TestSubscriberInvalidSubscriptionIsReturned(t *testing.T) {
	sub := newSubscriber(server.conn, "not a valid name!", "c1")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := sub.Run(ctx, func(context.Context, *batonv1.SubscribeResponse) error { return nil })
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Run = %v, want INVALID_ARGUMENT", err)
	}
}

func TestScheduleKeysDeliverAtAndCancel(t *testing.T) {
	ctx := context.Background()
	sched := baton.NewProducer(server.conn)
	receiver := unique("go-sched")
	a := schedule(t, sched, receiver, "x", baton.After(time.Hour), baton.WithKey("invoice-7"))
	b := schedule(t, sched, receiver, "y", baton.After(5*time.Second), baton.WithKey("invoice-7"))
	if !a.GetCreated() || b.GetCreated() || b.GetId() != a.GetId() {
		t.Fatalf("keyed twice: %v, %v", a, b)
	}
	at := time.Now().Add(2 * time.Hour).Truncate(time.Millisecond)
	if c := schedule(t, sched, receiver, "z", baton.At(at)); !c.GetDeliverAt().AsTime().Equal(at) {
		t.Fatalf("deliver at %v, want %v", c.GetDeliverAt().AsTime(), at)
	}
	if ok, err := sched.Cancel(ctx, receiver, a.GetId()); !ok || err != nil {
		t.Fatalf("cancel = %v, %v", ok, err)
	}
	if ok, err := sched.Cancel(ctx, receiver, a.GetId()); ok || err != nil {
		t.Fatalf("second cancel = %v, %v", ok, err)
	}
	// The key is free again once its message is gone.
	if d := schedule(t, sched, receiver, "x2", baton.WithKey("invoice-7")); !d.GetCreated() || d.GetId() == a.GetId() {
		t.Fatalf("after cancel: %v", d)
	}
}

// 200 messages, each handled once, never more than MaxInFlight handlers at once, every ack
// confirmed (Acked), none late.
func TestSubscriberHandlesEachMessageOnce(t *testing.T) {
	{
		sched := baton.NewProducer(server.conn)
		receiver := unique("go-many")
		for i := range 200 {
			schedule(t, sched, receiver, fmt.Sprint(i))
		}
		var mu sync.Mutex
		seen := map[string]int{}
		var running, peak atomic.Int32
		sub := newSubscriber(server.conn, receiver, "c1")
		sub.MaxInFlight = 5
		stop := subscribe(sub, func(_ context.Context, m *batonv1.SubscribeResponse) error {
			n := running.Add(1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			mu.Lock()
			seen[string(m.GetPayload())]++
			mu.Unlock()
			running.Add(-1)
			return nil
		})
		eventually(t, 20*time.Second, "200 acked", func() bool { return sub.Acked() == 200 })
		stop()
		mu.Lock()
		for p, n := range seen {
			if n != 1 {
				t.Errorf("%s handled %d times", p, n)
			}
		}
		mu.Unlock()
		if len(seen) != 200 || peak.Load() > 5 || sub.LateAcks() != 0 {
			t.Fatalf("%d handled, peak %d handlers (max 5), %d late acks", len(seen), peak.Load(), sub.LateAcks())
		}
	}
}

// A handler slower than the ack timeout (500 ms here): the message goes out again, and the
// first handler's ack, sent on the Receive stream, comes back lost: counted in LateAcks, and
// the stream goes on (the second delivery is acked).
func TestSubscriberLateAckOnReceiveIsCountedAndTheStreamGoesOn(t *testing.T) {
	sched := baton.NewProducer(server.conn)
	receiver := unique("go-late")
	schedule(t, sched, receiver, "slow")
	var deliveriesSeen atomic.Int32
	release := make(chan struct{})
	sub := newSubscriber(server.conn, receiver, "c1")
	sub.MaxInFlight = 2
	stop := subscribe(sub, func(ctx context.Context, m *batonv1.SubscribeResponse) error {
		deliveriesSeen.Add(1)
		if m.GetDeliveryCount() == 1 {
			<-release // held until the message went out again
		}
		return nil
	})
	defer stop()
	eventually(t, 20*time.Second, "delivered again after the ack timeout", func() bool { return deliveriesSeen.Load() == 2 })
	eventually(t, 10*time.Second, "the second delivery acked", func() bool { return sub.Acked() == 1 })
	close(release)
	eventually(t, 10*time.Second, "the first ack refused as late", func() bool { return sub.LateAcks() == 1 })
	if sub.Acked() != 1 {
		t.Fatalf("acked %d, want 1", sub.Acked())
	}
}

package baton_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	baton "github.com/baton-project/baton/clients/go"
	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

// dropFirstAnswer is a unary interceptor on one method: every call of it goes to Baton, and the
// first one that Baton applied is then failed UNAVAILABLE, as if its answer had been lost on the
// way back. It records each attempt's request id and Baton's own answer to it.
type dropFirstAnswer struct {
	method  string
	mu      sync.Mutex
	ids     []string
	answers []error
}

func (d *dropFirstAnswer) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	if method != d.method {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ids = append(d.ids, req.(interface{ GetRequestId() string }).GetRequestId())
	d.answers = append(d.answers, err)
	if len(d.ids) == 1 && err == nil {
		return status.Error(codes.Unavailable, "the test dropped this answer")
	}
	return err
}

func (d *dropFirstAnswer) attempts() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.ids)
}

// check: the call was made twice (the dropped answer, then the retry), both attempts with one
// non-empty request id, and Baton answered the retry as it did the applied first call.
func (d *dropFirstAnswer) check(t *testing.T) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.ids) != 2 {
		t.Fatalf("%d attempts of %s (request ids %q, answers %v), want 2", len(d.ids), d.method, d.ids, d.answers)
	}
	if d.ids[0] == "" || d.ids[1] != d.ids[0] {
		t.Errorf("request ids of the attempts %q: want one non-empty id for both", d.ids)
	}
	for i, err := range d.answers {
		if err != nil {
			t.Errorf("Baton's answer to attempt %d of %s: %v, want OK", i+1, d.method, err)
		}
	}
}

// droppingClient dials the package's Baton with a dropFirstAnswer on method.
func droppingClient(t *testing.T, method string) (*baton.Client, *dropFirstAnswer) {
	t.Helper()
	d := &dropFirstAnswer{method: method}
	return dial(t, server.addr, baton.WithDialOptions(grpc.WithChainUnaryInterceptor(d.intercept))), d
}

// Return, Fail, the unary worker's Complete and the unary subscriber's Ack retry UNAVAILABLE
// with one request id: a retry of a call Baton had applied gets the first call's answer, not
// LEASE_LOST (without the id, the retry presents a spent token).
func TestRetriedCallsCarryOneRequestID(t *testing.T) {
	ctx := context.Background()
	claimOn := func(t *testing.T, c *baton.Client) (*baton.Pool, *baton.Claim) {
		t.Helper()
		pool := baton.NewPool(server.conn, unique("go-rid-pool"))
		if _, err := pool.OfferIDs(ctx, "vm-1"); err != nil {
			t.Fatal(err)
		}
		claimer := baton.NewClaimer(c, pool.Name, "go-claimer")
		claimer.Logger = quiet
		return pool, mustClaim(t, claimer)
	}

	t.Run("Return", func(t *testing.T) {
		c, d := droppingClient(t, batonv1.ClaimService_Return_FullMethodName)
		pool, cl := claimOn(t, c)
		if err := cl.Return(ctx, true); err != nil {
			t.Fatalf("Return = %v, want nil", err)
		}
		d.check(t)
		if got := counts(poolStatus(t, pool)); got != [3]uint64{1, 0, 0} {
			t.Fatalf("idle, claimed, dead-lettered = %v", got)
		}
	})

	t.Run("Fail", func(t *testing.T) {
		c, d := droppingClient(t, batonv1.ClaimService_Fail_FullMethodName)
		pool, cl := claimOn(t, c)
		if err := cl.Fail(ctx, "bad image"); err != nil {
			t.Fatalf("Fail = %v, want nil", err)
		}
		d.check(t)
		if got := counts(poolStatus(t, pool)); got != [3]uint64{0, 0, 1} {
			t.Fatalf("idle, claimed, dead-lettered = %v", got)
		}
	})

	t.Run("Complete", func(t *testing.T) {
		c, d := droppingClient(t, batonv1.AgentService_Complete_FullMethodName)
		queue := unique("go-rid")
		register(t, queue, []string{"once"}, 30*time.Second, 0)
		w := baton.NewWorker(c, queue, unique("w"))
		w.Unary = true
		w.Wait = time.Second
		var runs atomic.Int32
		stop := start(w, func(context.Context, *batonv1.Lease) error { runs.Add(1); return nil })
		eventually(t, 10*time.Second, "Complete sent again", func() bool { return d.attempts() >= 2 })
		stop()
		d.check(t)
		// Run once, and (one-shot) removed by the first Complete. (The completions metric is not
		// checked: Baton counts the answered retry as a completion too.)
		list, err := agentClient().ListAgents(ctx, &batonv1.ListAgentsRequest{Queue: queue})
		if runs.Load() != 1 || err != nil || len(list.GetAgents()) != 0 {
			t.Fatalf("ran %d times; agents left %v (%v)", runs.Load(), list.GetAgents(), err)
		}
	})

	t.Run("Ack", func(t *testing.T) {
		c, d := droppingClient(t, batonv1.ScheduleService_Ack_FullMethodName)
		receiver := unique("go-rid-rcv")
		schedule(t, baton.NewScheduler(server.conn), receiver, "once")
		sub := newSubscriber(c, receiver, "c1")
		sub.Unary = true
		stop := subscribe(sub, func(context.Context, *batonv1.SubscribeResponse) error { return nil })
		eventually(t, 10*time.Second, "Ack sent again", func() bool { return d.attempts() >= 2 })
		stop()
		d.check(t)
		if sub.Acked() != 1 || sub.LateAcks() != 0 {
			t.Fatalf("acked %d, late acks %d; want 1, 0", sub.Acked(), sub.LateAcks())
		}
	})
}

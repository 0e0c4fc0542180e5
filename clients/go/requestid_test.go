package baton_test

import (
	"context"
	"sync"
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

// Return, Fail and the Producer's Register, Schedule and Offer retry UNAVAILABLE with one
// request id: a retry of a call Baton had applied gets the first call's answer (without the id,
// Return and Fail would present a spent token, Register count nothing created, Schedule make a
// second message).
func TestRetriedCallsCarryOneRequestID(t *testing.T) {
	ctx := context.Background()
	claimOn := func(t *testing.T, c *baton.Client) (*testPool, *baton.Claim) {
		t.Helper()
		pool := newPool(server.conn, unique("go-rid-pool"))
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

	t.Run("Register", func(t *testing.T) {
		c, d := droppingClient(t, batonv1.AgentService_Register_FullMethodName)
		queue := unique("go-rid")
		resp, err := baton.NewProducer(c).Register(ctx, queue, baton.Job{Name: "a"}, baton.Job{Name: "b", Every: time.Hour})
		if err != nil || resp.GetCreated() != 2 {
			t.Fatalf("Register = %v, %v; want 2 created (the retry's answer is the first call's)", resp, err)
		}
		d.check(t)
	})

	t.Run("Schedule", func(t *testing.T) {
		c, d := droppingClient(t, batonv1.ScheduleService_Schedule_FullMethodName)
		receiver := unique("go-rid-rcv")
		first, err := baton.NewProducer(c).Schedule(ctx, receiver, []byte("once"), baton.After(time.Hour))
		if err != nil || !first.GetCreated() {
			t.Fatalf("Schedule = %v, %v", first, err)
		}
		d.check(t)
		// One message: the retry did not schedule a second one. Scheduling it again with the
		// caller's own request id answers the same message.
		again, err := baton.NewProducer(server.conn).Schedule(baton.WithRequestID(ctx, "rid-"+receiver), receiver, []byte("x"))
		same, err2 := baton.NewProducer(server.conn).Schedule(baton.WithRequestID(ctx, "rid-"+receiver), receiver, []byte("x"))
		if err != nil || err2 != nil || again.GetId() != same.GetId() || again.GetId() == first.GetId() {
			t.Fatalf("with a request id: %v %v, %v %v", again, err, same, err2)
		}
	})

	t.Run("Offer", func(t *testing.T) {
		c, d := droppingClient(t, batonv1.ClaimService_Offer_FullMethodName)
		pool := newPool(c, unique("go-rid-pool"))
		resp, err := pool.OfferIDs(ctx, "vm-1", "vm-2")
		if err != nil || resp.GetIdle() != 2 {
			t.Fatalf("Offer = %v, %v; want 2 idle", resp, err)
		}
		d.check(t)
	})
}

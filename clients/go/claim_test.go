package baton_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	baton "github.com/baton-project/baton/clients/go"
	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testPool is one pool, offered to through a Producer.
type testPool struct {
	producer *baton.Producer
	Name     string
}

func newPool(conn grpc.ClientConnInterface, name string) *testPool {
	return &testPool{baton.NewProducer(conn), name}
}

func (p *testPool) Offer(ctx context.Context, resources ...*batonv1.Resource) (*batonv1.OfferResponse, error) {
	return p.producer.Offer(ctx, p.Name, resources...)
}

func (p *testPool) OfferIDs(ctx context.Context, ids ...string) (*batonv1.OfferResponse, error) {
	return p.producer.OfferIDs(ctx, p.Name, ids...)
}

func (p *testPool) Status(ctx context.Context) (*batonv1.PoolStatus, error) {
	return p.producer.PoolStatus(ctx, p.Name)
}

func newPoolAndClaimer(t *testing.T) (*testPool, *baton.Claimer) {
	t.Helper()
	pool := newPool(server.conn, unique("go-pool"))
	c := baton.NewClaimer(server.conn, pool.Name, "go-claimer")
	c.Wait = 2 * time.Second
	c.Attributes = map[string]string{"job": "t"}
	c.Logger = quiet
	return pool, c
}

func poolStatus(t *testing.T, p *testPool) *batonv1.PoolStatus {
	t.Helper()
	s, err := p.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func counts(s *batonv1.PoolStatus) [3]uint64 {
	return [3]uint64{s.GetIdle(), s.GetClaimed(), s.GetDeadLettered()}
}

func poolDeadLetters(t *testing.T, pool string) []*batonv1.DeadLetter {
	t.Helper()
	resp, err := batonv1.NewAdminServiceClient(server.conn).ListDeadLetters(context.Background(), &batonv1.ListDeadLettersRequest{
		Source: &batonv1.Source{Kind: batonv1.SourceKind_SOURCE_KIND_POOL, Name: pool},
	})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetDeadLetters()
}

func mustClaim(t *testing.T, c *baton.Claimer, opts ...baton.ClaimOption) *baton.Claim {
	t.Helper()
	cl, err := c.Claim(context.Background(), opts...)
	if err != nil || cl == nil {
		t.Fatalf("claim: %v, %v", cl, err)
	}
	return cl
}

func TestClaimWithSuccessReturnsTheResourceForReuse(t *testing.T) {
	ctx := context.Background()
	pool, c := newPoolAndClaimer(t)
	offered, err := pool.Offer(ctx, &batonv1.Resource{Id: "vm-1", Attributes: map[string]string{"zone": "a"}}, &batonv1.Resource{Id: "vm-2"})
	if err != nil || offered.GetIdle() != 2 || offered.GetHanded() != 0 {
		t.Fatalf("offer: %v %v", offered, err)
	}
	var token uint64
	err = c.With(ctx, func(ctx context.Context, cl *baton.Claim) error {
		if cl.ID() != "vm-1" || !maps.Equal(cl.Attributes(), map[string]string{"zone": "a", "job": "t"}) || cl.Token == 0 || cl.ClaimedAt.IsZero() {
			t.Errorf("claim %+v", cl)
		}
		token = cl.Token
		if s := poolStatus(t, pool); s.GetIdle() != 1 || s.GetClaimed() != 1 {
			t.Errorf("while claimed: %v", s)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := counts(poolStatus(t, pool)); got != [3]uint64{2, 0, 0} {
		t.Fatalf("idle, claimed, dead-lettered = %v", got)
	}
	// Idle again, at the back of the ready queue: vm-2 first, then vm-1 with a newer token.
	second, third := mustClaim(t, c), mustClaim(t, c)
	if second.ID() != "vm-2" || third.ID() != "vm-1" || third.Token <= token {
		t.Fatalf("then %s, %s (token %d after %d)", second.ID(), third.ID(), third.Token, token)
	}
	_ = second.Return(ctx, true)
	_ = third.Return(ctx, true)
}

func TestClaimWithErrorDeadLettersTheResource(t *testing.T) {
	ctx := context.Background()
	pool, c := newPoolAndClaimer(t)
	if _, err := pool.OfferIDs(ctx, "vm-1"); err != nil {
		t.Fatal(err)
	}
	diskFull := errors.New("disk full")
	if err := c.With(ctx, func(context.Context, *baton.Claim) error { return diskFull }); err != diskFull {
		t.Fatalf("With = %v, want the body's error", err)
	}
	if got := counts(poolStatus(t, pool)); got != [3]uint64{0, 0, 1} {
		t.Fatalf("idle, claimed, dead-lettered = %v", got)
	}
	dead := poolDeadLetters(t, pool.Name)
	if len(dead) != 1 || dead[0].GetId() != "vm-1" || dead[0].GetMessage() != "disk full" || dead[0].GetHolder() != "go-claimer" {
		t.Fatalf("dead letters %v", dead)
	}
}

func TestClaimWithPanicDeadLettersTheResource(t *testing.T) {
	ctx := context.Background()
	pool, c := newPoolAndClaimer(t)
	if _, err := pool.OfferIDs(ctx, "vm-1"); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v, want the body's panic", p)
			}
		}()
		_ = c.With(ctx, func(context.Context, *baton.Claim) error { panic("boom") })
	}()
	dead := poolDeadLetters(t, pool.Name)
	if len(dead) != 1 || dead[0].GetMessage() != "panic: boom" {
		t.Fatalf("dead letters %v", dead)
	}
}

func TestClaimWaitEndsWithNothing(t *testing.T) {
	ctx := context.Background()
	pool, c := newPoolAndClaimer(t)
	started := time.Now()
	if cl, err := c.Claim(ctx, baton.WithWait(300*time.Millisecond)); cl != nil || err != nil {
		t.Fatalf("claim = %v, %v; want nothing", cl, err)
	}
	if time.Since(started) < 250*time.Millisecond {
		t.Fatalf("answered after %v, before the wait ended", time.Since(started))
	}
	called := false
	err := c.With(ctx, func(context.Context, *baton.Claim) error { called = true; return nil }, baton.WithWait(200*time.Millisecond))
	if !errors.Is(err, baton.ErrNoResource) || called {
		t.Fatalf("With = %v (called %v); want ErrNoResource", err, called)
	}
	if cl, err := c.Claim(ctx, baton.WithWait(0)); cl != nil || err != nil {
		t.Fatalf("claim = %v, %v; want nothing", cl, err)
	}
	if s := poolStatus(t, pool); s.GetWaitingClaims() != 0 {
		t.Fatalf("waiting claims %d", s.GetWaitingClaims())
	}
}

func TestClaimWithCancelledReturnsTheResource(t *testing.T) {
	pool, c := newPoolAndClaimer(t)
	if _, err := pool.OfferIDs(context.Background(), "vm-1"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	err := c.With(ctx, func(ctx context.Context, _ *baton.Claim) error {
		go func() { time.Sleep(100 * time.Millisecond); cancel() }()
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("With = %v", err)
	}
	if got := counts(poolStatus(t, pool)); got != [3]uint64{1, 0, 0} {
		t.Fatalf("idle, claimed, dead-lettered = %v", got)
	}
	if dead := poolDeadLetters(t, pool.Name); len(dead) != 0 {
		t.Fatalf("dead letters %v", dead)
	}
}

func TestClaimCancelLeavesTheLine(t *testing.T) {
	pool, c := newPoolAndClaimer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	// The deadline ends the call on both sides at once: the client's own DEADLINE_EXCEEDED or,
	// when the server's answer to the expired grpc-timeout arrives first, its CANCELLED.
	if cl, err := c.Claim(ctx, baton.WithWait(10*time.Second)); status.Code(err) != codes.DeadlineExceeded && status.Code(err) != codes.Canceled {
		t.Fatalf("claim = %v, %v; want DEADLINE_EXCEEDED or CANCELLED", cl, err)
	}
	eventually(t, 5*time.Second, "line empty", func() bool { return poolStatus(t, pool).GetWaitingClaims() == 0 })
}

func TestClaimExplicitReturnAndFail(t *testing.T) {
	ctx := context.Background()
	pool, c := newPoolAndClaimer(t)
	_, _ = pool.OfferIDs(ctx, "vm-1")
	cl := mustClaim(t, c)
	if err := cl.Return(ctx, false); err != nil { // leaves the pool until offered again
		t.Fatal(err)
	}
	if got := counts(poolStatus(t, pool)); got != [3]uint64{0, 0, 0} {
		t.Fatalf("idle, claimed, dead-lettered = %v", got)
	}
	if err := cl.Return(ctx, true); !baton.IsLeaseLost(err) || baton.Reason(err) != "LEASE_LOST" {
		t.Fatalf("second Return = %v, want LEASE_LOST", err)
	}
	_, _ = pool.OfferIDs(ctx, "vm-1")
	cl = mustClaim(t, c)
	if err := cl.Fail(ctx, "bad image"); err != nil {
		t.Fatal(err)
	}
	if dead := poolDeadLetters(t, pool.Name); len(dead) != 1 || dead[0].GetId() != "vm-1" || dead[0].GetMessage() != "bad image" {
		t.Fatalf("dead letters %v", dead)
	}
	// A body that ends its claim itself is left alone.
	_, _ = pool.OfferIDs(ctx, "vm-2")
	if err := c.With(ctx, func(ctx context.Context, cl *baton.Claim) error { return cl.Return(ctx, false) }); err != nil {
		t.Fatal(err)
	}
	if got := counts(poolStatus(t, pool)); got != [3]uint64{0, 0, 1} {
		t.Fatalf("idle, claimed, dead-lettered = %v", got)
	}
}

func TestClaimFullLineIsALineFullErrorWithThePushbackHint(t *testing.T) {
	ctx := context.Background()
	pool, c := newPoolAndClaimer(t)
	// This Baton's line holds one waiting claim (pool.max_line = 1).
	first := make(chan *baton.Claim, 1)
	go func() {
		cl, err := c.Claim(ctx, baton.WithWait(10*time.Second))
		if err != nil {
			t.Error(err)
		}
		first <- cl
	}()
	eventually(t, 5*time.Second, "one claim waiting", func() bool { return poolStatus(t, pool).GetWaitingClaims() == 1 })
	other := baton.NewClaimer(server.conn, pool.Name, "go-other")
	_, err := other.Claim(ctx, baton.WithWait(10*time.Second))
	var full *baton.LineFullError
	if !errors.As(err, &full) || full.RetryAfter != 250*time.Millisecond || full.Pool != pool.Name {
		t.Fatalf("claim = %v, want a LineFullError with a 250 ms hint", err)
	}
	// The error under it, read as any caller of the raw stubs would.
	if full.Reason() != "LINE_FULL" || baton.Reason(full.Err) != "LINE_FULL" || baton.RetryAfter(full.Err) != 250*time.Millisecond {
		t.Fatalf("reason %q, hint %v", baton.Reason(full.Err), baton.RetryAfter(full.Err))
	}
	// An offer serves the waiting claim at once.
	if offered, err := pool.OfferIDs(ctx, "vm-1"); err != nil || offered.GetHanded() != 1 {
		t.Fatalf("offer: %v %v", offered, err)
	}
	select {
	case cl := <-first:
		if cl == nil || cl.ID() != "vm-1" {
			t.Fatalf("waiting claim got %v", cl)
		}
		_ = cl.Return(ctx, true)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting claim was not served")
	}
}

package baton_test

import (
	"context"
	"sync"
	"testing"
	"time"

	baton "github.com/baton-project/baton/clients/go"
	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

type recorder struct {
	mu     sync.Mutex
	events []string
	tokens []uint64
}

func (r *recorder) attach(l *baton.Leadership) *baton.Leadership {
	l.OnElected = func(t uint64) { r.add("elected", t) }
	l.OnLost = func(t uint64) { r.add("lost", t) }
	return l
}

func (r *recorder) add(kind string, token uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, kind)
	r.tokens = append(r.tokens, token)
}

func (r *recorder) snapshot() ([]string, []uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...), append([]uint64(nil), r.tokens...)
}

func run(l *baton.Leadership) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = l.Run(ctx); close(done) }()
	return func() { cancel(); <-done }
}

func leading(l *baton.Leadership) bool { _, ok := l.Token(); return ok }

func TestLeadershipGainRenewAndHandOver(t *testing.T) {
	election := unique("go-election")
	var ra, rb recorder
	a := ra.attach(baton.NewLeadership(server.conn, election, "a", 600*time.Millisecond))
	b := rb.attach(baton.NewLeadership(server.conn, election, "b", 600*time.Millisecond))
	stopA := run(a)
	eventually(t, 5*time.Second, "a elected", func() bool { return leading(a) })
	tokenA, _ := a.Token()
	stopB := run(b)
	time.Sleep(2 * time.Second) // > 3 ttls: a renews, b waits
	if tok, ok := a.Token(); !ok || tok != tokenA || leading(b) {
		t.Fatalf("a should still lead with %d: a=%d/%v b=%v", tokenA, tok, ok, leading(b))
	}
	got, err := batonv1.NewLeaderServiceClient(server.conn).GetLeader(context.Background(), &batonv1.GetLeaderRequest{Election: election})
	if err != nil || got.GetLeaderId() != "a" || got.GetToken() != tokenA {
		t.Fatalf("GetLeader = %v, %v", got, err)
	}
	stopA() // resigns: b's waiting campaign wins at once
	eventually(t, 2*time.Second, "b elected", func() bool { return leading(b) })
	tokenB, _ := b.Token()
	if tokenB <= tokenA {
		t.Fatalf("token %d not above %d", tokenB, tokenA)
	}
	stopB()
	if ev, tok := ra.snapshot(); len(ev) != 2 || ev[0] != "elected" || ev[1] != "lost" || tok[0] != tokenA || tok[1] != tokenA {
		t.Fatalf("a's events %v %v", ev, tok)
	}
	if ev, tok := rb.snapshot(); len(ev) != 2 || ev[0] != "elected" || ev[1] != "lost" || tok[0] != tokenB {
		t.Fatalf("b's events %v %v", ev, tok)
	}
}

func TestLeadershipLossIsReportedThenRecampaigned(t *testing.T) {
	election := unique("go-loss")
	var r recorder
	l := r.attach(baton.NewLeadership(server.conn, election, "a", 900*time.Millisecond))
	stop := run(l)
	defer stop()
	eventually(t, 5*time.Second, "elected", func() bool { return leading(l) })
	first, _ := l.Token()
	// The term ends behind the helper's back.
	if _, err := batonv1.NewLeaderServiceClient(server.conn).Resign(context.Background(),
		&batonv1.ResignRequest{Election: election, CandidateId: "a", Token: first}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 4*time.Second, "lost and re-elected", func() bool { ev, _ := r.snapshot(); return len(ev) >= 3 })
	ev, tok := r.snapshot()
	if ev[0] != "elected" || ev[1] != "lost" || ev[2] != "elected" || tok[1] != first || tok[2] <= first {
		t.Fatalf("events %v %v", ev, tok)
	}
}

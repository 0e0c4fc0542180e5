package baton_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"

	baton "github.com/baton-project/baton/clients/go"
	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%04d", prefix, i)
	}
	return out
}

// runs counts handler runs per agent and the most handlers running at once.
type runs struct {
	mu      sync.Mutex
	count   map[string]int
	now     int
	highest int
}

func (r *runs) enter(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.count == nil {
		r.count = map[string]int{}
	}
	r.count[name]++
	r.now++
	r.highest = max(r.highest, r.now)
}

func (r *runs) leave() { r.mu.Lock(); r.now--; r.mu.Unlock() }

func (r *runs) snapshot() (map[string]int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.count {
		out[k] = v
	}
	return out, r.highest
}

// A completion for a lease lost while its handler ran (it expired; another worker took it) is
// refused for that lease only; the worker goes on with other work.
func TestSessionCompletionOfALostLeaseIsRefusedAndTheWorkerGoesOn(t *testing.T) {
	queue := unique("go-lostc")
	// Expired, the lease counts as a failure: due again after the error interval (10 ms).
	slow := &batonv1.Agent{Name: "slow", Timeout: durationpb.New(300 * time.Millisecond), ErrorInterval: durationpb.New(10 * time.Millisecond)}
	if _, err := agentClient().Register(context.Background(), &batonv1.RegisterRequest{Queue: queue, Agents: []*batonv1.Agent{slow}}); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	w := newWorker(queue)
	w.HeartbeatEvery = time.Hour // the lease must expire while the handler runs
	var ran atomic.Int32
	started := make(chan uint64, 1)
	stop := start(w, func(ctx context.Context, lease *batonv1.Lease) error {
		if lease.GetName() == "slow" && ran.Add(1) == 1 {
			started <- lease.GetToken()
			<-release
		}
		return nil
	})
	defer stop()
	var first uint64
	select {
	case first = <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("slow never ran")
	}
	// The sweeper takes the expired lease back; another worker (unary calls) takes it over.
	var taken *batonv1.Lease
	eventually(t, 30*time.Second, "slow taken over", func() bool {
		r, err := agentClient().Acquire(context.Background(), &batonv1.AcquireRequest{Queue: queue, WorkerId: "other", MaxLeases: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.GetLeases()) == 1 {
			taken = r.GetLeases()[0]
		}
		return taken != nil
	})
	if taken.GetToken() <= first {
		t.Fatalf("taken over with token %d, first run had %d", taken.GetToken(), first)
	}
	close(release) // the first run ends now: its completion is refused
	register(t, queue, []string{"next"}, 30*time.Second, 0)
	eventually(t, 30*time.Second, "next done", func() bool { return completed(t, queue)["SUCCESS"] >= 1 })
	st := getAgent(t, queue, "slow")
	if st.GetState() != batonv1.AgentState_AGENT_STATE_WORKING || st.GetToken() != taken.GetToken() || st.GetHolder() != "other" {
		t.Fatalf("the stale completion changed the new holder's lease: %v", st)
	}
}

// A Baton restart breaks the session mid-batch: nothing is lost, every agent runs to
// completion (at least once) on the session opened after it.
func TestSessionBrokenMidBatchLosesNothing(t *testing.T) {
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
	agents := batonv1.NewAgentServiceClient(conn)
	queue := unique("go-broken")
	all := names("b", 200)
	var defs []*batonv1.Agent
	for _, n := range all {
		defs = append(defs, &batonv1.Agent{Name: n, Timeout: durationpb.New(2 * time.Second)})
	}
	if _, err := agents.Register(context.Background(), &batonv1.RegisterRequest{Queue: queue, Agents: defs}); err != nil {
		t.Fatal(err)
	}
	var r runs
	w := baton.NewWorker(conn, queue, unique("w"))
	w.MaxLeases = 10
	w.HeartbeatEvery = 200 * time.Millisecond
	var restarted atomic.Bool
	gate := make(chan struct{})
	stop := start(w, func(ctx context.Context, lease *batonv1.Lease) error {
		r.enter(lease.GetName())
		defer r.leave()
		if !restarted.Load() {
			<-gate // hold the first leases across the restart
		}
		return nil
	})
	defer stop()
	eventually(t, 20*time.Second, "first leases running", func() bool { _, h := r.snapshot(); return h == 10 })
	if err := own.restart(); err != nil {
		t.Fatal(err)
	}
	restarted.Store(true)
	close(gate)
	eventually(t, 60*time.Second, "every agent done", func() bool {
		l, err := agents.ListAgents(context.Background(), &batonv1.ListAgentsRequest{Queue: queue, PageSize: 1})
		return err == nil && len(l.GetAgents()) == 0
	})
	count, _ := r.snapshot()
	for _, n := range all {
		if count[n] < 1 {
			t.Fatalf("%s never ran", n)
		}
	}
}

// A worker stopped while Baton is down returns (its running handler cancelled and awaited)
// instead of waiting for a stream to stop on.
func TestStopWhileBatonIsDownReturns(t *testing.T) {
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
	queue := unique("go-down")
	if _, err := baton.NewProducer(conn).Register(context.Background(), queue, baton.Job{Name: "held", Timeout: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	w := baton.NewWorker(conn, queue, unique("w"))
	w.ShutdownGrace = 2 * time.Second
	started, cancelled := make(chan struct{}), make(chan struct{})
	stop := start(w, func(ctx context.Context, lease *batonv1.Lease) error {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return ctx.Err()
	})
	<-started
	own.terminate()
	returned := make(chan struct{})
	go func() { stop(); close(returned) }()
	select {
	case <-returned:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return with Baton down")
	}
	select {
	case <-cancelled:
	default:
		t.Fatal("the running handler was not cancelled")
	}
}

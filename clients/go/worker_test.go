package baton_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	baton "github.com/baton-project/baton/clients/go"
	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

func agentClient() batonv1.AgentServiceClient { return batonv1.NewAgentServiceClient(server.conn) }

func register(t *testing.T, queue string, names []string, timeout, interval time.Duration) {
	t.Helper()
	var agents []*batonv1.Agent
	for _, n := range names {
		a := &batonv1.Agent{Name: n, Timeout: durationpb.New(timeout), ErrorInterval: durationpb.New(time.Hour)}
		if interval > 0 {
			a.Interval = durationpb.New(interval)
		}
		agents = append(agents, a)
	}
	if _, err := agentClient().Register(context.Background(), &batonv1.RegisterRequest{Queue: queue, Agents: agents}); err != nil {
		t.Fatal(err)
	}
}

func getAgent(t *testing.T, queue, name string) *batonv1.AgentStatus {
	t.Helper()
	r, err := agentClient().GetAgent(context.Background(), &batonv1.GetAgentRequest{Queue: queue, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return r.GetAgent()
}

func newWorker(queue string) *baton.Worker {
	w := baton.NewWorker(server.conn, queue, unique("w"))
	w.HeartbeatEvery = 200 * time.Millisecond
	return w
}

// start runs w in the background; the returned stop cancels it and waits for Run to return.
func start(w *baton.Worker, h baton.Handler) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = w.Run(ctx, h); close(done) }()
	return func() { cancel(); <-done }
}

func TestHappyPathRunsEachAgentOnce(t *testing.T) {
	queue := unique("go-happy")
	names := []string{"a0", "a1", "a2", "a3", "a4", "a5"}
	register(t, queue, names, 30*time.Second, 0)
	var mu sync.Mutex
	var seen []string
	w := newWorker(queue)
	w.MaxLeases = 2
	stop := start(w, func(ctx context.Context, lease *batonv1.Lease) error {
		if lease.GetQueue() != queue || lease.GetToken() == 0 {
			return fmt.Errorf("bad lease %v", lease)
		}
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		seen = append(seen, lease.GetName())
		mu.Unlock()
		return nil
	})
	eventually(t, 10*time.Second, "all succeeded", func() bool { return completed(t, queue)["SUCCESS"] == len(names) })
	stop()
	slices.Sort(seen)
	if !slices.Equal(seen, names) {
		t.Fatalf("seen %v, want %v", seen, names)
	}
	list, err := agentClient().ListAgents(context.Background(), &batonv1.ListAgentsRequest{Queue: queue})
	if err != nil || len(list.GetAgents()) != 0 {
		t.Fatalf("one-shot agents not removed: %v %v", list, err)
	}
}

func TestHeartbeatsKeepALongRunAlive(t *testing.T) {
	queue := unique("go-long")
	register(t, queue, []string{"slow"}, time.Second, 0)
	w := newWorker(queue)
	w.HeartbeatEvery = 250 * time.Millisecond
	cancelled := make(chan error, 1)
	stop := start(w, func(ctx context.Context, lease *batonv1.Lease) error {
		select {
		case <-time.After(2500 * time.Millisecond): // 2.5 × the lease's timeout
			return nil
		case <-ctx.Done():
			cancelled <- context.Cause(ctx)
			return ctx.Err()
		}
	})
	eventually(t, 10*time.Second, "success", func() bool { return completed(t, queue)["SUCCESS"] == 1 })
	stop()
	select {
	case err := <-cancelled:
		t.Fatalf("handler cancelled: %v", err)
	default:
	}
}

func TestProgressIsShownAndACancelledRunCancelsTheHandler(t *testing.T) {
	queue := unique("go-cancel")
	register(t, queue, []string{"crawl"}, 30*time.Second, time.Hour)
	cause := make(chan error, 1)
	w := newWorker(queue)
	w.HeartbeatEvery = 100 * time.Millisecond
	stop := start(w, func(ctx context.Context, lease *batonv1.Lease) error {
		w.ReportProgress(lease, "page 3 of 10")
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return ctx.Err()
	})
	defer stop()
	deadline := time.Now().Add(10 * time.Second)
	for getAgent(t, queue, "crawl").GetProgress() != "page 3 of 10" {
		if time.Now().After(deadline) {
			t.Fatal("progress never shown")
		}
		time.Sleep(50 * time.Millisecond)
	}
	r, err := agentClient().CancelRun(context.Background(), &batonv1.CancelRunRequest{Queue: queue, Name: "crawl"})
	if err != nil || !r.GetRequested() {
		t.Fatalf("CancelRun: %v %v", r, err)
	}
	select {
	case err := <-cause:
		if !errors.Is(err, baton.ErrRunCancelled) {
			t.Fatalf("cause %v, want ErrRunCancelled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("handler not cancelled")
	}
	for getAgent(t, queue, "crawl").GetState() != batonv1.AgentState_AGENT_STATE_WAITING {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatal("the cancelled run never ended")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := completed(t, queue); len(got) != 0 {
		t.Fatalf("completions %v: a cancelled run is neither completed nor failed", got)
	}
}

type statusErr struct{ status int }

func (e statusErr) Error() string   { return fmt.Sprintf("HTTP %d", e.status) }
func (e statusErr) HTTPStatus() int { return e.status }

func TestErrorsMapToOutcomes(t *testing.T) {
	prefix := unique("go-outcome")
	cases := map[string]struct {
		err     error
		outcome string
	}{
		"http401":  {statusErr{401}, "PERMANENT_FORBIDDEN"},
		"http403":  {fmt.Errorf("wrapped: %w", statusErr{403}), "PERMANENT_FORBIDDEN"},
		"http429":  {statusErr{429}, "THROTTLED"},
		"http408":  {statusErr{408}, "TRANSIENT"},
		"http503":  {statusErr{503}, "SERVER_ERROR"},
		"http404":  {statusErr{404}, "UNKNOWN"},
		"reset":    {syscall.ECONNRESET, "TRANSIENT"},
		"deadline": {context.DeadlineExceeded, "TRANSIENT"},
		"bug":      {errors.New("bad"), "UNKNOWN"},
		"explicit": {baton.NewFailure(batonv1.Outcome_OUTCOME_THROTTLED, "quota").WithRetryAfter(2 * time.Hour), "THROTTLED"},
	}
	var stops []func()
	for name, c := range cases {
		queue := prefix + "-" + name
		register(t, queue, []string{"job"}, 30*time.Second, 0)
		err := c.err
		stops = append(stops, start(newWorker(queue), func(context.Context, *batonv1.Lease) error { return err }))
	}
	for name, c := range cases {
		queue := prefix + "-" + name
		eventually(t, 10*time.Second, name, func() bool { return len(completed(t, queue)) > 0 })
		if got := completed(t, queue); len(got) != 1 || got[c.outcome] != 1 {
			t.Errorf("%s: completions %v, want {%s: 1}", name, got, c.outcome)
		}
	}
	// An explicit retry-after longer than the computed backoff wins.
	if next := getAgent(t, prefix+"-explicit", "job").GetNextRunAt().AsTime(); next.Before(time.Now().Add(7000 * time.Second)) {
		t.Errorf("retry_after not applied: next run %v", next)
	}
	for _, stop := range stops {
		stop()
	}
}

// A failure message longer than the server's limit goes whole; Baton clips it on a character
// boundary, ending in "…", and Complete succeeds (the run is dead-lettered at once).
func TestLongFailureMessagesAreClippedByTheServer(t *testing.T) {
	queue := unique("go-clip")
	dying := &batonv1.Agent{Name: "dies", Timeout: durationpb.New(time.Minute), ErrorInterval: durationpb.New(time.Hour), MaxAttempts: 1}
	if _, err := agentClient().Register(context.Background(), &batonv1.RegisterRequest{Queue: queue, Agents: []*batonv1.Agent{dying}}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é€😀", 10000)
	stop := start(newWorker(queue), func(context.Context, *batonv1.Lease) error {
		return errors.New(long)
	})
	defer stop()
	admin := batonv1.NewAdminServiceClient(server.conn)
	source := &batonv1.Source{Kind: batonv1.SourceKind_SOURCE_KIND_QUEUE, Name: queue}
	var letter *batonv1.DeadLetter
	eventually(t, 30*time.Second, "dead-lettered", func() bool {
		page, err := admin.ListDeadLetters(context.Background(), &batonv1.ListDeadLettersRequest{Source: source})
		if err != nil || len(page.GetDeadLetters()) == 0 {
			return false
		}
		letter = page.GetDeadLetters()[0]
		return true
	})
	msg, clipped := strings.CutSuffix(letter.GetMessage(), "…")
	if !clipped || !utf8.ValidString(msg) || !strings.HasPrefix(long, msg) || len(msg) == 0 {
		t.Fatalf("stored %d bytes, clipped %v, valid UTF-8 %v, a prefix %v", len(msg), clipped, utf8.ValidString(msg), strings.HasPrefix(long, msg))
	}
}

func TestWorkerInvalidSessionIsReturned(t *testing.T) {
	w := baton.NewWorker(server.conn, "not a valid name!", "w1")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.Run(ctx, func(context.Context, *batonv1.Lease) error { return nil }); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Run = %v, want INVALID_ARGUMENT", err)
	}
}

// A handler that returns WaitFor ends its run waiting; Producer.Signal wakes it with the event on
// its next lease, and the run's result reaches Await.
func TestWaitForEndsTheRunUntilASignal(t *testing.T) {
	queue := unique("q")
	p := baton.NewProducer(server.conn)
	// Awaited once signalled, so it may have finished by then: it keeps its result.
	if _, err := p.Register(context.Background(), queue, baton.Job{Name: "a", KeepResult: true}); err != nil {
		t.Fatal(err)
	}
	w := newWorker(queue)
	waiting := make(chan struct{})
	defer start(w, func(ctx context.Context, lease *batonv1.Lease) error {
		if e := lease.GetEvent(); e != nil {
			w.SetResult(lease, []byte(e.GetEvent()+":"+string(e.GetPayload())))
			return nil
		}
		defer close(waiting)
		return baton.WaitFor{Event: "approve"}
	})()
	<-waiting
	var answer *batonv1.SignalResponse
	eventually(t, 5*time.Second, "the signal delivered", func() bool {
		r, err := p.Signal(context.Background(), queue, "a", "approve", []byte("ok"))
		answer = r
		return err == nil && (r.GetDelivered() || r.GetKept())
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	result, err := p.Await(ctx, queue, "a")
	if err != nil || string(result.GetResult()) != "approve:ok" {
		t.Fatalf("await: %v %q (signal %v)", err, result.GetResult(), answer)
	}
}

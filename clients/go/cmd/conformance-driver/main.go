// Command conformance-driver maps the commands of the conformance suite
// (clients/conformance/DRIVER.md) onto the Go client's public helpers: JSON commands on stdin,
// one per line, and JSON events on stdout. It has no protocol logic of its own.
//
//	BATON_TARGET=127.0.0.1:50051 go run ./cmd/conformance-driver
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"time"
	"unicode"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc/status"

	baton "github.com/baton-project/baton/clients/go"
	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

// command is every field any command has.
type command struct {
	Cmd, ID, Queue, Traceparent string
	RequestID                   string `json:"request_id"`
	Names                       []string
	WorkerID                    string `json:"worker_id"`
	Concurrency                 int
	HeartbeatMs                 int `json:"heartbeat_ms"`
	Handler                     struct {
		Mode, Message, Result string
		HTTPStatus            int `json:"http_status"`
		Steps                 []string
		FailAfter             string `json:"fail_after"`
		Event                 string
		TimeoutMs             int `json:"timeout_ms"`
		Progress              bool
	}
	Event, Payload string
	Cascade        bool
	WaitFor        *struct {
		Event     string
		TimeoutMs int `json:"timeout_ms"`
	} `json:"wait_for"`
	After []struct {
		Queue, Name string
	}
	IdempotencyMode string `json:"idempotency_mode"` // keep_first, replace, debounce
	DebounceMs      int    `json:"debounce_ms"`

	IdempotencyKey string `json:"idempotency_key"`
	TimeoutMs      int    `json:"timeout_ms"`
	Batch          string
	CallbackQueue  string   `json:"callback_queue"`
	OnSuccess      []string `json:"on_success"`
	OnComplete     []string `json:"on_complete"`
	Close          bool
	Name, Election string
	CandidateID    string `json:"candidate_id"`
	TTLMs          int    `json:"ttl_ms"`
	Pool           string
	WaitMs         int    `json:"wait_ms"`
	FailWith       string `json:"fail_with"`
}

var out = struct {
	sync.Mutex
	*json.Encoder
}{Encoder: json.NewEncoder(os.Stdout)}

func emit(event string, id string, fields ...any) {
	m := map[string]any{"event": event}
	if id != "" {
		m["id"] = id
	}
	for i := 0; i+1 < len(fields); i += 2 {
		m[fields[i].(string)] = fields[i+1]
	}
	out.Lock()
	defer out.Unlock()
	_ = out.Encode(m) // one line, unbuffered
}

// httpError is an error carrying an HTTP status the way Go HTTP clients' errors do.
type httpError struct {
	status  int
	message string
}

func (e *httpError) Error() string   { return e.message }
func (e *httpError) HTTPStatus() int { return e.status }

// worker is one running Worker and the held runs its finish commands release.
type worker struct {
	stop    context.CancelFunc
	stopped chan struct{}
	mu      sync.Mutex
	holds   map[string]chan struct{}
}

func (w *worker) hold(name string) chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.holds[name] == nil {
		w.holds[name] = make(chan struct{})
	}
	return w.holds[name]
}

func (w *worker) finish(names ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(names) == 0 {
		for name := range w.holds {
			names = append(names, name)
		}
	}
	for _, name := range names {
		if w.holds[name] == nil {
			w.holds[name] = make(chan struct{})
		}
		select {
		case <-w.holds[name]:
		default:
			close(w.holds[name])
		}
	}
}

type driver struct {
	client   *baton.Client
	producer *baton.Producer
	mu       sync.Mutex
	workers  map[string]*worker
	leaders  map[string]func()
	pending  sync.WaitGroup
}

func main() {
	client, err := baton.Dial(os.Getenv("BATON_TARGET"))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	d := &driver{client: client, producer: baton.NewProducer(client), workers: map[string]*worker{}, leaders: map[string]func(){}}
	emit("ready", "")
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		var c command
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			emit("error", "", "cmd", "", "message", err.Error())
			continue
		}
		d.run(c)
	}
	// stdin ended: stop everything gracefully.
	d.mu.Lock()
	for id := range d.workers {
		d.async(func() { d.stopWorker(id) })
	}
	for id := range d.leaders {
		d.async(func() { d.closeLeader(id) })
	}
	d.mu.Unlock()
	d.pending.Wait()
}

// async runs f without blocking the reading of the next command.
func (d *driver) async(f func()) {
	d.pending.Add(1)
	go func() { defer d.pending.Done(); f() }()
}

func (d *driver) run(c command) {
	ctx := context.Background()
	switch c.Cmd {
	case "register", "traced_register":
		if c.RequestID != "" {
			ctx = baton.WithRequestID(ctx, c.RequestID)
		}
		if c.Traceparent != "" {
			ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": c.Traceparent})
		}
		d.async(func() { d.register(ctx, c) })
	case "worker":
		d.startWorker(c)
	case "finish", "finish_all":
		d.mu.Lock()
		w := d.workers[c.ID]
		d.mu.Unlock()
		if w == nil {
			emit("error", "", "cmd", c.Cmd, "message", "no worker "+c.ID)
			return
		}
		if c.Cmd == "finish" {
			w.finish(c.Name)
		} else {
			w.finish()
		}
	case "stop":
		d.async(func() { d.stopWorker(c.ID) })
	case "leader":
		d.startLeader(c)
	case "close":
		d.async(func() { d.closeLeader(c.ID) })
	case "claim":
		d.async(func() { d.claim(c) })
	case "call":
		d.async(func() {
			ctx, cancel := context.WithTimeout(ctx, time.Duration(c.TimeoutMs)*time.Millisecond)
			defer cancel()
			awaited(c, ctx)(d.producer.RegisterAndAwait(ctx, c.Queue, job(c, c.Name)))
		})
	case "await":
		d.async(func() {
			ctx, cancel := context.WithTimeout(ctx, time.Duration(c.TimeoutMs)*time.Millisecond)
			defer cancel()
			awaited(c, ctx)(d.producer.Await(ctx, c.Queue, c.Name))
		})
	case "signal":
		if c.RequestID != "" {
			ctx = baton.WithRequestID(ctx, c.RequestID)
		}
		d.async(func() {
			a, err := d.producer.Signal(ctx, c.Queue, c.Name, c.Event, []byte(c.Payload))
			if err != nil {
				emit("failed", c.ID, "code", codeName(err))
				return
			}
			emit("signalled", c.ID, "delivered", a.GetDelivered(), "kept", a.GetKept(), "duplicate", a.GetDuplicate(), "consumed", a.GetConsumed())
		})
	case "watch":
		d.async(func() { d.watch(c) })
	case "cancel":
		d.async(func() {
			a, err := d.producer.Agents.CancelRun(ctx, &batonv1.CancelRunRequest{Queue: c.Queue, Name: c.Name, Cascade: c.Cascade})
			if err != nil {
				emit("failed", c.ID, "code", codeName(err))
				return
			}
			emit("cancel", c.ID, "requested", a.GetRequested(), "cascaded", a.GetCascaded())
		})
	case "batch":
		d.async(func() {
			resp, err := d.producer.RegisterBatch(ctx, baton.Batch{Name: c.Batch, Queue: c.Queue, CallbackQueue: c.CallbackQueue,
				OnSuccess: jobs(c, c.OnSuccess), OnComplete: jobs(c, c.OnComplete), Close: c.Close}, jobs(c, c.Names)...)
			emitBatch(c)(resp.GetStatus(), err)
		})
	case "close_batch":
		d.async(func() { emitBatch(c)(d.producer.CloseBatch(ctx, c.Batch)) })
	case "batch_status":
		d.async(func() { emitBatch(c)(d.producer.BatchStatus(ctx, c.Batch)) })
	default:
		emit("error", "", "cmd", c.Cmd, "message", "unknown command")
	}
}

// modes maps the command's "idempotency_mode" onto IdempotencyMode.
var modes = map[string]batonv1.IdempotencyMode{"keep_first": batonv1.IdempotencyMode_IDEMPOTENCY_MODE_KEEP_FIRST,
	"replace": batonv1.IdempotencyMode_IDEMPOTENCY_MODE_REPLACE, "debounce": batonv1.IdempotencyMode_IDEMPOTENCY_MODE_DEBOUNCE}

// job is a one-shot agent name with the command's parents, idempotency key, mode and ttl.
func job(c command, name string) baton.Job {
	j := baton.Job{Name: name, IdempotencyKey: c.IdempotencyKey, IdempotencyMode: modes[c.IdempotencyMode],
		Debounce: time.Duration(c.DebounceMs) * time.Millisecond, TTL: time.Duration(c.TTLMs) * time.Millisecond}
	for _, p := range c.After {
		j.After = append(j.After, baton.Parent{Queue: p.Queue, Name: p.Name})
	}
	if c.WaitFor != nil {
		j.WaitFor = &baton.WaitFor{Event: c.WaitFor.Event, Timeout: time.Duration(c.WaitFor.TimeoutMs) * time.Millisecond}
	}
	return j
}

// stepNames is the names of steps.
func stepNames(steps []*batonv1.Step) []string {
	names := make([]string, 0, len(steps))
	for _, s := range steps {
		names = append(names, s.GetName())
	}
	return names
}

// watch follows an agent with Producer.Watch until its finish or timeout_ms.
func (d *driver) watch(c command) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(c.TimeoutMs)*time.Millisecond)
	defer cancel()
	for u, err := range d.producer.Watch(ctx, c.Queue, c.Name) {
		switch {
		case err != nil && ctx.Err() != nil:
			emit("watched", c.ID, "done", false)
		case err != nil:
			emit("failed", c.ID, "code", codeName(err))
		default:
			emit("watch_update", c.ID, "update", u.GetUpdate().String(), "state", u.GetState().String(), "token", u.GetToken(),
				"sequence", u.GetSequence(), "progress", u.GetProgress(), "steps", stepNames(u.GetSteps()))
			if f := u.GetFinish(); f.GetDone() {
				emit("watched", c.ID, "done", true, "finish", f.GetResult().GetFinish().String(),
					"result", string(f.GetResult().GetResult()), "steps", stepNames(f.GetSteps()))
			}
		}
	}
}

func jobs(c command, names []string) []baton.Job {
	js := make([]baton.Job, len(names))
	for i, name := range names {
		js[i] = job(c, name)
	}
	return js
}

func (d *driver) register(ctx context.Context, c command) {
	resp, err := d.producer.Register(ctx, c.Queue, jobs(c, c.Names)...)
	if err != nil {
		emit("failed", c.ID, "code", codeName(err))
		return
	}
	agents := make([]map[string]any, 0, len(resp.GetAgents()))
	for _, a := range resp.GetAgents() {
		agents = append(agents, map[string]any{"name": a.GetName(), "created": a.GetCreated(),
			"deduplicated": a.GetDeduplicated(), "result": string(a.GetResult().GetResult()),
			"replaced": a.GetReplaced(), "debounced": a.GetDebounced()})
	}
	emit("registered", c.ID, "count", resp.GetCreated()+resp.GetUpdated(), "deduplicated", resp.GetDeduplicated(), "agents", agents)
}

// awaited reports an Await's answer; ctx's end is "not done".
func awaited(c command, ctx context.Context) func(*batonv1.AgentResult, error) {
	return func(r *batonv1.AgentResult, err error) {
		switch {
		case err != nil && ctx.Err() != nil:
			emit("awaited", c.ID, "done", false)
		case err != nil:
			emit("failed", c.ID, "code", codeName(err))
		default:
			emit("awaited", c.ID, "done", true, "finish", r.GetFinish().String(), "result", string(r.GetResult()))
		}
	}
}

func emitBatch(c command) func(*batonv1.BatchStatus, error) {
	return func(s *batonv1.BatchStatus, err error) {
		if err != nil {
			emit("error", "", "cmd", c.Cmd, "message", err.Error())
			return
		}
		emit("batch", c.ID, "total", s.GetTotal(), "pending", s.GetPending(), "succeeded", s.GetSucceeded(),
			"failed", s.GetFailed(), "closed", s.GetClosed(), "done", s.GetDone())
	}
}

func (d *driver) startWorker(c command) {
	w := &worker{stopped: make(chan struct{}), holds: map[string]chan struct{}{}}
	var ctx context.Context
	ctx, w.stop = context.WithCancel(context.Background())
	bw := baton.NewWorker(d.client, c.Queue, c.WorkerID)
	bw.MaxLeases = max(c.Concurrency, 1)
	if c.HeartbeatMs > 0 {
		bw.HeartbeatEvery = time.Duration(c.HeartbeatMs) * time.Millisecond
	}
	d.mu.Lock()
	d.workers[c.ID] = w
	d.mu.Unlock()
	h := c.Handler
	go func() {
		defer close(w.stopped)
		_ = bw.Run(ctx, func(ctx context.Context, lease *batonv1.Lease) error {
			ev := []any{"name", lease.GetName(), "token", lease.GetToken()}
			parents := make([]map[string]any, 0, len(lease.GetParents()))
			for _, p := range lease.GetParents() {
				parents = append(parents, map[string]any{"queue": p.GetQueue(), "name": p.GetName(),
					"finish": p.GetFinish().String(), "result": string(p.GetResult())})
			}
			seen := make([]string, 0, len(lease.GetSteps()))
			for _, s := range lease.GetSteps() {
				seen = append(seen, s.GetName())
			}
			var leaseEvent map[string]any
			if e := lease.GetEvent(); e != nil {
				leaseEvent = map[string]any{"event": e.GetEvent(), "payload": string(e.GetPayload()), "timed_out": e.GetTimedOut()}
			}
			emit("started", c.ID, append(ev, "parents", parents, "steps", seen, "lease_event", leaseEvent)...)
			if h.Mode == "wait_for_event" {
				if e := lease.GetEvent(); e == nil {
					emit("waiting", c.ID, ev...)
					return baton.WaitFor{Event: h.Event, Timeout: time.Duration(h.TimeoutMs) * time.Millisecond}
				} else if e.GetTimedOut() {
					bw.SetResult(lease, []byte("timeout:"+e.GetEvent()))
				} else {
					bw.SetResult(lease, []byte(e.GetEvent()+":"+string(e.GetPayload())))
				}
			}
			var err error
			failing := h.Mode == "fail"
			for i, step := range h.Steps {
				if _, done := baton.RecordedStep(lease, step); done || h.Mode != "steps" {
					continue
				}
				if h.Progress {
					bw.ReportProgress(lease, fmt.Sprintf("%d/%d", i+1, len(h.Steps)))
				}
				answer, rerr := bw.RecordStep(ctx, lease, step, []byte("r-"+step))
				if rerr != nil {
					return rerr
				}
				emit("step", c.ID, append(ev, "step", step, "recorded", answer.GetRecorded())...)
				if step == h.FailAfter {
					failing = true
					break
				}
			}
			switch {
			case h.Mode == "hold":
				select {
				case <-w.hold(lease.GetName()):
				case <-ctx.Done():
					emit("cancelled", c.ID, append(ev, "reason", cancelReason(context.Cause(ctx)))...)
					return ctx.Err()
				}
			case failing:
				err = errors.New(h.Message)
				if h.HTTPStatus != 0 {
					err = &httpError{h.HTTPStatus, h.Message}
				}
			}
			emit("finished", c.ID, ev...)
			if h.Result != "" {
				bw.SetResult(lease, []byte(strings.ReplaceAll(h.Result, "{name}", lease.GetName())))
			}
			return err
		})
	}()
}

func (d *driver) stopWorker(id string) {
	d.mu.Lock()
	w := d.workers[id]
	delete(d.workers, id)
	d.mu.Unlock()
	if w == nil {
		emit("error", "", "cmd", "stop", "message", "no worker "+id)
		return
	}
	w.stop()
	<-w.stopped
	emit("stopped", id)
}

func (d *driver) startLeader(c command) {
	ctx, cancel := context.WithCancel(context.Background())
	l := baton.NewLeadership(d.client, c.Election, c.CandidateID, time.Duration(c.TTLMs)*time.Millisecond)
	l.OnElected = func(token uint64) { emit("elected", c.ID, "token", token) }
	l.OnLost = func(token uint64) { emit("lost", c.ID, "token", token) }
	done := make(chan struct{})
	go func() { defer close(done); _ = l.Run(ctx) }()
	d.mu.Lock()
	d.leaders[c.ID] = func() { cancel(); <-done }
	d.mu.Unlock()
}

func (d *driver) closeLeader(id string) {
	d.mu.Lock()
	stop := d.leaders[id]
	delete(d.leaders, id)
	d.mu.Unlock()
	if stop == nil {
		emit("error", "", "cmd", "close", "message", "no leader "+id)
		return
	}
	stop()
	emit("closed", id)
}

func (d *driver) claim(c command) {
	ctx := context.Background()
	claimer := baton.NewClaimer(d.client, c.Pool, "driver-"+c.ID)
	cl, err := claimer.Claim(ctx, baton.WithWait(time.Duration(c.WaitMs)*time.Millisecond))
	switch {
	case err != nil:
		emit("failed", c.ID, "code", codeName(err))
		return
	case cl == nil:
		emit("nothing", c.ID)
		return
	}
	emit("claimed", c.ID, "resource_id", cl.ID(), "token", cl.Token)
	if c.FailWith != "" {
		err = cl.Fail(ctx, c.FailWith)
	} else {
		err = cl.Return(ctx, true)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ending the claim:", err)
	}
	emit("ended", c.ID)
}

// codeName is the gRPC status code's name of err: UNAVAILABLE, DEADLINE_EXCEEDED …
func codeName(err error) string {
	var name []rune
	prev := ' '
	for _, r := range status.Code(err).String() {
		if unicode.IsUpper(r) && unicode.IsLower(prev) {
			name = append(name, '_')
		}
		name, prev = append(name, unicode.ToUpper(r)), r
	}
	return string(name)
}

// cancelReason names the cause the helper gave a cancelled handler, as DRIVER.md spells it.
func cancelReason(cause error) string {
	switch {
	case errors.Is(cause, baton.ErrLeaseLost):
		return "LEASE_LOST"
	case errors.Is(cause, baton.ErrRunCancelled):
		return "RUN_CANCELLED"
	case errors.Is(cause, baton.ErrShutdown):
		return "SHUTDOWN"
	}
	return fmt.Sprint(cause)
}

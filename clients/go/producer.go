package baton

import (
	"context"
	"io"
	"iter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

// Producer is the producer's side of Baton: register agents (work for workers, with parents
// and idempotency keys), wait for an agent's result, batches with callbacks, schedule messages
// (for subscribers) and offer resources (to a pool's claimers). Every call that changes state
// carries a request id (WithRequestID, else a fresh one) and is retried on UNAVAILABLE with it,
// so a retry after an unknown outcome does not apply twice.
type Producer struct {
	Agents    batonv1.AgentServiceClient
	Schedules batonv1.ScheduleServiceClient
	Claims    batonv1.ClaimServiceClient
}

// NewProducer returns a Producer over conn (a *Client, or a grpc.ClientConn of your own).
func NewProducer(conn grpc.ClientConnInterface) *Producer {
	return &Producer{
		Agents:    batonv1.NewAgentServiceClient(conn),
		Schedules: batonv1.NewScheduleServiceClient(conn),
		Claims:    batonv1.NewClaimServiceClient(conn),
	}
}

// Job is an agent to register: a one-shot run, due at once, unless Every or Cron makes it
// recurring. Zero fields take the server's defaults.
type Job struct {
	Name    string
	Payload []byte
	// Every makes the agent recurring: the next run is due this long after a successful run
	// started.
	Every time.Duration
	// Cron makes the agent recurring by a cron expression, in TimeZone (IANA; "" is UTC).
	Cron, TimeZone string
	// Key groups agents for per-key limits and fair turns (a tenant id); Priority orders due
	// agents (-1000 to 1000).
	Key      string
	Priority int32
	// Timeout is the lease length: a worker silent for that long loses the run.
	Timeout time.Duration
	// MaxAttempts dead-letters the agent after that many failures in a row (0: never).
	MaxAttempts uint32
	Labels      map[string]string
	// After names the agents this one runs after (its parents, of any queue): it is blocked
	// until every one succeeded, and its lease carries their results (Lease.Parents).
	After []Parent
	// OnParentFailure is what a parent's failure does to it, for parents whose own OnFailure is
	// unspecified (unspecified: PARENT_FAILURE_WAIT).
	OnParentFailure batonv1.ParentFailure
	// IdempotencyKey registers a one-shot agent once per key within IdempotencyWindow (0: the
	// server's default): a second registration answers the first agent, with its result.
	IdempotencyKey    string
	IdempotencyWindow time.Duration
	// TTL expires a one-shot agent (FINISH_EXPIRED, never run) unless a run starts within it
	// (0: never); ExpireAt, the same at a time (zero: never). One or the other.
	TTL      time.Duration
	ExpireAt time.Time
	// IdempotencyMode is what a registration whose key is held does (unspecified: keep the
	// first): IDEMPOTENCY_MODE_REPLACE replaces a waiting holder (RegisteredAgent.Replaced);
	// IDEMPOTENCY_MODE_DEBOUNCE makes one run, Debounce after the latest registration
	// (RegisteredAgent.Debounced).
	IdempotencyMode batonv1.IdempotencyMode
	Debounce        time.Duration
	// WaitFor gates the first run on an event (an approval) or a timeout.
	WaitFor *WaitFor
	// KeepResult keeps the agent's finish for Await after it finished (a plain one-shot's is
	// kept only while an Await waits for it, or for its children, batch or idempotency key).
	KeepResult bool
}

// Parent names a parent of a Job: Queue "" is the Job's own; OnFailure unspecified is the Job's
// OnParentFailure.
type Parent struct {
	Queue, Name string
	OnFailure   batonv1.ParentFailure
}

func (j Job) agent() *batonv1.Agent {
	a := &batonv1.Agent{Name: j.Name, Payload: j.Payload, Cron: j.Cron, TimeZone: j.TimeZone, Key: j.Key,
		Priority: j.Priority, MaxAttempts: j.MaxAttempts, Labels: j.Labels, OnParentFailure: j.OnParentFailure,
		IdempotencyKey: j.IdempotencyKey, IdempotencyMode: j.IdempotencyMode, KeepResult: j.KeepResult}
	if j.Every > 0 {
		a.Interval = durationpb.New(j.Every)
	}
	if j.Timeout > 0 {
		a.Timeout = durationpb.New(j.Timeout)
	}
	if j.IdempotencyWindow > 0 {
		a.IdempotencyWindow = durationpb.New(j.IdempotencyWindow)
	}
	if j.TTL > 0 {
		a.Ttl = durationpb.New(j.TTL)
	}
	if !j.ExpireAt.IsZero() {
		a.ExpireAt = timestamppb.New(j.ExpireAt)
	}
	if j.Debounce > 0 {
		a.Debounce = durationpb.New(j.Debounce)
	}
	if j.WaitFor != nil {
		a.WaitFor = j.WaitFor.proto()
	}
	for _, p := range j.After {
		a.After = append(a.After, &batonv1.AgentRef{Queue: p.Queue, Name: p.Name, OnFailure: p.OnFailure})
	}
	return a
}

func agents(jobs []Job) []*batonv1.Agent {
	out := make([]*batonv1.Agent, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, j.agent())
	}
	return out
}

// Register creates or replaces the agents of jobs in queue (at most the server's max_batch).
// The answer counts them (Created, Updated, Deduplicated) and says what became of each (Agents:
// a deduplicated one names the key's holder, with its result once it finished).
func (p *Producer) Register(ctx context.Context, queue string, jobs ...Job) (*batonv1.RegisterResponse, error) {
	req := &batonv1.RegisterRequest{Queue: queue, RequestId: requestID(ctx), Agents: agents(jobs)}
	var resp *batonv1.RegisterResponse
	err := retryUnavailable(ctx, func(ctx context.Context) (err error) {
		resp, err = p.Agents.Register(ctx, req)
		return err
	})
	return resp, err
}

// AwaitWait is the most one Await call is held before it is made again (as Leadership's
// campaign wait): Baton refuses waits beyond its limits.max_wait_ms.
const AwaitWait = 30 * time.Second

// RegisterAndAwait is request/reply over the fleet: it registers job (one-shot) in queue and
// waits for its finish (Await). A deduplicated registration waits for the key's holder, or
// answers its kept result at once. When ctx ends first it returns ctx's error; the agent stays
// registered.
func (p *Producer) RegisterAndAwait(ctx context.Context, queue string, job Job) (*batonv1.AgentResult, error) {
	resp, err := p.Register(ctx, queue, job)
	if err != nil {
		return nil, err
	}
	registered := resp.GetAgents()[0]
	if registered.GetResult() != nil {
		return registered.GetResult(), nil
	}
	return p.Await(ctx, queue, registered.GetName())
}

// Await waits for the agent's finish (succeeded, dead-lettered, cancelled or unregistered) and
// returns it, with the result its worker returned; a finish Baton still keeps is answered at
// once. Each Await call is held at most AwaitWait (and less than what is left of ctx) and made
// again until the finish; when ctx ends first it returns ctx's error. NOT_FOUND: no such agent
// and no finish kept. UNAVAILABLE is retried.
func (p *Producer) Await(ctx context.Context, queue, name string) (*batonv1.AgentResult, error) {
	return p.AwaitAfter(ctx, queue, name, 0)
}

// AwaitAfter is Await skipping the finishes of a recurring agent's runs up to afterToken.
func (p *Producer) AwaitAfter(ctx context.Context, queue, name string, afterToken uint64) (*batonv1.AgentResult, error) {
	var b backoff
	for {
		wait := AwaitWait
		deadline, bounded := ctx.Deadline()
		if bounded {
			wait = min(wait, max(0, time.Until(deadline)))
		}
		resp, err := p.Agents.Await(ctx, &batonv1.AwaitRequest{Queue: queue, Name: name, AfterToken: afterToken, Wait: durationpb.New(wait)})
		switch code := status.Code(err); {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case code == codes.DeadlineExceeded && bounded:
			// Baton answers a call a little before its deadline: ctx's own end is the answer.
			<-ctx.Done()
			return nil, ctx.Err()
		case code == codes.Unavailable:
			if !sleepCtx(ctx, b.next(err)) {
				return nil, ctx.Err()
			}
		case err != nil:
			return nil, err
		case resp.GetDone():
			return resp.GetResult(), nil
		default:
			b.reset()
		}
	}
}

// Signal sends event (with payload) to the agent: a run waiting for it is woken (Delivered),
// else it is kept for the agent's next wait (Kept). It carries ctx's request id (WithRequestID;
// else a fresh one), so a retry with the same id answers Duplicate instead of sending it twice.
// NOT_FOUND: no such agent.
func (p *Producer) Signal(ctx context.Context, queue, name, event string, payload []byte) (*batonv1.SignalResponse, error) {
	return p.Agents.Signal(ctx, &batonv1.SignalRequest{Queue: queue, Name: name, Event: event, Payload: payload, RequestId: requestID(ctx)})
}

// Watch follows the agent's progress (AgentService.WatchAgent): a snapshot, then each update
// (lease granted, progress, step), last the FINISHED update with its Finish; then it ends. Each
// stream is held at most AwaitWait (within ctx's deadline) and opened again. It ends with ctx's
// error when ctx is done first, or with the gRPC error (NOT_FOUND: no such agent, no finish kept).
func (p *Producer) Watch(ctx context.Context, queue, name string) iter.Seq2[*batonv1.WatchAgentResponse, error] {
	return func(yield func(*batonv1.WatchAgentResponse, error) bool) {
		for {
			wait := AwaitWait
			if deadline, ok := ctx.Deadline(); ok {
				wait = min(wait, max(0, time.Until(deadline)))
			}
			stream, err := p.Agents.WatchAgent(ctx, &batonv1.WatchAgentRequest{Queue: queue, Name: name, Wait: durationpb.New(wait)})
			for err == nil {
				var u *batonv1.WatchAgentResponse
				if u, err = stream.Recv(); err == nil {
					if !yield(u, nil) || u.GetUpdate() == batonv1.WatchUpdate_WATCH_UPDATE_FINISHED {
						return
					}
				}
			}
			if ctx.Err() != nil {
				err = ctx.Err()
			} else if err == io.EOF {
				continue // the stream's wait is over: open another
			}
			yield(nil, err)
			return
		}
	}
}

// Batch is a batch to create or extend with RegisterBatch: its callbacks (agents of
// CallbackQueue, default the members' queue) run once when it is done — OnSuccess only when
// every member succeeded, OnComplete however they finished; their leases carry the batch's
// finish. Callbacks count on the call that creates it only. Close closes it after this call's
// members.
type Batch struct {
	Name, Queue           string
	CallbackQueue         string
	OnSuccess, OnComplete []Job
	Close                 bool
}

// RegisterBatch adds members (agents of b.Queue) to batch b, creating it on its first call.
// The answer carries the batch's status after the call.
func (p *Producer) RegisterBatch(ctx context.Context, b Batch, members ...Job) (*batonv1.RegisterBatchResponse, error) {
	return p.Agents.RegisterBatch(ctx, &batonv1.RegisterBatchRequest{Batch: b.Name, Queue: b.Queue, Agents: agents(members),
		CallbackQueue: b.CallbackQueue, OnSuccess: agents(b.OnSuccess), OnComplete: agents(b.OnComplete), Close: b.Close})
}

// CloseBatch closes a batch: no member may be added; it is done once its members finished.
func (p *Producer) CloseBatch(ctx context.Context, batch string) (*batonv1.BatchStatus, error) {
	resp, err := p.Agents.CloseBatch(ctx, &batonv1.CloseBatchRequest{Batch: batch})
	return resp.GetStatus(), err
}

// BatchStatus returns a batch's members counted by how they finished (Total, Pending,
// Succeeded, Failed), whether it is Closed and Done, and its callbacks.
func (p *Producer) BatchStatus(ctx context.Context, batch string) (*batonv1.BatchStatus, error) {
	resp, err := p.Agents.GetBatch(ctx, &batonv1.GetBatchRequest{Batch: batch})
	return resp.GetStatus(), err
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
func (p *Producer) Schedule(ctx context.Context, receiver string, payload []byte, opts ...ScheduleOption) (*batonv1.ScheduleResponse, error) {
	req := &batonv1.ScheduleRequest{Receiver: receiver, Payload: payload, RequestId: requestID(ctx)}
	for _, o := range opts {
		o(req)
	}
	var resp *batonv1.ScheduleResponse
	err := retryUnavailable(ctx, func(ctx context.Context) (err error) {
		resp, err = p.Schedules.Schedule(ctx, req)
		return err
	})
	return resp, err
}

// Cancel removes a scheduled or in-flight message; false if there is no such message. It is
// not retried (a retry of an applied Cancel would answer false).
func (p *Producer) Cancel(ctx context.Context, receiver, id string) (bool, error) {
	_, err := p.Schedules.Cancel(ctx, &batonv1.CancelRequest{Receiver: receiver, Id: id})
	if status.Code(err) == codes.NotFound {
		return false, nil
	}
	return err == nil, err
}

// Offer makes resources of pool idle, in order (or hands them to waiting claims). Already idle
// or claimed ones are left alone (counted in Duplicates).
func (p *Producer) Offer(ctx context.Context, pool string, resources ...*batonv1.Resource) (*batonv1.OfferResponse, error) {
	req := &batonv1.OfferRequest{Pool: pool, Resources: resources, RequestId: requestID(ctx)}
	var resp *batonv1.OfferResponse
	err := retryUnavailable(ctx, func(ctx context.Context) (err error) {
		resp, err = p.Claims.Offer(ctx, req)
		return err
	})
	return resp, err
}

// OfferIDs offers resources without attributes.
func (p *Producer) OfferIDs(ctx context.Context, pool string, ids ...string) (*batonv1.OfferResponse, error) {
	resources := make([]*batonv1.Resource, len(ids))
	for i, id := range ids {
		resources[i] = &batonv1.Resource{Id: id}
	}
	return p.Offer(ctx, pool, resources...)
}

// PoolStatus returns a pool's counts (idle, claimed, waiting claims, dead-lettered …).
func (p *Producer) PoolStatus(ctx context.Context, pool string) (*batonv1.PoolStatus, error) {
	resp, err := p.Claims.GetPool(ctx, &batonv1.GetPoolRequest{Pool: pool})
	return resp.GetStatus(), err
}

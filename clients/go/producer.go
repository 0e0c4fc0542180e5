package baton

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

// Producer is the producer's side of Baton: register agents (work for workers), schedule
// messages (for subscribers) and offer resources (to a pool's claimers). Every call that changes
// state carries a request id (WithRequestID, else a fresh one) and is retried on UNAVAILABLE
// with it, so a retry after an unknown outcome does not apply twice.
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
}

func (j Job) agent() *batonv1.Agent {
	a := &batonv1.Agent{Name: j.Name, Payload: j.Payload, Cron: j.Cron, TimeZone: j.TimeZone, Key: j.Key,
		Priority: j.Priority, MaxAttempts: j.MaxAttempts, Labels: j.Labels}
	if j.Every > 0 {
		a.Interval = durationpb.New(j.Every)
	}
	if j.Timeout > 0 {
		a.Timeout = durationpb.New(j.Timeout)
	}
	return a
}

// Register creates or replaces the agents of jobs in queue (at most the server's max_batch).
func (p *Producer) Register(ctx context.Context, queue string, jobs ...Job) (*batonv1.RegisterResponse, error) {
	req := &batonv1.RegisterRequest{Queue: queue, RequestId: requestID(ctx)}
	for _, j := range jobs {
		req.Agents = append(req.Agents, j.agent())
	}
	var resp *batonv1.RegisterResponse
	err := retryUnavailable(ctx, func(ctx context.Context) (err error) {
		resp, err = p.Agents.Register(ctx, req)
		return err
	})
	return resp, err
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

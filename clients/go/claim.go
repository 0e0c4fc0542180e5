package baton

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

// ErrNoResource is what Claimer.With returns when the claim's wait ended with nothing for it
// (fn was not called). Claimer.Claim returns (nil, nil) instead.
var ErrNoResource = errors.New("baton: the claim's wait ended with no resource")

// LineFullError is a claim refused because the pool's waiting line is full (RESOURCE_EXHAUSTED,
// ErrorInfo reason LINE_FULL). Shed load, or claim again after RetryAfter (Baton's
// retry hint; zero if it sent none). Nothing is retried behind the caller's back.
type LineFullError struct {
	Pool       string
	RetryAfter time.Duration
	// Err is the gRPC status error.
	Err error
}

func (e *LineFullError) Error() string {
	return fmt.Sprintf("baton: the waiting line of pool %s is full (retry after %v)", e.Pool, e.RetryAfter)
}

func (e *LineFullError) Unwrap() error { return e.Err }

// Reason is the ErrorInfo reason of the refusal: LINE_FULL.
func (e *LineFullError) Reason() string { return Reason(e.Err) }

// Claim is a claimed resource and the claim's fencing token. End it once, with Return or Fail
// (or leave that to Claimer.With).
type Claim struct {
	Pool     string
	Resource *batonv1.Resource
	// Token fences what the claimer writes with the resource; Return and Fail present it.
	Token     uint64
	ClaimedAt time.Time

	client batonv1.ClaimServiceClient
	ended  atomic.Bool
}

// ID is the resource's id.
func (c *Claim) ID() string { return c.Resource.GetId() }

// Attributes are the resource's attributes as offered, merged with the claim's.
func (c *Claim) Attributes() map[string]string { return c.Resource.GetAttributes() }

// Ended reports whether Return or Fail was called (successfully or not).
func (c *Claim) Ended() bool { return c.ended.Load() }

// Return ends the claim. With reuse the resource is idle again at once (handed to the next claim
// in line); without, it leaves the pool until the pool manager offers it again. A stale token is
// FAILED_PRECONDITION (IsLeaseLost): the claim had already ended (e.g. purged). UNAVAILABLE is
// retried with one request id (WithRequestID, else a fresh one), so a retry of a Return that was
// applied gets its first answer (not LEASE_LOST).
func (c *Claim) Return(ctx context.Context, reuse bool) error {
	c.ended.Store(true)
	req := &batonv1.ReturnRequest{RequestId: requestID(ctx), Pool: c.Pool, ResourceId: c.ID(), Token: c.Token, Reuse: reuse}
	return retryUnavailable(ctx, func(ctx context.Context) error {
		_, err := c.client.Return(ctx, req)
		return err
	})
}

// Fail ends the claim by dead-lettering the resource with message (Baton clips a long one).
// Errors and retries as Return.
func (c *Claim) Fail(ctx context.Context, message string) error {
	c.ended.Store(true)
	req := &batonv1.FailRequest{RequestId: requestID(ctx), Pool: c.Pool, ResourceId: c.ID(), Token: c.Token, Error: message}
	return retryUnavailable(ctx, func(ctx context.Context) error {
		_, err := c.client.Fail(ctx, req)
		return err
	})
}

// ClaimOption adjusts one claim.
type ClaimOption func(*claimSettings)

type claimSettings struct {
	wait  time.Duration
	attrs map[string]string
}

// WithWait sets this claim's long-poll wait (0 answers at once).
func WithWait(d time.Duration) ClaimOption { return func(s *claimSettings) { s.wait = d } }

// WithAttributes adds attributes to this claim, over the Claimer's.
func WithAttributes(attrs map[string]string) ClaimOption {
	return func(s *claimSettings) { maps.Copy(s.attrs, attrs) }
}

// Claimer claims resources of one pool for one claimer id.
type Claimer struct {
	Client    batonv1.ClaimServiceClient
	Pool      string
	ClaimerID string
	// Wait is the default long-poll wait of a claim.
	Wait time.Duration
	// Attributes are attached to every claimed resource.
	Attributes map[string]string
	Logger     *slog.Logger
}

// NewClaimer returns a Claimer with a 30 s wait.
func NewClaimer(conn grpc.ClientConnInterface, pool, claimerID string) *Claimer {
	return &Claimer{Client: batonv1.NewClaimServiceClient(conn), Pool: pool, ClaimerID: claimerID, Wait: 30 * time.Second}
}

func (c *Claimer) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}

// Claim claims the oldest idle resource, waiting in the pool's line up to the wait. It returns
// (nil, nil) when the wait ended with nothing for this claim, a *LineFullError when the line is
// full, the gRPC error otherwise. Cancelling ctx leaves the line (a resource handed over in that
// instant goes back).
func (c *Claimer) Claim(ctx context.Context, opts ...ClaimOption) (*Claim, error) {
	s := claimSettings{wait: c.Wait, attrs: maps.Clone(c.Attributes)}
	if s.attrs == nil {
		s.attrs = map[string]string{}
	}
	for _, o := range opts {
		o(&s)
	}
	req := &batonv1.ClaimRequest{Pool: c.Pool, ClaimerId: c.ClaimerID, Attributes: s.attrs}
	if s.wait > 0 {
		req.Wait = durationpb.New(s.wait)
	}
	callCtx, cancel := context.WithTimeout(ctx, max(s.wait, 0)+LongPollMargin)
	defer cancel()
	resp, err := c.Client.Claim(callCtx, req)
	if err != nil {
		if status.Code(err) == codes.ResourceExhausted {
			return nil, &LineFullError{Pool: c.Pool, RetryAfter: retryHint(err), Err: err}
		}
		return nil, err
	}
	if resp.GetResource() == nil {
		return nil, nil
	}
	cl := &Claim{Pool: c.Pool, Resource: resp.GetResource(), Token: resp.GetToken(), client: c.Client}
	if resp.GetClaimedAt() != nil {
		cl.ClaimedAt = resp.GetClaimedAt().AsTime()
	}
	return cl, nil
}

// With claims (as Claim) and runs fn with the claim, then ends the claim by how fn ended,
// unless fn ended it itself:
//
//   - fn returned nil → Return with reuse; With returns nil (or the Return's error);
//   - ctx was done when fn returned (cancellation) → Return with reuse; With returns fn's error;
//   - fn returned an error → Fail with err.Error(); With returns fn's error;
//   - fn panicked → Fail with the panic, then the panic goes on (runtime.Goexit: Return).
//
// It returns ErrNoResource when the wait ended (fn not called). Ending the claim is retried on
// UNAVAILABLE; a refused token (LEASE_LOST: the claim had already ended, e.g. purged) is logged;
// other errors of the Return after a successful fn are returned, after a failed fn logged (fn's
// error wins).
func (c *Claimer) With(ctx context.Context, fn func(ctx context.Context, claim *Claim) error, opts ...ClaimOption) (err error) {
	claim, err := c.Claim(ctx, opts...)
	if err != nil {
		return err
	}
	if claim == nil {
		return ErrNoResource
	}
	endCtx := context.WithoutCancel(ctx)
	panicked := true
	defer func() {
		if !panicked || claim.Ended() {
			return
		}
		p := recover()
		if p == nil { // runtime.Goexit (t.FailNow …): not the resource's fault
			c.quietly(claim, "return", claim.Return(endCtx, true))
			return
		}
		c.quietly(claim, "fail", claim.Fail(endCtx, fmt.Sprint("panic: ", p)))
		panic(p)
	}()
	ferr := fn(ctx, claim)
	panicked = false
	if claim.Ended() {
		return ferr
	}
	switch {
	case ferr == nil:
		if rerr := claim.Return(endCtx, true); rerr != nil {
			if !IsLeaseLost(rerr) {
				return rerr
			}
			c.quietly(claim, "return", rerr)
		}
	case ctx.Err() != nil:
		c.quietly(claim, "return", claim.Return(endCtx, true))
	default:
		c.quietly(claim, "fail", claim.Fail(endCtx, ferr.Error()))
	}
	return ferr
}

func (c *Claimer) quietly(claim *Claim, what string, err error) {
	if err != nil {
		c.logger().Warn("baton: ending a claim failed", "op", what, "pool", c.Pool, "resource", claim.ID(), "token", claim.Token, "err", err)
	}
}

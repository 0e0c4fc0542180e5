package baton

import (
	"context"
	"crypto/rand"
	"fmt"
	mathrand "math/rand/v2"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// backoff is the one retry delay of every helper: the server's hint when the error carries one
// (google.rpc.RetryInfo, sent with UNAVAILABLE and RESOURCE_EXHAUSTED), else 100 ms doubling up
// to 5 s, each with jitter (a random half to whole of it). reset after a success.
type backoff struct{ failures int }

func (b *backoff) next(err error) time.Duration {
	if hint := retryHint(err); hint > 0 {
		return hint
	}
	d := min(100*time.Millisecond<<min(b.failures, 6), 5*time.Second)
	b.failures++
	return d/2 + mathrand.N(d/2+1)
}

func (b *backoff) reset() { b.failures = 0 }

// Reason is the reason of the google.rpc.ErrorInfo Baton sends with every error (LEASE_LOST,
// NOT_FOUND, LINE_FULL, PARENTS_FIXED, …; docs/errors.md), or "" when err carries none. Its
// retry hint is RetryAfter.
func Reason(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

// RetryAfter is the retry hint a gRPC error carries (google.rpc.RetryInfo, the same delay as
// the grpc-retry-pushback-ms trailer), or 0.
func RetryAfter(err error) time.Duration { return retryHint(err) }

// retryHint is the retry delay a gRPC error carries (google.rpc.RetryInfo), or 0.
func retryHint(err error) time.Duration {
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
			return ri.GetRetryDelay().AsDuration()
		}
	}
	return 0
}

type requestIDKey struct{}

// WithRequestID makes the calls of ctx that change state (Producer's Register, Schedule and
// Offer; Claim's Return and Fail) carry id as their request id instead of a fresh one: a call
// made again with the same id, after an unknown outcome (a timeout, a crash), gets the first
// call's answer and changes nothing more ([A-Za-z0-9._-]{1,128}).
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// requestID is ctx's request id (WithRequestID), or a fresh random UUID (version 4).
func requestID(ctx context.Context) string {
	if id, ok := ctx.Value(requestIDKey{}).(string); ok && id != "" {
		return id
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand.Read)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// retryUnavailable runs call, up to four times while it fails UNAVAILABLE and ctx lasts, after
// backoff. A call that changes state builds its request once, with one request id, so a retry of
// a call that was applied gets the first call's answer.
func retryUnavailable(ctx context.Context, call func(context.Context) error) error {
	var b backoff
	for attempt := 1; ; attempt++ {
		err := call(ctx)
		if status.Code(err) != codes.Unavailable || attempt == 4 {
			return err
		}
		if !sleepCtx(ctx, b.next(err)) {
			return err
		}
	}
}

// sleepCtx sleeps d, or until ctx is done; false when ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

package baton

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

// Failure ends a run with an explicit outcome, or with an HTTP status for Baton to classify;
// return one (or wrap one) from a Handler. Any other error is classified by Baton from its
// type name (see Handler).
type Failure struct {
	// Outcome is the run's outcome; OUTCOME_UNSPECIFIED lets Baton classify HTTPStatus (or the
	// error's type name).
	Outcome batonv1.Outcome
	Message string
	// HTTPStatus is the HTTP status the failure carried; 0: none.
	HTTPStatus int
	// RetryAfter is a delay the handler was told to respect (a Retry-After header); zero: none.
	RetryAfter time.Duration
	// Err is the underlying error, if any.
	Err error
}

func (f *Failure) Error() string {
	what := strings.TrimPrefix(f.Outcome.String(), "OUTCOME_")
	if f.HTTPStatus != 0 {
		what = fmt.Sprintf("HTTP %d", f.HTTPStatus)
	}
	if f.Message != "" {
		return what + ": " + f.Message
	}
	return what
}

func (f *Failure) Unwrap() error { return f.Err }

// NewFailure returns a Failure with outcome and message.
func NewFailure(outcome batonv1.Outcome, message string) *Failure {
	return &Failure{Outcome: outcome, Message: message}
}

// HTTPFailure is a failure that carried an HTTP status; Baton maps it to an outcome (401/403
// PERMANENT_FORBIDDEN, 429 THROTTLED, 408 TRANSIENT, 5xx SERVER_ERROR, others UNKNOWN).
func HTTPFailure(status int, message string) *Failure {
	return &Failure{HTTPStatus: status, Message: message}
}

// Transient is a failure to retry at once (up to the server's limit): I/O, resets, timeouts.
func Transient(message string) *Failure {
	return &Failure{Outcome: batonv1.Outcome_OUTCOME_TRANSIENT, Message: message}
}

// WithRetryAfter sets RetryAfter and returns f.
func (f *Failure) WithRetryAfter(d time.Duration) *Failure {
	f.RetryAfter = d
	return f
}

// HTTPStatusError is implemented by errors that carry an HTTP status: the worker sends it for
// Baton to classify (RetryAfterError may add a Retry-After).
type HTTPStatusError interface {
	error
	HTTPStatus() int
}

// RetryAfterError is implemented by errors that carry a Retry-After delay.
type RetryAfterError interface {
	error
	RetryAfter() time.Duration
}

// completion is what a handler's result reports to Baton: SUCCESS for nil; else a *Failure's
// outcome when it has one, and always the error's class, HTTP status and Retry-After, from which
// Baton classifies a failure without an outcome. The message goes whole (Baton clips it).
func completion(lease *batonv1.Lease, err error) *batonv1.SessionCompletion {
	c := &batonv1.SessionCompletion{Name: lease.GetName(), Token: lease.GetToken(), Outcome: batonv1.Outcome_OUTCOME_SUCCESS}
	if err == nil {
		return c
	}
	c.Outcome, c.Message, c.ErrorClass = batonv1.Outcome_OUTCOME_UNSPECIFIED, err.Error(), errorClass(err)
	var f *Failure
	var hs HTTPStatusError
	var ra RetryAfterError
	status := 0
	switch {
	case errors.As(err, &f):
		c.Outcome, status = f.Outcome, f.HTTPStatus
		if f.Message != "" {
			c.Message = f.Message
		}
		if f.RetryAfter > 0 {
			c.RetryAfter = durationpb.New(f.RetryAfter)
		}
	case errors.As(err, &hs):
		status = hs.HTTPStatus()
	}
	if status >= 100 && status <= 599 { // an HTTP status; anything else is none (Baton refuses it)
		c.HttpStatus = uint32(status)
	}
	if errors.As(err, &ra) && c.RetryAfter == nil && ra.RetryAfter() > 0 {
		c.RetryAfter = durationpb.New(ra.RetryAfter())
	}
	return c
}

// errorClass names err for Baton's classification: "timeout" for deadlines, "io" for network
// and stream errors, else its Go type (under fmt.Errorf's wrapping), "*myapi.RateLimitError".
func errorClass(err error) string {
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case netErr != nil, errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return "io"
	}
	for strings.HasPrefix(fmt.Sprintf("%T", err), "*fmt.") && errors.Unwrap(err) != nil {
		err = errors.Unwrap(err)
	}
	name, _, _ := strings.Cut(fmt.Sprintf("%T", err), "[") // without type arguments: short
	return name
}

// IsLeaseLost reports whether Baton refused a stale token (FAILED_PRECONDITION, ErrorInfo
// reason LEASE_LOST): the lease or term is gone and the work must stop.
func IsLeaseLost(err error) bool {
	why := Reason(err)
	return status.Code(err) == codes.FailedPrecondition && (why == "" || why == "LEASE_LOST")
}

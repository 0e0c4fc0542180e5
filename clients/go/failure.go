package baton

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
	"unicode/utf8"

	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

// Failure ends a run with an explicit outcome; return one (or wrap one) from a Handler. Any
// other error is classified by Classify.
type Failure struct {
	Outcome batonv1.Outcome
	Message string
	// RetryAfter is a delay the handler was told to respect (a Retry-After header); zero: none.
	RetryAfter time.Duration
	// Err is the underlying error, if any.
	Err error
}

func (f *Failure) Error() string {
	if f.Message != "" {
		return f.Outcome.String() + ": " + f.Message
	}
	return f.Outcome.String()
}

func (f *Failure) Unwrap() error { return f.Err }

// NewFailure returns a Failure with outcome and message.
func NewFailure(outcome batonv1.Outcome, message string) *Failure {
	return &Failure{Outcome: outcome, Message: message}
}

// HTTPFailure maps an HTTP status by the documented rule (OutcomeForHTTPStatus).
func HTTPFailure(status int, message string) *Failure {
	if message == "" {
		message = fmt.Sprintf("HTTP %d", status)
	}
	return &Failure{Outcome: OutcomeForHTTPStatus(status), Message: message}
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

// OutcomeForHTTPStatus is the documented mapping: 401/403 → PERMANENT_FORBIDDEN, 429 →
// THROTTLED, 408 → TRANSIENT, 5xx → SERVER_ERROR, anything else → UNKNOWN.
func OutcomeForHTTPStatus(status int) batonv1.Outcome {
	switch {
	case status == 401 || status == 403:
		return batonv1.Outcome_OUTCOME_PERMANENT_FORBIDDEN
	case status == 429:
		return batonv1.Outcome_OUTCOME_THROTTLED
	case status == 408:
		return batonv1.Outcome_OUTCOME_TRANSIENT
	case status >= 500 && status <= 599:
		return batonv1.Outcome_OUTCOME_SERVER_ERROR
	default:
		return batonv1.Outcome_OUTCOME_UNKNOWN
	}
}

// HTTPStatusError is implemented by errors that carry an HTTP status; Classify maps them by
// OutcomeForHTTPStatus. RetryAfterError may add a Retry-After.
type HTTPStatusError interface {
	error
	HTTPStatus() int
}

// RetryAfterError is implemented by errors that carry a Retry-After delay.
type RetryAfterError interface {
	error
	RetryAfter() time.Duration
}

// Classify is the documented rule: a *Failure anywhere in the chain wins; an HTTPStatusError
// maps by OutcomeForHTTPStatus (with RetryAfterError's delay); I/O errors, connection errors
// and timeouts (net.Error, syscall connection errnos, io.ErrUnexpectedEOF, deadline exceeded)
// are TRANSIENT; anything else is UNKNOWN.
func Classify(err error) *Failure {
	var f *Failure
	if errors.As(err, &f) {
		return f
	}
	msg := err.Error()
	if len(msg) > 4000 {
		msg = msg[:4000]
	}
	var retryAfter time.Duration
	var ra RetryAfterError
	if errors.As(err, &ra) {
		retryAfter = ra.RetryAfter()
	}
	var hs HTTPStatusError
	if errors.As(err, &hs) {
		return &Failure{Outcome: OutcomeForHTTPStatus(hs.HTTPStatus()), Message: msg, RetryAfter: retryAfter, Err: err}
	}
	if isTransient(err) {
		return &Failure{Outcome: batonv1.Outcome_OUTCOME_TRANSIENT, Message: msg, RetryAfter: retryAfter, Err: err}
	}
	return &Failure{Outcome: batonv1.Outcome_OUTCOME_UNKNOWN, Message: msg, RetryAfter: retryAfter, Err: err}
}

func isTransient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	for _, errno := range []syscall.Errno{syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.ECONNABORTED,
		syscall.EPIPE, syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ENETDOWN, syscall.EIO} {
		if errors.Is(err, errno) {
			return true
		}
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true // *net.OpError, *net.DNSError, *url.Error over them, timeouts
	}
	return false
}

// MaxMessageBytes is the longest failure message the server takes by default
// (limits.max_message_bytes): Complete's message and Fail's error, in UTF-8 bytes.
const MaxMessageBytes = 4096

// TruncateUTF8 returns at most max bytes of s, cut on a character boundary: how every helper
// bounds a failure message to the server's limit (the same rule in every client language). A
// string cut in the middle of a character would not be valid UTF-8, which protobuf refuses.
func TruncateUTF8(s string, max int) string {
	if len(s) <= max {
		return s
	}
	end := max
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end]
}

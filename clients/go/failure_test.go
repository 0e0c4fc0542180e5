package baton_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	baton "github.com/baton-project/baton/clients/go"
	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

type httpError struct {
	status     int
	retryAfter time.Duration
}

func (e *httpError) Error() string             { return fmt.Sprintf("HTTP %d", e.status) }
func (e *httpError) HTTPStatus() int           { return e.status }
func (e *httpError) RetryAfter() time.Duration { return e.retryAfter }

func TestHTTPStatusRule(t *testing.T) {
	cases := map[int]batonv1.Outcome{
		401: batonv1.Outcome_OUTCOME_PERMANENT_FORBIDDEN,
		403: batonv1.Outcome_OUTCOME_PERMANENT_FORBIDDEN,
		429: batonv1.Outcome_OUTCOME_THROTTLED,
		408: batonv1.Outcome_OUTCOME_TRANSIENT,
		500: batonv1.Outcome_OUTCOME_SERVER_ERROR,
		503: batonv1.Outcome_OUTCOME_SERVER_ERROR,
		400: batonv1.Outcome_OUTCOME_UNKNOWN,
		404: batonv1.Outcome_OUTCOME_UNKNOWN,
	}
	for status, want := range cases {
		if got := baton.OutcomeForHTTPStatus(status); got != want {
			t.Errorf("OutcomeForHTTPStatus(%d) = %v, want %v", status, got, want)
		}
		if got := baton.HTTPFailure(status, "").Outcome; got != want {
			t.Errorf("HTTPFailure(%d) = %v, want %v", status, got, want)
		}
		wrapped := fmt.Errorf("calling the API: %w", &httpError{status: status})
		if got := baton.Classify(wrapped).Outcome; got != want {
			t.Errorf("Classify(wrapped %d) = %v, want %v", status, got, want)
		}
	}
	f := baton.Classify(&httpError{status: 429, retryAfter: 2 * time.Minute})
	if f.Outcome != batonv1.Outcome_OUTCOME_THROTTLED || f.RetryAfter != 2*time.Minute {
		t.Errorf("Retry-After not carried: %+v", f)
	}
}

func TestIOAndTimeoutsAreTransient(t *testing.T) {
	_, dialErr := net.DialTimeout("tcp", "127.0.0.1:1", time.Second) // connection refused
	errs := []error{
		context.DeadlineExceeded,
		os.ErrDeadlineExceeded,
		io.ErrUnexpectedEOF,
		syscall.ECONNRESET,
		fmt.Errorf("read: %w", syscall.EPIPE),
		&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET},
		&net.DNSError{Err: "no such host", Name: "x.invalid"},
		dialErr,
	}
	for _, err := range errs {
		if got := baton.Classify(err).Outcome; got != batonv1.Outcome_OUTCOME_TRANSIENT {
			t.Errorf("Classify(%v) = %v, want TRANSIENT", err, got)
		}
	}
}

func TestAnythingElseIsUnknownAndExplicitWins(t *testing.T) {
	if got := baton.Classify(errors.New("bad payload")).Outcome; got != batonv1.Outcome_OUTCOME_UNKNOWN {
		t.Errorf("plain error = %v, want UNKNOWN", got)
	}
	explicit := baton.NewFailure(batonv1.Outcome_OUTCOME_THROTTLED, "quota").WithRetryAfter(time.Hour)
	if got := baton.Classify(fmt.Errorf("wrapped: %w", explicit)); got != explicit {
		t.Errorf("explicit failure not kept: %+v", got)
	}
}

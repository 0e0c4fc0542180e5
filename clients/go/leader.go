package baton

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

// Leadership holds one candidate's place in an election: it campaigns (waiting for a
// vacancy), renews when Baton says (renew_in), calls OnElected and OnLost, and resigns when Run's
// context ends. Baton states the rule with every won Campaign and Renew: the next Renew is due
// renew_in after the answered call was sent, and leadership is lost at step_down_in after it
// unless a later Renew, sent before that moment, has answered by then; it is also lost as soon
// as a Renew is refused (LEASE_LOST). That moment is checked on a timer and bounds each Renew,
// so a connection that never answers cannot keep the caller believing it leads after another
// candidate could have been elected. A won Campaign (a long poll: its send time says nothing) is
// confirmed by a Renew at once, and reported only then. After a loss it campaigns again.
type Leadership struct {
	Client      batonv1.LeaderServiceClient
	Election    string
	CandidateID string
	TTL         time.Duration
	// CampaignWait is the long-poll wait of each Campaign while another candidate leads.
	CampaignWait time.Duration
	// OnElected is called (from Run's goroutine) when this candidate starts leading; pass
	// token to whatever it writes.
	OnElected func(token uint64)
	// OnLost is called when it must stop acting as leader, including when Run resigns.
	OnLost func(token uint64)

	mu    sync.Mutex
	token uint64
}

// NewLeadership returns a Leadership with a 30 s campaign wait.
func NewLeadership(conn grpc.ClientConnInterface, election, candidateID string, ttl time.Duration) *Leadership {
	return &Leadership{
		Client:       batonv1.NewLeaderServiceClient(conn),
		Election:     election,
		CandidateID:  candidateID,
		TTL:          ttl,
		CampaignWait: 30 * time.Second,
	}
}

// Token returns the fencing token of the term this candidate holds, and whether it leads.
func (l *Leadership) Token() (uint64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.token, l.token != 0
}

func (l *Leadership) set(token uint64) {
	l.mu.Lock()
	old := l.token
	l.token = token
	l.mu.Unlock()
	if token != 0 && token != old && l.OnElected != nil {
		l.OnElected(token)
	} else if token == 0 && old != 0 && l.OnLost != nil {
		l.OnLost(old)
	}
}

// Run campaigns and holds the leadership until ctx is done, then resigns if leading.
func (l *Leadership) Run(ctx context.Context) error {
	defer l.resign()
	var b backoff
	for ctx.Err() == nil {
		callCtx, cancel := context.WithTimeout(ctx, l.CampaignWait+LongPollMargin)
		resp, err := l.Client.Campaign(callCtx, &batonv1.CampaignRequest{
			Election: l.Election, CandidateId: l.CandidateID,
			Ttl: durationpb.New(l.TTL), Wait: durationpb.New(l.CampaignWait),
		})
		cancel()
		if err != nil {
			sleepCtx(ctx, b.next(err))
			continue
		}
		b.reset()
		if resp.GetIsLeader() {
			l.hold(ctx, resp.GetToken(), resp.GetStepDownIn().AsDuration())
		}
	}
	return nil
}

// hold keeps a won term: it confirms it by a Renew at once (reporting it only then), then
// renews as each answer says, every Renew bounded by the step-down moment, and returns when a
// Renew is refused, when the step-down moment passed with no later Renew answered, or when ctx
// ends (still leading: Run resigns).
func (l *Leadership) hold(ctx context.Context, token uint64, stepDownIn time.Duration) {
	stepDown := time.Now().Add(stepDownIn)
	next := time.Now()
	confirmed := false
	var b backoff
	for {
		if next.After(stepDown) {
			next = stepDown
		}
		sleepCtx(ctx, time.Until(next))
		if ctx.Err() != nil {
			return
		}
		if !time.Now().Before(stepDown) {
			l.set(0)
			return
		}
		sent := time.Now()
		callCtx, cancel := context.WithDeadline(ctx, stepDown)
		resp, err := l.Client.Renew(callCtx, &batonv1.RenewRequest{Election: l.Election, CandidateId: l.CandidateID, Token: token})
		cancel()
		switch {
		case err == nil:
			b.reset()
			stepDown, next = sent.Add(resp.GetStepDownIn().AsDuration()), sent.Add(resp.GetRenewIn().AsDuration())
			if !confirmed {
				confirmed = true
				l.set(token)
			}
		case IsLeaseLost(err):
			l.set(0)
			return
		default:
			next = time.Now().Add(b.next(err))
		}
	}
}

func (l *Leadership) resign() {
	token, leading := l.Token()
	if !leading {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = l.Client.Resign(ctx, &batonv1.ResignRequest{Election: l.Election, CandidateId: l.CandidateID, Token: token})
	l.set(0)
}

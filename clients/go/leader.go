package baton

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

// Leadership holds one candidate's place in an election: it campaigns (waiting for a
// vacancy), renews every TTL/3, calls OnElected and OnLost, and resigns when Run's context
// ends. The rule of every Baton client language: each Renew has a deadline, and leadership is
// considered lost as soon as a Renew is refused (LEASE_LOST), or once no Renew *sent* within the
// last 2/3 of the TTL has succeeded — on a timer, so a connection that never answers cannot keep
// the caller believing it leads after its term could have expired and another candidate been
// elected. A won Campaign is confirmed by a Renew at once, and reported only then. After a loss
// it campaigns again.
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
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		callCtx, cancel := context.WithTimeout(ctx, l.CampaignWait+10*time.Second)
		var trailer metadata.MD
		resp, err := l.Client.Campaign(callCtx, &batonv1.CampaignRequest{
			Election: l.Election, CandidateId: l.CandidateID,
			Ttl: durationpb.New(l.TTL), Wait: durationpb.New(l.CampaignWait),
		}, grpc.Trailer(&trailer))
		cancel()
		if err != nil {
			sleepCtx(ctx, pushback(trailer, backoff))
			backoff = min(backoff*2, l.TTL)
			continue
		}
		backoff = 100 * time.Millisecond
		if resp.GetIsLeader() {
			l.hold(ctx, resp.GetToken())
		}
	}
	return nil
}

// renew sends one Renew bounded by deadline; it reports whether it succeeded, and whether the
// term was refused.
func (l *Leadership) renew(ctx context.Context, token uint64, deadline time.Time) (ok, refused bool) {
	callCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	_, err := l.Client.Renew(callCtx, &batonv1.RenewRequest{Election: l.Election, CandidateId: l.CandidateID, Token: token})
	return err == nil, err != nil && IsLeaseLost(err)
}

// hold keeps a won term: it confirms it by a Renew at once (reporting it only then), renews
// every TTL/3 (sooner after a failure), each Renew bounded by the step-down moment, and returns
// when a Renew is refused, when none sent within the last 2/3 TTL succeeded, or when ctx ends
// (still leading: Run resigns).
func (l *Leadership) hold(ctx context.Context, token uint64) {
	sent := time.Now()
	if ok, _ := l.renew(ctx, token, sent.Add(l.TTL*2/3)); !ok {
		return
	}
	renewedSent := sent
	l.set(token)
	next := renewedSent.Add(l.TTL / 3)
	for {
		stepDown := renewedSent.Add(l.TTL * 2 / 3)
		wake := next
		if stepDown.Before(wake) {
			wake = stepDown
		}
		sleepCtx(ctx, time.Until(wake))
		if ctx.Err() != nil {
			return
		}
		if !time.Now().Before(stepDown) {
			l.set(0)
			return
		}
		sent := time.Now()
		ok, refused := l.renew(ctx, token, stepDown)
		switch {
		case ok:
			renewedSent = sent
			next = sent.Add(l.TTL / 3)
		case refused:
			l.set(0)
			return
		default:
			next = time.Now().Add(l.TTL / 12)
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

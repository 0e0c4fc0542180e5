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
// ends. Leadership is considered lost as soon as a Renew is refused (LEASE_LOST), or when no
// Renew succeeded for 2/3 of the TTL counted from when it was sent (Baton unreachable), which is
// before the server can give the term to someone else. After a loss it campaigns again.
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
	var lastRenewSent time.Time
	for ctx.Err() == nil {
		token, leading := l.Token()
		if !leading {
			sent := time.Now()
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
				lastRenewSent = sent
				l.set(resp.GetToken())
			}
			continue
		}
		sleepCtx(ctx, l.TTL/3)
		if ctx.Err() != nil {
			break
		}
		sent := time.Now()
		callCtx, cancel := context.WithTimeout(ctx, max(l.TTL/3, time.Second))
		_, err := l.Client.Renew(callCtx, &batonv1.RenewRequest{Election: l.Election, CandidateId: l.CandidateID, Token: token})
		cancel()
		switch {
		case err == nil:
			lastRenewSent = sent
		case IsLeaseLost(err):
			l.set(0)
		case time.Since(lastRenewSent) >= l.TTL*2/3:
			// The next period would end past the TTL: step down while the term still covers us.
			l.set(0)
		}
	}
	return nil
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

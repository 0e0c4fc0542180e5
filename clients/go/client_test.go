package baton_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	baton "github.com/baton-project/baton/clients/go"
	batonv1 "github.com/baton-project/baton/clients/go/gen/baton/v1"
)

// secureBaton is a Baton of its own with TLS, mutual TLS (client certificates signed by the dev
// CA required) and a tokens file holding one admin token; certificates from `baton dev-certs`.
type secureBaton struct {
	proc  *batonProc
	certs string // ca.pem, client.pem, client.key …
	token string
}

func (s *secureBaton) file(name string) string { return filepath.Join(s.certs, name) }

// devCerts runs `baton dev-certs` into a new temporary directory.
func devCerts(t *testing.T) string {
	t.Helper()
	binary, err := batonBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if out, err := exec.Command(binary, "dev-certs", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("baton dev-certs: %v\n%s", err, out)
	}
	return dir
}

func startSecureBaton(t *testing.T) *secureBaton {
	t.Helper()
	binary, err := batonBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := devCerts(t)
	// `baton token` prints the token on its first line, then the tokens file entry.
	out, err := exec.Command(binary, "token", "--name", "go-admin", "--role", "admin").Output()
	if err != nil {
		t.Fatalf("baton token: %v", err)
	}
	token, entry, ok := strings.Cut(string(out), "\n")
	token = strings.TrimSpace(token)
	if !ok || token == "" || !strings.Contains(entry, "[[tokens]]") {
		t.Fatalf("baton token printed %q", out)
	}
	tokens := filepath.Join(dir, "go-tokens.toml")
	if err := os.WriteFile(tokens, []byte(entry), 0o600); err != nil {
		t.Fatal(err)
	}
	proc, err := startBaton([]string{
		"BATON_TLS__CERT_FILE=" + filepath.Join(dir, "server.pem"),
		"BATON_TLS__KEY_FILE=" + filepath.Join(dir, "server.key"),
		"BATON_TLS__CLIENT_CA_FILE=" + filepath.Join(dir, "ca.pem"),
		"BATON_AUTH__TOKENS_FILE=" + tokens,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proc.stop)
	return &secureBaton{proc: proc, certs: dir, token: token}
}

func dial(t *testing.T, target string, opts ...baton.Option) *baton.Client {
	t.Helper()
	c, err := baton.Dial(target, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// client is a Client of s with its CA, the client certificate and the admin token.
func (s *secureBaton) client(t *testing.T, opts ...baton.Option) *baton.Client {
	t.Helper()
	return dial(t, s.proc.addr, append([]baton.Option{
		baton.WithTLS(s.file("ca.pem")),
		baton.WithClientCertificate(s.file("client.pem"), s.file("client.key")),
		baton.WithToken(s.token),
	}, opts...)...)
}

func registerOn(t *testing.T, conn grpc.ClientConnInterface, queue string, names ...string) {
	t.Helper()
	var agents []*batonv1.Agent
	for _, n := range names {
		agents = append(agents, &batonv1.Agent{Name: n, Timeout: durationpb.New(30 * time.Second), ErrorInterval: durationpb.New(time.Hour)})
	}
	// No deadline: the Client's default one applies.
	if _, err := batonv1.NewAgentServiceClient(conn).Register(context.Background(), &batonv1.RegisterRequest{Queue: queue, Agents: agents}); err != nil {
		t.Fatal(err)
	}
}

func TestClientWithTLSAndToken(t *testing.T) {
	s := startSecureBaton(t)

	t.Run("a worker runs an agent end to end", func(t *testing.T) {
		c := s.client(t)
		queue := unique("go-tls-worker")
		registerOn(t, c, queue, "a1")
		w := baton.NewWorker(c, queue, unique("w"))
		w.HeartbeatEvery = 200 * time.Millisecond
		ran := make(chan string, 1)
		stop := start(w, func(ctx context.Context, lease *batonv1.Lease) error {
			ran <- lease.GetName()
			return nil
		})
		defer stop()
		eventually(t, 20*time.Second, "completed with SUCCESS", func() bool { return completedAt(t, s.proc.metricsPort, queue)["SUCCESS"] == 1 })
		if name := <-ran; name != "a1" {
			t.Fatalf("ran %q", name)
		}
	})

	t.Run("one client shared by claims, leadership and schedules", func(t *testing.T) {
		c := s.client(t, baton.WithServerName("localhost"))
		ctx := context.Background()

		pool := newPool(c, unique("go-tls-pool"))
		if _, err := pool.OfferIDs(ctx, "vm-1"); err != nil {
			t.Fatal(err)
		}
		claimer := baton.NewClaimer(c, pool.Name, "go-tls-claimer")
		claimer.Wait = 5 * time.Second
		claimer.Logger = quiet
		var claimed string
		if err := claimer.With(ctx, func(ctx context.Context, cl *baton.Claim) error {
			claimed = cl.ID()
			if st, err := pool.Status(ctx); err != nil || st.GetClaimed() != 1 {
				t.Errorf("while claimed: %v %v", st, err)
			}
			return nil
		}); err != nil || claimed != "vm-1" {
			t.Fatalf("claim: %q %v", claimed, err)
		}
		if st, err := pool.Status(ctx); err != nil || st.GetIdle() != 1 || st.GetClaimed() != 0 {
			t.Fatalf("after the claim: %v %v", st, err)
		}

		receiver := unique("go-tls-rcv")
		r, err := baton.NewProducer(c).Schedule(ctx, receiver, []byte("hello"))
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *batonv1.SubscribeResponse, 1)
		sub := newSubscriber(c, receiver, "c1") // a stream: the token goes on it too
		stopSub := subscribe(sub, func(_ context.Context, m *batonv1.SubscribeResponse) error {
			select {
			case got <- m:
			default:
			}
			return nil
		})
		defer stopSub()
		eventually(t, 20*time.Second, "acked", func() bool { return sub.Acked() == 1 })
		if m := <-got; m.GetId() != r.GetId() || string(m.GetPayload()) != "hello" {
			t.Fatalf("delivered %v, scheduled %v", m, r)
		}

		elected := make(chan uint64, 1)
		l := baton.NewLeadership(c, unique("go-tls-election"), "go-a", 3*time.Second)
		l.CampaignWait = time.Second
		l.OnElected = func(token uint64) { elected <- token }
		lctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { _ = l.Run(lctx); close(done) }()
		select {
		case token := <-elected:
			if token == 0 {
				t.Error("elected with token 0")
			}
		case <-time.After(20 * time.Second):
			t.Error("not elected within 20 s")
		}
		cancel()
		<-done

		if _, err := batonv1.NewAdminServiceClient(c.Conn()).GetHealth(ctx, &batonv1.GetHealthRequest{}); err != nil {
			t.Fatalf("GetHealth through Conn(): %v", err)
		}
	})

	t.Run("without a token calls are unauthenticated", func(t *testing.T) {
		c := dial(t, s.proc.addr, baton.WithTLS(s.file("ca.pem")),
			baton.WithClientCertificate(s.file("client.pem"), s.file("client.key")))
		_, err := batonv1.NewAgentServiceClient(c).ListAgents(context.Background(), &batonv1.ListAgentsRequest{Queue: "q"})
		if status.Code(err) != codes.Unauthenticated {
			t.Fatalf("no token: %v, want UNAUTHENTICATED", err)
		}
		stream, err := batonv1.NewScheduleServiceClient(c).Subscribe(context.Background(),
			&batonv1.SubscribeRequest{Receiver: "r", ConsumerId: "c", MaxInFlight: 1})
		if err == nil {
			_, err = stream.Recv()
		}
		if status.Code(err) != codes.Unauthenticated {
			t.Fatalf("no token, stream: %v, want UNAUTHENTICATED", err)
		}

		wrong := s.client(t, baton.WithToken("baton_not-a-token"))
		_, err = batonv1.NewAgentServiceClient(wrong).ListAgents(context.Background(), &batonv1.ListAgentsRequest{Queue: "q"})
		if status.Code(err) != codes.Unauthenticated {
			t.Fatalf("wrong token: %v, want UNAUTHENTICATED", err)
		}
	})

	t.Run("a server certificate of another CA is refused", func(t *testing.T) {
		other := devCerts(t)
		c := s.client(t, baton.WithTLS(filepath.Join(other, "ca.pem")))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := batonv1.NewAgentServiceClient(c).ListAgents(ctx, &batonv1.ListAgentsRequest{Queue: "q"})
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("wrong CA: %v, want UNAVAILABLE", err)
		}
		t.Log(err)
	})

	t.Run("without a client certificate the server refuses the connection", func(t *testing.T) {
		c := dial(t, s.proc.addr, baton.WithTLS(s.file("ca.pem")), baton.WithToken(s.token))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := batonv1.NewAgentServiceClient(c).ListAgents(ctx, &batonv1.ListAgentsRequest{Queue: "q"})
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("no client certificate: %v, want UNAVAILABLE", err)
		}
		t.Log(err)
	})

	t.Run("the example worker takes the TLS and token flags", func(t *testing.T) {
		goBin, err := exec.LookPath("go")
		if err != nil {
			t.Skip("go is not on PATH")
		}
		bin := filepath.Join(t.TempDir(), "worker")
		if out, err := exec.Command(goBin, "build", "-o", bin, "./examples/worker").CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		queue := unique("go-tls-example")
		registerOn(t, s.client(t), queue, "e1")
		cmd := exec.Command(bin, "--addr", s.proc.addr, "--queue", queue, "--worker-id", unique("ex"),
			"--work-ms", "10", "--heartbeat-ms", "500", "--ca-file", s.file("ca.pem"),
			"--cert-file", s.file("client.pem"), "--key-file", s.file("client.key"))
		cmd.Env = append(os.Environ(), "BATON_TOKEN="+s.token)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		events := make(chan map[string]any, 64)
		go func() {
			defer close(events)
			lines := bufio.NewScanner(stdout)
			for lines.Scan() {
				var e map[string]any
				if json.Unmarshal(lines.Bytes(), &e) == nil {
					events <- e
				}
			}
		}()
		stopped := false
		defer func() {
			if !stopped {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		}()
		timeout := time.After(30 * time.Second)
		for done := false; !done; {
			select {
			case e, ok := <-events:
				if !ok {
					t.Fatalf("the example worker exited: %s", stderr.String())
				}
				done = e["event"] == "done" && e["name"] == "e1"
			case <-timeout:
				t.Fatalf("no done event within 30 s; stderr: %s", stderr.String())
			}
		}
		eventually(t, 20*time.Second, "completed with SUCCESS", func() bool { return completedAt(t, s.proc.metricsPort, queue)["SUCCESS"] == 1 })
		_ = cmd.Process.Signal(syscall.SIGTERM)
		exitBy := time.After(30 * time.Second)
		for open := true; open; { // until stdout closes: the worker stopped
			select {
			case _, open = <-events:
			case <-exitBy:
				t.Fatalf("the example worker did not exit within 30 s of SIGTERM; stderr: %s", stderr.String())
			}
		}
		stopped = true
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the example worker: %v; stderr: %s", err, stderr.String())
		}
	})
}

// The token also goes over plaintext (RequireTransportSecurity is false), and a Client works
// with every helper's constructor as a grpc.ClientConnInterface.
func TestClientPlaintextWithToken(t *testing.T) {
	c := dial(t, server.addr, baton.WithToken("ignored-by-a-server-without-tokens"))
	queue := unique("go-plain-client")
	registerOn(t, c, queue, "p1")
	w := baton.NewWorker(c, queue, unique("w"))
	w.HeartbeatEvery = 200 * time.Millisecond
	stop := start(w, func(context.Context, *batonv1.Lease) error { return nil })
	defer stop()
	eventually(t, 20*time.Second, "completed with SUCCESS", func() bool { return completed(t, queue)["SUCCESS"] == 1 })
}

// A long poll made with a context without deadline gets at least its wait plus a margin: a wait
// longer than the default timeout is not cut.
func TestDefaultTimeoutDoesNotCutLongPolls(t *testing.T) {
	c := dial(t, server.addr, baton.WithDefaultTimeout(200*time.Millisecond))
	wait := 1500 * time.Millisecond
	started := time.Now()
	resp, err := batonv1.NewAgentServiceClient(c).Acquire(context.Background(), &batonv1.AcquireRequest{
		Queue: unique("go-empty"), WorkerId: "w", MaxLeases: 1, Wait: durationpb.New(wait),
	})
	if err != nil || len(resp.GetLeases()) != 0 {
		t.Fatalf("acquire: %v %v", resp, err)
	}
	if took := time.Since(started); took < wait-100*time.Millisecond {
		t.Fatalf("the long poll answered after %v, before its wait of %v", took, wait)
	}
	claimer := baton.NewClaimer(c, unique("go-empty-pool"), "c")
	claimer.Wait = wait
	if cl, err := claimer.Claim(context.Background()); cl != nil || err != nil {
		t.Fatalf("claim: %v %v", cl, err)
	}
}

// deadlineSeen dials with an interceptor (after the Client's own) that records the deadline
// each unary call carries and answers without calling Baton.
func deadlineSeen(t *testing.T, opts ...baton.Option) (*baton.Client, func() (time.Duration, bool)) {
	t.Helper()
	var remaining time.Duration
	var has bool
	record := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ grpc.UnaryInvoker, _ ...grpc.CallOption) error {
		var d time.Time
		d, has = ctx.Deadline()
		remaining = time.Until(d)
		return nil
	}
	c := dial(t, server.addr, append(opts, baton.WithDialOptions(grpc.WithChainUnaryInterceptor(record)))...)
	return c, func() (time.Duration, bool) { return remaining, has }
}

func TestDefaultTimeout(t *testing.T) {
	ctx := context.Background()
	c, seen := deadlineSeen(t, baton.WithDefaultTimeout(10*time.Second))
	agents := batonv1.NewAgentServiceClient(c)
	within := func(what string, lo, hi time.Duration) {
		t.Helper()
		d, ok := seen()
		if !ok || d <= lo || d > hi {
			t.Errorf("%s: deadline in %v (set: %v), want in (%v, %v]", what, d, ok, lo, hi)
		}
	}
	_, _ = agents.GetAgent(ctx, &batonv1.GetAgentRequest{Queue: "q", Name: "a"})
	within("a call without deadline", 5*time.Second, 10*time.Second)
	_, _ = agents.Acquire(ctx, &batonv1.AcquireRequest{Queue: "q", WorkerId: "w", Wait: durationpb.New(20 * time.Second)})
	within("a long poll", 25*time.Second, 20*time.Second+baton.LongPollMargin)
	_, _ = agents.Acquire(ctx, &batonv1.AcquireRequest{Queue: "q", WorkerId: "w", Wait: durationpb.New(0)})
	within("a long poll without wait", 5*time.Second, 10*time.Second+baton.LongPollMargin)
	hour, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	_, _ = agents.GetAgent(hour, &batonv1.GetAgentRequest{Queue: "q", Name: "a"})
	within("a call with its own deadline", 59*time.Minute, time.Hour)
	if c.DefaultTimeout() != 10*time.Second {
		t.Errorf("DefaultTimeout() = %v", c.DefaultTimeout())
	}

	c, seen = deadlineSeen(t)
	_, _ = batonv1.NewAgentServiceClient(c).GetAgent(ctx, &batonv1.GetAgentRequest{Queue: "q", Name: "a"})
	if d, ok := seen(); !ok || d <= baton.DefaultTimeout-5*time.Second || d > baton.DefaultTimeout {
		t.Errorf("default: deadline in %v (set: %v), want about %v", d, ok, baton.DefaultTimeout)
	}

	c, seen = deadlineSeen(t, baton.WithDefaultTimeout(0))
	_, _ = batonv1.NewAgentServiceClient(c).GetAgent(ctx, &batonv1.GetAgentRequest{Queue: "q", Name: "a"})
	if d, ok := seen(); ok {
		t.Errorf("WithDefaultTimeout(0): deadline in %v", d)
	}
}

func TestDialRejectsBadCertificateFiles(t *testing.T) {
	dir := devCerts(t)
	notPEM := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string][]baton.Option{
		"missing CA file":          {baton.WithTLS(filepath.Join(dir, "missing.pem"))},
		"CA file without PEM":      {baton.WithTLS(notPEM)},
		"certificate without key":  {baton.WithTLS(filepath.Join(dir, "ca.pem")), baton.WithClientCertificate(filepath.Join(dir, "client.pem"), "")},
		"key of another cert":      {baton.WithTLS(filepath.Join(dir, "ca.pem")), baton.WithClientCertificate(filepath.Join(dir, "client.pem"), filepath.Join(dir, "server.key"))},
		"missing certificate file": {baton.WithClientCertificate(filepath.Join(dir, "missing.pem"), filepath.Join(dir, "client.key"))},
	} {
		if c, err := baton.Dial("127.0.0.1:1", opts...); err == nil {
			c.Close()
			t.Errorf("%s: Dial succeeded", name)
		}
	}
}

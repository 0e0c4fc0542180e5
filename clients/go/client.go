package baton

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Defaults of Dial.
const (
	// DefaultTimeout is the deadline given to a unary call whose context has none (see
	// WithDefaultTimeout).
	DefaultTimeout = 10 * time.Second
	// LongPollMargin is added to a long poll's wait for its default deadline, as the helpers do.
	LongPollMargin = 10 * time.Second
	// DefaultKeepaliveTime is how long the connection may be idle before a keepalive ping.
	DefaultKeepaliveTime = 30 * time.Second
	// DefaultKeepaliveTimeout is how long a keepalive ping may go unanswered before the
	// connection is considered broken.
	DefaultKeepaliveTimeout = 10 * time.Second
)

// Client is one connection to Baton, shared by every helper: its target, TLS (server CA,
// optional client certificate for mutual TLS, optional server name), an API token sent on every
// call, keepalive, a default deadline for unary calls, and the OpenTelemetry trace context of
// each call's ctx as W3C traceparent metadata (PropagateTraceContext). It implements
// grpc.ClientConnInterface, so it goes wherever a connection does: NewWorker(client, …),
// NewProducer, NewLeadership, NewClaimer, NewSubscriber, and the generated stubs
// (batonv1.NewAdminServiceClient(client)). It is safe for concurrent use; Close it when done.
type Client struct {
	conn           *grpc.ClientConn
	target         string
	defaultTimeout time.Duration
}

var _ grpc.ClientConnInterface = (*Client)(nil)

// Option configures Dial.
type Option func(*dialSettings)

type dialSettings struct {
	tls                      bool
	caFile                   string
	certFile, keyFile        string
	serverName               string
	token                    string
	keepaliveTime, kaTimeout time.Duration
	defaultTimeout           time.Duration
	dialOptions              []grpc.DialOption
}

// WithTLS connects over TLS, trusting the server certificates signed by the CA certificates
// (PEM) in caFile; with caFile "" the system's roots. Without WithTLS (or
// WithClientCertificate, WithServerName) the connection is plaintext.
func WithTLS(caFile string) Option {
	return func(s *dialSettings) { s.tls, s.caFile = true, caFile }
}

// WithClientCertificate presents the certificate (PEM, chain) in certFile with its private key
// in keyFile, for servers that require client certificates (mutual TLS: Baton's
// tls.client_ca_file). It implies TLS. Both "" is no certificate; only one of them is an error
// of Dial.
func WithClientCertificate(certFile, keyFile string) Option {
	return func(s *dialSettings) {
		s.certFile, s.keyFile = certFile, keyFile
		if certFile != "" || keyFile != "" {
			s.tls = true
		}
	}
}

// WithServerName checks the server's certificate against name instead of the target's host
// (and sends it as SNI). It implies TLS; "" is the target's host.
func WithServerName(name string) Option {
	return func(s *dialSettings) {
		s.serverName = name
		if name != "" {
			s.tls = true
		}
	}
}

// WithToken sends the API token on every call, unary and streaming, as the metadata
// "authorization: Bearer <token>" (Baton's auth.tokens_file). It is sent over plaintext
// connections too: use TLS wherever the network is not trusted. "" sends none.
func WithToken(token string) Option {
	return func(s *dialSettings) { s.token = token }
}

// WithKeepalive pings the server after idle without activity (even with no call running) and
// drops the connection when a ping is not answered within timeout, so a dead peer or a dropped
// NAT mapping is noticed before the next call hangs. The defaults are DefaultKeepaliveTime and
// DefaultKeepaliveTimeout; idle 0 turns keepalive pings off. grpc-go pings at most every 10 s.
func WithKeepalive(idle, timeout time.Duration) Option {
	return func(s *dialSettings) { s.keepaliveTime, s.kaTimeout = idle, timeout }
}

// WithDefaultTimeout sets the deadline of unary calls made with a context that has none
// (DefaultTimeout unless set; 0: none). A long poll (Acquire, Claim, Campaign) gets at least its
// wait plus LongPollMargin, so the wait is never cut. A context's own deadline always wins (the
// helpers set their own per call), and streams (Subscribe, Observe, Watch*) get none.
func WithDefaultTimeout(d time.Duration) Option {
	return func(s *dialSettings) { s.defaultTimeout = d }
}

// WithDialOptions passes further options to grpc.NewClient (interceptors, a custom resolver …),
// after Dial's own.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(s *dialSettings) { s.dialOptions = append(s.dialOptions, opts...) }
}

// Dial returns a Client of the Baton at target ("host:port", or any grpc-go target such as
// "dns:///baton.internal:50051"). It reads the certificate files at once (a missing or bad file
// is its error) but, like grpc.NewClient, connects on the first call: an unreachable server or a
// failed TLS handshake is the call's error (UNAVAILABLE).
func Dial(target string, opts ...Option) (*Client, error) {
	s := dialSettings{
		keepaliveTime:  DefaultKeepaliveTime,
		kaTimeout:      DefaultKeepaliveTimeout,
		defaultTimeout: DefaultTimeout,
	}
	for _, o := range opts {
		o(&s)
	}
	var dialOpts []grpc.DialOption
	if s.tls {
		cfg, err := s.tlsConfig()
		if err != nil {
			return nil, err
		}
		dialOpts = append(dialOpts, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	} else {
		dialOpts = append(dialOpts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	if s.token != "" {
		dialOpts = append(dialOpts, grpc.WithPerRPCCredentials(bearerToken(s.token)))
	}
	if s.keepaliveTime > 0 {
		dialOpts = append(dialOpts, grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time: s.keepaliveTime, Timeout: s.kaTimeout, PermitWithoutStream: true,
		}))
	}
	if s.defaultTimeout > 0 {
		dialOpts = append(dialOpts, grpc.WithChainUnaryInterceptor(defaultDeadline(s.defaultTimeout)))
	}
	dialOpts = append(dialOpts, PropagateTraceContext()...)
	dialOpts = append(dialOpts, s.dialOptions...)
	conn, err := grpc.NewClient(target, dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("baton: %w", err)
	}
	return &Client{conn: conn, target: target, defaultTimeout: max(s.defaultTimeout, 0)}, nil
}

func (s *dialSettings) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.serverName}
	if s.caFile != "" {
		pem, err := os.ReadFile(s.caFile)
		if err != nil {
			return nil, fmt.Errorf("baton: reading the CA file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("baton: no PEM certificate in the CA file %s", s.caFile)
		}
	}
	switch {
	case s.certFile == "" && s.keyFile == "":
	case s.certFile == "" || s.keyFile == "":
		return nil, errors.New("baton: a client certificate needs both its certificate file and its key file")
	default:
		cert, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
		if err != nil {
			return nil, fmt.Errorf("baton: loading the client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// bearerToken is the per-RPC credentials of WithToken.
type bearerToken string

func (t bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(t)}, nil
}

// RequireTransportSecurity is false: the token also goes over plaintext (a trusted network, or
// TLS terminated in front of Baton).
func (bearerToken) RequireTransportSecurity() bool { return false }

// waitRequest is a long poll's request (AcquireRequest, ClaimRequest, CampaignRequest).
type waitRequest interface {
	GetWait() *durationpb.Duration
}

// defaultDeadline gives unary calls without a deadline one of d; long polls at least their wait
// plus LongPollMargin.
func defaultDeadline(d time.Duration) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if _, ok := ctx.Deadline(); !ok {
			timeout := d
			if w, ok := req.(waitRequest); ok && w.GetWait() != nil {
				timeout = max(timeout, w.GetWait().AsDuration()+LongPollMargin)
			}
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}

// Conn is the underlying connection (it carries the token, keepalive and default deadline too).
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Target is the target given to Dial.
func (c *Client) Target() string { return c.target }

// DefaultTimeout is the deadline given to unary calls without one (0: none).
func (c *Client) DefaultTimeout() time.Duration { return c.defaultTimeout }

// Close closes the connection; calls in flight fail with CANCELED.
func (c *Client) Close() error { return c.conn.Close() }

// Invoke makes a unary call (grpc.ClientConnInterface).
func (c *Client) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	return c.conn.Invoke(ctx, method, args, reply, opts...)
}

// NewStream opens a stream (grpc.ClientConnInterface).
func (c *Client) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return c.conn.NewStream(ctx, desc, method, opts...)
}

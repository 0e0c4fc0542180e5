package dev.baton.client;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ChannelCredentials;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.MethodDescriptor;
import io.grpc.TlsChannelCredentials;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * One connection to Baton, shared by every helper: its target, TLS (the CA that signed Baton's
 * certificate, an optional client certificate for mutual TLS, an optional authority override),
 * an API token sent on every call, HTTP/2 keepalive, and a default deadline for unary calls.
 *
 * <pre>{@code
 * try (BatonClient client = BatonClient.forTarget("baton.internal:50051")
 *     .caFile("ca.pem")                                   // TLS, trusting this CA
 *     .clientCertificate("client.pem", "client.key")      // mutual TLS (optional)
 *     .token(System.getenv("BATON_TOKEN"))                // authorization: Bearer <token>
 *     .build()) {
 *   Worker worker = Worker.builder(client, "emails", "w1").build(handler);
 *   Scheduler scheduler = new Scheduler(client);
 *   AdminServiceGrpc.AdminServiceBlockingStub admin = AdminServiceGrpc.newBlockingStub(client);
 *   …
 * }
 * }</pre>
 *
 * <p>It is a {@link Channel}, so the generated stubs take it too ({@code
 * XServiceGrpc.newBlockingStub(client)}); {@link #channel()} is the underlying
 * {@link ManagedChannel}, which carries the token and the default deadline as well. Every helper
 * (Worker, Leadership, Claimer, Pool, Scheduler, Subscriber) accepts a BatonClient and never shuts
 * its channel down: {@link #close()} does, once the helpers are closed. Thread-safe; make one per
 * Baton and share it.
 *
 * <ul>
 *   <li><b>TLS</b> is on when a CA file, a client certificate or an authority override is given,
 *       or with {@link Builder#useTransportSecurity()} (the JDK's default trust store); otherwise
 *       the connection is plaintext. Baton's certificate is checked against the target's host, or
 *       against {@link Builder#overrideAuthority(String)}.
 *   <li><b>The token</b> goes on every call, unary and streaming, as the metadata {@code
 *       authorization: Bearer <token>} (an {@code authorization} header the caller set itself is
 *       left alone). It is sent over plaintext connections too: use TLS wherever the network is
 *       not trusted.
 *   <li><b>Keepalive</b>: a ping after {@link #DEFAULT_KEEPALIVE_TIME} without activity (also with
 *       no call running), the connection dropped when one is not answered within {@link
 *       #DEFAULT_KEEPALIVE_TIMEOUT}; grpc-java pings at most every 10 s.
 *   <li><b>Trace context</b>: every call, unary and streaming (every helper's too), carries the
 *       OpenTelemetry context current when it is made as W3C {@code traceparent} (and {@code
 *       tracestate}) metadata, so that Baton keeps it with the agents and messages the call
 *       registers or schedules ({@link TraceContextInterceptor}). Nothing is added without a
 *       valid current span (no SDK installed, no span), or when the call carries its own {@code
 *       traceparent}.
 *   <li><b>Default deadline</b> ({@link #DEFAULT_TIMEOUT}): given to a unary call that has none
 *       (neither on its stub nor in its {@link io.grpc.Context}). A long poll (Acquire, Claim,
 *       Campaign: a request with a {@code wait}) gets the default plus its wait, so the wait is
 *       never cut; streams (Subscribe, Observe, WatchPool) get none. The helpers set their own.
 * </ul>
 *
 * <p>Like any gRPC channel it connects on the first call: an unreachable Baton, a failed TLS
 * handshake (a wrong CA, a certificate Baton refuses) is that call's UNAVAILABLE; a missing or
 * refused token is UNAUTHENTICATED.
 */
public final class BatonClient extends Channel implements AutoCloseable {
  /** The default deadline of unary calls that have none. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);
  /** Idle time before a keepalive ping. */
  public static final Duration DEFAULT_KEEPALIVE_TIME = Duration.ofSeconds(30);
  /** How long a keepalive ping may go unanswered before the connection is dropped. */
  public static final Duration DEFAULT_KEEPALIVE_TIMEOUT = Duration.ofSeconds(10);
  /** How long {@link #close()} lets calls in flight finish before cancelling them. */
  static final Duration CLOSE_GRACE = Duration.ofSeconds(5);

  private final ManagedChannel channel;
  private final String target;
  private final boolean tls;
  private final boolean hasToken;
  private final Duration defaultTimeout;

  private BatonClient(ManagedChannel channel, String target, boolean tls, boolean hasToken, Duration defaultTimeout) {
    this.channel = channel;
    this.target = target;
    this.tls = tls;
    this.hasToken = hasToken;
    this.defaultTimeout = defaultTimeout;
  }

  /**
   * A client of the Baton at {@code target}: "host:port", or any grpc-java target URI (such as
   * "dns:///baton.internal:50051").
   */
  public static Builder forTarget(String target) {
    return new Builder(target);
  }

  /**
   * The channel: with the token, the default deadline and any added interceptors. Use it (or this
   * client, a Channel itself) for the generated stubs; do not shut it down while helpers use it.
   */
  public ManagedChannel channel() {
    return channel;
  }

  public String target() {
    return target;
  }

  /** Whether the connection uses TLS. */
  public boolean usesTls() {
    return tls;
  }

  /** Whether a token is sent on every call. */
  public boolean hasToken() {
    return hasToken;
  }

  /** The deadline given to unary calls that have none; empty: none. */
  public Optional<Duration> defaultTimeout() {
    return Optional.ofNullable(defaultTimeout);
  }

  @Override
  public <ReqT, RespT> ClientCall<ReqT, RespT> newCall(MethodDescriptor<ReqT, RespT> method, CallOptions options) {
    return channel.newCall(method, options);
  }

  @Override
  public String authority() {
    return channel.authority();
  }

  /**
   * Shuts the channel down: no new calls; calls in flight get up to 5 s to finish, then are
   * cancelled. Close the helpers first (a worker's close() releases its leases through this
   * channel).
   */
  @Override
  public void close() {
    channel.shutdown();
    try {
      if (!channel.awaitTermination(CLOSE_GRACE.toMillis(), TimeUnit.MILLISECONDS)) {
        channel.shutdownNow();
      }
    } catch (InterruptedException e) {
      channel.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public String toString() {
    return "BatonClient{target=" + target + ", tls=" + tls + ", token=" + (hasToken ? "set" : "none")
        + ", defaultTimeout=" + defaultTimeout + "}";
  }

  /** Settings of a {@link BatonClient}. */
  public static final class Builder {
    private final String target;
    private Boolean tls; // null: on when a CA, a client certificate or an authority is given
    private File caFile;
    private File certFile;
    private File keyFile;
    private String authority;
    private String token;
    private Duration keepaliveTime = DEFAULT_KEEPALIVE_TIME;
    private Duration keepaliveTimeout = DEFAULT_KEEPALIVE_TIMEOUT;
    private Duration defaultTimeout = DEFAULT_TIMEOUT;
    private final List<ClientInterceptor> interceptors = new ArrayList<>();

    private Builder(String target) {
      this.target = Objects.requireNonNull(target, "target");
      if (target.isBlank()) throw new IllegalArgumentException("the target is empty");
    }

    /**
     * TLS, trusting the CA certificates (PEM) in {@code caFile} to sign Baton's certificate
     * instead of the JDK's default trust store.
     */
    public Builder caFile(Path caFile) {
      this.caFile = caFile == null ? null : caFile.toFile();
      return this;
    }

    /** {@link #caFile(Path)} by name; null: none. */
    public Builder caFile(String caFile) {
      return caFile(caFile == null ? null : Path.of(caFile));
    }

    /**
     * Presents this certificate (PEM, with its chain) and its private key (PEM, PKCS#8 as written
     * by {@code baton dev-certs}) to a Baton that requires client certificates (mutual TLS:
     * {@code tls.client_ca_file}). Implies TLS. Both null: none; only one is an error of build().
     */
    public Builder clientCertificate(Path certFile, Path keyFile) {
      this.certFile = certFile == null ? null : certFile.toFile();
      this.keyFile = keyFile == null ? null : keyFile.toFile();
      return this;
    }

    /** {@link #clientCertificate(Path, Path)} by names. */
    public Builder clientCertificate(String certFile, String keyFile) {
      return clientCertificate(certFile == null ? null : Path.of(certFile), keyFile == null ? null : Path.of(keyFile));
    }

    /**
     * Checks Baton's certificate against {@code name} instead of the target's host (and sends it
     * as the call's authority and TLS server name), e.g. to reach "localhost"'s certificate by
     * IP address. Implies TLS; null: the target's host.
     */
    public Builder overrideAuthority(String name) {
      this.authority = name;
      return this;
    }

    /** TLS, even without a CA file (the JDK's default trust store). */
    public Builder useTransportSecurity() {
      this.tls = Boolean.TRUE;
      return this;
    }

    /**
     * Plaintext (the default without a CA file, client certificate or authority override); with a
     * CA file or a client certificate, build() fails.
     */
    public Builder usePlaintext() {
      this.tls = Boolean.FALSE;
      return this;
    }

    /**
     * The API token (made by {@code baton token}) sent on every call as {@code authorization:
     * Bearer <token>}; null or empty: none. Surrounding whitespace (a file's newline) is dropped.
     */
    public Builder token(String token) {
      if (token != null) {
        token = token.strip();
        for (int i = 0; i < token.length(); i++) {
          char c = token.charAt(i);
          if (c <= ' ' || c > '~') throw new IllegalArgumentException("the token may hold only printable ASCII, without spaces");
        }
      }
      this.token = token == null || token.isEmpty() ? null : token;
      return this;
    }

    /**
     * A keepalive ping after {@code time} without activity (with or without calls running); the
     * connection is dropped when a ping is not answered within {@code timeout}. Default 30 s and
     * 10 s; a zero or null {@code time} turns pings off. grpc-java pings at most every 10 s.
     */
    public Builder keepalive(Duration time, Duration timeout) {
      if (time != null && time.isNegative()) throw new IllegalArgumentException("negative keepalive time");
      if (timeout != null && (timeout.isNegative() || timeout.isZero())) throw new IllegalArgumentException("keepalive timeout must be positive");
      this.keepaliveTime = time == null || time.isZero() ? null : time;
      this.keepaliveTimeout = timeout == null ? DEFAULT_KEEPALIVE_TIMEOUT : timeout;
      return this;
    }

    /**
     * The deadline of unary calls that have none (default 10 s); a long poll gets it plus its
     * wait, streams none. Zero or null: no default deadline.
     */
    public Builder defaultTimeout(Duration timeout) {
      if (timeout != null && timeout.isNegative()) throw new IllegalArgumentException("negative default timeout");
      this.defaultTimeout = timeout == null || timeout.isZero() ? null : timeout;
      return this;
    }

    /**
     * More interceptors on every call. They run before the client's own (so an {@code
     * authorization} or {@code traceparent} header or a deadline they set is kept), and among themselves as with
     * {@link ManagedChannelBuilder#intercept}: the last added runs first.
     */
    public Builder intercept(ClientInterceptor... more) {
      for (ClientInterceptor i : more) interceptors.add(Objects.requireNonNull(i));
      return this;
    }

    /**
     * Builds the client. The certificate files are read now: a missing one throws {@link
     * UncheckedIOException}, a bad one (or a certificate without its key)
     * IllegalArgumentException. It connects on the first call.
     */
    public BatonClient build() {
      if ((certFile == null) != (keyFile == null)) {
        throw new IllegalArgumentException("a client certificate needs both its certificate file and its key file");
      }
      boolean secure = tls != null ? tls : (caFile != null || certFile != null || authority != null);
      if (!secure && (caFile != null || certFile != null)) {
        throw new IllegalStateException("usePlaintext() with a CA file or a client certificate");
      }
      ChannelCredentials credentials;
      if (secure) {
        TlsChannelCredentials.Builder creds = TlsChannelCredentials.newBuilder();
        try {
          if (caFile != null) creds.trustManager(caFile);
        } catch (IOException e) {
          throw new UncheckedIOException("reading the CA file " + caFile + ": " + e.getMessage(), e);
        }
        try {
          if (certFile != null) creds.keyManager(certFile, keyFile);
        } catch (IOException e) {
          throw new UncheckedIOException("reading the client certificate " + certFile + " or its key " + keyFile
              + ": " + e.getMessage(), e);
        }
        credentials = creds.build();
      } else {
        credentials = InsecureChannelCredentials.create();
      }
      ManagedChannelBuilder<?> builder;
      try {
        builder = Grpc.newChannelBuilder(target, credentials);
      } catch (RuntimeException e) {
        // A certificate or key the TLS stack cannot use (grpc reports it as "no provider").
        throw new IllegalArgumentException("cannot make a channel to " + target + ": " + e.getMessage(), e);
      }
      if (authority != null) builder.overrideAuthority(authority);
      if (keepaliveTime != null) {
        builder.keepAliveTime(keepaliveTime.toNanos(), TimeUnit.NANOSECONDS)
            .keepAliveTimeout(keepaliveTimeout.toNanos(), TimeUnit.NANOSECONDS)
            .keepAliveWithoutCalls(true);
      }
      // The channel runs interceptors in the reverse order of adding: the caller's first, then
      // the trace context (taken when the call is made), the token, the default deadline.
      List<ClientInterceptor> chain = new ArrayList<>();
      if (defaultTimeout != null) chain.add(new CallDefaults.DefaultDeadline(defaultTimeout));
      if (token != null) chain.add(new CallDefaults.BearerToken(token));
      chain.add(new TraceContextInterceptor());
      chain.addAll(interceptors);
      builder.intercept(chain);
      return new BatonClient(builder.build(), target, secure, token != null, defaultTimeout);
    }
  }
}

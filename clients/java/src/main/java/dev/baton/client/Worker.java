package dev.baton.client;

import dev.baton.v1.AcquireRequest;
import dev.baton.v1.AcquireResponse;
import dev.baton.v1.AgentServiceGrpc;
import dev.baton.v1.CompleteRequest;
import dev.baton.v1.HeartbeatRequest;
import dev.baton.v1.HeartbeatResponse;
import dev.baton.v1.Lease;
import dev.baton.v1.LeaseRef;
import dev.baton.v1.Outcome;
import dev.baton.v1.ReleaseRequest;
import dev.baton.v1.SessionCompletion;
import dev.baton.v1.SessionLease;
import dev.baton.v1.SessionOpen;
import dev.baton.v1.SessionRelease;
import dev.baton.v1.SessionRequest;
import dev.baton.v1.SessionResponse;
import io.grpc.Channel;
import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.context.Scope;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * A worker of one queue, modelled on Baton's Rust {@code baton::worker::Worker}: leases pushed on
 * one AgentService.Session stream → run the handler → heartbeat while it runs → complete with the
 * outcome the handler's result maps to ({@link Outcomes#classify(Throwable)}). The worker grants
 * the server credit for {@code maxLeases} leases; each message it sends back carries whatever
 * finished since the last one (completions, one credit per lease, releases). A broken stream is
 * opened again with backoff and unanswered completions go again (tokens fence a repeat). A server
 * without Session (UNIMPLEMENTED), or {@code unary(true)}, gets the unary loop: long-poll Acquire,
 * Heartbeat, Complete. A lease reported lost, or its run cancelled (CancelRun), cancels its
 * handler (its thread is interrupted; its result would be refused anyway); a handler reports
 * progress with {@link #reportProgress}, sent with the lease's next heartbeat; {@link #close()} stops acquiring,
 * cancels running handlers and Releases their leases, so another worker takes them at once.
 *
 * <p>Each run is an OpenTelemetry span {@code process <queue>} (CONSUMER, scope {@code
 * baton-client}), current while the handler runs: a one-shot agent's run is a child of the
 * producer's trace context ({@code Agent.traceparent}), a recurring agent's run a new trace linked
 * to it. Recorded by the global SDK, or the one given to {@link Builder#openTelemetry}; a no-op
 * without one.
 *
 * <pre>{@code
 * try (Worker worker = Worker.builder(channel, "emails", "w1").maxLeases(4).build((lease, c) -> {
 *   // … lease.getAgent().getPayload() …
 *   throw Failure.fromHttpStatus(429, "rate limited").withRetryAfter(Duration.ofSeconds(30));
 * })) {
 *   worker.start();
 *   …
 * }
 * }</pre>
 */
public final class Worker implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(Worker.class.getName());
  static final Metadata.Key<String> PUSHBACK = Metadata.Key.of("grpc-retry-pushback-ms", Metadata.ASCII_STRING_MARSHALLER);

  private final AgentServiceGrpc.AgentServiceBlockingStub stub;
  private final AgentServiceGrpc.AgentServiceStub asyncStub;
  private final boolean unary;
  private final String queue;
  private final String workerId;
  private final int maxLeases;
  private final Duration wait;
  private final Duration heartbeatEvery;
  private final Duration releaseDelay;
  private final Duration shutdownGrace;
  private final LeaseHandler handler;
  private final OpenTelemetry openTelemetry;

  private final Map<Key, Run> held = new ConcurrentHashMap<>();
  private final Map<Key, String> progress = new ConcurrentHashMap<>();
  private final AtomicBoolean stopping = new AtomicBoolean();
  private final Context.CancellableContext acquireContext = Context.ROOT.withCancellation();
  private final ExecutorService handlers;
  private final java.util.concurrent.ScheduledExecutorService beats;
  private final Semaphore slots;
  private final AtomicInteger running = new AtomicInteger();
  private volatile Thread loop;
  private final Object done = new Object();
  private boolean finished;

  private record Key(String name, long token) {}

  /**
   * Reports {@code value} (a small text, at most 256 bytes) for the run of {@code lease}: sent
   * with the lease's next heartbeat; GetAgent shows the last one while the run is held.
   */
  public void reportProgress(Lease lease, String value) {
    progress.put(new Key(lease.getName(), lease.getToken()), value);
  }

  private String takeProgress(Lease lease) {
    String value = progress.remove(new Key(lease.getName(), lease.getToken()));
    return value == null ? "" : value;
  }

  private static Set<Key> keys(List<LeaseRef> refs) {
    Set<Key> out = new HashSet<>();
    for (LeaseRef r : refs) out.add(new Key(r.getName(), r.getToken()));
    return out;
  }

  /** Why a lease in {@code lost} is cancelled: its run was cancelled, or it was lost. */
  private static Cancellation.Reason reason(Set<Key> cancelled, Key key) {
    return cancelled.contains(key) ? Cancellation.Reason.RUN_CANCELLED : Cancellation.Reason.LEASE_LOST;
  }

  private static final class Run {
    final Lease lease;
    final Cancellation cancellation = new Cancellation();
    volatile Future<?> future;

    Run(Lease lease) {
      this.lease = lease;
    }
  }

  private Worker(Builder b, LeaseHandler handler) {
    this.stub = AgentServiceGrpc.newBlockingStub(b.channel);
    this.asyncStub = AgentServiceGrpc.newStub(b.channel);
    this.unary = b.unary;
    this.queue = b.queue;
    this.workerId = b.workerId;
    this.maxLeases = Math.max(1, b.maxLeases);
    this.wait = b.wait;
    this.heartbeatEvery = b.heartbeatEvery;
    this.releaseDelay = b.releaseDelay;
    this.shutdownGrace = b.shutdownGrace;
    this.handler = Objects.requireNonNull(handler, "handler");
    this.openTelemetry = b.openTelemetry;
    this.slots = new Semaphore(maxLeases);
    AtomicInteger n = new AtomicInteger();
    this.handlers = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "baton-" + workerId + "-handler-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
    this.beats = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "baton-" + workerId + "-heartbeat");
      t.setDaemon(true);
      return t;
    });
  }

  public static Builder builder(Channel channel, String queue, String workerId) {
    return new Builder(channel, queue, workerId);
  }

  /**
   * A worker on a shared {@link BatonClient} (its TLS, token, keepalive); the worker never shuts
   * the client's channel down: close the worker first, then the client.
   */
  public static Builder builder(BatonClient client, String queue, String workerId) {
    return new Builder(Objects.requireNonNull(client, "client").channel(), queue, workerId);
  }

  /** Runs the loop on a new (non-daemon) thread; returns at once. */
  public Worker start() {
    Thread t = new Thread(this::run, "baton-" + workerId + "-acquire");
    loop = t;
    t.start();
    return this;
  }

  /** Runs the loop on this thread until {@link #close()}. */
  public void run() {
    loop = Thread.currentThread();
    try {
      if (unary || !sessionLoop()) {
        long every = Math.max(10, heartbeatEvery.toMillis());
        beats.scheduleWithFixedDelay(this::heartbeat, every, every, TimeUnit.MILLISECONDS);
        acquireContext.run(this::acquireLoop);
      }
    } finally {
      shutdown();
    }
  }

  // --- the session stream ----------------------------------------------------------------------

  /** What reaches the session loop: a server message, the stream's end, or a handler's end. */
  private record Received(int stream, SessionResponse response) {}

  private record Ended(int stream, Throwable error) {}

  private enum Kind { DONE, LOST, CANCELLED }

  private record Finished(Run run, Kind kind, Failure failure) {}

  private final BlockingQueue<Object> events = new LinkedBlockingQueue<>();

  /**
   * Works on Session streams until close(); false (having done nothing) when the server has none.
   * Every event is handled on this thread, which alone writes to the stream.
   */
  private boolean sessionLoop() {
    Map<Key, SessionCompletion> unanswered = new HashMap<>();
    long backoff = 100;
    int stream = 0;
    while (!stopping.get()) {
      int id = ++stream;
      Context.CancellableContext callContext = Context.ROOT.withCancellation();
      StreamObserver<SessionResponse> responses = new StreamObserver<>() {
        @Override public void onNext(SessionResponse r) { events.add(new Received(id, r)); }
        @Override public void onError(Throwable t) { events.add(new Ended(id, t)); }
        @Override public void onCompleted() { events.add(new Ended(id, null)); }
      };
      StreamObserver<SessionRequest> requests;
      Context previous = callContext.attach();
      try {
        requests = asyncStub.session(responses);
      } finally {
        callContext.detach(previous);
      }
      requests.onNext(SessionRequest.newBuilder()
          .setOpen(SessionOpen.newBuilder().setQueue(queue).setWorkerId(workerId))
          .setCredit(Math.max(0, maxLeases - held.size()))
          .addAllCompletions(unanswered.values())
          .build());
      boolean served = false;
      long every = Math.max(10, heartbeatEvery.toMillis());
      long nextBeat = System.nanoTime() + every * 1_000_000;
      Throwable ended = null;
      boolean open = true;
      try {
        while (open) {
          if (stopping.get()) {
            closeSession(requests, id, unanswered);
            return true;
          }
          long waitMs = Math.max(1, Math.min(100, (nextBeat - System.nanoTime()) / 1_000_000));
          Object e = events.poll(waitMs, TimeUnit.MILLISECONDS);
          if (e == null) {
            if (System.nanoTime() >= nextBeat) {
              SessionRequest.Builder m = SessionRequest.newBuilder();
              for (Run run : held.values()) {
                if (!run.cancellation.isCancelled()) {
                  m.addHeartbeats(SessionLease.newBuilder().setName(run.lease.getName()).setToken(run.lease.getToken())
                      .setProgress(takeProgress(run.lease)));
                }
              }
              if (m.getHeartbeatsCount() > 0) requests.onNext(m.build());
              nextBeat = System.nanoTime() + every * 1_000_000;
            }
          } else if (e instanceof Received r) {
            if (r.stream() != id) continue;
            served = true;
            answered(r.response(), unanswered);
          } else if (e instanceof Finished f) {
            SessionRequest.Builder m = SessionRequest.newBuilder();
            finish(f, m, unanswered);
            // Everything else that finished by now goes in the same message.
            while (m.getCompletionsCount() + m.getReleasesCount() < 1000 && events.peek() instanceof Finished) {
              finish((Finished) events.poll(), m, unanswered);
            }
            requests.onNext(m.build());
          } else if (e instanceof Ended end && end.stream() == id) {
            ended = end.error();
            open = false;
          }
        }
      } catch (InterruptedException ie) {
        callContext.cancel(null);
        return true;
      }
      callContext.cancel(null);
      if (ended != null && Status.fromThrowable(ended).getCode() == Status.Code.UNIMPLEMENTED && !served) {
        LOG.info("the server has no Session; using Acquire/Complete");
        return false;
      }
      if (ended != null && !stopping.get()) {
        LOG.log(Level.WARNING, "session broke: {0}; opening another", Status.fromThrowable(ended));
      }
      if (served) backoff = 100;
      if (!sleep(backoff)) break;
      backoff = Math.min(backoff * 2, 5_000);
    }
    return true;
  }

  private void answered(SessionResponse r, Map<Key, SessionCompletion> unanswered) {
    for (var c : r.getCompletedList()) {
      unanswered.remove(new Key(c.getName(), c.getToken()));
      if (c.getLeaseLost()) {
        LOG.log(Level.WARNING, "completion of {0} token {1} refused: the lease was lost", new Object[] {c.getName(), c.getToken()});
      }
    }
    Set<Key> cancelled = keys(r.getCancelledList());
    for (LeaseRef lost : r.getLostList()) {
      Key key = new Key(lost.getName(), lost.getToken());
      Run run = held.get(key);
      if (run != null && run.cancellation.cancel(reason(cancelled, key))) {
        LOG.log(Level.WARNING, "lease {0}/{1} token {2} lost; cancelling its handler",
            new Object[] {lost.getQueue(), lost.getName(), lost.getToken()});
        Future<?> f = run.future;
        if (f != null) f.cancel(true);
      }
    }
    for (Lease lease : r.getLeasesList()) {
      Run run = new Run(lease);
      held.put(new Key(lease.getName(), lease.getToken()), run);
      running.incrementAndGet();
      run.future = handlers.submit(() -> {
        Failure failure = invoke(run);
        Kind kind = !run.cancellation.isCancelled() ? Kind.DONE
            : run.cancellation.reason() == Cancellation.Reason.LEASE_LOST ? Kind.LOST : Kind.CANCELLED;
        events.add(new Finished(run, kind, failure));
      });
    }
  }

  /** A handler that ended, into the next message: its slot back as credit, and its completion
   *  (or, cancelled by the shutdown, its release). */
  private void finish(Finished f, SessionRequest.Builder m, Map<Key, SessionCompletion> unanswered) {
    Lease lease = f.run().lease;
    Key key = new Key(lease.getName(), lease.getToken());
    if (held.remove(key) == null) return; // already released by the shutdown
    running.decrementAndGet();
    m.setCredit(m.getCredit() + 1);
    switch (f.kind()) {
      case DONE -> {
        SessionCompletion.Builder c = SessionCompletion.newBuilder().setName(lease.getName()).setToken(lease.getToken())
            .setOutcome(f.failure() == null ? Outcome.OUTCOME_SUCCESS : f.failure().outcome());
        if (f.failure() != null) {
          c.setMessage(Failure.truncateUtf8(String.valueOf(f.failure().getMessage()), Failure.MAX_MESSAGE_BYTES));
          f.failure().retryAfter().ifPresent(d -> c.setRetryAfter(Durations.of(d)));
        }
        SessionCompletion completion = c.build();
        unanswered.put(key, completion);
        m.addCompletions(completion);
      }
      case CANCELLED -> {
        SessionRelease.Builder r = SessionRelease.newBuilder().setName(lease.getName()).setToken(lease.getToken());
        if (releaseDelay != null) r.setDelay(Durations.of(releaseDelay));
        m.addReleases(r);
      }
      case LOST -> { }
    }
  }

  /** Shutdown on a live stream: handlers cancelled (bounded by the grace), what finished
   *  completed, the rest released (by shutdown()), the stream half-closed and awaited (bounded). */
  private void closeSession(StreamObserver<SessionRequest> requests, int id, Map<Key, SessionCompletion> unanswered)
      throws InterruptedException {
    for (Run run : held.values()) {
      if (run.cancellation.cancel(Cancellation.Reason.SHUTDOWN)) {
        Future<?> f = run.future;
        if (f != null) f.cancel(true);
      }
    }
    SessionRequest.Builder m = SessionRequest.newBuilder();
    long deadline = System.nanoTime() + shutdownGrace.toNanos();
    while (!held.isEmpty() && System.nanoTime() < deadline) {
      Object e = events.poll(Math.max(1, (deadline - System.nanoTime()) / 1_000_000), TimeUnit.MILLISECONDS);
      if (e instanceof Finished f) finish(f, m, unanswered);
    }
    m.setCredit(0);
    if (m.getCompletionsCount() + m.getReleasesCount() > 0) requests.onNext(m.build());
    requests.onCompleted();
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < end) {
      Object e = events.poll(100, TimeUnit.MILLISECONDS);
      if (e instanceof Ended ended && ended.stream() == id) return;
    }
  }

  /**
   * Stops acquiring, cancels running handlers and releases their leases; waits until done (at
   * most the shutdown grace for handlers that ignore cancellation).
   */
  @Override
  public void close() {
    stopping.set(true);
    acquireContext.cancel(null);
    if (loop == null) {
      shutdown();
      return;
    }
    synchronized (done) {
      while (!finished) {
        try {
          done.wait();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  private void acquireLoop() {
    long backoff = 100;
    while (!stopping.get()) {
      try {
        // Wait for a free slot (checking for close() now and then).
        if (!slots.tryAcquire(100, TimeUnit.MILLISECONDS)) continue;
        slots.release();
      } catch (InterruptedException e) {
        return;
      }
      int want = Math.max(1, maxLeases - running.get());
      AcquireResponse response;
      try {
        response = stub.withDeadlineAfter(wait.toMillis() + 10_000, TimeUnit.MILLISECONDS)
            .acquire(AcquireRequest.newBuilder().setQueue(queue).setWorkerId(workerId).setMaxLeases(want)
                .setWait(Durations.of(wait)).build());
      } catch (StatusRuntimeException e) {
        if (stopping.get()) return;
        long delay = pushbackMs(e, backoff);
        LOG.log(Level.WARNING, "acquire failed: {0}; retrying in {1} ms", new Object[] {e.getStatus(), delay});
        if (!sleep(delay)) return;
        backoff = Math.min(backoff * 2, 5_000);
        continue;
      }
      backoff = 100;
      for (Lease lease : response.getLeasesList()) {
        slots.acquireUninterruptibly();
        running.incrementAndGet();
        Run run = new Run(lease);
        held.put(new Key(lease.getName(), lease.getToken()), run);
        run.future = handlers.submit(() -> runOne(run));
      }
    }
  }

  private void runOne(Run run) {
    Lease lease = run.lease;
    try {
      Failure failure = invoke(run);
      if (run.cancellation.isCancelled()) {
        return; // lost, or stopping: shutdown releases what is held
      }
      held.remove(new Key(lease.getName(), lease.getToken()));
      Thread.interrupted(); // a late interrupt must not abort the Complete
      complete(lease, failure);
    } finally {
      running.decrementAndGet();
      slots.release();
    }
  }

  /**
   * Runs the handler inside the run's span (current while it runs); the failure its exception
   * maps to, or null (success, or cancelled: the result no longer matters).
   */
  private Failure invoke(Run run) {
    Lease lease = run.lease;
    Span span = Tracing.startRun(Tracing.tracer(openTelemetry), queue, lease);
    Throwable thrown = null;
    Failure failure = null;
    try (Scope ignored = span.makeCurrent()) {
      handler.handle(lease, run.cancellation);
    } catch (Throwable t) {
      thrown = t;
      failure = run.cancellation.isCancelled() ? null : Outcomes.classify(t);
    } finally {
      Tracing.end(span, run.cancellation.reason(), thrown,
          failure == null ? Outcome.OUTCOME_SUCCESS : failure.outcome(), failure == null ? null : failure.getMessage());
    }
    return failure;
  }

  private void complete(Lease lease, Failure failure) {
    // One request id for every attempt below: a retry of an applied Complete gets its answer.
    CompleteRequest.Builder request = CompleteRequest.newBuilder().setRequestId(UUID.randomUUID().toString())
        .setQueue(lease.getQueue()).setName(lease.getName()).setToken(lease.getToken())
        .setOutcome(failure == null ? Outcome.OUTCOME_SUCCESS : failure.outcome());
    if (failure != null) {
      String message = String.valueOf(failure.getMessage());
      request.setMessage(Failure.truncateUtf8(message, Failure.MAX_MESSAGE_BYTES));
      failure.retryAfter().ifPresent(d -> request.setRetryAfter(Durations.of(d)));
    }
    for (int attempt = 0; ; attempt++) {
      try {
        stub.withDeadlineAfter(10, TimeUnit.SECONDS).complete(request.build());
        return;
      } catch (StatusRuntimeException e) {
        if (e.getStatus().getCode() == Status.Code.UNAVAILABLE && attempt < 2) {
          if (!sleep(pushbackMs(e, 200L * (attempt + 1)))) return;
          continue;
        }
        LOG.log(Level.WARNING, "complete of {0} token {1} failed: {2}", new Object[] {lease.getName(), lease.getToken(), e.getStatus()});
        return;
      }
    }
  }

  private void heartbeat() {
    List<LeaseRef> refs = new ArrayList<>();
    for (Run run : held.values()) {
      refs.add(LeaseRef.newBuilder().setQueue(run.lease.getQueue()).setName(run.lease.getName()).setToken(run.lease.getToken())
          .setProgress(takeProgress(run.lease)).build());
    }
    HeartbeatResponse response;
    try {
      response = stub.withDeadlineAfter(Math.max(5_000, heartbeatEvery.toMillis()), TimeUnit.MILLISECONDS)
          .heartbeat(HeartbeatRequest.newBuilder().setWorkerId(workerId).addAllLeases(refs).build());
    } catch (StatusRuntimeException e) {
      if (!stopping.get()) LOG.log(Level.WARNING, "heartbeat failed: {0}", e.getStatus());
      return;
    }
    Set<Key> cancelled = keys(response.getCancelledList());
    for (LeaseRef lost : response.getLostList()) {
      Key key = new Key(lost.getName(), lost.getToken());
      Run run = held.remove(key);
      if (run != null && run.cancellation.cancel(reason(cancelled, key))) {
        LOG.log(Level.WARNING, "lease {0}/{1} token {2} lost; cancelling its handler",
            new Object[] {lost.getQueue(), lost.getName(), lost.getToken()});
        Future<?> f = run.future;
        if (f != null) f.cancel(true);
      }
    }
  }

  private void shutdown() {
    synchronized (done) {
      if (finished) return;
    }
    stopping.set(true);
    List<Run> runs = new ArrayList<>(held.values());
    for (Run run : runs) {
      run.cancellation.cancel(Cancellation.Reason.SHUTDOWN);
      Future<?> f = run.future;
      if (f != null) f.cancel(true);
    }
    handlers.shutdown();
    try {
      if (!handlers.awaitTermination(shutdownGrace.toMillis(), TimeUnit.MILLISECONDS)) {
        LOG.warning("handlers still running after the shutdown grace; releasing their leases");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    beats.shutdownNow();
    for (Run run : new ArrayList<>(held.values())) {
      held.remove(new Key(run.lease.getName(), run.lease.getToken()));
      release(run.lease);
    }
    synchronized (done) {
      finished = true;
      done.notifyAll();
    }
  }

  private void release(Lease lease) {
    ReleaseRequest.Builder request = ReleaseRequest.newBuilder()
        .setQueue(lease.getQueue()).setName(lease.getName()).setToken(lease.getToken());
    if (releaseDelay != null) request.setDelay(Durations.of(releaseDelay));
    try {
      stub.withDeadlineAfter(5, TimeUnit.SECONDS).release(request.build());
    } catch (StatusRuntimeException e) {
      LOG.log(Level.WARNING, "release of {0} token {1} failed: {2}", new Object[] {lease.getName(), lease.getToken(), e.getStatus()});
    }
  }

  private boolean sleep(long ms) {
    try {
      Thread.sleep(ms);
      return !stopping.get();
    } catch (InterruptedException e) {
      return false;
    }
  }

  static long pushbackMs(StatusRuntimeException e, long fallback) {
    Metadata trailers = e.getTrailers();
    String v = trailers == null ? null : trailers.get(PUSHBACK);
    if (v != null) {
      try {
        return Math.max(0, Long.parseLong(v));
      } catch (NumberFormatException ignored) {
        // fall back
      }
    }
    return fallback;
  }

  /**
   * Whether Baton refused a stale token (FAILED_PRECONDITION, ErrorInfo reason LEASE_LOST): the
   * lease or term is gone and the work must stop. Baton uses FAILED_PRECONDITION for nothing else.
   */
  public static boolean isLeaseLost(Throwable t) {
    return t instanceof StatusRuntimeException
        && ((StatusRuntimeException) t).getStatus().getCode() == Status.Code.FAILED_PRECONDITION;
  }

  /** Settings of a {@link Worker}. */
  public static final class Builder {
    private final Channel channel;
    private final String queue;
    private final String workerId;
    private int maxLeases = 1;
    private Duration wait = Duration.ofSeconds(30);
    private Duration heartbeatEvery = Duration.ofSeconds(3);
    private Duration releaseDelay;
    private Duration shutdownGrace = Duration.ofSeconds(10);
    private boolean unary;
    private OpenTelemetry openTelemetry;

    private Builder(Channel channel, String queue, String workerId) {
      this.channel = Objects.requireNonNull(channel, "channel");
      this.queue = Objects.requireNonNull(queue, "queue");
      this.workerId = Objects.requireNonNull(workerId, "workerId");
    }

    /** Leases asked for per Acquire, and the most handlers running at once (default 1). */
    public Builder maxLeases(int n) {
      this.maxLeases = n;
      return this;
    }

    /** Long-poll wait of each Acquire (default 30 s). */
    public Builder wait(Duration d) {
      this.wait = d;
      return this;
    }

    /**
     * How often held leases are extended (default 10 s); well under the agents' timeout. Also
     * keeps the worker alive for Baton's orphan sweeper while it holds nothing.
     */
    public Builder heartbeatEvery(Duration d) {
      this.heartbeatEvery = d;
      return this;
    }

    /** Delay before a lease released on shutdown is due again (default: at once). */
    public Builder releaseDelay(Duration d) {
      this.releaseDelay = d;
      return this;
    }

    /** Use Acquire, Heartbeat and Complete calls instead of a Session stream (default false). */
    public Builder unary(boolean unary) {
      this.unary = unary;
      return this;
    }

    /** How long close() waits for cancelled handlers before releasing (default 10 s). */
    public Builder shutdownGrace(Duration d) {
      this.shutdownGrace = d;
      return this;
    }

    /**
     * Records the runs' spans with this OpenTelemetry instead of the global one
     * ({@code GlobalOpenTelemetry}, looked up at each run); null: the global one.
     */
    public Builder openTelemetry(OpenTelemetry openTelemetry) {
      this.openTelemetry = openTelemetry;
      return this;
    }

    public Worker build(LeaseHandler handler) {
      return new Worker(this, handler);
    }
  }
}

package dev.baton.client;

import com.google.protobuf.ByteString;
import dev.baton.v1.AgentServiceGrpc;
import dev.baton.v1.CompleteResult;
import dev.baton.v1.Lease;
import dev.baton.v1.LeaseRef;
import dev.baton.v1.Outcome;
import dev.baton.v1.RecordStepRequest;
import dev.baton.v1.RecordStepResponse;
import dev.baton.v1.SessionCompletion;
import dev.baton.v1.SessionLease;
import dev.baton.v1.SessionOpen;
import dev.baton.v1.SessionRelease;
import dev.baton.v1.SessionRequest;
import dev.baton.v1.SessionResponse;
import dev.baton.v1.Step;
import io.grpc.Channel;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.context.Scope;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * A worker of one queue on one AgentService.Session stream: the worker grants the server credit
 * for {@code maxLeases} leases, the server pushes leases as they become due, the handler runs on a
 * pool thread per lease, and each message back carries whatever finished since the last one
 * (completions, one credit per lease, releases); heartbeats (with progress, {@link
 * #reportProgress}) go on the stream while handlers run. A failure goes to Baton as {@link
 * Outcomes#classify(Throwable)} describes it, and Baton decides the outcome. A broken stream is
 * opened again with backoff and unanswered completions go again (their tokens fence a repeat). A
 * lease reported lost, or its run cancelled (CancelRun), cancels its handler (its thread is
 * interrupted) and is not completed.
 *
 * <p>{@link #close()} stops gracefully: the completion of every handler that had returned is sent
 * and answered, handlers still running are cancelled ({@link Cancellation.Reason#SHUTDOWN}) and,
 * once they end (at most {@code shutdownGrace}), their leases released; then the stream is
 * half-closed and read to its end.
 *
 * <p>Each run is an OpenTelemetry span {@code process <queue>} (CONSUMER, scope {@code
 * baton-client}), current while the handler runs: a one-shot agent's run is a child of the
 * producer's trace context ({@code Agent.traceparent}), a recurring agent's run a new trace linked
 * to it. Recorded by the global SDK, or the one given to {@link Builder#openTelemetry}.
 *
 * <pre>{@code
 * try (Worker worker = Worker.builder(client, "emails", "w1").maxLeases(4).build((lease, c) -> {
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
  /** Completions and releases in one message at most (the server's default limits.max_batch). */
  private static final int MAX_BATCH = 1000;
  private static final Object STOP = new Object();
  /** A progress report: heartbeat at once. */
  private static final Object BEAT = new Object();

  private final AgentServiceGrpc.AgentServiceStub stub;
  private final AgentServiceGrpc.AgentServiceBlockingStub blocking;
  private final String queue;
  private final String workerId;
  private final int maxLeases;
  private final Duration heartbeatEvery;
  private final Duration releaseDelay;
  private final Duration shutdownGrace;
  private final LeaseHandler handler;
  private final OpenTelemetry openTelemetry;
  private final BiConsumer<Lease, Failure> onFinished;
  private final ExecutorService handlers;
  private final Map<Key, String> progress = new ConcurrentHashMap<>();
  /** Who waits for a progress report's heartbeat to be answered: before it is sent, and after. */
  private final Map<Key, List<CountDownLatch>> progressDue = new ConcurrentHashMap<>();
  private final Map<Key, List<CountDownLatch>> progressSent = new HashMap<>(); // the loop thread's
  private final Map<Key, ByteString> results = new ConcurrentHashMap<>();
  private final BlockingQueue<Object> events = new LinkedBlockingQueue<>();
  private final CountDownLatch stopSignal = new CountDownLatch(1);
  private final CountDownLatch finished = new CountDownLatch(1);
  private volatile boolean stopping;
  private volatile Thread loop;

  // Owned by the loop thread, the only one that writes to the stream.
  private final Map<Key, Run> held = new HashMap<>();
  private final Map<Key, SessionCompletion> unanswered = new LinkedHashMap<>();
  private final Map<Key, SessionRelease> releasing = new LinkedHashMap<>();
  private StreamObserver<SessionRequest> requests;
  private boolean halfClosed;
  private boolean stopBegun;

  private record Key(String name, long token) {
    static Key of(Lease l) {
      return new Key(l.getName(), l.getToken());
    }

    static Key of(LeaseRef r) {
      return new Key(r.getName(), r.getToken());
    }
  }

  private static final class Run {
    final Lease lease;
    final Cancellation cancellation = new Cancellation();
    /** Taken by whichever comes first: the handler returning (then it is completed) or the stop. */
    final AtomicBoolean settled = new AtomicBoolean();
    /** Cancelled by the stop before it returned (set by the loop thread). */
    boolean stopped;
    volatile Future<?> future;

    Run(Lease lease) {
      this.lease = lease;
    }
  }

  /** What reaches the loop: a server message, a stream's end, a handler's end, or STOP. */
  private record Received(int stream, SessionResponse response) {}

  private record Ended(int stream, Throwable error) {}

  /** A handler's end: {@code stopped} when the stop cancelled it first (released, not completed). */
  private record Finished(Run run, Failure failure, WaitFor waitFor, boolean stopped) {}

  private Worker(Builder b, LeaseHandler handler) {
    this.stub = AgentServiceGrpc.newStub(b.channel);
    this.blocking = AgentServiceGrpc.newBlockingStub(b.channel);
    this.queue = b.queue;
    this.workerId = b.workerId;
    this.maxLeases = Math.max(1, b.maxLeases);
    this.heartbeatEvery = b.heartbeatEvery;
    this.releaseDelay = b.releaseDelay;
    this.shutdownGrace = b.shutdownGrace;
    this.handler = Objects.requireNonNull(handler, "handler");
    this.openTelemetry = b.openTelemetry;
    this.onFinished = b.onFinished;
    AtomicInteger n = new AtomicInteger();
    this.handlers = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "baton-" + workerId + "-handler-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * A worker of {@code queue} on {@code channel}: a shared {@link BatonClient} (its TLS, token,
   * keepalive) or any Channel, never shut down here: close the worker first, then the client.
   */
  public static Builder builder(Channel channel, String queue, String workerId) {
    return new Builder(channel, queue, workerId);
  }

  /**
   * Reports {@code value} (a small text, at most 256 bytes) for the run of {@code lease}: the
   * worker heartbeats at once, carrying it; GetAgent shows the last one while the run is held, and
   * WatchAgent streams it ({@link Producer#watch}).
   */
  public void reportProgress(Lease lease, String value) {
    progress.put(Key.of(lease), value);
    events.add(BEAT);
  }

  /**
   * {@link #reportProgress}, then waits (at most 10 s) until Baton answered the heartbeat carrying
   * it: what the handler does next (a step) comes after it.
   */
  public void sendProgress(Lease lease, String value) throws InterruptedException {
    CountDownLatch answered = new CountDownLatch(1);
    progressDue.computeIfAbsent(Key.of(lease), k -> new java.util.concurrent.CopyOnWriteArrayList<>()).add(answered);
    reportProgress(lease, value);
    answered.await(10, TimeUnit.SECONDS);
  }

  /** Lets those waiting for this lease's sent (or, {@code ended}, any) progress go on. */
  private void progressAnswered(Key key, boolean ended) {
    List<CountDownLatch> waiting = progressSent.remove(key);
    if (waiting != null) waiting.forEach(CountDownLatch::countDown);
    waiting = ended ? progressDue.remove(key) : null;
    if (waiting != null) waiting.forEach(CountDownLatch::countDown);
  }

  /**
   * Sets the result of the run of {@code lease}, sent with its completion when the handler returns
   * (a success): {@link Producer#awaitResult} answers it, and the agent's children see it in their
   * leases' {@code getParentsList()} (as this lease shows its own parents' results).
   */
  public void setResult(Lease lease, byte[] result) {
    results.put(Key.of(lease), ByteString.copyFrom(result));
  }

  /**
   * Records {@code step} of the run of {@code lease} with its result (RecordStep, fenced by the
   * lease's token): a retried run's lease carries it ({@link #recordedStep}). A step recorded
   * already keeps its first result ({@code getRecorded()} false); a lost lease throws
   * FAILED_PRECONDITION (LEASE_LOST).
   */
  public RecordStepResponse recordStep(Lease lease, String step, byte[] result) {
    return blocking.withDeadlineAfter(10, TimeUnit.SECONDS).recordStep(RecordStepRequest.newBuilder()
        .setQueue(lease.getQueue()).setName(lease.getName()).setToken(lease.getToken()).setStep(step)
        .setResult(ByteString.copyFrom(result)).build());
  }

  /** The result of {@code step} as an earlier attempt of this run recorded it, or empty. */
  public static Optional<ByteString> recordedStep(Lease lease, String step) {
    return lease.getStepsList().stream().filter(s -> s.getName().equals(step)).map(Step::getResult).findFirst();
  }

  /** Runs the loop on a new (non-daemon) thread; returns at once. */
  public Worker start() {
    Thread t = new Thread(this::run, "baton-" + workerId + "-session");
    loop = t;
    t.start();
    return this;
  }

  /** Runs the loop on this thread until {@link #close()}. */
  public void run() {
    loop = Thread.currentThread();
    try {
      work();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      handlers.shutdownNow();
      finished.countDown();
    }
  }

  /** Stops gracefully (see the class doc) and waits until the worker is done. */
  @Override
  public void close() {
    stopping = true;
    stopSignal.countDown();
    events.add(STOP);
    if (loop == null) {
      handlers.shutdownNow();
      return;
    }
    try {
      finished.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Works on Session streams until a stop has completed, released and half-closed. */
  private void work() throws InterruptedException {
    Backoff backoff = new Backoff();
    long every = Math.max(10, heartbeatEvery.toMillis()) * 1_000_000;
    long handlersBy = 0; // stopping: handlers still running then are released anyway
    long giveUpAt = 0; // stopping: answers are awaited until then
    for (int stream = 1; ; stream++) {
      int id = stream;
      Context.CancellableContext call = Context.ROOT.withCancellation();
      Context previous = call.attach();
      try {
        requests = stub.session(new StreamObserver<>() {
          @Override public void onNext(SessionResponse r) { events.add(new Received(id, r)); }
          @Override public void onError(Throwable t) { events.add(new Ended(id, t)); }
          @Override public void onCompleted() { events.add(new Ended(id, null)); }
        });
      } finally {
        call.detach(previous);
      }
      halfClosed = false;
      requests.onNext(SessionRequest.newBuilder()
          .setOpen(SessionOpen.newBuilder().setQueue(queue).setWorkerId(workerId))
          .setCredit(stopping ? 0 : Math.max(0, maxLeases - held.size()))
          .addAllCompletions(unanswered.values()).addAllReleases(releasing.values()).build());
      long nextBeat = System.nanoTime() + every;
      Throwable ended = null;
      while (true) {
        long now = System.nanoTime();
        if (stopping && !stopBegun) {
          stopBegun = true;
          handlersBy = now + shutdownGrace.toNanos();
          giveUpAt = handlersBy + shutdownGrace.toNanos();
          cancelRunning();
        }
        if (stopBegun) {
          if (now - handlersBy >= 0 && !held.isEmpty()) releaseAbandoned();
          if (held.isEmpty() && unanswered.isEmpty() && releasing.isEmpty() && !halfClosed) {
            requests.onCompleted();
            halfClosed = true;
          }
          if (now - giveUpAt >= 0) {
            LOG.log(Level.WARNING, "stopping: {0} completions and {1} releases unanswered after the grace; leaving them",
                new Object[] {unanswered.size(), releasing.size()});
            call.cancel(null);
            return;
          }
        }
        if (now - nextBeat >= 0) {
          heartbeat();
          nextBeat = now + every;
        }
        long wake = !stopBegun ? nextBeat : Math.min(nextBeat, now - handlersBy >= 0 ? giveUpAt : handlersBy);
        Object e = events.poll(Math.max(1, (wake - now) / 1_000_000), TimeUnit.MILLISECONDS);
        if (e == BEAT) {
          heartbeat();
        } else if (e instanceof Received r && r.stream() == id) {
          backoff.reset();
          answered(r.response());
        } else if (e instanceof Finished f) {
          SessionRequest.Builder m = SessionRequest.newBuilder();
          finish(f, m);
          // Everything else that finished by now goes in the same message.
          while (m.getCompletionsCount() + m.getReleasesCount() < MAX_BATCH && events.peek() instanceof Finished) {
            finish((Finished) events.poll(), m);
          }
          send(m);
        } else if (e instanceof Ended end && end.stream() == id) {
          ended = end.error();
          break;
        }
      }
      call.cancel(null);
      if (stopBegun && held.isEmpty() && unanswered.isEmpty() && releasing.isEmpty()) return;
      long delay = backoff.next(ended);
      LOG.log(Level.WARNING, "session of {0} ended ({1}); opening another in {2} ms",
          new Object[] {queue, ended == null ? "closed by the server" : Status.fromThrowable(ended), delay});
      if (!stopBegun) {
        stopSignal.await(delay, TimeUnit.MILLISECONDS); // a stop opens the next one at once, to send what is left
      } else {
        long left = giveUpAt - System.nanoTime();
        if (left <= 0) return;
        TimeUnit.NANOSECONDS.sleep(Math.min(left, TimeUnit.MILLISECONDS.toNanos(delay)));
      }
    }
  }

  private void send(SessionRequest.Builder m) {
    if (m.getCompletionsCount() + m.getReleasesCount() + m.getHeartbeatsCount() == 0 && m.getCredit() == 0) return;
    if (halfClosed) {
      LOG.log(Level.WARNING, "session of {0} already half-closed; not sent: {1}", new Object[] {queue, m});
      return;
    }
    requests.onNext(m.build());
  }

  private void heartbeat() {
    SessionRequest.Builder m = SessionRequest.newBuilder();
    for (Run run : held.values()) {
      if (run.cancellation.isCancelled()) continue;
      String p = progress.remove(Key.of(run.lease));
      List<CountDownLatch> waiting = p == null ? null : progressDue.remove(Key.of(run.lease));
      if (waiting != null) progressSent.computeIfAbsent(Key.of(run.lease), k -> new ArrayList<>()).addAll(waiting);
      m.addHeartbeats(SessionLease.newBuilder().setName(run.lease.getName()).setToken(run.lease.getToken())
          .setProgress(p == null ? "" : p));
    }
    send(m);
  }

  private void answered(SessionResponse r) {
    for (CompleteResult c : r.getCompletedList()) {
      unanswered.remove(new Key(c.getName(), c.getToken()));
      if (c.getLeaseLost()) {
        LOG.log(Level.WARNING, "completion of {0} token {1} refused: the lease was lost", new Object[] {c.getName(), c.getToken()});
      }
    }
    for (LeaseRef ref : r.getReleasedList()) releasing.remove(Key.of(ref));
    for (var extended : r.getExtendedList()) progressAnswered(new Key(extended.getName(), extended.getToken()), false);
    for (LeaseRef lost : r.getLostList()) progressAnswered(Key.of(lost), false);
    List<LeaseRef> cancelled = r.getCancelledList();
    for (LeaseRef lost : r.getLostList()) {
      Key key = Key.of(lost);
      releasing.remove(key);
      Run run = held.get(key);
      Cancellation.Reason why = cancelled.stream().anyMatch(c -> Key.of(c).equals(key))
          ? Cancellation.Reason.RUN_CANCELLED : Cancellation.Reason.LEASE_LOST;
      if (run != null && run.cancellation.cancel(why)) {
        LOG.log(Level.WARNING, "lease {0}/{1} token {2} lost; cancelling its handler",
            new Object[] {lost.getQueue(), lost.getName(), lost.getToken()});
        Future<?> f = run.future;
        if (f != null) f.cancel(true);
      }
    }
    SessionRequest.Builder m = SessionRequest.newBuilder();
    for (Lease lease : r.getLeasesList()) {
      if (stopBegun) {
        release(lease, m); // pushed before the server saw the stop: not run
        continue;
      }
      Run run = new Run(lease);
      held.put(Key.of(lease), run);
      run.future = handlers.submit(() -> {
        Finished f = invoke(run);
        if (onFinished != null && !f.stopped() && f.waitFor() == null && !run.cancellation.isCancelled()) {
          try {
            onFinished.accept(lease, f.failure());
          } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "onFinished threw", e);
          }
        }
        events.add(f);
      });
    }
    send(m);
  }

  /** A handler that ended, into the next message: its completion (or, stopped, its release). */
  private void finish(Finished f, SessionRequest.Builder m) {
    Run run = f.run();
    Lease lease = run.lease;
    Key key = Key.of(lease);
    if (held.remove(key) == null) return; // released already: the stop gave up on it
    progress.remove(key);
    progressAnswered(key, true);
    ByteString result = results.remove(key);
    if (!stopBegun) m.setCredit(m.getCredit() + 1);
    if (f.stopped()) {
      release(lease, m);
    } else if (!run.cancellation.isCancelled()) {
      SessionCompletion.Builder c = SessionCompletion.newBuilder().setName(lease.getName()).setToken(lease.getToken());
      Failure failure = f.failure();
      if (f.waitFor() != null) {
        c.setWaitFor(f.waitFor().toProto());
      } else if (failure == null) {
        c.setOutcome(Outcome.OUTCOME_SUCCESS);
        if (result != null) c.setResult(result);
      } else {
        c.setOutcome(failure.outcome()).setMessage(String.valueOf(failure.getMessage()))
            .setErrorClass(failure.errorClass()).setHttpStatus(failure.httpStatus());
        failure.retryAfter().ifPresent(d -> c.setRetryAfter(Durations.of(d)));
      }
      SessionCompletion completion = c.build();
      unanswered.put(key, completion);
      m.addCompletions(completion);
    }
  }

  private void release(Lease lease, SessionRequest.Builder m) {
    SessionRelease.Builder r = SessionRelease.newBuilder().setName(lease.getName()).setToken(lease.getToken());
    if (releaseDelay != null) r.setDelay(Durations.of(releaseDelay));
    releasing.put(Key.of(lease), r.build());
    m.addReleases(r);
  }

  /** The stop: handlers that have not returned yet are cancelled (their leases released when they end). */
  private void cancelRunning() {
    for (Run run : held.values()) {
      if (run.settled.compareAndSet(false, true)) {
        run.stopped = true;
        if (run.cancellation.cancel(Cancellation.Reason.SHUTDOWN)) {
          Future<?> f = run.future;
          if (f != null) f.cancel(true);
        }
      }
    }
  }

  /**
   * The grace is over: stopped handlers still running are left behind and their leases released
   * (one that returned before the stop is awaited: its end is on its way to be completed).
   */
  private void releaseAbandoned() {
    SessionRequest.Builder m = SessionRequest.newBuilder();
    for (var it = held.values().iterator(); it.hasNext(); ) {
      Run run = it.next();
      if (!run.stopped) continue;
      release(run.lease, m);
      it.remove();
    }
    if (m.getReleasesCount() > 0) {
      LOG.log(Level.WARNING, "{0} handlers still running after the shutdown grace; releasing their leases", m.getReleasesCount());
    }
    send(m);
  }

  /**
   * Runs the handler inside the run's span (current while it runs), and settles the run: a handler
   * that ended before the stop cancelled it is completed with the failure its exception maps to
   * (null: success), whatever the stop does next.
   */
  private Finished invoke(Run run) {
    Lease lease = run.lease;
    Span span = Tracing.startRun(Tracing.tracer(openTelemetry), queue, lease);
    Throwable thrown = null;
    Failure failure = null;
    WaitFor waitFor = null;
    try (Scope ignored = span.makeCurrent()) {
      handler.handle(lease, run.cancellation);
    } catch (WaitFor w) {
      waitFor = w;
    } catch (Throwable t) {
      thrown = t;
      failure = Outcomes.classify(t);
    }
    boolean stopped = !run.settled.compareAndSet(false, true);
    Outcome outcome = failure == null ? Outcome.OUTCOME_SUCCESS
        : failure.outcome() == Outcome.OUTCOME_UNSPECIFIED ? null : failure.outcome();
    Tracing.end(span, run.cancellation.reason(), thrown, outcome, failure == null ? null : failure.getMessage());
    return new Finished(run, failure, waitFor, stopped);
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
    private Duration heartbeatEvery = Duration.ofSeconds(3);
    private Duration releaseDelay;
    private Duration shutdownGrace = Duration.ofSeconds(10);
    private OpenTelemetry openTelemetry;
    private BiConsumer<Lease, Failure> onFinished;

    private Builder(Channel channel, String queue, String workerId) {
      this.channel = Objects.requireNonNull(channel, "channel");
      this.queue = Objects.requireNonNull(queue, "queue");
      this.workerId = Objects.requireNonNull(workerId, "workerId");
    }

    /** The most handlers running at once: the credit granted to the server (default 1). */
    public Builder maxLeases(int n) {
      this.maxLeases = n;
      return this;
    }

    /**
     * How often held leases are extended (default 3 s: three beats within the server's default
     * orphan threshold); well under the agents' timeout.
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

    /**
     * How long close() waits for cancelled handlers before releasing their leases anyway, and
     * then for Baton's answers (default 10 s each).
     */
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

    /**
     * Called on the handler's thread when a handler has ended and its result is settled: it will
     * be completed (failure null: success), whatever happens next, a stop included. Not called for
     * a run that was cancelled (lease lost, CancelRun, stop), nor for one that ended by waiting
     * ({@link WaitFor}).
     */
    public Builder onFinished(BiConsumer<Lease, Failure> onFinished) {
      this.onFinished = onFinished;
      return this;
    }

    public Worker build(LeaseHandler handler) {
      return new Worker(this, handler);
    }
  }
}

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
import io.grpc.Channel;
import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * A worker of one queue, modelled on Baton's Rust {@code baton::worker::Worker}: long-poll Acquire
 * → run the handler → Heartbeat while it runs → Complete with the outcome the handler's result
 * maps to ({@link Outcomes#classify(Throwable)}). A lease reported lost cancels its handler (its
 * thread is interrupted; its result would be refused anyway); {@link #close()} stops acquiring,
 * cancels running handlers and Releases their leases, so another worker takes them at once.
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
  private final String queue;
  private final String workerId;
  private final int maxLeases;
  private final Duration wait;
  private final Duration heartbeatEvery;
  private final Duration releaseDelay;
  private final Duration shutdownGrace;
  private final LeaseHandler handler;

  private final Map<Key, Run> held = new ConcurrentHashMap<>();
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
    this.queue = b.queue;
    this.workerId = b.workerId;
    this.maxLeases = Math.max(1, b.maxLeases);
    this.wait = b.wait;
    this.heartbeatEvery = b.heartbeatEvery;
    this.releaseDelay = b.releaseDelay;
    this.shutdownGrace = b.shutdownGrace;
    this.handler = Objects.requireNonNull(handler, "handler");
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
    long every = Math.max(10, heartbeatEvery.toMillis());
    beats.scheduleWithFixedDelay(this::heartbeat, every, every, TimeUnit.MILLISECONDS);
    try {
      acquireContext.run(this::acquireLoop);
    } finally {
      shutdown();
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
      Failure failure = null;
      try {
        handler.handle(lease, run.cancellation);
      } catch (Throwable t) {
        failure = run.cancellation.isCancelled() ? null : Outcomes.classify(t);
      }
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

  private void complete(Lease lease, Failure failure) {
    CompleteRequest.Builder request = CompleteRequest.newBuilder()
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
      refs.add(LeaseRef.newBuilder().setQueue(run.lease.getQueue()).setName(run.lease.getName()).setToken(run.lease.getToken()).build());
    }
    HeartbeatResponse response;
    try {
      response = stub.withDeadlineAfter(Math.max(5_000, heartbeatEvery.toMillis()), TimeUnit.MILLISECONDS)
          .heartbeat(HeartbeatRequest.newBuilder().setWorkerId(workerId).addAllLeases(refs).build());
    } catch (StatusRuntimeException e) {
      if (!stopping.get()) LOG.log(Level.WARNING, "heartbeat failed: {0}", e.getStatus());
      return;
    }
    for (LeaseRef lost : response.getLostList()) {
      Run run = held.remove(new Key(lost.getName(), lost.getToken()));
      if (run != null && run.cancellation.cancel(Cancellation.Reason.LEASE_LOST)) {
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

    /** How long close() waits for cancelled handlers before releasing (default 10 s). */
    public Builder shutdownGrace(Duration d) {
      this.shutdownGrace = d;
      return this;
    }

    public Worker build(LeaseHandler handler) {
      return new Worker(this, handler);
    }
  }
}

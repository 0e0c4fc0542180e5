package dev.baton.client;

import dev.baton.v1.AckRequest;
import dev.baton.v1.ScheduleServiceGrpc;
import dev.baton.v1.SubscribeRequest;
import dev.baton.v1.SubscribeResponse;
import io.grpc.Channel;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.Iterator;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Subscribes to one receiver as one consumer and runs a {@link MessageHandler} per delivery on a
 * pool thread, at most {@code maxInFlight} at once.
 *
 * <ul>
 *   <li>The handler returns: the message is acked (an Ack refused as LEASE_LOST — the handler
 *       outlived the ack timeout and the message went out again — is logged, counted in
 *       {@link #lateAcks()}).
 *   <li>The handler throws: the message is not acked; Baton delivers it again after its ack
 *       timeout (it keeps one of this consumer's maxInFlight places until then). The failure is
 *       logged, passed to {@link Listener#failed} and counted in {@link #failed()}.
 *   <li>The stream ends (the server shut down) or fails: {@link Listener#disconnected}, then it
 *       subscribes again after a backoff (the server's pushback hint, else 100 ms doubling up to
 *       maxBackoff, back to 100 ms after a delivery), until closed. INVALID_ARGUMENT is not
 *       retried: {@link #run()} throws it (after {@link #start()}: see {@link #failure()}).
 *   <li>{@link #close()}: stops reading at once; running handlers get {@code shutdownGrace} to
 *       finish (acked when they return), then are interrupted ({@link Cancellation.Reason#SHUTDOWN})
 *       and get as long again; a handler still running then is abandoned. Unacked messages come
 *       back after the ack timeout. Do not call close() from a handler.
 * </ul>
 *
 * <pre>{@code
 * try (Subscriber sub = Subscriber.builder(channel, "billing", "biller-1").maxInFlight(10)
 *     .build((message, cancellation) -> bill(message.getPayload()))) {
 *   sub.start();
 *   …
 * }
 * }</pre>
 */
public final class Subscriber implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(Subscriber.class.getName());

  /** Called on the subscriber's threads; keep it short. */
  public interface Listener {
    /** A handler threw: the message is not acked and comes back after the ack timeout. */
    default void failed(SubscribeResponse message, Throwable error) {}

    /** The stream ended (error null: the server shut down) or failed; subscribing again after delay. */
    default void disconnected(StatusRuntimeException error, Duration delay) {}
  }

  private final ScheduleServiceGrpc.ScheduleServiceBlockingStub stub;
  private final String receiver;
  private final String consumerId;
  private final int maxInFlight;
  private final Duration shutdownGrace;
  private final Duration maxBackoff;
  private final Listener listener;
  private final MessageHandler handler;

  private final ExecutorService handlers;
  private final Semaphore slots;
  private final Map<Long, Run> running = new ConcurrentHashMap<>();
  private final AtomicLong runIds = new AtomicLong();
  private final AtomicBoolean stopping = new AtomicBoolean();
  private final CountDownLatch stopped = new CountDownLatch(1);
  private volatile Context.CancellableContext stream;
  private volatile Thread loop;
  private volatile RuntimeException failure;
  private final Object done = new Object();
  private boolean finished;
  private final AtomicLong acked = new AtomicLong();
  private final AtomicLong failed = new AtomicLong();
  private final AtomicLong lateAcks = new AtomicLong();
  private final AtomicLong reconnects = new AtomicLong();

  private static final class Run {
    final Cancellation cancellation = new Cancellation();
    volatile Future<?> future;
  }

  private Subscriber(Builder b, MessageHandler handler) {
    this.stub = ScheduleServiceGrpc.newBlockingStub(b.channel);
    this.receiver = b.receiver;
    this.consumerId = b.consumerId;
    this.maxInFlight = Math.max(1, b.maxInFlight);
    this.shutdownGrace = b.shutdownGrace;
    this.maxBackoff = b.maxBackoff;
    this.listener = b.listener;
    this.handler = Objects.requireNonNull(handler, "handler");
    this.slots = new Semaphore(maxInFlight);
    AtomicInteger n = new AtomicInteger();
    this.handlers = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "baton-" + consumerId + "-handler-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
  }

  public static Builder builder(Channel channel, String receiver, String consumerId) {
    return new Builder(channel, receiver, consumerId);
  }

  /**
   * A subscriber on a shared {@link BatonClient} (its TLS, token, keepalive; the stream gets no
   * default deadline). close() never shuts the client's channel down: close the subscriber first.
   */
  public static Builder builder(BatonClient client, String receiver, String consumerId) {
    return new Builder(Objects.requireNonNull(client, "client").channel(), receiver, consumerId);
  }

  /** Messages handled and acked. */
  public long acked() {
    return acked.get();
  }

  /** Handler failures. */
  public long failed() {
    return failed.get();
  }

  /** Acks refused because the message had been delivered again. */
  public long lateAcks() {
    return lateAcks.get();
  }

  /** Subscribes after the first. */
  public long reconnects() {
    return reconnects.get();
  }

  /** What ended a loop started with {@link #start()} early (INVALID_ARGUMENT), if anything. */
  public java.util.Optional<RuntimeException> failure() {
    return java.util.Optional.ofNullable(failure);
  }

  /** Runs the loop on a new (non-daemon) thread; returns at once. */
  public Subscriber start() {
    Thread t = new Thread(() -> {
      try {
        run();
      } catch (RuntimeException e) {
        failure = e;
        LOG.log(Level.SEVERE, "subscription of " + receiver + " refused", e);
      }
    }, "baton-" + consumerId + "-subscribe");
    loop = t;
    t.start();
    return this;
  }

  /** Runs the loop on this thread until {@link #close()}; throws a refused (INVALID_ARGUMENT) subscription. */
  public void run() {
    loop = Thread.currentThread();
    try {
      subscribeLoop();
    } finally {
      drain();
    }
  }

  /** Stops (see the class doc) and waits until handlers are done or abandoned. */
  @Override
  public void close() {
    stopping.set(true);
    stopped.countDown();
    Context.CancellableContext s = stream;
    if (s != null) s.cancel(null);
    if (loop == null) {
      drain();
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

  private void subscribeLoop() {
    SubscribeRequest request = SubscribeRequest.newBuilder().setReceiver(receiver).setConsumerId(consumerId)
        .setMaxInFlight(maxInFlight).build();
    long backoff = 100;
    for (boolean first = true; !stopping.get(); first = false) {
      if (!first) reconnects.incrementAndGet();
      Context.CancellableContext context = Context.ROOT.withCancellation();
      stream = context;
      if (stopping.get()) {
        context.cancel(null);
        return;
      }
      StatusRuntimeException error = null;
      Context previous = context.attach();
      try {
        Iterator<SubscribeResponse> messages = stub.subscribe(request);
        while (messages.hasNext()) {
          SubscribeResponse message = messages.next();
          backoff = 100;
          // A free place first (the server keeps to maxInFlight too, but a redelivery to this
          // consumer can come while a slow handler still holds its message).
          if (!acquireSlot()) return;
          start(message);
        }
      } catch (StatusRuntimeException e) {
        if (stopping.get()) return;
        if (e.getStatus().getCode() == Status.Code.INVALID_ARGUMENT) throw e;
        error = e;
      } finally {
        context.detach(previous);
        context.cancel(null);
      }
      if (stopping.get()) return;
      long delay = error == null ? backoff : Worker.pushbackMs(error, backoff);
      if (error == null) LOG.log(Level.INFO, "subscription of {0} ended (server shutdown); subscribing again", receiver);
      else LOG.log(Level.WARNING, "subscription of {0} failed: {1}; subscribing again in {2} ms", new Object[] {receiver, error.getStatus(), delay});
      listener.disconnected(error, Duration.ofMillis(delay));
      try {
        if (stopped.await(delay, TimeUnit.MILLISECONDS)) return;
      } catch (InterruptedException e) {
        return;
      }
      backoff = Math.min(backoff * 2, Math.max(100, maxBackoff.toMillis()));
    }
  }

  private boolean acquireSlot() {
    while (!stopping.get()) {
      try {
        if (slots.tryAcquire(100, TimeUnit.MILLISECONDS)) return true;
      } catch (InterruptedException e) {
        return false;
      }
    }
    return false;
  }

  private void start(SubscribeResponse message) {
    long id = runIds.incrementAndGet();
    Run run = new Run();
    running.put(id, run);
    run.future = handlers.submit(() -> {
      try {
        handle(message, run);
      } finally {
        running.remove(id);
        slots.release();
      }
    });
  }

  private void handle(SubscribeResponse message, Run run) {
    try {
      handler.handle(message, run.cancellation);
    } catch (Throwable t) {
      if (run.cancellation.isCancelled()) {
        LOG.log(Level.WARNING, "handler of {0}/{1} cancelled (stopping); not acked", new Object[] {receiver, message.getId()});
        return;
      }
      failed.incrementAndGet();
      LOG.log(Level.WARNING, "handler of {0}/{1} (delivery {2}) failed: {3}; not acked, Baton delivers it again after its ack timeout",
          new Object[] {receiver, message.getId(), message.getDeliveryCount(), t});
      try {
        listener.failed(message, t);
      } catch (RuntimeException e) {
        LOG.log(Level.WARNING, "a failed listener threw", e);
      }
      return;
    }
    AckRequest request = AckRequest.newBuilder().setReceiver(receiver).setId(message.getId()).setToken(message.getToken()).build();
    try {
      Claim.retryUnavailable(() -> stub.withDeadlineAfter(10, TimeUnit.SECONDS).ack(request));
      acked.incrementAndGet();
    } catch (StatusRuntimeException e) {
      if (Worker.isLeaseLost(e)) {
        lateAcks.incrementAndGet();
        LOG.log(Level.WARNING, "ack of {0}/{1} token {2} refused: the message was delivered again (handler slower than the ack timeout)",
            new Object[] {receiver, message.getId(), message.getToken()});
      } else {
        LOG.log(Level.WARNING, "ack of {0}/{1} failed: {2}", new Object[] {receiver, message.getId(), e.getStatus()});
      }
    }
  }

  private void drain() {
    synchronized (done) {
      if (finished) return;
    }
    stopping.set(true);
    stopped.countDown();
    handlers.shutdown();
    try {
      if (!handlers.awaitTermination(shutdownGrace.toMillis(), TimeUnit.MILLISECONDS)) {
        for (Run run : running.values()) {
          run.cancellation.cancel(Cancellation.Reason.SHUTDOWN);
          Future<?> f = run.future;
          if (f != null) f.cancel(true);
        }
        if (!handlers.awaitTermination(shutdownGrace.toMillis(), TimeUnit.MILLISECONDS)) {
          LOG.warning("handlers still running after twice the shutdown grace; abandoning them");
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    synchronized (done) {
      finished = true;
      done.notifyAll();
    }
  }

  /** Settings of a {@link Subscriber}. */
  public static final class Builder {
    private final Channel channel;
    private final String receiver;
    private final String consumerId;
    private int maxInFlight = 1;
    private Duration shutdownGrace = Duration.ofSeconds(10);
    private Duration maxBackoff = Duration.ofSeconds(5);
    private Listener listener = new Listener() {};

    private Builder(Channel channel, String receiver, String consumerId) {
      this.channel = Objects.requireNonNull(channel, "channel");
      this.receiver = Objects.requireNonNull(receiver, "receiver");
      this.consumerId = Objects.requireNonNull(consumerId, "consumerId");
    }

    /** Most handlers running at once, and the server's bound on unacked messages (default 1). */
    public Builder maxInFlight(int n) {
      this.maxInFlight = n;
      return this;
    }

    /** How long close() lets running handlers finish before interrupting them (default 10 s). */
    public Builder shutdownGrace(Duration d) {
      this.shutdownGrace = Objects.requireNonNull(d);
      return this;
    }

    /** Longest pause between two subscribes (default 5 s). */
    public Builder maxBackoff(Duration d) {
      this.maxBackoff = Objects.requireNonNull(d);
      return this;
    }

    public Builder listener(Listener l) {
      this.listener = Objects.requireNonNull(l);
      return this;
    }

    public Subscriber build(MessageHandler handler) {
      return new Subscriber(this, handler);
    }
  }
}

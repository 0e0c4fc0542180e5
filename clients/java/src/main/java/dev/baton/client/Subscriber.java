package dev.baton.client;

import dev.baton.v1.AckBatchRequest;
import dev.baton.v1.AckBatchResponse;
import dev.baton.v1.AckRequest;
import dev.baton.v1.ReceiveAck;
import dev.baton.v1.ReceiveRequest;
import dev.baton.v1.ReceiveResponse;
import dev.baton.v1.ScheduleServiceGrpc;
import dev.baton.v1.SubscribeRequest;
import dev.baton.v1.SubscribeResponse;
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
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
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
 * <p>It runs on one Receive stream: Baton pushes due messages, and the acks of every handler that
 * returned meanwhile go back on it in one message.
 *
 * <ul>
 *   <li>The handler returns: the message is acked, counted in {@link #acked()} once Baton confirms
 *       it (an ack refused as stale — the handler outlived the ack timeout and the message went out
 *       again — is logged, counted in {@link #lateAcks()}). Acks a broken stream did not answer go
 *       again on the next one (when closing between streams, by one AckBatch call).
 *   <li>The handler throws: the message is not acked; Baton delivers it again after its ack
 *       timeout (it keeps one of this consumer's maxInFlight places until then). The failure is
 *       logged, passed to {@link Listener#failed} and counted in {@link #failed()}.
 *   <li>The stream ends (the server shut down) or fails: {@link Listener#disconnected}, then it
 *       opens another after a backoff ({@code Backoff}: the server's pushback hint, else doubling
 *       up to maxBackoff, reset by a delivery), until closed. INVALID_ARGUMENT is not
 *       retried: {@link #run()} throws it (after {@link #start()}: see {@link #failure()}).
 *   <li>{@link #close()}: stops reading at once; running handlers get {@code shutdownGrace} to
 *       finish (acked when they return; the stream is then half-closed and Baton's answers
 *       awaited), then are interrupted ({@link Cancellation.Reason#SHUTDOWN})
 *       and get as long again; a handler still running then is abandoned. Unacked messages come
 *       back after the ack timeout. Do not call close() from a handler.
 * </ul>
 *
 * <p>Each delivery is handled inside an OpenTelemetry span {@code process <receiver>} (CONSUMER,
 * scope {@code baton-client}), current while the handler runs, a child of the producer's trace
 * context ({@code SubscribeResponse.traceparent}) when the message has one. Recorded by the global
 * SDK, or the one given to {@link Builder#openTelemetry}; a no-op without one.
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
  private final ScheduleServiceGrpc.ScheduleServiceStub asyncStub;
  private final String receiver;
  private final String consumerId;
  private final int maxInFlight;
  private final Duration shutdownGrace;
  private final Duration maxBackoff;
  private final Listener listener;
  private final MessageHandler handler;
  private final OpenTelemetry openTelemetry;

  private final ExecutorService handlers;
  private final Semaphore slots;
  private final Map<Long, Run> running = new ConcurrentHashMap<>();
  private final AtomicLong runIds = new AtomicLong();
  private final AtomicBoolean stopping = new AtomicBoolean();
  private final CountDownLatch stopped = new CountDownLatch(1);
  private volatile Thread loop;
  private volatile RuntimeException failure;
  private final CountDownLatch finished = new CountDownLatch(1);
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
    this.asyncStub = ScheduleServiceGrpc.newStub(b.channel);
    this.receiver = b.receiver;
    this.consumerId = b.consumerId;
    this.maxInFlight = Math.max(1, b.maxInFlight);
    this.shutdownGrace = b.shutdownGrace;
    this.maxBackoff = b.maxBackoff;
    this.listener = b.listener;
    this.handler = Objects.requireNonNull(handler, "handler");
    this.openTelemetry = b.openTelemetry;
    this.slots = new Semaphore(maxInFlight);
    AtomicInteger n = new AtomicInteger();
    this.handlers = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "baton-" + consumerId + "-handler-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * A subscriber on {@code channel}: a shared {@link BatonClient} (its TLS, token, keepalive; the
   * stream gets no default deadline) or any Channel, never shut down here: close the subscriber first.
   */
  public static Builder builder(Channel channel, String receiver, String consumerId) {
    return new Builder(channel, receiver, consumerId);
  }

  /** Messages handled and acked (on the stream: acks Baton confirmed). */
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
      receiveLoop();
    } finally {
      drain();
    }
  }

  // --- the Receive stream ----------------------------------------------------------------------

  /** Acks in one message at most (the server's default limits.max_batch). */
  private static final int MAX_ACKS = 1000;

  private record Key(String id, long token) {}

  /** What reaches the receive loop: a server message, the stream's end, or a handler's success. */
  private record Received(int stream, ReceiveResponse response) {}

  private record Ended(int stream, Throwable error) {}

  private record Handled(Key key) {}

  private enum Stop { STOP }

  private final BlockingQueue<Object> events = new LinkedBlockingQueue<>();

  /**
   * Works on Receive streams until close(). Every event is handled on this thread, which alone writes to the stream. Acks written and not
   * yet answered are kept in {@code unanswered} (true: written again on a newer stream, so a
   * "lost" answer may only mean an earlier stream applied it).
   */
  private void receiveLoop() {
    Map<Key, Boolean> unanswered = new HashMap<>();
    Backoff backoff = new Backoff(maxBackoff);
    int stream = 0;
    for (boolean first = true; !stopping.get(); first = false) {
      if (!first) reconnects.incrementAndGet();
      int id = ++stream;
      Context.CancellableContext callContext = Context.ROOT.withCancellation();
      StreamObserver<ReceiveResponse> responses = new StreamObserver<>() {
        @Override public void onNext(ReceiveResponse r) { events.add(new Received(id, r)); }
        @Override public void onError(Throwable t) { events.add(new Ended(id, t)); }
        @Override public void onCompleted() { events.add(new Ended(id, null)); }
      };
      StreamObserver<ReceiveRequest> requests;
      Context previous = callContext.attach();
      try {
        requests = asyncStub.receive(responses);
      } finally {
        callContext.detach(previous);
      }
      ReceiveRequest.Builder opening = ReceiveRequest.newBuilder().setOpen(SubscribeRequest.newBuilder()
          .setReceiver(receiver).setConsumerId(consumerId).setMaxInFlight(maxInFlight));
      for (Map.Entry<Key, Boolean> e : unanswered.entrySet()) {
        if (opening.getAcksCount() >= MAX_ACKS) break;
        e.setValue(true);
        opening.addAcks(ack(e.getKey()));
      }
      requests.onNext(opening.build());
      Throwable ended = null;
      try {
        for (boolean open = true; open; ) {
          if (stopping.get()) {
            closeReceive(requests, id, unanswered);
            return;
          }
          Object e = events.poll(100, TimeUnit.MILLISECONDS);
          if (e instanceof Received r) {
            if (r.stream() != id) continue;
            if (r.response().getMessagesCount() > 0) backoff.reset();
            answered(r.response(), unanswered);
            for (SubscribeResponse message : r.response().getMessagesList()) {
              // A free place first (a redelivery can come while a slow handler still holds its
              // message). Stopping: not handled; it comes again after its ack timeout.
              if (!acquireSlot()) break;
              start(message);
            }
          } else if (e instanceof Handled h) {
            requests.onNext(acks(h, unanswered).build());
          } else if (e instanceof Ended end && end.stream() == id) {
            ended = end.error();
            open = false;
          }
        }
      } catch (InterruptedException ie) {
        callContext.cancel(null);
        return;
      }
      callContext.cancel(null);
      Status status = ended == null ? Status.OK : Status.fromThrowable(ended);
      if (stopping.get()) break;
      if (status.getCode() == Status.Code.INVALID_ARGUMENT) throw status.asRuntimeException();
      StatusRuntimeException error = ended == null ? null : status.asRuntimeException(Status.trailersFromThrowable(ended));
      long delay = backoff.next(error);
      if (error == null) LOG.log(Level.INFO, "receive stream of {0} ended (server shutdown); opening another", receiver);
      else LOG.log(Level.WARNING, "receive stream of {0} failed: {1}; opening another in {2} ms", new Object[] {receiver, status, delay});
      listener.disconnected(error, Duration.ofMillis(delay));
      try {
        if (stopped.await(delay, TimeUnit.MILLISECONDS)) break;
      } catch (InterruptedException e) {
        break;
      }
    }
    // Closed between two streams: handlers finish (the grace), then every ack not answered goes
    // by AckBatch.
    unanswered.replaceAll((k, v) -> true);
    awaitHandlers();
    for (Object e; (e = events.poll()) != null; ) {
      if (e instanceof Handled h) unanswered.put(h.key(), false);
    }
    ackLeft(unanswered);
  }

  private static ReceiveAck ack(Key key) {
    return ReceiveAck.newBuilder().setId(key.id()).setToken(key.token()).build();
  }

  /** {@code first} and every other success queued now (up to the bound), in one message. */
  private ReceiveRequest.Builder acks(Handled first, Map<Key, Boolean> unanswered) {
    ReceiveRequest.Builder m = ReceiveRequest.newBuilder();
    for (Handled h = first; h != null; ) {
      unanswered.put(h.key(), false);
      m.addAcks(ack(h.key()));
      h = m.getAcksCount() < MAX_ACKS && events.peek() instanceof Handled ? (Handled) events.poll() : null;
    }
    return m;
  }

  private void answered(ReceiveResponse r, Map<Key, Boolean> unanswered) {
    for (ReceiveAck a : r.getAckedList()) {
      if (unanswered.remove(new Key(a.getId(), a.getToken())) != null) acked.incrementAndGet();
    }
    for (ReceiveAck a : r.getLostList()) {
      if (Boolean.FALSE.equals(unanswered.remove(new Key(a.getId(), a.getToken())))) lateAck(a.getId(), a.getToken());
    }
  }

  /** Close on a live stream: handlers finish (the grace, then interrupted), their acks are
   *  written, the stream half-closed and its answers awaited (bounded). */
  private void closeReceive(StreamObserver<ReceiveRequest> requests, int id, Map<Key, Boolean> unanswered)
      throws InterruptedException {
    long deadline = System.nanoTime() + shutdownGrace.toNanos();
    boolean interrupted = false;
    while (!running.isEmpty()) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        if (interrupted) break;
        cancelRunning();
        interrupted = true;
        deadline = System.nanoTime() + shutdownGrace.toNanos();
        continue;
      }
      Object e = events.poll(Math.max(1, left / 1_000_000), TimeUnit.MILLISECONDS);
      if (e instanceof Handled h) requests.onNext(acks(h, unanswered).build());
      else if (e instanceof Received r && r.stream() == id) answered(r.response(), unanswered);
    }
    for (Object e; (e = events.poll()) != null; ) {
      if (e instanceof Handled h) requests.onNext(acks(h, unanswered).build());
      else if (e instanceof Received r && r.stream() == id) answered(r.response(), unanswered);
    }
    requests.onCompleted();
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < end) {
      Object e = events.poll(100, TimeUnit.MILLISECONDS);
      if (e instanceof Received r && r.stream() == id) answered(r.response(), unanswered);
      if (e instanceof Ended ended && ended.stream() == id) return;
    }
  }

  /** Acks no stream answered, by AckBatch calls (the subscriber is closing). */
  private void ackLeft(Map<Key, Boolean> unanswered) {
    List<Map.Entry<Key, Boolean>> left = new ArrayList<>(unanswered.entrySet());
    for (int i = 0; i < left.size(); i += MAX_ACKS) {
      List<Map.Entry<Key, Boolean>> chunk = left.subList(i, Math.min(left.size(), i + MAX_ACKS));
      AckBatchRequest.Builder request = AckBatchRequest.newBuilder();
      for (Map.Entry<Key, Boolean> e : chunk) {
        request.addAcks(AckRequest.newBuilder().setReceiver(receiver).setId(e.getKey().id()).setToken(e.getKey().token()));
      }
      AckBatchResponse response;
      try {
        response = stub.withDeadlineAfter(10, TimeUnit.SECONDS).ackBatch(request.build());
      } catch (StatusRuntimeException e) {
        LOG.log(Level.WARNING, "{0} acks of {1} not sent ({2}); those messages come again after their ack timeout",
            new Object[] {left.size() - i, receiver, e.getStatus()});
        return;
      }
      for (int j = 0; j < chunk.size(); j++) {
        if (!response.getResults(j).getLeaseLost()) acked.incrementAndGet();
        else if (!chunk.get(j).getValue()) lateAck(chunk.get(j).getKey().id(), chunk.get(j).getKey().token());
      }
    }
  }

  private void lateAck(String id, long token) {
    lateAcks.incrementAndGet();
    LOG.log(Level.WARNING, "ack of {0}/{1} token {2} refused: the message was delivered again (handler slower than the ack timeout)",
        new Object[] {receiver, id, token});
  }

  /** Stops (see the class doc) and waits until handlers are done or abandoned. */
  @Override
  public void close() {
    stopping.set(true);
    stopped.countDown();
    events.add(Stop.STOP); // wakes the receive loop at once
    if (loop == null) {
      drain();
      return;
    }
    try {
      finished.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
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

  /** Runs the handler inside the message's span (current while it runs); what it threw, or null. */
  private Throwable invoke(SubscribeResponse message, Run run) {
    Span span = Tracing.startMessage(Tracing.tracer(openTelemetry), receiver, message);
    Throwable thrown = null;
    try (Scope ignored = span.makeCurrent()) {
      handler.handle(message, run.cancellation);
    } catch (Throwable t) {
      thrown = t;
    } finally {
      // Failed, or cancelled and threw (not acked): ERROR. A handler that returns is acked, even
      // when cancelled meanwhile.
      Tracing.end(span, thrown != null ? run.cancellation.reason() : null, thrown, null, null);
    }
    return thrown;
  }

  private void handle(SubscribeResponse message, Run run) {
    Throwable t = invoke(message, run);
    if (t != null) {
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
    events.add(new Handled(new Key(message.getId(), message.getToken())));
  }

  private void drain() {
    if (finished.getCount() == 0) return;
    stopping.set(true);
    stopped.countDown();
    awaitHandlers();
    finished.countDown();
  }

  /** Lets running handlers finish for the shutdown grace, then interrupts them and waits as long again. */
  private void awaitHandlers() {
    handlers.shutdown();
    try {
      if (!handlers.awaitTermination(shutdownGrace.toMillis(), TimeUnit.MILLISECONDS)) {
        cancelRunning();
        if (!handlers.awaitTermination(shutdownGrace.toMillis(), TimeUnit.MILLISECONDS)) {
          LOG.warning("handlers still running after twice the shutdown grace; abandoning them");
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void cancelRunning() {
    for (Run run : running.values()) {
      run.cancellation.cancel(Cancellation.Reason.SHUTDOWN);
      Future<?> f = run.future;
      if (f != null) f.cancel(true);
    }
  }

  /** Settings of a {@link Subscriber}. */
  public static final class Builder {
    private final Channel channel;
    private final String receiver;
    private final String consumerId;
    private int maxInFlight = 1;
    private Duration shutdownGrace = Duration.ofSeconds(10);
    private Duration maxBackoff = Backoff.DEFAULT_CAP;
    private Listener listener = new Listener() {};
    private OpenTelemetry openTelemetry;

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

    /** Longest pause between two streams (default: {@code Backoff}'s). */
    public Builder maxBackoff(Duration d) {
      this.maxBackoff = Objects.requireNonNull(d);
      return this;
    }

    public Builder listener(Listener l) {
      this.listener = Objects.requireNonNull(l);
      return this;
    }

    /**
     * Records the handlers' spans with this OpenTelemetry instead of the global one
     * ({@code GlobalOpenTelemetry}, looked up per message); null: the global one.
     */
    public Builder openTelemetry(OpenTelemetry openTelemetry) {
      this.openTelemetry = openTelemetry;
      return this;
    }

    public Subscriber build(MessageHandler handler) {
      return new Subscriber(this, handler);
    }
  }
}

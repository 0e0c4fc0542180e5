package dev.baton.client;

import dev.baton.v1.ClaimServiceGrpc;
import dev.baton.v1.FailRequest;
import dev.baton.v1.Resource;
import dev.baton.v1.ReturnRequest;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * A claimed resource and the claim's fencing token. End it once: explicitly with
 * {@link #returnResource(boolean)} or {@link #fail(Throwable)}, or with try-with-resources:
 *
 * <pre>{@code
 * try (Claim claim = claimer.claim().orElseThrow()) {
 *   build(claim.id(), claim.attributes());
 *   claim.succeeded();      // close() Returns it with reuse
 * }                         // closed without succeeded(): the block threw (or returned early),
 *                           // so close() Fails it (dead letter)
 * }</pre>
 *
 * <p>{@link #close()} cannot see the exception that left the block, so the dead letter then says
 * only that the block did not succeed; {@link Claimer#withClaim(Claimer.ClaimBody)} keeps the
 * exception's message, and so does calling {@link #fail(Throwable)} in a catch inside the block.
 */
public final class Claim implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(Claim.class.getName());
  /** The longest Fail error kept (the server bounds it by limits.max_message_bytes, 4096 by default). */
  public static final int MAX_ERROR_BYTES = 4000;
  /** The dead-letter message of a claim closed without {@link #succeeded()}. */
  public static final String CLOSED_WITHOUT_SUCCESS = "claim closed without succeeded(): its block threw or returned early";

  private final ClaimServiceGrpc.ClaimServiceBlockingStub stub;
  private final String pool;
  private final Resource resource;
  private final long token;
  private final Instant claimedAt;
  private final AtomicBoolean ended = new AtomicBoolean();
  private volatile boolean succeeded;

  Claim(ClaimServiceGrpc.ClaimServiceBlockingStub stub, String pool, Resource resource, long token, Instant claimedAt) {
    this.stub = stub;
    this.pool = pool;
    this.resource = resource;
    this.token = token;
    this.claimedAt = claimedAt;
  }

  public String pool() {
    return pool;
  }

  public Resource resource() {
    return resource;
  }

  public String id() {
    return resource.getId();
  }

  /** The resource's attributes as offered, merged with the claim's. */
  public Map<String, String> attributes() {
    return resource.getAttributesMap();
  }

  /** The claim's fencing token: pass it to whatever is written with the resource. */
  public long token() {
    return token;
  }

  /** When the claim took the resource (Redis clock); null if the server did not say. */
  public Instant claimedAt() {
    return claimedAt;
  }

  /** Whether the claim was ended (returnResource, fail or close; successfully or not). */
  public boolean ended() {
    return ended.get();
  }

  /** Marks the work as done: {@link #close()} Returns the resource with reuse. */
  public void succeeded() {
    succeeded = true;
  }

  /**
   * Ends the claim (Return). With {@code reuse} the resource is idle again at once (handed to the
   * next claim in line); without, it leaves the pool until the pool manager offers it again.
   * UNAVAILABLE is retried twice, every attempt with the same request id (a retry of a Return that
   * was applied succeeds). Throws StatusRuntimeException; a stale token is
   * FAILED_PRECONDITION ({@link Worker#isLeaseLost}): the claim had already ended (e.g. purged).
   */
  public void returnResource(boolean reuse) {
    ended.set(true);
    // One request id for every attempt: a retry of an applied Return gets its answer, not LEASE_LOST.
    ReturnRequest request = ReturnRequest.newBuilder().setRequestId(UUID.randomUUID().toString())
        .setPool(pool).setResourceId(id()).setToken(token).setReuse(reuse).build();
    retryUnavailable(() -> stub.withDeadlineAfter(10, TimeUnit.SECONDS).return_(request));
  }

  /** Ends the claim by dead-lettering the resource (Fail) with {@code error} (cut to 4000 bytes). */
  public void fail(String error) {
    ended.set(true);
    // One request id for every attempt: a retry of an applied Fail gets its answer, not LEASE_LOST.
    FailRequest request = FailRequest.newBuilder().setRequestId(UUID.randomUUID().toString())
        .setPool(pool).setResourceId(id()).setToken(token)
        .setError(truncate(error == null ? "" : error)).build();
    retryUnavailable(() -> stub.withDeadlineAfter(10, TimeUnit.SECONDS).fail(request));
  }

  /** {@link #fail(String)} with the exception as "SimpleClassName: message". */
  public void fail(Throwable error) {
    fail(describe(error));
  }

  /**
   * Ends the claim unless it was ended: after {@link #succeeded()}, or when this thread is
   * interrupted (cancellation), Return with reuse; otherwise Fail with {@link #CLOSED_WITHOUT_SUCCESS}.
   * Errors are logged, not thrown (a refused token means the claim had already ended).
   */
  @Override
  public void close() {
    if (ended()) return;
    try {
      if (succeeded || Thread.currentThread().isInterrupted()) returnResource(true);
      else fail(CLOSED_WITHOUT_SUCCESS);
    } catch (StatusRuntimeException e) {
      LOG.log(Level.WARNING, "ending the claim of {0}/{1} token {2} failed: {3}", new Object[] {pool, id(), token, e.getStatus()});
    }
  }

  static String describe(Throwable t) {
    String m = t.getMessage();
    return m == null || m.isEmpty() ? t.getClass().getSimpleName() : t.getClass().getSimpleName() + ": " + m;
  }

  static String truncate(String s) {
    return Failure.truncateUtf8(s, MAX_ERROR_BYTES);
  }

  /**
   * Runs {@code call} up to three times while it fails UNAVAILABLE, after Baton's pushback hint.
   * Ending a claim must not be cut short by an interrupt (a blocking gRPC call on an interrupted
   * thread is cancelled at once), so the interrupt status is set aside meanwhile, then restored.
   */
  static void retryUnavailable(Runnable call) {
    boolean interrupted = Thread.interrupted();
    try {
      for (int attempt = 0; ; attempt++) {
        try {
          call.run();
          return;
        } catch (StatusRuntimeException e) {
          if (e.getStatus().getCode() != Status.Code.UNAVAILABLE || attempt >= 2) throw e;
          long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Worker.pushbackMs(e, 200L * (attempt + 1)));
          for (long left; (left = until - System.nanoTime()) > 0; ) {
            try {
              TimeUnit.NANOSECONDS.sleep(left);
            } catch (InterruptedException ie) {
              interrupted = true;
            }
          }
        }
      }
    } finally {
      if (interrupted) Thread.currentThread().interrupt();
    }
  }
}

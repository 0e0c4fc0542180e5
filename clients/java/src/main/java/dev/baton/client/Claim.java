package dev.baton.client;

import dev.baton.v1.ClaimServiceGrpc;
import dev.baton.v1.FailRequest;
import dev.baton.v1.Resource;
import dev.baton.v1.ReturnRequest;
import io.grpc.StatusRuntimeException;
import java.time.Instant;
import java.util.Map;
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
   * UNAVAILABLE and DEADLINE_EXCEEDED are retried, every attempt with the same request id (a retry of
   * a Return that was applied succeeds). Throws StatusRuntimeException; a stale token is
   * FAILED_PRECONDITION ({@link Worker#isLeaseLost}): the claim had already ended (e.g. purged).
   */
  public void returnResource(boolean reuse) {
    ended.set(true);
    Backoff.idempotent(rid -> stub.withDeadlineAfter(10, TimeUnit.SECONDS).return_(ReturnRequest.newBuilder()
        .setRequestId(rid).setPool(pool).setResourceId(id()).setToken(token).setReuse(reuse).build()));
  }

  /**
   * Ends the claim by dead-lettering the resource (Fail) with {@code error} (Baton clips one over
   * its limit on a character boundary). Retried as {@link #returnResource(boolean)}.
   */
  public void fail(String error) {
    ended.set(true);
    Backoff.idempotent(rid -> stub.withDeadlineAfter(10, TimeUnit.SECONDS).fail(FailRequest.newBuilder()
        .setRequestId(rid).setPool(pool).setResourceId(id()).setToken(token).setError(error == null ? "" : error).build()));
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
}

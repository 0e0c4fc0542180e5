package dev.baton.client;

import dev.baton.v1.ClaimRequest;
import dev.baton.v1.ClaimResponse;
import dev.baton.v1.ClaimServiceGrpc;
import io.grpc.Channel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Claims resources of one pool for one claimer id (ClaimService), with a long-poll wait.
 *
 * <pre>{@code
 * Claimer claimer = Claimer.builder(channel, "vms", "ci-7").wait(Duration.ofSeconds(30)).build();
 * boolean ran = claimer.withClaim(claim -> build(claim.id(), claim.attributes()));
 * // false: the wait ended with nothing idle. Returned: Return with reuse; threw: Fail with the
 * // exception; interrupted: Return with reuse.
 * }</pre>
 *
 * A full waiting line throws {@link LineFullException} with Baton's pushback hint; it is not
 * retried for the caller.
 */
public final class Claimer {
  private static final Logger LOG = Logger.getLogger(Claimer.class.getName());

  /** The work done with a claimed resource. */
  @FunctionalInterface
  public interface ClaimBody {
    void run(Claim claim) throws Exception;
  }

  private final ClaimServiceGrpc.ClaimServiceBlockingStub stub;
  private final String pool;
  private final String claimerId;
  private final Duration wait;
  private final Map<String, String> attributes;

  private Claimer(Builder b) {
    this.stub = ClaimServiceGrpc.newBlockingStub(b.channel);
    this.pool = b.pool;
    this.claimerId = b.claimerId;
    this.wait = b.wait;
    this.attributes = Map.copyOf(b.attributes);
  }

  /** A claimer on {@code channel}: a shared {@link BatonClient} or any Channel (never shut down here). */
  public static Builder builder(Channel channel, String pool, String claimerId) {
    return new Builder(channel, pool, claimerId);
  }

  public String pool() {
    return pool;
  }

  /** {@link #claim(Duration, Map)} with the claimer's wait and attributes. */
  public Optional<Claim> claim() {
    return claim(wait, Map.of());
  }

  /** {@link #claim(Duration, Map)} with the claimer's attributes. */
  public Optional<Claim> claim(Duration wait) {
    return claim(wait, Map.of());
  }

  /**
   * Claims the oldest idle resource, waiting in the pool's line up to {@code wait} (zero answers
   * at once). Empty when the wait ended with nothing for this claim. Throws
   * {@link LineFullException} when the line is full, StatusRuntimeException otherwise
   * (CANCELLED when this thread is interrupted: the claim left the line, and a resource handed
   * over in that instant went back).
   *
   * @param attributes attached to the claimed resource, over the claimer's
   */
  public Optional<Claim> claim(Duration wait, Map<String, String> attributes) {
    Map<String, String> attrs = new HashMap<>(this.attributes);
    attrs.putAll(attributes);
    ClaimRequest.Builder request = ClaimRequest.newBuilder().setPool(pool).setClaimerId(claimerId).putAllAttributes(attrs);
    if (!wait.isZero() && !wait.isNegative()) request.setWait(Durations.of(wait));
    ClaimResponse response;
    try {
      response = stub.withDeadlineAfter(Math.max(0, wait.toMillis()) + 10_000, TimeUnit.MILLISECONDS).claim(request.build());
    } catch (StatusRuntimeException e) {
      if (e.getStatus().getCode() == Status.Code.RESOURCE_EXHAUSTED) {
        long ms = Backoff.pushbackMs(e);
        throw new LineFullException(pool, ms < 0 ? null : Duration.ofMillis(ms), e);
      }
      throw e;
    }
    if (!response.hasResource()) return Optional.empty();
    Instant at = response.hasClaimedAt()
        ? Instant.ofEpochSecond(response.getClaimedAt().getSeconds(), response.getClaimedAt().getNanos()) : null;
    return Optional.of(new Claim(stub, pool, response.getResource(), response.getToken(), at));
  }

  /** {@link #withClaim(Duration, ClaimBody)} with the claimer's wait. */
  public boolean withClaim(ClaimBody body) throws Exception {
    return withClaim(wait, body);
  }

  /**
   * Claims (as {@link #claim(Duration)}) and runs {@code body} with the claim; false (body not
   * run) when the wait ended. Then ends the claim by how the body ended, unless it ended the claim
   * itself:
   *
   * <ul>
   *   <li>returned → Return with reuse;
   *   <li>threw InterruptedException or CancellationException, or left this thread interrupted
   *       (cancellation) → Return with reuse, and the exception goes on;
   *   <li>threw anything else → Fail with it ("SimpleClassName: message"), and it goes on.
   * </ul>
   *
   * Ending the claim is retried on UNAVAILABLE; a refused token (LEASE_LOST: the claim had already
   * ended, e.g. purged) is logged. Another error of the Return after a body that returned is
   * thrown; after a body that threw it is logged (the body's exception wins).
   */
  public boolean withClaim(Duration wait, ClaimBody body) throws Exception {
    Optional<Claim> claimed = claim(wait);
    if (claimed.isEmpty()) return false;
    Claim claim = claimed.get();
    try {
      body.run(claim);
    } catch (Throwable t) {
      if (!claim.ended()) {
        boolean cancelled = t instanceof InterruptedException || t instanceof CancellationException
            || Thread.currentThread().isInterrupted();
        try {
          if (cancelled) claim.returnResource(true);
          else claim.fail(t);
        } catch (StatusRuntimeException e) {
          LOG.log(Level.WARNING, "ending the claim of {0}/{1} token {2} failed: {3}",
              new Object[] {pool, claim.id(), claim.token(), e.getStatus()});
        }
      }
      throw t;
    }
    if (!claim.ended()) {
      try {
        claim.returnResource(true);
      } catch (StatusRuntimeException e) {
        if (!Worker.isLeaseLost(e)) throw e;
        LOG.log(Level.WARNING, "return of {0}/{1} token {2} refused: the claim had already ended",
            new Object[] {pool, claim.id(), claim.token()});
      }
    }
    return true;
  }

  /** Settings of a {@link Claimer}. */
  public static final class Builder {
    private final Channel channel;
    private final String pool;
    private final String claimerId;
    private Duration wait = Duration.ofSeconds(30);
    private final Map<String, String> attributes = new HashMap<>();

    private Builder(Channel channel, String pool, String claimerId) {
      this.channel = Objects.requireNonNull(channel, "channel");
      this.pool = Objects.requireNonNull(pool, "pool");
      this.claimerId = Objects.requireNonNull(claimerId, "claimerId");
    }

    /** Default long-poll wait of a claim (default 30 s; zero answers at once). */
    public Builder wait(Duration d) {
      this.wait = Objects.requireNonNull(d);
      return this;
    }

    /** Attributes attached to every claimed resource. */
    public Builder attributes(Map<String, String> attrs) {
      this.attributes.putAll(attrs);
      return this;
    }

    public Claimer build() {
      return new Claimer(this);
    }
  }
}

package dev.baton.client;

import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.Optional;

/**
 * A claim refused because the pool's waiting line is full (RESOURCE_EXHAUSTED, ErrorInfo reason
 * LINE_FULL). Shed load, or claim again after {@link #retryAfter()} (Baton's
 * {@code grpc-retry-pushback-ms} hint). Nothing is retried behind the caller's back.
 */
public final class LineFullException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String pool;
  private final transient Duration retryAfter;

  LineFullException(String pool, Duration retryAfter, StatusRuntimeException cause) {
    super("the waiting line of pool " + pool + " is full", cause);
    this.pool = pool;
    this.retryAfter = retryAfter;
  }

  public String pool() {
    return pool;
  }

  /** The ErrorInfo reason of the refusal: {@code LINE_FULL}. */
  public String reason() {
    return BatonErrors.reason(getCause()).orElse("LINE_FULL");
  }

  /** When to claim again, as Baton hinted; empty if it sent no hint. */
  public Optional<Duration> retryAfter() {
    return Optional.ofNullable(retryAfter);
  }
}

package dev.baton.client;

/**
 * Implemented by exceptions that carry an HTTP status; {@link Outcomes#classify(Throwable)} maps
 * them by {@link Outcomes#forHttpStatus(int)}.
 */
public interface HttpStatusCarrier {
  int httpStatus();

  /** A Retry-After delay in seconds, or -1. */
  default long retryAfterSeconds() {
    return -1;
  }
}

package dev.baton.client;

/**
 * Implemented by exceptions that carry an HTTP status; {@link Outcomes#classify(Throwable)} sends
 * it to Baton, which maps it to the outcome.
 */
public interface HttpStatusCarrier {
  int httpStatus();

  /** A Retry-After delay in seconds, or -1. */
  default long retryAfterSeconds() {
    return -1;
  }
}

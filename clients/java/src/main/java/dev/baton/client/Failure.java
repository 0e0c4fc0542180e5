package dev.baton.client;

import dev.baton.v1.Outcome;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * Ends a run with an explicit outcome: throw one (or one as a cause) from a {@link LeaseHandler}.
 * Anything else a handler throws is classified by {@link Outcomes#classify(Throwable)}.
 */
public final class Failure extends Exception {
  private static final long serialVersionUID = 1L;

  private final Outcome outcome;
  private final Duration retryAfter;

  public Failure(Outcome outcome, String message) {
    this(outcome, message, null, null);
  }

  public Failure(Outcome outcome, String message, Duration retryAfter, Throwable cause) {
    super(message, cause);
    Objects.requireNonNull(outcome, "outcome");
    if (outcome == Outcome.OUTCOME_UNSPECIFIED || outcome == Outcome.OUTCOME_SUCCESS
        || outcome == Outcome.UNRECOGNIZED) {
      throw new IllegalArgumentException("a Failure needs a failure outcome, not " + outcome);
    }
    this.outcome = outcome;
    this.retryAfter = retryAfter;
  }

  /** The documented HTTP mapping, {@link Outcomes#forHttpStatus(int)}. */
  public static Failure fromHttpStatus(int status, String message) {
    return new Failure(Outcomes.forHttpStatus(status), message == null || message.isEmpty() ? "HTTP " + status : message);
  }

  /** I/O errors, connection resets, timeouts: retried at once (up to the server's limit). */
  public static Failure transientFailure(String message) {
    return new Failure(Outcome.OUTCOME_TRANSIENT, message);
  }

  /** A copy with a Retry-After the handler was told to respect. */
  public Failure withRetryAfter(Duration after) {
    return new Failure(outcome, getMessage(), after, getCause());
  }

  public Outcome outcome() {
    return outcome;
  }

  public Optional<Duration> retryAfter() {
    return Optional.ofNullable(retryAfter);
  }

  @Override
  public String toString() {
    return "Failure(" + outcome + ", " + getMessage() + (retryAfter == null ? "" : ", retry after " + retryAfter) + ")";
  }

  /**
   * The longest failure message the server takes by default (limits.max_message_bytes):
   * Complete's message and Fail's error, in UTF-8 bytes.
   */
  public static final int MAX_MESSAGE_BYTES = 4096;

  /**
   * At most {@code maxBytes} UTF-8 bytes of {@code s}, cut on a character boundary (never inside
   * a surrogate pair): how every helper bounds a failure message to the server's limit, the same
   * rule in every client language.
   */
  public static String truncateUtf8(String s, int maxBytes) {
    byte[] bytes = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    if (bytes.length <= maxBytes) return s;
    int end = maxBytes;
    while (end > 0 && (bytes[end] & 0xc0) == 0x80) end--; // a character boundary
    return new String(bytes, 0, end, java.nio.charset.StandardCharsets.UTF_8);
  }
}

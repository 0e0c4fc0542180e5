package dev.baton.client;

import dev.baton.v1.Outcome;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * How a run failed, as the worker reports it. Throw one (or one as a cause) from a {@link
 * LeaseHandler} to choose the outcome yourself; anything else a handler throws becomes one by
 * {@link Outcomes#classify(Throwable)}, with the outcome left to Baton, which classifies the
 * error's class and HTTP status by one table for every client language (agent.proto, above
 * {@code enum Outcome}).
 */
public final class Failure extends Exception {
  private static final long serialVersionUID = 1L;

  private final Outcome outcome;
  private final String errorClass;
  private final int httpStatus;
  private final Duration retryAfter;

  /** A failure with an explicit outcome (not SUCCESS or UNSPECIFIED). */
  public Failure(Outcome outcome, String message) {
    this(outcome, message, null, null);
  }

  public Failure(Outcome outcome, String message, Duration retryAfter, Throwable cause) {
    this(explicit(outcome), message, "", 0, retryAfter, cause);
  }

  private Failure(Outcome outcome, String message, String errorClass, int httpStatus, Duration retryAfter, Throwable cause) {
    super(message, cause);
    this.outcome = outcome;
    this.errorClass = errorClass;
    this.httpStatus = httpStatus;
    this.retryAfter = retryAfter;
  }

  private static Outcome explicit(Outcome outcome) {
    Objects.requireNonNull(outcome, "outcome");
    if (outcome == Outcome.OUTCOME_UNSPECIFIED || outcome == Outcome.OUTCOME_SUCCESS || outcome == Outcome.UNRECOGNIZED) {
      throw new IllegalArgumentException("a Failure needs a failure outcome, not " + outcome);
    }
    return outcome;
  }

  /** A failure for Baton to classify from {@code errorClass} and {@code httpStatus} (0: none). */
  static Failure classified(String message, String errorClass, int httpStatus, Duration retryAfter, Throwable cause) {
    return new Failure(Outcome.OUTCOME_UNSPECIFIED, message, errorClass, httpStatus, retryAfter, cause);
  }

  /** A failure that carried HTTP {@code status}; Baton maps it to the outcome. */
  public static Failure fromHttpStatus(int status, String message) {
    return classified(message == null || message.isEmpty() ? "HTTP " + status : message, "", status, null, null);
  }

  /** I/O errors, connection resets, timeouts: retried at once (up to the server's limit). */
  public static Failure transientFailure(String message) {
    return new Failure(Outcome.OUTCOME_TRANSIENT, message);
  }

  /** A copy with a Retry-After the handler was told to respect. */
  public Failure withRetryAfter(Duration after) {
    return new Failure(outcome, getMessage(), errorClass, httpStatus, after, getCause());
  }

  /** The explicit outcome, or OUTCOME_UNSPECIFIED when Baton classifies the failure. */
  public Outcome outcome() {
    return outcome;
  }

  /** The error's class as sent to Baton ("io", "timeout", or the exception's simple name); empty if explicit. */
  public String errorClass() {
    return errorClass;
  }

  /** The HTTP status the error carried; 0: none. */
  public int httpStatus() {
    return httpStatus;
  }

  public Optional<Duration> retryAfter() {
    return Optional.ofNullable(retryAfter);
  }

  @Override
  public String toString() {
    String what = outcome != Outcome.OUTCOME_UNSPECIFIED ? outcome.name()
        : (errorClass.isEmpty() ? "" : errorClass) + (httpStatus > 0 ? " HTTP " + httpStatus : "");
    return "Failure(" + what + ", " + getMessage() + (retryAfter == null ? "" : ", retry after " + retryAfter) + ")";
  }
}

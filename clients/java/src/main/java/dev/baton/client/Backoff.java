package dev.baton.client;

import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * The one backoff of every helper: 100 ms doubling up to a cap (5 s unless a helper is given
 * another), each delay jittered to between half and all of it; Baton's retry hint
 * ({@code grpc-retry-pushback-ms}, sent with UNAVAILABLE and RESOURCE_EXHAUSTED) wins when present.
 */
final class Backoff {
  private static final Metadata.Key<String> PUSHBACK = Metadata.Key.of("grpc-retry-pushback-ms", Metadata.ASCII_STRING_MARSHALLER);
  private static final long FIRST_MS = 100;
  static final Duration DEFAULT_CAP = Duration.ofSeconds(5);

  private final long capMs;
  private long nextMs = FIRST_MS;

  Backoff() {
    this(DEFAULT_CAP);
  }

  Backoff(Duration cap) {
    this.capMs = Math.max(FIRST_MS, cap.toMillis());
  }

  /** The pause before the next attempt after {@code error} (null: a clean end, no hint). */
  long next(Throwable error) {
    long base = nextMs;
    nextMs = Math.min(capMs, nextMs * 2);
    long hint = pushbackMs(error);
    return hint >= 0 ? hint : base / 2 + ThreadLocalRandom.current().nextLong(base / 2 + 1);
  }

  /** Back to the first delay (after a success). */
  void reset() {
    nextMs = FIRST_MS;
  }

  /** Baton's retry hint on {@code error} in milliseconds, or -1 without one. */
  static long pushbackMs(Throwable error) {
    Metadata trailers = error == null ? null : Status.trailersFromThrowable(error);
    String v = trailers == null ? null : trailers.get(PUSHBACK);
    try {
      return v == null ? -1 : Math.max(0, Long.parseLong(v.trim()));
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /**
   * Makes one idempotent call with a new request id ({@code call} builds the request with it), up
   * to four attempts while it fails UNAVAILABLE or DEADLINE_EXCEEDED (an unknown outcome), every
   * attempt with the same id: Baton answers a retry of an applied call with the first call's
   * answer. An interrupt does not cut the retries short (it is restored after).
   */
  static <T> T idempotent(Function<String, T> call) {
    return idempotent(UUID.randomUUID().toString(), call);
  }

  /** {@link #idempotent(Function)} with the caller's request id. */
  static <T> T idempotent(String requestId, Function<String, T> call) {
    Backoff backoff = new Backoff();
    boolean interrupted = Thread.interrupted(); // a blocking call on an interrupted thread is cancelled at once
    try {
      for (int attempt = 1; ; attempt++) {
        try {
          return call.apply(requestId);
        } catch (StatusRuntimeException e) {
          Status.Code code = e.getStatus().getCode();
          if (attempt >= 4 || (code != Status.Code.UNAVAILABLE && code != Status.Code.DEADLINE_EXCEEDED)) throw e;
          long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(backoff.next(e));
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

package dev.baton.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.baton.v1.Outcome;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.SocketTimeoutException;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

/** The documented error → outcome rule, without a server. */
class OutcomesTest {
  static final Map<Integer, Outcome> RULE = Map.of(
      401, Outcome.OUTCOME_PERMANENT_FORBIDDEN,
      403, Outcome.OUTCOME_PERMANENT_FORBIDDEN,
      429, Outcome.OUTCOME_THROTTLED,
      408, Outcome.OUTCOME_TRANSIENT,
      500, Outcome.OUTCOME_SERVER_ERROR,
      503, Outcome.OUTCOME_SERVER_ERROR,
      400, Outcome.OUTCOME_UNKNOWN,
      404, Outcome.OUTCOME_UNKNOWN);

  static final class StatusException extends RuntimeException implements HttpStatusCarrier {
    final int status;
    final long retryAfter;

    StatusException(int status, long retryAfter) {
      super("HTTP " + status);
      this.status = status;
      this.retryAfter = retryAfter;
    }

    public int httpStatus() {
      return status;
    }

    public long retryAfterSeconds() {
      return retryAfter;
    }
  }

  /** Shaped like Retrofit's HttpException: an int code() and nothing else. */
  static final class HttpException extends RuntimeException {
    private final int code;

    HttpException(int code) {
      super("HTTP " + code);
      this.code = code;
    }

    public int code() {
      return code;
    }
  }

  @Test
  void httpStatusesMapByTheRule() {
    RULE.forEach((status, outcome) -> {
      assertEquals(outcome, Outcomes.forHttpStatus(status), "status " + status);
      assertEquals(outcome, Failure.fromHttpStatus(status, "").outcome());
      assertEquals(outcome, Outcomes.classify(new StatusException(status, -1)).outcome());
      assertEquals(outcome, Outcomes.classify(new HttpException(status)).outcome(), "reflected " + status);
      assertEquals(outcome, Outcomes.classify(new RuntimeException("wrapped", new HttpException(status))).outcome());
    });
    assertEquals(Duration.ofSeconds(120), Outcomes.classify(new StatusException(429, 120)).retryAfter().orElseThrow());
  }

  @Test
  void ioAndTimeoutsAreTransient() {
    for (Throwable t : new Throwable[] {new IOException("io"), new ConnectException("refused"),
        new SocketTimeoutException("slow"), new HttpTimeoutException("slow"), new TimeoutException(),
        new UncheckedIOException(new IOException("reset")), new IllegalStateException("wrapped", new ConnectException())}) {
      assertEquals(Outcome.OUTCOME_TRANSIENT, Outcomes.classify(t).outcome(), t.toString());
    }
  }

  @Test
  void anythingElseIsUnknownAndAnExplicitFailureWins() throws Exception {
    assertEquals(Outcome.OUTCOME_UNKNOWN, Outcomes.classify(new IllegalArgumentException("bad")).outcome());
    Failure explicit = new Failure(Outcome.OUTCOME_THROTTLED, "quota").withRetryAfter(Duration.ofMinutes(5));
    assertSame(explicit, Outcomes.classify(explicit));
    assertSame(explicit, Outcomes.classify(new RuntimeException(explicit)));
    assertThrows(IllegalArgumentException.class, () -> new Failure(Outcome.OUTCOME_SUCCESS, "no"));
  }
}

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
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;

/** What a handler's exception tells Baton (which classifies it), without a server. */
class OutcomesTest {
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
  public static final class HttpException extends RuntimeException {
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
  void theHttpStatusAnErrorCarriesIsSent() {
    Failure f = Outcomes.classify(new StatusException(429, 120));
    assertEquals(Outcome.OUTCOME_UNSPECIFIED, f.outcome());
    assertEquals(429, f.httpStatus());
    assertEquals(Duration.ofSeconds(120), f.retryAfter().orElseThrow());
    assertEquals(503, Outcomes.classify(new HttpException(503)).httpStatus(), "reflected");
    assertEquals(403, Outcomes.classify(new RuntimeException("wrapped", new HttpException(403))).httpStatus());
    assertEquals(401, Failure.fromHttpStatus(401, "").httpStatus());
    assertEquals(0, Outcomes.classify(new IllegalStateException("bad")).httpStatus());
  }

  @Test
  void theErrorClassIsIoTimeoutOrTheExceptionsName() {
    for (Throwable t : new Throwable[] {new IOException("io"), new ConnectException("refused"),
        new UncheckedIOException(new IOException("reset")), new IllegalStateException("wrapped", new ConnectException())}) {
      assertEquals("io", Outcomes.classify(t).errorClass(), t.toString());
    }
    for (Throwable t : new Throwable[] {new SocketTimeoutException("slow"), new HttpTimeoutException("slow"), new TimeoutException()}) {
      assertEquals("timeout", Outcomes.classify(t).errorClass(), t.toString());
    }
    Failure bug = Outcomes.classify(new IllegalArgumentException("bad"));
    assertEquals("IllegalArgumentException", bug.errorClass());
    assertEquals("java.lang.IllegalArgumentException: bad", bug.getMessage());
  }

  @Test
  void anExplicitFailureWins() {
    Failure explicit = new Failure(Outcome.OUTCOME_THROTTLED, "quota").withRetryAfter(Duration.ofMinutes(5));
    assertSame(explicit, Outcomes.classify(explicit));
    assertSame(explicit, Outcomes.classify(new RuntimeException(explicit)));
    assertEquals(Outcome.OUTCOME_THROTTLED, explicit.outcome());
    assertThrows(IllegalArgumentException.class, () -> new Failure(Outcome.OUTCOME_SUCCESS, "no"));
  }
}

package dev.baton.client;

import dev.baton.v1.Outcome;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;
import java.util.concurrent.TimeoutException;

/** The documented rule that maps errors to outcomes. */
public final class Outcomes {
  private Outcomes() {}

  /**
   * 401/403 → PERMANENT_FORBIDDEN, 429 → THROTTLED, 408 → TRANSIENT, 5xx → SERVER_ERROR, anything
   * else → UNKNOWN.
   */
  public static Outcome forHttpStatus(int status) {
    if (status == 401 || status == 403) return Outcome.OUTCOME_PERMANENT_FORBIDDEN;
    if (status == 429) return Outcome.OUTCOME_THROTTLED;
    if (status == 408) return Outcome.OUTCOME_TRANSIENT;
    if (status >= 500 && status <= 599) return Outcome.OUTCOME_SERVER_ERROR;
    return Outcome.OUTCOME_UNKNOWN;
  }

  // Zero-argument int accessors of HTTP client exceptions: Retrofit/OkHttp HttpException.code(),
  // Spring's getRawStatusCode(), Apache's getStatusCode(), JAX-RS-style getStatus(), …
  private static final String[] STATUS_METHODS = {"httpStatus", "statusCode", "getStatusCode", "getRawStatusCode", "code", "getStatus"};

  /**
   * The documented rule: a {@link Failure} in the cause chain wins; an exception carrying an HTTP
   * status ({@link HttpStatusCarrier}, or an int accessor named as HTTP client libraries name it)
   * maps by {@link #forHttpStatus(int)}; I/O errors ({@link IOException}: connection refused or
   * reset, socket and HTTP timeouts, unknown host) and {@link TimeoutException} are TRANSIENT;
   * anything else is UNKNOWN.
   */
  public static Failure classify(Throwable error) {
    Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    for (Throwable t = error; t != null && seen.add(t); t = t.getCause()) {
      if (t instanceof Failure) return (Failure) t;
    }
    String message = String.valueOf(error);
    if (message.length() > 4000) message = message.substring(0, 4000);
    seen.clear();
    for (Throwable t = error; t != null && seen.add(t); t = t.getCause()) {
      if (t instanceof HttpStatusCarrier) {
        HttpStatusCarrier c = (HttpStatusCarrier) t;
        long after = c.retryAfterSeconds();
        return new Failure(forHttpStatus(c.httpStatus()), message, after >= 0 ? Duration.ofSeconds(after) : null, error);
      }
      int status = reflectedStatus(t);
      if (status > 0) return new Failure(forHttpStatus(status), message, null, error);
    }
    seen.clear();
    for (Throwable t = error; t != null && seen.add(t); t = t.getCause()) {
      if (t instanceof IOException || t instanceof UncheckedIOException || t instanceof TimeoutException) {
        return new Failure(Outcome.OUTCOME_TRANSIENT, message, null, error);
      }
    }
    return new Failure(Outcome.OUTCOME_UNKNOWN, message, null, error);
  }

  private static int reflectedStatus(Throwable t) {
    if (t.getClass().getName().startsWith("java.")) return -1;
    for (String name : STATUS_METHODS) {
      try {
        Method m = t.getClass().getMethod(name);
        if (m.getReturnType() != int.class) continue;
        int v = (int) m.invoke(t);
        if (v >= 100 && v <= 599) return v;
      } catch (ReflectiveOperationException | RuntimeException ignored) {
        // not this accessor
      }
    }
    return -1;
  }
}

package dev.baton.client;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;
import java.util.concurrent.TimeoutException;

/** What a handler's exception tells Baton, which decides the outcome. */
public final class Outcomes {
  private Outcomes() {}

  // Zero-argument int accessors of HTTP client exceptions: Retrofit/OkHttp HttpException.code(),
  // Spring's getRawStatusCode(), Apache's getStatusCode(), JAX-RS-style getStatus(), …
  private static final String[] STATUS_METHODS = {"httpStatus", "statusCode", "getStatusCode", "getRawStatusCode", "code", "getStatus"};

  /**
   * A {@link Failure} in the cause chain wins. Otherwise a failure for Baton to classify: the
   * HTTP status of the first exception in the chain that carries one ({@link HttpStatusCarrier},
   * with its Retry-After, or an int accessor named as HTTP client libraries name it), and the
   * error class: "timeout" or "io" for an {@link IOException} or {@link TimeoutException} in the
   * chain, else the exception's simple class name.
   */
  public static Failure classify(Throwable error) {
    Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
    int status = 0;
    Duration retryAfter = null;
    String errorClass = null;
    for (Throwable t = error; t != null && seen.add(t); t = t.getCause()) {
      if (t instanceof Failure f) return f;
      if (status == 0 && t instanceof HttpStatusCarrier c) {
        status = c.httpStatus() >= 100 && c.httpStatus() <= 599 ? c.httpStatus() : 0;
        if (c.retryAfterSeconds() >= 0) retryAfter = Duration.ofSeconds(c.retryAfterSeconds());
      } else if (status == 0) {
        status = reflectedStatus(t);
      }
      if (errorClass == null && (t instanceof IOException || t instanceof UncheckedIOException || t instanceof TimeoutException)) {
        errorClass = t instanceof TimeoutException || t.getClass().getSimpleName().contains("Timeout") ? "timeout" : "io";
      }
    }
    Class<?> type = error.getClass();
    while (type.getSimpleName().isEmpty()) type = type.getSuperclass(); // an anonymous class: what it extends
    if (errorClass == null) errorClass = type.getSimpleName();
    return Failure.classified(String.valueOf(error), errorClass, status, retryAfter, error);
  }

  private static int reflectedStatus(Throwable t) {
    if (t.getClass().getName().startsWith("java.")) return 0;
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
    return 0;
  }
}

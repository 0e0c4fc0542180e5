package dev.baton.client;

import dev.baton.v1.Agent;
import dev.baton.v1.Lease;
import dev.baton.v1.Outcome;
import dev.baton.v1.SubscribeResponse;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import java.util.List;

/**
 * The spans of the Worker and Subscriber helpers (instrumentation scope {@value #SCOPE}). Nothing
 * is recorded until the application installs an OpenTelemetry SDK (globally, or given to the
 * helper's builder).
 */
final class Tracing {
  /** The tracer's instrumentation scope name. */
  static final String SCOPE = "baton-client";

  static final AttributeKey<String> MESSAGING_SYSTEM = AttributeKey.stringKey("messaging.system");
  static final AttributeKey<String> MESSAGING_OPERATION_TYPE = AttributeKey.stringKey("messaging.operation.type");
  static final AttributeKey<String> MESSAGING_DESTINATION_NAME = AttributeKey.stringKey("messaging.destination.name");
  static final AttributeKey<String> MESSAGING_MESSAGE_ID = AttributeKey.stringKey("messaging.message.id");
  static final AttributeKey<String> AGENT_NAME = AttributeKey.stringKey("baton.agent.name");
  static final AttributeKey<Long> LEASE_TOKEN = AttributeKey.longKey("baton.lease.token");
  static final AttributeKey<Long> ATTEMPT = AttributeKey.longKey("baton.attempt");
  static final AttributeKey<Long> DELIVERY_COUNT = AttributeKey.longKey("baton.delivery_count");
  static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("baton.outcome");
  static final AttributeKey<String> CANCELLED = AttributeKey.stringKey("baton.cancelled");

  private Tracing() {}

  /**
   * The helper's tracer: from {@code explicit}, else from the global OpenTelemetry as it is now
   * (looked up per run, so an SDK installed after the helper was built is used; no-op until one
   * is installed, and looking does not install the no-op for good).
   */
  static Tracer tracer(OpenTelemetry explicit) {
    return (explicit != null ? explicit : GlobalOpenTelemetry.getOrNoop()).getTracer(SCOPE);
  }

  private static final TextMapGetter<String> ONE_HEADER = new TextMapGetter<>() {
    @Override
    public Iterable<String> keys(String carrier) {
      return List.of("traceparent");
    }

    @Override
    public String get(String carrier, String key) {
      return "traceparent".equals(key) ? carrier : null;
    }
  };

  /** The span context of a W3C traceparent (remote); invalid when empty or malformed. */
  static SpanContext parse(String traceparent) {
    if (traceparent == null || traceparent.isEmpty()) return SpanContext.getInvalid();
    Context c = W3CTraceContextPropagator.getInstance().extract(Context.root(), traceparent, ONE_HEADER);
    return Span.fromContext(c).getSpanContext();
  }

  /** Whether the agent runs again after a success (an interval above zero, or a cron schedule). */
  static boolean recurring(Agent agent) {
    boolean interval = agent.hasInterval() && (agent.getInterval().getSeconds() > 0
        || (agent.getInterval().getSeconds() == 0 && agent.getInterval().getNanos() > 0));
    return interval || !agent.getCron().isEmpty();
  }

  /**
   * Starts the span of one lease's run: {@code process <queue>}, CONSUMER. A one-shot agent's run
   * is a child of the producer's context ({@code Agent.traceparent}) when it has a valid one; a
   * recurring agent's run is a new root linked to it (its runs must not pile into the
   * registration's trace); without a traceparent, a new root.
   */
  static Span startRun(Tracer tracer, String queue, Lease lease) {
    Agent agent = lease.getAgent();
    String q = lease.getQueue().isEmpty() ? queue : lease.getQueue();
    SpanBuilder b = tracer.spanBuilder("process " + q)
        .setSpanKind(SpanKind.CONSUMER)
        .setAttribute(MESSAGING_SYSTEM, "baton")
        .setAttribute(MESSAGING_OPERATION_TYPE, "process")
        .setAttribute(MESSAGING_DESTINATION_NAME, q)
        .setAttribute(AGENT_NAME, lease.getName())
        .setAttribute(LEASE_TOKEN, lease.getToken())
        .setAttribute(ATTEMPT, (long) lease.getAttempt());
    SpanContext producer = parse(agent.getTraceparent());
    if (producer.isValid() && !recurring(agent)) {
      b.setParent(Context.root().with(Span.wrap(producer)));
    } else {
      b.setNoParent();
      if (producer.isValid()) b.addLink(producer);
    }
    return b.startSpan();
  }

  /**
   * Starts the span of one scheduled message's handling: {@code process <receiver>}, CONSUMER, a
   * child of the producer's context ({@code traceparent}) when valid, else a new root.
   */
  static Span startMessage(Tracer tracer, String receiver, SubscribeResponse message) {
    SpanBuilder b = tracer.spanBuilder("process " + receiver)
        .setSpanKind(SpanKind.CONSUMER)
        .setAttribute(MESSAGING_SYSTEM, "baton")
        .setAttribute(MESSAGING_OPERATION_TYPE, "process")
        .setAttribute(MESSAGING_DESTINATION_NAME, receiver)
        .setAttribute(MESSAGING_MESSAGE_ID, message.getId())
        .setAttribute(DELIVERY_COUNT, (long) message.getDeliveryCount());
    SpanContext producer = parse(message.getTraceparent());
    if (producer.isValid()) b.setParent(Context.root().with(Span.wrap(producer)));
    else b.setNoParent();
    return b.startSpan();
  }

  /** The outcome's name as the helpers and Baton's metrics report it: SUCCESS, TRANSIENT, … */
  static String outcomeName(Outcome outcome) {
    String name = outcome.name();
    return name.startsWith("OUTCOME_") ? name.substring("OUTCOME_".length()) : name;
  }

  /**
   * Ends a handler's span. {@code cancelled} (lease lost, run cancelled, shutdown: the result was
   * not reported): status ERROR, {@code baton.cancelled} the reason. Otherwise {@code
   * baton.outcome} when there is one, and on a failure (a non-SUCCESS outcome, or without one an
   * exception) status ERROR with the exception recorded.
   */
  static void end(Span span, Cancellation.Reason cancelled, Throwable thrown, Outcome outcome, String failureMessage) {
    try {
      if (cancelled != null) {
        String why = cancelled.name();
        span.setAttribute(CANCELLED, why);
        if (thrown != null) span.recordException(thrown);
        span.setStatus(StatusCode.ERROR, "cancelled: " + why);
      } else if (outcome != null) {
        span.setAttribute(OUTCOME, outcomeName(outcome));
        if (outcome != Outcome.OUTCOME_SUCCESS) {
          if (thrown != null) span.recordException(thrown);
          span.setStatus(StatusCode.ERROR, failureMessage == null ? "" : failureMessage);
        }
      } else if (thrown != null) {
        span.recordException(thrown);
        span.setStatus(StatusCode.ERROR, String.valueOf(thrown.getMessage()));
      }
    } finally {
      span.end();
    }
  }
}

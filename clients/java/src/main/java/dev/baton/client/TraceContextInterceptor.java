package dev.baton.client;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapSetter;

/**
 * Sends the current OpenTelemetry context (the one current when the call is made) as W3C {@code
 * traceparent} metadata, and {@code tracestate} when it is not empty, so that Baton keeps it with
 * what the call registers or schedules ({@code Agent.traceparent}, {@code
 * ScheduleRequest.traceparent}). Without a valid current span context (no SDK, no span) it adds
 * nothing; a {@code traceparent} the call already carries (per-call metadata, an interceptor that
 * ran before) is left alone. It uses the W3C format directly, not the global propagator (a no-op
 * until configured).
 *
 * <p>Every {@link BatonClient} has it; add it yourself to a plain channel ({@code
 * ClientInterceptors.intercept(channel, new TraceContextInterceptor())}) to get the same.
 */
public final class TraceContextInterceptor implements ClientInterceptor {
  static final Metadata.Key<String> TRACEPARENT = Metadata.Key.of("traceparent", Metadata.ASCII_STRING_MARSHALLER);
  static final Metadata.Key<String> TRACESTATE = Metadata.Key.of("tracestate", Metadata.ASCII_STRING_MARSHALLER);

  private static final TextMapSetter<Metadata> SETTER = (headers, key, value) -> {
    if (headers == null) return;
    Metadata.Key<String> k = Metadata.Key.of(key, Metadata.ASCII_STRING_MARSHALLER);
    if (!headers.containsKey(k)) headers.put(k, value);
  };

  @Override
  public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(MethodDescriptor<ReqT, RespT> method, CallOptions options, Channel next) {
    // Taken now, on the caller's thread: a call may be started later, elsewhere.
    Context context = Context.current();
    if (!Span.fromContext(context).getSpanContext().isValid()) return next.newCall(method, options);
    return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, options)) {
      @Override
      public void start(Listener<RespT> listener, Metadata headers) {
        if (!headers.containsKey(TRACEPARENT)) W3CTraceContextPropagator.getInstance().inject(context, headers, SETTER);
        super.start(listener, headers);
      }
    };
  }

  @Override
  public String toString() {
    return "TraceContextInterceptor";
  }
}

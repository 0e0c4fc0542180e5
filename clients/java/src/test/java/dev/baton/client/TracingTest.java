package dev.baton.client;

import static dev.baton.client.BatonServer.eventually;
import static dev.baton.client.BatonServer.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.baton.v1.Agent;
import dev.baton.v1.AgentServiceGrpc;
import dev.baton.v1.GetAgentRequest;
import dev.baton.v1.Lease;
import dev.baton.v1.Outcome;
import dev.baton.v1.RegisterRequest;
import dev.baton.v1.SubscribeResponse;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptors;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.stub.MetadataUtils;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * OpenTelemetry trace context from producer to worker and subscriber, against a live Baton: an
 * SDK with an in-memory exporter (synchronous span processor) installed as the global
 * OpenTelemetry, as an application would.
 */
class TracingTest {
  static BatonServer baton;
  static BatonClient client;
  static AgentServiceGrpc.AgentServiceBlockingStub agents;
  static final InMemorySpanExporter spans = InMemorySpanExporter.create();
  static SdkTracerProvider provider;
  static Tracer tracer;

  @BeforeAll
  static void start() throws Exception {
    provider = SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(spans)).build();
    OpenTelemetrySdk sdk = OpenTelemetrySdk.builder().setTracerProvider(provider).build();
    GlobalOpenTelemetry.resetForTest();
    GlobalOpenTelemetry.set(sdk);
    tracer = sdk.getTracer("tracing-test");
    baton = BatonServer.start();
    client = BatonClient.forTarget(baton.addr).build();
    agents = AgentServiceGrpc.newBlockingStub(client); // a plain stub over the connection object
  }

  @AfterAll
  static void stop() throws Exception {
    try {
      if (client != null) client.close();
      if (baton != null) baton.close();
    } finally {
      GlobalOpenTelemetry.resetForTest();
      if (provider != null) provider.close();
    }
  }

  static String traceparent(SpanContext c) {
    return "00-" + c.getTraceId() + "-" + c.getSpanId() + "-" + c.getTraceFlags().asHex();
  }

  /** Runs {@code body} inside a started (then ended) span "produce"; returns that span's context. */
  static SpanContext produce(Runnable body) {
    Span span = tracer.spanBuilder("produce").startSpan();
    try (Scope ignored = span.makeCurrent()) {
      body.run();
    } finally {
      span.end();
    }
    return span.getSpanContext();
  }

  static Agent.Builder agent(String name) {
    return Agent.newBuilder().setName(name).setTimeout(Durations.of(Duration.ofSeconds(30)))
        .setErrorInterval(Durations.of(Duration.ofHours(1)));
  }

  static void register(String queue, Agent.Builder agent) {
    agents.register(RegisterRequest.newBuilder().setQueue(queue).addAgents(agent).build());
  }

  static Agent stored(String queue, String name) {
    return agents.getAgent(GetAgentRequest.newBuilder().setQueue(queue).setName(name).build()).getAgent().getAgent();
  }

  static List<SpanData> named(String name) {
    List<SpanData> out = new ArrayList<>();
    for (SpanData s : spans.getFinishedSpanItems()) {
      if (s.getName().equals(name)) out.add(s);
    }
    return out;
  }

  /** The first ended span called {@code name}, waited for. */
  static SpanData awaitSpan(String name) throws Exception {
    eventually(15_000, "span " + name, () -> !named(name).isEmpty());
    return named(name).get(0);
  }

  static Worker.Builder worker(String queue) {
    return Worker.builder(client, queue, unique("w")).heartbeatEvery(Duration.ofMillis(200));
  }

  /** What the handler saw: the lease and the current span context while it ran. */
  record Seen(Lease lease, SpanContext current) {}

  @Test
  void oneShotRunJoinsTheProducersTrace() throws Exception {
    String queue = unique("java-otel-one");
    SpanContext producer = produce(() -> register(queue, agent("job")));
    // The SDK (1.68) marks its trace ids random (W3C Trace Context level 2): flags 03, not 01.
    assertTrue(producer.getTraceFlags().isSampled());
    String flags = producer.getTraceFlags().asHex();
    assertTrue(flags.equals("01") || flags.equals("03"), flags);
    String expected = "00-" + producer.getTraceId() + "-" + producer.getSpanId() + "-" + flags;
    assertEquals(expected, stored(queue, "job").getTraceparent());

    AtomicReference<Seen> seen = new AtomicReference<>();
    try (Worker w = worker(queue).build((lease, c) -> seen.set(new Seen(lease, Span.current().getSpanContext())))
        .start()) {
      SpanData run = awaitSpan("process " + queue);
      eventually(10_000, "handled", () -> seen.get() != null);
      assertEquals(expected, seen.get().lease().getAgent().getTraceparent());
      // The handler ran inside the run's span: same trace as the producer, the run's span id.
      assertEquals(producer.getTraceId(), seen.get().current().getTraceId());
      assertEquals(run.getSpanId(), seen.get().current().getSpanId());

      assertEquals(SpanKind.CONSUMER, run.getKind());
      assertEquals("baton-client", run.getInstrumentationScopeInfo().getName());
      assertEquals(producer.getTraceId(), run.getTraceId());
      assertEquals(producer.getSpanId(), run.getParentSpanId());
      assertTrue(run.getParentSpanContext().isRemote());
      assertTrue(run.getLinks().isEmpty());
      assertEquals("baton", run.getAttributes().get(Tracing.MESSAGING_SYSTEM));
      assertEquals("process", run.getAttributes().get(Tracing.MESSAGING_OPERATION_TYPE));
      assertEquals(queue, run.getAttributes().get(Tracing.MESSAGING_DESTINATION_NAME));
      assertEquals("job", run.getAttributes().get(Tracing.AGENT_NAME));
      assertEquals(seen.get().lease().getToken(), run.getAttributes().get(Tracing.LEASE_TOKEN));
      assertEquals(1L, run.getAttributes().get(Tracing.ATTEMPT));
      assertEquals("SUCCESS", run.getAttributes().get(Tracing.OUTCOME));
      assertEquals(StatusCode.UNSET, run.getStatus().getStatusCode());
      eventually(10_000, "completed", () -> Integer.valueOf(1).equals(baton.completed(queue).get("SUCCESS")));
    }
  }

  @Test
  void recurringRunIsANewTraceLinkedToTheProducer() throws Exception {
    String queue = unique("java-otel-every");
    SpanContext producer = produce(() -> register(queue, agent("tick").setInterval(Durations.of(Duration.ofHours(1)))));
    assertEquals(traceparent(producer), stored(queue, "tick").getTraceparent());

    AtomicReference<SpanContext> current = new AtomicReference<>();
    // The worker loop itself runs inside another span: the run must not be its child either.
    Span outer = tracer.spanBuilder("outer").startSpan();
    Worker w;
    try (Scope ignored = outer.makeCurrent()) {
      w = worker(queue).build((lease, c) -> current.set(Span.current().getSpanContext()));
    }
    Thread loop = new Thread(Context.current().with(outer).wrap(w::run), "worker-in-span");
    loop.start();
    try {
      SpanData run = awaitSpan("process " + queue);
      assertFalse(run.getParentSpanContext().isValid(), "a root span");
      assertNotEquals(producer.getTraceId(), run.getTraceId());
      assertNotEquals(outer.getSpanContext().getTraceId(), run.getTraceId());
      assertEquals(1, run.getLinks().size());
      SpanContext linked = run.getLinks().get(0).getSpanContext();
      assertEquals(producer.getTraceId(), linked.getTraceId());
      assertEquals(producer.getSpanId(), linked.getSpanId());
      assertEquals(SpanKind.CONSUMER, run.getKind());
      assertEquals("tick", run.getAttributes().get(Tracing.AGENT_NAME));
      eventually(10_000, "handled", () -> current.get() != null);
      assertEquals(run.getTraceId(), current.get().getTraceId());
      assertEquals(run.getSpanId(), current.get().getSpanId());
    } finally {
      w.close();
      loop.join(30_000);
      outer.end();
    }
  }

  @Test
  void scheduledMessageJoinsTheProducersTrace() throws Exception {
    String receiver = unique("java-otel-rcv");
    Scheduler scheduler = new Scheduler(client);
    AtomicReference<String> id = new AtomicReference<>();
    SpanContext producer = produce(() -> id.set(scheduler.schedule(receiver, "hi".getBytes(StandardCharsets.UTF_8)).getId()));

    AtomicReference<SubscribeResponse> message = new AtomicReference<>();
    AtomicReference<SpanContext> current = new AtomicReference<>();
    try (Subscriber sub = Subscriber.builder(client, receiver, "c1").build((m, c) -> {
      current.set(Span.current().getSpanContext());
      message.set(m);
    }).start()) {
      SpanData span = awaitSpan("process " + receiver);
      eventually(10_000, "acked", () -> sub.acked() == 1);
      assertEquals(traceparent(producer), message.get().getTraceparent());
      assertEquals(SpanKind.CONSUMER, span.getKind());
      assertEquals("baton-client", span.getInstrumentationScopeInfo().getName());
      assertEquals(producer.getTraceId(), span.getTraceId());
      assertEquals(producer.getSpanId(), span.getParentSpanId());
      assertEquals("baton", span.getAttributes().get(Tracing.MESSAGING_SYSTEM));
      assertEquals("process", span.getAttributes().get(Tracing.MESSAGING_OPERATION_TYPE));
      assertEquals(receiver, span.getAttributes().get(Tracing.MESSAGING_DESTINATION_NAME));
      assertEquals(id.get(), span.getAttributes().get(Tracing.MESSAGING_MESSAGE_ID));
      assertEquals(1L, span.getAttributes().get(Tracing.DELIVERY_COUNT));
      assertEquals(StatusCode.UNSET, span.getStatus().getStatusCode());
      assertEquals(span.getSpanId(), current.get().getSpanId());
      assertEquals(producer.getTraceId(), current.get().getTraceId());
    }
  }

  @Test
  void aCallWithoutASpanCarriesNoTraceparent() throws Exception {
    String queue = unique("java-otel-none");
    assertFalse(Span.current().getSpanContext().isValid());
    register(queue, agent("plain"));
    assertEquals("", stored(queue, "plain").getTraceparent());
    try (Worker w = worker(queue).build((lease, c) -> { }).start()) {
      SpanData run = awaitSpan("process " + queue);
      assertFalse(run.getParentSpanContext().isValid(), "a root span");
      assertTrue(run.getLinks().isEmpty());
    }
  }

  @Test
  void anExplicitTraceparentIsKept() {
    String queue = unique("java-otel-explicit");
    String mine = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    Metadata headers = new Metadata();
    headers.put(TraceContextInterceptor.TRACEPARENT, mine);
    produce(() -> agents.withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers))
        .register(RegisterRequest.newBuilder().setQueue(queue).addAgents(agent("mine")).build()));
    assertEquals(mine, stored(queue, "mine").getTraceparent());
  }

  @Test
  void aFailingHandlersSpanIsAnError() throws Exception {
    String queue = unique("java-otel-fail");
    produce(() -> register(queue, agent("bad")));
    try (Worker w = worker(queue).build((lease, c) -> {
      throw new Failure(Outcome.OUTCOME_UNKNOWN, "boom");
    }).start()) {
      SpanData run = awaitSpan("process " + queue);
      assertEquals(StatusCode.ERROR, run.getStatus().getStatusCode());
      assertEquals("boom", run.getStatus().getDescription());
      assertEquals("UNKNOWN", run.getAttributes().get(Tracing.OUTCOME));
      assertTrue(run.getEvents().stream().anyMatch(e -> e.getName().equals("exception")), "the exception recorded");
      eventually(10_000, "completed", () -> Integer.valueOf(1).equals(baton.completed(queue).get("UNKNOWN")));
    }
  }

  @Test
  void aFailingMessageHandlersSpanIsAnError() throws Exception {
    String receiver = unique("java-otel-rcv-fail");
    produce(() -> new Scheduler(client).schedule(receiver, new byte[0]));
    try (Subscriber sub = Subscriber.builder(client, receiver, "c1").build((m, c) -> {
      throw new IllegalStateException("nope");
    }).start()) {
      SpanData span = awaitSpan("process " + receiver);
      assertEquals(StatusCode.ERROR, span.getStatus().getStatusCode());
      assertTrue(span.getEvents().stream().anyMatch(e -> e.getName().equals("exception")), "the exception recorded");
      eventually(10_000, "failure counted", () -> sub.failed() >= 1);
    }
  }

  @Test
  void anExplicitOpenTelemetryIsUsedInsteadOfTheGlobalOne() throws Exception {
    InMemorySpanExporter mine = InMemorySpanExporter.create();
    try (SdkTracerProvider p = SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(mine)).build()) {
      String queue = unique("java-otel-own");
      register(queue, agent("job"));
      try (Worker w = worker(queue).openTelemetry(OpenTelemetrySdk.builder().setTracerProvider(p).build())
          .build((lease, c) -> { }).start()) {
        String name = "process " + queue;
        eventually(15_000, "span in the given SDK", () -> mine.getFinishedSpanItems().stream().anyMatch(s -> s.getName().equals(name)));
        assertTrue(named(name).isEmpty());
      }
    }
  }

  // --- the interceptor alone ---------------------------------------------------------------------

  /** The headers a call made through the interceptor starts with, made in {@code context}. */
  static Metadata headersOf(Context context, Supplier<Metadata> initial) {
    AtomicReference<Metadata> sent = new AtomicReference<>();
    Channel capture = new Channel() {
      @Override
      public <ReqT, RespT> ClientCall<ReqT, RespT> newCall(MethodDescriptor<ReqT, RespT> method, CallOptions options) {
        return new ClientCall<>() {
          @Override public void start(Listener<RespT> listener, Metadata headers) { sent.set(headers); }
          @Override public void request(int numMessages) { }
          @Override public void cancel(String message, Throwable cause) { }
          @Override public void halfClose() { }
          @Override public void sendMessage(ReqT message) { }
        };
      }

      @Override
      public String authority() {
        return "capture";
      }
    };
    Channel channel = ClientInterceptors.intercept(capture, new TraceContextInterceptor());
    ClientCall<GetAgentRequest, ?> call;
    try (Scope ignored = context.makeCurrent()) {
      call = channel.newCall(AgentServiceGrpc.getGetAgentMethod(), CallOptions.DEFAULT);
    }
    // Started outside the context: what counts is the context the call was made in.
    start(call, initial.get());
    return sent.get();
  }

  static <RespT> void start(ClientCall<GetAgentRequest, RespT> call, Metadata headers) {
    call.start(new ClientCall.Listener<RespT>() { }, headers);
  }

  @Test
  void theInterceptorSendsTraceparentAndTracestate() {
    SpanContext sc = SpanContext.create("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", TraceFlags.getSampled(),
        TraceState.builder().put("vendor", "value").build());
    Context context = Context.root().with(Span.wrap(sc));
    Metadata sent = headersOf(context, Metadata::new);
    assertEquals("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", sent.get(TraceContextInterceptor.TRACEPARENT));
    assertEquals("vendor=value", sent.get(TraceContextInterceptor.TRACESTATE));

    SpanContext plain = SpanContext.create("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", TraceFlags.getDefault(),
        TraceState.getDefault());
    sent = headersOf(Context.root().with(Span.wrap(plain)), Metadata::new);
    assertEquals("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", sent.get(TraceContextInterceptor.TRACEPARENT));
    assertNull(sent.get(TraceContextInterceptor.TRACESTATE), "no tracestate when empty");

    sent = headersOf(Context.root(), Metadata::new);
    assertNotNull(sent);
    assertFalse(sent.containsKey(TraceContextInterceptor.TRACEPARENT));
    assertFalse(sent.containsKey(TraceContextInterceptor.TRACESTATE));

    String mine = "00-11111111111111111111111111111111-2222222222222222-01";
    sent = headersOf(context, () -> {
      Metadata m = new Metadata();
      m.put(TraceContextInterceptor.TRACEPARENT, mine);
      return m;
    });
    assertEquals(List.of(mine), iterable(sent.getAll(TraceContextInterceptor.TRACEPARENT)));
    assertFalse(sent.containsKey(TraceContextInterceptor.TRACESTATE));
  }

  static List<String> iterable(Iterable<String> values) {
    List<String> out = new ArrayList<>();
    if (values != null) values.forEach(out::add);
    return out;
  }
}

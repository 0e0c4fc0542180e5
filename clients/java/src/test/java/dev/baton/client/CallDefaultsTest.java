package dev.baton.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.baton.v1.AcquireRequest;
import dev.baton.v1.AgentServiceGrpc;
import dev.baton.v1.ClaimServiceGrpc;
import dev.baton.v1.GetAgentRequest;
import dev.baton.v1.ScheduleServiceGrpc;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptors;
import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The interceptors of BatonClient, on a channel that records the calls made through it. */
class CallDefaultsTest {
  /** A call that records what was done to it. */
  static final class Recorded extends ClientCall<Object, Object> {
    final CallOptions options;
    final List<String> events = new ArrayList<>();
    Metadata headers;

    Recorded(CallOptions options) {
      this.options = options;
    }

    @Override
    public void start(Listener<Object> listener, Metadata headers) {
      this.headers = headers;
      events.add("start");
    }

    @Override
    public void request(int n) {
      events.add("request " + n);
    }

    @Override
    public void cancel(String message, Throwable cause) {
      events.add("cancel");
    }

    @Override
    public void halfClose() {
      events.add("halfClose");
    }

    @Override
    public void sendMessage(Object message) {
      events.add("send");
    }
  }

  static final class Recorder extends Channel {
    final List<Recorded> calls = new ArrayList<>();

    @Override
    @SuppressWarnings("unchecked")
    public <ReqT, RespT> ClientCall<ReqT, RespT> newCall(MethodDescriptor<ReqT, RespT> method, CallOptions options) {
      Recorded call = new Recorded(options);
      calls.add(call);
      return (ClientCall<ReqT, RespT>) (ClientCall<?, ?>) call;
    }

    @Override
    public String authority() {
      return "recorder";
    }
  }

  static long secondsLeft(CallOptions options) {
    return options.getDeadline().timeRemaining(TimeUnit.SECONDS);
  }

  static final ClientCall.Listener<Object> LISTENER = new ClientCall.Listener<>() {};

  @SuppressWarnings("unchecked")
  static <ReqT, RespT> ClientCall<Object, Object> call(Channel channel, MethodDescriptor<ReqT, RespT> method, CallOptions options) {
    return (ClientCall<Object, Object>) (ClientCall<?, ?>) channel.newCall(method, options);
  }

  @Test
  void unaryCallsWithoutADeadlineGetTheDefault() throws Exception {
    Recorder recorder = new Recorder();
    Channel channel = ClientInterceptors.intercept(recorder, new CallDefaults.DefaultDeadline(Duration.ofSeconds(100)));

    call(channel, AgentServiceGrpc.getGetAgentMethod(), CallOptions.DEFAULT);
    long left = secondsLeft(recorder.calls.get(0).options);
    assertTrue(left > 90 && left <= 100, left + " s");

    // A deadline of the call's own, or of its Context, wins.
    call(channel, AgentServiceGrpc.getGetAgentMethod(), CallOptions.DEFAULT.withDeadlineAfter(1, TimeUnit.HOURS));
    assertTrue(secondsLeft(recorder.calls.get(1).options) > 3000);
    ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    try (Context.CancellableContext ctx = Context.current().withDeadlineAfter(1, TimeUnit.HOURS, timer)) {
      ctx.run(() -> call(channel, AgentServiceGrpc.getGetAgentMethod(), CallOptions.DEFAULT));
    } finally {
      timer.shutdownNow();
    }
    assertNull(recorder.calls.get(2).options.getDeadline());

    // Streams get none.
    call(channel, ScheduleServiceGrpc.getSubscribeMethod(), CallOptions.DEFAULT);
    assertNull(recorder.calls.get(3).options.getDeadline());
  }

  @Test
  void aLongPollGetsTheDefaultPlusItsWait() {
    Recorder recorder = new Recorder();
    Channel channel = ClientInterceptors.intercept(recorder, new CallDefaults.DefaultDeadline(Duration.ofSeconds(100)));

    ClientCall<Object, Object> call = call(channel, AgentServiceGrpc.getAcquireMethod(), CallOptions.DEFAULT);
    call.start(LISTENER, new Metadata());
    call.request(2);
    assertEquals(0, recorder.calls.size(), "made when the request (and its wait) is known");
    call.sendMessage(AcquireRequest.newBuilder().setQueue("q").setWait(Durations.of(Duration.ofSeconds(1000))).build());
    call.halfClose();
    Recorded made = recorder.calls.get(0);
    assertEquals(List.of("start", "request 2", "send", "halfClose"), made.events);
    long left = secondsLeft(made.options);
    assertTrue(left > 1090 && left <= 1100, left + " s");

    // Without a wait: the default.
    call = call(channel, AgentServiceGrpc.getAcquireMethod(), CallOptions.DEFAULT);
    call.start(LISTENER, new Metadata());
    call.sendMessage(AcquireRequest.newBuilder().setQueue("q").build());
    left = secondsLeft(recorder.calls.get(1).options);
    assertTrue(left > 90 && left <= 100, left + " s");

    // Cancelled before the request: a real call is made and cancelled, so the listener hears.
    call = call(channel, ClaimServiceGrpc.getClaimMethod(), CallOptions.DEFAULT);
    call.start(LISTENER, new Metadata());
    call.cancel("stop", null);
    assertEquals(List.of("start", "cancel"), recorder.calls.get(2).events);

    // Its own deadline: passed straight through.
    call(channel, AgentServiceGrpc.getAcquireMethod(), CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS));
    assertTrue(secondsLeft(recorder.calls.get(3).options) <= 5);
  }

  @Test
  void theTokenGoesOnEveryCallUnlessOneIsSet() {
    Recorder recorder = new Recorder();
    Channel channel = ClientInterceptors.intercept(recorder, new CallDefaults.BearerToken("tok"));
    call(channel, AgentServiceGrpc.getGetAgentMethod(), CallOptions.DEFAULT).start(LISTENER, new Metadata());
    call(channel, ScheduleServiceGrpc.getSubscribeMethod(), CallOptions.DEFAULT).start(LISTENER, new Metadata());
    Metadata own = new Metadata();
    own.put(CallDefaults.AUTHORIZATION, "Bearer mine");
    call(channel, AgentServiceGrpc.getGetAgentMethod(), CallOptions.DEFAULT).start(LISTENER, own);
    assertEquals("Bearer tok", recorder.calls.get(0).headers.get(CallDefaults.AUTHORIZATION));
    assertEquals("Bearer tok", recorder.calls.get(1).headers.get(CallDefaults.AUTHORIZATION));
    assertEquals("Bearer mine", recorder.calls.get(2).headers.get(CallDefaults.AUTHORIZATION));
    List<String> values = new ArrayList<>();
    recorder.calls.get(2).headers.getAll(CallDefaults.AUTHORIZATION).forEach(values::add);
    assertEquals(List.of("Bearer mine"), values);
  }

  @Test
  void waitsAreReadFromTheRequest() {
    assertEquals(0, CallDefaults.waitNanos(GetAgentRequest.getDefaultInstance()));
    assertEquals(0, CallDefaults.waitNanos(AcquireRequest.getDefaultInstance()));
    assertEquals(1_500_000_000L, CallDefaults.waitNanos(AcquireRequest.newBuilder().setWait(Durations.of(Duration.ofMillis(1500))).build()));
    assertEquals(0, CallDefaults.waitNanos(AcquireRequest.newBuilder()
        .setWait(com.google.protobuf.Duration.newBuilder().setSeconds(-5)).build()));
    assertTrue(CallDefaults.waitNanos(AcquireRequest.newBuilder()
        .setWait(com.google.protobuf.Duration.newBuilder().setSeconds(Long.MAX_VALUE / 2)).build()) > 0);
    assertEquals(0, CallDefaults.waitNanos("not a message"));
  }
}

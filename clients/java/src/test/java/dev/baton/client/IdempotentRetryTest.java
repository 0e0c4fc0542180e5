package dev.baton.client;

import static dev.baton.client.BatonServer.eventually;
import static dev.baton.client.BatonServer.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import dev.baton.v1.Agent;
import dev.baton.v1.AgentServiceGrpc;
import dev.baton.v1.ClaimServiceGrpc;
import dev.baton.v1.ListAgentsRequest;
import dev.baton.v1.RegisterRequest;
import dev.baton.v1.ScheduleServiceGrpc;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Return, Fail, the unary worker's Complete and the unary subscriber's Ack retry UNAVAILABLE with
 * one request id: the first attempt goes through on the server, its answer is then replaced by
 * UNAVAILABLE (as when a connection drops after the call was applied), and the retry must get the
 * first call's answer back instead of LEASE_LOST.
 */
class IdempotentRetryTest {
  static BatonServer baton;

  @BeforeAll
  static void start() throws Exception {
    baton = BatonServer.start(BatonServer.QUICK_ENV);
  }

  @AfterAll
  static void stop() throws Exception {
    baton.close();
  }

  /** One call of the watched method: the request sent and the status the helper saw. */
  record Attempt(String requestId, Status.Code code) {}

  /**
   * Records every call of one method (its request_id and the status handed to the caller); the
   * first call reaches the server, but its answer is dropped and the caller sees UNAVAILABLE.
   */
  static final class DropFirstAnswer implements ClientInterceptor {
    final String method;
    final List<Attempt> attempts = Collections.synchronizedList(new ArrayList<>());
    private final AtomicBoolean dropped = new AtomicBoolean();

    DropFirstAnswer(MethodDescriptor<?, ?> method) {
      this.method = method.getFullMethodName();
    }

    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> m, CallOptions options, Channel next) {
      ClientCall<Q, R> call = next.newCall(m, options);
      if (!m.getFullMethodName().equals(method)) return call;
      boolean drop = dropped.compareAndSet(false, true);
      String[] requestId = {null};
      return new ForwardingClientCall.SimpleForwardingClientCall<>(call) {
        @Override
        public void sendMessage(Q message) {
          Message msg = (Message) message;
          FieldDescriptor field = msg.getDescriptorForType().findFieldByName("request_id");
          requestId[0] = (String) msg.getField(field);
          super.sendMessage(message);
        }

        @Override
        public void start(Listener<R> listener, Metadata headers) {
          super.start(new ForwardingClientCallListener.SimpleForwardingClientCallListener<>(listener) {
            @Override
            public void onMessage(R message) {
              if (!drop) super.onMessage(message);
            }

            @Override
            public void onClose(Status status, Metadata trailers) {
              if (drop && status.isOk()) status = Status.UNAVAILABLE.withDescription("test: answer dropped after the call was applied");
              attempts.add(new Attempt(requestId[0], status.getCode()));
              super.onClose(status, trailers);
            }
          }, headers);
        }
      };
    }

    /** Two attempts, the same non-empty request id on both, and the retry answered OK. */
    void assertRetriedWithOneRequestId() {
      List<Attempt> seen = List.copyOf(attempts);
      assertEquals(2, seen.size(), method + " attempts: " + seen);
      assertFalse(seen.get(0).requestId().isEmpty(), method + " sent no request id: " + seen);
      assertEquals(seen.get(0).requestId(), seen.get(1).requestId(), method + " attempts: " + seen);
      assertEquals(List.of(Status.Code.UNAVAILABLE, Status.Code.OK), seen.stream().map(Attempt::code).toList(), method + " attempts: " + seen);
    }
  }

  static Claim claim(DropFirstAnswer drop) throws Exception {
    Pool pool = new Pool(baton.channel, unique("java-idem"));
    pool.offer("vm-1");
    Channel channel = ClientInterceptors.intercept(baton.channel, drop);
    return Claimer.builder(channel, pool.name(), "java-claimer").wait(Duration.ofSeconds(2)).build().claim().orElseThrow();
  }

  @Test
  void returnRetriesWithOneRequestId() throws Exception {
    DropFirstAnswer drop = new DropFirstAnswer(ClaimServiceGrpc.getReturnMethod());
    Claim claim = claim(drop);
    claim.returnResource(true); // without the request id, the retry throws LEASE_LOST
    drop.assertRetriedWithOneRequestId();
    assertEquals(List.of(1L, 0L, 0L), ClaimerTest.counts(new Pool(baton.channel, claim.pool()).status()));
  }

  @Test
  void failRetriesWithOneRequestId() throws Exception {
    DropFirstAnswer drop = new DropFirstAnswer(ClaimServiceGrpc.getFailMethod());
    Claim claim = claim(drop);
    claim.fail("disk full");
    drop.assertRetriedWithOneRequestId();
    assertEquals(List.of(0L, 0L, 1L), ClaimerTest.counts(new Pool(baton.channel, claim.pool()).status()));
  }

  @Test
  void unaryCompleteRetriesWithOneRequestId() throws Exception {
    DropFirstAnswer drop = new DropFirstAnswer(AgentServiceGrpc.getCompleteMethod());
    String queue = unique("java-idem");
    AgentServiceGrpc.AgentServiceBlockingStub agents = AgentServiceGrpc.newBlockingStub(baton.channel);
    agents.register(RegisterRequest.newBuilder().setQueue(queue)
        .addAgents(Agent.newBuilder().setName("a0").setTimeout(Durations.of(Duration.ofSeconds(30)))).build());
    Channel channel = ClientInterceptors.intercept(baton.channel, drop);
    AtomicInteger runs = new AtomicInteger();
    try (Worker w = Worker.builder(channel, queue, unique("w")).unary(true).wait(Duration.ofSeconds(1))
        .heartbeatEvery(Duration.ofMillis(200)).build((lease, c) -> runs.incrementAndGet()).start()) {
      eventually(10_000, "the Complete retried", () -> drop.attempts.size() >= 2);
    }
    drop.assertRetriedWithOneRequestId();
    // Ran once and, without an interval, removed by the first Complete.
    assertEquals(1, runs.get());
    assertEquals(0, agents.listAgents(ListAgentsRequest.newBuilder().setQueue(queue).build()).getAgentsCount());
  }

  @Test
  void unaryAckRetriesWithOneRequestId() throws Exception {
    DropFirstAnswer drop = new DropFirstAnswer(ScheduleServiceGrpc.getAckMethod());
    String receiver = unique("java-idem");
    new Scheduler(baton.channel).schedule(receiver, "now".getBytes(StandardCharsets.UTF_8));
    Channel channel = ClientInterceptors.intercept(baton.channel, drop);
    try (Subscriber sub = Subscriber.builder(channel, receiver, "c1").unary(true).build((m, c) -> {}).start()) {
      eventually(10_000, "the Ack retried", () -> drop.attempts.size() >= 2);
      drop.assertRetriedWithOneRequestId();
      eventually(5_000, "acked once", () -> sub.acked() == 1);
      assertEquals(0, sub.lateAcks()); // a LEASE_LOST retry would count a late ack instead
    }
  }
}

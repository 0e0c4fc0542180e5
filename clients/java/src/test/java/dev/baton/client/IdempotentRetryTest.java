package dev.baton.client;

import static dev.baton.client.BatonServer.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import dev.baton.v1.AgentServiceGrpc;
import dev.baton.v1.ClaimServiceGrpc;
import dev.baton.v1.ListAgentsRequest;
import dev.baton.v1.OfferResponse;
import dev.baton.v1.RegisterResponse;
import dev.baton.v1.ScheduleResponse;
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
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Return, Fail, Register, Schedule and Offer retry UNAVAILABLE with one request id: the first attempt goes through on the server, its answer is then replaced by
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
    if (baton != null) baton.close(); // null: skipped, no Baton binary
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
  void registerRetriesWithOneRequestId() throws Exception {
    DropFirstAnswer drop = new DropFirstAnswer(AgentServiceGrpc.getRegisterMethod());
    String queue = unique("java-idem");
    Producer producer = new Producer(ClientInterceptors.intercept(baton.channel, drop));
    RegisterResponse r = producer.register(queue, Producer.oneShot("a0"), Producer.recurring("r0", Duration.ofHours(1)));
    drop.assertRetriedWithOneRequestId();
    assertEquals(2, r.getCreated(), "the retry gets the first call's answer"); // a second Register would count 2 updated
    AgentServiceGrpc.AgentServiceBlockingStub agents = AgentServiceGrpc.newBlockingStub(baton.channel);
    assertEquals(2, agents.listAgents(ListAgentsRequest.newBuilder().setQueue(queue).build()).getAgentsCount());
  }

  @Test
  void scheduleRetriesWithOneRequestId() throws Exception {
    DropFirstAnswer drop = new DropFirstAnswer(ScheduleServiceGrpc.getScheduleMethod());
    String receiver = unique("java-idem");
    Producer producer = new Producer(ClientInterceptors.intercept(baton.channel, drop));
    ScheduleResponse r = producer.schedule(receiver, "later".getBytes(StandardCharsets.UTF_8), Duration.ofHours(1), null);
    drop.assertRetriedWithOneRequestId();
    assertTrue(new Scheduler(baton.channel).cancel(receiver, r.getId()));
    assertFalse(new Scheduler(baton.channel).cancel(receiver, r.getId()), "one message, not two");
  }

  @Test
  void offerRetriesWithOneRequestId() throws Exception {
    DropFirstAnswer drop = new DropFirstAnswer(ClaimServiceGrpc.getOfferMethod());
    String pool = unique("java-idem");
    OfferResponse r = new Producer(ClientInterceptors.intercept(baton.channel, drop)).offer(pool, "vm-1", "vm-2");
    drop.assertRetriedWithOneRequestId();
    assertEquals(0, r.getDuplicates(), "the retry gets the first call's answer, not two duplicates");
    assertEquals(List.of(2L, 0L, 0L), ClaimerTest.counts(new Pool(baton.channel, pool).status()));
  }
}

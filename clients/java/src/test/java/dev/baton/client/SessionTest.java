package dev.baton.client;

import static dev.baton.client.BatonServer.eventually;
import static dev.baton.client.BatonServer.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.baton.v1.AcquireRequest;
import dev.baton.v1.Agent;
import dev.baton.v1.AgentServiceGrpc;
import dev.baton.v1.AgentState;
import dev.baton.v1.AgentStatus;
import dev.baton.v1.GetAgentRequest;
import dev.baton.v1.Lease;
import dev.baton.v1.ListAgentsRequest;
import dev.baton.v1.RegisterRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The worker's session stream against a live Baton: credit, lost leases, broken streams. */
class SessionTest {
  static BatonServer baton;
  static AgentServiceGrpc.AgentServiceBlockingStub stub;

  @BeforeAll
  static void start() throws Exception {
    baton = BatonServer.start();
    stub = AgentServiceGrpc.newBlockingStub(baton.channel);
  }

  @AfterAll
  static void stop() throws Exception {
    if (baton != null) baton.close(); // null: skipped, no Baton binary
  }

  static List<String> names(String prefix, int n) {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < n; i++) out.add(String.format("%s-%04d", prefix, i));
    return out;
  }

  static void register(AgentServiceGrpc.AgentServiceBlockingStub s, String queue, List<String> names, Duration timeout,
      Duration errorInterval) {
    for (int i = 0; i < names.size(); i += 500) {
      RegisterRequest.Builder r = RegisterRequest.newBuilder().setQueue(queue);
      for (String n : names.subList(i, Math.min(names.size(), i + 500))) {
        r.addAgents(Agent.newBuilder().setName(n).setTimeout(Durations.of(timeout)).setErrorInterval(Durations.of(errorInterval)));
      }
      s.register(r.build());
    }
  }

  @Test
  void completionOfALostLeaseIsRefusedAndTheWorkerGoesOn() throws Exception {
    String queue = unique("java-lostc");
    register(stub, queue, List.of("slow"), Duration.ofMillis(300), Duration.ofMillis(10));
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicReference<Long> first = new AtomicReference<>();
    List<String> done = new java.util.concurrent.CopyOnWriteArrayList<>();
    try (Worker w = Worker.builder(baton.channel, queue, unique("w")).heartbeatEvery(Duration.ofHours(1))
        .build((lease, c) -> {
          if (lease.getName().equals("slow") && first.compareAndSet(null, lease.getToken())) {
            started.countDown();
            release.await();
          }
          done.add(lease.getName());
        }).start()) {
      assertTrue(started.await(30, TimeUnit.SECONDS));
      AtomicReference<Lease> taken = new AtomicReference<>();
      eventually(30_000, "slow taken over", () -> {
        var r = stub.acquire(AcquireRequest.newBuilder().setQueue(queue).setWorkerId("other").setMaxLeases(1).build());
        if (r.getLeasesCount() == 1) taken.set(r.getLeases(0));
        return taken.get() != null;
      });
      assertTrue(taken.get().getToken() > first.get());
      release.countDown();
      register(stub, queue, List.of("next"), Duration.ofSeconds(30), Duration.ofHours(1));
      eventually(30_000, "next done", () -> done.contains("next"));
      AgentStatus st = stub.getAgent(GetAgentRequest.newBuilder().setQueue(queue).setName("slow").build()).getAgent();
      assertEquals(AgentState.AGENT_STATE_WORKING, st.getState());
      assertEquals(taken.get().getToken(), st.getToken());
      assertEquals("other", st.getHolder());
    }
  }

  @Test
  void aBatonRestartMidBatchLosesNothing() throws Exception {
    try (BatonServer own = BatonServer.start(BatonServer.QUICK_ENV)) {
      var s = AgentServiceGrpc.newBlockingStub(own.channel);
      String queue = unique("java-broken");
      List<String> all = names("b", 100);
      register(s, queue, all, Duration.ofSeconds(2), Duration.ofHours(1));
      Map<String, Integer> runs = new ConcurrentHashMap<>();
      AtomicInteger holding = new AtomicInteger();
      CountDownLatch gate = new CountDownLatch(1);
      try (Worker w = Worker.builder(own.channel, queue, unique("w")).maxLeases(10).heartbeatEvery(Duration.ofMillis(200))
          .build((lease, c) -> {
            runs.merge(lease.getName(), 1, Integer::sum);
            if (gate.getCount() > 0) {
              holding.incrementAndGet();
              gate.await();
            }
          }).start()) {
        eventually(30_000, "first leases running", () -> holding.get() == 10);
        own.restart();
        gate.countDown();
        eventually(60_000, "every agent done", () -> {
          try {
            return s.listAgents(ListAgentsRequest.newBuilder().setQueue(queue).setPageSize(1).build()).getAgentsCount() == 0;
          } catch (io.grpc.StatusRuntimeException e) {
            return false;
          }
        });
      }
      for (String n : all) assertTrue(runs.getOrDefault(n, 0) >= 1, n + " never ran");
    }
  }
}

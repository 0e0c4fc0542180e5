package dev.baton.client;

import static dev.baton.client.BatonServer.eventually;
import static dev.baton.client.BatonServer.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.baton.v1.Agent;
import dev.baton.v1.AgentServiceGrpc;
import dev.baton.v1.AgentState;
import dev.baton.v1.AgentStatus;
import dev.baton.v1.CancelRunRequest;
import dev.baton.v1.GetAgentRequest;
import dev.baton.v1.ListAgentsRequest;
import dev.baton.v1.Outcome;
import dev.baton.v1.RegisterRequest;
import java.io.IOException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The worker loop against a live Baton. */
class WorkerTest {
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

  static void register(String queue, List<String> names, Duration timeout, Duration interval) {
    RegisterRequest.Builder r = RegisterRequest.newBuilder().setQueue(queue);
    for (String n : names) {
      Agent.Builder a = Agent.newBuilder().setName(n).setTimeout(Durations.of(timeout)).setErrorInterval(Durations.of(Duration.ofHours(1)));
      if (!interval.isZero()) a.setInterval(Durations.of(interval));
      r.addAgents(a);
    }
    stub.register(r.build());
  }

  static AgentStatus agent(String queue, String name) {
    return stub.getAgent(GetAgentRequest.newBuilder().setQueue(queue).setName(name).build()).getAgent();
  }

  static Worker.Builder worker(String queue) {
    return Worker.builder(baton.channel, queue, unique("w")).heartbeatEvery(Duration.ofMillis(200));
  }

  @Test
  void happyPathRunsEachAgentOnce() throws Exception {
    String queue = unique("java-happy");
    List<String> names = List.of("a0", "a1", "a2", "a3", "a4", "a5");
    register(queue, names, Duration.ofSeconds(30), Duration.ZERO);
    List<String> seen = Collections.synchronizedList(new ArrayList<>());
    try (Worker w = worker(queue).maxLeases(2).build((lease, c) -> {
      assertEquals(queue, lease.getQueue());
      assertTrue(lease.getToken() > 0);
      Thread.sleep(50);
      seen.add(lease.getName());
    }).start()) {
      eventually(10_000, "all succeeded", () -> Integer.valueOf(6).equals(baton.completed(queue).get("SUCCESS")));
    }
    List<String> sorted = new ArrayList<>(seen);
    Collections.sort(sorted);
    assertEquals(names, sorted);
    assertEquals(0, stub.listAgents(ListAgentsRequest.newBuilder().setQueue(queue).build()).getAgentsCount());
  }

  @Test
  void heartbeatsKeepALongRunAlive() throws Exception {
    String queue = unique("java-long");
    register(queue, List.of("slow"), Duration.ofSeconds(1), Duration.ZERO);
    AtomicReference<Cancellation.Reason> cancelled = new AtomicReference<>();
    try (Worker w = worker(queue).heartbeatEvery(Duration.ofMillis(250)).build((lease, c) -> {
      try {
        c.await(2500, TimeUnit.MILLISECONDS); // 2.5 × the lease's timeout
      } finally {
        cancelled.set(c.reason());
      }
    }).start()) {
      eventually(10_000, "success", () -> Integer.valueOf(1).equals(baton.completed(queue).get("SUCCESS")));
    }
    assertEquals(null, cancelled.get());
  }

  @Test
  void progressIsShownAndACancelledRunCancelsTheHandler() throws Exception {
    {
      String queue = unique("java-cancel");
      register(queue, List.of("crawl"), Duration.ofSeconds(30), Duration.ofHours(1));
      AtomicReference<Worker> self = new AtomicReference<>();
      AtomicReference<String> how = new AtomicReference<>();
      CountDownLatch started = new CountDownLatch(1);
      Worker w = worker(queue).heartbeatEvery(Duration.ofMillis(100)).build((lease, c) -> {
        self.get().reportProgress(lease, "page 3 of 10");
        started.countDown();
        try {
          Thread.sleep(60_000);
        } catch (InterruptedException e) {
          how.set("interrupted " + c.reason());
          throw e;
        }
      });
      self.set(w);
      try (Worker running = w.start()) {
        assertTrue(started.await(10, TimeUnit.SECONDS));
        eventually(10_000, "progress shown", () -> agent(queue, "crawl").getProgress().equals("page 3 of 10"));
        assertTrue(stub.cancelRun(CancelRunRequest.newBuilder().setQueue(queue).setName("crawl").build()).getRequested());
        eventually(10_000, "handler interrupted", () -> how.get() != null);
        assertEquals("interrupted RUN_CANCELLED", how.get());
        eventually(10_000, "the run ended", () -> agent(queue, "crawl").getState() == AgentState.AGENT_STATE_WAITING);
      }
      assertEquals(Map.of(), baton.completed(queue), "a cancelled run is neither completed nor failed");
    }
  }

  @Test
  void aProgressReportHeartbeatsAtOnce() throws Exception {
    String queue = unique("java-progress");
    register(queue, List.of("crawl"), Duration.ofMinutes(5), Duration.ofHours(1));
    AtomicReference<Worker> self = new AtomicReference<>();
    CountDownLatch done = new CountDownLatch(1);
    // Beats a minute apart: only the report itself can carry the progress in time.
    Worker w = worker(queue).heartbeatEvery(Duration.ofMinutes(1)).build((lease, c) -> {
      self.get().reportProgress(lease, "1/2");
      done.await();
    });
    self.set(w);
    try (Worker running = w.start()) {
      eventually(5_000, "progress shown", () -> agent(queue, "crawl").getProgress().equals("1/2"));
      done.countDown();
    }
  }

  @Test
  void aRunWaitsForASignalAndGetsItsEvent() throws Exception {
    String queue = unique("java-wait");
    Producer producer = new Producer(baton.channel);
    producer.register(queue, Producer.oneShot("approve-me").setKeepResult(true)); // its finish outlives the run
    AtomicReference<Worker> self = new AtomicReference<>();
    Worker w = worker(queue).build((lease, c) -> {
      var event = WaitFor.event(lease);
      if (event.isEmpty()) throw new WaitFor("approve", Duration.ofMinutes(5));
      String result = event.get().getEvent() + ":" + event.get().getPayload().toStringUtf8();
      self.get().setResult(lease, result.getBytes(StandardCharsets.UTF_8));
    });
    self.set(w);
    try (Worker running = w.start()) {
      eventually(10_000, "waiting", () -> agent(queue, "approve-me").getState() == AgentState.AGENT_STATE_WAITING_FOR_EVENT);
      assertTrue(producer.signal(queue, "approve-me", "approve", "ok".getBytes(StandardCharsets.UTF_8), null).getDelivered());
      var result = producer.awaitResult(queue, "approve-me", Duration.ofSeconds(10));
      assertEquals("approve:ok", result.orElseThrow().getResult().toStringUtf8());
    }
  }

  static final class StatusException extends RuntimeException implements HttpStatusCarrier {
    final int status;

    StatusException(int status) {
      super("HTTP " + status);
      this.status = status;
    }

    public int httpStatus() {
      return status;
    }
  }

  @Test
  void errorsMapToOutcomes() throws Exception {
    String prefix = unique("java-outcome");
    Map<String, Object[]> cases = new LinkedHashMap<>();
    cases.put("http401", new Object[] {new StatusException(401), "PERMANENT_FORBIDDEN"});
    cases.put("http403", new Object[] {new RuntimeException(new StatusException(403)), "PERMANENT_FORBIDDEN"});
    cases.put("http429", new Object[] {new StatusException(429), "THROTTLED"});
    cases.put("http408", new Object[] {new StatusException(408), "TRANSIENT"});
    cases.put("http503", new Object[] {new StatusException(503), "SERVER_ERROR"});
    cases.put("http404", new Object[] {new StatusException(404), "UNKNOWN"});
    cases.put("io", new Object[] {new IOException("reset"), "TRANSIENT"});
    cases.put("timeout", new Object[] {new SocketTimeoutException("slow"), "TRANSIENT"});
    cases.put("bug", new Object[] {new IllegalStateException("bad"), "UNKNOWN"});
    cases.put("explicit", new Object[] {new Failure(Outcome.OUTCOME_THROTTLED, "quota").withRetryAfter(Duration.ofHours(2)), "THROTTLED"});
    List<Worker> workers = new ArrayList<>();
    for (Map.Entry<String, Object[]> c : cases.entrySet()) {
      String queue = prefix + "-" + c.getKey();
      register(queue, List.of("job"), Duration.ofSeconds(30), Duration.ZERO);
      Exception error = (Exception) c.getValue()[0];
      workers.add(worker(queue).build((lease, cancel) -> {
        throw error;
      }).start());
    }
    try {
      for (Map.Entry<String, Object[]> c : cases.entrySet()) {
        String queue = prefix + "-" + c.getKey();
        eventually(10_000, c.getKey(), () -> !baton.completed(queue).isEmpty());
        assertEquals(Map.of((String) c.getValue()[1], 1), baton.completed(queue), c.getKey());
      }
      // An explicit retry-after longer than the computed backoff wins.
      long next = agent(prefix + "-explicit", "job").getNextRunAt().getSeconds();
      assertTrue(next >= System.currentTimeMillis() / 1000 + 7000, "next run " + next);
    } finally {
      for (Worker w : workers) w.close();
    }
  }

  /**
   * A failure message far over the server's limit, of 2-, 3- and 4-byte characters, goes whole:
   * Baton clips it on a character boundary (ending in "…") instead of refusing the completion, so
   * the run is dead-lettered at once (not timed out).
   */
  @Test
  void longFailureMessagesAreSentWholeAndClippedByTheServer() throws Exception {
    String queue = unique("java-clip");
    stub.register(RegisterRequest.newBuilder().setQueue(queue).addAgents(Agent.newBuilder().setName("dies")
        .setTimeout(Durations.of(Duration.ofMinutes(1))).setErrorInterval(Durations.of(Duration.ofHours(1)))
        .setMaxAttempts(1)).build());
    String longMessage = "é€😀".repeat(1000);
    dev.baton.v1.AdminServiceGrpc.AdminServiceBlockingStub admin = dev.baton.v1.AdminServiceGrpc.newBlockingStub(baton.channel);
    dev.baton.v1.ListDeadLettersRequest list = dev.baton.v1.ListDeadLettersRequest.newBuilder()
        .setSource(dev.baton.v1.Source.newBuilder().setKind(dev.baton.v1.SourceKind.SOURCE_KIND_QUEUE).setName(queue)).build();
    try (Worker w = worker(queue).build((lease, c) -> {
      throw new Failure(Outcome.OUTCOME_UNKNOWN, longMessage);
    }).start()) {
      eventually(30_000, "dead-lettered", () -> admin.listDeadLetters(list).getDeadLettersCount() > 0);
    }
    String stored = admin.listDeadLetters(list).getDeadLetters(0).getMessage();
    assertTrue(stored.endsWith("…") && stored.length() < longMessage.length(), stored.length() + " chars");
    assertTrue(longMessage.startsWith(stored.substring(0, stored.length() - 1)), "a prefix of the original");
  }

  static int agentsIn(String queue, AgentState state) {
    return (int) stub.listAgents(ListAgentsRequest.newBuilder().setQueue(queue).setPageSize(1000).build()).getAgentsList()
        .stream().filter(a -> a.getState() == state).count();
  }
}

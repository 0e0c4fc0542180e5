package dev.baton.client;

import static dev.baton.client.BatonServer.eventually;
import static dev.baton.client.BatonServer.unique;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.baton.v1.AcquireRequest;
import dev.baton.v1.AcquireResponse;
import dev.baton.v1.Agent;
import dev.baton.v1.AgentServiceGrpc;
import dev.baton.v1.ListAgentsRequest;
import dev.baton.v1.PoolStatus;
import dev.baton.v1.RegisterRequest;
import dev.baton.v1.ScheduleResponse;
import dev.baton.v1.ScheduleServiceGrpc;
import dev.baton.v1.SubscribeRequest;
import dev.baton.v1.SubscribeResponse;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * One {@link BatonClient} shared by every helper, against a live Baton with TLS, mutual TLS and
 * API tokens (certificates from {@code baton dev-certs}, an admin token from {@code baton token}).
 */
class BatonClientTest {
  static Path certs;
  static Path otherCerts; // another CA, which did not sign Baton's certificate
  static String token;
  static Path tokensFile;
  static BatonServer baton;
  static BatonClient client;

  /** Runs the baton binary; returns its stdout. */
  static String baton(String... args) throws Exception {
    List<String> command = new ArrayList<>();
    command.add(BatonServer.binary());
    command.addAll(List.of(args));
    Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    String out = new String(p.getInputStream().readAllBytes(), UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "baton " + args[0] + " did not exit");
    assertEquals(0, p.exitValue(), "baton " + String.join(" ", args));
    return out;
  }

  @BeforeAll
  static void start() throws Exception {
    certs = Files.createTempDirectory("baton-java-certs-");
    otherCerts = Files.createTempDirectory("baton-java-other-certs-");
    baton("dev-certs", "--dir", certs.toString());
    baton("dev-certs", "--dir", otherCerts.toString());
    String out = baton("token", "--name", "java-admin", "--role", "admin");
    int eol = out.indexOf('\n');
    token = out.substring(0, eol).strip();
    assertTrue(token.length() > 10, "a token on the first line");
    tokensFile = certs.resolve("java-tokens.toml");
    Files.writeString(tokensFile, out.substring(eol + 1));
    Map<String, String> env = new HashMap<>();
    env.put("BATON_TLS__CERT_FILE", certs.resolve("server.pem").toString());
    env.put("BATON_TLS__KEY_FILE", certs.resolve("server.key").toString());
    env.put("BATON_TLS__CLIENT_CA_FILE", certs.resolve("ca.pem").toString());
    env.put("BATON_AUTH__TOKENS_FILE", tokensFile.toString());
    baton = BatonServer.start(env);
    client = tls().token(token).keepalive(Duration.ofSeconds(10), Duration.ofSeconds(5))
        .defaultTimeout(Duration.ofSeconds(10)).build();
  }

  @AfterAll
  static void stop() throws Exception {
    if (client != null) client.close();
    if (baton != null) baton.close();
    for (Path dir : new Path[] {certs, otherCerts}) {
      if (dir == null) continue;
      try (Stream<Path> files = Files.walk(dir)) {
        files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
      }
    }
  }

  /** The CA and the client certificate of dev-certs, no token. */
  static BatonClient.Builder tls() {
    return BatonClient.forTarget(baton.addr).caFile(certs.resolve("ca.pem"))
        .clientCertificate(certs.resolve("client.pem"), certs.resolve("client.key"));
  }

  static StatusRuntimeException fails(Status.Code code, Executable call) {
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class, call);
    assertEquals(code, e.getStatus().getCode(), e.toString());
    return e;
  }

  static void register(BatonClient c, String queue, List<String> names) {
    RegisterRequest.Builder r = RegisterRequest.newBuilder().setQueue(queue);
    for (String n : names) {
      r.addAgents(Agent.newBuilder().setName(n).setTimeout(Durations.of(Duration.ofSeconds(30)))
          .setErrorInterval(Durations.of(Duration.ofHours(1))));
    }
    AgentServiceGrpc.newBlockingStub(c).register(r.build()); // no deadline of its own: the default
  }

  @Test
  void aWorkerRunsEndToEndOverMutualTlsWithAToken() throws Exception {
    String queue = unique("java-tls-worker");
    List<String> names = List.of("a0", "a1", "a2");
    register(client, queue, names);
    List<String> seen = Collections.synchronizedList(new ArrayList<>());
    try (Worker w = Worker.builder(client, queue, unique("w")).maxLeases(2)
        .heartbeatEvery(Duration.ofMillis(200)).build((lease, c) -> seen.add(lease.getName())).start()) {
      eventually(30_000, "all succeeded", () -> Integer.valueOf(3).equals(baton.completed(queue).get("SUCCESS")));
    }
    List<String> sorted = new ArrayList<>(seen);
    Collections.sort(sorted);
    assertEquals(names, sorted);
    // The worker left the shared channel open.
    assertFalse(client.channel().isShutdown());
    assertEquals(0, AgentServiceGrpc.newBlockingStub(client.channel())
        .listAgents(ListAgentsRequest.newBuilder().setQueue(queue).build()).getAgentsCount());
  }

  @Test
  void oneClientIsSharedByClaimerPoolSchedulerAndSubscriber() throws Exception {
    Pool pool = new Pool(client, unique("java-tls-pool"));
    assertEquals(1, pool.offer("vm-1").getIdle());
    Claimer claimer = Claimer.builder(client, pool.name(), "java-tls-claimer").wait(Duration.ofSeconds(5)).build();
    AtomicReference<String> claimed = new AtomicReference<>();
    assertTrue(claimer.withClaim(claim -> {
      claimed.set(claim.id());
      assertEquals(1, pool.status().getClaimed());
    }));
    assertEquals("vm-1", claimed.get());
    PoolStatus st = pool.status();
    assertEquals(List.of(1L, 0L), List.of(st.getIdle(), st.getClaimed()));

    Scheduler scheduler = new Scheduler(client);
    String receiver = unique("java-tls-receiver");
    BlockingQueue<SubscribeResponse> received = new LinkedBlockingQueue<>();
    ScheduleResponse scheduled;
    try (Subscriber sub = Subscriber.builder(client, receiver, "c1").build((m, c) -> received.add(m)).start()) {
      scheduled = scheduler.schedule(receiver, "hello".getBytes(UTF_8), Duration.ofMillis(100), null);
      SubscribeResponse message = received.poll(30, TimeUnit.SECONDS);
      assertNotNull(message, "delivered");
      assertEquals(scheduled.getId(), message.getId());
      assertEquals("hello", message.getPayload().toStringUtf8());
      eventually(10_000, "acked", () -> sub.acked() == 1);
      assertEquals(0, sub.reconnects());
    }
    assertFalse(scheduler.cancel(receiver, scheduled.getId()), "acked, so gone");
    assertFalse(client.channel().isShutdown());
  }

  @Test
  void leadershipOnTheSharedClient() throws Exception {
    try (Leadership lead = new Leadership(client, unique("java-tls-election"), "a", Duration.ofSeconds(3),
        Duration.ofSeconds(1), null).start()) {
      assertTrue(lead.awaitElected(Duration.ofSeconds(30)) > 0);
    }
    assertFalse(client.channel().isShutdown());
  }

  @Test
  void theDefaultDeadlineCutsNeitherLongPollsNorStreams() throws Exception {
    try (BatonClient quick = tls().token(token).defaultTimeout(Duration.ofSeconds(2)).build()) {
      AgentServiceGrpc.AgentServiceBlockingStub stub = AgentServiceGrpc.newBlockingStub(quick);
      // Connected (TLS handshake done) before the timed call.
      stub.withDeadlineAfter(30, TimeUnit.SECONDS).listAgents(ListAgentsRequest.newBuilder().setQueue(unique("warm")).build());
      long t0 = System.nanoTime();
      AcquireResponse r = stub.acquire(AcquireRequest.newBuilder().setQueue(unique("java-empty")).setWorkerId("idle")
          .setMaxLeases(1).setWait(Durations.of(Duration.ofSeconds(4))).build());
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertEquals(0, r.getLeasesCount());
      assertTrue(ms >= 3_500, "the long poll waited " + ms + " ms, beyond the 2 s default");

      // A message due 3 s after subscribing comes on the first stream (not cut after 2 s).
      String receiver = unique("java-tls-stream");
      BlockingQueue<SubscribeResponse> received = new LinkedBlockingQueue<>();
      try (Subscriber sub = Subscriber.builder(quick, receiver, "c1").build((m, c) -> received.add(m)).start()) {
        new Scheduler(quick).schedule(receiver, "later".getBytes(UTF_8), Duration.ofSeconds(3), null);
        assertNotNull(received.poll(30, TimeUnit.SECONDS), "delivered");
        assertEquals(0, sub.reconnects());
      }
    }
  }

  @Test
  void withoutAValidTokenCallsAreUnauthenticated() throws Exception {
    try (BatonClient anonymous = tls().build()) {
      assertFalse(anonymous.hasToken());
      fails(Status.Code.UNAUTHENTICATED, () -> new Pool(anonymous, "java-anon").status());
      // Streams too.
      fails(Status.Code.UNAUTHENTICATED, () -> ScheduleServiceGrpc.newBlockingStub(anonymous).withDeadlineAfter(30, TimeUnit.SECONDS)
          .subscribe(SubscribeRequest.newBuilder().setReceiver("java-anon").setConsumerId("c").setMaxInFlight(1).build()).hasNext());
    }
    try (BatonClient wrong = tls().token("baton_not-a-token-of-this-server").build()) {
      fails(Status.Code.UNAUTHENTICATED, () -> new Scheduler(wrong).schedule("java-anon", new byte[0]));
    }
  }

  @Test
  void aWrongCaFailsTheCall() {
    try (BatonClient wrongCa = BatonClient.forTarget(baton.addr).caFile(otherCerts.resolve("ca.pem"))
        .clientCertificate(certs.resolve("client.pem"), certs.resolve("client.key")).token(token).build()) {
      fails(Status.Code.UNAVAILABLE, () -> new Pool(wrongCa, "java-wrong-ca").status());
    }
  }

  @Test
  void mutualTlsWantsACertificateOfItsCa() {
    try (BatonClient noCert = BatonClient.forTarget(baton.addr).caFile(certs.resolve("ca.pem")).token(token).build()) {
      fails(Status.Code.UNAVAILABLE, () -> new Pool(noCert, "java-no-cert").status());
    }
    try (BatonClient otherCert = BatonClient.forTarget(baton.addr).caFile(certs.resolve("ca.pem"))
        .clientCertificate(otherCerts.resolve("client.pem"), otherCerts.resolve("client.key")).token(token).build()) {
      fails(Status.Code.UNAVAILABLE, () -> new Pool(otherCert, "java-other-cert").status());
    }
  }

  @Test
  void theAuthorityOverrideIsWhatTheCertificateIsCheckedAgainst() {
    try (BatonClient byName = tls().token(token).overrideAuthority("localhost").build()) {
      assertEquals("localhost", byName.authority());
      assertEquals(0, new Pool(byName, unique("java-authority")).status().getIdle());
    }
    try (BatonClient wrongName = tls().token(token).overrideAuthority("baton.invalid").build()) {
      fails(Status.Code.UNAVAILABLE, () -> new Pool(wrongName, "java-authority").status());
    }
  }

  @Test
  void theTokenGoesOverPlaintextToo() throws Exception {
    try (BatonServer plain = BatonServer.start(Map.of("BATON_AUTH__TOKENS_FILE", tokensFile.toString()));
         BatonClient withToken = BatonClient.forTarget(plain.addr).token(token).build();
         BatonClient without = BatonClient.forTarget(plain.addr).build()) {
      assertFalse(withToken.usesTls());
      String receiver = unique("java-plain");
      BlockingQueue<SubscribeResponse> received = new LinkedBlockingQueue<>();
      try (Subscriber sub = Subscriber.builder(withToken, receiver, "c1").build((m, c) -> received.add(m)).start()) {
        new Scheduler(withToken).schedule(receiver, "plain".getBytes(UTF_8));
        assertNotNull(received.poll(30, TimeUnit.SECONDS), "delivered");
      }
      fails(Status.Code.UNAUTHENTICATED, () -> new Scheduler(without).schedule(receiver, new byte[0]));
    }
  }

  @Test
  void theBuilderChecksItsSettings() throws Exception {
    assertThrows(IllegalArgumentException.class, () -> BatonClient.forTarget("127.0.0.1:1")
        .clientCertificate(certs.resolve("client.pem"), null).build());
    assertThrows(UncheckedIOException.class, () -> BatonClient.forTarget("127.0.0.1:1")
        .caFile(certs.resolve("missing.pem")).build());
    assertThrows(IllegalStateException.class, () -> BatonClient.forTarget("127.0.0.1:1")
        .caFile(certs.resolve("ca.pem")).usePlaintext().build());
    assertThrows(IllegalArgumentException.class, () -> BatonClient.forTarget("127.0.0.1:1").token("two words"));
    assertThrows(IllegalArgumentException.class, () -> BatonClient.forTarget("127.0.0.1:1").defaultTimeout(Duration.ofSeconds(-1)));
    Path garbage = certs.resolve("garbage.pem");
    Files.writeString(garbage, "not a certificate\n");
    assertThrows(IllegalArgumentException.class, () -> BatonClient.forTarget("127.0.0.1:1").caFile(garbage).build().close());
    try (BatonClient c = BatonClient.forTarget("127.0.0.1:1").token(" secret-token\n").build()) {
      assertTrue(c.hasToken());
      assertFalse(c.toString().contains("secret"), c.toString());
      assertEquals(Duration.ofSeconds(10), c.defaultTimeout().orElseThrow());
    }
    try (BatonClient c = BatonClient.forTarget("127.0.0.1:1").caFile(certs.resolve("ca.pem").toString()).defaultTimeout(null).build()) {
      assertTrue(c.usesTls());
      assertTrue(c.defaultTimeout().isEmpty());
    }
  }

  /** The example worker, in its own JVM, with --ca-file, --cert-file, --key-file and $BATON_TOKEN. */
  @Test
  void theExampleWorkerTakesTheTlsFlagsAndTheTokenFromTheEnvironment() throws Exception {
    String queue = unique("java-tls-example");
    register(client, queue, List.of("job"));
    Path out = certs.resolve(queue + ".out");
    Path err = certs.resolve(queue + ".err");
    String java = ProcessHandle.current().info().command().orElse("java");
    ProcessBuilder pb = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
        "dev.baton.examples.ExampleWorker", "--addr", baton.addr, "--queue", queue, "--worker-id", "java-example",
        "--work-ms", "10", "--ca-file", certs.resolve("ca.pem").toString(),
        "--cert-file", certs.resolve("client.pem").toString(), "--key-file", certs.resolve("client.key").toString())
        .redirectOutput(out.toFile()).redirectError(err.toFile());
    pb.environment().put("BATON_TOKEN", token);
    Process p = pb.start();
    try {
      eventually(60_000, "the example worker ran the agent", () -> Files.readString(out).contains("\"event\":\"done\""));
      eventually(30_000, "completed", () -> Integer.valueOf(1).equals(baton.completed(queue).get("SUCCESS")));
      p.destroy(); // SIGTERM: the shutdown hook closes the worker
      assertTrue(p.waitFor(30, TimeUnit.SECONDS), "exited");
      assertTrue(Files.readString(out).contains("\"event\":\"stopped\""),
          "stopped; exit " + p.exitValue() + "; stdout: " + Files.readString(out) + "; stderr: " + Files.readString(err));
    } finally {
      p.destroy();
      if (!p.waitFor(30, TimeUnit.SECONDS)) p.destroyForcibly().waitFor();
    }
  }
}

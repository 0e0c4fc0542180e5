package dev.baton.client;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;

/**
 * A live Baton for the tests: target/debug/baton (or $TEST_BATON_BIN) with its own embedded
 * redis-server in a temporary data dir, on free loopback ports; stopped with SIGTERM after.
 */
final class BatonServer implements AutoCloseable {
  /**
   * For the claim and subscriber tests: unacked messages come back after 0.5 s, a pool's line
   * holds one waiting claim, and a full line hints a 250 ms pushback.
   */
  static final Map<String, String> QUICK_ENV = Map.of(
      "BATON_SCHEDULE__ACK_TIMEOUT_MS", "500",
      "BATON_POOL__MAX_LINE", "1",
      "BATON_POOL__FULL_LINE_PUSHBACK_MS", "250");

  final String addr;
  final int metricsPort;
  final ManagedChannel channel;
  private final int port;
  private final String binary;
  private final Map<String, String> env;
  private Process process;
  private final Path dataDir;

  private BatonServer(String binary, int port, int metricsPort, Map<String, String> env, Path dataDir) {
    this.binary = binary;
    this.port = port;
    this.addr = "127.0.0.1:" + port;
    this.metricsPort = metricsPort;
    this.env = env;
    this.dataDir = dataDir;
    this.channel = ManagedChannelBuilder.forTarget(addr).usePlaintext().build();
  }

  /** Sends a signal (e.g. "STOP", "CONT") to the Baton process, with kill(1). */
  void signal(String name) throws IOException, InterruptedException {
    Process p = process;
    int rc = new ProcessBuilder("kill", "-" + name, Long.toString(p.pid())).inheritIO().start().waitFor();
    if (rc != 0) throw new IOException("kill -" + name + " exited with " + rc);
  }

  /**
   * Two distinct free loopback ports (gRPC, metrics): both sockets are open at once, so the
   * kernel cannot hand out the same port twice.
   */
  static int[] freePorts() throws IOException {
    try (ServerSocket a = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress());
        ServerSocket b = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return new int[] {a.getLocalPort(), b.getLocalPort()};
    }
  }

  static BatonServer start() throws Exception {
    return start(Map.of());
  }

  /**
   * $TEST_BATON_BIN (which must exist), or target/debug/baton of the checkout; without either the
   * tests that need a Baton are skipped, so that {@code mvn install} works without one.
   */
  static String binary() throws IOException {
    String binary = System.getenv("TEST_BATON_BIN");
    if (binary != null && !binary.isEmpty()) {
      if (!new File(binary).canExecute()) throw new IllegalStateException("TEST_BATON_BIN=" + binary + " is not an executable");
      return binary;
    }
    binary = new File("../../target/debug/baton").getCanonicalPath();
    Assumptions.assumeTrue(new File(binary).canExecute(),
        "no Baton binary: set TEST_BATON_BIN or build target/debug/baton (cargo build --bin baton)");
    return binary;
  }

  static BatonServer start(Map<String, String> env) throws Exception {
    String binary = binary();
    // A port picked free can be taken by another process's connection before Baton binds it:
    // a Baton that exits while starting is started again on other ports (three tries).
    for (int attempt = 1; ; attempt++) {
      Path dataDir = Files.createTempDirectory("baton-java-");
      int[] ports = freePorts();
      BatonServer server = new BatonServer(binary, ports[0], ports[1], env, dataDir);
      try {
        server.spawn();
        return server;
      } catch (ExitedWhileStarting e) {
        server.close();
        if (attempt == 3) throw e;
      } catch (Exception e) {
        server.close();
        throw e;
      }
    }
  }

  private void spawn() throws Exception {
    ProcessBuilder pb = new ProcessBuilder(binary, "serve", "--listen", addr, "--metrics-listen", "127.0.0.1:" + metricsPort,
        "--data-dir", dataDir.toString())
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(dataDir.resolve("baton.log").toFile()));
    pb.environment().putAll(env);
    Process p = pb.start();
    process = p;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (true) {
      if (!p.isAlive()) throw new ExitedWhileStarting(p.exitValue(), dataDir.resolve("baton.log"));
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 200);
        return;
      } catch (IOException e) {
        if (System.nanoTime() > deadline) {
          p.destroyForcibly();
          throw new IllegalStateException("baton did not start listening within 30 s");
        }
        Thread.sleep(50);
      }
    }
  }

  /** Baton exited before it listened; carries the end of its log. */
  static final class ExitedWhileStarting extends IllegalStateException {
    ExitedWhileStarting(int code, Path log) {
      super("baton exited with " + code + ": " + tail(log));
    }

    private static String tail(Path log) {
      try {
        String text = Files.readString(log);
        return text.substring(Math.max(0, text.length() - 600));
      } catch (IOException e) {
        return "(no log: " + e + ")";
      }
    }
  }

  private void terminate() throws InterruptedException {
    Process p = process;
    if (p == null) return;
    p.destroy(); // SIGTERM
    if (!p.waitFor(15, TimeUnit.SECONDS)) p.destroyForcibly().waitFor();
  }

  /**
   * SIGTERM (streams end cleanly, long polls answer), then the same binary again on the same port
   * and data dir: what was in Redis is still there.
   */
  void restart() throws Exception {
    terminate();
    spawn();
  }

  private static final Pattern LABEL = Pattern.compile("(\\w+)=\"([^\"]*)\"");

  /** baton_agents_completed_total for {@code queue}, by outcome. */
  Map<String, Integer> completed(String queue) throws Exception {
    HttpResponse<String> r = HttpClient.newHttpClient().send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + metricsPort + "/metrics")).build(),
        HttpResponse.BodyHandlers.ofString());
    Map<String, Integer> counts = new HashMap<>();
    for (String line : r.body().split("\n")) {
      if (!line.startsWith("baton_agents_completed_total{")) continue;
      Map<String, String> labels = new HashMap<>();
      Matcher m = LABEL.matcher(line);
      while (m.find()) labels.put(m.group(1), m.group(2));
      if (queue.equals(labels.get("queue"))) {
        counts.put(labels.get("outcome"), (int) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1)));
      }
    }
    return counts;
  }

  @Override
  public void close() throws Exception {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    terminate();
    try (Stream<Path> files = Files.walk(dataDir)) {
      files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    }
  }

  interface Probe {
    boolean ok() throws Exception;
  }

  static void eventually(long timeoutMs, String what, Probe probe) throws Exception {
    long deadline = System.currentTimeMillis() + timeoutMs;
    while (!probe.ok()) {
      if (System.currentTimeMillis() > deadline) throw new AssertionError(what + ": not within " + timeoutMs + " ms");
      Thread.sleep(50);
    }
  }

  static String unique(String prefix) {
    return prefix + "-" + Long.toHexString(System.nanoTime() & 0xffffffffL);
  }
}

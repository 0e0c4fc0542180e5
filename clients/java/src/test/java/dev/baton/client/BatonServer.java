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

/**
 * A live Baton for the tests: target/debug/baton (or $TEST_BATON_BIN) with its own embedded
 * redis-server in a temporary data dir, on free loopback ports; stopped with SIGTERM after.
 */
final class BatonServer implements AutoCloseable {
  final String addr;
  final int metricsPort;
  final ManagedChannel channel;
  private final Process process;
  private final Path dataDir;

  private BatonServer(String addr, int metricsPort, Process process, Path dataDir) {
    this.addr = addr;
    this.metricsPort = metricsPort;
    this.process = process;
    this.dataDir = dataDir;
    this.channel = ManagedChannelBuilder.forTarget(addr).usePlaintext().build();
  }

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  static BatonServer start() throws Exception {
    String binary = System.getenv("TEST_BATON_BIN");
    if (binary == null || binary.isEmpty()) {
      binary = new File("../../target/debug/baton").getCanonicalPath();
    }
    if (!new File(binary).canExecute()) {
      throw new IllegalStateException(binary + " is missing: build it with `cargo build --bin baton`");
    }
    Path dataDir = Files.createTempDirectory("baton-java-");
    int port = freePort();
    int metricsPort = freePort();
    String addr = "127.0.0.1:" + port;
    Process p = new ProcessBuilder(binary, "serve", "--listen", addr, "--metrics-listen", "127.0.0.1:" + metricsPort,
        "--data-dir", dataDir.toString())
        .redirectErrorStream(true)
        .redirectOutput(dataDir.resolve("baton.log").toFile())
        .start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (true) {
      if (!p.isAlive()) throw new IllegalStateException("baton exited with " + p.exitValue());
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 200);
        break;
      } catch (IOException e) {
        if (System.nanoTime() > deadline) {
          p.destroyForcibly();
          throw new IllegalStateException("baton did not start listening within 30 s");
        }
        Thread.sleep(50);
      }
    }
    return new BatonServer(addr, metricsPort, p, dataDir);
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
    process.destroy(); // SIGTERM
    if (!process.waitFor(15, TimeUnit.SECONDS)) process.destroyForcibly().waitFor();
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

package dev.baton.examples;

import dev.baton.client.BatonClient;
import dev.baton.client.Worker;
import dev.baton.v1.Lease;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * An example Baton worker, with the same flags and output as the Rust {@code baton-worker}: it
 * takes agents from one queue, "works" on each for --work-ms (or until its lease is lost) and
 * completes it with SUCCESS, printing every lease it acquires and every end as a JSON line on
 * stdout. SIGINT/SIGTERM release held leases before exiting.
 *
 * <pre>
 * java -cp … dev.baton.examples.ExampleWorker --addr 127.0.0.1:50051 --queue demo --worker-id java-1
 * </pre>
 *
 * <p>For a Baton with TLS, mutual TLS and tokens, add --ca-file (TLS), --cert-file and --key-file
 * (a client certificate) and --token (or the environment variable BATON_TOKEN):
 *
 * <pre>
 * BATON_TOKEN=baton_… java -cp … dev.baton.examples.ExampleWorker --addr localhost:50051 \
 *     --ca-file ca.pem --cert-file client.pem --key-file client.key --queue demo --worker-id java-1
 * </pre>
 */
public final class ExampleWorker {
  private static synchronized void emit(String event, Lease lease) {
    System.out.printf("{\"event\":\"%s\",\"name\":\"%s\",\"token\":%d,\"t\":%d}%n",
        event, lease.getName(), lease.getToken(), System.currentTimeMillis());
    System.out.flush();
  }

  private static final String USAGE = "usage: ExampleWorker --queue Q --worker-id ID [--addr HOST:PORT] [--max-leases N]"
      + " [--work-ms MS] [--heartbeat-ms MS] [--ca-file PEM] [--cert-file PEM --key-file PEM] [--token TOKEN]";

  private static void usage(String problem) {
    if (problem != null) System.err.println("ExampleWorker: " + problem);
    System.err.println(USAGE);
    System.exit(2);
  }

  public static void main(String[] argv) throws Exception {
    Map<String, String> args = new HashMap<>(Map.of("--addr", "127.0.0.1:50051", "--max-leases", "1",
        "--work-ms", "1000", "--heartbeat-ms", "10000"));
    for (int i = 0; i + 1 < argv.length; i += 2) args.put(argv[i], argv[i + 1]);
    if (!args.containsKey("--queue") || !args.containsKey("--worker-id")) usage(null);
    if (args.containsKey("--cert-file") != args.containsKey("--key-file")) usage("--cert-file and --key-file go together");
    String workerId = args.get("--worker-id");
    long workMs = Long.parseLong(args.get("--work-ms"));
    String token = args.getOrDefault("--token", System.getenv("BATON_TOKEN"));
    BatonClient client;
    try {
      client = BatonClient.forTarget(args.get("--addr").replaceFirst("^http://", ""))
          .caFile(args.get("--ca-file"))
          .clientCertificate(args.get("--cert-file"), args.get("--key-file"))
          .token(token)
          .build();
    } catch (RuntimeException e) { // unreadable certificate files, a malformed token
      usage(e.getMessage());
      return;
    }
    Worker worker = Worker.builder(client, args.get("--queue"), workerId)
        .maxLeases(Integer.parseInt(args.get("--max-leases")))
        .heartbeatEvery(Duration.ofMillis(Long.parseLong(args.get("--heartbeat-ms"))))
        .build((lease, cancellation) -> {
          emit("acquired", lease);
          boolean cancelled;
          try {
            cancelled = cancellation.await(workMs, TimeUnit.MILLISECONDS);
          } catch (InterruptedException e) {
            cancelled = true; // the worker interrupts a cancelled handler too
          }
          emit(cancelled ? "cancelled" : "done", lease);
        });
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      worker.close(); // releases held leases
      System.out.printf("{\"event\":\"stopped\",\"worker_id\":\"%s\"}%n", workerId);
      System.out.flush();
      stopped.countDown();
    }));
    worker.run();
    stopped.await(15, TimeUnit.SECONDS);
    client.close();
  }
}

package dev.baton.examples;

import dev.baton.client.Worker;
import dev.baton.v1.Lease;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
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
 */
public final class ExampleWorker {
  private static synchronized void emit(String event, Lease lease) {
    System.out.printf("{\"event\":\"%s\",\"name\":\"%s\",\"token\":%d,\"t\":%d}%n",
        event, lease.getName(), lease.getToken(), System.currentTimeMillis());
    System.out.flush();
  }

  public static void main(String[] argv) throws Exception {
    Map<String, String> args = new HashMap<>(Map.of("--addr", "127.0.0.1:50051", "--max-leases", "1",
        "--work-ms", "1000", "--heartbeat-ms", "10000"));
    for (int i = 0; i + 1 < argv.length; i += 2) args.put(argv[i], argv[i + 1]);
    if (!args.containsKey("--queue") || !args.containsKey("--worker-id")) {
      System.err.println("usage: ExampleWorker --queue Q --worker-id ID [--addr HOST:PORT] [--max-leases N] [--work-ms MS] [--heartbeat-ms MS]");
      System.exit(2);
    }
    String workerId = args.get("--worker-id");
    long workMs = Long.parseLong(args.get("--work-ms"));
    ManagedChannel channel = ManagedChannelBuilder.forTarget(args.get("--addr").replaceFirst("^http://", "")).usePlaintext().build();
    Worker worker = Worker.builder(channel, args.get("--queue"), workerId)
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
    channel.shutdown().awaitTermination(5, TimeUnit.SECONDS);
  }
}

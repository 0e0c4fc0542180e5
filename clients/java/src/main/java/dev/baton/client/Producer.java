package dev.baton.client;

import dev.baton.v1.Agent;
import dev.baton.v1.AgentServiceGrpc;
import dev.baton.v1.OfferResponse;
import dev.baton.v1.RegisterRequest;
import dev.baton.v1.RegisterResponse;
import dev.baton.v1.ScheduleResponse;
import io.grpc.Channel;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * The producer's side of Baton: registers agents (work for workers), schedules messages and offers
 * pool resources. Every call carries a new request id and is retried on UNAVAILABLE (or a deadline
 * passed) with that same id, so a retry after an unknown outcome never applies twice.
 *
 * <pre>{@code
 * Producer producer = new Producer(client);
 * producer.register("emails", Producer.oneShot("welcome-42").setPayload(ByteString.copyFromUtf8("{…}")));
 * producer.register("reports", Producer.recurring("daily", Duration.ofDays(1)).setKey("tenant-7"));
 * producer.schedule("billing", payload, Duration.ofMinutes(10), "invoice-7");
 * producer.offer("vms", "vm-1", "vm-2");
 * }</pre>
 */
public final class Producer {
  private final Channel channel;
  private final AgentServiceGrpc.AgentServiceBlockingStub agents;

  /** A producer on {@code channel}: a shared {@link BatonClient} or any Channel (never shut down here). */
  public Producer(Channel channel) {
    this.channel = Objects.requireNonNull(channel, "channel");
    this.agents = AgentServiceGrpc.newBlockingStub(channel);
  }

  /** A one-shot agent, due at once: run once, removed after its first success. */
  public static Agent.Builder oneShot(String name) {
    return Agent.newBuilder().setName(name);
  }

  /** A recurring agent: due at once, then {@code interval} after the start of each successful run. */
  public static Agent.Builder recurring(String name, Duration interval) {
    return Agent.newBuilder().setName(name).setInterval(Durations.of(interval));
  }

  /** A recurring agent on a cron expression (UTC; {@code setTimeZone} for another). */
  public static Agent.Builder cron(String name, String expression) {
    return Agent.newBuilder().setName(name).setCron(expression);
  }

  /** Registers (upserts) agents into {@code queue}. */
  public RegisterResponse register(String queue, Agent.Builder... agents) {
    return register(queue, Arrays.stream(agents).map(Agent.Builder::build).toList(), null);
  }

  /**
   * Registers (upserts) agents into {@code queue}, with {@code requestId} (null: a new one): a
   * call repeated with the same id within the server's retention answers as the first did.
   */
  public RegisterResponse register(String queue, List<Agent> list, String requestId) {
    RegisterRequest.Builder request = RegisterRequest.newBuilder().setQueue(queue).addAllAgents(list);
    return Backoff.idempotent(requestId == null ? java.util.UUID.randomUUID().toString() : requestId,
        id -> agents.withDeadlineAfter(10, TimeUnit.SECONDS).register(request.setRequestId(id).build()));
  }

  /** A message due after {@code delay} (null: at once), as {@link Scheduler#schedule(String, byte[], Duration, String)}. */
  public ScheduleResponse schedule(String receiver, byte[] payload, Duration delay, String key) {
    return new Scheduler(channel).schedule(receiver, payload, delay, key);
  }

  /** Offers resources without attributes to {@code pool}, as {@link Pool#offer(String...)}. */
  public OfferResponse offer(String pool, String... ids) {
    return new Pool(channel, pool).offer(ids);
  }
}

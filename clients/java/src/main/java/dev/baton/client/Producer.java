package dev.baton.client;

import com.google.protobuf.ByteString;
import dev.baton.v1.Agent;
import dev.baton.v1.AgentRef;
import dev.baton.v1.AgentResult;
import dev.baton.v1.AgentServiceGrpc;
import dev.baton.v1.AwaitRequest;
import dev.baton.v1.AwaitResponse;
import dev.baton.v1.BatchStatus;
import dev.baton.v1.CloseBatchRequest;
import dev.baton.v1.GetBatchRequest;
import dev.baton.v1.OfferResponse;
import dev.baton.v1.RegisterBatchRequest;
import dev.baton.v1.RegisterBatchResponse;
import dev.baton.v1.RegisterRequest;
import dev.baton.v1.RegisterResponse;
import dev.baton.v1.RegisteredAgent;
import dev.baton.v1.ScheduleResponse;
import dev.baton.v1.SignalRequest;
import dev.baton.v1.SignalResponse;
import dev.baton.v1.WatchAgentRequest;
import dev.baton.v1.WatchAgentResponse;
import io.grpc.Channel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The producer's side of Baton: registers agents (work for workers, with parents and idempotency
 * keys), waits for an agent's result, registers batches with callbacks, schedules messages and
 * offers pool resources. Every call that changes something carries a new request id and is
 * retried on UNAVAILABLE (or a deadline passed) with that same id, so a retry after an unknown
 * outcome never applies twice. Waiting is Baton's: Await holds each call until the agent
 * finishes (woken by the finish, no polling).
 *
 * <pre>{@code
 * Producer producer = new Producer(client);
 * producer.register("emails", Producer.oneShot("welcome-42").setPayload(ByteString.copyFromUtf8("{…}")));
 * producer.register("reports", Producer.recurring("daily", Duration.ofDays(1)).setKey("tenant-7"));
 * producer.register("etl", Producer.oneShot("load").addAfter(Producer.parent("etl", "extract")));
 * Optional<AgentResult> done = producer.registerAndAwait("resize", Producer.oneShot("img-7"), Duration.ofSeconds(30));
 * producer.registerBatch(Producer.batch("nightly", "etl").addAgents(Producer.oneShot("a").build())
 *     .addOnComplete(Producer.oneShot("report").build()).setClose(true));
 * producer.schedule("billing", payload, Duration.ofMinutes(10), "invoice-7");
 * producer.offer("vms", "vm-1", "vm-2");
 * }</pre>
 */
public final class Producer {
  /**
   * The most one Await call is held before it is made again (as {@link Leadership}'s campaign
   * wait): Baton refuses waits beyond its {@code limits.max_wait_ms}.
   */
  public static final Duration AWAIT_WAIT = Duration.ofSeconds(30);

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

  /**
   * A parent for {@link Agent.Builder#addAfter(AgentRef)}: the agent runs once every parent
   * succeeded, and its lease carries their results ({@code getParentsList()}). {@code queue} ""
   * is the child's own; {@code setOnFailure} on the result overrides the child's policy.
   */
  public static AgentRef parent(String queue, String name) {
    return AgentRef.newBuilder().setQueue(queue).setName(name).build();
  }

  /**
   * A batch request to fill ({@code addAgents}; on the call that creates the batch, {@code
   * setCallbackQueue}, {@code addOnSuccess}, {@code addOnComplete}; {@code setClose}) and send
   * with {@link #registerBatch}.
   */
  public static RegisterBatchRequest.Builder batch(String batch, String queue) {
    return RegisterBatchRequest.newBuilder().setBatch(batch).setQueue(queue);
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

  /**
   * Request/reply over the fleet: registers one one-shot agent, then waits for its finish ({@link
   * #awaitResult}). A deduplicated registration waits for the key's holder, or answers its kept
   * result at once. Empty when {@code timeout} (null: no limit) passed first; the agent stays.
   */
  public Optional<AgentResult> registerAndAwait(String queue, Agent.Builder agent, Duration timeout) {
    long started = System.nanoTime();
    RegisteredAgent registered = register(queue, agent).getAgents(0);
    if (registered.hasResult()) return Optional.of(registered.getResult());
    Duration left = timeout == null ? null : timeout.minusNanos(System.nanoTime() - started);
    return awaitResult(queue, registered.getName(), left == null || !left.isNegative() ? left : Duration.ZERO);
  }

  /** {@link #awaitResult(String, String, Duration, long)} of any finish kept. */
  public Optional<AgentResult> awaitResult(String queue, String name, Duration timeout) {
    return awaitResult(queue, name, timeout, 0);
  }

  /**
   * Waits for the agent's finish (succeeded, dead-lettered, cancelled or unregistered) and returns
   * it, with the result its worker set; a finish Baton still keeps answers at once. Each Await call
   * is held at most {@link #AWAIT_WAIT} and made again until the finish, or {@code timeout} (null:
   * no limit; then empty). {@code afterToken} skips finishes of a recurring agent's runs up to that
   * lease token. Throws the call's StatusRuntimeException (NOT_FOUND: no such agent and no finish
   * kept; CANCELLED when the thread is interrupted); UNAVAILABLE is retried.
   */
  public Optional<AgentResult> awaitResult(String queue, String name, Duration timeout, long afterToken) {
    long deadline = timeout == null ? 0 : System.nanoTime() + timeout.toNanos();
    Backoff backoff = new Backoff();
    while (true) {
      long leftNanos = Math.max(0, deadline - System.nanoTime());
      Duration wait = timeout == null || leftNanos > AWAIT_WAIT.toNanos() ? AWAIT_WAIT : Duration.ofNanos(leftNanos);
      AwaitRequest request = AwaitRequest.newBuilder().setQueue(queue).setName(name).setAfterToken(afterToken)
          .setWait(Durations.of(wait)).build();
      AwaitResponse answer;
      try {
        answer = agents.withDeadlineAfter(wait.toMillis() + 10_000, TimeUnit.MILLISECONDS).await(request);
      } catch (StatusRuntimeException e) {
        if (e.getStatus().getCode() != Status.Code.UNAVAILABLE) throw e;
        try {
          TimeUnit.MILLISECONDS.sleep(backoff.next(e));
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw Status.CANCELLED.withDescription("interrupted").withCause(ie).asRuntimeException();
        }
        continue;
      }
      backoff.reset();
      if (answer.getDone()) return Optional.of(answer.getResult());
      if (timeout != null && System.nanoTime() - deadline >= 0) return Optional.empty();
    }
  }

  /**
   * Signals {@code event}, with {@code payload} (null: none), to the agent: a run waiting for it
   * is due at once (its lease carries the event, {@link WaitFor#event}), otherwise the signal is
   * kept for the wait that names it. {@code requestId} null: a new one; retried with it while the
   * outcome is unknown. Throws NOT_FOUND when there is no such agent.
   */
  public SignalResponse signal(String queue, String name, String event, byte[] payload, String requestId) {
    SignalRequest.Builder request = SignalRequest.newBuilder().setQueue(queue).setName(name).setEvent(event)
        .setPayload(payload == null ? ByteString.EMPTY : ByteString.copyFrom(payload));
    return Backoff.idempotent(requestId == null ? java.util.UUID.randomUUID().toString() : requestId,
        id -> agents.withDeadlineAfter(10, TimeUnit.SECONDS).signal(request.setRequestId(id).build()));
  }

  /**
   * Follows the agent's run as it happens (WatchAgent): first a snapshot, then each lease granted,
   * progress reported and step recorded, and last the finish ({@code WATCH_UPDATE_FINISHED},
   * {@code getFinish()} as Await answers). Ends after the finish, or after {@code timeout} (at most
   * the server's limits.max_wait_ms) without one. {@code hasNext} throws the call's
   * StatusRuntimeException.
   */
  public Iterator<WatchAgentResponse> watch(String queue, String name, Duration timeout) {
    WatchAgentRequest request = WatchAgentRequest.newBuilder().setQueue(queue).setName(name)
        .setWait(Durations.of(timeout)).build();
    return agents.withDeadlineAfter(timeout.toMillis() + 10_000, TimeUnit.MILLISECONDS).watchAgent(request);
  }

  /**
   * Adds the request's agents to its batch, creating the batch on its first call with its
   * callbacks: {@code on_success} run once when every member succeeded, {@code on_complete} once
   * when every member finished; their leases carry the batch's finish. Answers the batch's status.
   */
  public RegisterBatchResponse registerBatch(RegisterBatchRequest.Builder request) {
    return agents.withDeadlineAfter(10, TimeUnit.SECONDS).registerBatch(request.build());
  }

  /** Closes {@code batch}: no member may be added; it is done once its members finished. */
  public BatchStatus closeBatch(String batch) {
    return agents.withDeadlineAfter(10, TimeUnit.SECONDS).closeBatch(CloseBatchRequest.newBuilder().setBatch(batch).build()).getStatus();
  }

  /** The batch's members counted by how they finished, whether it is closed and done, its callbacks. */
  public BatchStatus getBatch(String batch) {
    return agents.withDeadlineAfter(10, TimeUnit.SECONDS).getBatch(GetBatchRequest.newBuilder().setBatch(batch).build()).getStatus();
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

package dev.baton.client;

import com.google.gson.Gson;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import dev.baton.v1.Agent;
import dev.baton.v1.AgentResult;
import dev.baton.v1.AgentServiceGrpc;
import dev.baton.v1.BatchStatus;
import dev.baton.v1.CancelRunRequest;
import dev.baton.v1.IdempotencyMode;
import dev.baton.v1.Lease;
import dev.baton.v1.RegisterBatchRequest;
import dev.baton.v1.RegisterResponse;
import dev.baton.v1.Step;
import dev.baton.v1.WatchAgentResponse;
import dev.baton.v1.WatchUpdate;
import io.grpc.StatusRuntimeException;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.context.propagation.TextMapGetter;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The conformance driver (clients/conformance/DRIVER.md): JSON commands on stdin, one per line,
 * mapped onto the public helpers; JSON events on stdout. Connects to $BATON_TARGET.
 */
public final class ConformanceDriver {
  private static final Gson GSON = new com.google.gson.GsonBuilder().serializeNulls().create();
  private final BatonClient client = BatonClient.forTarget(System.getenv("BATON_TARGET")).build();
  private final Producer producer = new Producer(client);
  private final Map<String, Worker> workers = new ConcurrentHashMap<>();
  private final Map<String, Leadership> leaders = new ConcurrentHashMap<>();
  /** Held runs by worker id and agent name: counted down by finish / finish_all. */
  private final Map<String, Map<String, CountDownLatch>> holds = new ConcurrentHashMap<>();

  /** A handler error carrying an HTTP status the way HTTP client libraries' exceptions do. */
  public static final class HttpStatusException extends RuntimeException {
    private final int status;

    HttpStatusException(int status, String message) {
      super(message);
      this.status = status;
    }

    public int getStatusCode() {
      return status;
    }
  }

  public static void main(String[] args) throws Exception {
    new ConformanceDriver().serve();
  }

  private static synchronized void emit(Object... keysAndValues) {
    Map<String, Object> event = new LinkedHashMap<>();
    for (int i = 0; i < keysAndValues.length; i += 2) event.put((String) keysAndValues[i], keysAndValues[i + 1]);
    System.out.println(GSON.toJson(event));
    System.out.flush();
  }

  private void serve() throws Exception {
    emit("event", "ready");
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      if (line.isBlank()) continue;
      String cmd = "?";
      try {
        JsonObject c = JsonParser.parseString(line).getAsJsonObject();
        cmd = c.get("cmd").getAsString();
        handle(cmd, c);
      } catch (RuntimeException e) {
        emit("event", "error", "cmd", cmd, "message", String.valueOf(e));
      }
    }
    // EOF: everything stops gracefully.
    List<Thread> stopping = new ArrayList<>();
    workers.forEach((id, w) -> stopping.add(background(() -> stopWorker(id))));
    leaders.forEach((id, l) -> stopping.add(background(() -> closeLeader(id))));
    for (Thread t : stopping) t.join();
    client.close();
    System.exit(0);
  }

  private static Thread background(Runnable r) {
    Thread t = new Thread(r);
    t.start();
    return t;
  }

  private void handle(String cmd, JsonObject c) {
    String id = c.get("id").getAsString();
    switch (cmd) {
      case "register" -> background(() -> register(id, c, null));
      case "traced_register" -> background(() -> register(id, c, c.get("traceparent").getAsString()));
      case "worker" -> startWorker(id, c);
      case "finish" -> Optional.ofNullable(holds.get(id)).map(h -> h.remove(c.get("name").getAsString()))
          .ifPresent(CountDownLatch::countDown);
      case "finish_all" -> Optional.ofNullable(holds.get(id)).ifPresent(h -> {
        h.values().forEach(CountDownLatch::countDown);
        h.clear();
      });
      case "stop" -> background(() -> stopWorker(id));
      case "leader" -> startLeader(id, c);
      case "close" -> background(() -> closeLeader(id));
      case "claim" -> background(() -> claim(id, c));
      case "call" -> background(() -> awaited(id, () -> producer.registerAndAwait(c.get("queue").getAsString(),
          agent(c, c.get("name").getAsString()), Duration.ofMillis(c.get("timeout_ms").getAsLong()))));
      case "await" -> background(() -> awaited(id, () -> producer.awaitResult(c.get("queue").getAsString(),
          c.get("name").getAsString(), Duration.ofMillis(c.get("timeout_ms").getAsLong()))));
      case "batch" -> background(() -> {
        RegisterBatchRequest.Builder request = Producer.batch(c.get("batch").getAsString(), c.get("queue").getAsString())
            .setClose(c.has("close") && c.get("close").getAsBoolean());
        if (c.has("callback_queue")) request.setCallbackQueue(c.get("callback_queue").getAsString());
        names(c, "names").forEach(n -> request.addAgents(agent(c, n)));
        names(c, "on_success").forEach(n -> request.addOnSuccess(Producer.oneShot(n)));
        names(c, "on_complete").forEach(n -> request.addOnComplete(Producer.oneShot(n)));
        batch(id, producer.registerBatch(request).getStatus());
      });
      case "signal" -> background(() -> {
        try {
          var r = producer.signal(c.get("queue").getAsString(), c.get("name").getAsString(), c.get("event").getAsString(),
              c.has("payload") ? c.get("payload").getAsString().getBytes(StandardCharsets.UTF_8) : null,
              c.has("request_id") ? c.get("request_id").getAsString() : null);
          emit("event", "signalled", "id", id, "delivered", r.getDelivered(), "kept", r.getKept(),
              "duplicate", r.getDuplicate(), "consumed", r.getConsumed());
        } catch (StatusRuntimeException e) {
          emit("event", "failed", "id", id, "code", e.getStatus().getCode().name());
        }
      });
      case "watch" -> background(() -> watch(id, c));
      case "cancel" -> background(() -> {
        try {
          var r = AgentServiceGrpc.newBlockingStub(client).cancelRun(CancelRunRequest.newBuilder()
              .setQueue(c.get("queue").getAsString()).setName(c.get("name").getAsString())
              .setCascade(c.has("cascade") && c.get("cascade").getAsBoolean()).build());
          emit("event", "cancel", "id", id, "requested", r.getRequested(), "cascaded", r.getCascaded());
        } catch (StatusRuntimeException e) {
          emit("event", "failed", "id", id, "code", e.getStatus().getCode().name());
        }
      });
      case "close_batch" -> background(() -> batch(id, producer.closeBatch(c.get("batch").getAsString())));
      case "batch_status" -> background(() -> batch(id, producer.getBatch(c.get("batch").getAsString())));
      default -> throw new IllegalArgumentException("unknown command " + cmd);
    }
  }

  private static List<String> names(JsonObject c, String field) {
    List<String> names = new ArrayList<>();
    if (c.has(field)) for (JsonElement name : c.getAsJsonArray(field)) names.add(name.getAsString());
    return names;
  }

  /** A one-shot agent {@code name} with the command's parents, idempotency key, mode and ttl. */
  private static Agent.Builder agent(JsonObject c, String name) {
    Agent.Builder a = Producer.oneShot(name);
    if (c.has("after")) {
      for (JsonElement p : c.getAsJsonArray("after")) {
        JsonObject ref = p.getAsJsonObject();
        a.addAfter(Producer.parent(ref.has("queue") ? ref.get("queue").getAsString() : "", ref.get("name").getAsString()));
      }
    }
    if (c.has("idempotency_key")) a.setIdempotencyKey(c.get("idempotency_key").getAsString());
    if (c.has("ttl_ms")) a.setTtl(Durations.of(Duration.ofMillis(c.get("ttl_ms").getAsLong())));
    if (c.has("idempotency_mode")) {
      // keep_first, replace, debounce → IDEMPOTENCY_MODE_KEEP_FIRST, …
      String mode = c.get("idempotency_mode").getAsString().toUpperCase(java.util.Locale.ROOT);
      a.setIdempotencyMode(IdempotencyMode.valueOf("IDEMPOTENCY_MODE_" + mode));
    }
    if (c.has("wait_for")) {
      JsonObject w = c.getAsJsonObject("wait_for");
      a.setWaitFor(new WaitFor(w.get("event").getAsString(),
          w.has("timeout_ms") ? Duration.ofMillis(w.get("timeout_ms").getAsLong()) : null).toProto());
    }
    if (c.has("debounce_ms")) a.setDebounce(Durations.of(Duration.ofMillis(c.get("debounce_ms").getAsLong())));
    return a;
  }

  private static void awaited(String id, java.util.function.Supplier<Optional<AgentResult>> waiting) {
    try {
      Optional<AgentResult> result = waiting.get();
      if (result.isEmpty()) {
        emit("event", "awaited", "id", id, "done", false);
      } else {
        emit("event", "awaited", "id", id, "done", true, "finish", result.get().getFinish().name(),
            "result", result.get().getResult().toStringUtf8());
      }
    } catch (StatusRuntimeException e) {
      emit("event", "failed", "id", id, "code", e.getStatus().getCode().name());
    }
  }

  private void watch(String id, JsonObject c) {
    try {
      var updates = producer.watch(c.get("queue").getAsString(), c.get("name").getAsString(),
          Duration.ofMillis(c.has("timeout_ms") ? c.get("timeout_ms").getAsLong() : 10_000));
      while (updates.hasNext()) {
        WatchAgentResponse u = updates.next();
        emit("event", "watch_update", "id", id, "update", u.getUpdate().name(), "state", u.getState().name(),
            "token", u.getToken(), "sequence", u.getSequence(), "progress", u.getProgress(),
            "steps", u.getStepsList().stream().map(Step::getName).toList());
        if (u.getUpdate() == WatchUpdate.WATCH_UPDATE_FINISHED) {
          var f = u.getFinish();
          emit("event", "watched", "id", id, "done", true, "finish", f.getResult().getFinish().name(),
              "result", f.getResult().getResult().toStringUtf8(), "steps", f.getStepsList().stream().map(Step::getName).toList());
          return;
        }
      }
      emit("event", "watched", "id", id, "done", false);
    } catch (StatusRuntimeException e) {
      emit("event", "failed", "id", id, "code", e.getStatus().getCode().name());
    }
  }

  private static void batch(String id, BatchStatus s) {
    emit("event", "batch", "id", id, "total", s.getTotal(), "pending", s.getPending(), "succeeded", s.getSucceeded(),
        "failed", s.getFailed(), "closed", s.getClosed(), "done", s.getDone());
  }

  private void register(String id, JsonObject c, String traceparent) {
    List<Agent> agents = new ArrayList<>();
    for (String name : names(c, "names")) agents.add(agent(c, name).build());
    String requestId = c.has("request_id") ? c.get("request_id").getAsString() : null;
    Context context = traceparent == null ? Context.current()
        : W3CTraceContextPropagator.getInstance().extract(Context.root(), traceparent, new TextMapGetter<String>() {
          @Override public Iterable<String> keys(String carrier) { return List.of("traceparent"); }
          @Override public String get(String carrier, String key) { return "traceparent".equals(key) ? carrier : null; }
        });
    try (Scope ignored = context.makeCurrent()) {
      RegisterResponse r = producer.register(c.get("queue").getAsString(), agents, requestId);
      List<Map<String, Object>> answered = new ArrayList<>();
      for (var a : r.getAgentsList()) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", a.getName());
        m.put("created", a.getCreated());
        m.put("deduplicated", a.getDeduplicated());
        m.put("result", a.getResult().getResult().toStringUtf8());
        m.put("replaced", a.getReplaced());
        m.put("debounced", a.getDebounced());
        answered.add(m);
      }
      emit("event", "registered", "id", id, "count", r.getCreated() + r.getUpdated(), "deduplicated", r.getDeduplicated(),
          "agents", answered);
    } catch (StatusRuntimeException e) {
      emit("event", "failed", "id", id, "code", e.getStatus().getCode().name());
    }
  }

  private void startWorker(String id, JsonObject c) {
    JsonObject h = c.getAsJsonObject("handler");
    String mode = h.get("mode").getAsString();
    Map<String, CountDownLatch> held = holds.computeIfAbsent(id, k -> new ConcurrentHashMap<>());
    Worker.Builder b = Worker.builder(client, c.get("queue").getAsString(), c.get("worker_id").getAsString())
        .onFinished((lease, failure) -> emit("event", "finished", "id", id, "name", lease.getName(), "token", lease.getToken()));
    if (c.has("concurrency")) b.maxLeases(c.get("concurrency").getAsInt());
    if (c.has("heartbeat_ms")) b.heartbeatEvery(Duration.ofMillis(c.get("heartbeat_ms").getAsLong()));
    AtomicReference<Worker> self = new AtomicReference<>();
    Worker w = b.build((lease, cancellation) -> {
      // The latch exists before "started" is out, so a finish sent at once finds it.
      CountDownLatch finish = mode.equals("hold") ? held.computeIfAbsent(lease.getName(), k -> new CountDownLatch(1)) : null;
      List<Map<String, Object>> parents = new ArrayList<>();
      for (AgentResult p : lease.getParentsList()) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("queue", p.getQueue());
        m.put("name", p.getName());
        m.put("finish", p.getFinish().name());
        m.put("result", p.getResult().toStringUtf8());
        parents.add(m);
      }
      List<String> steps = lease.getStepsList().stream().map(s -> s.getName()).toList();
      Map<String, Object> event = WaitFor.event(lease).map(e -> {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("event", e.getEvent());
        m.put("payload", e.getPayload().toStringUtf8());
        m.put("timed_out", e.getTimedOut());
        return m;
      }).orElse(null);
      emit("event", "started", "id", id, "name", lease.getName(), "token", lease.getToken(), "parents", parents, "steps", steps,
          "lease_event", event);
      if (mode.equals("wait_for_event")) {
        if (event == null) {
          emit("event", "waiting", "id", id, "name", lease.getName(), "token", lease.getToken());
          throw new WaitFor(h.get("event").getAsString(), h.has("timeout_ms") ? Duration.ofMillis(h.get("timeout_ms").getAsLong()) : null);
        }
        var e = lease.getEvent();
        self.get().setResult(lease, (e.getTimedOut() ? "timeout:" + e.getEvent() : e.getEvent() + ":" + e.getPayload().toStringUtf8())
            .getBytes(StandardCharsets.UTF_8));
        return;
      }
      boolean failing = mode.equals("fail");
      if (mode.equals("steps")) {
        var todo = h.getAsJsonArray("steps");
        for (int i = 0; i < todo.size(); i++) {
          String step = todo.get(i).getAsString();
          if (Worker.recordedStep(lease, step).isPresent()) continue;
          if (h.has("progress") && h.get("progress").getAsBoolean()) self.get().sendProgress(lease, (i + 1) + "/" + todo.size());
          var answer = self.get().recordStep(lease, step, ("r-" + step).getBytes(StandardCharsets.UTF_8));
          emit("event", "step", "id", id, "name", lease.getName(), "token", lease.getToken(), "step", step,
              "recorded", answer.getRecorded());
          if (h.has("fail_after") && step.equals(h.get("fail_after").getAsString())) {
            failing = true;
            break;
          }
        }
      }
      switch (failing ? "fail" : mode) {
        case "succeed" -> {
          if (h.has("result")) {
            self.get().setResult(lease, h.get("result").getAsString().replace("{name}", lease.getName()).getBytes(StandardCharsets.UTF_8));
          }
        }
        case "hold" -> {
          try {
            finish.await();
          } catch (InterruptedException e) {
            held.remove(lease.getName(), finish);
            cancelled(id, lease, cancellation);
            throw e;
          }
        }
        case "fail" -> {
          String message = h.has("message") ? h.get("message").getAsString() : "failed";
          if (h.has("http_status")) throw new HttpStatusException(h.get("http_status").getAsInt(), message);
          throw new IllegalStateException(message);
        }
        case "steps" -> {}
        default -> throw new IllegalArgumentException("unknown handler mode " + mode);
      }
    });
    self.set(w);
    workers.put(id, w);
    w.start();
  }

  private static void cancelled(String id, Lease lease, Cancellation cancellation) {
    emit("event", "cancelled", "id", id, "name", lease.getName(), "token", lease.getToken(),
        "reason", String.valueOf(cancellation.reason()));
  }

  private void stopWorker(String id) {
    Worker w = workers.remove(id);
    if (w == null) return;
    w.close();
    emit("event", "stopped", "id", id);
  }

  private void startLeader(String id, JsonObject c) {
    Leadership l = new Leadership(client, c.get("election").getAsString(), c.get("candidate_id").getAsString(),
        Duration.ofMillis(c.get("ttl_ms").getAsLong()), new Leadership.Listener() {
          @Override public void elected(long token) { emit("event", "elected", "id", id, "token", token); }
          @Override public void lost(long token) { emit("event", "lost", "id", id, "token", token); }
        });
    leaders.put(id, l);
    l.start();
  }

  private void closeLeader(String id) {
    Leadership l = leaders.remove(id);
    if (l == null) return;
    l.close();
    emit("event", "closed", "id", id);
  }

  private void claim(String id, JsonObject c) {
    Claimer claimer = Claimer.builder(client, c.get("pool").getAsString(), "driver-" + id).build();
    try {
      Optional<Claim> claimed = claimer.claim(Duration.ofMillis(c.has("wait_ms") ? c.get("wait_ms").getAsLong() : 0));
      if (claimed.isEmpty()) {
        emit("event", "nothing", "id", id);
        return;
      }
      Claim claim = claimed.get();
      emit("event", "claimed", "id", id, "resource_id", claim.id(), "token", claim.token());
      if (c.has("fail_with")) claim.fail(c.get("fail_with").getAsString());
      else claim.returnResource(true);
      emit("event", "ended", "id", id);
    } catch (StatusRuntimeException | LineFullException e) {
      emit("event", "error", "cmd", "claim", "message", String.valueOf(e));
    }
  }
}

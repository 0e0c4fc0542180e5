package dev.baton.client;

import static dev.baton.client.BatonServer.eventually;
import static dev.baton.client.BatonServer.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.baton.v1.AckRequest;
import dev.baton.v1.ScheduleResponse;
import dev.baton.v1.ScheduleServiceGrpc;
import dev.baton.v1.SubscribeResponse;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Scheduled messages and the subscriber against a live Baton (ack timeout 0.5 s). */
class SubscriberTest {
  static BatonServer baton;
  static Scheduler scheduler;
  static ScheduleServiceGrpc.ScheduleServiceBlockingStub stub;

  @BeforeAll
  static void start() throws Exception {
    baton = BatonServer.start(BatonServer.QUICK_ENV);
    scheduler = new Scheduler(baton.channel);
    stub = ScheduleServiceGrpc.newBlockingStub(baton.channel);
  }

  @AfterAll
  static void stop() throws Exception {
    if (baton != null) baton.close(); // null: skipped, no Baton binary
  }

  static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static String text(SubscribeResponse m) {
    return m.getPayload().toStringUtf8();
  }

  @Test
  void messagesAreHandledAndAcked() throws Exception {
    String receiver = unique("java-rcv");
    ScheduleResponse first = scheduler.schedule(receiver, bytes("now"));
    ScheduleResponse later = scheduler.schedule(receiver, bytes("later"), Duration.ofMillis(300), null);
    assertTrue(first.getCreated() && !later.getId().equals(first.getId()));
    List<SubscribeResponse> seen = Collections.synchronizedList(new ArrayList<>());
    List<Long> at = Collections.synchronizedList(new ArrayList<>());
    try (Subscriber sub = Subscriber.builder(baton.channel, receiver, "c1").maxInFlight(2).build((m, c) -> {
      seen.add(m);
      at.add(System.currentTimeMillis());
    }).start()) {
      eventually(10_000, "both acked", () -> sub.acked() == 2);
      assertEquals(List.of("later", "now"), seen.stream().map(SubscriberTest::text).sorted().toList());
      for (int i = 0; i < seen.size(); i++) {
        assertEquals(1, seen.get(i).getDeliveryCount());
        if (text(seen.get(i)).equals("later")) {
          assertTrue(at.get(i) >= later.getDeliverAt().getSeconds() * 1000 + later.getDeliverAt().getNanos() / 1_000_000 - 10);
        }
      }
      // Acked for good: the token is spent, and nothing comes back after the ack timeout.
      for (SubscribeResponse m : List.copyOf(seen)) {
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> stub.ack(
            AckRequest.newBuilder().setReceiver(receiver).setId(m.getId()).setToken(m.getToken()).build()));
        assertTrue(Worker.isLeaseLost(e));
      }
      Thread.sleep(1_000);
      assertEquals(2, seen.size());
      assertEquals(0, sub.failed());
    }
  }

  @Test
  void atMostMaxInFlightHandlersAtOnce() throws Exception {
    String receiver = unique("java-par");
    for (int i = 0; i < 6; i++) scheduler.schedule(receiver, bytes("m" + i));
    AtomicInteger running = new AtomicInteger();
    AtomicInteger peak = new AtomicInteger();
    try (Subscriber sub = Subscriber.builder(baton.channel, receiver, "c1").maxInFlight(3).build((m, c) -> {
      peak.accumulateAndGet(running.incrementAndGet(), Math::max);
      Thread.sleep(150);
      running.decrementAndGet();
    }).start()) {
      eventually(10_000, "all acked", () -> sub.acked() == 6);
    }
    assertEquals(3, peak.get());
  }

  @Test
  void aFailedMessageIsNotAckedAndComesBack() throws Exception {
    String receiver = unique("java-fail");
    scheduler.schedule(receiver, bytes("flaky"));
    List<Integer> counts = Collections.synchronizedList(new ArrayList<>());
    List<String> failures = Collections.synchronizedList(new ArrayList<>());
    try (Subscriber sub = Subscriber.builder(baton.channel, receiver, "c1")
        .listener(new Subscriber.Listener() {
          @Override
          public void failed(SubscribeResponse message, Throwable error) {
            failures.add(message.getDeliveryCount() + " " + error.getMessage());
          }
        })
        .build((m, c) -> {
          counts.add(m.getDeliveryCount());
          if (m.getDeliveryCount() == 1) throw new java.io.IOException("downstream unavailable");
        }).start()) {
      eventually(10_000, "acked on the second delivery", () -> sub.acked() == 1);
      assertEquals(List.of(1, 2), counts);
      assertEquals(List.of("1 downstream unavailable"), failures);
      assertEquals(1, sub.failed());
    }
  }

  @Test
  void closeLetsRunningHandlersFinishAndAcksThem() throws Exception {
    String receiver = unique("java-drain");
    scheduler.schedule(receiver, bytes("m"));
    CountDownLatch started = new CountDownLatch(1);
    AtomicInteger finished = new AtomicInteger();
    Subscriber sub = Subscriber.builder(baton.channel, receiver, "c1").shutdownGrace(Duration.ofSeconds(5)).build((m, c) -> {
      started.countDown();
      Thread.sleep(300);
      finished.incrementAndGet();
    }).start();
    assertTrue(started.await(10, TimeUnit.SECONDS));
    sub.close();
    assertEquals(1, finished.get());
    assertEquals(1, sub.acked());
    // Nothing left: a new subscriber gets nothing, even after the ack timeout.
    List<SubscribeResponse> seen = Collections.synchronizedList(new ArrayList<>());
    try (Subscriber other = Subscriber.builder(baton.channel, receiver, "c2").build((m, c) -> seen.add(m)).start()) {
      Thread.sleep(1_000);
    }
    assertEquals(List.of(), seen);
  }

  @Test
  void closeInterruptsHandlersPastTheGraceAndANewSubscriberGetsTheirMessages() throws Exception {
    String receiver = unique("java-stop");
    scheduler.schedule(receiver, bytes("stuck"));
    CountDownLatch started = new CountDownLatch(1);
    AtomicReference<String> how = new AtomicReference<>();
    Subscriber sub = Subscriber.builder(baton.channel, receiver, "c1").shutdownGrace(Duration.ofMillis(200)).build((m, c) -> {
      started.countDown();
      try {
        Thread.sleep(60_000);
      } catch (InterruptedException e) {
        how.set("interrupted " + c.reason() + " delivery " + m.getDeliveryCount());
        throw e;
      }
    }).start();
    assertTrue(started.await(10, TimeUnit.SECONDS));
    long began = System.nanoTime();
    sub.close();
    assertTrue(System.nanoTime() - began < TimeUnit.SECONDS.toNanos(2));
    assertEquals("interrupted SHUTDOWN delivery 1", how.get());
    assertEquals(0, sub.acked());
    assertEquals(0, sub.failed());
    // Unacked, so delivered again after the ack timeout, to whoever subscribes.
    List<String> seen = Collections.synchronizedList(new ArrayList<>());
    try (Subscriber other = Subscriber.builder(baton.channel, receiver, "c2")
        .build((m, c) -> seen.add(text(m) + " " + m.getDeliveryCount())).start()) {
      eventually(10_000, "redelivered and acked", () -> other.acked() == 1);
    }
    // Delivery 2 or later: while c1 let its handler finish (the grace) the message could expire
    // and go out to c1 again, which, closing, left it unhandled.
    assertEquals(1, seen.size(), seen.toString());
    assertTrue(seen.get(0).matches("stuck [2-9]"), seen.toString());
  }

  @Test
  void itSubscribesAgainAfterTheServerRestarts() throws Exception {
    try (BatonServer own = BatonServer.start(BatonServer.QUICK_ENV)) {
      String receiver = unique("java-reconnect");
      Scheduler s = new Scheduler(own.channel);
      s.schedule(receiver, bytes("before"));
      List<String> seen = Collections.synchronizedList(new ArrayList<>());
      List<String> disconnects = Collections.synchronizedList(new ArrayList<>());
      try (Subscriber sub = Subscriber.builder(own.channel, receiver, "c1").maxBackoff(Duration.ofMillis(500))
          .listener(new Subscriber.Listener() {
            @Override
            public void disconnected(StatusRuntimeException error, Duration delay) {
              disconnects.add(error == null ? "ended" : error.getStatus().getCode().name());
            }
          })
          .build((m, c) -> seen.add(text(m))).start()) {
        eventually(10_000, "first message", () -> seen.size() == 1);
        // SIGTERM ends the stream cleanly; the subscriber retries until Baton is back.
        own.restart();
        // This channel may still be waiting out its reconnect backoff: try until it is back.
        eventually(20_000, "scheduled after the restart", () -> {
          try {
            s.schedule(receiver, bytes("after"));
            return true;
          } catch (StatusRuntimeException e) {
            if (e.getStatus().getCode() != Status.Code.UNAVAILABLE) throw e;
            return false;
          }
        });
        eventually(20_000, "second message", () -> seen.size() == 2);
        assertEquals(List.of("before", "after"), seen);
        assertTrue(sub.reconnects() >= 1);
        assertEquals("ended", disconnects.get(0));
        eventually(5_000, "both acked", () -> sub.acked() == 2);
      }
    }
  }

  @Test
  void anInvalidSubscriptionIsThrownNotRetried() {
    Subscriber sub = Subscriber.builder(baton.channel, "not a valid name!", "c1").build((m, c) -> {});
    StatusRuntimeException e = assertThrows(StatusRuntimeException.class, sub::run);
    assertEquals(Status.Code.INVALID_ARGUMENT, e.getStatus().getCode());
    sub.close();
  }

  @Test
  void scheduleKeysDeliverAtAndCancel() {
    String receiver = unique("java-sched");
    ScheduleResponse a = scheduler.schedule(receiver, bytes("x"), Duration.ofHours(1), "invoice-7");
    ScheduleResponse b = scheduler.schedule(receiver, bytes("y"), Duration.ofSeconds(5), "invoice-7");
    assertTrue(a.getCreated());
    assertTrue(!b.getCreated() && b.getId().equals(a.getId()));
    Instant at = Instant.ofEpochMilli(System.currentTimeMillis() + 7_200_000);
    ScheduleResponse c = scheduler.scheduleAt(receiver, bytes("z"), at, null);
    assertEquals(at, Instant.ofEpochSecond(c.getDeliverAt().getSeconds(), c.getDeliverAt().getNanos()));
    assertTrue(scheduler.cancel(receiver, a.getId()));
    assertTrue(!scheduler.cancel(receiver, a.getId()));
    // The key is free again once its message is gone.
    ScheduleResponse d = scheduler.schedule(receiver, bytes("x2"), null, "invoice-7");
    assertTrue(d.getCreated() && !d.getId().equals(a.getId()));
  }

  @Test
  void eachMessageHandledOnceWithinMaxInFlight() throws Exception {
    {
      String receiver = unique("java-many");
      for (int i = 0; i < 200; i++) scheduler.schedule(receiver, bytes("m" + i));
      java.util.Map<String, Integer> seen = new java.util.concurrent.ConcurrentHashMap<>();
      AtomicInteger running = new AtomicInteger();
      AtomicInteger peak = new AtomicInteger();
      try (Subscriber sub = Subscriber.builder(baton.channel, receiver, "c1").maxInFlight(5).build((m, c) -> {
        peak.accumulateAndGet(running.incrementAndGet(), Math::max);
        seen.merge(text(m), 1, Integer::sum);
        running.decrementAndGet();
      }).start()) {
        eventually(30_000, "200 acked", () -> sub.acked() == 200);
        sub.close();
        assertEquals(200, seen.size());
        assertTrue(seen.values().stream().allMatch(n -> n == 1), "each message once");
        assertTrue(peak.get() <= 5, "peak " + peak.get() + " handlers at once");
        assertEquals(0, sub.lateAcks());
      }
    }
  }

  @Test
  void aLateAckOnTheStreamIsCountedAndTheStreamGoesOn() throws Exception {
    String receiver = unique("java-late");
    scheduler.schedule(receiver, bytes("slow"));
    List<Integer> deliveries = Collections.synchronizedList(new ArrayList<>());
    CountDownLatch release = new CountDownLatch(1);
    try (Subscriber sub = Subscriber.builder(baton.channel, receiver, "c1").maxInFlight(2).build((m, c) -> {
      deliveries.add(m.getDeliveryCount());
      if (m.getDeliveryCount() == 1) release.await(); // held until the message went out again
    }).start()) {
      eventually(20_000, "delivered again", () -> deliveries.size() == 2);
      eventually(10_000, "the second delivery acked", () -> sub.acked() == 1);
      release.countDown();
      eventually(10_000, "the first ack refused as late", () -> sub.lateAcks() == 1);
      assertEquals(List.of(1, 2), List.copyOf(deliveries));
      assertEquals(1, sub.acked());
    }
  }
}

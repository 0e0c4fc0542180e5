package dev.baton.client;

import static dev.baton.client.BatonServer.eventually;
import static dev.baton.client.BatonServer.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.baton.v1.AdminServiceGrpc;
import dev.baton.v1.DeadLetter;
import dev.baton.v1.ListDeadLettersRequest;
import dev.baton.v1.OfferResponse;
import dev.baton.v1.PoolStatus;
import dev.baton.v1.Source;
import dev.baton.v1.SourceKind;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The claim helper and the pool manager against a live Baton. */
class ClaimerTest {
  static BatonServer baton;
  static AdminServiceGrpc.AdminServiceBlockingStub admin;

  @BeforeAll
  static void start() throws Exception {
    baton = BatonServer.start(BatonServer.QUICK_ENV);
    admin = AdminServiceGrpc.newBlockingStub(baton.channel);
  }

  @AfterAll
  static void stop() throws Exception {
    if (baton != null) baton.close(); // null: skipped, no Baton binary
  }

  static List<DeadLetter> deadLetters(String pool) {
    return admin.listDeadLetters(ListDeadLettersRequest.newBuilder()
        .setSource(Source.newBuilder().setKind(SourceKind.SOURCE_KIND_POOL).setName(pool)).build()).getDeadLettersList();
  }

  static List<Long> counts(PoolStatus s) {
    return List.of(s.getIdle(), s.getClaimed(), s.getDeadLettered());
  }

  static Pool pool() {
    return new Pool(baton.channel, unique("java-pool"));
  }

  static Claimer claimer(Pool pool) {
    return Claimer.builder(baton.channel, pool.name(), "java-claimer").wait(Duration.ofSeconds(2))
        .attributes(Map.of("job", "t")).build();
  }

  @Test
  void aBodyThatReturnsGivesTheResourceBackForReuse() throws Exception {
    Pool pool = pool();
    Claimer claimer = claimer(pool);
    OfferResponse offered = pool.offer(List.of(Pool.resource("vm-1", Map.of("zone", "a")), Pool.resource("vm-2", Map.of())));
    assertEquals(List.of(2, 0, 0), List.of(offered.getIdle(), offered.getHanded(), offered.getDuplicates()));
    AtomicLong token = new AtomicLong();
    assertTrue(claimer.withClaim(claim -> {
      assertEquals("vm-1", claim.id());
      assertEquals(Map.of("zone", "a", "job", "t"), claim.attributes());
      assertNotNull(claim.claimedAt());
      token.set(claim.token());
      assertEquals(List.of(1L, 1L, 0L), counts(pool.status()));
    }));
    assertEquals(List.of(2L, 0L, 0L), counts(pool.status()));
    // Idle again, at the back of the ready queue: vm-2 first, then vm-1 with a newer token.
    try (Claim second = claimer.claim().orElseThrow(); Claim third = claimer.claim().orElseThrow()) {
      assertEquals(List.of("vm-2", "vm-1"), List.of(second.id(), third.id()));
      assertTrue(third.token() > token.get());
      second.succeeded();
      third.succeeded();
    }
    assertEquals(List.of(2L, 0L, 0L), counts(pool.status()));
  }

  @Test
  void aBodyThatThrowsDeadLettersTheResourceWithItsMessage() throws Exception {
    Pool pool = pool();
    Claimer claimer = claimer(pool);
    pool.offer("vm-1");
    IllegalStateException thrown = new IllegalStateException("disk full");
    assertSame(thrown, assertThrows(IllegalStateException.class, () -> claimer.withClaim(claim -> {
      throw thrown;
    })));
    assertEquals(List.of(0L, 0L, 1L), counts(pool.status()));
    List<DeadLetter> dead = deadLetters(pool.name());
    assertEquals(1, dead.size());
    assertEquals("vm-1", dead.get(0).getId());
    assertEquals("IllegalStateException: disk full", dead.get(0).getMessage());
    assertEquals("java-claimer", dead.get(0).getHolder());
  }

  @Test
  void tryWithResourcesReturnsOnSucceededAndFailsOtherwise() throws Exception {
    Pool pool = pool();
    Claimer claimer = claimer(pool);
    pool.offer("vm-1", "vm-2");
    try (Claim claim = claimer.claim().orElseThrow()) {
      assertEquals("vm-1", claim.id());
      claim.succeeded();
    }
    assertEquals(List.of(2L, 0L, 0L), counts(pool.status()));
    assertThrows(IllegalStateException.class, () -> {
      try (Claim claim = claimer.claim().orElseThrow()) {
        assertEquals("vm-2", claim.id());
        throw new IllegalStateException("disk full");
      }
    });
    assertEquals(List.of(1L, 0L, 1L), counts(pool.status()));
    List<DeadLetter> dead = deadLetters(pool.name());
    assertEquals(List.of("vm-2"), dead.stream().map(DeadLetter::getId).toList());
    assertEquals(Claim.CLOSED_WITHOUT_SUCCESS, dead.get(0).getMessage());
  }

  @Test
  void theWaitEndsWithNothing() throws Exception {
    Pool pool = pool();
    Claimer claimer = claimer(pool);
    long started = System.nanoTime();
    assertTrue(claimer.claim(Duration.ofMillis(300)).isEmpty());
    assertTrue(System.nanoTime() - started >= TimeUnit.MILLISECONDS.toNanos(250));
    AtomicBoolean called = new AtomicBoolean();
    assertFalse(claimer.withClaim(Duration.ofMillis(200), claim -> called.set(true)));
    assertFalse(called.get());
    assertTrue(claimer.claim(Duration.ZERO).isEmpty());
    assertEquals(0, pool.status().getWaitingClaims());
  }

  @Test
  void anInterruptedBodyReturnsTheResource() throws Exception {
    Pool pool = pool();
    Claimer claimer = claimer(pool);
    pool.offer("vm-1");
    CountDownLatch inside = new CountDownLatch(1);
    AtomicReference<Throwable> outcome = new AtomicReference<>();
    Thread t = new Thread(() -> {
      try {
        claimer.withClaim(claim -> {
          inside.countDown();
          Thread.sleep(60_000);
        });
      } catch (Throwable e) {
        outcome.set(e);
      }
    });
    t.start();
    assertTrue(inside.await(10, TimeUnit.SECONDS));
    t.interrupt();
    t.join(10_000);
    assertTrue(outcome.get() instanceof InterruptedException, String.valueOf(outcome.get()));
    assertEquals(List.of(1L, 0L, 0L), counts(pool.status()));
    assertEquals(List.of(), deadLetters(pool.name()));
  }

  @Test
  void interruptingAWaitingClaimLeavesTheLine() throws Exception {
    Pool pool = pool();
    Claimer claimer = claimer(pool);
    AtomicReference<Throwable> outcome = new AtomicReference<>();
    Thread t = new Thread(() -> {
      try {
        claimer.claim(Duration.ofSeconds(10));
      } catch (Throwable e) {
        outcome.set(e);
      }
    });
    t.start();
    eventually(5_000, "one claim waiting", () -> pool.status().getWaitingClaims() == 1);
    t.interrupt();
    t.join(10_000);
    assertTrue(outcome.get() instanceof StatusRuntimeException, String.valueOf(outcome.get()));
    assertEquals(Status.Code.CANCELLED, ((StatusRuntimeException) outcome.get()).getStatus().getCode());
    eventually(5_000, "line empty", () -> pool.status().getWaitingClaims() == 0);
  }

  @Test
  void explicitReturnAndFail() throws Exception {
    Pool pool = pool();
    Claimer claimer = claimer(pool);
    pool.offer("vm-1");
    Claim claim = claimer.claim().orElseThrow();
    claim.returnResource(false); // leaves the pool until offered again
    assertEquals(List.of(0L, 0L, 0L), counts(pool.status()));
    StatusRuntimeException refused = assertThrows(StatusRuntimeException.class, () -> claim.returnResource(true));
    assertTrue(Worker.isLeaseLost(refused));
    pool.offer("vm-1");
    Claim again = claimer.claim().orElseThrow();
    again.fail(new IllegalArgumentException("bad image"));
    List<DeadLetter> dead = deadLetters(pool.name());
    assertEquals("vm-1", dead.get(0).getId());
    assertEquals("IllegalArgumentException: bad image", dead.get(0).getMessage());
    // A body that ends its claim itself is left alone, and so is an ended claim on close().
    pool.offer("vm-2");
    assertTrue(claimer.withClaim(c -> c.returnResource(false)));
    try (Claim c = claimer.claim(Duration.ZERO).orElse(null)) {
      assertEquals(null, c);
    }
    assertEquals(List.of(0L, 0L, 1L), counts(pool.status()));
  }

  @Test
  void aFullLineThrowsLineFullExceptionWithThePushbackHint() throws Exception {
    Pool pool = pool();
    Claimer claimer = claimer(pool);
    // This Baton's line holds one waiting claim (pool.max_line = 1).
    CompletableFuture<Claim> first = CompletableFuture.supplyAsync(() -> claimer.claim(Duration.ofSeconds(10)).orElse(null));
    eventually(5_000, "one claim waiting", () -> pool.status().getWaitingClaims() == 1);
    Claimer other = Claimer.builder(baton.channel, pool.name(), "java-other").build();
    LineFullException full = assertThrows(LineFullException.class, () -> other.claim(Duration.ofSeconds(10)));
    assertEquals(Duration.ofMillis(250), full.retryAfter().orElseThrow());
    assertEquals(pool.name(), full.pool());
    // The error under it, read as any caller of the raw stubs would.
    assertEquals("LINE_FULL", full.reason());
    assertEquals(Optional.of("LINE_FULL"), BatonErrors.reason(full.getCause()));
    assertEquals(Optional.of(Duration.ofMillis(250)), BatonErrors.retryAfter(full.getCause()));
    // An offer serves the waiting claim at once.
    assertEquals(1, pool.offer("vm-1").getHanded());
    try (Claim claim = first.get(5, TimeUnit.SECONDS)) {
      assertEquals("vm-1", claim.id());
      claim.succeeded();
    }
  }
}

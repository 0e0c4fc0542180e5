package dev.baton.client;

import static dev.baton.client.BatonServer.eventually;
import static dev.baton.client.BatonServer.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.baton.v1.GetLeaderRequest;
import dev.baton.v1.GetLeaderResponse;
import dev.baton.v1.LeaderServiceGrpc;
import dev.baton.v1.ResignRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The leadership helper against a live Baton. */
class LeadershipTest {
  static BatonServer baton;
  static LeaderServiceGrpc.LeaderServiceBlockingStub stub;

  @BeforeAll
  static void start() throws Exception {
    baton = BatonServer.start();
    stub = LeaderServiceGrpc.newBlockingStub(baton.channel);
  }

  @AfterAll
  static void stop() throws Exception {
    if (baton != null) baton.close(); // null: skipped, no Baton binary
  }

  static final class Recorder implements Leadership.Listener {
    final List<String> events = Collections.synchronizedList(new ArrayList<>());

    public void elected(long token) {
      events.add("elected " + token);
    }

    public void lost(long token) {
      events.add("lost " + token);
    }
  }

  @Test
  void gainsKeepsByRenewingAndHandsOverOnClose() throws Exception {
    String election = unique("java-election");
    Recorder ra = new Recorder();
    Recorder rb = new Recorder();
    Leadership a = new Leadership(baton.channel, election, "a", Duration.ofMillis(600), ra).start();
    long tokenA = a.awaitElected(Duration.ofSeconds(5));
    Leadership b = new Leadership(baton.channel, election, "b", Duration.ofMillis(600), rb).start();
    Thread.sleep(2_000); // > 3 ttls: a renews, b waits
    assertEquals(tokenA, a.token().orElseThrow());
    assertFalse(b.isLeader());
    GetLeaderResponse leader = stub.getLeader(GetLeaderRequest.newBuilder().setElection(election).build());
    assertEquals("a", leader.getLeaderId());
    assertEquals(tokenA, leader.getToken());
    a.close(); // resigns: b's waiting campaign wins at once
    long tokenB = b.awaitElected(Duration.ofSeconds(2));
    assertTrue(tokenB > tokenA);
    assertEquals(List.of("elected " + tokenA, "lost " + tokenA), ra.events);
    b.close();
    assertEquals(List.of("elected " + tokenB, "lost " + tokenB), rb.events);
  }

  @Test
  void aLossIsReportedThenTheHelperCampaignsAgain() throws Exception {
    String election = unique("java-loss");
    Recorder r = new Recorder();
    try (Leadership lead = new Leadership(baton.channel, election, "a", Duration.ofMillis(900), r).start()) {
      long first = lead.awaitElected(Duration.ofSeconds(5));
      // The term ends behind the helper's back.
      stub.resign(ResignRequest.newBuilder().setElection(election).setCandidateId("a").setToken(first).build());
      eventually(4_000, "lost and re-elected", () -> r.events.size() >= 3);
      assertEquals("elected " + first, r.events.get(0));
      assertEquals("lost " + first, r.events.get(1));
      long second = Long.parseLong(r.events.get(2).substring("elected ".length()));
      assertTrue(second > first);
      assertEquals(second, lead.token().orElseThrow());
    }
  }
}

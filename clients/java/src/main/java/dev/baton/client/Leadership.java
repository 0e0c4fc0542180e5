package dev.baton.client;

import dev.baton.v1.CampaignRequest;
import dev.baton.v1.CampaignResponse;
import dev.baton.v1.LeaderServiceGrpc;
import dev.baton.v1.RenewRequest;
import dev.baton.v1.RenewResponse;
import dev.baton.v1.ResignRequest;
import io.grpc.Channel;
import io.grpc.Context;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Holds one candidate's place in an election: campaigns (waiting for a vacancy), renews, tells the
 * {@link Listener} when leadership is gained and lost, and resigns on {@link #close()}. The timing
 * is Baton's (leader.proto, RenewResponse): each answer says when to renew ({@code renew_in}) and
 * when to step down ({@code step_down_in}), both from when this side <em>sent</em> the call. It
 * renews at that moment; each Renew's deadline is the step-down moment; leadership is lost as soon
 * as a Renew is refused (LEASE_LOST), or at the step-down moment when no Renew sent before it has
 * answered, so a connection that never answers cannot keep the caller believing it leads after
 * its term could have expired. A won Campaign is confirmed by a Renew at once, and reported only
 * then. After a loss it campaigns again.
 */
public final class Leadership implements AutoCloseable {
  private static final Logger LOG = Logger.getLogger(Leadership.class.getName());

  /** Called on the helper's thread; keep it short. */
  public interface Listener {
    /** This candidate leads; pass {@code token} to whatever it writes. */
    void elected(long token);

    /** It must stop acting as leader at once (also called when close() resigns). */
    void lost(long token);
  }

  private final LeaderServiceGrpc.LeaderServiceBlockingStub stub;
  private final String election;
  private final String candidateId;
  private final Duration ttl;
  private final Duration campaignWait;
  private final Listener listener;
  private final Context.CancellableContext context = Context.ROOT.withCancellation();
  private final Object lock = new Object();
  private long token; // 0: not leading
  private volatile boolean closing;
  private Thread thread;

  public Leadership(Channel channel, String election, String candidateId, Duration ttl, Listener listener) {
    this(channel, election, candidateId, ttl, Duration.ofSeconds(30), listener);
  }

  /**
   * A candidate on {@code channel} (a shared {@link BatonClient} or any Channel; close() resigns
   * but never shuts it down), with a Campaign long-poll wait.
   */
  public Leadership(Channel channel, String election, String candidateId, Duration ttl, Duration campaignWait, Listener listener) {
    this.stub = LeaderServiceGrpc.newBlockingStub(channel);
    this.election = Objects.requireNonNull(election);
    this.candidateId = Objects.requireNonNull(candidateId);
    this.ttl = Objects.requireNonNull(ttl);
    this.campaignWait = Objects.requireNonNull(campaignWait);
    this.listener = listener == null ? new Listener() {
      public void elected(long t) {}

      public void lost(long t) {}
    } : listener;
  }

  /** Starts campaigning on a daemon thread. */
  public synchronized Leadership start() {
    if (thread == null) {
      thread = new Thread(() -> context.run(this::hold), "baton-leadership-" + election);
      thread.setDaemon(true);
      thread.start();
    }
    return this;
  }

  public boolean isLeader() {
    synchronized (lock) {
      return token != 0;
    }
  }

  /** The fencing token of the term this candidate holds, if it leads. */
  public OptionalLong token() {
    synchronized (lock) {
      return token == 0 ? OptionalLong.empty() : OptionalLong.of(token);
    }
  }

  /** Waits until this candidate leads; returns the term's token. */
  public long awaitElected(Duration timeout) throws InterruptedException, TimeoutException {
    long deadline = System.nanoTime() + timeout.toNanos();
    synchronized (lock) {
      while (token == 0) {
        long left = deadline - System.nanoTime();
        if (left <= 0) throw new TimeoutException("not elected within " + timeout);
        TimeUnit.NANOSECONDS.timedWait(lock, left);
      }
      return token;
    }
  }

  /** Stops campaigning and renewing, and resigns if leading. */
  @Override
  public void close() {
    closing = true;
    context.cancel(null);
    Thread t;
    synchronized (this) {
      t = thread;
    }
    if (t != null) {
      t.interrupt();
      try {
        t.join(10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    long held;
    synchronized (lock) {
      held = token;
    }
    if (held != 0) {
      try {
        stub.withDeadlineAfter(5, TimeUnit.SECONDS).resign(ResignRequest.newBuilder()
            .setElection(election).setCandidateId(candidateId).setToken(held).build());
      } catch (StatusRuntimeException e) {
        LOG.log(Level.WARNING, "resign failed (the term will expire): {0}", e.getStatus());
      }
      set(0);
    }
  }

  private void set(long next) {
    long old;
    synchronized (lock) {
      old = token;
      token = next;
      lock.notifyAll();
    }
    if (next != 0 && next != old) listener.elected(next);
    else if (next == 0 && old != 0) listener.lost(old);
  }

  /** When to renew and when to step down, from a term's last answered call (System.nanoTime). */
  private record Term(long renewAt, long stepDownAt) {
    static Term of(long sent, com.google.protobuf.Duration renewIn, com.google.protobuf.Duration stepDownIn) {
      return new Term(sent + nanos(renewIn), sent + nanos(stepDownIn));
    }

    private static long nanos(com.google.protobuf.Duration d) {
      return TimeUnit.SECONDS.toNanos(d.getSeconds()) + d.getNanos();
    }
  }

  /** One Renew sent now, with the step-down moment as its deadline: the next term, or null. */
  private Term renew(long held, long stepDownAt) throws LeaseLost {
    long sent = System.nanoTime();
    try {
      RenewResponse r = stub.withDeadlineAfter(Math.max(1, stepDownAt - sent), TimeUnit.NANOSECONDS)
          .renew(RenewRequest.newBuilder().setElection(election).setCandidateId(candidateId).setToken(held).build());
      return Term.of(sent, r.getRenewIn(), r.getStepDownIn());
    } catch (StatusRuntimeException e) {
      if (Worker.isLeaseLost(e)) throw new LeaseLost();
      return null;
    }
  }

  private static final class LeaseLost extends Exception {
    private static final long serialVersionUID = 1L;
  }

  private void hold() {
    Backoff backoff = new Backoff();
    Term term = null;
    while (!closing) {
      long held;
      synchronized (lock) {
        held = token;
      }
      try {
        if (held == 0) {
          long sent = System.nanoTime();
          CampaignResponse response;
          try {
            response = stub.withDeadlineAfter(campaignWait.toMillis() + 10_000, TimeUnit.MILLISECONDS)
                .campaign(CampaignRequest.newBuilder().setElection(election).setCandidateId(candidateId)
                    .setTtl(Durations.of(ttl)).setWait(Durations.of(campaignWait)).build());
          } catch (StatusRuntimeException e) {
            if (closing || !pause(backoff.next(e))) return;
            continue;
          }
          backoff.reset();
          if (!response.getIsLeader()) continue;
          if (closing) {
            synchronized (lock) {
              token = response.getToken(); // close() resigns it
            }
            return;
          }
          // Confirmed by a Renew at once; reported only then.
          term = renew(response.getToken(), Term.of(sent, response.getRenewIn(), response.getStepDownIn()).stepDownAt());
          if (term != null) set(response.getToken());
          continue;
        }
        // Leading: renew at the moment Baton named (retried after a failure), and report the loss
        // at the step-down moment unless a Renew sent before it has answered.
        long wake = Math.min(term.renewAt(), term.stepDownAt());
        if (!pause(Math.max(0, TimeUnit.NANOSECONDS.toMillis(wake - System.nanoTime())))) return;
        if (System.nanoTime() - term.stepDownAt() >= 0) {
          set(0);
          continue;
        }
        Term next = renew(held, term.stepDownAt());
        if (next != null) {
          term = next;
          backoff.reset();
        } else if (!closing) {
          term = new Term(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(backoff.next(null)), term.stepDownAt());
        }
      } catch (LeaseLost e) {
        set(0);
      }
    }
  }

  private boolean pause(long ms) {
    try {
      Thread.sleep(ms);
      return !closing;
    } catch (InterruptedException e) {
      return false;
    }
  }
}

package dev.baton.client;

import java.util.concurrent.CancellationException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/** Tells a handler that its result no longer matters, and why. */
public final class Cancellation {
  public enum Reason {
    /** Baton reported the lease lost: the result would be refused. */
    LEASE_LOST,
    /** The run was cancelled (AgentService.CancelRun): its lease has ended. */
    RUN_CANCELLED,
    /**
     * The worker is stopping (the lease is released for another worker), or the subscriber is
     * (the message is not acked: it comes back after the ack timeout).
     */
    SHUTDOWN
  }

  private final AtomicReference<Reason> reason = new AtomicReference<>();
  private final CountDownLatch cancelled = new CountDownLatch(1);

  boolean cancel(Reason why) {
    if (reason.compareAndSet(null, why)) {
      cancelled.countDown();
      return true;
    }
    return false;
  }

  public boolean isCancelled() {
    return reason.get() != null;
  }

  /** Why, or null while not cancelled. */
  public Reason reason() {
    return reason.get();
  }

  /** Throws {@link CancellationException} once cancelled; for loops that check between steps. */
  public void throwIfCancelled() {
    Reason r = reason.get();
    if (r != null) throw new CancellationException(r.name());
  }

  /** Waits up to {@code timeout}; true if cancelled meanwhile. */
  public boolean await(long timeout, TimeUnit unit) throws InterruptedException {
    return cancelled.await(timeout, unit);
  }
}

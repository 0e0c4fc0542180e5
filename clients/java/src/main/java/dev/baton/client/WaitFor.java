package dev.baton.client;

import dev.baton.v1.EventDelivery;
import dev.baton.v1.Lease;
import java.time.Duration;
import java.util.Optional;

/**
 * Not a failure: thrown from a {@link LeaseHandler}, the run ends its lease by waiting for {@code
 * event} (a Signal, {@link Producer#signal}), or until {@code timeout} passed (null: no limit; ""
 * event: a durable timer). The agent is leased again when the wait ends, the lease carrying the
 * event ({@link #event(Lease)}; timed out, if so). {@link #toProto()} is also an agent's approval
 * gate before its first run ({@code Agent.Builder#setWaitFor}).
 */
public final class WaitFor extends Exception {
  private static final long serialVersionUID = 1L;

  private final String event;
  private final Duration timeout;

  public WaitFor(String event, Duration timeout) {
    super("waiting for " + (event.isEmpty() ? "a time" : event), null, false, false);
    this.event = event;
    this.timeout = timeout;
  }

  /** The wait as the protocol carries it (SessionCompletion.wait_for, Agent.wait_for). */
  public dev.baton.v1.WaitFor toProto() {
    dev.baton.v1.WaitFor.Builder w = dev.baton.v1.WaitFor.newBuilder().setEvent(event);
    if (timeout != null) w.setTimeout(Durations.of(timeout));
    return w.build();
  }

  /** The event that ended the run's latest wait, or empty on a lease that did not wait. */
  public static Optional<EventDelivery> event(Lease lease) {
    return lease.hasEvent() ? Optional.of(lease.getEvent()) : Optional.empty();
  }
}

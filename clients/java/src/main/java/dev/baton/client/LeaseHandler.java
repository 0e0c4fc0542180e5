package dev.baton.client;

import dev.baton.v1.Lease;

/**
 * Runs one lease. Returning completes it with SUCCESS; throwing completes it with the outcome
 * {@link Outcomes#classify(Throwable)} gives (throw a {@link Failure} to choose). When the result
 * no longer matters (lease lost, worker stopping) the thread is interrupted and
 * {@code cancellation} says why. A handler sets its run's result with {@link
 * Worker#setResult(Lease, byte[])}; {@code lease.getParentsList()} are its parents' results.
 */
@FunctionalInterface
public interface LeaseHandler {
  void handle(Lease lease, Cancellation cancellation) throws Exception;
}

package dev.baton.client;

import dev.baton.v1.SubscribeResponse;

/**
 * Handles one delivered message. Returning acks it; throwing leaves it unacked, so Baton delivers
 * it again after its ack timeout. When the subscriber stops and its shutdown grace is over, the
 * thread is interrupted and {@code cancellation} says {@code SHUTDOWN}.
 */
@FunctionalInterface
public interface MessageHandler {
  void handle(SubscribeResponse message, Cancellation cancellation) throws Exception;
}

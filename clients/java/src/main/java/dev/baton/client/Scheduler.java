package dev.baton.client;

import com.google.protobuf.ByteString;
import com.google.protobuf.Timestamp;
import dev.baton.v1.CancelRequest;
import dev.baton.v1.ScheduleRequest;
import dev.baton.v1.ScheduleResponse;
import dev.baton.v1.ScheduleServiceGrpc;
import io.grpc.Channel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeUnit;

/** Schedules and cancels durable delayed messages (ScheduleService). */
public final class Scheduler {
  private final ScheduleServiceGrpc.ScheduleServiceBlockingStub stub;

  /** A scheduler on {@code channel}: a shared {@link BatonClient} or any Channel (never shut down here). */
  public Scheduler(Channel channel) {
    this.stub = ScheduleServiceGrpc.newBlockingStub(channel);
  }

  /** Schedules a message due at once. */
  public ScheduleResponse schedule(String receiver, byte[] payload) {
    return send(request(receiver, payload, null));
  }

  /**
   * Schedules a message due after {@code delay} (Redis clock). With a {@code key} (null or empty:
   * none), scheduling again while the first message is not yet acked returns the first message's
   * id with {@code created} false. Returns id, deliver_at and created.
   */
  public ScheduleResponse schedule(String receiver, byte[] payload, Duration delay, String key) {
    ScheduleRequest.Builder r = request(receiver, payload, key);
    if (delay != null) r.setDelay(Durations.of(delay.isNegative() ? Duration.ZERO : delay));
    return send(r);
  }

  /** Schedules a message due at {@code deliverAt}; {@code key} as in {@link #schedule(String, byte[], Duration, String)}. */
  public ScheduleResponse scheduleAt(String receiver, byte[] payload, Instant deliverAt, String key) {
    ScheduleRequest.Builder r = request(receiver, payload, key);
    r.setDeliverAt(Timestamp.newBuilder().setSeconds(deliverAt.getEpochSecond()).setNanos(deliverAt.getNano()));
    return send(r);
  }

  /** Removes a scheduled or in-flight message; false if there is no such message. */
  public boolean cancel(String receiver, String id) {
    try {
      stub.withDeadlineAfter(10, TimeUnit.SECONDS).cancel(CancelRequest.newBuilder().setReceiver(receiver).setId(id).build());
      return true;
    } catch (StatusRuntimeException e) {
      if (e.getStatus().getCode() == Status.Code.NOT_FOUND) return false;
      throw e;
    }
  }

  private static ScheduleRequest.Builder request(String receiver, byte[] payload, String key) {
    return ScheduleRequest.newBuilder().setReceiver(receiver).setPayload(ByteString.copyFrom(payload))
        .setKey(key == null ? "" : key);
  }

  /** Retried on UNAVAILABLE with one request id, so a retry never schedules twice. */
  private ScheduleResponse send(ScheduleRequest.Builder r) {
    return Backoff.idempotent(id -> stub.withDeadlineAfter(10, TimeUnit.SECONDS).schedule(r.setRequestId(id).build()));
  }
}

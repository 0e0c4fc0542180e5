package dev.baton.client;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.ErrorInfo;
import io.grpc.protobuf.StatusProto;
import java.time.Duration;
import java.util.Optional;

/**
 * What a call Baton refused carries: the reason of its {@code google.rpc.ErrorInfo}
 * ({@code LEASE_LOST}, {@code NOT_FOUND}, {@code LINE_FULL}, {@code PARENTS_FIXED}, …;
 * docs/errors.md) and its retry hint ({@code grpc-retry-pushback-ms}). Works on any exception a
 * generated stub or a helper throws (a {@code StatusRuntimeException}, or one caused by it).
 */
public final class BatonErrors {
  private BatonErrors() {}

  /** The ErrorInfo reason of {@code error}; empty if it carries none. */
  public static Optional<String> reason(Throwable error) {
    com.google.rpc.Status status = error == null ? null : StatusProto.fromThrowable(error);
    if (status == null) {
      return Optional.empty();
    }
    for (Any detail : status.getDetailsList()) {
      if (detail.is(ErrorInfo.class)) {
        try {
          return Optional.of(detail.unpack(ErrorInfo.class).getReason());
        } catch (InvalidProtocolBufferException e) {
          return Optional.empty();
        }
      }
    }
    return Optional.empty();
  }

  /** Baton's retry hint on {@code error}; empty if it sent none. */
  public static Optional<Duration> retryAfter(Throwable error) {
    long ms = Backoff.pushbackMs(error);
    return ms < 0 ? Optional.empty() : Optional.of(Duration.ofMillis(ms));
  }
}

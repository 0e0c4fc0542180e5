package dev.baton.client;

import java.time.Duration;

/** {@link java.time.Duration} to {@code google.protobuf.Duration}. */
public final class Durations {
  private Durations() {}

  public static com.google.protobuf.Duration of(Duration d) {
    return com.google.protobuf.Duration.newBuilder().setSeconds(d.getSeconds()).setNanos(d.getNano()).build();
  }
}

package dev.baton.client;

import dev.baton.v1.ClaimServiceGrpc;
import dev.baton.v1.GetPoolRequest;
import dev.baton.v1.OfferRequest;
import dev.baton.v1.OfferResponse;
import dev.baton.v1.PoolStatus;
import dev.baton.v1.Resource;
import io.grpc.Channel;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/** The pool manager's side of a pool: offer resources, read the pool's counts. */
public final class Pool {
  private final ClaimServiceGrpc.ClaimServiceBlockingStub stub;
  private final String name;

  /** A pool manager on {@code channel}: a shared {@link BatonClient} or any Channel (never shut down here). */
  public Pool(Channel channel, String name) {
    this.stub = ClaimServiceGrpc.newBlockingStub(channel);
    this.name = Objects.requireNonNull(name);
  }

  public String name() {
    return name;
  }

  /** A resource to offer. */
  public static Resource resource(String id, Map<String, String> attributes) {
    return Resource.newBuilder().setId(id).putAllAttributes(attributes).build();
  }

  /**
   * Makes resources idle, in order (or hands them to waiting claims). Already idle or claimed ones
   * are left alone (counted in duplicates). Retried on UNAVAILABLE with one request id.
   */
  public OfferResponse offer(List<Resource> resources) {
    return Backoff.idempotent(id -> stub.withDeadlineAfter(10, TimeUnit.SECONDS)
        .offer(OfferRequest.newBuilder().setRequestId(id).setPool(name).addAllResources(resources).build()));
  }

  /** Offers resources without attributes. */
  public OfferResponse offer(String... ids) {
    return offer(Arrays.stream(ids).map(id -> Resource.newBuilder().setId(id).build()).toList());
  }

  /** The pool's counts (idle, claimed, waiting claims, dead-lettered …). */
  public PoolStatus status() {
    return stub.withDeadlineAfter(10, TimeUnit.SECONDS).getPool(GetPoolRequest.newBuilder().setPool(name).build()).getStatus();
  }
}

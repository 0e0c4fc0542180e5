package dev.baton.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * ClaimService pairs claim requests with idle pooled resources (pods, VMs, sandboxes), first
 * in first out, exactly once.
 * A pool's resource is idle (in the pool's ready queue, in offer order, each id at most once),
 * claimed (held by one claimer under a fencing token), or dead-lettered. A Claim takes the
 * oldest idle resource if no earlier claim is waiting; otherwise it joins the pool's waiting
 * line, shared by every Baton replica, and is served in line order as resources are offered.
 * A resource is handed to one claim only, a claim gets at most one resource, and a claim whose
 * caller goes away gives up its place (and any resource assigned to it in that instant goes
 * back to the front of the ready queue).
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class ClaimServiceGrpc {

  private ClaimServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "baton.v1.ClaimService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.OfferRequest,
      dev.baton.v1.OfferResponse> getOfferMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Offer",
      requestType = dev.baton.v1.OfferRequest.class,
      responseType = dev.baton.v1.OfferResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.OfferRequest,
      dev.baton.v1.OfferResponse> getOfferMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.OfferRequest, dev.baton.v1.OfferResponse> getOfferMethod;
    if ((getOfferMethod = ClaimServiceGrpc.getOfferMethod) == null) {
      synchronized (ClaimServiceGrpc.class) {
        if ((getOfferMethod = ClaimServiceGrpc.getOfferMethod) == null) {
          ClaimServiceGrpc.getOfferMethod = getOfferMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.OfferRequest, dev.baton.v1.OfferResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Offer"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.OfferRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.OfferResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ClaimServiceMethodDescriptorSupplier("Offer"))
              .build();
        }
      }
    }
    return getOfferMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.ClaimRequest,
      dev.baton.v1.ClaimResponse> getClaimMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Claim",
      requestType = dev.baton.v1.ClaimRequest.class,
      responseType = dev.baton.v1.ClaimResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.ClaimRequest,
      dev.baton.v1.ClaimResponse> getClaimMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.ClaimRequest, dev.baton.v1.ClaimResponse> getClaimMethod;
    if ((getClaimMethod = ClaimServiceGrpc.getClaimMethod) == null) {
      synchronized (ClaimServiceGrpc.class) {
        if ((getClaimMethod = ClaimServiceGrpc.getClaimMethod) == null) {
          ClaimServiceGrpc.getClaimMethod = getClaimMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.ClaimRequest, dev.baton.v1.ClaimResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Claim"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ClaimRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ClaimResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ClaimServiceMethodDescriptorSupplier("Claim"))
              .build();
        }
      }
    }
    return getClaimMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.ReturnRequest,
      dev.baton.v1.ReturnResponse> getReturnMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Return",
      requestType = dev.baton.v1.ReturnRequest.class,
      responseType = dev.baton.v1.ReturnResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.ReturnRequest,
      dev.baton.v1.ReturnResponse> getReturnMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.ReturnRequest, dev.baton.v1.ReturnResponse> getReturnMethod;
    if ((getReturnMethod = ClaimServiceGrpc.getReturnMethod) == null) {
      synchronized (ClaimServiceGrpc.class) {
        if ((getReturnMethod = ClaimServiceGrpc.getReturnMethod) == null) {
          ClaimServiceGrpc.getReturnMethod = getReturnMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.ReturnRequest, dev.baton.v1.ReturnResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Return"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ReturnRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ReturnResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ClaimServiceMethodDescriptorSupplier("Return"))
              .build();
        }
      }
    }
    return getReturnMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.FailRequest,
      dev.baton.v1.FailResponse> getFailMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Fail",
      requestType = dev.baton.v1.FailRequest.class,
      responseType = dev.baton.v1.FailResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.FailRequest,
      dev.baton.v1.FailResponse> getFailMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.FailRequest, dev.baton.v1.FailResponse> getFailMethod;
    if ((getFailMethod = ClaimServiceGrpc.getFailMethod) == null) {
      synchronized (ClaimServiceGrpc.class) {
        if ((getFailMethod = ClaimServiceGrpc.getFailMethod) == null) {
          ClaimServiceGrpc.getFailMethod = getFailMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.FailRequest, dev.baton.v1.FailResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Fail"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.FailRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.FailResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ClaimServiceMethodDescriptorSupplier("Fail"))
              .build();
        }
      }
    }
    return getFailMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.GetPoolRequest,
      dev.baton.v1.GetPoolResponse> getGetPoolMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetPool",
      requestType = dev.baton.v1.GetPoolRequest.class,
      responseType = dev.baton.v1.GetPoolResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.GetPoolRequest,
      dev.baton.v1.GetPoolResponse> getGetPoolMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.GetPoolRequest, dev.baton.v1.GetPoolResponse> getGetPoolMethod;
    if ((getGetPoolMethod = ClaimServiceGrpc.getGetPoolMethod) == null) {
      synchronized (ClaimServiceGrpc.class) {
        if ((getGetPoolMethod = ClaimServiceGrpc.getGetPoolMethod) == null) {
          ClaimServiceGrpc.getGetPoolMethod = getGetPoolMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.GetPoolRequest, dev.baton.v1.GetPoolResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetPool"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.GetPoolRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.GetPoolResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ClaimServiceMethodDescriptorSupplier("GetPool"))
              .build();
        }
      }
    }
    return getGetPoolMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.WatchPoolRequest,
      dev.baton.v1.WatchPoolResponse> getWatchPoolMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "WatchPool",
      requestType = dev.baton.v1.WatchPoolRequest.class,
      responseType = dev.baton.v1.WatchPoolResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
  public static io.grpc.MethodDescriptor<dev.baton.v1.WatchPoolRequest,
      dev.baton.v1.WatchPoolResponse> getWatchPoolMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.WatchPoolRequest, dev.baton.v1.WatchPoolResponse> getWatchPoolMethod;
    if ((getWatchPoolMethod = ClaimServiceGrpc.getWatchPoolMethod) == null) {
      synchronized (ClaimServiceGrpc.class) {
        if ((getWatchPoolMethod = ClaimServiceGrpc.getWatchPoolMethod) == null) {
          ClaimServiceGrpc.getWatchPoolMethod = getWatchPoolMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.WatchPoolRequest, dev.baton.v1.WatchPoolResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "WatchPool"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.WatchPoolRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.WatchPoolResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ClaimServiceMethodDescriptorSupplier("WatchPool"))
              .build();
        }
      }
    }
    return getWatchPoolMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static ClaimServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ClaimServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ClaimServiceStub>() {
        @java.lang.Override
        public ClaimServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ClaimServiceStub(channel, callOptions);
        }
      };
    return ClaimServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static ClaimServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ClaimServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ClaimServiceBlockingV2Stub>() {
        @java.lang.Override
        public ClaimServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ClaimServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return ClaimServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static ClaimServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ClaimServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ClaimServiceBlockingStub>() {
        @java.lang.Override
        public ClaimServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ClaimServiceBlockingStub(channel, callOptions);
        }
      };
    return ClaimServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static ClaimServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ClaimServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ClaimServiceFutureStub>() {
        @java.lang.Override
        public ClaimServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ClaimServiceFutureStub(channel, callOptions);
        }
      };
    return ClaimServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * ClaimService pairs claim requests with idle pooled resources (pods, VMs, sandboxes), first
   * in first out, exactly once.
   * A pool's resource is idle (in the pool's ready queue, in offer order, each id at most once),
   * claimed (held by one claimer under a fencing token), or dead-lettered. A Claim takes the
   * oldest idle resource if no earlier claim is waiting; otherwise it joins the pool's waiting
   * line, shared by every Baton replica, and is served in line order as resources are offered.
   * A resource is handed to one claim only, a claim gets at most one resource, and a claim whose
   * caller goes away gives up its place (and any resource assigned to it in that instant goes
   * back to the front of the ready queue).
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * Offer makes resources idle, appended in order to the ready queue, or hands them at once to
     * claims waiting in line. A resource already idle or claimed is left as it is (deduplicated
     * by id). Offering is safe to retry.
     * </pre>
     */
    default void offer(dev.baton.v1.OfferRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.OfferResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getOfferMethod(), responseObserver);
    }

    /**
     * <pre>
     * Claim returns the oldest idle resource with a fencing token. With nothing idle (or earlier
     * claims waiting) and wait &gt; 0, the call waits in the pool's line until a resource is offered
     * to it or the wait ends; then it returns no resource (not an error). A full line answers
     * RESOURCE_EXHAUSTED at once, with a pushback hint.
     * </pre>
     */
    default void claim(dev.baton.v1.ClaimRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ClaimResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getClaimMethod(), responseObserver);
    }

    /**
     * <pre>
     * Return ends a claim. With reuse the resource is idle again at once (handed to the next claim
     * in line if one waits); without, it leaves the pool until the pool manager offers it again.
     * A stale token is FAILED_PRECONDITION (LEASE_LOST) and changes nothing.
     * </pre>
     */
    default void return_(dev.baton.v1.ReturnRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ReturnResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getReturnMethod(), responseObserver);
    }

    /**
     * <pre>
     * Fail ends a claim by moving the resource to the pool's dead-letter queue, with the error and
     * its context. A stale token is FAILED_PRECONDITION (LEASE_LOST) and changes nothing.
     * </pre>
     */
    default void fail(dev.baton.v1.FailRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.FailResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getFailMethod(), responseObserver);
    }

    /**
     * <pre>
     * GetPool returns the pool's counts and its scale-up signal.
     * </pre>
     */
    default void getPool(dev.baton.v1.GetPoolRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.GetPoolResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetPoolMethod(), responseObserver);
    }

    /**
     * <pre>
     * WatchPool streams the pool's status: first the current one, then a new one after each
     * change (coalesced: a burst of changes gives few messages). An autoscaler follows
     * scale_up_pending here. The stream ends cleanly when the server shuts down.
     * </pre>
     */
    default void watchPool(dev.baton.v1.WatchPoolRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.WatchPoolResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getWatchPoolMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service ClaimService.
   * <pre>
   * ClaimService pairs claim requests with idle pooled resources (pods, VMs, sandboxes), first
   * in first out, exactly once.
   * A pool's resource is idle (in the pool's ready queue, in offer order, each id at most once),
   * claimed (held by one claimer under a fencing token), or dead-lettered. A Claim takes the
   * oldest idle resource if no earlier claim is waiting; otherwise it joins the pool's waiting
   * line, shared by every Baton replica, and is served in line order as resources are offered.
   * A resource is handed to one claim only, a claim gets at most one resource, and a claim whose
   * caller goes away gives up its place (and any resource assigned to it in that instant goes
   * back to the front of the ready queue).
   * </pre>
   */
  public static abstract class ClaimServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return ClaimServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service ClaimService.
   * <pre>
   * ClaimService pairs claim requests with idle pooled resources (pods, VMs, sandboxes), first
   * in first out, exactly once.
   * A pool's resource is idle (in the pool's ready queue, in offer order, each id at most once),
   * claimed (held by one claimer under a fencing token), or dead-lettered. A Claim takes the
   * oldest idle resource if no earlier claim is waiting; otherwise it joins the pool's waiting
   * line, shared by every Baton replica, and is served in line order as resources are offered.
   * A resource is handed to one claim only, a claim gets at most one resource, and a claim whose
   * caller goes away gives up its place (and any resource assigned to it in that instant goes
   * back to the front of the ready queue).
   * </pre>
   */
  public static final class ClaimServiceStub
      extends io.grpc.stub.AbstractAsyncStub<ClaimServiceStub> {
    private ClaimServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ClaimServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ClaimServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * Offer makes resources idle, appended in order to the ready queue, or hands them at once to
     * claims waiting in line. A resource already idle or claimed is left as it is (deduplicated
     * by id). Offering is safe to retry.
     * </pre>
     */
    public void offer(dev.baton.v1.OfferRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.OfferResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getOfferMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Claim returns the oldest idle resource with a fencing token. With nothing idle (or earlier
     * claims waiting) and wait &gt; 0, the call waits in the pool's line until a resource is offered
     * to it or the wait ends; then it returns no resource (not an error). A full line answers
     * RESOURCE_EXHAUSTED at once, with a pushback hint.
     * </pre>
     */
    public void claim(dev.baton.v1.ClaimRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ClaimResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getClaimMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Return ends a claim. With reuse the resource is idle again at once (handed to the next claim
     * in line if one waits); without, it leaves the pool until the pool manager offers it again.
     * A stale token is FAILED_PRECONDITION (LEASE_LOST) and changes nothing.
     * </pre>
     */
    public void return_(dev.baton.v1.ReturnRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ReturnResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getReturnMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Fail ends a claim by moving the resource to the pool's dead-letter queue, with the error and
     * its context. A stale token is FAILED_PRECONDITION (LEASE_LOST) and changes nothing.
     * </pre>
     */
    public void fail(dev.baton.v1.FailRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.FailResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getFailMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * GetPool returns the pool's counts and its scale-up signal.
     * </pre>
     */
    public void getPool(dev.baton.v1.GetPoolRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.GetPoolResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetPoolMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * WatchPool streams the pool's status: first the current one, then a new one after each
     * change (coalesced: a burst of changes gives few messages). An autoscaler follows
     * scale_up_pending here. The stream ends cleanly when the server shuts down.
     * </pre>
     */
    public void watchPool(dev.baton.v1.WatchPoolRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.WatchPoolResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncServerStreamingCall(
          getChannel().newCall(getWatchPoolMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service ClaimService.
   * <pre>
   * ClaimService pairs claim requests with idle pooled resources (pods, VMs, sandboxes), first
   * in first out, exactly once.
   * A pool's resource is idle (in the pool's ready queue, in offer order, each id at most once),
   * claimed (held by one claimer under a fencing token), or dead-lettered. A Claim takes the
   * oldest idle resource if no earlier claim is waiting; otherwise it joins the pool's waiting
   * line, shared by every Baton replica, and is served in line order as resources are offered.
   * A resource is handed to one claim only, a claim gets at most one resource, and a claim whose
   * caller goes away gives up its place (and any resource assigned to it in that instant goes
   * back to the front of the ready queue).
   * </pre>
   */
  public static final class ClaimServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<ClaimServiceBlockingV2Stub> {
    private ClaimServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ClaimServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ClaimServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * Offer makes resources idle, appended in order to the ready queue, or hands them at once to
     * claims waiting in line. A resource already idle or claimed is left as it is (deduplicated
     * by id). Offering is safe to retry.
     * </pre>
     */
    public dev.baton.v1.OfferResponse offer(dev.baton.v1.OfferRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getOfferMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Claim returns the oldest idle resource with a fencing token. With nothing idle (or earlier
     * claims waiting) and wait &gt; 0, the call waits in the pool's line until a resource is offered
     * to it or the wait ends; then it returns no resource (not an error). A full line answers
     * RESOURCE_EXHAUSTED at once, with a pushback hint.
     * </pre>
     */
    public dev.baton.v1.ClaimResponse claim(dev.baton.v1.ClaimRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getClaimMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Return ends a claim. With reuse the resource is idle again at once (handed to the next claim
     * in line if one waits); without, it leaves the pool until the pool manager offers it again.
     * A stale token is FAILED_PRECONDITION (LEASE_LOST) and changes nothing.
     * </pre>
     */
    public dev.baton.v1.ReturnResponse return_(dev.baton.v1.ReturnRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getReturnMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Fail ends a claim by moving the resource to the pool's dead-letter queue, with the error and
     * its context. A stale token is FAILED_PRECONDITION (LEASE_LOST) and changes nothing.
     * </pre>
     */
    public dev.baton.v1.FailResponse fail(dev.baton.v1.FailRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getFailMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetPool returns the pool's counts and its scale-up signal.
     * </pre>
     */
    public dev.baton.v1.GetPoolResponse getPool(dev.baton.v1.GetPoolRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetPoolMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * WatchPool streams the pool's status: first the current one, then a new one after each
     * change (coalesced: a burst of changes gives few messages). An autoscaler follows
     * scale_up_pending here. The stream ends cleanly when the server shuts down.
     * </pre>
     */
    @io.grpc.ExperimentalApi("https://github.com/grpc/grpc-java/issues/10918")
    public io.grpc.stub.BlockingClientCall<?, dev.baton.v1.WatchPoolResponse>
        watchPool(dev.baton.v1.WatchPoolRequest request) {
      return io.grpc.stub.ClientCalls.blockingV2ServerStreamingCall(
          getChannel(), getWatchPoolMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service ClaimService.
   * <pre>
   * ClaimService pairs claim requests with idle pooled resources (pods, VMs, sandboxes), first
   * in first out, exactly once.
   * A pool's resource is idle (in the pool's ready queue, in offer order, each id at most once),
   * claimed (held by one claimer under a fencing token), or dead-lettered. A Claim takes the
   * oldest idle resource if no earlier claim is waiting; otherwise it joins the pool's waiting
   * line, shared by every Baton replica, and is served in line order as resources are offered.
   * A resource is handed to one claim only, a claim gets at most one resource, and a claim whose
   * caller goes away gives up its place (and any resource assigned to it in that instant goes
   * back to the front of the ready queue).
   * </pre>
   */
  public static final class ClaimServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<ClaimServiceBlockingStub> {
    private ClaimServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ClaimServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ClaimServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * Offer makes resources idle, appended in order to the ready queue, or hands them at once to
     * claims waiting in line. A resource already idle or claimed is left as it is (deduplicated
     * by id). Offering is safe to retry.
     * </pre>
     */
    public dev.baton.v1.OfferResponse offer(dev.baton.v1.OfferRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getOfferMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Claim returns the oldest idle resource with a fencing token. With nothing idle (or earlier
     * claims waiting) and wait &gt; 0, the call waits in the pool's line until a resource is offered
     * to it or the wait ends; then it returns no resource (not an error). A full line answers
     * RESOURCE_EXHAUSTED at once, with a pushback hint.
     * </pre>
     */
    public dev.baton.v1.ClaimResponse claim(dev.baton.v1.ClaimRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getClaimMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Return ends a claim. With reuse the resource is idle again at once (handed to the next claim
     * in line if one waits); without, it leaves the pool until the pool manager offers it again.
     * A stale token is FAILED_PRECONDITION (LEASE_LOST) and changes nothing.
     * </pre>
     */
    public dev.baton.v1.ReturnResponse return_(dev.baton.v1.ReturnRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getReturnMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Fail ends a claim by moving the resource to the pool's dead-letter queue, with the error and
     * its context. A stale token is FAILED_PRECONDITION (LEASE_LOST) and changes nothing.
     * </pre>
     */
    public dev.baton.v1.FailResponse fail(dev.baton.v1.FailRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getFailMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetPool returns the pool's counts and its scale-up signal.
     * </pre>
     */
    public dev.baton.v1.GetPoolResponse getPool(dev.baton.v1.GetPoolRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetPoolMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * WatchPool streams the pool's status: first the current one, then a new one after each
     * change (coalesced: a burst of changes gives few messages). An autoscaler follows
     * scale_up_pending here. The stream ends cleanly when the server shuts down.
     * </pre>
     */
    public java.util.Iterator<dev.baton.v1.WatchPoolResponse> watchPool(
        dev.baton.v1.WatchPoolRequest request) {
      return io.grpc.stub.ClientCalls.blockingServerStreamingCall(
          getChannel(), getWatchPoolMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service ClaimService.
   * <pre>
   * ClaimService pairs claim requests with idle pooled resources (pods, VMs, sandboxes), first
   * in first out, exactly once.
   * A pool's resource is idle (in the pool's ready queue, in offer order, each id at most once),
   * claimed (held by one claimer under a fencing token), or dead-lettered. A Claim takes the
   * oldest idle resource if no earlier claim is waiting; otherwise it joins the pool's waiting
   * line, shared by every Baton replica, and is served in line order as resources are offered.
   * A resource is handed to one claim only, a claim gets at most one resource, and a claim whose
   * caller goes away gives up its place (and any resource assigned to it in that instant goes
   * back to the front of the ready queue).
   * </pre>
   */
  public static final class ClaimServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<ClaimServiceFutureStub> {
    private ClaimServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ClaimServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ClaimServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * Offer makes resources idle, appended in order to the ready queue, or hands them at once to
     * claims waiting in line. A resource already idle or claimed is left as it is (deduplicated
     * by id). Offering is safe to retry.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.OfferResponse> offer(
        dev.baton.v1.OfferRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getOfferMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Claim returns the oldest idle resource with a fencing token. With nothing idle (or earlier
     * claims waiting) and wait &gt; 0, the call waits in the pool's line until a resource is offered
     * to it or the wait ends; then it returns no resource (not an error). A full line answers
     * RESOURCE_EXHAUSTED at once, with a pushback hint.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.ClaimResponse> claim(
        dev.baton.v1.ClaimRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getClaimMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Return ends a claim. With reuse the resource is idle again at once (handed to the next claim
     * in line if one waits); without, it leaves the pool until the pool manager offers it again.
     * A stale token is FAILED_PRECONDITION (LEASE_LOST) and changes nothing.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.ReturnResponse> return_(
        dev.baton.v1.ReturnRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getReturnMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Fail ends a claim by moving the resource to the pool's dead-letter queue, with the error and
     * its context. A stale token is FAILED_PRECONDITION (LEASE_LOST) and changes nothing.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.FailResponse> fail(
        dev.baton.v1.FailRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getFailMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * GetPool returns the pool's counts and its scale-up signal.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.GetPoolResponse> getPool(
        dev.baton.v1.GetPoolRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetPoolMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_OFFER = 0;
  private static final int METHODID_CLAIM = 1;
  private static final int METHODID_RETURN = 2;
  private static final int METHODID_FAIL = 3;
  private static final int METHODID_GET_POOL = 4;
  private static final int METHODID_WATCH_POOL = 5;

  private static final class MethodHandlers<Req, Resp> implements
      io.grpc.stub.ServerCalls.UnaryMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ServerStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ClientStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.BidiStreamingMethod<Req, Resp> {
    private final AsyncService serviceImpl;
    private final int methodId;

    MethodHandlers(AsyncService serviceImpl, int methodId) {
      this.serviceImpl = serviceImpl;
      this.methodId = methodId;
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public void invoke(Req request, io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        case METHODID_OFFER:
          serviceImpl.offer((dev.baton.v1.OfferRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.OfferResponse>) responseObserver);
          break;
        case METHODID_CLAIM:
          serviceImpl.claim((dev.baton.v1.ClaimRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.ClaimResponse>) responseObserver);
          break;
        case METHODID_RETURN:
          serviceImpl.return_((dev.baton.v1.ReturnRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.ReturnResponse>) responseObserver);
          break;
        case METHODID_FAIL:
          serviceImpl.fail((dev.baton.v1.FailRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.FailResponse>) responseObserver);
          break;
        case METHODID_GET_POOL:
          serviceImpl.getPool((dev.baton.v1.GetPoolRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.GetPoolResponse>) responseObserver);
          break;
        case METHODID_WATCH_POOL:
          serviceImpl.watchPool((dev.baton.v1.WatchPoolRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.WatchPoolResponse>) responseObserver);
          break;
        default:
          throw new AssertionError();
      }
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public io.grpc.stub.StreamObserver<Req> invoke(
        io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        default:
          throw new AssertionError();
      }
    }
  }

  public static final io.grpc.ServerServiceDefinition bindService(AsyncService service) {
    return io.grpc.ServerServiceDefinition.builder(getServiceDescriptor())
        .addMethod(
          getOfferMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.OfferRequest,
              dev.baton.v1.OfferResponse>(
                service, METHODID_OFFER)))
        .addMethod(
          getClaimMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.ClaimRequest,
              dev.baton.v1.ClaimResponse>(
                service, METHODID_CLAIM)))
        .addMethod(
          getReturnMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.ReturnRequest,
              dev.baton.v1.ReturnResponse>(
                service, METHODID_RETURN)))
        .addMethod(
          getFailMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.FailRequest,
              dev.baton.v1.FailResponse>(
                service, METHODID_FAIL)))
        .addMethod(
          getGetPoolMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.GetPoolRequest,
              dev.baton.v1.GetPoolResponse>(
                service, METHODID_GET_POOL)))
        .addMethod(
          getWatchPoolMethod(),
          io.grpc.stub.ServerCalls.asyncServerStreamingCall(
            new MethodHandlers<
              dev.baton.v1.WatchPoolRequest,
              dev.baton.v1.WatchPoolResponse>(
                service, METHODID_WATCH_POOL)))
        .build();
  }

  private static abstract class ClaimServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    ClaimServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.baton.v1.ClaimProto.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("ClaimService");
    }
  }

  private static final class ClaimServiceFileDescriptorSupplier
      extends ClaimServiceBaseDescriptorSupplier {
    ClaimServiceFileDescriptorSupplier() {}
  }

  private static final class ClaimServiceMethodDescriptorSupplier
      extends ClaimServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    ClaimServiceMethodDescriptorSupplier(java.lang.String methodName) {
      this.methodName = methodName;
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.MethodDescriptor getMethodDescriptor() {
      return getServiceDescriptor().findMethodByName(methodName);
    }
  }

  private static volatile io.grpc.ServiceDescriptor serviceDescriptor;

  public static io.grpc.ServiceDescriptor getServiceDescriptor() {
    io.grpc.ServiceDescriptor result = serviceDescriptor;
    if (result == null) {
      synchronized (ClaimServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new ClaimServiceFileDescriptorSupplier())
              .addMethod(getOfferMethod())
              .addMethod(getClaimMethod())
              .addMethod(getReturnMethod())
              .addMethod(getFailMethod())
              .addMethod(getGetPoolMethod())
              .addMethod(getWatchPoolMethod())
              .build();
        }
      }
    }
    return result;
  }
}

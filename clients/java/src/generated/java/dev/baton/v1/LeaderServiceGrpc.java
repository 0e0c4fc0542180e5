package dev.baton.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * LeaderService elects one leader per named election, lazily: a candidate becomes leader only
 * when there is none. Each term has a fencing token that strictly increases per election; the
 * leader should present it to whatever it writes, so that a deposed leader's late writes can be
 * refused. Leadership ends when the leader resigns or stops renewing before its expiry, which
 * is judged by the Redis server's clock alone.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class LeaderServiceGrpc {

  private LeaderServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "baton.v1.LeaderService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.CampaignRequest,
      dev.baton.v1.CampaignResponse> getCampaignMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Campaign",
      requestType = dev.baton.v1.CampaignRequest.class,
      responseType = dev.baton.v1.CampaignResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.CampaignRequest,
      dev.baton.v1.CampaignResponse> getCampaignMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.CampaignRequest, dev.baton.v1.CampaignResponse> getCampaignMethod;
    if ((getCampaignMethod = LeaderServiceGrpc.getCampaignMethod) == null) {
      synchronized (LeaderServiceGrpc.class) {
        if ((getCampaignMethod = LeaderServiceGrpc.getCampaignMethod) == null) {
          LeaderServiceGrpc.getCampaignMethod = getCampaignMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.CampaignRequest, dev.baton.v1.CampaignResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Campaign"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.CampaignRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.CampaignResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LeaderServiceMethodDescriptorSupplier("Campaign"))
              .build();
        }
      }
    }
    return getCampaignMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.RenewRequest,
      dev.baton.v1.RenewResponse> getRenewMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Renew",
      requestType = dev.baton.v1.RenewRequest.class,
      responseType = dev.baton.v1.RenewResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.RenewRequest,
      dev.baton.v1.RenewResponse> getRenewMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.RenewRequest, dev.baton.v1.RenewResponse> getRenewMethod;
    if ((getRenewMethod = LeaderServiceGrpc.getRenewMethod) == null) {
      synchronized (LeaderServiceGrpc.class) {
        if ((getRenewMethod = LeaderServiceGrpc.getRenewMethod) == null) {
          LeaderServiceGrpc.getRenewMethod = getRenewMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.RenewRequest, dev.baton.v1.RenewResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Renew"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.RenewRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.RenewResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LeaderServiceMethodDescriptorSupplier("Renew"))
              .build();
        }
      }
    }
    return getRenewMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.ResignRequest,
      dev.baton.v1.ResignResponse> getResignMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Resign",
      requestType = dev.baton.v1.ResignRequest.class,
      responseType = dev.baton.v1.ResignResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.ResignRequest,
      dev.baton.v1.ResignResponse> getResignMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.ResignRequest, dev.baton.v1.ResignResponse> getResignMethod;
    if ((getResignMethod = LeaderServiceGrpc.getResignMethod) == null) {
      synchronized (LeaderServiceGrpc.class) {
        if ((getResignMethod = LeaderServiceGrpc.getResignMethod) == null) {
          LeaderServiceGrpc.getResignMethod = getResignMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.ResignRequest, dev.baton.v1.ResignResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Resign"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ResignRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ResignResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LeaderServiceMethodDescriptorSupplier("Resign"))
              .build();
        }
      }
    }
    return getResignMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.GetLeaderRequest,
      dev.baton.v1.GetLeaderResponse> getGetLeaderMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetLeader",
      requestType = dev.baton.v1.GetLeaderRequest.class,
      responseType = dev.baton.v1.GetLeaderResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.GetLeaderRequest,
      dev.baton.v1.GetLeaderResponse> getGetLeaderMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.GetLeaderRequest, dev.baton.v1.GetLeaderResponse> getGetLeaderMethod;
    if ((getGetLeaderMethod = LeaderServiceGrpc.getGetLeaderMethod) == null) {
      synchronized (LeaderServiceGrpc.class) {
        if ((getGetLeaderMethod = LeaderServiceGrpc.getGetLeaderMethod) == null) {
          LeaderServiceGrpc.getGetLeaderMethod = getGetLeaderMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.GetLeaderRequest, dev.baton.v1.GetLeaderResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetLeader"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.GetLeaderRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.GetLeaderResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LeaderServiceMethodDescriptorSupplier("GetLeader"))
              .build();
        }
      }
    }
    return getGetLeaderMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.ObserveRequest,
      dev.baton.v1.ObserveResponse> getObserveMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Observe",
      requestType = dev.baton.v1.ObserveRequest.class,
      responseType = dev.baton.v1.ObserveResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
  public static io.grpc.MethodDescriptor<dev.baton.v1.ObserveRequest,
      dev.baton.v1.ObserveResponse> getObserveMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.ObserveRequest, dev.baton.v1.ObserveResponse> getObserveMethod;
    if ((getObserveMethod = LeaderServiceGrpc.getObserveMethod) == null) {
      synchronized (LeaderServiceGrpc.class) {
        if ((getObserveMethod = LeaderServiceGrpc.getObserveMethod) == null) {
          LeaderServiceGrpc.getObserveMethod = getObserveMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.ObserveRequest, dev.baton.v1.ObserveResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Observe"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ObserveRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ObserveResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LeaderServiceMethodDescriptorSupplier("Observe"))
              .build();
        }
      }
    }
    return getObserveMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.ListElectionsRequest,
      dev.baton.v1.ListElectionsResponse> getListElectionsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListElections",
      requestType = dev.baton.v1.ListElectionsRequest.class,
      responseType = dev.baton.v1.ListElectionsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.ListElectionsRequest,
      dev.baton.v1.ListElectionsResponse> getListElectionsMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.ListElectionsRequest, dev.baton.v1.ListElectionsResponse> getListElectionsMethod;
    if ((getListElectionsMethod = LeaderServiceGrpc.getListElectionsMethod) == null) {
      synchronized (LeaderServiceGrpc.class) {
        if ((getListElectionsMethod = LeaderServiceGrpc.getListElectionsMethod) == null) {
          LeaderServiceGrpc.getListElectionsMethod = getListElectionsMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.ListElectionsRequest, dev.baton.v1.ListElectionsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListElections"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ListElectionsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ListElectionsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LeaderServiceMethodDescriptorSupplier("ListElections"))
              .build();
        }
      }
    }
    return getListElectionsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.GetElectionHistoryRequest,
      dev.baton.v1.GetElectionHistoryResponse> getGetElectionHistoryMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetElectionHistory",
      requestType = dev.baton.v1.GetElectionHistoryRequest.class,
      responseType = dev.baton.v1.GetElectionHistoryResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.GetElectionHistoryRequest,
      dev.baton.v1.GetElectionHistoryResponse> getGetElectionHistoryMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.GetElectionHistoryRequest, dev.baton.v1.GetElectionHistoryResponse> getGetElectionHistoryMethod;
    if ((getGetElectionHistoryMethod = LeaderServiceGrpc.getGetElectionHistoryMethod) == null) {
      synchronized (LeaderServiceGrpc.class) {
        if ((getGetElectionHistoryMethod = LeaderServiceGrpc.getGetElectionHistoryMethod) == null) {
          LeaderServiceGrpc.getGetElectionHistoryMethod = getGetElectionHistoryMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.GetElectionHistoryRequest, dev.baton.v1.GetElectionHistoryResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetElectionHistory"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.GetElectionHistoryRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.GetElectionHistoryResponse.getDefaultInstance()))
              .setSchemaDescriptor(new LeaderServiceMethodDescriptorSupplier("GetElectionHistory"))
              .build();
        }
      }
    }
    return getGetElectionHistoryMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static LeaderServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<LeaderServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<LeaderServiceStub>() {
        @java.lang.Override
        public LeaderServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new LeaderServiceStub(channel, callOptions);
        }
      };
    return LeaderServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static LeaderServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<LeaderServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<LeaderServiceBlockingV2Stub>() {
        @java.lang.Override
        public LeaderServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new LeaderServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return LeaderServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static LeaderServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<LeaderServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<LeaderServiceBlockingStub>() {
        @java.lang.Override
        public LeaderServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new LeaderServiceBlockingStub(channel, callOptions);
        }
      };
    return LeaderServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static LeaderServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<LeaderServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<LeaderServiceFutureStub>() {
        @java.lang.Override
        public LeaderServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new LeaderServiceFutureStub(channel, callOptions);
        }
      };
    return LeaderServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * LeaderService elects one leader per named election, lazily: a candidate becomes leader only
   * when there is none. Each term has a fencing token that strictly increases per election; the
   * leader should present it to whatever it writes, so that a deposed leader's late writes can be
   * refused. Leadership ends when the leader resigns or stops renewing before its expiry, which
   * is judged by the Redis server's clock alone.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * Campaign makes the candidate leader if the election has none (or its leader expired), and
     * refreshes the expiry if the candidate already leads. It returns whether the candidate leads,
     * and the current leader, token and expiry either way. With wait &gt; 0 and another leader in
     * office, the call is held until this candidate is elected or the wait ends (then it returns
     * is_leader = false, not an error). Retrying a Campaign is safe.
     * </pre>
     */
    default void campaign(dev.baton.v1.CampaignRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.CampaignResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCampaignMethod(), responseObserver);
    }

    /**
     * <pre>
     * Renew extends the leadership held with token to now + the term's ttl. If the leadership is
     * gone (expired, resigned, or another term began), it fails with FAILED_PRECONDITION, reason
     * LEASE_LOST, and changes nothing: the caller must stop acting as leader.
     * </pre>
     */
    default void renew(dev.baton.v1.RenewRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.RenewResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getRenewMethod(), responseObserver);
    }

    /**
     * <pre>
     * Resign ends the leadership held with token at once, so the next campaigner wins without
     * waiting for the expiry. A stale token is LEASE_LOST and changes nothing.
     * </pre>
     */
    default void resign(dev.baton.v1.ResignRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ResignResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getResignMethod(), responseObserver);
    }

    /**
     * <pre>
     * GetLeader returns the current leader, or an empty leader_id when there is none.
     * </pre>
     */
    default void getLeader(dev.baton.v1.GetLeaderRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.GetLeaderResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetLeaderMethod(), responseObserver);
    }

    /**
     * <pre>
     * Observe streams the election's leadership changes, as seen through any Baton replica: first
     * the current state (kind CURRENT), then every ELECTED, RESIGNED and EXPIRED. The stream ends
     * cleanly when the server shuts down; reconnect and the first message tells the state again.
     * </pre>
     */
    default void observe(dev.baton.v1.ObserveRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ObserveResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getObserveMethod(), responseObserver);
    }

    /**
     * <pre>
     * ListElections lists every election a term was ever started in (Baton's registry of
     * elections), the most recently started term first, each with its current leader. A caller
     * with name scopes sees only the elections within them (a page may then hold fewer than
     * page_size).
     * </pre>
     */
    default void listElections(dev.baton.v1.ListElectionsRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ListElectionsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListElectionsMethod(), responseObserver);
    }

    /**
     * <pre>
     * GetElectionHistory returns an election's most recent terms, newest first: who led, with
     * which token, from when until when, and how each ended. Baton keeps the last 50 terms of
     * every election.
     * </pre>
     */
    default void getElectionHistory(dev.baton.v1.GetElectionHistoryRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.GetElectionHistoryResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetElectionHistoryMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service LeaderService.
   * <pre>
   * LeaderService elects one leader per named election, lazily: a candidate becomes leader only
   * when there is none. Each term has a fencing token that strictly increases per election; the
   * leader should present it to whatever it writes, so that a deposed leader's late writes can be
   * refused. Leadership ends when the leader resigns or stops renewing before its expiry, which
   * is judged by the Redis server's clock alone.
   * </pre>
   */
  public static abstract class LeaderServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return LeaderServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service LeaderService.
   * <pre>
   * LeaderService elects one leader per named election, lazily: a candidate becomes leader only
   * when there is none. Each term has a fencing token that strictly increases per election; the
   * leader should present it to whatever it writes, so that a deposed leader's late writes can be
   * refused. Leadership ends when the leader resigns or stops renewing before its expiry, which
   * is judged by the Redis server's clock alone.
   * </pre>
   */
  public static final class LeaderServiceStub
      extends io.grpc.stub.AbstractAsyncStub<LeaderServiceStub> {
    private LeaderServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected LeaderServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new LeaderServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * Campaign makes the candidate leader if the election has none (or its leader expired), and
     * refreshes the expiry if the candidate already leads. It returns whether the candidate leads,
     * and the current leader, token and expiry either way. With wait &gt; 0 and another leader in
     * office, the call is held until this candidate is elected or the wait ends (then it returns
     * is_leader = false, not an error). Retrying a Campaign is safe.
     * </pre>
     */
    public void campaign(dev.baton.v1.CampaignRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.CampaignResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCampaignMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Renew extends the leadership held with token to now + the term's ttl. If the leadership is
     * gone (expired, resigned, or another term began), it fails with FAILED_PRECONDITION, reason
     * LEASE_LOST, and changes nothing: the caller must stop acting as leader.
     * </pre>
     */
    public void renew(dev.baton.v1.RenewRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.RenewResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getRenewMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Resign ends the leadership held with token at once, so the next campaigner wins without
     * waiting for the expiry. A stale token is LEASE_LOST and changes nothing.
     * </pre>
     */
    public void resign(dev.baton.v1.ResignRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ResignResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getResignMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * GetLeader returns the current leader, or an empty leader_id when there is none.
     * </pre>
     */
    public void getLeader(dev.baton.v1.GetLeaderRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.GetLeaderResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetLeaderMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Observe streams the election's leadership changes, as seen through any Baton replica: first
     * the current state (kind CURRENT), then every ELECTED, RESIGNED and EXPIRED. The stream ends
     * cleanly when the server shuts down; reconnect and the first message tells the state again.
     * </pre>
     */
    public void observe(dev.baton.v1.ObserveRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ObserveResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncServerStreamingCall(
          getChannel().newCall(getObserveMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * ListElections lists every election a term was ever started in (Baton's registry of
     * elections), the most recently started term first, each with its current leader. A caller
     * with name scopes sees only the elections within them (a page may then hold fewer than
     * page_size).
     * </pre>
     */
    public void listElections(dev.baton.v1.ListElectionsRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ListElectionsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListElectionsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * GetElectionHistory returns an election's most recent terms, newest first: who led, with
     * which token, from when until when, and how each ended. Baton keeps the last 50 terms of
     * every election.
     * </pre>
     */
    public void getElectionHistory(dev.baton.v1.GetElectionHistoryRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.GetElectionHistoryResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetElectionHistoryMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service LeaderService.
   * <pre>
   * LeaderService elects one leader per named election, lazily: a candidate becomes leader only
   * when there is none. Each term has a fencing token that strictly increases per election; the
   * leader should present it to whatever it writes, so that a deposed leader's late writes can be
   * refused. Leadership ends when the leader resigns or stops renewing before its expiry, which
   * is judged by the Redis server's clock alone.
   * </pre>
   */
  public static final class LeaderServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<LeaderServiceBlockingV2Stub> {
    private LeaderServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected LeaderServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new LeaderServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * Campaign makes the candidate leader if the election has none (or its leader expired), and
     * refreshes the expiry if the candidate already leads. It returns whether the candidate leads,
     * and the current leader, token and expiry either way. With wait &gt; 0 and another leader in
     * office, the call is held until this candidate is elected or the wait ends (then it returns
     * is_leader = false, not an error). Retrying a Campaign is safe.
     * </pre>
     */
    public dev.baton.v1.CampaignResponse campaign(dev.baton.v1.CampaignRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCampaignMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Renew extends the leadership held with token to now + the term's ttl. If the leadership is
     * gone (expired, resigned, or another term began), it fails with FAILED_PRECONDITION, reason
     * LEASE_LOST, and changes nothing: the caller must stop acting as leader.
     * </pre>
     */
    public dev.baton.v1.RenewResponse renew(dev.baton.v1.RenewRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getRenewMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Resign ends the leadership held with token at once, so the next campaigner wins without
     * waiting for the expiry. A stale token is LEASE_LOST and changes nothing.
     * </pre>
     */
    public dev.baton.v1.ResignResponse resign(dev.baton.v1.ResignRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getResignMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetLeader returns the current leader, or an empty leader_id when there is none.
     * </pre>
     */
    public dev.baton.v1.GetLeaderResponse getLeader(dev.baton.v1.GetLeaderRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetLeaderMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Observe streams the election's leadership changes, as seen through any Baton replica: first
     * the current state (kind CURRENT), then every ELECTED, RESIGNED and EXPIRED. The stream ends
     * cleanly when the server shuts down; reconnect and the first message tells the state again.
     * </pre>
     */
    @io.grpc.ExperimentalApi("https://github.com/grpc/grpc-java/issues/10918")
    public io.grpc.stub.BlockingClientCall<?, dev.baton.v1.ObserveResponse>
        observe(dev.baton.v1.ObserveRequest request) {
      return io.grpc.stub.ClientCalls.blockingV2ServerStreamingCall(
          getChannel(), getObserveMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListElections lists every election a term was ever started in (Baton's registry of
     * elections), the most recently started term first, each with its current leader. A caller
     * with name scopes sees only the elections within them (a page may then hold fewer than
     * page_size).
     * </pre>
     */
    public dev.baton.v1.ListElectionsResponse listElections(dev.baton.v1.ListElectionsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListElectionsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetElectionHistory returns an election's most recent terms, newest first: who led, with
     * which token, from when until when, and how each ended. Baton keeps the last 50 terms of
     * every election.
     * </pre>
     */
    public dev.baton.v1.GetElectionHistoryResponse getElectionHistory(dev.baton.v1.GetElectionHistoryRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetElectionHistoryMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service LeaderService.
   * <pre>
   * LeaderService elects one leader per named election, lazily: a candidate becomes leader only
   * when there is none. Each term has a fencing token that strictly increases per election; the
   * leader should present it to whatever it writes, so that a deposed leader's late writes can be
   * refused. Leadership ends when the leader resigns or stops renewing before its expiry, which
   * is judged by the Redis server's clock alone.
   * </pre>
   */
  public static final class LeaderServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<LeaderServiceBlockingStub> {
    private LeaderServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected LeaderServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new LeaderServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * Campaign makes the candidate leader if the election has none (or its leader expired), and
     * refreshes the expiry if the candidate already leads. It returns whether the candidate leads,
     * and the current leader, token and expiry either way. With wait &gt; 0 and another leader in
     * office, the call is held until this candidate is elected or the wait ends (then it returns
     * is_leader = false, not an error). Retrying a Campaign is safe.
     * </pre>
     */
    public dev.baton.v1.CampaignResponse campaign(dev.baton.v1.CampaignRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCampaignMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Renew extends the leadership held with token to now + the term's ttl. If the leadership is
     * gone (expired, resigned, or another term began), it fails with FAILED_PRECONDITION, reason
     * LEASE_LOST, and changes nothing: the caller must stop acting as leader.
     * </pre>
     */
    public dev.baton.v1.RenewResponse renew(dev.baton.v1.RenewRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getRenewMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Resign ends the leadership held with token at once, so the next campaigner wins without
     * waiting for the expiry. A stale token is LEASE_LOST and changes nothing.
     * </pre>
     */
    public dev.baton.v1.ResignResponse resign(dev.baton.v1.ResignRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getResignMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetLeader returns the current leader, or an empty leader_id when there is none.
     * </pre>
     */
    public dev.baton.v1.GetLeaderResponse getLeader(dev.baton.v1.GetLeaderRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetLeaderMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Observe streams the election's leadership changes, as seen through any Baton replica: first
     * the current state (kind CURRENT), then every ELECTED, RESIGNED and EXPIRED. The stream ends
     * cleanly when the server shuts down; reconnect and the first message tells the state again.
     * </pre>
     */
    public java.util.Iterator<dev.baton.v1.ObserveResponse> observe(
        dev.baton.v1.ObserveRequest request) {
      return io.grpc.stub.ClientCalls.blockingServerStreamingCall(
          getChannel(), getObserveMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListElections lists every election a term was ever started in (Baton's registry of
     * elections), the most recently started term first, each with its current leader. A caller
     * with name scopes sees only the elections within them (a page may then hold fewer than
     * page_size).
     * </pre>
     */
    public dev.baton.v1.ListElectionsResponse listElections(dev.baton.v1.ListElectionsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListElectionsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetElectionHistory returns an election's most recent terms, newest first: who led, with
     * which token, from when until when, and how each ended. Baton keeps the last 50 terms of
     * every election.
     * </pre>
     */
    public dev.baton.v1.GetElectionHistoryResponse getElectionHistory(dev.baton.v1.GetElectionHistoryRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetElectionHistoryMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service LeaderService.
   * <pre>
   * LeaderService elects one leader per named election, lazily: a candidate becomes leader only
   * when there is none. Each term has a fencing token that strictly increases per election; the
   * leader should present it to whatever it writes, so that a deposed leader's late writes can be
   * refused. Leadership ends when the leader resigns or stops renewing before its expiry, which
   * is judged by the Redis server's clock alone.
   * </pre>
   */
  public static final class LeaderServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<LeaderServiceFutureStub> {
    private LeaderServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected LeaderServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new LeaderServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * Campaign makes the candidate leader if the election has none (or its leader expired), and
     * refreshes the expiry if the candidate already leads. It returns whether the candidate leads,
     * and the current leader, token and expiry either way. With wait &gt; 0 and another leader in
     * office, the call is held until this candidate is elected or the wait ends (then it returns
     * is_leader = false, not an error). Retrying a Campaign is safe.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.CampaignResponse> campaign(
        dev.baton.v1.CampaignRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCampaignMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Renew extends the leadership held with token to now + the term's ttl. If the leadership is
     * gone (expired, resigned, or another term began), it fails with FAILED_PRECONDITION, reason
     * LEASE_LOST, and changes nothing: the caller must stop acting as leader.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.RenewResponse> renew(
        dev.baton.v1.RenewRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getRenewMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Resign ends the leadership held with token at once, so the next campaigner wins without
     * waiting for the expiry. A stale token is LEASE_LOST and changes nothing.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.ResignResponse> resign(
        dev.baton.v1.ResignRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getResignMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * GetLeader returns the current leader, or an empty leader_id when there is none.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.GetLeaderResponse> getLeader(
        dev.baton.v1.GetLeaderRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetLeaderMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * ListElections lists every election a term was ever started in (Baton's registry of
     * elections), the most recently started term first, each with its current leader. A caller
     * with name scopes sees only the elections within them (a page may then hold fewer than
     * page_size).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.ListElectionsResponse> listElections(
        dev.baton.v1.ListElectionsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListElectionsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * GetElectionHistory returns an election's most recent terms, newest first: who led, with
     * which token, from when until when, and how each ended. Baton keeps the last 50 terms of
     * every election.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.GetElectionHistoryResponse> getElectionHistory(
        dev.baton.v1.GetElectionHistoryRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetElectionHistoryMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_CAMPAIGN = 0;
  private static final int METHODID_RENEW = 1;
  private static final int METHODID_RESIGN = 2;
  private static final int METHODID_GET_LEADER = 3;
  private static final int METHODID_OBSERVE = 4;
  private static final int METHODID_LIST_ELECTIONS = 5;
  private static final int METHODID_GET_ELECTION_HISTORY = 6;

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
        case METHODID_CAMPAIGN:
          serviceImpl.campaign((dev.baton.v1.CampaignRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.CampaignResponse>) responseObserver);
          break;
        case METHODID_RENEW:
          serviceImpl.renew((dev.baton.v1.RenewRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.RenewResponse>) responseObserver);
          break;
        case METHODID_RESIGN:
          serviceImpl.resign((dev.baton.v1.ResignRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.ResignResponse>) responseObserver);
          break;
        case METHODID_GET_LEADER:
          serviceImpl.getLeader((dev.baton.v1.GetLeaderRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.GetLeaderResponse>) responseObserver);
          break;
        case METHODID_OBSERVE:
          serviceImpl.observe((dev.baton.v1.ObserveRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.ObserveResponse>) responseObserver);
          break;
        case METHODID_LIST_ELECTIONS:
          serviceImpl.listElections((dev.baton.v1.ListElectionsRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.ListElectionsResponse>) responseObserver);
          break;
        case METHODID_GET_ELECTION_HISTORY:
          serviceImpl.getElectionHistory((dev.baton.v1.GetElectionHistoryRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.GetElectionHistoryResponse>) responseObserver);
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
          getCampaignMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.CampaignRequest,
              dev.baton.v1.CampaignResponse>(
                service, METHODID_CAMPAIGN)))
        .addMethod(
          getRenewMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.RenewRequest,
              dev.baton.v1.RenewResponse>(
                service, METHODID_RENEW)))
        .addMethod(
          getResignMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.ResignRequest,
              dev.baton.v1.ResignResponse>(
                service, METHODID_RESIGN)))
        .addMethod(
          getGetLeaderMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.GetLeaderRequest,
              dev.baton.v1.GetLeaderResponse>(
                service, METHODID_GET_LEADER)))
        .addMethod(
          getObserveMethod(),
          io.grpc.stub.ServerCalls.asyncServerStreamingCall(
            new MethodHandlers<
              dev.baton.v1.ObserveRequest,
              dev.baton.v1.ObserveResponse>(
                service, METHODID_OBSERVE)))
        .addMethod(
          getListElectionsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.ListElectionsRequest,
              dev.baton.v1.ListElectionsResponse>(
                service, METHODID_LIST_ELECTIONS)))
        .addMethod(
          getGetElectionHistoryMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.GetElectionHistoryRequest,
              dev.baton.v1.GetElectionHistoryResponse>(
                service, METHODID_GET_ELECTION_HISTORY)))
        .build();
  }

  private static abstract class LeaderServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    LeaderServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.baton.v1.LeaderProto.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("LeaderService");
    }
  }

  private static final class LeaderServiceFileDescriptorSupplier
      extends LeaderServiceBaseDescriptorSupplier {
    LeaderServiceFileDescriptorSupplier() {}
  }

  private static final class LeaderServiceMethodDescriptorSupplier
      extends LeaderServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    LeaderServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (LeaderServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new LeaderServiceFileDescriptorSupplier())
              .addMethod(getCampaignMethod())
              .addMethod(getRenewMethod())
              .addMethod(getResignMethod())
              .addMethod(getGetLeaderMethod())
              .addMethod(getObserveMethod())
              .addMethod(getListElectionsMethod())
              .addMethod(getGetElectionHistoryMethod())
              .build();
        }
      }
    }
    return result;
  }
}

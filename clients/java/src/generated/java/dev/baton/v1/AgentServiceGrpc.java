package dev.baton.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * AgentService runs recurring and one-shot work items ("agents") on a fleet
 * of workers, each agent held by exactly one worker at a time.
 * An agent lives in a queue. It is waiting (scored by its next run time),
 * working (held under a lease until a deadline), dead-lettered (after
 * max_attempts consecutive failures), or waiting for an event or a time
 * (CompleteRequest.wait_for, Agent.wait_for; Signal ends the wait). Every lease carries a fencing token
 * that strictly increases per queue; Heartbeat, Complete and Release must
 * present it, and a stale or unknown token is rejected with
 * FAILED_PRECONDITION, reason LEASE_LOST, without changing anything.
 * All times come from the Redis server's clock (TIME); no worker or Baton
 * replica clock is ever used for a schedule or a deadline.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class AgentServiceGrpc {

  private AgentServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "baton.v1.AgentService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.RegisterRequest,
      dev.baton.v1.RegisterResponse> getRegisterMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Register",
      requestType = dev.baton.v1.RegisterRequest.class,
      responseType = dev.baton.v1.RegisterResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.RegisterRequest,
      dev.baton.v1.RegisterResponse> getRegisterMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.RegisterRequest, dev.baton.v1.RegisterResponse> getRegisterMethod;
    if ((getRegisterMethod = AgentServiceGrpc.getRegisterMethod) == null) {
      synchronized (AgentServiceGrpc.class) {
        if ((getRegisterMethod = AgentServiceGrpc.getRegisterMethod) == null) {
          AgentServiceGrpc.getRegisterMethod = getRegisterMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.RegisterRequest, dev.baton.v1.RegisterResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Register"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.RegisterRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.RegisterResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AgentServiceMethodDescriptorSupplier("Register"))
              .build();
        }
      }
    }
    return getRegisterMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.UnregisterRequest,
      dev.baton.v1.UnregisterResponse> getUnregisterMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Unregister",
      requestType = dev.baton.v1.UnregisterRequest.class,
      responseType = dev.baton.v1.UnregisterResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.UnregisterRequest,
      dev.baton.v1.UnregisterResponse> getUnregisterMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.UnregisterRequest, dev.baton.v1.UnregisterResponse> getUnregisterMethod;
    if ((getUnregisterMethod = AgentServiceGrpc.getUnregisterMethod) == null) {
      synchronized (AgentServiceGrpc.class) {
        if ((getUnregisterMethod = AgentServiceGrpc.getUnregisterMethod) == null) {
          AgentServiceGrpc.getUnregisterMethod = getUnregisterMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.UnregisterRequest, dev.baton.v1.UnregisterResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Unregister"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.UnregisterRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.UnregisterResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AgentServiceMethodDescriptorSupplier("Unregister"))
              .build();
        }
      }
    }
    return getUnregisterMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.AcquireRequest,
      dev.baton.v1.AcquireResponse> getAcquireMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Acquire",
      requestType = dev.baton.v1.AcquireRequest.class,
      responseType = dev.baton.v1.AcquireResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.AcquireRequest,
      dev.baton.v1.AcquireResponse> getAcquireMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.AcquireRequest, dev.baton.v1.AcquireResponse> getAcquireMethod;
    if ((getAcquireMethod = AgentServiceGrpc.getAcquireMethod) == null) {
      synchronized (AgentServiceGrpc.class) {
        if ((getAcquireMethod = AgentServiceGrpc.getAcquireMethod) == null) {
          AgentServiceGrpc.getAcquireMethod = getAcquireMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.AcquireRequest, dev.baton.v1.AcquireResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Acquire"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.AcquireRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.AcquireResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AgentServiceMethodDescriptorSupplier("Acquire"))
              .build();
        }
      }
    }
    return getAcquireMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.HeartbeatRequest,
      dev.baton.v1.HeartbeatResponse> getHeartbeatMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Heartbeat",
      requestType = dev.baton.v1.HeartbeatRequest.class,
      responseType = dev.baton.v1.HeartbeatResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.HeartbeatRequest,
      dev.baton.v1.HeartbeatResponse> getHeartbeatMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.HeartbeatRequest, dev.baton.v1.HeartbeatResponse> getHeartbeatMethod;
    if ((getHeartbeatMethod = AgentServiceGrpc.getHeartbeatMethod) == null) {
      synchronized (AgentServiceGrpc.class) {
        if ((getHeartbeatMethod = AgentServiceGrpc.getHeartbeatMethod) == null) {
          AgentServiceGrpc.getHeartbeatMethod = getHeartbeatMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.HeartbeatRequest, dev.baton.v1.HeartbeatResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Heartbeat"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.HeartbeatRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.HeartbeatResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AgentServiceMethodDescriptorSupplier("Heartbeat"))
              .build();
        }
      }
    }
    return getHeartbeatMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.CompleteRequest,
      dev.baton.v1.CompleteResponse> getCompleteMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Complete",
      requestType = dev.baton.v1.CompleteRequest.class,
      responseType = dev.baton.v1.CompleteResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.CompleteRequest,
      dev.baton.v1.CompleteResponse> getCompleteMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.CompleteRequest, dev.baton.v1.CompleteResponse> getCompleteMethod;
    if ((getCompleteMethod = AgentServiceGrpc.getCompleteMethod) == null) {
      synchronized (AgentServiceGrpc.class) {
        if ((getCompleteMethod = AgentServiceGrpc.getCompleteMethod) == null) {
          AgentServiceGrpc.getCompleteMethod = getCompleteMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.CompleteRequest, dev.baton.v1.CompleteResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Complete"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.CompleteRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.CompleteResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AgentServiceMethodDescriptorSupplier("Complete"))
              .build();
        }
      }
    }
    return getCompleteMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.CompleteBatchRequest,
      dev.baton.v1.CompleteBatchResponse> getCompleteBatchMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CompleteBatch",
      requestType = dev.baton.v1.CompleteBatchRequest.class,
      responseType = dev.baton.v1.CompleteBatchResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.CompleteBatchRequest,
      dev.baton.v1.CompleteBatchResponse> getCompleteBatchMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.CompleteBatchRequest, dev.baton.v1.CompleteBatchResponse> getCompleteBatchMethod;
    if ((getCompleteBatchMethod = AgentServiceGrpc.getCompleteBatchMethod) == null) {
      synchronized (AgentServiceGrpc.class) {
        if ((getCompleteBatchMethod = AgentServiceGrpc.getCompleteBatchMethod) == null) {
          AgentServiceGrpc.getCompleteBatchMethod = getCompleteBatchMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.CompleteBatchRequest, dev.baton.v1.CompleteBatchResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CompleteBatch"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.CompleteBatchRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.CompleteBatchResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AgentServiceMethodDescriptorSupplier("CompleteBatch"))
              .build();
        }
      }
    }
    return getCompleteBatchMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.SessionRequest,
      dev.baton.v1.SessionResponse> getSessionMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Session",
      requestType = dev.baton.v1.SessionRequest.class,
      responseType = dev.baton.v1.SessionResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.BIDI_STREAMING)
  public static io.grpc.MethodDescriptor<dev.baton.v1.SessionRequest,
      dev.baton.v1.SessionResponse> getSessionMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.SessionRequest, dev.baton.v1.SessionResponse> getSessionMethod;
    if ((getSessionMethod = AgentServiceGrpc.getSessionMethod) == null) {
      synchronized (AgentServiceGrpc.class) {
        if ((getSessionMethod = AgentServiceGrpc.getSessionMethod) == null) {
          AgentServiceGrpc.getSessionMethod = getSessionMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.SessionRequest, dev.baton.v1.SessionResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.BIDI_STREAMING)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Session"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.SessionRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.SessionResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AgentServiceMethodDescriptorSupplier("Session"))
              .build();
        }
      }
    }
    return getSessionMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.ReleaseRequest,
      dev.baton.v1.ReleaseResponse> getReleaseMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Release",
      requestType = dev.baton.v1.ReleaseRequest.class,
      responseType = dev.baton.v1.ReleaseResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.ReleaseRequest,
      dev.baton.v1.ReleaseResponse> getReleaseMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.ReleaseRequest, dev.baton.v1.ReleaseResponse> getReleaseMethod;
    if ((getReleaseMethod = AgentServiceGrpc.getReleaseMethod) == null) {
      synchronized (AgentServiceGrpc.class) {
        if ((getReleaseMethod = AgentServiceGrpc.getReleaseMethod) == null) {
          AgentServiceGrpc.getReleaseMethod = getReleaseMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.ReleaseRequest, dev.baton.v1.ReleaseResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Release"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ReleaseRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ReleaseResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AgentServiceMethodDescriptorSupplier("Release"))
              .build();
        }
      }
    }
    return getReleaseMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.GetAgentRequest,
      dev.baton.v1.GetAgentResponse> getGetAgentMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetAgent",
      requestType = dev.baton.v1.GetAgentRequest.class,
      responseType = dev.baton.v1.GetAgentResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.GetAgentRequest,
      dev.baton.v1.GetAgentResponse> getGetAgentMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.GetAgentRequest, dev.baton.v1.GetAgentResponse> getGetAgentMethod;
    if ((getGetAgentMethod = AgentServiceGrpc.getGetAgentMethod) == null) {
      synchronized (AgentServiceGrpc.class) {
        if ((getGetAgentMethod = AgentServiceGrpc.getGetAgentMethod) == null) {
          AgentServiceGrpc.getGetAgentMethod = getGetAgentMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.GetAgentRequest, dev.baton.v1.GetAgentResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetAgent"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.GetAgentRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.GetAgentResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AgentServiceMethodDescriptorSupplier("GetAgent"))
              .build();
        }
      }
    }
    return getGetAgentMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.ListAgentsRequest,
      dev.baton.v1.ListAgentsResponse> getListAgentsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListAgents",
      requestType = dev.baton.v1.ListAgentsRequest.class,
      responseType = dev.baton.v1.ListAgentsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.ListAgentsRequest,
      dev.baton.v1.ListAgentsResponse> getListAgentsMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.ListAgentsRequest, dev.baton.v1.ListAgentsResponse> getListAgentsMethod;
    if ((getListAgentsMethod = AgentServiceGrpc.getListAgentsMethod) == null) {
      synchronized (AgentServiceGrpc.class) {
        if ((getListAgentsMethod = AgentServiceGrpc.getListAgentsMethod) == null) {
          AgentServiceGrpc.getListAgentsMethod = getListAgentsMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.ListAgentsRequest, dev.baton.v1.ListAgentsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListAgents"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ListAgentsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ListAgentsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AgentServiceMethodDescriptorSupplier("ListAgents"))
              .build();
        }
      }
    }
    return getListAgentsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.CancelRunRequest,
      dev.baton.v1.CancelRunResponse> getCancelRunMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CancelRun",
      requestType = dev.baton.v1.CancelRunRequest.class,
      responseType = dev.baton.v1.CancelRunResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.CancelRunRequest,
      dev.baton.v1.CancelRunResponse> getCancelRunMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.CancelRunRequest, dev.baton.v1.CancelRunResponse> getCancelRunMethod;
    if ((getCancelRunMethod = AgentServiceGrpc.getCancelRunMethod) == null) {
      synchronized (AgentServiceGrpc.class) {
        if ((getCancelRunMethod = AgentServiceGrpc.getCancelRunMethod) == null) {
          AgentServiceGrpc.getCancelRunMethod = getCancelRunMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.CancelRunRequest, dev.baton.v1.CancelRunResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CancelRun"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.CancelRunRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.CancelRunResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AgentServiceMethodDescriptorSupplier("CancelRun"))
              .build();
        }
      }
    }
    return getCancelRunMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.AwaitRequest,
      dev.baton.v1.AwaitResponse> getAwaitMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Await",
      requestType = dev.baton.v1.AwaitRequest.class,
      responseType = dev.baton.v1.AwaitResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.AwaitRequest,
      dev.baton.v1.AwaitResponse> getAwaitMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.AwaitRequest, dev.baton.v1.AwaitResponse> getAwaitMethod;
    if ((getAwaitMethod = AgentServiceGrpc.getAwaitMethod) == null) {
      synchronized (AgentServiceGrpc.class) {
        if ((getAwaitMethod = AgentServiceGrpc.getAwaitMethod) == null) {
          AgentServiceGrpc.getAwaitMethod = getAwaitMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.AwaitRequest, dev.baton.v1.AwaitResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Await"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.AwaitRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.AwaitResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AgentServiceMethodDescriptorSupplier("Await"))
              .build();
        }
      }
    }
    return getAwaitMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.RegisterBatchRequest,
      dev.baton.v1.RegisterBatchResponse> getRegisterBatchMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "RegisterBatch",
      requestType = dev.baton.v1.RegisterBatchRequest.class,
      responseType = dev.baton.v1.RegisterBatchResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.RegisterBatchRequest,
      dev.baton.v1.RegisterBatchResponse> getRegisterBatchMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.RegisterBatchRequest, dev.baton.v1.RegisterBatchResponse> getRegisterBatchMethod;
    if ((getRegisterBatchMethod = AgentServiceGrpc.getRegisterBatchMethod) == null) {
      synchronized (AgentServiceGrpc.class) {
        if ((getRegisterBatchMethod = AgentServiceGrpc.getRegisterBatchMethod) == null) {
          AgentServiceGrpc.getRegisterBatchMethod = getRegisterBatchMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.RegisterBatchRequest, dev.baton.v1.RegisterBatchResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "RegisterBatch"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.RegisterBatchRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.RegisterBatchResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AgentServiceMethodDescriptorSupplier("RegisterBatch"))
              .build();
        }
      }
    }
    return getRegisterBatchMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.CloseBatchRequest,
      dev.baton.v1.CloseBatchResponse> getCloseBatchMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "CloseBatch",
      requestType = dev.baton.v1.CloseBatchRequest.class,
      responseType = dev.baton.v1.CloseBatchResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.CloseBatchRequest,
      dev.baton.v1.CloseBatchResponse> getCloseBatchMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.CloseBatchRequest, dev.baton.v1.CloseBatchResponse> getCloseBatchMethod;
    if ((getCloseBatchMethod = AgentServiceGrpc.getCloseBatchMethod) == null) {
      synchronized (AgentServiceGrpc.class) {
        if ((getCloseBatchMethod = AgentServiceGrpc.getCloseBatchMethod) == null) {
          AgentServiceGrpc.getCloseBatchMethod = getCloseBatchMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.CloseBatchRequest, dev.baton.v1.CloseBatchResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "CloseBatch"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.CloseBatchRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.CloseBatchResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AgentServiceMethodDescriptorSupplier("CloseBatch"))
              .build();
        }
      }
    }
    return getCloseBatchMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.GetBatchRequest,
      dev.baton.v1.GetBatchResponse> getGetBatchMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetBatch",
      requestType = dev.baton.v1.GetBatchRequest.class,
      responseType = dev.baton.v1.GetBatchResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.GetBatchRequest,
      dev.baton.v1.GetBatchResponse> getGetBatchMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.GetBatchRequest, dev.baton.v1.GetBatchResponse> getGetBatchMethod;
    if ((getGetBatchMethod = AgentServiceGrpc.getGetBatchMethod) == null) {
      synchronized (AgentServiceGrpc.class) {
        if ((getGetBatchMethod = AgentServiceGrpc.getGetBatchMethod) == null) {
          AgentServiceGrpc.getGetBatchMethod = getGetBatchMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.GetBatchRequest, dev.baton.v1.GetBatchResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetBatch"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.GetBatchRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.GetBatchResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AgentServiceMethodDescriptorSupplier("GetBatch"))
              .build();
        }
      }
    }
    return getGetBatchMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.RecordStepRequest,
      dev.baton.v1.RecordStepResponse> getRecordStepMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "RecordStep",
      requestType = dev.baton.v1.RecordStepRequest.class,
      responseType = dev.baton.v1.RecordStepResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.RecordStepRequest,
      dev.baton.v1.RecordStepResponse> getRecordStepMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.RecordStepRequest, dev.baton.v1.RecordStepResponse> getRecordStepMethod;
    if ((getRecordStepMethod = AgentServiceGrpc.getRecordStepMethod) == null) {
      synchronized (AgentServiceGrpc.class) {
        if ((getRecordStepMethod = AgentServiceGrpc.getRecordStepMethod) == null) {
          AgentServiceGrpc.getRecordStepMethod = getRecordStepMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.RecordStepRequest, dev.baton.v1.RecordStepResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "RecordStep"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.RecordStepRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.RecordStepResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AgentServiceMethodDescriptorSupplier("RecordStep"))
              .build();
        }
      }
    }
    return getRecordStepMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.WatchAgentRequest,
      dev.baton.v1.WatchAgentResponse> getWatchAgentMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "WatchAgent",
      requestType = dev.baton.v1.WatchAgentRequest.class,
      responseType = dev.baton.v1.WatchAgentResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
  public static io.grpc.MethodDescriptor<dev.baton.v1.WatchAgentRequest,
      dev.baton.v1.WatchAgentResponse> getWatchAgentMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.WatchAgentRequest, dev.baton.v1.WatchAgentResponse> getWatchAgentMethod;
    if ((getWatchAgentMethod = AgentServiceGrpc.getWatchAgentMethod) == null) {
      synchronized (AgentServiceGrpc.class) {
        if ((getWatchAgentMethod = AgentServiceGrpc.getWatchAgentMethod) == null) {
          AgentServiceGrpc.getWatchAgentMethod = getWatchAgentMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.WatchAgentRequest, dev.baton.v1.WatchAgentResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "WatchAgent"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.WatchAgentRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.WatchAgentResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AgentServiceMethodDescriptorSupplier("WatchAgent"))
              .build();
        }
      }
    }
    return getWatchAgentMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.SignalRequest,
      dev.baton.v1.SignalResponse> getSignalMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Signal",
      requestType = dev.baton.v1.SignalRequest.class,
      responseType = dev.baton.v1.SignalResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.SignalRequest,
      dev.baton.v1.SignalResponse> getSignalMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.SignalRequest, dev.baton.v1.SignalResponse> getSignalMethod;
    if ((getSignalMethod = AgentServiceGrpc.getSignalMethod) == null) {
      synchronized (AgentServiceGrpc.class) {
        if ((getSignalMethod = AgentServiceGrpc.getSignalMethod) == null) {
          AgentServiceGrpc.getSignalMethod = getSignalMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.SignalRequest, dev.baton.v1.SignalResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Signal"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.SignalRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.SignalResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AgentServiceMethodDescriptorSupplier("Signal"))
              .build();
        }
      }
    }
    return getSignalMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static AgentServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<AgentServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<AgentServiceStub>() {
        @java.lang.Override
        public AgentServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new AgentServiceStub(channel, callOptions);
        }
      };
    return AgentServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static AgentServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<AgentServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<AgentServiceBlockingV2Stub>() {
        @java.lang.Override
        public AgentServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new AgentServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return AgentServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static AgentServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<AgentServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<AgentServiceBlockingStub>() {
        @java.lang.Override
        public AgentServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new AgentServiceBlockingStub(channel, callOptions);
        }
      };
    return AgentServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static AgentServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<AgentServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<AgentServiceFutureStub>() {
        @java.lang.Override
        public AgentServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new AgentServiceFutureStub(channel, callOptions);
        }
      };
    return AgentServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * AgentService runs recurring and one-shot work items ("agents") on a fleet
   * of workers, each agent held by exactly one worker at a time.
   * An agent lives in a queue. It is waiting (scored by its next run time),
   * working (held under a lease until a deadline), dead-lettered (after
   * max_attempts consecutive failures), or waiting for an event or a time
   * (CompleteRequest.wait_for, Agent.wait_for; Signal ends the wait). Every lease carries a fencing token
   * that strictly increases per queue; Heartbeat, Complete and Release must
   * present it, and a stale or unknown token is rejected with
   * FAILED_PRECONDITION, reason LEASE_LOST, without changing anything.
   * All times come from the Redis server's clock (TIME); no worker or Baton
   * replica clock is ever used for a schedule or a deadline.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * Register upserts agents into a queue. A new agent becomes due at once
     * (plus the configured initial jitter). Re-registering an existing agent
     * updates its definition and keeps its schedule, unless reset_schedule is
     * set. Registering is idempotent and safe to retry. An agent's parents are fixed when it is
     * created: re-registering it with an `after` that names other parents is FAILED_PRECONDITION,
     * reason PARENTS_FIXED, field `after` (nothing is changed); an empty `after` keeps them.
     * </pre>
     */
    default void register(dev.baton.v1.RegisterRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.RegisterResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getRegisterMethod(), responseObserver);
    }

    /**
     * <pre>
     * Unregister removes agents' definitions and any waiting or dead-letter
     * entry. A lease still held may finish (Heartbeat keeps working) but the
     * agent is not rescheduled when it completes. Unknown names are ignored. With cascade, every
     * descendant of a removed agent (its children, theirs, in any queue) is cancelled too:
     * see UnregisterRequest.cascade.
     * </pre>
     */
    default void unregister(dev.baton.v1.UnregisterRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.UnregisterResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getUnregisterMethod(), responseObserver);
    }

    /**
     * <pre>
     * Acquire atomically moves up to max_leases due agents (earliest next run
     * first, ties by name) from waiting to working and returns their leases.
     * With wait &gt; 0 and nothing due, the call is held until an agent becomes
     * due or the wait ends; then it returns no leases (not an error). A wait
     * above the server's limits.max_wait_ms is cut to it. A lease ends at its
     * deadline unless extended by Heartbeat.
     * </pre>
     */
    default void acquire(dev.baton.v1.AcquireRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.AcquireResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getAcquireMethod(), responseObserver);
    }

    /**
     * <pre>
     * Heartbeat extends each listed lease still held with its token to now +
     * the agent's timeout, and reports the leases that are lost so the worker
     * can cancel that work. It also records the worker as alive. A lost lease
     * is not an error: it is reported in lost.
     * </pre>
     */
    default void heartbeat(dev.baton.v1.HeartbeatRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.HeartbeatResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getHeartbeatMethod(), responseObserver);
    }

    /**
     * <pre>
     * Complete ends a lease and reschedules the agent by its outcome: success
     * runs again at acquired_at + interval (one-shot agents are removed);
     * failures back off by class and, past max_attempts consecutive failures,
     * move the agent to the queue's dead-letter queue. Retrying a Complete
     * whose answer was lost returns LEASE_LOST (the first one took effect),
     * unless both carry the same request_id: then the retry gets the first
     * answer.
     * </pre>
     */
    default void complete(dev.baton.v1.CompleteRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.CompleteResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCompleteMethod(), responseObserver);
    }

    /**
     * <pre>
     * CompleteBatch ends many leases in one call, each as Complete would, with
     * one script per queue (per shard of a sharded queue). Each item has its
     * own result, in request order: a stale token is reported as lease_lost on
     * that item only and changes nothing; the other items still complete. An
     * invalid item rejects the whole call (INVALID_ARGUMENT naming it) before
     * anything changes.
     * </pre>
     */
    default void completeBatch(dev.baton.v1.CompleteBatchRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.CompleteBatchResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCompleteBatchMethod(), responseObserver);
    }

    /**
     * <pre>
     * Session is a worker's hot path: one bidirectional stream per worker and
     * queue, over which the server pushes leases as they become due and the
     * worker streams back completions, heartbeats and releases.
     * Flow control is by credit, as in etcd's watch and gRPC's own windows:
     * the first SessionRequest carries open (queue, worker_id) and the initial
     * credit; the server pushes at most that many leases, and every lease it
     * pushes uses one unit. The worker grants more with credit on any later
     * message, typically one per lease it finished (so credit is "how many
     * more leases I can run now"). The server never has more leases pushed
     * than credit granted; with no credit left it pushes nothing and reads
     * nothing from Redis for this session. Credit is capped at max_batch.
     * Leases are pushed as soon as they are due (no polling: the server waits
     * on the queue's wake-ups and on the earliest due time, as Acquire with a
     * wait does), several in one SessionResponse when several are due.
     * Completions, heartbeats and releases sent on the stream are coalesced by
     * the server: everything that arrived while the previous flush ran goes to
     * Redis in one script per queue (per shard). Each is answered on the
     * stream, in arrival order, with the same per-item results as
     * CompleteBatch and Heartbeat. A completion for a lease that was lost is
     * rejected on that item only (lease_lost) and the session goes on.
     * Leases are the worker's whatever happens to the stream: when the stream
     * breaks or ends, the leases it pushed follow the rules of a worker that
     * goes silent (they come back at their deadline, or sooner when the
     * worker is found dead). Leases the server had granted but could not
     * write to a stream already gone are released at once. Ending the request
     * stream (half-close) is a graceful end: the server flushes what it
     * received, answers it, and closes the stream. A bad first message or an
     * invalid item ends the stream with INVALID_ARGUMENT naming the field.
     * </pre>
     */
    default io.grpc.stub.StreamObserver<dev.baton.v1.SessionRequest> session(
        io.grpc.stub.StreamObserver<dev.baton.v1.SessionResponse> responseObserver) {
      return io.grpc.stub.ServerCalls.asyncUnimplementedStreamingCall(getSessionMethod(), responseObserver);
    }

    /**
     * <pre>
     * Release hands a lease back without counting a failure (a worker shutting
     * down gracefully). The agent becomes due after delay (plus the configured
     * shutdown jitter).
     * </pre>
     */
    default void release(dev.baton.v1.ReleaseRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ReleaseResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getReleaseMethod(), responseObserver);
    }

    /**
     * <pre>
     * GetAgent returns an agent's definition and state; NOT_FOUND if the queue
     * has no agent of that name.
     * </pre>
     */
    default void getAgent(dev.baton.v1.GetAgentRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.GetAgentResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetAgentMethod(), responseObserver);
    }

    /**
     * <pre>
     * ListAgents pages through a queue's agents, each page sorted by name, optionally only
     * those whose name starts with a prefix. A queue keeps no name index (a plain job pays for
     * none): pages walk its definitions in hash order (Redis HSCAN). Every agent present for the
     * whole listing is listed at least once; one may be listed twice if the queue grew or shrank
     * a lot between pages.
     * </pre>
     */
    default void listAgents(dev.baton.v1.ListAgentsRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ListAgentsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListAgentsMethod(), responseObserver);
    }

    /**
     * <pre>
     * CancelRun asks the holder of an agent's current lease to stop that run. The lease is
     * marked; at the holder's next Heartbeat (or session heartbeat) the lease ends and is
     * answered in `cancelled` (and in `lost`, so a helper that knows only `lost` cancels its
     * handler too). The agent is then scheduled as after a success without counting one: a
     * recurring agent runs again at acquired_at + interval, a one-shot agent is removed and
     * finishes as FINISH_CANCELLED (Await answers it; its children apply their policy). Until
     * then the lease stays held, so a cancelled run never overlaps the next; a Complete or
     * Release that comes first ends the lease as usual. `requested` is false when the agent
     * is not running; NOT_FOUND when the queue has no such agent (nothing is written). With
     * cascade, its descendants are cancelled too (CancelRunRequest.cascade).
     * </pre>
     */
    default void cancelRun(dev.baton.v1.CancelRunRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.CancelRunResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCancelRunMethod(), responseObserver);
    }

    /**
     * <pre>
     * Await waits for an agent to finish and answers its result: how it finished (succeeded,
     * dead-lettered, cancelled by a parent's failure, unregistered), the outcome and the result
     * its worker sent with Complete. A finish is kept only where someone can read it
     * (Agent.keep_result says where): then it is kept for the server's results.retention_ms after
     * it, so an Await that comes late still gets it. An Await with a `wait` makes the finish of
     * the agent it waits for be kept, so it is answered whether the agent keeps its result or
     * not. Without a wait, an agent that keeps no result answers done false with
     * result_not_kept true: its finish will not be seen by an Await that does not wait for it;
     * once such a one-shot agent has finished it is gone (NOT_FOUND, saying that no finish of it
     * is kept). Await answers the latest finish kept; to wait
     * for a run after one already seen (a recurring agent finishes at each success; any agent may
     * be registered again under its name), pass that finish's token as after_token. Putting a
     * dead-lettered agent back (RetryDeadLetter, or Register with reset_schedule) drops its kept
     * finish, so an Await after it waits for the new run. With no
     * finish yet, the call is held until one is recorded or `wait` ends (then `done` is false,
     * not an error); it is woken by the finish itself, on any replica (no polling). NOT_FOUND
     * when the queue has no such agent and keeps no finish of it.
     * </pre>
     */
    default void await(dev.baton.v1.AwaitRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.AwaitResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getAwaitMethod(), responseObserver);
    }

    /**
     * <pre>
     * RegisterBatch registers agents (Register's rules) as members of a batch, and creates the
     * batch on its first call, with its callbacks: agents of callback_queue that run once when
     * the batch is done — on_success only when every member succeeded, on_complete whatever
     * the members' finishes (a member dead-lettered, unregistered or cancelled counts as
     * failed). A batch is done when it is closed (`close`, or CloseBatch) and every member has
     * finished; a later call adds members to an open batch, in any queue, and gives no
     * callbacks. A closed batch refuses members: FAILED_PRECONDITION, reason BATCH_CLOSED. Each
     * callback runs exactly once, however its last members' completions race, on one node or on
     * Redis Cluster; its lease carries the batch's finish (an entry of Lease.parents whose `batch`
     * names the batch, FINISH_SUCCEEDED when every member succeeded, else FINISH_DEAD_LETTERED).
     * </pre>
     */
    default void registerBatch(dev.baton.v1.RegisterBatchRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.RegisterBatchResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getRegisterBatchMethod(), responseObserver);
    }

    /**
     * <pre>
     * CloseBatch closes a batch: no member may be added, and it is done once its members have
     * finished (at once when they have). Closing twice changes nothing. NOT_FOUND without such a
     * batch.
     * </pre>
     */
    default void closeBatch(dev.baton.v1.CloseBatchRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.CloseBatchResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCloseBatchMethod(), responseObserver);
    }

    /**
     * <pre>
     * GetBatch counts a batch's members by how they finished. A done batch is kept for the
     * server's results.retention_ms. NOT_FOUND without such a batch.
     * </pre>
     */
    default void getBatch(dev.baton.v1.GetBatchRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.GetBatchResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetBatchMethod(), responseObserver);
    }

    /**
     * <pre>
     * RecordStep records the result of a named step of the run a lease holds, fenced by the
     * lease's token, so a later attempt of the same run can skip it: the lease of every next
     * attempt carries the steps recorded so far (Lease.steps), until the run ends (a success, a
     * dead letter, an unregister or a cancel). A token that does not hold the lease is
     * FAILED_PRECONDITION, reason LEASE_LOST, and changes nothing. A step name already recorded
     * in this run keeps its first result: the call answers recorded false with the step as kept
     * (so a retried call whose answer was lost is safe). A run holds at most the server's
     * limits.max_steps steps and limits.max_step_bytes result bytes in all: a step beyond either
     * is INVALID_ARGUMENT naming `step` (count) or `result` (bytes) and changes nothing. The
     * steps are kept with the run's finish where the finish is kept (AwaitResponse.steps) and
     * shown by GetAgent while the run is not over (AgentStatus.steps). The Session stream
     * carries the same call (SessionRequest.steps).
     * </pre>
     */
    default void recordStep(dev.baton.v1.RecordStepRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.RecordStepResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getRecordStepMethod(), responseObserver);
    }

    /**
     * <pre>
     * WatchAgent streams an agent's progress to a caller that waits for it, then its finish: first
     * a snapshot (where the agent is, its current run's token, attempt, progress and steps so
     * far), then each update as it happens — a lease granted (token, attempt), progress a
     * heartbeat reported (LeaseRef.progress, SessionLease.progress), a step recorded (RecordStep,
     * SessionRequest.steps) — and last the finish, as Await answers it, after which the stream
     * ends. An agent that already finished, with its finish kept and its token past after_token,
     * is answered with the finish at once. Updates are ordered by (token, sequence); a caller
     * never sees one twice. While a stream is open the agent is marked watched (and awaited, so its
     * finish is kept and announced), refreshed by the stream; only a watched agent's heartbeats and
     * steps announce anything, on the queue's pub/sub channel, which reaches every replica's
     * streams (no polling). When the replica's subscription was lost (a Redis restart), the stream
     * sends a new snapshot once it is back. The stream ends without a finish after `wait` (at most
     * the server's limits.max_wait_ms); call again to go on. NOT_FOUND when the queue has no such
     * agent and keeps no finish of it (nothing is written).
     * </pre>
     */
    default void watchAgent(dev.baton.v1.WatchAgentRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.WatchAgentResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getWatchAgentMethod(), responseObserver);
    }

    /**
     * <pre>
     * Signal delivers a named event, with a payload, to an agent. An agent waiting for that
     * event (CompleteRequest.wait_for, Agent.wait_for; AGENT_STATE_WAITING_FOR_EVENT) leaves the
     * wait and is due at once: its next lease carries the event (Lease.event). Otherwise the
     * signal is kept for the agent's run until a wait names the event, which then ends at once
     * (a signal sent before the wait began is not lost); a run keeps at most the server's
     * limits.max_pending_signals of them: one more is RESOURCE_EXHAUSTED naming that limit, and
     * changes nothing. Each event is consumed once per run: a signal of an event the run consumed
     * already, or keeps already, changes nothing and answers duplicate (the first payload
     * stands), so racing or repeated signals, from any replica, are delivered once. The run's
     * signals go with the run (a success, a dead letter, an unregister, a cancel), so a recurring
     * agent's next run may be signalled the same event again. A retry with the same request_id
     * gets the first answer. NOT_FOUND when the queue has no such agent (nothing is kept).
     * </pre>
     */
    default void signal(dev.baton.v1.SignalRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.SignalResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getSignalMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service AgentService.
   * <pre>
   * AgentService runs recurring and one-shot work items ("agents") on a fleet
   * of workers, each agent held by exactly one worker at a time.
   * An agent lives in a queue. It is waiting (scored by its next run time),
   * working (held under a lease until a deadline), dead-lettered (after
   * max_attempts consecutive failures), or waiting for an event or a time
   * (CompleteRequest.wait_for, Agent.wait_for; Signal ends the wait). Every lease carries a fencing token
   * that strictly increases per queue; Heartbeat, Complete and Release must
   * present it, and a stale or unknown token is rejected with
   * FAILED_PRECONDITION, reason LEASE_LOST, without changing anything.
   * All times come from the Redis server's clock (TIME); no worker or Baton
   * replica clock is ever used for a schedule or a deadline.
   * </pre>
   */
  public static abstract class AgentServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return AgentServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service AgentService.
   * <pre>
   * AgentService runs recurring and one-shot work items ("agents") on a fleet
   * of workers, each agent held by exactly one worker at a time.
   * An agent lives in a queue. It is waiting (scored by its next run time),
   * working (held under a lease until a deadline), dead-lettered (after
   * max_attempts consecutive failures), or waiting for an event or a time
   * (CompleteRequest.wait_for, Agent.wait_for; Signal ends the wait). Every lease carries a fencing token
   * that strictly increases per queue; Heartbeat, Complete and Release must
   * present it, and a stale or unknown token is rejected with
   * FAILED_PRECONDITION, reason LEASE_LOST, without changing anything.
   * All times come from the Redis server's clock (TIME); no worker or Baton
   * replica clock is ever used for a schedule or a deadline.
   * </pre>
   */
  public static final class AgentServiceStub
      extends io.grpc.stub.AbstractAsyncStub<AgentServiceStub> {
    private AgentServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected AgentServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new AgentServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * Register upserts agents into a queue. A new agent becomes due at once
     * (plus the configured initial jitter). Re-registering an existing agent
     * updates its definition and keeps its schedule, unless reset_schedule is
     * set. Registering is idempotent and safe to retry. An agent's parents are fixed when it is
     * created: re-registering it with an `after` that names other parents is FAILED_PRECONDITION,
     * reason PARENTS_FIXED, field `after` (nothing is changed); an empty `after` keeps them.
     * </pre>
     */
    public void register(dev.baton.v1.RegisterRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.RegisterResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getRegisterMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Unregister removes agents' definitions and any waiting or dead-letter
     * entry. A lease still held may finish (Heartbeat keeps working) but the
     * agent is not rescheduled when it completes. Unknown names are ignored. With cascade, every
     * descendant of a removed agent (its children, theirs, in any queue) is cancelled too:
     * see UnregisterRequest.cascade.
     * </pre>
     */
    public void unregister(dev.baton.v1.UnregisterRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.UnregisterResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getUnregisterMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Acquire atomically moves up to max_leases due agents (earliest next run
     * first, ties by name) from waiting to working and returns their leases.
     * With wait &gt; 0 and nothing due, the call is held until an agent becomes
     * due or the wait ends; then it returns no leases (not an error). A wait
     * above the server's limits.max_wait_ms is cut to it. A lease ends at its
     * deadline unless extended by Heartbeat.
     * </pre>
     */
    public void acquire(dev.baton.v1.AcquireRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.AcquireResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getAcquireMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Heartbeat extends each listed lease still held with its token to now +
     * the agent's timeout, and reports the leases that are lost so the worker
     * can cancel that work. It also records the worker as alive. A lost lease
     * is not an error: it is reported in lost.
     * </pre>
     */
    public void heartbeat(dev.baton.v1.HeartbeatRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.HeartbeatResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getHeartbeatMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Complete ends a lease and reschedules the agent by its outcome: success
     * runs again at acquired_at + interval (one-shot agents are removed);
     * failures back off by class and, past max_attempts consecutive failures,
     * move the agent to the queue's dead-letter queue. Retrying a Complete
     * whose answer was lost returns LEASE_LOST (the first one took effect),
     * unless both carry the same request_id: then the retry gets the first
     * answer.
     * </pre>
     */
    public void complete(dev.baton.v1.CompleteRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.CompleteResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCompleteMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * CompleteBatch ends many leases in one call, each as Complete would, with
     * one script per queue (per shard of a sharded queue). Each item has its
     * own result, in request order: a stale token is reported as lease_lost on
     * that item only and changes nothing; the other items still complete. An
     * invalid item rejects the whole call (INVALID_ARGUMENT naming it) before
     * anything changes.
     * </pre>
     */
    public void completeBatch(dev.baton.v1.CompleteBatchRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.CompleteBatchResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCompleteBatchMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Session is a worker's hot path: one bidirectional stream per worker and
     * queue, over which the server pushes leases as they become due and the
     * worker streams back completions, heartbeats and releases.
     * Flow control is by credit, as in etcd's watch and gRPC's own windows:
     * the first SessionRequest carries open (queue, worker_id) and the initial
     * credit; the server pushes at most that many leases, and every lease it
     * pushes uses one unit. The worker grants more with credit on any later
     * message, typically one per lease it finished (so credit is "how many
     * more leases I can run now"). The server never has more leases pushed
     * than credit granted; with no credit left it pushes nothing and reads
     * nothing from Redis for this session. Credit is capped at max_batch.
     * Leases are pushed as soon as they are due (no polling: the server waits
     * on the queue's wake-ups and on the earliest due time, as Acquire with a
     * wait does), several in one SessionResponse when several are due.
     * Completions, heartbeats and releases sent on the stream are coalesced by
     * the server: everything that arrived while the previous flush ran goes to
     * Redis in one script per queue (per shard). Each is answered on the
     * stream, in arrival order, with the same per-item results as
     * CompleteBatch and Heartbeat. A completion for a lease that was lost is
     * rejected on that item only (lease_lost) and the session goes on.
     * Leases are the worker's whatever happens to the stream: when the stream
     * breaks or ends, the leases it pushed follow the rules of a worker that
     * goes silent (they come back at their deadline, or sooner when the
     * worker is found dead). Leases the server had granted but could not
     * write to a stream already gone are released at once. Ending the request
     * stream (half-close) is a graceful end: the server flushes what it
     * received, answers it, and closes the stream. A bad first message or an
     * invalid item ends the stream with INVALID_ARGUMENT naming the field.
     * </pre>
     */
    public io.grpc.stub.StreamObserver<dev.baton.v1.SessionRequest> session(
        io.grpc.stub.StreamObserver<dev.baton.v1.SessionResponse> responseObserver) {
      return io.grpc.stub.ClientCalls.asyncBidiStreamingCall(
          getChannel().newCall(getSessionMethod(), getCallOptions()), responseObserver);
    }

    /**
     * <pre>
     * Release hands a lease back without counting a failure (a worker shutting
     * down gracefully). The agent becomes due after delay (plus the configured
     * shutdown jitter).
     * </pre>
     */
    public void release(dev.baton.v1.ReleaseRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ReleaseResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getReleaseMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * GetAgent returns an agent's definition and state; NOT_FOUND if the queue
     * has no agent of that name.
     * </pre>
     */
    public void getAgent(dev.baton.v1.GetAgentRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.GetAgentResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetAgentMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * ListAgents pages through a queue's agents, each page sorted by name, optionally only
     * those whose name starts with a prefix. A queue keeps no name index (a plain job pays for
     * none): pages walk its definitions in hash order (Redis HSCAN). Every agent present for the
     * whole listing is listed at least once; one may be listed twice if the queue grew or shrank
     * a lot between pages.
     * </pre>
     */
    public void listAgents(dev.baton.v1.ListAgentsRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ListAgentsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListAgentsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * CancelRun asks the holder of an agent's current lease to stop that run. The lease is
     * marked; at the holder's next Heartbeat (or session heartbeat) the lease ends and is
     * answered in `cancelled` (and in `lost`, so a helper that knows only `lost` cancels its
     * handler too). The agent is then scheduled as after a success without counting one: a
     * recurring agent runs again at acquired_at + interval, a one-shot agent is removed and
     * finishes as FINISH_CANCELLED (Await answers it; its children apply their policy). Until
     * then the lease stays held, so a cancelled run never overlaps the next; a Complete or
     * Release that comes first ends the lease as usual. `requested` is false when the agent
     * is not running; NOT_FOUND when the queue has no such agent (nothing is written). With
     * cascade, its descendants are cancelled too (CancelRunRequest.cascade).
     * </pre>
     */
    public void cancelRun(dev.baton.v1.CancelRunRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.CancelRunResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCancelRunMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Await waits for an agent to finish and answers its result: how it finished (succeeded,
     * dead-lettered, cancelled by a parent's failure, unregistered), the outcome and the result
     * its worker sent with Complete. A finish is kept only where someone can read it
     * (Agent.keep_result says where): then it is kept for the server's results.retention_ms after
     * it, so an Await that comes late still gets it. An Await with a `wait` makes the finish of
     * the agent it waits for be kept, so it is answered whether the agent keeps its result or
     * not. Without a wait, an agent that keeps no result answers done false with
     * result_not_kept true: its finish will not be seen by an Await that does not wait for it;
     * once such a one-shot agent has finished it is gone (NOT_FOUND, saying that no finish of it
     * is kept). Await answers the latest finish kept; to wait
     * for a run after one already seen (a recurring agent finishes at each success; any agent may
     * be registered again under its name), pass that finish's token as after_token. Putting a
     * dead-lettered agent back (RetryDeadLetter, or Register with reset_schedule) drops its kept
     * finish, so an Await after it waits for the new run. With no
     * finish yet, the call is held until one is recorded or `wait` ends (then `done` is false,
     * not an error); it is woken by the finish itself, on any replica (no polling). NOT_FOUND
     * when the queue has no such agent and keeps no finish of it.
     * </pre>
     */
    public void await(dev.baton.v1.AwaitRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.AwaitResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getAwaitMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * RegisterBatch registers agents (Register's rules) as members of a batch, and creates the
     * batch on its first call, with its callbacks: agents of callback_queue that run once when
     * the batch is done — on_success only when every member succeeded, on_complete whatever
     * the members' finishes (a member dead-lettered, unregistered or cancelled counts as
     * failed). A batch is done when it is closed (`close`, or CloseBatch) and every member has
     * finished; a later call adds members to an open batch, in any queue, and gives no
     * callbacks. A closed batch refuses members: FAILED_PRECONDITION, reason BATCH_CLOSED. Each
     * callback runs exactly once, however its last members' completions race, on one node or on
     * Redis Cluster; its lease carries the batch's finish (an entry of Lease.parents whose `batch`
     * names the batch, FINISH_SUCCEEDED when every member succeeded, else FINISH_DEAD_LETTERED).
     * </pre>
     */
    public void registerBatch(dev.baton.v1.RegisterBatchRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.RegisterBatchResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getRegisterBatchMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * CloseBatch closes a batch: no member may be added, and it is done once its members have
     * finished (at once when they have). Closing twice changes nothing. NOT_FOUND without such a
     * batch.
     * </pre>
     */
    public void closeBatch(dev.baton.v1.CloseBatchRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.CloseBatchResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCloseBatchMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * GetBatch counts a batch's members by how they finished. A done batch is kept for the
     * server's results.retention_ms. NOT_FOUND without such a batch.
     * </pre>
     */
    public void getBatch(dev.baton.v1.GetBatchRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.GetBatchResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetBatchMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * RecordStep records the result of a named step of the run a lease holds, fenced by the
     * lease's token, so a later attempt of the same run can skip it: the lease of every next
     * attempt carries the steps recorded so far (Lease.steps), until the run ends (a success, a
     * dead letter, an unregister or a cancel). A token that does not hold the lease is
     * FAILED_PRECONDITION, reason LEASE_LOST, and changes nothing. A step name already recorded
     * in this run keeps its first result: the call answers recorded false with the step as kept
     * (so a retried call whose answer was lost is safe). A run holds at most the server's
     * limits.max_steps steps and limits.max_step_bytes result bytes in all: a step beyond either
     * is INVALID_ARGUMENT naming `step` (count) or `result` (bytes) and changes nothing. The
     * steps are kept with the run's finish where the finish is kept (AwaitResponse.steps) and
     * shown by GetAgent while the run is not over (AgentStatus.steps). The Session stream
     * carries the same call (SessionRequest.steps).
     * </pre>
     */
    public void recordStep(dev.baton.v1.RecordStepRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.RecordStepResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getRecordStepMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * WatchAgent streams an agent's progress to a caller that waits for it, then its finish: first
     * a snapshot (where the agent is, its current run's token, attempt, progress and steps so
     * far), then each update as it happens — a lease granted (token, attempt), progress a
     * heartbeat reported (LeaseRef.progress, SessionLease.progress), a step recorded (RecordStep,
     * SessionRequest.steps) — and last the finish, as Await answers it, after which the stream
     * ends. An agent that already finished, with its finish kept and its token past after_token,
     * is answered with the finish at once. Updates are ordered by (token, sequence); a caller
     * never sees one twice. While a stream is open the agent is marked watched (and awaited, so its
     * finish is kept and announced), refreshed by the stream; only a watched agent's heartbeats and
     * steps announce anything, on the queue's pub/sub channel, which reaches every replica's
     * streams (no polling). When the replica's subscription was lost (a Redis restart), the stream
     * sends a new snapshot once it is back. The stream ends without a finish after `wait` (at most
     * the server's limits.max_wait_ms); call again to go on. NOT_FOUND when the queue has no such
     * agent and keeps no finish of it (nothing is written).
     * </pre>
     */
    public void watchAgent(dev.baton.v1.WatchAgentRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.WatchAgentResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncServerStreamingCall(
          getChannel().newCall(getWatchAgentMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Signal delivers a named event, with a payload, to an agent. An agent waiting for that
     * event (CompleteRequest.wait_for, Agent.wait_for; AGENT_STATE_WAITING_FOR_EVENT) leaves the
     * wait and is due at once: its next lease carries the event (Lease.event). Otherwise the
     * signal is kept for the agent's run until a wait names the event, which then ends at once
     * (a signal sent before the wait began is not lost); a run keeps at most the server's
     * limits.max_pending_signals of them: one more is RESOURCE_EXHAUSTED naming that limit, and
     * changes nothing. Each event is consumed once per run: a signal of an event the run consumed
     * already, or keeps already, changes nothing and answers duplicate (the first payload
     * stands), so racing or repeated signals, from any replica, are delivered once. The run's
     * signals go with the run (a success, a dead letter, an unregister, a cancel), so a recurring
     * agent's next run may be signalled the same event again. A retry with the same request_id
     * gets the first answer. NOT_FOUND when the queue has no such agent (nothing is kept).
     * </pre>
     */
    public void signal(dev.baton.v1.SignalRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.SignalResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getSignalMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service AgentService.
   * <pre>
   * AgentService runs recurring and one-shot work items ("agents") on a fleet
   * of workers, each agent held by exactly one worker at a time.
   * An agent lives in a queue. It is waiting (scored by its next run time),
   * working (held under a lease until a deadline), dead-lettered (after
   * max_attempts consecutive failures), or waiting for an event or a time
   * (CompleteRequest.wait_for, Agent.wait_for; Signal ends the wait). Every lease carries a fencing token
   * that strictly increases per queue; Heartbeat, Complete and Release must
   * present it, and a stale or unknown token is rejected with
   * FAILED_PRECONDITION, reason LEASE_LOST, without changing anything.
   * All times come from the Redis server's clock (TIME); no worker or Baton
   * replica clock is ever used for a schedule or a deadline.
   * </pre>
   */
  public static final class AgentServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<AgentServiceBlockingV2Stub> {
    private AgentServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected AgentServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new AgentServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * Register upserts agents into a queue. A new agent becomes due at once
     * (plus the configured initial jitter). Re-registering an existing agent
     * updates its definition and keeps its schedule, unless reset_schedule is
     * set. Registering is idempotent and safe to retry. An agent's parents are fixed when it is
     * created: re-registering it with an `after` that names other parents is FAILED_PRECONDITION,
     * reason PARENTS_FIXED, field `after` (nothing is changed); an empty `after` keeps them.
     * </pre>
     */
    public dev.baton.v1.RegisterResponse register(dev.baton.v1.RegisterRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getRegisterMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Unregister removes agents' definitions and any waiting or dead-letter
     * entry. A lease still held may finish (Heartbeat keeps working) but the
     * agent is not rescheduled when it completes. Unknown names are ignored. With cascade, every
     * descendant of a removed agent (its children, theirs, in any queue) is cancelled too:
     * see UnregisterRequest.cascade.
     * </pre>
     */
    public dev.baton.v1.UnregisterResponse unregister(dev.baton.v1.UnregisterRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getUnregisterMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Acquire atomically moves up to max_leases due agents (earliest next run
     * first, ties by name) from waiting to working and returns their leases.
     * With wait &gt; 0 and nothing due, the call is held until an agent becomes
     * due or the wait ends; then it returns no leases (not an error). A wait
     * above the server's limits.max_wait_ms is cut to it. A lease ends at its
     * deadline unless extended by Heartbeat.
     * </pre>
     */
    public dev.baton.v1.AcquireResponse acquire(dev.baton.v1.AcquireRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getAcquireMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Heartbeat extends each listed lease still held with its token to now +
     * the agent's timeout, and reports the leases that are lost so the worker
     * can cancel that work. It also records the worker as alive. A lost lease
     * is not an error: it is reported in lost.
     * </pre>
     */
    public dev.baton.v1.HeartbeatResponse heartbeat(dev.baton.v1.HeartbeatRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getHeartbeatMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Complete ends a lease and reschedules the agent by its outcome: success
     * runs again at acquired_at + interval (one-shot agents are removed);
     * failures back off by class and, past max_attempts consecutive failures,
     * move the agent to the queue's dead-letter queue. Retrying a Complete
     * whose answer was lost returns LEASE_LOST (the first one took effect),
     * unless both carry the same request_id: then the retry gets the first
     * answer.
     * </pre>
     */
    public dev.baton.v1.CompleteResponse complete(dev.baton.v1.CompleteRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCompleteMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * CompleteBatch ends many leases in one call, each as Complete would, with
     * one script per queue (per shard of a sharded queue). Each item has its
     * own result, in request order: a stale token is reported as lease_lost on
     * that item only and changes nothing; the other items still complete. An
     * invalid item rejects the whole call (INVALID_ARGUMENT naming it) before
     * anything changes.
     * </pre>
     */
    public dev.baton.v1.CompleteBatchResponse completeBatch(dev.baton.v1.CompleteBatchRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCompleteBatchMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Session is a worker's hot path: one bidirectional stream per worker and
     * queue, over which the server pushes leases as they become due and the
     * worker streams back completions, heartbeats and releases.
     * Flow control is by credit, as in etcd's watch and gRPC's own windows:
     * the first SessionRequest carries open (queue, worker_id) and the initial
     * credit; the server pushes at most that many leases, and every lease it
     * pushes uses one unit. The worker grants more with credit on any later
     * message, typically one per lease it finished (so credit is "how many
     * more leases I can run now"). The server never has more leases pushed
     * than credit granted; with no credit left it pushes nothing and reads
     * nothing from Redis for this session. Credit is capped at max_batch.
     * Leases are pushed as soon as they are due (no polling: the server waits
     * on the queue's wake-ups and on the earliest due time, as Acquire with a
     * wait does), several in one SessionResponse when several are due.
     * Completions, heartbeats and releases sent on the stream are coalesced by
     * the server: everything that arrived while the previous flush ran goes to
     * Redis in one script per queue (per shard). Each is answered on the
     * stream, in arrival order, with the same per-item results as
     * CompleteBatch and Heartbeat. A completion for a lease that was lost is
     * rejected on that item only (lease_lost) and the session goes on.
     * Leases are the worker's whatever happens to the stream: when the stream
     * breaks or ends, the leases it pushed follow the rules of a worker that
     * goes silent (they come back at their deadline, or sooner when the
     * worker is found dead). Leases the server had granted but could not
     * write to a stream already gone are released at once. Ending the request
     * stream (half-close) is a graceful end: the server flushes what it
     * received, answers it, and closes the stream. A bad first message or an
     * invalid item ends the stream with INVALID_ARGUMENT naming the field.
     * </pre>
     */
    @io.grpc.ExperimentalApi("https://github.com/grpc/grpc-java/issues/10918")
    public io.grpc.stub.BlockingClientCall<dev.baton.v1.SessionRequest, dev.baton.v1.SessionResponse>
        session() {
      return io.grpc.stub.ClientCalls.blockingBidiStreamingCall(
          getChannel(), getSessionMethod(), getCallOptions());
    }

    /**
     * <pre>
     * Release hands a lease back without counting a failure (a worker shutting
     * down gracefully). The agent becomes due after delay (plus the configured
     * shutdown jitter).
     * </pre>
     */
    public dev.baton.v1.ReleaseResponse release(dev.baton.v1.ReleaseRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getReleaseMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetAgent returns an agent's definition and state; NOT_FOUND if the queue
     * has no agent of that name.
     * </pre>
     */
    public dev.baton.v1.GetAgentResponse getAgent(dev.baton.v1.GetAgentRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetAgentMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListAgents pages through a queue's agents, each page sorted by name, optionally only
     * those whose name starts with a prefix. A queue keeps no name index (a plain job pays for
     * none): pages walk its definitions in hash order (Redis HSCAN). Every agent present for the
     * whole listing is listed at least once; one may be listed twice if the queue grew or shrank
     * a lot between pages.
     * </pre>
     */
    public dev.baton.v1.ListAgentsResponse listAgents(dev.baton.v1.ListAgentsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListAgentsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * CancelRun asks the holder of an agent's current lease to stop that run. The lease is
     * marked; at the holder's next Heartbeat (or session heartbeat) the lease ends and is
     * answered in `cancelled` (and in `lost`, so a helper that knows only `lost` cancels its
     * handler too). The agent is then scheduled as after a success without counting one: a
     * recurring agent runs again at acquired_at + interval, a one-shot agent is removed and
     * finishes as FINISH_CANCELLED (Await answers it; its children apply their policy). Until
     * then the lease stays held, so a cancelled run never overlaps the next; a Complete or
     * Release that comes first ends the lease as usual. `requested` is false when the agent
     * is not running; NOT_FOUND when the queue has no such agent (nothing is written). With
     * cascade, its descendants are cancelled too (CancelRunRequest.cascade).
     * </pre>
     */
    public dev.baton.v1.CancelRunResponse cancelRun(dev.baton.v1.CancelRunRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCancelRunMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Await waits for an agent to finish and answers its result: how it finished (succeeded,
     * dead-lettered, cancelled by a parent's failure, unregistered), the outcome and the result
     * its worker sent with Complete. A finish is kept only where someone can read it
     * (Agent.keep_result says where): then it is kept for the server's results.retention_ms after
     * it, so an Await that comes late still gets it. An Await with a `wait` makes the finish of
     * the agent it waits for be kept, so it is answered whether the agent keeps its result or
     * not. Without a wait, an agent that keeps no result answers done false with
     * result_not_kept true: its finish will not be seen by an Await that does not wait for it;
     * once such a one-shot agent has finished it is gone (NOT_FOUND, saying that no finish of it
     * is kept). Await answers the latest finish kept; to wait
     * for a run after one already seen (a recurring agent finishes at each success; any agent may
     * be registered again under its name), pass that finish's token as after_token. Putting a
     * dead-lettered agent back (RetryDeadLetter, or Register with reset_schedule) drops its kept
     * finish, so an Await after it waits for the new run. With no
     * finish yet, the call is held until one is recorded or `wait` ends (then `done` is false,
     * not an error); it is woken by the finish itself, on any replica (no polling). NOT_FOUND
     * when the queue has no such agent and keeps no finish of it.
     * </pre>
     */
    public dev.baton.v1.AwaitResponse await(dev.baton.v1.AwaitRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getAwaitMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * RegisterBatch registers agents (Register's rules) as members of a batch, and creates the
     * batch on its first call, with its callbacks: agents of callback_queue that run once when
     * the batch is done — on_success only when every member succeeded, on_complete whatever
     * the members' finishes (a member dead-lettered, unregistered or cancelled counts as
     * failed). A batch is done when it is closed (`close`, or CloseBatch) and every member has
     * finished; a later call adds members to an open batch, in any queue, and gives no
     * callbacks. A closed batch refuses members: FAILED_PRECONDITION, reason BATCH_CLOSED. Each
     * callback runs exactly once, however its last members' completions race, on one node or on
     * Redis Cluster; its lease carries the batch's finish (an entry of Lease.parents whose `batch`
     * names the batch, FINISH_SUCCEEDED when every member succeeded, else FINISH_DEAD_LETTERED).
     * </pre>
     */
    public dev.baton.v1.RegisterBatchResponse registerBatch(dev.baton.v1.RegisterBatchRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getRegisterBatchMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * CloseBatch closes a batch: no member may be added, and it is done once its members have
     * finished (at once when they have). Closing twice changes nothing. NOT_FOUND without such a
     * batch.
     * </pre>
     */
    public dev.baton.v1.CloseBatchResponse closeBatch(dev.baton.v1.CloseBatchRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCloseBatchMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetBatch counts a batch's members by how they finished. A done batch is kept for the
     * server's results.retention_ms. NOT_FOUND without such a batch.
     * </pre>
     */
    public dev.baton.v1.GetBatchResponse getBatch(dev.baton.v1.GetBatchRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetBatchMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * RecordStep records the result of a named step of the run a lease holds, fenced by the
     * lease's token, so a later attempt of the same run can skip it: the lease of every next
     * attempt carries the steps recorded so far (Lease.steps), until the run ends (a success, a
     * dead letter, an unregister or a cancel). A token that does not hold the lease is
     * FAILED_PRECONDITION, reason LEASE_LOST, and changes nothing. A step name already recorded
     * in this run keeps its first result: the call answers recorded false with the step as kept
     * (so a retried call whose answer was lost is safe). A run holds at most the server's
     * limits.max_steps steps and limits.max_step_bytes result bytes in all: a step beyond either
     * is INVALID_ARGUMENT naming `step` (count) or `result` (bytes) and changes nothing. The
     * steps are kept with the run's finish where the finish is kept (AwaitResponse.steps) and
     * shown by GetAgent while the run is not over (AgentStatus.steps). The Session stream
     * carries the same call (SessionRequest.steps).
     * </pre>
     */
    public dev.baton.v1.RecordStepResponse recordStep(dev.baton.v1.RecordStepRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getRecordStepMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * WatchAgent streams an agent's progress to a caller that waits for it, then its finish: first
     * a snapshot (where the agent is, its current run's token, attempt, progress and steps so
     * far), then each update as it happens — a lease granted (token, attempt), progress a
     * heartbeat reported (LeaseRef.progress, SessionLease.progress), a step recorded (RecordStep,
     * SessionRequest.steps) — and last the finish, as Await answers it, after which the stream
     * ends. An agent that already finished, with its finish kept and its token past after_token,
     * is answered with the finish at once. Updates are ordered by (token, sequence); a caller
     * never sees one twice. While a stream is open the agent is marked watched (and awaited, so its
     * finish is kept and announced), refreshed by the stream; only a watched agent's heartbeats and
     * steps announce anything, on the queue's pub/sub channel, which reaches every replica's
     * streams (no polling). When the replica's subscription was lost (a Redis restart), the stream
     * sends a new snapshot once it is back. The stream ends without a finish after `wait` (at most
     * the server's limits.max_wait_ms); call again to go on. NOT_FOUND when the queue has no such
     * agent and keeps no finish of it (nothing is written).
     * </pre>
     */
    @io.grpc.ExperimentalApi("https://github.com/grpc/grpc-java/issues/10918")
    public io.grpc.stub.BlockingClientCall<?, dev.baton.v1.WatchAgentResponse>
        watchAgent(dev.baton.v1.WatchAgentRequest request) {
      return io.grpc.stub.ClientCalls.blockingV2ServerStreamingCall(
          getChannel(), getWatchAgentMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Signal delivers a named event, with a payload, to an agent. An agent waiting for that
     * event (CompleteRequest.wait_for, Agent.wait_for; AGENT_STATE_WAITING_FOR_EVENT) leaves the
     * wait and is due at once: its next lease carries the event (Lease.event). Otherwise the
     * signal is kept for the agent's run until a wait names the event, which then ends at once
     * (a signal sent before the wait began is not lost); a run keeps at most the server's
     * limits.max_pending_signals of them: one more is RESOURCE_EXHAUSTED naming that limit, and
     * changes nothing. Each event is consumed once per run: a signal of an event the run consumed
     * already, or keeps already, changes nothing and answers duplicate (the first payload
     * stands), so racing or repeated signals, from any replica, are delivered once. The run's
     * signals go with the run (a success, a dead letter, an unregister, a cancel), so a recurring
     * agent's next run may be signalled the same event again. A retry with the same request_id
     * gets the first answer. NOT_FOUND when the queue has no such agent (nothing is kept).
     * </pre>
     */
    public dev.baton.v1.SignalResponse signal(dev.baton.v1.SignalRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getSignalMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service AgentService.
   * <pre>
   * AgentService runs recurring and one-shot work items ("agents") on a fleet
   * of workers, each agent held by exactly one worker at a time.
   * An agent lives in a queue. It is waiting (scored by its next run time),
   * working (held under a lease until a deadline), dead-lettered (after
   * max_attempts consecutive failures), or waiting for an event or a time
   * (CompleteRequest.wait_for, Agent.wait_for; Signal ends the wait). Every lease carries a fencing token
   * that strictly increases per queue; Heartbeat, Complete and Release must
   * present it, and a stale or unknown token is rejected with
   * FAILED_PRECONDITION, reason LEASE_LOST, without changing anything.
   * All times come from the Redis server's clock (TIME); no worker or Baton
   * replica clock is ever used for a schedule or a deadline.
   * </pre>
   */
  public static final class AgentServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<AgentServiceBlockingStub> {
    private AgentServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected AgentServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new AgentServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * Register upserts agents into a queue. A new agent becomes due at once
     * (plus the configured initial jitter). Re-registering an existing agent
     * updates its definition and keeps its schedule, unless reset_schedule is
     * set. Registering is idempotent and safe to retry. An agent's parents are fixed when it is
     * created: re-registering it with an `after` that names other parents is FAILED_PRECONDITION,
     * reason PARENTS_FIXED, field `after` (nothing is changed); an empty `after` keeps them.
     * </pre>
     */
    public dev.baton.v1.RegisterResponse register(dev.baton.v1.RegisterRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getRegisterMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Unregister removes agents' definitions and any waiting or dead-letter
     * entry. A lease still held may finish (Heartbeat keeps working) but the
     * agent is not rescheduled when it completes. Unknown names are ignored. With cascade, every
     * descendant of a removed agent (its children, theirs, in any queue) is cancelled too:
     * see UnregisterRequest.cascade.
     * </pre>
     */
    public dev.baton.v1.UnregisterResponse unregister(dev.baton.v1.UnregisterRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getUnregisterMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Acquire atomically moves up to max_leases due agents (earliest next run
     * first, ties by name) from waiting to working and returns their leases.
     * With wait &gt; 0 and nothing due, the call is held until an agent becomes
     * due or the wait ends; then it returns no leases (not an error). A wait
     * above the server's limits.max_wait_ms is cut to it. A lease ends at its
     * deadline unless extended by Heartbeat.
     * </pre>
     */
    public dev.baton.v1.AcquireResponse acquire(dev.baton.v1.AcquireRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getAcquireMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Heartbeat extends each listed lease still held with its token to now +
     * the agent's timeout, and reports the leases that are lost so the worker
     * can cancel that work. It also records the worker as alive. A lost lease
     * is not an error: it is reported in lost.
     * </pre>
     */
    public dev.baton.v1.HeartbeatResponse heartbeat(dev.baton.v1.HeartbeatRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getHeartbeatMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Complete ends a lease and reschedules the agent by its outcome: success
     * runs again at acquired_at + interval (one-shot agents are removed);
     * failures back off by class and, past max_attempts consecutive failures,
     * move the agent to the queue's dead-letter queue. Retrying a Complete
     * whose answer was lost returns LEASE_LOST (the first one took effect),
     * unless both carry the same request_id: then the retry gets the first
     * answer.
     * </pre>
     */
    public dev.baton.v1.CompleteResponse complete(dev.baton.v1.CompleteRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCompleteMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * CompleteBatch ends many leases in one call, each as Complete would, with
     * one script per queue (per shard of a sharded queue). Each item has its
     * own result, in request order: a stale token is reported as lease_lost on
     * that item only and changes nothing; the other items still complete. An
     * invalid item rejects the whole call (INVALID_ARGUMENT naming it) before
     * anything changes.
     * </pre>
     */
    public dev.baton.v1.CompleteBatchResponse completeBatch(dev.baton.v1.CompleteBatchRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCompleteBatchMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Release hands a lease back without counting a failure (a worker shutting
     * down gracefully). The agent becomes due after delay (plus the configured
     * shutdown jitter).
     * </pre>
     */
    public dev.baton.v1.ReleaseResponse release(dev.baton.v1.ReleaseRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getReleaseMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetAgent returns an agent's definition and state; NOT_FOUND if the queue
     * has no agent of that name.
     * </pre>
     */
    public dev.baton.v1.GetAgentResponse getAgent(dev.baton.v1.GetAgentRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetAgentMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListAgents pages through a queue's agents, each page sorted by name, optionally only
     * those whose name starts with a prefix. A queue keeps no name index (a plain job pays for
     * none): pages walk its definitions in hash order (Redis HSCAN). Every agent present for the
     * whole listing is listed at least once; one may be listed twice if the queue grew or shrank
     * a lot between pages.
     * </pre>
     */
    public dev.baton.v1.ListAgentsResponse listAgents(dev.baton.v1.ListAgentsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListAgentsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * CancelRun asks the holder of an agent's current lease to stop that run. The lease is
     * marked; at the holder's next Heartbeat (or session heartbeat) the lease ends and is
     * answered in `cancelled` (and in `lost`, so a helper that knows only `lost` cancels its
     * handler too). The agent is then scheduled as after a success without counting one: a
     * recurring agent runs again at acquired_at + interval, a one-shot agent is removed and
     * finishes as FINISH_CANCELLED (Await answers it; its children apply their policy). Until
     * then the lease stays held, so a cancelled run never overlaps the next; a Complete or
     * Release that comes first ends the lease as usual. `requested` is false when the agent
     * is not running; NOT_FOUND when the queue has no such agent (nothing is written). With
     * cascade, its descendants are cancelled too (CancelRunRequest.cascade).
     * </pre>
     */
    public dev.baton.v1.CancelRunResponse cancelRun(dev.baton.v1.CancelRunRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCancelRunMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Await waits for an agent to finish and answers its result: how it finished (succeeded,
     * dead-lettered, cancelled by a parent's failure, unregistered), the outcome and the result
     * its worker sent with Complete. A finish is kept only where someone can read it
     * (Agent.keep_result says where): then it is kept for the server's results.retention_ms after
     * it, so an Await that comes late still gets it. An Await with a `wait` makes the finish of
     * the agent it waits for be kept, so it is answered whether the agent keeps its result or
     * not. Without a wait, an agent that keeps no result answers done false with
     * result_not_kept true: its finish will not be seen by an Await that does not wait for it;
     * once such a one-shot agent has finished it is gone (NOT_FOUND, saying that no finish of it
     * is kept). Await answers the latest finish kept; to wait
     * for a run after one already seen (a recurring agent finishes at each success; any agent may
     * be registered again under its name), pass that finish's token as after_token. Putting a
     * dead-lettered agent back (RetryDeadLetter, or Register with reset_schedule) drops its kept
     * finish, so an Await after it waits for the new run. With no
     * finish yet, the call is held until one is recorded or `wait` ends (then `done` is false,
     * not an error); it is woken by the finish itself, on any replica (no polling). NOT_FOUND
     * when the queue has no such agent and keeps no finish of it.
     * </pre>
     */
    public dev.baton.v1.AwaitResponse await(dev.baton.v1.AwaitRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getAwaitMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * RegisterBatch registers agents (Register's rules) as members of a batch, and creates the
     * batch on its first call, with its callbacks: agents of callback_queue that run once when
     * the batch is done — on_success only when every member succeeded, on_complete whatever
     * the members' finishes (a member dead-lettered, unregistered or cancelled counts as
     * failed). A batch is done when it is closed (`close`, or CloseBatch) and every member has
     * finished; a later call adds members to an open batch, in any queue, and gives no
     * callbacks. A closed batch refuses members: FAILED_PRECONDITION, reason BATCH_CLOSED. Each
     * callback runs exactly once, however its last members' completions race, on one node or on
     * Redis Cluster; its lease carries the batch's finish (an entry of Lease.parents whose `batch`
     * names the batch, FINISH_SUCCEEDED when every member succeeded, else FINISH_DEAD_LETTERED).
     * </pre>
     */
    public dev.baton.v1.RegisterBatchResponse registerBatch(dev.baton.v1.RegisterBatchRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getRegisterBatchMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * CloseBatch closes a batch: no member may be added, and it is done once its members have
     * finished (at once when they have). Closing twice changes nothing. NOT_FOUND without such a
     * batch.
     * </pre>
     */
    public dev.baton.v1.CloseBatchResponse closeBatch(dev.baton.v1.CloseBatchRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCloseBatchMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetBatch counts a batch's members by how they finished. A done batch is kept for the
     * server's results.retention_ms. NOT_FOUND without such a batch.
     * </pre>
     */
    public dev.baton.v1.GetBatchResponse getBatch(dev.baton.v1.GetBatchRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetBatchMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * RecordStep records the result of a named step of the run a lease holds, fenced by the
     * lease's token, so a later attempt of the same run can skip it: the lease of every next
     * attempt carries the steps recorded so far (Lease.steps), until the run ends (a success, a
     * dead letter, an unregister or a cancel). A token that does not hold the lease is
     * FAILED_PRECONDITION, reason LEASE_LOST, and changes nothing. A step name already recorded
     * in this run keeps its first result: the call answers recorded false with the step as kept
     * (so a retried call whose answer was lost is safe). A run holds at most the server's
     * limits.max_steps steps and limits.max_step_bytes result bytes in all: a step beyond either
     * is INVALID_ARGUMENT naming `step` (count) or `result` (bytes) and changes nothing. The
     * steps are kept with the run's finish where the finish is kept (AwaitResponse.steps) and
     * shown by GetAgent while the run is not over (AgentStatus.steps). The Session stream
     * carries the same call (SessionRequest.steps).
     * </pre>
     */
    public dev.baton.v1.RecordStepResponse recordStep(dev.baton.v1.RecordStepRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getRecordStepMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * WatchAgent streams an agent's progress to a caller that waits for it, then its finish: first
     * a snapshot (where the agent is, its current run's token, attempt, progress and steps so
     * far), then each update as it happens — a lease granted (token, attempt), progress a
     * heartbeat reported (LeaseRef.progress, SessionLease.progress), a step recorded (RecordStep,
     * SessionRequest.steps) — and last the finish, as Await answers it, after which the stream
     * ends. An agent that already finished, with its finish kept and its token past after_token,
     * is answered with the finish at once. Updates are ordered by (token, sequence); a caller
     * never sees one twice. While a stream is open the agent is marked watched (and awaited, so its
     * finish is kept and announced), refreshed by the stream; only a watched agent's heartbeats and
     * steps announce anything, on the queue's pub/sub channel, which reaches every replica's
     * streams (no polling). When the replica's subscription was lost (a Redis restart), the stream
     * sends a new snapshot once it is back. The stream ends without a finish after `wait` (at most
     * the server's limits.max_wait_ms); call again to go on. NOT_FOUND when the queue has no such
     * agent and keeps no finish of it (nothing is written).
     * </pre>
     */
    public java.util.Iterator<dev.baton.v1.WatchAgentResponse> watchAgent(
        dev.baton.v1.WatchAgentRequest request) {
      return io.grpc.stub.ClientCalls.blockingServerStreamingCall(
          getChannel(), getWatchAgentMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Signal delivers a named event, with a payload, to an agent. An agent waiting for that
     * event (CompleteRequest.wait_for, Agent.wait_for; AGENT_STATE_WAITING_FOR_EVENT) leaves the
     * wait and is due at once: its next lease carries the event (Lease.event). Otherwise the
     * signal is kept for the agent's run until a wait names the event, which then ends at once
     * (a signal sent before the wait began is not lost); a run keeps at most the server's
     * limits.max_pending_signals of them: one more is RESOURCE_EXHAUSTED naming that limit, and
     * changes nothing. Each event is consumed once per run: a signal of an event the run consumed
     * already, or keeps already, changes nothing and answers duplicate (the first payload
     * stands), so racing or repeated signals, from any replica, are delivered once. The run's
     * signals go with the run (a success, a dead letter, an unregister, a cancel), so a recurring
     * agent's next run may be signalled the same event again. A retry with the same request_id
     * gets the first answer. NOT_FOUND when the queue has no such agent (nothing is kept).
     * </pre>
     */
    public dev.baton.v1.SignalResponse signal(dev.baton.v1.SignalRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getSignalMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service AgentService.
   * <pre>
   * AgentService runs recurring and one-shot work items ("agents") on a fleet
   * of workers, each agent held by exactly one worker at a time.
   * An agent lives in a queue. It is waiting (scored by its next run time),
   * working (held under a lease until a deadline), dead-lettered (after
   * max_attempts consecutive failures), or waiting for an event or a time
   * (CompleteRequest.wait_for, Agent.wait_for; Signal ends the wait). Every lease carries a fencing token
   * that strictly increases per queue; Heartbeat, Complete and Release must
   * present it, and a stale or unknown token is rejected with
   * FAILED_PRECONDITION, reason LEASE_LOST, without changing anything.
   * All times come from the Redis server's clock (TIME); no worker or Baton
   * replica clock is ever used for a schedule or a deadline.
   * </pre>
   */
  public static final class AgentServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<AgentServiceFutureStub> {
    private AgentServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected AgentServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new AgentServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * Register upserts agents into a queue. A new agent becomes due at once
     * (plus the configured initial jitter). Re-registering an existing agent
     * updates its definition and keeps its schedule, unless reset_schedule is
     * set. Registering is idempotent and safe to retry. An agent's parents are fixed when it is
     * created: re-registering it with an `after` that names other parents is FAILED_PRECONDITION,
     * reason PARENTS_FIXED, field `after` (nothing is changed); an empty `after` keeps them.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.RegisterResponse> register(
        dev.baton.v1.RegisterRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getRegisterMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Unregister removes agents' definitions and any waiting or dead-letter
     * entry. A lease still held may finish (Heartbeat keeps working) but the
     * agent is not rescheduled when it completes. Unknown names are ignored. With cascade, every
     * descendant of a removed agent (its children, theirs, in any queue) is cancelled too:
     * see UnregisterRequest.cascade.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.UnregisterResponse> unregister(
        dev.baton.v1.UnregisterRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getUnregisterMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Acquire atomically moves up to max_leases due agents (earliest next run
     * first, ties by name) from waiting to working and returns their leases.
     * With wait &gt; 0 and nothing due, the call is held until an agent becomes
     * due or the wait ends; then it returns no leases (not an error). A wait
     * above the server's limits.max_wait_ms is cut to it. A lease ends at its
     * deadline unless extended by Heartbeat.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.AcquireResponse> acquire(
        dev.baton.v1.AcquireRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getAcquireMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Heartbeat extends each listed lease still held with its token to now +
     * the agent's timeout, and reports the leases that are lost so the worker
     * can cancel that work. It also records the worker as alive. A lost lease
     * is not an error: it is reported in lost.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.HeartbeatResponse> heartbeat(
        dev.baton.v1.HeartbeatRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getHeartbeatMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Complete ends a lease and reschedules the agent by its outcome: success
     * runs again at acquired_at + interval (one-shot agents are removed);
     * failures back off by class and, past max_attempts consecutive failures,
     * move the agent to the queue's dead-letter queue. Retrying a Complete
     * whose answer was lost returns LEASE_LOST (the first one took effect),
     * unless both carry the same request_id: then the retry gets the first
     * answer.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.CompleteResponse> complete(
        dev.baton.v1.CompleteRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCompleteMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * CompleteBatch ends many leases in one call, each as Complete would, with
     * one script per queue (per shard of a sharded queue). Each item has its
     * own result, in request order: a stale token is reported as lease_lost on
     * that item only and changes nothing; the other items still complete. An
     * invalid item rejects the whole call (INVALID_ARGUMENT naming it) before
     * anything changes.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.CompleteBatchResponse> completeBatch(
        dev.baton.v1.CompleteBatchRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCompleteBatchMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Release hands a lease back without counting a failure (a worker shutting
     * down gracefully). The agent becomes due after delay (plus the configured
     * shutdown jitter).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.ReleaseResponse> release(
        dev.baton.v1.ReleaseRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getReleaseMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * GetAgent returns an agent's definition and state; NOT_FOUND if the queue
     * has no agent of that name.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.GetAgentResponse> getAgent(
        dev.baton.v1.GetAgentRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetAgentMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * ListAgents pages through a queue's agents, each page sorted by name, optionally only
     * those whose name starts with a prefix. A queue keeps no name index (a plain job pays for
     * none): pages walk its definitions in hash order (Redis HSCAN). Every agent present for the
     * whole listing is listed at least once; one may be listed twice if the queue grew or shrank
     * a lot between pages.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.ListAgentsResponse> listAgents(
        dev.baton.v1.ListAgentsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListAgentsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * CancelRun asks the holder of an agent's current lease to stop that run. The lease is
     * marked; at the holder's next Heartbeat (or session heartbeat) the lease ends and is
     * answered in `cancelled` (and in `lost`, so a helper that knows only `lost` cancels its
     * handler too). The agent is then scheduled as after a success without counting one: a
     * recurring agent runs again at acquired_at + interval, a one-shot agent is removed and
     * finishes as FINISH_CANCELLED (Await answers it; its children apply their policy). Until
     * then the lease stays held, so a cancelled run never overlaps the next; a Complete or
     * Release that comes first ends the lease as usual. `requested` is false when the agent
     * is not running; NOT_FOUND when the queue has no such agent (nothing is written). With
     * cascade, its descendants are cancelled too (CancelRunRequest.cascade).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.CancelRunResponse> cancelRun(
        dev.baton.v1.CancelRunRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCancelRunMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Await waits for an agent to finish and answers its result: how it finished (succeeded,
     * dead-lettered, cancelled by a parent's failure, unregistered), the outcome and the result
     * its worker sent with Complete. A finish is kept only where someone can read it
     * (Agent.keep_result says where): then it is kept for the server's results.retention_ms after
     * it, so an Await that comes late still gets it. An Await with a `wait` makes the finish of
     * the agent it waits for be kept, so it is answered whether the agent keeps its result or
     * not. Without a wait, an agent that keeps no result answers done false with
     * result_not_kept true: its finish will not be seen by an Await that does not wait for it;
     * once such a one-shot agent has finished it is gone (NOT_FOUND, saying that no finish of it
     * is kept). Await answers the latest finish kept; to wait
     * for a run after one already seen (a recurring agent finishes at each success; any agent may
     * be registered again under its name), pass that finish's token as after_token. Putting a
     * dead-lettered agent back (RetryDeadLetter, or Register with reset_schedule) drops its kept
     * finish, so an Await after it waits for the new run. With no
     * finish yet, the call is held until one is recorded or `wait` ends (then `done` is false,
     * not an error); it is woken by the finish itself, on any replica (no polling). NOT_FOUND
     * when the queue has no such agent and keeps no finish of it.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.AwaitResponse> await(
        dev.baton.v1.AwaitRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getAwaitMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * RegisterBatch registers agents (Register's rules) as members of a batch, and creates the
     * batch on its first call, with its callbacks: agents of callback_queue that run once when
     * the batch is done — on_success only when every member succeeded, on_complete whatever
     * the members' finishes (a member dead-lettered, unregistered or cancelled counts as
     * failed). A batch is done when it is closed (`close`, or CloseBatch) and every member has
     * finished; a later call adds members to an open batch, in any queue, and gives no
     * callbacks. A closed batch refuses members: FAILED_PRECONDITION, reason BATCH_CLOSED. Each
     * callback runs exactly once, however its last members' completions race, on one node or on
     * Redis Cluster; its lease carries the batch's finish (an entry of Lease.parents whose `batch`
     * names the batch, FINISH_SUCCEEDED when every member succeeded, else FINISH_DEAD_LETTERED).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.RegisterBatchResponse> registerBatch(
        dev.baton.v1.RegisterBatchRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getRegisterBatchMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * CloseBatch closes a batch: no member may be added, and it is done once its members have
     * finished (at once when they have). Closing twice changes nothing. NOT_FOUND without such a
     * batch.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.CloseBatchResponse> closeBatch(
        dev.baton.v1.CloseBatchRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCloseBatchMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * GetBatch counts a batch's members by how they finished. A done batch is kept for the
     * server's results.retention_ms. NOT_FOUND without such a batch.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.GetBatchResponse> getBatch(
        dev.baton.v1.GetBatchRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetBatchMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * RecordStep records the result of a named step of the run a lease holds, fenced by the
     * lease's token, so a later attempt of the same run can skip it: the lease of every next
     * attempt carries the steps recorded so far (Lease.steps), until the run ends (a success, a
     * dead letter, an unregister or a cancel). A token that does not hold the lease is
     * FAILED_PRECONDITION, reason LEASE_LOST, and changes nothing. A step name already recorded
     * in this run keeps its first result: the call answers recorded false with the step as kept
     * (so a retried call whose answer was lost is safe). A run holds at most the server's
     * limits.max_steps steps and limits.max_step_bytes result bytes in all: a step beyond either
     * is INVALID_ARGUMENT naming `step` (count) or `result` (bytes) and changes nothing. The
     * steps are kept with the run's finish where the finish is kept (AwaitResponse.steps) and
     * shown by GetAgent while the run is not over (AgentStatus.steps). The Session stream
     * carries the same call (SessionRequest.steps).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.RecordStepResponse> recordStep(
        dev.baton.v1.RecordStepRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getRecordStepMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Signal delivers a named event, with a payload, to an agent. An agent waiting for that
     * event (CompleteRequest.wait_for, Agent.wait_for; AGENT_STATE_WAITING_FOR_EVENT) leaves the
     * wait and is due at once: its next lease carries the event (Lease.event). Otherwise the
     * signal is kept for the agent's run until a wait names the event, which then ends at once
     * (a signal sent before the wait began is not lost); a run keeps at most the server's
     * limits.max_pending_signals of them: one more is RESOURCE_EXHAUSTED naming that limit, and
     * changes nothing. Each event is consumed once per run: a signal of an event the run consumed
     * already, or keeps already, changes nothing and answers duplicate (the first payload
     * stands), so racing or repeated signals, from any replica, are delivered once. The run's
     * signals go with the run (a success, a dead letter, an unregister, a cancel), so a recurring
     * agent's next run may be signalled the same event again. A retry with the same request_id
     * gets the first answer. NOT_FOUND when the queue has no such agent (nothing is kept).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.SignalResponse> signal(
        dev.baton.v1.SignalRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getSignalMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_REGISTER = 0;
  private static final int METHODID_UNREGISTER = 1;
  private static final int METHODID_ACQUIRE = 2;
  private static final int METHODID_HEARTBEAT = 3;
  private static final int METHODID_COMPLETE = 4;
  private static final int METHODID_COMPLETE_BATCH = 5;
  private static final int METHODID_RELEASE = 6;
  private static final int METHODID_GET_AGENT = 7;
  private static final int METHODID_LIST_AGENTS = 8;
  private static final int METHODID_CANCEL_RUN = 9;
  private static final int METHODID_AWAIT = 10;
  private static final int METHODID_REGISTER_BATCH = 11;
  private static final int METHODID_CLOSE_BATCH = 12;
  private static final int METHODID_GET_BATCH = 13;
  private static final int METHODID_RECORD_STEP = 14;
  private static final int METHODID_WATCH_AGENT = 15;
  private static final int METHODID_SIGNAL = 16;
  private static final int METHODID_SESSION = 17;

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
        case METHODID_REGISTER:
          serviceImpl.register((dev.baton.v1.RegisterRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.RegisterResponse>) responseObserver);
          break;
        case METHODID_UNREGISTER:
          serviceImpl.unregister((dev.baton.v1.UnregisterRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.UnregisterResponse>) responseObserver);
          break;
        case METHODID_ACQUIRE:
          serviceImpl.acquire((dev.baton.v1.AcquireRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.AcquireResponse>) responseObserver);
          break;
        case METHODID_HEARTBEAT:
          serviceImpl.heartbeat((dev.baton.v1.HeartbeatRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.HeartbeatResponse>) responseObserver);
          break;
        case METHODID_COMPLETE:
          serviceImpl.complete((dev.baton.v1.CompleteRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.CompleteResponse>) responseObserver);
          break;
        case METHODID_COMPLETE_BATCH:
          serviceImpl.completeBatch((dev.baton.v1.CompleteBatchRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.CompleteBatchResponse>) responseObserver);
          break;
        case METHODID_RELEASE:
          serviceImpl.release((dev.baton.v1.ReleaseRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.ReleaseResponse>) responseObserver);
          break;
        case METHODID_GET_AGENT:
          serviceImpl.getAgent((dev.baton.v1.GetAgentRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.GetAgentResponse>) responseObserver);
          break;
        case METHODID_LIST_AGENTS:
          serviceImpl.listAgents((dev.baton.v1.ListAgentsRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.ListAgentsResponse>) responseObserver);
          break;
        case METHODID_CANCEL_RUN:
          serviceImpl.cancelRun((dev.baton.v1.CancelRunRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.CancelRunResponse>) responseObserver);
          break;
        case METHODID_AWAIT:
          serviceImpl.await((dev.baton.v1.AwaitRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.AwaitResponse>) responseObserver);
          break;
        case METHODID_REGISTER_BATCH:
          serviceImpl.registerBatch((dev.baton.v1.RegisterBatchRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.RegisterBatchResponse>) responseObserver);
          break;
        case METHODID_CLOSE_BATCH:
          serviceImpl.closeBatch((dev.baton.v1.CloseBatchRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.CloseBatchResponse>) responseObserver);
          break;
        case METHODID_GET_BATCH:
          serviceImpl.getBatch((dev.baton.v1.GetBatchRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.GetBatchResponse>) responseObserver);
          break;
        case METHODID_RECORD_STEP:
          serviceImpl.recordStep((dev.baton.v1.RecordStepRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.RecordStepResponse>) responseObserver);
          break;
        case METHODID_WATCH_AGENT:
          serviceImpl.watchAgent((dev.baton.v1.WatchAgentRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.WatchAgentResponse>) responseObserver);
          break;
        case METHODID_SIGNAL:
          serviceImpl.signal((dev.baton.v1.SignalRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.SignalResponse>) responseObserver);
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
        case METHODID_SESSION:
          return (io.grpc.stub.StreamObserver<Req>) serviceImpl.session(
              (io.grpc.stub.StreamObserver<dev.baton.v1.SessionResponse>) responseObserver);
        default:
          throw new AssertionError();
      }
    }
  }

  public static final io.grpc.ServerServiceDefinition bindService(AsyncService service) {
    return io.grpc.ServerServiceDefinition.builder(getServiceDescriptor())
        .addMethod(
          getRegisterMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.RegisterRequest,
              dev.baton.v1.RegisterResponse>(
                service, METHODID_REGISTER)))
        .addMethod(
          getUnregisterMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.UnregisterRequest,
              dev.baton.v1.UnregisterResponse>(
                service, METHODID_UNREGISTER)))
        .addMethod(
          getAcquireMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.AcquireRequest,
              dev.baton.v1.AcquireResponse>(
                service, METHODID_ACQUIRE)))
        .addMethod(
          getHeartbeatMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.HeartbeatRequest,
              dev.baton.v1.HeartbeatResponse>(
                service, METHODID_HEARTBEAT)))
        .addMethod(
          getCompleteMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.CompleteRequest,
              dev.baton.v1.CompleteResponse>(
                service, METHODID_COMPLETE)))
        .addMethod(
          getCompleteBatchMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.CompleteBatchRequest,
              dev.baton.v1.CompleteBatchResponse>(
                service, METHODID_COMPLETE_BATCH)))
        .addMethod(
          getSessionMethod(),
          io.grpc.stub.ServerCalls.asyncBidiStreamingCall(
            new MethodHandlers<
              dev.baton.v1.SessionRequest,
              dev.baton.v1.SessionResponse>(
                service, METHODID_SESSION)))
        .addMethod(
          getReleaseMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.ReleaseRequest,
              dev.baton.v1.ReleaseResponse>(
                service, METHODID_RELEASE)))
        .addMethod(
          getGetAgentMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.GetAgentRequest,
              dev.baton.v1.GetAgentResponse>(
                service, METHODID_GET_AGENT)))
        .addMethod(
          getListAgentsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.ListAgentsRequest,
              dev.baton.v1.ListAgentsResponse>(
                service, METHODID_LIST_AGENTS)))
        .addMethod(
          getCancelRunMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.CancelRunRequest,
              dev.baton.v1.CancelRunResponse>(
                service, METHODID_CANCEL_RUN)))
        .addMethod(
          getAwaitMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.AwaitRequest,
              dev.baton.v1.AwaitResponse>(
                service, METHODID_AWAIT)))
        .addMethod(
          getRegisterBatchMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.RegisterBatchRequest,
              dev.baton.v1.RegisterBatchResponse>(
                service, METHODID_REGISTER_BATCH)))
        .addMethod(
          getCloseBatchMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.CloseBatchRequest,
              dev.baton.v1.CloseBatchResponse>(
                service, METHODID_CLOSE_BATCH)))
        .addMethod(
          getGetBatchMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.GetBatchRequest,
              dev.baton.v1.GetBatchResponse>(
                service, METHODID_GET_BATCH)))
        .addMethod(
          getRecordStepMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.RecordStepRequest,
              dev.baton.v1.RecordStepResponse>(
                service, METHODID_RECORD_STEP)))
        .addMethod(
          getWatchAgentMethod(),
          io.grpc.stub.ServerCalls.asyncServerStreamingCall(
            new MethodHandlers<
              dev.baton.v1.WatchAgentRequest,
              dev.baton.v1.WatchAgentResponse>(
                service, METHODID_WATCH_AGENT)))
        .addMethod(
          getSignalMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.SignalRequest,
              dev.baton.v1.SignalResponse>(
                service, METHODID_SIGNAL)))
        .build();
  }

  private static abstract class AgentServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    AgentServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.baton.v1.AgentProto.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("AgentService");
    }
  }

  private static final class AgentServiceFileDescriptorSupplier
      extends AgentServiceBaseDescriptorSupplier {
    AgentServiceFileDescriptorSupplier() {}
  }

  private static final class AgentServiceMethodDescriptorSupplier
      extends AgentServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    AgentServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (AgentServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new AgentServiceFileDescriptorSupplier())
              .addMethod(getRegisterMethod())
              .addMethod(getUnregisterMethod())
              .addMethod(getAcquireMethod())
              .addMethod(getHeartbeatMethod())
              .addMethod(getCompleteMethod())
              .addMethod(getCompleteBatchMethod())
              .addMethod(getSessionMethod())
              .addMethod(getReleaseMethod())
              .addMethod(getGetAgentMethod())
              .addMethod(getListAgentsMethod())
              .addMethod(getCancelRunMethod())
              .addMethod(getAwaitMethod())
              .addMethod(getRegisterBatchMethod())
              .addMethod(getCloseBatchMethod())
              .addMethod(getGetBatchMethod())
              .addMethod(getRecordStepMethod())
              .addMethod(getWatchAgentMethod())
              .addMethod(getSignalMethod())
              .build();
        }
      }
    }
    return result;
  }
}

package dev.baton.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * AdminService is for operators: the health of every queue, pool and receiver Baton keeps, their
 * dead-letter queues (list, retry, delete), and an on-demand purge of stale entries.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class AdminServiceGrpc {

  private AdminServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "baton.v1.AdminService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.GetHealthRequest,
      dev.baton.v1.GetHealthResponse> getGetHealthMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetHealth",
      requestType = dev.baton.v1.GetHealthRequest.class,
      responseType = dev.baton.v1.GetHealthResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.GetHealthRequest,
      dev.baton.v1.GetHealthResponse> getGetHealthMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.GetHealthRequest, dev.baton.v1.GetHealthResponse> getGetHealthMethod;
    if ((getGetHealthMethod = AdminServiceGrpc.getGetHealthMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getGetHealthMethod = AdminServiceGrpc.getGetHealthMethod) == null) {
          AdminServiceGrpc.getGetHealthMethod = getGetHealthMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.GetHealthRequest, dev.baton.v1.GetHealthResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetHealth"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.GetHealthRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.GetHealthResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("GetHealth"))
              .build();
        }
      }
    }
    return getGetHealthMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.ListDeadLettersRequest,
      dev.baton.v1.ListDeadLettersResponse> getListDeadLettersMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListDeadLetters",
      requestType = dev.baton.v1.ListDeadLettersRequest.class,
      responseType = dev.baton.v1.ListDeadLettersResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.ListDeadLettersRequest,
      dev.baton.v1.ListDeadLettersResponse> getListDeadLettersMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.ListDeadLettersRequest, dev.baton.v1.ListDeadLettersResponse> getListDeadLettersMethod;
    if ((getListDeadLettersMethod = AdminServiceGrpc.getListDeadLettersMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getListDeadLettersMethod = AdminServiceGrpc.getListDeadLettersMethod) == null) {
          AdminServiceGrpc.getListDeadLettersMethod = getListDeadLettersMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.ListDeadLettersRequest, dev.baton.v1.ListDeadLettersResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListDeadLetters"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ListDeadLettersRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ListDeadLettersResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("ListDeadLetters"))
              .build();
        }
      }
    }
    return getListDeadLettersMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.RetryDeadLetterRequest,
      dev.baton.v1.RetryDeadLetterResponse> getRetryDeadLetterMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "RetryDeadLetter",
      requestType = dev.baton.v1.RetryDeadLetterRequest.class,
      responseType = dev.baton.v1.RetryDeadLetterResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.RetryDeadLetterRequest,
      dev.baton.v1.RetryDeadLetterResponse> getRetryDeadLetterMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.RetryDeadLetterRequest, dev.baton.v1.RetryDeadLetterResponse> getRetryDeadLetterMethod;
    if ((getRetryDeadLetterMethod = AdminServiceGrpc.getRetryDeadLetterMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getRetryDeadLetterMethod = AdminServiceGrpc.getRetryDeadLetterMethod) == null) {
          AdminServiceGrpc.getRetryDeadLetterMethod = getRetryDeadLetterMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.RetryDeadLetterRequest, dev.baton.v1.RetryDeadLetterResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "RetryDeadLetter"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.RetryDeadLetterRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.RetryDeadLetterResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("RetryDeadLetter"))
              .build();
        }
      }
    }
    return getRetryDeadLetterMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.DeleteDeadLetterRequest,
      dev.baton.v1.DeleteDeadLetterResponse> getDeleteDeadLetterMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "DeleteDeadLetter",
      requestType = dev.baton.v1.DeleteDeadLetterRequest.class,
      responseType = dev.baton.v1.DeleteDeadLetterResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.DeleteDeadLetterRequest,
      dev.baton.v1.DeleteDeadLetterResponse> getDeleteDeadLetterMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.DeleteDeadLetterRequest, dev.baton.v1.DeleteDeadLetterResponse> getDeleteDeadLetterMethod;
    if ((getDeleteDeadLetterMethod = AdminServiceGrpc.getDeleteDeadLetterMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getDeleteDeadLetterMethod = AdminServiceGrpc.getDeleteDeadLetterMethod) == null) {
          AdminServiceGrpc.getDeleteDeadLetterMethod = getDeleteDeadLetterMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.DeleteDeadLetterRequest, dev.baton.v1.DeleteDeadLetterResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "DeleteDeadLetter"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.DeleteDeadLetterRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.DeleteDeadLetterResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("DeleteDeadLetter"))
              .build();
        }
      }
    }
    return getDeleteDeadLetterMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.PurgeRequest,
      dev.baton.v1.PurgeResponse> getPurgeMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Purge",
      requestType = dev.baton.v1.PurgeRequest.class,
      responseType = dev.baton.v1.PurgeResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.PurgeRequest,
      dev.baton.v1.PurgeResponse> getPurgeMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.PurgeRequest, dev.baton.v1.PurgeResponse> getPurgeMethod;
    if ((getPurgeMethod = AdminServiceGrpc.getPurgeMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getPurgeMethod = AdminServiceGrpc.getPurgeMethod) == null) {
          AdminServiceGrpc.getPurgeMethod = getPurgeMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.PurgeRequest, dev.baton.v1.PurgeResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Purge"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.PurgeRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.PurgeResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("Purge"))
              .build();
        }
      }
    }
    return getPurgeMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.SetLimitsRequest,
      dev.baton.v1.SetLimitsResponse> getSetLimitsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "SetLimits",
      requestType = dev.baton.v1.SetLimitsRequest.class,
      responseType = dev.baton.v1.SetLimitsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.SetLimitsRequest,
      dev.baton.v1.SetLimitsResponse> getSetLimitsMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.SetLimitsRequest, dev.baton.v1.SetLimitsResponse> getSetLimitsMethod;
    if ((getSetLimitsMethod = AdminServiceGrpc.getSetLimitsMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getSetLimitsMethod = AdminServiceGrpc.getSetLimitsMethod) == null) {
          AdminServiceGrpc.getSetLimitsMethod = getSetLimitsMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.SetLimitsRequest, dev.baton.v1.SetLimitsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "SetLimits"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.SetLimitsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.SetLimitsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("SetLimits"))
              .build();
        }
      }
    }
    return getSetLimitsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.SetKeyLimitsRequest,
      dev.baton.v1.SetKeyLimitsResponse> getSetKeyLimitsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "SetKeyLimits",
      requestType = dev.baton.v1.SetKeyLimitsRequest.class,
      responseType = dev.baton.v1.SetKeyLimitsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.SetKeyLimitsRequest,
      dev.baton.v1.SetKeyLimitsResponse> getSetKeyLimitsMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.SetKeyLimitsRequest, dev.baton.v1.SetKeyLimitsResponse> getSetKeyLimitsMethod;
    if ((getSetKeyLimitsMethod = AdminServiceGrpc.getSetKeyLimitsMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getSetKeyLimitsMethod = AdminServiceGrpc.getSetKeyLimitsMethod) == null) {
          AdminServiceGrpc.getSetKeyLimitsMethod = getSetKeyLimitsMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.SetKeyLimitsRequest, dev.baton.v1.SetKeyLimitsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "SetKeyLimits"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.SetKeyLimitsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.SetKeyLimitsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("SetKeyLimits"))
              .build();
        }
      }
    }
    return getSetKeyLimitsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.GetKeyLimitsRequest,
      dev.baton.v1.GetKeyLimitsResponse> getGetKeyLimitsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetKeyLimits",
      requestType = dev.baton.v1.GetKeyLimitsRequest.class,
      responseType = dev.baton.v1.GetKeyLimitsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.GetKeyLimitsRequest,
      dev.baton.v1.GetKeyLimitsResponse> getGetKeyLimitsMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.GetKeyLimitsRequest, dev.baton.v1.GetKeyLimitsResponse> getGetKeyLimitsMethod;
    if ((getGetKeyLimitsMethod = AdminServiceGrpc.getGetKeyLimitsMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getGetKeyLimitsMethod = AdminServiceGrpc.getGetKeyLimitsMethod) == null) {
          AdminServiceGrpc.getGetKeyLimitsMethod = getGetKeyLimitsMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.GetKeyLimitsRequest, dev.baton.v1.GetKeyLimitsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetKeyLimits"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.GetKeyLimitsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.GetKeyLimitsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("GetKeyLimits"))
              .build();
        }
      }
    }
    return getGetKeyLimitsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.ListKeyLimitsRequest,
      dev.baton.v1.ListKeyLimitsResponse> getListKeyLimitsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListKeyLimits",
      requestType = dev.baton.v1.ListKeyLimitsRequest.class,
      responseType = dev.baton.v1.ListKeyLimitsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.ListKeyLimitsRequest,
      dev.baton.v1.ListKeyLimitsResponse> getListKeyLimitsMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.ListKeyLimitsRequest, dev.baton.v1.ListKeyLimitsResponse> getListKeyLimitsMethod;
    if ((getListKeyLimitsMethod = AdminServiceGrpc.getListKeyLimitsMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getListKeyLimitsMethod = AdminServiceGrpc.getListKeyLimitsMethod) == null) {
          AdminServiceGrpc.getListKeyLimitsMethod = getListKeyLimitsMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.ListKeyLimitsRequest, dev.baton.v1.ListKeyLimitsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListKeyLimits"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ListKeyLimitsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ListKeyLimitsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("ListKeyLimits"))
              .build();
        }
      }
    }
    return getListKeyLimitsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.SetGroupLimitsRequest,
      dev.baton.v1.SetGroupLimitsResponse> getSetGroupLimitsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "SetGroupLimits",
      requestType = dev.baton.v1.SetGroupLimitsRequest.class,
      responseType = dev.baton.v1.SetGroupLimitsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.SetGroupLimitsRequest,
      dev.baton.v1.SetGroupLimitsResponse> getSetGroupLimitsMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.SetGroupLimitsRequest, dev.baton.v1.SetGroupLimitsResponse> getSetGroupLimitsMethod;
    if ((getSetGroupLimitsMethod = AdminServiceGrpc.getSetGroupLimitsMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getSetGroupLimitsMethod = AdminServiceGrpc.getSetGroupLimitsMethod) == null) {
          AdminServiceGrpc.getSetGroupLimitsMethod = getSetGroupLimitsMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.SetGroupLimitsRequest, dev.baton.v1.SetGroupLimitsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "SetGroupLimits"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.SetGroupLimitsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.SetGroupLimitsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("SetGroupLimits"))
              .build();
        }
      }
    }
    return getSetGroupLimitsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.GetGroupLimitsRequest,
      dev.baton.v1.GetGroupLimitsResponse> getGetGroupLimitsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetGroupLimits",
      requestType = dev.baton.v1.GetGroupLimitsRequest.class,
      responseType = dev.baton.v1.GetGroupLimitsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.GetGroupLimitsRequest,
      dev.baton.v1.GetGroupLimitsResponse> getGetGroupLimitsMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.GetGroupLimitsRequest, dev.baton.v1.GetGroupLimitsResponse> getGetGroupLimitsMethod;
    if ((getGetGroupLimitsMethod = AdminServiceGrpc.getGetGroupLimitsMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getGetGroupLimitsMethod = AdminServiceGrpc.getGetGroupLimitsMethod) == null) {
          AdminServiceGrpc.getGetGroupLimitsMethod = getGetGroupLimitsMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.GetGroupLimitsRequest, dev.baton.v1.GetGroupLimitsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetGroupLimits"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.GetGroupLimitsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.GetGroupLimitsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("GetGroupLimits"))
              .build();
        }
      }
    }
    return getGetGroupLimitsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.ListGroupLimitsRequest,
      dev.baton.v1.ListGroupLimitsResponse> getListGroupLimitsMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListGroupLimits",
      requestType = dev.baton.v1.ListGroupLimitsRequest.class,
      responseType = dev.baton.v1.ListGroupLimitsResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.ListGroupLimitsRequest,
      dev.baton.v1.ListGroupLimitsResponse> getListGroupLimitsMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.ListGroupLimitsRequest, dev.baton.v1.ListGroupLimitsResponse> getListGroupLimitsMethod;
    if ((getListGroupLimitsMethod = AdminServiceGrpc.getListGroupLimitsMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getListGroupLimitsMethod = AdminServiceGrpc.getListGroupLimitsMethod) == null) {
          AdminServiceGrpc.getListGroupLimitsMethod = getListGroupLimitsMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.ListGroupLimitsRequest, dev.baton.v1.ListGroupLimitsResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListGroupLimits"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ListGroupLimitsRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ListGroupLimitsResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("ListGroupLimits"))
              .build();
        }
      }
    }
    return getListGroupLimitsMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.RecountKeysRequest,
      dev.baton.v1.RecountKeysResponse> getRecountKeysMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "RecountKeys",
      requestType = dev.baton.v1.RecountKeysRequest.class,
      responseType = dev.baton.v1.RecountKeysResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.RecountKeysRequest,
      dev.baton.v1.RecountKeysResponse> getRecountKeysMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.RecountKeysRequest, dev.baton.v1.RecountKeysResponse> getRecountKeysMethod;
    if ((getRecountKeysMethod = AdminServiceGrpc.getRecountKeysMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getRecountKeysMethod = AdminServiceGrpc.getRecountKeysMethod) == null) {
          AdminServiceGrpc.getRecountKeysMethod = getRecountKeysMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.RecountKeysRequest, dev.baton.v1.RecountKeysResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "RecountKeys"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.RecountKeysRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.RecountKeysResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("RecountKeys"))
              .build();
        }
      }
    }
    return getRecountKeysMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.PauseRequest,
      dev.baton.v1.PauseResponse> getPauseMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Pause",
      requestType = dev.baton.v1.PauseRequest.class,
      responseType = dev.baton.v1.PauseResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.PauseRequest,
      dev.baton.v1.PauseResponse> getPauseMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.PauseRequest, dev.baton.v1.PauseResponse> getPauseMethod;
    if ((getPauseMethod = AdminServiceGrpc.getPauseMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getPauseMethod = AdminServiceGrpc.getPauseMethod) == null) {
          AdminServiceGrpc.getPauseMethod = getPauseMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.PauseRequest, dev.baton.v1.PauseResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Pause"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.PauseRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.PauseResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("Pause"))
              .build();
        }
      }
    }
    return getPauseMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.ResumeRequest,
      dev.baton.v1.ResumeResponse> getResumeMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Resume",
      requestType = dev.baton.v1.ResumeRequest.class,
      responseType = dev.baton.v1.ResumeResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.ResumeRequest,
      dev.baton.v1.ResumeResponse> getResumeMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.ResumeRequest, dev.baton.v1.ResumeResponse> getResumeMethod;
    if ((getResumeMethod = AdminServiceGrpc.getResumeMethod) == null) {
      synchronized (AdminServiceGrpc.class) {
        if ((getResumeMethod = AdminServiceGrpc.getResumeMethod) == null) {
          AdminServiceGrpc.getResumeMethod = getResumeMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.ResumeRequest, dev.baton.v1.ResumeResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Resume"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ResumeRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ResumeResponse.getDefaultInstance()))
              .setSchemaDescriptor(new AdminServiceMethodDescriptorSupplier("Resume"))
              .build();
        }
      }
    }
    return getResumeMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static AdminServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<AdminServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<AdminServiceStub>() {
        @java.lang.Override
        public AdminServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new AdminServiceStub(channel, callOptions);
        }
      };
    return AdminServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static AdminServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<AdminServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<AdminServiceBlockingV2Stub>() {
        @java.lang.Override
        public AdminServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new AdminServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return AdminServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static AdminServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<AdminServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<AdminServiceBlockingStub>() {
        @java.lang.Override
        public AdminServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new AdminServiceBlockingStub(channel, callOptions);
        }
      };
    return AdminServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static AdminServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<AdminServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<AdminServiceFutureStub>() {
        @java.lang.Override
        public AdminServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new AdminServiceFutureStub(channel, callOptions);
        }
      };
    return AdminServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * AdminService is for operators: the health of every queue, pool and receiver Baton keeps, their
   * dead-letter queues (list, retry, delete), and an on-demand purge of stale entries.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * GetHealth checks every queue, pool and receiver now and returns each one's figures and status, and
     * the overall status (the worst of them). It also refreshes the health hash in Redis and the
     * Prometheus gauges. Redis unreachable: UNAVAILABLE.
     * </pre>
     */
    default void getHealth(dev.baton.v1.GetHealthRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.GetHealthResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetHealthMethod(), responseObserver);
    }

    /**
     * <pre>
     * ListDeadLetters pages through dead letters, oldest first within a source: of one source, of
     * every source of a kind, or (no source) of every source of every kind, queues first, then
     * pools, then receivers, each kind by name.
     * </pre>
     */
    default void listDeadLetters(dev.baton.v1.ListDeadLettersRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ListDeadLettersResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListDeadLettersMethod(), responseObserver);
    }

    /**
     * <pre>
     * RetryDeadLetter puts a dead-lettered item back where it came from: an agent is due again at
     * once with a clean failure streak; a resource is offered again with its attributes; a message
     * is due again at once with its delivery count reset. An agent's kept finish (its dead letter,
     * as Await answers it) is dropped, so an Await after the retry waits for the new run.
     * NOT_FOUND if the item is not dead-lettered there.
     * </pre>
     */
    default void retryDeadLetter(dev.baton.v1.RetryDeadLetterRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.RetryDeadLetterResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getRetryDeadLetterMethod(), responseObserver);
    }

    /**
     * <pre>
     * DeleteDeadLetter drops a dead letter for good (an agent with its definition). NOT_FOUND if
     * the item is not dead-lettered there.
     * </pre>
     */
    default void deleteDeadLetter(dev.baton.v1.DeleteDeadLetterRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.DeleteDeadLetterResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getDeleteDeadLetterMethod(), responseObserver);
    }

    /**
     * <pre>
     * Purge runs one pass of the auto-purge now over every queue, pool and receiver and lists what it
     * purged and why; with dry_run it changes nothing and lists the same.
     * </pre>
     */
    default void purge(dev.baton.v1.PurgeRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.PurgeResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getPurgeMethod(), responseObserver);
    }

    /**
     * <pre>
     * SetLimits replaces a queue's flow-control limits: at most `concurrency` leases held at once
     * across the whole fleet, at most `rate` grants (a token bucket on the Redis clock). Enforced
     * in the acquire script, on every replica, for every worker; they take effect at the next
     * Acquire (leases already held are never taken back). An absent limit is no limit; a queue
     * with no limits pays one hash read per Acquire. With a rate limit, a Complete with
     * THROTTLED and a retry_after empties the queue's bucket for that long (the service said to
     * back off, so the whole queue does). The response says what is stored. A sharded queue
     * cannot take limits (FAILED_PRECONDITION, reason UNSUPPORTED). GetHealth shows the limits.
     * A queue nothing was ever registered in is NOT_FOUND (a typo changes nothing), unless
     * `create` declares it: see SetLimitsRequest.create. A queue joins a shared concurrency group
     * (SetGroupLimits) with `limits.group`; on a Redis Cluster that is FAILED_PRECONDITION.
     * Only a limit on keys' concurrency (key_concurrency, or a key's own, SetKeyLimits) counts the
     * leases each key holds: a key_concurrency set where nothing counted them recounts the leases
     * held (as RecountKeys) before the call answers, so it binds on what is held already; removed
     * where nothing else counts them, the counts are dropped.
     * </pre>
     */
    default void setLimits(dev.baton.v1.SetLimitsRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.SetLimitsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getSetLimitsMethod(), responseObserver);
    }

    /**
     * <pre>
     * SetKeyLimits replaces one key's weight and overrides in a queue (Agent.key): its share of the
     * fair queuing across keys, and its own key_concurrency and key_rate in place of the queue's.
     * Enforced in the acquire script like SetLimits, from the next Acquire on; a weight applies to
     * the key's agents that become due after it (agents already in dispatch order keep their
     * turn). Absent (or default) limits remove the key's record: the key takes the queue's
     * defaults again. Any key may be named, with agents or none yet. A sharded queue refuses it
     * (FAILED_PRECONDITION, reason UNSUPPORTED). Invalid fields: INVALID_ARGUMENT naming the
     * field, and nothing changes. A queue with any key's record counts the leases each key holds
     * (see SetLimits): the first record recounts them before the call answers, and the last one
     * removed (without key_concurrency) drops the counts.
     * </pre>
     */
    default void setKeyLimits(dev.baton.v1.SetKeyLimitsRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.SetKeyLimitsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getSetKeyLimitsMethod(), responseObserver);
    }

    /**
     * <pre>
     * GetKeyLimits reads one key's weight and overrides (the defaults when it has none) and the
     * leases it holds now (counted only while the queue limits keys' concurrency: see
     * KeyLimitsEntry.held).
     * </pre>
     */
    default void getKeyLimits(dev.baton.v1.GetKeyLimitsRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.GetKeyLimitsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetKeyLimitsMethod(), responseObserver);
    }

    /**
     * <pre>
     * ListKeyLimits pages through the keys of a queue that have a weight or overrides, in key
     * order (byte order).
     * </pre>
     */
    default void listKeyLimits(dev.baton.v1.ListKeyLimitsRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ListKeyLimitsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListKeyLimitsMethod(), responseObserver);
    }

    /**
     * <pre>
     * SetGroupLimits creates or replaces a shared concurrency group: limits that hold over every
     * queue that joins it (QueueLimits.group) together, enforced in the acquire script on every
     * replica like SetLimits: at most `concurrency` leases held at once over all member queues, a
     * token bucket of `rate` grants over all of them, and at most `key_concurrency` leases per
     * Agent.key over all of them. A queue's own limits still apply too. A lease counts in the group
     * it was granted under until it ends (complete, release, reap, a cancelled run), even if its
     * queue leaves or changes group meanwhile; a place freed in one member queue wakes the waiting
     * Acquires of every member. Member queues held back by the group are woken to look again. A
     * group is never removed; absent limits make it unlimited. Invalid fields: INVALID_ARGUMENT
     * naming the field, and nothing changes. On a Redis Cluster a group can be set but no queue
     * can join it (see QueueLimits.group).
     * </pre>
     */
    default void setGroupLimits(dev.baton.v1.SetGroupLimitsRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.SetGroupLimitsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getSetGroupLimitsMethod(), responseObserver);
    }

    /**
     * <pre>
     * GetGroupLimits reads a group's limits and the leases held under it now. NOT_FOUND if it was
     * never set.
     * </pre>
     */
    default void getGroupLimits(dev.baton.v1.GetGroupLimitsRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.GetGroupLimitsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetGroupLimitsMethod(), responseObserver);
    }

    /**
     * <pre>
     * ListGroupLimits pages through the groups in name order (byte order).
     * </pre>
     */
    default void listGroupLimits(dev.baton.v1.ListGroupLimitsRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ListGroupLimitsResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListGroupLimitsMethod(), responseObserver);
    }

    /**
     * <pre>
     * RecountKeys recounts the leases each key of a queue holds from the lease records and
     * corrects the counts key_concurrency is enforced against (they can drift when a replica of
     * an older version ended leases, or after a hand edit of Redis). It works in bounded steps
     * while Acquires and Completes go on, and is right with them (see ARCHITECTURE.md); a recount
     * left unfinished (the call cancelled) is resumed by the next one. Every shard of a sharded
     * queue. On a queue that counts no key's leases (no key_concurrency, no key's record) it
     * drops any count left (corrected: the counts dropped).
     * </pre>
     */
    default void recountKeys(dev.baton.v1.RecountKeysRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.RecountKeysResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getRecountKeysMethod(), responseObserver);
    }

    /**
     * <pre>
     * Pause stops handing out a queue's agents, a pool's resources or a receiver's messages
     * (every shard of a sharded one): Acquire and sessions grant nothing and long polls keep
     * waiting; Claim hands out nothing (a claim with a wait waits in line, and resources offered
     * or returned meanwhile stay idle); Subscribe and Receive streams deliver nothing (expired
     * deliveries still come back to be delivered later). What waits stays, and producers can
     * still add work. Held leases, claims and in-flight messages finish as usual. GetHealth shows
     * `paused`. A source nothing was ever registered, offered or scheduled in is NOT_FOUND (a typo
     * changes nothing), unless `create` declares it: see PauseRequest.create.
     * </pre>
     */
    default void pause(dev.baton.v1.PauseRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.PauseResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getPauseMethod(), responseObserver);
    }

    /**
     * <pre>
     * Resume undoes Pause and wakes whatever waits on the source; a pool's idle resources are
     * handed to the claims waiting in line, oldest first. NOT_FOUND for an unknown source, as
     * Pause, unless `create` declares it.
     * </pre>
     */
    default void resume(dev.baton.v1.ResumeRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ResumeResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getResumeMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service AdminService.
   * <pre>
   * AdminService is for operators: the health of every queue, pool and receiver Baton keeps, their
   * dead-letter queues (list, retry, delete), and an on-demand purge of stale entries.
   * </pre>
   */
  public static abstract class AdminServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return AdminServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service AdminService.
   * <pre>
   * AdminService is for operators: the health of every queue, pool and receiver Baton keeps, their
   * dead-letter queues (list, retry, delete), and an on-demand purge of stale entries.
   * </pre>
   */
  public static final class AdminServiceStub
      extends io.grpc.stub.AbstractAsyncStub<AdminServiceStub> {
    private AdminServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected AdminServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new AdminServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * GetHealth checks every queue, pool and receiver now and returns each one's figures and status, and
     * the overall status (the worst of them). It also refreshes the health hash in Redis and the
     * Prometheus gauges. Redis unreachable: UNAVAILABLE.
     * </pre>
     */
    public void getHealth(dev.baton.v1.GetHealthRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.GetHealthResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetHealthMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * ListDeadLetters pages through dead letters, oldest first within a source: of one source, of
     * every source of a kind, or (no source) of every source of every kind, queues first, then
     * pools, then receivers, each kind by name.
     * </pre>
     */
    public void listDeadLetters(dev.baton.v1.ListDeadLettersRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ListDeadLettersResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListDeadLettersMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * RetryDeadLetter puts a dead-lettered item back where it came from: an agent is due again at
     * once with a clean failure streak; a resource is offered again with its attributes; a message
     * is due again at once with its delivery count reset. An agent's kept finish (its dead letter,
     * as Await answers it) is dropped, so an Await after the retry waits for the new run.
     * NOT_FOUND if the item is not dead-lettered there.
     * </pre>
     */
    public void retryDeadLetter(dev.baton.v1.RetryDeadLetterRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.RetryDeadLetterResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getRetryDeadLetterMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * DeleteDeadLetter drops a dead letter for good (an agent with its definition). NOT_FOUND if
     * the item is not dead-lettered there.
     * </pre>
     */
    public void deleteDeadLetter(dev.baton.v1.DeleteDeadLetterRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.DeleteDeadLetterResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getDeleteDeadLetterMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Purge runs one pass of the auto-purge now over every queue, pool and receiver and lists what it
     * purged and why; with dry_run it changes nothing and lists the same.
     * </pre>
     */
    public void purge(dev.baton.v1.PurgeRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.PurgeResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getPurgeMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * SetLimits replaces a queue's flow-control limits: at most `concurrency` leases held at once
     * across the whole fleet, at most `rate` grants (a token bucket on the Redis clock). Enforced
     * in the acquire script, on every replica, for every worker; they take effect at the next
     * Acquire (leases already held are never taken back). An absent limit is no limit; a queue
     * with no limits pays one hash read per Acquire. With a rate limit, a Complete with
     * THROTTLED and a retry_after empties the queue's bucket for that long (the service said to
     * back off, so the whole queue does). The response says what is stored. A sharded queue
     * cannot take limits (FAILED_PRECONDITION, reason UNSUPPORTED). GetHealth shows the limits.
     * A queue nothing was ever registered in is NOT_FOUND (a typo changes nothing), unless
     * `create` declares it: see SetLimitsRequest.create. A queue joins a shared concurrency group
     * (SetGroupLimits) with `limits.group`; on a Redis Cluster that is FAILED_PRECONDITION.
     * Only a limit on keys' concurrency (key_concurrency, or a key's own, SetKeyLimits) counts the
     * leases each key holds: a key_concurrency set where nothing counted them recounts the leases
     * held (as RecountKeys) before the call answers, so it binds on what is held already; removed
     * where nothing else counts them, the counts are dropped.
     * </pre>
     */
    public void setLimits(dev.baton.v1.SetLimitsRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.SetLimitsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getSetLimitsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * SetKeyLimits replaces one key's weight and overrides in a queue (Agent.key): its share of the
     * fair queuing across keys, and its own key_concurrency and key_rate in place of the queue's.
     * Enforced in the acquire script like SetLimits, from the next Acquire on; a weight applies to
     * the key's agents that become due after it (agents already in dispatch order keep their
     * turn). Absent (or default) limits remove the key's record: the key takes the queue's
     * defaults again. Any key may be named, with agents or none yet. A sharded queue refuses it
     * (FAILED_PRECONDITION, reason UNSUPPORTED). Invalid fields: INVALID_ARGUMENT naming the
     * field, and nothing changes. A queue with any key's record counts the leases each key holds
     * (see SetLimits): the first record recounts them before the call answers, and the last one
     * removed (without key_concurrency) drops the counts.
     * </pre>
     */
    public void setKeyLimits(dev.baton.v1.SetKeyLimitsRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.SetKeyLimitsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getSetKeyLimitsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * GetKeyLimits reads one key's weight and overrides (the defaults when it has none) and the
     * leases it holds now (counted only while the queue limits keys' concurrency: see
     * KeyLimitsEntry.held).
     * </pre>
     */
    public void getKeyLimits(dev.baton.v1.GetKeyLimitsRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.GetKeyLimitsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetKeyLimitsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * ListKeyLimits pages through the keys of a queue that have a weight or overrides, in key
     * order (byte order).
     * </pre>
     */
    public void listKeyLimits(dev.baton.v1.ListKeyLimitsRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ListKeyLimitsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListKeyLimitsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * SetGroupLimits creates or replaces a shared concurrency group: limits that hold over every
     * queue that joins it (QueueLimits.group) together, enforced in the acquire script on every
     * replica like SetLimits: at most `concurrency` leases held at once over all member queues, a
     * token bucket of `rate` grants over all of them, and at most `key_concurrency` leases per
     * Agent.key over all of them. A queue's own limits still apply too. A lease counts in the group
     * it was granted under until it ends (complete, release, reap, a cancelled run), even if its
     * queue leaves or changes group meanwhile; a place freed in one member queue wakes the waiting
     * Acquires of every member. Member queues held back by the group are woken to look again. A
     * group is never removed; absent limits make it unlimited. Invalid fields: INVALID_ARGUMENT
     * naming the field, and nothing changes. On a Redis Cluster a group can be set but no queue
     * can join it (see QueueLimits.group).
     * </pre>
     */
    public void setGroupLimits(dev.baton.v1.SetGroupLimitsRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.SetGroupLimitsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getSetGroupLimitsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * GetGroupLimits reads a group's limits and the leases held under it now. NOT_FOUND if it was
     * never set.
     * </pre>
     */
    public void getGroupLimits(dev.baton.v1.GetGroupLimitsRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.GetGroupLimitsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetGroupLimitsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * ListGroupLimits pages through the groups in name order (byte order).
     * </pre>
     */
    public void listGroupLimits(dev.baton.v1.ListGroupLimitsRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ListGroupLimitsResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListGroupLimitsMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * RecountKeys recounts the leases each key of a queue holds from the lease records and
     * corrects the counts key_concurrency is enforced against (they can drift when a replica of
     * an older version ended leases, or after a hand edit of Redis). It works in bounded steps
     * while Acquires and Completes go on, and is right with them (see ARCHITECTURE.md); a recount
     * left unfinished (the call cancelled) is resumed by the next one. Every shard of a sharded
     * queue. On a queue that counts no key's leases (no key_concurrency, no key's record) it
     * drops any count left (corrected: the counts dropped).
     * </pre>
     */
    public void recountKeys(dev.baton.v1.RecountKeysRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.RecountKeysResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getRecountKeysMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Pause stops handing out a queue's agents, a pool's resources or a receiver's messages
     * (every shard of a sharded one): Acquire and sessions grant nothing and long polls keep
     * waiting; Claim hands out nothing (a claim with a wait waits in line, and resources offered
     * or returned meanwhile stay idle); Subscribe and Receive streams deliver nothing (expired
     * deliveries still come back to be delivered later). What waits stays, and producers can
     * still add work. Held leases, claims and in-flight messages finish as usual. GetHealth shows
     * `paused`. A source nothing was ever registered, offered or scheduled in is NOT_FOUND (a typo
     * changes nothing), unless `create` declares it: see PauseRequest.create.
     * </pre>
     */
    public void pause(dev.baton.v1.PauseRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.PauseResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getPauseMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Resume undoes Pause and wakes whatever waits on the source; a pool's idle resources are
     * handed to the claims waiting in line, oldest first. NOT_FOUND for an unknown source, as
     * Pause, unless `create` declares it.
     * </pre>
     */
    public void resume(dev.baton.v1.ResumeRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ResumeResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getResumeMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service AdminService.
   * <pre>
   * AdminService is for operators: the health of every queue, pool and receiver Baton keeps, their
   * dead-letter queues (list, retry, delete), and an on-demand purge of stale entries.
   * </pre>
   */
  public static final class AdminServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<AdminServiceBlockingV2Stub> {
    private AdminServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected AdminServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new AdminServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * GetHealth checks every queue, pool and receiver now and returns each one's figures and status, and
     * the overall status (the worst of them). It also refreshes the health hash in Redis and the
     * Prometheus gauges. Redis unreachable: UNAVAILABLE.
     * </pre>
     */
    public dev.baton.v1.GetHealthResponse getHealth(dev.baton.v1.GetHealthRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetHealthMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListDeadLetters pages through dead letters, oldest first within a source: of one source, of
     * every source of a kind, or (no source) of every source of every kind, queues first, then
     * pools, then receivers, each kind by name.
     * </pre>
     */
    public dev.baton.v1.ListDeadLettersResponse listDeadLetters(dev.baton.v1.ListDeadLettersRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListDeadLettersMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * RetryDeadLetter puts a dead-lettered item back where it came from: an agent is due again at
     * once with a clean failure streak; a resource is offered again with its attributes; a message
     * is due again at once with its delivery count reset. An agent's kept finish (its dead letter,
     * as Await answers it) is dropped, so an Await after the retry waits for the new run.
     * NOT_FOUND if the item is not dead-lettered there.
     * </pre>
     */
    public dev.baton.v1.RetryDeadLetterResponse retryDeadLetter(dev.baton.v1.RetryDeadLetterRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getRetryDeadLetterMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * DeleteDeadLetter drops a dead letter for good (an agent with its definition). NOT_FOUND if
     * the item is not dead-lettered there.
     * </pre>
     */
    public dev.baton.v1.DeleteDeadLetterResponse deleteDeadLetter(dev.baton.v1.DeleteDeadLetterRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getDeleteDeadLetterMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Purge runs one pass of the auto-purge now over every queue, pool and receiver and lists what it
     * purged and why; with dry_run it changes nothing and lists the same.
     * </pre>
     */
    public dev.baton.v1.PurgeResponse purge(dev.baton.v1.PurgeRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getPurgeMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * SetLimits replaces a queue's flow-control limits: at most `concurrency` leases held at once
     * across the whole fleet, at most `rate` grants (a token bucket on the Redis clock). Enforced
     * in the acquire script, on every replica, for every worker; they take effect at the next
     * Acquire (leases already held are never taken back). An absent limit is no limit; a queue
     * with no limits pays one hash read per Acquire. With a rate limit, a Complete with
     * THROTTLED and a retry_after empties the queue's bucket for that long (the service said to
     * back off, so the whole queue does). The response says what is stored. A sharded queue
     * cannot take limits (FAILED_PRECONDITION, reason UNSUPPORTED). GetHealth shows the limits.
     * A queue nothing was ever registered in is NOT_FOUND (a typo changes nothing), unless
     * `create` declares it: see SetLimitsRequest.create. A queue joins a shared concurrency group
     * (SetGroupLimits) with `limits.group`; on a Redis Cluster that is FAILED_PRECONDITION.
     * Only a limit on keys' concurrency (key_concurrency, or a key's own, SetKeyLimits) counts the
     * leases each key holds: a key_concurrency set where nothing counted them recounts the leases
     * held (as RecountKeys) before the call answers, so it binds on what is held already; removed
     * where nothing else counts them, the counts are dropped.
     * </pre>
     */
    public dev.baton.v1.SetLimitsResponse setLimits(dev.baton.v1.SetLimitsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getSetLimitsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * SetKeyLimits replaces one key's weight and overrides in a queue (Agent.key): its share of the
     * fair queuing across keys, and its own key_concurrency and key_rate in place of the queue's.
     * Enforced in the acquire script like SetLimits, from the next Acquire on; a weight applies to
     * the key's agents that become due after it (agents already in dispatch order keep their
     * turn). Absent (or default) limits remove the key's record: the key takes the queue's
     * defaults again. Any key may be named, with agents or none yet. A sharded queue refuses it
     * (FAILED_PRECONDITION, reason UNSUPPORTED). Invalid fields: INVALID_ARGUMENT naming the
     * field, and nothing changes. A queue with any key's record counts the leases each key holds
     * (see SetLimits): the first record recounts them before the call answers, and the last one
     * removed (without key_concurrency) drops the counts.
     * </pre>
     */
    public dev.baton.v1.SetKeyLimitsResponse setKeyLimits(dev.baton.v1.SetKeyLimitsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getSetKeyLimitsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetKeyLimits reads one key's weight and overrides (the defaults when it has none) and the
     * leases it holds now (counted only while the queue limits keys' concurrency: see
     * KeyLimitsEntry.held).
     * </pre>
     */
    public dev.baton.v1.GetKeyLimitsResponse getKeyLimits(dev.baton.v1.GetKeyLimitsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetKeyLimitsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListKeyLimits pages through the keys of a queue that have a weight or overrides, in key
     * order (byte order).
     * </pre>
     */
    public dev.baton.v1.ListKeyLimitsResponse listKeyLimits(dev.baton.v1.ListKeyLimitsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListKeyLimitsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * SetGroupLimits creates or replaces a shared concurrency group: limits that hold over every
     * queue that joins it (QueueLimits.group) together, enforced in the acquire script on every
     * replica like SetLimits: at most `concurrency` leases held at once over all member queues, a
     * token bucket of `rate` grants over all of them, and at most `key_concurrency` leases per
     * Agent.key over all of them. A queue's own limits still apply too. A lease counts in the group
     * it was granted under until it ends (complete, release, reap, a cancelled run), even if its
     * queue leaves or changes group meanwhile; a place freed in one member queue wakes the waiting
     * Acquires of every member. Member queues held back by the group are woken to look again. A
     * group is never removed; absent limits make it unlimited. Invalid fields: INVALID_ARGUMENT
     * naming the field, and nothing changes. On a Redis Cluster a group can be set but no queue
     * can join it (see QueueLimits.group).
     * </pre>
     */
    public dev.baton.v1.SetGroupLimitsResponse setGroupLimits(dev.baton.v1.SetGroupLimitsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getSetGroupLimitsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetGroupLimits reads a group's limits and the leases held under it now. NOT_FOUND if it was
     * never set.
     * </pre>
     */
    public dev.baton.v1.GetGroupLimitsResponse getGroupLimits(dev.baton.v1.GetGroupLimitsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetGroupLimitsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListGroupLimits pages through the groups in name order (byte order).
     * </pre>
     */
    public dev.baton.v1.ListGroupLimitsResponse listGroupLimits(dev.baton.v1.ListGroupLimitsRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListGroupLimitsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * RecountKeys recounts the leases each key of a queue holds from the lease records and
     * corrects the counts key_concurrency is enforced against (they can drift when a replica of
     * an older version ended leases, or after a hand edit of Redis). It works in bounded steps
     * while Acquires and Completes go on, and is right with them (see ARCHITECTURE.md); a recount
     * left unfinished (the call cancelled) is resumed by the next one. Every shard of a sharded
     * queue. On a queue that counts no key's leases (no key_concurrency, no key's record) it
     * drops any count left (corrected: the counts dropped).
     * </pre>
     */
    public dev.baton.v1.RecountKeysResponse recountKeys(dev.baton.v1.RecountKeysRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getRecountKeysMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Pause stops handing out a queue's agents, a pool's resources or a receiver's messages
     * (every shard of a sharded one): Acquire and sessions grant nothing and long polls keep
     * waiting; Claim hands out nothing (a claim with a wait waits in line, and resources offered
     * or returned meanwhile stay idle); Subscribe and Receive streams deliver nothing (expired
     * deliveries still come back to be delivered later). What waits stays, and producers can
     * still add work. Held leases, claims and in-flight messages finish as usual. GetHealth shows
     * `paused`. A source nothing was ever registered, offered or scheduled in is NOT_FOUND (a typo
     * changes nothing), unless `create` declares it: see PauseRequest.create.
     * </pre>
     */
    public dev.baton.v1.PauseResponse pause(dev.baton.v1.PauseRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getPauseMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Resume undoes Pause and wakes whatever waits on the source; a pool's idle resources are
     * handed to the claims waiting in line, oldest first. NOT_FOUND for an unknown source, as
     * Pause, unless `create` declares it.
     * </pre>
     */
    public dev.baton.v1.ResumeResponse resume(dev.baton.v1.ResumeRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getResumeMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service AdminService.
   * <pre>
   * AdminService is for operators: the health of every queue, pool and receiver Baton keeps, their
   * dead-letter queues (list, retry, delete), and an on-demand purge of stale entries.
   * </pre>
   */
  public static final class AdminServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<AdminServiceBlockingStub> {
    private AdminServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected AdminServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new AdminServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * GetHealth checks every queue, pool and receiver now and returns each one's figures and status, and
     * the overall status (the worst of them). It also refreshes the health hash in Redis and the
     * Prometheus gauges. Redis unreachable: UNAVAILABLE.
     * </pre>
     */
    public dev.baton.v1.GetHealthResponse getHealth(dev.baton.v1.GetHealthRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetHealthMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListDeadLetters pages through dead letters, oldest first within a source: of one source, of
     * every source of a kind, or (no source) of every source of every kind, queues first, then
     * pools, then receivers, each kind by name.
     * </pre>
     */
    public dev.baton.v1.ListDeadLettersResponse listDeadLetters(dev.baton.v1.ListDeadLettersRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListDeadLettersMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * RetryDeadLetter puts a dead-lettered item back where it came from: an agent is due again at
     * once with a clean failure streak; a resource is offered again with its attributes; a message
     * is due again at once with its delivery count reset. An agent's kept finish (its dead letter,
     * as Await answers it) is dropped, so an Await after the retry waits for the new run.
     * NOT_FOUND if the item is not dead-lettered there.
     * </pre>
     */
    public dev.baton.v1.RetryDeadLetterResponse retryDeadLetter(dev.baton.v1.RetryDeadLetterRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getRetryDeadLetterMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * DeleteDeadLetter drops a dead letter for good (an agent with its definition). NOT_FOUND if
     * the item is not dead-lettered there.
     * </pre>
     */
    public dev.baton.v1.DeleteDeadLetterResponse deleteDeadLetter(dev.baton.v1.DeleteDeadLetterRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getDeleteDeadLetterMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Purge runs one pass of the auto-purge now over every queue, pool and receiver and lists what it
     * purged and why; with dry_run it changes nothing and lists the same.
     * </pre>
     */
    public dev.baton.v1.PurgeResponse purge(dev.baton.v1.PurgeRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getPurgeMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * SetLimits replaces a queue's flow-control limits: at most `concurrency` leases held at once
     * across the whole fleet, at most `rate` grants (a token bucket on the Redis clock). Enforced
     * in the acquire script, on every replica, for every worker; they take effect at the next
     * Acquire (leases already held are never taken back). An absent limit is no limit; a queue
     * with no limits pays one hash read per Acquire. With a rate limit, a Complete with
     * THROTTLED and a retry_after empties the queue's bucket for that long (the service said to
     * back off, so the whole queue does). The response says what is stored. A sharded queue
     * cannot take limits (FAILED_PRECONDITION, reason UNSUPPORTED). GetHealth shows the limits.
     * A queue nothing was ever registered in is NOT_FOUND (a typo changes nothing), unless
     * `create` declares it: see SetLimitsRequest.create. A queue joins a shared concurrency group
     * (SetGroupLimits) with `limits.group`; on a Redis Cluster that is FAILED_PRECONDITION.
     * Only a limit on keys' concurrency (key_concurrency, or a key's own, SetKeyLimits) counts the
     * leases each key holds: a key_concurrency set where nothing counted them recounts the leases
     * held (as RecountKeys) before the call answers, so it binds on what is held already; removed
     * where nothing else counts them, the counts are dropped.
     * </pre>
     */
    public dev.baton.v1.SetLimitsResponse setLimits(dev.baton.v1.SetLimitsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getSetLimitsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * SetKeyLimits replaces one key's weight and overrides in a queue (Agent.key): its share of the
     * fair queuing across keys, and its own key_concurrency and key_rate in place of the queue's.
     * Enforced in the acquire script like SetLimits, from the next Acquire on; a weight applies to
     * the key's agents that become due after it (agents already in dispatch order keep their
     * turn). Absent (or default) limits remove the key's record: the key takes the queue's
     * defaults again. Any key may be named, with agents or none yet. A sharded queue refuses it
     * (FAILED_PRECONDITION, reason UNSUPPORTED). Invalid fields: INVALID_ARGUMENT naming the
     * field, and nothing changes. A queue with any key's record counts the leases each key holds
     * (see SetLimits): the first record recounts them before the call answers, and the last one
     * removed (without key_concurrency) drops the counts.
     * </pre>
     */
    public dev.baton.v1.SetKeyLimitsResponse setKeyLimits(dev.baton.v1.SetKeyLimitsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getSetKeyLimitsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetKeyLimits reads one key's weight and overrides (the defaults when it has none) and the
     * leases it holds now (counted only while the queue limits keys' concurrency: see
     * KeyLimitsEntry.held).
     * </pre>
     */
    public dev.baton.v1.GetKeyLimitsResponse getKeyLimits(dev.baton.v1.GetKeyLimitsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetKeyLimitsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListKeyLimits pages through the keys of a queue that have a weight or overrides, in key
     * order (byte order).
     * </pre>
     */
    public dev.baton.v1.ListKeyLimitsResponse listKeyLimits(dev.baton.v1.ListKeyLimitsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListKeyLimitsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * SetGroupLimits creates or replaces a shared concurrency group: limits that hold over every
     * queue that joins it (QueueLimits.group) together, enforced in the acquire script on every
     * replica like SetLimits: at most `concurrency` leases held at once over all member queues, a
     * token bucket of `rate` grants over all of them, and at most `key_concurrency` leases per
     * Agent.key over all of them. A queue's own limits still apply too. A lease counts in the group
     * it was granted under until it ends (complete, release, reap, a cancelled run), even if its
     * queue leaves or changes group meanwhile; a place freed in one member queue wakes the waiting
     * Acquires of every member. Member queues held back by the group are woken to look again. A
     * group is never removed; absent limits make it unlimited. Invalid fields: INVALID_ARGUMENT
     * naming the field, and nothing changes. On a Redis Cluster a group can be set but no queue
     * can join it (see QueueLimits.group).
     * </pre>
     */
    public dev.baton.v1.SetGroupLimitsResponse setGroupLimits(dev.baton.v1.SetGroupLimitsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getSetGroupLimitsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * GetGroupLimits reads a group's limits and the leases held under it now. NOT_FOUND if it was
     * never set.
     * </pre>
     */
    public dev.baton.v1.GetGroupLimitsResponse getGroupLimits(dev.baton.v1.GetGroupLimitsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetGroupLimitsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListGroupLimits pages through the groups in name order (byte order).
     * </pre>
     */
    public dev.baton.v1.ListGroupLimitsResponse listGroupLimits(dev.baton.v1.ListGroupLimitsRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListGroupLimitsMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * RecountKeys recounts the leases each key of a queue holds from the lease records and
     * corrects the counts key_concurrency is enforced against (they can drift when a replica of
     * an older version ended leases, or after a hand edit of Redis). It works in bounded steps
     * while Acquires and Completes go on, and is right with them (see ARCHITECTURE.md); a recount
     * left unfinished (the call cancelled) is resumed by the next one. Every shard of a sharded
     * queue. On a queue that counts no key's leases (no key_concurrency, no key's record) it
     * drops any count left (corrected: the counts dropped).
     * </pre>
     */
    public dev.baton.v1.RecountKeysResponse recountKeys(dev.baton.v1.RecountKeysRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getRecountKeysMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Pause stops handing out a queue's agents, a pool's resources or a receiver's messages
     * (every shard of a sharded one): Acquire and sessions grant nothing and long polls keep
     * waiting; Claim hands out nothing (a claim with a wait waits in line, and resources offered
     * or returned meanwhile stay idle); Subscribe and Receive streams deliver nothing (expired
     * deliveries still come back to be delivered later). What waits stays, and producers can
     * still add work. Held leases, claims and in-flight messages finish as usual. GetHealth shows
     * `paused`. A source nothing was ever registered, offered or scheduled in is NOT_FOUND (a typo
     * changes nothing), unless `create` declares it: see PauseRequest.create.
     * </pre>
     */
    public dev.baton.v1.PauseResponse pause(dev.baton.v1.PauseRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getPauseMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Resume undoes Pause and wakes whatever waits on the source; a pool's idle resources are
     * handed to the claims waiting in line, oldest first. NOT_FOUND for an unknown source, as
     * Pause, unless `create` declares it.
     * </pre>
     */
    public dev.baton.v1.ResumeResponse resume(dev.baton.v1.ResumeRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getResumeMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service AdminService.
   * <pre>
   * AdminService is for operators: the health of every queue, pool and receiver Baton keeps, their
   * dead-letter queues (list, retry, delete), and an on-demand purge of stale entries.
   * </pre>
   */
  public static final class AdminServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<AdminServiceFutureStub> {
    private AdminServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected AdminServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new AdminServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * GetHealth checks every queue, pool and receiver now and returns each one's figures and status, and
     * the overall status (the worst of them). It also refreshes the health hash in Redis and the
     * Prometheus gauges. Redis unreachable: UNAVAILABLE.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.GetHealthResponse> getHealth(
        dev.baton.v1.GetHealthRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetHealthMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * ListDeadLetters pages through dead letters, oldest first within a source: of one source, of
     * every source of a kind, or (no source) of every source of every kind, queues first, then
     * pools, then receivers, each kind by name.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.ListDeadLettersResponse> listDeadLetters(
        dev.baton.v1.ListDeadLettersRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListDeadLettersMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * RetryDeadLetter puts a dead-lettered item back where it came from: an agent is due again at
     * once with a clean failure streak; a resource is offered again with its attributes; a message
     * is due again at once with its delivery count reset. An agent's kept finish (its dead letter,
     * as Await answers it) is dropped, so an Await after the retry waits for the new run.
     * NOT_FOUND if the item is not dead-lettered there.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.RetryDeadLetterResponse> retryDeadLetter(
        dev.baton.v1.RetryDeadLetterRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getRetryDeadLetterMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * DeleteDeadLetter drops a dead letter for good (an agent with its definition). NOT_FOUND if
     * the item is not dead-lettered there.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.DeleteDeadLetterResponse> deleteDeadLetter(
        dev.baton.v1.DeleteDeadLetterRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getDeleteDeadLetterMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Purge runs one pass of the auto-purge now over every queue, pool and receiver and lists what it
     * purged and why; with dry_run it changes nothing and lists the same.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.PurgeResponse> purge(
        dev.baton.v1.PurgeRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getPurgeMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * SetLimits replaces a queue's flow-control limits: at most `concurrency` leases held at once
     * across the whole fleet, at most `rate` grants (a token bucket on the Redis clock). Enforced
     * in the acquire script, on every replica, for every worker; they take effect at the next
     * Acquire (leases already held are never taken back). An absent limit is no limit; a queue
     * with no limits pays one hash read per Acquire. With a rate limit, a Complete with
     * THROTTLED and a retry_after empties the queue's bucket for that long (the service said to
     * back off, so the whole queue does). The response says what is stored. A sharded queue
     * cannot take limits (FAILED_PRECONDITION, reason UNSUPPORTED). GetHealth shows the limits.
     * A queue nothing was ever registered in is NOT_FOUND (a typo changes nothing), unless
     * `create` declares it: see SetLimitsRequest.create. A queue joins a shared concurrency group
     * (SetGroupLimits) with `limits.group`; on a Redis Cluster that is FAILED_PRECONDITION.
     * Only a limit on keys' concurrency (key_concurrency, or a key's own, SetKeyLimits) counts the
     * leases each key holds: a key_concurrency set where nothing counted them recounts the leases
     * held (as RecountKeys) before the call answers, so it binds on what is held already; removed
     * where nothing else counts them, the counts are dropped.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.SetLimitsResponse> setLimits(
        dev.baton.v1.SetLimitsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getSetLimitsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * SetKeyLimits replaces one key's weight and overrides in a queue (Agent.key): its share of the
     * fair queuing across keys, and its own key_concurrency and key_rate in place of the queue's.
     * Enforced in the acquire script like SetLimits, from the next Acquire on; a weight applies to
     * the key's agents that become due after it (agents already in dispatch order keep their
     * turn). Absent (or default) limits remove the key's record: the key takes the queue's
     * defaults again. Any key may be named, with agents or none yet. A sharded queue refuses it
     * (FAILED_PRECONDITION, reason UNSUPPORTED). Invalid fields: INVALID_ARGUMENT naming the
     * field, and nothing changes. A queue with any key's record counts the leases each key holds
     * (see SetLimits): the first record recounts them before the call answers, and the last one
     * removed (without key_concurrency) drops the counts.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.SetKeyLimitsResponse> setKeyLimits(
        dev.baton.v1.SetKeyLimitsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getSetKeyLimitsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * GetKeyLimits reads one key's weight and overrides (the defaults when it has none) and the
     * leases it holds now (counted only while the queue limits keys' concurrency: see
     * KeyLimitsEntry.held).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.GetKeyLimitsResponse> getKeyLimits(
        dev.baton.v1.GetKeyLimitsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetKeyLimitsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * ListKeyLimits pages through the keys of a queue that have a weight or overrides, in key
     * order (byte order).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.ListKeyLimitsResponse> listKeyLimits(
        dev.baton.v1.ListKeyLimitsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListKeyLimitsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * SetGroupLimits creates or replaces a shared concurrency group: limits that hold over every
     * queue that joins it (QueueLimits.group) together, enforced in the acquire script on every
     * replica like SetLimits: at most `concurrency` leases held at once over all member queues, a
     * token bucket of `rate` grants over all of them, and at most `key_concurrency` leases per
     * Agent.key over all of them. A queue's own limits still apply too. A lease counts in the group
     * it was granted under until it ends (complete, release, reap, a cancelled run), even if its
     * queue leaves or changes group meanwhile; a place freed in one member queue wakes the waiting
     * Acquires of every member. Member queues held back by the group are woken to look again. A
     * group is never removed; absent limits make it unlimited. Invalid fields: INVALID_ARGUMENT
     * naming the field, and nothing changes. On a Redis Cluster a group can be set but no queue
     * can join it (see QueueLimits.group).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.SetGroupLimitsResponse> setGroupLimits(
        dev.baton.v1.SetGroupLimitsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getSetGroupLimitsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * GetGroupLimits reads a group's limits and the leases held under it now. NOT_FOUND if it was
     * never set.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.GetGroupLimitsResponse> getGroupLimits(
        dev.baton.v1.GetGroupLimitsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetGroupLimitsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * ListGroupLimits pages through the groups in name order (byte order).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.ListGroupLimitsResponse> listGroupLimits(
        dev.baton.v1.ListGroupLimitsRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListGroupLimitsMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * RecountKeys recounts the leases each key of a queue holds from the lease records and
     * corrects the counts key_concurrency is enforced against (they can drift when a replica of
     * an older version ended leases, or after a hand edit of Redis). It works in bounded steps
     * while Acquires and Completes go on, and is right with them (see ARCHITECTURE.md); a recount
     * left unfinished (the call cancelled) is resumed by the next one. Every shard of a sharded
     * queue. On a queue that counts no key's leases (no key_concurrency, no key's record) it
     * drops any count left (corrected: the counts dropped).
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.RecountKeysResponse> recountKeys(
        dev.baton.v1.RecountKeysRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getRecountKeysMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Pause stops handing out a queue's agents, a pool's resources or a receiver's messages
     * (every shard of a sharded one): Acquire and sessions grant nothing and long polls keep
     * waiting; Claim hands out nothing (a claim with a wait waits in line, and resources offered
     * or returned meanwhile stay idle); Subscribe and Receive streams deliver nothing (expired
     * deliveries still come back to be delivered later). What waits stays, and producers can
     * still add work. Held leases, claims and in-flight messages finish as usual. GetHealth shows
     * `paused`. A source nothing was ever registered, offered or scheduled in is NOT_FOUND (a typo
     * changes nothing), unless `create` declares it: see PauseRequest.create.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.PauseResponse> pause(
        dev.baton.v1.PauseRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getPauseMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Resume undoes Pause and wakes whatever waits on the source; a pool's idle resources are
     * handed to the claims waiting in line, oldest first. NOT_FOUND for an unknown source, as
     * Pause, unless `create` declares it.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.ResumeResponse> resume(
        dev.baton.v1.ResumeRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getResumeMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_GET_HEALTH = 0;
  private static final int METHODID_LIST_DEAD_LETTERS = 1;
  private static final int METHODID_RETRY_DEAD_LETTER = 2;
  private static final int METHODID_DELETE_DEAD_LETTER = 3;
  private static final int METHODID_PURGE = 4;
  private static final int METHODID_SET_LIMITS = 5;
  private static final int METHODID_SET_KEY_LIMITS = 6;
  private static final int METHODID_GET_KEY_LIMITS = 7;
  private static final int METHODID_LIST_KEY_LIMITS = 8;
  private static final int METHODID_SET_GROUP_LIMITS = 9;
  private static final int METHODID_GET_GROUP_LIMITS = 10;
  private static final int METHODID_LIST_GROUP_LIMITS = 11;
  private static final int METHODID_RECOUNT_KEYS = 12;
  private static final int METHODID_PAUSE = 13;
  private static final int METHODID_RESUME = 14;

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
        case METHODID_GET_HEALTH:
          serviceImpl.getHealth((dev.baton.v1.GetHealthRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.GetHealthResponse>) responseObserver);
          break;
        case METHODID_LIST_DEAD_LETTERS:
          serviceImpl.listDeadLetters((dev.baton.v1.ListDeadLettersRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.ListDeadLettersResponse>) responseObserver);
          break;
        case METHODID_RETRY_DEAD_LETTER:
          serviceImpl.retryDeadLetter((dev.baton.v1.RetryDeadLetterRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.RetryDeadLetterResponse>) responseObserver);
          break;
        case METHODID_DELETE_DEAD_LETTER:
          serviceImpl.deleteDeadLetter((dev.baton.v1.DeleteDeadLetterRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.DeleteDeadLetterResponse>) responseObserver);
          break;
        case METHODID_PURGE:
          serviceImpl.purge((dev.baton.v1.PurgeRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.PurgeResponse>) responseObserver);
          break;
        case METHODID_SET_LIMITS:
          serviceImpl.setLimits((dev.baton.v1.SetLimitsRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.SetLimitsResponse>) responseObserver);
          break;
        case METHODID_SET_KEY_LIMITS:
          serviceImpl.setKeyLimits((dev.baton.v1.SetKeyLimitsRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.SetKeyLimitsResponse>) responseObserver);
          break;
        case METHODID_GET_KEY_LIMITS:
          serviceImpl.getKeyLimits((dev.baton.v1.GetKeyLimitsRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.GetKeyLimitsResponse>) responseObserver);
          break;
        case METHODID_LIST_KEY_LIMITS:
          serviceImpl.listKeyLimits((dev.baton.v1.ListKeyLimitsRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.ListKeyLimitsResponse>) responseObserver);
          break;
        case METHODID_SET_GROUP_LIMITS:
          serviceImpl.setGroupLimits((dev.baton.v1.SetGroupLimitsRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.SetGroupLimitsResponse>) responseObserver);
          break;
        case METHODID_GET_GROUP_LIMITS:
          serviceImpl.getGroupLimits((dev.baton.v1.GetGroupLimitsRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.GetGroupLimitsResponse>) responseObserver);
          break;
        case METHODID_LIST_GROUP_LIMITS:
          serviceImpl.listGroupLimits((dev.baton.v1.ListGroupLimitsRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.ListGroupLimitsResponse>) responseObserver);
          break;
        case METHODID_RECOUNT_KEYS:
          serviceImpl.recountKeys((dev.baton.v1.RecountKeysRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.RecountKeysResponse>) responseObserver);
          break;
        case METHODID_PAUSE:
          serviceImpl.pause((dev.baton.v1.PauseRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.PauseResponse>) responseObserver);
          break;
        case METHODID_RESUME:
          serviceImpl.resume((dev.baton.v1.ResumeRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.ResumeResponse>) responseObserver);
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
          getGetHealthMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.GetHealthRequest,
              dev.baton.v1.GetHealthResponse>(
                service, METHODID_GET_HEALTH)))
        .addMethod(
          getListDeadLettersMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.ListDeadLettersRequest,
              dev.baton.v1.ListDeadLettersResponse>(
                service, METHODID_LIST_DEAD_LETTERS)))
        .addMethod(
          getRetryDeadLetterMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.RetryDeadLetterRequest,
              dev.baton.v1.RetryDeadLetterResponse>(
                service, METHODID_RETRY_DEAD_LETTER)))
        .addMethod(
          getDeleteDeadLetterMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.DeleteDeadLetterRequest,
              dev.baton.v1.DeleteDeadLetterResponse>(
                service, METHODID_DELETE_DEAD_LETTER)))
        .addMethod(
          getPurgeMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.PurgeRequest,
              dev.baton.v1.PurgeResponse>(
                service, METHODID_PURGE)))
        .addMethod(
          getSetLimitsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.SetLimitsRequest,
              dev.baton.v1.SetLimitsResponse>(
                service, METHODID_SET_LIMITS)))
        .addMethod(
          getSetKeyLimitsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.SetKeyLimitsRequest,
              dev.baton.v1.SetKeyLimitsResponse>(
                service, METHODID_SET_KEY_LIMITS)))
        .addMethod(
          getGetKeyLimitsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.GetKeyLimitsRequest,
              dev.baton.v1.GetKeyLimitsResponse>(
                service, METHODID_GET_KEY_LIMITS)))
        .addMethod(
          getListKeyLimitsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.ListKeyLimitsRequest,
              dev.baton.v1.ListKeyLimitsResponse>(
                service, METHODID_LIST_KEY_LIMITS)))
        .addMethod(
          getSetGroupLimitsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.SetGroupLimitsRequest,
              dev.baton.v1.SetGroupLimitsResponse>(
                service, METHODID_SET_GROUP_LIMITS)))
        .addMethod(
          getGetGroupLimitsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.GetGroupLimitsRequest,
              dev.baton.v1.GetGroupLimitsResponse>(
                service, METHODID_GET_GROUP_LIMITS)))
        .addMethod(
          getListGroupLimitsMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.ListGroupLimitsRequest,
              dev.baton.v1.ListGroupLimitsResponse>(
                service, METHODID_LIST_GROUP_LIMITS)))
        .addMethod(
          getRecountKeysMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.RecountKeysRequest,
              dev.baton.v1.RecountKeysResponse>(
                service, METHODID_RECOUNT_KEYS)))
        .addMethod(
          getPauseMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.PauseRequest,
              dev.baton.v1.PauseResponse>(
                service, METHODID_PAUSE)))
        .addMethod(
          getResumeMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.ResumeRequest,
              dev.baton.v1.ResumeResponse>(
                service, METHODID_RESUME)))
        .build();
  }

  private static abstract class AdminServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    AdminServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.baton.v1.AdminProto.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("AdminService");
    }
  }

  private static final class AdminServiceFileDescriptorSupplier
      extends AdminServiceBaseDescriptorSupplier {
    AdminServiceFileDescriptorSupplier() {}
  }

  private static final class AdminServiceMethodDescriptorSupplier
      extends AdminServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    AdminServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (AdminServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new AdminServiceFileDescriptorSupplier())
              .addMethod(getGetHealthMethod())
              .addMethod(getListDeadLettersMethod())
              .addMethod(getRetryDeadLetterMethod())
              .addMethod(getDeleteDeadLetterMethod())
              .addMethod(getPurgeMethod())
              .addMethod(getSetLimitsMethod())
              .addMethod(getSetKeyLimitsMethod())
              .addMethod(getGetKeyLimitsMethod())
              .addMethod(getListKeyLimitsMethod())
              .addMethod(getSetGroupLimitsMethod())
              .addMethod(getGetGroupLimitsMethod())
              .addMethod(getListGroupLimitsMethod())
              .addMethod(getRecountKeysMethod())
              .addMethod(getPauseMethod())
              .addMethod(getResumeMethod())
              .build();
        }
      }
    }
    return result;
  }
}

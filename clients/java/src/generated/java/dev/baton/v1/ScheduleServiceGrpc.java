package dev.baton.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * ScheduleService delivers durable delayed messages to named receivers, at least once, even
 * after the death of any Baton replica: every message lives in Redis until it is acked.
 * A message is scheduled (waiting for its time), in flight (delivered to one consumer, waiting
 * for its Ack), or dead-lettered (after too many deliveries). A delivered message not acked
 * within the ack timeout is delivered again, to any consumer, with a higher delivery count and
 * a new token. Nobody subscribed: messages wait, and go out when a consumer subscribes.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class ScheduleServiceGrpc {

  private ScheduleServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "baton.v1.ScheduleService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.ScheduleRequest,
      dev.baton.v1.ScheduleResponse> getScheduleMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Schedule",
      requestType = dev.baton.v1.ScheduleRequest.class,
      responseType = dev.baton.v1.ScheduleResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.ScheduleRequest,
      dev.baton.v1.ScheduleResponse> getScheduleMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.ScheduleRequest, dev.baton.v1.ScheduleResponse> getScheduleMethod;
    if ((getScheduleMethod = ScheduleServiceGrpc.getScheduleMethod) == null) {
      synchronized (ScheduleServiceGrpc.class) {
        if ((getScheduleMethod = ScheduleServiceGrpc.getScheduleMethod) == null) {
          ScheduleServiceGrpc.getScheduleMethod = getScheduleMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.ScheduleRequest, dev.baton.v1.ScheduleResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Schedule"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ScheduleRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ScheduleResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScheduleServiceMethodDescriptorSupplier("Schedule"))
              .build();
        }
      }
    }
    return getScheduleMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.ScheduleBatchRequest,
      dev.baton.v1.ScheduleBatchResponse> getScheduleBatchMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ScheduleBatch",
      requestType = dev.baton.v1.ScheduleBatchRequest.class,
      responseType = dev.baton.v1.ScheduleBatchResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.ScheduleBatchRequest,
      dev.baton.v1.ScheduleBatchResponse> getScheduleBatchMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.ScheduleBatchRequest, dev.baton.v1.ScheduleBatchResponse> getScheduleBatchMethod;
    if ((getScheduleBatchMethod = ScheduleServiceGrpc.getScheduleBatchMethod) == null) {
      synchronized (ScheduleServiceGrpc.class) {
        if ((getScheduleBatchMethod = ScheduleServiceGrpc.getScheduleBatchMethod) == null) {
          ScheduleServiceGrpc.getScheduleBatchMethod = getScheduleBatchMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.ScheduleBatchRequest, dev.baton.v1.ScheduleBatchResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ScheduleBatch"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ScheduleBatchRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ScheduleBatchResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScheduleServiceMethodDescriptorSupplier("ScheduleBatch"))
              .build();
        }
      }
    }
    return getScheduleBatchMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.SubscribeRequest,
      dev.baton.v1.SubscribeResponse> getSubscribeMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Subscribe",
      requestType = dev.baton.v1.SubscribeRequest.class,
      responseType = dev.baton.v1.SubscribeResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
  public static io.grpc.MethodDescriptor<dev.baton.v1.SubscribeRequest,
      dev.baton.v1.SubscribeResponse> getSubscribeMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.SubscribeRequest, dev.baton.v1.SubscribeResponse> getSubscribeMethod;
    if ((getSubscribeMethod = ScheduleServiceGrpc.getSubscribeMethod) == null) {
      synchronized (ScheduleServiceGrpc.class) {
        if ((getSubscribeMethod = ScheduleServiceGrpc.getSubscribeMethod) == null) {
          ScheduleServiceGrpc.getSubscribeMethod = getSubscribeMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.SubscribeRequest, dev.baton.v1.SubscribeResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.SERVER_STREAMING)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Subscribe"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.SubscribeRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.SubscribeResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScheduleServiceMethodDescriptorSupplier("Subscribe"))
              .build();
        }
      }
    }
    return getSubscribeMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.ReceiveRequest,
      dev.baton.v1.ReceiveResponse> getReceiveMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Receive",
      requestType = dev.baton.v1.ReceiveRequest.class,
      responseType = dev.baton.v1.ReceiveResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.BIDI_STREAMING)
  public static io.grpc.MethodDescriptor<dev.baton.v1.ReceiveRequest,
      dev.baton.v1.ReceiveResponse> getReceiveMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.ReceiveRequest, dev.baton.v1.ReceiveResponse> getReceiveMethod;
    if ((getReceiveMethod = ScheduleServiceGrpc.getReceiveMethod) == null) {
      synchronized (ScheduleServiceGrpc.class) {
        if ((getReceiveMethod = ScheduleServiceGrpc.getReceiveMethod) == null) {
          ScheduleServiceGrpc.getReceiveMethod = getReceiveMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.ReceiveRequest, dev.baton.v1.ReceiveResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.BIDI_STREAMING)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Receive"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ReceiveRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ReceiveResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScheduleServiceMethodDescriptorSupplier("Receive"))
              .build();
        }
      }
    }
    return getReceiveMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.AckRequest,
      dev.baton.v1.AckResponse> getAckMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Ack",
      requestType = dev.baton.v1.AckRequest.class,
      responseType = dev.baton.v1.AckResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.AckRequest,
      dev.baton.v1.AckResponse> getAckMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.AckRequest, dev.baton.v1.AckResponse> getAckMethod;
    if ((getAckMethod = ScheduleServiceGrpc.getAckMethod) == null) {
      synchronized (ScheduleServiceGrpc.class) {
        if ((getAckMethod = ScheduleServiceGrpc.getAckMethod) == null) {
          ScheduleServiceGrpc.getAckMethod = getAckMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.AckRequest, dev.baton.v1.AckResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Ack"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.AckRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.AckResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScheduleServiceMethodDescriptorSupplier("Ack"))
              .build();
        }
      }
    }
    return getAckMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.AckBatchRequest,
      dev.baton.v1.AckBatchResponse> getAckBatchMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "AckBatch",
      requestType = dev.baton.v1.AckBatchRequest.class,
      responseType = dev.baton.v1.AckBatchResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.AckBatchRequest,
      dev.baton.v1.AckBatchResponse> getAckBatchMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.AckBatchRequest, dev.baton.v1.AckBatchResponse> getAckBatchMethod;
    if ((getAckBatchMethod = ScheduleServiceGrpc.getAckBatchMethod) == null) {
      synchronized (ScheduleServiceGrpc.class) {
        if ((getAckBatchMethod = ScheduleServiceGrpc.getAckBatchMethod) == null) {
          ScheduleServiceGrpc.getAckBatchMethod = getAckBatchMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.AckBatchRequest, dev.baton.v1.AckBatchResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "AckBatch"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.AckBatchRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.AckBatchResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScheduleServiceMethodDescriptorSupplier("AckBatch"))
              .build();
        }
      }
    }
    return getAckBatchMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.CancelRequest,
      dev.baton.v1.CancelResponse> getCancelMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "Cancel",
      requestType = dev.baton.v1.CancelRequest.class,
      responseType = dev.baton.v1.CancelResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.CancelRequest,
      dev.baton.v1.CancelResponse> getCancelMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.CancelRequest, dev.baton.v1.CancelResponse> getCancelMethod;
    if ((getCancelMethod = ScheduleServiceGrpc.getCancelMethod) == null) {
      synchronized (ScheduleServiceGrpc.class) {
        if ((getCancelMethod = ScheduleServiceGrpc.getCancelMethod) == null) {
          ScheduleServiceGrpc.getCancelMethod = getCancelMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.CancelRequest, dev.baton.v1.CancelResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "Cancel"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.CancelRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.CancelResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScheduleServiceMethodDescriptorSupplier("Cancel"))
              .build();
        }
      }
    }
    return getCancelMethod;
  }

  private static volatile io.grpc.MethodDescriptor<dev.baton.v1.ListMessagesRequest,
      dev.baton.v1.ListMessagesResponse> getListMessagesMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListMessages",
      requestType = dev.baton.v1.ListMessagesRequest.class,
      responseType = dev.baton.v1.ListMessagesResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<dev.baton.v1.ListMessagesRequest,
      dev.baton.v1.ListMessagesResponse> getListMessagesMethod() {
    io.grpc.MethodDescriptor<dev.baton.v1.ListMessagesRequest, dev.baton.v1.ListMessagesResponse> getListMessagesMethod;
    if ((getListMessagesMethod = ScheduleServiceGrpc.getListMessagesMethod) == null) {
      synchronized (ScheduleServiceGrpc.class) {
        if ((getListMessagesMethod = ScheduleServiceGrpc.getListMessagesMethod) == null) {
          ScheduleServiceGrpc.getListMessagesMethod = getListMessagesMethod =
              io.grpc.MethodDescriptor.<dev.baton.v1.ListMessagesRequest, dev.baton.v1.ListMessagesResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListMessages"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ListMessagesRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  dev.baton.v1.ListMessagesResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ScheduleServiceMethodDescriptorSupplier("ListMessages"))
              .build();
        }
      }
    }
    return getListMessagesMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static ScheduleServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ScheduleServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ScheduleServiceStub>() {
        @java.lang.Override
        public ScheduleServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ScheduleServiceStub(channel, callOptions);
        }
      };
    return ScheduleServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static ScheduleServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ScheduleServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ScheduleServiceBlockingV2Stub>() {
        @java.lang.Override
        public ScheduleServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ScheduleServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return ScheduleServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static ScheduleServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ScheduleServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ScheduleServiceBlockingStub>() {
        @java.lang.Override
        public ScheduleServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ScheduleServiceBlockingStub(channel, callOptions);
        }
      };
    return ScheduleServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static ScheduleServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ScheduleServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ScheduleServiceFutureStub>() {
        @java.lang.Override
        public ScheduleServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ScheduleServiceFutureStub(channel, callOptions);
        }
      };
    return ScheduleServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * ScheduleService delivers durable delayed messages to named receivers, at least once, even
   * after the death of any Baton replica: every message lives in Redis until it is acked.
   * A message is scheduled (waiting for its time), in flight (delivered to one consumer, waiting
   * for its Ack), or dead-lettered (after too many deliveries). A delivered message not acked
   * within the ack timeout is delivered again, to any consumer, with a higher delivery count and
   * a new token. Nobody subscribed: messages wait, and go out when a consumer subscribes.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * Schedule persists a message for delivery at deliver_at (or after delay; in the past or
     * absent: at once) and returns its id. With a key, scheduling again while the first message is
     * not yet acked returns the first message's id and changes nothing; with a key_window, so does
     * scheduling again within that window, also after the first message was delivered, acked,
     * cancelled or dead-lettered.
     * </pre>
     */
    default void schedule(dev.baton.v1.ScheduleRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ScheduleResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getScheduleMethod(), responseObserver);
    }

    /**
     * <pre>
     * ScheduleBatch persists many messages in one call, each as Schedule would; the answers are
     * in request order. An invalid item rejects the whole call (INVALID_ARGUMENT naming it)
     * before anything is scheduled.
     * </pre>
     */
    default void scheduleBatch(dev.baton.v1.ScheduleBatchRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ScheduleBatchResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getScheduleBatchMethod(), responseObserver);
    }

    /**
     * <pre>
     * Subscribe streams the receiver's due messages to this consumer, never more than
     * max_in_flight unacked at once. Several consumers of one receiver share its messages; a
     * message is in flight at one consumer at a time. The stream ends cleanly when the server
     * shuts down; what was in flight is delivered again after the ack timeout.
     * </pre>
     */
    default void subscribe(dev.baton.v1.SubscribeRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.SubscribeResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getSubscribeMethod(), responseObserver);
    }

    /**
     * <pre>
     * Receive is a consumer's hot path: Subscribe and Ack on one bidirectional stream. The
     * server pushes due messages; the consumer streams acks back, and the server applies them in
     * batches.
     * Flow control is the in-flight bound, as in Subscribe: the first ReceiveRequest carries open
     * (receiver, consumer_id, max_in_flight, at most max_batch); the server never has more than
     * max_in_flight of this consumer's messages unacked, counted in Redis. Every ack the server
     * applies frees one place, and the server pushes the next due message into it at once (no
     * polling: it waits on the receiver's wake-ups and the earliest due time). Several messages
     * due together travel in one ReceiveResponse.
     * Acks are coalesced: everything that arrived while the previous batch ran goes to Redis in
     * one script per receiver shard. Each is answered on the stream (acked, or lost: the token
     * is stale, as Ack's LEASE_LOST, and that ack changed nothing; the stream goes on).
     * Messages are the consumer's whatever happens to the stream: when it breaks or ends, what
     * was in flight is delivered again after the ack timeout. Ending the request stream
     * (half-close) is a graceful end: the server applies the acks it received, answers them, and
     * closes the stream. The stream ends cleanly when the server shuts down, after the same. A bad
     * first message or an invalid ack ends the stream with INVALID_ARGUMENT naming the field,
     * after the acks before it are applied and answered.
     * </pre>
     */
    default io.grpc.stub.StreamObserver<dev.baton.v1.ReceiveRequest> receive(
        io.grpc.stub.StreamObserver<dev.baton.v1.ReceiveResponse> responseObserver) {
      return io.grpc.stub.ServerCalls.asyncUnimplementedStreamingCall(getReceiveMethod(), responseObserver);
    }

    /**
     * <pre>
     * Ack ends a delivered message for good. A stale token (the message was delivered again since,
     * or already acked) is FAILED_PRECONDITION (LEASE_LOST) and changes nothing.
     * </pre>
     */
    default void ack(dev.baton.v1.AckRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.AckResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getAckMethod(), responseObserver);
    }

    /**
     * <pre>
     * AckBatch ends many delivered messages in one call. Each item has its own result, in request
     * order: a stale token is lease_lost on that item only and changes nothing.
     * </pre>
     */
    default void ackBatch(dev.baton.v1.AckBatchRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.AckBatchResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getAckBatchMethod(), responseObserver);
    }

    /**
     * <pre>
     * Cancel removes a scheduled or in-flight message. NOT_FOUND if there is no such message.
     * </pre>
     */
    default void cancel(dev.baton.v1.CancelRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.CancelResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getCancelMethod(), responseObserver);
    }

    /**
     * <pre>
     * ListMessages pages through a receiver's messages: the scheduled ones by delivery time, then
     * (or only, as state asks) the in-flight ones by ack deadline, each with its delivery count,
     * key, payload size and first bytes, and while in flight its consumer and token. Read-only;
     * each page costs Redis the page, whatever the receiver holds. Pages are by rank: a message
     * delivered, acked or scheduled between two pages may be skipped or shown twice. NOT_FOUND
     * for a receiver nothing was ever scheduled to.
     * </pre>
     */
    default void listMessages(dev.baton.v1.ListMessagesRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ListMessagesResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListMessagesMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service ScheduleService.
   * <pre>
   * ScheduleService delivers durable delayed messages to named receivers, at least once, even
   * after the death of any Baton replica: every message lives in Redis until it is acked.
   * A message is scheduled (waiting for its time), in flight (delivered to one consumer, waiting
   * for its Ack), or dead-lettered (after too many deliveries). A delivered message not acked
   * within the ack timeout is delivered again, to any consumer, with a higher delivery count and
   * a new token. Nobody subscribed: messages wait, and go out when a consumer subscribes.
   * </pre>
   */
  public static abstract class ScheduleServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return ScheduleServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service ScheduleService.
   * <pre>
   * ScheduleService delivers durable delayed messages to named receivers, at least once, even
   * after the death of any Baton replica: every message lives in Redis until it is acked.
   * A message is scheduled (waiting for its time), in flight (delivered to one consumer, waiting
   * for its Ack), or dead-lettered (after too many deliveries). A delivered message not acked
   * within the ack timeout is delivered again, to any consumer, with a higher delivery count and
   * a new token. Nobody subscribed: messages wait, and go out when a consumer subscribes.
   * </pre>
   */
  public static final class ScheduleServiceStub
      extends io.grpc.stub.AbstractAsyncStub<ScheduleServiceStub> {
    private ScheduleServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ScheduleServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ScheduleServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * Schedule persists a message for delivery at deliver_at (or after delay; in the past or
     * absent: at once) and returns its id. With a key, scheduling again while the first message is
     * not yet acked returns the first message's id and changes nothing; with a key_window, so does
     * scheduling again within that window, also after the first message was delivered, acked,
     * cancelled or dead-lettered.
     * </pre>
     */
    public void schedule(dev.baton.v1.ScheduleRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ScheduleResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getScheduleMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * ScheduleBatch persists many messages in one call, each as Schedule would; the answers are
     * in request order. An invalid item rejects the whole call (INVALID_ARGUMENT naming it)
     * before anything is scheduled.
     * </pre>
     */
    public void scheduleBatch(dev.baton.v1.ScheduleBatchRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ScheduleBatchResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getScheduleBatchMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Subscribe streams the receiver's due messages to this consumer, never more than
     * max_in_flight unacked at once. Several consumers of one receiver share its messages; a
     * message is in flight at one consumer at a time. The stream ends cleanly when the server
     * shuts down; what was in flight is delivered again after the ack timeout.
     * </pre>
     */
    public void subscribe(dev.baton.v1.SubscribeRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.SubscribeResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncServerStreamingCall(
          getChannel().newCall(getSubscribeMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Receive is a consumer's hot path: Subscribe and Ack on one bidirectional stream. The
     * server pushes due messages; the consumer streams acks back, and the server applies them in
     * batches.
     * Flow control is the in-flight bound, as in Subscribe: the first ReceiveRequest carries open
     * (receiver, consumer_id, max_in_flight, at most max_batch); the server never has more than
     * max_in_flight of this consumer's messages unacked, counted in Redis. Every ack the server
     * applies frees one place, and the server pushes the next due message into it at once (no
     * polling: it waits on the receiver's wake-ups and the earliest due time). Several messages
     * due together travel in one ReceiveResponse.
     * Acks are coalesced: everything that arrived while the previous batch ran goes to Redis in
     * one script per receiver shard. Each is answered on the stream (acked, or lost: the token
     * is stale, as Ack's LEASE_LOST, and that ack changed nothing; the stream goes on).
     * Messages are the consumer's whatever happens to the stream: when it breaks or ends, what
     * was in flight is delivered again after the ack timeout. Ending the request stream
     * (half-close) is a graceful end: the server applies the acks it received, answers them, and
     * closes the stream. The stream ends cleanly when the server shuts down, after the same. A bad
     * first message or an invalid ack ends the stream with INVALID_ARGUMENT naming the field,
     * after the acks before it are applied and answered.
     * </pre>
     */
    public io.grpc.stub.StreamObserver<dev.baton.v1.ReceiveRequest> receive(
        io.grpc.stub.StreamObserver<dev.baton.v1.ReceiveResponse> responseObserver) {
      return io.grpc.stub.ClientCalls.asyncBidiStreamingCall(
          getChannel().newCall(getReceiveMethod(), getCallOptions()), responseObserver);
    }

    /**
     * <pre>
     * Ack ends a delivered message for good. A stale token (the message was delivered again since,
     * or already acked) is FAILED_PRECONDITION (LEASE_LOST) and changes nothing.
     * </pre>
     */
    public void ack(dev.baton.v1.AckRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.AckResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getAckMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * AckBatch ends many delivered messages in one call. Each item has its own result, in request
     * order: a stale token is lease_lost on that item only and changes nothing.
     * </pre>
     */
    public void ackBatch(dev.baton.v1.AckBatchRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.AckBatchResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getAckBatchMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Cancel removes a scheduled or in-flight message. NOT_FOUND if there is no such message.
     * </pre>
     */
    public void cancel(dev.baton.v1.CancelRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.CancelResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getCancelMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * ListMessages pages through a receiver's messages: the scheduled ones by delivery time, then
     * (or only, as state asks) the in-flight ones by ack deadline, each with its delivery count,
     * key, payload size and first bytes, and while in flight its consumer and token. Read-only;
     * each page costs Redis the page, whatever the receiver holds. Pages are by rank: a message
     * delivered, acked or scheduled between two pages may be skipped or shown twice. NOT_FOUND
     * for a receiver nothing was ever scheduled to.
     * </pre>
     */
    public void listMessages(dev.baton.v1.ListMessagesRequest request,
        io.grpc.stub.StreamObserver<dev.baton.v1.ListMessagesResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListMessagesMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service ScheduleService.
   * <pre>
   * ScheduleService delivers durable delayed messages to named receivers, at least once, even
   * after the death of any Baton replica: every message lives in Redis until it is acked.
   * A message is scheduled (waiting for its time), in flight (delivered to one consumer, waiting
   * for its Ack), or dead-lettered (after too many deliveries). A delivered message not acked
   * within the ack timeout is delivered again, to any consumer, with a higher delivery count and
   * a new token. Nobody subscribed: messages wait, and go out when a consumer subscribes.
   * </pre>
   */
  public static final class ScheduleServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<ScheduleServiceBlockingV2Stub> {
    private ScheduleServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ScheduleServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ScheduleServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * Schedule persists a message for delivery at deliver_at (or after delay; in the past or
     * absent: at once) and returns its id. With a key, scheduling again while the first message is
     * not yet acked returns the first message's id and changes nothing; with a key_window, so does
     * scheduling again within that window, also after the first message was delivered, acked,
     * cancelled or dead-lettered.
     * </pre>
     */
    public dev.baton.v1.ScheduleResponse schedule(dev.baton.v1.ScheduleRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getScheduleMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ScheduleBatch persists many messages in one call, each as Schedule would; the answers are
     * in request order. An invalid item rejects the whole call (INVALID_ARGUMENT naming it)
     * before anything is scheduled.
     * </pre>
     */
    public dev.baton.v1.ScheduleBatchResponse scheduleBatch(dev.baton.v1.ScheduleBatchRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getScheduleBatchMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Subscribe streams the receiver's due messages to this consumer, never more than
     * max_in_flight unacked at once. Several consumers of one receiver share its messages; a
     * message is in flight at one consumer at a time. The stream ends cleanly when the server
     * shuts down; what was in flight is delivered again after the ack timeout.
     * </pre>
     */
    @io.grpc.ExperimentalApi("https://github.com/grpc/grpc-java/issues/10918")
    public io.grpc.stub.BlockingClientCall<?, dev.baton.v1.SubscribeResponse>
        subscribe(dev.baton.v1.SubscribeRequest request) {
      return io.grpc.stub.ClientCalls.blockingV2ServerStreamingCall(
          getChannel(), getSubscribeMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Receive is a consumer's hot path: Subscribe and Ack on one bidirectional stream. The
     * server pushes due messages; the consumer streams acks back, and the server applies them in
     * batches.
     * Flow control is the in-flight bound, as in Subscribe: the first ReceiveRequest carries open
     * (receiver, consumer_id, max_in_flight, at most max_batch); the server never has more than
     * max_in_flight of this consumer's messages unacked, counted in Redis. Every ack the server
     * applies frees one place, and the server pushes the next due message into it at once (no
     * polling: it waits on the receiver's wake-ups and the earliest due time). Several messages
     * due together travel in one ReceiveResponse.
     * Acks are coalesced: everything that arrived while the previous batch ran goes to Redis in
     * one script per receiver shard. Each is answered on the stream (acked, or lost: the token
     * is stale, as Ack's LEASE_LOST, and that ack changed nothing; the stream goes on).
     * Messages are the consumer's whatever happens to the stream: when it breaks or ends, what
     * was in flight is delivered again after the ack timeout. Ending the request stream
     * (half-close) is a graceful end: the server applies the acks it received, answers them, and
     * closes the stream. The stream ends cleanly when the server shuts down, after the same. A bad
     * first message or an invalid ack ends the stream with INVALID_ARGUMENT naming the field,
     * after the acks before it are applied and answered.
     * </pre>
     */
    @io.grpc.ExperimentalApi("https://github.com/grpc/grpc-java/issues/10918")
    public io.grpc.stub.BlockingClientCall<dev.baton.v1.ReceiveRequest, dev.baton.v1.ReceiveResponse>
        receive() {
      return io.grpc.stub.ClientCalls.blockingBidiStreamingCall(
          getChannel(), getReceiveMethod(), getCallOptions());
    }

    /**
     * <pre>
     * Ack ends a delivered message for good. A stale token (the message was delivered again since,
     * or already acked) is FAILED_PRECONDITION (LEASE_LOST) and changes nothing.
     * </pre>
     */
    public dev.baton.v1.AckResponse ack(dev.baton.v1.AckRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getAckMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * AckBatch ends many delivered messages in one call. Each item has its own result, in request
     * order: a stale token is lease_lost on that item only and changes nothing.
     * </pre>
     */
    public dev.baton.v1.AckBatchResponse ackBatch(dev.baton.v1.AckBatchRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getAckBatchMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Cancel removes a scheduled or in-flight message. NOT_FOUND if there is no such message.
     * </pre>
     */
    public dev.baton.v1.CancelResponse cancel(dev.baton.v1.CancelRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getCancelMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListMessages pages through a receiver's messages: the scheduled ones by delivery time, then
     * (or only, as state asks) the in-flight ones by ack deadline, each with its delivery count,
     * key, payload size and first bytes, and while in flight its consumer and token. Read-only;
     * each page costs Redis the page, whatever the receiver holds. Pages are by rank: a message
     * delivered, acked or scheduled between two pages may be skipped or shown twice. NOT_FOUND
     * for a receiver nothing was ever scheduled to.
     * </pre>
     */
    public dev.baton.v1.ListMessagesResponse listMessages(dev.baton.v1.ListMessagesRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListMessagesMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service ScheduleService.
   * <pre>
   * ScheduleService delivers durable delayed messages to named receivers, at least once, even
   * after the death of any Baton replica: every message lives in Redis until it is acked.
   * A message is scheduled (waiting for its time), in flight (delivered to one consumer, waiting
   * for its Ack), or dead-lettered (after too many deliveries). A delivered message not acked
   * within the ack timeout is delivered again, to any consumer, with a higher delivery count and
   * a new token. Nobody subscribed: messages wait, and go out when a consumer subscribes.
   * </pre>
   */
  public static final class ScheduleServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<ScheduleServiceBlockingStub> {
    private ScheduleServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ScheduleServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ScheduleServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * Schedule persists a message for delivery at deliver_at (or after delay; in the past or
     * absent: at once) and returns its id. With a key, scheduling again while the first message is
     * not yet acked returns the first message's id and changes nothing; with a key_window, so does
     * scheduling again within that window, also after the first message was delivered, acked,
     * cancelled or dead-lettered.
     * </pre>
     */
    public dev.baton.v1.ScheduleResponse schedule(dev.baton.v1.ScheduleRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getScheduleMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ScheduleBatch persists many messages in one call, each as Schedule would; the answers are
     * in request order. An invalid item rejects the whole call (INVALID_ARGUMENT naming it)
     * before anything is scheduled.
     * </pre>
     */
    public dev.baton.v1.ScheduleBatchResponse scheduleBatch(dev.baton.v1.ScheduleBatchRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getScheduleBatchMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Subscribe streams the receiver's due messages to this consumer, never more than
     * max_in_flight unacked at once. Several consumers of one receiver share its messages; a
     * message is in flight at one consumer at a time. The stream ends cleanly when the server
     * shuts down; what was in flight is delivered again after the ack timeout.
     * </pre>
     */
    public java.util.Iterator<dev.baton.v1.SubscribeResponse> subscribe(
        dev.baton.v1.SubscribeRequest request) {
      return io.grpc.stub.ClientCalls.blockingServerStreamingCall(
          getChannel(), getSubscribeMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Ack ends a delivered message for good. A stale token (the message was delivered again since,
     * or already acked) is FAILED_PRECONDITION (LEASE_LOST) and changes nothing.
     * </pre>
     */
    public dev.baton.v1.AckResponse ack(dev.baton.v1.AckRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getAckMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * AckBatch ends many delivered messages in one call. Each item has its own result, in request
     * order: a stale token is lease_lost on that item only and changes nothing.
     * </pre>
     */
    public dev.baton.v1.AckBatchResponse ackBatch(dev.baton.v1.AckBatchRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getAckBatchMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Cancel removes a scheduled or in-flight message. NOT_FOUND if there is no such message.
     * </pre>
     */
    public dev.baton.v1.CancelResponse cancel(dev.baton.v1.CancelRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getCancelMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * ListMessages pages through a receiver's messages: the scheduled ones by delivery time, then
     * (or only, as state asks) the in-flight ones by ack deadline, each with its delivery count,
     * key, payload size and first bytes, and while in flight its consumer and token. Read-only;
     * each page costs Redis the page, whatever the receiver holds. Pages are by rank: a message
     * delivered, acked or scheduled between two pages may be skipped or shown twice. NOT_FOUND
     * for a receiver nothing was ever scheduled to.
     * </pre>
     */
    public dev.baton.v1.ListMessagesResponse listMessages(dev.baton.v1.ListMessagesRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListMessagesMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service ScheduleService.
   * <pre>
   * ScheduleService delivers durable delayed messages to named receivers, at least once, even
   * after the death of any Baton replica: every message lives in Redis until it is acked.
   * A message is scheduled (waiting for its time), in flight (delivered to one consumer, waiting
   * for its Ack), or dead-lettered (after too many deliveries). A delivered message not acked
   * within the ack timeout is delivered again, to any consumer, with a higher delivery count and
   * a new token. Nobody subscribed: messages wait, and go out when a consumer subscribes.
   * </pre>
   */
  public static final class ScheduleServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<ScheduleServiceFutureStub> {
    private ScheduleServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ScheduleServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ScheduleServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * Schedule persists a message for delivery at deliver_at (or after delay; in the past or
     * absent: at once) and returns its id. With a key, scheduling again while the first message is
     * not yet acked returns the first message's id and changes nothing; with a key_window, so does
     * scheduling again within that window, also after the first message was delivered, acked,
     * cancelled or dead-lettered.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.ScheduleResponse> schedule(
        dev.baton.v1.ScheduleRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getScheduleMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * ScheduleBatch persists many messages in one call, each as Schedule would; the answers are
     * in request order. An invalid item rejects the whole call (INVALID_ARGUMENT naming it)
     * before anything is scheduled.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.ScheduleBatchResponse> scheduleBatch(
        dev.baton.v1.ScheduleBatchRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getScheduleBatchMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Ack ends a delivered message for good. A stale token (the message was delivered again since,
     * or already acked) is FAILED_PRECONDITION (LEASE_LOST) and changes nothing.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.AckResponse> ack(
        dev.baton.v1.AckRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getAckMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * AckBatch ends many delivered messages in one call. Each item has its own result, in request
     * order: a stale token is lease_lost on that item only and changes nothing.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.AckBatchResponse> ackBatch(
        dev.baton.v1.AckBatchRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getAckBatchMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Cancel removes a scheduled or in-flight message. NOT_FOUND if there is no such message.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.CancelResponse> cancel(
        dev.baton.v1.CancelRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getCancelMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * ListMessages pages through a receiver's messages: the scheduled ones by delivery time, then
     * (or only, as state asks) the in-flight ones by ack deadline, each with its delivery count,
     * key, payload size and first bytes, and while in flight its consumer and token. Read-only;
     * each page costs Redis the page, whatever the receiver holds. Pages are by rank: a message
     * delivered, acked or scheduled between two pages may be skipped or shown twice. NOT_FOUND
     * for a receiver nothing was ever scheduled to.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<dev.baton.v1.ListMessagesResponse> listMessages(
        dev.baton.v1.ListMessagesRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListMessagesMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_SCHEDULE = 0;
  private static final int METHODID_SCHEDULE_BATCH = 1;
  private static final int METHODID_SUBSCRIBE = 2;
  private static final int METHODID_ACK = 3;
  private static final int METHODID_ACK_BATCH = 4;
  private static final int METHODID_CANCEL = 5;
  private static final int METHODID_LIST_MESSAGES = 6;
  private static final int METHODID_RECEIVE = 7;

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
        case METHODID_SCHEDULE:
          serviceImpl.schedule((dev.baton.v1.ScheduleRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.ScheduleResponse>) responseObserver);
          break;
        case METHODID_SCHEDULE_BATCH:
          serviceImpl.scheduleBatch((dev.baton.v1.ScheduleBatchRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.ScheduleBatchResponse>) responseObserver);
          break;
        case METHODID_SUBSCRIBE:
          serviceImpl.subscribe((dev.baton.v1.SubscribeRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.SubscribeResponse>) responseObserver);
          break;
        case METHODID_ACK:
          serviceImpl.ack((dev.baton.v1.AckRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.AckResponse>) responseObserver);
          break;
        case METHODID_ACK_BATCH:
          serviceImpl.ackBatch((dev.baton.v1.AckBatchRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.AckBatchResponse>) responseObserver);
          break;
        case METHODID_CANCEL:
          serviceImpl.cancel((dev.baton.v1.CancelRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.CancelResponse>) responseObserver);
          break;
        case METHODID_LIST_MESSAGES:
          serviceImpl.listMessages((dev.baton.v1.ListMessagesRequest) request,
              (io.grpc.stub.StreamObserver<dev.baton.v1.ListMessagesResponse>) responseObserver);
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
        case METHODID_RECEIVE:
          return (io.grpc.stub.StreamObserver<Req>) serviceImpl.receive(
              (io.grpc.stub.StreamObserver<dev.baton.v1.ReceiveResponse>) responseObserver);
        default:
          throw new AssertionError();
      }
    }
  }

  public static final io.grpc.ServerServiceDefinition bindService(AsyncService service) {
    return io.grpc.ServerServiceDefinition.builder(getServiceDescriptor())
        .addMethod(
          getScheduleMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.ScheduleRequest,
              dev.baton.v1.ScheduleResponse>(
                service, METHODID_SCHEDULE)))
        .addMethod(
          getScheduleBatchMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.ScheduleBatchRequest,
              dev.baton.v1.ScheduleBatchResponse>(
                service, METHODID_SCHEDULE_BATCH)))
        .addMethod(
          getSubscribeMethod(),
          io.grpc.stub.ServerCalls.asyncServerStreamingCall(
            new MethodHandlers<
              dev.baton.v1.SubscribeRequest,
              dev.baton.v1.SubscribeResponse>(
                service, METHODID_SUBSCRIBE)))
        .addMethod(
          getReceiveMethod(),
          io.grpc.stub.ServerCalls.asyncBidiStreamingCall(
            new MethodHandlers<
              dev.baton.v1.ReceiveRequest,
              dev.baton.v1.ReceiveResponse>(
                service, METHODID_RECEIVE)))
        .addMethod(
          getAckMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.AckRequest,
              dev.baton.v1.AckResponse>(
                service, METHODID_ACK)))
        .addMethod(
          getAckBatchMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.AckBatchRequest,
              dev.baton.v1.AckBatchResponse>(
                service, METHODID_ACK_BATCH)))
        .addMethod(
          getCancelMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.CancelRequest,
              dev.baton.v1.CancelResponse>(
                service, METHODID_CANCEL)))
        .addMethod(
          getListMessagesMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              dev.baton.v1.ListMessagesRequest,
              dev.baton.v1.ListMessagesResponse>(
                service, METHODID_LIST_MESSAGES)))
        .build();
  }

  private static abstract class ScheduleServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    ScheduleServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return dev.baton.v1.ScheduleProto.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("ScheduleService");
    }
  }

  private static final class ScheduleServiceFileDescriptorSupplier
      extends ScheduleServiceBaseDescriptorSupplier {
    ScheduleServiceFileDescriptorSupplier() {}
  }

  private static final class ScheduleServiceMethodDescriptorSupplier
      extends ScheduleServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    ScheduleServiceMethodDescriptorSupplier(java.lang.String methodName) {
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
      synchronized (ScheduleServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new ScheduleServiceFileDescriptorSupplier())
              .addMethod(getScheduleMethod())
              .addMethod(getScheduleBatchMethod())
              .addMethod(getSubscribeMethod())
              .addMethod(getReceiveMethod())
              .addMethod(getAckMethod())
              .addMethod(getAckBatchMethod())
              .addMethod(getCancelMethod())
              .addMethod(getListMessagesMethod())
              .build();
        }
      }
    }
    return result;
  }
}

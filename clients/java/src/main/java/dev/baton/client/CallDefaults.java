package dev.baton.client;

import com.google.protobuf.Descriptors;
import com.google.protobuf.Message;
import io.grpc.Attributes;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.Context;
import io.grpc.ForwardingClientCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/** The interceptors of a {@link BatonClient}: the bearer token and the default deadline. */
final class CallDefaults {
  static final Metadata.Key<String> AUTHORIZATION = Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  private CallDefaults() {}

  /** {@code authorization: Bearer <token>} on every call, unless the call already has one. */
  static final class BearerToken implements ClientInterceptor {
    private final String value;

    BearerToken(String token) {
      this.value = "Bearer " + token;
    }

    @Override
    public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(MethodDescriptor<ReqT, RespT> method, CallOptions options, Channel next) {
      return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, options)) {
        @Override
        public void start(Listener<RespT> listener, Metadata headers) {
          if (!headers.containsKey(AUTHORIZATION)) headers.put(AUTHORIZATION, value);
          super.start(listener, headers);
        }
      };
    }

    @Override
    public String toString() {
      return "BearerToken{…}"; // never the token
    }
  }

  /**
   * Gives a unary call without a deadline (neither in its CallOptions nor in the current Context)
   * one {@code timeout} away. A long poll (a request with a {@code wait} field: Acquire, Claim,
   * Campaign) gets {@code timeout} plus its wait: its call is made when the request is sent, so
   * that the wait is known. Streaming calls are left alone.
   */
  static final class DefaultDeadline implements ClientInterceptor {
    private final long timeoutNanos;
    private final Map<String, Boolean> longPolls = new ConcurrentHashMap<>();

    DefaultDeadline(Duration timeout) {
      this.timeoutNanos = timeout.toNanos();
    }

    @Override
    public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(MethodDescriptor<ReqT, RespT> method, CallOptions options, Channel next) {
      if (method.getType() != MethodDescriptor.MethodType.UNARY || options.getDeadline() != null
          || Context.current().getDeadline() != null) {
        return next.newCall(method, options);
      }
      if (longPolls.computeIfAbsent(method.getFullMethodName(), n -> hasWait(method))) {
        return new LongPollCall<>(next, method, options, timeoutNanos);
      }
      return next.newCall(method, options.withDeadlineAfter(timeoutNanos, TimeUnit.NANOSECONDS));
    }

    private static boolean hasWait(MethodDescriptor<?, ?> method) {
      if (method.getRequestMarshaller() instanceof MethodDescriptor.PrototypeMarshaller<?> m
          && m.getMessagePrototype() instanceof Message prototype) {
        return waitField(prototype) != null;
      }
      return false;
    }
  }

  private static Descriptors.FieldDescriptor waitField(Message message) {
    Descriptors.FieldDescriptor f = message.getDescriptorForType().findFieldByName("wait");
    return f != null && f.getJavaType() == Descriptors.FieldDescriptor.JavaType.MESSAGE
        && f.getMessageType().getFullName().equals(com.google.protobuf.Duration.getDescriptor().getFullName()) ? f : null;
  }

  /** The request's {@code wait} in nanoseconds (0 when unset, negative or not a long poll). */
  static long waitNanos(Object request) {
    if (!(request instanceof Message m)) return 0;
    Descriptors.FieldDescriptor f = waitField(m);
    if (f == null || !m.hasField(f)) return 0;
    Object v = m.getField(f);
    if (!(v instanceof com.google.protobuf.Duration d) || d.getSeconds() < 0) return 0;
    long max = Long.MAX_VALUE / 4; // far beyond any wait; keeps the sum below from overflowing
    if (d.getSeconds() >= max / 1_000_000_000L) return max;
    return Math.max(0, d.getSeconds() * 1_000_000_000L + d.getNanos());
  }

  /**
   * A unary call whose real call is made (with its deadline) when the request is sent: start()
   * and request() are kept until then. Calls without a request (cancelled or half-closed first)
   * get the plain default.
   */
  static final class LongPollCall<ReqT, RespT> extends ClientCall<ReqT, RespT> {
    private final Channel next;
    private final MethodDescriptor<ReqT, RespT> method;
    private final CallOptions options;
    private final long timeoutNanos;
    private final Context context = Context.current();
    private final Object lock = new Object();
    private Listener<RespT> listener;
    private Metadata headers;
    private int requested;
    private Boolean compression;
    private volatile ClientCall<ReqT, RespT> delegate;

    LongPollCall(Channel next, MethodDescriptor<ReqT, RespT> method, CallOptions options, long timeoutNanos) {
      this.next = next;
      this.method = method;
      this.options = options;
      this.timeoutNanos = timeoutNanos;
    }

    /** The real call, made once, with the default plus {@code waitNanos}. */
    private ClientCall<ReqT, RespT> begin(long waitNanos) {
      synchronized (lock) {
        ClientCall<ReqT, RespT> d = delegate;
        if (d != null) return d;
        if (listener == null) throw new IllegalStateException("call not started");
        Context previous = context.attach();
        try {
          d = next.newCall(method, options.withDeadlineAfter(timeoutNanos + waitNanos, TimeUnit.NANOSECONDS));
          d.start(listener, headers);
        } finally {
          context.detach(previous);
        }
        if (compression != null) d.setMessageCompression(compression);
        if (requested > 0) d.request(requested);
        requested = 0;
        delegate = d;
        return d;
      }
    }

    @Override
    public void start(Listener<RespT> listener, Metadata headers) {
      synchronized (lock) {
        if (this.listener != null) throw new IllegalStateException("already started");
        this.listener = listener;
        this.headers = headers;
      }
    }

    @Override
    public void request(int n) {
      ClientCall<ReqT, RespT> d = delegate;
      if (d == null) {
        synchronized (lock) {
          d = delegate;
          if (d == null) {
            requested += n;
            return;
          }
        }
      }
      d.request(n);
    }

    @Override
    public void sendMessage(ReqT message) {
      ClientCall<ReqT, RespT> d = delegate;
      if (d == null) d = begin(waitNanos(message));
      d.sendMessage(message);
    }

    @Override
    public void halfClose() {
      ClientCall<ReqT, RespT> d = delegate;
      if (d == null) d = begin(0);
      d.halfClose();
    }

    @Override
    public void cancel(String message, Throwable cause) {
      ClientCall<ReqT, RespT> d = delegate;
      if (d == null) {
        synchronized (lock) {
          if (listener == null) return; // never started: nothing to tell
        }
        d = begin(0); // a real call to cancel, so that the listener hears of it
      }
      d.cancel(message, cause);
    }

    @Override
    public boolean isReady() {
      ClientCall<ReqT, RespT> d = delegate;
      return d != null && d.isReady();
    }

    @Override
    public void setMessageCompression(boolean enabled) {
      ClientCall<ReqT, RespT> d = delegate;
      if (d == null) {
        synchronized (lock) {
          d = delegate;
          if (d == null) {
            compression = enabled;
            return;
          }
        }
      }
      d.setMessageCompression(enabled);
    }

    @Override
    public Attributes getAttributes() {
      ClientCall<ReqT, RespT> d = delegate;
      return d == null ? Attributes.EMPTY : d.getAttributes();
    }
  }
}

// One connection to Baton shared by every helper: the target, TLS (a CA, a client certificate and
// key for mutual TLS, a server name override), an API token sent on every call, the current
// OpenTelemetry trace context on every call (W3C traceparent metadata), HTTP/2 keepalive and a
// default deadline for unary calls.
//
//   const client = connect("baton.internal:50051", {
//     ca: "ca.pem", cert: "client.pem", key: "client.key", // mutual TLS
//     token: process.env.BATON_TOKEN,
//   });
//   const worker = new Worker(client, "emails", "w1", handle);
//   await worker.run();
//   client.close();
//
// Helpers given a Client use its channel and leave it open; client.close() closes it.

import { readFileSync } from "node:fs";
import {
  CallInvocationTransformer,
  CallProperties,
  Channel,
  ChannelCredentials,
  ChannelOptions,
  ClientOptions,
  credentials,
  Deadline,
  InterceptingCall,
  Interceptor,
  InterceptorProvider,
  Metadata,
} from "@grpc/grpc-js";
import { AdminServiceClient } from "./gen/baton/v1/admin";
import { AgentServiceClient } from "./gen/baton/v1/agent";
import { ClaimServiceClient } from "./gen/baton/v1/claim";
import { LeaderServiceClient } from "./gen/baton/v1/leader";
import { ScheduleServiceClient } from "./gen/baton/v1/schedule";
import { tracingInterceptor } from "./tracing";

/** Default deadline of a unary call that sets none (ms). */
export const DEFAULT_TIMEOUT_MS = 10_000;
/** Margin added to a long poll's `wait` for its default deadline (as the helpers do). */
export const LONG_POLL_MARGIN_MS = 10_000;

/** PEM data: a file path, the PEM text itself (a string starting with "-----BEGIN"), or bytes. */
export type PemSource = string | Buffer | Uint8Array;

export interface ConnectOptions {
  /** The CA the server's certificate is checked against (TLS; without it, Node's default roots). */
  ca?: PemSource;
  /** Client certificate, for a Baton that requires one (mutual TLS); needs `key`. */
  cert?: PemSource;
  /** The client certificate's private key; needs `cert`. */
  key?: PemSource;
  /** The name the server's certificate is checked for (and sent as SNI) when it is not the
   *  target's host, e.g. when connecting by IP address. */
  serverName?: string;
  /** An API token, sent on every call (unary and streaming) as `authorization: Bearer <token>`.
   *  Over plaintext too (then anyone on the path can read it: use TLS beyond a trusted network). */
  token?: string;
  /** An HTTP/2 ping after this long without activity, idle connections included (default
   *  30 000 ms; 0: no pings). A dead peer or a dropped NAT mapping is noticed before the next call. */
  keepaliveMs?: number;
  /** How long a ping may go unanswered before the connection is dropped and dialled again
   *  (default 10 000 ms). */
  keepaliveTimeoutMs?: number;
  /** Deadline of a unary call that sets none (default 10 000 ms; 0: none). A long poll (a request
   *  with a `wait`: Acquire, Claim, Campaign) gets at least its wait + 10 000 ms. Streams
   *  (Subscribe, …) get none. The helpers set their own deadline on each of their calls. */
  timeoutMs?: number;
  /** TLS on or off. Default: on when any of ca, cert, key, serverName is given or the target
   *  starts with "https://". */
  tls?: boolean;
  /** More gRPC channel options (they win over the ones these settings make). */
  channelOptions?: ChannelOptions;
}

/** A generated client class (AgentServiceClient, …, or any other grpc-js client constructor). */
export type StubConstructor<T> = new (address: string, credentials: ChannelCredentials, options?: Partial<ClientOptions>) => T;

function pem(source: PemSource | undefined, what: string): Buffer | null {
  if (source === undefined) return null;
  if (typeof source !== "string") return Buffer.from(source);
  if (source.trimStart().startsWith("-----BEGIN")) return Buffer.from(source, "utf8");
  try {
    return readFileSync(source);
  } catch (err) {
    throw new Error(`cannot read the ${what} ${JSON.stringify(source)}: ${(err as Error).message}`);
  }
}

function nonNegative(value: number | undefined, fallback: number, what: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${what} must be a non-negative number of ms, not ${value}`);
  return value;
}

/** The `wait` (ms) of a long-poll request (Acquire, Claim, Campaign), if it sets one. */
function longPollWaitMs(request: unknown): number | undefined {
  if (typeof request !== "object" || request === null) return undefined;
  const wait = (request as { wait?: { seconds?: bigint | number; nanos?: number } }).wait;
  if (typeof wait !== "object" || wait === null) return undefined;
  const ms = Number(wait.seconds ?? 0) * 1000 + (wait.nanos ?? 0) / 1e6;
  return Number.isFinite(ms) && ms > 0 ? ms : undefined;
}

const noDeadline = (deadline: Deadline | null | undefined) => deadline === undefined || deadline === null;

/**
 * A connection to Baton: pass it to every helper (Worker, Leadership, Claimer, Pool, Scheduler,
 * Subscriber) and use its generated clients (`client.agents`, …, or `client.stub(Ctor)`). They
 * all share one channel (one HTTP/2 connection), dialled on first use: a bad address, CA or
 * certificate shows as the first call's error (UNAVAILABLE), or as waitReady()'s.
 *
 * Do not close the generated clients it hands out (that closes the shared channel): close the
 * Client. A token given here must not also be set as `authorization` metadata on a call.
 */
export class Client {
  /** "host:port" as dialled (an "http://" or "https://" prefix dropped). */
  readonly target: string;
  readonly tls: boolean;
  /** The default deadline of unary calls, ms (undefined: none). */
  readonly timeoutMs: number | undefined;
  /** The shared channel. */
  readonly channel: Channel;
  /** Options for a grpc-js client over the shared channel, with the token and the default
   *  deadline: `new SomeClient(client.target, client.credentials, client.clientOptions)`. */
  readonly clientOptions: Partial<ClientOptions>;
  /** The channel's credentials (TLS: with the token as call credentials). */
  readonly credentials: ChannelCredentials;
  readonly agents: AgentServiceClient;
  readonly leaders: LeaderServiceClient;
  readonly claims: ClaimServiceClient;
  readonly schedules: ScheduleServiceClient;
  readonly admin: AdminServiceClient;
  private closedFlag = false;

  constructor(target: string, options: ConnectOptions = {}) {
    if (typeof target !== "string" || !target.trim()) throw new TypeError('target must be a non-empty "host:port" string');
    target = target.trim();
    const https = target.startsWith("https://");
    target = target.replace(/^https?:\/\//, "").replace(/\/+$/, "");
    if ((options.cert === undefined) !== (options.key === undefined)) throw new TypeError("mutual TLS needs both cert and key");
    const wantsTls = https || [options.ca, options.cert, options.key, options.serverName].some((v) => v !== undefined);
    if (options.tls === false && wantsTls) {
      throw new TypeError("tls: false, but a TLS setting (ca, cert, key, serverName or an https:// target) was given");
    }
    let token = options.token?.trim();
    if (token === "") token = undefined;
    if (token !== undefined && !/^[\x21-\x7e]+$/.test(token)) {
      throw new TypeError("the token must be one word of printable ASCII (no spaces or line breaks)");
    }
    const keepaliveMs = nonNegative(options.keepaliveMs, 30_000, "keepaliveMs");
    const keepaliveTimeoutMs = nonNegative(options.keepaliveTimeoutMs, 10_000, "keepaliveTimeoutMs");
    const timeoutMs = nonNegative(options.timeoutMs, DEFAULT_TIMEOUT_MS, "timeoutMs");

    this.target = target;
    this.tls = options.tls ?? wantsTls;
    this.timeoutMs = timeoutMs > 0 ? timeoutMs : undefined;

    const channelOptions: ChannelOptions = {};
    if (keepaliveMs > 0) {
      channelOptions["grpc.keepalive_time_ms"] = Math.max(1, Math.round(keepaliveMs));
      channelOptions["grpc.keepalive_timeout_ms"] = Math.max(1, Math.round(keepaliveTimeoutMs));
      channelOptions["grpc.keepalive_permit_without_calls"] = 1;
    }
    if (options.serverName !== undefined) channelOptions["grpc.ssl_target_name_override"] = options.serverName;
    Object.assign(channelOptions, options.channelOptions ?? {});

    const authorization = token === undefined ? undefined : `Bearer ${token}`;
    // Every call carries the current OpenTelemetry context (traceparent metadata): see tracing.ts.
    const interceptors: Interceptor[] = [tracingInterceptor];
    if (this.tls) {
      const ssl = credentials.createSsl(pem(options.ca, "CA file"), pem(options.key, "client key file"), pem(options.cert, "client certificate file"));
      this.credentials = authorization === undefined ? ssl : credentials.combineChannelCredentials(ssl,
        credentials.createFromMetadataGenerator((_params, callback) => {
          const metadata = new Metadata();
          metadata.set("authorization", authorization);
          callback(null, metadata);
        }));
    } else {
      // grpc-js refuses call credentials on an insecure channel: an interceptor adds the token.
      this.credentials = credentials.createInsecure();
      if (authorization !== undefined) interceptors.push(authorizationInterceptor(authorization));
    }
    this.channel = new Channel(target, this.credentials, channelOptions);
    this.clientOptions = {
      channelOverride: this.channel,
      interceptors,
      callInvocationTransformer: callDefaults(this.timeoutMs, interceptors),
    };
    this.agents = this.stub(AgentServiceClient);
    this.leaders = this.stub(LeaderServiceClient);
    this.claims = this.stub(ClaimServiceClient);
    this.schedules = this.stub(ScheduleServiceClient);
    this.admin = this.stub(AdminServiceClient);
  }

  /** A generated client over the shared channel, with the token and the default deadline; e.g.
   *  `client.stub(HealthClient)`. Close the Client, not it. */
  stub<T>(ctor: StubConstructor<T>): T {
    return new ctor(this.target, this.credentials, this.clientOptions);
  }

  /** Dials now and resolves once connected (TLS handshake done); rejects after `timeoutMs`
   *  (default: the default deadline, else 10 000 ms). Optional: calls dial by themselves. */
  waitReady(timeoutMs?: number): Promise<void> {
    const deadline = new Date(Date.now() + (timeoutMs ?? this.timeoutMs ?? DEFAULT_TIMEOUT_MS));
    return new Promise((resolve, reject) => {
      this.agents.waitForReady(deadline, (err) => (err ? reject(err) : resolve()));
    });
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /** Closes the shared channel (calls still running are cancelled). Idempotent. */
  close(): void {
    if (this.closedFlag) return;
    this.closedFlag = true;
    this.channel.close();
  }
}

/** A Client for `target` ("host:port"; "https://host:port" for TLS with the default roots). Nothing
 *  is dialled yet: see Client. */
export function connect(target: string, options: ConnectOptions = {}): Client {
  return new Client(target, options);
}

/** Adds `authorization` to every call's metadata (unless the call set one). */
function authorizationInterceptor(value: string): Interceptor {
  return (options, nextCall) => new InterceptingCall(nextCall(options), {
    start: (metadata, listener, next) => {
      if (metadata.get("authorization").length > 0) return next(metadata, listener);
      const withToken = metadata.clone(); // the caller's Metadata may be reused: left as it was
      withToken.set("authorization", value);
      next(withToken, listener);
    },
  });
}

/**
 * Sets the default deadline on unary calls that set none (a long poll's: at least its wait +
 * LONG_POLL_MARGIN_MS), and keeps the Client's interceptors (trace context; the token, on
 * plaintext) on calls that pass their own (grpc-js lets call interceptors replace the client's).
 */
function callDefaults(timeoutMs: number | undefined, interceptors: Interceptor[]): CallInvocationTransformer {
  return (properties: CallProperties<unknown, unknown>) => {
    const method = properties.methodDefinition;
    const callOptions = { ...properties.callOptions };
    if (timeoutMs !== undefined && !method.requestStream && !method.responseStream && noDeadline(callOptions.deadline)) {
      const wait = longPollWaitMs(properties.argument);
      const ms = wait === undefined ? timeoutMs : Math.max(timeoutMs, wait + LONG_POLL_MARGIN_MS);
      callOptions.deadline = new Date(Date.now() + ms);
    }
    if (interceptors.length > 0) {
      if (callOptions.interceptors?.length) {
        callOptions.interceptors = [...interceptors, ...callOptions.interceptors];
      } else if (callOptions.interceptor_providers?.length) {
        const providers: InterceptorProvider[] = interceptors.map((i) => () => i);
        callOptions.interceptor_providers = [...providers, ...callOptions.interceptor_providers];
      }
    }
    return { ...properties, callOptions };
  };
}

/** For the helpers: the generated client to use for `target`, and whether the helper made it (and
 *  so closes it). A Client's is shared: the helper leaves it open. */
export function stubFor<T>(target: string | Client | T, ctor: StubConstructor<T>, pick: (client: Client) => T): { stub: T; owned: boolean } {
  if (typeof target === "string") {
    return { stub: new ctor(target, credentials.createInsecure(), { interceptors: [tracingInterceptor] }), owned: true };
  }
  if (target instanceof Client) return { stub: pick(target), owned: false };
  return { stub: target, owned: false };
}

// Promise wrappers over the generated callback-style grpc-js clients.

import { CallOptions, ClientUnaryCall, Metadata, ServiceError, status } from "@grpc/grpc-js";
import { Duration } from "./gen/google/protobuf/duration";

type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: Metadata,
  options: Partial<CallOptions>,
  callback: (error: ServiceError | null, response: Res) => void,
) => ClientUnaryCall;

export interface CallSettings {
  /** Deadline of the call, from now. */
  timeoutMs?: number;
  /** Cancels the call (it then rejects with CANCELLED). */
  signal?: AbortSignal;
}

/** Calls a unary method of a generated client, e.g. `unary(client.acquire.bind(client), req)`. */
export function unary<Req, Res>(method: UnaryMethod<Req, Res>, request: Req, settings: CallSettings = {}): Promise<Res> {
  return new Promise((resolve, reject) => {
    const options: Partial<CallOptions> = {};
    if (settings.timeoutMs !== undefined) options.deadline = new Date(Date.now() + settings.timeoutMs);
    const call = method(request, new Metadata(), options, (error, response) => {
      settings.signal?.removeEventListener("abort", cancel);
      if (error) reject(error);
      else resolve(response);
    });
    const cancel = () => call.cancel();
    if (settings.signal?.aborted) call.cancel();
    else settings.signal?.addEventListener("abort", cancel, { once: true });
  });
}

export function isServiceError(err: unknown): err is ServiceError {
  return typeof err === "object" && err !== null && "code" in err && typeof (err as ServiceError).code === "number"
    && "metadata" in err;
}

/**
 * Whether Baton refused a stale token (FAILED_PRECONDITION, ErrorInfo reason LEASE_LOST): the
 * lease or term is gone and the work must stop. Baton uses FAILED_PRECONDITION for nothing else.
 */
export function isLeaseLost(err: unknown): boolean {
  return isServiceError(err) && err.code === status.FAILED_PRECONDITION;
}

/** Baton's `grpc-retry-pushback-ms` hint on UNAVAILABLE, in ms. */
export function pushbackMs(err: unknown): number | undefined {
  if (!isServiceError(err)) return undefined;
  const v = err.metadata?.get("grpc-retry-pushback-ms")?.[0];
  const ms = v === undefined ? NaN : Number(v.toString());
  return Number.isFinite(ms) ? ms : undefined;
}

export function duration(ms: number): Duration {
  const whole = Math.floor(ms / 1000);
  return { seconds: BigInt(whole), nanos: Math.round((ms - whole * 1000) * 1e6) };
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

// Promise wrappers over the generated callback-style grpc-js clients, the one backoff of every
// helper, and the retry of calls that carry a request id.

import { randomUUID } from "node:crypto";
import { CallOptions, ClientUnaryCall, Metadata, ServiceError, status } from "@grpc/grpc-js";
import { BinaryReader } from "@bufbuild/protobuf/wire";
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

/** Calls a unary method of a generated client, e.g. `unary(client.getAgent.bind(client), req)`. */
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

/** Attempts of a call with a request id (see idempotent). */
const IDEMPOTENT_ATTEMPTS = 4;

/**
 * Calls a method whose request carries a `requestId` (Register, Offer, Schedule, Return, Fail …):
 * one id (given, else a random UUID) for every attempt, and the call sent again after
 * UNAVAILABLE or DEADLINE_EXCEEDED (an outcome unknown to the caller: Baton answers a repeat of
 * an applied call by its first answer), waiting as backoffMs says, up to 4 attempts.
 */
export async function idempotent<Req extends { requestId: string }, Res>(
  method: UnaryMethod<Req, Res>, request: Req, settings: CallSettings = {},
): Promise<Res> {
  const withId = { ...request, requestId: request.requestId || randomUUID() };
  for (let attempt = 0; ; attempt++) {
    try {
      return await unary(method, withId, settings);
    } catch (err) {
      const unknownOutcome = isServiceError(err) && (err.code === status.UNAVAILABLE || err.code === status.DEADLINE_EXCEEDED);
      if (!unknownOutcome || attempt + 1 >= IDEMPOTENT_ATTEMPTS || settings.signal?.aborted) throw err;
      await sleep(backoffMs(attempt, err), settings.signal);
    }
  }
}

export function isServiceError(err: unknown): err is ServiceError {
  return typeof err === "object" && err !== null && "code" in err && typeof (err as ServiceError).code === "number"
    && "metadata" in err;
}

/**
 * Whether Baton refused a stale token (FAILED_PRECONDITION, ErrorInfo reason LEASE_LOST): the
 * lease or term is gone and the work must stop.
 */
export function isLeaseLost(err: unknown): boolean {
  if (!isServiceError(err) || err.code !== status.FAILED_PRECONDITION) return false;
  const why = reason(err);
  return why === undefined || why === "LEASE_LOST";
}

/** The length-delimited fields of a protobuf message, by number (Status, Any, ErrorInfo). */
function fields(bytes: Uint8Array): Map<number, Uint8Array[]> {
  const out = new Map<number, Uint8Array[]>();
  const r = new BinaryReader(bytes);
  while (r.pos < r.len) {
    const [no, wireType] = r.tag();
    if (wireType === 2) out.set(no, [...(out.get(no) ?? []), r.bytes()]);
    else r.skip(wireType);
  }
  return out;
}

/**
 * The reason of the google.rpc.ErrorInfo Baton sends with every error (`LEASE_LOST`,
 * `NOT_FOUND`, `LINE_FULL`, `PARENTS_FIXED`, …; docs/errors.md), read from the
 * `grpc-status-details-bin` trailer (grpc-js ships no google.rpc types); undefined if none.
 */
export function reason(err: unknown): string | undefined {
  if (!isServiceError(err)) return undefined;
  const details = err.metadata?.get("grpc-status-details-bin")?.[0];
  if (!(details instanceof Uint8Array)) return undefined;
  try {
    for (const any of fields(details).get(3) ?? []) {
      const f = fields(any);
      const type = new TextDecoder().decode(f.get(1)?.[0]);
      if (type === "type.googleapis.com/google.rpc.ErrorInfo") {
        return new TextDecoder().decode(fields(f.get(2)?.[0] ?? new Uint8Array()).get(1)?.[0]);
      }
    }
  } catch {
    return undefined;
  }
  return undefined;
}

/** Baton's retry hint (`grpc-retry-pushback-ms`, on UNAVAILABLE and RESOURCE_EXHAUSTED), in ms. */
export function pushbackMs(err: unknown): number | undefined {
  if (!isServiceError(err)) return undefined;
  const v = err.metadata?.get("grpc-retry-pushback-ms")?.[0];
  const ms = v === undefined ? NaN : Number(v.toString());
  return Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}

/** First and longest pause of backoffMs. */
const BACKOFF_FIRST_MS = 100;
const BACKOFF_MAX_MS = 5_000;

/**
 * The pause before retry number `attempt` (0 for the first retry): Baton's retry hint on `err`
 * when it has one, else 100 ms doubling up to 5 s, with jitter (between half and all of it).
 * Every helper's retries and reconnections wait this long.
 */
export function backoffMs(attempt: number, err?: unknown): number {
  const hint = pushbackMs(err);
  if (hint !== undefined) return hint;
  const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** Math.min(attempt, 16));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

export function duration(ms: number): Duration {
  const whole = Math.floor(ms / 1000);
  return { seconds: BigInt(whole), nanos: Math.round((ms - whole * 1000) * 1e6) };
}

/** A Duration in ms (0 when absent). */
export function millis(d: Duration | undefined): number {
  return d === undefined ? 0 : Number(d.seconds) * 1000 + d.nanos / 1e6;
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

/** "CODE details" of a gRPC error, else the error's message. */
export function describe(err: unknown): string {
  if (isServiceError(err)) return `${status[err.code]} ${err.details}`;
  return err instanceof Error ? err.message : String(err);
}

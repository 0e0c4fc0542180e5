// How a run ended. Baton classifies failures (the table above `enum Outcome` in
// proto/baton/v1/agent.proto): a completion carries the handler's error class and the HTTP
// status its error had, unless the handler chose an outcome itself by throwing a Failure.

import { Outcome, outcomeToJSON } from "./gen/baton/v1/agent";

export { Outcome };

/**
 * Throw from a handler to end its run with an explicit outcome (and an optional Retry-After).
 * Anything else a handler throws is described by {@link describeFailure} and classified by Baton.
 */
export class Failure extends Error {
  readonly outcome: Outcome;
  readonly retryAfterMs?: number;

  constructor(outcome: Outcome, message = "", retryAfterMs?: number) {
    super(message || outcomeToJSON(outcome));
    if (outcome === Outcome.OUTCOME_UNSPECIFIED || outcome === Outcome.OUTCOME_SUCCESS) {
      throw new RangeError("a Failure needs a failure outcome");
    }
    this.name = "Failure";
    this.outcome = outcome;
    this.retryAfterMs = retryAfterMs;
  }

  static transient(message = "", retryAfterMs?: number): Failure {
    return new Failure(Outcome.OUTCOME_TRANSIENT, message, retryAfterMs);
  }
}

/** An error carrying an HTTP status (and optionally a Retry-After), for handlers that call
 *  HTTP APIs without a library that throws one: `throw new HttpError(res.status, text)`. */
export class HttpError extends Error {
  constructor(readonly status: number, message = "", readonly retryAfterMs?: number) {
    super(message || `HTTP ${status}`);
    this.name = "HttpError";
  }
}

/** What a completion says about a handler's error. */
export interface FailureReport {
  /** The handler's explicit outcome (a Failure), else UNSPECIFIED: Baton classifies. */
  outcome: Outcome;
  /** "Name: message"; Baton clips it to its limit. */
  message: string;
  /** The error's code (Node's and undici's `code`, e.g. ECONNRESET, also on its `cause`), else its name. */
  errorClass: string;
  /** The HTTP status the error carried (0: none). */
  httpStatus: number;
  retryAfterMs?: number;
}

type Bag = Record<string, unknown>;
const isObject = (v: unknown): v is Bag => typeof v === "object" && v !== null;

/** The status of fetch Response-like errors, axios (err.response.status), got (err.response.statusCode). */
function httpStatus(err: Bag): number {
  for (const holder of [err, err.response]) {
    if (!isObject(holder)) continue;
    for (const key of ["status", "statusCode"]) {
      const v = holder[key];
      if (typeof v === "number" && Number.isInteger(v) && v >= 100 && v <= 599) return v;
    }
  }
  return 0;
}

/** The error's own retryAfterMs, else its (or its response's) Retry-After header, in ms. */
function retryAfterMs(err: Bag): number | undefined {
  if (typeof err.retryAfterMs === "number") return err.retryAfterMs;
  for (const holder of [err, err.response]) {
    if (!isObject(holder) || !holder.headers) continue;
    const headers = holder.headers as Bag & { get?: (k: string) => string | null };
    const raw = typeof headers.get === "function"
      ? headers.get("retry-after")
      : (headers["retry-after"] ?? headers["Retry-After"]);
    if (raw === undefined || raw === null || raw === "") continue;
    const text = String(raw).trim();
    if (/^\d+$/.test(text)) return Number(text) * 1000;
    const when = Date.parse(text);
    if (!Number.isNaN(when)) return Math.max(0, when - Date.now());
  }
  return undefined;
}

function errorClass(err: unknown): string {
  const seen = new Set<unknown>();
  for (let e = err; isObject(e) && !seen.has(e); e = e.cause) {
    seen.add(e);
    if (typeof e.code === "string" && e.code) return e.code;
  }
  return isObject(err) && typeof err.name === "string" ? err.name : typeof err;
}

/** What the completion of a run whose handler threw `err` carries (see FailureReport). */
export function describeFailure(err: unknown): FailureReport {
  if (err instanceof Failure) {
    return { outcome: err.outcome, message: err.message, errorClass: "", httpStatus: 0, retryAfterMs: err.retryAfterMs };
  }
  const message = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return {
    outcome: Outcome.OUTCOME_UNSPECIFIED,
    message,
    errorClass: errorClass(err).slice(0, 256),
    httpStatus: isObject(err) ? httpStatus(err) : 0,
    retryAfterMs: isObject(err) ? retryAfterMs(err) : undefined,
  };
}

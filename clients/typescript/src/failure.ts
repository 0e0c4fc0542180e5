// How a run ended, and the documented rule that maps errors to outcomes.

import { Outcome, outcomeToJSON } from "./gen/baton/v1/agent";

export { Outcome };

/** 401/403 → PERMANENT_FORBIDDEN, 429 → THROTTLED, 408 → TRANSIENT, 5xx → SERVER_ERROR, else UNKNOWN. */
export function outcomeForHttpStatus(status: number): Outcome {
  if (status === 401 || status === 403) return Outcome.OUTCOME_PERMANENT_FORBIDDEN;
  if (status === 429) return Outcome.OUTCOME_THROTTLED;
  if (status === 408) return Outcome.OUTCOME_TRANSIENT;
  if (status >= 500 && status <= 599) return Outcome.OUTCOME_SERVER_ERROR;
  return Outcome.OUTCOME_UNKNOWN;
}

/**
 * Throw from a handler to end its run with an explicit outcome (and an optional Retry-After).
 * Anything else a handler throws is classified by {@link classify}.
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

  static fromHttpStatus(status: number, message = "", retryAfterMs?: number): Failure {
    return new Failure(outcomeForHttpStatus(status), message || `HTTP ${status}`, retryAfterMs);
  }

  static transient(message = "", retryAfterMs?: number): Failure {
    return new Failure(Outcome.OUTCOME_TRANSIENT, message, retryAfterMs);
  }
}

// Node's and undici's codes for I/O, connection and timeout errors.
const TRANSIENT_CODES = new Set([
  "ECONNRESET", "ECONNREFUSED", "ECONNABORTED", "ETIMEDOUT", "ESOCKETTIMEDOUT", "EPIPE", "ENOTFOUND",
  "EAI_AGAIN", "EHOSTUNREACH", "EHOSTDOWN", "ENETUNREACH", "ENETDOWN", "ENETRESET", "EIO",
  "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "UND_ERR_SOCKET",
  "UND_ERR_CLOSED", "ERR_SOCKET_CONNECTION_TIMEOUT", "ERR_STREAM_PREMATURE_CLOSE",
]);

type Bag = Record<string, unknown>;
const isObject = (v: unknown): v is Bag => typeof v === "object" && v !== null;

function httpStatus(err: Bag): number | undefined {
  // fetch Response-like errors, axios (err.response.status), got (err.response.statusCode),
  // and any error with status / statusCode.
  for (const holder of [err, err.response]) {
    if (!isObject(holder)) continue;
    for (const key of ["status", "statusCode"]) {
      const v = holder[key];
      if (typeof v === "number" && Number.isInteger(v) && v >= 100 && v <= 599) return v;
    }
  }
  return undefined;
}

function retryAfterMs(err: Bag): number | undefined {
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

function looksTransient(err: unknown): boolean {
  const seen = new Set<unknown>();
  let e: unknown = err;
  while (isObject(e) && !seen.has(e)) {
    seen.add(e);
    if (typeof e.code === "string" && TRANSIENT_CODES.has(e.code)) return true;
    const name = typeof e.name === "string" ? e.name : "";
    if (name === "TimeoutError" || /Timeout|Connect|NetworkError/.test(name)) return true;
    e = e.cause;
  }
  return false;
}

/**
 * The documented rule: an explicit {@link Failure} wins; an error carrying an HTTP status maps by
 * {@link outcomeForHttpStatus} (with its Retry-After header); I/O, connection errors and timeouts
 * are TRANSIENT; anything else is UNKNOWN.
 */
export function classify(err: unknown): Failure {
  if (err instanceof Failure) return err;
  const message = (err instanceof Error ? `${err.name}: ${err.message}` : String(err)).slice(0, 4000);
  if (isObject(err)) {
    const status = httpStatus(err);
    if (status !== undefined) return new Failure(outcomeForHttpStatus(status), message, retryAfterMs(err));
    if (looksTransient(err)) return new Failure(Outcome.OUTCOME_TRANSIENT, message);
  }
  return new Failure(Outcome.OUTCOME_UNKNOWN, message);
}

/** The longest failure message the server takes by default (limits.max_message_bytes): Complete's message and Fail's error, in UTF-8 bytes. */
export const MAX_MESSAGE_BYTES = 4096;

/**
 * At most `maxBytes` UTF-8 bytes of `text`, cut on a character boundary (never inside a
 * surrogate pair): how every helper bounds a failure message to the server's limit, the same
 * rule in every client language.
 */
export function truncateUtf8(text: string, maxBytes: number = MAX_MESSAGE_BYTES): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes;
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString("utf8");
}

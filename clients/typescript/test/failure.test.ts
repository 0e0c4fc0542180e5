// What a completion carries about a handler's error (Baton classifies it), without a server.
import assert from "node:assert/strict";
import { test } from "node:test";
import { describeFailure, Failure, HttpError, Outcome } from "../src";

test("an explicit Failure keeps its outcome; anything else is left to Baton", () => {
  const explicit = describeFailure(new Failure(Outcome.OUTCOME_THROTTLED, "quota", 90_000));
  assert.deepEqual(explicit, { outcome: Outcome.OUTCOME_THROTTLED, message: "quota", errorClass: "", httpStatus: 0, retryAfterMs: 90_000 });
  assert.throws(() => new Failure(Outcome.OUTCOME_SUCCESS));
  const bug = describeFailure(new RangeError("bad"));
  assert.deepEqual(bug, { outcome: Outcome.OUTCOME_UNSPECIFIED, message: "RangeError: bad", errorClass: "RangeError", httpStatus: 0, retryAfterMs: undefined });
  assert.equal(describeFailure("a string").errorClass, "string");
});

test("the HTTP status, however the error carries it, and its Retry-After", () => {
  for (const err of [
    Object.assign(new Error("x"), { status: 429 }),
    Object.assign(new Error("x"), { statusCode: 429 }),
    Object.assign(new Error("x"), { response: { status: 429, headers: { "retry-after": "120" } } }), // axios
    Object.assign(new Error("x"), { response: { statusCode: 429, headers: new Headers({ "Retry-After": "120" }) } }), // got, fetch
  ]) {
    assert.equal(describeFailure(err).httpStatus, 429);
  }
  assert.equal(describeFailure(Object.assign(new Error("x"), { response: { status: 429, headers: { "retry-after": "120" } } })).retryAfterMs, 120_000);
  assert.deepEqual(describeFailure(new HttpError(503, "down", 7_000)),
    { outcome: Outcome.OUTCOME_UNSPECIFIED, message: "HttpError: down", errorClass: "HttpError", httpStatus: 503, retryAfterMs: 7_000 });
});

test("the error class is Node's or undici's code (also on the cause), else the error's name", () => {
  assert.equal(describeFailure(Object.assign(new Error("reset"), { code: "ECONNRESET" })).errorClass, "ECONNRESET");
  const wrapped = new TypeError("fetch failed", { cause: Object.assign(new Error("t"), { code: "UND_ERR_CONNECT_TIMEOUT" }) });
  assert.equal(describeFailure(wrapped).errorClass, "UND_ERR_CONNECT_TIMEOUT");
  assert.equal(describeFailure(new DOMException("timed out", "TimeoutError")).errorClass, "TimeoutError");
  // The message goes whole: Baton clips it.
  assert.equal(describeFailure(new Error("é".repeat(5000))).message.length, "Error: ".length + 5000);
});

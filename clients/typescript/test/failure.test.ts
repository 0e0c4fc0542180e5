// The documented error → outcome rule, without a server.
import assert from "node:assert/strict";
import { test } from "node:test";
import { classify, Failure, Outcome, outcomeForHttpStatus } from "../src";

const cases: [number, Outcome][] = [
  [401, Outcome.OUTCOME_PERMANENT_FORBIDDEN],
  [403, Outcome.OUTCOME_PERMANENT_FORBIDDEN],
  [429, Outcome.OUTCOME_THROTTLED],
  [408, Outcome.OUTCOME_TRANSIENT],
  [500, Outcome.OUTCOME_SERVER_ERROR],
  [503, Outcome.OUTCOME_SERVER_ERROR],
  [400, Outcome.OUTCOME_UNKNOWN],
  [404, Outcome.OUTCOME_UNKNOWN],
];

test("HTTP statuses map by the documented rule, however the error carries them", () => {
  for (const [status, outcome] of cases) {
    assert.equal(outcomeForHttpStatus(status), outcome);
    assert.equal(Failure.fromHttpStatus(status).outcome, outcome);
    assert.equal(classify(Object.assign(new Error("x"), { status })).outcome, outcome, `status ${status}`);
    assert.equal(classify(Object.assign(new Error("x"), { statusCode: status })).outcome, outcome);
    assert.equal(classify(Object.assign(new Error("x"), { response: { status } })).outcome, outcome); // axios
  }
});

test("Retry-After is read from plain and Fetch headers", () => {
  const axiosLike = Object.assign(new Error("x"), { response: { status: 429, headers: { "retry-after": "120" } } });
  assert.equal(classify(axiosLike).retryAfterMs, 120_000);
  const fetchLike = Object.assign(new Error("x"), { response: { status: 503, headers: new Headers({ "Retry-After": "7" }) } });
  const f = classify(fetchLike);
  assert.equal(f.outcome, Outcome.OUTCOME_SERVER_ERROR);
  assert.equal(f.retryAfterMs, 7_000);
});

test("I/O, connection errors and timeouts are TRANSIENT", () => {
  for (const code of ["ECONNRESET", "ECONNREFUSED", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "UND_ERR_CONNECT_TIMEOUT"]) {
    assert.equal(classify(Object.assign(new Error(code), { code })).outcome, Outcome.OUTCOME_TRANSIENT, code);
  }
  const timeout = new DOMException("timed out", "TimeoutError"); // AbortSignal.timeout()
  assert.equal(classify(timeout).outcome, Outcome.OUTCOME_TRANSIENT);
  // fetch() wraps the socket error: TypeError("fetch failed", { cause })
  const wrapped = new TypeError("fetch failed", { cause: Object.assign(new Error("reset"), { code: "ECONNRESET" }) });
  assert.equal(classify(wrapped).outcome, Outcome.OUTCOME_TRANSIENT);
});

test("anything else is UNKNOWN, and an explicit Failure wins", () => {
  assert.equal(classify(new Error("bug")).outcome, Outcome.OUTCOME_UNKNOWN);
  assert.equal(classify("a string").outcome, Outcome.OUTCOME_UNKNOWN);
  const explicit = new Failure(Outcome.OUTCOME_THROTTLED, "quota", 90_000);
  assert.equal(classify(explicit), explicit);
  assert.throws(() => new Failure(Outcome.OUTCOME_SUCCESS));
});

// The claim helper and the pool manager against a live Baton.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { credentials, ServiceError, status } from "@grpc/grpc-js";
import { admin, AdminServiceClient, Claimer, isLeaseLost, LineFullError, Pool, pushbackMs, reason, unary } from "../src";
import { BatonServer, eventually, QUICK_ENV, unique } from "./baton";

let baton: BatonServer;
let adminClient: AdminServiceClient;
before(async () => {
  baton = await BatonServer.start(QUICK_ENV);
  adminClient = new AdminServiceClient(baton.addr, credentials.createInsecure());
});
after(async () => {
  adminClient.close();
  await baton.stop();
});

const quiet = { warn: () => {} };

async function deadLetters(pool: string): Promise<admin.DeadLetter[]> {
  const response = await unary(adminClient.listDeadLetters.bind(adminClient), {
    source: { kind: admin.SourceKind.SOURCE_KIND_POOL, name: pool },
    pageSize: 0,
    pageToken: "",
  });
  return response.deadLetters;
}

function setup(): { pool: Pool; claimer: Claimer; close: () => void } {
  const pool = new Pool(baton.addr, unique("ts-pool"));
  const claimer = new Claimer(baton.addr, pool.pool, "ts-claimer", { waitMs: 2_000, attributes: { job: "t" }, logger: quiet });
  return { pool, claimer, close: () => { pool.close(); claimer.close(); } };
}

test("a callback that resolves returns the resource for reuse", async () => {
  const { pool, claimer, close } = setup();
  const offered = await pool.offer([["vm-1", { zone: "a" }], "vm-2"]);
  assert.deepEqual([offered.idle, offered.handed, offered.duplicates], [2, 0, 0]);
  let token = 0n;
  const value = await claimer.withClaim(async (claim) => {
    assert.equal(claim.id, "vm-1");
    assert.deepEqual(claim.attributes, { zone: "a", job: "t" });
    assert.ok(claim.token > 0n && claim.claimedAt instanceof Date);
    token = claim.token;
    const s = await pool.status();
    assert.deepEqual([s.idle, s.claimed], [1n, 1n]);
    return "built";
  });
  assert.equal(value, "built");
  const s = await pool.status();
  assert.deepEqual([s.idle, s.claimed, s.deadLettered], [2n, 0n, 0n]);
  // Idle again, at the back of the ready queue: vm-2 first, then vm-1 with a newer token.
  const second = (await claimer.claim())!;
  const third = (await claimer.claim())!;
  assert.deepEqual([second.id, third.id], ["vm-2", "vm-1"]);
  assert.ok(third.token > token);
  await second.return();
  await third.return();
  close();
});

test("a callback that throws dead-letters the resource", async () => {
  const { pool, claimer, close } = setup();
  await pool.offer(["vm-1"]);
  await assert.rejects(claimer.withClaim(async () => { throw new RangeError("disk full"); }), /disk full/);
  const s = await pool.status();
  assert.deepEqual([s.idle, s.claimed, s.deadLettered], [0n, 0n, 1n]);
  const [dead, ...rest] = await deadLetters(pool.pool);
  assert.equal(rest.length, 0);
  assert.deepEqual([dead.id, dead.message, dead.holder], ["vm-1", "RangeError: disk full", "ts-claimer"]);
  close();
});

test("the wait ends with nothing", async () => {
  const { pool, claimer, close } = setup();
  const started = Date.now();
  assert.equal(await claimer.claim({ waitMs: 300 }), undefined);
  assert.ok(Date.now() - started >= 250);
  let called = false;
  assert.equal(await claimer.withClaim(async () => { called = true; }, { waitMs: 200 }), undefined);
  assert.equal(called, false);
  assert.equal(await claimer.claim({ waitMs: 0 }), undefined);
  assert.equal((await pool.status()).waitingClaims, 0n);
  close();
});

test("a cancelled callback returns the resource", async () => {
  const { pool, claimer, close } = setup();
  await pool.offer(["vm-1"]);
  const cancel = new AbortController();
  const use = claimer.withClaim((claim, signal) => new Promise<void>((_, reject) => {
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    setTimeout(() => cancel.abort(new Error("caller gave up")), 100);
  }), { signal: cancel.signal });
  await assert.rejects(use, /caller gave up/);
  const s = await pool.status();
  assert.deepEqual([s.idle, s.claimed, s.deadLettered], [1n, 0n, 0n]);
  assert.deepEqual(await deadLetters(pool.pool), []);
  close();
});

test("an aborted signal cancels a waiting claim", async () => {
  const { pool, claimer, close } = setup();
  const waiting = claimer.claim({ waitMs: 10_000, signal: AbortSignal.timeout(200) });
  await assert.rejects(waiting, (err: ServiceError) => err.code === status.CANCELLED);
  await eventually(async () => (await pool.status()).waitingClaims === 0n, 5_000);
  close();
});

test("explicit return and fail", async () => {
  const { pool, claimer, close } = setup();
  await pool.offer(["vm-1"]);
  let claim = (await claimer.claim())!;
  await claim.return(false); // leaves the pool until offered again
  let s = await pool.status();
  assert.deepEqual([s.idle, s.claimed], [0n, 0n]);
  await assert.rejects(claim.return(), (err) => isLeaseLost(err) && reason(err) === "LEASE_LOST");
  await pool.offer(["vm-1"]);
  claim = (await claimer.claim())!;
  await claim.fail(new TypeError("bad image"));
  const [dead] = await deadLetters(pool.pool);
  assert.deepEqual([dead.id, dead.message], ["vm-1", "TypeError: bad image"]);
  // A callback that ends its claim itself is left alone.
  await pool.offer(["vm-2"]);
  await claimer.withClaim((c) => c.return(false));
  s = await pool.status();
  assert.deepEqual([s.idle, s.claimed, s.deadLettered], [0n, 0n, 1n]);
  close();
});

test("a full line rejects with LineFullError and the pushback hint", async () => {
  const { pool, claimer, close } = setup();
  // This Baton's line holds one waiting claim (pool.max_line = 1).
  const first = claimer.claim({ waitMs: 10_000 });
  await eventually(async () => (await pool.status()).waitingClaims === 1n, 5_000);
  const other = new Claimer(baton.addr, pool.pool, "ts-other");
  await assert.rejects(other.claim({ waitMs: 10_000 }), (err) => {
    assert.ok(err instanceof LineFullError);
    assert.equal(err.retryAfterMs, 250);
    assert.equal(err.pool, pool.pool);
    // The error under it, read as any caller of the raw stubs would.
    assert.deepEqual([err.reason, reason(err.cause), pushbackMs(err.cause)], ["LINE_FULL", "LINE_FULL", 250]);
    return true;
  });
  other.close();
  // An offer serves the waiting claim at once.
  assert.equal((await pool.offer(["vm-1"])).handed, 1);
  const claim = (await first)!;
  assert.equal(claim.id, "vm-1");
  await claim.return();
  close();
});

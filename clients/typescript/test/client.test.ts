// The shared connection (connect / Client): TLS, mutual TLS and an API token against a live Baton
// (certificates from `baton dev-certs`, the token from `baton token`), the token over plaintext (an
// interceptor: grpc-js refuses call credentials there), and what every call carries (the token, the
// default deadline, a long poll's longer one) as seen by a local grpc-js server.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  Deadline,
  InterceptingCall,
  Interceptor,
  Metadata,
  Server,
  ServerCredentials,
  ServerUnaryCall,
  ServerWritableStream,
  ServiceError,
  status,
  UntypedServiceImplementation,
} from "@grpc/grpc-js";
import {
  agent,
  AgentServiceClient,
  Claimer,
  Client,
  connect,
  ConnectOptions,
  duration,
  Lease,
  Leadership,
  Message,
  Pool,
  Scheduler,
  Subscriber,
  unary,
  Worker,
} from "../src";
import { AgentServiceService } from "../src/gen/baton/v1/agent";
import { ScheduleServiceService, SubscribeResponse } from "../src/gen/baton/v1/schedule";
import { BATON_BIN, BatonServer, eventually, unique } from "./baton";

const quiet = { warn: () => {} };

/** `baton dev-certs` into a new temporary directory. */
function devCerts(): string {
  const dir = mkdtempSync(join(tmpdir(), "baton-ts-certs-"));
  execFileSync(BATON_BIN, ["dev-certs", "--dir", dir], { stdio: ["ignore", "ignore", "pipe"] });
  return dir;
}

/** `baton token`: the token (first line of stdout), and its `[[tokens]]` entry written to `file`. */
function makeToken(name: string, role: string, file: string): string {
  const out = execFileSync(BATON_BIN, ["token", "--name", name, "--role", role], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const [first, ...rest] = out.split("\n");
  writeFileSync(file, rest.join("\n"));
  return first.trim();
}

/** The gRPC error a promise rejects with. */
async function failure(promise: Promise<unknown>): Promise<ServiceError> {
  try {
    await promise;
  } catch (err) {
    return err as ServiceError;
  }
  assert.fail("the call succeeded");
}

/** The status a Subscribe stream ends with. */
function streamFailure(client: Client, receiver: string): Promise<ServiceError> {
  return new Promise((resolve, reject) => {
    const stream = client.schedules.subscribe({ receiver, consumerId: "c", maxInFlight: 1 });
    stream.on("data", () => reject(new Error("the stream delivered a message")));
    stream.on("error", (err) => resolve(err as ServiceError));
    stream.on("end", () => reject(new Error("the stream ended without an error")));
  });
}

const register = (client: Client, queue: string, names: string[]) => unary(client.agents.register.bind(client.agents), {
  requestId: "",
  queue,
  resetSchedule: false,
  agents: names.map((name) => ({
    name,
    interval: undefined,
    timeout: duration(30_000),
    errorInterval: duration(3_600_000),
    payload: Buffer.from(""),
    labels: {},
    maxAttempts: 0, cron: "", timeZone: "", catchUp: 0, key: "", priority: 0, traceparent: "", after: [], onParentFailure: 0, idempotencyKey: "", idempotencyWindow: undefined, keepResult: false, idempotencyMode: 0, debounce: undefined, expireAt: undefined, ttl: undefined, waitFor: undefined,
  })),
});

const listAgents = (client: Client, queue: string) =>
  unary(client.agents.listAgents.bind(client.agents), { queue, pageSize: 0, pageToken: "", namePrefix: "" });

/** A Worker over `client` runs `names` of a new queue to completion; the client stays open. */
async function workerRoundTrip(client: Client, baton: BatonServer): Promise<void> {
  const queue = unique("ts-conn");
  const names = ["a0", "a1", "a2"];
  await register(client, queue, names);
  const seen: string[] = [];
  const worker = new Worker(client, queue, unique("w"), async (lease: Lease) => {
    seen.push(lease.name);
  }, { maxLeases: 2, heartbeatMs: 200, logger: quiet });
  const running = worker.run();
  await eventually(async () => (await baton.completed(queue)).SUCCESS === names.length, 20_000);
  worker.stop();
  await running;
  assert.deepEqual(seen.sort(), names);
  assert.equal(client.closed, false);
  assert.deepEqual((await listAgents(client, queue)).agents, [], "the worker left the shared client open");
}

/** A Subscriber over `client` gets and acks one scheduled message (scheduled through `client`). */
async function scheduleRoundTrip(client: Client): Promise<void> {
  const receiver = unique("ts-conn-rcv");
  const scheduler = new Scheduler(client);
  const scheduled = await scheduler.schedule(receiver, "hello");
  const got: Message[] = [];
  const sub = new Subscriber(client, receiver, "c1", async (m) => { got.push(m); }, { logger: quiet });
  const running = sub.run();
  await eventually(() => sub.acked === 1, 20_000);
  sub.stop();
  await running;
  scheduler.close();
  assert.equal(got.length, 1);
  assert.equal(got[0].id, scheduled.id);
  assert.equal(Buffer.from(got[0].payload).toString(), "hello");
  assert.equal(sub.failed, 0);
  assert.equal(await scheduler.cancel(receiver, scheduled.id), false, "acked, gone; and the scheduler left the client open");
}

describe("TLS, mutual TLS and a token", () => {
  let certs: string;
  let otherCerts: string;
  let token: string;
  let baton: BatonServer;
  let client: Client;
  let tls: ConnectOptions;

  before(async () => {
    certs = devCerts();
    otherCerts = devCerts();
    token = makeToken("ts-admin", "admin", join(certs, "ts-tokens.toml"));
    baton = await BatonServer.start({
      BATON_TLS__CERT_FILE: join(certs, "server.pem"),
      BATON_TLS__KEY_FILE: join(certs, "server.key"),
      BATON_TLS__CLIENT_CA_FILE: join(certs, "ca.pem"),
      BATON_AUTH__TOKENS_FILE: join(certs, "ts-tokens.toml"),
    });
    tls = { ca: join(certs, "ca.pem"), cert: join(certs, "client.pem"), key: join(certs, "client.key") };
    client = connect(baton.addr, { ...tls, token });
  });
  after(async () => {
    client?.close();
    await baton?.stop();
    for (const dir of [certs, otherCerts]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("a connected Client (CA, client certificate, token) runs a Worker end to end", async () => {
    await client.waitReady(20_000);
    assert.equal(client.tls, true);
    await workerRoundTrip(client, baton);
  });

  test("one Client shared by Claimer, Pool, Scheduler and Subscriber", async () => {
    const pool = new Pool(client, unique("ts-conn-pool"));
    const claimer = new Claimer(client, pool.pool, "ts-claimer", { waitMs: 2_000, logger: quiet });
    const offered = await pool.offer(["vm-1"]);
    assert.equal(offered.idle, 1);
    const value = await claimer.withClaim(async (claim) => {
      assert.equal(claim.id, "vm-1");
      assert.ok(claim.token > 0n);
      const s = await pool.status();
      assert.deepEqual([s.idle, s.claimed], [0n, 1n]);
      return "done";
    });
    assert.equal(value, "done");
    claimer.close();
    pool.close();
    await scheduleRoundTrip(client);
    // Every helper closed: the shared client is still open.
    const s = await new Pool(client, pool.pool).status();
    assert.deepEqual([s.idle, s.claimed, s.deadLettered], [1n, 0n, 0n]);
  });

  test("Leadership over the same Client", async () => {
    const lead = new Leadership(client, unique("ts-conn-election"), "replica-a", { ttlMs: 3_000, campaignWaitMs: 1_000 }).start();
    const token = await lead.waitElected(20_000);
    assert.ok(token > 0n && lead.isLeader);
    await lead.close();
    assert.equal(lead.isLeader, false);
    assert.equal(client.closed, false);
    assert.deepEqual((await listAgents(client, unique("ts-none"))).agents, [], "close() left the shared client open");
  });

  test("PEM contents and Buffers work as well as file paths; serverName overrides the checked name", async () => {
    const pem = (f: string) => readFileSync(join(certs, f));
    const byContent = connect(`https://${baton.addr}`, {
      ca: pem("ca.pem").toString("utf8"), cert: pem("client.pem"), key: pem("client.key"), token, serverName: "localhost",
    });
    try {
      assert.deepEqual((await listAgents(byContent, unique("ts-none"))).agents, []);
    } finally {
      byContent.close();
    }
    const wrongName = connect(baton.addr, { ...tls, token, serverName: "not-baton.example", timeoutMs: 15_000 });
    try {
      assert.equal((await failure(listAgents(wrongName, "q"))).code, status.UNAVAILABLE);
    } finally {
      wrongName.close();
    }
  });

  test("no token or a wrong one → UNAUTHENTICATED (unary and streaming)", async () => {
    for (const bad of [undefined, "baton_not-a-real-token"]) {
      const other = connect(baton.addr, { ...tls, token: bad });
      try {
        assert.equal((await failure(listAgents(other, "q"))).code, status.UNAUTHENTICATED);
        assert.equal((await streamFailure(other, unique("ts-rcv"))).code, status.UNAUTHENTICATED);
      } finally {
        other.close();
      }
    }
  });

  test("a wrong CA → the call fails (UNAVAILABLE)", async () => {
    const other = connect(baton.addr, { ...tls, ca: join(otherCerts, "ca.pem"), token, timeoutMs: 15_000 });
    try {
      assert.equal((await failure(listAgents(other, "q"))).code, status.UNAVAILABLE);
      await assert.rejects(other.waitReady(300));
    } finally {
      other.close();
    }
  });

  test("no client certificate on a mutual-TLS Baton → the call fails (UNAVAILABLE)", async () => {
    const other = connect(baton.addr, { ca: tls.ca, token, timeoutMs: 15_000 });
    try {
      // The server refuses the handshake (TLS alert "certificate required"): never connected.
      assert.equal((await failure(listAgents(other, "q"))).code, status.UNAVAILABLE);
    } finally {
      other.close();
    }
  });
});

describe("a token over plaintext (interceptor)", () => {
  let dir: string;
  let token: string;
  let baton: BatonServer;
  let client: Client;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "baton-ts-tokens-"));
    token = makeToken("ts-admin", "admin", join(dir, "tokens.toml"));
    baton = await BatonServer.start({ BATON_AUTH__TOKENS_FILE: join(dir, "tokens.toml") });
    client = connect(`http://${baton.addr}`, { token });
  });
  after(async () => {
    client?.close();
    await baton?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("unary and streaming calls carry the token", async () => {
    assert.equal(client.tls, false);
    await workerRoundTrip(client, baton);
    await scheduleRoundTrip(client);
  });

  test("without it → UNAUTHENTICATED; the old forms (an address) still connect", async () => {
    const other = connect(baton.addr);
    try {
      assert.equal((await failure(listAgents(other, "q"))).code, status.UNAUTHENTICATED);
      assert.equal((await streamFailure(other, unique("ts-rcv"))).code, status.UNAUTHENTICATED);
    } finally {
      other.close();
    }
    const pool = new Pool(baton.addr, unique("ts-pool"));
    try {
      assert.equal((await failure(pool.status())).code, status.UNAUTHENTICATED);
    } finally {
      pool.close();
    }
  });
});

describe("what every call carries (a local gRPC server)", () => {
  interface Seen {
    method: string;
    authorization: string[];
    /** ms left until the call's deadline when the server got it (Infinity: none). */
    left: number;
  }
  let server: Server;
  let target: string;
  const seen: Seen[] = [];
  const record = (method: string, metadata: Metadata, deadline: Deadline) => {
    const at = deadline instanceof Date ? deadline.getTime() : deadline;
    seen.push({ method, authorization: metadata.get("authorization").map(String), left: at - Date.now() });
  };
  const last = (method: string) => seen.filter((s) => s.method === method).at(-1)!;

  before(async () => {
    server = new Server();
    server.addService(AgentServiceService, {
      getAgent: (call: ServerUnaryCall<agent.GetAgentRequest, unknown>, callback: (e: null, r: agent.GetAgentResponse) => void) => {
        record("getAgent", call.metadata, call.getDeadline());
        callback(null, { agent: undefined });
      },
      acquire: (call: ServerUnaryCall<agent.AcquireRequest, unknown>, callback: (e: null, r: agent.AcquireResponse) => void) => {
        record("acquire", call.metadata, call.getDeadline());
        callback(null, { leases: [] });
      },
    } as UntypedServiceImplementation);
    server.addService(ScheduleServiceService, {
      subscribe: (call: ServerWritableStream<unknown, SubscribeResponse>) => {
        record("subscribe", call.metadata, call.getDeadline());
        call.end();
      },
    } as UntypedServiceImplementation);
    const port = await new Promise<number>((ok, fail) =>
      server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (err, p) => (err ? fail(err) : ok(p))));
    target = `127.0.0.1:${port}`;
  });
  after(() => server?.forceShutdown());

  const getAgent = (client: Client, settings: { timeoutMs?: number; metadata?: Metadata; interceptors?: Interceptor[] } = {}) =>
    new Promise<void>((resolve, reject) => {
      const options = {
        ...(settings.timeoutMs !== undefined ? { deadline: new Date(Date.now() + settings.timeoutMs) } : {}),
        ...(settings.interceptors ? { interceptors: settings.interceptors } : {}),
      };
      client.agents.getAgent({ queue: "q", name: "a" }, settings.metadata ?? new Metadata(), options, (err) => (err ? reject(err) : resolve()));
    });
  const acquire = (client: Client, waitMs?: number) => unary(client.agents.acquire.bind(client.agents), {
    queue: "q", workerId: "w", maxLeases: 1, wait: waitMs === undefined ? undefined : duration(waitMs),
  });
  const subscribe = (client: Client) => new Promise<void>((resolve, reject) => {
    const stream = client.schedules.subscribe({ receiver: "r", consumerId: "c", maxInFlight: 1 });
    stream.on("data", () => {});
    stream.on("error", reject);
    stream.on("end", resolve);
  });

  test("the token on unary and streaming calls; a unary call's default deadline; none on streams", async () => {
    const client = connect(target, { token: "t0k", timeoutMs: 60_000 });
    try {
      await getAgent(client);
      assert.deepEqual(last("getAgent").authorization, ["Bearer t0k"]);
      assert.ok(last("getAgent").left > 30_000 && last("getAgent").left <= 60_000, `default deadline: ${last("getAgent").left} ms left`);
      await getAgent(client, { timeoutMs: 5_000 });
      assert.ok(last("getAgent").left <= 5_000, "a deadline the call set is kept");
      await subscribe(client);
      assert.deepEqual(last("subscribe").authorization, ["Bearer t0k"]);
      assert.equal(last("subscribe").left, Infinity, "no default deadline on a stream");
    } finally {
      client.close();
    }
  });

  test("a long poll's default deadline is at least its wait + 10 s", async () => {
    const client = connect(target, { timeoutMs: 1_000 });
    try {
      await acquire(client, 120_000);
      assert.ok(last("acquire").left > 100_000 && last("acquire").left <= 130_000, `${last("acquire").left} ms left`);
      assert.deepEqual(last("acquire").authorization, []);
      await acquire(client);
      assert.ok(last("acquire").left <= 1_000, "no wait: the default deadline");
    } finally {
      client.close();
    }
    const noDefault = connect(target, { timeoutMs: 0 });
    try {
      await getAgent(noDefault);
      assert.equal(last("getAgent").left, Infinity, "timeoutMs: 0 sets none");
    } finally {
      noDefault.close();
    }
  });

  test("the caller's metadata is left as it was; a call's own interceptors keep the token", async () => {
    const client = connect(target, { token: "t0k" });
    try {
      const metadata = new Metadata();
      metadata.set("x-request", "1");
      await getAgent(client, { metadata });
      assert.deepEqual(metadata.get("authorization"), []);
      await getAgent(client, { metadata: (() => { const m = new Metadata(); m.set("authorization", "Bearer mine"); return m; })() });
      assert.deepEqual(last("getAgent").authorization, ["Bearer mine"], "a call's own authorization wins (one value)");
      let intercepted = 0;
      const counting: Interceptor = (options, next) => { intercepted++; return new InterceptingCall(next(options)); };
      await getAgent(client, { interceptors: [counting] });
      assert.equal(intercepted, 1);
      assert.deepEqual(last("getAgent").authorization, ["Bearer t0k"]);
      // A generated client of the caller's own over the shared channel carries the same.
      const mine = client.stub(AgentServiceClient);
      await new Promise<void>((ok, fail) => mine.getAgent({ queue: "q", name: "a" }, (err) => (err ? fail(err) : ok())));
      assert.deepEqual(last("getAgent").authorization, ["Bearer t0k"]);
      assert.ok(last("getAgent").left <= 10_000, "and the default deadline");
    } finally {
      client.close();
    }
    assert.equal(client.closed, true);
  });

  test("settings are checked", () => {
    assert.throws(() => connect(target, { cert: "client.pem" }), /both cert and key/);
    assert.throws(() => connect(target, { tls: false, ca: "ca.pem" }), /tls: false/);
    assert.throws(() => connect(target, { token: "two words" }), /printable ASCII/);
    assert.throws(() => connect(target, { ca: "/nonexistent/ca.pem" }), /cannot read the CA file/);
    assert.throws(() => connect(target, { timeoutMs: -1 }), /timeoutMs/);
    assert.throws(() => connect(""), /target/);
  });
});

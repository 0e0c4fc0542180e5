// The web console in a real browser (Debian's Chromium, driven by playwright-core) against a live
// Baton with data in it: the overview shows every source and the sweeper's leader; the queue page
// lists agents with their holder and token and finds them by key; dead letters group by error and
// a bulk retry puts them back (checked over gRPC); pause and resume change what Acquire gets; the
// overview charts p50/p99 latency of the busiest methods and lists calls per method; the
// elections page lists every registered election and an election's terms; the charts draw the
// server's history of the last hour, on a time axis, the same after a reload; a read-only console
// shows no buttons and refuses changes; a receiver's scheduled messages page, open one by one at
// their own address, and cancel; the workers page lists an open long poll; a DAG and a batch made
// with the producer helper: blocked agents show as blocked in the queue list, a fan-in agent's page
// lists its parents (how and when each finished, what it returned, a link to each, whose page lists
// it as a child), a finished one-shot parent's page shows its kept finish and result, the Batches
// tab shows a batch's state, members, pending, succeeded, failed and callbacks, and turns done
// by itself when its last member finishes; a queue of 100,000 agents shows one page at a time
// (first page under 1 s, a bounded DOM), its last agent is found by name prefix, a changed row
// shows up live, and a quiet page is not read again on every update. Screenshots of every page are saved in clients/.tools/console-screenshots/.
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { credentials } from "@grpc/grpc-js";
import { Browser, chromium, Page } from "playwright-core";
import { AgentServiceClient, ClaimServiceClient, duration, LeaderServiceClient, Outcome, ParentFailure, Producer, ScheduleServiceClient,
  unary } from "../src";
import { MessageState } from "../src/gen/baton/v1/schedule";
import { AgentState } from "../src/gen/baton/v1/agent";
import { BatonServer, eventually, freePorts, unique } from "./baton";

// The page's globals, inside page.evaluate / waitForFunction (this package compiles without DOM types).
declare const document: any;

const CHROMIUM = process.env.CHROMIUM_BIN ?? "/usr/bin/chromium";
// dist/test -> clients/.tools (git-ignored)
const SHOTS = resolve(__dirname, "..", "..", "..", ".tools", "console-screenshots");
// As the machine's notes say: no sandbox as root, and no background networking (closed network).
const ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync"];

let baton: BatonServer;
let consoleUrl: string;
let browser: Browser;
let agents: AgentServiceClient;
let claims: ClaimServiceClient;
let leaders: LeaderServiceClient;
let schedules: ScheduleServiceClient;
const queue = unique("mail");
const pool = unique("sandboxes");
const election = unique("reports");
const receiver = unique("reminders");
// The ids of the receiver's three messages, by delivery time.
const messageIds: string[] = [];
// The tokens of the election's two terms: a's (resigned), then b's (current).
const terms: bigint[] = [];

async function startWithConsole(env: Record<string, string> = {}): Promise<[BatonServer, string]> {
  const [port] = await freePorts();
  const server = await BatonServer.start({ BATON_CONSOLE__LISTEN: `127.0.0.1:${port}`, ...env });
  const url = `http://127.0.0.1:${port}`;
  await eventually(async () => (await fetch(url + "/api/overview").catch(() => null))?.ok, 30_000);
  return [server, url];
}

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  // worker-7 holds digest-1 through every test without a heartbeat: no orphan take-back.
  [baton, consoleUrl] = await startWithConsole({ BATON_ORPHAN_CLEANUP__THRESHOLD_MS: "3600000" });
  agents = new AgentServiceClient(baton.addr, credentials.createInsecure());
  claims = new ClaimServiceClient(baton.addr, credentials.createInsecure());
  const def = (name: string, key: string, maxAttempts: number) => ({
    name, interval: duration(3_600_000), timeout: duration(60_000), errorInterval: duration(3_600_000),
    payload: Buffer.from(""), labels: { team: "growth" }, maxAttempts, cron: "", timeZone: "", catchUp: 0, key, priority: 0, traceparent: "", after: [], onParentFailure: 0, idempotencyKey: "", idempotencyWindow: undefined, keepResult: false, idempotencyMode: 0, debounce: undefined, expireAt: undefined, ttl: undefined, waitFor: undefined,
  });
  await unary(agents.register.bind(agents), {
    requestId: "",
    queue, resetSchedule: false,
    agents: [def("digest-1", "acme", 0), def("digest-2", "acme", 0), def("digest-3", "globex", 0),
      def("bounce-1", "", 1), def("bounce-2", "", 1)],
  });
  const got = await unary(agents.acquire.bind(agents), { queue, workerId: "worker-7", maxLeases: 5, wait: undefined });
  assert.equal(got.leases.length, 5);
  for (const l of got.leases.filter((l) => l.name.startsWith("bounce"))) {
    await unary(agents.complete.bind(agents), { requestId: "", queue, name: l.name, token: l.token, outcome: Outcome.OUTCOME_SERVER_ERROR,
      message: "upstream 502", retryAfter: undefined, errorClass: "", httpStatus: 0, result: Buffer.from(""), waitFor: undefined });
  }
  for (const l of got.leases.filter((l) => l.name !== "digest-1" && !l.name.startsWith("bounce"))) {
    await unary(agents.complete.bind(agents), { requestId: "", queue, name: l.name, token: l.token, outcome: Outcome.OUTCOME_SUCCESS,
      message: "", retryAfter: undefined, errorClass: "", httpStatus: 0, result: Buffer.from(""), waitFor: undefined });
  }
  await unary(claims.offer.bind(claims), { requestId: "", pool, resources: [{ id: "sb-1", attributes: {} }, { id: "sb-2", attributes: {} }] });
  leaders = new LeaderServiceClient(baton.addr, credentials.createInsecure());
  const a = await unary(leaders.campaign.bind(leaders), { election, candidateId: "node-a", ttl: duration(60_000), wait: undefined });
  await unary(leaders.resign.bind(leaders), { election, candidateId: "node-a", token: a.token });
  // node-b leads for ten minutes: the tests before the elections page (the charts wait for
  // samples) must not outlast its term.
  const b = await unary(leaders.campaign.bind(leaders), { election, candidateId: "node-b", ttl: duration(600_000), wait: undefined });
  terms.push(a.token, b.token);
  schedules = new ScheduleServiceClient(baton.addr, credentials.createInsecure());
  for (const [i, payload] of [Buffer.from("remind ops@example.com"), Buffer.from([0xff, 0x00, 0x10]), Buffer.from("third")].entries()) {
    const got = await unary(schedules.schedule.bind(schedules), { receiver, payload, delay: duration(3_600_000 + i * 1000),
      deliverAt: undefined, key: "", traceparent: "", requestId: "", keyWindow: undefined });
    messageIds.push(got.id);
  }
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
});

after(async () => {
  await browser?.close();
  agents?.close();
  claims?.close();
  leaders?.close();
  schedules?.close();
  await baton?.stop();
});

async function open(url: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(url);
  return page;
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, name), fullPage: true });

test("the overview shows every source, its figures and the sweeper's leader, live", async () => {
  const page = await open(consoleUrl + "/#overview");
  const mail = page.locator(`tr[data-source="queue:${queue}"]`);
  await mail.waitFor();
  const cells = await mail.locator("td").allTextContents();
  // kind, name, status, size, in use, idle, oldest, stuck, DLQ, …
  assert.deepEqual([cells[0], cells[1], cells[4], cells[8]], ["queue", queue, "1", "2"], cells.join(" | "));
  const sandboxes = await page.locator(`tr[data-source="pool:${pool}"] td`).allTextContents();
  assert.equal(sandboxes[5], "2", "two idle resources");
  await page.waitForFunction(() => !["-", "(none)"].includes(document.getElementById("sweeper").textContent));
  assert.equal(await page.locator("[data-testid=breaker-dispatch]").textContent(), "closed");
  assert.equal(await page.locator("[data-testid=breaker-writeback]").textContent(), "closed");
  // The event stream keeps it current.
  await page.waitForFunction(() => document.getElementById("live").textContent.startsWith("live"));
  await shot(page, "overview.png");
  await page.close();
});

test("the overview charts p50 and p99 latency of the busiest methods, and calls per method", async () => {
  // GetAgent, 60 times before the page opens and more while it is open: among the busiest
  // methods whatever else the console itself calls, and called in the intervals it shows.
  for (let i = 0; i < 60; i++) await unary(agents.getAgent.bind(agents), { queue, name: "digest-2" });
  const page = await open(consoleUrl + "/#overview");
  await page.locator('#latency tr[data-method="GetAgent"]').waitFor();
  const time = /^\d+(\.\d+)? (ms|s)$/;
  // method, calls/s, p50, p99, calls: the last update's interval had GetAgent calls.
  const cells = (await eventually(async () => {
    for (let i = 0; i < 5; i++) await unary(agents.getAgent.bind(agents), { queue, name: "digest-2" });
    const cells = await page.locator('#latency tr[data-method="GetAgent"] td').allTextContents();
    return /^\d+\.\d$/.test(cells[1]) && time.test(cells[2]) && time.test(cells[3]) ? cells : null;
  }, 30_000))!;
  assert.equal(cells[0], "GetAgent");
  assert.ok(Number(cells[1]) > 0, cells.join(" | "));
  assert.ok(Number(cells[4]) >= 60, cells.join(" | "));
  // The chart draws GetAgent's points, and names it in the legend.
  await page.waitForFunction(() => {
    const c = document.querySelector("[data-testid=latency-chart]");
    return Number(c.dataset.points) > 1 && c.dataset.methods.split(",").includes("GetAgent");
  });
  assert.match(await page.locator("[data-testid=latency-legend]").textContent() ?? "", /GetAgent/);
  await shot(page, "latency.png");
  await page.close();
});

test("the charts show the server's last hour, on a time axis, across a reload", async () => {
  const page = await open(consoleUrl + "/#overview");
  const points = (id: string) => page.evaluate((i) => Number(document.getElementById(i).dataset.points), id);
  // Three samples (one every 5 s since Baton started).
  await eventually(async () => (await points("chart")) >= 3, 30_000);
  const first = await page.locator("[data-testid=throughput-chart]").getAttribute("data-from");
  assert.ok(first, "the first sample's time");
  assert.ok(await points("backlog-chart") >= 9, "backlog, in use and dead letters for each sample");
  assert.ok((await page.locator("[data-testid=backlog-chart]").getAttribute("data-ticks"))!.length > 0, "a time axis");
  await shot(page, "history.png");
  // A new tab (a reload) draws the same samples at once: they are the server's, not the tab's.
  const drawnBefore = await points("chart");
  const t0 = Date.now();
  await page.reload();
  await page.waitForFunction((n) => Number(document.getElementById("chart").dataset.points) >= n, drawnBefore);
  const redrawnMs = Date.now() - t0;
  console.log(`# the reloaded page drew ${drawnBefore}+ samples in ${redrawnMs} ms`);
  // The server's samples, not the tab's own: the reloaded page starts from the same first sample
  // (a tab sampling for itself would start at the reload). No bound on the time: a busy machine
  // is not a failure.
  assert.equal(await page.locator("[data-testid=throughput-chart]").getAttribute("data-from"), first, "the same first sample");
  await shot(page, "history-after-reload.png");
  await page.close();
});

test("the queue page shows holders and tokens, finds agents by name prefix and by key", async () => {
  const page = await open(consoleUrl + "/#queue");
  await page.selectOption("[data-testid=queue-select]", queue);
  const held = page.locator('tr[data-agent="digest-1"]');
  await held.waitFor();
  const cells = await held.locator("td").allTextContents();
  assert.equal(cells[1], "working");
  assert.equal(cells[3], "worker-7");
  assert.match(cells[4], /^\d+$/, "the lease's token");
  const rowNames = () => page.locator("#agents tr").evaluateAll((rows) => rows.map((r: any) => r.dataset.agent));
  // The search box is a name prefix (the server's name index); the filter reads name, key,
  // holder and labels.
  await page.fill("[data-testid=agent-search]", "digest-");
  await page.waitForFunction(() => document.querySelectorAll("#agents tr").length === 3);
  assert.deepEqual(await rowNames(), ["digest-1", "digest-2", "digest-3"]);
  await page.fill("[data-testid=agent-search]", "");
  await page.fill("[data-testid=agent-filter]", "acme");
  await page.waitForFunction(() => document.querySelectorAll("#agents tr").length === 2);
  assert.deepEqual((await rowNames()).sort(), ["digest-1", "digest-2"]);
  await shot(page, "queue.png");
  // A row opens the agent's own view, at an address of its own.
  await page.click('tr[data-agent="digest-1"]');
  await page.waitForFunction(() => document.querySelector('#agent-detail tr[data-field="holder (worker)"] td')?.textContent === "worker-7");
  assert.equal(new URL(page.url()).hash, `#/agent/${queue}/digest-1`);
  assert.match(await page.locator('#agent-detail tr[data-field="token"] td').textContent() ?? "", /^\d+$/);
  assert.equal(await page.locator('#agent-detail tr[data-field="labels"] td').textContent(), "team=growth");
  await shot(page, "agent.png");
  await page.close();
});

test("dead letters group by error, and a bulk retry puts them back", async () => {
  const page = await open(consoleUrl + "/#deadletters");
  await page.locator("[data-testid=group-SERVER_ERROR]").waitFor();
  assert.equal(await page.locator("[data-testid=group-SERVER_ERROR]").textContent(), "SERVER_ERROR × 2");
  await page.fill("[data-testid=dl-search]", "bounce");
  await page.waitForFunction(() => document.querySelectorAll("#deadletters tr").length === 2);
  await shot(page, "deadletters.png");
  // A row opens the dead letter's own view, at an address of its own.
  await page.click('tr[data-deadletter="bounce-1"]');
  await page.waitForFunction(() => document.querySelector('#deadletter-detail tr[data-field="message"] td')?.textContent === "upstream 502");
  assert.equal(new URL(page.url()).hash, `#/deadletter/queue/${queue}/bounce-1`);
  assert.equal(await page.locator('#deadletter-detail tr[data-field="error class"] td').textContent(), "SERVER_ERROR");
  assert.equal(await page.locator('#deadletter-detail tr[data-field="last holder"] td').textContent(), "worker-7");
  assert.equal(await page.locator('#deadletter-detail tr[data-field="labels"] td').textContent(), "team=growth");
  await shot(page, "deadletter.png");
  await page.goBack();
  await page.waitForFunction(() => document.querySelectorAll("#deadletters tr").length === 2);
  await page.check("[data-testid=dl-all]");
  await page.click("[data-testid=dl-retry]");
  await page.waitForFunction(() => document.getElementById("dl-result").textContent === "retried 2");
  await page.waitForFunction(() => document.querySelectorAll("#deadletters tr").length === 0);
  for (const name of ["bounce-1", "bounce-2"]) {
    const got = await unary(agents.getAgent.bind(agents), { queue, name });
    assert.equal(got.agent!.state, AgentState.AGENT_STATE_WAITING, `${name} is waiting again`);
  }
  await page.close();
});

test("pause holds the queue and resume releases it", async () => {
  const page = await open(consoleUrl + "/#overview");
  await page.click(`[data-testid=pause-queue-${queue}]`);
  await page.locator(`[data-testid=resume-queue-${queue}]`).waitFor();
  await shot(page, "paused.png");
  const held = await unary(agents.acquire.bind(agents), { queue, workerId: "worker-8", maxLeases: 5, wait: undefined });
  assert.equal(held.leases.length, 0, "a paused queue hands out nothing");
  await page.click(`[data-testid=resume-queue-${queue}]`);
  await page.locator(`[data-testid=pause-queue-${queue}]`).waitFor();
  const got = await unary(agents.acquire.bind(agents), { queue, workerId: "worker-8", maxLeases: 5, wait: undefined });
  assert.deepEqual(got.leases.map((l) => l.name).sort(), ["bounce-1", "bounce-2"]);
  await page.close();
});

test("the elections page lists every registered election and its history; pools show the scale-up signal", async () => {
  const page = await open(consoleUrl + "/#elections");
  await page.locator(`tr[data-election="${election}"]`).waitFor();
  const first = await page.locator("#elections tr").first().locator("td").allTextContents();
  assert.equal(first[0], "baton-sweeper", "Baton's own election first");
  const listed = await page.locator(`tr[data-election="${election}"] td`).allTextContents();
  // election, leader, term token, expires, last term started
  assert.deepEqual(listed.slice(0, 3), [election, "node-b", String(terms[1])]);
  await page.click("[data-testid=election-baton-sweeper]");
  await page.waitForFunction(() => document.getElementById("history-election").textContent === "baton-sweeper");
  await page.click(`[data-testid=election-${election}]`);
  await page.waitForFunction((e) => document.getElementById("history-election").textContent === e
    && document.querySelectorAll("#history tr").length === 2, election);
  const rows = await page.locator("#history tr").evaluateAll((trs) => trs.map((tr: any) =>
    [...tr.children].map((td: any) => td.textContent)));
  // token, leader, started, ended / expires, how
  assert.deepEqual(rows.map((r: string[]) => [r[0], r[1], r[4]]),
    [[String(terms[1]), "node-b", "current"], [String(terms[0]), "node-a", "resigned"]]);
  assert.ok(rows.every((r: string[]) => r[2] !== "-" && r[3] !== "-"), "start and end (or expiry) shown");
  await shot(page, "elections.png");
  await page.goto(consoleUrl + "/#pools");
  await page.waitForFunction((p) => [...document.querySelectorAll("#pools tr")].some((r: any) => r.textContent.startsWith(p)), pool);
  await shot(page, "pools.png");
  await page.close();
});

test("scheduled messages: a page of a receiver's messages, one message's view at its address, cancel", async () => {
  const page = await open(consoleUrl + "/#messages");
  page.on("dialog", (d) => d.accept());
  await page.waitForFunction((r) => [...document.querySelectorAll("#receiver-select option")].some((o: any) => o.value === r), receiver);
  await page.selectOption("[data-testid=receiver-select]", receiver);
  await page.waitForFunction(() => document.querySelectorAll("#messages tr").length === 3);
  const ids = await page.locator("#messages tr").evaluateAll((rows) => rows.map((r: any) => r.dataset.message));
  assert.deepEqual(ids, messageIds, "by delivery time");
  assert.match(await page.locator("[data-testid=message-count]").textContent() ?? "", /^messages 1–3 of 3$/);
  await shot(page, "messages.png");
  // A row opens the message's own view: its payload as text (UTF-8) or as hex.
  await page.click(`tr[data-message="${messageIds[0]}"]`);
  await page.waitForFunction(() => document.getElementById("message-payload").textContent === "remind ops@example.com");
  assert.equal(new URL(page.url()).hash, `#/message/${receiver}/${messageIds[0]}`);
  assert.equal(await page.locator('#message-detail tr[data-field="state"] td').textContent(), "scheduled");
  assert.equal(await page.locator('#message-detail tr[data-field="deliveries"] td').textContent(), "0");
  await shot(page, "message.png");
  await page.goto(consoleUrl + `/#/message/${receiver}/${messageIds[1]}`);
  await page.waitForFunction(() => document.getElementById("message-payload").textContent === "ff 00 10");
  assert.match(await page.locator("[data-testid=message-payload-size]").textContent() ?? "", /^3 bytes, as hex$/);
  // Cancel from its view: gone from the receiver (checked over gRPC), and from the list.
  await page.click("[data-testid=message-cancel-one]");
  await page.waitForFunction(() => document.getElementById("message-one-result").textContent === "cancelled 1");
  const left = await unary(schedules.listMessages.bind(schedules), { receiver, state: MessageState.MESSAGE_STATE_UNSPECIFIED,
    pageSize: 10, pageToken: "", payloadBytes: 0 });
  assert.deepEqual(left.messages.map((m) => m.id), [messageIds[0], messageIds[2]]);
  await page.goto(consoleUrl + "/#messages");
  await page.waitForFunction(() => document.querySelectorAll("#messages tr").length === 2);
  await page.close();
});

test("the workers page lists this replica's open long polls", async () => {
  const idle = unique("idle");
  // A long poll on a queue with nothing due: open for its whole wait.
  const poll = unary(agents.acquire.bind(agents), { queue: idle, workerId: "worker-poll", maxLeases: 2, wait: duration(10_000) });
  const page = await open(consoleUrl + "/#workers");
  const listed = page.locator('tr[data-worker="worker-poll"]');
  await listed.waitFor();
  // kind, queue, worker, credit, opened, last seen
  const cells = await listed.locator("td").allTextContents();
  assert.deepEqual(cells.slice(0, 4), ["long poll", idle, "worker-poll", "2"]);
  await shot(page, "workers.png");
  assert.equal((await poll).leases.length, 0);
  await page.waitForFunction(() => !document.querySelector('tr[data-worker="worker-poll"]'));
  await page.close();
});

// A small DAG and a batch, made with the producer helper as a user would: fetch (one queue) →
// clean-a, clean-b, clean-c (another) → merge (the fan-in, after all three; clean-b's failure
// lets it run anyway), and a closed batch of three members with an on_complete callback. A
// worker's Acquire/Complete finishes some with results, and dead-letters one of each.
test("an agent's parents and children, and a batch's counts and callbacks", async () => {
  const producer = new Producer(baton.addr);
  const ingest = unique("ingest"), transform = unique("transform"), exporting = unique("export"), batch = unique("nightly");
  const complete = (q: string, name: string, token: bigint, outcome: Outcome, result: string, message = "") =>
    unary(agents.complete.bind(agents), { requestId: "", queue: q, name, token, outcome, message, retryAfter: undefined,
      errorClass: "", httpStatus: 0, result: Buffer.from(result), waitFor: undefined });
  // Leases of up to n agents; with `want`, long polls until that many were granted (children
  // are released after their parent's Complete, not within it).
  const acquire = async (q: string, n: number, want = 0) => {
    const leases = new Map<string, bigint>();
    const until = Date.now() + 20_000;
    do {
      const got = await unary(agents.acquire.bind(agents),
        { queue: q, workerId: "etl-worker", maxLeases: n - leases.size, wait: want ? duration(1_000) : undefined });
      for (const l of got.leases) leases.set(l.name, l.token);
    } while (leases.size < want && Date.now() < until);
    return leases;
  };
  try {
    await producer.register(ingest, [{ name: "fetch", payload: "s3://exports/2026-11-26/" }]);
    await producer.register(transform, [
      // clean-c's lease outlives the test: it stays working, its finish pending.
      ...["clean-a", "clean-b", "clean-c"].map((name) => ({ name, after: [{ queue: ingest, name: "fetch" }],
        maxAttempts: 1, timeout: duration(600_000) })),
      { name: "merge", after: [{ name: "clean-a" }, { name: "clean-b", onFailure: ParentFailure.PARENT_FAILURE_RUN_ANYWAY },
        { name: "clean-c" }] },
    ]);
    await producer.registerBatch(batch, exporting, [{ name: "part-1" }, { name: "part-2", maxAttempts: 1 },
      { name: "part-3", timeout: duration(600_000) }], { onComplete: [{ name: "notify", payload: "mail ops@example.com" }], close: true });

    // Before any work, the queue page shows the transform steps blocked.
    const page = await open(consoleUrl + "/#queue");
    await page.waitForFunction((q) => [...document.querySelectorAll("#queue-select option")].some((o: any) => o.value === q), transform);
    await page.selectOption("[data-testid=queue-select]", transform);
    // The queue first shown (the first in the list) may answer before the one picked.
    await page.waitForFunction(() => document.querySelectorAll("#agents tr").length === 4
      && document.querySelector('#agents tr[data-agent="merge"]'));
    const states = () => page.locator("#agents tr").evaluateAll((rows) => rows.map((r: any) =>
      r.dataset.agent + ":" + r.children[1].textContent));
    assert.deepEqual(await states(), ["clean-a:blocked", "clean-b:blocked", "clean-c:blocked", "merge:blocked"]);
    // Counted, though GetHealth leaves blocked agents out of the queue's figures.
    assert.equal(await page.locator("[data-testid=agent-count]").textContent(), "agents 1–4 of 4");

    // fetch succeeds; clean-a succeeds, clean-b fails for good, clean-c is held; part-1
    // succeeds, part-2 fails for good, part-3 is held.
    const fetched = await acquire(ingest, 1);
    await complete(ingest, "fetch", fetched.get("fetch")!, Outcome.OUTCOME_SUCCESS, "3 files");
    const cleaning = await acquire(transform, 4, 3);
    assert.deepEqual([...cleaning.keys()].sort(), ["clean-a", "clean-b", "clean-c"], "merge is blocked");
    await complete(transform, "clean-a", cleaning.get("clean-a")!, Outcome.OUTCOME_SUCCESS, '{"rows":1200,"note":"<b>ok</b>"}');
    await complete(transform, "clean-b", cleaning.get("clean-b")!, Outcome.OUTCOME_SERVER_ERROR, "", "disk full <tmp>");
    const parts = await acquire(exporting, 4);
    assert.deepEqual([...parts.keys()].sort(), ["part-1", "part-2", "part-3"], "notify waits for the batch");
    await complete(exporting, "part-1", parts.get("part-1")!, Outcome.OUTCOME_SUCCESS, "part-1.csv");
    await complete(exporting, "part-2", parts.get("part-2")!, Outcome.OUTCOME_SERVER_ERROR, "", "upstream 503");

    // The queue list: merge is still blocked (clean-c has not finished).
    await page.waitForFunction(() => document.querySelectorAll("#agents tr").length === 3, undefined, { timeout: 30_000 });
    assert.deepEqual(await states(), ["clean-b:dead-lettered", "clean-c:working", "merge:blocked"]);
    assert.equal(await page.locator("[data-testid=agent-count]").textContent(), "agents 1–3 of 3");
    await shot(page, "queue-blocked.png");

    // The fan-in's page: its parents, how and when each finished, what it returned, links.
    await page.goto(consoleUrl + `/#/agent/${transform}/merge`);
    await page.waitForFunction(() => document.querySelectorAll("#agent-parents tr[data-parent]").length === 3);
    const parents = await page.locator("#agent-parents tr[data-parent]").evaluateAll((rows) => rows.map((r: any) =>
      [...r.children].map((td: any) => td.textContent)));
    // queue, name, finish, finished at, result
    assert.deepEqual(parents.map((p: string[]) => [p[0], p[1], p[2], p[4]]), [
      [transform, "clean-a", "succeeded", '{"rows":1200,"note":"<b>ok</b>"}'],
      [transform, "clean-b", "dead-lettered", "-"],
      [transform, "clean-c", "pending", "-"],
    ]);
    assert.match(parents[0][3], /^\d{4}-\d\d-\d\dT/, "clean-a's finish time");
    assert.match(parents[1][3], /^\d{4}-\d\d-\d\dT/, "clean-b's finish time");
    assert.equal(parents[2][3], "-", "clean-c has not finished");
    assert.equal(await page.locator("#agent-parents b").count(), 0, "a result's markup is text");
    assert.equal(await page.locator("[data-testid=agent-parents-count]").textContent(), "3 in all, 1 pending");
    assert.equal(await page.locator('#agent-detail tr[data-field="state"] td').textContent(), "blocked (waiting for 1 of 3 parents)");
    const links = await page.locator("#agent-parents a").evaluateAll((as) => as.map((a: any) => a.getAttribute("href")));
    assert.deepEqual(links, ["clean-a", "clean-b", "clean-c"].map((n) => `#/agent/${transform}/${n}`));
    await shot(page, "agent-dependencies.png");

    // A parent's link opens its page, which lists its own parent and its child.
    await page.click(`#agent-parents tr[data-parent="${transform}/clean-c"] a`);
    await page.waitForFunction(() => document.querySelector('#agent-children tr td:nth-child(2)')?.textContent === "merge");
    assert.equal(new URL(page.url()).hash, `#/agent/${transform}/clean-c`);
    assert.equal(await page.locator('#agent-detail tr[data-field="state"] td').textContent(), "working");
    assert.equal(await page.locator('#agent-detail tr[data-field="holder (worker)"] td').textContent(), "etl-worker");
    const up = await page.locator("#agent-parents tr td").allTextContents();
    assert.deepEqual([up[0], up[1], up[2], up[4]], [ingest, "fetch", "succeeded", "3 files"]);
    assert.equal(await page.locator("#agent-children a").getAttribute("href"), `#/agent/${transform}/merge`);
    await shot(page, "agent-parent.png");
    // And back to the child by its link.
    await page.click("#agent-children a");
    await page.waitForFunction(() => document.querySelectorAll("#agent-parents tr[data-parent]").length === 3);
    // A parent that finished and is gone (a one-shot agent): its kept finish and its result,
    // nothing left over from the page before.
    await page.click(`#agent-parents tr[data-parent="${transform}/clean-a"] a`);
    await page.waitForFunction(() => document.querySelector('#agent-detail tr[data-field="state"] td')?.textContent === "finished: succeeded");
    assert.equal(await page.locator("[data-testid=agent-result]").textContent(), '{"rows":1200,"note":"<b>ok</b>"}');
    assert.equal(await page.locator('#agent-detail tr[data-field="outcome"] td').textContent(), "OUTCOME_SUCCESS");
    assert.ok(await page.locator("#agent-family").isHidden(), "no parents or children of another agent");
    assert.equal(await page.locator("#error").textContent(), "");
    await shot(page, "agent-finished.png");
    // The dead-lettered parent is still there, with its error; its finish released its child
    // (which runs anyway), so none waits for it.
    await page.goBack();
    await page.click(`#agent-parents tr[data-parent="${transform}/clean-b"] a`);
    await page.waitForFunction(() => document.querySelector('#agent-detail tr[data-field="last error"] td')?.textContent === "SERVER_ERROR: disk full <tmp>");
    assert.equal(await page.locator('#agent-detail tr[data-field="state"] td').textContent(), "dead-lettered");
    assert.equal(await page.locator("#agent-children tr[data-child]").count(), 0);
    assert.equal(await page.locator("#agent-children").textContent(), "none waiting for it");

    // The Batches tab: a batch by name, its counts and its callback.
    await page.click("nav a[data-tab=batch]");
    await page.fill("[data-testid=batch-input]", batch);
    await page.press("[data-testid=batch-input]", "Enter");
    await page.waitForFunction(() => document.querySelector('#batch-detail tr[data-field="members"] td')?.textContent === "3");
    assert.equal(new URL(page.url()).hash, `#/batch/${batch}`);
    const field = (f: string) => page.locator(`#batch-detail tr[data-field="${f}"] td`).textContent();
    assert.deepEqual([await field("state"), await field("pending"), await field("succeeded"), await field("failed"), await field("done at")],
      ["closed (waiting for its members)", "1", "1", "1", "-"]);
    assert.deepEqual(await page.locator("#batch-callbacks tr td").allTextContents(), [exporting, "notify"]);
    assert.equal(await page.locator("nav a.active").textContent(), "Batches");
    await shot(page, "batch.png");
    // The callback's page: blocked on the batch, which links back to the batch's page.
    await page.click("#batch-callbacks a");
    // Wait for the callback's own parent row: the agent tables still hold the last agent's rows
    // until the new page's answer replaces them.
    await page.waitForFunction((b) => document.querySelector(`#agent-parents tr[data-parent="${b}"]`) !== null, batch);
    assert.equal(new URL(page.url()).hash, `#/agent/${exporting}/notify`);
    assert.deepEqual(await page.locator("#agent-parents tr td").allTextContents(), ["(batch)", batch, "pending", "-", "-"]);
    assert.equal(await page.locator('#agent-detail tr[data-field="state"] td').textContent(), "blocked (waiting for 1 of 1 parent)");
    assert.equal(await page.locator("[data-testid=agent-parents-count]").textContent(), "1 in all, 1 pending");
    await shot(page, "batch-callback.png");
    await page.click("#agent-parents a");
    await page.waitForFunction((b) => document.getElementById("batch-name").textContent === b
      && document.querySelector('#batch-detail tr[data-field="members"] td')?.textContent === "3", batch);

    // The last member finishes: the batch is done (the open page reads it again by itself), and
    // its callback is released.
    await complete(exporting, "part-3", parts.get("part-3")!, Outcome.OUTCOME_SUCCESS, "part-3.csv");
    await page.waitForFunction(() => document.querySelector('#batch-detail tr[data-field="state"] td')?.textContent === "done",
      undefined, { timeout: 30_000 });
    assert.deepEqual([await field("pending"), await field("succeeded"), await field("failed")], ["0", "2", "1"]);
    assert.match(await field("done at") ?? "", /^\d{4}-\d\d-\d\dT/);
    await shot(page, "batch-done.png");
    await page.click("#batch-callbacks a");
    await page.waitForFunction(() => document.querySelector("#agent-parents tr td:nth-child(3)")?.textContent === "dead-lettered");
    assert.equal(await page.locator('#agent-detail tr[data-field="state"] td').textContent(), "waiting");
    // An unknown batch: its error, and nothing left of the last one.
    await page.goto(consoleUrl + "/#/batch/no-such-batch");
    await page.waitForFunction(() => document.getElementById("error").textContent !== "");
    assert.equal(await page.locator("#batch-detail tr").count(), 0);
    await page.close();
  } finally {
    producer.close();
  }
});

test("a read-only console shows no buttons and refuses changes", async () => {
  const [readOnly, url] = await startWithConsole({ BATON_CONSOLE__READ_ONLY: "true" });
  try {
    const page = await open(url + "/#overview");
    await page.locator("#readonly:not([hidden])").waitFor();
    assert.equal(await page.locator("button[data-testid^=pause-]").count(), 0);
    const refused = await page.evaluate(async () => {
      const r = await fetch("/api/pause", { method: "POST", headers: { "content-type": "application/json" },
        body: JSON.stringify({ kind: "queue", name: "anything" }) });
      return r.status;
    });
    assert.equal(refused, 403);
    await shot(page, "read-only.png");
    await page.close();
  } finally {
    await readOnly.stop();
  }
});

// The CPU time (user + system, seconds) of a process and its children that are still running
// (Baton's embedded redis-server), from /proc (Linux).
function cpuSeconds(pid: number): number {
  const ticks = (p: string) => {
    const stat = readFileSync(`/proc/${p}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  };
  let total = ticks(String(pid));
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    for (const child of readFileSync(`/proc/${pid}/task/${task}/children`, "utf8").split(" ").filter(Boolean)) {
      total += ticks(child);
    }
  }
  return total / 100; // USER_HZ
}

// A queue of 100,000 agents: the page shows one page of rows (the DOM stays bounded), quickly
// (pages follow the queue's definitions, not name order: no name index);
// a name-prefix search finds the queue's last agent; Next and Previous page through it; a
// change to an agent on screen shows up through the event stream (no reload of the queue); an
// agent's view is deep-linkable and shows its payload.
test("a queue of 100,000 agents: one page at a time, search finds the last, live rows", async () => {
  const big = unique("big");
  const N = 100_000, BATCH = 1_000, PAGE = 50;
  const name = (i: number) => "job-" + String(i).padStart(6, "0");
  const def = (i: number) => ({
    name: name(i), interval: duration(3_600_000), timeout: duration(60_000), errorInterval: duration(3_600_000),
    payload: Buffer.from(i === N - 1 ? JSON.stringify({ report: "weekly", to: "ops@example.com" }) : ""), labels: { shard: String(i % 16) },
    maxAttempts: 0, cron: "", timeZone: "", catchUp: 0, key: "", priority: 0, traceparent: "", after: [], onParentFailure: 0, idempotencyKey: "", idempotencyWindow: undefined, keepResult: false, idempotencyMode: 0, debounce: undefined, expireAt: undefined, ttl: undefined, waitFor: undefined,
  });
  const loadStart = Date.now();
  for (let b = 0; b < N / BATCH; b += 4) {
    await Promise.all([0, 1, 2, 3].filter((k) => b + k < N / BATCH).map((k) => unary(agents.register.bind(agents), {
      requestId: "", queue: big, resetSchedule: false,
      agents: Array.from({ length: BATCH }, (_, j) => def((b + k) * BATCH + j)),
    })));
  }
  console.log(`# registered ${N} agents in ${Date.now() - loadStart} ms`);

  const page = await open(consoleUrl + "/#queue");
  // What the page reads for the queue: each answer's size, to show that it does not grow.
  // (Requests are counted as they are sent; an answer's size arrives later.)
  const answers: number[] = [];
  let reads = 0;
  page.on("request", (r) => { if (r.url().includes("/api/agents?")) reads++; });
  page.on("response", async (r) => {
    if (r.url().includes("/api/agents?")) answers.push((await r.body().catch(() => Buffer.alloc(0))).length);
  });
  await page.waitForFunction((q) => [...document.querySelectorAll("#queue-select option")].some((o: any) => o.value === q), big);
  const t0 = Date.now();
  await page.selectOption("[data-testid=queue-select]", big);
  // Pages walk the queue's definitions (no name index): the first page is some 50 agents.
  const shown = () => page.evaluate(() => [...document.querySelectorAll("#agents tr")].map((r: any) => r.dataset.agent).join(","));
  await page.waitForFunction(() => document.querySelectorAll("#agents tr[data-agent]").length === 50);
  const firstPageMs = Date.now() - t0;
  const first = await shown();
  console.log(`# first page of ${N} rendered in ${firstPageMs} ms`);
  assert.ok(firstPageMs < 1_000, `first page in ${firstPageMs} ms`);
  const rows = () => page.evaluate(() => document.querySelectorAll("#agents tr").length);
  assert.equal(await rows(), PAGE);
  assert.match(await page.locator("[data-testid=agent-count]").textContent() ?? "", /^agents 1–50 of 100,000$/);
  await shot(page, "queue-100k.png");

  // Next and Previous.
  await page.click("[data-testid=agent-next]");
  await page.waitForFunction((f) => [...document.querySelectorAll("#agents tr")].map((r: any) => r.dataset.agent).join(",") !== f, first);
  assert.equal(await rows(), PAGE);
  await page.click("[data-testid=agent-prev]");
  await page.waitForFunction((f) => [...document.querySelectorAll("#agents tr")].map((r: any) => r.dataset.agent).join(",") === f, first);

  // The last agent, by its name prefix.
  const t1 = Date.now();
  await page.fill("[data-testid=agent-search]", name(N - 1));
  await page.locator(`tr[data-agent="${name(N - 1)}"]`).waitFor();
  const searchMs = Date.now() - t1;
  console.log(`# search found the last of ${N} in ${searchMs} ms`);
  assert.equal(await rows(), 1);
  await shot(page, "queue-100k-search.png");

  // Live: a worker takes an agent; its row (on screen by its prefix) turns to working with the
  // worker as holder, then back to waiting when it completes, by the event stream alone.
  const got = await unary(agents.acquire.bind(agents), { queue: big, workerId: "worker-big", maxLeases: 1, wait: undefined });
  assert.equal(got.leases.length, 1);
  const lease = got.leases[0];
  await page.fill("[data-testid=agent-search]", lease.name);
  const rowState = ([n, want]: string[]) => document.querySelector(`tr[data-agent="${n}"] td:nth-child(2)`)?.textContent === want;
  await page.waitForFunction(rowState, [lease.name, "working"]);
  assert.equal(await page.locator(`tr[data-agent="${lease.name}"] td`).nth(3).textContent(), "worker-big");
  const readsBefore = reads;
  await unary(agents.complete.bind(agents), { requestId: "", queue: big, name: lease.name, token: lease.token,
    outcome: Outcome.OUTCOME_SUCCESS, message: "", retryAfter: undefined, errorClass: "", httpStatus: 0, result: Buffer.from(""), waitFor: undefined });
  await page.waitForFunction(rowState, [lease.name, "waiting"]);
  assert.ok(reads > readsBefore, "the row was read again by the live update");
  assert.ok(await rows() <= PAGE, "the DOM holds at most a page of rows");
  // What the open tab costs Baton (and its Redis) over five live refreshes of the first page of
  // the 100,000: CPU time from /proc, per second of wall time.
  // A quiet view (the queue's counts in the pushed overview do not change) is read again on the
  // slow timer only (every fifth update), not on every update.
  await page.fill("[data-testid=agent-search]", "");
  await page.waitForFunction((f) => [...document.querySelectorAll("#agents tr")].map((r: any) => r.dataset.agent).join(",") === f, first);
  const updates = () => page.evaluate(() => Number(document.getElementById("live").dataset.events || 0));
  const [cpu0, wall0, seen, updates0] = [cpuSeconds(baton.proc.pid!), Date.now(), reads, await updates()];
  await eventually(async () => (await updates()) >= updates0 + 6, 60_000);
  const share = (cpuSeconds(baton.proc.pid!) - cpu0) / ((Date.now() - wall0) / 1000);
  const quietReads = reads - seen;
  console.log(`# ${quietReads} reads of the queue page over 6 updates of a quiet view`);
  assert.ok(quietReads >= 1 && quietReads <= 2, `${quietReads} reads over 6 updates`);
  console.log(`# Baton and its Redis used ${(share * 100).toFixed(1)} % of a core with the 100,000-agent queue page open`
    + " (its history sampler included)");
  // The console that read the whole queue every 2 s cost Baton alone 10 % of a core. The share
  // is printed, not bounded (a CPU share is a speed, and a shared machine's varies): what keeps it
  // small is checked above, one or two reads of a page over six updates, and a page per read.
  const largest = Math.max(...answers);
  console.log(`# largest /api/agents answer: ${largest} bytes over ${reads} reads`);
  assert.ok(largest < 64 * 1024, `an answer of ${largest} bytes`);
  await page.close();

  // The last agent's own view, by its address.
  const view = await open(consoleUrl + `/#/agent/${big}/${name(N - 1)}`);
  await view.waitForFunction(() => document.getElementById("agent-payload").textContent.includes("ops@example.com"));
  assert.equal(await view.locator('#agent-detail tr[data-field="state"] td').textContent(), "waiting");
  assert.match(await view.locator("[data-testid=agent-payload-size]").textContent() ?? "", /^\d+ bytes$/);
  await shot(view, "agent-100k-last.png");
  await view.close();
});

test("an agent's payload shows as text, or as hex when it is not UTF-8, its first 4,096 bytes", async () => {
  // The API answers the payload whole, in base64; the page shows its head.
  const q = unique("payloads");
  const agent = (name: string, payload: Buffer) => ({
    name, interval: duration(3_600_000), timeout: duration(60_000), errorInterval: undefined, payload, labels: {},
    maxAttempts: 0, cron: "", timeZone: "", catchUp: 0, key: "", priority: 0, traceparent: "", after: [],
    onParentFailure: 0, idempotencyKey: "", idempotencyWindow: undefined, keepResult: false, idempotencyMode: 0, debounce: undefined, expireAt: undefined, ttl: undefined, waitFor: undefined,
  });
  const text = "résumé ✓";
  await unary(agents.register.bind(agents), { requestId: "", queue: q, resetSchedule: false, agents: [
    agent("text", Buffer.from(text)),
    agent("binary", Buffer.alloc(5000, Buffer.from([0xff, 0x00]))),
    // 4,095 ASCII bytes and a two-byte character: the cap cuts inside it.
    agent("cut", Buffer.concat([Buffer.alloc(4095, "a"), Buffer.from("é")])),
  ] });
  const view = async (name: string) => {
    const page = await open(consoleUrl + `/#/agent/${q}/${name}`);
    await page.waitForFunction(() => document.getElementById("agent-payload-size").textContent !== "");
    const size = await page.locator("[data-testid=agent-payload-size]").textContent();
    const shown = await page.locator("[data-testid=agent-payload]").textContent();
    await page.close();
    return [size, shown];
  };
  assert.deepEqual(await view("text"), [`${Buffer.byteLength(text)} bytes`, text]);
  const [size, hex] = await view("binary");
  assert.equal(size, "5000 bytes, first 4096 shown, as hex");
  assert.equal(hex, Array(2048).fill("ff 00").join(" "));
  assert.deepEqual(await view("cut"), ["4097 bytes, first 4096 shown", "a".repeat(4095)]);
});

test("an agent's page shows the steps its run recorded", async () => {
  const q = unique("crawl");
  await unary(agents.register.bind(agents), {
    requestId: "", queue: q, resetSchedule: false,
    agents: [{ name: "site", interval: undefined, timeout: duration(60_000), errorInterval: undefined, payload: Buffer.from(""), labels: {},
      maxAttempts: 0, cron: "", timeZone: "", catchUp: 0, key: "", priority: 0, traceparent: "", after: [], onParentFailure: 0,
      idempotencyKey: "", idempotencyWindow: undefined, keepResult: false, idempotencyMode: 0, debounce: undefined, expireAt: undefined, ttl: undefined, waitFor: undefined }],
  });
  const [lease] = (await unary(agents.acquire.bind(agents), { queue: q, workerId: "crawler", maxLeases: 1, wait: undefined })).leases;
  for (const [step, result] of [["fetch", Buffer.from("<b>200 OK</b>")], ["parse", Buffer.from([0xff, 0x01])]] as const) {
    await unary(agents.recordStep.bind(agents), { queue: q, name: "site", token: lease.token, step, result: Buffer.from(result) });
  }
  const page = await open(`${consoleUrl}/#/agent/${q}/site`);
  await page.waitForFunction(() => document.querySelectorAll("#agent-steps tr[data-step]").length === 2);
  assert.equal(await page.locator("#agent-steps-section").isVisible(), true);
  const rows = await page.locator("#agent-steps tr").evaluateAll((trs) => trs.map((tr: any) =>
    Array.from(tr.querySelectorAll("td")).map((td: any) => td.textContent)));
  assert.deepEqual(rows.map((r: string[]) => [r[0], r[2]]), [["fetch", "<b>200 OK</b>"], ["parse", "ff 01"]]);
  assert.equal(await page.locator("#agent-steps b").count(), 0, "a step's result is text, not markup");
  await shot(page, "agent-steps.png");
  await page.close();
});

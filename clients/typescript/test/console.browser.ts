// The web console in a real browser (Debian's Chromium, driven by playwright-core) against a live
// Baton with data in it: the overview shows every source and the sweeper's leader; the queue page
// lists agents with their holder and token and finds them by key; dead letters group by error and
// a bulk retry puts them back (checked over gRPC); pause and resume change what Acquire gets; a
// read-only console shows no buttons and refuses changes. Screenshots of every page are saved
// in clients/.tools/console-screenshots/.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { credentials } from "@grpc/grpc-js";
import { Browser, chromium, Page } from "playwright-core";
import { AgentServiceClient, ClaimServiceClient, duration, Outcome, unary } from "../src";
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
const queue = unique("mail");
const pool = unique("sandboxes");

async function startWithConsole(env: Record<string, string> = {}): Promise<[BatonServer, string]> {
  const [port] = await freePorts();
  const server = await BatonServer.start({ BATON_CONSOLE__LISTEN: `127.0.0.1:${port}`, ...env });
  const url = `http://127.0.0.1:${port}`;
  await eventually(async () => (await fetch(url + "/api/overview").catch(() => null))?.ok, 30_000);
  return [server, url];
}

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  [baton, consoleUrl] = await startWithConsole();
  agents = new AgentServiceClient(baton.addr, credentials.createInsecure());
  claims = new ClaimServiceClient(baton.addr, credentials.createInsecure());
  const def = (name: string, key: string, maxAttempts: number) => ({
    name, interval: duration(3_600_000), timeout: duration(60_000), errorInterval: duration(3_600_000),
    payload: Buffer.from(""), labels: { team: "growth" }, maxAttempts, cron: "", timeZone: "", catchUp: 0, key, priority: 0, traceparent: "",
  });
  await unary(agents.register.bind(agents), {
    queue, resetSchedule: false,
    agents: [def("digest-1", "acme", 0), def("digest-2", "acme", 0), def("digest-3", "globex", 0),
      def("bounce-1", "", 1), def("bounce-2", "", 1)],
  });
  const got = await unary(agents.acquire.bind(agents), { queue, workerId: "worker-7", maxLeases: 5, wait: undefined });
  assert.equal(got.leases.length, 5);
  for (const l of got.leases.filter((l) => l.name.startsWith("bounce"))) {
    await unary(agents.complete.bind(agents), { queue, name: l.name, token: l.token, outcome: Outcome.OUTCOME_SERVER_ERROR,
      message: "upstream 502", retryAfter: undefined });
  }
  for (const l of got.leases.filter((l) => l.name !== "digest-1" && !l.name.startsWith("bounce"))) {
    await unary(agents.complete.bind(agents), { queue, name: l.name, token: l.token, outcome: Outcome.OUTCOME_SUCCESS,
      message: "", retryAfter: undefined });
  }
  await unary(claims.offer.bind(claims), { pool, resources: [{ id: "sb-1", attributes: {} }, { id: "sb-2", attributes: {} }] });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
});

after(async () => {
  await browser?.close();
  agents?.close();
  claims?.close();
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
  // The event stream keeps it current.
  await page.waitForFunction(() => document.getElementById("live").textContent.startsWith("live"));
  await shot(page, "overview.png");
  await page.close();
});

test("the queue page shows holders and tokens, and finds agents by key", async () => {
  const page = await open(consoleUrl + "/#queue");
  await page.selectOption("[data-testid=queue-select]", queue);
  const held = page.locator('tr[data-agent="digest-1"]');
  await held.waitFor();
  const cells = await held.locator("td").allTextContents();
  assert.equal(cells[1], "working");
  assert.equal(cells[3], "worker-7");
  assert.match(cells[4], /^\d+$/, "the lease's token");
  await page.fill("[data-testid=agent-search]", "acme");
  await page.waitForFunction(() => document.querySelectorAll("#agents tr").length === 2);
  const names = await page.locator("#agents tr").evaluateAll((rows) => rows.map((r: any) => r.dataset.agent));
  assert.deepEqual(names.sort(), ["digest-1", "digest-2"]);
  await shot(page, "queue.png");
  await page.close();
});

test("dead letters group by error, and a bulk retry puts them back", async () => {
  const page = await open(consoleUrl + "/#deadletters");
  await page.locator("[data-testid=group-SERVER_ERROR]").waitFor();
  assert.equal(await page.locator("[data-testid=group-SERVER_ERROR]").textContent(), "SERVER_ERROR × 2");
  await page.fill("[data-testid=dl-search]", "bounce");
  await page.waitForFunction(() => document.querySelectorAll("#deadletters tr").length === 2);
  await shot(page, "deadletters.png");
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

test("the elections and pools pages show terms and the scale-up signal", async () => {
  const page = await open(consoleUrl + "/#elections");
  await page.waitForFunction(() => document.querySelectorAll("#elections tr").length >= 1);
  const first = await page.locator("#elections tr").first().locator("td").allTextContents();
  assert.equal(first[0], "baton-sweeper");
  await shot(page, "elections.png");
  await page.goto(consoleUrl + "/#pools");
  await page.waitForFunction((p) => [...document.querySelectorAll("#pools tr")].some((r: any) => r.textContent.startsWith(p)), pool);
  await shot(page, "pools.png");
  await page.close();
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

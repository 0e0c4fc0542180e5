// gRPC-Web from a real browser (Debian's Chromium, driven by playwright-core) against a live
// Baton: a page served from another origin, allowed by `web.cors_allowed_origins` (given as
// BATON_WEB__CORS_ALLOWED_ORIGINS), calls ClaimService Offer and GetPool with fetch(), the
// messages encoded by the generated ts-proto codecs (bundled by esbuild), with a bearer token
// (authentication and CORS preflight), then reads a WatchPool server stream frame by frame while
// it offers another resource; a wrong token is refused (UNAUTHENTICATED). A page whose origin is
// not configured cannot call at all (the browser refuses: CORS), and nothing reaches Baton.
// A screenshot is saved in clients/.tools/grpcweb-screenshots/.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { credentials, Metadata } from "@grpc/grpc-js";
import { build } from "esbuild";
import { chromium, type Browser } from "playwright-core";
import { ClaimServiceClient } from "../src";
import { BatonServer, freePorts, unique } from "./baton";

const CHROMIUM = process.env.CHROMIUM_BIN ?? "/usr/bin/chromium";
// dist/test -> clients/typescript, and clients/.tools (git-ignored)
const PACKAGE = resolve(__dirname, "..", "..");
const SHOTS = resolve(PACKAGE, "..", ".tools", "grpcweb-screenshots");
const ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync"];
const TOKEN = "tok-browser-" + Math.random().toString(36).slice(2);

let baton: BatonServer;
let browser: Browser;
let claims: ClaimServiceClient;
const pages: Server[] = [];
let allowed: string;
let elsewhere: string;

/** The page's script: test/grpcweb.page.ts and the codecs it imports, for the browser. */
async function bundle(): Promise<string> {
  const out = await build({
    entryPoints: [join(PACKAGE, "test", "grpcweb.page.ts")],
    bundle: true, format: "iife", platform: "browser", target: "es2022", write: false,
    plugins: [{
      // The generated files also define grpc-js service clients, which the page never uses.
      name: "no-grpc-js",
      setup(b) {
        b.onResolve({ filter: /^@grpc\/grpc-js$/ }, () => ({ path: "grpc-js", namespace: "stub" }));
        b.onLoad({ filter: /.*/, namespace: "stub" }, () => ({
          contents: "export class Client {}; export const makeGenericClientConstructor = () => class {};",
        }));
      },
    }],
  });
  return out.outputFiles[0].text;
}

/** A tiny HTTP server for the page and its script, on its own port: its own origin. */
async function servePage(script: string): Promise<[Server, string]> {
  const html = `<!doctype html><meta charset="utf-8"><title>Baton over gRPC-Web</title>
<style>body{font:14px system-ui;margin:24px} pre{margin:4px 0}</style>
<h1>Baton over gRPC-Web</h1><div id="log"></div><script src="/page.js"></script>`;
  const server = createServer((req, res) => {
    const js = req.url === "/page.js";
    res.writeHead(200, { "content-type": js ? "text/javascript" : "text/html" });
    res.end(js ? script : html);
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  return [server, `http://127.0.0.1:${(server.address() as { port: number }).port}`];
}

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  const script = await bundle();
  let server: Server;
  [server, allowed] = await servePage(script);
  pages.push(server);
  [server, elsewhere] = await servePage(script);
  pages.push(server);
  const tokens = join(SHOTS, `tokens-${process.pid}.toml`);
  const sha256 = createHash("sha256").update(TOKEN).digest("hex");
  writeFileSync(tokens, `[[tokens]]\nname = "browser"\nsha256 = "${sha256}"\nroles = ["worker", "producer"]\n`);
  baton = await BatonServer.start({
    BATON_AUTH__TOKENS_FILE: tokens,
    // A list in an environment variable: TOML's array syntax.
    BATON_WEB__CORS_ALLOWED_ORIGINS: `["${allowed}"]`,
  });
  claims = new ClaimServiceClient(baton.addr, credentials.createInsecure());
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
});

after(async () => {
  await browser?.close();
  claims?.close();
  await baton?.stop();
  for (const p of pages) p.close();
});

function authorized(): Metadata {
  const md = new Metadata();
  md.set("authorization", `Bearer ${TOKEN}`);
  return md;
}

test("a page of an allowed origin calls Baton over gRPC-Web, unary and a server stream", async () => {
  const pool = unique("gpus");
  const page = await browser.newPage({ viewport: { width: 900, height: 400 } });
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(allowed + "/");
  const result = await page.evaluate(([base, token, pool]) => (globalThis as any).grpcWeb.run(base, token, pool),
    [`http://${baton.addr}`, TOKEN, pool] as const);
  await page.screenshot({ path: join(SHOTS, "grpcweb.png"), fullPage: true });
  console.log("page result:", JSON.stringify(result));
  assert.deepEqual(errors, []);
  assert.equal(result.offeredIdle, 1);
  assert.equal(result.idleAfterOffer, 1);
  assert.deepEqual([result.watched[0], result.watched[result.watched.length - 1]], [1, 2], "the stream's first status, then the change");
  assert.match(result.denied, /grpc-status 16/, "a wrong token: UNAUTHENTICATED");
  const text = await page.locator("#log").innerText();
  assert.match(text, /WatchPool message 1 → idle 1/);
  // What the page did, seen over gRPC.
  const got = await new Promise<any>((ok, fail) => claims.getPool({ pool }, authorized(), (e, r) => (e ? fail(e) : ok(r))));
  assert.equal(Number(got.status.idle), 2);
  await page.close();
});

test("a page of another origin is refused by the browser (CORS), and nothing reaches Baton", async () => {
  const pool = unique("gpus");
  const page = await browser.newPage();
  await page.goto(elsewhere + "/");
  const result = await page.evaluate(([base, token, pool]) => (globalThis as any).grpcWeb.refused(base, token, pool),
    [`http://${baton.addr}`, TOKEN, pool] as const);
  console.log("other origin:", result);
  assert.match(result, /TypeError: Failed to fetch/);
  const got = await new Promise<any>((ok, fail) => claims.getPool({ pool }, authorized(), (e, r) => (e ? fail(e) : ok(r))));
  assert.equal(Number(got.status.idle), 0, "the Offer never reached Baton");
  await page.close();
});

// A live Baton for the tests: target/debug/baton (or $TEST_BATON_BIN) with its own embedded
// redis-server in a temporary data dir, on free loopback ports; stopped with SIGTERM after.

import { ChildProcess, spawn } from "node:child_process";
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { createConnection, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const REPO = resolve(__dirname, "..", "..", "..", "..");

/** The baton binary the tests run. */
export const BATON_BIN = process.env.TEST_BATON_BIN ?? join(REPO, "target", "debug", "baton");

/** Two distinct free loopback ports (gRPC, metrics): both are held at once while picked. */
export async function freePorts(): Promise<[number, number]> {
  const held: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < 2; i++) {
      const server = createServer();
      held.push(server);
      ports.push(await new Promise<number>((ok, fail) => {
        server.once("error", fail);
        server.listen(0, "127.0.0.1", () => ok((server.address() as { port: number }).port));
      }));
    }
    return [ports[0], ports[1]];
  } finally {
    await Promise.all(held.map((s) => new Promise((done) => s.close(() => done(undefined)))));
  }
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    socket.once("connect", () => { socket.destroy(); ok(true); });
    socket.once("error", () => ok(false));
  });
}

export class BatonServer {
  proc!: ChildProcess;

  private constructor(
    readonly addr: string,
    readonly metricsPort: number,
    readonly dataDir: string,
    private readonly argv: string[],
    private readonly env: Record<string, string | undefined>,
  ) {}

  static async start(env: Record<string, string> = {}): Promise<BatonServer> {
    const binary = BATON_BIN;
    if (!existsSync(binary)) throw new Error(`${binary} is missing: build it with \`cargo build --bin baton\``);
    const dataDir = mkdtempSync(join(tmpdir(), "baton-ts-"));
    const [port, metricsPort] = await freePorts();
    const argv = [binary, "serve", "--listen", `127.0.0.1:${port}`, "--metrics-listen", `127.0.0.1:${metricsPort}`, "--data-dir", dataDir];
    // No console unless a test asks for one (tests run many Batons; the console's port is one).
    const server = new BatonServer(`127.0.0.1:${port}`, metricsPort, dataDir, argv, { BATON_CONSOLE__LISTEN: "", ...process.env, ...env });
    await server.spawn(port);
    return server;
  }

  private async spawn(port: number): Promise<void> {
    const log = openSync(join(this.dataDir, "baton.log"), "a");
    this.proc = spawn(this.argv[0], this.argv.slice(1), { env: this.env, stdio: ["ignore", log, log] });
    closeSync(log);
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (this.proc.exitCode !== null) throw new Error(`baton exited with ${this.proc.exitCode}: ${this.logs()}`);
      if (await canConnect(port)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    await this.stop();
    throw new Error("baton did not start listening within 30 s");
  }

  /**
   * SIGTERM (streams end cleanly, long polls answer), then the same binary again on the same port
   * and data dir: what was in Redis is still there.
   */
  async restart(): Promise<void> {
    await this.terminate();
    await this.spawn(Number(this.addr.split(":")[1]));
  }

  logs(): string {
    return readFileSync(join(this.dataDir, "baton.log"), "utf8").slice(-4000);
  }

  /** baton_agents_completed_total for `queue`, by outcome. */
  async completed(queue: string): Promise<Record<string, number>> {
    const text = await (await fetch(`http://127.0.0.1:${this.metricsPort}/metrics`)).text();
    const counts: Record<string, number> = {};
    for (const line of text.split("\n")) {
      if (!line.startsWith("baton_agents_completed_total{")) continue;
      const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
      if (labels.queue === queue) counts[labels.outcome] = Number(line.slice(line.lastIndexOf(" ") + 1));
    }
    return counts;
  }

  private async terminate(): Promise<void> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      const exited = new Promise((r) => this.proc.once("exit", r));
      this.proc.kill("SIGTERM");
      const timer = setTimeout(() => this.proc.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(timer);
    }
  }

  async stop(): Promise<void> {
    await this.terminate();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

export async function eventually<T>(probe: () => T | Promise<T>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const unique = (prefix: string) => `${prefix}-${Math.random().toString(16).slice(2, 10)}`;

/** For the claim and subscriber tests: unacked messages come back after 0.5 s, a pool's line holds
 *  one waiting claim, and a full line hints a 250 ms pushback. */
export const QUICK_ENV = {
  BATON_SCHEDULE__ACK_TIMEOUT_MS: "500",
  BATON_POOL__MAX_LINE: "1",
  BATON_POOL__FULL_LINE_PUSHBACK_MS: "250",
};

// The leadership helper against a live Baton.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { credentials } from "@grpc/grpc-js";
import { LeaderServiceClient, Leadership, unary } from "../src";
import { BatonServer, eventually, unique } from "./baton";

let baton: BatonServer;
let client: LeaderServiceClient;
before(async () => {
  baton = await BatonServer.start();
  client = new LeaderServiceClient(baton.addr, credentials.createInsecure());
});
after(async () => {
  client.close();
  await baton.stop();
});

function record(lead: Leadership): [string, bigint][] {
  const events: [string, bigint][] = [];
  lead.on("elected", (t) => events.push(["elected", t]));
  lead.on("lost", (t) => events.push(["lost", t]));
  return events;
}

test("gains, keeps by renewing, and hands over on close", async () => {
  const election = unique("ts-election");
  const a = new Leadership(baton.addr, election, "a", { ttlMs: 600 });
  const b = new Leadership(baton.addr, election, "b", { ttlMs: 600 });
  const [ea, eb] = [record(a), record(b)];
  const tokenA = await a.start().waitElected(5_000);
  b.start();
  await new Promise((r) => setTimeout(r, 2_000)); // > 3 ttls: a renews, b waits
  assert.ok(a.isLeader && a.token === tokenA && !b.isLeader);
  const current = await unary(client.getLeader.bind(client), { election });
  assert.deepEqual([current.leaderId, current.token], ["a", tokenA]);
  await a.close();
  const tokenB = await b.waitElected(2_000);
  assert.ok(tokenB > tokenA);
  assert.deepEqual(ea, [["elected", tokenA], ["lost", tokenA]]);
  await b.close();
  assert.deepEqual(eb, [["elected", tokenB], ["lost", tokenB]]);
});

test("a loss is reported, then the helper campaigns again", async () => {
  const election = unique("ts-loss");
  const lead = new Leadership(baton.addr, election, "a", { ttlMs: 900 });
  const events = record(lead);
  const first = await lead.start().waitElected(5_000);
  // The term ends behind the helper's back.
  await unary(client.resign.bind(client), { election, candidateId: "a", token: first });
  await eventually(() => events.length >= 3, 4_000);
  assert.deepEqual(events.slice(0, 2), [["elected", first], ["lost", first]]);
  assert.equal(events[2][0], "elected");
  assert.ok(events[2][1] > first);
  assert.equal(lead.token, events[2][1]);
  await lead.close();
});

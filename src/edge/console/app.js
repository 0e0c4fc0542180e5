// Baton console: reads /api/* (the gRPC methods, in-process, behind the same authentication)
// and follows /events (the overview every 2 s; the open tab reads again only what it shows, one
// page of rows or one agent, when that view's counts in the overview change or every ~10 s).
// The answers are Baton's messages in proto3 JSON (see "proto3 JSON" below for what the page
// derives from them). No framework, no build step.
"use strict";

const state = { token: sessionStorage.getItem("baton-token") || "", readOnly: false, overview: null,
  latencyPrev: null, election: "", history: [], historyCapacity: 720, historyInterval: 5, historyRead: 0 };
const $ = (id) => document.getElementById(id);

function headers() {
  const h = { "content-type": "application/json" };
  if (state.token) h.authorization = "Bearer " + state.token;
  return h;
}

async function api(path, body) {
  const init = body === undefined ? { headers: headers() } : { method: "POST", headers: headers(), body: JSON.stringify(body) };
  const res = await fetch(path, init);
  const data = await res.json().catch(() => ({ error: res.statusText }));
  if (res.status === 401) showLogin(data.error);
  if (!res.ok) throw Object.assign(new Error(data.error || res.statusText), { status: res.status });
  $("error").textContent = "";
  return data;
}

function fail(e) { $("error").textContent = String(e.message || e); }

function cell(text, cls) {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined || text === "" ? "-" : String(text);
  if (cls) td.className = cls;
  return td;
}

function row(cells) {
  const tr = document.createElement("tr");
  for (const c of cells) tr.appendChild(c instanceof Node ? c : cell(c));
  return tr;
}

function fill(id, rows) {
  const body = $(id);
  body.replaceChildren(...rows);
}

function seconds(s) { return s === null || s === undefined ? "-" : s.toFixed(1) + "s"; }

// --- proto3 JSON ---------------------------------------------------------------------------------
// The API writes Baton's messages as the JSON calls on the gRPC port answer them: lowerCamelCase
// names, enums by their value names, 64-bit integers as strings, bytes as base64, Timestamps as
// RFC 3339, Durations as "1.5s", and a field at its default (0, "", false, an empty list, the
// enum's UNSPECIFIED) left out. What the page shows is derived here.

// A count: a 64-bit one arrives as a string, any at 0 not at all.
function num(v) { return Number(v || 0); }

// A Timestamp as RFC 3339 with milliseconds, UTC; "" when absent (or the zero instant).
function when(ts) {
  if (!ts) return "";
  const t = new Date(ts);
  return isNaN(t.getTime()) || t.getTime() === 0 ? "" : t.toISOString();
}

// A Duration ("1.500s") in seconds; null when absent.
function secs(d) { return d === undefined || d === null ? null : parseFloat(d); }

// An enum value name without its prefix, as the page names it: AGENT_STATE_DEAD_LETTERED, with
// prefix AGENT_STATE_, is "dead-lettered"; `absent` when the field is left out (UNSPECIFIED).
function enumName(value, prefix, absent) {
  if (!value || value === prefix + "UNSPECIFIED") return absent;
  return value.startsWith(prefix) ? value.slice(prefix.length).toLowerCase().replace(/_/g, "-") : value;
}
const agentState = (v) => enumName(v, "AGENT_STATE_", "detached");
const finishName = (v) => enumName(v, "FINISH_", "-");
const messageState = (v) => v === "MESSAGE_STATE_IN_FLIGHT" ? "in-flight" : "scheduled";
const healthName = (v) => enumName(v, "HEALTH_STATUS_", "?").toUpperCase();
const kindName = (source) => enumName((source || {}).kind, "SOURCE_KIND_", "?");
// How a term ended; one with no end recorded is current, or ended (it has an end time).
const termEnd = (t) => enumName(t.end, "TERM_END_", t.endedAt ? "ended" : "current");

// A GetHealth source as the tables and the live signatures read it.
function sourceRow(s) {
  return { kind: kindName(s.source), name: (s.source || {}).name || "", status: healthName(s.status), size: num(s.size),
    inUse: num(s.inUse), idle: num(s.idle), oldestAge: secs(s.oldestAge), stuck: num(s.stuck),
    deadLettered: num(s.deadLettered), processingRate: s.processingRate || 0, paused: !!s.paused, limits: s.limits };
}

// `b64` (bytes in proto3 JSON) as bytes.
function bytesOf(b64) {
  const raw = atob(b64 || "");
  const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}

// A payload or result as the page shows it ({bytes, shown, encoding, text}): its first `cap`
// bytes as text when they are UTF-8 (cut inside a character at the cap: the whole characters
// before it), else as hex. `total` is its size when `b64` holds only its head.
function preview(b64, cap, total) {
  const all = bytesOf(b64);
  const head = all.subarray(0, Math.min(all.length, cap));
  const bytes = total === undefined ? all.length : num(total);
  let text = null;
  try { text = new TextDecoder("utf-8", { fatal: true }).decode(head, { stream: true }); } catch (e) { text = null; }
  if (text === null || (text === "" && head.length > 0)) {
    return { bytes, shown: head.length, encoding: "hex", text: Array.from(head, (b) => b.toString(16).padStart(2, "0")).join("") };
  }
  return { bytes, shown: head.length, encoding: "text", text };
}

// The most bytes of a payload or result the page shows.
const SHOWN = 4096;

// Labels (or attributes) as "k=v, …", in key order.
function labelsText(map) {
  return Object.entries(map || {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => k + "=" + v).join(", ");
}

function limitsText(l) {
  if (!l) return "-";
  const parts = [];
  if (l.concurrency) parts.push("concurrency " + l.concurrency);
  if (l.rate) parts.push("rate " + (l.rate.perSecond || 0) + "/s");
  if (l.keyConcurrency) parts.push("per key " + l.keyConcurrency);
  if (l.keyRate) parts.push("per key " + (l.keyRate.perSecond || 0) + "/s");
  if (secs(l.priorityAging)) parts.push("priority aging " + secs(l.priorityAging) + "s");
  if (l.group) parts.push("group " + l.group);
  return parts.join(", ") || "-";
}

// --- overview --------------------------------------------------------------------------------
function renderOverview(o) {
  state.overview = o;
  state.readOnly = o.readOnly;
  $("readonly").hidden = !o.readOnly;
  for (const b of document.querySelectorAll(".write")) b.hidden = o.readOnly;
  const status = $("status");
  const health = healthName(o.health.status);
  status.textContent = health;
  status.className = "badge " + health;
  // Null to an operator scoped to other names than the sweeper's election.
  $("sweeper").textContent = o.sweeper ? o.sweeper.leaderId || "(none)" : "(outside your scopes)";
  $("sweeper-token").textContent = o.sweeper ? o.sweeper.token || "0" : "-";
  $("checked").textContent = when(o.health.checkedAt) || "-";
  renderBreakers(o.breakers);
  const sources = (o.health.sources || []).map(sourceRow);
  fill("sources", sources.map((s) => {
    const tr = row([s.kind, s.name, s.status, s.size, s.inUse, s.idle, seconds(s.oldestAge), s.stuck,
      s.deadLettered, s.processingRate.toFixed(1), limitsText(s.limits), s.paused ? "yes" : "no"]);
    tr.dataset.source = s.kind + ":" + s.name;
    const td = document.createElement("td");
    if (!o.readOnly) {
      const b = document.createElement("button");
      b.textContent = s.paused ? "Resume" : "Pause";
      b.dataset.testid = (s.paused ? "resume-" : "pause-") + s.kind + "-" + s.name;
      b.setAttribute("data-testid", b.dataset.testid);
      b.onclick = () => api(s.paused ? "/api/resume" : "/api/pause", { kind: s.kind, name: s.name })
        .then(refreshOverview).catch(fail);
      td.appendChild(b);
    }
    tr.appendChild(td);
    return tr;
  }));
  for (const [kind, id] of [["queue", "queue-select"], ["receiver", "receiver-select"]]) {
    const names = sources.filter((s) => s.kind === kind).map((s) => s.name);
    const select = $(id);
    const current = select.value;
    if ([...select.options].map((x) => x.value).join() !== names.join()) {
      select.replaceChildren(...names.map((q) => new Option(q, q)));
      if (names.includes(current)) select.value = current;
    }
  }
  if (o.latency) renderLatency(o.latency);
}

function renderBreakers(b) {
  for (const [id, s] of [["breaker-dispatch", b.dispatch], ["breaker-writeback", b.writeBack]]) {
    $(id).textContent = s;
    $(id).className = "badge breaker-" + s;
  }
}

// A read failed (Redis down, a breaker open): what the page shows is kept but marked stale,
// with when it was last fresh and why, and the breakers as the server has them now.
function markStale(data) {
  if (!document.body.classList.contains("stale")) state.staleSince = new Date();
  document.body.classList.add("stale");
  $("stale").hidden = false;
  $("stale").textContent = "Stale: these figures are from " + (state.freshAt ? state.freshAt.toLocaleTimeString() : "before")
    + "; Baton cannot read them now (" + data.error + ").";
  if (data.breakers) renderBreakers(data.breakers);
}

function markFresh() {
  state.freshAt = new Date();
  document.body.classList.remove("stale");
  $("stale").hidden = true;
}

// --- history (charts) ----------------------------------------------------------------------------
// The charts draw the samples the server keeps (/api/history: one every 5 s, the last hour, this
// replica's, lost when it restarts), so a reload shows the same hour; the page asks only for the
// samples newer than the last it has.
async function refreshSamples() {
  const since = state.history.length ? state.history[state.history.length - 1].atMs : 0;
  const data = await api("/api/history?" + new URLSearchParams({ since }));
  state.historyCapacity = data.capacity;
  state.historyInterval = data.intervalSeconds;
  state.history.push(...data.samples.filter((x) => x.atMs > since));
  if (state.history.length > state.historyCapacity) state.history.splice(0, state.history.length - state.historyCapacity);
  state.historyRead = Date.now();
  drawCharts();
}

function drawCharts() {
  const h = state.history;
  drawSeries($("chart"), [{ name: "completed / min", color: COLORS[0], values: h.map((x) => x.throughputPerMinute) }],
    (v) => v.toFixed(1));
  drawSeries($("backlog-chart"), [{ name: "backlog (due)", color: COLORS[0], values: h.map((x) => x.backlog) },
    { name: "in use", color: COLORS[2], values: h.map((x) => x.inUse) },
    { name: "dead letters", color: COLORS[1], values: h.map((x) => x.deadLetters) }], (v) => Math.round(v).toLocaleString());
  drawLatency();
}

// The time axis of the charts: from the first sample kept to the last (at least a minute), with
// a tick and a clock time every step that gives at most six of them.
function timeAxis(c, left, right) {
  const h = state.history;
  const to = h.length ? h[h.length - 1].atMs : Date.now();
  const from = Math.min(h.length ? h[0].atMs : to, to - 60_000);
  const x = (t) => left + ((t - from) / (to - from)) * (c.width - left - right);
  const steps = [10, 30, 60, 120, 300, 600, 900, 1800].map((s) => s * 1000);
  const step = steps.find((s) => (to - from) / s <= 6) || 3_600_000;
  const ticks = [];
  for (let t = Math.ceil(from / step) * step; t <= to; t += step) ticks.push(t);
  const g = c.getContext("2d");
  g.fillStyle = "#8a94a0";
  g.strokeStyle = "#e3e6ea";
  for (const t of ticks) {
    g.beginPath(); g.moveTo(x(t), 14); g.lineTo(x(t), c.height - 14); g.stroke();
    const label = new Date(t).toLocaleTimeString([], step < 60_000 ? { hour: "2-digit", minute: "2-digit", second: "2-digit" }
      : { hour: "2-digit", minute: "2-digit" });
    g.fillText(label, x(t) - 14, c.height - 2);
  }
  c.dataset.ticks = ticks.map((t) => new Date(t).toISOString()).join(",");
  c.dataset.from = h.length ? String(h[0].atMs) : "";
  return x;
}

// Whether two samples are too far apart to be joined (no sample in between: Baton could not
// read Redis, or the replica was busy).
function gap(a, b) { return b.atMs - a.atMs > 2.5 * state.historyInterval * 1000; }

// Lines of `series` (values per sample of state.history) on one linear scale from 0.
function drawSeries(c, series, label) {
  const g = c.getContext("2d");
  g.clearRect(0, 0, c.width, c.height);
  const x = timeAxis(c, 50, 10);
  const max = Math.max(1, ...series.flatMap((s) => s.values));
  const y = (v) => c.height - 16 - (v / max) * (c.height - 34);
  let points = 0;
  for (const s of series) {
    g.strokeStyle = s.color;
    g.beginPath();
    s.values.forEach((v, i) => {
      const [px, py] = [x(state.history[i].atMs), y(v)];
      if (i === 0 || gap(state.history[i - 1], state.history[i])) g.moveTo(px, py); else g.lineTo(px, py);
      points++;
    });
    g.stroke();
  }
  g.fillStyle = "#8a94a0";
  g.fillText(label(max), 2, 12);
  g.fillText("0", 2, c.height - 16);
  let left = 80;
  for (const s of series) {
    g.fillStyle = s.color;
    g.fillText("■ " + s.name, left, 12);
    left += g.measureText("■ " + s.name).width + 14;
  }
  c.dataset.points = String(points);
}

// --- latency -----------------------------------------------------------------------------------
// The overview carries this replica's cumulative counts per method and bucket; each update's
// interval is the difference from the previous one (the first: everything since the start).

// The q quantile of counts per bucket, interpolated within its bucket (as Prometheus's
// histogram_quantile); the last bound for calls beyond it; null without calls.
function quantile(buckets, bounds, q) {
  const total = buckets.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i < buckets.length; i++) {
    const n = buckets[i];
    if (n > 0 && below + n >= rank) {
      if (i >= bounds.length) return bounds[bounds.length - 1];
      const lower = i === 0 ? 0 : bounds[i - 1];
      return lower + (bounds[i] - lower) * ((rank - below) / n);
    }
    below += n;
  }
  return bounds[bounds.length - 1];
}

function latencyText(s) {
  if (s === null || s === undefined) return "-";
  if (s < 0.001) return (s * 1000).toFixed(2) + " ms";
  if (s < 1) return (s * 1000).toFixed(1) + " ms";
  return s.toFixed(2) + " s";
}

function renderLatency(l) {
  const prev = state.latencyPrev;
  const before = {};
  for (const m of (prev ? prev.methods : [])) before[m.method] = m.buckets;
  // Counts that went down: another replica answered, or this one restarted. Start again.
  const restarted = prev && (l.atMs < prev.atMs ||
    l.methods.some((m) => before[m.method] && m.buckets.some((n, i) => n < before[m.method][i])));
  const base = restarted ? {} : before;
  const seconds = prev && !restarted && l.atMs > prev.atMs ? (l.atMs - prev.atMs) / 1000 : null;
  const tick = {};
  for (const m of l.methods) {
    const buckets = m.buckets.map((n, i) => n - (base[m.method] ? base[m.method][i] : 0));
    const calls = buckets.reduce((a, b) => a + b, 0);
    tick[m.method] = { calls, total: m.calls, rate: seconds ? calls / seconds : null, longPoll: !!m.longPoll,
      p50: quantile(buckets, l.boundsSeconds, 0.5), p99: quantile(buckets, l.boundsSeconds, 0.99) };
  }
  state.latencyPrev = l;
  // Calls that wait for nothing first, busiest first; long polls (their time is mostly the wait
  // they asked for) after them, apart.
  const rows = Object.entries(tick).sort((a, b) => a[1].longPoll - b[1].longPoll || b[1].calls - a[1].calls || b[1].total - a[1].total);
  fill("latency", rows.map(([method, t]) => {
    const tr = row([method, t.rate === null ? "-" : t.rate.toFixed(1), latencyText(t.p50), latencyText(t.p99), t.total]);
    tr.dataset.method = method;
    if (t.longPoll) tr.className = "long-poll";
    return tr;
  }));
}

const COLORS = ["#2f6fb3", "#c0392b", "#2e8b57", "#d9a400", "#8e44ad"];

// p50 (dashed) and p99 (solid) of the busiest methods over the history kept (most calls in its
// samples), one point per sample with calls, on a log scale, on the charts' time axis.
function drawLatency() {
  const c = $("latency-chart"), g = c.getContext("2d");
  g.clearRect(0, 0, c.width, c.height);
  const h = state.history;
  const calls = {};
  for (const sample of h) for (const m of sample.latency) calls[m.method] = (calls[m.method] || 0) + m.calls;
  const top = Object.keys(calls).sort((a, b) => calls[b] - calls[a]).slice(0, COLORS.length);
  const values = [];
  for (const sample of h) {
    for (const m of sample.latency) if (top.includes(m.method) && m.p99Seconds !== null) values.push(m.p50Seconds, m.p99Seconds);
  }
  const x = timeAxis(c, 50, 10);
  let points = 0;
  const legend = [];
  if (values.length > 0) {
    const lo = Math.log10(Math.max(1e-5, Math.min(...values) / 1.5));
    const hi = Math.log10(Math.max(...values) * 1.5);
    const y = (v) => c.height - 16 - ((Math.log10(Math.max(v, 1e-5)) - lo) / Math.max(hi - lo, 1e-9)) * (c.height - 32);
    top.forEach((m, k) => {
      g.strokeStyle = g.fillStyle = COLORS[k];
      for (const [field, dash] of [["p99Seconds", []], ["p50Seconds", [4, 3]]]) {
        g.setLineDash(dash);
        g.beginPath();
        let prev = null;
        h.forEach((sample) => {
          const t = sample.latency.find((l) => l.method === m);
          if (!t || t[field] === null) { prev = null; return; }
          const [px, py] = [x(sample.atMs), y(t[field])];
          if (prev && !gap(prev, sample)) g.lineTo(px, py); else g.moveTo(px, py);
          g.fillRect(px - 1.5, py - 1.5, 3, 3);
          prev = sample;
          points++;
        });
        g.stroke();
      }
      legend.push(m);
    });
    g.setLineDash([]);
    g.fillStyle = "#8a94a0";
    g.fillText(latencyText(Math.pow(10, hi)), 2, 12);
    g.fillText(latencyText(Math.pow(10, lo)), 2, c.height - 16);
  } else {
    g.fillStyle = "#8a94a0";
    g.fillText("no calls yet", 60, 12);
  }
  c.dataset.points = String(points);
  c.dataset.methods = legend.join(",");
  const el = $("latency-legend");
  el.replaceChildren(...legend.map((m, k) => {
    const s = document.createElement("span");
    s.textContent = "■ " + m + " ";
    s.style.color = COLORS[k];
    return s;
  }));
}

async function refreshOverview() { renderOverview(await api("/api/overview")); }

// --- queue ---------------------------------------------------------------------------------------
// One page of the queue at a time (the server pages by cursor: the DOM holds at most a page of
// rows whatever the queue's size). `tokens` is the stack of page tokens that led here, for
// Previous; a new queue, search or filter starts again at the first page. Each refresh is
// numbered, and an answer to an older one (the user typed on) is dropped.
const PAGE = 50;
const paging = { agents: { tokens: [], token: "", next: "", seq: 0, busy: false },
  deadletters: { tokens: [], token: "", next: "", seq: 0, busy: false },
  messages: { tokens: [], token: "", next: "", seq: 0, busy: false } };

function restart(p) { p.tokens = []; p.token = ""; p.next = ""; }

function countText(data, rows, p, noun) {
  if (rows === 0) return "no " + noun + "s" + (p.token ? " on this page" : "");
  const first = p.tokens.length * data.limit + 1;
  // A queue's count (GetHealth's) leaves out agents blocked on their parents: a page can go past it.
  const total = data.count === null ? "?" : first + rows - 1 > data.count ? "at least " + (first + rows - 1).toLocaleString()
    : (data.countExact ? "" : "at most ") + data.count.toLocaleString();
  const scanned = data.scanned > rows ? " (" + data.scanned.toLocaleString() + " read)" : "";
  return noun + "s " + first.toLocaleString() + "–" + (first + rows - 1).toLocaleString() + " of " + total + scanned;
}

async function refreshQueue() {
  const queue = $("queue-select").value;
  if (!queue) return;
  const p = paging.agents, seq = ++p.seq;
  const q = new URLSearchParams({ queue, limit: PAGE, page_token: p.token, search: $("agent-search").value.trim(),
    filter: $("agent-filter").value.trim() });
  const data = await api("/api/agents?" + q);
  if (seq !== p.seq) return;
  const agents = data.agents || [];
  p.next = data.nextPageToken || "";
  $("agent-prev").disabled = p.tokens.length === 0;
  $("agent-next").disabled = !p.next;
  $("agent-count").textContent = countText(data, agents.length, p, "agent");
  fill("agents", agents.map((a) => {
    const d = a.agent || {}, st = agentState(a.state), working = st === "working";
    const tr = row([d.name, st, working ? when(a.deadline) : when(a.nextRunAt), working ? a.holder : "",
      working ? a.token : "", a.failureStreak || 0, d.key, d.priority || 0, a.progress]);
    tr.dataset.agent = d.name;
    tr.onclick = () => { location.hash = "#/agent/" + encodeURIComponent(queue) + "/" + encodeURIComponent(d.name); };
    return tr;
  }));
}

// Live refreshes skip a beat rather than pile up when a page is slow to answer.
function refreshOnce(p, refresh) {
  if (p.busy) return;
  p.busy = true;
  refresh().catch(fail).finally(() => { p.busy = false; });
}

function pageTo(p, refresh, forward) {
  if (forward && p.next) { p.tokens.push(p.token); p.token = p.next; }
  else if (!forward && p.tokens.length) { p.token = p.tokens.pop(); }
  else return;
  refresh().catch(fail);
}

// --- one agent (#/agent/<queue>/<name>) ----------------------------------------------------------
function agentRoute() {
  const m = /^#\/agent\/([^/]+)\/([^/]+)$/.exec(location.hash);
  return m ? { queue: decodeURIComponent(m[1]), name: decodeURIComponent(m[2]) } : null;
}

// Rows of a detail table: [field, value] pairs, each row's data-field its field.
function details(id, fields) {
  fill(id, fields.map(([k, v]) => {
    const th = document.createElement("th");
    th.textContent = k;
    const tr = row([th, v instanceof Node ? v : cell(v)]);
    tr.dataset.field = k;
    return tr;
  }));
}

// A payload or result ({bytes, shown, encoding, text}) into a <pre> and its size caption.
function showBytes(pre, size, pl) {
  size.textContent = pl.bytes + " bytes" + (pl.shown < pl.bytes ? ", first " + pl.shown + " shown" : "")
    + (pl.encoding === "hex" ? ", as hex" : "");
  pre.textContent = bytesText(pl);
}

function bytesText(pl) { return pl.encoding === "hex" ? pl.text.replace(/(.{2})/g, "$1 ").trim() : pl.text; }

// Another agent's page: nothing of the last one's stays on screen while this one is read (or
// when it cannot be).
function clearAgent() {
  for (const id of ["agent-detail", "agent-parents", "agent-children", "agent-steps"]) fill(id, []);
  $("agent-steps-section").hidden = true;
  for (const id of ["agent-payload", "agent-payload-size", "agent-result", "agent-result-size", "agent-parents-count"]) {
    $(id).textContent = "";
  }
  $("agent-family").hidden = true;
  $("agent-finished").hidden = true;
  $("agent-payload-section").hidden = false;
}

async function refreshAgent() {
  const route = agentRoute();
  if (!route) return;
  const shown = route.queue + "/" + route.name;
  if (state.agentShown !== shown) { clearAgent(); state.agentShown = shown; }
  $("agent-name").textContent = route.name;
  $("agent-queue").textContent = route.queue;
  const same = () => { const now = agentRoute(); return now && now.queue === route.queue && now.name === route.name; };
  let a;
  try {
    a = (await api("/api/agent?" + new URLSearchParams(route))).agent || {};
  } catch (e) {
    if (e.status !== 404) throw e;
    // Gone: a one-shot agent is removed when it finishes; Baton keeps its finish for a while.
    const r = await api("/api/result?" + new URLSearchParams(route)).catch((e2) => { throw e2.status === 404 ? e : e2; });
    if (same()) renderFinished(r);
    return;
  }
  if (!same()) return;
  $("agent-payload-section").hidden = false;
  $("agent-finished").hidden = true;
  const d = a.agent || {};
  const st = agentState(a.state), working = st === "working";
  const every = d.cron ? "cron " + d.cron + (d.timeZone ? " (" + d.timeZone + ")" : "")
    : secs(d.interval) ? "every " + secs(d.interval) + "s" : "once";
  const total = a.parentsTotal || 0;
  const blocked = st === "blocked" && total
    ? " (waiting for " + (a.parentsPending || 0) + " of " + total + (total === 1 ? " parent)" : " parents)") : "";
  details("agent-detail", [
    ["state", st + blocked + (a.cancelRequested ? " (cancel requested)" : "")],
    ["schedule", every],
    ["next run", when(a.nextRunAt)],
    ["lease deadline", working ? when(a.deadline) : ""],
    ["holder (worker)", working ? a.holder : ""],
    ["token", working ? a.token : ""],
    ["progress", a.progress],
    ["last error", a.lastErrorClass ? a.lastErrorClass + (a.lastErrorMessage ? ": " + a.lastErrorMessage : "") : ""],
    ["failures in a row", (a.failureStreak || 0) + (d.maxAttempts ? " of at most " + d.maxAttempts + " attempts" : "")],
    // Expiry (expire_at, or a ttl): until the first run starts; past it unstarted, it finishes expired.
    ["expires at", when(d.expireAt)],
    // A run waiting for an event (Signal) or a time (a durable timer): the event and its deadline.
    ["waiting for", waitText(a.waitingFor)],
    ["signals pending", a.signalsPending || ""],
    ["timeout", d.timeout === undefined ? "server default" : secs(d.timeout) + "s"],
    ["error interval", d.errorInterval === undefined ? "server default" : secs(d.errorInterval) + "s"],
    ["key", d.key],
    ["priority", d.priority || 0],
    ["labels", labelsText(d.labels)],
  ]);
  showBytes($("agent-payload"), $("agent-payload-size"), preview(d.payload, SHOWN));
  renderFamily(a);
  renderSteps(a.steps);
}

// What a waiting run waits for: "<event>", "<event> until <time>", or "a time until <time>".
function waitText(w) {
  if (!w) return "";
  const until = when(w.until);
  return (w.event || "a time") + (until ? " until " + until : "");
}

// The steps a run recorded (GetAgent while the run is not over; Await with a kept finish).
function renderSteps(steps) {
  steps = steps || [];
  $("agent-steps-section").hidden = steps.length === 0;
  fill("agent-steps", steps.map((s) => {
    const shown = preview(s.result, SHOWN);
    const result = cell(shown && shown.bytes ? bytesText(shown) : "", "result");
    if (shown && shown.bytes) result.title = shown.bytes + " bytes";
    const tr = row([cell(s.name || ""), cell(when(s.recordedAt)), result]);
    tr.dataset.step = s.name || "";
    return tr;
  }));
}

// An agent that finished and is gone: its kept finish (Await's answer), and the result its
// worker returned.
function renderFinished(answer) {
  $("agent-family").hidden = true;
  $("agent-payload-section").hidden = true;
  const r = answer.result;
  if (!answer.done || !r) {
    details("agent-detail", [["state", "gone (no finish recorded yet)"]]);
    return;
  }
  details("agent-detail", [
    ["state", "finished: " + finishName(r.finish)],
    ["finished at", when(r.finishedAt)],
    ["outcome", r.outcome],
    ["token", r.token || ""],
    ["message", r.message],
  ]);
  $("agent-finished").hidden = false;
  showBytes($("agent-result"), $("agent-result-size"), preview(r.result, SHOWN));
  renderSteps(answer.steps);
}

// An agent (or, with queue "", a batch) as a link to its page.
function agentLink(queue, name) {
  const a = document.createElement("a");
  a.textContent = name;
  a.href = queue ? "#/agent/" + encodeURIComponent(queue) + "/" + encodeURIComponent(name)
    : "#/batch/" + encodeURIComponent(name);
  const td = document.createElement("td");
  td.appendChild(a);
  return td;
}

function renderFamily(a) {
  const parents = a.parents || [], children = a.children || [];
  const total = a.parentsTotal || 0;
  $("agent-family").hidden = parents.length === 0 && children.length === 0;
  $("agent-parents-count").textContent = total
    ? total + " in all, " + (a.parentsPending || 0) + " pending" + (parents.length < total ? ", first " + parents.length + " shown" : "")
    : "";
  fill("agent-parents", parents.map((ps) => {
    const p = ps.parent || {}, queue = p.queue || "", name = p.name || "";
    // How the parent finished (with what its worker returned), or "pending".
    const finish = ps.result ? finishName(ps.result.finish) : "pending";
    const shown = ps.result ? preview(ps.result.result, SHOWN) : null;
    const result = cell(shown && shown.bytes ? bytesText(shown) : "", "result");
    if (shown && shown.bytes) result.title = shown.bytes + " bytes";
    const tr = row([cell(queue || "(batch)"), agentLink(queue, name), cell(finish, "finish-" + finish),
      cell(ps.result ? when(ps.result.finishedAt) : ""), result]);
    tr.dataset.parent = (queue ? queue + "/" : "") + name;
    tr.dataset.finish = finish;
    return tr;
  }));
  fill("agent-children", children.map((c) => {
    const queue = c.queue || "", name = c.name || "";
    const tr = row([cell(queue || "(batch)"), agentLink(queue, name)]);
    tr.dataset.child = (queue ? queue + "/" : "") + name;
    return tr;
  }));
  if (parents.length === 0) fill("agent-parents", [none(5, "none")]);
  if (children.length === 0) fill("agent-children", [none(2, "none waiting for it")]);
}

// The one row of an empty table, saying so.
function none(columns, text) {
  const td = cell(text, "muted");
  td.colSpan = columns;
  return row([td]);
}

// --- one batch (#batch, #/batch/<name>) ----------------------------------------------------------
function batchRoute() {
  const m = /^#\/batch\/([^/]+)$/.exec(location.hash);
  return m ? decodeURIComponent(m[1]) : null;
}

async function refreshBatch() {
  const name = batchRoute();
  if (state.batchShown !== name) {
    // Another batch (or none): nothing of the last one's stays on screen.
    fill("batch-detail", []);
    fill("batch-callbacks", []);
    state.batchShown = name;
  }
  $("batch-name").textContent = name || "-";
  if (!name) return;
  if (document.activeElement !== $("batch-input")) $("batch-input").value = name;
  const b = (await api("/api/batch?" + new URLSearchParams({ batch: name }))).status || {};
  if (batchRoute() !== name) return;
  const done = b.done ? "done" : b.closed ? "closed (waiting for its members)" : "open (members may be added)";
  details("batch-detail", [
    ["state", done],
    ["members", b.total || 0],
    ["pending", b.pending || 0],
    ["succeeded", b.succeeded || 0],
    ["failed", b.failed || 0],
    ["created", when(b.createdAt)],
    ["done at", when(b.doneAt)],
  ].map(([k, v]) => [k, String(v)]));
  fill("batch-callbacks", (b.callbacks || []).map((c) => {
    const queue = c.queue || "", name = c.name || "";
    const tr = row([cell(queue), agentLink(queue, name)]);
    tr.dataset.callback = queue + "/" + name;
    return tr;
  }));
}

// --- scheduled messages (#messages, #/message/<receiver>/<id>) ------------------------------------
async function refreshMessages() {
  const receiver = $("receiver-select").value;
  if (!receiver) { $("message-count").textContent = "no receivers"; return; }
  const picked = new Set([...document.querySelectorAll(".message-pick:checked")].map((b) => b.dataset.id));
  const p = paging.messages, seq = ++p.seq;
  const data = await api("/api/messages?" + new URLSearchParams({ receiver, state: $("message-state").value, limit: PAGE,
    page_token: p.token }));
  if (seq !== p.seq) return;
  const messages = data.messages || [];
  p.next = data.nextPageToken || "";
  $("message-prev").disabled = p.tokens.length === 0;
  $("message-next").disabled = !p.next;
  $("message-count").textContent = countText(data, messages.length, p, "message");
  fill("messages", messages.map((m) => {
    const box = document.createElement("input");
    box.type = "checkbox";
    box.className = "message-pick";
    box.dataset.id = m.id;
    box.checked = picked.has(m.id);
    box.onclick = (e) => e.stopPropagation();
    const td = document.createElement("td");
    td.appendChild(box);
    const st = messageState(m.state), flying = st === "in-flight";
    const tr = row([td, m.id, st, when(m.deliverAt), m.deliveryCount || 0, m.key, flying ? m.consumerId : "",
      flying ? when(m.ackDeadline) : "", num(m.payloadBytes)]);
    tr.dataset.message = m.id;
    tr.onclick = () => { location.hash = "#/message/" + encodeURIComponent(receiver) + "/" + encodeURIComponent(m.id); };
    return tr;
  }));
}

async function cancelMessages(receiver, ids, result) {
  if (ids.length === 0) return;
  if (!confirm("Cancel " + ids.length + " message(s)? They will not be delivered.")) return;
  const data = await api("/api/messages/cancel", { receiver, ids });
  let text = data.failed === 0 ? "cancelled " + data.done : "cancelled " + data.done + " of " + data.total + "; " + data.failed + " failed";
  const reasons = data.results.filter((r) => !r.ok).slice(0, 3).map((r) => r.id + ": " + r.error);
  if (reasons.length) text += " (" + reasons.join("; ") + (data.failed > reasons.length ? "; …" : "") + ")";
  result.textContent = text;
  result.className = data.failed === 0 ? "muted" : "error";
}

function messageRoute() {
  const m = /^#\/message\/([^/]+)\/([^/]+)$/.exec(location.hash);
  return m ? { receiver: decodeURIComponent(m[1]), id: decodeURIComponent(m[2]) } : null;
}

async function refreshMessage() {
  const route = messageRoute();
  if (!route) return;
  $("message-id").textContent = route.id;
  $("message-receiver").textContent = route.receiver;
  const m = await api("/api/message?" + new URLSearchParams(route));
  const now = messageRoute();
  if (!now || now.receiver !== route.receiver || now.id !== route.id) return;
  const st = messageState(m.state), flying = st === "in-flight";
  fill("message-detail", [
    ["state", st],
    ["deliver at", when(m.deliverAt)],
    ["deliveries", m.deliveryCount || 0],
    ["key", m.key],
    ["consumer", flying ? m.consumerId : ""],
    ["token", flying ? m.token : ""],
    ["ack deadline", flying ? when(m.ackDeadline) : ""],
  ].map(([k, v]) => {
    const th = document.createElement("th");
    th.textContent = k;
    const tr = row([th, cell(v)]);
    tr.dataset.field = k;
    return tr;
  }));
  // ListMessages carries the payload's head (`payloadHead`) and its size (`payloadBytes`).
  const pl = preview(m.payloadHead, SHOWN, m.payloadBytes);
  $("message-payload-size").textContent = pl.bytes + " bytes" + (pl.shown < pl.bytes ? ", first " + pl.shown + " shown" : "")
    + (pl.encoding === "hex" ? ", as hex" : "");
  $("message-payload").textContent = pl.encoding === "hex" ? pl.text.replace(/(.{2})/g, "$1 ").trim() : pl.text;
}

// --- dead letters ------------------------------------------------------------------------------
async function refreshDeadLetters() {
  const picked = new Set([...document.querySelectorAll(".dl-pick:checked")].map((b) => b.dataset.item));
  const p = paging.deadletters, seq = ++p.seq;
  const data = await api("/api/deadletters?" + new URLSearchParams({ search: $("dl-search").value, limit: PAGE,
    page_token: p.token }));
  if (seq !== p.seq) return;
  const letters = (data.deadLetters || []).map((d) => ({ kind: kindName(d.source), source: (d.source || {}).name || "",
    id: d.id || "", errorClass: d.errorClass || "", message: d.message, attempts: d.attempts || 0, failedAt: when(d.failedAt) }));
  p.next = data.nextPageToken || "";
  $("dl-prev").disabled = p.tokens.length === 0;
  $("dl-next").disabled = !p.next;
  $("dl-count").textContent = countText(data, letters.length, p, "dead letter");
  // This page's dead letters by error class.
  const byClass = new Map();
  for (const d of letters) byClass.set(d.errorClass, (byClass.get(d.errorClass) || 0) + 1);
  const groups = $("groups");
  groups.replaceChildren(...[...byClass].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([errorClass, count]) => {
    const g = { errorClass, count };
    const s = document.createElement("span");
    s.textContent = g.errorClass + " × " + g.count;
    s.title = "on this page";
    s.setAttribute("data-testid", "group-" + g.errorClass);
    s.onclick = () => { $("dl-search").value = g.errorClass; restart(p); refreshDeadLetters().catch(fail); };
    return s;
  }));
  fill("deadletters", letters.map((d) => {
    const box = document.createElement("input");
    box.type = "checkbox";
    box.className = "dl-pick";
    box.dataset.item = JSON.stringify({ kind: d.kind, source: d.source, id: d.id });
    box.checked = picked.has(box.dataset.item);
    const td = document.createElement("td");
    td.appendChild(box);
    box.onclick = (e) => e.stopPropagation();
    const tr = row([td, d.kind, d.source, d.id, d.errorClass, d.attempts, d.failedAt, cell(d.message, "message")]);
    tr.dataset.deadletter = d.id;
    tr.onclick = () => {
      location.hash = "#/deadletter/" + [d.kind, d.source, d.id].map(encodeURIComponent).join("/");
    };
    return tr;
  }));
}

// --- one dead letter (#/deadletter/<kind>/<source>/<id>) ----------------------------------------
function deadLetterRoute() {
  const m = /^#\/deadletter\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(location.hash);
  return m ? { kind: decodeURIComponent(m[1]), source: decodeURIComponent(m[2]), id: decodeURIComponent(m[3]) } : null;
}

async function refreshDeadLetter() {
  const route = deadLetterRoute();
  if (!route) return;
  $("deadletter-id").textContent = route.id;
  $("deadletter-source").textContent = route.kind + " " + route.source;
  const d = await api("/api/deadletter?" + new URLSearchParams(route));
  const now = deadLetterRoute();
  if (!now || now.kind !== route.kind || now.source !== route.source || now.id !== route.id) return;
  const labels = labelsText(d.attributes);
  fill("deadletter-detail", [
    ["error class", d.errorClass],
    ["message", d.message],
    ["failed at", when(d.failedAt)],
    ["attempts", d.attempts || 0],
    ["last holder", d.holder],
    [route.kind === "pool" ? "attributes" : "labels", labels],
  ].map(([k, v]) => {
    const th = document.createElement("th");
    th.textContent = k;
    const tr = row([th, cell(v)]);
    tr.dataset.field = k;
    return tr;
  }));
  const pl = preview(d.payload, SHOWN);
  $("deadletter-payload-size").textContent = pl.bytes + " bytes" + (pl.shown < pl.bytes ? ", first " + pl.shown + " shown" : "")
    + (pl.encoding === "hex" ? ", as hex" : "");
  $("deadletter-payload").textContent = pl.encoding === "hex" ? pl.text.replace(/(.{2})/g, "$1 ").trim() : pl.text;
}

async function oneDeadLetterAction(action) {
  const route = deadLetterRoute();
  if (!route) return;
  if (action === "delete" && !confirm("Delete this dead letter for good? This cannot be undone.")) return;
  const data = await api("/api/deadletters/" + action, { items: [route] });
  const r = data.results[0];
  $("deadletter-result").textContent = r.ok ? (action === "retry" ? "retried" : "deleted") : r.error;
  $("deadletter-result").className = r.ok ? "muted" : "error";
}

async function deadLetterAction(action) {
  const items = [...document.querySelectorAll(".dl-pick:checked")].map((b) => JSON.parse(b.dataset.item));
  if (items.length === 0) return;
  if (action === "delete" && !confirm("Delete " + items.length + " dead letter(s) for good? This cannot be undone.")) return;
  const data = await api("/api/deadletters/" + action, { items });
  // Every item's result: how many took effect, how many did not and why (the first reasons).
  const verb = action === "retry" ? "retried " : "deleted ";
  let text = data.failed === 0 ? verb + data.done : verb + data.done + " of " + data.total + "; " + data.failed + " failed";
  const reasons = data.results.filter((r) => !r.ok).slice(0, 3).map((r) => r.id + ": " + r.error);
  if (reasons.length) text += " (" + reasons.join("; ") + (data.failed > reasons.length ? "; …" : "") + ")";
  $("dl-result").textContent = text;
  $("dl-result").className = data.failed === 0 ? "muted" : "error";
  for (const b of document.querySelectorAll(".dl-pick:checked")) {
    const item = JSON.parse(b.dataset.item);
    if (data.results.some((r) => r.ok && r.id === item.id)) b.checked = false;
  }
  $("dl-all").checked = false;
  await refreshDeadLetters();
}

// --- workers (this replica's open sessions and long polls) ---------------------------------------
async function refreshWorkers() {
  const data = await api("/api/workers?" + new URLSearchParams({ limit: PAGE }));
  $("worker-count").textContent = data.total + " open on this replica" + (data.total > data.workers.length
    ? ", first " + data.workers.length + " shown" : "") + (data.untracked ? ", " + data.untracked + " more not listed" : "");
  fill("workers", data.workers.map((w) => {
    const tr = row([w.kind, w.queue, w.workerId, w.credit, w.openedAt, w.lastSeenAt]);
    tr.dataset.worker = w.workerId;
    return tr;
  }));
}

// --- elections and pools -----------------------------------------------------------------------
// Every registered election with its current term; click one to see its history.
async function refreshElections() {
  const data = await api("/api/elections?" + new URLSearchParams({ names: $("election-names").value }));
  const elections = data.elections || [];
  const names = elections.map((e) => e.election);
  if (!names.includes(state.election)) {
    state.election = names.find((n) => n !== "baton-sweeper") || names[0] || "";
  }
  fill("elections", elections.map((e) => {
    const tr = row([e.election, e.leaderId || "(none)", e.token || "", when(e.expiresAt), when(e.lastTermStartedAt)]);
    tr.dataset.election = e.election;
    tr.setAttribute("data-testid", "election-" + e.election);
    if (e.election === state.election) tr.className = "picked";
    tr.onclick = () => { state.election = e.election; refreshElections().catch(fail); };
    return tr;
  }));
  await refreshHistory();
}

async function refreshHistory() {
  const election = state.election;
  $("history-election").textContent = election || "-";
  if (!election) { fill("history", []); return; }
  const data = await api("/api/elections/history?" + new URLSearchParams({ election }));
  if (election !== state.election) return; // another was picked meanwhile
  fill("history", (data.terms || []).map((t) => {
    const end = termEnd(t);
    const tr = row([t.token, t.leaderId, when(t.startedAt), end === "current" ? when(t.expiresAt) : when(t.endedAt),
      cell(end, end === "current" ? "current" : "")]);
    tr.dataset.token = t.token;
    return tr;
  }));
}

async function refreshPools() {
  const data = await api("/api/pools");
  fill("pools", data.pools.map((p) => row([p.pool, num(p.idle), num(p.claimed), num(p.waitingClaims),
    seconds(secs(p.oldestWait)), p.scaleUpPending ? "yes" : "no", num(p.deadLettered)])));
}

// --- tabs, login, live updates -----------------------------------------------------------------
const tabs = { overview: refreshOverview, queue: refreshQueue, agent: refreshAgent, batch: refreshBatch, messages: refreshMessages,
  message: refreshMessage, deadletters: refreshDeadLetters, deadletter: refreshDeadLetter, workers: refreshWorkers, elections: refreshElections, pools: refreshPools };

// The tab the address names: "#queue", …, or "#/agent/<queue>/<name>" (one agent, deep-linkable).
// "#/message/<receiver>/<id>" (one scheduled message).
function currentTab() {
  if (agentRoute()) return "agent";
  if (batchRoute()) return "batch";
  if (messageRoute()) return "message";
  if (deadLetterRoute()) return "deadletter";
  return (location.hash || "#overview").slice(1);
}

function show() {
  const tab = currentTab();
  for (const name of Object.keys(tabs)) $("tab-" + name).hidden = name !== tab;
  const nav = { agent: "queue", message: "messages", deadletter: "deadletters" }[tab] || tab;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.tab === nav);
  const route = agentRoute();
  if (route) $("agent-back").href = "#queue";
  if (route && $("queue-select").value !== route.queue && [...$("queue-select").options].some((o) => o.value === route.queue)) {
    $("queue-select").value = route.queue;
    restart(paging.agents);
  }
  const message = messageRoute();
  if (message && $("receiver-select").value !== message.receiver
    && [...$("receiver-select").options].some((o) => o.value === message.receiver)) {
    $("receiver-select").value = message.receiver;
    restart(paging.messages);
  }
  (tabs[tab] || refreshOverview)().catch(fail);
}

function showLogin(message) {
  $("login").hidden = false;
  $("login-error").textContent = message || "";
}

// A view whose counts did not change is read again on every SLOW_EVERY-th update only (~10 s).
const SLOW_EVERY = 5;
state.quiet = 0;

// The counts of what `tab` shows, from the pushed overview (GetHealth's figures per source):
// a queue's (or an agent's queue's) due, working, scheduled and dead-lettered counts, every
// queue's (a batch), every source's dead letters, every pool's counts; "" for a view with no
// counts (elections).
function viewCounts(o, tab) {
  const counts = (s) => [s.kind, s.name, s.size, s.inUse, s.idle, s.deadLettered, s.paused].join(":");
  const sources = (o.health.sources || []).map(sourceRow);
  const route = agentRoute();
  if (tab === "queue" || (tab === "agent" && route)) {
    const queue = tab === "queue" ? $("queue-select").value : route.queue;
    return queue + "=" + sources.filter((s) => s.kind === "queue" && s.name === queue).map(counts).join("|");
  }
  const message = messageRoute();
  if (tab === "messages" || (tab === "message" && message)) {
    const receiver = tab === "messages" ? $("receiver-select").value : message.receiver;
    return receiver + "=" + sources.filter((s) => s.kind === "receiver" && s.name === receiver).map(counts).join("|");
  }
  // A batch's members may be in any queue: every queue's counts.
  if (tab === "batch") return sources.filter((s) => s.kind === "queue").map(counts).join("|");
  if (tab === "deadletters") return sources.map((s) => s.kind + ":" + s.name + ":" + s.deadLettered).join("|");
  if (tab === "pools") return sources.filter((s) => s.kind === "pool").map(counts).join("|");
  return "";
}

let events = null;
function follow() {
  if (events) events.close();
  const q = state.token ? "?" + new URLSearchParams({ token: state.token }) : "";
  events = new EventSource("/events" + q);
  events.addEventListener("overview", (e) => {
    const live = $("live");
    live.textContent = "live " + new Date().toLocaleTimeString();
    live.dataset.events = String(Number(live.dataset.events || 0) + 1);
    markFresh();
    const o = JSON.parse(e.data);
    renderOverview(o);
    // The history sums every source: not for a token scoped to some names (403).
    if (!o.scoped && Date.now() - state.historyRead >= state.historyInterval * 1000) refreshSamples().catch(fail);
    // Only what is on screen is read again (one page of rows, or one agent; never the queue),
    // and only when its counts in the overview changed, or every SLOW_EVERY-th update (a change
    // that moves no count: a heartbeat, a holder handing over).
    const tab = currentTab();
    // The workers view is this process's memory, not Redis: read on every update.
    if (tab === "workers") refreshWorkers().catch(fail);
    const signature = tab + "\n" + viewCounts(o, tab);
    if (signature === live.dataset.view && ++state.quiet < SLOW_EVERY) return;
    live.dataset.view = signature;
    state.quiet = 0;
    if (tab === "queue") refreshOnce(paging.agents, refreshQueue);
    if (tab === "agent") refreshAgent().catch(fail);
    if (tab === "batch") refreshBatch().catch(fail);
    if (tab === "deadletters") refreshOnce(paging.deadletters, refreshDeadLetters);
    if (tab === "messages") refreshOnce(paging.messages, refreshMessages);
    if (tab === "message") refreshMessage().catch(fail);
    if (tab === "deadletter") refreshDeadLetter().catch(fail);
    if (tab === "pools") refreshPools().catch(fail);
    if (tab === "elections") refreshElections().catch(fail);
  });
  events.addEventListener("stale", (e) => {
    $("live").textContent = "stale " + new Date().toLocaleTimeString();
    markStale(JSON.parse(e.data));
  });
  events.addEventListener("error", () => {
    $("live").textContent = "reconnecting…";
    markStale({ error: "the connection to this replica's console was lost; reconnecting" });
  });
}

$("login-button").onclick = () => {
  state.token = $("token").value.trim();
  sessionStorage.setItem("baton-token", state.token);
  $("login").hidden = true;
  follow();
  show();
};
$("queue-select").onchange = () => { restart(paging.agents); refreshQueue().catch(fail); };
$("agent-search").oninput = () => { restart(paging.agents); refreshQueue().catch(fail); };
$("agent-filter").oninput = () => { restart(paging.agents); refreshQueue().catch(fail); };
$("agent-prev").onclick = () => pageTo(paging.agents, refreshQueue, false);
$("agent-next").onclick = () => pageTo(paging.agents, refreshQueue, true);
$("receiver-select").onchange = () => { restart(paging.messages); refreshMessages().catch(fail); };
$("message-state").onchange = () => { restart(paging.messages); refreshMessages().catch(fail); };
$("message-prev").onclick = () => pageTo(paging.messages, refreshMessages, false);
$("message-next").onclick = () => pageTo(paging.messages, refreshMessages, true);
$("message-all").onchange = (e) => { for (const b of document.querySelectorAll(".message-pick")) b.checked = e.target.checked; };
$("message-cancel").onclick = () => cancelMessages($("receiver-select").value,
  [...document.querySelectorAll(".message-pick:checked")].map((b) => b.dataset.id), $("message-result"))
  .then(refreshMessages).catch(fail);
$("message-cancel-one").onclick = () => {
  const route = messageRoute();
  if (route) cancelMessages(route.receiver, [route.id], $("message-one-result")).catch(fail);
};
$("dl-search").oninput = () => { restart(paging.deadletters); refreshDeadLetters().catch(fail); };
$("dl-prev").onclick = () => pageTo(paging.deadletters, refreshDeadLetters, false);
$("dl-next").onclick = () => pageTo(paging.deadletters, refreshDeadLetters, true);
$("dl-all").onchange = (e) => { for (const b of document.querySelectorAll(".dl-pick")) b.checked = e.target.checked; };
$("deadletter-retry").onclick = () => oneDeadLetterAction("retry").catch(fail);
$("deadletter-delete").onclick = () => oneDeadLetterAction("delete").catch(fail);
$("dl-retry").onclick = () => deadLetterAction("retry").catch(fail);
$("dl-delete").onclick = () => deadLetterAction("delete").catch(fail);
$("election-show").onclick = () => refreshElections().catch(fail);
$("batch-form").onsubmit = (e) => {
  e.preventDefault();
  const name = $("batch-input").value.trim();
  if (name) location.hash = "#/batch/" + encodeURIComponent(name);
};
window.onhashchange = show;

refreshOverview().then(markFresh)
  .then(() => { follow(); show(); if (!state.overview.scoped) refreshSamples().catch(fail); })
  .catch((e) => { fail(e); follow(); });

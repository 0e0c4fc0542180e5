// Baton console: reads /api/* (the gRPC methods, in-process, behind the same authentication)
// and follows /events (the overview every 2 s). No framework, no build step.
"use strict";

const state = { token: sessionStorage.getItem("baton-token") || "", readOnly: false, overview: null, rates: [] };
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
  if (!res.ok) throw new Error(data.error || res.statusText);
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

function limitsText(l) {
  if (!l) return "-";
  const parts = [];
  if (l.concurrency) parts.push("concurrency " + l.concurrency);
  if (l.rate) parts.push("rate " + l.rate.perSecond + "/s");
  if (l.keyConcurrency) parts.push("per key " + l.keyConcurrency);
  if (l.keyRate) parts.push("per key " + l.keyRate.perSecond + "/s");
  return parts.join(", ") || "-";
}

// --- overview --------------------------------------------------------------------------------
function renderOverview(o) {
  state.overview = o;
  state.readOnly = o.readOnly;
  $("readonly").hidden = !o.readOnly;
  for (const b of document.querySelectorAll(".write")) b.hidden = o.readOnly;
  const status = $("status");
  status.textContent = o.health.status;
  status.className = "badge " + o.health.status;
  $("sweeper").textContent = o.sweeper.leaderId || "(none)";
  $("sweeper-token").textContent = o.sweeper.token;
  $("checked").textContent = o.health.checkedAt;
  fill("sources", o.health.sources.map((s) => {
    const tr = row([s.kind, s.name, s.status, s.size, s.inUse, s.idle, seconds(s.oldestAgeSeconds), s.stuck,
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
  const queues = o.health.sources.filter((s) => s.kind === "queue").map((s) => s.name);
  const select = $("queue-select");
  const current = select.value;
  if ([...select.options].map((x) => x.value).join() !== queues.join()) {
    select.replaceChildren(...queues.map((q) => new Option(q, q)));
    if (queues.includes(current)) select.value = current;
  }
  state.rates.push(o.health.sources.reduce((sum, s) => sum + s.processingRate, 0));
  if (state.rates.length > 120) state.rates.shift();
  drawChart();
}

function drawChart() {
  const c = $("chart"), g = c.getContext("2d");
  g.clearRect(0, 0, c.width, c.height);
  const max = Math.max(1, ...state.rates);
  g.strokeStyle = "#2f6fb3";
  g.beginPath();
  state.rates.forEach((r, i) => {
    const x = (i / 119) * (c.width - 10) + 5, y = c.height - 5 - (r / max) * (c.height - 20);
    if (i === 0) g.moveTo(x, y); else g.lineTo(x, y);
  });
  g.stroke();
  g.fillStyle = "#8a94a0";
  g.fillText("max " + max.toFixed(1) + "/min", 8, 12);
}

async function refreshOverview() { renderOverview(await api("/api/overview")); }

// --- queue -------------------------------------------------------------------------------------
async function refreshQueue() {
  const queue = $("queue-select").value;
  if (!queue) return;
  const q = new URLSearchParams({ queue, search: $("agent-search").value });
  const data = await api("/api/agents?" + q);
  $("agent-count").textContent = data.agents.length + " agent(s)";
  fill("agents", data.agents.map((a) => {
    const tr = row([a.name, a.state, a.state === "working" ? a.deadline : a.nextRunAt, a.state === "working" ? a.holder : "",
      a.state === "working" ? a.token : "", a.failureStreak, a.key, a.priority, a.progress]);
    tr.dataset.agent = a.name;
    return tr;
  }));
}

// --- dead letters ------------------------------------------------------------------------------
async function refreshDeadLetters() {
  const data = await api("/api/deadletters?" + new URLSearchParams({ search: $("dl-search").value }));
  const groups = $("groups");
  groups.replaceChildren(...data.groups.map((g) => {
    const s = document.createElement("span");
    s.textContent = g.errorClass + " × " + g.count;
    s.setAttribute("data-testid", "group-" + g.errorClass);
    s.onclick = () => { $("dl-search").value = g.errorClass; refreshDeadLetters().catch(fail); };
    return s;
  }));
  fill("deadletters", data.deadLetters.map((d) => {
    const box = document.createElement("input");
    box.type = "checkbox";
    box.className = "dl-pick";
    box.dataset.item = JSON.stringify({ kind: d.kind, source: d.source, id: d.id });
    const td = document.createElement("td");
    td.appendChild(box);
    const tr = row([td, d.kind, d.source, d.id, d.errorClass, d.attempts, d.failedAt, cell(d.message, "message")]);
    tr.dataset.deadletter = d.id;
    return tr;
  }));
}

async function deadLetterAction(action) {
  const items = [...document.querySelectorAll(".dl-pick:checked")].map((b) => JSON.parse(b.dataset.item));
  if (items.length === 0) return;
  const data = await api("/api/deadletters/" + action, { items });
  $("dl-result").textContent = (action === "retry" ? "retried " : "deleted ") + data.done;
  $("dl-all").checked = false;
  await refreshDeadLetters();
}

// --- elections and pools -----------------------------------------------------------------------
async function refreshElections() {
  const data = await api("/api/elections?" + new URLSearchParams({ names: $("election-names").value }));
  fill("elections", data.elections.map((e) => row([e.election, e.leaderId || "(none)", e.token, e.expiresAt])));
}

async function refreshPools() {
  const data = await api("/api/pools");
  fill("pools", data.pools.map((p) => row([p.pool, p.idle, p.claimed, p.waitingClaims, seconds(p.oldestWaitSeconds),
    p.scaleUpPending ? "yes" : "no", p.deadLettered])));
}

// --- tabs, login, live updates -----------------------------------------------------------------
const tabs = { overview: refreshOverview, queue: refreshQueue, deadletters: refreshDeadLetters,
  elections: refreshElections, pools: refreshPools };

function show() {
  const tab = (location.hash || "#overview").slice(1);
  for (const name of Object.keys(tabs)) $("tab-" + name).hidden = name !== tab;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.tab === tab);
  (tabs[tab] || refreshOverview)().catch(fail);
}

function showLogin(message) {
  $("login").hidden = false;
  $("login-error").textContent = message || "";
}

let events = null;
function follow() {
  if (events) events.close();
  const q = state.token ? "?" + new URLSearchParams({ token: state.token }) : "";
  events = new EventSource("/events" + q);
  events.addEventListener("overview", (e) => {
    $("live").textContent = "live " + new Date().toLocaleTimeString();
    renderOverview(JSON.parse(e.data));
    const tab = (location.hash || "#overview").slice(1);
    if (tab === "queue") refreshQueue().catch(fail);
    if (tab === "pools") refreshPools().catch(fail);
  });
  events.addEventListener("error", () => { $("live").textContent = "reconnecting…"; });
}

$("login-button").onclick = () => {
  state.token = $("token").value.trim();
  sessionStorage.setItem("baton-token", state.token);
  $("login").hidden = true;
  follow();
  show();
};
$("queue-select").onchange = () => refreshQueue().catch(fail);
$("agent-search").oninput = () => refreshQueue().catch(fail);
$("dl-search").oninput = () => refreshDeadLetters().catch(fail);
$("dl-all").onchange = (e) => { for (const b of document.querySelectorAll(".dl-pick")) b.checked = e.target.checked; };
$("dl-retry").onclick = () => deadLetterAction("retry").catch(fail);
$("dl-delete").onclick = () => deadLetterAction("delete").catch(fail);
$("election-show").onclick = () => refreshElections().catch(fail);
window.onhashchange = show;

refreshOverview().then(() => { follow(); show(); }).catch(fail);

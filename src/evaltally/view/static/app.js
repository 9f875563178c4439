// tally view: the page. Plain DOM, no framework, no build step.
// Everything that comes from a run (answers, prompts, ids, model keys, provider messages) is
// untrusted: it only ever enters the page as text (`el` appends strings as text nodes), and
// links are built here from encoded ids. Nothing is parsed as HTML.
"use strict";

const STATUSES = ["ok", "parse_error", "failed", "blocked", "unfinished"];
const FILTERS = ["model", "benchmark", "protocol", "status", "item", "q", "order"];
const main = document.getElementById("main");
const nav = document.getElementById("nav");
const statusLine = document.getElementById("status-line");
let refreshTimer = null;
let routeToken = 0;

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const enc = encodeURIComponent;
const runHash = (run, rest) => "#/r/" + enc(run) + (rest || "");
const callHash = (run, id) => runHash(run, "/call/" + enc(id));

function callsHash(run, filters) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(filters)) if (value) params.set(key, value);
  const query = params.toString();
  return runHash(run, "/calls" + (query ? "?" + query : ""));
}

async function api(path) {
  const response = await fetch(path, { headers: { Accept: "application/json" } });
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

const num = (n) => (n === null || n === undefined ? "-" : Number(n).toLocaleString("en-US"));
const when = (t) => (t ? new Date(t * 1000).toISOString().replace("T", " ").slice(0, 19) : "-");
const ms = (x) => (x === null || x === undefined ? "-" : `${Math.round(x).toLocaleString("en-US")} ms`);
const usd = (x) => (x === null || x === undefined ? "-" : `$${x.toFixed(x < 1 ? 4 : 2)}`);
const badge = (status) => el("span", { class: `badge s-${status}` }, status);

function pretty(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

function table(header, rows, cls) {
  const body = rows.map((r) => (r instanceof Node ? r : el("tr", {}, r.map((c) => el("td", {}, c)))));
  const first = body.length ? Array.from(body[0].children) : [];
  // A numeric column's header aligns like its cells.
  const heads = header.map((h, i) => el("th", { class: first[i] && first[i].classList.contains("n") ? "n" : null }, h));
  return el("table", { class: cls || "" }, el("thead", {}, el("tr", {}, heads)), el("tbody", {}, body));
}

function show(...children) {
  main.replaceChildren(...children.flat(Infinity).filter((c) => c !== null && c !== undefined));
}

function section(title, ...children) {
  return el("section", {}, el("h2", {}, title), ...children);
}

function setNav(run, active) {
  nav.replaceChildren();
  if (!run) return;
  const items = [["overview", runHash(run)], ["calls", runHash(run, "/calls")], ["report", runHash(run, "/report")]];
  for (const [label, href] of items) {
    nav.append(el("a", { href, class: label === active ? "active" : "" }, label));
  }
  nav.prepend(el("span", { class: "run-name" }, run));
}

function fail(error) {
  show(el("p", { class: "error" }, "error: " + error.message));
}

// ---- runs ----------------------------------------------------------------------------------

async function showRuns() {
  setNav(null);
  const runs = await api("/api/runs");
  if (runs.length === 1) {
    location.replace(runHash(runs[0].name));
    return;
  }
  show(section("Runs",
    table(["run", "state", "progress", "directory"], runs.map((r) => [
      el("a", { href: runHash(r.name) }, r.name),
      el("span", { class: `state st-${r.state}`, title: r.state_note }, r.state),
      `${num(r.done)} / ${num(r.planned)}`, r.run_dir]), "runs")));
}

// ---- overview ------------------------------------------------------------------------------

function countCells(run, filters, counts) {
  const cells = [el("td", { class: "n" }, num(counts.planned))];
  for (const status of STATUSES) {
    const n = counts[status];
    const link = n ? el("a", { href: callsHash(run, { ...filters, status }) }, num(n)) : "0";
    cells.push(el("td", { class: `n c-${status}` }, link));
  }
  return cells;
}

function progressBlock(data) {
  const p = data.progress;
  const pct = p.planned ? (100 * p.done) / p.planned : 0;
  const live = data.live;
  const text = [`${num(p.done)} of ${num(p.planned)} planned calls finished (${pct.toFixed(1)}%)`];
  if (live) {
    text.push(`${num(Math.round(p.per_minute))} calls/min over the last minute`);
    if (p.eta_s !== null) text.push(`about ${Math.ceil(p.eta_s / 60)} min left`);
  }
  // Why each lane waits (a rate-limit pause, the breaker, requests' own Retry-After, a learned rate).
  const waiting = Object.entries(data.lanes_waiting || {}).map(([lane, why]) => `lane ${lane}: ${why}`);
  return el("div", { class: "progress-block" },
    el("progress", { max: Math.max(1, p.planned), value: p.done, id: "progress" }),
    el("p", { id: "progress-text" }, text.join(" · ")),
    waiting.length ? el("p", { id: "lanes-waiting", class: "muted" }, waiting.join(" · ")) : null);
}

function lanesTable(data) {
  const rows = data.lanes.map((lane) => {
    const a = lane.attempts || {};
    const audit = lane.audit;
    const flag = lane.audit_message
      ? el("span", { class: "flag", title: lane.audit_message }, "reasoning used while off")
      : audit && audit.reasoning_tokens ? `${num(audit.reasoning_tokens)} reasoning tokens` : "";
    return el("tr", {},
      el("td", {}, el("a", { href: callsHash(data.run, { model: lane.model }) }, lane.model)),
      el("td", { class: "muted" }, lane.provider || "-"),
      ...countCells(data.run, { model: lane.model }, lane.counts),
      el("td", { class: "n" }, num(a.attempts)),
      el("td", { class: "n" }, num(a.retried)),
      el("td", { class: "n" }, num(a.rate_limited)),
      el("td", { class: "n" }, audit ? `${num(audit.input_tokens)} / ${num(audit.output_tokens)}` : "-"),
      el("td", { class: "n" }, audit ? usd(audit.cost_usd) : "-"),
      el("td", {}, flag));
  });
  return table(["lane (model)", "provider", "planned", ...STATUSES, "attempts", "retries", "429s",
    "tokens in / out", "spend", "reasoning audit"], rows, "lanes");
}

function cellsTable(data) {
  const rows = data.cells.map((c) => el("tr", {},
    el("td", {}, c.model), el("td", {}, c.benchmark),
    ...countCells(data.run, { model: c.model, benchmark: c.benchmark }, c.counts)));
  rows.push(el("tr", { class: "total" }, el("td", {}, "all"), el("td", {}, ""),
    ...countCells(data.run, {}, data.totals)));
  return table(["model", "benchmark", "planned", ...STATUSES], rows, "cells");
}

function stateBadge(data) {
  const live = data.live;
  if (live) return el("span", { class: "live", id: "live-badge" }, `running: session ${live.session}, pid ${live.pid}`);
  const text = data.state === "interrupted"
    ? `interrupted — the last session did not close; resume it: tally resume ${data.run_dir}`
    : data.state === "finished" ? "finished (the last session closed)" : "not started";
  return el("span", { class: `idle st-${data.state}`, id: "live-badge" }, text);
}

function pctCell(x) {
  return el("td", { class: "n" }, x === null || x === undefined ? "-" : (100 * x).toFixed(1));
}

function scoresTable(data) {
  if (!data.scores || !data.scores.length) return null;
  const rows = data.scores.map((s) => el("tr", {},
    el("td", {}, el("a", { href: callsHash(data.run, { model: s.model, benchmark: s.benchmark, order: "recent" }) }, s.model)),
    el("td", {}, s.benchmark), el("td", { class: "muted" }, s.scorer),
    el("td", { class: "n" }, `${num(s.scored)} / ${num(s.calls)}`),
    pctCell(s.accuracy_ite), pctCell(s.coverage), pctCell(s.accuracy_scored)));
  return section("Scores so far",
    table(["model", "benchmark", "scorer", "scored / planned", "accuracy (ITE) %", "coverage %", "scored-only %"], rows, "scores"),
    el("p", { class: "muted" }, "Unanswered calls count as wrong under intention-to-evaluate until they are answered; the report adds intervals."));
}

function renderOverview(data) {
  statusLine.replaceChildren(stateBadge(data));
  const t = data.tokens;
  const a = data.attempts;
  show(
    el("h1", {}, data.run, el("span", { class: "muted small" }, " " + data.run_dir)),
    progressBlock(data),
    data.note ? el("p", { class: "note" }, data.note) : null,
    scoresTable(data),
    section("Lanes", lanesTable(data)),
    section("By model and benchmark", cellsTable(data)),
    el("p", { class: "muted" },
      `tokens in ${num(t.input)}, out ${num(t.output)}, reasoning ${num(t.reasoning)}, cached ${num(t.cached)}` +
      ` · attempts ${num(a.attempts)} (retried ${num(a.retried)}, interrupted ${num(a.interrupted)})` +
      ` · sessions ${num(data.sessions)} · ledger schema ${data.schema_version}` +
      ` · counted ${new Date(data.counted_at * 1000).toLocaleTimeString("en-GB")}` +
      (data.counting ? " (recounting…)" : "")));
}

async function showOverview(run, token) {
  setNav(run, "overview");
  const data = await api(`/api/runs/${enc(run)}/overview`);
  if (token !== routeToken) return;
  if (data.totals === null) {
    // The state and how far the run got come from two cheap reads: shown at once, while the
    // full counts are computed; the page asks again every second until they are ready.
    statusLine.replaceChildren(stateBadge(data));
    const q = data.quick_progress;
    show(el("h1", {}, data.run), el("p", { id: "progress-text" }, `${num(q.done)} of ${num(q.planned)} planned calls finished`),
      el("p", { class: "note", id: "counting" }, "counting the ledger (a large run takes a while the first time)…"));
  } else {
    renderOverview(data);
  }
  if (data.live || data.counting || data.totals === null) {
    // Refresh while a session runs; back off on a ledger whose aggregate is slow to compute
    // (the server's own wait for it is not part of that cost).
    const wait = data.totals === null ? 1000 : Math.max(2000, 5 * data.elapsed_ms);
    refreshTimer = setTimeout(() => showOverview(run, token).catch(fail), wait);
  }
}

// ---- calls ---------------------------------------------------------------------------------

function select(name, label, options, value) {
  return el("label", {}, label,
    el("select", { name }, el("option", { value: "" }, "any"),
      options.map((o) => el("option", { value: o, selected: o === value ? "selected" : null }, o))));
}

function filterForm(run, facets, filters) {
  const form = el("form", { class: "filters", id: "filters" },
    select("model", "model", facets.models, filters.model),
    select("benchmark", "benchmark", facets.benchmarks, filters.benchmark),
    select("protocol", "protocol", facets.protocols, filters.protocol),
    select("status", "status", STATUSES, filters.status),
    el("label", {}, "item", el("input", { name: "item", value: filters.item || "", size: 14 })),
    el("label", {}, "answer contains", el("input", { name: "q", value: filters.q || "", size: 18 })),
    el("label", {}, "order", el("select", { name: "order" },
      el("option", { value: "" }, "plan"),
      el("option", { value: "recent", selected: filters.order === "recent" ? "selected" : null }, "most recent first"))),
    el("button", { type: "submit" }, "filter"),
    el("a", { href: runHash(run, "/calls"), class: "clear" }, "clear"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const values = {};
    for (const key of FILTERS) values[key] = form.elements.namedItem(key).value.trim();
    location.hash = callsHash(run, values);
  });
  return form;
}

function scoreCell(c) {
  if (c.score === undefined) return el("td", { class: "n muted" }, "");
  const mark = c.score === 1 ? "✓ correct" : c.score === 0 ? "✗ wrong" : `${(100 * c.score).toFixed(0)}%`;
  return el("td", { class: `n score ${c.score === 1 ? "right" : c.score === 0 ? "wrong" : "partial"}` }, mark);
}

function callRow(run, c) {
  return el("tr", {},
    el("td", { class: "n muted" }, num(c.seq)),
    el("td", {}, el("a", { href: callHash(run, c.call_id), class: "mono" }, c.call_id.slice(0, 12))),
    el("td", {}, c.model), el("td", {}, c.benchmark), el("td", {}, c.protocol || "-"),
    el("td", {}, c.item_id), el("td", { class: "n" }, c.sample), el("td", { class: "n" }, c.step),
    el("td", {}, badge(c.status)), scoreCell(c), el("td", { class: "n" }, c.attempts ?? "-"),
    el("td", { class: "n" }, ms(c.latency_ms)),
    el("td", { class: "answer" }, c.answer === null ? el("span", { class: "muted" }, c.reason || "") :
      c.answer + (c.answer_length > c.answer.length ? " …" : "")));
}

async function showCalls(run, params, token) {
  setNav(run, "calls");
  const filters = {};
  for (const key of FILTERS) filters[key] = params.get(key) || "";
  const query = new URLSearchParams();
  for (const [key, value] of params) query.set(key, value);
  const [facets, page] = await Promise.all([
    api(`/api/runs/${enc(run)}/facets`),
    api(`/api/runs/${enc(run)}/calls?${query}`),
  ]);
  if (token !== routeToken) return;
  const pager = el("div", { class: "pager" },
    page.prev !== null ? el("a", { href: callsHash(run, { ...filters, before: page.prev }), id: "prev" }, "← previous") : null,
    page.next !== null ? el("a", { href: callsHash(run, { ...filters, after: page.next }), id: "next" }, "next →") : null);
  const rows = page.calls.map((c) => callRow(run, c));
  show(
    el("h1", {}, "Calls"),
    filterForm(run, facets, filters),
    page.calls.length
      ? table(["#", "call", "model", "benchmark", "protocol", "item", "sample", "step", "status",
        "score", "attempts", "latency", "answer"], rows, "calls")
      : el("p", { class: "muted", id: "no-calls" }, "no call matches these filters"),
    pager);
}

// ---- one call ------------------------------------------------------------------------------

function keyValues(obj) {
  return table(["field", "value"], Object.entries(obj).map(([k, v]) => [k, el("pre", {}, pretty(v))]), "kv");
}

function messageBlock(run, fedIds, message) {
  const body = el("pre", { class: "content" });
  for (const part of message.parts) {
    if (part.step === undefined) {
      body.append(part.text);
    } else {
      const id = fedIds[part.step];
      body.append(el("a", { class: "fed", href: id ? callHash(run, id) : null,
        title: `the model's own answer at step ${part.step}` }, part.text));
    }
  }
  return el("div", { class: `message role-${message.role}` }, el("div", { class: "role" }, message.role), body);
}

function attemptsTable(attempts) {
  const rows = [];
  for (const a of attempts) {
    const usage = a.usage ? `${num(a.usage.input_tokens)} in / ${num(a.usage.output_tokens)} out` +
      (a.usage.reasoning_tokens ? ` / ${num(a.usage.reasoning_tokens)} reasoning` : "") : "-";
    rows.push(el("tr", {},
      el("td", { class: "n" }, a.attempt), el("td", {}, when(a.started_at)), el("td", {}, a.state),
      el("td", { class: "n" }, a.http_status ?? "-"), el("td", {}, a.error_class || "-"),
      el("td", {}, a.error_detail || ""), el("td", { class: "n" }, a.retry_after_s ?? "-"),
      el("td", { class: "n" }, ms(a.latency_ms)), el("td", {}, usage), el("td", { class: "mono" }, a.request_id || "")));
    if (a.response !== undefined) {
      rows.push(el("tr", { class: "body-row" }, el("td", {}, ""), el("td", { colspan: 9 },
        el("details", {}, el("summary", {}, `response body of attempt ${a.attempt}` + (a.response_cut ? " (cut)" : "")),
          el("pre", { class: "response" }, a.response)))));
    }
  }
  return table(["#", "started", "state", "HTTP", "error class", "detail", "retry-after s", "latency",
    "usage", "request id"], rows, "attempts");
}

function chainBlock(run, d) {
  if (d.chain.length < 2) return null;
  return section(`Chain (${d.chain.length} steps)`, el("ol", { class: "chain", start: 0 },
    d.chain.map((s) => el("li", { class: s.call_id === d.record.call_id ? "current" : "" },
      s.call_id === d.record.call_id ? el("strong", {}, `step ${s.step} (this call)`)
        : el("a", { href: callHash(run, s.call_id) }, `step ${s.step}`),
      " ", badge(s.status)))));
}

function renderCall(run, d) {
  const r = d.record;
  const fedIds = Object.fromEntries(d.fed_back.map((f) => [f.step, f.call_id]));
  const facts = [["call id", el("span", { class: "mono" }, r.call_id)], ["model", r.model],
    ["benchmark", r.benchmark], ["protocol", r.protocol || "-"], ["item", r.item_id],
    ["sample", r.sample], ["step", r.step], ["chain", el("span", { class: "mono" }, r.chain_id)]];
  const outcome = [["status", badge(r.status)], ["reason", r.reason || "-"], ["parse path", r.parse_path || "-"],
    ["attempts", r.attempts], ["latency", ms(r.latency_ms)], ["request hash", el("span", { class: "mono" }, r.request_hash || "-")]];
  const verification = (d.oracle && d.oracle.verification) ?? r.verification;
  show(
    el("h1", {}, "Call ", el("span", { class: "mono" }, r.call_id.slice(0, 16)), " ", badge(r.status)),
    table(["", ""], facts, "facts"),
    chainBlock(run, d),
    section("Outcome", table(["", ""], outcome, "facts"),
      el("h3", {}, "raw answer"), el("pre", { class: "answer", id: "raw-answer" }, r.raw_text ?? "(none)"),
      el("h3", {}, "parsed value"), el("pre", { id: "parsed" }, r.parsed === null ? "(none)" : pretty(r.parsed))),
    section(`Attempts (${d.attempts.length})`, d.attempts.length ? attemptsTable(d.attempts) : el("p", { class: "muted" }, "never sent")),
    d.outcomes.length > 1 ? section("Outcome history", table(["at", "status", "attempts", "reason"],
      d.outcomes.map((o) => [when(o.at), badge(o.status), o.attempts, o.reason || ""]))) : null,
    verification !== undefined ? section("Verification", el("pre", {}, pretty(verification))) : null,
    section("Oracle fields", d.oracle ? keyValues(d.oracle) : el("p", { class: "muted" }, d.oracle_note || "none")),
    section("Request messages",
      d.fed_back.length ? el("p", { class: "note", id: "fed-note" },
        "Highlighted: the model's own earlier answers as this prompt shows them — ",
        d.fed_back.map((f, i) => [i ? ", " : "", el("a", { href: f.call_id ? callHash(run, f.call_id) : null }, `step ${f.step}`)])) : null,
      d.request.messages ? d.request.messages.map((m) => messageBlock(run, fedIds, m))
        : el("p", { class: "muted" }, d.request.raw ? "not a chat request this page knows; see the raw body" : "no request was sent")),
    d.request.raw ? el("details", {}, el("summary", {}, "raw request body" + (d.request.raw_cut ? " (cut)" : "")),
      el("pre", {}, d.request.raw)) : null,
    el("details", {}, el("summary", {}, "export row"), el("pre", {}, pretty(r))));
}

async function showCall(run, id, token) {
  setNav(run, "calls");
  const detail = await api(`/api/runs/${enc(run)}/calls/${enc(id)}`);
  if (token !== routeToken) return;
  renderCall(run, detail);
}

// ---- report --------------------------------------------------------------------------------

function reportBlock(run, b) {
  if (b.type === "heading") return el(`h${b.level}`, {}, b.text);
  if (b.type === "table") return table(b.header, b.rows, "report");
  if (b.type === "list") return el("ul", {}, b.items.map((i) => el("li", {}, i)));
  if (b.type === "image") {
    return b.name ? el("figure", {}, el("img", { src: `/api/runs/${enc(run)}/plots/${enc(b.name)}`, alt: b.alt }),
      el("figcaption", {}, b.alt)) : el("p", { class: "muted" }, `(plot ${b.alt} is missing)`);
  }
  return el("p", {}, b.text);
}

async function showReport(run, token) {
  setNav(run, "report");
  const data = await api(`/api/runs/${enc(run)}/report`);
  if (token !== routeToken) return;
  show(data.blocks ? el("div", { class: "report" }, data.blocks.map((b) => reportBlock(run, b)))
    : el("p", { class: "note", id: "report-hint" }, data.hint));
}

// ---- routing -------------------------------------------------------------------------------

function route() {
  window.scrollTo(0, 0);
  clearTimeout(refreshTimer);
  statusLine.replaceChildren();
  const token = ++routeToken;
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  let shown;
  if (parts[0] !== "r" || parts.length < 2) shown = showRuns();
  else if (parts.length === 2) shown = showOverview(parts[1], token);
  else if (parts[2] === "calls") shown = showCalls(parts[1], new URLSearchParams(query || ""), token);
  else if (parts[2] === "call" && parts[3]) shown = showCall(parts[1], parts[3], token);
  else if (parts[2] === "report") shown = showReport(parts[1], token);
  else shown = showRuns();
  shown.catch(fail);
}

window.addEventListener("hashchange", route);
route();

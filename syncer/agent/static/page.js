// The fleet page: renders the picture the agent streams from /ui/events (the same as /ui/state). Every value from git or the
// clusters goes into the page as text (textContent), never as markup.
"use strict";

const WAVE_MARKS = {
  pending: "○", applying: "◔", "waiting-health": "◷", baking: "◑", analysing: "◑", "awaiting-promotion": "⏸",
  held: "⏸", passed: "●", failed: "■", "rolling-back": "↺", aborted: "■",
};
const HOLDS = {
  window: "window closed", suspended: "a cluster is suspended", pinned: "a cluster is pinned",
  "owned-elsewhere": "another replica's clusters",
};
const HEALTH_MARKS = { healthy: "✓", progressing: "…", degraded: "✗", missing: "?" };
const VERDICT_MARKS = {
  running: "…", successful: "✓", failed: "✗", inconclusive: "?", fail: "✗", error: "✗", pass: "✓",
};

let fleet = null;
let chosen = "";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function describeRevision(target, revision, none) {
  const dd = target.querySelector("dd");
  dd.replaceChildren();
  if (!revision) {
    dd.textContent = none;
    return;
  }
  dd.append(el("span", "sha", revision.short));
  if (revision.signer) dd.append(" signed by ", el("span", "signer", revision.signer));
  if (revision.subject) dd.append(el("span", "subject cluster-line", revision.subject));
}

function describeRejection(rejected) {
  const target = document.getElementById("rejected");
  target.hidden = !rejected;
  const dd = target.querySelector("dd");
  dd.replaceChildren();
  if (!rejected) return;
  dd.append(el("span", "sha", rejected.short || "no revision"), el("span", "reason cluster-line", `✗ ${rejected.reason}`));
}

function waveState(wave) {
  const mark = WAVE_MARKS[wave.state] || "?";
  const waiting = wave.waiting && HOLDS[wave.waiting] ? ` (${HOLDS[wave.waiting]})` : "";
  return `${mark} ${wave.state}${waiting}`;
}

function healthText(cluster) {
  if (!cluster.reachable) return `✗ unreachable: ${cluster.unreachable}`;
  const health = cluster.health || "unknown";
  return `${HEALTH_MARKS[health] || "?"} ${health}`;
}

function clusterCell(cluster) {
  const button = el("button", "cluster");
  button.type = "button";
  button.dataset.cluster = cluster.name;
  button.dataset.health = cluster.health || "unknown";
  button.dataset.reachable = String(cluster.reachable);
  button.setAttribute("aria-expanded", String(cluster.name === chosen));
  button.setAttribute("aria-controls", "detail");
  button.append(el("span", "cluster-name", cluster.name));
  button.append(el("span", "cluster-line cluster-revision", `rev ${cluster.short || "none"} · ${cluster.phase || "never"}`));
  button.append(el("span", "cluster-line cluster-health", healthText(cluster)));
  if (cluster.suspended) button.append(el("span", "cluster-line cluster-suspended", `‖ ${cluster.suspended}`));
  if (cluster.lastError) button.append(el("span", "cluster-line cluster-error", `! ${cluster.lastError}`));
  button.addEventListener("click", () => choose(cluster.name));
  const item = el("li");
  item.append(button);
  return item;
}

function renderWaves() {
  const focused = document.activeElement && document.activeElement.dataset
    ? document.activeElement.dataset.cluster : undefined;
  const columns = fleet.waves.map((wave) => ({ wave, clusters: [] }));
  const byName = new Map(columns.map((column) => [column.wave.name, column]));
  const loose = { wave: { name: "not in a wave yet", state: "pending", waiting: "", reason: "" }, clusters: [] };
  for (const cluster of fleet.clusters) (byName.get(cluster.wave) || loose).clusters.push(cluster);
  if (loose.clusters.length) columns.push(loose);
  const container = document.getElementById("waves");
  container.replaceChildren(...columns.map(({ wave, clusters }) => {
    const section = el("section", "wave");
    section.dataset.wave = wave.name;
    section.dataset.state = wave.state;
    section.append(el("h3", "", wave.name));
    section.append(el("p", "wave-state", waveState(wave)));
    if (wave.reason) section.append(el("p", "wave-reason", wave.reason));
    const list = el("ul", "clusters");
    list.append(...clusters.map(clusterCell));
    section.append(list);
    return section;
  }));
  if (focused) {
    const again = [...container.querySelectorAll(".cluster")].find((b) => b.dataset.cluster === focused);
    if (again) again.focus();
  }
}

function renderDetail() {
  const detail = document.getElementById("detail");
  const cluster = fleet.clusters.find((c) => c.name === chosen);
  if (!cluster) {
    detail.hidden = true;
    return;
  }
  detail.hidden = false;
  detail.dataset.cluster = cluster.name;
  document.getElementById("detail-title").textContent = `Cluster ${cluster.name}`;
  const rows = [
    ["Wave", cluster.wave || "none"], ["Revision", cluster.revision || "none"], ["Phase", cluster.phase || "never"],
    ["Health", healthText(cluster)], ["Health detail", cluster.healthDetail || "—"],
    ["Suspended", cluster.suspended || "no"], ["Last error", cluster.lastError || "none"],
    ["Last step", cluster.step || "—"],
  ];
  if (cluster.analysis) rows.push(["Analysis", cluster.analysis]);
  if (cluster.traceId) rows.push(["Last apply's trace", traceLink(cluster)]);
  document.getElementById("detail-fields").replaceChildren(...rows.flatMap(([k, v]) => [el("dt", "", k), detailValue(v)]));
  fillTable("detail-objects", cluster.objects, (o) => [
    o.kind, o.namespace || "—", o.name, o.action || "—",
    o.health ? `${HEALTH_MARKS[o.health] || "?"} ${o.health}${o.healthDetail ? `: ${o.healthDetail}` : ""}` : "—",
  ], "no objects recorded");
  fillTable("detail-verdicts", cluster.verdicts, (v) => [
    v.kind, v.name, `${VERDICT_MARKS[v.verdict] || "?"} ${v.verdict}`, v.value || "—", v.threshold || "—", v.detail,
  ], "no guard or analysis verdict");
  renderDiff(cluster.diff);
  fillTable("detail-history", cluster.history.slice().reverse(), (h) => [
    h.short, h.signer || "—", h.started || "—", h.ended || "—", h.wave || "—", h.outcome, h.by || "—", h.reason || "",
  ], "no history recorded");
}

// A detail's value: text, or a node built here (a link), never markup.
function detailValue(value) {
  const dd = el("dd");
  if (value instanceof Node) dd.append(value);
  else dd.textContent = value;
  return dd;
}

// The trace id, a link to the tracing backend when the agent config has tracing.urlTemplate (the URL
// is built by the agent from the checked template; only http(s) is ever made a link).
function traceLink(cluster) {
  if (!cluster.traceUrl || !/^https?:\/\//.test(cluster.traceUrl)) return cluster.traceId;
  const link = el("a", "trace-link", cluster.traceId);
  link.setAttribute("href", cluster.traceUrl);
  link.setAttribute("rel", "noopener noreferrer");
  link.setAttribute("target", "_blank");
  return link;
}

// One row per item, each cell text; a single row saying `none` when there is no item.
function fillTable(id, items, cellsOf, none) {
  const body = document.querySelector(`#${id} tbody`);
  const width = document.querySelectorAll(`#${id} thead th`).length;
  if (!items || !items.length) {
    const cell = el("td", "none", none);
    cell.colSpan = width;
    const row = el("tr");
    row.append(cell);
    body.replaceChildren(row);
    return;
  }
  const labels = [...document.querySelectorAll(`#${id} thead th`)].map((th) => th.textContent);
  body.replaceChildren(...items.map((item) => {
    const row = el("tr");
    row.append(...cellsOf(item).map((value, i) => {
      const cell = value instanceof Node ? wrap(value) : el("td", "", value);
      cell.dataset.label = labels[i] || "";
      return cell;
    }));
    return row;
  }));
}

function wrap(node) {
  const cell = el("td");
  cell.append(node);
  return cell;
}

function fieldList(entry) {
  if (!entry.fields.length) return entry.message || "";
  const list = el("ul", "fields");
  list.append(...entry.fields.map((f) => el("li", f.masked ? "masked" : "",
    `${f.path}: ${f.before || "(none)"} → ${f.after || "(none)"}`)));
  if (entry.moreFields) list.append(el("li", "", `and ${entry.moreFields} more field(s)`));
  if (entry.message) list.append(el("li", "cluster-error", entry.message));
  return list;
}

function renderDiff(diff) {
  const error = document.getElementById("detail-diff-error");
  document.getElementById("detail-diff-title").textContent = diff ? `Last change (${diff.short})` : "Last change";
  error.hidden = !(diff && diff.error);
  error.textContent = diff && diff.error ? `! ${diff.error}` : "";
  fillTable("detail-diff", diff ? diff.entries : [], (e) => [e.subject, e.action, e.outcome, fieldList(e)],
    diff ? "nothing written" : "no apply told since the agent started");
}

function render(next) {
  fleet = next;
  describeRevision(document.getElementById("in-force"), fleet.inForce, "none yet");
  describeRevision(document.getElementById("rolling"), fleet.rolling, "nothing");
  describeRejection(fleet.rejected);
  renderWaves();
  renderDetail();
  document.body.dataset.version = String(fleet.version);
}

function choose(name) {
  chosen = chosen === name ? "" : name;
  if (fleet) render(fleet);
  if (chosen) document.getElementById("detail").focus();
}

function close() {
  const was = chosen;
  chosen = "";
  if (fleet) render(fleet);
  const button = [...document.querySelectorAll(".cluster")].find((b) => b.dataset.cluster === was);
  if (button) button.focus();
}

function follow() {
  const status = document.getElementById("connection");
  const events = new EventSource("/ui/events");
  events.addEventListener("open", () => { status.textContent = "live"; });
  events.addEventListener("error", () => { status.textContent = "reconnecting…"; });
  events.addEventListener("fleet", (message) => {
    status.textContent = "live";
    render(JSON.parse(message.data));
  });
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("detail-close").addEventListener("click", close);
  document.addEventListener("keydown", (event) => { if (event.key === "Escape" && chosen) close(); });
  // The event stream's first message is the whole picture: no separate fetch of /ui/state.
  follow();
});

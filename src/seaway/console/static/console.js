// The Seaway console's pages: each asks its JSON endpoint at load and every data-refresh-ms, and
// draws what comes back. Text goes in with textContent, never as HTML.
"use strict";

const body = document.body;
const REFRESH_MS = Number(body.dataset.refreshMs) || 2000;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v; else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(c === null || c === undefined ? "-" : String(c)));
  return node;
}

function table(id, columns, rows, empty) {
  // columns: [heading, row => cell (text or Node), "num" for numbers]
  const t = document.getElementById(id);
  const head = el("tr", {}, ...columns.map(([h, , kind]) => el("th", kind === "num" ? {class: "num"} : {}, h)));
  const lines = rows.map(r => el("tr", {}, ...columns.map(([, f, kind]) => el("td", kind ? {class: kind} : {}, f(r)))));
  if (!rows.length) lines.push(el("tr", {}, el("td", {class: "empty", colspan: String(columns.length)}, empty)));
  t.replaceChildren(el("thead", {}, head), el("tbody", {}, ...lines));
}

function status(text, failed) {
  const s = document.getElementById("status");
  s.textContent = text;
  s.className = failed ? "status failed" : "status";
}

async function getJson(url) {
  const reply = await fetch(url, {credentials: "same-origin", cache: "no-store"});
  if (reply.status === 401) { location.href = "/login?next=" + encodeURIComponent(location.pathname + location.search); }
  const data = await reply.json();
  if (!reply.ok) throw new Error(data.error || reply.statusText);
  return data;
}

function every(load) {
  // Load now and every REFRESH_MS; a failure shows in the status line, and the next turn tries again.
  const turn = async () => {
    try { await load(); status("updated " + new Date().toISOString(), false); }
    catch (e) { status("could not load: " + e.message, true); }
    setTimeout(turn, REFRESH_MS);
  };
  turn();
}

function figures(id, pairs) {
  document.getElementById(id).replaceChildren(...pairs.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
}

const lagText = v => (v === null || v === undefined ? "not counted" : String(v));

// --- pages -----------------------------------------------------------------------------------

const pages = {
  health() {
    every(async () => {
      const h = await getJson("/api/health");
      const ok = h.status === "SERVING";
      figures("health", [["status", el("span", {class: ok ? "ok" : "bad", id: "health-status"}, h.status)],
        ["store", h.where], ["time", h.time], ["console started", h.console_started],
        ["write failure", h.write_failure || "none"],
        ["ledger", `entries ${h.ledger.tail_index} to ${h.ledger.head_index}`]]);
      const c = h.counts;
      const upTo = k => (c[k] >= h.counts_max[k] ? `${c[k]} or more` : String(c[k]));
      figures("counts", [["scopes", c.scopes], ["streams", upTo("streams")],
        ["reader groups", upTo("reader_groups")], ["queues", c.queues], ["transactions held", upTo("transactions")],
        ["notification plugins", c.notify_plugins]]);
      if (h.server) {
        document.getElementById("server-section").hidden = false;
        figures("server", Object.entries(h.server).map(([k, v]) => [k, v.toLocaleString("en")]));
      }
    });
  },

  streams() {
    every(async () => {
      const rows = await getJson("/api/streams");
      table("streams", [
        ["stream", r => el("a", {href: "/stream?name=" + encodeURIComponent(r.stream)}, r.stream)],
        ["state", r => r.state], ["generation", r => r.generation, "num"], ["segments", r => r.segments, "num"],
        ["scaling", r => JSON.stringify(r.config.scaling)], ["retention", r => JSON.stringify(r.config.retention)],
        ["created", r => r.created, "time"]], rows, "no streams");
    });
  },

  stream() {
    const name = body.dataset.stream;
    const colors = ["#8ecae6", "#219ebc", "#ffb703", "#fb8500", "#90be6d", "#b5838d", "#6d6875", "#e9c46a"];
    every(async () => {
      const s = await getJson("/api/stream?name=" + encodeURIComponent(name));
      table("segments", [["segment", r => r.segment, "mono"], ["key range", r => `[${r.key_lo.toFixed(4)}, ${r.key_hi.toFixed(4)})`],
        ["log", r => r.log_id, "mono"], ["tail", r => r.tail_lsn, "mono"], ["created", r => r.created, "time"]],
        s.segments, "no segments");
      table("history", [["generation", r => r.generation, "num"], ["time", r => r.time, "time"], ["reason", r => r.reason],
        ["sealed", r => r.sealed.join(", ")], ["created", r => r.created.join(", ")]], s.history, "never scaled");
      const spans = s.timeline;
      const shapes = spans.map(p => ({type: "rect", layer: "below", x0: p.from, x1: p.to, y0: p.key_lo, y1: p.key_hi,
        fillcolor: colors[p.generation % colors.length], opacity: p.open ? 0.9 : 0.6, line: {color: "#023047", width: 1}}));
      const labels = {x: spans.map(p => p.from), y: spans.map(p => (p.key_lo + p.key_hi) / 2), mode: "text",
        text: spans.map(p => p.segment), textposition: "middle right", textfont: {color: "#102a3c", size: 12},
        hoverinfo: "text",
        hovertext: spans.map(p => `${p.segment} [${p.key_lo}, ${p.key_hi}) ${p.from} to ${p.open ? "now" : p.to}`),
        showlegend: false};
      Plotly.react("timeline", [labels], {margin: {t: 10, r: 10, b: 45, l: 55}, shapes,
        xaxis: {title: {text: "time (UTC)"}, type: "date", showgrid: false},
        yaxis: {title: {text: "key space"}, range: [0, 1], showgrid: false}},
        {displaylogo: false, responsive: true});
      document.getElementById("timeline").dataset.segments = String(spans.length);
    });
  },

  groups() {
    document.getElementById("sample-interval").textContent = body.dataset.sampleIntervalS;
    every(async () => {
      const g = await getJson("/api/groups");
      table("reader-groups", [["group", r => r.group], ["stream", r => r.stream],
        ["readers", r => r.readers.join(", ") || "none"], ["lag", r => lagText(r.lag), "num"],
        ["positions", r => r.positions.map(p => `${p.segment} at ${p.position}` + (p.lag === null ? "" : ` (lag ${p.lag})`)).join("; ")],
        ["unassigned", r => r.unassigned.join(", ")]], g.reader_groups, "no reader groups");
      table("consumer-groups", [["queue", r => r.queue], ["group", r => r.group], ["size", r => r.size, "num"],
        ["strategy", r => r.strategy], ["lag", r => lagText(r.lag), "num"], ["resizing", r => (r.resizing ? "yes" : "no")],
        ["partitions", r => r.partitions.map(p => `${p.generation}.${p.partition} at ${p.position}/${p.entry}` +
          (p.lag === null ? "" : ` (lag ${p.lag})`)).join("; ")]], g.consumer_groups, "no consumer groups");
      const traces = g.lag_series.map(s => ({x: s.time, y: s.lag, name: s.name, mode: "lines+markers", connectgaps: false}));
      const counted = traces.some(t => t.y.some(v => v !== null));
      const note = counted ? [] : [{text: traces.length ? "the store does not count these groups' lag" : "no groups yet",
        showarrow: false, xref: "paper", yref: "paper", x: 0.5, y: 0.5, font: {color: "#5b6b7c"}}];
      Plotly.react("lag-chart", traces, {margin: {t: 10, r: 10, b: 45, l: 55}, legend: {orientation: "h", y: -0.25},
        xaxis: {title: {text: "time (UTC)"}, type: "date"}, yaxis: {title: {text: "lag"}, rangemode: "tozero"},
        annotations: note}, {displaylogo: false, responsive: true});
      document.getElementById("lag-chart").dataset.samples = String(traces.reduce((n, t) => n + t.x.length, 0));
      if (g.sample_error) status("lag sample failed: " + g.sample_error, true);
    });
  },

  ledger() {
    const kind = document.getElementById("kind");
    const name = document.getElementById("name");
    const shown = [];
    let next = null;
    const query = () => `kind=${encodeURIComponent(kind.value)}&name=${encodeURIComponent(name.value)}`;
    const restart = () => { shown.length = 0; next = null; };
    document.getElementById("ledger-filter").addEventListener("submit", e => e.preventDefault());
    kind.addEventListener("change", restart);
    name.addEventListener("input", restart);
    every(async () => {
      const asked = query();
      const page = await getJson("/api/ledger?" + asked + (next === null ? "" : "&after=" + next));
      if (asked !== query()) return;  // the filter changed meanwhile: the next turn starts afresh
      shown.unshift(...page.entries.reverse());
      shown.length = Math.min(shown.length, 500);
      next = page.next;
      const missed = page.missed ? `entries ${page.missed.first} to ${page.missed.last} were pruned before they were shown` : "";
      document.getElementById("missed").textContent = missed;
      table("ledger", [["index", r => r.index, "num"], ["time", r => r.time, "time"], ["kind", r => r.operation],
        ["resource", r => r.resource, "mono"], ["change", r => JSON.stringify(r.change), "mono"]],
        shown, "no entries match");
    });
  },

  transactions() {
    every(async () => {
      const rows = await getJson("/api/transactions");
      table("transactions", [["id", r => r.id, "mono"], ["status", r => r.status], ["began", r => r.began, "time"],
        ["age (s)", r => r.age_s, "num"], ["times out", r => r.times_out, "time"], ["logs", r => r.logs.join(", ") || "none", "mono"]],
        rows, "no transactions in progress");
    });
  },

  notify() {
    every(async () => {
      const rows = await getJson("/api/notify");
      table("plugins", [["plugin", r => r.name], ["target", r => r.target], ["position", r => r.position, "num"],
        ["lag", r => lagText(r.lag), "num"], ["delivered", r => r.counters.delivered, "num"],
        ["failed", r => r.counters.failed, "num"], ["pending", r => r.pending, "num"], ["updated", r => r.updated, "time"],
        ["last error", r => (r.error ? el("span", {class: "bad"}, "NOT RUNNING: " + r.error)
          : r.last_error ? el("span", {}, `${r.last_error_time}: ${r.last_error}`) : "none"), "long"]],
        rows, "no notification plugins");
    });
  },
};

pages[body.dataset.page]();

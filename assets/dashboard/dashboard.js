// headroom's live dashboard. It listens to the server's event stream (/events): the
// first message holds everything so far ("reset"), each later one the seconds that
// completed since and the current figures. Everything it draws comes from there.
"use strict";

(function () {
  const PERCENTILES = ["p50", "p90", "p95", "p99", "p99.9", "max"];
  const SHOWN = new Set(["p50", "p95", "p99"]);
  const PALETTE = ["#2f6fdb", "#e0782b", "#1a9e5a", "#c62828", "#8e44ad", "#7a8a99", "#b58900", "#0097a7"];

  // Everything received, for the charts (and for tests that read the page).
  const state = {
    meta: null, rows: [], steps: [], current: null, now: null, errorKinds: {},
    watches: [], postgres: null, finished: null, stopping: false, kinds: [], workloads: [],
  };
  window.headroomDashboard = state;

  const $ = (id) => document.getElementById(id);
  const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  const num = (v, digits) => v == null || !isFinite(v) ? "–" :
    Number(v).toLocaleString("en-US", { maximumFractionDigits: digits ?? 0 });
  const ms = (v) => v == null ? "–" : num(v, v < 10 ? 2 : 1);
  const clock = (s) => {
    s = Math.round(s || 0);
    return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s` : `${s}s`;
  };
  const setFigure = (id, text, value) => {
    const el = $(id);
    el.textContent = text;
    el.dataset.value = value == null ? "" : String(value);
  };
  const cell = (tr, text, cls) => {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  };

  // ---- charts ---------------------------------------------------------------

  const charts = {};
  // A chart the user zoomed keeps its range as data arrives, until a double-click.
  const zoomed = new Set();

  function axis(label, scale, side) {
    return {
      label, scale, side,
      stroke: css("--muted"),
      grid: { stroke: css("--line"), width: 1 },
      ticks: { stroke: css("--line"), width: 1 },
    };
  }

  function makeChart(key, el, series, axes, extra, xLabel) {
    if (charts[key]) charts[key].destroy();
    const opts = Object.assign({
      width: Math.max(300, el.clientWidth),
      height: 240,
      scales: { x: { time: false } },
      series: [{ label: xLabel || "s", value: (u, v) => v == null ? "–" : num(v, 1) }].concat(
        series.map((s) => Object.assign({ spanGaps: xLabel != null }, s))),
      axes,
      cursor: { drag: { x: true, y: false } },
      legend: { live: true },
      hooks: {
        setSelect: [(u) => { if (u.select.width > 0) zoomed.add(key); }],
      },
    }, extra || {});
    const data = [[]].concat(series.map(() => []));
    const chart = new uPlot(opts, data, el);
    chart.over.addEventListener("dblclick", () => zoomed.delete(key));
    charts[key] = chart;
    return chart;
  }

  function line(label, color, scale, fmt, extra) {
    return Object.assign({
      label, scale, stroke: color, width: 2,
      value: (u, v) => v == null ? "–" : fmt(v),
    }, extra || {});
  }

  function buildCharts() {
    const unit = state.meta.unit;
    const offered = unit === "users" ? "users" : "offered req/s";
    makeChart("rate", $("rate-chart"), [
      line(offered, PALETTE[0], unit === "users" ? "users" : "rate", (v) => num(v, 1)),
      line("achieved req/s", PALETTE[2], "rate", (v) => num(v)),
      line("errors/s", PALETTE[3], "rate", (v) => num(v)),
      line("dropped/s", PALETTE[1], "rate", (v) => num(v)),
    ], unit === "users"
      ? [axis("s"), axis("req/s", "rate"), axis("users", "users", 1)]
      : [axis("s"), axis("req/s", "rate")]);
    makeChart("latency", $("latency-chart"), PERCENTILES.map((p, i) =>
      line(p, PALETTE[i], "ms", ms, { show: SHOWN.has(p) })), [axis("s"), axis("ms", "ms")], {
      hooks: {
        setSelect: [(u) => { if (u.select.width > 0) zoomed.add("latency"); }],
        setSeries: [(u, i) => {
          const box = document.querySelector(`#percentiles input[data-series="${i}"]`);
          if (box) box.checked = u.series[i].show;
        }],
      },
    });
    const picks = $("percentiles");
    picks.textContent = "";
    PERCENTILES.forEach((p, i) => {
      const label = document.createElement("label");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.checked = SHOWN.has(p);
      box.dataset.series = String(i + 1);
      box.addEventListener("change", () => charts.latency.setSeries(i + 1, { show: box.checked }));
      label.append(box, " " + p);
      picks.appendChild(label);
    });
    makeChart("flight", $("flight-chart"), [
      line("in flight", PALETTE[0], "n", (v) => num(v)),
      line("dropped/s", PALETTE[1], "n", (v) => num(v)),
    ], [axis("s"), axis("iterations", "n")]);
    buildErrorChart();
    if (state.meta.command === "find") {
      $("capacity").hidden = false;
      $("steps-unit").textContent = state.meta.unit;
      makeChart("capacity", $("capacity-chart"), [
        line("achieved req/s", PALETTE[2], "rate", (v) => num(v, 1), { points: { size: 7 } }),
        line("p95 ms", PALETTE[1], "ms", ms, { points: { size: 7 } }),
        line("p99 ms", PALETTE[3], "ms", ms, { points: { size: 7 } }),
        line("generator-bound req/s", PALETTE[6], "rate", (v) => num(v, 1),
          { points: { size: 9 }, paths: () => null }),
      ], [axis(state.meta.unit), axis("req/s", "rate"), axis("ms", "ms", 1)], {
        scales: { x: { time: false, range: capacityRange } },
        hooks: {
          setSelect: [(u) => { if (u.select.width > 0) zoomed.add("capacity"); }],
          draw: [highlightCurrentStep],
        },
      }, state.meta.unit);
    }
  }

  // The x range of the capacity curve always holds the step running now.
  function capacityRange(u, min, max) {
    const values = [min, max].filter((v) => v != null && isFinite(v));
    if (state.current) values.push(state.current.value);
    if (!values.length) return [0, 1];
    const lo = Math.min(...values), hi = Math.max(...values);
    const pad = Math.max((hi - lo) * 0.08, hi * 0.05, 1);
    return [Math.max(0, lo - pad), hi + pad];
  }

  // A band and a label where the running step sits on the capacity curve.
  function highlightCurrentStep(u) {
    const c = state.current;
    if (!c) return;
    const x = u.valToPos(c.value, "x", true);
    const ctx = u.ctx;
    const px = devicePixelRatio;
    ctx.save();
    ctx.fillStyle = "rgba(47, 111, 219, 0.18)";
    ctx.fillRect(x - 8 * px, u.bbox.top, 16 * px, u.bbox.height);
    ctx.fillStyle = css("--accent");
    ctx.font = `${12 * px}px system-ui, sans-serif`;
    ctx.textAlign = "center";
    ctx.fillText(`step ${c.index}${c.measuring ? "" : " (warm-up)"}`, x, u.bbox.top + 14 * px);
    ctx.restore();
  }

  function buildErrorChart() {
    const kinds = state.kinds.length ? state.kinds : ["errors"];
    makeChart("errors", $("errors-chart"), kinds.map((k, i) =>
      line(k, PALETTE[(i + 3) % PALETTE.length], "n", (v) => num(v))), [axis("s"), axis("errors/s", "n")]);
  }

  function setData(key, data) {
    const chart = charts[key];
    if (!chart) return;
    chart.setData(data, !zoomed.has(key));
    if (zoomed.has(key)) chart.redraw(false, false);
  }

  function drawCharts() {
    // Between two search steps (cooldown, hooks) nothing was measured: a row of
    // nulls there leaves a gap in every line instead of joining the steps.
    const rows = [];
    state.rows.forEach((r, i) => {
      const prev = state.rows[i - 1];
      if (prev && prev.step !== r.step) rows.push({ gap: true, x: (prev.x + r.x) / 2 });
      rows.push(r);
    });
    const x = rows.map((r) => r.x);
    const gap = (f) => (r) => r.gap ? null : f(r);
    setData("rate", [x, rows.map(gap((r) => r.offered)), rows.map(gap((r) => r.achieved)),
      rows.map(gap((r) => r.errors)), rows.map(gap((r) => r.dropped))]);
    setData("latency", [x].concat(PERCENTILES.map((p) =>
      rows.map(gap((r) => r.achieved > 0 ? r.latency_ms[p] : null)))));
    setData("flight", [x, rows.map(gap((r) => r.in_flight)), rows.map(gap((r) => r.dropped))]);
    const kinds = state.kinds.length ? state.kinds : ["errors"];
    setData("errors", [x].concat(kinds.map((k) => rows.map(gap((r) => r.error_kinds[k] || 0)))));
    if (charts.capacity) {
      // One point per value (its latest step, a confirmation re-run included) on the
      // curve; generator-bound steps say nothing about the target and stand apart.
      const latest = new Map();
      const bound = new Map();
      state.steps.forEach((s) => (s.generator_bound ? bound : latest).set(s.value, s));
      const values = [...new Set([...latest.keys(), ...bound.keys()])].sort((a, b) => a - b);
      const of = (m, f) => values.map((v) => m.has(v) ? f(m.get(v)) : null);
      setData("capacity", [values, of(latest, (s) => s.achieved), of(latest, (s) => s.p95_ms),
        of(latest, (s) => s.p99_ms), of(bound, (s) => s.achieved)]);
    }
  }

  // ---- figures and tables ---------------------------------------------------

  function drawFigures() {
    const n = state.now;
    const last = state.rows[state.rows.length - 1];
    if (n) {
      setFigure("elapsed", `${clock(n.elapsed_s)} / ${clock(n.total_s)}`, n.elapsed_s);
      setFigure("offered", num(n.offered, 1), n.offered);
      setFigure("achieved", `${num(n.rate)}/s`, n.rate);
      setFigure("requests", num(n.requests), n.requests);
      const share = n.requests ? (100 * n.errors / n.requests).toFixed(2) : "0.00";
      setFigure("errors", `${num(n.errors)} (${share}%)`, n.errors);
      setFigure("dropped", num(n.dropped), n.dropped);
      setFigure("in-flight", num(n.in_flight), n.in_flight);
    }
    if (last) setFigure("p95", last.achieved ? `${ms(last.latency_ms.p95)} ms` : "–", last.latency_ms.p95);
    $("verdict").textContent = state.verdict || "–";
    const body = document.querySelector("#error-kinds tbody");
    body.textContent = "";
    Object.entries(state.errorKinds).forEach(([kind, count]) => {
      const tr = document.createElement("tr");
      cell(tr, kind);
      cell(tr, num(count)).dataset.value = String(count);
      body.appendChild(tr);
    });
    if (!body.children.length) {
      const tr = document.createElement("tr");
      cell(tr, "none");
      cell(tr, "0");
      body.appendChild(tr);
    }
  }

  function drawSteps() {
    if (state.meta.command !== "find") return;
    const body = document.querySelector("#steps tbody");
    body.textContent = "";
    state.steps.forEach((s) => {
      const tr = document.createElement("tr");
      cell(tr, String(s.index) + (s.confirmation ? " (confirm)" : ""));
      cell(tr, num(s.value, 1));
      cell(tr, num(s.achieved, 1));
      cell(tr, ms(s.p50_ms));
      cell(tr, ms(s.p95_ms));
      cell(tr, ms(s.p99_ms));
      cell(tr, `${s.errors_percent.toFixed(2)}%`);
      cell(tr, num(s.dropped));
      const result = s.interrupted ? "interrupted" : s.generator_bound ? "generator-bound"
        : s.passed ? "pass" : "fail";
      cell(tr, result, s.generator_bound ? "bound" : s.passed ? "pass" : "fail").title = s.verdict;
      body.appendChild(tr);
    });
    const c = state.current;
    if (c) {
      const tr = document.createElement("tr");
      tr.className = "current";
      cell(tr, String(c.index) + (c.confirmation ? " (confirm)" : ""));
      cell(tr, num(c.value, 1));
      for (let i = 0; i < 6; i++) cell(tr, "");
      cell(tr, c.measuring ? "measuring…" : "warming up…");
      body.appendChild(tr);
      $("current-step").textContent = `— step ${c.index} at ${num(c.value, 1)} ${state.meta.unit} running`;
    } else {
      $("current-step").textContent = "";
    }
  }

  function drawWatches() {
    const body = document.querySelector("#watches tbody");
    body.textContent = "";
    state.watches.forEach((w) => {
      const tr = document.createElement("tr");
      cell(tr, w.spec === "self" ? "generator (headroom)" : w.spec);
      cell(tr, w.kind);
      let cpu = "", cpuCap = "", mem = "", memCap = "", more = "";
      if (w.kind === "generator" || w.kind === "process") {
        cpu = num(w.cpu_cores, 2);
        mem = num(w.rss_mb, 1);
        if (w.kind === "process") more = `${w.processes} process(es), fds ${w.fds}${w.fd_limit ? " / " + w.fd_limit : ""}`;
      } else if (w.kind === "cgroup") {
        cpu = num(w.cpu_cores, 2);
        cpuCap = w.cpu_cap_cores == null ? "none" : num(w.cpu_cap_cores, 2);
        mem = num(w.memory_mb, 1);
        memCap = w.memory_cap_mb == null ? "none" : num(w.memory_cap_mb, 0);
      } else if (w.kind === "postgres") {
        more = `connections ${w.connections} / max_connections ${w.max_connections} ` +
          `(active ${w.active}, idle ${w.idle}, idle in transaction ${w.idle_in_transaction}); ` +
          `${num(w.tps, 1)} tps; waiting locks ${w.waiting_locks}`;
      } else if (w.kind === "prometheus") {
        more = Object.entries(w.values || {}).slice(0, 6).map(([k, v]) => `${k} ${num(v, 2)}`).join("; ");
      }
      [cpu, cpuCap, mem, memCap].forEach((t) => cell(tr, t));
      cell(tr, more).style.textAlign = "left";
      body.appendChild(tr);
    });
    const pg = $("postgres");
    pg.textContent = "";
    // While the load runs, the watch's own recount (every few seconds) of the statements
    // so far; otherwise, or before it has any, those of the last finished run or step.
    const live = state.finished ? null :
      state.watches.find((w) => w.kind === "postgres" && (w.top_queries || []).length > 0);
    const unit = state.meta.command === "find" ? "step" : "run";
    const p = live ? { spec: live.spec, top_queries: live.top_queries } : state.postgres;
    if (p) {
      const h = document.createElement("h2");
      h.id = "postgres-heading";
      h.dataset.live = live ? "true" : "false";
      h.textContent = live ?
        `PostgreSQL (${p.spec}): top statements so far in this ${unit}` :
        `PostgreSQL (${p.spec}): top statements of the last ${unit}`;
      pg.appendChild(h);
      const table = document.createElement("table");
      table.className = "table";
      const head = document.createElement("tr");
      ["statement", "calls", "mean ms", "total ms"].forEach((t) => {
        const th = document.createElement("th");
        th.textContent = t;
        head.appendChild(th);
      });
      table.appendChild(head);
      p.top_queries.forEach((q) => {
        const tr = document.createElement("tr");
        cell(tr, q.query, "query");
        cell(tr, num(q.calls));
        cell(tr, ms(q.mean_ms));
        cell(tr, num(q.total_ms, 1));
        table.appendChild(tr);
      });
      pg.appendChild(table);
    }
  }

  // Each workload's requests and errors so far (a run of several workloads).
  function drawWorkloads() {
    const panel = $("workloads-panel");
    panel.hidden = state.workloads.length === 0;
    const body = $("workloads").querySelector("tbody");
    body.replaceChildren(...state.workloads.map((w) => {
      const tr = document.createElement("tr");
      const pct = w.requests > 0 ? (100 * w.errors / w.requests).toFixed(2) : "0.00";
      for (const text of [w.name, String(w.requests), String(w.errors), pct]) {
        const td = document.createElement("td");
        td.textContent = text;
        tr.appendChild(td);
      }
      return tr;
    }));
  }

  function drawOutcome() {
    const f = state.finished;
    if (!f) return;
    const box = $("outcome");
    box.hidden = false;
    box.className = "outcome " + (f.exit_code === 0 ? "passed" : "failed");
    box.textContent = "";
    const p = document.createElement("p");
    p.id = "outcome-text";
    p.textContent = `${f.outcome} (exit code ${f.exit_code})`;
    box.appendChild(p);
    const facts = [];
    if (f.summary) {
      const s = f.summary;
      facts.push(["requests", num(s.requests), s.requests],
        ["achieved", `${num(s.rate.achieved, 1)} req/s`, s.rate.achieved],
        ["p50 / p95 / p99", `${ms(s.latency_ms.p50)} / ${ms(s.latency_ms.p95)} / ${ms(s.latency_ms.p99)} ms`, s.latency_ms.p95],
        ["errors", `${num(s.errors.count)} (${(s.errors.rate * 100).toFixed(2)}%)`, s.errors.count],
        ["dropped", num(s.dropped), s.dropped]);
      (s.thresholds || []).forEach((t) => facts.push([t.expr, t.ok ? "pass" : "fail", t.ok]));
    }
    if (f.search) {
      const s = f.search;
      facts.push(["ceiling", s.ceiling == null ? "none" : `${num(s.ceiling, 1)} ${state.meta.unit}${s.ceiling_is_lower_bound ? " (lower bound)" : ""}`, s.ceiling],
        ["knee", s.knee == null ? "none" : `${num(s.knee, 1)} ${state.meta.unit}`, s.knee],
        ["limited by", s.limited_by, s.limited_by]);
    }
    const table = document.createElement("table");
    table.className = "table";
    facts.forEach(([k, text, value]) => {
      const tr = document.createElement("tr");
      cell(tr, k);
      cell(tr, text).dataset.value = value == null ? "" : String(value);
      tr.dataset.fact = k;
      table.appendChild(tr);
    });
    box.appendChild(table);
  }

  function drawStatus(text, cls) {
    const el = $("status");
    el.textContent = text;
    el.className = "status " + (cls || "");
  }

  // ---- the event stream -----------------------------------------------------

  function receive(m) {
    if (m.reset) {
      state.meta = m.meta;
      state.rows = [];
      state.kinds = [];
      $("title").textContent = `${m.meta.command === "find" ? "headroom find" : "headroom run"}: ${m.meta.name}`;
      $("subtitle").textContent = `${m.meta.target} · thresholds: ${m.meta.thresholds.join(", ") || "none"}`;
      $("offered-label").textContent = m.meta.unit === "users" ? "Users" : "Offered req/s";
      document.title = `headroom · ${m.meta.name}`;
      buildCharts();
    }
    state.rows.push(...m.rows);
    state.now = m.now;
    state.errorKinds = m.error_kinds;
    state.steps = m.steps;
    state.current = m.current;
    state.verdict = m.verdict;
    state.watches = m.watches;
    state.postgres = m.postgres;
    state.stopping = m.stopping;
    state.finished = m.finished;
    const kinds = Object.keys(m.error_kinds).sort();
    if (kinds.join() !== state.kinds.join()) {
      state.kinds = kinds;
      buildErrorChart();
    }
    state.workloads = m.workloads || [];
    drawFigures();
    drawCharts();
    drawSteps();
    drawWatches();
    drawWorkloads();
    drawOutcome();
    if (state.finished) {
      drawStatus("finished: the command has ended and its server stopped; this page keeps the figures", "finished");
      $("stop").disabled = true;
    } else if (state.stopping) {
      drawStatus("stopping…", "stopping");
      $("stop").disabled = true;
    } else {
      drawStatus(state.meta.command === "find" ? "searching" : "running");
    }
  }

  const events = new EventSource("/events");
  events.onmessage = (e) => {
    receive(JSON.parse(e.data));
    if (state.finished) events.close();
  };
  events.onerror = () => {
    if (!state.finished) drawStatus("connection lost; retrying…", "lost");
  };

  $("stop").addEventListener("click", () => {
    $("stop").disabled = true;
    drawStatus("stopping…", "stopping");
    fetch("/stop", { method: "POST", headers: { "X-Headroom-Stop": "1" } })
      .then((r) => { if (!r.ok) drawStatus(`stop refused: HTTP ${r.status}`, "lost"); })
      .catch(() => drawStatus("stop failed: the server did not answer", "lost"));
  });

  window.addEventListener("resize", () => {
    Object.values(charts).forEach((c) => {
      const el = c.root.parentElement;
      c.setSize({ width: Math.max(300, el.clientWidth), height: 240 });
    });
  });
})();

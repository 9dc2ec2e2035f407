// debatelab view: the index, run and compare pages. The data come as scripts that set
// window.VIEW (data/index.js, data/run/<id>.js): they load from the server and from file://.
"use strict";

const V = (window.VIEW = window.VIEW || { runs: {} });
V.runs = V.runs || {};

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

function param(name) {
  return new URLSearchParams(location.search).get(name);
}

function loadScript(src) {
  return new Promise((resolve, reject) => {
    const s = document.createElement("script");
    s.src = src;
    s.onload = () => { s.remove(); resolve(); };
    s.onerror = () => { s.remove(); reject(new Error("cannot load " + src)); };
    document.head.append(s);
  });
}

function loadRun(id, fresh) {
  const src = "data/run/" + encodeURIComponent(id) + ".js" + (fresh ? "?t=" + Date.now() : "");
  return loadScript(src).then(() => V.runs[id]);
}

function fmt(v) {
  if (v === null || v === undefined) return "";
  if (typeof v === "number") {
    if (Number.isInteger(v)) return v.toLocaleString("en");
    return Math.abs(v) >= 1000 ? v.toFixed(1) : String(Number(v.toPrecision(5)));
  }
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

function duration(s) {
  // as debatelab.runlog.duration writes it
  if (s === null || s === undefined) return "";
  if (s < 60) return s.toFixed(1) + " s";
  const whole = Math.round(s);
  const m = Math.floor(whole / 60);
  if (m < 60) return m + " min " + String(whole % 60).padStart(2, "0") + " s";
  return Math.floor(m / 60) + " h " + String(m % 60).padStart(2, "0") + " min";
}

function statusBadge(status) {
  return el("span", { class: "status " + status, text: status });
}

function withSe(metrics, key) {
  const se = metrics[key + "_se"];
  return se === undefined || se === null ? fmt(metrics[key]) : fmt(metrics[key]) + " ± " + fmt(se);
}

function metricKeys(metrics) {
  return Object.keys(metrics).filter((k) => !k.endsWith("_se")).sort();
}

// ------------------------------------------------------------------ index

function renderIndex() {
  const index = V.index;
  document.getElementById("folders").textContent = index.folders.join(", ");
  const tbody = document.querySelector("#runs tbody");
  const selected = new Set(
    [...document.querySelectorAll("#runs input:checked")].map((x) => x.value));
  tbody.replaceChildren();
  const filter = (document.getElementById("filter").value || "").toLowerCase();
  let shown = 0;
  for (const run of index.runs) {
    const text = [run.label, run.command, run.status].join(" ").toLowerCase();
    if (filter && !text.includes(filter)) continue;
    shown += 1;
    const box = el("input", { type: "checkbox", value: run.id });
    box.checked = selected.has(run.id);
    box.addEventListener("change", updateCompare);
    const headline = Object.entries(run.headline)
      .map(([k, v]) => k + " " + fmt(v)).join(", ");
    tbody.append(el("tr", { "data-run": run.id },
      el("td", {}, box),
      el("td", {}, el("a", { href: "run.html?id=" + encodeURIComponent(run.id) }, run.label)),
      el("td", { text: run.command }),
      el("td", {}, statusBadge(run.status)),
      el("td", { text: (run.started_at || "").replace("T", " ").slice(0, 19) }),
      el("td", { class: "num", text: duration(run.wall_time_s) }),
      el("td", { class: "num", text: run.sittings }),
      el("td", { class: "headline", text: headline })));
  }
  document.getElementById("count").textContent = shown + " of " + index.runs.length + " runs";
  updateCompare();
}

function updateCompare() {
  const ids = [...document.querySelectorAll("#runs input:checked")].map((x) => x.value);
  const button = document.getElementById("compare");
  button.disabled = ids.length < 2;
  button.onclick = () => { location.href = "compare.html?ids=" + ids.map(encodeURIComponent).join(","); };
}

function followIndex() {
  if (!V.index.live || !V.index.runs.some((r) => r.status === "running" || r.status === "stopped")) return;
  setTimeout(() => loadScript("data/index.js?t=" + Date.now())
    .then(() => { renderIndex(); followIndex(); }, followIndex), V.index.follow_ms);
}

// ------------------------------------------------------------------ figures

function plot(container, fig, data) {
  const div = el("div", { class: "plot", id: "plot-" + fig.id });
  container.append(div);
  Plotly.newPlot(div, fig.figure.data, fig.figure.layout, { responsive: true });
  return div;
}

function wormControls(div, fig, state) {
  const extra = fig.extra;
  if (!extra.n.length) return;
  const controls = el("div", { class: "controls" });
  const label = el("span", { class: "n-label" });
  const slider = el("input", { type: "range", min: 0, max: extra.n.length - 1, step: 1,
                               class: "n-slider", "aria-label": "proposer's n" });
  slider.value = state.nIndex !== undefined ? state.nIndex : 0;
  const boxes = {};
  const apply = () => {
    const n = extra.n[Number(slider.value)];
    state.nIndex = Number(slider.value);
    label.textContent = "proposer Bo" + n;
    const xs = [], ys = [], idx = [];
    extra.series.forEach((s, k) => {
      // the largest n of this series not above the slider's (a series may stop earlier)
      let j = -1;
      s.n.forEach((v, i) => { if (v <= n) j = i; });
      // a series that starts above this n has no point yet
      xs.push([j < 0 ? null : s.win_rate[j]]); ys.push([j < 0 ? null : s.accuracy[j]]);
      idx.push(extra.first_marker + k);
    });
    Plotly.restyle(div, { x: xs, y: ys }, idx);
  };
  const toggle = () => {
    const visible = [], idx = [];
    extra.series.forEach((s, k) => {
      const on = boxes["arm:" + s.arm].checked && boxes["protocol:" + s.protocol].checked;
      visible.push(on, on); idx.push(k, extra.first_marker + k);
    });
    Plotly.restyle(div, { visible: visible }, idx);
  };
  slider.addEventListener("input", apply);
  controls.append(el("label", {}, "n ", slider), label);
  for (const [kind, names] of [["arm", extra.arms], ["protocol", extra.protocols]]) {
    const group = el("span", {}, kind + ": ");
    for (const name of names) {
      const box = el("input", { type: "checkbox", "data-toggle": kind + ":" + name });
      box.checked = true;
      box.addEventListener("change", toggle);
      boxes[kind + ":" + name] = box;
      group.append(el("label", {}, box, " " + name + " "));
    }
    controls.append(group);
  }
  div.before(controls);
  apply();
}

const PLAYER_COLORS = { A: "#d62728", B: "#1f77b4", honest: "#1f77b4", liar: "#d62728" };

function playControls(div, fig, state) {
  const extra = fig.extra;
  const size = extra.plays[0].image.length;
  const cell = size / extra.grid;
  const controls = el("div", { class: "controls" });
  const menu = el("select", { class: "play-select", "aria-label": "example play" },
    ...extra.plays.map((p, i) => el("option", { value: i, text: "play " + (i + 1) + ": image " + p.index })));
  const slider = el("input", { type: "range", min: 0, step: 1, class: "move-slider",
                               "aria-label": "moves shown" });
  const label = el("span", { class: "move-label" });
  const caption = el("div", { class: "play-caption" });
  const draw = () => {
    const play = extra.plays[Number(menu.value)];
    slider.max = play.moves.length;
    const shown = Math.min(Number(slider.value), play.moves.length);
    state.play = Number(menu.value); state.move = shown;
    const revealed = new Set();
    const shapes = [], notes = [];
    play.moves.slice(0, shown).forEach((m, t) => {
      for (const c of m.cells) {
        revealed.add(c);
        const r = Math.floor(c / extra.grid), q = c % extra.grid;
        const color = PLAYER_COLORS[m.player] || "#2ca02c";
        shapes.push({ type: "rect", x0: q * cell - 0.5, x1: (q + 1) * cell - 0.5,
                      y0: r * cell - 0.5, y1: (r + 1) * cell - 0.5,
                      line: { color: color, width: 2 } });
        notes.push({ x: (q + 0.5) * cell - 0.5, y: (r + 0.5) * cell - 0.5, text: String(t + 1),
                     showarrow: false, font: { color: color, size: 12 } });
      }
    });
    // only the revealed cells' pixels: the judge's view after this many moves
    const z = play.image.map((row, y) => row.map((v, x) =>
      revealed.has(Math.floor(y / cell) * extra.grid + Math.floor(x / cell)) ? v : null));
    Plotly.react(div, [{ ...fig.figure.data[0], z: z }],
                 { ...fig.figure.layout, shapes: shapes, annotations: notes });
    label.textContent = shown + " of " + play.moves.length + " moves";
    caption.textContent = play.caption;
  };
  menu.addEventListener("change", () => { slider.value = 0; draw(); });
  slider.addEventListener("input", draw);
  menu.value = state.play || 0;
  slider.value = state.move || 0;
  controls.append(menu, el("label", {}, "moves ", slider), label);
  div.before(controls, caption);
  draw();
}

function renderFigures(container, run, state) {
  container.replaceChildren();
  for (const fig of run.figures) {
    const box = el("div", { class: "figure", id: "figure-" + fig.id, "data-kind": fig.kind },
      el("h3", { text: fig.title }));
    container.append(box);
    const div = plot(box, fig);
    if (fig.kind === "worms") wormControls(div, fig, state.worms = state.worms || {});
    if (fig.kind === "plays") playControls(div, fig, state.plays = state.plays || {});
  }
}

// ------------------------------------------------------------------ run page

function kvTable(table, rows) {
  table.replaceChildren(...rows.map(([k, v]) =>
    el("tr", {}, el("td", { text: k }), el("td", { class: "num", text: v }))));
}

function renderRun(run, state) {
  document.title = "debatelab: " + run.label;
  document.getElementById("title").textContent = run.label + " (" + run.command + ")";
  document.getElementById("status").replaceWith(
    Object.assign(statusBadge(run.status), { id: "status" }));
  const m = run.manifest || {};
  document.getElementById("summary").replaceChildren(el("p", {},
    "started " + (run.started_at || "?").replace("T", " ").slice(0, 19) + " UTC; wall time " +
    duration(run.wall_time_s) + "; " + run.sittings + " sitting(s)" +
    (m.git_commit ? "; commit " + String(m.git_commit).slice(0, 10) + (m.git_dirty ? " (dirty)" : "") : "") +
    (m.device ? "; " + m.device : "")));
  const progress = document.getElementById("progress");
  progress.replaceChildren();
  if (run.stages.length && run.status !== "finished") {
    progress.append(el("h2", { text: "Progress" }), el("table", { class: "stages" },
      ...run.stages.map((s) => el("tr", { "data-stage": s.stage },
        el("td", { text: s.stage }),
        el("td", { class: "num", text: (s.done ?? "") + (s.total ? " / " + s.total : "") }),
        el("td", { text: s.finished ? "done" : s.eta_s != null ? "ETA " + duration(s.eta_s) : "" })))));
  }
  // figures are drawn once and then updated in place, so the slider and toggles keep their place
  const figures = document.getElementById("figures");
  const problems = document.getElementById("figure-problems") ||
    figures.parentNode.insertBefore(el("p", { id: "figure-problems", class: "hint" }), figures);
  problems.textContent = run.figure_problems.length ?
    "Left out (cannot be read yet): " + run.figure_problems.join("; ") : "";
  const signature = run.figures.map((f) => f.id + ":" + JSON.stringify(f.figure.data.map(
    (d) => (d.x || []).length))).join("|");
  if (signature !== state.signature) {
    renderFigures(figures, run, state);
    state.signature = signature;
  } else {
    for (const fig of run.figures) {
      const div = document.getElementById("plot-" + fig.id);
      if (fig.kind !== "worms" && fig.kind !== "plays") Plotly.react(div, fig.figure.data, fig.figure.layout);
    }
  }
  const images = document.getElementById("images");
  if (run.images.length) {
    images.replaceChildren(el("h2", { text: "Figures the run wrote" }), el("div", { class: "images" },
      ...run.images.map((name) => el("figure", {},
        el("img", { src: "files/" + encodeURIComponent(run.id) + "/" + encodeURIComponent(name) +
                    (V.index.live ? "?t=" + Date.now() : ""), alt: name }),
        el("figcaption", { text: name })))));
  }
  kvTable(document.getElementById("settings"),
    Object.keys(run.settings).sort().map((k) => [k, fmt(run.settings[k])]));
  kvTable(document.getElementById("metrics"),
    metricKeys(run.metrics).map((k) => [k, withSe(run.metrics, k)]));
  const report = document.getElementById("report");
  report.innerHTML = run.report_html || "<p>(no report.md yet)</p>";
  document.getElementById("log").replaceChildren(...run.log.map((e) =>
    el("tr", {}, el("td", { text: (e.time || "").slice(11, 19) }), el("td", { text: e.event }),
       el("td", { text: (e.message || "").split("\n")[0] }))));
}

function runPage() {
  const id = param("id");
  const state = {};
  const show = (run) => {
    renderRun(run, state);
    // an open sitting is followed even when its log is quiet for a while (a long chunk)
    if (V.index.live && run.open) {
      setTimeout(() => loadRun(id, true).then(show, () => show(run)), V.index.follow_ms);
    }
  };
  loadRun(id, false).then(show, () => {
    document.getElementById("summary").textContent = "No run " + id + " under the viewed folders.";
  });
}

// ------------------------------------------------------------------ compare page

// The settings of the compared runs, sorted, and those whose values differ between them.
function settingKeys(runs) {
  const keys = [...new Set(runs.flatMap((r) => Object.keys(r.settings)))].sort();
  const differing = keys.filter((k) => new Set(runs.map((r) => JSON.stringify(r.settings[k]))).size > 1);
  return { keys, differing };
}

// When the compared runs differ in one numeric setting only (rollouts, pixels, epochs, ...),
// their common metrics against it: one curve across runs. Headline metrics shown, the rest in
// the legend; error bars where the runs recorded a standard error.
function settingCurves(runs) {
  const { differing } = settingKeys(runs);
  if (runs.length < 2 || differing.length !== 1) return null;
  const key = differing[0];
  if (!runs.every((r) => typeof r.settings[key] === "number")) return null;
  const sorted = [...runs].sort((a, b) => a.settings[key] - b.settings[key]);
  // a metric that repeats the setting itself (pixels records its rollouts) is no curve
  const common = metricKeys(sorted[0].metrics).filter((k) => k !== key &&
    sorted.every((r) => typeof r.metrics[k] === "number"));
  if (!common.length) return null;
  const xs = sorted.map((r) => r.settings[key]);
  const headline = new Set(Object.keys(sorted[0].headline || {}));
  const data = common.map((k) => {
    // seeds are labels, not a scale: points, no line between them
    const trace = { x: xs, y: sorted.map((r) => r.metrics[k]), name: k,
                    mode: /seed$/.test(key) ? "markers" : "lines+markers",
                    type: "scatter", visible: headline.size && !headline.has(k) ? "legendonly" : true };
    if (sorted.every((r) => typeof r.metrics[k + "_se"] === "number")) {
      trace.error_y = { type: "data", array: sorted.map((r) => r.metrics[k + "_se"]), visible: true };
    }
    return trace;
  });
  const logX = xs[0] > 0 && xs[xs.length - 1] / xs[0] >= 10;
  return { id: "setting-curves", title: "Metrics against " + key,
           figure: { data, layout: { xaxis: { title: { text: key }, type: logX ? "log" : "linear" },
                                     yaxis: { title: { text: "value" } }, legend: { orientation: "h", y: 1.12 } } } };
}

function comparePage() {
  const ids = (param("ids") || "").split(",").filter(Boolean);
  Promise.all(ids.map((id) => loadRun(id, false))).catch(() => {
    document.querySelector("main").prepend(el("p", { class: "hint",
      text: "Some of these runs are not under the viewed folders: " + ids.join(", ") }));
    return Promise.reject(new Error("unknown run"));
  }).then((runs) => {
    const head = el("tr", {}, el("th", { text: "" }),
      ...runs.map((r) => el("th", {}, el("a", { href: "run.html?id=" + encodeURIComponent(r.id) }, r.label))));
    // settings: those that differ first, highlighted
    const { keys, differing } = settingKeys(runs);
    const differs = (k) => differing.includes(k);
    const ordered = differing.concat(keys.filter((k) => !differs(k)));
    document.getElementById("settings").replaceChildren(head.cloneNode(true),
      el("tr", {}, el("td", { text: "command" }), ...runs.map((r) => el("td", { text: r.command }))),
      ...ordered.map((k) => el("tr", { class: differs(k) ? "differs" : "", "data-key": k },
        el("td", { text: k }), ...runs.map((r) => el("td", { text: fmt(r.settings[k]) })))));
    const mkeys = [...new Set(runs.flatMap((r) => metricKeys(r.metrics)))].sort();
    document.getElementById("metrics").replaceChildren(head.cloneNode(true),
      el("tr", {}, el("td", { text: "wall time" }), ...runs.map((r) => el("td", { class: "num", text: duration(r.wall_time_s) }))),
      ...mkeys.map((k) => el("tr", { "data-key": k }, el("td", { text: k }),
        ...runs.map((r) => el("td", { class: "num", text: k in r.metrics ? withSe(r.metrics, k) : "" })))));
    const figures = document.getElementById("figures");
    const across = settingCurves(runs);
    if (across) {
      const cell = el("div", { id: "across" });
      figures.append(el("h3", { text: across.title }), cell);
      plot(cell, across);
    }
    const figIds = [...new Set(runs.flatMap((r) => r.figures.map((f) => f.id)))];
    for (const fid of figIds) {
      const row = el("div", { class: "compare-row" });
      row.style.gridTemplateColumns = "repeat(" + runs.length + ", 1fr)";
      figures.append(el("h3", { text: (runs.flatMap((r) => r.figures).find((f) => f.id === fid)).title }), row);
      for (const r of runs) {
        const cell = el("div", {});
        row.append(cell);
        const fig = r.figures.find((f) => f.id === fid);
        if (fig) plot(cell, { ...fig, id: r.id + "-" + fig.id });
      }
    }
  });
}

// ------------------------------------------------------------------ start

document.addEventListener("DOMContentLoaded", () => {
  const page = document.body.dataset.page;
  if (page === "index") {
    renderIndex();
    document.getElementById("filter").addEventListener("input", renderIndex);
    followIndex();
  } else if (page === "run") {
    runPage();
  } else if (page === "compare") {
    comparePage();
  }
});

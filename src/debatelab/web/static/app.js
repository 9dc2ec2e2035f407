// debatelab demo page: drawing, classification and debates against the local server (or,
// on the static site, against local.js, which answers the same calls in the browser).
"use strict";

const $ = (id) => document.getElementById(id);
const SIDE = 28;
const COLORS = { honest: "#2f6fe0", liar: "#e0463a", A: "#2f6fe0", B: "#e08a1e", p1: "#8e44ad", p2: "#16a085" };

const app = {
  info: null,
  image: null,        // current 784 values in [0, 1] (centred for drawings)
  truth: null,        // true label (dataset label, or the user's word)
  gold: null,         // gold probabilities of the current image
  game: null,         // the debate in progress
  busy: false,
  auto: false,
};

// ---------- server (or, on the static site, local.js in this browser) ----------
async function api(path, body) {
  if (typeof debatelabLocal !== "undefined") return debatelabLocal.api(path, body);
  const opts = body === undefined ? {} : {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  };
  const res = await fetch(path, opts);
  const data = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
  if (!res.ok) throw new Error(data.error || `HTTP ${res.status}`);
  return data;
}

function showError(err) {
  const box = $("error");
  if (!err) { box.hidden = true; return; }
  box.textContent = String(err.message || err);
  box.hidden = false;
}

// ---------- tabs ----------
document.querySelectorAll("nav button").forEach((btn) => {
  btn.addEventListener("click", () => {
    document.querySelectorAll("nav button").forEach((b) => b.classList.toggle("active", b === btn));
    document.querySelectorAll(".tab").forEach((t) => t.classList.toggle("active", t.id === btn.dataset.tab));
  });
});

// ---------- drawing ----------
const draw = $("draw");
const dctx = draw.getContext("2d");
function clearCanvas() {
  dctx.fillStyle = "#000";
  dctx.fillRect(0, 0, draw.width, draw.height);
}
clearCanvas();
let drawing = false;
let last = null;
function pointerPos(ev) {
  const r = draw.getBoundingClientRect();
  return [(ev.clientX - r.left) * draw.width / r.width, (ev.clientY - r.top) * draw.height / r.height];
}
draw.addEventListener("pointerdown", (ev) => {
  drawing = true;
  draw.setPointerCapture(ev.pointerId);
  last = pointerPos(ev);
  stroke(last, last);
});
draw.addEventListener("pointermove", (ev) => {
  if (!drawing) return;
  const p = pointerPos(ev);
  stroke(last, p);
  last = p;
});
function endStroke() {
  if (!drawing) return;
  drawing = false;
  $("sample-info").textContent = "";
  classifyCanvas();
}
draw.addEventListener("pointerup", endStroke);
draw.addEventListener("pointercancel", endStroke);
function stroke(a, b) {
  dctx.strokeStyle = "#fff";
  dctx.lineWidth = 20;
  dctx.lineCap = "round";
  dctx.lineJoin = "round";
  dctx.beginPath();
  dctx.moveTo(a[0], a[1]);
  dctx.lineTo(b[0], b[1]);
  dctx.stroke();
}

function canvasValues() {
  const small = document.createElement("canvas");
  small.width = SIDE;
  small.height = SIDE;
  const sctx = small.getContext("2d");
  sctx.imageSmoothingEnabled = true;
  sctx.imageSmoothingQuality = "high";
  sctx.drawImage(draw, 0, 0, SIDE, SIDE);
  const px = sctx.getImageData(0, 0, SIDE, SIDE).data;
  const out = new Array(SIDE * SIDE);
  for (let i = 0; i < out.length; i++) out[i] = Math.round(px[4 * i] / 255 * 1000) / 1000;
  return out;
}

function paintImage(canvas, values, side) {
  const ctx = canvas.getContext("2d");
  const s = canvas.width / side;
  ctx.fillStyle = "#000";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  for (let i = 0; i < side * side; i++) {
    const v = Math.round(255 * values[i]);
    if (v <= 0) continue;
    ctx.fillStyle = `rgb(${v},${v},${v})`;
    ctx.fillRect((i % side) * s, Math.floor(i / side) * s, s, s);
  }
}

async function classifyCanvas() {
  const values = canvasValues();
  if (!values.some((v) => v > 0)) return;
  await classify(values, true, null);
}

async function classify(values, center, label) {
  try {
    const out = await api("/api/classify", { image: values, center });
    showError(null);
    app.image = out.image;
    paintImage($("preview"), out.image, SIDE);
    app.gold = out.gold;
    renderBars("gold", out.gold);
    renderBars("sparse", out.sparse);
    app.truth = label !== null ? label : (out.gold ? argmax(out.gold) : 0);
    $("truth").value = String(app.truth);
    fillLiarChoices();
  } catch (err) { showError(err); }
}

function argmax(xs) { return xs.reduce((best, x, i) => (x > xs[best] ? i : best), 0); }

function renderBars(which, probs) {
  const box = $(`${which}-bars`);
  const pred = $(`${which}-pred`);
  box.innerHTML = "";
  if (!probs) {
    const cmd = app.info && app.info.missing[which];
    pred.textContent = "not available";
    if (cmd && app.info.static) box.innerHTML = `<p class="muted">Runs on the server: <code>${cmd}</code>.</p>`;
    else if (cmd) box.innerHTML = `<p class="muted">Make it with <code>${cmd}</code>.</p>`;
    return;
  }
  const top = argmax(probs);
  pred.textContent = `${top}  (${(100 * probs[top]).toFixed(1)} %)`;
  pred.dataset.cls = String(top);
  probs.forEach((p, c) => {
    const row = document.createElement("div");
    row.className = "bar-row" + (c === top ? " top" : "");
    row.innerHTML = `<span>${c}</span><div class="bar" style="width:${(100 * p).toFixed(1)}%"></div><span>${(100 * p).toFixed(1)}%</span>`;
    box.appendChild(row);
  });
}

$("clear").addEventListener("click", () => {
  clearCanvas();
  app.image = null;
  $("sample-info").textContent = "";
  paintImage($("preview"), new Array(SIDE * SIDE).fill(0), SIDE);
  ["gold", "sparse"].forEach((w) => { $(`${w}-bars`).innerHTML = ""; $(`${w}-pred`).textContent = "–"; });
});

async function loadRandom() {
  const index = Math.floor(Math.random() * app.info.test_images);
  const s = await api(`/api/sample?index=${index}`);
  paintImage(draw, s.image, SIDE);
  $("sample-info").textContent = `MNIST test image #${s.index}, label ${s.label}`;
  await classify(s.image, false, s.label);
}
$("random").addEventListener("click", () => loadRandom().catch(showError));

// ---------- debate settings ----------
function fillSelect(sel, values, selected) {
  sel.innerHTML = values.map((v) => `<option value="${v}">${v}</option>`).join("");
  if (selected !== undefined) sel.value = String(selected);
}
function fillLiarChoices() {
  const truth = Number($("truth").value);
  const others = [...Array(10).keys()].filter((c) => c !== truth);
  // the liar's default claim: the gold classifier's runner-up, the most plausible lie
  let best = others[0];
  if (app.gold) best = others.reduce((b, c) => (app.gold[c] > app.gold[b] ? c : b), others[0]);
  fillSelect($("liar-claim"), others, best);
  fillSelect($("cell-lie"), others, best);
}
$("truth").addEventListener("change", () => { app.truth = Number($("truth").value); fillLiarChoices(); });
$("k").addEventListener("input", () => { $("k-out").textContent = $("k").value; });
$("game").addEventListener("change", () => {
  const cells = $("game").value === "cells";
  $("pixel-settings").hidden = cells;
  $("cell-settings").hidden = !cells;
});

function capability(text) {
  const t = text.trim();
  return /^\d+$/.test(t) ? Number(t) : t;
}

// ---------- the debate ----------
function humanSide(game) {
  // which player the person plays, or null
  if (game.role === "honest") return game.kind === "pixels" ? "honest" : "A";
  if (game.role === "liar") return game.kind === "pixels" ? "liar" : "A";
  return null;
}

function request(game, play) {
  if (game.kind === "pixels") {
    return api("/api/pixels", {
      image: game.image, honest: game.honest, liar: game.liar, pixels: game.k, first: game.first,
      moves: game.moves, agent: game.agent, rollouts: game.rollouts, seed: game.seed, play,
    });
  }
  return api("/api/cells", {
    image: game.image, label: game.truth, protocol: game.protocol, rule: game.rule,
    k_a: game.ka, k_b: game.kb, claim: game.claim, turns: game.turns, seed: game.seed, play,
  });
}

async function startDebate() {
  showError(null);
  if (!app.image) await loadRandom();
  const kind = $("game").value;
  const role = $("role").value;
  const game = {
    kind, role, image: app.image, truth: Number($("truth").value),
    seed: Math.floor(Math.random() * 1e9), state: null, selected: new Set(), judged: null,
  };
  if (kind === "pixels") {
    Object.assign(game, {
      honest: game.truth, k: Number($("k").value), first: $("first").value,
      agent: $("agent").value, rollouts: Number($("rollouts").value), moves: [],
      liar: Number($("liar-claim").value),
    });
  } else {
    Object.assign(game, {
      protocol: $("protocol").value, rule: $("rule").value, ka: capability($("ka").value),
      kb: capability($("kb").value), turns: [],
      claim: role === "honest" ? game.truth : role === "liar" ? Number($("cell-lie").value) : null,
    });
  }
  app.auto = false;  // a running auto-play belongs to the previous game
  app.game = game;
  $("verdict").hidden = true;
  $("judge-panel").hidden = true;
  const state = await request(game, false);
  if (app.game !== game) return;  // replaced by a newer debate meanwhile
  game.state = state;
  render();
  if (role === "spectator" || role === "judge" || !isHumanTurn()) await autoPlay();
}

function isHumanTurn() {
  const g = app.game;
  return g && g.state && !g.state.done && g.state.next === humanSide(g);
}

async function step() {
  const g = app.game;
  if (!g || !g.state || g.state.done || app.busy) return;
  if (isHumanTurn()) { render(); return; }
  app.busy = true;
  setStatus("AI is thinking…");
  try {
    const s = await request(g, true);
    if (g !== app.game) return;
    g.state = s;
    if (g.kind === "pixels") g.moves = s.moves; else g.turns = s.turns;
  } finally { app.busy = false; }
  render();
}

async function autoPlay() {
  const g = app.game;
  if (!g || !g.state || app.looping === g) return;
  app.auto = true;
  app.looping = g;  // one loop per game
  try {
    while (app.auto && app.game === g && !g.state.done && !isHumanTurn()) {
      await step();
      await new Promise((r) => setTimeout(r, 250));
    }
  } catch (err) { if (app.game === g) showError(err); } finally {
    if (app.looping === g) app.looping = null;
    if (app.game === g) app.auto = false;
  }
}

async function humanMove(move) {
  const g = app.game;
  if (app.busy) return;
  app.busy = true;
  try {
    if (g.kind === "pixels") {
      const s = await request({ ...g, moves: [...g.moves, move] }, false);
      g.state = s;
      g.moves = s.moves;
    } else {
      const s = await request({ ...g, turns: [...g.turns, move] }, false);
      g.state = s;
      g.turns = s.turns;
      g.selected = new Set();
    }
    showError(null);
  } catch (err) { showError(err); return; } finally { app.busy = false; }
  if (g !== app.game) return;
  render();
  await autoPlay();
}

function setStatus(text) { $("status").textContent = text; }

// board geometry: pixel game on 28x28, cell game on the judge's 18x18 view
function boardClick(ev) {
  const g = app.game;
  if (!g || !isHumanTurn() || app.busy) return;
  const canvas = $("full");
  const r = canvas.getBoundingClientRect();
  const x = (ev.clientX - r.left) / r.width;
  const y = (ev.clientY - r.top) / r.height;
  if (g.kind === "pixels") {
    const p = Math.floor(y * SIDE) * SIDE + Math.floor(x * SIDE);
    humanMove(p);
  } else {
    const grid = g.state.grid;
    const cell = Math.floor(y * grid) * grid + Math.floor(x * grid);
    const need = g.state.moves[g.turns.length];
    if (g.selected.has(cell)) g.selected.delete(cell); else g.selected.add(cell);
    if (need === 1 && g.selected.size === 1) { humanMove([...g.selected]); return; }
    render();
  }
}
$("full").addEventListener("click", boardClick);
$("reveal").addEventListener("click", () => {
  const g = app.game;
  if (g && g.kind === "cells" && isHumanTurn() && !app.busy) humanMove([...g.selected].sort((a, b) => a - b));
});

function playerOfTurn(g, t) {
  if (g.kind === "pixels") return g.state.movers[t];
  return g.state.players[t];  // the protocol's turns say who moves
}

// While a person judges the pixel game, players go by their claims, in neutral colours, so
// nothing on the page says which one is honest.
function judging(g) { return g.role === "judge" && !g.judged; }
function sideKey(g, who) {
  if (g.kind !== "pixels" || !judging(g)) return who;
  const claim = who === "honest" ? g.honest : g.liar;
  return claim === Math.min(g.honest, g.liar) ? "p1" : "p2";
}
function sideName(g, who) {
  if (g.kind !== "pixels" || !judging(g)) return who;
  return `claims ${who === "honest" ? g.honest : g.liar}`;
}

function render() {
  const g = app.game;
  if (!g || !g.state) return;
  const s = g.state;
  const hideFull = g.role === "judge" && !g.judged;
  const full = $("full");
  const view = $("view");
  if (g.kind === "pixels") {
    if (hideFull) blank(full, "hidden from the judge"); else paintImage(full, g.image, SIDE);
    paintImage(view, new Array(SIDE * SIDE).fill(0), SIDE);
    const vctx = view.getContext("2d");
    const fctx = full.getContext("2d");
    const u = full.width / SIDE;
    s.moves.forEach((p, t) => {
      const color = COLORS[sideKey(g, s.movers[t])];
      const x = (p % SIDE) * u;
      const y = Math.floor(p / SIDE) * u;
      const v = g.image[p];
      vctx.fillStyle = color;
      vctx.globalAlpha = 0.35 + 0.65 * v;
      vctx.fillRect(x, y, u, u);
      vctx.globalAlpha = 1;
      if (!hideFull) { fctx.strokeStyle = color; fctx.lineWidth = 3; fctx.strokeRect(x - 2, y - 2, u + 4, u + 4); }
    });
  } else {
    const grid = s.grid;
    const side = Math.round(Math.sqrt(s.view.length));
    const revealed = new Map();
    g.turns.forEach((cells, t) => cells.forEach((c) => revealed.set(c, playerOfTurn(g, t))));
    if (hideFull) blank(full, "hidden from the judge"); else paintImage(full, s.view, side);
    paintImage(view, s.view.map((v, i) => {
      const cell = Math.floor(Math.floor(i / side) / (side / grid)) * grid + Math.floor((i % side) / (side / grid));
      return revealed.has(cell) ? v : 0;
    }), side);
    const u = full.width / grid;
    for (const [canvas, showAll] of [[full, !hideFull], [view, true]]) {
      const ctx = canvas.getContext("2d");
      if (canvas === view || showAll) {
        ctx.strokeStyle = "rgba(255,255,255,0.15)";
        ctx.lineWidth = 1;
        for (let i = 1; i < grid; i++) {
          ctx.beginPath(); ctx.moveTo(i * u, 0); ctx.lineTo(i * u, canvas.height); ctx.stroke();
          ctx.beginPath(); ctx.moveTo(0, i * u); ctx.lineTo(canvas.width, i * u); ctx.stroke();
        }
      }
      if (!showAll) continue;
      revealed.forEach((who, c) => {
        ctx.strokeStyle = COLORS[who];
        ctx.lineWidth = 4;
        ctx.strokeRect((c % grid) * u + 2, Math.floor(c / grid) * u + 2, u - 4, u - 4);
      });
      if (canvas === full) {
        g.selected.forEach((c) => {
          ctx.setLineDash([6, 4]);
          ctx.strokeStyle = "#ffd84a";
          ctx.lineWidth = 3;
          ctx.strokeRect((c % grid) * u + 4, Math.floor(c / grid) * u + 4, u - 8, u - 8);
          ctx.setLineDash([]);
        });
      }
    }
  }
  $("truth").closest("label").hidden = judging(g);
  renderClaims(g);
  renderMoves(g);
  const human = humanSide(g);
  $("cell-move").hidden = !(g.kind === "cells" && isHumanTurn() && s.moves[g.turns.length] > 1);
  if (s.done) {
    setStatus("The debate is over.");
    if (g.role === "judge" && !g.judged) showJudgePanel(g); else showVerdict(g);
  } else if (isHumanTurn()) {
    const what = g.kind === "pixels" ? "click a nonzero pixel of the full image"
      : `turn ${g.turns.length + 1} of ${s.moves.length}, click ${s.moves[g.turns.length]} cell(s) of the full image`;
    setStatus(`Your move (${human}): ${what}.`);
  } else if (!app.busy) {
    setStatus(`Next: ${s.next} (AI). Press Step or Auto-play.`);
  }
}

function blank(canvas, text) {
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#222";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = "#888";
  ctx.font = "16px system-ui";
  ctx.textAlign = "center";
  ctx.fillText(text, canvas.width / 2, canvas.height / 2);
}

function renderClaims(g) {
  const box = $("claims");
  if (g.kind === "pixels") {
    if (judging(g)) {
      box.innerHTML = `<span class="p1">one player claims ${Math.min(g.honest, g.liar)}</span> · <span class="p2">the other ${Math.max(g.honest, g.liar)}</span> (who is honest is hidden)`;
    } else {
      box.innerHTML = `<span class="honest">honest claims ${g.honest}</span> · <span class="liar">liar claims ${g.liar}</span>`;
    }
  } else {
    const s = g.state;
    let text = `<span class="A">A claims ${s.claim}</span>`;
    if (s.b_class !== null && s.b_class !== undefined) text += ` · <span class="B">B claims ${s.b_class}</span>`;
    else text += ` · <span class="B">B argues against</span>`;
    box.innerHTML = text;
  }
}

function renderMoves(g) {
  const list = $("moves");
  list.innerHTML = "";
  const items = g.kind === "pixels" ? g.state.moves : g.turns;
  items.forEach((m, t) => {
    const who = playerOfTurn(g, t);
    const li = document.createElement("li");
    li.className = sideKey(g, who);
    li.textContent = g.kind === "pixels"
      ? `${sideName(g, who)}: pixel (${Math.floor(m / SIDE)}, ${m % SIDE})`
      : `${who}: cell${m.length > 1 ? "s" : ""} ${m.map((c) => `(${Math.floor(c / g.state.grid)}, ${c % g.state.grid})`).join(" ")}`;
    list.appendChild(li);
  });
}

function probBars(probs, highlight) {
  return probs.map((p, c) => `<div class="bar-row${highlight.includes(c) ? " top" : ""}"><span>${c}</span><div class="bar" style="width:${(100 * p).toFixed(1)}%"></div><span>${(100 * p).toFixed(1)}%</span></div>`).join("");
}

function showVerdict(g) {
  const v = g.state.verdict;
  const box = $("verdict");
  box.hidden = false;
  let head;
  if (g.kind === "pixels") {
    const winner = v.honest_wins ? "honest" : "liar";
    head = `<p class="winner" id="winner" data-winner="${winner}">${winner === "honest" ? "Honest player wins" : "Liar wins"}</p>
      <p>Judge's logits: ${g.honest} → ${v.logits[g.honest].toFixed(2)}, ${g.liar} → ${v.logits[g.liar].toFixed(2)}.</p>`;
    box.innerHTML = head + probBars(v.probs, [g.honest, g.liar]);
  } else {
    const winner = v.a_wins ? "A" : "B";
    const correct = v.judge_class === g.truth;
    const rival = v.b_class === null ? "" : g.rule === "last_b"
      ? ` B names ${v.b_class} after the reveal.` : ` B claimed ${v.b_class}.`;
    head = `<p class="winner" id="winner" data-winner="${winner}">${winner} wins</p>
      <p>A claimed ${v.a_claim}.${rival} The judge says <b>${v.judge_class}</b>; the truth is <b>${g.truth}</b> (${correct ? "right" : "wrong"}). Payoff to A: ${v.payoff.toFixed(3)}.</p>`;
    box.innerHTML = head + probBars(v.probs, [v.a_claim].concat(v.b_class === null ? [] : [v.b_class]));
  }
  if (g.judged) {
    const ok = g.judged.pick === g.truth;
    box.innerHTML = `<p id="judge-result" data-correct="${ok}">You said ${g.judged.pick}: ${ok ? "right" : "wrong"} (truth ${g.truth}).</p>` + box.innerHTML;
  }
}

function showJudgePanel(g) {
  $("judge-panel").hidden = false;
  const box = $("judge-buttons");
  const options = g.kind === "pixels" ? [g.honest, g.liar].sort((a, b) => a - b) : [...Array(10).keys()];
  box.innerHTML = "";
  options.forEach((c) => {
    const b = document.createElement("button");
    b.textContent = String(c);
    b.dataset.cls = String(c);
    b.addEventListener("click", () => {
      g.judged = { pick: c };
      $("judge-panel").hidden = true;
      render();
    });
    box.appendChild(b);
  });
}

$("start").addEventListener("click", () => startDebate().catch(showError));
$("step").addEventListener("click", () => step().catch(showError));
$("auto").addEventListener("click", () => autoPlay());

// ---------- protocols (the server's registry) ----------
// The protocol select lists every protocol the server can play, each with its turns
// (e.g. "A1 B2 A1": A reveals 1 cell, B 2, A 1) and summary; nothing here is hard-coded.
function fillProtocols(info) {
  const rows = info.protocol_list || [];
  const sel = $("protocol");
  sel.innerHTML = "";
  rows.forEach((p) => {
    const o = document.createElement("option");
    o.value = p.name;
    o.textContent = `${p.name} (${p.turns})`;
    o.title = p.summary;
    sel.appendChild(o);
  });
  if (rows.some((p) => p.name === "debate4")) sel.value = "debate4";
  if (info.rules && info.rules.length) fillSelect($("rule"), info.rules, "asym");
  describeProtocol();
}
function describeProtocol() {
  const rows = (app.info && app.info.protocol_list) || [];
  const p = rows.find((r) => r.name === $("protocol").value);
  const box = $("protocol-summary");
  if (!p) { box.textContent = ""; return; }
  const turns = p.turns.split(" ").length;
  box.textContent = `${p.summary}: ${turns} turn${turns > 1 ? "s" : ""}, A reveals ${p.per_player.A} cell${p.per_player.A === 1 ? "" : "s"}, B ${p.per_player.B}.`;
  box.dataset.turns = p.turns;
}
$("protocol").addEventListener("change", describeProtocol);

// ---------- start-up ----------
// The static site offers what runs in the browser: the pixel game, its exported judges' K and
// the agents whose models it holds.
function staticPage(info) {
  [...$("agent").options].forEach((o) => { if (!info.agents.includes(o.value)) o.remove(); });
  [...$("game").options].forEach((o) => { if (o.value !== "pixels") o.remove(); });
  $("game").dispatchEvent(new Event("change"));
  $("rollouts").closest("label").hidden = true;
  const ks = info.models.pixel;
  if (ks.length) { $("k").min = String(Math.min(...ks)); $("k").max = String(Math.max(...ks)); }
}

(async function init() {
  try {
    app.info = await api("/api/info");
    if (app.info.static) staticPage(app.info);
    fillProtocols(app.info);
    fillSelect($("truth"), [...Array(10).keys()], 0);
    fillLiarChoices();
    const m = app.info.missing;
    if (app.info.static) {
      $("missing").innerHTML = `Static site: everything runs in this browser (onnxruntime-web). Pixel game for K = ${app.info.models.pixel.join(", ")}; agents: ${app.info.agents.join(", ")}. The cell-grid games, MCTS and the sparse judge's all-mask average need the server: <code>debatelab serve</code>.`;
      $("missing").hidden = false;
      $("missing").classList.add("info");
      if (app.info.models.pixel.length && !app.info.models.pixel.includes(6)) { $("k").value = String(app.info.models.pixel[0]); $("k-out").textContent = $("k").value; }
      document.body.dataset.ready = "1";
      return;
    }
    const core = ["gold", "sparse"].filter((k) => m[k]).map((k) => `${k} judge: <code>${m[k]}</code>`);
    const pix = app.info.models.pixel;
    const lines = core.slice();
    if (!pix.length) lines.push(`pixel judges: <code>debatelab train --kind pixel --pixels 6</code> (any K from ${app.info.pixel_range[0]} to ${app.info.pixel_range[1]})`);
    else lines.push(`pixel judges cached for K = ${pix.join(", ")}; others: <code>debatelab train --kind pixel --pixels K</code>`);
    if (core.length || !pix.length) {
      $("missing").innerHTML = "Missing models. " + lines.join(" · ");
      $("missing").hidden = false;
    } else {
      $("missing").innerHTML = lines[lines.length - 1];
      $("missing").hidden = false;
      $("missing").classList.add("info");
    }
    if (pix.length && !pix.includes(6)) { $("k").value = String(pix[0]); $("k-out").textContent = String(pix[0]); }
    document.body.dataset.ready = "1";
  } catch (err) { showError(err); }
})();

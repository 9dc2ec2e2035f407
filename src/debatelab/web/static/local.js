// debatelab static site: the demo's API answered in the browser. The judges and the learned
// debaters are ONNX files run by onnxruntime-web; the game logic mirrors web/positions.py.
// Loaded only by the static site (debatelab export-site); the server page calls the server.
"use strict";

const debatelabLocal = (() => {
  const SIDE = 28;
  const N = SIDE * SIDE;
  const BOX = 20;
  const INK = 1 / 255;
  let site = null;
  let samples = null;
  const sessions = new Map();

  async function getJson(path) {
    const res = await fetch(path);
    if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
    return res.json();
  }

  async function load() {
    if (site) return;
    site = await getJson("site.json");
    samples = await getJson("samples.json");
    ort.env.wasm.wasmPaths = new URL("ort/", document.baseURI).href;
    ort.env.wasm.numThreads = 1;  // threads need cross-origin isolation, which static hosts lack
  }

  function session(name) {
    if (!sessions.has(name)) {
      sessions.set(name, ort.InferenceSession.create(`models/${name}.onnx`, { executionProviders: ["wasm"] }));
    }
    return sessions.get(name);
  }

  // logits of a batch: x (Float32Array) of shape dims -> rows of the output
  async function logits(name, x, dims) {
    const s = await session(name);
    const out = await s.run({ x: new ort.Tensor("float32", x, dims) });
    const data = out.logits.data;
    const width = data.length / dims[0];
    const rows = [];
    for (let i = 0; i < dims[0]; i++) rows.push(Array.from(data.subarray(i * width, (i + 1) * width)));
    return rows;
  }

  function softmax(xs) {
    const m = Math.max(...xs);
    const e = xs.map((v) => Math.exp(v - m));
    const s = e.reduce((a, b) => a + b, 0);
    return e.map((v) => v / s);
  }

  function argmax(xs) { return xs.reduce((best, x, i) => (x > xs[best] ? i : best), 0); }

  // ---------- images: PyTorch's antialiased bilinear resize (align_corners=False) ----------
  // weights of one axis, as ATen computes them for interpolate(..., antialias=True)
  function axisWeights(inSize, outSize) {
    const scale = inSize / outSize;
    const support = scale >= 1 ? scale : 1;
    const inv = scale >= 1 ? 1 / scale : 1;
    const out = [];
    for (let i = 0; i < outSize; i++) {
      const center = scale * (i + 0.5);
      const lo = Math.max(Math.trunc(center - support + 0.5), 0);
      const hi = Math.min(Math.trunc(center + support + 0.5), inSize);
      const w = [];
      let total = 0;
      for (let j = lo; j < hi; j++) {
        const v = Math.max(0, 1 - Math.abs((j - center + 0.5) * inv));
        w.push(v);
        total += v;
      }
      out.push({ lo, w: total > 0 ? w.map((v) => v / total) : w });
    }
    return out;
  }

  // img: rows x cols (row-major array) -> outRows x outCols
  function resize(img, rows, cols, outRows, outCols) {
    const wx = axisWeights(cols, outCols);
    const wy = axisWeights(rows, outRows);
    const tmp = new Float64Array(rows * outCols);
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < outCols; c++) {
        let s = 0;
        wx[c].w.forEach((w, j) => { s += w * img[r * cols + wx[c].lo + j]; });
        tmp[r * outCols + c] = s;
      }
    }
    const out = new Array(outRows * outCols);
    for (let r = 0; r < outRows; r++) {
      for (let c = 0; c < outCols; c++) {
        let s = 0;
        wy[r].w.forEach((w, j) => { s += w * tmp[(wy[r].lo + j) * outCols + c]; });
        out[r * outCols + c] = s;
      }
    }
    return out;
  }

  // MNIST's preprocessing of a drawing (data/digits.py): ink fitted into a 20x20 box, its
  // centre of mass moved to the centre of the field
  function centerDigit(image) {
    let top = SIDE, bottom = -1, left = SIDE, right = -1;
    for (let i = 0; i < N; i++) {
      if (image[i] > INK) {
        const r = Math.floor(i / SIDE), c = i % SIDE;
        top = Math.min(top, r); bottom = Math.max(bottom, r);
        left = Math.min(left, c); right = Math.max(right, c);
      }
    }
    if (bottom < 0) throw new Error("the image is empty: draw a digit first");
    const h = bottom - top + 1, w = right - left + 1;
    const crop = [];
    for (let r = top; r <= bottom; r++) for (let c = left; c <= right; c++) crop.push(image[r * SIDE + c]);
    const scale = BOX / Math.max(h, w);
    const size = [Math.max(1, roundHalfEven(h * scale)), Math.max(1, roundHalfEven(w * scale))];
    const fitted = resize(crop, h, w, size[0], size[1]).map((v) => Math.min(1, Math.max(0, v)));
    let mass = 0, cy = 0, cx = 0;
    fitted.forEach((v, i) => { mass += v; cy += Math.floor(i / size[1]) * v; cx += (i % size[1]) * v; });
    const centre = (SIDE - 1) / 2;
    const y0 = Math.min(Math.max(roundHalfEven(centre - cy / mass), 0), SIDE - size[0]);
    const x0 = Math.min(Math.max(roundHalfEven(centre - cx / mass), 0), SIDE - size[1]);
    const out = new Array(N).fill(0);
    fitted.forEach((v, i) => { out[(y0 + Math.floor(i / size[1])) * SIDE + x0 + (i % size[1])] = v; });
    return out;
  }

  function roundHalfEven(x) {  // Python's round()
    const r = Math.round(x);
    return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
  }

  const round4 = (v) => Math.round(v * 1e4) / 1e4;

  // ---------- the API ----------
  function info() {
    const { mean, std, max_abs_diff, ...rest } = site;
    return rest;
  }

  function sample(index) {
    if (!(index >= 0 && index < samples.labels.length)) {
      throw new Error(`index must be below ${samples.labels.length} (the samples on this site)`);
    }
    return { index, label: samples.labels[index], image: samples.images[index].map((v) => round4(v / 255)) };
  }

  async function classify(body) {
    let image = checkCanvas(body.image);
    if (body.center !== false) image = centerDigit(image);
    const out = { image: image.map(round4), gold: null, sparse: null, missing: { sparse: site.missing.sparse } };
    if (site.models.gold) {
      const s = site.image_size;
      const x = resize(image, SIDE, SIDE, s, s).map((v) => (v - site.mean[0]) / site.std[0]);
      out.gold = softmax((await logits("gold", Float32Array.from(x), [1, 1, s, s]))[0]);
    }
    return out;
  }

  function checkCanvas(image) {
    if (!Array.isArray(image) || image.length !== N || image.some((v) => !(v >= 0 && v <= 1))) {
      throw new Error(`image: must be ${N} values in [0, 1] (a 28x28 canvas, row-major)`);
    }
    return image;
  }

  function planes(image, revealed) {  // the pixel judge's input: mask plane, value plane
    const x = new Float32Array(2 * N);
    revealed.forEach((p) => { x[p] = 1; x[N + p] = image[p]; });
    return x;
  }

  function mulberry32(seed) {
    let a = seed >>> 0;
    return () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  // The same moves as the server's agents, except where the server draws from its torch
  // generator: a random move, or a greedy tie (the server splits exact ties at random, this
  // takes the first). A seed therefore reproduces a game within the site, not across the two.
  async function agentMove(body, moves, mover) {
    const image = body.image;
    const taken = new Set(moves);
    const free = [];
    for (let p = 0; p < N; p++) if (image[p] > 0 && !taken.has(p)) free.push(p);
    if (body.agent === "random") {
      const rand = mulberry32(body.seed * 1000 + moves.length);
      return free[Math.floor(rand() * free.length)];
    }
    if (body.agent === "learned") {
      const x = new Float32Array(2 * N + 20);
      image.forEach((v, p) => { x[p] = v; });
      moves.forEach((p) => { x[N + p] = 1; });
      x[2 * N + body.honest] = 1;
      x[2 * N + 10 + body.liar] = 1;
      const out = (await logits(`debaters${body.pixels}-${mover}`, x, [1, x.length]))[0];
      return free.reduce((best, p) => (out[p] > out[best] ? p : best), free[0]);
    }
    if (body.agent === "greedy") {  // the judge one step ahead, every free pixel in one batch
      const x = new Float32Array(free.length * 2 * N);
      free.forEach((p, i) => x.set(planes(image, [...moves, p]), i * 2 * N));
      const rows = await logits(`pixel${body.pixels}`, x, [free.length, 2, SIDE, SIDE]);
      const sign = mover === "honest" ? 1 : -1;
      const value = rows.map((l) => sign * (l[body.honest] - l[body.liar]));
      return free[argmax(value)];
    }
    throw new Error(`agent: ${body.agent} runs on the server only (debatelab serve); here: ${site.agents.join(", ")}`);
  }

  async function pixels(body) {
    const image = checkCanvas(body.image);
    const k = body.pixels;
    if (body.honest === body.liar) throw new Error("liar: the liar's claim must differ from the honest one");
    const ink = image.filter((v) => v > 0).length;
    if (ink < k) throw new Error(`the image has only ${ink} nonzero pixels; a game reveals ${k}`);
    if (!site.models.pixel.includes(k)) {
      throw new Error(`this site has the pixel judge for K = ${site.models.pixel.join(", ")} only`);
    }
    if (body.agent === "learned" && !site.models.debaters.includes(k)) {
      throw new Error(`this site has learned debaters for K = ${site.models.debaters.join(", ") || "none"} only`);
    }
    const other = body.first === "honest" ? "liar" : "honest";
    const mover = (t) => (t % 2 === 0 ? body.first : other);
    const moves = [];
    for (const p of body.moves) {
      if (!(image[p] > 0) || moves.includes(p)) {
        throw new Error(`move ${moves.length + 1}: pixel ${p} is not a nonzero pixel of the image; reveal one where there is ink`);
      }
      if (moves.length >= k) throw new Error(`the game reveals ${k} pixels`);
      moves.push(p);
    }
    let aiMove = null;
    if (body.play && moves.length < k) {
      aiMove = await agentMove(body, moves, mover(moves.length));
      moves.push(aiMove);
    }
    const done = moves.length === k;
    const out = {
      moves, movers: moves.map((_, t) => mover(t)), next: done ? null : mover(moves.length), done,
      ai_move: aiMove, verdict: null,
    };
    if (done) {
      const l = (await logits(`pixel${k}`, planes(image, moves), [1, 2, SIDE, SIDE]))[0];
      const margin = l[body.honest] - l[body.liar];
      out.verdict = { logits: l, probs: softmax(l), honest_wins: margin > 0, margin, judge_class: argmax(l) };
    }
    return out;
  }

  async function api(path, body) {
    await load();
    const route = path.split("?")[0];
    if (route === "/api/info") return info();
    if (route === "/api/sample") return sample(Number(new URLSearchParams(path.split("?")[1]).get("index")));
    if (route === "/api/classify") return classify(body);
    if (route === "/api/pixels") return pixels(body);
    if (route === "/api/cells") throw new Error("the cell-grid games run on the server: `debatelab serve`");
    throw new Error(`unknown call ${path}`);
  }

  return { api, centerDigit, resize };
})();

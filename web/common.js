'use strict';
/* gpulab's dashboard, shared parts: building DOM, talking to the API, formatting,
 * and what each job type takes (mirrors api/params.c and the README). Everything
 * lives under window.GL; no inline script or style anywhere (the page's CSP). */
const GL = (window.GL = {});

/* ---- DOM ---- */

const SVG_NS = 'http://www.w3.org/2000/svg';

/* h('div', {class: 'x', onclick: f}, child, ...): an element; 'svg:rect' makes SVG.
 * Attributes null/false are skipped; text: sets textContent. */
GL.h = function h(tag, attrs, ...children) {
  const el = tag.startsWith('svg:') ? document.createElementNS(SVG_NS, tag.slice(4))
    : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k === 'text') el.textContent = v;
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
};

GL.clear = function (el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
};

/* ---- the API ---- */

/* The API token (gpulabd --tokens), kept in this browser; '' when none. */
GL.token = () => localStorage.getItem('gpulab.token') || '';

/* Asks for a token once the server says one is needed (401). */
GL.askToken = function (message) {
  const form = document.getElementById('token-form');
  if (!form) return;
  form.hidden = false;
  document.getElementById('token-why').textContent = message || 'this gpulabd needs a token';
};

/* One request; resolves to {status, ok, json} (json null when the body is not JSON). */
GL.api = async function (method, path, body) {
  const init = { method, headers: { Accept: 'application/json' } };
  if (GL.token()) init.headers.Authorization = `Bearer ${GL.token()}`;
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = body;
  }
  const res = await fetch(path, init);
  if (res.status === 401) GL.askToken(GL.token() ? 'the token was not accepted' : null);
  let json = null;
  try { json = await res.json(); } catch (e) { /* not JSON */ }
  return { status: res.status, ok: res.ok, json };
};

/* GET path expecting 200 JSON; throws Error(the API's message) otherwise. */
GL.getJSON = async function (path) {
  const r = await GL.api('GET', path);
  if (!r.ok) {
    const msg = r.json && r.json.error ? r.json.error.message : `HTTP ${r.status}`;
    throw Object.assign(new Error(msg), { status: r.status });
  }
  return r.json;
};

/* ---- what the job types take (api/params.c: ranges; kernels/experiment.c: defaults) ---- */

GL.TYPES = {
  transpose: {
    title: 'Transpose',
    about: 'B = Aᵀ for an m × n matrix A. Figure: GB/s = 8mn / t.',
    fields: [
      { name: 'm', label: 'm', hint: 'rows of A', def: 4096, min: 1, max: 1048576 },
      { name: 'n', label: 'n', hint: 'columns of A', def: 4096, min: 1, max: 1048576 },
    ],
    variants: ['naive', 'shared32', 'padded33', 'copy'],
    inputs: ['a'],
    timing: { warmup: 3, batches: 5, reps: 20, seed: 2026 },
  },
  gemm: {
    title: 'GEMM',
    about: 'C[m,n] = A[m,k] · B[k,n] in FP32. Figure: GFLOP/s = 2mnk / t.',
    fields: [
      { name: 'm', label: 'm', hint: 'rows of A and C', def: 1024, min: 1, max: 1048576 },
      { name: 'n', label: 'n', hint: 'columns of B and C', def: 1024, min: 1, max: 1048576 },
      { name: 'k', label: 'k', hint: 'inner dimension', def: 1024, min: 1, max: 1048576 },
    ],
    variants: ['naive', 'tiled', 'cublas'],
    inputs: ['a', 'b'],
    timing: { warmup: 3, batches: 5, reps: 20, seed: 2026 },
  },
  stencil: {
    title: 'Stencil',
    about: '1-D moving average over 2·radius+1 points, zero boundary. Figure: GB/s = 8n / t.',
    fields: [
      { name: 'n', label: 'n', hint: 'points', def: 4194304, min: 1, max: 1073741824 },
      { name: 'radius', label: 'radius', hint: 'halo width', def: 32, min: 0, max: 1024 },
    ],
    variants: ['naive', 'shared'],
    inputs: ['x'],
    timing: { warmup: 20, batches: 5, reps: 100, seed: 2026 },
  },
  pipeline: {
    title: 'Pipeline',
    about: 'Upload, synthesize kernel and download of every chunk over 1..n streams. ' +
      'Figure: GB/s moved = 8 · chunk · chunks / t.',
    fields: [
      { name: 'chunk', label: 'chunk', hint: 'floats per chunk', def: 1048576, min: 1, max: 268435456 },
      { name: 'chunks', label: 'chunks', hint: 'chunks per pass', def: 3, min: 1, max: 64 },
      { name: 'terms', label: 'terms', hint: 'sine terms per element', def: 64, min: 1, max: 4096 },
    ],
    streams: { def: '1, 3', hint: 'one run per stream count, 1..32 each' },
    variants: null,
    inputs: ['x'],
    timing: { warmup: 5, batches: 9, reps: 1, seed: 2026 },
  },
};

GL.TIMING_FIELDS = [
  { name: 'seed', label: 'seed', hint: 'inputs are generated from it', min: 0 },
  { name: 'warmup', label: 'warm-up', hint: 'untimed launches, 0..1000', min: 0, max: 1000 },
  { name: 'batches', label: 'batches', hint: 'timed samples, 1..100', min: 1, max: 100 },
  { name: 'reps', label: 'reps', hint: 'launches per batch, 1..10000', min: 1, max: 10000 },
];

/* A form for a type the lists above do not know, from what experiments.json says of it
 * (its descriptor's): its size params with their ranges, variants, inputs, unit and
 * what the figure counts. */
function typeFromInfo(type, info) {
  const counted = info.counted ? ` (${info.counted})` : '';
  return {
    title: type.charAt(0).toUpperCase() + type.slice(1),
    about: `Figure: ${info.unit || 'GB/s'}${counted}.`,
    fields: (info.params || []).map((p) => ({ name: p.name, label: p.name, hint: `${p.min}..${p.max}`,
      def: p.default, min: p.min, max: p.max })),
    variants: [],
    inputs: info.inputs || ['x'],
    timing: { warmup: 3, batches: 5, reps: 20, seed: 2026 },
  };
}

/* Takes each type's variants, inputs, size ranges and defaults from
 * /static/experiments.json (built by gpulabd from the descriptors the API validates
 * with), so a variant, param or whole experiment added to gpulabd shows up in the
 * forms by itself; params the forms do not know get a plain field. Keeps the lists
 * above when it cannot be read. */
GL.loadExperiments = async function () {
  let x;
  try { x = await GL.getJSON('/static/experiments.json'); } catch (e) { return; }
  for (const [type, info] of Object.entries(x.types || {})) {
    if (!GL.TYPES[type]) GL.TYPES[type] = typeFromInfo(type, info);
    const t = GL.TYPES[type];
    const d = info.defaults || {};
    for (const p of info.params || []) {
      const f = t.fields.find((g) => g.name === p.name);
      if (f && typeof p.min === 'number' && typeof p.max === 'number') Object.assign(f, { min: p.min, max: p.max });
    }
    if (t.variants && Array.isArray(info.variants) && info.variants.length) t.variants = info.variants;
    if (Array.isArray(info.inputs)) t.inputs = info.inputs;
    for (const f of t.fields) if (typeof d[f.name] === 'number') f.def = d[f.name];
    for (const k of ['warmup', 'batches', 'reps', 'seed']) if (typeof d[k] === 'number') t.timing[k] = d[k];
    if (t.streams && Array.isArray(d.streams)) t.streams.def = d.streams.join(', ');
    const known = new Set([...t.fields.map((f) => f.name), 'warmup', 'batches', 'reps', 'seed', 'variant',
      'streams', 'graph', ...t.inputs]);
    t.extra = Object.entries(d).filter(([k, v]) => !known.has(k) && ['number', 'boolean', 'string'].includes(typeof v))
      .map(([k, v]) => ({ name: k, label: k.replace(/_/g, ' '), def: v, hint: `default ${v}` }));
  }
};

/* "33 × 47" and friends: what the history groups by, beside the type. */
GL.sizeLabel = function (type, p) {
  if (!p) return '';
  switch (type) {
    case 'transpose': return `${p.m} × ${p.n}`;
    case 'gemm': return `${p.m} × ${p.n} × ${p.k}`;
    case 'stencil': return `n ${p.n}, r ${p.radius}`;
    case 'pipeline': return `${p.chunks} × ${p.chunk}, ${p.terms} terms`;
    default: { /* a type from experiments.json: its size params by name */
      const t = GL.TYPES[type];
      return t ? t.fields.map((f) => `${f.name} ${p[f.name]}`).join(', ') : '';
    }
  }
};

/* ---- formatting ---- */

GL.fmtNum = function (x, digits = 4) {
  if (x == null || !isFinite(x)) return '—';
  if (x === 0) return '0';
  const a = Math.abs(x);
  if (a >= 10 ** digits) return Math.round(x).toLocaleString('en-US');
  return Number(x.toPrecision(digits)).toLocaleString('en-US', { maximumFractionDigits: 6 });
};

GL.fmtMs = function (ms) {
  return ms == null || !isFinite(ms) ? '—' : GL.fmtNum(ms, 4);
};

/* A duration for people: 0.42 ms, 12.3 ms, 4.56 s, 2 min 5 s. */
GL.fmtDuration = function (ms) {
  if (ms == null || !isFinite(ms)) return '—';
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${GL.fmtNum(ms, 3)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(2)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
};

GL.fmtBytes = function (b) {
  if (b == null || !isFinite(b)) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (b >= 1024 && i < units.length - 1) { b /= 1024; i++; }
  return `${GL.fmtNum(b, 3)} ${units[i]}`;
};

GL.fmtTime = function (iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toLocaleString('en-GB', { hour12: false });
};

GL.FINAL = new Set(['done', 'failed', 'canceled']);

GL.stateBadge = function (state) {
  return GL.h('span', { class: `badge state-${state}`, text: state });
};

/* ---- ceilings (GET /device may carry measured ones; runs may carry their %) ---- */

/* The device's ceilings as [{name, value, unit}], from an object of numbers or of
 * {value, unit}; [] when the device reports none. */
GL.ceilings = function (device) {
  const c = device && (device.ceilings || device.measured_ceilings);
  if (!c || typeof c !== 'object') return [];
  const list = Array.isArray(c) ? c : Object.entries(c).map(([name, v]) =>
    typeof v === 'object' && v ? Object.assign({ name }, v) : { name, value: v });
  return list.filter((x) => x && typeof (x.value ?? x.figure) === 'number').map((x) => {
    const name = x.name || x.what || 'ceiling';
    const unit = x.unit || (/flop|gemm/i.test(name) ? 'GFLOP/s' : 'GB/s');
    return { name, value: x.value ?? x.figure, unit, about: x.description || x.method || '' };
  });
};

/* A run's figure as a percentage of its ceiling: the run's own field when it has one,
 * else the device ceiling of the same unit that fits the job type best; null if none. */
GL.ceilingPercent = function (type, run, device) {
  for (const k of ['percent_of_ceiling', 'ceiling_percent', 'ceiling_pct', 'pct_of_ceiling'])
    if (typeof run[k] === 'number') return run[k];
  if (run.ceiling && typeof run.ceiling === 'object' && typeof run.ceiling.percent === 'number')
    return run.ceiling.percent;
  if (run.figure == null) return null;
  const fits = GL.ceilings(device).filter((c) => c.unit === run.unit);
  if (!fits.length) return null;
  const prefer = { transpose: /copy|d2d|dram|device/i, stencil: /copy|d2d|dram|device/i,
    gemm: /sgemm|cublas|fp32/i, pipeline: /pinned|h2d|host|pcie/i }[type] || /copy|d2d|dram|device/i;
  const best = fits.find((c) => prefer && prefer.test(c.name)) || fits[0];
  return best.value > 0 ? (100 * run.figure) / best.value : null;
};

/* ---- charts ---- */

GL.PALETTE = ['#4c78a8', '#f58518', '#54a24b', '#72b7b2', '#b279a2', '#eeca3b', '#9d755d', '#79706e'];

GL.chartsOn = function () { return typeof window.Chart === 'function'; };

/* A Chart.js chart on canvas (destroying the one it had), or null without Chart.js. */
GL.chart = function (canvas, config) {
  if (!GL.chartsOn()) return null;
  const old = window.Chart.getChart ? window.Chart.getChart(canvas) : null;
  if (old) old.destroy();
  config.options = Object.assign({ responsive: true, maintainAspectRatio: false, animation: false },
    config.options || {});
  return new window.Chart(canvas, config);
};

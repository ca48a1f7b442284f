'use strict';
/* gpulab's dashboard, shared parts: building DOM, talking to the API, formatting,
 * and what each job type takes (read from gpulabd: /static/experiments.json).
 * Everything lives under window.GL; no inline script or style anywhere (the page's CSP). */
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

/* The API's stable prefix: every route is served under it (the unversioned paths
 * are aliases). The dashboard's own files stay at /static/. */
GL.API = '/v1';
GL.url = (path) => (path.startsWith('/static/') ? path : `${GL.API}${path}`);

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
  const res = await fetch(GL.url(path), init);
  if (res.status === 401) GL.askToken(GL.token() ? 'the token was not accepted' : null);
  let json = null;
  try { json = await res.json(); } catch (e) { /* not JSON */ }
  return { status: res.status, ok: res.ok, json };
};

/* The API's error in an answer of GL.api: an RFC 9457 problem (application/problem+json:
 * {type, title, status, detail, instance, code, field}), or null. */
GL.problem = function (r) {
  const p = r.ok ? null : r.json;
  return p && typeof p.code === 'string' && typeof p.detail === 'string' ? p : null;
};

/* GET path expecting 200 JSON; throws Error(the problem's detail) otherwise. */
GL.getJSON = async function (path) {
  const r = await GL.api('GET', path);
  if (!r.ok) {
    const p = GL.problem(r);
    const msg = p ? p.detail : `HTTP ${r.status}`;
    throw Object.assign(new Error(msg), { status: r.status });
  }
  return r.json;
};

/* GET path expecting 200 text (a kernel's diff: text/plain); throws Error(the
 * problem's detail) otherwise. */
GL.getText = async function (path) {
  const init = { headers: { Accept: 'text/plain, application/problem+json' } };
  if (GL.token()) init.headers.Authorization = `Bearer ${GL.token()}`;
  const res = await fetch(GL.url(path), init);
  const body = await res.text();
  if (res.status === 401) GL.askToken(GL.token() ? 'the token was not accepted' : null);
  if (res.ok) return body;
  let msg = `HTTP ${res.status}`;
  try { const p = JSON.parse(body); if (p && p.detail) msg = p.detail; } catch (e) { /* not JSON */ }
  throw Object.assign(new Error(msg), { status: res.status });
};

/* ---- what the job types take: each experiment's descriptor, from gpulabd ---- */

/* GL.TYPES[type], in the registry's order (GL.TYPE_ORDER), built by GL.loadExperiments
 * from /static/experiments.json (api/describe.c: each descriptor's params with their
 * ranges, defaults and docs, its variants or runs list, inputs and timing), so that a
 * new experiment, param or variant gets its form by itself. */
GL.TYPES = {};
GL.TYPE_ORDER = [];

/* Job-wide params, the same for every type (api/params.h's ranges); their defaults
 * are each type's. */
GL.TIMING_FIELDS = [
  { name: 'seed', label: 'seed', hint: 'inputs are generated from it', min: 0 },
  { name: 'warmup', label: 'warm-up', hint: 'untimed launches, 0..1000', min: 0, max: 1000 },
  { name: 'batches', label: 'batches', hint: 'timed samples, 1..100', min: 1, max: 100 },
  { name: 'reps', label: 'reps', hint: 'launches per batch, 1..10000', min: 1, max: 10000 },
];

/* One type's form, from its entry in experiments.json. */
GL.typeFromInfo = function (type, info) {
  const d = info.defaults || {};
  const runs = info.runs;
  const t = {
    title: info.title || type,
    about: info.doc || `Figure: ${info.unit || ''}${info.counted ? ` (${info.counted})` : ''}.`,
    counted: info.counted || '',
    unit: info.unit || '',
    ceiling: info.ceiling || null,
    fields: (info.params || []).map((p) => ({ name: p.name, label: p.name, dim: !!p.dim,
      hint: p.doc ? `${p.doc}, ${p.min}..${p.max}` : `${p.min}..${p.max}`,
      def: typeof d[p.name] === 'number' ? d[p.name] : p.default, min: p.min, max: p.max })),
    variants: runs ? null : (info.variants || []),
    variantDocs: info.variant_docs || {},
    baselines: info.baselines || [],
    runs: runs ? { name: runs.name, noun: runs.noun,
      def: (Array.isArray(d[runs.name]) ? d[runs.name] : runs.default || []).join(', '),
      hint: `one run per ${runs.noun}, ${runs.min}..${runs.max} each${runs.word ? `, or "${runs.word}"` : ''}` } : null,
    inputs: info.inputs || [],
    timing: {},
  };
  for (const f of GL.TIMING_FIELDS) if (typeof d[f.name] === 'number') t.timing[f.name] = d[f.name];
  /* Params the form has no field of its own for (order, cold, the noise rule): a field
   * each, typed by experiments.json's "common" (a select for a choice, a decimal input
   * for a number, a numeric keypad for an integer), sent when changed. */
  const known = new Set([...t.fields.map((f) => f.name), ...GL.TIMING_FIELDS.map((f) => f.name), 'variant',
    'graph', ...(runs ? [runs.name] : []), ...t.inputs]);
  t.extra = Object.entries(d).filter(([k, v]) => !known.has(k) && ['number', 'boolean', 'string'].includes(typeof v))
    .map(([k, v]) => {
      const c = GL.COMMON[k] || {};
      const range = c.min != null && c.max != null ? `, ${c.min}..${c.max}` : '';
      return { name: k, label: k.replace(/_/g, ' '), def: v, kind: c.kind, values: c.values, min: c.min, max: c.max,
        hint: `default ${v}${range}` };
    });
  return t;
};

/* The params every experiment takes, by name: {kind, min, max, values} (experiments.json's "common"). */
GL.COMMON = {};

/* A failed or canceled job's error for people: "code: message", or the one of them
 * when the other says nothing more: not "canceled: canceled", nor "canceled: canceled
 * before it ran" (the message alone, which starts with the code). */
GL.errorText = function (job) {
  const e = job.error;
  if (!e) return job.state;
  if (!e.message || e.message === e.code) return e.code || job.state;
  if (e.code && e.message.toLowerCase().startsWith(`${e.code.toLowerCase()} `)) return e.message;
  return `${e.code}: ${e.message}`;
};

/* Reads /static/experiments.json into GL.TYPES; without it there are no forms. */
GL.loadExperiments = async function () {
  let x;
  try { x = await GL.getJSON('/static/experiments.json'); } catch (e) { return; }
  const types = x.types || {};
  for (const c of Array.isArray(x.common) ? x.common : []) GL.COMMON[c.name] = c;
  GL.TYPE_ORDER = (Array.isArray(x.order) ? x.order : Object.keys(types)).filter((t) => types[t]);
  for (const type of GL.TYPE_ORDER) GL.TYPES[type] = GL.typeFromInfo(type, types[type]);
};

/* What a job's runs are named by in its table: "Variant", or the runs list's noun. */
GL.runsNoun = function (type) {
  const t = GL.TYPES[type];
  return t && t.runs ? t.runs.noun : 'variant';
};

/* How many runs a job has: its variants, or its runs list's entries. */
GL.runCount = function (type, p) {
  const t = GL.TYPES[type];
  const list = p && p[t && t.runs ? t.runs.name : 'variant'];
  return Array.isArray(list) ? list.length : 0;
};

/* A job's type for people: the experiment's name, or for a problem's job (type
 * "problem") "problem softmax_rows v3", from its params.problem. */
GL.jobTypeLabel = function (job) {
  const pr = job.params && job.params.problem;
  return job.type === 'problem' && pr && pr.name ? `problem ${pr.name} v${pr.version}` : job.type;
};

/* A problem's job's own params, by name and in its definition's order: the integers
 * of its params that no job of any type takes (experiments.json's "common"). */
GL.problemParams = function (p) {
  const common = new Set([...GL.TIMING_FIELDS.map((f) => f.name), ...Object.keys(GL.COMMON), 'variant', 'problem']);
  return Object.entries(p || {}).filter(([k, v]) => !common.has(k) && Number.isInteger(v));
};

/* "33 × 47" when every size param is a dimension, else "n 5000, radius 3": what the
 * history groups by, beside the type. A problem's job: "rows 64, cols 100". */
GL.sizeLabel = function (type, p) {
  if (type === 'problem') return GL.problemParams(p).map(([k, v]) => `${k} ${v}`).join(', ');
  const t = GL.TYPES[type];
  if (!p || !t || !t.fields.length) return '';
  if (t.fields.every((f) => f.dim)) return t.fields.map((f) => p[f.name]).join(' × ');
  return t.fields.map((f) => `${f.name} ${p[f.name]}`).join(', ');
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
    const unit = x.unit || (/flop/i.test(name) ? 'GFLOP/s' : 'GB/s');
    return { name, value: x.value ?? x.figure, unit, about: x.description || x.method || '' };
  });
};

/* A run's figure as a percentage of its ceiling: the run's own field when it has one,
 * else the device ceiling the run names (or its type's descriptor does), else the
 * first of the same unit; null if none. */
GL.ceilingPercent = function (type, run, device) {
  for (const k of ['percent_of_ceiling', 'ceiling_percent', 'ceiling_pct', 'pct_of_ceiling'])
    if (typeof run[k] === 'number') return run[k];
  if (run.ceiling && typeof run.ceiling === 'object' && typeof run.ceiling.percent === 'number')
    return run.ceiling.percent;
  if (run.figure == null) return null;
  const fits = GL.ceilings(device).filter((c) => c.unit === run.unit);
  if (!fits.length) return null;
  const t = GL.TYPES[type];
  const name = typeof run.ceiling === 'string' ? run.ceiling : t && t.ceiling;
  const best = fits.find((c) => c.name === name) || fits[0];
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

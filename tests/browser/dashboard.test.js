#!/usr/bin/env node
'use strict';
/* gpulab's dashboard, tested as a person would use it: starts gpulabd (CPU backend)
 * on a free port, opens the page in Debian's headless Chromium (driven by
 * playwright-core), submits jobs from the forms, watches them in the live queue,
 * opens them and checks the tables, charts and the pipeline's stream timeline, the
 * validation messages and the history; then the page without Chart.js. Screenshots
 * go to $GPULAB_ARTIFACTS (ctest: <build>/test-artifacts).
 *   GPULABD=build/gpulabd node tests/browser/dashboard.test.js
 * GPULAB_BROWSER_ONLY=REGEX runs only the steps whose names match (a quicker loop
 * while editing the page; ctest runs them all).
 * Exits 0, or 1 on a failure (a missing Chromium, playwright-core, Chart.js or
 * CodeMirror too). */
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const CHARTJS = '/usr/share/javascript/chart.js/chart.min.js';
const CODEMIRROR = '/usr/share/javascript/codemirror/codemirror.js';
const GPULABD = process.env.GPULABD;
const ARTIFACTS = process.env.GPULAB_ARTIFACTS || path.resolve('test-artifacts');
const TIMEOUT = 90000; /* a job on a busy 2-core CI machine */
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
  '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

let passed = 0;
let failed = 0;

function log(msg) { process.stdout.write(`${msg}\n`); }

if (!fs.existsSync(CHROMIUM)) {
  log(`FAIL: no Chromium at ${CHROMIUM} (apt-get install chromium; scripts/gpulab test installs it)`);
  process.exit(1);
}
if (!GPULABD) {
  log('FAIL: GPULABD is not set (the path of the built gpulabd; ctest sets it)');
  process.exit(1);
}
let chromium;
try {
  ({ chromium } = require('playwright-core'));
} catch (e) {
  log('FAIL: playwright-core is not installed: run `npm ci` in tests/browser (scripts/gpulab test does)');
  process.exit(1);
}

/* ---- gpulabd ---- */

function startGpulabd(extra) {
  return new Promise((resolve, reject) => {
    const args = ['--backend', 'cpu', '--host', '127.0.0.1', '--port', '0', '--streams', '2', '--db', ':memory:', ...extra];
    const proc = spawn(GPULABD, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let text = '';
    const timer = setTimeout(() => { proc.kill('SIGKILL'); reject(new Error(`gpulabd did not start in 30 s:\n${text}`)); }, 30000);
    proc.stderr.on('data', (d) => {
      text += d;
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(text);
      if (m && !proc.port) {
        clearTimeout(timer);
        proc.port = Number(m[1]);
        proc.base = `http://127.0.0.1:${proc.port}`;
        resolve(proc);
      }
    });
    proc.on('exit', (code) => {
      proc.exited = true;
      if (!proc.port) { clearTimeout(timer); reject(new Error(`gpulabd exited with ${code}:\n${text}`)); }
    });
    proc.log = () => text;
  });
}

function stopGpulabd(proc) {
  if (!proc || proc.exited) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10000);
    proc.on('exit', () => { clearTimeout(timer); resolve(); });
    proc.kill('SIGTERM');
  });
}

/* POST /jobs?wait=0 from outside the page (another client of the same gpulabd). */
async function postJob(proc, body) {
  const res = await fetch(`${proc.base}/jobs?wait=0`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body) });
  const job = await res.json();
  if (res.status !== 202 && res.status !== 200) throw new Error(`POST /jobs: ${res.status} ${JSON.stringify(job)}`);
  return job.id;
}

async function waitDone(proc, id) {
  const end = Date.now() + TIMEOUT;
  for (;;) {
    const job = await (await fetch(`${proc.base}/jobs/${id}`)).json();
    if (job.state === 'done') return job;
    if (job.state === 'failed' || job.state === 'canceled') throw new Error(`job ${id} ${job.state}: ${JSON.stringify(job.error)}`);
    if (Date.now() > end) throw new Error(`job ${id} still ${job.state}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/* The job once it has ended, however it ended. */
async function waitEnded(proc, id) {
  for (const end = Date.now() + TIMEOUT; ;) {
    const job = await (await fetch(`${proc.base}/jobs/${id}`)).json();
    if (['done', 'failed', 'canceled'].includes(job.state)) return job;
    if (Date.now() > end) throw new Error(`job ${id} still ${job.state}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/* ---- checks ---- */

function check(cond, msg) { if (!cond) throw new Error(msg); }
function checkEq(got, want, what) {
  if (JSON.stringify(got) !== JSON.stringify(want))
    throw new Error(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
}

const ONLY = process.env.GPULAB_BROWSER_ONLY ? new RegExp(process.env.GPULAB_BROWSER_ONLY) : null;

async function step(name, page, fn) {
  if (ONLY && !ONLY.test(name)) return;
  const t0 = Date.now();
  try {
    await fn();
    passed++;
    log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failed++;
    log(`FAIL ${name}: ${e.stack || e}`);
    if (page) await page.screenshot({ path: path.join(ARTIFACTS, `failure-${passed + failed}.png`), fullPage: true }).catch(() => {});
    throw e;
  }
}

async function shot(page, name) {
  const file = path.join(ARTIFACTS, name);
  await page.screenshot({ path: file, fullPage: true });
  log(`     screenshot: ${file}`);
}

/* Console errors and CSP violations fail the test (those matching allow excepted). */
function watchErrors(page, allow) {
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error' && !(allow && allow.test(m.text()))) errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  return errors;
}

const text = (page, sel) => page.locator(sel).first().innerText();

async function openDashboard(page, proc) {
  await page.goto(`${proc.base}/`);
  await page.waitForSelector('#device [data-key="backend"]', { timeout: TIMEOUT });
  await page.waitForSelector('#conn[data-state="live"]', { timeout: TIMEOUT });
}

/* Fills the visible form of type with values ({name: value}) and submits it. */
async function submitForm(page, type, values) {
  await page.click(`#type-tabs button[data-type="${type}"]`);
  for (const [name, value] of Object.entries(values)) await page.fill(`#form-${type} [name="${name}"]`, String(value));
  await page.click(`#form-${type} button[type="submit"]`);
}

async function submittedId(page, type) {
  const link = page.locator(`#form-${type} .form-status a[data-job-id]`);
  await link.waitFor({ timeout: TIMEOUT });
  return Number(await link.getAttribute('data-job-id'));
}

/* On a timeout it says where the row stood and what gpulabd says of the job. */
async function waitQueueState(page, id, state) {
  try {
    await page.waitForSelector(`#queue tr[data-job-id="${id}"][data-state="${state}"]`, { timeout: TIMEOUT });
  } catch (e) {
    const row = await page.evaluate((i) => {
      const tr = document.querySelector(`#queue tr[data-job-id="${i}"]`);
      return tr ? `${tr.parentElement.id} ${tr.dataset.state}` : 'no row';
    }, id).catch((err) => `${err}`);
    const job = await page.evaluate((i) => fetch(`/v1/jobs/${i}`).then((r) => r.text()), id).catch((err) => `${err}`);
    throw new Error(`job ${id}'s row: ${row}; gpulabd: ${job.slice(0, 400)}\n${e.message}`);
  }
}

/* The kernel editor's text (CodeMirror's, or the textarea's without it). */
const kernelSource = (page) => page.evaluate(() => GL.kernelsView.editor().get());

/* Replaces the kernel editor's text as a person would: select all, type. */
async function setKernelSource(page, src) {
  if (await page.getAttribute('#kernel-form', 'data-editor') === 'codemirror') {
    await page.click('#kernel-editor .CodeMirror-lines');
    await page.keyboard.press('Control+A');
    await page.keyboard.insertText(src);
  } else {
    await page.fill('#kernel-source', src);
  }
  checkEq(await kernelSource(page), src, 'the source as typed');
}

async function openJob(page, id) {
  await page.click(`#queue tr[data-job-id="${id}"] a[href="#/jobs/${id}"]`);
  await page.waitForSelector('#view-job table.runs tbody tr', { timeout: TIMEOUT });
}

async function runsTable(page) {
  return page.$$eval('#view-job table.runs tbody tr', (rows) => rows.map((r) => ({
    variant: r.querySelector('th').innerText.trim(),
    cells: [...r.querySelectorAll('td')].map((td) => td.innerText.trim()),
  })));
}

/* The bar chart's canvas and what Chart.js drew on it (null without Chart.js). */
async function barChart(page) {
  return page.$eval('#view-job canvas#bar-chart', (c) => {
    const chart = window.Chart && window.Chart.getChart ? window.Chart.getChart(c) : null;
    return { width: c.width, height: c.height, labels: chart ? chart.data.labels : null,
      values: chart ? chart.data.datasets[0].data : null };
  });
}

/* ---- a recorded profile ---- */

/* NVIDIA's names of the metrics the API reports (kernels/core/profile.c), by gpulab's. */
const NV = {
  duration_ns: 'gpu__time_duration.sum', dram_bytes_read: 'dram__bytes_read.sum', dram_bytes_written: 'dram__bytes_write.sum',
  dram_peak_pct: 'dram__throughput.avg.pct_of_peak_sustained_elapsed', l2_hit_pct: 'lts__t_sector_hit_rate.pct',
  global_load_sectors: 'l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum', global_load_requests: 'l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum',
  global_store_sectors: 'l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum', global_store_requests: 'l1tex__t_requests_pipe_lsu_mem_global_op_st.sum',
  shared_load_bank_conflicts: 'l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum',
  shared_store_bank_conflicts: 'l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum',
  achieved_occupancy_pct: 'sm__warps_active.avg.pct_of_peak_sustained_active', theoretical_occupancy_pct: 'sm__maximum_warps_per_active_cycle_pct',
  sm_throughput_pct: 'sm__throughput.avg.pct_of_peak_sustained_elapsed', fp32_flops: 'smsp__sass_thread_inst_executed_op_fadd_pred_on.sum + ' +
    'smsp__sass_thread_inst_executed_op_fmul_pred_on.sum + 2 * smsp__sass_thread_inst_executed_op_ffma_pred_on.sum',
  tensor_pipe_pct: 'sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active',
};
const UNITS = { duration_ns: 'ns', dram_bytes_read: 'bytes', dram_bytes_written: 'bytes', global_load_sectors: 'sectors',
  global_store_sectors: 'sectors', global_load_requests: 'requests', global_store_requests: 'requests',
  shared_load_bank_conflicts: 'conflicts', shared_store_bank_conflicts: 'conflicts', fp32_flops: 'flops' };
const COPY_GBPS = 4100, SGEMM_GFLOPS = 51000; /* the device's ceilings the recorded rooflines were placed against */

/* A profiled kernel as api/encode.c writes it: every metric {value, metric, unit}, the
 * sectors per request as NVIDIA's ratio. */
function profileKernel(name, v, limiter) {
  const metrics = {};
  for (const [k, metric] of Object.entries(NV)) metrics[k] = { value: v[k] ?? null, metric, unit: UNITS[k] || '%' };
  const ratio = (a, b) => ({ value: v[b] > 0 ? v[a] / v[b] : null, metric: `${NV[a]} / ${NV[b]}`, unit: 'sectors/request' });
  metrics.global_load_sectors_per_request = ratio('global_load_sectors', 'global_load_requests');
  metrics.global_store_sectors_per_request = ratio('global_store_sectors', 'global_store_requests');
  return { name, grid: [128, 512, 1], block: [32, 8, 1], occupancy_limiter: limiter, metrics };
}

/* A run's profile with its totals and roofline, as api/encode.c's roofline_write. */
function runProfile(kernels) {
  const sum = (k) => kernels.reduce((a, x) => a + x.metrics[k].value, 0);
  const bytes = sum('dram_bytes_read') + sum('dram_bytes_written'), flops = sum('fp32_flops'), ns = sum('duration_ns');
  const intensity = flops / bytes, ridge = SGEMM_GFLOPS / COPY_GBPS, memory = intensity < ridge;
  const roof = Math.min(SGEMM_GFLOPS, intensity * COPY_GBPS);
  return { available: true, clocks: 'locked_to_base', caches: 'flushed_before_each_pass', kernels, kernels_launched: kernels.length,
    totals: { dram_bytes: bytes, fp32_flops: flops, duration_ns: ns, flops_per_byte: intensity },
    roofline: { flops_per_byte: intensity, attained_gflops: flops / ns, attained_gbps: bytes / ns, ridge_flops_per_byte: ridge,
      bound: memory ? 'memory' : 'compute', roof_gflops: roof,
      percent_of_roof: memory ? (100 * (bytes / ns)) / COPY_GBPS : (100 * (flops / ns)) / roof,
      ceilings: 'copy_gbps and sgemm_gflops of GET /device' } };
}

/* The lecture's 4096^2 transpose profiled: naive's counters are the ones Nsight Compute
 * read on the H200 (issue 32: 2,097,152 load sectors for 524,288 requests, 16,777,216
 * store sectors for 524,288, 119.6 MB of DRAM traffic, 55.7 % warps active); the other
 * variants' are in the lecture's proportions (shared32's 32-way store conflicts,
 * padded33's none). best's second kernel is made up, to show a run of two kernels. */
const REQ = 524288;
function recordedProfiles() {
  const base = { global_load_requests: REQ, global_store_requests: REQ, theoretical_occupancy_pct: 100, fp32_flops: 0 };
  const k = (name, v, limiter) => profileKernel(name, Object.assign({}, base, v), limiter);
  const naive = k('transpose_naive_kernel', { duration_ns: 98000, dram_bytes_read: 67.1e6, dram_bytes_written: 52.5e6,
    dram_peak_pct: 29.8, l2_hit_pct: 48.2, global_load_sectors: 2097152, global_store_sectors: 16777216,
    shared_load_bank_conflicts: 0, shared_store_bank_conflicts: 0, achieved_occupancy_pct: 55.7, sm_throughput_pct: 21.4 }, 'warps');
  const tiled = (name, conflicts, ns, ach) => k(name, { duration_ns: ns, dram_bytes_read: 67.1e6, dram_bytes_written: 66.9e6,
    dram_peak_pct: (100 * 134e6) / ns / 4800, l2_hit_pct: 50.1, global_load_sectors: 2097152, global_store_sectors: 2097152,
    shared_load_bank_conflicts: conflicts, shared_store_bank_conflicts: 0, achieved_occupancy_pct: ach, sm_throughput_pct: 38.5 }, 'shared_memory');
  const copy = k('copy_kernel', { duration_ns: 36000, dram_bytes_read: 67.1e6, dram_bytes_written: 67.0e6, dram_peak_pct: 77.6,
    l2_hit_pct: null, global_load_sectors: 2097152, global_store_sectors: 2097152, shared_load_bank_conflicts: 0,
    shared_store_bank_conflicts: 0, achieved_occupancy_pct: 88.1, sm_throughput_pct: 17.2 }, 'warps');
  const best = [tiled('transpose_tiled_kernel<33>', 0, 41000, 84.3), k('best_pick_kernel', { duration_ns: 2000,
    dram_bytes_read: 4096, dram_bytes_written: 64, l2_hit_pct: 0, global_load_sectors: 128, global_load_requests: 32,
    global_store_sectors: 2, global_store_requests: 2, shared_load_bank_conflicts: 0, shared_store_bank_conflicts: 0,
    achieved_occupancy_pct: 3.1, sm_throughput_pct: 0.4 }, 'blocks')];
  return { naive: runProfile([naive]), shared32: runProfile([tiled('transpose_tiled_kernel<32>', 16252928, 52000, 83.5)]),
    padded33: runProfile([tiled('transpose_tiled_kernel<33>', 0, 41000, 84.3)]), copy: runProfile([copy]), best: runProfile(best) };
}

/* ---- the dashboard, with Chart.js ---- */

async function withCharts(context, proc) {
  const page = await context.newPage();
  const errors = watchErrors(page, /status of (400|422|503)/); /* the refusals this test provokes (503: the SASS here) */
  const paths = [];
  page.on('request', (req) => paths.push(new URL(req.url()).pathname));
  const charts = fs.existsSync(CHARTJS);
  check(charts, `${CHARTJS} is there (apt-get install libjs-chart.js; scripts/gpulab test installs it)`);
  check(fs.existsSync(CODEMIRROR), `${CODEMIRROR} is there (apt-get install libjs-codemirror; scripts/gpulab test installs it)`);
  let transposeId, pipelineId;
  /* The variants gpulabd runs (the page takes them from the same file). */
  const experiments = await (await fetch(`${proc.base}/static/experiments.json`)).json();
  const variants = experiments.types.transpose.variants;
  check(variants.slice(0, 4).join() === 'naive,shared32,padded33,copy', `transpose variants ${variants}`);

  await step('the page loads: device panel, live connection, no CSP or script errors', page, async () => {
    await openDashboard(page, proc);
    checkEq(await text(page, '#device [data-key="backend"]'), 'cpu', 'device backend');
    check((await text(page, '#device [data-key="name"]')).length > 0, 'device name is empty');
    check((await text(page, '#device [data-key="cpu cores"]')).length > 0, 'no CPU cores shown');
    checkEq(await page.isVisible('#charts-off'), !charts, 'the charts-off notice');
    checkEq(await page.evaluate(() => typeof window.Chart), charts ? 'function' : 'undefined', 'Chart.js loaded');
    checkEq(await page.$$eval('#type-tabs button', (b) => b.map((x) => x.dataset.type)), experiments.order,
      'a tab per experiment, in the registry\'s order');
    /* Defaults filled in. */
    checkEq(await page.inputValue('#form-transpose [name="m"]'), '4096', 'transpose m default');
    checkEq(await page.inputValue('#form-transpose [name="reps"]'), '20', 'transpose reps default');
    checkEq(await page.$$eval('#form-transpose input[name="variant"]', (b) => b.map((x) => x.value)), variants,
      'variant boxes');
    await page.evaluate(() => { window.__sameDocument = true; });
  });

  await step('every registered experiment\'s form, from its descriptor: fields, ranges, defaults, variants, inputs; a job from each', page, async () => {
    for (const type of experiments.order) {
      const info = experiments.types[type];
      const form = `#form-${type}`;
      await page.click(`#type-tabs button[data-type="${type}"]`);
      check(await page.isVisible(form), `${type}: no form`);
      checkEq(await page.innerText(`#type-tabs button[data-type="${type}"]`), info.title, `${type}: tab title`);
      for (const p of info.params) {
        checkEq(await page.inputValue(`${form} [name="${p.name}"]`), String(info.defaults[p.name]), `${type}.${p.name} default`);
        const hint = await text(page, `${form} .field[data-field="${p.name}"] .hint`);
        check(hint.includes(`${p.min}..${p.max}`), `${type}.${p.name}: hint '${hint}' lacks its range`);
      }
      for (const k of ['seed', 'warmup', 'batches', 'reps'])
        checkEq(await page.inputValue(`${form} [name="${k}"]`), String(info.defaults[k]), `${type}.${k} default`);
      checkEq(await page.$$eval(`${form} input[name="variant"]`, (b) => b.map((x) => x.value)),
        info.runs ? [] : info.variants, `${type}: variant boxes`);
      if (info.runs)
        checkEq(await page.inputValue(`${form} [name="${info.runs.name}"]`), info.defaults[info.runs.name].join(', '),
          `${type}.${info.runs.name} default`);
      for (const slot of info.inputs)
        check(await page.locator(`${form} select[name="${slot}-kind"]`).count() === 1, `${type}: no input ${slot}`);
      /* The smallest job the ranges allow, from the form. */
      const values = { warmup: 1, batches: 1, reps: 1 };
      for (const p of info.params) values[p.name] = Math.max(p.min, 1);
      await submitForm(page, type, values);
      const id = await submittedId(page, type);
      await waitQueueState(page, id, 'done');
      const job = await waitDone(proc, id);
      check(job.result.passed, `${type}: job ${id} did not pass`);
      checkEq(job.result.runs.length, info.runs ? info.defaults[info.runs.name].length : info.variants.length,
        `${type}: runs`);
      await page.click(`${form} button:has-text("Defaults")`); /* the form as it was */
      checkEq(await page.inputValue(`${form} [name="warmup"]`), String(info.defaults.warmup), `${type}: reset`);
    }
    await page.click('#type-tabs button[data-type="transpose"]');
  });

  await step('form inputs by type: a select for a choice (order), a decimal keypad for numbers (max_noise, max_time), a numeric one only for integers', page, async () => {
    const common = Object.fromEntries(experiments.common.map((c) => [c.name, c]));
    checkEq(common.order.kind, 'choice', 'order is a choice in experiments.json');
    for (const type of experiments.order) {
      const info = experiments.types[type];
      const form = `#form-${type}`;
      await page.click(`#type-tabs button[data-type="${type}"]`);
      const kinds = await page.$$eval(`${form} input[type="text"], ${form} select`, (els) =>
        Object.fromEntries(els.map((e) => [e.name, e.tagName === 'SELECT' ? `select:${[...e.options].map((o) => o.value).join('|')}`
          : `input:${e.getAttribute('inputmode') || 'text'}`])));
      checkEq(kinds.order, `select:${common.order.values.join('|')}`, `${type}.order`);
      checkEq(await page.inputValue(`${form} [name="order"]`), info.defaults.order, `${type}.order default`);
      for (const name of ['max_noise', 'max_time']) checkEq(kinds[name], 'input:decimal', `${type}.${name}`);
      for (const name of [...info.params.map((p) => p.name), 'seed', 'warmup', 'batches', 'reps', 'min_samples', 'priority'])
        checkEq(kinds[name], 'input:numeric', `${type}.${name}`);
      checkEq(kinds.depends_on, 'input:text', `${type}.depends_on (a list: commas)`);
      if (info.runs) checkEq(kinds[info.runs.name], 'input:text', `${type}.${info.runs.name} (a list: commas)`);
    }
    /* What the typed inputs send. */
    await page.click('#type-tabs button[data-type="transpose"]');
    await page.locator('#form-transpose details.options').evaluate((d) => { d.open = true; });
    await page.selectOption('#form-transpose select[name="order"]', 'sequential');
    await page.fill('#form-transpose [name="max_noise"]', '0.25');
    await submitForm(page, 'transpose', { m: 64, n: 48, warmup: 0, batches: 2, reps: 1 });
    const job = await waitDone(proc, await submittedId(page, 'transpose'));
    checkEq([job.params.order, job.params.max_noise], ['sequential', 0.25], 'order and max_noise as sent');
    await page.locator('#form-transpose').screenshot({ path: path.join(ARTIFACTS, 'form-typed.png') });
    log(`     screenshot: ${path.join(ARTIFACTS, 'form-typed.png')}`);
    await page.click('#form-transpose button:has-text("Defaults")');
  });

  await step('a wrong field shows the API\'s message next to it', page, async () => {
    await submitForm(page, 'transpose', { m: 0 });
    const err = page.locator('#form-transpose .field[data-field="m"] .field-error');
    await err.waitFor({ state: 'visible', timeout: TIMEOUT });
    const msg = await err.innerText();
    check(/between 1 and 1048576/.test(msg) && /got 0/.test(msg), `m's message: ${msg}`);
    checkEq(await page.getAttribute('#f-transpose-m', 'aria-invalid'), 'true', 'm aria-invalid');
    checkEq(await page.locator('#form-transpose .field[data-field="n"] .field-error').innerText(), '', 'n error');
    await page.locator('#submit-panel').screenshot({ path: path.join(ARTIFACTS, 'validation.png') });
    log(`     screenshot: ${path.join(ARTIFACTS, 'validation.png')}`);
    await page.fill('#form-transpose [name="m"]', '33');
    checkEq(await page.locator('#form-transpose .field[data-field="m"] .field-error').innerText(), '', 'm error after editing');
    /* Another wrong one: no variant ticked. */
    const boxes = page.locator('#form-transpose input[name="variant"]');
    for (let i = 0; i < variants.length; i++) await boxes.nth(i).uncheck();
    await page.click('#form-transpose button[type="submit"]');
    const verr = page.locator('#form-transpose .field[data-field="variant"] .field-error');
    await verr.waitFor({ state: 'visible', timeout: TIMEOUT });
    check((await verr.innerText()).includes('variant'), `variant's message: ${await verr.innerText()}`);
    for (let i = 0; i < variants.length; i++) await boxes.nth(i).check();
  });

  await step('a transpose from the form appears in the live queue and finishes there', page, async () => {
    await submitForm(page, 'transpose', { m: 33, n: 47, warmup: 1, batches: 2, reps: 1 });
    transposeId = await submittedId(page, 'transpose');
    await page.waitForSelector(`#queue tr[data-job-id="${transposeId}"]`, { timeout: TIMEOUT });
    await waitQueueState(page, transposeId, 'done');
    const row = `#queue tr[data-job-id="${transposeId}"]`;
    checkEq(await text(page, `${row} td.type`), 'transpose', 'queue type');
    checkEq(await text(page, `${row} td.size`), '33 × 47', 'queue size');
    checkEq(await text(page, `${row} td.client`), '127.0.0.1', 'queue client');
    checkEq(await text(page, `${row} td.state`), 'done', 'queue state');
    await page.waitForFunction((sel) => /\d/.test(document.querySelector(sel).innerText), `${row} td.run-ms`, { timeout: TIMEOUT });
    check(/\d/.test(await text(page, `${row} td.queue-ms`)), 'no queue time');
    /* The finished row's headline: its best run's figure (checked). */
    await page.waitForFunction((sel) => /^✓ \S+ [\d.,]+ GB\/s/.test(document.querySelector(sel).innerText), `${row} td.result`, { timeout: TIMEOUT })
      .catch(async () => check(false, `no headline in the queue: ${await text(page, `${row} td.result`)}`));
    check(await page.evaluate(() => window.__sameDocument === true), 'the page reloaded');
  });

  await step('a job from another client appears live', page, async () => {
    const id = await postJob(proc, { type: 'stencil', params: { n: 5000, radius: 3, warmup: 1, batches: 2, reps: 1 } });
    await waitQueueState(page, id, 'done');
    checkEq(await text(page, `#queue tr[data-job-id="${id}"] td.type`), 'stencil', 'stencil row');
    check(await page.evaluate(() => window.__sameDocument === true), 'the page reloaded');
  });

  await step('the transpose\'s page: the lecture\'s table and the bar chart', page, async () => {
    await openJob(page, transposeId);
    const rows = await runsTable(page);
    checkEq(rows.map((r) => r.variant), variants, 'variants');
    for (const r of rows.filter((x) => x.cells.length > 1)) { /* not those unavailable here */
      check(/^\d/.test(r.cells[0]), `${r.variant}: median ${r.cells[0]}`);
      check(/^\d/.test(r.cells[1]), `${r.variant}: figure ${r.cells[1]}`);
      checkEq(r.cells[2], '—', `${r.variant}: % of ceiling on the CPU`);
      check(/×$/.test(r.cells[3]), `${r.variant}: speedup ${r.cells[3]}`);
      check(r.cells[4].startsWith('✓'), `${r.variant}: check ${r.cells[4]}`);
    }
    checkEq(rows[0].cells[3], '1×', 'first speedup');
    const head = await page.$$eval('#view-job table.runs thead th', (t) => t.map((x) => x.innerText.trim().toLowerCase()));
    checkEq(head.slice(0, 6), ['variant', 'median ms [quartiles]', 'gb/s', '% of ceiling', 'speedup vs naive', 'check'], 'table head');
    if (charts) {
      await page.waitForFunction(() => window.Chart.getChart(document.querySelector('#bar-chart')), null, { timeout: TIMEOUT });
      const chart = await barChart(page);
      check(chart.width > 100 && chart.height > 100, `canvas ${chart.width}x${chart.height}`);
      checkEq(chart.labels, rows.filter((x) => x.cells.length > 1).map((x) => x.variant), 'chart labels');
      check(chart.values.every((v) => v > 0), `chart values ${chart.values}`);
    }
    await shot(page, 'job-transpose.png');
  });

  await step('the transpose\'s bars: "same" shown without hovering, whiskers from the batches, the ceiling as a line', page, async () => {
    const job = await waitDone(proc, transposeId);
    const runs = job.result.runs.filter((r) => r.available);
    /* "same" where the speedup's range holds 1, visible as it stands; the baseline has none. */
    for (const [i, run] of runs.entries()) {
      const cell = `#view-job table.runs tr[data-variant="${run.variant}"] td.speedup`;
      const same = i > 0 && run.speedup_range[0] <= 1 && run.speedup_range[1] >= 1;
      checkEq(await page.locator(`${cell} .same`).count(), same ? 1 : 0, `${run.variant}: "same"`);
      if (same) check(await page.locator(`${cell} .same`).isVisible(), `${run.variant}: "same" not visible`);
      if (i > 0) check(/\d–\d/.test(await text(page, `${cell} .range`)), `${run.variant}: no range shown`);
    }
    if (!charts) return;
    /* The whiskers: the batches' figures (work over each sample's time), extremes under 4 samples. */
    const want = runs.map((r) => {
      const ms = [...r.timing.samples_ms].sort((a, b) => a - b);
      const q = (p) => { const at = (ms.length - 1) * p, lo = Math.floor(at); return ms[lo] + (ms[Math.ceil(at)] - ms[lo]) * (at - lo); };
      const [fast, slow] = ms.length < 4 ? [ms[0], ms[ms.length - 1]] : [q(0.25), q(0.75)];
      return [r.figure * r.timing.median_ms / slow, r.figure * r.timing.median_ms / fast];
    });
    const got = JSON.parse(await page.getAttribute('#bar-chart', 'data-spreads'));
    check(got.length === want.length && got.every((g, i) => Math.abs(g[0] - want[i][0]) <= 1e-9 * want[i][0] &&
      Math.abs(g[1] - want[i][1]) <= 1e-9 * want[i][1] && g[0] <= runs[i].figure * 1.000001 && g[1] >= runs[i].figure * 0.999999),
    `whiskers ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
    /* ... drawn: a cap's pixels in the marks' colour. */
    const pixel = (js) => page.$eval('#bar-chart', (c, arg) => {
      const chart = window.Chart.getChart(c), k = c.width / c.clientWidth, ctx = c.getContext('2d');
      const at = new Function('chart', `return ${arg}`)(chart);
      const d = ctx.getImageData(Math.round(at[0] * k), Math.round(at[1] * k), 1, 1).data;
      return [d[0], d[1], d[2]];
    }, js);
    const dark = (p) => p.every((v) => v < 90);
    check(dark(await pixel('[chart.scales.x.getPixelForValue(0) + 5, chart.scales.y.getPixelForValue(JSON.parse(chart.canvas.dataset.spreads)[0][1])]')),
      'no whisker cap drawn over the first bar');
    checkEq(await page.getAttribute('#bar-chart', 'data-ceiling'), null, 'no ceiling on the CPU backend');
    /* A GPU's answer (its runs' percent of the device's copy ceiling) for the same job. */
    const ceiling = 2 * Math.max(...runs.map((r) => r.figure));
    await page.route(`**/v1/jobs/${transposeId}`, async (route) => {
      const res = await route.fetch();
      const body = await res.json();
      for (const r of body.result.runs) if (r.available) Object.assign(r, { ceiling: 'copy_gbps', percent_of_ceiling: 100 * r.figure / ceiling });
      await route.fulfill({ response: res, json: body });
    });
    await page.evaluate(() => GL.jobView.reload());
    await page.waitForFunction((c) => Math.abs(Number(document.querySelector('#bar-chart') && document.querySelector('#bar-chart').dataset.ceiling) - c) < 1e-6 * c, ceiling, { timeout: TIMEOUT });
    await page.waitForFunction(() => window.Chart.getChart(document.querySelector('#bar-chart')), null, { timeout: TIMEOUT });
    const rows = await runsTable(page);
    check(rows.every((r) => r.cells.length < 2 || /%$/.test(r.cells[2])), `% of ceiling shown: ${rows.map((r) => r.cells[2])}`);
    const red = await page.$eval('#bar-chart', (c, value) => {
      const chart = window.Chart.getChart(c), k = c.width / c.clientWidth, a = chart.chartArea;
      const y = Math.round((Math.round(chart.scales.y.getPixelForValue(value)) + 0.5) * k);
      const row = c.getContext('2d').getImageData(Math.round(a.left * k), y, Math.round((a.right - a.left) * k), 1).data;
      let n = 0;
      for (let i = 0; i < row.length; i += 4) if (row[i] > 150 && row[i + 1] < 90 && row[i + 2] < 90) n++;
      return n / (row.length / 4);
    }, ceiling);
    check(red > 0.4 && red < 0.9, `the ceiling's dashed line covers ${(100 * red).toFixed(0)}% of its row`);
    await shot(page, 'job-transpose-ceiling.png');
    await page.unroute(`**/v1/jobs/${transposeId}`);
    await page.evaluate(() => GL.jobView.reload());
  });

  await step('a pipeline: its page shows each stream\'s uploads, kernels and downloads', page, async () => {
    await page.click('#view-job a.back');
    await page.waitForSelector('#view-dashboard:not([hidden])');
    await submitForm(page, 'pipeline', { chunk: 32768, chunks: 4, terms: 8, streams: '1, 2', warmup: 1, batches: 2, reps: 1 });
    pipelineId = await submittedId(page, 'pipeline');
    await waitQueueState(page, pipelineId, 'done');
    await openJob(page, pipelineId);
    checkEq((await runsTable(page)).map((r) => r.variant), ['streams=1', 'streams=2'], 'pipeline runs');
    await page.waitForSelector('#timeline svg.timeline');
    for (const [variant, lanes] of [['streams=1', 1], ['streams=2', 2]]) {
      const svg = `#timeline svg.timeline[data-variant="${variant}"]`;
      checkEq(await page.locator(`${svg} text.lane-label`).count(), lanes, `${variant} lanes`);
      checkEq(await page.locator(`${svg} rect.op`).count(), 12, `${variant} ops`);
      for (const op of ['upload', 'kernel', 'download'])
        checkEq(await page.locator(`${svg} rect.op-${op}`).count(), 4, `${variant} ${op}s`);
    }
    if (charts) checkEq((await barChart(page)).labels, ['streams=1', 'streams=2'], 'pipeline chart labels');
    await shot(page, 'job-pipeline.png');
  });

  await step('the next lecture\'s experiments: their forms come from experiments.json; a histogram from its form', page, async () => {
    await page.click('#view-job a.back');
    await page.waitForSelector('#view-dashboard:not([hidden])');
    for (const t of ['reduce', 'scan', 'histogram'])
      check(await page.isVisible(`#type-tabs button[data-type="${t}"]`), `no ${t} tab`);
    await page.click('#type-tabs button[data-type="histogram"]');
    checkEq(await page.inputValue('#form-histogram [name="n"]'), String(experiments.types.histogram.defaults.n), 'histogram n default');
    checkEq(await page.inputValue('#form-histogram [name="bins"]'), '256', 'histogram bins default');
    checkEq(await page.inputValue('#form-histogram [name="reps"]'), '100', 'histogram reps default');
    checkEq(await page.$$eval('#form-histogram input[name="variant"]', (b) => b.map((x) => x.value)),
      experiments.types.histogram.variants, 'histogram variant boxes');
    check(/1\.\.65536/.test(await text(page, '#form-histogram .field[data-field="bins"] .hint')), 'bins range hint');
    await submitForm(page, 'histogram', { bins: 0 });
    const err = page.locator('#form-histogram .field[data-field="bins"] .field-error');
    await err.waitFor({ state: 'visible', timeout: TIMEOUT });
    check(/between 1 and 65536/.test(await err.innerText()), `bins' message: ${await err.innerText()}`);
    await submitForm(page, 'histogram', { n: 5003, bins: 33, warmup: 1, batches: 2, reps: 1 });
    const id = await submittedId(page, 'histogram');
    await waitQueueState(page, id, 'done');
    /* A row an event made first has its size once the job's document arrives. */
    await page.waitForFunction((sel) => (document.querySelector(sel) || {}).innerText === 'n 5003, bins 33',
      `#queue tr[data-job-id="${id}"] td.size`, { timeout: TIMEOUT }).catch(() => {});
    checkEq(await text(page, `#queue tr[data-job-id="${id}"] td.size`), 'n 5003, bins 33', 'histogram size');
    await openJob(page, id);
    const rows = await runsTable(page);
    checkEq(rows.map((r) => r.variant), experiments.types.histogram.variants, 'histogram runs');
    for (const r of rows.filter((x) => x.cells.length > 1)) check(r.cells[4].startsWith('✓'), `${r.variant}: check ${r.cells[4]}`);
    await shot(page, 'job-histogram.png');
  });

  await step('the pipeline\'s best run: its timeline counts its own plan\'s chunks, not the params\'', page, async () => {
    const id = await postJob(proc, { type: 'pipeline', params: { chunk: 32768, chunks: 6, terms: 8, streams: [2, 'best'], warmup: 0, batches: 1, reps: 1 } });
    const job = await waitDone(proc, id);
    const best = job.result.runs.find((r) => r.variant === 'best');
    check(best && best.plan && best.plan.chunks !== 6, `best's plan ${JSON.stringify(best && best.plan)} (the check needs one that differs)`);
    await page.goto(`${proc.base}/#/jobs/${id}`);
    await page.waitForSelector('#timeline svg.timeline[data-variant="best"]', { timeout: TIMEOUT });
    const head = await text(page, '#timeline .timeline-run:has(svg[data-variant="best"]) h4');
    const shown = await page.locator('#timeline svg.timeline[data-variant="best"] rect.op-kernel').count();
    checkEq(shown, best.timeline_chunks, 'best\'s chunks drawn');
    if (best.timeline_chunks < best.plan.chunks) check(head.includes(`first ${best.timeline_chunks} of ${best.plan.chunks} chunks`), head);
    else check(!/chunks shown/.test(head), `best's heading says some are missing: ${head}`);
  });

  await step('the live queue: queued, waiting and running on top, finished below a page at a time, a state filter, each finished row\'s best figure', page, async () => {
    await page.goto(`${proc.base}/#/`);
    await page.waitForSelector('#view-dashboard:not([hidden])');
    /* Enough finished jobs for two pages of 20. */
    const small = { type: 'transpose', params: { m: 16, n: 16, warmup: 0, batches: 1, reps: 1 } };
    let last = 0;
    for (let i = 0; i < 22; i++) last = await postJob(proc, small);
    await waitDone(proc, last);
    /* A long job, and one that waits for it on the host (state waiting until it ends). */
    const long = await postJob(proc, { type: 'transpose', params: { m: 1024, n: 1024, warmup: 0, batches: 40, reps: 4, max_time: 600 } });
    const waiting = await postJob(proc, { type: 'transpose', params: small.params, depends_on: [long], dependency: 'host' });
    await page.waitForSelector(`#queue-active tr[data-job-id="${long}"][data-state="running"]`, { timeout: TIMEOUT });
    await page.waitForSelector(`#queue-active tr[data-job-id="${waiting}"][data-state="waiting"]`, { timeout: TIMEOUT });
    const order = await page.$$eval('#queue tbody:not(.group) tr', (trs) => trs.map((tr) => [tr.parentElement.id, tr.dataset.state]));
    const firstFinished = order.findIndex(([body]) => body === 'queue-finished');
    check(firstFinished > 0 && order.slice(0, firstFinished).every(([b, st]) => b === 'queue-active' && ['running', 'waiting', 'queued'].includes(st)) &&
      order.slice(firstFinished).every(([b, st]) => b === 'queue-finished' && ['done', 'failed', 'canceled'].includes(st)),
    `unfinished rows first, then finished: ${JSON.stringify(order)}`);
    checkEq(order[0][1], 'running', 'the running job heads the queue');
    /* Interleaved (the default): every run advances each batch, so the batch is the progress. */
    await page.waitForFunction((id) => /^batch \d+\/40 · 5 runs interleaved$/.test(
      document.querySelector(`#queue tr[data-job-id="${id}"] td.result`).innerText.trim()), long, { timeout: TIMEOUT });
    checkEq(await page.locator('#queue-finished tr').count(), 20, 'a page of finished jobs');
    await shot(page, 'queue-live.png');
    /* Canceled while it waits: it leaves the top for the finished page. */
    await fetch(`${proc.base}/jobs/${waiting}`, { method: 'DELETE' });
    await page.waitForSelector(`#queue-finished tr[data-job-id="${waiting}"][data-state="canceled"]`, { timeout: TIMEOUT });
    /* Its error once: not "canceled: canceled ...". The state event says "canceled" alone;
     * the job's message comes with the fetch that follows it, so wait for that. */
    const canceledCell = `#queue-finished tr[data-job-id="${waiting}"] td.result`;
    await page.waitForFunction((sel) => /^canceled /.test(document.querySelector(sel).innerText.trim()), canceledCell, { timeout: TIMEOUT })
      .catch(() => {});
    const why = await text(page, canceledCell);
    check(/^canceled /.test(why) && !/^canceled: canceled/.test(why), `the canceled row: ${why}`);
    checkEq(await page.locator(`#queue-active tr[data-job-id="${waiting}"]`).count(), 0, 'the canceled job left the top');
    /* Headlines: the best run's figure of each done row; a baseline (copy) never. */
    const job = await waitDone(proc, last);
    const best = job.result.runs.filter((r) => r.available && r.check.passed && r.variant !== 'copy')
      .reduce((a, b) => (b.figure > a.figure ? b : a));
    const cell = await text(page, `#queue-finished tr[data-job-id="${last}"] td.result`);
    check(cell.includes(best.variant) && cell.includes('GB/s'), `#${last}'s headline: ${cell} (best ${best.variant} ${best.figure})`);
    /* Paging: older, then newer again. */
    await page.selectOption('#queue-state', 'done');
    await page.waitForFunction(() => [...document.querySelectorAll('#queue-finished tr')].length === 20 &&
      [...document.querySelectorAll('#queue-finished tr')].every((tr) => tr.dataset.state === 'done'), null, { timeout: TIMEOUT });
    const ids = () => page.$$eval('#queue-finished tr', (trs) => trs.map((tr) => Number(tr.dataset.jobId)));
    const first = await ids();
    check(first.every((id, i) => i === 0 || id < first[i - 1]), `newest first: ${first}`);
    await page.click('#queue-older');
    await page.waitForFunction((min) => {
      const trs = [...document.querySelectorAll('#queue-finished tr')];
      return trs.length > 0 && trs.every((tr) => Number(tr.dataset.jobId) < min);
    }, Math.min(...first), { timeout: TIMEOUT });
    checkEq(await text(page, '#queue-page'), 'page 2', 'page label');
    await page.click('#queue-newer');
    await page.waitForFunction((want) => [...document.querySelectorAll('#queue-finished tr')].map((tr) => Number(tr.dataset.jobId)).join() === want,
      first.join(), { timeout: TIMEOUT });
    /* The filter: canceled only. */
    await page.selectOption('#queue-state', 'canceled');
    await page.waitForFunction((id) => {
      const trs = [...document.querySelectorAll('#queue-finished tr')];
      return trs.length > 0 && trs.every((tr) => tr.dataset.state === 'canceled') && trs.some((tr) => tr.dataset.jobId === String(id));
    }, waiting, { timeout: TIMEOUT });
    await shot(page, 'queue-canceled.png');
    await page.selectOption('#queue-state', '');
    await waitDone(proc, long);
    await page.waitForSelector(`#queue-finished tr[data-job-id="${long}"][data-state="done"]`, { timeout: TIMEOUT });
    checkEq(await page.locator('#queue-active tr').count(), 0, 'nothing unfinished left on top');
  });

  await step('the live queue keeps what the stream told: a listing that left gpulabd before a job ended and arrives after its events neither takes it back to running nor drops it from the finished page', page, async () => {
    /* The page's listings that gate.match picks are answered by gpulabd at once and
     * handed to the page only when gate.open() is called. */
    const gate = { match: null, held: [], open: null, opened: null };
    const close = (match) => {
      Object.assign(gate, { match, held: [] });
      gate.opened = new Promise((resolve) => { gate.open = resolve; });
    };
    const listings = (url) => url.pathname === '/v1/jobs' && url.search !== '';
    await page.route(listings, async (route) => {
      const url = new URL(route.request().url());
      if (!gate.match || !gate.match(url)) return route.continue();
      const response = await route.fetch();
      gate.held.push({ search: url.search, body: await response.text() });
      await gate.opened;
      return route.fulfill({ response });
    });
    const heldCount = async (n) => {
      for (const end = Date.now() + TIMEOUT; gate.held.length < n; await new Promise((r) => setTimeout(r, 20)))
        check(Date.now() < end, `${gate.held.length} listings held, want ${n}`);
    };

    /* A job running while the page loads: the unfinished listings show it running,
     * they are held, it ends, the stream says so, then they arrive. */
    const long = await postJob(proc, { type: 'transpose', params: { m: 1024, n: 1024, warmup: 0, batches: 40, reps: 4, max_time: 600 } });
    for (const end = Date.now() + TIMEOUT; (await (await fetch(`${proc.base}/jobs/${long}`)).json()).state !== 'running';
      await new Promise((r) => setTimeout(r, 20)))
      check(Date.now() < end, `job ${long} did not start`);
    close((url) => url.searchParams.has('state') && !url.searchParams.has('fields'));
    await page.reload();
    await page.waitForSelector('#conn[data-state="live"]');
    await heldCount(1);
    check(gate.held.some((l) => l.search.includes('state=running') && JSON.parse(l.body).jobs.some((j) => j.id === long)),
      `no held listing shows job ${long} running: ${JSON.stringify(gate.held.map((l) => l.search))}`);
    await waitDone(proc, long);
    await page.waitForSelector(`#queue-finished tr[data-job-id="${long}"][data-state="done"]`, { timeout: TIMEOUT });
    /* The finished page is asked for once the unfinished listings were applied. */
    const afterLists = page.waitForRequest((req) => /\/v1\/jobs\?.*fields=result/.test(req.url()), { timeout: TIMEOUT });
    gate.match = null;
    gate.open();
    await afterLists;
    checkEq(await page.locator(`#queue-active tr[data-job-id="${long}"]`).count(), 0, `job ${long} back on top after a stale listing`);
    checkEq(await page.getAttribute(`#queue-finished tr[data-job-id="${long}"]`, 'data-state'), 'done', `job ${long}'s row`);

    /* The finished page asked for (the filter changed), held; a job ends meanwhile. */
    close((url) => url.searchParams.get('fields') === 'result');
    await page.selectOption('#queue-state', 'done');
    await heldCount(1);
    const quick = await postJob(proc, { type: 'transpose', params: { m: 16, n: 16, warmup: 0, batches: 1, reps: 1 } });
    await waitDone(proc, quick);
    await page.waitForSelector(`#queue-finished tr[data-job-id="${quick}"][data-state="done"]`, { timeout: TIMEOUT });
    check(!JSON.parse(gate.held[0].body).jobs.some((j) => j.id === quick), 'the held page already had the new job');
    gate.match = null;
    gate.open();
    await page.waitForFunction(() => document.querySelectorAll('#queue-finished tr').length === 20, null, { timeout: TIMEOUT });
    const ids = await page.$$eval('#queue-finished tr', (trs) => trs.map((tr) => Number(tr.dataset.jobId)));
    checkEq(ids[0], quick, 'the job that ended while the page was on its way heads it');
    await page.unroute(listings);
    await page.selectOption('#queue-state', '');
  });

  await step('a running job\'s page: its batches\' samples show as they arrive, then the bars', page, async () => {
    /* Long enough on the CPU backend (seconds) that the page sees it run. */
    const id = await postJob(proc, { type: 'transpose', params: { m: 1024, n: 1024, warmup: 0, batches: 100, reps: 4, max_time: 600 } });
    await page.goto(`${proc.base}/#/jobs/${id}`);
    await page.waitForSelector('#live #live-chart', { timeout: TIMEOUT });
    const points = () => page.$eval('#live-chart', (c) => {
      const chart = window.Chart.getChart(c);
      return chart ? chart.data.datasets.reduce((a, d) => a + d.data.length, 0) : 0;
    });
    await page.waitForFunction(() => {
      const c = document.getElementById('live-chart'), chart = c && window.Chart.getChart(c);
      return chart && chart.data.datasets.reduce((a, d) => a + d.data.length, 0) >= 10;
    }, null, { timeout: TIMEOUT });
    const first = await points();
    const progress = await text(page, '#job-progress');
    const mid = await (await fetch(`${proc.base}/v1/jobs/${id}`)).json();
    checkEq(mid.state, 'running', 'the job while its page showed samples');
    check(/^batches seen: naive \d+ \/ 100 · shared32 \d+ \/ 100/.test(progress), `progress: ${progress}`);
    check(paths.includes(`/v1/jobs/${id}/events`), 'the page did not open the job\'s own event stream');
    /* Its time so far, ticking as the queue's does (not "—"). */
    const ran = await text(page, '#job-ran');
    check(/^\d[\d.]* (ms|s) so far$/.test(ran), `ran: ${ran}`);
    await page.waitForFunction((t) => document.getElementById('job-ran').textContent !== t, ran, { timeout: 10000 });
    await shot(page, 'job-live.png');
    await page.waitForFunction((n) => {
      const c = document.getElementById('live-chart'), chart = c && window.Chart.getChart(c);
      return chart && chart.data.datasets.reduce((a, d) => a + d.data.length, 0) > n;
    }, first, { timeout: TIMEOUT });
    const sets = await page.$eval('#live-chart', (c) => window.Chart.getChart(c).data.datasets.map((d) => ({
      label: d.label, xs: d.data.map((p) => p.x), ok: d.data.every((p) => p.y > 0) })));
    check(sets.length >= 2 && sets[0].label === 'naive' && sets.every((d) => d.ok), `live datasets ${JSON.stringify(sets)}`);
    check(sets.every((d) => d.xs.every((x) => x >= 1 && x <= 100)), 'batch numbers out of 1..100');
    /* When it ends the page turns into the finished job's: table and bars. */
    await waitDone(proc, id);
    await page.waitForSelector('#view-job table.runs tbody tr', { timeout: TIMEOUT });
    await page.waitForFunction(() => window.Chart.getChart(document.getElementById('bar-chart')), null, { timeout: TIMEOUT });
    checkEq(await page.locator('#live').count(), 0, 'the live panel stayed');
    checkEq((await runsTable(page)).length, 5, 'runs in the finished job\'s table');
    await shot(page, 'job-live-done.png');
  });

  await step('a child that failed with its parent (parent_failed) shows no run time, on its page and in the queue; its error reads once', page, async () => {
    /* The child joins the device once its parent is issued (an event dependency), so
     * it is running, with a started_at, when the parent is canceled; it then fails, and
     * what time it had is no run of its own. On a slow machine the parent may have
     * finished before the cancel reached it, or the child (which may take the device's
     * timed window first) may have finished before the cancel: both rightly end done,
     * and a new pair is tried then, three at most. A child that ends done after its
     * parent ended canceled fails the step. */
    const params = { m: 1024, n: 1024, warmup: 0, batches: 100, reps: 4, max_time: 600 };
    await page.goto(`${proc.base}/#/`);
    let parent;
    let child;
    for (let attempt = 1; ; attempt++) {
      parent = await postJob(proc, { type: 'transpose', params });
      child = await postJob(proc, { type: 'transpose', params, depends_on: [parent] });
      for (const end = Date.now() + TIMEOUT; ;) {
        const st = (await (await fetch(`${proc.base}/v1/jobs/${child}`)).json()).state;
        if (st === 'running') break;
        check(Date.now() < end && !['done', 'failed', 'canceled'].includes(st), `the child is ${st}, not running`);
        await new Promise((r) => setTimeout(r, 50));
      }
      await fetch(`${proc.base}/v1/jobs/${parent}`, { method: 'DELETE' });
      const ended = await waitEnded(proc, parent);
      if (ended.state === 'canceled') {
        const c = await waitEnded(proc, child);
        if (c.state !== 'done') break;
        check(Date.parse(c.finished_at) <= Date.parse(ended.finished_at),
          `child ${child} ended done at ${c.finished_at}, after its parent ${parent} was canceled at ${ended.finished_at}`);
      }
      check(attempt < 3, `the parent ended ${ended.state} three times before its cancel reached it`);
      await waitEnded(proc, child);
    }
    await waitQueueState(page, child, 'failed');
    const job = await (await fetch(`${proc.base}/v1/jobs/${child}`)).json();
    checkEq(job.error.code, 'parent_failed', 'the child\'s error');
    check(!/canceled: canceled/.test(job.error.message), `the child's message: ${job.error.message}`);
    checkEq(await text(page, `#queue tr[data-job-id="${child}"] td.run-ms`), '—', 'the child\'s Ran in the queue');
    const canceled = await text(page, `#queue tr[data-job-id="${parent}"] td.result`);
    check(!/^canceled: canceled/.test(canceled), `the parent's result: ${canceled}`);
    await page.goto(`${proc.base}/#/jobs/${child}`);
    await page.waitForSelector('#job-ran', { timeout: TIMEOUT });
    checkEq(await text(page, '#job-ran'), '— (its parent failed)', 'the child\'s ran');
    await shot(page, 'job-parent-failed.png');
  });

  await step('history: the same transpose over time as a line chart', page, async () => {
    /* Three batches (a band from their min and max): two sub-microsecond CPU calls can
     * take the same nanoseconds, and every job's two samples once did (a band of no
     * width, seen in a fresh root). */
    await postJob(proc, { type: 'transpose', params: { m: 33, n: 47, warmup: 1, batches: 3, reps: 1 } });
    const last = await postJob(proc, { type: 'transpose', params: { m: 33, n: 47, warmup: 1, batches: 3, reps: 1 } });
    await waitDone(proc, last);
    await page.goto(`${proc.base}/#/history/transpose/padded33/${encodeURIComponent('33 × 47')}`);
    /* The link's history, not the one drawn before it (the page may have drawn one). */
    await page.waitForFunction(() => {
      const trs = [...document.querySelectorAll('#history-table tbody tr')];
      return trs.length >= 3 && trs.every((tr) => tr.dataset.variant === 'padded33');
    }, null, { timeout: TIMEOUT });
    const checked = () => page.$$eval('#history-variants input:checked', (xs) => xs.map((x) => x.value));
    checkEq(await checked(), ['padded33'], 'the link\'s variant is the one chosen');
    checkEq(await page.inputValue('#history-controls select[name="size"]'), '33 × 47', 'history size');
    const jobs = await page.$$eval('#history-table tbody tr td:first-child', (t) => t.map((x) => x.innerText));
    checkEq(jobs[0], `#${last}`, 'newest first in the history table');
    check(jobs.includes(`#${transposeId}`), 'the form\'s transpose is in the history');
    /* Another size and back: the default, best and the baseline (the first run, naive). */
    await page.selectOption('#history-controls select[name="size"]', '16 × 16');
    await page.selectOption('#history-controls select[name="size"]', '33 × 47');
    checkEq(await checked(), ['naive', 'best'], 'the default variants');
    await page.check('#history-variants input[value="padded33"]');
    checkEq(await checked(), ['naive', 'padded33', 'best'], 'variants after ticking padded33');
    const variantsShown = await page.$$eval('#history-table tbody tr', (trs) => [...new Set(trs.map((tr) => tr.dataset.variant))].sort());
    /* One baseline for the table's speedups, named in its header: naive's own rows are 1×. */
    checkEq(await page.textContent('#history-speedup'), 'Speedup vs naive', 'the speedup column\'s header');
    const naiveSpeedups = await page.$$eval('#history-table tbody tr[data-variant="naive"] td:nth-child(6)', (t) => t.map((x) => x.innerText));
    check(naiveSpeedups.length > 0 && naiveSpeedups.every((x) => /^1(\.0+)?×$/.test(x)), `naive's speedups: ${naiveSpeedups}`);
    checkEq(variantsShown, ['best', 'naive', 'padded33'], 'the table\'s variants');
    const finished = (await (await fetch(`${proc.base}/v1/jobs?type=transpose&state=done&limit=1000`)).json()).jobs
      .filter((j) => j.params.m === 33 && j.params.n === 47).map((j) => Date.parse(j.finished_at)).sort((a, b) => a - b);
    if (charts) {
      const sets = await page.$eval('#history-chart', (c) => {
        const chart = window.Chart.getChart(c);
        return { x: chart.options.scales.x.type, tick: chart.scales.x.getLabelForValue ? chart.scales.x.ticks.map((t) => t.label) : [],
          sets: chart.data.datasets.map((d) => ({ variant: d.variant, role: d.role, fill: d.fill, xs: d.data.map((p) => p.x), ys: d.data.map((p) => p.y) })) };
      });
      checkEq(sets.x, 'linear', 'the history\'s x axis');
      check(sets.tick.length > 0 && sets.tick.every((t) => /^\d\d:\d\d:\d\d$/.test(t)), `x ticks as local times: ${sets.tick}`);
      checkEq(sets.sets.map((d) => `${d.variant}:${d.role}`), ['naive:low', 'naive:high', 'naive:median',
        'padded33:low', 'padded33:high', 'padded33:median', 'best:low', 'best:high', 'best:median'], 'datasets, a band and a line per variant');
      checkEq(sets.sets.map((d) => d.fill), [false, '-1', false, false, '-1', false, false, '-1', false], 'bands fill down to their lower edge');
      for (let i = 0; i < sets.sets.length; i += 3) {
        const [lo, hi, mid] = sets.sets.slice(i, i + 3);
        check(mid.xs.length >= 3, `${mid.variant}: ${mid.xs.length} points`);
        check(mid.xs.every((x, k) => finished.includes(x) && (k === 0 || x >= mid.xs[k - 1])),
          `${mid.variant}: x is each job's finished_at, in order: ${mid.xs}`);
        checkEq(lo.xs, mid.xs, `${mid.variant}: the band's x`);
        check(mid.ys.every((y, k) => lo.ys[k] <= y * 1.000001 && y <= hi.ys[k] * 1.000001), `${mid.variant}: the median inside its band`);
        check(lo.ys.some((y, k) => y < hi.ys[k]), `${mid.variant}: a band of no width`);
      }
      await page.locator('#history').screenshot({ path: path.join(ARTIFACTS, 'history.png') });
    }
    /* Every queue row complete (params and times fetched after its events). */
    await page.waitForFunction(() => [...document.querySelectorAll('#queue tbody:not(.group) tr')].every((tr) =>
      tr.querySelector('td.size').innerText && (tr.dataset.state === 'canceled' || /\d/.test(tr.querySelector('td.run-ms').innerText) ||
        /^parent_failed/.test(tr.querySelector('td.result').innerText))), /* no run time of their own */
    null, { timeout: TIMEOUT });
    await page.evaluate(() => window.scrollTo(0, 0));
    await shot(page, 'dashboard.png');
  });

  await step('your kernel: a code editor (CodeMirror: line numbers, CUDA highlighting) starts from the signature; compile errors are marked at their lines, each said once', page, async () => {
    await page.goto(`${proc.base}/#/kernels`);
    await page.waitForFunction(() => window.GL && GL.kernelsView.editor() &&
      /extern "C" __global__ void kernel/.test(GL.kernelsView.editor().get()), null, { timeout: TIMEOUT });
    checkEq(await page.getAttribute('#kernel-form', 'data-editor'), 'codemirror', 'the editor');
    check(await page.isVisible('#kernel-editor .CodeMirror-linenumber'), 'no line numbers');
    check(await page.isHidden('#kernel-source'), 'the textarea is still shown');
    const styled = await page.$$eval('#kernel-editor .CodeMirror-code span[class^="cm-"]', (xs) => xs.map((x) => `${x.className}:${x.textContent}`));
    check(styled.includes('cm-keyword:__global__') && styled.includes('cm-keyword:extern') && styled.some((x) => /^cm-builtin:(threadIdx|blockIdx|blockDim)$/.test(x)),
      `CUDA highlighting: ${styled.slice(0, 20)}`);
    checkEq(await text(page, '#kernel-signature'),
      'extern "C" __global__ void kernel(const float* a, float* b, int m, int n)', 'signature');
    await setKernelSource(page, 'extern "C" __global__ void kernel(const float* a, float* b, int m, int n) {\n' +
      '  int x = threadIdx.x;\n  b[x] = a[x] +;\n  int y = q;\n}\n');
    await page.click('#kernel-compile');
    await page.waitForSelector('#compile-error li', { timeout: TIMEOUT });
    checkEq(await page.$$eval('#compile-error li', (li) => li.map((x) => x.innerText)),
      ['line 3: expected an expression', 'line 4: identifier "q" is undefined'], 'the compile errors at their lines');
    checkEq(await page.evaluate(() => GL.kernelsView.editor().marked()), [3, 4], 'the lines marked in the editor');
    check(await page.isVisible('#kernel-editor .gl-mark-error[data-line="3"]') &&
      await page.isVisible('#kernel-editor .gl-mark-error[data-line="4"]'), 'no gutter marks at lines 3 and 4');
    checkEq(await page.locator('#kernel-editor .CodeMirror-code > div.gl-error-line, #kernel-editor .gl-error-line').count() > 0, true, 'a marked line');
    /* Each message once on the page (the whole log folded away). */
    const shown = await page.evaluate(() => document.getElementById('view-kernels').innerText);
    checkEq(shown.split('expected an expression').length - 1, 1, `"expected an expression" shown once: ${shown.slice(0, 600)}`);
    check(/^compile_failed: 2 errors, marked in the source$/.test(await text(page, '#kernel-form .form-status')),
      `status: ${await text(page, '#kernel-form .form-status')}`);
    check(!(await page.isVisible('#kernel-result details.log-box pre')), 'the whole log is not folded');
    await shot(page, 'kernel-compile-error.png');
    /* A message's line link takes the cursor there. */
    await page.click('#compile-error a[data-line="4"]');
    checkEq(await page.evaluate(() => GL.kernelsView.editor().cm.getCursor('from').line + 1), 4, 'the cursor after the line link');
  });

  await step('your kernel: another experiment\'s template replaces an edited source only when the user says so', page, async () => {
    const other = await page.$$eval('#kernel-experiment option', (o) => o.map((x) => x.value).find((v) => v !== 'transpose'));
    const edited = await kernelSource(page);
    const dialogs = [];
    page.once('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
    await page.selectOption('#kernel-experiment', other);
    checkEq(dialogs.length, 1, 'asked before replacing the edits');
    check(/Replace the source you edited/.test(dialogs[0]), `the question: ${dialogs[0]}`);
    checkEq(await page.inputValue('#kernel-experiment'), 'transpose', 'the experiment after "no"');
    checkEq(await kernelSource(page), edited, 'the edits after "no"');
    page.once('dialog', (d) => { dialogs.push(d.message()); d.accept(); });
    await page.selectOption('#kernel-experiment', other);
    checkEq(dialogs.length, 2, 'asked again');
    const sigs = (await (await fetch(`${proc.base}/v1/kernels/signatures`)).json()).signatures;
    checkEq(await kernelSource(page), sigs.find((x) => x.experiment === other).template, `the ${other} template after "yes"`);
    /* An unedited template is replaced without a question. */
    const none = (d) => { dialogs.push(d.message()); d.dismiss(); };
    page.on('dialog', none);
    await page.selectOption('#kernel-experiment', 'transpose');
    page.off('dialog', none);
    checkEq(dialogs.length, 2, 'no question for an unedited template');
    checkEq(await kernelSource(page), sigs.find((x) => x.experiment === 'transpose').template, 'the transpose template');
  });

  await step('your kernel: state that outlives a launch is refused at its line; scratch is one more last argument', page, async () => {
    await setKernelSource(page, 'extern "C" __global__ void kernel(const float* a, float* b, int m, int n) {\n' +
      '  float *t = (float *)malloc(4);\n  b[0] = t[0];\n}\n');
    await page.click('#kernel-compile');
    await page.waitForFunction(() => /malloc/.test((document.getElementById('compile-error') || {}).textContent || ''),
      null, { timeout: TIMEOUT });
    check(/^line 2: it calls malloc/.test(await text(page, '#compile-error')), `error: ${await text(page, '#compile-error')}`);
    checkEq(await page.evaluate(() => GL.kernelsView.editor().marked()), [2], 'line 2 marked');
    await page.fill('#kernel-scratch', '4096');
    checkEq(await text(page, '#kernel-signature'),
      'extern "C" __global__ void kernel(const float* a, float* b, int m, int n, void* scratch)', 'signature with scratch');
    await page.fill('#kernel-name', 'browser_scratch');
    await setKernelSource(page, '__device__ int seen;\n' +
      'extern "C" __global__ void kernel(const float* a, float* b, int m, int n, void* scratch) {\n' +
      '  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;\n' +
      '  if (x == 0 && y == 0) { atomicAdd((unsigned *)scratch, 1u); seen = 1; }\n' +
      '  if (x < n && y < m) b[(size_t)x * m + y] = a[(size_t)y * n + x];\n}\n');
    await page.click('#kernel-compile');
    await page.waitForSelector('#compile-ok', { timeout: TIMEOUT });
    check(/1 module variable \(put back before every launch\)/.test(await text(page, '#compile-ok')),
      `compiled: ${await text(page, '#compile-ok')}`);
    checkEq(await page.evaluate(() => GL.kernelsView.editor().marked()), [], 'no marks once it compiles');
    await shot(page, 'kernel-scratch.png');
    await page.fill('#kernel-scratch', '');
  });

  await step('your kernel compiles, is listed, runs beside the built-ins and the leaderboard ranks them', page, async () => {
    await page.selectOption('#kernel-experiment', 'transpose'); /* the template again */
    await page.fill('#kernel-name', 'browser_tile');
    await page.click('#kernel-compile');
    await page.waitForSelector('#compile-ok', { timeout: TIMEOUT });
    check(/registers/.test(await text(page, '#compile-ok')), `compiled: ${await text(page, '#compile-ok')}`);
    await page.waitForSelector('#kernel-list tbody tr', { timeout: TIMEOUT });
    await page.click('#kernel-run');
    const link = page.locator('#kernel-form .form-status a[data-job-id]');
    await link.waitFor({ timeout: TIMEOUT });
    const id = Number(await link.getAttribute('data-job-id'));
    await waitDone(proc, id);
    await page.click('#leaderboard-form button[type="submit"]');
    await page.waitForSelector('#leaderboard tbody tr[data-variant="padded33"]', { timeout: TIMEOUT });
    check(!(await page.isVisible('#leaderboard tbody tr[data-variant="copy"]')), 'copy, a baseline, is ranked');
    await shot(page, 'kernels.png');
    await link.click();
    await page.waitForSelector('#view-job table.runs tbody tr', { timeout: TIMEOUT });
    const rows = await runsTable(page);
    check(rows.some((r) => /^kernel:\d+/.test(r.variant)), `no kernel run: ${rows.map((r) => r.variant)}`);
  });

  await step('your kernels: one opens into the editor (source, name, shape, options), is edited and compiled again as its next version, its versions are compared, opened and deleted, and the kernel is deleted after asking', page, async () => {
    await page.click('#nav-kernels');
    await page.waitForSelector('#kernel-list tbody tr', { timeout: TIMEOUT });
    const listed = (await (await fetch(`${proc.base}/v1/kernels`)).json()).kernels;
    const k = listed.find((x) => x.name === 'browser_scratch');
    check(k, `browser_scratch is listed: ${listed.map((x) => x.name)}`);
    const stored = await (await fetch(`${proc.base}/v1/kernels/${k.id}`)).json();
    const dialogs = [];
    const answer = (d) => { dialogs.push(d.message()); d.accept(); };
    page.on('dialog', answer);
    await page.click(`#kernel-list tr[data-kernel-id="${k.id}"] button.open`);
    await page.waitForFunction((src) => GL.kernelsView.editor().get() === src, stored.source, { timeout: TIMEOUT });
    checkEq(dialogs, [], 'no question: the editor held an unedited template');
    page.off('dialog', answer);
    checkEq(await page.inputValue('#kernel-name'), 'browser_scratch', 'name');
    checkEq(await page.inputValue('#kernel-scratch'), '4096', 'scratch bytes');
    checkEq(await page.inputValue('#kernel-block'), stored.block.join(','), 'block');
    checkEq(await text(page, '#kernel-signature'),
      'extern "C" __global__ void kernel(const float* a, float* b, int m, int n, void* scratch)', 'the signature with scratch');
    check((await text(page, '#kernel-open')).includes(`kernel:${k.id}`), `the note: ${await text(page, '#kernel-open')}`);
    await shot(page, 'kernel-open.png');
    /* Edited and compiled: stored again under its name, with the edit. */
    await page.click('#kernel-editor .CodeMirror-lines');
    await page.keyboard.press('Control+End');
    await page.keyboard.insertText('// edited in the browser\n');
    const edited = await kernelSource(page);
    check(edited === `${stored.source}// edited in the browser\n`, `the edit: ${JSON.stringify(edited.slice(-60))}`);
    await page.click('#kernel-compile');
    await page.waitForSelector('#compile-ok', { timeout: TIMEOUT });
    const variant = /compiled: (kernel:\d+(?:@\d+)?)/.exec(await text(page, '#kernel-form .form-status'))[1];
    const again = await (await fetch(`${proc.base}/v1/kernels/${k.id}`)).json();
    checkEq([variant, again.name, again.source, again.version, again.versions], [`kernel:${k.id}@2`, 'browser_scratch', edited, 2, 2],
      'a new version of the kernel, under its name, with the edit');
    await page.waitForSelector(`#kernel-list tr[data-kernel-id="${k.id}"] td.versions:text-is("2")`, { timeout: TIMEOUT });
    /* Its versions: listed, compared as a unified diff, the first opened, then deleted. */
    await page.click(`#kernel-list tr[data-kernel-id="${k.id}"] button.show-versions`);
    await page.waitForSelector('#kernel-versions-table tbody tr[data-version="2"]', { timeout: TIMEOUT });
    checkEq(await page.$$eval('#kernel-versions-table tbody th', (t) => t.map((x) => x.innerText)),
      [`kernel:${k.id}@1`, `kernel:${k.id}@2`], 'the versions listed');
    checkEq([await page.isChecked('#kernel-versions-table tr[data-version="1"] input[name="from"]'),
      await page.isChecked('#kernel-versions-table tr[data-version="2"] input[name="to"]')], [true, true], 'from 1 to 2 picked');
    await page.click('#kernel-compare');
    await page.waitForSelector('#kernel-diff .diff-add', { timeout: TIMEOUT });
    checkEq(await page.$$eval('#kernel-diff .diff-add', (xs) => xs.map((x) => x.textContent)), ['+// edited in the browser'], 'the diff\'s added lines');
    checkEq(await page.locator('#kernel-diff .diff-del').count(), 0, 'the diff\'s removed lines');
    const served = await (await fetch(`${proc.base}/v1/kernels/${k.id}/diff?from=1&to=2`)).text();
    checkEq(await page.$$eval('#kernel-diff span', (xs) => xs.map((x) => x.textContent).join('\n').trim()), served.trim(), 'the diff as gpulabd serves it');
    await shot(page, 'kernel-versions.png');
    await page.click('#kernel-versions-table tr[data-version="1"] button.open');
    await page.waitForFunction((src) => GL.kernelsView.editor().get() === src, stored.source, { timeout: TIMEOUT });
    check((await text(page, '#kernel-open')).includes(`kernel:${k.id}@1`), `the note: ${await text(page, '#kernel-open')}`);
    page.once('dialog', (d) => { dialogs.push(d.message()); d.accept(); });
    await page.click('#kernel-versions-table tr[data-version="1"] button.delete');
    await page.waitForSelector('#kernel-versions-table tr[data-version="1"]', { state: 'detached', timeout: TIMEOUT });
    checkEq((await fetch(`${proc.base}/v1/kernels/${k.id}/versions/1`)).status, 404, 'version 1 gone');
    checkEq((await (await fetch(`${proc.base}/v1/kernels/${k.id}`)).json()).versions, 1, 'one version left');
    /* Deleted: "no" keeps it, "yes" deletes it. */
    page.once('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
    await page.click(`#kernel-list tr[data-kernel-id="${again.id}"] button.delete`);
    check(/^Delete kernel:\d+ \(browser_scratch\)\?/.test(dialogs[dialogs.length - 1] || ''), `the question: ${dialogs[dialogs.length - 1]}`);
    checkEq((await fetch(`${proc.base}/v1/kernels/${again.id}`)).status, 200, 'kept after "no"');
    page.once('dialog', (d) => d.accept());
    await page.click(`#kernel-list tr[data-kernel-id="${again.id}"] button.delete`);
    await page.waitForSelector(`#kernel-list tr[data-kernel-id="${again.id}"]`, { state: 'detached', timeout: TIMEOUT });
    checkEq((await fetch(`${proc.base}/v1/kernels/${again.id}`)).status, 404, 'gone after "yes"');
    check(/deleted/.test(await text(page, '#kernel-list-status')), `status: ${await text(page, '#kernel-list-status')}`);
  });

  let profiledId;
  await step('a job with "profile" checked in its form: on the CPU backend its page says once why there is no profile', page, async () => {
    await page.goto(`${proc.base}/#/`);
    await page.waitForSelector('#form-transpose', { timeout: TIMEOUT });
    await page.click('#type-tabs button[data-type="transpose"]');
    await page.check('#form-transpose input[type="checkbox"][name="profile"]');
    await submitForm(page, 'transpose', { m: 64, n: 48, warmup: 0, batches: 2, reps: 1 });
    profiledId = await submittedId(page, 'transpose');
    const job = await waitDone(proc, profiledId);
    checkEq(job.params.profile, 'counters', 'the profile the form asked for');
    const reason = job.result.runs.find((r) => r.available).profile.reason;
    check(job.result.runs.every((r) => !r.available || (r.profile && r.profile.reason === reason)), 'every run gives the same reason');
    await page.click('#form-transpose button:has-text("Defaults")');
    checkEq(await page.isChecked('#form-transpose input[name="profile"]'), false, 'profile after Defaults');
    await openJob(page, profiledId);
    await page.waitForSelector('#why .profile-off', { timeout: TIMEOUT });
    checkEq(await page.$$eval('#why .profile-off', (ps) => ps.map((x) => x.innerText)), [`No profile: ${reason}`], 'the one line');
    checkEq(await page.locator('#why-table').count(), 0, 'a why table without counters');
    await page.locator('#why').screenshot({ path: path.join(ARTIFACTS, 'job-profile-unavailable.png') });
    log(`     screenshot: ${path.join(ARTIFACTS, 'job-profile-unavailable.png')}`);
  });

  await step('a recorded profile (the lecture\'s 4096² transpose on the H200): the why table\'s cells with NVIDIA\'s names, the roofline\'s points', page, async () => {
    /* The CPU backend profiles nothing: the page is served the real job's document with
     * each run's profile recorded (page.route on GET /v1/jobs/{id}). */
    const real = await (await fetch(`${proc.base}/v1/jobs/${profiledId}`)).json();
    const recorded = recordedProfiles();
    real.params.m = real.params.n = 4096;
    for (const r of real.result.runs) {
      if (!r.available) continue;
      r.profile = recorded[r.variant];
      /* The run's time and figure as the profile's: 2 * 4096^2 floats moved. */
      const ms = r.profile.totals.duration_ns / 1e6;
      Object.assign(r.timing, { median_ms: ms, samples_ms: r.timing.samples_ms.map(() => ms) });
      r.figure = (2 * 4096 * 4096 * 4) / r.profile.totals.duration_ns;
      delete r.speedup_range;
      r.speedup = recorded.naive.totals.duration_ns / r.profile.totals.duration_ns;
    }
    const route = new RegExp(`/v1/jobs/${profiledId}$`);
    await page.route(route, (r) => r.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(real) }));
    await page.goto(`${proc.base}/#/`);
    await page.goto(`${proc.base}/#/jobs/${profiledId}`);
    await page.waitForSelector('#why-table tbody tr', { timeout: TIMEOUT });
    const cells = await page.$$eval('#why-table tbody tr', (rows) => rows.map((tr) => Object.assign({ variant: tr.dataset.variant, kernel: tr.dataset.kernel },
      Object.fromEntries([...tr.querySelectorAll('td[data-metric]')].map((td) => [td.dataset.metric, td.innerText.trim()])))));
    checkEq(cells.map((c) => `${c.variant}:${c.kernel}`), ['naive:transpose_naive_kernel', 'shared32:transpose_tiled_kernel<32>',
      'padded33:transpose_tiled_kernel<33>', 'copy:copy_kernel', 'best:transpose_tiled_kernel<33>', 'best:best_pick_kernel'],
    'a row per kernel of each run');
    const naive = cells[0];
    checkEq([naive.global_load_sectors_per_request, naive.global_store_sectors_per_request], ['4', '32'], 'naive: sectors per request');
    checkEq([naive.achieved_occupancy_pct, naive.theoretical_occupancy_pct], ['55.7', '100\nwarps'], 'naive: occupancy and its limiter');
    checkEq(naive.dram_bytes, '114 MiB', 'naive: DRAM bytes read + written (119.6 MB)');
    checkEq([cells[1].shared_load_bank_conflicts, cells[2].shared_load_bank_conflicts], ['16.3 M', '0'], 'bank conflicts: shared32, padded33');
    checkEq(cells[1].global_store_sectors_per_request, '4', 'shared32: its stores coalesced');
    checkEq(cells[3].l2_hit_pct, '—', 'a null value');
    const titles = await page.$$eval('#why-table thead th[data-metric]', (ths) => Object.fromEntries(ths.map((t) => [t.dataset.metric, t.title])));
    checkEq(titles.global_store_sectors_per_request, `${NV.global_store_sectors} / ${NV.global_store_requests}`, 'the store column\'s metric');
    checkEq(titles.shared_load_bank_conflicts, NV.shared_load_bank_conflicts, 'the bank conflicts\' metric');
    checkEq(titles.dram_bytes, `${NV.dram_bytes_read} + ${NV.dram_bytes_written}`, 'DRAM bytes\' metrics');
    check(/locked to base/.test(await text(page, '#why-conditions')), `the conditions: ${await text(page, '#why-conditions')}`);
    checkEq(await page.locator('#why .profile-off').count(), 0, 'an unavailable line beside a profile');
    /* The roofline: a point per run, the two roofs at the device's ceilings. */
    await page.waitForFunction(() => window.Chart.getChart(document.querySelector('#roofline-chart')), null, { timeout: TIMEOUT });
    const roof = await page.$eval('#roofline-chart', (c) => {
      const ch = window.Chart.getChart(c);
      return { types: [ch.options.scales.x.type, ch.options.scales.y.type], labels: ch.data.datasets.map((d) => d.label),
        points: JSON.parse(c.dataset.points), drawn: ch.data.datasets[2].data.length, ridge: ch.data.datasets[1].data[0] };
    });
    checkEq(roof.types, ['logarithmic', 'logarithmic'], 'log-log');
    checkEq(roof.points.map((p) => p.variant), ['naive', 'shared32', 'padded33', 'copy', 'best'], 'a point per run');
    checkEq(roof.drawn, 5, 'points drawn');
    check(roof.points.every((p) => p.zero), 'transposes have no FP32 work: at the left edge');
    const y = Object.fromEntries(roof.points.map((p) => [p.variant, p.y]));
    check(y.naive < y.shared32 && y.shared32 < y.padded33 && y.padded33 < y.copy, `by bandwidth: ${JSON.stringify(y)}`);
    check(Math.abs(roof.ridge.x - SGEMM_GFLOPS / COPY_GBPS) < 1e-9 && Math.abs(roof.ridge.y - SGEMM_GFLOPS) < 1e-6, `the ridge ${JSON.stringify(roof.ridge)}`);
    check(roof.labels[0].includes('4,100 GB/s') && roof.labels[1].includes('51,000 GFLOP/s'), `the roofs: ${roof.labels}`);
    await page.locator('#why').screenshot({ path: path.join(ARTIFACTS, 'job-profile.png') });
    log(`     screenshot: ${path.join(ARTIFACTS, 'job-profile.png')}`);
    await page.unroute(route);
  });

  await step('a kernel\'s compiler view: its occupancy, its PTX from NVRTC, and the SASS unavailable with the reason', page, async () => {
    await page.goto(`${proc.base}/#/kernels`);
    await page.waitForSelector('#kernel-form', { timeout: TIMEOUT });
    const sigs = (await (await fetch(`${proc.base}/v1/kernels/signatures`)).json()).signatures;
    const dialogs = [];
    const yes = (d) => { dialogs.push(d.message()); d.accept(); };
    page.on('dialog', yes);
    await page.selectOption('#kernel-experiment', 'transpose');
    await page.fill('#kernel-scratch', '');
    await setKernelSource(page, sigs.find((x) => x.experiment === 'transpose').template);
    page.off('dialog', yes);
    await page.fill('#kernel-name', 'browser_ptx');
    await page.click('#kernel-compile');
    await page.waitForSelector('#compile-ok', { timeout: TIMEOUT });
    const k = (await (await fetch(`${proc.base}/v1/kernels`)).json()).kernels.find((x) => x.name === 'browser_ptx');
    const occ = (await (await fetch(`${proc.base}/v1/kernels/${k.id}`)).json()).compile.occupancy;
    const said = await text(page, '#kernel-occupancy');
    check(said.includes(`${occ.blocks_per_sm} blocks/SM, ${occ.warps_per_sm} of ${occ.max_warps_per_sm} warps/SM`) &&
      said.includes(`limited by ${occ.limiter}`), `occupancy: ${said} (API: ${JSON.stringify(occ)})`);
    await page.click('#kernel-ptx-tab');
    await page.waitForSelector('#kernel-asm[data-kind="ptx"]', { timeout: TIMEOUT });
    const ptx = await page.$eval('#kernel-asm', (x) => x.textContent);
    checkEq(ptx, await (await fetch(`${proc.base}/v1/kernels/${k.id}/versions/1/ptx`)).text(), 'the PTX as gpulabd serves it');
    check(/\.visible \.entry kernel\(/.test(ptx) && /\.target sm_\d+/.test(ptx), `PTX: ${ptx.slice(0, 200)}`);
    const box = await page.$eval('#kernel-asm', (x) => ({ h: x.clientHeight, sh: x.scrollHeight, overflow: getComputedStyle(x).overflowY }));
    check(box.overflow === 'auto' && box.h <= 32 * 14 + 20, `the PTX scrolls in its box: ${JSON.stringify(box)}`);
    await page.locator('#compiler-panel').screenshot({ path: path.join(ARTIFACTS, 'kernel-ptx.png') });
    log(`     screenshot: ${path.join(ARTIFACTS, 'kernel-ptx.png')}`);
    await page.click('#kernel-sass-tab');
    await page.waitForSelector('#kernel-asm-error[data-kind="sass"]', { timeout: TIMEOUT });
    const sass = await (await fetch(`${proc.base}/v1/kernels/${k.id}/versions/1/sass`)).json();
    checkEq(await text(page, '#kernel-asm-error'), `SASS unavailable (503): ${sass.detail}`, 'the SASS\'s 503, said');
    await page.locator('#compiler-panel').screenshot({ path: path.join(ARTIFACTS, 'kernel-sass.png') });
    log(`     screenshot: ${path.join(ARTIFACTS, 'kernel-sass.png')}`);
    /* The same from its versions' list. */
    await page.click(`#kernel-list tr[data-kernel-id="${k.id}"] button.show-versions`);
    await page.waitForSelector('#kernel-versions-table tbody tr[data-version="1"]', { timeout: TIMEOUT });
    await page.click('#kernel-versions-table tr[data-version="1"] button.asm');
    await page.click('#kernel-ptx-tab');
    await page.waitForSelector('#kernel-asm[data-kind="ptx"]', { timeout: TIMEOUT });
  });

  /* Replaces the problem editor's text as a person would: select all, type. */
  async function setProblemSource(src) {
    await page.click('#problem-editor .CodeMirror-lines');
    await page.keyboard.press('Control+A');
    await page.keyboard.insertText(src);
    checkEq(await page.evaluate(() => GL.problemsView.editor().get()), src, 'the definition as typed');
  }

  await step('problems: a bad definition\'s error beside the editor; the example defined from the form, opened, listed, deleted by its owner', page, async () => {
    if (!(await page.isVisible('#nav-problems'))) await openDashboard(page, proc); /* this step alone (GPULAB_BROWSER_ONLY) */
    await page.click('#nav-problems');
    await page.waitForSelector('#problem-form[data-editor="codemirror"]', { timeout: TIMEOUT });
    checkEq(await page.getAttribute('#problem-form', 'data-mode'), 'javascript', 'CodeMirror in JSON mode');
    const example = JSON.parse(await page.evaluate(() => GL.problemsView.editor().get()));
    checkEq(example.name, 'softmax_rows', 'the example');
    check(await page.isVisible('#problem-editor .cm-property'), 'JSON highlighting');
    /* A reference that does not compile: the compiler's line next to the editor. */
    const bad = Object.assign({}, example, { name: 'browser_bad' });
    bad.reference = Object.assign({}, example.reference, { source: example.reference.source.replace('int r = blockIdx.x;', 'int r = blockIdx.x +;') });
    await setProblemSource(JSON.stringify(bad, null, 2));
    await page.click('#problem-define');
    await page.waitForSelector('#problem-error:not([hidden]) #problem-compile-line', { timeout: TIMEOUT });
    const said = await text(page, '#problem-error p');
    check(/^compile_failed at reference\.source: line 2/.test(said), `the refusal: ${said}`);
    const line = await page.$eval('#problem-compile-line', (x) => x.textContent);
    check(line.startsWith('browser_bad.cu(2): error: expected an expression\n') && line.includes('int r = blockIdx.x +;') && line.endsWith('^'),
      `the compiler's line: ${line}`);
    await shot(page, 'problem-error.png');
    /* A refusal before compiling: its field and detail. */
    await setProblemSource(JSON.stringify(Object.assign({}, example, { name: 'browser_bad', params: {} }), null, 2));
    await page.click('#problem-define');
    await page.waitForFunction(() => /out_of_range at params/.test((document.querySelector('#problem-error p') || {}).textContent || ''),
      null, { timeout: TIMEOUT });
    checkEq(await page.locator('#problem-compile-line').count(), 0, 'no compile line for a 400');
    /* The example, under a name of its own. */
    await page.click('#problem-example');
    const good = Object.assign({}, example, { name: 'browser_softmax' });
    await setProblemSource(JSON.stringify(good, null, 2));
    await page.click('#problem-define');
    await page.waitForSelector('#problem-page[data-problem="browser_softmax"]', { timeout: TIMEOUT });
    checkEq(await page.evaluate(() => location.hash), '#/problems/browser_softmax', 'the new problem\'s page');
    const stored = await (await fetch(`${proc.base}/v1/problems/browser_softmax`)).json();
    checkEq(await page.$$eval('#problem-params tbody tr', (rs) => rs.map((r) => r.innerText.split('\t').map((x) => x.trim()).join(' '))),
      ['rows 4,096 1..65,536', 'cols 1,024 1..16,384'], 'params with their ranges');
    checkEq(await page.$$eval('#problem-buffers tbody tr', (rs) => rs.map((r) => r.innerText.split('\t').map((x) => x.trim()).join(' | '))),
      ['x | input | float32 | [rows][cols] | uniform in [-4, 4]', 'y | output | float32 | [rows][cols] | tolerance: |got − want| ≤ 1e-6 + 1e-4 · |want|'],
      'inputs and outputs');
    checkEq(await text(page, '#problem-signature'), stored.signature, 'the signature');
    checkEq(await page.$eval('#problem-template', (x) => x.textContent), stored.template, 'the template');
    check(/occupancy at the defaults: \d+ blocks\/SM/.test(await text(page, '#problem-compile')), `compile: ${await text(page, '#problem-compile')}`);
    checkEq(await page.locator('#problem-versions tbody tr').count(), 1, 'its versions');
    check(/^Jobs of problems do not exist yet/.test(await text(page, '#problem-no-jobs')), 'the line on jobs');
    check(await page.isVisible('#problem-delete'), 'delete for its owner');
    await shot(page, 'problem.png');
    await page.click('#problem-page a.back');
    await page.waitForSelector('#problem-list tr[data-problem="browser_softmax"]', { timeout: TIMEOUT });
    await shot(page, 'problems.png');
    await page.click('#problem-list tr[data-problem="browser_softmax"] a');
    await page.waitForSelector('#problem-page[data-problem="browser_softmax"]', { timeout: TIMEOUT });
    page.once('dialog', (d) => d.accept());
    await page.click('#problem-delete');
    await page.waitForFunction(() => location.hash === '#/problems' && /browser_softmax deleted/.test(document.getElementById('problem-list-status').textContent),
      null, { timeout: TIMEOUT });
    await page.waitForSelector('#problem-list tr[data-problem="browser_softmax"]', { state: 'detached', timeout: TIMEOUT });
    checkEq((await fetch(`${proc.base}/v1/problems/browser_softmax`)).status, 404, 'gone from GET /problems/{name}');
    checkEq((await fetch(`${proc.base}/v1/problems/browser_softmax/versions/1`)).status, 200, 'its version still readable');
  });

  await step('a narrow window (420 px): nothing but a table\'s or the editor\'s own scroller is wider than it', page, async () => {
    await page.setViewportSize({ width: 420, height: 800 });
    const views = [['#/', '#device-panel', 'narrow.png'], [`#/jobs/${transposeId}`, '#view-job table.runs', 'narrow-job.png'],
      ['#/kernels', '#kernel-form', 'narrow-kernels.png'], ['#/problems', '#problem-form', 'narrow-problems.png'],
      [`#/jobs/${profiledId}`, '#why', 'narrow-job-profile.png']];
    for (const [view, ready, png] of views) {
      await page.goto(`${proc.base}/${view}`);
      await page.waitForSelector(ready, { timeout: TIMEOUT });
      const wide = await page.evaluate(() => [...document.querySelectorAll('body *')]
        .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('.table-wrap') &&
          !(e.parentElement && e.parentElement.closest('.CodeMirror'))) /* the editor scrolls its own lines */
        .slice(0, 5).map((e) => `${e.tagName.toLowerCase()}#${e.id}.${e.className}`));
      checkEq(wide, [], `elements wider than 420 px on ${view}`);
      /* The header: its parts wrap onto lines of their own, none cut off. */
      const head = await page.$eval('header.top', (hd) => ({ width: hd.scrollWidth, parts: [...hd.children]
        .filter((c) => !c.hidden && getComputedStyle(c).display !== 'none').map((c) => c.getBoundingClientRect().right) }));
      check(head.width <= 420 && head.parts.every((r) => r <= 420), `the header at 420 px: ${JSON.stringify(head)}`);
      await page.evaluate(() => window.scrollTo(0, 0));
      await shot(page, png);
    }
    await page.setViewportSize({ width: 1360, height: 900 });
  });

  await step('no console errors or CSP violations on the way', page, async () => {
    checkEq(errors, [], 'console errors');
  });

  await step('every API call of the page goes to /v1/ (the page and its files stay at / and /static/)', page, async () => {
    const api = paths.filter((p) => p !== '/' && !p.startsWith('/static/'));
    const unversioned = [...new Set(api.filter((p) => !p.startsWith('/v1/')))];
    check(api.length > 10 && api.some((p) => p === '/v1/events') && api.some((p) => /^\/v1\/jobs\/\d+$/.test(p)),
      `the page's API calls were seen (${api.length}: ${[...new Set(api)].slice(0, 8).join(', ')})`);
    checkEq(unversioned, [], 'API calls outside /v1/');
  });
  await page.close();
}

/* ---- the dashboard without Chart.js and CodeMirror: the same tables, no charts, a
 * plain kernel editor ---- */

async function withoutCharts(context, proc) {
  const page = await context.newPage();
  const errors = watchErrors(page, /404|422|chart\.min\.js|codemirror/i); /* 422: the compile error this test provokes */
  await step('without Chart.js (--chartjs at a missing file) the page works with tables', page, async () => {
    await openDashboard(page, proc);
    check(await page.isVisible('#charts-off'), 'no charts-off notice');
    await submitForm(page, 'transpose', { m: 33, n: 47, warmup: 1, batches: 2, reps: 1 });
    const id = await submittedId(page, 'transpose');
    await waitQueueState(page, id, 'done');
    await openJob(page, id);
    const rows = await runsTable(page);
    checkEq(rows.slice(0, 4).map((r) => r.variant), ['naive', 'shared32', 'padded33', 'copy'], 'variants');
    check(rows.every((r) => r.cells.length === 1 || r.cells[4].startsWith('✓')), 'a check did not pass');
    checkEq(await page.locator('#view-job canvas').count(), 0, 'canvases without Chart.js');
    await shot(page, 'job-tables-only.png');
    checkEq(errors, [], 'console errors');
  });
  await step('the queue and the history say they are loading until their first listings come, not that there is nothing', page, async () => {
    const slow = await page.context().newPage();
    let release;
    const held = new Promise((r) => { release = r; });
    await slow.route(/\/v1\/jobs\?/, async (route) => { await held; await route.continue(); });
    await slow.goto(`${proc.base}/`);
    await slow.waitForSelector('#queue-loading', { state: 'visible', timeout: TIMEOUT });
    check(await slow.isHidden('#queue-empty'), '"No jobs yet" before the first listing');
    check(await slow.isHidden('#queue-active-head') && await slow.isHidden('#queue-finished-head'), 'the queue\'s empty parts\' headings');
    check(await slow.isVisible('#history-loading') && await slow.isHidden('#history-empty'), 'the history: loading, not empty');
    await shot(slow, 'queue-loading.png');
    release();
    await slow.waitForSelector('#queue-finished tr', { timeout: TIMEOUT }); /* the transpose above */
    check(await slow.isHidden('#queue-loading') && await slow.isHidden('#queue-empty'), 'loading or empty beside the jobs');
    await slow.waitForSelector('#history-table tbody tr', { timeout: TIMEOUT });
    check(await slow.isHidden('#history-loading') && await slow.isHidden('#history-empty'), 'the history: loading or empty beside its runs');
    await slow.close();
  });
  await step('without CodeMirror (--codemirror at a missing directory) the kernel editor is a textarea, its errors marked in the source below it', page, async () => {
    await page.goto(`${proc.base}/#/kernels`);
    await page.waitForSelector('#kernel-form[data-editor="textarea"]', { timeout: TIMEOUT });
    checkEq(await page.locator('.CodeMirror').count(), 0, 'CodeMirror elements');
    check(await page.isVisible('#editor-plain'), 'no word that the editor is plain');
    check(/extern "C" __global__ void kernel/.test(await page.inputValue('#kernel-source')), 'the template');
    await setKernelSource(page, 'extern "C" __global__ void kernel(const float* a, float* b, int m, int n) {\n' +
      '  int x = threadIdx.x;\n  b[x] = a[x] +;\n}\n');
    await page.click('#kernel-compile');
    await page.waitForSelector('#compile-error li', { timeout: TIMEOUT });
    checkEq(await page.$$eval('#compile-error li', (li) => li.map((x) => x.innerText)), ['line 3: expected an expression'], 'the error');
    check(await page.isVisible('#kernel-src-view .src-line.err-line[data-line="3"]'), 'line 3 is not marked');
    checkEq(await page.evaluate(() => GL.kernelsView.editor().marked()), [3], 'the marked lines');
    await shot(page, 'kernel-textarea.png');
    checkEq(errors.filter((e) => !/codemirror/i.test(e)), [], 'console errors');
  });
  await page.close();
}

/* ---- a gpulabd with --tokens: the page asks for one, then works with it ---- */

const TOKEN = 'lab-token-0123456789abcdef';

async function withTokens(context, proc) {
  const page = await context.newPage();
  await step('with --tokens the page asks for a token, then lists the device and runs jobs', page, async () => {
    await page.goto(`${proc.base}/`);
    await page.waitForSelector('#token-form:not([hidden])', { timeout: 30000 });
    await page.fill('#token', TOKEN);
    await Promise.all([page.waitForNavigation(), page.click('#token-form button')]);
    await page.waitForSelector('#device dd[data-key="backend"]', { timeout: 30000 });
    checkEq(await text(page, '#device dd[data-key="backend"]'), 'cpu', 'device backend');
    check(await page.isHidden('#token-form'), 'the token form stayed');
    await page.waitForFunction(() => document.getElementById('conn').dataset.state === 'live', null,
      { timeout: 30000 });
    await submitForm(page, 'transpose', { m: 33, n: 47, warmup: 1, batches: 2, reps: 1 });
    const id = await submittedId(page, 'transpose');
    await waitQueueState(page, id, 'done'); /* the live queue: the token went with the stream */
    await shot(page, 'dashboard-token.png');
    await page.evaluate(() => localStorage.removeItem('gpulab.token'));
  });
  await page.close();
}

async function main() {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpulab-chromium-'));
  let a, b, c, context;
  const tokens = path.join(userDataDir, 'tokens');
  fs.writeFileSync(tokens, `${TOKEN} lab\n`);
  try {
    a = await startGpulabd([]);
    b = await startGpulabd(['--chartjs', '/nonexistent/chart.min.js', '--codemirror', '/nonexistent/codemirror']);
    c = await startGpulabd(['--tokens', tokens]);
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS,
      viewport: { width: 1360, height: 900 }, deviceScaleFactor: 1, timeout: 60000,
    });
    context.setDefaultTimeout(TIMEOUT);
    await withCharts(context, a);
    await withoutCharts(context, b);
    await withTokens(context, c);
  } catch (e) {
    if (!failed) { failed++; log(`FAIL ${e.stack || e}`); }
    if (a) log(`gpulabd (charts) log:\n${a.log()}`);
  } finally {
    if (context) await context.close().catch(() => {});
    await stopGpulabd(a);
    await stopGpulabd(b);
    await stopGpulabd(c);
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
  log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main();

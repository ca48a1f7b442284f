'use strict';
/* The dashboard test's harness (tests/browser/dashboard.test.js and its steps' files):
 * Chromium and playwright-core found or the test fails at once, gpulabd started and
 * stopped, jobs posted and waited for, the steps' runner and their checks, screenshots,
 * the page's helpers, and the recorded profiles the why table is checked with. */
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

/* Steps passed and failed so far (step counts them, main reports them). */
const counts = { passed: 0, failed: 0 };

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
    counts.passed++;
    log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    counts.failed++;
    log(`FAIL ${name}: ${e.stack || e}`);
    if (page) await page.screenshot({ path: path.join(ARTIFACTS, `failure-${counts.passed + counts.failed}.png`), fullPage: true }).catch(() => {});
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

/* Replaces the problem editor's text as a person would: select all, type. */
async function setProblemSource(page, src) {
  await page.click('#problem-editor .CodeMirror-lines');
  await page.keyboard.press('Control+A');
  await page.keyboard.insertText(src);
  checkEq(await page.evaluate(() => GL.problemsView.editor().get()), src, 'the definition as typed');
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

module.exports = {
  ARTIFACTS,
  CHARTJS,
  CHROMIUM,
  CHROMIUM_ARGS,
  CODEMIRROR,
  COPY_GBPS,
  SGEMM_GFLOPS,
  GPULABD,
  NV,
  ONLY,
  REQ,
  TIMEOUT,
  UNITS,
  barChart,
  check,
  checkEq,
  counts,
  fs,
  kernelSource,
  log,
  openDashboard,
  openJob,
  os,
  path,
  postJob,
  profileKernel,
  recordedProfiles,
  runProfile,
  runsTable,
  setKernelSource,
  setProblemSource,
  shot,
  spawn,
  startGpulabd,
  step,
  stopGpulabd,
  submitForm,
  submittedId,
  text,
  waitDone,
  waitEnded,
  waitQueueState,
  watchErrors,
  get chromium() { return chromium; },
};

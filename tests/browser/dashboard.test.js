#!/usr/bin/env node
'use strict';
/* gpulab's dashboard, tested as a person would use it: starts gpulabd (CPU backend)
 * on a free port, opens the page in Debian's headless Chromium (driven by
 * playwright-core), submits jobs from the forms, watches them in the live queue,
 * opens them and checks the tables, charts and the pipeline's stream timeline, the
 * validation messages and the history; then the page without Chart.js. Screenshots
 * go to $GPULAB_ARTIFACTS (ctest: <build>/test-artifacts). The harness is harness.js;
 * the steps on users' kernels and problems are kernels.steps.js's, those on problems'
 * jobs problems.steps.js's, those of the other
 * gpulabd (no Chart.js, tokens) others.steps.js's.
 *   GPULABD=build/gpulabd node tests/browser/dashboard.test.js
 * GPULAB_BROWSER_ONLY=REGEX runs only the steps whose names match (a quicker loop
 * while editing the page; ctest runs them all).
 * Exits 0, or 1 on a failure (a missing Chromium, playwright-core, Chart.js or
 * CodeMirror too). */
const {
  ARTIFACTS, CHARTJS, CHROMIUM, CHROMIUM_ARGS, CODEMIRROR, COPY_GBPS, NV, SGEMM_GFLOPS,
  TIMEOUT, barChart, check, checkEq, chromium, counts, fs, log, openDashboard, openJob, os,
  path, postJob, recordedProfiles, runsTable, shot, startGpulabd, step, stopGpulabd,
  submitForm, submittedId, text, waitDone, waitEnded, waitQueueState, watchErrors
} = require('./harness');
const { kernelEditorSteps, kernelViewSteps } = require('./kernels.steps');
const { problemJobSteps } = require('./problems.steps');
const { withoutCharts, withTokens, TOKEN } = require('./others.steps');

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
      checkEq(r.cells[3], '—', `${r.variant}: % of limit on the CPU`);
      check(/×$/.test(r.cells[4]), `${r.variant}: speedup ${r.cells[4]}`);
      check(r.cells[5].startsWith('✓'), `${r.variant}: check ${r.cells[5]}`);
    }
    checkEq(rows[0].cells[4], '1×', 'first speedup');
    const head = await page.$$eval('#view-job table.runs thead th', (t) => t.map((x) => x.innerText.trim().toLowerCase()));
    checkEq(head.slice(0, 7), ['variant', 'median ms [quartiles]', 'gb/s', '% of ceiling', '% of limit', 'speedup vs naive', 'check'], 'table head');
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
      for (const r of body.result.runs) if (r.available) Object.assign(r, { ceiling: 'copy_gbps', percent_of_ceiling: 100 * r.figure / ceiling, percent_of_limit: 50 });
      body.result.limit = { bytes: 1 << 24, gbps: 2000, mode: 'batch' };
      await route.fulfill({ response: res, json: body });
    });
    await page.evaluate(() => GL.jobView.reload());
    await page.waitForFunction((c) => Math.abs(Number(document.querySelector('#bar-chart') && document.querySelector('#bar-chart').dataset.ceiling) - c) < 1e-6 * c, ceiling, { timeout: TIMEOUT });
    await page.waitForFunction(() => window.Chart.getChart(document.querySelector('#bar-chart')), null, { timeout: TIMEOUT });
    const rows = await runsTable(page);
    check(rows.every((r) => r.cells.length < 2 || /%$/.test(r.cells[2])), `% of ceiling shown: ${rows.map((r) => r.cells[2])}`);
    check(rows.every((r) => r.cells.length < 2 || r.cells[3] === '50 %'), `% of limit shown: ${rows.map((r) => r.cells[3])}`);
    checkEq(await page.$eval('#view-job table.runs thead th:nth-child(5)', (th) => th.title),
      'the limit at this size: a copy moving 2^24 bytes, 2,000 GB/s timed batch', 'the limit named');
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
    for (const r of rows.filter((x) => x.cells.length > 1)) check(r.cells[5].startsWith('✓'), `${r.variant}: check ${r.cells[5]}`);
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

  await kernelEditorSteps(page, proc);

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

  await kernelViewSteps(page, proc);
  const problemJobId = await problemJobSteps(page, proc);

  await step('a narrow window (420 px): nothing but a table\'s or the editor\'s own scroller is wider than it', page, async () => {
    await page.setViewportSize({ width: 420, height: 800 });
    const views = [['#/', '#device-panel', 'narrow.png'], [`#/jobs/${transposeId}`, '#view-job table.runs', 'narrow-job.png'],
      ['#/kernels', '#kernel-form', 'narrow-kernels.png'], ['#/problems', '#problem-form', 'narrow-problems.png'],
      [`#/jobs/${profiledId}`, '#why', 'narrow-job-profile.png']];
    if (problemJobId) /* the problems' jobs' steps ran (GPULAB_BROWSER_ONLY may leave them out) */
      views.push(['#/problems/browser_rows', '#problem-job-form', 'narrow-problem.png'],
        [`#/jobs/${problemJobId}`, '#view-job table.runs', 'narrow-problem-job.png']);
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
    if (!counts.failed) { counts.failed++; log(`FAIL ${e.stack || e}`); }
    if (a) log(`gpulabd (charts) log:\n${a.log()}`);
  } finally {
    if (context) await context.close().catch(() => {});
    await stopGpulabd(a);
    await stopGpulabd(b);
    await stopGpulabd(c);
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
  log(`${counts.passed} passed, ${counts.failed} failed`);
  process.exit(counts.failed ? 1 : 0);
}

main();

'use strict';
/* The dashboard test's other gpulabd: without Chart.js or CodeMirror (tables, a textarea,
 * loading states), and with --tokens (the page asks for one). */
const {
  TIMEOUT, check, checkEq, openDashboard, openJob, runsTable, setKernelSource, shot, step,
  submitForm, submittedId, text, waitQueueState, watchErrors
} = require('./harness');

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
    check(rows.every((r) => r.cells.length === 1 || r.cells[5].startsWith('✓')), 'a check did not pass');
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

module.exports = { withoutCharts, withTokens, TOKEN };

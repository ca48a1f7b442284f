'use strict';
/* The dashboard test's steps on problems' jobs (tests/browser/dashboard.test.js runs them
 * after kernels.steps.js's, on its page and CPU gpulabd): a problem defined from the
 * editor, a job of it run from its page's form (a refusal beside the form, then params
 * changed) landing on the job's page with its runs unavailable and why, its
 * leaderboard empty, and a kernel of it from the kernel editor offered in its form. */
const {
  TIMEOUT, check, checkEq, kernelSource, openDashboard, runsTable, setKernelSource, setProblemSource,
  shot, step, text, waitEnded
} = require('./harness');

const NAME = 'browser_rows';
const ROW_COPY = 'extern "C" __global__ void kernel(const float* x, float* y, int rows, int cols) {\n' +
  '  for (int c = threadIdx.x; c < cols; c += blockDim.x)\n' +
  '    y[(size_t)blockIdx.x * cols + c] = x[(size_t)blockIdx.x * cols + c];\n}\n';

/* The job page of the job the problem's form just queued (the page goes there itself). */
async function landOnJob(page, proc) {
  await page.waitForFunction(() => /^#\/jobs\/\d+$/.test(location.hash), null, { timeout: TIMEOUT });
  const id = Number((await page.evaluate(() => location.hash)).split('/')[2]);
  const job = await waitEnded(proc, id);
  await page.waitForSelector('#view-job table.runs tbody tr[data-variant="reference"]', { timeout: TIMEOUT });
  return { id, job };
}

/* Returns the id of the problem's job it ran (for the narrow window's step), or null. */
async function problemJobSteps(page, proc) {
  let jobId = null;
  await step('a problem\'s page runs a job of it from its form: a refusal beside the form, then params changed; the job\'s page says "problem", its params by name and why its runs are unavailable; the leaderboard is empty at that size', page, async () => {
    if (!(await page.isVisible('#nav-problems'))) await openDashboard(page, proc); /* this step alone (GPULAB_BROWSER_ONLY) */
    await page.click('#nav-problems');
    await page.waitForSelector('#problem-form', { timeout: TIMEOUT });
    const example = await page.evaluate(() => GL.problemExample);
    await setProblemSource(page, JSON.stringify(Object.assign({}, example, { name: NAME }), null, 2));
    await page.click('#problem-define');
    await page.waitForSelector(`#problem-page[data-problem="${NAME}"] ~ .problem-run #problem-job-form`, { timeout: TIMEOUT });
    /* One input per param, its range and default from the definition. */
    const inputs = await page.$$eval('#problem-job-form input[name^="param-"]', (xs) => xs.map((x) =>
      [x.name, x.type, x.min, x.max, x.value]));
    checkEq(inputs, [['param-rows', 'number', '1', '65536', '4096'], ['param-cols', 'number', '1', '16384', '1024']], 'the params\' inputs');
    checkEq(await page.$$eval('#problem-job-runs input', (xs) => xs.map((x) => [x.value, x.checked])), [['reference', true]], 'the runs offered');
    await page.waitForFunction(() => /No kernels of it yet/.test(document.getElementById('problem-job-kernels').textContent), null, { timeout: TIMEOUT });
    /* The leaderboard at the defaults: nothing ran there. */
    await page.waitForFunction(() => /rows 4096, cols 1024 · version 1/.test(document.getElementById('problem-board-size').textContent),
      null, { timeout: TIMEOUT });
    check(await page.isVisible('#problem-board-empty'), 'the leaderboard\'s empty state');
    checkEq(await text(page, '#problem-board-empty'), 'No runs yet at this size.', 'its words');
    checkEq(await page.locator('#problem-leaderboard tbody tr').count(), 0, 'no rows');
    /* A param out of range: the API's refusal beside the form, its field marked, no job. */
    await page.fill('#f-problem-param-rows', '0');
    await page.click('#problem-job-run');
    await page.waitForSelector('#problem-job-error:not([hidden])', { timeout: TIMEOUT });
    check(/^out_of_range at params\.rows: /.test(await text(page, '#problem-job-error p')), `the refusal: ${await text(page, '#problem-job-error p')}`);
    check(await page.$eval('[data-field="param-rows"]', (x) => x.classList.contains('invalid')), 'rows marked');
    checkEq(await page.$eval('#problem-job-error', (x) => x.innerText.trim()), await text(page, '#problem-job-error p'), 'the refusal alone');
    checkEq(await page.evaluate(() => location.hash), `#/problems/${NAME}`, 'still on the problem\'s page');
    await shot(page, 'problem-job-refused.png');
    /* Params changed: the refusal goes, the leaderboard follows them, the job runs at them. */
    await page.fill('#f-problem-param-rows', '64');
    check(await page.isHidden('#problem-job-error') && !(await page.$eval('[data-field="param-rows"]', (x) => x.classList.contains('invalid'))),
      'the refusal cleared by an edit of its field');
    await page.fill('#f-problem-param-cols', '100');
    await page.fill('#f-problem-seed', '7');
    await page.waitForFunction(() => /rows 64, cols 100/.test(document.getElementById('problem-board-size').textContent), null, { timeout: TIMEOUT });
    check(await page.isVisible('#problem-board-empty'), 'empty at 64 × 100');
    const board = await (await fetch(`${proc.base}/v1/leaderboard/problem:${NAME}?size=64,100`)).json();
    checkEq(board.rows, [], 'the API\'s leaderboard at 64 × 100');
    await shot(page, 'problem-run.png');
    await page.click('#problem-job-run');
    const { id, job } = await landOnJob(page, proc);
    jobId = id;
    checkEq([job.type, job.params.rows, job.params.cols, job.params.seed, job.params.variant, job.params.problem, job.output],
      ['problem', 64, 100, 7, ['reference'], { name: NAME, version: 1 }, null], 'the job as gpulabd ran it');
    checkEq(await text(page, '#view-job h2'), `Job #${id} · problem ${NAME} v1 rows 64, cols 100`, 'the job\'s title');
    const rows = await runsTable(page);
    checkEq(rows.map((r) => r.variant), ['reference'], 'its runs');
    checkEq(rows[0].cells[0], `not available: ${job.result.runs[0].reason}`, 'the reason');
    check(/CUDA device/.test(rows[0].cells[0]), `the reason: ${rows[0].cells[0]}`);
    checkEq(await page.$$eval('#job-params [data-param]', (xs) => xs.slice(0, 2).map((x) => x.innerText.replace(/\s+/g, ' '))),
      ['rows 64', 'cols 100'], 'its params by name, first');
    checkEq(await text(page, '#job-problem'), `${NAME} version 1`, 'its problem, a link');
    checkEq(await page.locator('#view-job dt:text-is("output buffer")').count(), 0, 'no output');
    checkEq(await page.locator('#view-job #bar-chart').count(), 0, 'no bars where nothing ran');
    await shot(page, 'problem-job.png');
    /* In the live queue: its type and size. */
    await page.click('#view-job a.back');
    await page.waitForSelector(`#queue tr[data-job-id="${id}"]`, { timeout: TIMEOUT });
    checkEq(await text(page, `#queue tr[data-job-id="${id}"] td.type`), `problem ${NAME} v1`, 'the queue\'s type');
    checkEq(await text(page, `#queue tr[data-job-id="${id}"] td.size`), 'rows 64, cols 100', 'the queue\'s size');
    await page.waitForSelector(`#queue tr[data-job-id="${id}"] td.result:has-text("no run available here")`, { timeout: TIMEOUT });
  });

  await step('a kernel of a problem from the kernel editor: the problem offered beside the experiments, its template loaded, its grid as expressions; then offered in the problem\'s job form and run', page, async () => {
    if (!(await page.isVisible('#nav-kernels'))) await openDashboard(page, proc);
    await page.click('#nav-kernels');
    const value = `problem:${NAME}`;
    await page.waitForSelector(`#kernel-experiment option[value="${value}"]`, { state: 'attached', timeout: TIMEOUT });
    checkEq(await page.$eval(`#kernel-experiment option[value="${value}"]`, (o) => o.textContent), `problem: ${NAME}`, 'the option');
    const stored = await (await fetch(`${proc.base}/v1/problems/${NAME}`)).json();
    const dialogs = [];
    const yes = (d) => { dialogs.push(d.message()); d.accept(); };
    page.on('dialog', yes); /* whatever an earlier step left edited */
    await page.selectOption('#kernel-experiment', value);
    await page.waitForFunction((t) => GL.kernelsView.editor().get() === t, stored.template, { timeout: TIMEOUT });
    /* Edited, then another pick asks first; "no" keeps the edits and the problem. */
    page.off('dialog', yes);
    await setKernelSource(page, ROW_COPY);
    page.once('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
    await page.selectOption('#kernel-experiment', 'transpose');
    check(/Replace the source you edited with the transpose template/.test(dialogs[dialogs.length - 1] || ''), `the question: ${dialogs[dialogs.length - 1]}`);
    checkEq([await page.inputValue('#kernel-experiment'), await kernelSource(page)], [value, ROW_COPY], 'the problem and the edits after "no"');
    checkEq(await text(page, '#kernel-signature'), stored.signature, 'the problem\'s signature');
    check(await page.isVisible('#kernel-grid') && await page.isHidden('#kernel-tile') && await page.isHidden('#kernel-scratch'),
      'grid shown; tile and scratch hidden');
    check(/block and grid default to its reference's \[256, 1, 1\] and \[rows, 1, 1\]/.test(await text(page, '#kernel-grid-rule')),
      `the rule: ${await text(page, '#kernel-grid-rule')}`);
    await page.fill('#kernel-name', 'browser_rowcopy');
    await page.fill('#kernel-grid', 'max(rows, 1), 1');
    await page.click('#kernel-compile');
    await page.waitForSelector('#compile-ok', { timeout: TIMEOUT });
    const k = (await (await fetch(`${proc.base}/v1/kernels`)).json()).kernels.find((x) => x.name === 'browser_rowcopy');
    check(k, 'the kernel is stored');
    checkEq([k.experiment, k.problem, k.grid[0], k.block], [value, NAME, 'max(rows, 1)', [256, 1, 1]], 'stored as a kernel of the problem');
    await page.waitForSelector(`#kernel-list tr[data-kernel-id="${k.id}"]`, { timeout: TIMEOUT });
    checkEq(await text(page, `#kernel-list tr[data-kernel-id="${k.id}"] td:nth-child(3)`), value, 'listed with its problem');
    await shot(page, 'kernel-problem.png');
    /* Offered in the problem's job form, and run beside the reference. */
    await page.goto(`${proc.base}/#/problems/${NAME}`);
    await page.waitForSelector(`#problem-job-runs label[data-kernel-id="${k.id}"] input`, { timeout: TIMEOUT });
    checkEq(await page.$$eval('#problem-job-runs input', (xs) => xs.map((x) => x.value)), ['reference', k.variant], 'the runs offered');
    await page.check(`#problem-job-runs label[data-kernel-id="${k.id}"] input`);
    await page.fill('#f-problem-param-rows', '33');
    await page.click('#problem-job-run');
    const { job } = await landOnJob(page, proc);
    checkEq(job.params.variant, ['reference', `${k.variant}@1`], 'the job\'s runs');
    const rows = await runsTable(page);
    checkEq(rows.map((r) => r.variant), ['reference', `${k.variant}@1`], 'its runs on the page');
    check(rows[1].cells[0].startsWith('browser_rowcopy: not available: '), `the kernel's row: ${rows[1].cells[0]}`);
  });
  return jobId;
}

module.exports = { problemJobSteps };

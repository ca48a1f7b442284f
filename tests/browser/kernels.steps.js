'use strict';
/* The dashboard test's steps on users' kernels and problems (tests/browser/dashboard.test.js
 * runs them in order on its page and gpulabd): the editor, its compile errors and
 * templates, refused state and scratch, a kernel compiled, run and ranked, its versions,
 * then its compiler's view and a problem defined from the form. */
const {
  ARTIFACTS, TIMEOUT, check, checkEq, kernelSource, log, openDashboard, path, runsTable,
  setKernelSource, setProblemSource, shot, step, text, waitDone
} = require('./harness');

/* The editor, compiling, running, ranking and versions. */
async function kernelEditorSteps(page, proc) {
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
}

/* A kernel's compiler view (occupancy, PTX, SASS), and problems. */
async function kernelViewSteps(page, proc) {
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
    await setProblemSource(page, JSON.stringify(bad, null, 2));
    await page.click('#problem-define');
    await page.waitForSelector('#problem-error:not([hidden]) #problem-compile-line', { timeout: TIMEOUT });
    const said = await text(page, '#problem-error p');
    check(/^compile_failed at reference\.source: line 2/.test(said), `the refusal: ${said}`);
    const line = await page.$eval('#problem-compile-line', (x) => x.textContent);
    check(line.startsWith('browser_bad.cu(2): error: expected an expression\n') && line.includes('int r = blockIdx.x +;') && line.endsWith('^'),
      `the compiler's line: ${line}`);
    await shot(page, 'problem-error.png');
    /* A refusal before compiling: its field and detail. */
    await setProblemSource(page, JSON.stringify(Object.assign({}, example, { name: 'browser_bad', params: {} }), null, 2));
    await page.click('#problem-define');
    await page.waitForFunction(() => /out_of_range at params/.test((document.querySelector('#problem-error p') || {}).textContent || ''),
      null, { timeout: TIMEOUT });
    checkEq(await page.locator('#problem-compile-line').count(), 0, 'no compile line for a 400');
    /* The example, under a name of its own. */
    await page.click('#problem-example');
    const good = Object.assign({}, example, { name: 'browser_softmax' });
    await setProblemSource(page, JSON.stringify(good, null, 2));
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
    check(await page.isVisible('#problem-job-form') && await page.isVisible('#problem-leaderboard'), 'its job form and leaderboard');
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
}

module.exports = { kernelEditorSteps, kernelViewSteps };

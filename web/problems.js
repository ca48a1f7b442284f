'use strict';
/* The problems pages: #/problems lists the problems you may see (GET /problems) and
 * defines one from a JSON editor (POST /problems, the API's refusal shown beside it);
 * #/problems/NAME (and .../versions/N) shows one readably: a form to run a job of it
 * (POST /problems/{name}/jobs), its leaderboard at the form's params (GET
 * /leaderboard/problem:NAME), params, buffers, reference, figure, signature, template,
 * versions, and delete for its owner (docs/problems.md). */
(function () {
  const { h, clear } = GL;
  /* The view's two parts, made once: the list with the form (kept, edits and all,
   * while a problem's page is shown), and a problem's page. */
  function part(which) {
    const root = document.getElementById('view-problems');
    if (!root.childElementCount) root.append(h('div', { id: 'problems-home' }), h('div', { id: 'problem-one', hidden: true }));
    document.getElementById('problems-home').hidden = which !== 'home';
    document.getElementById('problem-one').hidden = which !== 'one';
    return document.getElementById(which === 'home' ? 'problems-home' : 'problem-one');
  }

  /* The softmax of docs/problems.md: a definition that works as it is. */
  const EXAMPLE = {
    name: 'softmax_rows', public: true, description: 'softmax of each row',
    params: { rows: { default: 4096, min: 1, max: 65536 }, cols: { default: 1024, min: 1, max: 16384 } },
    inputs: [{ name: 'x', dtype: 'float32', shape: ['rows', 'cols'], init: { uniform: [-4, 4] } }],
    outputs: [{ name: 'y', dtype: 'float32', shape: ['rows', 'cols'], tolerance: { abs: 1e-6, rel: 1e-4 } }],
    reference: {
      source: 'extern "C" __global__ void kernel(const float* x, float* y, int rows, int cols) {\n' +
        '  int r = blockIdx.x;\n  if (r >= rows) return;\n  const float* in = x + (size_t)r * cols;\n' +
        '  float m = -3.4e38f, s = 0.f;\n  for (int c = 0; c < cols; c++) m = fmaxf(m, in[c]);\n' +
        '  for (int c = 0; c < cols; c++) s += expf(in[c] - m);\n' +
        '  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[(size_t)r * cols + c] = expf(in[c] - m) / s;\n}\n',
      block: [256, 1, 1], grid: ['rows', 1, 1],
    },
    figure: { bytes: '8 * rows * cols' },
  };
  GL.problemExample = EXAMPLE;

  const JOBS = 'A problem runs from its page: its reference and your kernels of it, each checked against the ' +
    'reference on every element, timed and ranked on its leaderboard. They run on a CUDA device; the CPU backend ' +
    'lists their runs unavailable, with the reason.';

  const form = { editor: null, pending: null };

  /* Who gpulabd takes this page for ({client}), asked once. */
  async function me() {
    if (!GL.me) { try { GL.me = await GL.getJSON('/me'); } catch (e) { GL.me = {}; } }
    return GL.me;
  }

  /* ---- reading a definition ---- */

  const shape = (s) => (s || []).map((x) => `[${x}]`).join('');
  const range = (p) => `${GL.fmtNum(p.min)}..${GL.fmtNum(p.max)}`;

  function initText(init) {
    if (!init) return 'from the job\'s seed';
    if (init.uniform) return `uniform in [${init.uniform.join(', ')}]`;
    if (init.normal) return `normal, mean ${init.normal[0]}, std ${init.normal[1]}`;
    if (init.integers) return `integers ${init.integers[0]}..${init.integers[1]}`;
    return JSON.stringify(init);
  }

  function toleranceText(t) {
    if (t == null || t === 'exact') return 'exact';
    const num = (x) => (x !== 0 && Math.abs(x) < 1e-3 ? x.toExponential() : String(x));
    return `|got − want| ≤ ${num(t.abs)} + ${num(t.rel)} · |want|`;
  }

  function facts(pairs) {
    return h('dl', { class: 'facts' }, pairs.filter(([, v]) => v != null && v !== '').map(([k, v]) =>
      h('div', {}, h('dt', { text: k }), h('dd', { class: 'mono', text: String(v) }))));
  }

  function definitionView(p) {
    const d = p.definition || {};
    const params = Object.entries(d.params || p.params || {});
    const bufs = [...(d.inputs || []).map((b) => ['input', b]), ...(d.outputs || []).map((b) => ['output', b])];
    const ref = d.reference || {};
    const fig = d.figure || {};
    const c = p.compile || {};
    return [
      h('h3', { text: 'Params' }),
      h('div', { class: 'table-wrap' }, h('table', { class: 'data compact', id: 'problem-params' },
        h('thead', {}, h('tr', {}, ['Name', 'Default', 'Range'].map((t, i) => h('th', { class: i ? 'num' : null, text: t })))),
        h('tbody', {}, params.map(([name, x]) => h('tr', { 'data-param': name }, h('th', { class: 'mono', text: name }),
          h('td', { class: 'num', text: GL.fmtNum(x.default) }), h('td', { class: 'num', text: range(x) })))))),
      h('h3', { text: 'Inputs and outputs' }),
      h('div', { class: 'table-wrap' }, h('table', { class: 'data compact', id: 'problem-buffers' },
        h('thead', {}, h('tr', {}, ['Buffer', 'Role', 'dtype', 'Shape', 'Filled / checked'].map((t) => h('th', { text: t })))),
        h('tbody', {}, bufs.map(([role, b]) => h('tr', { 'data-buffer': b.name }, h('th', { class: 'mono', text: b.name }),
          h('td', { text: role }), h('td', { class: 'mono', text: b.dtype }), h('td', { class: 'mono', text: shape(b.shape) }),
          h('td', { text: role === 'input' ? initText(b.init) : `tolerance: ${toleranceText(b.tolerance)}` })))))),
      h('h3', { text: 'Reference and figure' }),
      facts([['entry', ref.entry], ['block', ref.block && `[${ref.block.join(', ')}]`], ['grid', ref.grid && `[${ref.grid.join(', ')}]`],
        ['shared bytes', ref.shared_bytes], ['options', (ref.options || []).join(' ')], ['scratch bytes', d.scratch_bytes],
        ['figure bytes', fig.bytes], ['figure flops', fig.flops], ['nondeterministic', d.nondeterministic ? 'yes' : null]]),
      h('p', { id: 'problem-compile' }, h('b', { text: 'Reference compiled: ' }),
        `${c.registers ?? '—'} registers, ${c.spill_store_bytes ?? 0} B spilled (${c.arch || '—'}); occupancy at the defaults: `,
        GL.occupancyText ? GL.occupancyText(c.occupancy_at_defaults) : ''),
      h('h3', { text: 'Signature' }),
      p.prelude ? h('pre', { class: 'code-box', id: 'problem-prelude', text: p.prelude }) : null,
      h('pre', { class: 'code-box', id: 'problem-signature', text: p.signature }),
      h('h3', { text: 'Template for a kernel of it' }),
      h('pre', { class: 'code-box', id: 'problem-template', text: p.template }),
      h('details', { class: 'log-box' }, h('summary', { text: 'the reference\'s source' }),
        h('pre', { class: 'code-box', id: 'problem-reference', text: ref.source || '' })),
    ];
  }

  async function versionsTable(name, current) {
    let list = [];
    try { list = (await GL.getJSON(`/problems/${encodeURIComponent(name)}/versions`)).versions; } catch (e) { return null; }
    return h('div', { class: 'table-wrap' }, h('table', { class: 'data compact', id: 'problem-versions' },
      h('thead', {}, h('tr', {}, ['Version', 'Created', 'Description'].map((t) => h('th', { text: t })))),
      h('tbody', {}, list.map((v) => h('tr', { 'data-version': v.version, class: v.version === current ? 'current' : null },
        h('th', {}, v.version === current ? `${v.version} (shown)`
          : h('a', { href: `#/problems/${encodeURIComponent(name)}/versions/${v.version}`, text: String(v.version) })),
        h('td', { text: GL.fmtTime(v.created) }), h('td', { class: 'muted', text: v.description || '' }))))));
  }

  async function showProblem(name, version) {
    const root = clear(part('one'));
    root.append(h('p', { class: 'panel muted', text: `Loading ${name}…` }));
    const path = `/problems/${encodeURIComponent(name)}${version ? `/versions/${version}` : ''}`;
    let p;
    try { p = await GL.getJSON(path); } catch (e) {
      clear(root).append(h('section', { class: 'panel' }, h('a', { href: '#/problems', class: 'back', text: '← Problems' }),
        h('p', { class: 'error', id: 'problem-missing', text: e.message })));
      return;
    }
    const who = await me();
    const mine = who.client && who.client === p.owner;
    const status = h('span', { class: 'form-status', id: 'problem-status', role: 'status' });
    const del = mine ? h('button', { type: 'button', class: 'ghost', id: 'problem-delete', text: 'Delete',
      onclick: () => deleteProblem(p, status) }) : null;
    const again = h('button', { type: 'button', class: 'ghost', id: 'problem-edit', text: 'Define a new version',
      onclick: () => { form.pending = JSON.stringify(p.definition, null, 2); location.hash = '#/problems'; } });
    const versions = await versionsTable(p.name, p.version);
    clear(root).append(
      h('section', { class: 'panel', id: 'problem-page', 'data-problem': p.name, 'data-version': p.version },
        h('div', { class: 'job-title' }, h('a', { href: '#/problems', class: 'back', text: '← Problems' }),
          h('h2', {}, p.name, h('span', { class: 'size', text: ` version ${p.version}${p.versions ? ` of ${p.versions}` : ''}` })),
          h('span', { class: `badge ${p.public ? 'state-done' : ''}`, text: p.public ? 'public' : 'private' }),
          h('span', { class: 'spacer' }), again, del, status),
        p.description ? h('p', { class: 'about', text: p.description }) : null,
        facts([['owner', p.owner], ['created', GL.fmtTime(p.created)]])),
      h('div', { class: 'row problem-run' }, jobPanel(p), boardPanel(p)),
      h('section', { class: 'panel', id: 'problem-definition' }, h('h2', { text: 'Definition' }), definitionView(p)),
      h('section', { class: 'panel' }, h('h3', { text: 'Versions' }), versions));
    jobs.form = document.getElementById('problem-job-form');
    board(p);
    kernelChecks(p);
  }

  /* ---- its jobs and its leaderboard ---- */

  /* The problem page's form and leaderboard (one page at a time). */
  const jobs = { form: null, timer: null };

  /* The params' values as the form holds them, in the definition's order. */
  function paramValues(p) {
    return Object.keys(p.params || {}).map((k) => jobs.form.elements[`param-${k}`].value.trim());
  }

  /* A number input of the form: the param's range and default, or a job-wide field's. */
  function numberInput(id, name, x) {
    return h('input', { id, name, type: 'number', step: 1, inputmode: 'numeric', autocomplete: 'off',
      min: x.min, max: x.max, value: x.def ?? '', placeholder: x.def == null ? 'default' : null,
      'aria-describedby': `${id}-hint ${id}-err` });
  }

  function jobPanel(p) {
    const params = Object.entries(p.params || {});
    const newest = !p.versions || p.version >= p.versions;
    const field = (name, label, hint, x) => GL.dash.field('problem', { name, label, hint }, null,
      { input: numberInput(`f-problem-${name}`, name, x) });
    const form = h('form', { id: 'problem-job-form', class: 'job-form', novalidate: true },
      h('fieldset', {}, h('legend', { text: 'Params' }), h('div', { class: 'fields' }, params.map(([k, x]) =>
        field(`param-${k}`, k, `${GL.fmtNum(x.min)}..${GL.fmtNum(x.max)}, default ${GL.fmtNum(x.default)}`,
          { min: x.min, max: x.max, def: x.default })))),
      h('fieldset', { class: 'field', 'data-field': 'variant' }, h('legend', { text: 'Runs' }),
        h('div', { class: 'checks', id: 'problem-job-runs' },
          h('label', { class: 'check', title: 'the problem\'s own kernel: the truth the others are checked against' },
            h('input', { type: 'checkbox', name: 'variant', value: 'reference', checked: true }), 'reference')),
        h('p', { class: 'muted small', id: 'problem-job-kernels', text: 'looking for kernels of it…' }),
        h('div', { class: 'field-error', role: 'alert' })),
      h('fieldset', {}, h('legend', { text: 'Timing' }), h('div', { class: 'fields' },
        GL.TIMING_FIELDS.map((f) => field(f.name, f.label, f.hint, { min: f.min, max: f.max })))),
      h('div', { class: 'problem-error', id: 'problem-job-error', role: 'alert', hidden: true }),
      h('div', { class: 'actions' },
        h('button', { type: 'submit', class: 'primary', id: 'problem-job-run', disabled: !newest, text: `Run ${p.name}` }),
        h('span', { class: 'form-status', role: 'status', 'aria-live': 'polite' })));
    form.addEventListener('submit', (e) => { e.preventDefault(); runJob(p, form); });
    form.addEventListener('input', (e) => {
      /* A refusal is of the values it was given: an edit to the field it named clears it. */
      const at = e.target.closest('[data-field]');
      if (at && at.classList.contains('invalid')) {
        at.classList.remove('invalid');
        for (const el of at.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
        const box = document.getElementById('problem-job-error');
        clear(box).hidden = true;
        form.querySelector('.form-status').textContent = '';
      }
      if (e.target.name && e.target.name.startsWith('param-')) { clearTimeout(jobs.timer); jobs.timer = setTimeout(() => board(p), 250); }
    });
    const cpu = GL.device && GL.device.backend === 'cpu';
    return h('section', { class: 'panel', id: 'problem-run' }, h('h2', { text: 'Run it' }),
      h('p', { class: 'muted', text: 'POST /problems/' + p.name + '/jobs: the reference and the kernels you tick, on inputs ' +
        'from the seed; each kernel\'s outputs are checked against the reference\'s on every element.' }),
      newest ? null : h('p', { class: 'notice-line', id: 'problem-job-newest' }, 'Jobs run the newest version: ',
        h('a', { href: `#/problems/${encodeURIComponent(p.name)}`, text: `version ${p.versions}` }), '.'),
      cpu ? h('p', { class: 'notice-line', id: 'problem-job-cpu', text: 'This gpulabd runs on the CPU backend: a problem\'s ' +
        'runs are CUDA C, so its jobs list them unavailable, with the reason.' }) : null,
      form);
  }

  /* A checkbox per kernel of this problem the client may see (GET /kernels), after the
   * reference's. */
  async function kernelChecks(p) {
    const note = document.getElementById('problem-job-kernels');
    let list = [];
    try { list = (await GL.getJSON('/kernels')).kernels; } catch (e) { note.textContent = `kernels: ${e.message}`; return; }
    const mine = list.filter((k) => k.experiment === `problem:${p.name}`);
    const runs = document.getElementById('problem-job-runs');
    if (!runs) return;
    for (const k of mine)
      runs.append(h('label', { class: 'check', 'data-kernel-id': k.id, title: `${k.name} by ${k.owner}, ${k.versions} version${k.versions === 1 ? '' : 's'}` },
        h('input', { type: 'checkbox', name: 'variant', value: k.variant }), `${k.variant} ${k.name}`));
    GL.clear(note).append(mine.length ? `${mine.length} kernel${mine.length === 1 ? '' : 's'} of it; ` : 'No kernels of it yet: ',
      h('a', { href: '#/kernels', text: mine.length ? 'write another' : 'write one' }), ' in Your kernels (pick problem: ', p.name, ').');
  }

  /* The POST /problems/{name}/jobs body, as JSON text: the params by name, the runs
   * ticked, the timing fields filled in (the API's defaults for the others). */
  function jobBody(p, form) {
    const int = GL.dash.intText;
    const params = Object.keys(p.params || {}).map((k) => [k, form.elements[`param-${k}`].value.trim()])
      .filter(([, v]) => v !== '').map(([k, v]) => [k, int(v)]);
    const runs = [...form.querySelectorAll('input[name=variant]')].filter((c) => c.checked).map((c) => c.value);
    const top = [['params', GL.dash.jsonObj(params)], ['variant', JSON.stringify(runs)]];
    for (const f of GL.TIMING_FIELDS) {
      const v = form.elements[f.name].value.trim();
      if (v !== '') top.push([f.name, int(v)]);
    }
    return GL.dash.jsonObj(top);
  }

  /* Runs a job of the problem from the form and opens its page; a refusal shows beside
   * the form (its code, field and detail), the field it names marked. */
  async function runJob(p, form) {
    const box = document.getElementById('problem-job-error');
    clear(box);
    box.hidden = true;
    const refused = (e) => {
      showRefusal(box, e);
      const status = form.querySelector('.form-status');
      status.className = 'form-status error';
      status.textContent = `Not queued (${e.status || e.code}).`;
      const name = (e.field || '').replace(/^params\./, 'param-').replace(/\[.*$/, '');
      const at = name && form.querySelector(`[data-field="${CSS.escape(name)}"]`);
      if (at) {
        at.classList.add('invalid');
        const input = at.querySelector('input:not([type=checkbox])');
        if (input) { input.setAttribute('aria-invalid', 'true'); input.focus(); }
      }
    };
    const job = await GL.dash.submitJob(form, `/problems/${encodeURIComponent(p.name)}/jobs?wait=0`, jobBody(p, form), refused);
    if (job) location.hash = `#/jobs/${job.id}`;
  }

  function boardPanel(p) {
    return h('section', { class: 'panel', id: 'problem-board' },
      h('div', { class: 'panel-head' }, h('h2', { text: 'Leaderboard' }),
        h('span', { class: 'muted', id: 'problem-board-size' })),
      h('div', { class: 'table-wrap' }, GL.leaderboardTable('problem-leaderboard')),
      h('p', { class: 'muted empty', id: 'problem-board-empty', hidden: true, text: 'No runs yet at this size.' }),
      h('p', { class: 'error', id: 'problem-board-error', hidden: true }));
  }

  /* The leaderboard at the form's params (GET /leaderboard/problem:NAME?size=...; the
   * version shown when it is not the newest). */
  async function board(p) {
    const values = paramValues(p);
    const names = Object.keys(p.params || {});
    const old = p.versions && p.version < p.versions ? `&version=${p.version}` : '';
    const r = await GL.api('GET', `/leaderboard/problem:${encodeURIComponent(p.name)}?size=${values.map(encodeURIComponent).join(',')}${old}`);
    const body = document.querySelector('#problem-leaderboard tbody');
    if (!body || paramValues(p).join() !== values.join()) return; /* another page, or newer values */
    const e = GL.problem(r);
    const rows = (r.json && r.json.rows) || [];
    GL.leaderboardRows(body, e ? [] : rows);
    document.getElementById('problem-board-size').textContent =
      `${names.map((k, i) => `${k} ${values[i] || '—'}`).join(', ')} · version ${p.version}`;
    document.getElementById('problem-board-empty').hidden = !!e || rows.length > 0;
    const err = document.getElementById('problem-board-error');
    err.hidden = !e;
    err.textContent = e ? `${e.code}${e.field ? ` at ${e.field}` : ''}: ${e.detail}` : '';
  }

  async function deleteProblem(p, status) {
    if (!window.confirm(`Delete ${p.name}? It leaves the listing; its versions stay readable by number.`)) return;
    const r = await GL.api('DELETE', `/problems/${encodeURIComponent(p.name)}`);
    const e = GL.problem(r);
    if (e) { status.className = 'form-status error'; status.textContent = e.detail; return; }
    form.deleted = p.name;
    location.hash = '#/problems';
  }

  /* ---- the list and the form ---- */

  async function listProblems() {
    const body = document.querySelector('#problem-list tbody');
    if (!body) return;
    let list = [];
    try { list = (await GL.getJSON('/problems')).problems; } catch (e) {
      document.getElementById('problem-list-status').textContent = e.message;
    }
    clear(body);
    for (const p of list) {
      const params = Object.entries(p.params || {}).map(([k, x]) => `${k} ${range(x)}`).join(', ');
      body.append(h('tr', { 'data-problem': p.name },
        h('th', {}, h('a', { href: `#/problems/${encodeURIComponent(p.name)}`, text: p.name })),
        h('td', { class: 'num', text: String(p.version) }), h('td', { text: p.owner }),
        h('td', { text: p.public ? 'public' : 'private' }), h('td', { class: 'mono small', text: params }),
        h('td', { class: 'muted', text: p.description || '' }), h('td', { class: 'nowrap', text: GL.fmtTime(p.created) })));
    }
    document.getElementById('problem-list-empty').hidden = list.length > 0;
  }

  /* The API's refusal beside the editor: its code, field and detail, and for a
   * reference that did not compile (422) the compiler's line and its whole log. */
  function showRefusal(box, e) {
    clear(box);
    box.hidden = false;
    const c = e.compile || {};
    /* (append would write a null as "null": the parts a refusal lacks are left out) */
    box.append(...[h('p', {}, h('b', { class: 'err-code', text: e.code }), e.field ? ' at ' : '',
      e.field ? h('code', { class: 'err-field', text: e.field }) : null, `: ${e.detail}`),
    c.error ? h('pre', { class: 'log compile-line', id: 'problem-compile-line', text: errorLines(c) }) : null,
    c.log ? h('details', { class: 'log-box' }, h('summary', { text: 'the compiler\'s whole log' }), h('pre', { class: 'log', text: c.log })) : null]
      .filter(Boolean));
  }

  /* The compile log's first error with the source line and caret NVRTC prints under it. */
  function errorLines(c) {
    const lines = (c.log || '').split('\n');
    const at = lines.findIndex((l) => l.includes(c.error));
    return at < 0 ? c.error : lines.slice(at, at + 3).join('\n').replace(/\s+$/, '');
  }

  async function define(formEl) {
    const status = formEl.querySelector('.form-status');
    const box = document.getElementById('problem-error');
    clear(box);
    box.hidden = true;
    status.className = 'form-status';
    status.textContent = 'checking and compiling…';
    const r = await GL.api('POST', '/problems', form.editor.get());
    const e = GL.problem(r);
    if (e || !r.json) {
      status.className = 'form-status error';
      status.textContent = `Not defined (${r.status}).`;
      showRefusal(box, e || { code: `HTTP ${r.status}`, detail: 'no answer' });
      return;
    }
    status.className = 'form-status ok';
    status.textContent = `defined ${r.json.name} version ${r.json.version}`;
    location.hash = `#/problems/${encodeURIComponent(r.json.name)}`;
  }

  function showList() {
    const root = part('home');
    if (!document.getElementById('problem-form')) {
      const ta = h('textarea', { id: 'problem-json', name: 'definition', rows: 24, spellcheck: 'false' });
      const f = h('form', { id: 'problem-form' },
        h('div', { class: 'editor-box' }, ta),
        h('div', { class: 'problem-error', id: 'problem-error', role: 'alert', hidden: true }),
        h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary', id: 'problem-define', text: 'Define' }),
          h('button', { type: 'button', class: 'ghost', id: 'problem-example', text: 'The example',
            onclick: () => form.editor.set(JSON.stringify(EXAMPLE, null, 2)) }),
          h('span', { class: 'form-status', role: 'status', 'aria-live': 'polite' })));
      f.addEventListener('submit', (e) => { e.preventDefault(); define(f); });
      root.append(
        h('section', { class: 'panel' }, h('div', { class: 'panel-head' }, h('h2', { text: 'Problems' }),
          h('span', { class: 'muted', text: 'operations defined as data: params, buffers, a reference kernel, a tolerance, a figure' })),
        h('p', { class: 'muted', id: 'problems-jobs', text: JOBS }),
        h('div', { class: 'table-wrap' }, h('table', { class: 'data compact', id: 'problem-list' },
          h('thead', {}, h('tr', {}, ['Name', 'Version', 'Owner', 'Visibility', 'Params', 'Description', 'Created']
            .map((t, i) => h('th', { class: i === 1 ? 'num' : null, text: t })))),
          h('tbody'))),
        h('p', { class: 'muted empty', id: 'problem-list-empty', hidden: true, text: 'No problems yet: define one below.' }),
        h('p', { class: 'muted', id: 'problem-list-status', role: 'status' })),
        h('section', { class: 'panel', id: 'problem-define-panel' }, h('h2', { text: 'Define a problem' }),
          h('p', { class: 'muted', text: 'POST /problems with this JSON: its expressions are bounded, its reference compiled with ' +
            'the problem\'s signature; the same name again (yours) makes its next version. The example is the row softmax ' +
            'of docs/problems.md.' }),
          f));
      form.editor = GL.codeEditor(ta, { lang: 'json', prefix: 'problem' });
      f.dataset.editor = form.editor.kind;
      f.dataset.mode = form.editor.mode;
      form.editor.set(JSON.stringify(EXAMPLE, null, 2));
    }
    if (form.pending) { form.editor.set(form.pending); form.pending = null; }
    const note = document.getElementById('problem-list-status');
    note.textContent = form.deleted ? `${form.deleted} deleted.` : '';
    form.deleted = null;
    form.editor.refresh();
    listProblems();
  }

  /* #/problems, #/problems/NAME, #/problems/NAME/versions/N. */
  function show(name, version) {
    if (name) showProblem(name, version); else showList();
  }

  GL.problemsView = { show, editor: () => form.editor };
})();

'use strict';
/* The problems pages: #/problems lists the problems you may see (GET /problems) and
 * defines one from a JSON editor (POST /problems, the API's refusal shown beside it);
 * #/problems/NAME (and .../versions/N) shows one readably: params, buffers, reference,
 * figure, signature, template, versions, and delete for its owner (docs/problems.md). */
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

  const NO_JOBS = 'Jobs of problems do not exist yet: gpulab defines, checks and compiles a problem today; ' +
    'running one (its reference, your kernels, a leaderboard) comes with gpulab-runner\'s support for it.';

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
        facts([['owner', p.owner], ['created', GL.fmtTime(p.created)]]),
        h('p', { class: 'notice-line', id: 'problem-no-jobs', text: NO_JOBS }),
        definitionView(p)),
      h('section', { class: 'panel' }, h('h3', { text: 'Versions' }), versions));
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
    box.append(h('p', {}, h('b', { class: 'err-code', text: e.code }), e.field ? ' at ' : '',
      e.field ? h('code', { class: 'err-field', text: e.field }) : null, `: ${e.detail}`),
    c.error ? h('pre', { class: 'log compile-line', id: 'problem-compile-line', text: errorLines(c) }) : null,
    c.log ? h('details', { class: 'log-box' }, h('summary', { text: 'the compiler\'s whole log' }), h('pre', { class: 'log', text: c.log })) : null);
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
        h('p', { class: 'notice-line', text: NO_JOBS }),
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

'use strict';
/* The kernels page (#/kernels): an editor that starts from the experiment's signature
 * template (GET /kernels/signatures), compiles with POST /kernels and shows a compile
 * error at its line (the 422 problem's `line` and `compile` members); the client's
 * kernels; the leaderboard (GET /leaderboard/...). */
(function () {
  const { h } = GL;
  let sigs = null;
  const view = () => document.getElementById('view-kernels');

  async function signatures() {
    if (!sigs) sigs = (await GL.getJSON('/kernels/signatures')).signatures;
    return sigs;
  }

  /* The source with line numbers, line `bad` (1-based) marked. */
  function sourceView(src, bad) {
    const lines = src.split('\n');
    return h('pre', { class: 'src-view', id: 'kernel-src-view' },
      lines.map((l, i) => h('span', { class: i + 1 === bad ? 'src-line err-line' : 'src-line',
        'data-line': i + 1 }, h('span', { class: 'ln', text: String(i + 1) }), l || ' ')));
  }

  /* Puts the editor's caret on line n. */
  function gotoLine(ta, n) {
    const lines = ta.value.split('\n');
    let pos = 0;
    for (let i = 0; i < n - 1 && i < lines.length; i++) pos += lines[i].length + 1;
    ta.focus();
    ta.setSelectionRange(pos, pos + (lines[n - 1] || '').length);
  }

  function ints(text) { return text.split(',').map((s) => Number(s.trim())).filter((x) => x > 0); }

  async function submit(form, run) {
    const status = form.querySelector('.form-status');
    const out = document.getElementById('kernel-result');
    GL.clear(out);
    status.className = 'form-status';
    status.textContent = run ? 'compiling and running…' : 'compiling…';
    const f = new FormData(form);
    const body = {
      experiment: f.get('experiment'), name: f.get('name'), source: f.get('source'),
      block: ints(f.get('block')), tile: ints(f.get('tile')),
      options: f.get('options').split(/\s+/).filter(Boolean), public: f.get('public') === 'on',
    };
    const scratch = Number(f.get('scratch_bytes'));
    if (scratch > 0) body.scratch_bytes = scratch; /* then the kernel takes void* scratch last */
    const r = await GL.api('POST', run ? '/kernels?run=1&wait=60' : '/kernels', JSON.stringify(body));
    const e = GL.problem(r);
    if (e) {
      status.className = 'form-status error';
      /* At a line, the error is shown once, there (below, with the source); else here. */
      status.textContent = e.line ? `${e.code} at line ${e.line}` : e.detail;
      if (e.line) {
        out.append(h('p', { class: 'compile-error', id: 'compile-error', text: `line ${e.line}: ${e.compile ? e.compile.error : e.detail}` }),
          sourceView(body.source, e.line));
        gotoLine(form.querySelector('textarea'), e.line);
      }
      if (e.compile && e.compile.log) out.append(h('pre', { class: 'log', text: e.compile.log }));
      return;
    }
    if (run && r.json && r.json.id) {
      GL.clear(status);
      status.append('compiled; job ', h('a', { href: `#/jobs/${r.json.id}`, 'data-job-id': r.json.id, text: `#${r.json.id}` }));
    } else if (r.json) {
      const c = r.json.compile;
      status.textContent = `compiled: ${r.json.variant}${c.cached ? ' (cached)' : ''}`;
      out.append(h('p', { id: 'compile-ok', text: `${r.json.variant}: ${c.registers} registers, ${c.shared_bytes} B shared, ` +
        `${c.spill_store_bytes + c.spill_load_bytes} B spilled, ${c.module_variables} module variable${c.module_variables === 1 ? '' : 's'} ` +
        `(put back before every launch), ${GL.fmtNum(c.compile_ms, 3)} ms (${c.arch})` }));
    }
    listKernels();
  }

  function editor(list) {
    const pick = h('select', { name: 'experiment', id: 'kernel-experiment' },
      list.map((s) => h('option', { value: s.experiment, text: s.experiment })));
    const sig = h('code', { id: 'kernel-signature' });
    const ta = h('textarea', { name: 'source', id: 'kernel-source', rows: 16, spellcheck: 'false' });
    const block = h('input', { name: 'block', id: 'kernel-block' });
    const tile = h('input', { name: 'tile', id: 'kernel-tile' });
    const rule = h('span', { class: 'muted', id: 'kernel-grid-rule' });
    const scratch = h('input', { name: 'scratch_bytes', id: 'kernel-scratch', inputmode: 'numeric', placeholder: '0' });
    /* The signature as the kernel must have it: with scratch, one more last argument. */
    function signature() {
      const s = list.find((x) => x.experiment === pick.value);
      sig.textContent = Number(scratch.value) > 0 ? s.signature_with_scratch : s.signature;
    }
    scratch.addEventListener('input', signature);
    function load() {
      const s = list.find((x) => x.experiment === pick.value);
      signature();
      ta.value = s.template;
      block.value = s.default_block.join(',');
      tile.value = s.default_tile.join(',');
      rule.textContent = `${s.meaning}; ${s.grid_rule}`;
    }
    pick.addEventListener('change', load);
    const form = h('form', { id: 'kernel-form' },
      h('div', { class: 'fields' },
        h('label', {}, 'experiment ', pick), h('label', {}, 'name ', h('input', { name: 'name', id: 'kernel-name', value: 'my_kernel' })),
        h('label', {}, 'block ', block), h('label', {}, 'tile ', tile),
        h('label', {}, 'options ', h('input', { name: 'options', id: 'kernel-options', placeholder: '-DTILE=32 -lineinfo' })),
        h('label', { title: 'global scratch zeroed before every launch, passed as one more last argument, void* scratch' },
          'scratch bytes ', scratch),
        h('label', {}, h('input', { type: 'checkbox', name: 'public' }), ' public')),
      h('p', {}, sig, ' ', rule), ta,
      h('div', { class: 'actions' }, h('button', { type: 'submit', id: 'kernel-compile', text: 'Compile' }),
        h('button', { type: 'button', id: 'kernel-run', text: 'Compile and run' }),
        h('span', { class: 'form-status', role: 'status', 'aria-live': 'polite' })));
    form.addEventListener('submit', (e) => { e.preventDefault(); submit(form, false); });
    form.querySelector('#kernel-run').addEventListener('click', () => submit(form, true));
    load();
    return form;
  }

  async function listKernels() {
    const body = document.querySelector('#kernel-list tbody');
    if (!body) return;
    const r = await GL.api('GET', '/kernels');
    GL.clear(body);
    for (const k of (r.json && r.json.kernels) || []) {
      const c = k.compile || {};
      body.append(h('tr', { 'data-kernel-id': k.id },
        h('td', { text: k.variant }), h('td', { text: k.name }), h('td', { text: k.experiment }),
        h('td', { text: k.owner }), h('td', { class: 'num', text: c.registers ?? '—' }),
        h('td', { class: 'num', text: c.shared_bytes ?? '—' }), h('td', { text: k.public ? 'public' : 'private' })));
    }
  }

  async function leaderboard(form) {
    const body = document.querySelector('#leaderboard tbody');
    const f = new FormData(form);
    const size = f.get('size').trim();
    const r = await GL.api('GET', `/leaderboard/${f.get('experiment')}${size ? `?size=${encodeURIComponent(size)}` : ''}`);
    GL.clear(body);
    const rows = (r.json && r.json.rows) || [];
    for (const x of rows) {
      body.append(h('tr', { 'data-variant': x.variant },
        h('td', { class: 'num', text: x.rank }), h('th', { text: x.variant }),
        h('td', { text: x.user_kernel ? `${x.user_kernel.name} (${x.user_kernel.owner})` : 'built-in' }),
        h('td', { class: 'num', text: `${GL.fmtNum(x.figure, 4)} ${x.unit}` }),
        h('td', { class: 'num', text: GL.fmtMs(x.median_ms) }),
        h('td', { class: 'num', text: x.percent_of_ceiling == null ? '—' : `${GL.fmtNum(x.percent_of_ceiling, 3)}%` }),
        h('td', {}, h('a', { href: `#/jobs/${x.job}`, text: `#${x.job}` }))));
    }
    document.getElementById('leaderboard-empty').hidden = rows.length > 0;
  }

  async function show() {
    const v = view();
    if (v.childElementCount) { listKernels(); return; }
    let list;
    try { list = await signatures(); } catch (e) { v.append(h('p', { class: 'error', text: e.message })); return; }
    const board = h('form', { id: 'leaderboard-form' },
      h('label', {}, 'experiment ', h('select', { name: 'experiment' }, list.map((s) => h('option', { value: s.experiment, text: s.experiment })))),
      h('label', {}, ' size ', h('input', { name: 'size', placeholder: 'default' })),
      h('button', { type: 'submit', text: 'Show' }));
    board.addEventListener('submit', (e) => { e.preventDefault(); leaderboard(board); });
    v.append(
      h('section', { class: 'panel', id: 'editor-panel' }, h('h2', { text: 'Your kernel' }),
        h('p', { class: 'muted', text: 'Device code only, with the experiment\'s signature; gpulab compiles it with NVRTC, runs it in its runner beside the built-ins, checks and times it the same way.' }),
        editor(list), h('div', { id: 'kernel-result' })),
      h('section', { class: 'panel' }, h('h2', { text: 'Kernels' }),
        h('div', { class: 'table-wrap' }, h('table', { class: 'data compact', id: 'kernel-list' },
          h('thead', {}, h('tr', {}, ['Variant', 'Name', 'Experiment', 'Owner', 'Registers', 'Shared B', 'Visibility'].map((t) => h('th', { text: t })))),
          h('tbody')))),
      h('section', { class: 'panel', id: 'leaderboard-panel' }, h('h2', { text: 'Leaderboard' }), board,
        h('div', { class: 'table-wrap' }, h('table', { class: 'data compact', id: 'leaderboard' },
          h('thead', {}, h('tr', {}, ['#', 'Variant', 'Kernel', 'Figure', 'Median ms', '% of ceiling', 'Job'].map((t) => h('th', { text: t })))),
          h('tbody'))),
        h('p', { class: 'muted empty', id: 'leaderboard-empty', text: 'No verified runs at this size yet.' })));
    listKernels();
    leaderboard(board);
  }

  GL.kernelsView = { show };
})();

'use strict';
/* The kernels page (#/kernels): an editor (editor.js) that starts from the experiment's
 * signature template (GET /kernels/signatures) or a problem's (GET /problems/{name}:
 * its template; a kernel of it may give its grid as expressions over its params),
 * asks before a template or a stored
 * kernel replaces edits, compiles with POST /kernels and marks the compile's errors at
 * their lines (the 422 problem's `line` and its compile report's log); the client's
 * kernels, each opened into the editor or deleted; what the compiler made of a version
 * (its occupancy, GET /kernels/{id}/versions/{n}/ptx and /sass); the leaderboard
 * (GET /leaderboard/...). */
(function () {
  const { h } = GL;
  let sigs = null;
  const view = () => document.getElementById('view-kernels');

  async function signatures() {
    if (!sigs) sigs = (await GL.getJSON('/kernels/signatures')).signatures;
    return sigs;
  }

  function ints(text) { return text.split(',').map((s) => Number(s.trim())).filter((x) => x > 0); }

  /* A problem's kernel's grid as the API takes it: "cdiv(rows, 256), 1" is
   * ["cdiv(rows, 256)", 1] (split at the commas outside parentheses, numbers as
   * numbers); [] when empty. */
  function gridList(text) {
    const out = [];
    let depth = 0, cur = '';
    for (const c of `${text},`) {
      if (c === ',' && depth === 0) { if (cur.trim()) out.push(cur.trim()); cur = ''; continue; }
      if (c === '(') depth++;
      if (c === ')') depth--;
      cur += c;
    }
    return out.map((x) => (/^\d+$/.test(x) ? Number(x) : x));
  }

  /* The problems the client may see, by name (GET /problems), each one's version in
   * full (GET /problems/{name}: signature, template, reference) once asked for. */
  const problems = { list: [], full: new Map() };
  const PROBLEM = 'problem:';
  const problemOf = (experiment) => (experiment && experiment.startsWith(PROBLEM) ? experiment.slice(PROBLEM.length) : null);

  async function listProblems() {
    try { problems.list = (await GL.getJSON('/problems')).problems; } catch (e) { problems.list = []; }
    return problems.list;
  }

  async function problemFull(name) {
    if (!problems.full.has(name)) problems.full.set(name, await GL.getJSON(`/problems/${encodeURIComponent(name)}`));
    return problems.full.get(name);
  }

  /* The experiments' and the problems' options of a select: value "transpose" or
   * "problem:softmax_rows". */
  function targetOptions(list) {
    const exps = list.map((s) => h('option', { value: s.experiment, text: s.experiment }));
    if (!problems.list.length) return exps;
    return [h('optgroup', { label: 'experiments' }, exps), h('optgroup', { label: 'problems' },
      problems.list.map((p) => h('option', { value: `${PROBLEM}${p.name}`, text: `problem: ${p.name}` })))];
  }

  /* A select's options again (problems come and go), its choice kept: a problem no
   * longer listed stays while it is the one chosen. */
  function refillTargets(select, list) {
    const was = select.value;
    GL.clear(select).append(...targetOptions(list));
    if (was && !select.querySelector(`option[value="${CSS.escape(was)}"]`))
      select.append(h('option', { value: was, text: `problem: ${problemOf(was)}` }));
    select.value = was;
  }

  /* The editor's state: ed (GL.codeEditor), the source it was last given (a template
   * or a stored kernel: anything else is the user's edit) and the kernel open in it. */
  const ed = { editor: null, loaded: '', open: null, note: null };

  /* Whether the user's edits may be replaced by what: yes when there are none, else
   * as the user answers. */
  function mayReplace(what) {
    const now = ed.editor.get();
    if (now === ed.loaded || now.trim() === '') return true;
    return window.confirm(`Replace the source you edited with ${what}? Your edits are not saved anywhere.`);
  }

  function setSource(text) {
    ed.editor.set(text);
    ed.loaded = text;
    const out = document.getElementById('kernel-result');
    if (out) GL.clear(out);
  }

  /* The messages of a compile, once: a list of them (each a link to its line) under
   * the editor, their lines marked in it, the whole log folded away. */
  function showMessages(out, messages, report) {
    ed.editor.mark(messages);
    if (messages.length)
      out.append(h('ul', { class: 'compile-messages', id: 'compile-error' }, messages.map((m) => h('li', { class: `gl-${m.severity}` },
        m.line ? h('a', { href: '#/kernels', class: 'line-link', 'data-line': m.line, text: `line ${m.line}`,
          onclick: (e) => { e.preventDefault(); ed.editor.goto(m.line); } }) : null,
        `${m.line ? ': ' : ''}${m.severity === 'warning' ? 'warning: ' : ''}${m.text}`))));
    if (report && report.log)
      out.append(h('details', { class: 'log-box' }, h('summary', { text: 'the compiler\'s whole log' }),
        h('pre', { class: 'log', text: report.log })));
  }

  async function submit(form, run) {
    const status = form.querySelector('.form-status');
    const out = document.getElementById('kernel-result');
    GL.clear(out);
    ed.editor.mark([]);
    status.className = 'form-status';
    status.textContent = run ? 'compiling and running…' : 'compiling…';
    const f = new FormData(form);
    const problem = problemOf(f.get('experiment'));
    const body = {
      experiment: f.get('experiment'), name: f.get('name'), source: ed.editor.get(),
      block: ints(f.get('block')), tile: ints(f.get('tile')),
      options: f.get('options').split(/\s+/).filter(Boolean), public: f.get('public') === 'on',
    };
    if (problem) { /* its params' names in the grid; block and grid default to its reference's */
      delete body.experiment;
      delete body.tile;
      body.problem = problem;
      if (!body.block.length) delete body.block;
      const grid = gridList(f.get('grid') || '');
      if (grid.length) body.grid = grid;
    }
    const scratch = Number(f.get('scratch_bytes'));
    if (scratch > 0 && !problem) body.scratch_bytes = scratch; /* then the kernel takes void* scratch last */
    const r = await GL.api('POST', run ? '/kernels?run=1&wait=60' : '/kernels', JSON.stringify(body));
    const e = GL.problem(r);
    if (e) {
      status.className = 'form-status error';
      const messages = e.compile || e.line ? GL.compileMessages(e, e.compile) : [];
      const errors = messages.filter((m) => m.severity === 'error').length;
      /* Each message is shown once, in the list under the editor; here only how many. */
      status.textContent = messages.length
        ? `${e.code}: ${errors} error${errors === 1 ? '' : 's'}, marked in the source` : e.detail;
      showMessages(out, messages, e.compile);
      const first = messages.find((m) => m.line);
      if (first) ed.editor.goto(first.line);
      return;
    }
    ed.loaded = body.source; /* stored as it is now */
    if (run && r.json && r.json.id) {
      GL.clear(status);
      status.append('compiled; job ', h('a', { href: `#/jobs/${r.json.id}`, 'data-job-id': r.json.id, text: `#${r.json.id}` }));
    } else if (r.json) {
      const c = r.json.compile;
      status.className = 'form-status ok';
      status.textContent = `compiled: ${r.json.variant}${c.cached ? ' (cached)' : ''}`;
      out.append(h('p', { id: 'compile-ok', text: `${r.json.variant}: ${c.registers} registers, ${c.shared_bytes} B shared, ` +
        `${c.spill_store_bytes + c.spill_load_bytes} B spilled, ${c.module_variables} module variable${c.module_variables === 1 ? '' : 's'} ` +
        `(put back before every launch), ${GL.fmtNum(c.compile_ms, 3)} ms (${c.arch})` }));
      showMessages(out, GL.compileMessages(null, c), null);
      openKernel(r.json, false);
      showCompiled(r.json);
    }
    await listKernels();
    if (r.json && versionsOf === r.json.id) showVersions(r.json); /* its new version too */
  }

  /* Says which stored kernel the editor holds (k: as GET /kernels/{id} gives it), or
   * none. */
  function openKernel(k, fresh) {
    ed.open = k;
    const note = ed.note;
    GL.clear(note);
    note.hidden = !k;
    if (!k) return;
    note.append(fresh ? 'Opened ' : 'Stored as ', h('b', { text: k.variant }), ` (${k.name}, ${k.experiment}). `,
      'Compiling sends it again under its name, ', h('code', { text: k.name }),
      k.version ? `: a new version of kernel:${k.id}.` : '.');
  }

  function editor(list) {
    const pick = h('select', { name: 'experiment', id: 'kernel-experiment' }, targetOptions(list));
    const sig = h('code', { id: 'kernel-signature' });
    const ta = h('textarea', { name: 'source', id: 'kernel-source', rows: 16, spellcheck: 'false' });
    const block = h('input', { name: 'block', id: 'kernel-block' });
    const tile = h('input', { name: 'tile', id: 'kernel-tile' });
    const grid = h('input', { name: 'grid', id: 'kernel-grid', autocomplete: 'off' });
    const rule = h('span', { class: 'muted', id: 'kernel-grid-rule' });
    const scratch = h('input', { name: 'scratch_bytes', id: 'kernel-scratch', inputmode: 'numeric', placeholder: '0' });
    const only = { tile: h('label', {}, 'tile ', tile), grid: h('label', { title: 'expressions over the problem\'s params, ' +
      'e.g. cdiv(cols, 256), rows; empty: its reference\'s' }, 'grid ', grid),
    scratch: h('label', { title: 'global scratch zeroed before every launch, passed as one more last argument, void* scratch' },
      'scratch bytes ', scratch) };
    /* The signature as the kernel must have it: with scratch, one more last argument; a
     * problem's as its definition makes it (its scratch is the problem's). */
    function signature() {
      const name = problemOf(pick.value);
      only.tile.hidden = only.scratch.hidden = !!name;
      only.grid.hidden = !name;
      if (name) {
        const p = problems.full.get(name);
        const ref = (p && p.definition && p.definition.reference) || {};
        sig.textContent = p ? p.signature : '';
        grid.placeholder = (ref.grid || []).join(', ');
        block.placeholder = (ref.block || []).join(',');
        rule.textContent = p ? `a kernel of problem ${p.name} (version ${p.version}); block and grid default to its reference's ` +
          `[${(ref.block || []).join(', ')}] and [${(ref.grid || []).join(', ')}]; a grid may be expressions over ` +
          `${Object.keys(p.params || {}).join(', ')}` : '';
        return;
      }
      const s = list.find((x) => x.experiment === pick.value);
      block.placeholder = grid.placeholder = '';
      sig.textContent = Number(scratch.value) > 0 ? s.signature_with_scratch : s.signature;
      rule.textContent = `${s.meaning}; ${s.grid_rule}`;
    }
    scratch.addEventListener('input', signature);
    ed.signature = signature;
    /* The experiment's or problem's template, block and tile (asking first when that
     * would drop edits). */
    let shown = pick.value;
    async function load() {
      const name = problemOf(pick.value);
      if (!mayReplace(name ? `problem ${name}'s template` : `the ${pick.value} template`)) { pick.value = shown; return; }
      shown = pick.value;
      const status = form.querySelector('.form-status');
      status.className = 'form-status';
      status.textContent = '';
      let template;
      if (name) {
        try { template = (await problemFull(name)).template; } catch (e) {
          status.className = 'form-status error';
          status.textContent = `problem ${name}: ${e.message}`;
          return;
        }
        if (shown !== pick.value) return; /* another pick meanwhile */
        block.value = tile.value = grid.value = '';
      } else {
        const s = list.find((x) => x.experiment === pick.value);
        template = s.template;
        block.value = s.default_block.join(',');
        tile.value = s.default_tile.join(',');
      }
      signature();
      setSource(template);
      openKernel(null);
    }
    pick.addEventListener('change', load);
    const form = h('form', { id: 'kernel-form' },
      h('div', { class: 'fields' },
        h('label', {}, 'experiment ', pick), h('label', {}, 'name ', h('input', { name: 'name', id: 'kernel-name', value: 'my_kernel' })),
        h('label', {}, 'block ', block), only.tile, only.grid,
        h('label', {}, 'options ', h('input', { name: 'options', id: 'kernel-options', placeholder: '-DTILE=32 -lineinfo' })),
        only.scratch,
        h('label', {}, h('input', { type: 'checkbox', name: 'public', id: 'kernel-public' }), ' public')),
      h('p', { class: 'signature' }, sig, ' ', rule),
      (ed.note = h('p', { class: 'muted small', id: 'kernel-open', hidden: true })),
      h('div', { class: 'editor-box' }, ta),
      h('div', { class: 'actions' }, h('button', { type: 'submit', id: 'kernel-compile', text: 'Compile' }),
        h('button', { type: 'button', id: 'kernel-run', text: 'Compile and run' }),
        h('span', { class: 'form-status', role: 'status', 'aria-live': 'polite' })));
    form.addEventListener('submit', (e) => { e.preventDefault(); submit(form, false); });
    form.querySelector('#kernel-run').addEventListener('click', () => submit(form, true));
    ed.editor = GL.codeEditor(ta);
    form.dataset.editor = ed.editor.kind;
    if (ed.editor.kind === 'textarea')
      ta.before(h('p', { class: 'muted small', id: 'editor-plain' }, 'A plain text area: gpulabd could not serve ',
        'CodeMirror (install ', h('code', { text: 'libjs-codemirror' }), ', or start gpulabd with ',
        h('code', { text: '--codemirror DIR' }), ') for line numbers and highlighting. Errors are marked below.'));
    ed.loaded = ed.editor.get();
    load();
    /* A stored kernel into the form: its experiment (or problem), name, launch shape,
     * options and source. */
    ed.fill = async function (k) {
      if (!mayReplace(`${k.variant} (${k.name})`)) return false;
      const name = problemOf(k.experiment);
      if (name) {
        if (!pick.querySelector(`option[value="${CSS.escape(k.experiment)}"]`)) /* a problem no longer listed */
          pick.append(h('option', { value: k.experiment, text: `problem: ${name}` }));
        try { await problemFull(name); } catch (e) { /* deleted: its signature unknown */ }
      }
      pick.value = shown = k.experiment;
      signature();
      form.elements.name.value = k.name;
      block.value = (k.block || []).join(',');
      tile.value = (k.tile || []).join(',');
      grid.value = name ? (k.grid || []).join(', ') : '';
      form.elements.options.value = (k.options || []).join(' ');
      scratch.value = k.scratch_bytes ? String(k.scratch_bytes) : '';
      form.elements.public.checked = !!k.public;
      signature();
      setSource(k.source || '');
      openKernel(k, true);
      const status = form.querySelector('.form-status');
      status.className = 'form-status';
      status.textContent = '';
      return true;
    };
    return form;
  }

  /* Opens stored kernel id in the editor (GET /kernels/{id}: it carries the source). */
  async function openStored(id) {
    const note = document.getElementById('kernel-list-status');
    note.textContent = '';
    try {
      const k = await GL.getJSON(`/kernels/${id}`);
      if (await ed.fill(k)) document.getElementById('editor-panel').scrollIntoView();
    } catch (e) {
      note.textContent = `kernel:${id}: ${e.message}`;
    }
  }

  /* Deletes stored kernel k after asking (DELETE /kernels/{id}). */
  async function deleteStored(k) {
    const note = document.getElementById('kernel-list-status');
    note.textContent = '';
    const all = k.versions > 1 ? ` and all its ${k.versions} versions` : '';
    if (!window.confirm(`Delete ${k.variant} (${k.name})${all}? Jobs that ran it keep their results.`)) return;
    const r = await GL.api('DELETE', `/kernels/${k.id}`);
    const p = GL.problem(r);
    note.className = p ? 'error' : 'muted';
    note.textContent = p ? `${k.variant}: ${p.detail}` : `${k.variant} (${k.name}) deleted.`;
    if (!p && ed.open && ed.open.id === k.id) openKernel(null);
    if (!p && versionsOf === k.id) document.getElementById('kernel-versions').hidden = true;
    listKernels();
  }

  /* ---- what the compiler made: occupancy, PTX, SASS ---- */

  /* A compile's theoretical occupancy for people: blocks and warps per SM, the fraction,
   * what limits it and the blocks each resource would allow. */
  GL.occupancyText = function (o) {
    if (!o) return 'occupancy: not computed';
    if (o.available === false) return `occupancy: ${o.reason}`; /* an architecture or block it cannot place */
    const by = o.blocks_by ? Object.entries(o.blocks_by).map(([k, v]) => `${k.replace(/_/g, ' ')} ${v}`).join(', ') : '';
    return `${o.blocks_per_sm} blocks/SM, ${o.warps_per_sm} of ${o.max_warps_per_sm} warps/SM ` +
      `(${GL.fmtNum(100 * o.fraction, 3)} %), limited by ${o.limiter}` +
      `${by ? ` (blocks by ${by})` : ''}${o.arch ? ` on ${o.arch}` : ''}`;
  };

  /* Version k (a POST /kernels answer or a versions entry) in the compiler panel: its
   * occupancy, and its PTX or SASS on request (the SASS's 503 says why it is missing). */
  function showCompiled(k) {
    const box = document.getElementById('compiler-panel');
    if (!box) return;
    GL.clear(box);
    box.hidden = false;
    const c = k.compile || {};
    const base = `/kernels/${k.id}/versions/${k.version}`;
    const asm = h('div', { id: 'kernel-asm-box' }, h('p', { class: 'muted small', text: 'Pick PTX or SASS.' }));
    const tabs = h('div', { class: 'tabs', role: 'tablist', id: 'kernel-asm-tabs' });
    async function pick(kind, button) {
      for (const b of tabs.children) b.setAttribute('aria-selected', String(b === button));
      GL.clear(asm).append(h('p', { class: 'muted small', text: `loading the ${kind.toUpperCase()}…` }));
      try {
        const text = await GL.getText(`${base}/${kind}`);
        GL.clear(asm).append(h('pre', { class: 'asm', id: 'kernel-asm', 'data-kind': kind, tabindex: 0, text }));
      } catch (e) {
        GL.clear(asm).append(h('p', { class: 'error', id: 'kernel-asm-error', 'data-kind': kind,
          text: `${kind.toUpperCase()} unavailable${e.status ? ` (${e.status})` : ''}: ${e.message}` }));
      }
    }
    for (const kind of ['ptx', 'sass']) {
      const b = h('button', { type: 'button', role: 'tab', id: `kernel-${kind}-tab`, 'aria-selected': 'false', text: kind.toUpperCase() });
      b.addEventListener('click', () => pick(kind, b));
      tabs.append(b);
    }
    box.append(h('h2', {}, 'What the compiler made of ', h('code', { text: k.variant })),
      h('p', { id: 'kernel-occupancy' }, h('b', { text: 'Theoretical occupancy: ' }), GL.occupancyText(c.occupancy),
        h('span', { class: 'muted small', text: ` · ${c.registers ?? '—'} registers, ${c.shared_bytes ?? '—'} B shared, block ${(k.block || []).join('×')}` })),
      tabs, asm);
  }

  async function listKernels() {
    const body = document.querySelector('#kernel-list tbody');
    if (!body) return;
    const r = await GL.api('GET', '/kernels');
    GL.clear(body);
    const list = (r.json && r.json.kernels) || [];
    for (const k of list) {
      const c = k.compile || {};
      body.append(h('tr', { 'data-kernel-id': k.id },
        h('td', { text: k.variant }), h('td', { text: k.name }), h('td', { text: k.experiment }),
        h('td', { text: k.owner }), h('td', { class: 'num', text: c.registers ?? '—' }),
        h('td', { class: 'num', text: c.shared_bytes ?? '—' }), h('td', { text: k.public ? 'public' : 'private' }),
        h('td', { class: 'num versions', text: String(k.versions ?? 1) }),
        h('td', { class: 'act nowrap' },
          h('button', { type: 'button', class: 'ghost small open', text: 'Open', onclick: () => openStored(k.id) }), ' ',
          h('button', { type: 'button', class: 'ghost small show-versions', text: 'Versions', onclick: () => showVersions(k) }), ' ',
          h('button', { type: 'button', class: 'ghost small delete', text: 'Delete', onclick: () => deleteStored(k) }))));
    }
    document.getElementById('kernel-list-empty').hidden = list.length > 0;
  }

  /* ---- versions: GET /kernels/{id}/versions, .../versions/{n}, .../diff ---- */

  /* A unified diff, its lines coloured by what they are. */
  function diffView(text) {
    return h('pre', { class: 'diff', id: 'kernel-diff' }, text.split('\n').map((l) => h('span', {
      class: /^(\+\+\+|---)/.test(l) ? 'diff-head' : l.startsWith('@@') ? 'diff-hunk' : l.startsWith('+') ? 'diff-add'
        : l.startsWith('-') ? 'diff-del' : 'diff-same' }, l || ' ')));
  }

  /* Kernel k's versions under the list: each opened into the editor, deleted, or
   * picked as one side of a comparison (from, to: GET /kernels/{id}/diff). */
  let versionsOf = null; /* the kernel whose versions are shown */
  async function showVersions(k) {
    versionsOf = k.id;
    const box = document.getElementById('kernel-versions');
    GL.clear(box);
    box.hidden = false;
    let list;
    try {
      list = (await GL.getJSON(`/kernels/${k.id}/versions`)).versions;
    } catch (e) {
      box.append(h('p', { class: 'error', text: `kernel:${k.id}: ${e.message}` }));
      return;
    }
    const out = h('div', { id: 'kernel-diff-box' });
    const pick = h('form', { id: 'kernel-versions-form' });
    const rows = list.map((v, i) => h('tr', { 'data-version': v.version },
      h('td', {}, h('input', { type: 'radio', name: 'from', value: v.version, 'aria-label': `from version ${v.version}`,
        checked: i === Math.max(0, list.length - 2) })),
      h('td', {}, h('input', { type: 'radio', name: 'to', value: v.version, 'aria-label': `to version ${v.version}`,
        checked: i === list.length - 1 })),
      h('th', { text: v.variant }), h('td', { text: GL.fmtTime(v.created) }),
      h('td', { class: 'mono', text: (v.source_sha256 || '').slice(0, 12) }),
      h('td', { class: 'num', text: (v.compile || {}).registers ?? '—' }),
      h('td', { class: 'num', title: GL.occupancyText((v.compile || {}).occupancy),
        text: (v.compile || {}).occupancy && v.compile.occupancy.available !== false
          ? `${GL.fmtNum(100 * v.compile.occupancy.fraction, 3)} % (${v.compile.occupancy.limiter})` : '—' }),
      h('td', { class: 'act nowrap' },
        h('button', { type: 'button', class: 'ghost small open', text: 'Open', onclick: () => openVersion(k, v.version) }), ' ',
        h('button', { type: 'button', class: 'ghost small asm', text: 'PTX / SASS', onclick: () => showCompiledVersion(k, v) }), ' ',
        h('button', { type: 'button', class: 'ghost small delete', text: 'Delete', onclick: () => deleteVersion(k, v) }))));
    pick.append(h('div', { class: 'table-wrap' }, h('table', { class: 'data compact', id: 'kernel-versions-table' },
      h('thead', {}, h('tr', {}, ['From', 'To', 'Version', 'Created', 'Source', 'Registers', 'Occupancy', ''].map((t) => h('th', { text: t })))),
      h('tbody', {}, rows))),
    h('div', { class: 'actions' }, h('button', { type: 'submit', id: 'kernel-compare', text: 'Compare' }),
      h('span', { class: 'muted', text: 'a unified diff of the two versions\' sources' })));
    pick.addEventListener('submit', async (e) => {
      e.preventDefault();
      GL.clear(out);
      const from = pick.elements.from.value, to = pick.elements.to.value;
      try {
        const text = await GL.getText(`/kernels/${k.id}/diff?from=${from}&to=${to}`);
        out.append(text ? diffView(text) : h('p', { class: 'muted', id: 'kernel-diff', text: `versions ${from} and ${to} have the same source` }));
      } catch (err) {
        out.append(h('p', { class: 'error', text: err.message }));
      }
    });
    box.append(h('h3', {}, `Versions of ${k.name} (kernel:${k.id})`), pick, out);
  }

  /* A listed version into the compiler panel (a listing's entry has no source but its
   * compile report), scrolled to. */
  function showCompiledVersion(k, v) {
    showCompiled(Object.assign({ id: k.id }, v));
    document.getElementById('compiler-panel').scrollIntoView();
  }

  async function openVersion(k, n) {
    try {
      const v = await GL.getJSON(`/kernels/${k.id}/versions/${n}`);
      if (await ed.fill(v)) document.getElementById('editor-panel').scrollIntoView();
    } catch (e) {
      document.getElementById('kernel-list-status').textContent = `kernel:${k.id}@${n}: ${e.message}`;
    }
  }

  async function deleteVersion(k, v) {
    if (!window.confirm(`Delete ${v.variant} (${k.name})?`)) return;
    const r = await GL.api('DELETE', `/kernels/${k.id}/versions/${v.version}`);
    const p = GL.problem(r);
    const note = document.getElementById('kernel-list-status');
    note.className = p ? 'error' : 'muted';
    note.textContent = p ? `${v.variant}: ${p.detail}` : `${v.variant} deleted${r.json && r.json.kernel_deleted ? ', and with it the kernel' : ''}.`;
    await listKernels();
    if (r.json && r.json.kernel_deleted) document.getElementById('kernel-versions').hidden = true;
    else showVersions(k);
  }

  /* A leaderboard's table (GET /leaderboard/...), its body empty: GL.leaderboardRows
   * fills it. The kernels page's and a problem's page's. */
  GL.leaderboardTable = (id) => h('table', { class: 'data compact', id },
    h('thead', {}, h('tr', {}, ['#', 'Variant', 'Kernel', 'Figure', 'Median ms', '% of ceiling', 'Job'].map((t) => h('th', { text: t })))),
    h('tbody'));

  /* A leaderboard's rows into its table's body, replacing what it held. */
  GL.leaderboardRows = function (body, rows) {
    GL.clear(body);
    for (const x of rows) {
      body.append(h('tr', { 'data-variant': x.variant },
        h('td', { class: 'num', text: x.rank }), h('th', { text: x.variant }),
        h('td', { text: x.user_kernel ? `${x.user_kernel.name} (${x.user_kernel.owner})` : 'built-in' }),
        h('td', { class: 'num', text: `${GL.fmtNum(x.figure, 4)} ${x.unit}` }),
        h('td', { class: 'num', text: GL.fmtMs(x.median_ms) }),
        h('td', { class: 'num', text: x.percent_of_ceiling == null ? '—' : `${GL.fmtNum(x.percent_of_ceiling, 3)}%` }),
        h('td', {}, h('a', { href: `#/jobs/${x.job}`, text: `#${x.job}` }))));
    }
  };

  async function leaderboard(form) {
    const body = document.querySelector('#leaderboard tbody');
    const f = new FormData(form);
    const size = f.get('size').trim();
    const r = await GL.api('GET', `/leaderboard/${f.get('experiment')}${size ? `?size=${encodeURIComponent(size)}` : ''}`);
    const rows = (r.json && r.json.rows) || [];
    GL.leaderboardRows(body, rows);
    document.getElementById('leaderboard-empty').hidden = rows.length > 0;
  }

  async function show() {
    const v = view();
    if (v.childElementCount) {
      listKernels();
      await listProblems();
      for (const sel of v.querySelectorAll('#kernel-experiment, #leaderboard-form select[name="experiment"]')) refillTargets(sel, sigs);
      problems.full.clear(); /* a problem's newer version: its signature and template */
      const name = problemOf(document.getElementById('kernel-experiment').value);
      if (name) { try { await problemFull(name); } catch (e) { /* deleted */ } ed.signature(); }
      return;
    }
    let list;
    try { list = await signatures(); } catch (e) { v.append(h('p', { class: 'error', text: e.message })); return; }
    await listProblems();
    const board = h('form', { id: 'leaderboard-form' },
      h('label', {}, 'experiment ', h('select', { name: 'experiment' }, targetOptions(list))),
      h('label', {}, ' size ', h('input', { name: 'size', placeholder: 'default' })),
      h('button', { type: 'submit', text: 'Show' }));
    board.addEventListener('submit', (e) => { e.preventDefault(); leaderboard(board); });
    v.append(
      h('section', { class: 'panel', id: 'editor-panel' }, h('h2', { text: 'Your kernel' }),
        h('p', { class: 'muted', text: 'Device code only, with the experiment\'s signature (or a problem\'s); gpulab compiles it with NVRTC, runs it in its runner beside the built-ins (a problem\'s reference), checks and times it the same way.' }),
        editor(list), h('div', { id: 'kernel-result' })),
      h('section', { class: 'panel', id: 'compiler-panel', hidden: true }),
      h('section', { class: 'panel' }, h('h2', { text: 'Kernels' }),
        h('div', { class: 'table-wrap' }, h('table', { class: 'data compact', id: 'kernel-list' },
          h('thead', {}, h('tr', {}, ['Variant', 'Name', 'Experiment', 'Owner', 'Registers', 'Shared B', 'Visibility', 'Versions', ''].map((t) => h('th', { text: t })))),
          h('tbody'))),
        h('p', { class: 'muted empty', id: 'kernel-list-empty', hidden: true, text: 'No kernels yet: compile one above.' }),
        h('p', { class: 'muted', id: 'kernel-list-status', role: 'status' }),
        h('div', { id: 'kernel-versions', hidden: true })),
      h('section', { class: 'panel', id: 'leaderboard-panel' }, h('h2', { text: 'Leaderboard' }), board,
        h('div', { class: 'table-wrap' }, GL.leaderboardTable('leaderboard')),
        h('p', { class: 'muted empty', id: 'leaderboard-empty', text: 'No verified runs at this size yet.' })));
    ed.editor.refresh(); /* laid out now that it is on the page */
    listKernels();
    leaderboard(board);
  }

  GL.kernelsView = { show, editor: () => ed.editor };
})();

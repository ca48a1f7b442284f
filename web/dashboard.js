'use strict';
/* The dashboard view: the device panel, a form per job type, the live queue (fed
 * by app.js from GET /events) and the history chart. */
(function () {
  const { h, clear } = GL;
  const dash = (GL.dash = {});
  const PAGE_ROWS = 20; /* finished jobs a page */
  const ACTIVE_MAX = 200; /* unfinished jobs listed, per state */

  /* ---- device ---- */

  function deviceRows(d) {
    const rows = [
      ['Name', d.name], ['Backend', d.backend],
      ['Compute capability', d.compute_capability], ['SMs', d.sms],
      ['CPU cores', d.cpu_cores],
      ['Memory', d.memory_total_bytes != null ? `${GL.fmtBytes(d.memory_total_bytes)} total, ` +
        `${GL.fmtBytes(d.memory_free_bytes)} free` : null],
      ['SM clock', d.sm_clock_mhz ? `${d.sm_clock_mhz} MHz` : null],
      ['Memory clock', d.memory_clock_mhz ? `${d.memory_clock_mhz} MHz` +
        (d.memory_bus_bits ? ` · ${d.memory_bus_bits}-bit bus` : '') : null],
      ['L2', d.l2_bytes ? GL.fmtBytes(d.l2_bytes) : null],
      ['CUDA', d.cuda_runtime ? `runtime ${d.cuda_runtime}, driver ${d.cuda_driver}` : null],
      ['Streams', d.streams], ['Job memory limit', d.job_memory_limit_bytes != null
        ? GL.fmtBytes(d.job_memory_limit_bytes) : null],
      ['Devices', d.device_count > 1 ? d.device_count : null],
    ];
    return rows.filter(([, v]) => v != null && v !== '');
  }

  function renderDevice(d) {
    const box = clear(document.getElementById('device'));
    const dl = h('dl', { class: 'kv' });
    for (const [k, v] of deviceRows(d))
      dl.append(h('dt', { text: k }), h('dd', { 'data-key': k.toLowerCase(), text: String(v) }));
    const health = h('dd', { 'data-key': 'health' },
      h('span', { class: `badge ${d.healthy === false ? 'state-failed' : 'state-done'}`,
        text: d.healthy === false ? 'unhealthy' : 'healthy' }));
    dl.append(h('dt', { text: 'Health' }), health);
    box.append(dl);
    const ceilings = GL.ceilings(d);
    box.append(h('h3', { text: 'Measured ceilings' }));
    if (ceilings.length) {
      box.append(h('dl', { class: 'kv' }, ceilings.map((c) => [h('dt', { text: c.name, title: c.about }),
        h('dd', { text: `${GL.fmtNum(c.value)} ${c.unit}` })])));
    } else {
      box.append(h('p', { class: 'muted small', text: d.backend === 'cpu'
        ? 'None on the CPU backend: runs show no % of ceiling.'
        : 'Not reported by this gpulabd: runs show no % of ceiling.' }));
    }
    const top = document.getElementById('top-device');
    top.textContent = `${d.name} · ${d.backend}`;
  }

  /* The other devices of this gpulabd, one line each (GET /devices). */
  function renderOtherDevices(list) {
    if (list.length < 2) return;
    const box = document.getElementById('device');
    box.append(h('h3', { text: `All ${list.length} devices` }));
    const rows = list.map((x) => h('tr', {},
      h('td', { text: String(x.index) }), h('td', { text: x.name }),
      h('td', { class: 'num', text: GL.fmtBytes(x.memory_total_bytes - x.memory_free_bytes) }),
      h('td', { class: 'num', text: GL.fmtBytes(x.memory_total_bytes) }),
      h('td', {}, h('span', { class: `badge ${x.healthy === false ? 'state-failed' : 'state-done'}`,
        text: x.healthy === false ? 'unhealthy' : 'healthy' }))));
    box.append(h('table', { class: 'table small', id: 'device-list' },
      h('thead', {}, h('tr', {}, ['#', 'name', 'used', 'memory', 'health'].map((t) => h('th', { text: t })))),
      h('tbody', {}, rows)));
  }

  /* Who gpulabd takes this page for: a token's client, a Unix user (through its
   * --socket, e.g. an ssh tunnel to it), or an address. */
  dash.loadMe = async function () {
    try {
      const me = (GL.me = await GL.getJSON('/me'));
      const by = { token: 'token', unix_socket: 'Unix user', address: 'address' }[me.by] || me.by;
      document.getElementById('top-user').textContent = `you: ${me.client} (${by})`;
    } catch (e) { /* an older gpulabd, or not allowed: nothing to show */ }
  };

  dash.loadDevice = async function () {
    try {
      const d = await GL.getJSON('/device');
      GL.device = d;
      renderDevice(d);
      if (d.device_count > 1) renderOtherDevices((await GL.getJSON('/devices')).devices);
      fillDeviceOptions(d);
      dash.loadMe();
    } catch (e) {
      clear(document.getElementById('device')).append(h('p', { class: 'error', text: e.message }));
    }
  };

  /* ---- forms ---- */

  /* The input of a field by its kind: a select for a choice, a decimal keypad for a
   * number, a numeric one for an integer (the default), a plain text input for a
   * list ("1, 3"), whose commas no numeric keypad has. */
  function typedInput(id, f, value) {
    const described = `${id}-hint ${id}-err`;
    if (f.kind === 'choice')
      return h('select', { id, name: f.name, 'aria-describedby': described },
        f.values.map((v) => h('option', { value: v, text: v, selected: v === value })));
    const inputmode = f.kind === 'number' ? 'decimal' : f.kind === 'list' ? null : 'numeric';
    return h('input', { id, name: f.name, type: 'text', inputmode, value: value ?? '', autocomplete: 'off',
      'aria-describedby': described });
  }

  /* A labelled field of form `type` (its id f-TYPE-NAME): f's input (extra.input, or
   * one by f's kind holding value), its hint and the place for the API's message on it. */
  function field(type, f, value, extra) {
    const id = `f-${type}-${f.name}`;
    const input = extra && extra.input ? extra.input : typedInput(id, f, value);
    return h('div', { class: `field${extra && extra.wide ? ' wide' : ''}`, 'data-field': f.name },
      h('label', { for: id, text: f.label }), input,
      h('small', { class: 'hint', id: `${id}-hint`, text: f.hint || '' }),
      h('div', { class: 'field-error', id: `${id}-err`, role: 'alert' }));
  }

  function inputSelect(type, slot) {
    const id = `f-${type}-${slot}`;
    const kind = h('select', { name: `${slot}-kind`, id, 'aria-label': `input ${slot} source` },
      h('option', { value: 'seed', text: 'generated (seed)' }),
      h('option', { value: 'buffer', text: 'buffer id' }),
      h('option', { value: 'job', text: 'output of job' }));
    const ref = h('input', { name: `${slot}-ref`, type: 'text', inputmode: 'numeric',
      placeholder: 'id', class: 'ref', 'aria-label': `input ${slot} id` });
    return field(type, { name: slot, label: `input ${slot}`, hint: 'seed, a buffer or a job\'s output' },
      null, { input: h('div', { class: 'pair' }, kind, ref) });
  }

  function buildForm(type) {
    const t = GL.TYPES[type];
    const form = h('form', { id: `form-${type}`, class: 'job-form', novalidate: true, 'data-type': type,
      role: 'tabpanel', hidden: true });
    form.append(h('p', { class: 'about', text: t.about }));
    const size = h('div', { class: 'fields' }, t.fields.map((f) => field(type, f, f.def)));
    if (t.runs) /* a list param whose entries are the runs (the pipeline's streams) */
      size.append(field(type, { name: t.runs.name, label: t.runs.name, hint: t.runs.hint, kind: 'list' },
        t.runs.def, { wide: true }));
    form.append(h('fieldset', {}, h('legend', { text: 'Size' }), size));
    if (t.variants) {
      const boxes = t.variants.map((v) => h('label', { class: 'check', title: t.variantDocs[v] || null },
        h('input', { type: 'checkbox', name: 'variant', value: v, checked: true }), v));
      form.append(h('fieldset', { class: 'field', 'data-field': 'variant' },
        h('legend', { text: 'Variants' }), h('div', { class: 'checks' }, boxes),
        h('div', { class: 'field-error', role: 'alert' })));
    }
    const timing = GL.TIMING_FIELDS.map((f) => field(type, f, t.timing[f.name]));
    const graph = h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'graph' }),
      'time each batch as one CUDA Graph');
    form.append(h('fieldset', {}, h('legend', { text: 'Timing' }),
      h('div', { class: 'fields' }, timing),
      h('div', { class: 'field', 'data-field': 'graph' }, graph, h('div', { class: 'field-error', role: 'alert' }))));
    if (t.extra && t.extra.length) {
      form.append(h('fieldset', {}, h('legend', { text: 'More' }), h('div', { class: 'fields' },
        t.extra.map((f) => (typeof f.def === 'boolean'
          ? h('div', { class: 'field', 'data-field': f.name }, h('label', { class: 'check' },
            h('input', { type: 'checkbox', name: f.name, checked: f.def }), f.label),
          h('div', { class: 'field-error', role: 'alert' }))
          : field(type, f, f.def))))));
    }
    form.append(optionsBlock(type, t));
    form.append(h('div', { class: 'actions' },
      h('button', { type: 'submit', class: 'primary', text: `Run ${t.title.toLowerCase()}` }),
      h('button', { type: 'button', class: 'ghost', text: 'Defaults', onclick: () => resetForm(type) }),
      h('span', { class: 'form-status', role: 'status', 'aria-live': 'polite' })));
    form.addEventListener('submit', (e) => { e.preventDefault(); submit(form, type); });
    form.addEventListener('input', (e) => clearFieldError(e.target.closest('[data-field]')));
    return form;
  }

  function optionsBlock(type, t) {
    const opts = h('div', { class: 'fields' },
      t.inputs.map((slot) => inputSelect(type, slot)),
      field(type, { name: 'priority', label: 'priority', hint: '-1000..1000, higher first' }, 0),
      field(type, { name: 'isolation', label: 'isolation', hint: 'exclusive: timed alone' }, null, {
        input: h('select', { name: 'isolation', id: `f-${type}-isolation` },
          h('option', { value: 'exclusive', text: 'exclusive' }), h('option', { value: 'shared', text: 'shared' })),
      }),
      field(type, { name: 'depends_on', label: 'depends on', hint: 'job ids, comma-separated', kind: 'list' }, ''),
      field(type, { name: 'dependency', label: 'dependency', hint: 'how a child waits' }, null, {
        input: h('select', { name: 'dependency', id: `f-${type}-dependency` },
          h('option', { value: 'event', text: 'event (device)' }), h('option', { value: 'host', text: 'host' })),
      }),
      field(type, { name: 'device', label: 'device', hint: 'where it runs' }, null, {
        input: h('select', { name: 'device', id: `f-${type}-device`, class: 'device-select' },
          h('option', { value: '', text: 'any (placed by gpulabd)' })),
      }),
      h('div', { class: 'field', 'data-field': 'keep_output' },
        h('label', { class: 'check' }, h('input', { type: 'checkbox', name: 'keep_output' }),
          'keep the output as a buffer'), h('div', { class: 'field-error', role: 'alert' })));
    return h('details', { class: 'options' }, h('summary', { text: 'Inputs and job options' }), opts);
  }

  function fillDeviceOptions(d) {
    const n = d.device_count || 1;
    for (const sel of document.querySelectorAll('select.device-select')) {
      while (sel.options.length > 1) sel.remove(1);
      for (let i = 0; i < n; i++) sel.append(h('option', { value: String(i), text: `device ${i}` }));
      sel.closest('.field').hidden = n < 2;
    }
  }

  function resetForm(type) {
    const old = document.getElementById(`form-${type}`);
    const form = buildForm(type);
    form.hidden = old.hidden;
    old.replaceWith(form);
    if (GL.device) fillDeviceOptions(GL.device);
  }

  /* A JSON integer as the user wrote it (so 64-bit seeds survive), else a string the
   * API will refuse by name. */
  function intText(s) {
    s = s.trim();
    return /^-?\d+$/.test(s) ? s.replace(/^(-?)0+(?=\d)/, '$1') : JSON.stringify(s);
  }

  function listText(s) {
    const parts = s.split(/[\s,]+/).filter(Boolean);
    return `[${parts.map(intText).join(',')}]`;
  }

  function obj(entries) {
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`;
  }

  /* The POST /jobs body, as JSON text, from the form. Empty fields are left out (the
   * API's default applies). */
  function requestBody(form, type) {
    const t = GL.TYPES[type];
    const val = (name) => (form.elements[name] ? form.elements[name].value.trim() : '');
    const params = [];
    for (const f of [...t.fields, ...GL.TIMING_FIELDS])
      if (val(f.name) !== '') params.push([f.name, intText(val(f.name))]);
    if (t.runs && val(t.runs.name) !== '') params.push([t.runs.name, listText(val(t.runs.name))]);
    if (t.variants) {
      const on = [...form.querySelectorAll('input[name=variant]')].filter((c) => c.checked).map((c) => c.value);
      if (on.length !== t.variants.length) params.push(['variant', JSON.stringify(on)]);
    }
    if (form.elements.graph.checked) params.push(['graph', 'true']);
    for (const f of t.extra || []) { /* params only experiments.json named: sent when changed */
      const el = form.elements[f.name];
      if (typeof f.def === 'boolean') {
        if (el.checked !== f.def) params.push([f.name, String(el.checked)]);
      } else if (el.value.trim() !== String(f.def)) {
        const v = el.value.trim();
        params.push([f.name, /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(v) ? v : JSON.stringify(v)]);
      }
    }
    for (const slot of t.inputs) {
      const kind = val(`${slot}-kind`);
      if (kind !== 'seed') params.push([slot, obj([[kind, intText(val(`${slot}-ref`))]])]);
    }
    const top = [['type', JSON.stringify(type)], ['params', obj(params)]];
    if (val('priority') !== '' && val('priority') !== '0') top.push(['priority', intText(val('priority'))]);
    if (val('isolation') !== 'exclusive') top.push(['isolation', JSON.stringify(val('isolation'))]);
    if (val('dependency') !== 'event') top.push(['dependency', JSON.stringify(val('dependency'))]);
    if (val('depends_on') !== '') top.push(['depends_on', listText(val('depends_on'))]);
    if (val('device') !== '') top.push(['device', intText(val('device'))]);
    if (form.elements.keep_output.checked) top.push(['keep_output', 'true']);
    return obj(top);
  }

  function clearFieldError(box) {
    if (!box) return;
    const err = box.querySelector('.field-error');
    if (err) err.textContent = '';
    box.classList.remove('invalid');
    for (const el of box.querySelectorAll('input, select')) el.removeAttribute('aria-invalid');
  }

  /* Shows the API's error next to the field it names ("params.m" is m's), or beside
   * the submit button when it names none the form has. */
  function showError(form, err) {
    const name = (err.field || '').replace(/^params\./, '').replace(/\[.*$/, '').replace(/\..*$/, '');
    const box = name && form.querySelector(`[data-field="${CSS.escape(name)}"]`);
    const status = form.querySelector('.form-status');
    if (box) {
      const details = box.closest('details');
      if (details) details.open = true;
      box.classList.add('invalid');
      box.querySelector('.field-error').textContent = err.detail;
      const input = box.querySelector('input:not([type=checkbox]), select, input');
      if (input) { input.setAttribute('aria-invalid', 'true'); input.focus(); }
      status.className = 'form-status error';
      status.textContent = `Not queued: fix ${name}.`;
    } else {
      status.className = 'form-status error';
      status.textContent = err.detail;
    }
  }

  /* Posts a job from form (path: /jobs?wait=0, or a problem's /problems/{name}/jobs?wait=0;
   * body: its JSON text) and says so in the form's status: "Queued job #N", a link to
   * its page, the job put in the live queue. The API's refusal goes to refused(problem)
   * (by default beside the field it names). Resolves to the job, or null. */
  dash.submitJob = async function (form, path, body, refused) {
    for (const box of form.querySelectorAll('[data-field]')) clearFieldError(box);
    const status = form.querySelector('.form-status');
    const button = form.querySelector('button[type=submit]');
    status.className = 'form-status';
    status.textContent = 'Submitting…';
    button.disabled = true;
    try {
      const r = await GL.api('POST', path, body);
      if (r.ok && r.json && r.json.id) {
        clear(status).append('Queued ', h('a', { href: `#/jobs/${r.json.id}`, 'data-job-id': r.json.id,
          text: `job #${r.json.id}` }), '.');
        status.className = 'form-status ok';
        dash.upsertJob(r.json);
        return r.json;
      } else if (GL.problem(r)) {
        (refused || ((e) => showError(form, e)))(GL.problem(r));
      } else {
        status.className = 'form-status error';
        status.textContent = `gpulabd answered HTTP ${r.status}`;
      }
    } catch (e) {
      status.className = 'form-status error';
      status.textContent = `Cannot reach gpulabd: ${e.message}`;
    } finally {
      button.disabled = false;
    }
    return null;
  };

  dash.field = field;
  dash.intText = intText;
  dash.jsonObj = obj;

  function submit(form, type) {
    return dash.submitJob(form, '/jobs?wait=0', requestBody(form, type));
  }

  function selectType(type) {
    for (const b of document.querySelectorAll('#type-tabs button'))
      b.setAttribute('aria-selected', String(b.dataset.type === type));
    for (const f of document.querySelectorAll('#forms form')) f.hidden = f.dataset.type !== type;
  }

  dash.buildForms = function () {
    const tabs = document.getElementById('type-tabs');
    const forms = document.getElementById('forms');
    for (const type of GL.TYPE_ORDER) {
      tabs.append(h('button', { type: 'button', role: 'tab', 'data-type': type,
        text: GL.TYPES[type].title, onclick: () => selectType(type) }));
      forms.append(buildForm(type));
    }
    if (GL.TYPE_ORDER.length) selectType(GL.TYPE_ORDER[0]);
    else forms.append(h('p', { class: 'error', text: 'gpulabd did not say which experiments it runs (/static/experiments.json)' }));
  };

  /* ---- the live queue ---- */

  const jobs = new Map(); /* id -> {job (as GET /jobs lists it), progress} */

  function runsOf(job) {
    const p = job.params || {};
    return GL.runCount(job.type, p);
  }

  function liveMs(job) {
    const now = Date.now();
    if (job.state === 'running' && job.started_at) return { queue: job.queue_ms, run: now - Date.parse(job.started_at) };
    if ((job.state === 'queued' || job.state === 'waiting') && job.created_at)
      return { queue: now - Date.parse(job.created_at), run: null };
    /* A job that never started, or failed with its parent (parent_failed: it may have
     * been issued, waiting on the device for the parent, but that is no run of its
     * own), shows no run time. */
    const never = !job.started_at || (job.error && job.error.code === 'parent_failed');
    return { queue: job.queue_ms, run: never ? null : job.run_ms };
  }

  /* A finished job's headline: its best run (the highest figure among those that
   * ran and passed, a baseline such as transpose's copy never) and its share of the
   * device's ceiling. */
  function headline(job) {
    const t = GL.TYPES[job.type];
    const baselines = t ? t.baselines : [];
    const runs = (job.result && job.result.runs || []).filter((r) => r.available && r.figure != null &&
      (!r.check || r.check.passed) && !baselines.includes(r.variant));
    if (!runs.length) return null;
    const best = runs.reduce((a, b) => (b.figure > a.figure ? b : a));
    const pct = GL.ceilingPercent(job.type, best, GL.device);
    return h('span', { class: 'headline' },
      h('span', { class: 'good', text: '✓ ' }), h('b', { text: best.variant }),
      ` ${GL.fmtNum(best.figure)} ${job.result.unit}`,
      pct != null ? h('span', { class: 'pct', text: ` · ${GL.fmtNum(pct, 3)} % of ceiling` }) : null);
  }

  function progressCell(entry) {
    const job = entry.job;
    if (job.state === 'done') {
      const passed = job.passed ?? (job.result ? job.result.passed : null);
      if (passed !== false && headline(job)) return headline(job);
      const runs = job.result ? job.result.runs : [];
      if (runs.length && runs.every((r) => !r.available)) /* a problem's job on the CPU backend */
        return h('span', { class: 'muted', title: runs[0].reason, text: 'no run available here' });
      return passed === false ? h('span', { class: 'bad', text: '✗ a check failed' })
        : h('span', { class: 'good', text: '✓ checked' });
    }
    if (job.state === 'failed' || job.state === 'canceled')
      return h('span', { class: job.state === 'failed' ? 'bad' : 'muted',
        text: GL.errorText(job) });
    if (job.state === 'running' && entry.progress) {
      const p = entry.progress, runs = runsOf(job), batches = (job.params || {}).batches;
      /* Interleaved (the default): each batch times every run, forwards on even batches
       * and backwards on odd ones, so the batch is the progress. Sequential: run by run. */
      const interleaved = (job.params || {}).order !== 'sequential';
      const within = p.batch % 2 ? runs - p.run : p.run + 1;
      const done = !runs || !batches ? null
        : Math.min(1, interleaved ? (p.batch * runs + within) / (runs * batches) : (p.run * batches + p.batch + 1) / (runs * batches));
      const batch = `batch ${p.batch + 1}${batches ? `/${batches}` : ''}`;
      return h('span', { class: 'progress' },
        done != null ? h('progress', { max: '1', value: String(done) }) : null,
        interleaved ? ` ${batch} · ${runs || ''} runs interleaved` : ` run ${p.run + 1}${runs ? `/${runs}` : ''} · ${batch}`);
    }
    if (job.state === 'waiting') return h('span', { class: 'muted', text: `after ${(job.depends_on || []).map((d) => `#${d}`).join(', ')}` });
    return h('span', { class: 'muted', text: job.state === 'running' ? 'warming up' : '' });
  }

  function renderRow(tr, entry) {
    const job = entry.job, ms = liveMs(job);
    const cancel = GL.FINAL.has(job.state) ? '' : h('button', { type: 'button', class: 'ghost small',
      text: 'Cancel', onclick: () => GL.api('DELETE', `/jobs/${job.id}`).then(() => dash.refreshJob(job.id)) });
    clear(tr).append(
      h('td', {}, h('a', { href: `#/jobs/${job.id}`, text: `#${job.id}` })),
      h('td', { class: 'type', text: GL.jobTypeLabel(job) }),
      h('td', { class: 'size', text: GL.sizeLabel(job.type, job.params) }),
      h('td', { class: 'client', text: job.client || '' }),
      h('td', { class: 'state' }, GL.stateBadge(job.state)),
      h('td', { class: 'num queue-ms', text: GL.fmtDuration(ms.queue) }),
      h('td', { class: 'num run-ms', text: GL.fmtDuration(ms.run) }),
      h('td', { class: 'result' }, progressCell(entry)),
      h('td', { class: 'act' }, cancel));
    tr.dataset.state = job.state;
  }

  /* The queue's two parts: what is queued, waiting and running (all of it, running
   * first, then oldest first: the order it will run), and one page of finished jobs
   * (newest first, by id as gpulabd lists them, of the state filter). */
  const ACTIVE_ORDER = { running: 0, waiting: 1, queued: 2 };
  const finished = { ids: [], state: '', cursors: [0], page: 0, next: null };

  function renderBody(tbody, ids) {
    const rows = new Map([...tbody.children].map((tr) => [Number(tr.dataset.jobId), tr]));
    let prev = null;
    for (const id of ids) {
      const tr = rows.get(id) || h('tr', { 'data-job-id': id });
      const entry = jobs.get(id);
      if (entry.dirty !== false || !tr.firstChild) { renderRow(tr, entry); entry.dirty = false; }
      if (prev ? prev.nextSibling !== tr : tbody.firstChild !== tr)
        prev ? prev.after(tr) : tbody.prepend(tr);
      prev = tr;
      rows.delete(id);
    }
    for (const tr of rows.values()) tr.remove();
  }

  function renderQueue() {
    const active = [...jobs.values()].filter((e) => !GL.FINAL.has(e.job.state)).map((e) => e.job)
      .sort((a, b) => ACTIVE_ORDER[a.state] - ACTIVE_ORDER[b.state] || a.id - b.id).map((j) => j.id);
    const done = finished.ids.filter((id) => jobs.has(id) && GL.FINAL.has(jobs.get(id).job.state));
    for (const [id, e] of jobs) /* neither unfinished nor on the page: forgotten */
      if (GL.FINAL.has(e.job.state) && !done.includes(id)) jobs.delete(id);
    renderBody(document.getElementById('queue-active'), active);
    renderBody(document.getElementById('queue-finished'), done);
    document.getElementById('queue-active-head').hidden = active.length === 0;
    document.getElementById('queue-finished-head').hidden = done.length === 0;
    document.getElementById('queue-loading').hidden = true; /* a listing came: empty means empty */
    document.getElementById('queue-empty').hidden = jobs.size > 0 || finished.page > 0;
    document.getElementById('queue-page').textContent = `page ${finished.page + 1}`;
    document.getElementById('queue-newer').disabled = finished.page === 0;
    document.getElementById('queue-older').disabled = !finished.next;
  }

  /* Fetches the finished page again (its jobs with their results, for the headlines). */
  let finishedSeq = 0;
  dash.refreshFinished = async function () {
    const seq = ++finishedSeq;
    const cursor = finished.cursors[finished.page];
    const q = `/jobs?limit=${PAGE_ROWS}&fields=result${finished.state ? `&state=${finished.state}` : ''}` +
      (cursor ? `&cursor=${cursor}` : '');
    try {
      const list = await GL.getJSON(q);
      if (seq !== finishedSeq) return; /* a newer page was asked for */
      const page = list.jobs.filter((j) => GL.FINAL.has(j.state));
      const fetched = page.map((j) => j.id);
      /* Jobs whose end the stream told of while this page was on its way belong on it
       * where their ids fall inside it (or it is not full). */
      const oldest = fetched.length < PAGE_ROWS ? 0 : fetched[fetched.length - 1];
      const told = finished.page === 0 ? finished.ids.filter((id) => id > oldest && !fetched.includes(id)) : [];
      finished.ids = [...fetched, ...told].sort((a, b) => b - a).slice(0, PAGE_ROWS);
      finished.next = list.next_cursor;
      for (const job of page) upsert(job);
      renderQueue();
    } catch (e) { /* app.js shows the connection state */ }
  };

  dash.showFinished = function (change) {
    if (change.state !== undefined) Object.assign(finished, { state: change.state, cursors: [0], page: 0, next: null });
    if (change.older && finished.next) { finished.cursors[finished.page + 1] = finished.next; finished.page++; }
    if (change.newer && finished.page > 0) finished.page--;
    finished.ids = [];
    renderQueue();
    dash.refreshFinished();
  };

  dash.initQueue = function () {
    document.getElementById('queue-state').addEventListener('change', (e) => dash.showFinished({ state: e.target.value }));
    document.getElementById('queue-older').addEventListener('click', () => dash.showFinished({ older: true }));
    document.getElementById('queue-newer').addEventListener('click', () => dash.showFinished({ newer: true }));
  };

  /* A job ended while the first page of its state is shown: it heads the page. */
  function onFinished(job) {
    if (finished.page !== 0 || (finished.state && finished.state !== job.state)) return;
    if (!finished.ids.includes(job.id))
      finished.ids = [job.id, ...finished.ids].sort((a, b) => b - a).slice(0, PAGE_ROWS);
  }

  /* Ids seen finished. A listing may have left gpulabd before a job's end and arrive
   * after its state event: it never takes a finished job back to running. */
  const ended = new Set();

  function upsert(job) {
    if (ended.has(job.id) && !GL.FINAL.has(job.state)) return;
    if (GL.FINAL.has(job.state)) ended.add(job.id);
    const entry = jobs.get(job.id) || {};
    const keep = entry.job && !GL.FINAL.has(entry.job.state) && GL.FINAL.has(job.state) ? null : entry.progress;
    const was = entry.job ? entry.job.state : null;
    jobs.set(job.id, { job: Object.assign(entry.job || {}, job), progress: keep, dirty: true });
    if (GL.FINAL.has(job.state) && !(was && GL.FINAL.has(was))) onFinished(jobs.get(job.id).job);
  }

  /* A job as GET /jobs or /jobs/{id} gave it. */
  dash.upsertJob = function (job) {
    upsert(job);
    renderQueue();
  };

  const inflight = new Map(); /* id -> whether it changed again while being fetched */
  /* Fetches one job again (its params, times and result): at once, and once more
   * after that when it changed meanwhile; one request per job at a time. */
  dash.refreshJob = async function (id) {
    if (inflight.has(id)) { inflight.set(id, true); return; }
    try {
      do {
        inflight.set(id, false);
        dash.upsertJob(await GL.getJSON(`/jobs/${id}`));
      } while (inflight.get(id));
    } catch (e) { /* forgotten by gpulabd */ } finally { inflight.delete(id); }
  };

  dash.refreshQueue = async function () {
    try {
      const lists = await Promise.all(['running', 'waiting', 'queued'].map((st) => GL.getJSON(`/jobs?state=${st}&limit=${ACTIVE_MAX}`)));
      const now = new Set(lists.flatMap((l) => l.jobs.map((j) => j.id)));
      for (const [id, e] of jobs) if (!GL.FINAL.has(e.job.state) && !now.has(id)) dash.refreshJob(id); /* ended meanwhile */
      for (const l of lists) for (const job of l.jobs) upsert(job);
      renderQueue();
    } catch (e) { /* app.js shows the connection state */ }
    dash.refreshFinished();
    dash.refreshCounts();
  };

  let countsTimer = null;
  dash.refreshCounts = function () {
    if (countsTimer) return;
    countsTimer = setTimeout(async () => {
      countsTimer = null;
      try {
        const hl = await GL.getJSON('/health');
        const c = hl.jobs || {};
        const el = clear(document.getElementById('counts'));
        for (const s of ['queued', 'waiting', 'running', 'done', 'failed', 'canceled'])
          if (c[s]) el.append(h('span', { class: `count state-${s}`, text: `${c[s]} ${s}` }));
      } catch (e) { /* offline */ }
    }, 100);
  };

  /* SSE: {job, type, client, state} and {job, run, batch, sample_ms}. */
  dash.onState = function (ev) {
    const entry = jobs.get(ev.job);
    if (GL.FINAL.has(ev.state)) ended.add(ev.job);
    if (entry) {
      if (GL.FINAL.has(ev.state) && !GL.FINAL.has(entry.job.state)) onFinished({ id: ev.job, state: ev.state });
      entry.job.state = ev.state;
      if (ev.error) entry.job.error = entry.job.error || { code: ev.error, message: '' };
      if (ev.state === 'running' && !entry.job.started_at) entry.job.started_at = ev.time;
      entry.dirty = true;
      renderQueue();
    } else {
      dash.upsertJob({ id: ev.job, type: ev.type, client: ev.client, state: ev.state, created_at: ev.time });
    }
    dash.refreshJob(ev.job);
    dash.refreshCounts();
    if (ev.state === 'done') dash.historyJobDone(ev.type);
  };

  dash.onProgress = function (ev) {
    const entry = jobs.get(ev.job);
    if (!entry) return;
    entry.progress = ev;
    entry.dirty = true;
    renderQueue();
  };

  /* Running and queued rows tick. */
  dash.tick = function () {
    let any = false;
    for (const entry of jobs.values())
      if (!GL.FINAL.has(entry.job.state)) { entry.dirty = true; any = true; }
    if (any) renderQueue();
  };

  /* ---- history ---- */

  /* chosen: the variants plotted (null: the default, best and the baseline, else all). */
  const hist = { type: '', size: '', chosen: null, last: 20, metric: 'figure', jobs: [] };

  /* The variants run at the chosen size, in the jobs' own order (the first is the
   * lecture's baseline, the others' speedups are against it). */
  function histVariants() {
    const seen = [];
    for (const j of hist.jobs)
      if (GL.sizeLabel(hist.type, j.params) === hist.size)
        for (const r of j.result ? j.result.runs : []) if (r.available && !seen.includes(r.variant)) seen.push(r.variant);
    return seen;
  }

  function defaultChosen(variants) {
    const pick = variants.includes('best') ? ['best', variants[0]] : variants;
    return [...new Set(pick)];
  }

  function histControls() {
    const box = clear(document.getElementById('history-controls'));
    const sel = (name, label, options, value) => h('label', { class: 'control' }, label,
      h('select', { name, onchange: (e) => setHistory({ [name]: e.target.value }) },
        options.map(([v, t]) => h('option', { value: v, text: t, selected: v === value }))));
    const sizes = [...new Set(hist.jobs.map((j) => GL.sizeLabel(hist.type, j.params)))];
    const variants = histVariants();
    const chosen = (hist.chosen || defaultChosen(variants)).filter((v) => variants.includes(v));
    const toggle = (v, on) => {
      const now = new Set(chosen);
      if (on) now.add(v); else now.delete(v);
      setHistory({ chosen: variants.filter((x) => now.has(x)) });
    };
    box.append(
      sel('type', 'Type', GL.TYPE_ORDER.map((t) => [t, t]), hist.type),
      sel('size', 'Size', sizes.length ? sizes.map((s) => [s, s]) : [['', '—']], hist.size),
      sel('metric', 'Plot', [['figure', 'figure'], ['median_ms', 'median ms']], hist.metric),
      h('label', { class: 'control' }, 'Last', h('input', { type: 'number', name: 'last', min: '2', max: '1000',
        value: String(hist.last), onchange: (e) => setHistory({ last: Math.max(2, Number(e.target.value) || 20) }) }),
      'jobs'),
      h('fieldset', { class: 'control variants', id: 'history-variants' }, h('legend', { text: 'Variants' }),
        variants.length ? variants.map((v, i) => h('label', { class: 'check' },
          h('input', { type: 'checkbox', name: 'variant', value: v, checked: chosen.includes(v),
            onchange: (e) => toggle(v, e.target.checked) }),
          h('span', { class: 'swatch-dot', 'data-color': String(i % GL.PALETTE.length) }), v))
          : h('span', { class: 'muted', text: '—' })));
    return { sizes, variants, chosen };
  }

  function setHistory(change) {
    const reload = change.type && change.type !== hist.type;
    if (change.size && change.size !== hist.size) hist.chosen = null;
    Object.assign(hist, change);
    if (reload) { hist.size = change.size || ''; hist.chosen = change.chosen || null; loadHistory(); } else renderHistory();
  }

  const epoch = (iso) => new Date(iso).getTime();

  /* A run's value as plotted, and its spread (the job page's whiskers: GL.figureSpread,
   * in ms the same samples' range). */
  function histValue(run) {
    const ms = run.timing && run.timing.median_ms;
    if (hist.metric !== 'figure') {
      const sp = GL.figureSpread(run);
      return { y: ms, spread: sp ? [(run.figure * ms) / sp[1], (run.figure * ms) / sp[0]] : null };
    }
    return { y: run.figure, spread: GL.figureSpread(run) };
  }

  /* Hex colour with alpha, for the bands. */
  const alpha = (hex, a) => `${hex}${Math.round(a * 255).toString(16).padStart(2, '0')}`;

  function renderHistory() {
    const { sizes, variants, chosen } = histControls();
    if (!sizes.includes(hist.size) && sizes.length) { hist.size = sizes[0]; hist.chosen = null; return renderHistory(); }
    /* The last N jobs at this size, by when they finished. */
    const jobs = hist.jobs.filter((j) => GL.sizeLabel(hist.type, j.params) === hist.size && j.result && j.finished_at)
      .sort((a, b) => epoch(a.finished_at) - epoch(b.finished_at) || a.id - b.id).slice(-hist.last);
    const series = chosen.map((v) => ({ variant: v, color: GL.PALETTE[variants.indexOf(v) % GL.PALETTE.length],
      points: jobs.map((job) => ({ job, run: job.result.runs.find((r) => r.variant === v && r.available) }))
        .filter((p) => p.run) }));
    const rows = series.flatMap((s) => s.points.map((p) => Object.assign({ variant: s.variant }, p)))
      .sort((a, b) => epoch(b.job.finished_at) - epoch(a.job.finished_at) || b.job.id - a.job.id);
    const tbody = clear(document.querySelector('#history-table tbody'));
    /* One baseline for the whole table, named in its header: the size's first variant
     * (the lecture's), from each row's own job; a job without it has no speedup here. */
    const base = histVariants()[0];
    document.getElementById('history-speedup').textContent = base ? `Speedup vs ${base}` : 'Speedup';
    const speedup = (job, run) => {
      const b = job.result.runs.find((r) => r.variant === base && r.available && r.timing);
      return b && run.timing && run.timing.median_ms > 0 ? b.timing.median_ms / run.timing.median_ms : null;
    };
    for (const { job, run, variant } of rows)
      tbody.append(h('tr', { 'data-variant': variant },
        h('td', {}, h('a', { href: `#/jobs/${job.id}`, text: `#${job.id}` })),
        h('td', { text: GL.fmtTime(job.finished_at) }),
        h('td', { text: variant }),
        h('td', { class: 'num', text: GL.fmtMs(run.timing && run.timing.median_ms) }),
        h('td', { class: 'num', text: run.figure != null ? `${GL.fmtNum(run.figure)} ${run.unit}` : '—' }),
        h('td', { class: 'num', text: speedup(job, run) != null ? `${GL.fmtNum(speedup(job, run), 3)}×` : '—' }),
        h('td', {}, checkText(run)),
        h('td', { text: job.result.backend })));
    document.getElementById('history-loading').hidden = true; /* a listing came: empty means empty */
    document.getElementById('history-empty').hidden = rows.length > 0;
    const box = document.getElementById('history-chart-box');
    box.hidden = !GL.chartsOn() || rows.length === 0;
    if (box.hidden) return;
    const unit = rows[0].run.unit;
    const label = hist.metric === 'figure' ? unit : 'median ms';
    /* Per variant: the band's lower and upper edges (the upper filled down to the
     * lower: fill '-1'), then the medians' line over them. */
    const datasets = series.flatMap((s) => {
      const pts = s.points.map((p) => Object.assign({ x: epoch(p.job.finished_at), job: p.job.id }, histValue(p.run)));
      const edge = (i, name) => ({ label: `${s.variant} ${name}`, variant: s.variant, role: name,
        data: pts.map((p) => ({ x: p.x, y: p.spread ? p.spread[i] : p.y })),
        borderColor: alpha(s.color, 0.35), backgroundColor: alpha(s.color, 0.18), borderWidth: 1,
        pointRadius: 0, pointHitRadius: 0, tension: 0, fill: i ? '-1' : false });
      return [edge(0, 'low'), edge(1, 'high'),
        { label: s.variant, variant: s.variant, role: 'median', data: pts.map((p) => ({ x: p.x, y: p.y, job: p.job })),
          borderColor: s.color, backgroundColor: s.color, pointRadius: 3, tension: 0, fill: false }];
    });
    GL.chart(document.getElementById('history-chart'), {
      type: 'line',
      data: { datasets },
      options: {
        parsing: false,
        plugins: {
          legend: { display: true, labels: { filter: (item, data) => data.datasets[item.datasetIndex].role === 'median' } },
          title: { display: true, text: `${hist.type} ${hist.size}: ${label} of each job by when it finished, ` +
            `bands the batches' quartiles (min–max under 4) (${hist.metric === 'figure' ? 'higher' : 'lower'} is better)` },
          tooltip: { filter: (item) => item.dataset.role === 'median', callbacks: {
            title: (items) => (items.length ? GL.fmtTime(new Date(items[0].raw.x).toISOString()) : ''),
            label: (c) => `${c.dataset.label} #${c.raw.job}: ${GL.fmtNum(c.raw.y)} ${label}` } },
        },
        scales: {
          y: { beginAtZero: true, title: { display: true, text: label } },
          x: { type: 'linear', title: { display: true, text: 'finished (local time)' },
            ticks: { maxTicksLimit: 8, callback: (v) => fmtTick(v, jobs) } },
        },
      },
    });
  }

  /* An epoch-ms tick as local time: HH:MM:SS within a day, with the date beyond. */
  function fmtTick(v, jobs) {
    const d = new Date(v);
    const span = jobs.length ? epoch(jobs[jobs.length - 1].finished_at) - epoch(jobs[0].finished_at) : 0;
    const time = d.toLocaleTimeString('en-GB', { hour12: false });
    return span > 86400000 ? `${d.toLocaleDateString('en-GB')} ${time}` : time;
  }

  function checkText(run) {
    if (!run.check) return '—';
    return run.check.passed ? h('span', { class: 'good', text: '✓' })
      : h('span', { class: 'bad', text: `✗ ${run.check.mismatches} off` });
  }

  async function loadHistory() {
    if (!hist.type) hist.type = GL.TYPE_ORDER[0] || '';
    try {
      const list = await GL.getJSON(`/jobs?type=${hist.type}&state=done&limit=1000&fields=result`);
      hist.jobs = list.jobs.filter((j) => j.result);
    } catch (e) {
      hist.jobs = [];
    }
    renderHistory();
  }

  /* #/history/<type>/<variant>/<size>: the job page's link. */
  dash.showHistory = function (type, variant, size) {
    hist.type = type; hist.chosen = variant ? [variant] : null; hist.size = size;
    loadHistory().then(() => document.getElementById('history').scrollIntoView());
  };

  let histTimer = null;
  dash.historyJobDone = function (type) {
    if (type !== hist.type || histTimer) return;
    histTimer = setTimeout(() => { histTimer = null; loadHistory(); }, 400);
  };

  dash.loadHistory = loadHistory;
})();

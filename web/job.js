'use strict';
/* The job view (#/jobs/ID): the lecture's table of the job's runs, a bar chart of
 * the variants, the hardware's counters where the job asked for a profile (profile.js),
 * the per-stream timeline of runs that record one (the pipeline's), the kernels and
 * the params. */
(function () {
  const { h, clear } = GL;
  const view = (GL.jobView = { id: null, job: null });

  function header(job) {
    const size = GL.sizeLabel(job.type, job.params);
    const cancel = GL.FINAL.has(job.state) ? null : h('button', { type: 'button', class: 'ghost',
      text: 'Cancel job', onclick: () => GL.api('DELETE', `/jobs/${job.id}`).then(() => view.reload()) });
    const r = job.result;
    const first = r && r.runs.find((x) => x.available);
    const hist = first && job.type !== 'problem' ? h('a', { class: 'button ghost', text: 'History of this experiment',
      href: `#/history/${job.type}/${encodeURIComponent(first.variant)}/${encodeURIComponent(size)}` }) : null;
    const facts = [
      ['client', job.client], ['created', GL.fmtTime(job.created_at)],
      ['queued', GL.fmtDuration(job.queue_ms)], ['ran', ranFor(job)],
      ['backend', r ? `${r.backend} · ${r.device}` : null],
      ['device', job.device != null ? `${job.device}, stream ${job.stream}` : null],
      ['isolation', job.isolation], ['priority', job.priority || null],
      ['depends on', (job.depends_on || []).length ? job.depends_on.map((d) => `#${d}`).join(', ') : null],
      ['output buffer', job.output && job.output.buffer ? `#${job.output.buffer}` : null],
    ].filter(([, v]) => v != null);
    return h('div', { class: 'panel job-head' },
      h('div', { class: 'job-title' },
        h('a', { href: '#/', class: 'back', text: '← Dashboard' }),
        h('h2', {}, `Job #${job.id} · ${GL.jobTypeLabel(job)} `, h('span', { class: 'size', text: size })),
        GL.stateBadge(job.state), h('span', { class: 'spacer' }), hist, cancel),
      h('dl', { class: 'facts' }, facts.map(([k, v]) => h('div', {}, h('dt', { text: k }),
        h('dd', { id: k === 'ran' ? 'job-ran' : null, text: String(v) })))));
  }

  /* How long the job ran: run_ms once it ended, the time so far while it runs (the
   * page's clock ticks it, as the queue's), nothing for one that never started or
   * failed with its parent (parent_failed: it may have been issued, waiting on the
   * device for the parent, but that is no run of its own). */
  function ranFor(job) {
    if (job.error && job.error.code === 'parent_failed') return '— (its parent failed)';
    if (job.state === 'running') return job.started_at ? `${GL.fmtDuration(Date.now() - Date.parse(job.started_at))} so far` : 'starting';
    if (!job.started_at) return '—';
    return GL.fmtDuration(job.run_ms);
  }

  /* The running job's time so far, each tick of app.js's clock. */
  view.tick = function () {
    const el = document.getElementById('job-ran');
    if (el && view.job && view.job.state === 'running') el.textContent = ranFor(view.job);
  };

  function checkCell(run) {
    const c = run.check;
    if (!c) return h('td', { class: 'muted', text: '—' });
    const sci = (x) => (x == null ? '—' : x !== 0 && Math.abs(x) < 1e-3 ? x.toExponential(1) : GL.fmtNum(x, 3));
    const detail = c.tolerance ? `err ${sci(c.max_abs_err)} ≤ ${sci(c.tolerance)}` : 'exact';
    const what = c.checked === 'sample' ? ` · ${c.rows_checked} rows` : '';
    const prec = c.precision && !c.precision.passed ? ' · not FP32 precision' : '';
    const failed = c.failure ? `✗ ${c.failure}` : `✗ ${c.mismatches} of ${c.compared} off${prec}`;
    return h('td', { class: `${c.passed ? 'good' : 'bad'} nowrap`,
      title: `${c.compared} compared against ${c.reference}; ${c.tolerance_rule}` },
    c.passed ? `✓ ${detail}${what}` : failed);
  }

  function notes(run) {
    const n = [];
    if (run.contended) n.push('contended');
    (run.warnings || []).forEach((w) => n.push(`${w.code.replace('_', ' ')}: ${w.detail}`));
    if (run.mapped_to) n.push(`ran ${run.mapped_to}`);
    if (run.timing && run.timing.capped_by) n.push(`reps ${run.timing.reps} of ${run.timing.reps_requested}`);
    if (run.launch) n.push(`graph saves ${GL.fmtNum(run.launch.saved_us, 3)} µs/launch`);
    const t = run.timing || {};
    if (t.cold) n.push('cold L2');
    if (t.stopped_by && t.stopped_by !== 'batches') n.push(`stopped by ${t.stopped_by} after ${t.batches}`);
    if (run.clocks && run.clocks.throttled) n.push(`throttled: ${run.clocks.reasons.join(', ')}`);
    return n.join(' · ');
  }

  /* The speedup, its range from the samples' quartiles, and "same" where the range
   * holds 1 (the two are not told apart by these samples), all on the page; the
   * baseline (the first run, which the others are compared with) its 1× alone. */
  function speedupCell(run, baseline) {
    if (run.speedup == null) return h('td', { class: 'num', text: '—' });
    const r = Array.isArray(run.speedup_range) && !baseline ? run.speedup_range : null;
    const same = r && r[0] <= 1 && r[1] >= 1;
    return h('td', { class: 'num speedup', 'data-same': same ? 'true' : null },
      `${GL.fmtNum(run.speedup, 3)}×`,
      same ? h('span', { class: 'same', text: 'same', title: 'the samples\' quartiles overlap: not told apart' }) : null,
      r ? h('span', { class: 'range', text: `${GL.fmtNum(r[0], 3)}–${GL.fmtNum(r[1], 3)}×` }) : null);
  }

  /* A quantile of sorted xs (linear between neighbours). */
  function quantile(xs, q) {
    const at = (xs.length - 1) * q, lo = Math.floor(at), hi = Math.ceil(at);
    return xs[lo] + (xs[hi] - xs[lo]) * (at - lo);
  }

  /* [fast, slow] of a run's batch times: the quartiles, the extremes under 4 samples
   * (as speedup_range). The one spread every table and whisker shows. null without
   * samples. */
  function msSpread(run) {
    const t = run.timing || {};
    const ms = (t.samples_ms || []).filter((x) => x > 0).sort((a, b) => a - b);
    if (!ms.length) return null;
    return ms.length < 4 ? [ms[0], ms[ms.length - 1]] : [quantile(ms, 0.25), quantile(ms, 0.75)];
  }

  /* [lo, hi] of a run's figure over its batches: the figure is work over time, so a
   * sample's figure is the median's scaled by median / sample (msSpread's samples). */
  GL.figureSpread = function (run) {
    const t = run.timing || {};
    const sp = msSpread(run);
    if (!sp || run.figure == null || !(t.median_ms > 0)) return null;
    return [(run.figure * t.median_ms) / sp[1], (run.figure * t.median_ms) / sp[0]];
  };

  /* The device's ceiling in the runs' unit: a run's figure over its percent of it. */
  function ceilingValue(job, runs) {
    for (const r of runs) {
      const pct = GL.ceilingPercent(job.type, r, GL.device);
      if (pct > 0 && r.figure > 0) return { value: (100 * r.figure) / pct, name: r.ceiling || GL.TYPES[job.type].ceiling };
    }
    return null;
  }

  /* Chart.js draws the bars; this plugin the whiskers (figureSpread) over them and
   * the ceiling as a dashed line across. */
  const MARK_COLOR = '#333333', CEILING_COLOR = '#d62728';
  function marksPlugin(spreads, ceiling, unit) {
    return {
      id: 'gpulabMarks',
      afterDatasetsDraw(chart) {
        const { ctx, chartArea: a, scales: { x, y } } = chart;
        ctx.save();
        ctx.strokeStyle = MARK_COLOR;
        ctx.lineWidth = 2;
        spreads.forEach((sp, i) => {
          if (!sp) return;
          const cx = x.getPixelForValue(i), lo = y.getPixelForValue(sp[0]), hi = y.getPixelForValue(sp[1]);
          ctx.beginPath();
          ctx.moveTo(cx, lo); ctx.lineTo(cx, hi);
          ctx.moveTo(cx - 8, lo); ctx.lineTo(cx + 8, lo);
          ctx.moveTo(cx - 8, hi); ctx.lineTo(cx + 8, hi);
          ctx.stroke();
        });
        if (ceiling) {
          const cy = Math.round(y.getPixelForValue(ceiling.value)) + 0.5;
          ctx.strokeStyle = CEILING_COLOR;
          ctx.fillStyle = CEILING_COLOR;
          ctx.setLineDash([8, 4]);
          ctx.beginPath();
          ctx.moveTo(a.left, cy); ctx.lineTo(a.right, cy);
          ctx.stroke();
          ctx.textAlign = 'right';
          ctx.font = '12px sans-serif';
          ctx.fillText(`ceiling ${GL.fmtNum(ceiling.value)} ${unit}${ceiling.name ? ` (${ceiling.name})` : ''}`, a.right - 4, cy - 5);
        }
        ctx.restore();
      },
    };
  }

  function runsTable(job) {
    const r = job.result;
    const first = r.runs.find((x) => x.available); /* every speedup's baseline */
    const tbody = h('tbody');
    for (const run of r.runs) {
      if (!run.available) {
        tbody.append(h('tr', { class: 'unavailable', 'data-variant': run.variant },
          h('th', { scope: 'row', text: run.variant }),
          h('td', { colspan: '7', class: 'muted', text: `${run.user_kernel ? `${run.user_kernel.name}: ` : ''}not available: ${run.reason}` })));
        continue;
      }
      const t = run.timing || {};
      const pct = GL.ceilingPercent(job.type, run, GL.device);
      tbody.append(h('tr', { 'data-variant': run.variant },
        h('th', { scope: 'row', text: run.variant }),
        h('td', { class: 'num', title: t.samples_ms ? `samples: ${t.samples_ms.map((s) => GL.fmtMs(s)).join(', ')}` : '' },
          GL.fmtMs(t.median_ms),
          msSpread(run) ? h('span', { class: 'pm', text: ` [${GL.fmtMs(msSpread(run)[0])}–${GL.fmtMs(msSpread(run)[1])}]` }) : ''),
        h('td', { class: 'num', text: run.figure != null ? GL.fmtNum(run.figure) : '—' }),
        h('td', { class: 'num', text: pct != null ? `${GL.fmtNum(pct, 3)} %` : '—' }),
        h('td', { class: 'num', text: run.percent_of_limit != null ? `${GL.fmtNum(run.percent_of_limit, 3)} %` : '—' }),
        speedupCell(run, run === r.runs.find((x) => x.available)),
        checkCell(run),
        h('td', { class: 'muted small', text: notes(run) })));
    }
    return h('table', { class: 'data runs' },
      h('thead', {}, h('tr', {},
        h('th', { text: GL.TYPES[job.type] && GL.TYPES[job.type].runs ? 'Run' : 'Variant' }),
        h('th', { class: 'num', text: 'Median ms [quartiles]', title: 'the quartiles of the batches (their extremes under 4), as the whiskers' }),
        h('th', { class: 'num', text: r.unit }), h('th', { class: 'num', text: '% of ceiling' }),
        h('th', { class: 'num', text: '% of limit', title: r.limit
          ? `the limit at this size: a copy moving 2^${Math.log2(r.limit.bytes)} bytes, ${GL.fmtNum(r.limit.gbps)} GB/s timed ${r.limit.mode}`
          : 'no limit at this size: the figure counts flops, or none was measured' }),
        h('th', { class: 'num', text: first ? `Speedup vs ${first.variant}` : 'Speedup' }), h('th', { text: 'Check' }),
        h('th', { text: 'Notes' }))),
      tbody);
  }

  function barChart(job) {
    const runs = job.result.runs.filter((r) => r.available);
    const spreads = runs.map(GL.figureSpread);
    const ceiling = ceilingValue(job, runs);
    const canvas = h('canvas', { id: 'bar-chart', 'aria-label': `${job.result.unit} by variant`, role: 'img',
      'data-ceiling': ceiling ? ceiling.value : null, 'data-spreads': JSON.stringify(spreads) });
    const box = h('div', { class: 'chart-box' }, canvas);
    const top = Math.max(...runs.map((r, i) => (spreads[i] ? spreads[i][1] : r.figure || 0)), ceiling ? ceiling.value : 0);
    requestAnimationFrame(() => GL.chart(canvas, {
      type: 'bar',
      data: {
        labels: runs.map((r) => r.variant),
        datasets: [{ label: job.result.unit, data: runs.map((r) => r.figure),
          backgroundColor: runs.map((r, i) => (r.check && !r.check.passed ? '#e45756' : GL.PALETTE[i % GL.PALETTE.length])),
          borderRadius: 3, maxBarThickness: 90 }],
      },
      options: {
        plugins: { legend: { display: false }, title: { display: true,
          text: `${job.result.unit} by ${GL.runsNoun(job.type)} (higher is better): the median, whiskers ` +
            `the batches' quartiles (min–max under 4)${ceiling ? ', dashed the device\'s ceiling' : ''}` },
          tooltip: { callbacks: { afterLabel: (c) => {
            const sp = spreads[c.dataIndex];
            return `median ${GL.fmtMs(runs[c.dataIndex].timing.median_ms)} ms` +
              (sp ? `; ${GL.fmtNum(sp[0])}–${GL.fmtNum(sp[1])} ${job.result.unit}` : '');
          } } } },
        scales: { y: { beginAtZero: true, suggestedMax: top * 1.08, title: { display: true, text: job.result.unit } } },
      },
      plugins: [marksPlugin(spreads, ceiling, job.result.unit)],
    }));
    return box;
  }

  /* ---- the pipeline's timeline ---- */

  const OPS = ['upload', 'kernel', 'download'];

  function niceStep(span, target) {
    const raw = span / target, p = 10 ** Math.floor(Math.log10(raw));
    return [1, 2, 2.5, 5, 10].map((m) => m * p).find((s) => s >= raw) || raw;
  }

  /* One run's last pass: a lane per stream, a bar per op, on a shared time axis. */
  function timelineSvg(run, tEnd) {
    const ops = run.timeline;
    const streams = Math.max(...ops.map((o) => o.stream)) + 1;
    const W = 960, left = 80, right = 16, rowH = 28, top = 6, axisH = 24;
    const H = top + streams * rowH + axisH;
    const x = (t) => left + (Math.max(0, t) / tEnd) * (W - left - right);
    const svg = h('svg:svg', { class: 'timeline', viewBox: `0 0 ${W} ${H}`, role: 'img',
      'aria-label': `timeline of ${run.variant}`, 'data-variant': run.variant });
    const step = niceStep(tEnd, 8);
    for (let t = 0; t <= tEnd + 1e-9; t += step) {
      svg.append(h('svg:line', { class: 'grid', x1: x(t), x2: x(t), y1: top, y2: top + streams * rowH }));
      svg.append(h('svg:text', { class: 'tick', x: x(t), y: H - 8, 'text-anchor': 'middle', text: `${GL.fmtNum(t, 3)} ms` }));
    }
    for (let s = 0; s < streams; s++) {
      const y = top + s * rowH;
      svg.append(h('svg:rect', { class: 'lane', x: left, y: y + 2, width: W - left - right, height: rowH - 4, rx: 3 }));
      svg.append(h('svg:text', { class: 'lane-label', x: left - 8, y: y + rowH / 2 + 4, 'text-anchor': 'end', text: `stream ${s}` }));
    }
    for (const o of ops) {
      const y = top + o.stream * rowH, x0 = x(o.start_ms), w = Math.max(1.5, x(o.end_ms) - x0);
      const rect = h('svg:rect', { class: `op op-${o.op}`, x: x0, y: y + 5, width: w, height: rowH - 10, rx: 2,
        'data-chunk': o.chunk, 'data-op': o.op },
        h('svg:title', { text: `chunk ${o.chunk} ${o.op}: ${GL.fmtNum(o.start_ms, 3)}–${GL.fmtNum(o.end_ms, 3)} ms` }));
      svg.append(rect);
      if (w > 16) svg.append(h('svg:text', { class: 'op-label', x: x0 + w / 2, y: y + rowH / 2 + 4, 'text-anchor': 'middle', text: String(o.chunk) }));
    }
    return svg;
  }

  function timelinePanel(job) {
    const runs = job.result.runs.filter((r) => r.available && Array.isArray(r.timeline) && r.timeline.length);
    if (!runs.length) return null;
    const tEnd = Math.max(...runs.flatMap((r) => r.timeline.map((o) => o.end_ms))) || 1;
    const legend = h('div', { class: 'legend' }, OPS.map((op) => h('span', {},
      h('svg:svg', { class: 'swatch', viewBox: '0 0 12 12' }, h('svg:rect', { class: `op op-${op}`, width: 12, height: 12, rx: 2 })), op)),
    h('span', { class: 'muted', text: 'numbers are chunk indices; hover a bar for its times' }));
    const blocks = runs.map((run) => {
      const span = Math.max(...run.timeline.map((o) => o.end_ms));
      const busy = run.timeline.reduce((a, o) => a + (o.end_ms - o.start_ms), 0);
      /* The run's own chunking (best picks its own), not the job's params. */
      const chunks = run.plan ? run.plan.chunks : job.params.chunks;
      const more = run.timeline_chunks != null && run.timeline_chunks < chunks
        ? ` · first ${run.timeline_chunks} of ${chunks} chunks shown` : '';
      return h('div', { class: 'timeline-run' },
        h('h4', {}, run.variant, h('span', { class: 'muted', text: ` · pass ${GL.fmtNum(span, 3)} ms, ` +
          `ops add up to ${GL.fmtNum(busy, 3)} ms (overlap ×${GL.fmtNum(busy / span, 3)})${more}` })),
        timelineSvg(run, tEnd));
    });
    return h('section', { class: 'panel', id: 'timeline' },
      h('div', { class: 'panel-head' }, h('h3', { text: 'Streams: the last sample of each run' }), legend),
      blocks);
  }

  function kernelsTable(job) {
    const rows = job.result.runs.filter((r) => r.available && r.kernel).map((r) => {
      const k = r.kernel;
      return h('tr', {},
        h('th', { scope: 'row', text: r.variant }), h('td', { class: 'mono', text: k.name }),
        h('td', { class: 'mono', text: k.grid ? `${k.grid.join('×')} / ${k.block.join('×')}` : '—' }),
        h('td', { class: 'num', text: k.registers ?? '—' }),
        h('td', { class: 'num', text: k.grid ? GL.fmtBytes(k.static_shared_bytes + k.dynamic_shared_bytes) : '—' }),
        h('td', { class: 'muted', text: k.description }));
    });
    return h('table', { class: 'data compact' },
      h('thead', {}, h('tr', {}, ['Run', 'Kernel', 'Grid / block', 'Registers', 'Shared', 'What it does']
        .map((t, i) => h('th', { class: i === 3 || i === 4 ? 'num' : null, text: t })))),
      h('tbody', {}, rows));
  }

  /* The job's params by name; a problem's job's problem as a link to the version it ran. */
  function paramsList(job) {
    const p = job.params || {};
    const value = (k, v) => {
      if (k === 'problem' && v && v.name) {
        const href = `#/problems/${encodeURIComponent(v.name)}/versions/${v.version}`;
        return h('dd', { class: 'mono' }, h('a', { href, id: 'job-problem', text: `${v.name} version ${v.version}` }));
      }
      return h('dd', { class: 'mono', text: typeof v === 'object' ? JSON.stringify(v) : String(v) });
    };
    return h('dl', { class: 'facts', id: 'job-params' }, Object.entries(p).map(([k, v]) =>
      h('div', { 'data-param': k }, h('dt', { text: k }), value(k, v))));
  }

  /* ---- a running job, live: its own event stream (GET /jobs/{id}/events) ---- */

  /* samples[run][batch] = that batch's sample_ms, as the progress events bring them
   * (from the moment the page opened the stream: earlier batches are not replayed). */
  const live = { id: null, es: null, samples: [] };

  function runNames(job) {
    const t = GL.TYPES[job.type];
    const list = job.params && job.params[t && t.runs ? t.runs.name : 'variant'];
    return Array.isArray(list) ? list.map(String) : [];
  }

  function liveText(job) {
    const names = runNames(job), total = job.params && job.params.batches;
    const n = Math.max(names.length, live.samples.length);
    const parts = [];
    for (let i = 0; i < n; i++) {
      const got = (live.samples[i] || []).filter((x) => x != null).length;
      parts.push(`${names[i] || `run ${i + 1}`} ${got}${total ? ` / ${total}` : ''}`);
    }
    return parts.length ? `batches seen: ${parts.join(' · ')}` : '';
  }

  function liveDatasets(job) {
    const names = runNames(job);
    return live.samples.map((xs, i) => ({ label: names[i] || `run ${i + 1}`,
      data: (xs || []).map((y, b) => (y == null ? null : { x: b + 1, y })).filter(Boolean),
      borderColor: GL.PALETTE[i % GL.PALETTE.length], backgroundColor: GL.PALETTE[i % GL.PALETTE.length],
      pointRadius: 3, showLine: true, tension: 0 }));
  }

  function liveChart(job) {
    const canvas = h('canvas', { id: 'live-chart', role: 'img', 'aria-label': 'batch samples as they arrive' });
    requestAnimationFrame(() => GL.chart(canvas, {
      type: 'scatter',
      data: { datasets: liveDatasets(job) },
      options: {
        plugins: { title: { display: true, text: 'Each batch\'s sample as it arrives (ms per launch, lower is better)' } },
        scales: { x: { type: 'linear', min: 1, suggestedMax: (job.params && job.params.batches) || 10,
          ticks: { precision: 0 }, title: { display: true, text: 'batch' } },
        y: { beginAtZero: true, title: { display: true, text: 'ms per launch' } } },
      },
    }));
    return h('div', { class: 'chart-box' }, canvas);
  }

  function pendingPanel(job) {
    return h('section', { class: 'panel pending', id: 'live' },
      h('p', {}, GL.stateBadge(job.state), ' ', job.state === 'running'
        ? 'Running: its batches show below as they finish; the table and bars appear when it ends.'
        : 'Waiting for its turn on the device.'),
      h('p', { class: 'muted', id: 'job-progress', text: liveText(job) }),
      h('p', { class: 'muted small', id: 'job-last', text: '' }),
      GL.chartsOn() && job.state === 'running' ? liveChart(job) : null);
  }

  function closeLive() {
    if (live.es) live.es.close();
    live.id = null; live.es = null; live.samples = [];
  }

  function openLive(id) {
    if (live.id === id) return;
    closeLive();
    live.id = id;
    const token = GL.token();
    const es = (live.es = new EventSource(GL.url(`/jobs/${id}/events${token ? `?access_token=${encodeURIComponent(token)}` : ''}`)));
    es.addEventListener('progress', (e) => view.onProgress(JSON.parse(e.data)));
    es.addEventListener('state', (e) => {
      const ev = JSON.parse(e.data);
      if (GL.FINAL.has(ev.state)) es.close(); /* gpulabd ends the stream too */
      if (ev.job === view.id && (!view.job || view.job.state !== ev.state)) view.show(ev.job);
    });
  }

  function render(job) {
    const root = clear(document.getElementById('view-job'));
    root.append(header(job));
    if (job.state === 'done' && job.result) {
      /* No bars where nothing ran (a problem's job on the CPU backend). */
      const chart = GL.chartsOn() && job.result.runs.some((x) => x.available) ? barChart(job) : null;
      root.append(h('section', { class: 'panel', id: 'results' },
        h('div', { class: 'panel-head' }, h('h3', { text: 'Results' }),
          h('span', { class: 'muted', text: `${job.result.backend} · ${job.result.device} · ` +
            `work ${GL.fmtNum(job.result.work)} ${job.result.work_unit}` })),
        h('div', { class: 'table-wrap' }, runsTable(job)), chart));
      const why = GL.profilePanel(job);
      if (why) root.append(why);
      const tl = timelinePanel(job);
      if (tl) root.append(tl);
      if (job.result.runs.some((x) => x.available && x.kernel))
        root.append(h('section', { class: 'panel' }, h('h3', { text: 'Kernels' }),
          h('div', { class: 'table-wrap' }, kernelsTable(job))));
    } else if (job.state === 'failed' || job.state === 'canceled') {
      root.append(h('section', { class: 'panel' }, h('p', { class: 'error' },
        GL.errorText(job))));
    } else {
      root.append(pendingPanel(job));
    }
    root.append(h('section', { class: 'panel' }, h('h3', { text: 'Params' }), paramsList(job)));
  }

  view.show = async function (id) {
    view.id = id;
    const root = document.getElementById('view-job');
    if (!view.job || view.job.id !== id) clear(root).append(h('p', { class: 'panel muted', text: `Loading job #${id}…` }));
    try {
      const job = await GL.getJSON(`/jobs/${id}`);
      if (view.id !== id) return;
      view.job = job;
      if (GL.FINAL.has(job.state)) closeLive(); else openLive(id);
      render(job);
    } catch (e) {
      if (view.id !== id) return;
      clear(root).append(h('section', { class: 'panel' }, h('a', { href: '#/', class: 'back', text: '← Dashboard' }),
        h('p', { class: 'error', text: e.status === 404 ? `No job #${id} (gpulabd forgets the oldest).` : e.message })));
    }
  };

  view.reload = function () { if (view.id) view.show(view.id); };
  view.hide = function () { view.id = null; view.job = null; closeLive(); };

  /* From app.js's event stream. */
  view.onState = function (ev) {
    if (ev.job !== view.id) return;
    view.show(view.id);
  };
  /* A batch's sample (from the job's stream, and app.js's: kept once by run and batch). */
  view.onProgress = function (ev) {
    if (ev.job !== view.id || live.id !== ev.job) return;
    const xs = (live.samples[ev.run] = live.samples[ev.run] || []);
    const fresh = xs[ev.batch] == null;
    xs[ev.batch] = ev.sample_ms;
    for (let i = 0; i < ev.run; i++) live.samples[i] = live.samples[i] || [];
    /* Running before the page heard so: shown at once, its started_at fetched. */
    if (view.job && view.job.state !== 'running') { view.job.state = 'running'; render(view.job); view.reload(); }
    const el = document.getElementById('job-progress');
    if (el && view.job) el.textContent = liveText(view.job);
    const last = document.getElementById('job-last');
    if (last) last.textContent = `last: ${runNames(view.job)[ev.run] || `run ${ev.run + 1}`}, batch ${ev.batch + 1}: ` +
      `${GL.fmtMs(ev.sample_ms)} ms per launch`;
    const canvas = document.getElementById('live-chart');
    const chart = canvas && GL.chartsOn() && window.Chart.getChart(canvas);
    if (chart && fresh) {
      chart.data.datasets = liveDatasets(view.job);
      chart.update('none');
    }
  };
})();

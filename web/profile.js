'use strict';
/* A job's profile on its page (GL.profilePanel): why each run took its time, from the
 * hardware's counters a "profile": true job carries per run (GET /jobs/{id}: runs[].
 * profile, api/encode.c): a table of the lecture's columns per variant and kernel, NVIDIA's
 * metric name in each header's title, and a log-log roofline of the runs against the
 * device's copy and SGEMM ceilings; or one line saying why there is no profile. */
(function () {
  const { h } = GL;

  /* The table's columns, the lecture's first: [group, header, unit, the metric's key in
   * a kernel's metrics, how a value reads]. The header's title is NVIDIA's metric name,
   * read from the kernel's metrics (so it follows the server). */
  const pct = (v) => GL.fmtNum(v, 3);
  /* A count: 16.3 M rather than 16,252,928, the full number in the cell's title. */
  const count = (v) => (Math.abs(v) >= 1e6 ? `${GL.fmtNum(v / 1e6, 3)} M` : GL.fmtNum(v, 3));
  const COLUMNS = [
    ['Global memory', 'load', 'sectors/req', 'global_load_sectors_per_request', (v) => GL.fmtNum(v, 3)],
    ['Global memory', 'store', 'sectors/req', 'global_store_sectors_per_request', (v) => GL.fmtNum(v, 3)],
    ['Shared bank conflicts', 'load', 'count', 'shared_load_bank_conflicts', count],
    ['Shared bank conflicts', 'store', 'count', 'shared_store_bank_conflicts', count],
    ['Occupancy', 'achieved', '%', 'achieved_occupancy_pct', pct],
    ['Occupancy', 'theoretical', '% (limiter)', 'theoretical_occupancy_pct', pct],
    ['DRAM', 'of peak', '%', 'dram_peak_pct', pct],
    ['DRAM', 'bytes', 'read + written', 'dram_bytes', (v) => GL.fmtBytes(v)],
    ['L2', 'hit', '%', 'l2_hit_pct', pct],
    ['SM', 'throughput', '% of peak', 'sm_throughput_pct', pct],
    ['FP32', 'flops', 'executed', 'fp32_flops', count],
  ];

  /* A kernel's metric {value, metric} by the column's key; DRAM bytes are the two
   * directions' sum (null when either is). */
  function metric(k, key) {
    const m = k.metrics || {};
    if (key !== 'dram_bytes') return m[key] || null;
    const r = m.dram_bytes_read, w = m.dram_bytes_written;
    if (!r && !w) return null;
    const value = r && w && r.value != null && w.value != null ? r.value + w.value : null;
    return { value, unit: 'bytes', metric: [r && r.metric, w && w.metric].filter(Boolean).join(' + ') };
  }

  /* NVIDIA's names of each column, from the first kernel that has the metric. */
  function columnTitles(kernels) {
    return COLUMNS.map(([, , , key]) => {
      for (const k of kernels) { const m = metric(k, key); if (m && m.metric) return m.metric; }
      return key;
    });
  }

  function cell(k, col) {
    const [, , , key, fmt] = col;
    const m = metric(k, key);
    const v = m ? m.value : null;
    const limiter = key === 'theoretical_occupancy_pct' && k.occupancy_limiter
      ? h('span', { class: 'limiter', text: k.occupancy_limiter.replace(/_/g, ' ') }) : null;
    return h('td', { class: 'num', 'data-metric': key, title: v == null ? null : `${GL.fmtNum(v, 6)}${m.unit ? ` ${m.unit}` : ''}` },
      v == null ? '—' : fmt(v), limiter);
  }

  /* The runs whose profile is available, and what the others say. */
  function profiled(job) {
    return job.result.runs.filter((r) => r.available && r.profile && r.profile.available);
  }

  function whyTable(job, runs) {
    const kernels = runs.flatMap((r) => r.profile.kernels || []);
    const titles = columnTitles(kernels);
    const groups = [];
    COLUMNS.forEach(([g], i) => {
      const last = groups[groups.length - 1];
      if (last && last.name === g) last.span++; else groups.push({ name: g, span: 1, first: i });
    });
    const head = h('thead', {},
      h('tr', { class: 'groups' }, h('th', { rowspan: 2, text: GL.runsNoun(job.type) }),
        h('th', { rowspan: 2, class: 'num', text: job.result.unit }), h('th', { rowspan: 2, text: 'Kernel' }),
        groups.map((g) => h('th', { colspan: g.span, class: 'group', text: g.name }))),
      h('tr', {}, COLUMNS.map(([, name, unit, key], i) => h('th', { class: 'num', 'data-metric': key, title: titles[i] },
        name, h('span', { class: 'unit', text: unit })))));
    const body = h('tbody');
    for (const run of runs) {
      const ks = run.profile.kernels || [];
      const more = run.profile.kernels_launched > ks.length ? `first ${ks.length} of ${run.profile.kernels_launched} kernels` : null;
      ks.forEach((k, i) => {
        body.append(h('tr', { 'data-variant': run.variant, 'data-kernel': k.name },
          i === 0 ? h('th', { scope: 'row', rowspan: ks.length, text: run.variant, title: more }) : null,
          i === 0 ? h('td', { class: 'num', rowspan: ks.length, text: run.figure != null ? GL.fmtNum(run.figure) : '—' }) : null,
          h('td', { class: 'mono kernel', title: k.grid ? `grid ${k.grid.join('×')}, block ${k.block.join('×')}` : null, text: k.name }),
          COLUMNS.map((c) => cell(k, c))));
      });
      if (!ks.length)
        body.append(h('tr', { 'data-variant': run.variant }, h('th', { scope: 'row', text: run.variant }),
          h('td', { class: 'num', text: run.figure != null ? GL.fmtNum(run.figure) : '—' }),
          h('td', { colspan: COLUMNS.length + 1, class: 'muted', text: 'no kernel was profiled' })));
    }
    return h('table', { class: 'data compact why', id: 'why-table' }, head, body);
  }

  /* ---- the roofline ---- */

  /* The two roofs: the device's measured copy (GB/s) and SGEMM (GFLOP/s) ceilings (GET
   * /device), else the ones a run's roofline was placed against (its ridge, and the
   * bandwidth its roof or percent implies). null when neither is known. */
  function roofs(runs) {
    const c = GL.device && GL.device.ceilings;
    if (c && c.copy_gbps > 0 && c.sgemm_gflops > 0) return { copy: c.copy_gbps, sgemm: c.sgemm_gflops, from: 'GET /device' };
    for (const r of runs) {
      const x = r.profile.roofline;
      if (!x || !(x.ridge_flops_per_byte > 0)) continue;
      let copy = null;
      if (x.bound === 'memory' && x.flops_per_byte > 0) copy = x.roof_gflops / x.flops_per_byte;
      else if (x.bound === 'memory' && x.percent_of_roof > 0) copy = (100 * x.attained_gbps) / x.percent_of_roof;
      else if (x.bound === 'compute') copy = x.roof_gflops / x.ridge_flops_per_byte;
      if (copy > 0) return { copy, sgemm: copy * x.ridge_flops_per_byte, from: 'the runs\' rooflines' };
    }
    return null;
  }

  /* A log axis' ticks: only its powers of ten, as 0.01, 1, 100, 10k. */
  function decadeTick(v) {
    const e = Math.log10(v);
    if (Math.abs(e - Math.round(e)) > 1e-9) return '';
    if (v >= 1e6) return `${GL.fmtNum(v / 1e6)}M`;
    return v >= 1e3 ? `${GL.fmtNum(v / 1e3)}k` : String(Number(v.toPrecision(1)));
  }

  const decade = (x, up) => 10 ** (up ? Math.ceil(Math.log10(x)) : Math.floor(Math.log10(x)));

  /* The chart's points: a run at (flops per byte, GFLOP/s). A run with no FP32 work
   * (0 flops per byte: a copy, a transpose) has no place on a log axis: it stands at
   * the axis' left edge, as high under the memory roof there as its bandwidth is under
   * the copy ceiling (its percent of the roof), drawn as a triangle. */
  function rooflinePoints(runs, roof) {
    const xs = runs.map((r) => r.profile.roofline.flops_per_byte).filter((x) => x > 0);
    const ridge = roof.sgemm / roof.copy;
    const xmin = decade(Math.min(ridge / 1000, ...xs.map((x) => x / 2)), false);
    const xmax = decade(Math.max(ridge * 10, ...xs.map((x) => x * 2)), true);
    const points = runs.map((r) => {
      const x = r.profile.roofline;
      const zero = !(x.flops_per_byte > 0);
      return { variant: r.variant, zero, x: zero ? xmin : x.flops_per_byte,
        y: zero ? x.attained_gbps * xmin : x.attained_gflops, roof: x };
    });
    const ys = points.map((p) => p.y).filter((y) => y > 0);
    const ymin = decade(Math.min(roof.copy * xmin, ...ys.map((y) => y / 2)), false);
    const ymax = decade(roof.sgemm * 2, true);
    return { points: points.filter((p) => p.y > 0), xmin, xmax, ymin, ymax, ridge };
  }

  /* Each point's variant beside it; labels pushed apart where they would overlap. */
  function labelsPlugin(points) {
    return {
      id: 'gpulabRooflineLabels',
      afterDatasetsDraw(chart) {
        const { ctx, scales: { x, y } } = chart;
        ctx.save();
        ctx.font = '12px sans-serif';
        ctx.fillStyle = '#1d2330';
        ctx.textBaseline = 'middle';
        const at = points.map((p) => ({ p, px: x.getPixelForValue(p.x) + 9, py: y.getPixelForValue(p.y) }))
          .sort((a, b) => a.py - b.py);
        const placed = [];
        for (const l of at) {
          for (const o of placed) if (Math.abs(o.px - l.px) < 120 && Math.abs(o.py - l.py) < 14) l.py = o.py + 14;
          placed.push(l);
          ctx.fillText(`${l.p.variant} ${GL.fmtNum(l.p.roof.percent_of_roof, 2)} %`, l.px, l.py);
        }
        ctx.restore();
      },
    };
  }

  function rooflineChart(job, runs) {
    const withRoof = runs.filter((r) => r.profile.roofline);
    const roof = roofs(withRoof);
    if (!withRoof.length || !roof || !GL.chartsOn()) return null;
    const g = rooflinePoints(withRoof, roof);
    const canvas = h('canvas', { id: 'roofline-chart', role: 'img', 'aria-label': 'the runs on the device\'s roofline',
      'data-points': JSON.stringify(g.points.map((p) => ({ variant: p.variant, x: p.x, y: p.y, zero: p.zero }))) });
    const line = (label, data, color, dash) => ({ type: 'line', label, data, borderColor: color, backgroundColor: color,
      borderWidth: 2, borderDash: dash, pointRadius: 0, showLine: true, fill: false, tension: 0 });
    requestAnimationFrame(() => GL.chart(canvas, {
      type: 'scatter',
      data: { datasets: [
        line(`memory roof: copy ${GL.fmtNum(roof.copy)} GB/s`, [{ x: g.xmin, y: roof.copy * g.xmin }, { x: g.ridge, y: roof.sgemm }], '#4c78a8'),
        line(`compute roof: SGEMM ${GL.fmtNum(roof.sgemm)} GFLOP/s`, [{ x: g.ridge, y: roof.sgemm }, { x: g.xmax, y: roof.sgemm }], '#d62728'),
        { label: 'runs', data: g.points.map((p) => ({ x: p.x, y: p.y })),
          pointStyle: g.points.map((p) => (p.zero ? 'triangle' : 'circle')), pointRotation: g.points.map((p) => (p.zero ? 270 : 0)),
          pointRadius: 6, pointHoverRadius: 8, clip: false,
          backgroundColor: g.points.map((p, i) => GL.PALETTE[i % GL.PALETTE.length]), borderColor: '#333' },
      ] },
      options: {
        plugins: {
          title: { display: true, text: 'Roofline (log-log): each run\'s GFLOP/s at its FP32 flops per DRAM byte, and its % of the roof' },
          legend: { labels: { filter: (item) => item.datasetIndex < 2 } },
          tooltip: { callbacks: { label: (c) => {
            if (c.datasetIndex < 2) return c.dataset.label;
            const p = g.points[c.dataIndex], x = p.roof;
            return p.zero ? `${p.variant}: no FP32 work; ${GL.fmtNum(x.attained_gbps)} GB/s, ${GL.fmtNum(x.percent_of_roof, 3)} % of the memory roof`
              : `${p.variant}: ${GL.fmtNum(x.flops_per_byte, 3)} flops/byte, ${GL.fmtNum(x.attained_gflops)} GFLOP/s, ` +
                `${GL.fmtNum(x.percent_of_roof, 3)} % of its ${x.bound} roof`;
          } } },
        },
        scales: {
          x: { type: 'logarithmic', min: g.xmin, max: g.xmax, title: { display: true, text: 'FP32 flops per DRAM byte' },
            ticks: { maxRotation: 0, callback: decadeTick } },
          y: { type: 'logarithmic', min: g.ymin, max: g.ymax, title: { display: true, text: 'GFLOP/s' },
            ticks: { callback: decadeTick } },
        },
      },
      plugins: [labelsPlugin(g.points)],
    }));
    const zero = g.points.filter((p) => p.zero).map((p) => p.variant);
    return h('div', {},
      h('div', { class: 'chart-box roofline-box' }, canvas),
      h('p', { class: 'muted small', id: 'roofline-note' },
        `Roofs from ${roof.from}; the ridge at ${GL.fmtNum(g.ridge, 3)} flops/byte.`,
        zero.length ? ` ◄ at the left edge: ${zero.join(', ')}, with no FP32 work (0 flops/byte), placed by bandwidth:` +
          ' as far under the memory roof as under the copy ceiling.' : ''));
  }

  /* The replay's conditions, once for the job when every run has the same. */
  function conditions(runs) {
    const seen = new Set(runs.map((r) => `${r.profile.clocks}|${r.profile.caches}`));
    if (seen.size !== 1) return 'clocks and caches differ between runs: see each run\'s profile';
    const p = runs[0].profile;
    const clocks = { locked_to_base: 'clocks locked to base', free: 'clocks free' }[p.clocks] || `clocks ${p.clocks}`;
    const caches = { flushed_before_each_pass: 'caches flushed before each pass', as_left: 'caches as the run left them' }[p.caches] || `caches ${p.caches}`;
    return `Replayed under the profiler after the timed batches (the times above are not the profiler's): ${clocks}, ${caches}. ` +
      'Hover a header for NVIDIA\'s metric.';
  }

  /* The "why" panel of a finished job, or null when no run asked for a profile: the
   * table and roofline, or the reason (once, when every run gives the same). */
  GL.profilePanel = function (job) {
    const asked = job.result.runs.filter((r) => r.available && r.profile);
    if (!asked.length) return null;
    const runs = profiled(job);
    const missing = asked.filter((r) => !r.profile.available);
    const reasons = [...new Set(missing.map((r) => r.profile.reason))];
    const lines = reasons.length === 1 && !runs.length
      ? [h('p', { class: 'muted profile-off', text: `No profile: ${reasons[0]}` })]
      : missing.map((r) => h('p', { class: 'muted profile-off', 'data-variant': r.variant, text: `${r.variant}: no profile: ${r.profile.reason}` }));
    return h('section', { class: 'panel', id: 'why' },
      h('div', { class: 'panel-head' }, h('h3', { text: 'Why: the hardware\'s counters' }),
        runs.length ? h('span', { class: 'muted small', id: 'why-conditions', text: conditions(runs) }) : null),
      lines,
      runs.length ? h('div', { class: 'table-wrap' }, whyTable(job, runs)) : null,
      runs.length ? rooflineChart(job, runs) : null);
  };
})();

'use strict';
/* The kernel editor (GL.codeEditor): CodeMirror 5 from Debian's libjs-codemirror, which
 * gpulabd serves at /static/codemirror/ (--codemirror), with line numbers, CUDA's
 * highlighting and compile errors marked at their lines; the plain textarea, and the
 * source shown below it with the lines marked, where CodeMirror did not load. */
(function () {
  const { h } = GL;

  /* CUDA on top of clike's C++ (text/x-c++src): its qualifiers as keywords, its
   * built-in variables and common intrinsics as builtins. Returns the mode's MIME. */
  function cudaMode(CM) {
    const base = CM.mimeModes['text/x-c++src'];
    if (!base || typeof base !== 'object') return 'text/x-c++src';
    if (CM.mimeModes['text/x-cuda']) return 'text/x-cuda';
    const words = (s) => Object.fromEntries(s.split(' ').map((w) => [w, true]));
    CM.defineMIME('text/x-cuda', Object.assign({}, base, {
      keywords: Object.assign({}, base.keywords, words('__global__ __device__ __host__ __shared__ ' +
        '__constant__ __managed__ __restrict__ __launch_bounds__ __forceinline__ __noinline__ __grid_constant__')),
      builtin: Object.assign({}, base.builtin, words('threadIdx blockIdx blockDim gridDim warpSize ' +
        '__syncthreads __syncwarp __shfl_sync __shfl_down_sync __shfl_up_sync __shfl_xor_sync __ballot_sync ' +
        '__any_sync __all_sync __ldg __fmaf_rn __expf __logf __sinf __cosf __popc __clz __ffs atomicAdd ' +
        'atomicSub atomicMax atomicMin atomicExch atomicCAS atomicAnd atomicOr atomicXor __threadfence')),
    }));
    return 'text/x-cuda';
  }

  /* The compile errors and warnings of a POST /kernels answer, at their lines: the
   * compile report's log, as NVRTC writes it ("name.cu(3): error: ..."), else the
   * problem's own line and detail (a refusal after compiling: stateful_kernel).
   * [{line (1-based; 0: none), severity ('error' | 'warning'), text}]. */
  GL.compileMessages = function (problem, report) {
    const out = [];
    const log = (report && report.log) || '';
    for (const m of log.matchAll(/^[^\s(]+\((\d+)\): (error|warning)[^:]*: (.*)$/gm))
      out.push({ line: Number(m[1]), severity: m[2], text: m[3] });
    if (problem && !out.some((x) => x.severity === 'error'))
      out.unshift({ line: problem.line || 0, severity: 'error', text: problem.detail.replace(/^line \d+: /, '') });
    return out;
  };

  /* JSON (the problem editor): CodeMirror's javascript mode in its JSON flavour, when
   * gpulabd served it; else no highlighting (still line numbers). */
  function jsonMode(CM) {
    return CM.modes && CM.modes.javascript ? { name: 'javascript', json: true } : null;
  }

  /* An editor over textarea ta (already in a form): {get, set, mark, goto, refresh,
   * kind, mode}. mark(messages) marks each message's line (and drops the marks before);
   * set(text) drops them too. opts: {lang: 'cuda' (default) | 'json', prefix: the ids'
   * start ('kernel': #kernel-editor, #kernel-src-box, #kernel-src-view)}. */
  GL.codeEditor = function (ta, opts) {
    const lang = (opts && opts.lang) || 'cuda', prefix = (opts && opts.prefix) || 'kernel';
    const CM = window.CodeMirror;
    if (typeof CM !== 'function' || typeof CM.fromTextArea !== 'function') return textareaEditor(ta, prefix);
    const mode = lang === 'json' ? jsonMode(CM) : cudaMode(CM);
    const cm = CM.fromTextArea(ta, {
      mode, lineNumbers: true, indentUnit: 2, tabSize: 2, matchBrackets: true,
      gutters: ['gl-marks', 'CodeMirror-linenumbers'], viewportMargin: Infinity,
    });
    cm.getWrapperElement().id = `${prefix}-editor`;
    let marked = [];
    function unmark() {
      for (const m of marked) {
        cm.removeLineClass(m.handle, 'background', m.cls);
        cm.setGutterMarker(m.handle, 'gl-marks', null);
      }
      marked = [];
    }
    return {
      kind: 'codemirror',
      mode: mode ? (mode.name || mode) : 'text',
      cm,
      get: () => cm.getValue(),
      set(text) { unmark(); cm.setValue(text); cm.clearHistory(); },
      mark(messages) {
        unmark();
        for (const m of messages) {
          if (!(m.line >= 1 && m.line <= cm.lineCount())) continue;
          const cls = `gl-${m.severity}-line`;
          const handle = cm.addLineClass(m.line - 1, 'background', cls);
          const prev = marked.find((x) => x.handle === handle);
          const mark = prev ? prev.el : h('span', { class: `gl-mark gl-mark-${m.severity}`, 'data-line': m.line, text: '●' });
          mark.title = prev ? `${mark.title}\n${m.text}` : m.text;
          if (!prev) { cm.setGutterMarker(handle, 'gl-marks', mark); marked.push({ handle, cls, el: mark }); }
        }
      },
      goto(line) {
        cm.focus();
        cm.setSelection({ line: line - 1, ch: 0 }, { line: line - 1, ch: cm.getLine(line - 1).length });
        cm.scrollIntoView({ line: line - 1, ch: 0 }, 60);
      },
      refresh: () => cm.refresh(),
      marked: () => marked.map((m) => cm.getLineNumber(m.handle) + 1),
    };
  }

  /* Without CodeMirror: the textarea, and below it (once there are messages) the
   * source with line numbers, the lines with messages marked. */
  function textareaEditor(ta, prefix) {
    const box = h('div', { class: 'src-box', id: `${prefix}-src-box` });
    ta.after(box);
    function goto(n) {
      const lines = ta.value.split('\n');
      let pos = 0;
      for (let i = 0; i < n - 1 && i < lines.length; i++) pos += lines[i].length + 1;
      ta.focus();
      ta.setSelectionRange(pos, pos + (lines[n - 1] || '').length);
    }
    return {
      kind: 'textarea',
      mode: 'text',
      get: () => ta.value,
      set(text) { ta.value = text; GL.clear(box); },
      mark(messages) {
        GL.clear(box);
        const at = (i) => messages.filter((m) => m.line === i + 1);
        if (!messages.some((m) => m.line >= 1)) return;
        box.append(h('pre', { class: 'src-view', id: `${prefix}-src-view` }, ta.value.split('\n').map((l, i) => {
          const ms = at(i);
          const sev = ms.some((m) => m.severity === 'error') ? 'error' : ms.length ? 'warning' : '';
          return h('span', { class: `src-line${sev ? ` err-line gl-${sev}-line` : ''}`, 'data-line': i + 1 },
            h('span', { class: 'ln', text: String(i + 1) }), l || ' ');
        })));
      },
      goto,
      refresh() {},
      marked: () => [...box.querySelectorAll('.src-line.err-line')].map((e) => Number(e.dataset.line)),
    };
  }
})();

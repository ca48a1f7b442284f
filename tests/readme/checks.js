'use strict';
/* What each curl or gpulabctl command of the manual must answer, by page (README.md
 * and the chapters of docs/) and in each page's order (see readme.test.js). cmd: the
 * command as the page has it (comments dropped, blanks
 * folded); status: the HTTP status (a list: any of them); json: paths of the answer
 * and their values (a function: a test of the value); headers; stdout: a pattern of
 * its output; exit: curl's exit code (default 0); run: a CPU-sized twin run in its
 * place, where the page's size takes minutes on the CPU backend (the page says
 * so), with why; gpuOnly / loose: paths of the page's sample answer (an H200's)
 * that the CPU backend answers differently (only there / only of the same type);
 * curl: extra curl flags (a time limit for an endless stream); sample: the ```json
 * block after the command's block is its answer. */
const done = (v) => v === 'done';
/* The Unix user the test runs as: the socket's client (gpulabd runs as the same user). */
const USER = require('os').userInfo().username;
const GPU_RUN = ['result.backend', 'result.device', 'result.runs[*].clocks', 'result.runs[*].ceiling',
  'result.runs[*].percent_of_ceiling', 'result.runs[*].percent_of_limit', 'result.limit', 'result.runs[*].kernel'];
/* On the CPU backend a batch is capped at about 100 ms: fewer warm-ups and reps. */
const CPU_TIMING = ['result.runs[*].timing.warmup', 'result.runs[*].timing.reps', 'stream'];

module.exports = {
'README.md': [
  /* A first job */
  { cmd: `curl -d '{"m":4096,"n":4096}' localhost:8080/v1/transpose`, status: 200,
    json: { id: 1, state: done, 'result.passed': true, 'result.runs.length': 5 },
    sample: true, gpuOnly: GPU_RUN, loose: CPU_TIMING },
],

'docs/api.md': [
  /* More routes */
  { cmd: `curl -d '{"m":1024,"n":1024,"k":1024,"variant":["tiled","cublas"]}' localhost:8080/v1/gemm`, status: 200,
    run: `curl -d '{"m":256,"n":256,"k":256,"variant":["tiled","cublas"]}' localhost:8080/v1/gemm`,
    why: 'about 30 s on the CPU backend',
    json: { id: 2, state: done, 'params.variant': ['tiled', 'cublas'], 'result.runs[1].available': false } },
  { cmd: `curl -d '{"n":16777216,"radius":2}' localhost:8080/v1/stencil`, status: 200,
    json: { id: 3, state: done, 'params.n': 16777216, 'result.passed': true }, timeout: 180 },
  { cmd: `curl -d '{"chunk":4194304,"streams":[1,3]}' localhost:8080/v1/pipeline`, status: 200,
    run: `curl -d '{"chunk":65536,"streams":[1,3]}' localhost:8080/v1/pipeline`,
    why: 'about 2.5 minutes on the CPU backend: 202 after the 60 s wait',
    json: { id: 4, state: done, 'result.runs.length': 2, 'result.runs[1].variant': 'streams=3' } },
  { cmd: `curl -i -d '{"type":"stencil","params":{"radius":32}}' 'localhost:8080/v1/jobs?wait=0'`,
    headers: { Location: '/v1/jobs/5' }, json: { id: 5, type: 'stencil', 'params.radius': 32 } },
  { cmd: 'curl localhost:8080/v1/jobs/5', status: 200, json: { id: 5, type: 'stencil' } },
  { cmd: `curl 'localhost:8080/v1/jobs?limit=20&state=done&type=gemm'`, status: 200,
    json: { 'jobs.length': 1, 'jobs[0].id': 2, 'jobs[0].result': undefined, next_cursor: null } },
  { cmd: 'curl -X DELETE localhost:8080/v1/jobs/5', status: [200, 409],
    then: (res) => {
      if (res.status === 200 && res.json.state !== 'canceled' && res.json.cancel_requested !== true)
        throw new Error(`DELETE answered 200 with state ${res.json.state}, not canceled`);
      if (res.status === 409 && res.json.code !== 'job_finished') throw new Error(`409 ${res.json.code}`);
    } },
  { cmd: 'curl localhost:8080/v1/device', status: 200,
    json: { backend: 'cpu', device_count: 2, ceilings: null, streams: 4, nvml: (v) => /^unavailable: /.test(v) } },
  { cmd: 'curl localhost:8080/v1/health', status: 200,
    json: { status: 'ok', backend: 'cpu', 'jobs.done': (v) => v >= 4, 'store.status': 'ok', 'store.error': null } },
  { cmd: 'curl localhost:8080/v1/me', status: 200, json: { client: '127.0.0.1', by: 'address', sees_all: true } },
  { cmd: 'curl localhost:8080/v1/openapi.json', status: 200,
    json: { openapi: '3.1.0', 'paths./jobs.post.operationId': (v) => typeof v === 'string' } },

  /* Jobs, asynchronously */
  { cmd: `curl -i -d '{"type":"gemm","params":{"m":512,"n":512,"k":512},"priority":5}' 'localhost:8080/v1/jobs?wait=0'`,
    headers: { Location: '/v1/jobs/6' }, json: { id: 6, priority: 5, state: (v) => v === 'queued' || v === 'running' } },
  { cmd: 'curl -X DELETE localhost:8080/v1/jobs/6', status: [200, 409], json: { id: 6 } },
  { cmd: `curl 'localhost:8080/v1/jobs?state=done&type=gemm&limit=20'`, status: 200,
    json: { 'jobs[0].id': 2, next_cursor: null } },

  /* Several GPUs (two CPU devices here) */
  { cmd: 'curl localhost:8080/v1/devices', status: 200,
    json: { 'devices.length': 2, 'devices[1].index': 1 } },
  { cmd: `curl -d '{"m":8192,"n":8192,"device":1}' localhost:8080/v1/transpose`, status: 200,
    run: `curl -d '{"m":1024,"n":1024,"device":1}' localhost:8080/v1/transpose`,
    why: 'minutes on the CPU backend: 202 after the 60 s wait',
    json: { id: 7, state: done, device: 1 } },
  { cmd: `python3 -c "import numpy as np; np.random.rand(1000, 300).astype('f4').tofile('a.f32')"` },
  { cmd: `curl -H 'Content-Type: application/octet-stream' --data-binary @a.f32 'localhost:8080/v1/buffers?shape=1000,300&device=1'`,
    status: 201, json: { id: 1, device: 1, shape: [1000, 300] } },

  /* Buffers and chained jobs */
  { cmd: `python3 -c "import numpy as np; a = np.random.rand(1000, 300).astype('f4'); np.save('a.npy', a); a.tofile('raw.f32')"` },
  { cmd: `curl -H 'Content-Type: application/x-npy' --data-binary @a.npy localhost:8080/v1/buffers` },
  { cmd: `curl --data-binary @raw.f32 -H 'Content-Type: application/octet-stream' 'localhost:8080/v1/buffers?shape=1000,300'`,
    status: 201, json: { id: 3, shape: [1000, 300], dtype: 'float32' } },
  { cmd: `curl -d '{"a":{"buffer":2},"variant":"padded33","keep_output":true}' localhost:8080/v1/transpose`,
    json: { state: done, 'params.variant': ['padded33'] } },
  { cmd: `curl -d '{"a":{"job":8},"variant":"naive","keep_output":true}' localhost:8080/v1/transpose`,
    json: { state: done, depends_on: [8] } },
  { cmd: 'curl -o back.npy localhost:8080/v1/buffers/5', status: 200,
    then: (res) => { if (res.body.subarray(0, 6).toString('latin1') !== '\x93NUMPY') throw new Error('not a .npy'); } },
  { cmd: `python3 -c "import numpy as np; assert (np.load('back.npy') == np.load('a.npy')).all()"` },
  { cmd: 'curl localhost:8080/v1/buffers', status: 200, json: { 'buffers.length': 5 } },
  { cmd: 'curl -X DELETE localhost:8080/v1/buffers/2' },
  { cmd: `python3 -c "import numpy as np; np.save('r.npy', np.asfortranarray(np.random.rand(300, 200)))"` },
  { cmd: `curl -H 'Content-Type: application/x-npy' --data-binary @r.npy localhost:8080/v1/buffers`, status: 201,
    json: { id: 6, dtype: 'float32', 'converted_from.max_rounding_error': (v) => v > 0 && v < 1e-7 } },
  { cmd: `curl -H 'Accept: application/octet-stream' -o r.f32 localhost:8080/v1/buffers/6`, status: 200,
    headers: { 'Gpulab-Shape': '300,200', 'Content-Type': 'application/octet-stream' },
    then: (res) => { if (res.body.length !== 300 * 200 * 4) throw new Error(`${res.body.length} bytes, not 240000`); } },
  { cmd: `python3 -c "import numpy as np; assert (np.fromfile('r.f32', '<f4').reshape(300, 200) == np.load('r.npy').astype(np.float32)).all()"` },
  { cmd: `python3 -c "import numpy as np; np.save('i.npy', np.arange(10))"` },
  { cmd: `curl -H 'Content-Type: application/x-npy' --data-binary @i.npy localhost:8080/v1/buffers`, status: 400,
    json: { field: null } },
  { cmd: `curl -d '{"n":1000000,"bins":4096,"keep_output":true}' localhost:8080/v1/histogram`, status: 200,
    json: { id: 10, state: done, 'result.passed': true, 'output.dtype': 'uint32', 'output.buffer': 7 } },
  { cmd: 'curl -o counts.npy localhost:8080/v1/buffers/7', status: 200,
    then: (res) => { if (!res.body.toString('latin1', 0, 128).includes("'descr': '<u4'")) throw new Error('not a <u4 .npy'); } },
  { cmd: `python3 -c "import numpy as np; c = np.load('counts.npy'); assert c.dtype == np.uint32 and c.sum() == 1000000"` },
  { cmd: `curl -d '{"x":{"job":10}}' localhost:8080/v1/reduce`, status: 400 },

  /* Sweeps */
  { cmd: `curl -d '{"type":"transpose","params":{"n":4096},"priority":2, "axes":{"m":[1024,2048,4096],"variant":["naive","padded33"]}}' localhost:8080/v1/sweeps`,
    status: 200, timeout: 240, sample: true },

  /* Live events */
  { cmd: 'curl -N localhost:8080/v1/jobs/5/events', status: 200, stdout: /^event: state\ndata: \{"job":5,/ },
  { cmd: 'curl -N localhost:8080/v1/events', status: 200, curl: '--max-time 2', exit: 28 },

  /* Errors */
  { cmd: `curl -i -d '{"m":0}' localhost:8080/v1/transpose`, headers: { 'Content-Type': 'application/problem+json' },
    sample: true },

],

'docs/kernels.md': [
  /* Your own kernels (NVRTC compiles on the CPU machine too; the CPU backend lists the run unavailable) */
  { cmd: `curl --data-binary @my_transpose.cu -H 'Content-Type: text/x-cuda' 'localhost:8080/v1/kernels?experiment=transpose&name=my_tile&block=32,8&tile=32,32&options=-lineinfo'`,
    headers: { Location: '/v1/kernels/1/versions/1' }, sample: true,
    loose: ['compile.nvrtc', 'compile.image_bytes', 'compile.registers', 'compile.log'] },
  { cmd: `curl -d '{"m":1024,"n":1024,"variant":["padded33","best","kernel:1"]}' localhost:8080/v1/transpose`,
    json: { id: 17, state: done, 'params.variant': ['padded33', 'best', 'kernel:1@1'], 'result.runs[2].variant': 'kernel:1@1',
      'result.runs[2].available': false, 'result.runs[2].user_kernel.name': 'my_tile',
      'result.runs[2].reason': (v) => /CPU backend/.test(v) } },
  { cmd: `curl -d '{"experiment":"transpose","name":"broken","source":"extern \\"C\\" __global__ void kernel(const float* a, float* b, int m, int n) {\\n b[0] = a[0] +;\\n}"}' localhost:8080/v1/kernels`,
    headers: { 'Content-Type': 'application/problem+json' }, json: { 'compile.ok': false, 'compile.error_line': 2 } },
  { cmd: 'curl localhost:8080/v1/kernels/1', status: 200,
    json: { id: 1, name: 'my_tile', source: (v) => /__shared__ float tile\[TILE\]\[TILE \+ 1\]/.test(v),
      'compile.log': (v) => /Compiling entry function 'kernel'/.test(v) } },
  { cmd: `curl 'localhost:8080/v1/leaderboard/transpose?size=1024'`,
    json: { 'rows[0].rank': 1, rows: (v) => v.every((r) => r.variant !== 'copy') } },
  /* Versions: the same name again, the list, the diff, a job naming versions */
  { cmd: `curl --data-binary @my_transpose_unrolled.cu -H 'Content-Type: text/x-cuda' 'localhost:8080/v1/kernels?experiment=transpose&name=my_tile&block=32,8&tile=32,32&options=-lineinfo'`,
    status: 201, headers: { Location: '/v1/kernels/1/versions/2' },
    json: { id: 1, version: 2, variant: 'kernel:1@2', href: '/v1/kernels/1/versions/2' } },
  { cmd: 'curl localhost:8080/v1/kernels/1/versions', status: 200,
    json: { id: 1, 'size.m': 4096, 'versions[0].best': null, 'versions[0].version': 1, 'versions[1].version': 2, 'versions[0].compile.registers': (v) => v > 0,
      'versions[0].compile.spill_store_bytes': 0, 'versions[0].compile.shared_bytes': 4224,
      'versions[0].source_sha256': (v) => /^[0-9a-f]{64}$/.test(v) } },
  { cmd: `curl 'localhost:8080/v1/kernels/1/diff?from=1&to=2'`, status: 200,
    stdout: /^--- kernel:1@1\/my_tile\.cu\n\+\+\+ kernel:1@2\/my_tile\.cu\n@@ -1,12 \+1,14 @@\n-\/\/ B = A\^T through a 32 x 33 shared tile: both global accesses coalesced, no bank conflict\.\n\+\/\/ B = A\^T through a 32 x 33 shared tile, its loops unrolled\.\n/ },
  { cmd: `curl -d '{"m":1024,"n":1024,"variant":["padded33","kernel:1@1","kernel:my_tile"]}' localhost:8080/v1/transpose`,
    json: { id: 18, state: done, 'params.variant': ['padded33', 'kernel:1@1', 'kernel:1@2'],
      'result.runs[1].variant': 'kernel:1@1', 'result.runs[2].variant': 'kernel:1@2',
      'result.runs[2].user_kernel.version': 2 } },
  /* The compiler's view: version 1's PTX (its padded tile); the SASS, 503 where the
   * toolkit has no disassembler (the CPU machines') */
  { cmd: 'curl localhost:8080/v1/kernels/1/versions/1/ptx', status: 200,
    headers: { 'Content-Type': 'text/plain; charset=utf-8' },
    stdout: /\.target sm_90\n[\s\S]*\.visible \.entry kernel\([\s\S]*\.shared \.align 4 \.b8 _ZZ6kernelE4tile\[4224\];/ },
  { cmd: 'curl localhost:8080/v1/kernels/1/sass', status: [200, 503] },

],

'docs/problems.md': [
  /* Problems you define: defined, validated and compiled on the CPU machine too */
  { cmd: 'curl -d @softmax.json localhost:8080/v1/problems', status: 201,
    headers: { Location: '/v1/problems/softmax_rows/versions/1' },
    json: { name: 'softmax_rows', version: 1, 'compile.ok': true,
      signature: 'extern "C" __global__ void kernel(const float *x, float *y, int rows, int cols);',
      'compile.occupancy_at_defaults.max_warps_per_sm': 64, 'definition.reference.grid': ['rows', 1, 1] } },
  /* A kernel of it, a job of both (every run unavailable on the CPU backend), its board */
  { cmd: `curl --data-binary @fast.cu -H 'Content-Type: text/x-cuda' 'localhost:8080/v1/kernels?problem=softmax_rows&name=fast'`,
    status: 201, json: { experiment: 'problem:softmax_rows', grid: ['rows', '1', '1'], 'compile.ok': true } },
  { cmd: `curl -d '{"params": {"rows": 4096, "cols": 1024}, "variant": ["reference", "kernel:fast"]}' localhost:8080/v1/problems/softmax_rows/jobs`,
    status: 200, json: { type: 'problem', state: done, 'params.rows': 4096, 'params.problem.name': 'softmax_rows',
      'params.problem.version': 1, 'result.runs.length': 2, 'result.runs[0].variant': 'reference',
      'result.runs[0].available': false, output: null } },
  /* Your own inputs: a float32 .npy as x */
  { cmd: `python3 -c "import numpy as np; np.save('rows.npy', np.random.randn(64, 100).astype(np.float32))"` },
  { cmd: `curl -H 'Content-Type: application/x-npy' --data-binary @rows.npy localhost:8080/v1/buffers`, status: 201,
    json: { id: 8, shape: [64, 100], dtype: 'float32' } },
  { cmd: `curl -d '{"params": {"rows": 64, "cols": 100}, "inputs": {"x": {"buffer": 8}}, "variant": "reference"}' localhost:8080/v1/problems/softmax_rows/jobs`,
    status: 200, json: { type: 'problem', state: done, 'params.rows': 64, 'params.inputs.x.buffer': 8,
      'result.runs[0].available': false } },
  { cmd: `curl 'localhost:8080/v1/leaderboard/problem:softmax_rows?size=4096,1024'`, status: 200,
    json: { experiment: 'problem:softmax_rows', 'problem.version': 1, 'size.cols': 1024, 'rows.length': 0 } },
],
'docs/lab.md': [
  /* Running it for a lab: TLS and the chapter's tokens file (alice's token) */
  { cmd: `curl -H "Authorization: Bearer $TOKEN" -d '{"m":1024,"n":1024}' https://gpubox:8080/v1/transpose`, status: 200,
    json: { id: 1, client: 'alice', state: done } },
  /* Who is who on the box: the plain gpulabd's --socket (its path stands for the chapter's);
   * the test's own user is gpulabd's, so it sees all where the chapter's alice does not */
  { cmd: 'curl --unix-socket /run/gpulab/gpulab.sock http://localhost/v1/me', status: 200,
    json: { client: USER, by: 'unix_socket', sees_all: true } },
  { cmd: `curl --unix-socket /run/gpulab/gpulab.sock -d '{"m":1024,"n":1024}' http://localhost/v1/transpose`, status: 200,
    json: { id: 21, client: USER, state: done } },
  { cmd: `curl -s localhost:8080/v1/metrics | grep 'gpulab_jobs_total{type="transpose"'`, status: 200,
    stdout: /^gpulab_jobs_total\{type="transpose",outcome="done",gpu="0"\} 9\ngpulab_jobs_total\{type="transpose",outcome="done",gpu="1"\} 4\n$/ },

],

'docs/clients.md': [
  /* From a terminal: gpulabctl (against the plain gpulabd, $GPULAB_URL) */
  { cmd: 'gpulabctl run gemm m=256 n=256 k=256 --variant naive,tiled,best', exit: 0,
    stdout: /^job 22 gemm: done on .* \(cpu\)\nvariant +median ms \[q1-q3\] +figure +% ceil +speedup \[range\] +check\nnaive [^\n]*1\.00x[^\n]*passed\ntiled [^\n]*passed\nbest [^\n]*passed\n$/ },
  { cmd: 'gpulabctl kernel submit my_transpose.cu --experiment transpose --block 32,8 --tile 32,32 --vs padded33 m=1024 n=1024',
    exit: 0, stdout: /^job 23 transpose: done[^\n]*\n[^\n]*\npadded33 [^\n]*passed\nkernel:4@1 +not run: [^\n]*CPU backend/ },
  { cmd: 'gpulabctl run transpose m=0', exit: 2, stdout: /^$/ },
],
};

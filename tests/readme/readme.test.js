#!/usr/bin/env node
'use strict';
/* The manual's examples, run as written: every shell block with a curl or gpulabctl
 * in it, of README.md and then of each chapter of docs/ in the order of the README's
 * contents (readme.js's manual: a chapter the README does not link fails the test),
 * command by command and in order, against a fresh gpulabd on the CPU backend (two
 * CPU devices, for the multi-GPU examples) and, for the TLS example, a second one with
 * --tls-cert and the manual's own tokens file. `curl` is the real one with
 * --connect-to, so that localhost:8080 and gpubox:8080 reach those ports; the first
 * one also listens on --socket in the test's folder, which stands for the manual's
 * /run/gpulab/gpulab.sock (curl's arguments name it instead).
 * Each command must have its check in checks.js, under its file (same text, same
 * order): the test fails on a command without one and on a check without its command,
 * naming the file and the line. A check gives the status and the fields the example
 * shows; a comment under a command that starts with a status ("# 201 {...}") is
 * checked as well, and so is the ```json answer that follows a block where its check
 * says sample (… stands for anything; fields that only a GPU has are named by the
 * check). Ids are the ones the previous answers gave: the manual's ids are those of a
 * fresh gpulabd that ran its examples in that order. A block whose fence names a file
 * after its language (```cuda my_transpose.cu) is written to that file in the test's
 * folder when it is reached, for the commands after it. A block that starts with
 * "gpulabd --help" must be what gpulabd prints.
 *   GPULABD=build/gpulabd node tests/readme/readme.test.js [README.md]
 * Exits 0, or 1 on a failure. */
const { spawn, spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const R = require('./readme.js');
const CHECKS = require('./checks.js');

const README = path.resolve(process.argv[2] || path.join(__dirname, '..', '..', 'README.md'));
const GPULABD = process.env.GPULABD;
if (!GPULABD) {
  process.stdout.write('FAIL: GPULABD is not set (the path of the built gpulabd; ctest sets it)\n');
  process.exit(1);
}
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'gpulab-readme-'));
const procs = [];
let failed = 0;

function log(msg) { process.stdout.write(`${msg}\n`); }

function startGpulabd(args) {
  return new Promise((resolve, reject) => {
    const proc = spawn(GPULABD, ['--backend', 'cpu', '--host', '127.0.0.1', '--port', '0', '--db', ':memory:',
      '--access-log', 'off', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    procs.push(proc);
    let text = '';
    const timer = setTimeout(() => reject(new Error(`gpulabd did not start in 30 s:\n${text}`)), 30000);
    proc.stderr.on('data', (d) => {
      text += d;
      const m = /listening on https?:\/\/127\.0\.0\.1:(\d+)/.exec(text);
      if (m && !proc.port) { clearTimeout(timer); proc.port = Number(m[1]); resolve(proc); }
    });
    proc.on('exit', (code) => { if (!proc.port) { clearTimeout(timer); reject(new Error(`gpulabd exited (${code}):\n${text}`)); } });
    proc.log = () => text;
  });
}

/* The manual's tokens file (the block under "Who gets in") and its first token. */
function tokensFile(pages) {
  const b = pages.flatMap((p) => R.blocks(p.text)).find((x) => x.lang === '' && /^# TOKEN/.test(x.text));
  if (!b) throw new Error('the manual has no tokens file example (a block starting "# TOKEN")');
  fs.writeFileSync(path.join(work, 'tokens'), `${b.text}\n`);
  return /^(\w+)\s+alice/m.exec(b.text)[1];
}

function certificate() {
  const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1',
    '-keyout', path.join(work, 'key.pem'), '-out', path.join(work, 'cert.pem'), '-subj', '/CN=gpubox',
    '-addext', 'subjectAltName=DNS:gpubox'], { encoding: 'utf8' });
  if (r.error || r.status !== 0)
    throw new Error(`openssl could not make a certificate (apt-get install openssl): ${r.error || r.stderr}`);
}

/* ---- comparing an answer with what the manual shows ---- */

const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

function pathMatches(p, list) {
  const generic = p.replace(/\[\d+\]/g, '[*]');
  return (list || []).some((x) => generic === x || generic.startsWith(`${x}.`) || generic.startsWith(`${x}[`));
}

/* Every field shown is in the answer with the value shown: strings and booleans and
 * integers exactly (… in a string: any text there; a time: any time), other numbers
 * by type, arrays
 * element by element and of the same length unless they end with …. Paths in
 * gpuOnly need only be there; in loose, only of the same type. */
function compare(shown, actual, p, opts, errs) {
  if (shown === R.ANY) return;
  if (actual === undefined) { errs.push(`${p || 'the answer'}: the manual shows it, the answer lacks it`); return; }
  if (pathMatches(p, opts.gpuOnly)) return;
  const type = (v) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
  if (pathMatches(p, opts.loose)) {
    if (type(shown) !== type(actual)) errs.push(`${p}: ${type(actual)}, the manual shows a ${type(shown)}`);
    return;
  }
  if (type(shown) !== type(actual)) {
    errs.push(`${p}: ${JSON.stringify(actual)}, the manual shows ${JSON.stringify(shown)}`);
  } else if (Array.isArray(shown)) {
    const open = shown.length && shown[shown.length - 1] === R.ANY;
    const listed = open ? shown.slice(0, -1) : shown;
    if (open ? actual.length < listed.length : actual.length !== listed.length)
      errs.push(`${p}: ${actual.length} items ${JSON.stringify(actual).slice(0, 200)}, the manual shows ${listed.length}${open ? ' or more' : ''}`);
    else listed.forEach((x, i) => compare(x, actual[i], `${p}[${i}]`, opts, errs));
  } else if (type(shown) === 'object') {
    for (const [k, v] of Object.entries(shown)) compare(v, actual[k], p ? `${p}.${k}` : k, opts, errs);
  } else if (typeof shown === 'string' && RFC3339.test(shown)) {
    if (!RFC3339.test(actual)) errs.push(`${p}: "${actual}" is not an RFC 3339 time like the manual's`);
  } else if (typeof shown === 'string' && shown.includes('…')) {
    const parts = shown.split('…');
    let at = 0;
    const ok = actual.startsWith(parts[0]) && actual.endsWith(parts[parts.length - 1]) &&
      parts.every((x) => { const j = actual.indexOf(x, at); if (j < 0) return false; at = j + x.length; return true; });
    if (!ok) errs.push(`${p}: "${actual}", the manual shows "${shown}"`);
  } else if (typeof shown === 'number' && !Number.isInteger(shown)) {
    /* a measured number: its type is enough */
  } else if (shown !== actual) {
    errs.push(`${p}: ${JSON.stringify(actual)}, the manual shows ${JSON.stringify(shown)}`);
  }
}

function valueAt(root, p) {
  let v = root;
  for (const part of p.split(/\.|(?=\[)/)) {
    if (v === undefined || v === null) return undefined;
    const idx = /^\[(\d+)\]$/.exec(part);
    v = idx ? v[Number(idx[1])] : v[part];
  }
  return v;
}

/* ---- running one command ---- */

const MANUAL_SOCKET = '/run/gpulab/gpulab.sock';
/* gpulabctl's folder (ctest sets GPULABCTL), first on PATH: the manual's gpulabctl. */
const GPULABCTL_DIR = process.env.GPULABCTL ? `${path.dirname(process.env.GPULABCTL)}:` : '';
const PRELUDE = `curl() {
  local args=() a from=${MANUAL_SOCKET}
  for a in "$@"; do args+=("\${a//"$from"/$GPULAB_SOCKET}"); done
  command curl -sS -D "$GPULAB_HDR" --connect-to localhost:8080:127.0.0.1:$GPULAB_PORT \\
    --connect-to gpubox:8080:127.0.0.1:$GPULAB_TLS_PORT --cacert "$GPULAB_CERT" $GPULAB_CURL_EXTRA "\${args[@]}"
}
set -o pipefail
`;

function run(text, env, timeoutS) {
  const hdr = path.join(work, 'headers.txt');
  fs.writeFileSync(hdr, '');
  const started = Date.now();
  /* --norc: bash reads ~/.bashrc even for -c when its stdin is a socket (as node's pipes
   * are), and a ~/.bashrc that puts pyenv's shims first on PATH hid /usr/bin's python3
   * (and its NumPy) from the manual's commands. */
  const r = spawnSync('bash', ['--norc', '-c', PRELUDE + text], {
    cwd: work,
    env: { ...process.env, ...env, GPULAB_HDR: hdr, PATH: `${GPULABCTL_DIR}/usr/bin:${process.env.PATH}` },
    timeout: timeoutS * 1000, maxBuffer: 256 << 20,
  });
  const headers = fs.readFileSync(hdr, 'latin1');
  const responses = headers.split(/\r?\n(?=HTTP\/)/);
  const last = responses[responses.length - 1];
  const status = Number((/^HTTP\/[\d.]+ (\d{3})/.exec(last) || [])[1] || 0);
  const header = (name) => {
    const m = new RegExp(`^${name}: *(.*?)\\r?$`, 'mi').exec(last);
    return m ? m[1] : undefined;
  };
  let stdout = r.stdout || Buffer.alloc(0);
  if (/(^|\s)-i(\s|$)/.test(text)) stdout = stdout.subarray(Buffer.byteLength(headers, 'latin1'));
  const out = /(^|\s)-o\s+(\S+)/.exec(text);
  const body = out ? fs.readFileSync(path.join(work, out[2])) : stdout;
  let json;
  try { json = JSON.parse(body.toString('utf8')); } catch (e) { json = undefined; }
  return { status, header, body, json, stdout: (r.stdout || '').toString(), stderr: (r.stderr || '').toString(),
    exit: r.status === null ? `signal ${r.signal}${r.error ? ` (${r.error.code})` : ''}` : r.status,
    seconds: (Date.now() - started) / 1000 };
}

/* What a comment under a command shows: "# 201 {...}" is a status and answer. */
function shownStatus(cmd) {
  for (const line of cmd.shows) {
    const m = /^(\d{3})\b[^{]*(\{.*)?$/.exec(line.trim());
    if (m) return { status: Number(m[1]), json: m[2] ? R.parseShown(m[2]) : undefined, line };
  }
  return null;
}

function checkOne(cmd, check, res, sample, state) {
  const errs = [];
  const shown = shownStatus(cmd);
  const status = check.status !== undefined ? check.status : shown && shown.status;
  const isCurl = /(^|\s)curl\s/.test(cmd.text);
  if (isCurl && (status === undefined || status === null)) errs.push('its check gives no status');
  const statuses = [].concat(status || []);
  if (shown && check.status !== undefined && !statuses.includes(shown.status))
    errs.push(`the manual shows ${shown.status}, its check says ${check.status}`);
  const exit = check.exit !== undefined ? check.exit : 0;
  if (res.exit !== exit) errs.push(`exit ${res.exit}, expected ${exit}; stderr: ${res.stderr.slice(0, 500)}`);
  if (statuses.length && !statuses.includes(res.status)) errs.push(`HTTP ${res.status}, expected ${statuses.join(' or ')}`);
  const opts = { gpuOnly: check.gpuOnly, loose: check.loose };
  if (shown && shown.json) compare(shown.json, res.json, '', opts, errs);
  if (sample) compare(sample, res.json, '', opts, errs);
  for (const [p, want] of Object.entries(check.json || {})) {
    const got = valueAt(res.json, p);
    const ok = typeof want === 'function' ? want(got, res.json, state) : JSON.stringify(got) === JSON.stringify(want);
    if (!ok) errs.push(`${p}: ${JSON.stringify(got)}${typeof want === 'function' ? ` fails ${want}` : `, expected ${JSON.stringify(want)}`}`);
  }
  for (const [name, want] of Object.entries(check.headers || {})) {
    const got = res.header(name);
    if (got !== want) errs.push(`${name}: ${got}, expected ${want}`);
  }
  if (check.stdout && !check.stdout.test(res.stdout)) errs.push(`its output does not match ${check.stdout}: ${res.stdout.slice(0, 500)}`);
  if (check.then) {
    try { check.then(res, state); } catch (e) { errs.push(e.message); }
  }
  return errs;
}

/* A block that starts with the line "gpulabd --help" shows that output: it must be
 * gpulabd's, from its first flag on (the usage lines above them left out). */
function checkHelp(page) {
  let n = 0;
  for (const block of R.blocks(page.text)) {
    if (block.lang !== '' || !/^gpulabd --help\n/.test(block.text)) continue;
    n++;
    const r = spawnSync(GPULABD, ['--help'], { encoding: 'utf8' });
    const real = `${r.stdout}${r.stderr}`.split('\n');
    const shown = block.text.split('\n').slice(1);
    const from = real.findIndex((l) => /^ {2}--/.test(l));
    const got = real.slice(from).join('\n').trimEnd();
    const want = shown.join('\n').trimEnd();
    if (from < 0 || got !== want) {
      failed++;
      const a = got.split('\n');
      const i = shown.findIndex((l, j) => l !== a[j]);
      log(`FAIL ${page.file}:${block.line + 1 + Math.max(i, 0)}: gpulabd --help differs from the page: ` +
        `gpulabd prints ${JSON.stringify(a[i])}, the page shows ${JSON.stringify(shown[i])}`);
    } else {
      log(`ok   ${page.file}:${block.line}: gpulabd --help as the page shows it`);
    }
  }
  return n;
}

/* Runs one page's examples, its checks in order; state is shared by every page. */
function runPage(page, checks, env, state) {
  const all = R.blocks(page.text);
  let k = 0;
  let ran = 0;
  for (let bi = 0; bi < all.length; bi++) {
    const block = all[bi];
    if (block.file) {
      fs.writeFileSync(path.join(work, block.file), `${block.text}\n`);
      log(`file ${page.file}:${block.line}: ${block.file} (${block.text.length + 1} bytes)`);
      continue;
    }
    if (block.lang !== 'sh' || !/(^|\s)(curl|gpulabctl)\s/m.test(block.text)) continue;
    const cmds = R.commands(block);
    const next = all[bi + 1];
    const sampleText = next && next.lang === 'json' ? next.text : null;
    for (let ci = 0; ci < cmds.length; ci++) {
      const cmd = cmds[ci];
      const name = R.normalize(cmd.text);
      const check = checks[k++];
      const where = `${page.file}:${cmd.line}`;
      if (!check || check.cmd !== name) {
        failed++;
        log(`FAIL ${where}: ${name}\n  has no check: checks.js['${page.file}'][${k - 1}] is ` +
          `${check ? `for ${check.cmd}` : 'missing'} (checks follow the page's commands, in order)`);
        continue;
      }
      const text = check.run || cmd.text;
      const res = run(text, { ...env, GPULAB_CURL_EXTRA: check.curl || '' }, check.timeout || 120);
      ran++;
      let sample = null;
      if (check.sample) {
        if (!sampleText || ci !== cmds.length - 1) {
          failed++;
          log(`FAIL ${where}: its check compares a sample answer, but no \`\`\`json block follows the block`);
          continue;
        }
        sample = R.parseShown(sampleText);
      }
      const errs = checkOne(cmd, check, res, sample, state);
      const line = `${where}: ${name.length > 110 ? `${name.slice(0, 107)}...` : name}`;
      const twin = check.run ? `\n    (ran its CPU-sized twin: ${check.run}; ${check.why})` : '';
      if (errs.length) {
        failed++;
        log(`FAIL ${line}${twin}\n  - ${errs.join('\n  - ')}\n  body: ${res.body.toString('utf8').slice(0, 1500)}`);
      } else {
        log(`ok   ${line} -> ${res.status || res.exit} (${res.seconds.toFixed(1)} s)${twin}`);
      }
    }
  }
  for (; k < checks.length; k++) {
    failed++;
    log(`FAIL checks.js['${page.file}'][${k}]: no command in ${page.file}: ${checks[k].cmd}`);
  }
  return ran;
}

async function main() {
  const pages = R.manual(path.dirname(README));
  for (const f of Object.keys(CHECKS)) {
    if (!pages.some((p) => p.file === f)) {
      failed++;
      log(`FAIL checks.js['${f}']: no such page of the manual (README.md and the chapters it links)`);
    }
  }
  const token = tokensFile(pages);
  certificate();
  const socket = path.join(work, 'gpulab.sock');
  const plain = await startGpulabd(['--devices', '0,1', '--socket', socket]);
  const tls = await startGpulabd(['--tokens', path.join(work, 'tokens'), '--tls-cert', path.join(work, 'cert.pem'),
    '--tls-key', path.join(work, 'key.pem')]);
  const env = { GPULAB_PORT: String(plain.port), GPULAB_TLS_PORT: String(tls.port), GPULAB_CERT: path.join(work, 'cert.pem'),
    GPULAB_SOCKET: socket, TOKEN: token, GPULAB_URL: `http://127.0.0.1:${plain.port}` };
  const state = {};
  let ran = 0;
  for (const page of pages) ran += checkHelp(page) + runPage(page, CHECKS[page.file] || [], env, state);
  log(`readme: ${ran} commands of ${pages.length} pages run (${pages.map((p) => p.file).join(', ')}), ${failed} failed`);
}

main().catch((e) => { failed++; log(`FAIL: ${e.stack || e}`); }).finally(() => {
  for (const p of procs) p.kill('SIGKILL');
  fs.rmSync(work, { recursive: true, force: true });
  process.exit(failed ? 1 : 0);
});

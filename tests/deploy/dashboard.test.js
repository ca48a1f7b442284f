#!/usr/bin/env node
/* docker/grafana-dashboard.json, docker/prometheus.yml and docker/gpulab-alerts.yml
 * against a real gpulabd (--backend cpu, --tokens) and a real Prometheus (Debian's),
 * on loopback:
 *  - the dashboard is well formed: unique panel ids, panels inside the 24-column grid
 *    and not overlapping, every query on the ${datasource} variable, every $variable
 *    defined;
 *  - docker/prometheus.yml's gpulab job, as written but for its targets, token file
 *    and intervals, passes `promtool check config` and scrapes gpulabd with its
 *    bearer token (up = 1; without a token /metrics is a 401);
 *  - every metric a panel queries is one gpulabd's /metrics has today, every query
 *    evaluates in Prometheus, and returns series, but for the panels marked GPU only
 *    (NVML's readings) or empty while no job is unfinished (none is, here: a job left
 *    running would take the 2 cores from the tests beside it); the variables'
 *    label_values find the job and the instance;
 *  - the alert rules load and evaluate without error, and none fires on this healthy
 *    gpulabd.
 *   GPULABD=build/gpulabd node tests/deploy/dashboard.test.js */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { ROOT, done, ok, read, yamlDocs } from './lib.js';

const GPULABD = process.env.GPULABD;
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'gpulab-dashboard-'));
const procs = [];
const ADMIN = 'dashboard-test-admin-token-0123456789';
const SCRAPER = 'dashboard-test-prometheus-token-0123456789';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function start(cmd, args, ready, what) {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    procs.push(p);
    let text = '';
    const timer = setTimeout(() => reject(new Error(`${what} did not start in 60 s:\n${text}`)), 60000);
    const on = (d) => {
      text += d;
      const m = ready.exec(text);
      if (m && !p.ready) {
        p.ready = true;
        clearTimeout(timer);
        resolve({ proc: p, match: m, log: () => text });
      }
    };
    p.stdout.on('data', on);
    p.stderr.on('data', on);
    p.on('error', (e) => { clearTimeout(timer); reject(new Error(`${what}: ${e.message}`)); });
    p.on('exit', (code) => { if (!p.ready) { clearTimeout(timer); reject(new Error(`${what} exited (${code}):\n${text}`)); } });
  });
}

async function http(url, opts = {}) {
  const r = await fetch(url, opts);
  const text = await r.text();
  let json;
  try { json = JSON.parse(text); } catch (e) { json = undefined; }
  return { status: r.status, text, json };
}

/* ---- the dashboard's own shape ---- */
const dash = JSON.parse(read('docker/grafana-dashboard.json'));
const panels = dash.panels.filter((p) => p.type !== 'row');
const ids = dash.panels.map((p) => p.id);
ok(dash.uid && dash.title && Number.isInteger(dash.schemaVersion), `a dashboard "${dash.title}" (uid ${dash.uid}, schemaVersion ${dash.schemaVersion})`);
ok(new Set(ids).size === ids.length, `${dash.panels.length} panels, each id once`);
const boxes = dash.panels.map((p) => p.gridPos);
ok(boxes.every((b) => b.x >= 0 && b.w > 0 && b.h > 0 && b.x + b.w <= 24), 'every panel inside the 24-column grid');
const overlap = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
const clashes = [];
boxes.forEach((a, i) => boxes.forEach((b, j) => { if (i < j && overlap(a, b)) clashes.push(`${dash.panels[i].title} / ${dash.panels[j].title}`); }));
ok(clashes.length === 0, 'no two panels overlap', clashes.join('\n'));
const vars = new Set(dash.templating.list.map((v) => v.name));
const builtin = new Set(['__rate_interval', '__interval', '__range']);
const targets = panels.flatMap((p) => (p.targets || []).map((t) => ({ panel: p, t })));
ok(panels.every((p) => p.targets && p.targets.length && p.datasource && p.datasource.uid === '${datasource}' &&
  p.targets.every((t) => t.expr && t.refId && t.datasource.uid === '${datasource}')),
  `every panel queries the \${datasource} variable (${targets.length} queries)`);
const used = targets.flatMap(({ t }) => [...t.expr.matchAll(/\$\{?(\w+)\}?/g)].map((m) => m[1]));
ok(used.every((v) => vars.has(v) || builtin.has(v)), `every $variable is defined (${[...new Set(used)].join(', ')})`);

/* Grafana's substitutions for a query: the job, every instance, a rate window. */
const grafana = (expr) => expr.replace(/\$\{?job\}?/g, 'gpulab').replace(/\$\{?instance\}?/g, '.+')
  .replace(/\$\{?__rate_interval\}?/g, '1m').replace(/\$\{?__interval\}?/g, '5s').replace(/\$\{?__range\}?/g, '5m');

async function main() {
  if (!GPULABD) throw new Error('GPULABD is not set (the path of the built gpulabd; ctest sets it)');
  if (spawnSync('prometheus', ['--version']).error)
    throw new Error('prometheus is not installed (apt-get install prometheus; scripts/gpulab test installs it)');

  /* gpulabd with tokens: an admin who runs jobs, and Prometheus' own client. */
  fs.writeFileSync(path.join(work, 'tokens'), `${ADMIN} alice admin\n${SCRAPER} prometheus\n`);
  const g = await start(GPULABD, ['--backend', 'cpu', '--host', '127.0.0.1', '--port', '0', '--access-log', 'off',
    '--db', path.join(work, 'gpulab.db'), '--tokens', path.join(work, 'tokens')],
  /listening on http:\/\/127\.0\.0\.1:(\d+)/, 'gpulabd');
  const base = `http://127.0.0.1:${g.match[1]}`;
  const as = (token) => ({ headers: { Authorization: `Bearer ${token}` } });
  ok((await http(`${base}/metrics`)).status === 401, '/metrics without a token: 401 (the scrape needs its own)');

  /* docker/prometheus.yml's gpulab job as written, aimed at this gpulabd. */
  const example = yamlDocs('docker/prometheus.yml')[0];
  const job = example.scrape_configs.find((j) => j.job_name === 'gpulab');
  ok(job && job.authorization && job.authorization.type === 'Bearer' && job.authorization.credentials_file,
    'docker/prometheus.yml has a gpulab job that sends a bearer token from a file');
  ok(example.rule_files.includes('gpulab-alerts.yml'), 'it loads the alert rules beside it (gpulab-alerts.yml)');
  fs.writeFileSync(path.join(work, 'prometheus-token'), `${SCRAPER}\n`);
  const promPort = await freePort();
  const config = {
    ...example,
    global: { ...example.global, scrape_interval: '1s', evaluation_interval: '1s' },
    rule_files: [path.join(ROOT, 'docker', 'gpulab-alerts.yml')],
    scrape_configs: [{
      ...job,
      authorization: { ...job.authorization, credentials_file: path.join(work, 'prometheus-token') },
      static_configs: [{ targets: [`127.0.0.1:${g.match[1]}`] }],
    }],
  };
  const configFile = path.join(work, 'prometheus.yml');
  fs.writeFileSync(configFile, YAML.stringify(config));
  const check = spawnSync('promtool', ['check', 'config', configFile], { encoding: 'utf8' });
  ok(check.status === 0, 'promtool check config passes on it (with its rule file)', `${check.stdout}${check.stderr}`);

  /* Some work first: quick jobs, by a client and by the same admin token. */
  const post = (body, q = '') => http(`${base}/jobs${q}`, { method: 'POST', body: JSON.stringify(body),
    headers: { Authorization: `Bearer ${ADMIN}`, 'Content-Type': 'application/json' } });
  const quick = { type: 'transpose', params: { m: 64, n: 64, warmup: 0, batches: 1, reps: 1 } };
  for (let i = 0; i < 3; i++) ok((await post(quick)).status === 200, `job ${i + 1} ran`);

  const prom = await start('prometheus', [`--config.file=${configFile}`, `--storage.tsdb.path=${path.join(work, 'tsdb')}`,
    `--web.listen-address=127.0.0.1:${promPort}`], /Server is ready to receive web requests/, 'prometheus');
  const api = `http://127.0.0.1:${promPort}/api/v1`;
  const query = async (q) => (await http(`${api}/query?query=${encodeURIComponent(q)}`)).json;
  let samples = 0;
  for (let i = 0; i < 120 && samples < 6; i++) {
    await sleep(500);
    const r = await query('count_over_time(up{job="gpulab"}[1m])');
    samples = r && r.data.result.length ? Number(r.data.result[0].value[1]) : 0;
    if (i === 4) await post(quick); /* counters that move between scrapes */
  }
  const up = await query('up{job="gpulab"}');
  ok(up && up.data.result.length === 1 && up.data.result[0].value[1] === '1',
    `Prometheus scrapes gpulabd with the token (up = 1, ${samples} scrapes)`, JSON.stringify(up) + prom.log().slice(-2000));

  /* The metric names gpulabd declares (its # TYPE lines), and the histograms' series. */
  const metrics = await http(`${base}/metrics`, as(SCRAPER));
  const families = new Map([...metrics.text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]));
  const exists = (n) => families.has(n) || n === 'up' ||
    (/_(bucket|sum|count)$/.test(n) && families.get(n.replace(/_(bucket|sum|count)$/, '')) === 'histogram');
  ok(!exists('gpulab_no_such_metric') && !exists('gpulab_jobs_bucket') && exists('gpulab_job_run_seconds_bucket'),
    'the name check refuses a metric gpulabd lacks, and buckets of a gauge');
  for (const { panel, t } of targets) {
    const names = [...new Set([...t.expr.replace(/"[^"]*"/g, '""').matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{/g)].map((m) => m[1]))];
    const gpuOnly = /GPU only|Empty while no client has unfinished jobs/.test(panel.description || '');
    ok(names.length > 0 && names.every(exists), `"${panel.title}" ${t.refId}: ${names.join(', ')} in gpulabd's /metrics`,
      names.filter((n) => !exists(n)).join(', '));
    const r = await query(grafana(t.expr));
    const n = r && r.status === 'success' ? r.data.result.length : -1;
    ok(n > 0 || (n === 0 && gpuOnly), `"${panel.title}" ${t.refId}: evaluates (${n} series${gpuOnly && !n ? ', may be empty here' : ''})`,
      `${grafana(t.expr)}\n${JSON.stringify(r)}`);
  }
  for (const v of dash.templating.list.filter((x) => x.type === 'query')) {
    const m = /^label_values\((.*), (\w+)\)$/.exec(v.definition);
    const r = await http(`${api}/label/${m[2]}/values?match[]=${encodeURIComponent(grafana(m[1]))}`);
    const want = m[2] === 'job' ? 'gpulab' : `127.0.0.1:${g.match[1]}`;
    ok(r.json && r.json.data.includes(want), `variable ${v.name}: ${v.definition} finds ${want}`, r.text);
  }

  /* The alert rules, loaded by this Prometheus: evaluated without error, none firing. */
  let rules = [];
  for (let i = 0; i < 40; i++) {
    rules = (((await http(`${api}/rules`)).json || {}).data || { groups: [] }).groups.flatMap((x) => x.rules);
    if (rules.length && rules.every((r) => r.lastEvaluation && !r.lastEvaluation.startsWith('0001'))) break;
    await sleep(500);
  }
  const names = yamlDocs('docker/gpulab-alerts.yml')[0].groups.flatMap((x) => x.rules.map((r) => r.alert));
  ok(rules.length === names.length && rules.every((r) => r.health === 'ok'),
    `the ${names.length} alert rules load and evaluate without error`,
    rules.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.lastError}`).join('\n'));
  const firing = rules.filter((r) => r.state !== 'inactive');
  ok(firing.length === 0, 'none is pending or firing on a healthy gpulabd', firing.map((r) => `${r.name}: ${r.state}`).join('\n'));
}

main().catch((e) => ok(false, 'the test ran', e.stack || e)).finally(() => {
  for (const p of procs) p.kill('SIGKILL');
  fs.rmSync(work, { recursive: true, force: true });
  done('dashboard');
});

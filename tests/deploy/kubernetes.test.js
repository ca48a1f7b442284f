#!/usr/bin/env node
/* docker/k8s.yaml and docker/k8s-monitoring.yaml against the Kubernetes API (1.33's,
 * from kubernetes-models) and the Prometheus Operator's CRDs: every document through
 * its model's validator (types, required fields, enums, quantities, formats), and
 * through TypeScript against the same models' interfaces, which refuses a field the
 * API does not have (a misspelt startupProbe is no error for the validators, or for
 * a cluster without strict field validation: it is silently dropped). Then what
 * issue 17 asked of the manifest, and that its parts name each other rightly: probes
 * on a named port, the GPU taint tolerated, requests and limits, the image tagged
 * with gpulabd's version, the scrape annotations, the ServiceMonitor's selector, port
 * and job label, and the PrometheusRule being docker/gpulab-alerts.yml's groups.
 *   GPULABD=build/gpulabd node tests/deploy/kubernetes.test.js   (npm ci in tests/deploy first) */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { ROOT, done, gpulabdVersion, imageTag, ok, yamlDocs } from './lib.js';

const require = createRequire(import.meta.url);
const HERE = path.join(ROOT, 'tests', 'deploy');

/* apiVersion/kind -> the model's module and its interface. */
const MODELS = {
  'v1/Namespace': ['kubernetes-models/v1/Namespace', 'Namespace'],
  'v1/PersistentVolumeClaim': ['kubernetes-models/v1/PersistentVolumeClaim', 'PersistentVolumeClaim'],
  'v1/Service': ['kubernetes-models/v1/Service', 'Service'],
  'apps/v1/Deployment': ['kubernetes-models/apps/v1/Deployment', 'Deployment'],
  'monitoring.coreos.com/v1/ServiceMonitor':
    ['@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor', 'ServiceMonitor'],
  'monitoring.coreos.com/v1/PrometheusRule':
    ['@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule', 'PrometheusRule'],
};

const FILES = ['docker/k8s.yaml', 'docker/k8s-monitoring.yaml'];
const docs = FILES.flatMap((f) => yamlDocs(f).map((doc, i) => ({ file: f, index: i, doc })));
const name = (d) => `${d.file}: ${d.doc.kind} ${d.doc.metadata && d.doc.metadata.name}`;

/* ---- the models' validators ---- */
for (const d of docs) {
  const model = MODELS[`${d.doc.apiVersion}/${d.doc.kind}`];
  if (!ok(model, `${name(d)}: a known kind (${d.doc.apiVersion})`)) continue;
  const Model = require(model[0])[model[1]];
  let error = null;
  try {
    new Model(d.doc).validate();
  } catch (e) {
    error = e;
  }
  ok(!error, `${name(d)}: valid for the ${model[1]} model`, error && error.message);
}

/* The validators must refuse a wrong type and a bad quantity (else they check nothing). */
{
  const { Deployment } = require(MODELS['apps/v1/Deployment'][0]);
  const d = JSON.parse(JSON.stringify(docs.find((x) => x.doc.kind === 'Deployment').doc));
  d.spec.template.spec.containers[0].ports[0].containerPort = 'eighty';
  d.spec.template.spec.containers[0].resources.limits.memory = '16 GiB';
  let message = '';
  try {
    new Deployment(d).validate();
  } catch (e) {
    message = e.message;
  }
  ok(/containerPort must be integer/.test(message) && /memory must match format "quantity"/.test(message),
    'a Deployment with containerPort "eighty" and memory "16 GiB" is refused by the validator', message);
}

/* ---- unknown fields: TypeScript's excess property check over the same models ---- */
function typecheck(list, label) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpulab-k8s-'));
  const lines = [];
  list.forEach((d, i) => {
    const [mod, iface] = MODELS[`${d.doc.apiVersion}/${d.doc.kind}`];
    lines.push(`import type { I${iface} as T${i} } from "${mod}";`);
    lines.push(`// ${name(d)}`, `export const doc${i}: T${i} = ${JSON.stringify(d.doc, null, 2)};`);
  });
  fs.writeFileSync(path.join(dir, 'manifests.ts'), `${lines.join('\n')}\n`);
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      strict: true, noEmit: true, module: 'commonjs', moduleResolution: 'node10', skipLibCheck: true, types: [],
      baseUrl: HERE, paths: { 'kubernetes-models/*': ['node_modules/kubernetes-models/*'],
        '@kubernetes-models/*': ['node_modules/@kubernetes-models/*'] },
    },
    files: ['manifests.ts'],
  }));
  const r = spawnSync(process.execPath, [path.join(HERE, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir],
    { encoding: 'utf8' });
  fs.rmSync(dir, { recursive: true, force: true });
  return { status: r.status, out: `${r.stdout}${r.stderr}`.trim(), label };
}
const typed = docs.filter((d) => MODELS[`${d.doc.apiVersion}/${d.doc.kind}`]);
const t = typecheck(typed, 'the manifests');
ok(t.status === 0, `${typed.length} documents type-check against the models' interfaces (no unknown field)`, t.out);
/* The same check must catch a misspelt field deep inside (else it checks nothing). */
const spoilt = JSON.parse(JSON.stringify(typed.find((d) => d.doc.kind === 'Deployment')));
const c0 = spoilt.doc.spec.template.spec.containers[0];
c0.startupProbe.httpGet.paht = c0.startupProbe.httpGet.path;
const bad = typecheck([spoilt], 'a misspelt field');
ok(bad.status !== 0 && /'"?paht"?' does not exist in type/.test(bad.out),
  'a Deployment with startupProbe.httpGet.paht is refused by the same check', bad.out);

/* ---- what the manifest must say, and its parts naming each other ---- */
const kind = (k) => docs.filter((d) => d.doc.kind === k).map((d) => d.doc);
const [deploy] = kind('Deployment');
const [service] = kind('Service');
const [monitor] = kind('ServiceMonitor');
const [rule] = kind('PrometheusRule');
const pod = deploy.spec.template;
const [c] = pod.spec.containers;
const ports = new Map((c.ports || []).map((p) => [p.name, p.containerPort]));
const argAfter = (flag) => c.args[c.args.indexOf(flag) + 1];

for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
  const p = c[probe];
  ok(p && p.httpGet && p.httpGet.path === '/health' && ports.has(p.httpGet.port),
    `${probe}: GET /health on the named port ${p && p.httpGet && p.httpGet.port}`);
}
const startup = c.startupProbe;
ok(startup.periodSeconds * startup.failureThreshold >= 120,
  `startupProbe allows ${startup.periodSeconds * startup.failureThreshold} s for the ceilings and the store's check (>= 120)`);
ok(!c.livenessProbe.initialDelaySeconds, 'livenessProbe leaves the start to the startupProbe (no initialDelaySeconds)');
ok((pod.spec.tolerations || []).some((x) => x.key === 'nvidia.com/gpu' && x.effect === 'NoSchedule' &&
  (x.operator === 'Exists' || x.operator === 'Equal')), 'tolerates the nvidia.com/gpu:NoSchedule taint');
const res = c.resources || {};
for (const r of ['cpu', 'memory', 'nvidia.com/gpu'])
  ok(res.requests && res.requests[r] !== undefined && res.limits && res.limits[r] !== undefined,
    `resources: requests and limits of ${r}`);
ok(String(res.requests['nvidia.com/gpu']) === String(res.limits['nvidia.com/gpu']),
  'nvidia.com/gpu: the request equals the limit (extended resources cannot be overcommitted)');
const version = gpulabdVersion();
const tag = imageTag(c.image);
ok(tag && tag !== 'latest' && (tag === version || /@sha256:[0-9a-f]{64}$/.test(c.image)),
  `image ${c.image}: pinned to gpulabd's version ${version}`);
ok(Number(argAfter('--port')) === ports.get('http'), `--port ${argAfter('--port')} is the container port http`);
const ann = pod.metadata.annotations || {};
ok(ann['prometheus.io/scrape'] === 'true' && Number(ann['prometheus.io/port']) === ports.get('http') &&
  ann['prometheus.io/path'] === '/metrics', 'the pod carries the prometheus.io scrape annotations for its port');
const volumes = new Set(pod.spec.volumes.map((v) => v.name));
ok(c.volumeMounts.every((m) => volumes.has(m.name)), 'every volumeMount names a volume of the pod');
for (const v of pod.spec.volumes) {
  if (v.persistentVolumeClaim)
    ok(kind('PersistentVolumeClaim').some((p) => p.metadata.name === v.persistentVolumeClaim.claimName),
      `volume ${v.name}: its claim ${v.persistentVolumeClaim.claimName} is in the file`);
  if (v.secret && v.secret.defaultMode !== undefined)
    ok(v.secret.defaultMode >= 0 && v.secret.defaultMode <= 0o777,
      `volume ${v.name}: defaultMode ${v.secret.defaultMode.toString(8)} is a file mode (octal in YAML 1.1)`);
}
ok(c.args.includes('--db') && c.volumeMounts.some((m) => argAfter('--db').startsWith(`${m.mountPath}/`)),
  `--db ${argAfter('--db')} lies on a mounted volume`);
ok(c.volumeMounts.some((m) => argAfter('--tokens').startsWith(`${m.mountPath}/`)), `--tokens ${argAfter('--tokens')} lies on a mounted volume`);
const matches = (selector, labels) => Object.entries(selector || {}).every(([k, v]) => labels[k] === v);
ok(matches(deploy.spec.selector.matchLabels, pod.metadata.labels), "the Deployment's selector matches its pods");
ok(matches(service.spec.selector, pod.metadata.labels), "the Service's selector matches the pods");
ok(service.spec.ports.every((p) => ports.has(p.targetPort)), "the Service's target ports are the container's named ports");
const ns = new Set(docs.map((d) => d.doc.metadata.namespace).filter(Boolean));
ok(ns.size === 1 && kind('Namespace').some((n) => ns.has(n.metadata.name)), `every object is in the namespace ${[...ns]}`);

ok(matches(monitor.spec.selector.matchLabels, service.metadata.labels), "the ServiceMonitor selects the Service");
ok(monitor.spec.namespaceSelector.matchNames.includes(service.metadata.namespace), 'the ServiceMonitor looks in its namespace');
const ep = monitor.spec.endpoints[0];
ok(service.spec.ports.some((p) => p.name === ep.port) && ep.path === '/metrics', `it scrapes /metrics on the Service port ${ep.port}`);
ok(ep.authorization && ep.authorization.type === 'Bearer' && ep.authorization.credentials.name,
  'it sends a bearer token from a Secret (--tokens)');
ok(service.metadata.labels[monitor.spec.jobLabel] === 'gpulab',
  `its job label (${monitor.spec.jobLabel}) makes job="gpulab", as the alerts and the dashboard expect`);
const alerts = yamlDocs('docker/gpulab-alerts.yml')[0];
ok(JSON.stringify(rule.spec.groups) === JSON.stringify(alerts.groups),
  "the PrometheusRule's groups are docker/gpulab-alerts.yml's");

done('kubernetes');

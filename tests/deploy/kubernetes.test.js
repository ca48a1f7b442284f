#!/usr/bin/env node
/* docker/k8s.yaml, docker/k8s-monitoring.yaml, and the fleet's docker/k8s-fleet.yaml and
 * docker/k8s-postgres.yaml against the Kubernetes API (1.33's,
 * from kubernetes-models) and the Prometheus Operator's CRDs: every document through
 * its model's validator (types, required fields, enums, quantities, formats), and
 * through TypeScript against the same models' interfaces, which refuses a field the
 * API does not have (a misspelt startupProbe is no error for the validators, or for
 * a cluster without strict field validation: it is silently dropped). Then what
 * issue 17 asked of the manifest, and that its parts name each other rightly: probes
 * on a named port, the GPU taint tolerated, requests and limits, the image tagged
 * with gpulabd's version, the scrape annotations, the ServiceMonitor's selector, port
 * and job label, and the PrometheusRule being docker/gpulab-alerts.yml's groups. The
 * fleet (issue 18): the DaemonSet's --db, PGPASSWORD, --node and --advertise from the
 * Secret and the downward API through env and $(VAR), every $(VAR) defined, the
 * Secret the header tells how to create, one GPU on GPU nodes only, the probes, the
 * Service and the ServiceMonitor over it, and PostgreSQL's StatefulSet agreeing with
 * the Secret's url.
 *   GPULABD=build/gpulabd node tests/deploy/kubernetes.test.js   (npm ci in tests/deploy first) */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { ROOT, done, gpulabdVersion, imageTag, ok, read, yamlDocs } from './lib.js';

const require = createRequire(import.meta.url);
const HERE = path.join(ROOT, 'tests', 'deploy');

/* apiVersion/kind -> the model's module and its interface. */
const MODELS = {
  'v1/Namespace': ['kubernetes-models/v1/Namespace', 'Namespace'],
  'v1/PersistentVolumeClaim': ['kubernetes-models/v1/PersistentVolumeClaim', 'PersistentVolumeClaim'],
  'v1/Service': ['kubernetes-models/v1/Service', 'Service'],
  'apps/v1/Deployment': ['kubernetes-models/apps/v1/Deployment', 'Deployment'],
  'apps/v1/DaemonSet': ['kubernetes-models/apps/v1/DaemonSet', 'DaemonSet'],
  'apps/v1/StatefulSet': ['kubernetes-models/apps/v1/StatefulSet', 'StatefulSet'],
  'monitoring.coreos.com/v1/ServiceMonitor':
    ['@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor', 'ServiceMonitor'],
  'monitoring.coreos.com/v1/PrometheusRule':
    ['@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule', 'PrometheusRule'],
};

const FILES = ['docker/k8s.yaml', 'docker/k8s-monitoring.yaml', 'docker/k8s-fleet.yaml', 'docker/k8s-postgres.yaml'];
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

/* ---- the fleet (issue 18): docker/k8s-fleet.yaml and docker/k8s-postgres.yaml ---- */
const inFile = (f, k) => docs.filter((d) => d.file === f && d.doc.kind === k).map((d) => d.doc);
const FLEET = 'docker/k8s-fleet.yaml';
const fleetText = read(FLEET);
const [ds] = inFile(FLEET, 'DaemonSet');
const [fsvc] = inFile(FLEET, 'Service');
ok(ds && fsvc && inFile(FLEET, 'Deployment').length === 0, `${FLEET}: a DaemonSet and a Service, no Deployment`);
const fpod = ds.spec.template;
const [fc] = fpod.spec.containers;
const fports = new Map((fc.ports || []).map((p) => [p.name, p.containerPort]));
const farg = (flag) => (fc.args.indexOf(flag) >= 0 ? fc.args[fc.args.indexOf(flag) + 1] : undefined);
const fenv = new Map((fc.env || []).map((e) => [e.name, e]));
const fieldOf = (v) => { const e = fenv.get(v); return e && e.valueFrom && e.valueFrom.fieldRef && e.valueFrom.fieldRef.fieldPath; };
const secretOf = (v) => { const e = fenv.get(v); return e && e.valueFrom && e.valueFrom.secretKeyRef; };
const ref = (arg) => (/^\$\((\w+)\)$/.exec(arg || '') || [])[1];

/* $(VAR) in args or command is expanded only from the container's env: an undefined
 * one stays as the literal text "$(VAR)", silently. */
const used = [...(fc.command || []), ...fc.args].flatMap((a) => [...String(a).matchAll(/\$\((\w+)\)/g)].map((m) => m[1]));
ok(used.length > 0 && used.every((v) => fenv.has(v)), `every $(VAR) of the args is in the env (${[...new Set(used)]})`);
ok(fieldOf(ref(farg('--node'))) === 'spec.nodeName', `--node ${farg('--node')}: the Kubernetes node's name (downward API spec.nodeName)`);
const adv = /^http:\/\/\$\((\w+)\):(\d+)$/.exec(farg('--advertise') || '') || [];
ok(fieldOf(adv[1]) === 'status.podIP' && Number(adv[2]) === fports.get('http') && Number(farg('--port')) === fports.get('http'),
  `--advertise ${farg('--advertise')}: the pod's IP (downward API status.podIP) and its port http`);
const dbRef = secretOf(ref(farg('--db')));
const pwRef = secretOf('PGPASSWORD');
ok(dbRef && dbRef.name && dbRef.key, `--db ${farg('--db')}: from the Secret ${dbRef && dbRef.name}, key ${dbRef && dbRef.key}`);
ok(pwRef && dbRef && pwRef.name === dbRef.name && pwRef.key && pwRef.key !== dbRef.key,
  `PGPASSWORD (libpq's) from the same Secret, key ${pwRef && pwRef.key}`);
ok((fc.env || []).every((e) => !/PASS/i.test(e.name) || !('value' in e)) &&
  !fc.args.some((a) => /postgresql:\/\/[^/@]*:[^/@]*@|password=/i.test(a)), 'no password in the args or written in the env');
/* The header's `kubectl create secret` makes that Secret with those keys, the url a
 * libpq URI with a user and no password. */
const create = new RegExp(`kubectl -n ${ds.metadata.namespace} create secret generic ${dbRef.name} \\\\\\n#\\s+(.*)$`, 'm').exec(fleetText);
const urlArg = create && new RegExp(`--from-literal=${dbRef.key}=(\\S+)`).exec(create[1]);
ok(urlArg && create[1].includes(`--from-file=${pwRef.key}=`),
  `the header creates the Secret ${dbRef.name} with ${dbRef.key} and ${pwRef.key}`, create && create[1]);
const url = urlArg ? new URL(urlArg[1]) : null;
ok(url && url.protocol === 'postgresql:' && url.username && !url.password && url.pathname.length > 1,
  `its ${dbRef.key} ${urlArg && urlArg[1]}: a user, a database, no password`);
ok(/create secret generic gpulab-tokens/.test(fleetText), 'the header creates the tokens Secret too');

for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
  const p = fc[probe];
  ok(p && p.httpGet && p.httpGet.path === '/health' && fports.has(p.httpGet.port),
    `DaemonSet ${probe}: GET /health on the named port ${p && p.httpGet && p.httpGet.port}`);
}
ok(fc.startupProbe.periodSeconds * fc.startupProbe.failureThreshold >= 120 && !fc.livenessProbe.initialDelaySeconds,
  'DaemonSet: the startupProbe allows >= 120 s, the livenessProbe leaves the start to it');
const fres = fc.resources || {};
ok(String((fres.limits || {})['nvidia.com/gpu']) === '1' && String((fres.requests || {})['nvidia.com/gpu']) === '1',
  'DaemonSet: one GPU per pod (nvidia.com/gpu request and limit 1)');
for (const r of ['cpu', 'memory'])
  ok(fres.requests[r] !== undefined && String(fres.requests[r]) === String(fres.limits[r]), `DaemonSet: ${r} requested as limited (Guaranteed)`);
const terms = (((fpod.spec.affinity || {}).nodeAffinity || {}).requiredDuringSchedulingIgnoredDuringExecution || {}).nodeSelectorTerms || [];
const selector = fpod.spec.nodeSelector || {};
ok(selector['nvidia.com/gpu.present'] === 'true' || (terms.length > 0 && terms.every((t) => (t.matchExpressions || []).some((e) =>
  e.key === 'nvidia.com/gpu.present' && ((e.operator === 'In' && e.values.includes('true')) || e.operator === 'Exists')))),
  'DaemonSet: only on GPU nodes (nvidia.com/gpu.present), else its pods wait forever on the others');
ok((fpod.spec.tolerations || []).some((x) => x.key === 'nvidia.com/gpu' && x.effect === 'NoSchedule'),
  'DaemonSet: tolerates the nvidia.com/gpu:NoSchedule taint');
const ftag = imageTag(fc.image);
ok(ftag === version || /@sha256:[0-9a-f]{64}$/.test(fc.image), `DaemonSet image ${fc.image}: pinned to gpulabd's version ${version}`);
ok(fc.image === c.image, "the fleet runs docker/k8s.yaml's image");
const fann = fpod.metadata.annotations || {};
ok(fann['prometheus.io/scrape'] === 'true' && Number(fann['prometheus.io/port']) === fports.get('http'),
  'the fleet pods carry the prometheus.io scrape annotations');
const fvolumes = new Set(fpod.spec.volumes.map((v) => v.name));
ok(fc.volumeMounts.every((m) => fvolumes.has(m.name)), 'DaemonSet: every volumeMount names a volume of the pod');
ok(fc.volumeMounts.some((m) => (farg('--tokens') || '').startsWith(`${m.mountPath}/`)), `DaemonSet: --tokens ${farg('--tokens')} lies on a mounted volume`);
ok(fpod.spec.securityContext.runAsNonRoot && fc.securityContext.readOnlyRootFilesystem,
  'DaemonSet: non-root with a read-only root file system, as docker/k8s.yaml');
ok(matches(ds.spec.selector.matchLabels, fpod.metadata.labels), "the DaemonSet's selector matches its pods");
ok(matches(fsvc.spec.selector, fpod.metadata.labels) && fsvc.spec.ports.every((p) => fports.has(p.targetPort)),
  "the fleet's Service selects the DaemonSet's pods, on their named ports");
ok(matches(monitor.spec.selector.matchLabels, fsvc.metadata.labels) && fsvc.metadata.labels[monitor.spec.jobLabel] === 'gpulab' &&
  fsvc.spec.ports.some((p) => p.name === ep.port), "docker/k8s-monitoring.yaml's ServiceMonitor scrapes the fleet too (job gpulab)");

/* A misspelt fieldRef would reach the API server as an error only at apply time: the
 * validator must refuse the DaemonSet's env without its fieldPath (else it checks nothing). */
{
  const { DaemonSet } = require(MODELS['apps/v1/DaemonSet'][0]);
  const d = JSON.parse(JSON.stringify(ds));
  delete d.spec.template.spec.containers[0].env[0].valueFrom.fieldRef.fieldPath;
  let message = '';
  try {
    new DaemonSet(d).validate();
  } catch (e) {
    message = e.message;
  }
  ok(/fieldPath/.test(message), 'a DaemonSet env fieldRef without fieldPath is refused by the validator', message);
}

/* PostgreSQL of docker/k8s-postgres.yaml: what the Secret's url names. */
const PG = 'docker/k8s-postgres.yaml';
const [sts] = inFile(PG, 'StatefulSet');
const [pgsvc] = inFile(PG, 'Service');
const [pc] = sts.spec.template.spec.containers;
const penv = new Map((pc.env || []).map((e) => [e.name, e]));
ok(url && pgsvc.metadata.name === url.hostname && pgsvc.spec.ports.some((p) => p.port === Number(url.port || 5432)),
  `${PG}: the Service ${pgsvc.metadata.name}:${pgsvc.spec.ports[0].port} is the url's host and port`);
ok(sts.spec.serviceName === pgsvc.metadata.name && pgsvc.spec.clusterIP === 'None' && matches(pgsvc.spec.selector, sts.spec.template.metadata.labels),
  'the StatefulSet is governed by that headless Service, which selects its pod');
ok(sts.spec.replicas === 1 && /^postgres:\d+$/.test(pc.image), `one replica of the official image pinned to a major version (${pc.image})`);
const ppw = ((penv.get('POSTGRES_PASSWORD') || {}).valueFrom || {}).secretKeyRef || {};
ok(ppw.name === pwRef.name && ppw.key === pwRef.key && !penv.has('POSTGRES_PASSWORD_FILE'),
  "POSTGRES_PASSWORD is the Secret's password, the one gpulabd's PGPASSWORD is");
ok(url && (penv.get('POSTGRES_USER') || {}).value === url.username && (penv.get('POSTGRES_DB') || {}).value === url.pathname.slice(1),
  `POSTGRES_USER and POSTGRES_DB are the url's user and database (${url && url.username}, ${url && url.pathname.slice(1)})`);
const pgdata = (penv.get('PGDATA') || {}).value || '';
const claims = new Set((sts.spec.volumeClaimTemplates || []).map((v) => v.metadata.name));
ok(pc.volumeMounts.some((m) => claims.has(m.name) && pgdata.startsWith(`${m.mountPath}/`)),
  `PGDATA ${pgdata} lies below the mount of a volumeClaimTemplate (not its root: lost+found)`);
for (const probe of ['readinessProbe', 'livenessProbe'])
  ok(pc[probe] && pc[probe].exec && pc[probe].exec.command[0] === 'pg_isready', `PostgreSQL ${probe}: pg_isready`);
ok(pc.ports.some((p) => p.name === pgsvc.spec.ports[0].targetPort), "the Service's target port is the container's named port");

done('kubernetes');

#!/usr/bin/env node
/* docker/compose.yaml and docker/compose.fleet.yaml through docker-compose config (Debian's docker-compose 1.29:
 * the Compose file schema, every key and type; it needs no Docker engine), and what
 * it must agree on with the Dockerfile and the manual (docs/deployment.md): the CUDA architectures it
 * builds for (90a, the H200's with its Hopper-only path), the image tag (gpulabd's
 * version), a health check of its own (podman's images have no HEALTHCHECK), and the
 * Dockerfile's command and port. The fleet file (issue 18) as docker-compose resolves
 * it: both nodes on the one PostgreSQL of the file, each with its own --node,
 * --advertise and GPU, started once PostgreSQL's pg_isready check passes, and no
 * password on any command line, in the URI or in the environment (a secret only).
 * docker-compose 1.29 predates the Compose Specification's top-level `name` (Compose
 * v2), so it is given the file without that one line, which is checked here instead.
 *   GPULABD=build/gpulabd node tests/deploy/compose.test.js */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { ROOT, done, gpulabdVersion, imageTag, ok, read, yamlDocs } from './lib.js';

const text = read('docker/compose.yaml');
const [compose] = yamlDocs('docker/compose.yaml');
ok(compose.name === 'gpulab' && /^name: gpulab$/m.test(text), 'the project is named gpulab (top-level name)');

/* docker-compose reads a copy in a folder laid out like the repository (the build
 * context is ..), without the name line. */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpulab-compose-'));
fs.mkdirSync(path.join(dir, 'docker'));
fs.copyFileSync(path.join(ROOT, 'docker', 'Dockerfile'), path.join(dir, 'docker', 'Dockerfile'));
const check = (body, file = 'compose.yaml', env = {}) => {
  fs.writeFileSync(path.join(dir, 'docker', file), body);
  const r = spawnSync('docker-compose', ['-f', file, 'config'], {
    cwd: path.join(dir, 'docker'), encoding: 'utf8', env: { PATH: process.env.PATH, HOME: dir, ...env },
  });
  if (r.error) return { status: -1, out: `${r.error.message} (apt-get install docker-compose; scripts/gpulab test installs it)` };
  return { status: r.status, out: `${r.stdout}${r.stderr}`, stdout: r.stdout };
};
const stripped = text.replace(/^name: gpulab\n/m, '');
const r = check(stripped);
ok(r.status === 0, 'docker-compose config accepts docker/compose.yaml', r.out);
const bad = check(stripped.replace('    restart: unless-stopped\n', '    restart: unless-stopped\n    restrat: always\n'));
ok(bad.status !== 0 && /restrat/.test(bad.out), 'docker-compose config refuses an unknown key (restrat)', bad.out);
const fleetText = read('docker/compose.fleet.yaml');
const [fleetFile] = yamlDocs('docker/compose.fleet.yaml');
ok(fleetFile.name === 'gpulab-fleet' && /^name: gpulab-fleet$/m.test(fleetText),
  'the fleet project is named gpulab-fleet (top-level name; its volumes are not the one box\'s)');
const fleetStripped = fleetText.replace(/^name: gpulab-fleet\n/m, '');
const fr = check(fleetStripped, 'compose.fleet.yaml');
ok(fr.status === 0, 'docker-compose config accepts docker/compose.fleet.yaml', fr.out);
/* What docker-compose made of it (anchors merged, ${NODE_A_URL:-...} resolved). */
const fleet = fr.status === 0 ? YAML.parse(fr.stdout) : { services: {} };
const fbad = check(fleetStripped.replace('    image: postgres:', '    helthcheck: {}\n    image: postgres:'),
  'compose.fleet.yaml');
ok(fbad.status !== 0 && /helthcheck/.test(fbad.out), 'docker-compose config refuses an unknown key in it (helthcheck)', fbad.out);
const envd = check(fleetStripped, 'compose.fleet.yaml', { NODE_A_URL: 'http://gpu-box:8080' });
ok(envd.status === 0 && /- http:\/\/gpu-box:8080$/m.test(envd.out) && /- http:\/\/node-b:8080$/m.test(envd.out),
  'NODE_A_URL replaces node-a\'s --advertise; node-b keeps its default', envd.out);
fs.rmSync(dir, { recursive: true, force: true });

const svc = compose.services.gpulabd;
const dockerfile = read('docker/Dockerfile');
const archDefault = (/^ARG CUDA_ARCHS=(\S+)$/m.exec(dockerfile) || [])[1];
ok(archDefault === '90a' && svc.build.args.CUDA_ARCHS === archDefault,
  `builds for CUDA_ARCHS ${svc.build.args.CUDA_ARCHS}, the Dockerfile's default (${archDefault})`);
ok(/default\s+90a/.test(read('docs/deployment.md')), 'the manual (docs/deployment.md) says the default is 90a too');
const version = gpulabdVersion();
ok(imageTag(svc.image) === version, `image ${svc.image}: tagged with gpulabd's version ${version}`);
const hc = svc.healthcheck || {};
ok(Array.isArray(hc.test) && hc.test.join(' ').includes('http://127.0.0.1:8080/health') && hc.start_period,
  'a health check of its own on /health, with a start period');
const cmd = JSON.parse((/^CMD (\[.*\])$/ms.exec(dockerfile.replace(/\\\n\s*/g, '')) || [])[1] || '[]');
const flag = (list, f) => list[list.indexOf(f) + 1];
ok(['--host', '--port', '--db', '--tokens'].every((f) => flag(svc.command, f) === flag(cmd, f)),
  "its command keeps the image CMD's --host, --port, --db and --tokens");
ok(svc.ports.includes(`${flag(cmd, '--port')}:${flag(cmd, '--port')}`) && new RegExp(`^EXPOSE ${flag(cmd, '--port')}$`, 'm').test(dockerfile),
  `publishes the port the image exposes (${flag(cmd, '--port')})`);

/* ---- the fleet (issue 18) ---- */
const fsvc = fleet.services || {};
const pg = fsvc.postgres || {};
const nodes = ['node-a', 'node-b'].map((n) => [n, fsvc[n] || {}]);
ok(/^postgres:\d+(\.\d+)?(-\S+)?$/.test(pg.image || ''), `PostgreSQL is the official image pinned to a major version (${pg.image})`);
ok((pg.volumes || []).some((v) => /^pg-data:\/var\/lib\/postgresql\/data(:rw)?$/.test(v)) && fleet.volumes && 'pg-data' in fleet.volumes,
  'its data directory is the named volume pg-data');
const pgHc = (pg.healthcheck || {}).test || [];
ok(pgHc[0] === 'CMD' && pgHc.includes('pg_isready') && pgHc.includes('gpulab'), `it has a pg_isready health check (${pgHc.join(' ')})`);
ok(!pg.ports, 'PostgreSQL is not published outside the compose network');
const penv = pg.environment || {};
ok(penv.POSTGRES_PASSWORD === undefined && penv.POSTGRES_PASSWORD_FILE === '/run/secrets/pg-password' &&
  (pg.secrets || []).some((s) => s.source === 'pg-password'),
  'PostgreSQL reads its password from the secret pg-password (POSTGRES_PASSWORD_FILE)');
ok(fleet.secrets && /\/docker\/pg-password$/.test((fleet.secrets['pg-password'] || {}).file || ''),
  'the secret pg-password is the file docker/pg-password (documented in the header)');
ok(/docker\/pg-password/.test(fleetText.split('\nname:')[0]), 'the header says what docker/pg-password holds');
const fflag = (list, f) => (list.indexOf(f) >= 0 ? list[list.indexOf(f) + 1] : undefined);
const dbs = new Set();
const nodeNames = new Set();
const urls = new Set();
const gpus = new Set();
const published = new Set();
for (const [n, s] of nodes) {
  const command = (s.command || []).map(String);
  const db = fflag(command, '--db');
  dbs.add(db);
  nodeNames.add(fflag(command, '--node'));
  urls.add(fflag(command, '--advertise'));
  ok(/^postgresql:\/\/gpulab@postgres(:5432)?\/gpulab$/.test(db || ''),
    `${n}: --db ${db}, the file's PostgreSQL (service postgres), user and no password in the URI`);
  ok(fflag(command, '--node') === n, `${n}: --node ${fflag(command, '--node')}`);
  ok(/^https?:\/\/[^/]+:\d+$/.test(fflag(command, '--advertise') || ''), `${n}: --advertise ${fflag(command, '--advertise')} is a URL`);
  ok(fflag(command, '--tokens') === fflag(cmd, '--tokens') && (s.secrets || []).some((x) => x.target === fflag(command, '--tokens')),
    `${n}: --tokens ${fflag(command, '--tokens')}, mounted from the secret`);
  ok(imageTag(s.image || '') === version && s.build && s.build.args.CUDA_ARCHS === archDefault,
    `${n}: image ${s.image} built from the Dockerfile for ${archDefault}`);
  ok(s.depends_on && s.depends_on.postgres && s.depends_on.postgres.condition === 'service_healthy',
    `${n}: starts once postgres is healthy`);
  const nhc = (s.healthcheck || {}).test || [];
  ok(nhc.join(' ').includes('http://127.0.0.1:8080/health') && s.healthcheck.start_period, `${n}: a health check on /health`);
  const devs = (((((s.deploy || {}).resources || {}).reservations || {}).devices) || []);
  ok(devs.length === 1 && devs[0].driver === 'nvidia' && devs[0].capabilities.includes('gpu') &&
    (devs[0].device_ids || []).length === 1, `${n}: reserves one NVIDIA GPU of its own (device_ids ${devs[0] && devs[0].device_ids})`);
  (devs[0] && devs[0].device_ids || []).forEach((g) => gpus.add(g));
  (s.ports || []).forEach((p) => published.add(p.published));
  ok((s.ports || []).every((p) => String(p.target) === fflag(command, '--port')), `${n}: publishes its --port`);
  /* The password: a secret that the entrypoint moves to PGPASSWORD, nowhere literal. */
  const entry = (s.entrypoint || []).join(' ');
  ok(/PGPASSWORD="\$+\(cat \/run\/secrets\/pg-password\)"/.test(entry) && /exec \/usr\/local\/bin\/gpulabd "\$+@"/.test(entry) &&
    (s.secrets || []).some((x) => x.source === 'pg-password'),
    `${n}: the entrypoint sets PGPASSWORD from the secret pg-password and execs gpulabd with the command`);
  const env = s.environment || {};
  ok(!Object.keys(env).some((k) => /PASS/i.test(k)), `${n}: no password in its environment section`);
  const line = [...(s.entrypoint || []), ...command].join(' ');
  ok(!/postgresql:\/\/[^/@\s]*:[^/@\s]*@/.test(line) && !/PGPASSWORD=(?!"\$+\(cat )/.test(line) &&
    !/[?&]password=/i.test(line),
    `${n}: no password on its command line`);
}
ok(dbs.size === 1, `both nodes use the same database (${[...dbs]})`);
ok(nodeNames.size === nodes.length && urls.size === nodes.length, `distinct --node (${[...nodeNames]}) and --advertise (${[...urls]})`);
ok(gpus.size === nodes.length, `each node has a GPU of its own (${[...gpus]})`);
ok(published.size === nodes.length, `each node is published on a port of its own (${[...published]})`);
ok(!/password/i.test(fleetText.replace(/^\s*#.*$/gm, '').replace(/pg-password|POSTGRES_PASSWORD_FILE|PGPASSWORD=\\"\$\$\(cat/g, '')),
  'no password written in the file (outside comments, the secret\'s name and its reading)');

done('compose');

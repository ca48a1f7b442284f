#!/usr/bin/env node
/* docker/compose.yaml through docker-compose config (Debian's docker-compose 1.29:
 * the Compose file schema, every key and type; it needs no Docker engine), and what
 * it must agree on with the Dockerfile and the README: the CUDA architectures it
 * builds for (90a, the H200's with its Hopper-only path), the image tag (gpulabd's
 * version), a health check of its own (podman's images have no HEALTHCHECK), and the
 * Dockerfile's command and port.
 * docker-compose 1.29 predates the Compose Specification's top-level `name` (Compose
 * v2), so it is given the file without that one line, which is checked here instead.
 *   GPULABD=build/gpulabd node tests/deploy/compose.test.js */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, done, gpulabdVersion, imageTag, ok, read, yamlDocs } from './lib.js';

const text = read('docker/compose.yaml');
const [compose] = yamlDocs('docker/compose.yaml');
ok(compose.name === 'gpulab' && /^name: gpulab$/m.test(text), 'the project is named gpulab (top-level name)');

/* docker-compose reads a copy in a folder laid out like the repository (the build
 * context is ..), without the name line. */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpulab-compose-'));
fs.mkdirSync(path.join(dir, 'docker'));
fs.copyFileSync(path.join(ROOT, 'docker', 'Dockerfile'), path.join(dir, 'docker', 'Dockerfile'));
const check = (body) => {
  fs.writeFileSync(path.join(dir, 'docker', 'compose.yaml'), body);
  const r = spawnSync('docker-compose', ['-f', 'compose.yaml', 'config'], {
    cwd: path.join(dir, 'docker'), encoding: 'utf8', env: { PATH: process.env.PATH, HOME: dir },
  });
  if (r.error) return { status: -1, out: `${r.error.message} (apt-get install docker-compose; scripts/gpulab test installs it)` };
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
};
const stripped = text.replace(/^name: gpulab\n/m, '');
const r = check(stripped);
ok(r.status === 0, 'docker-compose config accepts docker/compose.yaml', r.out);
const bad = check(stripped.replace('    restart: unless-stopped\n', '    restart: unless-stopped\n    restrat: always\n'));
ok(bad.status !== 0 && /restrat/.test(bad.out), 'docker-compose config refuses an unknown key (restrat)', bad.out);
fs.rmSync(dir, { recursive: true, force: true });

const svc = compose.services.gpulabd;
const dockerfile = read('docker/Dockerfile');
const archDefault = (/^ARG CUDA_ARCHS=(\S+)$/m.exec(dockerfile) || [])[1];
ok(archDefault === '90a' && svc.build.args.CUDA_ARCHS === archDefault,
  `builds for CUDA_ARCHS ${svc.build.args.CUDA_ARCHS}, the Dockerfile's default (${archDefault})`);
ok(/default 90a/.test(read('README.md')), 'the README says the default is 90a too');
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

done('compose');

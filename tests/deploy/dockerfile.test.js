#!/usr/bin/env node
/* docker/Dockerfile through dockerfile-utils' linter (the Docker language service's:
 * instructions, their flags and arguments, JSON forms, with every optional rule on).
 * No Docker engine can build here, and hadolint is neither in Debian 12 nor on npm,
 * so this is what lints it. Then what it must agree on: every COPY source survives
 * Dockerfile.dockerignore (else the build fails), the HEALTHCHECK is there and the
 * manual (docs/deployment.md) says podman drops it without --format docker, and the build examples carry
 * gpulabd's version as their tag.
 *   GPULABD=build/gpulabd node tests/deploy/dockerfile.test.js */
import { createRequire } from 'node:module';
import { done, gpulabdVersion, ok, read } from './lib.js';

const require = createRequire(import.meta.url);
const { validate, ValidationSeverity } = require('dockerfile-utils');

const text = read('docker/Dockerfile');
const ALL_RULES = Object.fromEntries(['deprecatedMaintainer', 'directiveCasing', 'emptyContinuationLine',
  'instructionCasing', 'instructionCmdMultiple', 'instructionEntrypointMultiple', 'instructionHealthcheckMultiple',
  'instructionJSONInSingleQuotes', 'instructionWorkdirRelative'].map((rule) => [rule, ValidationSeverity.WARNING]));
const show = (ds) => ds.map((d) => `line ${d.range.start.line + 1}: ${d.message}`).join('\n');
const found = validate(text, ALL_RULES);
ok(found.length === 0, 'dockerfile-utils finds nothing in docker/Dockerfile (every rule on)', show(found));
/* The linter must see a broken HEALTHCHECK flag and a relative WORKDIR (else it checks nothing). */
const spoilt = validate(text.replace('HEALTHCHECK --interval=', 'HEALTHCHECK --intervl=')
  .replace('WORKDIR /src', 'WORKDIR src'), ALL_RULES);
ok(spoilt.some((d) => /intervl/.test(d.message)) && spoilt.some((d) => /WORKDIR/i.test(d.message)),
  'it refuses a HEALTHCHECK --intervl= and a relative WORKDIR', show(spoilt));

/* Dockerfile.dockerignore, as Docker reads it: the last pattern that matches a path
 * (or a folder above it) decides; ! re-includes. */
function ignored(patterns, file) {
  const re = (p) => new RegExp(`^${p.replace(/\/+$/, '').split('/').map((part) => part === '**' ? '.*'
    : part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]')).join('/')}(/.*)?$`);
  let out = false;
  for (const line of patterns) {
    const neg = line.startsWith('!');
    if (re(neg ? line.slice(1) : line).test(file)) out = !neg;
  }
  return out;
}
const ignore = read('docker/Dockerfile.dockerignore').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
const copies = [...text.matchAll(/^COPY (?!--from)(.+) (\S+)$/gm)].flatMap((m) => m[1].split(/\s+/));
ok(copies.length >= 5, `COPY sources: ${copies.join(', ')}`);
for (const src of copies) ok(!ignored(ignore, src.replace(/\/$/, '')), `COPY ${src}: in the build context (not ignored)`);
ok(ignored(ignore, 'tests/test_npy.c') && ignored(ignore, 'build/gpulabd'), 'tests/ and build/ stay out of the context');

ok(/^HEALTHCHECK .*\/health/ms.test(text), 'a HEALTHCHECK on /health');
const readme = read('docs/deployment.md');
ok(/podman build[^\n]*\n?[^\n]*--format docker/.test(readme) && /podman build/.test(text),
  'the manual (docs/deployment.md) and the Dockerfile say that podman build keeps HEALTHCHECK only with --format docker');
const version = gpulabdVersion();
const tags = [...`${text}\n${readme}`.matchAll(/-t gpulab(?::(\S+))?/g)].map((m) => m[1] || '(none)');
ok(tags.length > 0 && tags.every((t) => t === version), `the build examples tag gpulab:${version} (${tags.join(', ')})`);

done('dockerfile');

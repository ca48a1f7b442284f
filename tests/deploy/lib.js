/* Helpers of the tests in tests/deploy: the repository's files, strict YAML, and
 * reporting. Each test prints "ok ..." lines and ends with "N passed, N failed". */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const read = (rel) => fs.readFileSync(path.join(ROOT, rel), 'utf8');

let passed = 0;
let failed = 0;

export function ok(cond, what, detail) {
  if (cond) {
    passed++;
    process.stdout.write(`ok   ${what}\n`);
  } else {
    failed++;
    process.stdout.write(`FAIL ${what}${detail ? `\n  ${String(detail).replace(/\n/g, '\n  ')}` : ''}\n`);
  }
  return cond;
}

export function done(name) {
  process.stdout.write(`${name}: ${passed} passed, ${failed} failed\n`);
  process.exit(failed || !passed ? 1 : 0);
}

/* Every document of a YAML file, read as YAML 1.1 like the Go programs that read
 * them do (kubectl's and Prometheus' go-yaml: 0440 is octal, yes is a boolean), with
 * duplicate keys refused; a parse error or warning is a failure (file and line). */
export function yamlDocs(rel) {
  const docs = YAML.parseAllDocuments(read(rel), { version: '1.1', uniqueKeys: true, prettyErrors: true,
    strict: true });
  const problems = docs.flatMap((d) => [...d.errors, ...d.warnings].map((e) => `${rel}: ${e.message}`));
  ok(problems.length === 0, `${rel} parses as YAML 1.1 (${docs.length} document(s), no duplicate keys)`,
    problems.join('\n'));
  return docs.map((d) => d.toJS()).filter((d) => d !== null);
}

/* The version the built gpulabd reports (GPULABD names it): the release the image tags must carry. */
export function gpulabdVersion() {
  const bin = process.env.GPULABD;
  if (!bin) throw new Error('GPULABD is not set (the path of the built gpulabd; ctest sets it)');
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  const m = /^gpulabd (\S+)$/m.exec(r.stdout || '');
  if (!m) throw new Error(`${bin} --version answered ${JSON.stringify(r.stdout)} ${r.stderr}`);
  return m[1];
}

/* The tag of an image reference ("registry:5000/a/b:1.2" -> "1.2"), or null. */
export function imageTag(image) {
  const last = image.split('/').pop();
  const at = last.indexOf('@');
  const name = at >= 0 ? last.slice(0, at) : last;
  const colon = name.indexOf(':');
  return colon >= 0 ? name.slice(colon + 1) : null;
}

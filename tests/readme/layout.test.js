#!/usr/bin/env node
'use strict';
/* The manual against the tree (ctest docs_layout, label lint):
 * - docs/layout.md: every path it names in backticks exists (a file name such as
 *   `store.c` under a heading that names a folder, `server/store/`, is read in that
 *   folder, else from the root), and every source folder is named there in backticks
 *   (`kernels/gemm/`): the top-level folders, the folders under them, and those one
 *   deeper under kernels/ and server/;
 * - every page of the manual (README.md and docs/*.md): each relative link reaches a
 *   file, and its #anchor a heading of that page.
 *   node tests/readme/layout.test.js [SOURCE_DIR]
 * Exits 0, or 1 naming each failure's file and line. */
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const R = require('./readme.js');

const root = path.resolve(process.argv[2] || path.join(__dirname, '..', '..'));
const failures = [];
const fail = (where, msg) => failures.push(`FAIL ${where}: ${msg}`);

/* The tree's files: git's list where the source is a checkout (tracked and untracked,
 * not ignored), else a walk that leaves out what .gitignore names: build folders,
 * node_modules, bench/out, Python's build output, dot folders. */
function treeFiles() {
  const git = spawnSync('git', ['-C', root, 'ls-files', '-co', '--exclude-standard'], { encoding: 'utf8' });
  if (git.status === 0 && git.stdout.trim()) return git.stdout.split('\n').filter(Boolean);
  const out = [];
  (function walk(rel) {
    for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      if (e.name.startsWith('.') || /^(node_modules|build.*|__pycache__|.*\.egg-info|gpulab\.db.*)$/.test(e.name) ||
          (rel === 'bench' && e.name === 'out')) continue;
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(p); else out.push(p);
    }
  })('');
  return out;
}

/* The folders the layout chapter must name. */
function sourceFolders(files) {
  const dirs = new Set();
  for (const f of files) {
    const parts = f.split('/').slice(0, -1);
    if (!parts.length || parts[0].startsWith('.') || parts.includes('node_modules')) continue;
    const deep = parts[0] === 'kernels' || parts[0] === 'server' ? 3 : 2;
    for (let d = 1; d <= Math.min(deep, parts.length); d++) dirs.add(parts.slice(0, d).join('/'));
  }
  return [...dirs].sort();
}

const EXT = /\.(c|h|cu|cuh|def|js|py|sh|md|json|yaml|yml|cmake|lua|toml|txt|dict|svg|html|css|service|dockerignore)$/;

/* Backticked spans of a page outside its fenced blocks, with their lines and the
 * folder of the nearest heading that names one. */
function spans(text) {
  const out = [];
  let fenced = false;
  let folder = '';
  text.split('\n').forEach((line, i) => {
    if (/^\s*```/.test(line)) { fenced = !fenced; return; }
    if (fenced) return;
    if (/^#{1,6}\s/.test(line)) {
      const m = /`([\w.\/-]+\/)`/.exec(line);
      folder = m ? m[1] : '';
    }
    for (const m of line.matchAll(/`([^`]+)`/g)) out.push({ text: m[1], line: i + 1, folder });
  });
  return out;
}

function isPath(t) {
  if (/[\s<>*{}$?=:,]/.test(t) || t.startsWith('/') || t.startsWith('-') || /^\.\w+$/.test(t)) return false;
  return t.includes('/') || EXT.test(t);
}

function checkLayout(files) {
  const file = 'docs/layout.md';
  const text = fs.readFileSync(path.join(root, file), 'utf8');
  const exists = (p) => fs.existsSync(path.join(root, p.replace(/\/$/, '')));
  let named = 0;
  const tokens = new Set();
  for (const s of spans(text)) {
    tokens.add(s.text.replace(/\/$/, ''));
    if (!isPath(s.text)) continue;
    named++;
    const candidates = s.text.includes('/') && !s.folder ? [s.text] : [s.folder + s.text, s.text];
    if (!candidates.some(exists))
      fail(`${file}:${s.line}`, `\`${s.text}\` is not in the tree (looked for ${candidates.join(', ')}): ` +
        'update the chapter to the tree');
  }
  const folders = sourceFolders(files);
  for (const d of folders) {
    const ok = tokens.has(d) || (!d.includes('/') && [...tokens].some((t) => t.startsWith(`${d}/`)));
    if (!ok) fail(file, `the folder \`${d}/\` is not described (name it in backticks, with what it holds)`);
  }
  return { named, folders: folders.length };
}

/* GitHub's anchor of a heading: lower case, punctuation but - and _ dropped, spaces
 * to dashes; repeats get -1, -2, ... */
function anchors(text) {
  const seen = new Map();
  const out = new Set();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (/^\s*```/.test(line)) { fenced = !fenced; continue; }
    const m = !fenced && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = m[1].toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(base) || 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

function checkLinks(pages) {
  let links = 0;
  for (const page of pages) {
    let fenced = false;
    page.text.split('\n').forEach((line, i) => {
      if (/^\s*```/.test(line)) { fenced = !fenced; return; }
      if (fenced) return;
      for (const m of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1];
        if (/^[a-z]+:/.test(target)) continue;
        links++;
        const [p, anchor] = target.split('#');
        const rel = p ? path.posix.normalize(path.posix.join(path.posix.dirname(page.file), p)) : page.file;
        const where = `${page.file}:${i + 1}`;
        if (!fs.existsSync(path.join(root, rel))) { fail(where, `the link ${target} reaches no file (${rel})`); continue; }
        if (anchor !== undefined && rel.endsWith('.md') &&
            !anchors(fs.readFileSync(path.join(root, rel), 'utf8')).has(anchor))
          fail(where, `the link ${target}: ${rel} has no heading #${anchor}`);
      }
    });
  }
  return links;
}

try {
  const files = treeFiles();
  const layout = checkLayout(files);
  const links = checkLinks(R.manual(root));
  for (const f of failures) process.stdout.write(`${f}\n`);
  process.stdout.write(`docs_layout: ${layout.named} paths and ${layout.folders} folders of docs/layout.md, ` +
    `${links} links of the manual checked, ${failures.length} failed\n`);
} catch (e) {
  failures.push(e);
  process.stdout.write(`FAIL: ${e.stack || e}\n`);
}
process.exit(failures.length ? 1 : 0);

'use strict';
/* The manual as data for readme.test.js: README.md and its chapters (docs/*.md, in
 * the order of the README's contents), their fenced blocks, the commands of their
 * shell blocks (a command goes on over a trailing backslash or an open quote; the
 * comment lines under it are what it shows), and a lenient reader for the answers they
 * show, in which … (or ...) stands for anything. */
const fs = require('fs');
const path = require('path');

/* The manual under root: [{file ('README.md', 'docs/api.md'), text}], the README first,
 * then the chapters in the order its "## Contents" links them. Throws when a linked
 * chapter is missing, or a chapter in docs/ is not linked from the contents (its
 * examples would not run). */
function manual(root) {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const contents = /^## Contents\n([\s\S]*?)(?=^## )/m.exec(readme);
  const linked = [];
  for (const m of (contents ? contents[1] : readme).matchAll(/\]\((docs\/[\w-]+\.md)(?:#[\w-]*)?\)/g)) if (!linked.includes(m[1])) linked.push(m[1]);
  const dir = path.join(root, 'docs');
  const present = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`) : [];
  const missing = linked.filter((f) => !present.includes(f));
  if (missing.length) throw new Error(`README.md links ${missing.join(', ')}, which docs/ lacks`);
  const unlinked = present.filter((f) => !linked.includes(f));
  if (unlinked.length) throw new Error(`${unlinked.join(', ')}: not linked from README.md's contents, so its examples would not run`);
  return [{ file: 'README.md', text: readme },
    ...linked.map((f) => ({ file: f, text: fs.readFileSync(path.join(root, f), 'utf8') }))];
}

/* Every fenced block: {lang, file (the name after the language, "```cuda k.cu": the
 * file the commands after it read; else null), text, line (1-based, of its first
 * content line)}. */
function blocks(markdown) {
  const out = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\w*)(?:[ \t]+([\w.-]+))?\s*$/.exec(lines[i]);
    if (!open) continue;
    const indent = open[1].length;
    const body = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j]); j++) body.push(lines[j].slice(indent));
    out.push({ lang: open[2], file: open[3] || null, text: body.join('\n'), line: i + 2, endLine: j + 1 });
    i = j;
  }
  return out;
}

/* Whether a shell line leaves a quote open, given the state before it. */
function quoteState(line, state) {
  let q = state;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (q === "'") { if (c === "'") q = null; }
    else if (q === '"') { if (c === '\\') i++; else if (c === '"') q = null; }
    else if (c === '\\') i++;
    else if (c === "'" || c === '"') q = c;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]))) break; /* a comment */
  }
  return q;
}

/* The commands of a shell block: {text (as the shell gets it), shows (the comment
 * lines under it, without '# '), line}. */
function commands(block) {
  const out = [];
  const lines = block.text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (!line.trim()) continue;
    if (/^\s*#/.test(line)) {
      if (out.length) out[out.length - 1].shows.push(line.replace(/^\s*#\s?/, ''));
      continue;
    }
    const text = [line];
    let q = quoteState(line, null);
    while ((q || /\\$/.test(text[text.length - 1])) && i + 1 < lines.length) {
      text.push(lines[++i]);
      q = quoteState(lines[i], q);
    }
    out.push({ text: text.join('\n'), shows: [], line: block.line + i - text.length + 1 });
  }
  return out;
}

/* The command without its trailing comments and with blanks folded: what checks name. */
function normalize(text) {
  return text.split('\n').map((l) => {
    let q = null;
    for (let i = 0; i < l.length; i++) {
      const before = q;
      q = quoteState(l[i], q);
      if (!before && !q && l[i] === '#' && (i === 0 || /\s/.test(l[i - 1]))) return l.slice(0, i);
    }
    return l;
  }).join(' ').replace(/\\\s/g, ' ').replace(/\s+/g, ' ').trim();
}

/* ---- answers as the README shows them ---- */

const ANY = Symbol('…');

/* Parses JSON in which … or ... may stand for a value, a member or the rest of an
 * array; objects keep only the members shown. Throws on anything else. */
function parseShown(text) {
  let i = 0;
  const ws = () => { while (i < text.length && /\s/.test(text[i])) i++; };
  const ellipsis = () => {
    ws();
    if (text.startsWith('…', i)) { i += 1; return true; }
    if (text.startsWith('...', i)) { i += 3; return true; }
    return false;
  };
  const fail = (what) => { throw new Error(`${what} at ${i}: ${text.slice(Math.max(0, i - 30), i + 30)}`); };
  function value() {
    ws();
    if (ellipsis()) return ANY;
    const c = text[i];
    if (c === '{') {
      i++;
      const o = {};
      for (;;) {
        ws();
        if (text[i] === '}') { i++; return o; }
        if (!ellipsis()) {
          const k = value();
          if (typeof k !== 'string') fail('a key');
          ws();
          if (text[i++] !== ':') fail('a colon');
          o[k] = value();
        }
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === '}') { i++; return o; }
        fail(', or }');
      }
    }
    if (c === '[') {
      i++;
      const a = [];
      for (;;) {
        ws();
        if (text[i] === ']') { i++; return a; }
        a.push(value());
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === ']') { i++; return a; }
        fail(', or ]');
      }
    }
    if (c === '"') {
      let j = i + 1;
      for (; j < text.length && text[j] !== '"'; j++) if (text[j] === '\\') j++;
      const s = JSON.parse(text.slice(i, j + 1));
      i = j + 1;
      return s;
    }
    const m = /^(-?\d+(\.\d+)?([eE][-+]?\d+)?|true|false|null)/.exec(text.slice(i));
    if (!m) fail('a value');
    i += m[0].length;
    return JSON.parse(m[0]);
  }
  const v = value();
  ws();
  if (i !== text.length) fail('the end');
  return v;
}

module.exports = { manual, blocks, commands, normalize, parseShown, ANY, read: (p) => fs.readFileSync(p, 'utf8') };

#!/usr/bin/env node
'use strict';
/* The /v1 document only grows: everything a client of the previous release's document
 * may rely on is still in the current one.
 *   node grows.js PREVIOUS.json CURRENT.json
 * Checked: every path, its methods, their parameters (name and place), request body
 * media types, responses (status and media type); every entry of components (schemas,
 * parameters, responses, securitySchemes, x-problem-types); and within every schema
 * (a component's or one inline in an operation) each property, at any depth (through
 * properties, items, additionalProperties, allOf/anyOf/oneOf and prefixItems), and
 * each enum value. Then the check itself: a copy of CURRENT with one such thing taken
 * out must be refused, for each kind. Exits 0 when both hold, else 1 (with what is
 * missing). */
const fs = require('fs');

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/* The property paths ("result.runs[].name") and enum values ("state=done") a schema
 * promises, $refs not followed (the schema they name is compared on its own). */
function schemaFacts(schema, at, out) {
  if (!schema || typeof schema !== 'object') return out;
  if (Array.isArray(schema.enum)) for (const v of schema.enum) out.add(`${at || '(value)'} = ${JSON.stringify(v)}`);
  if (schema.const !== undefined) out.add(`${at || '(value)'} = ${JSON.stringify(schema.const)}`);
  for (const [name, sub] of Object.entries(schema.properties || {})) {
    const p = at ? `${at}.${name}` : name;
    out.add(p);
    schemaFacts(sub, p, out);
  }
  if (schema.items) schemaFacts(schema.items, `${at}[]`, out);
  (schema.prefixItems || []).forEach((s, i) => schemaFacts(s, `${at}[${i}]`, out));
  if (schema.additionalProperties && typeof schema.additionalProperties === 'object')
    schemaFacts(schema.additionalProperties, `${at}{}`, out);
  for (const k of ['allOf', 'anyOf', 'oneOf']) for (const s of schema[k] || []) schemaFacts(s, at, out);
  return out;
}

/* Everything of doc a client may rely on, as a set of one-line facts. */
function facts(doc) {
  const out = new Set();
  const schemaAt = (where, schema) => { for (const f of schemaFacts(schema, '', new Set())) out.add(`${where}: ${f}`); };
  for (const [path, item] of Object.entries(doc.paths || {})) {
    out.add(`path ${path}`);
    for (const m of METHODS) {
      const op = item[m];
      if (!op) continue;
      const where = `${m.toUpperCase()} ${path}`;
      out.add(where);
      for (const p of [...(item.parameters || []), ...(op.parameters || [])])
        out.add(p.$ref ? `${where} parameter ${p.$ref}` : `${where} parameter ${p.in} ${p.name}`);
      for (const [type, media] of Object.entries((op.requestBody && op.requestBody.content) || {})) {
        out.add(`${where} request ${type}`);
        schemaAt(`${where} request ${type}`, media.schema);
      }
      for (const [status, resp] of Object.entries(op.responses || {})) {
        out.add(`${where} response ${status}`);
        for (const [type, media] of Object.entries(resp.content || {})) {
          out.add(`${where} response ${status} ${type}`);
          schemaAt(`${where} response ${status} ${type}`, media.schema);
        }
      }
    }
  }
  for (const [kind, entries] of Object.entries(doc.components || {}))
    for (const [name, value] of Object.entries(entries || {})) {
      out.add(`components/${kind}/${name}`);
      if (kind === 'schemas') schemaAt(`schema ${name}`, value);
    }
  return out;
}

/* What previous promises that current lacks. */
function missing(previous, current) {
  const now = facts(current);
  return [...facts(previous)].filter((f) => !now.has(f));
}

/* The check itself: one thing of each kind taken out of a copy of doc. Each case
 * returns false when doc has nothing of its kind to take. */
function selfCheck(doc) {
  const firstOf = (o, pred) => Object.keys(o || {}).find(pred || (() => true));
  const withProps = (s) => s && s.properties && Object.keys(s.properties).length > 0;
  const cases = {
    'a path': (d) => { const p = firstOf(d.paths); if (!p) return false; delete d.paths[p]; return true; },
    'a method': (d) => {
      const p = firstOf(d.paths, (k) => METHODS.filter((m) => d.paths[k][m]).length > 1);
      if (!p) return false;
      delete d.paths[p][METHODS.find((m) => d.paths[p][m])];
      return true;
    },
    'a response': (d) => {
      for (const item of Object.values(d.paths)) for (const m of METHODS) {
        const r = item[m] && item[m].responses;
        if (r && Object.keys(r).length > 1) { delete r[Object.keys(r).pop()]; return true; }
      }
      return false;
    },
    'a parameter': (d) => {
      for (const item of Object.values(d.paths)) for (const m of METHODS)
        if (item[m] && (item[m].parameters || []).length) { item[m].parameters.pop(); return true; }
      return false;
    },
    'a schema': (d) => { const s = firstOf(d.components.schemas); if (!s) return false; delete d.components.schemas[s]; return true; },
    'a schema property': (d) => {
      const s = firstOf(d.components.schemas, (k) => withProps(d.components.schemas[k]));
      if (!s) return false;
      const props = d.components.schemas[s].properties;
      delete props[Object.keys(props).pop()];
      return true;
    },
    'a nested property': (d) => {
      for (const s of Object.values(d.components.schemas))
        for (const sub of Object.values((s && s.properties) || {}))
          if (withProps(sub)) { delete sub.properties[Object.keys(sub.properties)[0]]; return true; }
          else if (sub && withProps(sub.items)) { delete sub.items.properties[Object.keys(sub.items.properties)[0]]; return true; }
      return false;
    },
    'an enum value': (d) => {
      const s = firstOf(d.components.schemas, (k) => Array.isArray(d.components.schemas[k].enum) && d.components.schemas[k].enum.length > 1);
      if (!s) return false;
      d.components.schemas[s].enum.pop();
      return true;
    },
  };
  const failures = [];
  for (const [what, take] of Object.entries(cases)) {
    const copy = JSON.parse(JSON.stringify(doc));
    if (!take(copy)) { failures.push(`self-check: the document has no ${what} to take out`); continue; }
    const gone = missing(doc, copy);
    if (gone.length === 0) failures.push(`self-check: taking out ${what} went unnoticed`);
    else process.stdout.write(`ok: taking out ${what} is refused (${gone[0]}${gone.length > 1 ? `, +${gone.length - 1}` : ''})\n`);
  }
  return failures;
}

function main() {
  const [previousPath, currentPath] = process.argv.slice(2);
  if (!previousPath || !currentPath) {
    process.stderr.write('usage: node grows.js PREVIOUS.json CURRENT.json\n');
    process.exit(2);
  }
  const previous = JSON.parse(fs.readFileSync(previousPath, 'utf8'));
  const current = JSON.parse(fs.readFileSync(currentPath, 'utf8'));
  const gone = missing(previous, current);
  for (const f of gone) process.stdout.write(`missing from ${currentPath}: ${f}\n`);
  const failures = selfCheck(current);
  for (const f of failures) process.stdout.write(`${f}\n`);
  const n = facts(previous).size;
  process.stdout.write(`${gone.length ? 'FAIL' : 'ok'}: ${n - gone.length} of the previous document's ${n} facts kept\n`);
  process.exit(gone.length || failures.length ? 1 : 0);
}

main();

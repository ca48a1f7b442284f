#!/usr/bin/env node
'use strict';
/* test_openapi's schema checks, by ajv (JSON Schema 2020-12, the dialect of OpenAPI
 * 3.1): every body test_openapi recorded (a real answer, a request body, an event's
 * data, or a hand-made drift case) against the schema it names.
 *   node validate.js DOC.json RECORDS.json
 * DOC.json is the document as gpulabd served it; RECORDS.json an array of
 * {what, schema, value, valid, mention?}: schema is an object of the document (its
 * $refs point into it), valid whether value must match, mention a word that the
 * refusal must name. Exits 0 when every record came out as recorded, else 1. */
const fs = require('fs');
const Ajv2020 = require('ajv/dist/2020');
const addFormats = require('ajv-formats');

const [docPath, recordsPath] = process.argv.slice(2);
if (!docPath || !recordsPath) {
  process.stderr.write('usage: node validate.js DOC.json RECORDS.json\n');
  process.exit(2);
}
const doc = JSON.parse(fs.readFileSync(docPath, 'utf8'));
const records = JSON.parse(fs.readFileSync(recordsPath, 'utf8'));

/* Strict: a keyword or format ajv does not know is an error, so the document cannot
 * promise what nothing checks. OpenAPI's own formats: int64 (a JSON integer) and
 * binary (bodies that are not JSON, never validated here). */
const ajv = new Ajv2020({ strict: true, strictTypes: false, allErrors: true });
addFormats(ajv);
ajv.addFormat('int64', { type: 'number', validate: (x) => Number.isInteger(x) });
ajv.addFormat('binary', true);
/* The document's schemas (components/schemas) as one schema resource, under $defs,
 * so that their "#/components/schemas/X" references resolve. */
const BASE = 'gpulab:openapi.json';
const PREFIX = '#/components/schemas/';
function rebase(schema) {
  if (Array.isArray(schema)) return schema.map(rebase);
  if (!schema || typeof schema !== 'object') return schema;
  const out = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === '$ref' && typeof v === 'string') {
      if (!v.startsWith(PREFIX)) throw new Error(`$ref ${v}: only ${PREFIX}* is expected in a schema`);
      out[k] = `${BASE}#/$defs/${v.slice(PREFIX.length)}`;
    } else {
      out[k] = rebase(v);
    }
  }
  return out;
}
ajv.addSchema({ $id: BASE, $defs: rebase(doc.components.schemas) });

const compiled = new Map();
function validator(schema) {
  const key = JSON.stringify(schema);
  if (!compiled.has(key)) compiled.set(key, ajv.compile(rebase(schema)));
  return compiled.get(key);
}

let failed = 0;
for (const r of records) {
  let validate;
  try {
    validate = validator(r.schema);
  } catch (e) {
    failed++;
    process.stdout.write(`FAIL ${r.what}: the schema does not compile: ${e.message}\n`);
    continue;
  }
  const ok = validate(r.value);
  const errors = validate.errors ? ajv.errorsText(validate.errors, { separator: '\n    ' }) : '';
  const named = JSON.stringify(validate.errors || []);
  if (ok !== r.valid || (!ok && r.mention && !named.includes(r.mention))) {
    failed++;
    const body = JSON.stringify(r.value);
    process.stdout.write(`FAIL ${r.what}: the document ${ok ? 'accepts' : 'refuses'} it, expected it to ` +
      `${r.valid ? 'accept' : 'refuse'} it${r.mention ? ` naming ${r.mention}` : ''}` +
      `${errors ? `:\n    ${errors}` : ''}\n  body: ${body.length > 3000 ? `${body.slice(0, 3000)}…` : body}\n`);
  }
}
process.stdout.write(`validate.js: ${records.length} bodies against ${docPath} with ajv (JSON Schema 2020-12): ` +
  `${records.length - failed} as recorded, ${failed} not\n`);
process.exit(failed ? 1 : 0);

#!/usr/bin/env node
// Validates an OpenAPI 3.1 document (coordinator/api/openapi.json):
//   node tests/openapi/validate.mjs coordinator/api/openapi.json
// 1. against the official OpenAPI 3.1 JSON Schema (@seriousme/openapi-schema-validator), which
//    also checks that every local $ref resolves;
// 2. every Schema Object compiles under JSON Schema 2020-12 with Ajv in strict mode (typos in
//    keywords, unknown formats, contradictory types are errors), with OpenAPI's extra keywords;
// 3. every example, examples[] entry and default validates against the schema it belongs to;
// 4. operationIds are unique, every operation has a summary and responses, and path
//    templates and path parameters agree.
// Exit status: 0 valid, 1 invalid (errors on stderr), 2 usage, 77 tooling missing (run npm ci).
import { readFile } from "node:fs/promises";

const SKIP = 77;
let Validator, Ajv2020, addFormats;
try {
  ({ Validator } = await import("@seriousme/openapi-schema-validator"));
  Ajv2020 = (await import("ajv/dist/2020.js")).default;
  addFormats = (await import("ajv-formats")).default;
} catch (e) {
  console.log(`skipped: run npm ci (in the repository root) to install the OpenAPI validator (${e.code ?? e.message})`);
  process.exit(SKIP);
}

const file = process.argv[2];
if (!file || process.argv.length > 3) {
  console.error("usage: node tests/openapi/validate.mjs <openapi.json>");
  process.exit(2);
}

const errors = [];
const fail = (where, message) => errors.push(`${where}: ${message}`);

let doc;
try {
  doc = JSON.parse(await readFile(file, "utf8"));
} catch (e) {
  console.error(`${file}: cannot read or parse: ${e.message}`);
  process.exit(1);
}

// ---- 1. the official schema -------------------------------------------------------------------
const validator = new Validator();
const official = await validator.validate(structuredClone(doc));
if (!official.valid) {
  const list = Array.isArray(official.errors) ? official.errors : [official.errors];
  for (const e of list) {
    fail(`OpenAPI schema ${e.instancePath ?? ""}`, typeof e === "string" ? e : `${e.message} ${JSON.stringify(e.params ?? {})}`);
  }
}
if (!String(doc.openapi ?? "").startsWith("3.1.")) fail("openapi", `expected 3.1.x, got ${doc.openapi}`);

// ---- helpers ----------------------------------------------------------------------------------
const escape = (s) => s.replaceAll("~", "~0").replaceAll("/", "~1");
const unescape = (s) => s.replaceAll("~1", "/").replaceAll("~0", "~");
function resolvePointer(root, ref) {
  if (!ref.startsWith("#/")) return undefined;
  let node = root;
  for (const part of ref.slice(2).split("/").map(unescape)) {
    if (node === null || typeof node !== "object" || !(part in node)) return undefined;
    node = node[part];
  }
  return node;
}
function deref(node) {
  const seen = new Set();
  while (node && typeof node === "object" && typeof node.$ref === "string" && !seen.has(node.$ref)) {
    seen.add(node.$ref);
    node = resolvePointer(doc, node.$ref);
  }
  return node;
}
// Every $ref in the document, wherever it is.
(function walk(node, where) {
  if (Array.isArray(node)) return node.forEach((v, i) => walk(v, `${where}/${i}`));
  if (node === null || typeof node !== "object") return;
  for (const [k, v] of Object.entries(node)) {
    if (k === "$ref" && typeof v === "string") {
      if (resolvePointer(doc, v) === undefined) fail(where, `$ref ${v} does not resolve`);
    } else {
      walk(v, `${where}/${escape(k)}`);
    }
  }
})(doc, "#");

// ---- 2. schemas under strict Ajv --------------------------------------------------------------
const ajv = new Ajv2020({ strict: true, allErrors: true, allowUnionTypes: true });
addFormats(ajv);
const inRange = (lo, hi) => (n) => Number.isInteger(n) && n >= lo && n <= hi;
ajv.addFormat("int32", { type: "number", validate: inRange(-(2 ** 31), 2 ** 31 - 1) });
ajv.addFormat("int64", { type: "number", validate: (n) => Number.isInteger(n) });
ajv.addFormat("double", { type: "number", validate: (n) => Number.isFinite(n) });
ajv.addFormat("float", { type: "number", validate: (n) => Number.isFinite(n) });
for (const keyword of ["example", "discriminator", "xml", "externalDocs"]) ajv.addKeyword({ keyword });

// Schemas are compiled from one resource holding components.schemas as $defs, with the
// OpenAPI refs rewritten to point there.
const ROOT = "https://benchfleet.invalid/openapi.json";
const rewrite = (node) => {
  if (Array.isArray(node)) return node.map(rewrite);
  if (node === null || typeof node !== "object") return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    out[k] = k === "$ref" && typeof v === "string" && v.startsWith("#/components/schemas/")
      ? `${ROOT}#/$defs/${v.slice("#/components/schemas/".length)}`
      : rewrite(v);
  }
  return out;
};
const componentSchemas = doc.components?.schemas ?? {};
try {
  ajv.addSchema({ $id: ROOT, $defs: rewrite(componentSchemas) });
} catch (e) {
  fail("#/components/schemas", e.message);
}
const compiled = new Map();
function compile(schema, where) {
  const key = JSON.stringify(schema);
  if (!compiled.has(key)) {
    try {
      compiled.set(key, ajv.compile(rewrite(schema)));
    } catch (e) {
      fail(where, `schema does not compile: ${e.message}`);
      compiled.set(key, null);
    }
  }
  return compiled.get(key);
}
function check(schema, value, where) {
  const validate = compile(schema, where);
  if (validate && !validate(value)) {
    fail(where, `example/default does not match its schema: ${ajv.errorsText(validate.errors, { dataVar: "value" })}`);
  }
}

// Compile every component schema, then check examples and defaults inside it.
for (const name of Object.keys(componentSchemas)) {
  compile({ $ref: `#/components/schemas/${name}` }, `#/components/schemas/${name}`);
  (function walk(node, pointer) {
    if (Array.isArray(node)) return node.forEach((v, i) => walk(v, `${pointer}/${i}`));
    if (node === null || typeof node !== "object") return;
    const at = { $ref: `${ROOT}#/$defs/${pointer}` };
    const where = `#/components/schemas/${pointer}`;
    if (Array.isArray(node.examples) && (node.type || node.$ref || node.anyOf || node.allOf || node.enum)) {
      node.examples.forEach((ex, i) => check(at, ex, `${where}/examples/${i}`));
    }
    if ("default" in node && (node.type || node.$ref || node.anyOf || node.allOf || node.enum)) {
      check(at, node.default, `${where}/default`);
    }
    for (const [k, v] of Object.entries(node)) {
      if (k !== "examples" && k !== "default" && k !== "const" && k !== "enum") walk(v, `${pointer}/${escape(k)}`);
    }
  })(componentSchemas[name], escape(name));
}

// Schemas, examples and defaults in parameters, request bodies and responses.
function checkMedia(media, where) {
  for (const [type, m] of Object.entries(media ?? {})) {
    if (!m.schema) continue;
    const w = `${where}/content/${escape(type)}`;
    compile(m.schema, `${w}/schema`);
    if ("example" in m) check(m.schema, m.example, `${w}/example`);
    for (const [name, ex] of Object.entries(m.examples ?? {})) {
      const e = deref(ex);
      if (e && "value" in e) check(m.schema, e.value, `${w}/examples/${name}`);
    }
  }
}
function checkParameter(p, where) {
  p = deref(p);
  if (!p?.schema) return;
  compile(p.schema, `${where}/schema`);
  if ("example" in p) check(p.schema, p.example, `${where}/example`);
  const s = deref(p.schema);
  if (s && "default" in s) check(p.schema, s.default, `${where}/schema/default`);
}
for (const [name, p] of Object.entries(doc.components?.parameters ?? {})) checkParameter(p, `#/components/parameters/${name}`);
for (const [name, r] of Object.entries(doc.components?.responses ?? {})) {
  checkMedia(r.content, `#/components/responses/${name}`);
  for (const [h, header] of Object.entries(r.headers ?? {})) checkParameter(header, `#/components/responses/${name}/headers/${h}`);
}

// ---- 4. operations ----------------------------------------------------------------------------
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
const operationIds = new Map();
for (const [path, item] of Object.entries(doc.paths ?? {})) {
  const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
  for (const method of METHODS) {
    const o = item[method];
    if (!o) continue;
    const where = `${method.toUpperCase()} ${path}`;
    if (!o.operationId) fail(where, "no operationId");
    else if (operationIds.has(o.operationId)) fail(where, `operationId ${o.operationId} also used by ${operationIds.get(o.operationId)}`);
    else operationIds.set(o.operationId, where);
    if (!o.summary) fail(where, "no summary");
    if (!o.description) fail(where, "no description");
    if (!o.responses || Object.keys(o.responses).length === 0) fail(where, "no responses");
    const params = [...(item.parameters ?? []), ...(o.parameters ?? [])].map(deref);
    const pathParams = params.filter((p) => p?.in === "path").map((p) => p.name);
    for (const name of templated) if (!pathParams.includes(name)) fail(where, `path parameter {${name}} is not declared`);
    for (const name of pathParams) if (!templated.includes(name)) fail(where, `path parameter ${name} is not in the path`);
    const seen = new Set();
    for (const p of params) {
      const key = `${p?.in}:${p?.name}`;
      if (seen.has(key)) fail(where, `parameter ${key} declared twice`);
      seen.add(key);
    }
    params.forEach((p, i) => checkParameter(p, `${where} parameters[${i}]`));
    if (o.requestBody) checkMedia(deref(o.requestBody).content, `${where} requestBody`);
    for (const [status, r] of Object.entries(o.responses ?? {})) {
      const resp = deref(r);
      if (!resp?.description) fail(`${where} ${status}`, "response has no description");
      checkMedia(resp?.content, `${where} responses/${status}`);
    }
  }
}

if (errors.length) {
  console.error(`${file}: INVALID (${errors.length} problem${errors.length === 1 ? "" : "s"})`);
  for (const e of errors) console.error(`  ${e}`);
  process.exit(1);
}
console.log(`${file}: valid OpenAPI ${doc.openapi} (${operationIds.size} operations, ` +
  `${Object.keys(componentSchemas).length} schemas; @seriousme/openapi-schema-validator + strict Ajv 2020-12)`);

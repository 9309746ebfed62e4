#!/usr/bin/env node
// The API's OpenAPI document, built in-process from the routes (no running API, no backing
// services), with an admin token configured as in production:
//
//   node scripts/openapi.mjs [--out FILE]   the document as JSON (stdout by default)
//   node scripts/openapi.mjs --lint         lint it with Redocly CLI (redocly.yaml): fails on
//                                           any error, on a warning not in KEPT_WARNINGS, and
//                                           on a kept warning that is no longer reported
//
// HOST, PORT and PUBLIC_URL, when set, give the document's server. Redocly runs offline:
// telemetry and the update check are switched off, and the document is a local file.
// The kept warnings and why: docs/api.md, "The OpenAPI contract".
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const REDOCLY = path.join(REPO_ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');

/** Warnings the document keeps on purpose: [rule, JSON pointer]. Explained in docs/api.md. */
const KEPT_WARNINGS = [
  ['operation-4xx-response', '#/paths/~1api~1v1~1health/get/responses'],
  ['operation-4xx-response', '#/paths/~1api~1v1~1monitoring~1status/get/responses'],
  ['operation-4xx-response', '#/paths/~1status/get/responses'],
  ['operation-2xx-response', '#/paths/~1api~1v1~1exchange-a~1replay~1ws~1market/get/responses'],
  ['operation-2xx-response', '#/paths/~1api~1v1~1exchange-b~1replay~1trade-api~1ws~1v2/get/responses'],
];

async function buildDocument() {
  const { register } = await import('tsx/esm/api');
  // The repository's tsconfig.json wherever this runs from: its paths give @booktape/* sources.
  register({ tsconfig: path.join(REPO_ROOT, 'tsconfig.json') });
  const { openApiDocument } = await import('../apps/api/src/openapi-document.ts');
  const { documentConfig } = await import('../apps/api/src/testing.ts');
  const env = process.env;
  const port = env.PORT ? Number(env.PORT) : undefined;
  if (port !== undefined && !(Number.isInteger(port) && port >= 1 && port <= 65535)) {
    console.error(`[openapi] PORT=${env.PORT}: expected a port number, 1 to 65535`);
    process.exit(2);
  }
  return openApiDocument(documentConfig({ host: env.HOST || undefined, port, publicUrl: env.PUBLIC_URL || undefined }));
}

function lint(file) {
  const r = spawnSync(process.execPath, [REDOCLY, 'lint', file, '--config', path.join(REPO_ROOT, 'redocly.yaml'), '--format=json'], {
    cwd: REPO_ROOT,
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  let report;
  try {
    report = JSON.parse(r.stdout);
  } catch {
    console.error(`[openapi] redocly gave no report (exit ${r.status}):\n${r.stderr}`);
    return false;
  }
  const { errors, warnings } = report.totals;
  const key = (rule, pointer) => `${rule} ${pointer}`;
  const kept = new Set(KEPT_WARNINGS.map(([rule, pointer]) => key(rule, pointer)));
  const seen = new Set();
  const bad = [];
  for (const p of report.problems) {
    const pointer = p.location?.[0]?.pointer ?? '';
    const k = key(p.ruleId, pointer);
    const isKept = p.severity === 'warn' && kept.has(k);
    if (isKept) seen.add(k);
    else bad.push(p);
    console.log(`[openapi] ${isKept ? 'kept ' : ''}${p.severity} ${p.ruleId} at ${pointer}: ${p.message}`);
  }
  const stale = [...kept].filter((k) => !seen.has(k));
  for (const k of stale) console.log(`[openapi] kept warning no longer reported: ${k} (remove it from KEPT_WARNINGS and docs/api.md)`);
  console.log(`[openapi] redocly ${report.version}: ${errors} errors, ${warnings} warnings (${seen.size} kept)`);
  return errors === 0 && bad.length === 0 && stale.length === 0;
}

const args = process.argv.slice(2);
const outAt = args.indexOf('--out');
const doc = await buildDocument();
const text = `${JSON.stringify(doc, null, 2)}\n`;
if (args.includes('--lint')) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'booktape-openapi-'));
  const file = path.join(dir, 'openapi.json');
  fs.writeFileSync(file, text);
  let ok;
  try {
    ok = lint(file);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  process.exit(ok ? 0 : 1);
} else if (outAt >= 0 && args[outAt + 1]) {
  fs.writeFileSync(args[outAt + 1], text);
} else {
  process.stdout.write(text);
}
// The app is closed; nothing should hold the loop, but a lingering client must not keep a script alive.
process.exit(0);

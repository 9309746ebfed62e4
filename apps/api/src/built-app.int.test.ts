/**
 * The API as the production image runs it: `npm run build` (scripts/build.mjs) compiles the
 * apps and libraries to dist/, and `node apps/api/dist/main.js` starts with no TypeScript
 * loader (no tsx, no --import, NODE_OPTIONS unset), against the project's Redis and an
 * embedded ClickHouse in a temporary directory, isolated by prefix. Node 20 cannot load a
 * .ts file by itself, so a single import resolved to a source instead of dist/ would stop
 * the process before it listens.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueId, waitFor } from '@booktape/testkit';

const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const MAIN = path.join(REPO_ROOT, 'apps/api/dist/main.js');
let child: ChildProcess | undefined;
let output = '';
let dataDir: string;
let baseUrl: string;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

beforeAll(async () => {
  // Without the SDK: libs/sdk/pack.int.test.ts may be rebuilding its dist/ at the same time.
  await promisify(execFile)(process.execPath, [path.join(REPO_ROOT, 'scripts/build.mjs'), '--skip-sdk'], { cwd: REPO_ROOT, maxBuffer: 16 << 20 });
  dataDir = mkdtempSync(path.join(tmpdir(), 'booktape-built-api-'));
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}`;
  const prefix = uniqueId('built');
  const { NODE_OPTIONS: _, ...env } = process.env;
  child = spawn(process.execPath, [MAIN], {
    cwd: dataDir,
    env: {
      ...env,
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      PORT: String(port),
      BOOKTAPE_DATA_DIR: dataDir,
      KAFKA_BROKERS: process.env.KAFKA_BROKERS ?? '127.0.0.1:19092',
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:16379',
      REDIS_KEY_PREFIX: `${prefix}:`,
      ROLLUP_QUEUE_PREFIX: prefix,
      KAFKA_TOPIC_PREFIX: `${prefix}.`,
      ADMIN_TOKEN: 'built-app-admin-token-0123456789',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  await waitFor(
    'the built API to answer /api/v1/health',
    async () => {
      if (child!.exitCode !== null) throw new Error(`the built API exited ${child!.exitCode}:\n${output}`);
      const res = await fetch(`${baseUrl}/api/v1/health`);
      if (!res.ok) throw new Error(`health ${res.status}`);
      return true;
    },
    90_000,
    250,
  );
}, 240_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((resolve) => child!.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('the built API', () => {
  it('answers /api/v1/health 200 from plain Node, with Redis and ClickHouse up', async () => {
    const res = await fetch(`${baseUrl}/api/v1/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'ok', checks: { redis: true, clickhouse: true } });
    // A keyed route refuses a missing key as it should: the routes, auth and stores load too.
    expect((await fetch(`${baseUrl}/api/v1/exchange-a/market/list`)).status).toBe(401);
  });

  it('runs as `node apps/api/dist/main.js` and nothing else: no loader flag, no NODE_OPTIONS', () => {
    const cmdline = readFileSync(`/proc/${child!.pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    expect(cmdline).toEqual([process.execPath, MAIN]);
    const environ = readFileSync(`/proc/${child!.pid}/environ`, 'utf8').split('\0');
    expect(environ.some((e) => e.startsWith('NODE_OPTIONS='))).toBe(false);
  });

  it('is built beside each package, where the package exports point', () => {
    for (const pkg of ['apps/api', 'apps/ingestor', 'apps/rollup-worker', 'libs/storage', 'libs/config', 'libs/domain']) {
      const manifest = JSON.parse(readFileSync(path.join(REPO_ROOT, pkg, 'package.json'), 'utf8')) as { exports?: Record<string, { default: string }> };
      for (const target of Object.values(manifest.exports ?? {})) expect(existsSync(path.join(REPO_ROOT, pkg, target.default)), `${pkg} ${target.default}`).toBe(true);
    }
    expect(existsSync(path.join(REPO_ROOT, 'apps/ingestor/dist/main.js'))).toBe(true);
    expect(existsSync(path.join(REPO_ROOT, 'apps/rollup-worker/dist/main.js'))).toBe(true);
  });

  it('imports, from every app entry point, only Node built-ins, workspace packages and production dependencies', () => {
    // The image prunes the devDependencies; a runtime import of one would fail only there.
    const root = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    const allowed = new Set([...Object.keys(root.dependencies), ...builtinModules]);
    // What Node resolves a workspace import to: the package's exports, default condition.
    const workspaces = new Map<string, { dir: string; exports: Record<string, { default: string }> }>();
    for (const group of ['apps', 'libs'])
      for (const name of readdirSync(path.join(REPO_ROOT, group))) {
        const dir = path.join(REPO_ROOT, group, name);
        const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name: string; exports?: Record<string, { default: string }> };
        workspaces.set(manifest.name, { dir, exports: manifest.exports ?? {} });
      }
    const builtEntry = (spec: string) => {
      const [, name, sub] = /^(@booktape\/[^/]+)(.*)$/.exec(spec)!;
      const ws = workspaces.get(name!)!;
      return path.join(ws.dir, ws.exports[`.${sub}`]!.default);
    };
    const seen = new Set<string>();
    const bare = new Map<string, string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const code = readFileSync(file, 'utf8');
      // tsc's output: import/export statements at line starts, dynamic imports of literals.
      for (const m of code.matchAll(/^(?:import|export)\s[^;'"]*?\bfrom\s*['"]([^'"]+)['"]|^import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm)) {
        const spec = (m[1] ?? m[2] ?? m[3])!;
        if (spec.startsWith('.')) visit(path.resolve(path.dirname(file), spec));
        else if (spec.startsWith('@booktape/')) visit(builtEntry(spec));
        else bare.set(spec.startsWith('node:') ? spec.slice(5) : spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!, file);
      }
    };
    for (const app of ['api', 'ingestor', 'rollup-worker']) visit(path.join(REPO_ROOT, 'apps', app, 'dist/main.js'));
    expect(seen.size).toBeGreaterThan(50);
    expect([...seen].filter((f) => !f.includes(`${path.sep}dist${path.sep}`))).toEqual([]);
    expect([...bare].filter(([name]) => !allowed.has(name))).toEqual([]);
  });
});

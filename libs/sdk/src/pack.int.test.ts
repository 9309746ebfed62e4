/**
 * The package as an outside user gets it: `npm pack` of libs/sdk (its prepack builds dist/),
 * the tarball installed with npm into an empty project outside the repository, with no
 * registry (`--offline`: the SDK has no runtime dependencies, so the tarball is all there
 * is to install). A plain-Node script there (no tsx, no TypeScript loader, no
 * NODE_OPTIONS) calls a real API started here, and the repository's tsc type-checks a
 * TypeScript consumer against the installed declarations, as a browser project and as a
 * Node one.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aMessage, conditionId, startTestApi, type TestApi } from '@booktape/api/testing';

const run = promisify(execFile);
const SDK = fileURLToPath(new URL('..', import.meta.url));
const ROOT = path.resolve(SDK, '../..');
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');
const DAY = Date.UTC(2026, 2, 1);
const MARKET = conditionId(0x71);
const ASSET = '7171';

let t: TestApi;
let work: string;
let project: string;
let tarball: string;
let env: NodeJS.ProcessEnv;

/** npm, as a user runs it: no workspace, no registry, no audit, no install scripts. */
const npm = (args: string[], cwd: string) =>
  run('npm', [...args, '--offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'], { cwd, maxBuffer: 16 << 20 });

beforeAll(async () => {
  work = realpathSync(mkdtempSync(path.join(tmpdir(), 'booktape-sdk-pack-')));
  expect(path.relative(ROOT, work).startsWith('..')).toBe(true);
  const packed = JSON.parse((await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: SDK, maxBuffer: 16 << 20 })).stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
  tarball = path.join(work, packed[0]!.filename);
  project = path.join(work, 'consumer');
  mkdirSync(project);
  writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  await npm(['install', tarball], project);

  t = await startTestApi();
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  const { NODE_OPTIONS: _, ...rest } = process.env;
  env = { ...rest, BOOKTAPE_API_URL: baseUrl, BOOKTAPE_API_KEY: await t.newKey('pack') };
  const a = [aMessage({ market: MARKET, asset: ASSET, ts: DAY + 3_600_000, hash: 'p-book', kind: 'book' })];
  for (let i = 1; i <= 12; i++) a.push(aMessage({ market: MARKET, asset: ASSET, ts: DAY + 3_600_000 + i * 60_000, hash: `p-pc-${i}` }));
  await t.filler.insert('exchange-a', a);
}, 240_000);
afterAll(async () => {
  if (work) rmSync(work, { recursive: true, force: true });
  await t?.close();
});

describe('the packed SDK', () => {
  it('holds the built JavaScript, its declarations, README and LICENSE, and no TypeScript sources', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball]);
    const files = stdout.trim().split('\n').map((f) => f.replace(/^package\//, ''));
    expect(files).toEqual(expect.arrayContaining(['package.json', 'README.md', 'LICENSE', 'dist/index.js', 'dist/index.d.ts', 'dist/client.js', 'dist/generated/schema.d.ts']));
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    const manifest = JSON.parse(readFileSync(path.join(project, 'node_modules/@booktape/client/package.json'), 'utf8'));
    expect(manifest.private).toBeUndefined();
    expect(manifest.dependencies ?? {}).toEqual({});
    // The package's licence text is the repository's.
    expect(readFileSync(path.join(project, 'node_modules/@booktape/client/LICENSE'), 'utf8')).toBe(readFileSync(path.join(ROOT, 'LICENSE'), 'utf8'));
  });

  it('runs in plain Node against the real API: pages walked, records as the API stores them, typed errors', async () => {
    writeFileSync(
      path.join(project, 'example.mjs'),
      `import { BooktapeClient, BooktapeError, collect } from '@booktape/client';
const client = new BooktapeClient({ baseUrl: process.env.BOOKTAPE_API_URL, apiKey: process.env.BOOKTAPE_API_KEY });
const [market, from, to] = process.argv.slice(2);
const records = await collect(client.exchangeA.raw({ conditionId: market, from: Number(from), to: Number(to), pageSize: 5 }));
let refused;
try {
  await new BooktapeClient({ baseUrl: process.env.BOOKTAPE_API_URL, apiKey: 'bt_live_not-a-key' }).exchangeA.raw({ conditionId: market, from: Number(from), to: Number(to) }).next();
} catch (e) {
  refused = { isBooktapeError: e instanceof BooktapeError, status: e.status, code: e.code };
}
console.log(JSON.stringify({ resolved: import.meta.resolve('@booktape/client'), execArgv: process.execArgv, nodeOptions: process.env.NODE_OPTIONS ?? null, records, refused }));
`,
    );
    const { stdout } = await run(process.execPath, ['example.mjs', MARKET, String(DAY), String(DAY + 86_399_999)], { cwd: project, env });
    const got = JSON.parse(stdout);
    // The installed copy, not the repository's sources or a loader.
    expect(fileURLToPath(got.resolved)).toBe(path.join(project, 'node_modules/@booktape/client/dist/index.js'));
    expect(got.execArgv).toEqual([]);
    expect(got.nodeOptions).toBeNull();
    expect(got.records).toEqual(JSON.parse(JSON.stringify(t.filler.expected('exchange-a', MARKET))));
    expect(got.records).toHaveLength(13);
    expect(got.refused).toEqual({ isBooktapeError: true, status: 401, code: expect.any(String) });
  });

  it('type-checks a TypeScript consumer against the installed declarations, for browsers and for Node', async () => {
    writeFileSync(
      path.join(project, 'consumer.ts'),
      `import { BooktapeClient, BooktapeError, collect, type RawRecord } from '@booktape/client';
const client = new BooktapeClient({ baseUrl: 'http://127.0.0.1:8080', apiKey: 'k' });
export async function firstPrices(market: string): Promise<string[]> {
  const records = await collect(client.exchangeA.raw({ conditionId: market, from: Date.UTC(2026, 2, 1), to: new Date() }));
  return records.map((r) => r.asset_id);
}
export function describeError(e: unknown): string {
  return e instanceof BooktapeError ? \`\${e.status} \${e.code}\` : String(e);
}
export type First = RawRecord<'exchange-a'>;
// A wrong argument is a type error for users too, not only inside the repository.
// @ts-expect-error no such method
client.exchangeA.rawEverything({ from: 0, to: 1 });
`,
    );
    const base = { strict: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', noEmit: true, skipLibCheck: false };
    const configs = {
      'tsconfig.browser.json': { compilerOptions: { ...base, lib: ['ES2022', 'DOM', 'DOM.Iterable'], types: [] }, files: ['consumer.ts'] },
      // Node's own types, from the repository's node_modules (the empty project has none).
      'tsconfig.node.json': { compilerOptions: { ...base, lib: ['ES2022'], types: ['node'], typeRoots: [path.join(ROOT, 'node_modules/@types')] }, files: ['consumer.ts'] },
    };
    for (const [name, config] of Object.entries(configs)) {
      writeFileSync(path.join(project, name), JSON.stringify(config));
      const r = await run(process.execPath, [TSC, '-p', name, '--listFilesOnly'], { cwd: project });
      // The declarations come from the installed package, not from the repository.
      expect(r.stdout).toContain(path.join(project, 'node_modules/@booktape/client/dist/index.d.ts'));
      expect(r.stdout).not.toContain(path.join(SDK, 'src'));
      await expect(run(process.execPath, [TSC, '-p', name], { cwd: project }), name).resolves.toBeDefined();
    }
    // And the checker does check: a misuse is reported.
    writeFileSync(path.join(project, 'consumer.ts'), `import { BooktapeClient } from '@booktape/client';\nnew BooktapeClient({ baseUrl: 1 });\n`);
    await expect(run(process.execPath, [TSC, '-p', 'tsconfig.browser.json'], { cwd: project })).rejects.toMatchObject({ stdout: expect.stringContaining('consumer.ts') });
  });
});

/**
 * Outside this repository there is no TypeScript loader: `npm run build -w @booktape/client`
 * emits plain ES modules and declarations. The build runs here into a temporary directory
 * and the result is imported by plain Node, without tsx.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const SDK = fileURLToPath(new URL('..', import.meta.url));
const ROOT = path.resolve(SDK, '../..');
const out = mkdtempSync(path.join(tmpdir(), 'booktape-sdk-build-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('the built package', () => {
  it('is plain JavaScript that Node imports and runs as is', () => {
    execFileSync(process.execPath, [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', path.join(SDK, 'tsconfig.build.json'), '--outDir', out], { stdio: 'pipe' });
    const script = `
      const m = await import(${JSON.stringify(path.join(out, 'index.js'))});
      const client = new m.BooktapeClient({ baseUrl: 'http://api.test', apiKey: 'k', fetch: async (url) => new Response(JSON.stringify({ url }), { status: 200 }) });
      const r = await client.exchangeB.dateRange({ ticker: 'KX-1' });
      console.log(JSON.stringify({ url: r.url, retry: m.parseRetryAfter('2') }));`;
    const printed = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: out, encoding: 'utf8' });
    expect(JSON.parse(printed)).toEqual({ url: 'http://api.test/api/v1/exchange-b/market/date-range?ticker=KX-1', retry: 2000 });
  }, 60_000);
});

/**
 * The scripts in libs/sdk/examples keep working: each runs as a user runs it (tsx, with
 * BOOKTAPE_API_URL and BOOKTAPE_API_KEY) against a real API holding a little data, and its
 * output is checked against what the API answers.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aMessage, bMessage, conditionId, startTestApi, type TestApi } from '@booktape/api/testing';
import { BooktapeClient, collect } from './index.ts';

const EXAMPLES = fileURLToPath(new URL('../examples/', import.meta.url));
const ROOT = path.resolve(EXAMPLES, '../../..');
const TSX = path.join(ROOT, 'node_modules/.bin/tsx');
const DAY = Date.UTC(2026, 2, 1);
const MARKET = conditionId(0x61);
const ASSET = '5151';
const TICKER = 'KXEXAMPLE-26MAR01';

let t: TestApi;
let env: NodeJS.ProcessEnv;
let client: BooktapeClient;
let out: string;
const ran = new Set<string>();

async function run(script: string, args: string[]): Promise<string> {
  ran.add(script);
  const { stdout } = await promisify(execFile)(TSX, [path.join(EXAMPLES, script), ...args], { cwd: ROOT, env, maxBuffer: 64 << 20 });
  return stdout;
}

beforeAll(async () => {
  t = await startTestApi();
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  const apiKey = await t.newKey('examples');
  env = { ...process.env, BOOKTAPE_API_URL: baseUrl, BOOKTAPE_API_KEY: apiKey };
  client = new BooktapeClient({ baseUrl, apiKey });
  out = mkdtempSync(path.join(tmpdir(), 'booktape-examples-'));
  const a = [aMessage({ market: MARKET, asset: ASSET, ts: DAY + 3_600_000, hash: 'x-book', kind: 'book' })];
  for (let i = 1; i <= 25; i++) a.push(aMessage({ market: MARKET, asset: ASSET, ts: DAY + 3_600_000 + i * 30_000, hash: `x-pc-${i}` }));
  await t.filler.insert('exchange-a', a);
  const b = [bMessage({ ticker: TICKER, ms: DAY + 600_000, seq: 1, kind: 'snapshot' })];
  for (let i = 2; i <= 10; i++) b.push(bMessage({ ticker: TICKER, ms: DAY + 600_000 + i * 1000, seq: i }));
  await t.filler.insert('exchange-b', b);
});
afterAll(async () => {
  rmSync(out, { recursive: true, force: true });
  await t?.close();
});

describe('examples', () => {
  it('summaries-csv.ts writes the summary buckets as the API own CSV, to stdout or a file', async () => {
    const args = ['--market', MARKET, '--asset', ASSET, '--date', '2026-03-01', '--resolution', '300'];
    const csv = await run('summaries-csv.ts', args);
    expect(csv).toBe(await client.exchangeA.summaryCsv({ conditionId: MARKET, assetId: ASSET, date: '2026-03-01', resolution: 300 }));
    expect(csv.split('\n')[0]).toMatch(/^timestamp,quote_count,is_forward_filled,best_bid,/);
    const file = path.join(out, 'summary.csv');
    await run('summaries-csv.ts', [...args, '--out', file]);
    expect(readFileSync(file, 'utf8')).toBe(csv);
  });

  it('raw-csv.ts writes every raw record of a window across pages, header once', async () => {
    const csv = await run('raw-csv.ts', ['--market', MARKET, '--from', '2026-03-01T00:00:00Z', '--to', '2026-03-01T23:59:59.999Z', '--page-size', '6']);
    const whole = (await collect(client.exchangeA.rawCsv({ conditionId: MARKET, from: DAY, to: DAY + 86_399_999 }))).join('');
    expect(csv).toBe(whole);
    expect(csv.match(/^timestamp,/gm)).toHaveLength(1);
    expect(csv.split('\n').filter((l) => l.includes(',price_change,'))).toHaveLength(25);
    const b = await run('raw-csv.ts', ['--venue', 'b', '--market', TICKER, '--from', '2026-03-01T00:00:00Z', '--to', '2026-03-01T01:00:00Z', '--out', path.join(out, 'b.csv')]);
    expect(b).toBe('');
    expect(readFileSync(path.join(out, 'b.csv'), 'utf8').split('\n').filter((l) => l.includes(`,${TICKER},`))).toHaveLength(3 + 9);
  });

  it('book-at.ts prints the book and its top', async () => {
    const shown = JSON.parse(await run('book-at.ts', ['--ticker', TICKER, '--at', '2026-03-01T00:10:00Z', '--depth', '3']));
    expect(shown).toMatchObject({ at: DAY + 600_000, is_known: true, top: { bestBid: 0.42, bestAsk: 0.45, spread: 0.03 } });
    expect(shown.levels[0]).toEqual({ side: 'yes', level: 0, price: 0.42, size: 15 });
    const a = JSON.parse(await run('book-at.ts', ['--asset', ASSET, '--market', MARKET, '--at', String(DAY + 3_600_000)]));
    expect(a.top).toMatchObject({ bestBid: 0.48, bestAsk: 0.52, mid: 0.5 });
  });

  it('coverage.ts prints the days in brief and the gaps', async () => {
    const shown = JSON.parse(await run('coverage.ts', ['--venue', 'a', '--market', MARKET, '--start', '2026-03-01', '--end', '2026-03-02']));
    expect(shown).toMatchObject({ missing: ['2026-03-02'], trustworthy: false, gaps: [] });
    expect([...shown.complete, ...shown.partial]).toEqual(['2026-03-01']);
  });

  it('an example run without its arguments prints its usage and exits 2, without a stack trace', async () => {
    for (const script of readdirSync(EXAMPLES).filter((f) => f.endsWith('.ts'))) {
      const r = await promisify(execFile)(TSX, [path.join(EXAMPLES, script)], { cwd: ROOT, env }).then(
        () => ({ code: 0, stderr: '' }),
        (e: { code: number; stderr: string }) => e,
      );
      expect(r.code, script).toBe(2);
      expect(r.stderr, script).toMatch(new RegExp(`^usage: ${script.replace('.', '\\.')} `));
      expect(r.stderr, script).not.toMatch(/\n\s+at /);
    }
  });

  it('every example in the folder is run above', () => {
    expect(readdirSync(EXAMPLES).filter((f) => f.endsWith('.ts')).sort()).toEqual([...ran].sort());
  });
});

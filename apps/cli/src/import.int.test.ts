import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RollupQueue } from '@booktape/messaging';
import { deleteRedisPrefix, requireEnv, tempClickHouse, uniqueId, type TestClickHouse } from '@booktape/testkit';
import { ExportRepository, importPmxtFile } from '@booktape/storage';
import { writePmxtFile, type PmxtRow } from '../../../libs/storage/src/pmxt.test-support.ts';
import { runCli } from './cli.test-support.ts';

/**
 * `booktape import` end to end in a child process, on a store of its own: files imported in
 * order, a second run stores nothing more, a bad file is named with its row and refused whole
 * while the others are imported, and the imported asset-days are marked for the rollup.
 */

let t: TestClickHouse;
const dir = mkdtempSync(path.join(tmpdir(), 'booktape-import-cli-'));
const queuePrefix = uniqueId('bt-import');
let env: Record<string, string>;

beforeAll(async () => {
  t = await tempClickHouse();
  env = { BOOKTAPE_DATA_DIR: path.join(dir, 'data'), REDIS_URL: requireEnv('REDIS_URL'), ROLLUP_QUEUE_PREFIX: queuePrefix };
});
afterAll(async () => {
  const redis = new Redis(requireEnv('REDIS_URL'));
  await deleteRedisPrefix(redis, queuePrefix).finally(() => redis.quit());
  await t?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

const M = `0x${'cd'.repeat(32)}`;
const H = Date.UTC(2026, 3, 2, 9);
const ROWS: PmxtRow[] = [
  { timestamp: H + 10, timestamp_received: H + 30, market: M, event_type: 'book', asset_id: '71', bids: '[["0.4","10"]]', asks: '[["0.6","5"]]' },
  { timestamp: H + 20, timestamp_received: H + 40, market: M, event_type: 'price_change', asset_id: '71', price: '0.41', size: '3', side: 'BUY', best_bid: '0.41', best_ask: '0.6' },
  { timestamp: H + 15, timestamp_received: H + 35, market: M, event_type: 'book', asset_id: '72', bids: '[["0.4","1"]]', asks: '[]' },
];

describe('booktape import', () => {
  it('imports files in order, stores nothing twice, refuses a bad file whole and marks the days for the rollup', async () => {
    const good = path.join(dir, 'polymarket_orderbook_2026-04-02T09.parquet');
    const empty = path.join(dir, 'polymarket_orderbook_2026-04-02T10.parquet');
    const bad = path.join(dir, 'bad.parquet');
    await writePmxtFile(t.ch, good, ROWS);
    await writePmxtFile(t.ch, empty, []);
    await writePmxtFile(t.ch, bad, [ROWS[1]!, { ...ROWS[1]!, timestamp: H + 21, side: 'UP' }]);

    const first = await runCli(['import', good, empty], env);
    expect(first.stderr).toContain('summaries: 2 asset-day(s) marked for the rollup workers');
    expect(first.status).toBe(0);
    expect(first.stdout.split('\n')).toEqual([
      expect.stringMatching(/T09\.parquet: 3 rows, 3 records stored, 0 already stored, in [\d.]+ s$/),
      expect.stringMatching(/T10\.parquet: no rows \(an empty hour\) in [\d.]+ s$/),
      '2 of 2 file(s) imported, 3 records stored',
      '',
    ]);
    const queue = new RollupQueue({ redisUrl: requireEnv('REDIS_URL'), prefix: queuePrefix });
    try {
      const parts = ['71', '72'].map((asset) => ({ venue: 'exchange-a' as const, market: M, asset, date: '2026-04-02' }));
      expect(await queue.unsettled(parts)).toBe(2);
    } finally {
      await queue.close();
    }

    const again = await runCli(['import', good], env);
    expect(again.status).toBe(0);
    expect(again.stdout).toMatch(/T09\.parquet: 3 rows, 0 records stored, 3 already stored/);

    const mixed = await runCli(['import', bad, good], env);
    expect(mixed.status).toBe(1);
    expect(mixed.stderr).toContain(`${bad}, row 1: side is neither BUY nor SELL: UP (1 bad row(s) in all; nothing imported)`);
    expect(mixed.stderr).toContain(`not imported (nothing of them stored): ${bad}`);
    expect(mixed.stdout).toContain('1 of 2 file(s) imported, 0 records stored');

    const missing = await runCli(['import', path.join(dir, 'nope.parquet')], env);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('nope.parquet: no such file or directory');
  }, 180_000);

  it('imports a URL: a download cut mid-file is resumed, errors name the URL', async () => {
    const M2 = `0x${'ef'.repeat(32)}`;
    const file = path.join(dir, 'served.parquet');
    await writePmxtFile(t.ch, file, ROWS.map((r) => ({ ...r, market: M2 })));
    const body = readFileSync(file);
    const ranges: Array<string | undefined> = [];
    let cut = true;
    const server = createServer((req, res) => {
      ranges.push(req.headers.range);
      if (!req.url!.startsWith('/hours/polymarket_orderbook_2026-04-02T09.parquet')) return void res.writeHead(404).end();
      const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
      const start = m ? Number(m[1]) : 0;
      res.writeHead(m ? 206 : 200, { 'content-length': String(body.length - start), etag: '"e"', ...(m ? { 'content-range': `bytes ${start}-${body.length - 1}/${body.length}` } : {}) });
      if (cut) {
        cut = false;
        res.write(body.subarray(0, Math.floor(body.length / 2)), () => setTimeout(() => res.destroy(), 20));
      } else res.end(body.subarray(start));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const url = `${base}/hours/polymarket_orderbook_2026-04-02T09.parquet`;
      const r = await runCli(['import', '--no-rollup', url], env);
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      expect(r.stdout).toContain(`${url}: 3 rows, 3 records stored, 0 already stored`);
      expect(ranges).toEqual([undefined, `bytes=${Math.floor(body.length / 2)}-`]);

      const missing = await runCli(['import', '--no-rollup', `${base}/hours/nope.parquet`], env);
      expect(missing.status).toBe(1);
      expect(missing.stderr).toContain(`${base}/hours/nope.parquet: HTTP 404`);
      const noName = await runCli(['import', '--no-rollup', `${base}/hours/`], env);
      expect(noName.status).toBe(1);
      expect(noName.stderr).toContain('the URL names no file');
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  }, 180_000);

  it('tells the format from the file: a raw export without its records is refused, a capture file is stored as replay stores it', async () => {
    const csv = path.join(dir, 'export.csv.gz');
    writeFileSync(csv, gzipSync('timestamp,asset_id,event_type,side,price,size,hash,received_at\n'));
    const MC = `0x${'ce'.repeat(32)}`;
    const T = Date.UTC(2026, 2, 1, 12);
    const frame = [{ event_type: 'book', asset_id: '81', market: MC, bids: [{ price: '0.48', size: '30' }], asks: [{ price: '0.53', size: '60' }], timestamp: String(T), hash: '0xb1' }];
    const change = { event_type: 'price_change', market: MC, timestamp: String(T + 5), price_changes: [{ asset_id: '81', price: '0.5', size: '200', side: 'BUY', hash: 'h1', best_bid: '0.5', best_ask: '0.53' }] };
    const capture = path.join(dir, 'cap-20260301T120000.000Z-0.ndjson');
    writeFileSync(capture, [{ frame, at: T + 7 }, { frame: change, at: T + 9 }].map((l) => JSON.stringify({ venue: 'exchange-a', received_at: new Date(l.at).toISOString(), frame: l.frame })).join('\n') + '\n');
    const r = await runCli(['import', '--no-rollup', csv, capture], env);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${csv}: a raw export of exchange-a without the stored records`);
    expect(r.stderr).toContain('include=record');
    expect(r.stdout).toMatch(/cap-20260301T120000\.000Z-0\.ndjson: 2 rows, 2 records stored, 0 already stored, in [\d.]+ s/);
    expect(r.stdout).toContain('1 of 2 file(s) imported, 2 records stored');

    const again = await runCli(['import', '--no-rollup', capture], env);
    expect(again.status).toBe(0);
    expect(again.stdout).toMatch(/2 rows, 0 records stored, 2 already stored/);

    const wrongVenue = await runCli(['import', '--no-rollup', '--venue', 'b', capture], env);
    expect(wrongVenue.status).toBe(1);
    expect(wrongVenue.stderr).toContain(`${capture}: a capture file with exchange-a records, not only exchange-b (--venue); nothing imported`);

    const broken = path.join(dir, 'broken.ndjson');
    writeFileSync(broken, `${readFileSync(capture, 'utf8')}{"venue":"exchange-a","received_at":"2026-03-01T12:00:01.000Z","frame":[{"event_ty\n`);
    const cut = await runCli(['import', '--no-rollup', '--format', 'capture', broken], env);
    expect(cut.status).toBe(1);
    expect(cut.stderr).toMatch(new RegExp(`${broken.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: line 3: .*nothing imported`));

    const forced = await runCli(['import', '--no-rollup', '--format', 'pmxt-v2', csv], env);
    expect(forced.status).toBe(1);
    expect(forced.stderr).toContain(`${csv}: not a readable Parquet file`);
  }, 180_000);

  it("tells a booktape export from its content and imports it: another store's export of records this one has adds nothing", async () => {
    // Another store (this process's) holds the hour the first test imported, and exports it with its records.
    const hour = path.join(dir, 'polymarket_orderbook_2026-04-02T09.parquet');
    await writePmxtFile(t.ch, hour, ROWS);
    await importPmxtFile(t.ch, hour);
    const exported = path.join(dir, 'market_2026-04-02_2026-04-02_raw.parquet');
    await pipeline(await new ExportRepository(t.ch).rawParquet('exchange-a', M, '2026-04-02', '2026-04-02', { source: true, record: true }), createWriteStream(exported));

    const r = await runCli(['import', '--no-rollup', exported], env);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/_raw\.parquet: \d+ rows, 0 records stored, 3 already stored, in [\d.]+ s/);

    const wrong = await runCli(['import', '--no-rollup', '--venue', 'kalshi', exported], env);
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toContain(`${exported}: an export of exchange-a, not of exchange-b (--venue); nothing imported`);
  }, 180_000);
});

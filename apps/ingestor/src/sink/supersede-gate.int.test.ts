import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExchangeAMessage } from '@booktape/domain';
import { silentLogger } from '@booktape/config';
import { RawEventsRepository, importPmxtFile } from '@booktape/storage';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { writePmxtFile } from '../../../../libs/storage/src/pmxt.test-support.ts';
import { QUIET_MS, SupersedeGate } from './supersede-gate.ts';

/**
 * The sink's check for imported copies is asked once per partition per QUIET_MS when the
 * partition holds no imports (the sink stores the same busy partitions batch after batch),
 * and does its work when it does hold them: counted on a real engine.
 */

const M = `0x${'6f'.repeat(32)}`;
const H = Date.UTC(2026, 3, 3, 12);
let t: TestClickHouse;
beforeAll(async () => {
  t = await tempClickHouse();
});
afterAll(async () => t?.cleanup());

function captured(i: number, ts: number, asset: string): ExchangeAMessage {
  return {
    venue: 'exchange-a',
    received_at: new Date(ts + 5).toISOString(),
    worker_id: 2,
    ingest_seq: (BigInt(ts + 5) * 2n ** 23n + BigInt(i)).toString(),
    dedup_id: `gate-${asset}-${i}`,
    event: { market: M, asset_id: asset, timestamp: String(ts), hash: `0xgate${i}`, event_type: 'price_change', changes: [{ price: '0.41', side: 'BUY', size: '3', best_bid: '0.41', best_ask: '0.6' }] },
  };
}

describe('the sink supersede gate', () => {
  it('asks about a partition without imports once per quiet period, and removes the imported copy where there is one', async () => {
    const repo = new RawEventsRepository(t.ch);
    // Asset 11: captured only. Asset 22: imported, then captured.
    const dir = mkdtempSync(path.join(tmpdir(), 'booktape-gate-'));
    const file = path.join(dir, 'polymarket_orderbook_2026-04-03T12.parquet');
    await writePmxtFile(t.ch, file, [{ timestamp: H + 200, timestamp_received: H + 500, market: M, event_type: 'price_change', asset_id: '22', price: '0.41', side: 'BUY', size: '3', best_bid: '0.41', best_ask: '0.6' }]);
    expect(await importPmxtFile(t.ch, file)).toMatchObject({ inserted: 1 });
    rmSync(dir, { recursive: true, force: true });
    await repo.insert('exchange-a', [
      { message: captured(0, H + 100, '11'), position: { partition: 0, offset: '1' } },
      { message: captured(1, H + 200, '22'), position: { partition: 0, offset: '2' } },
    ], 'gate-test');

    let reads = 0;
    const query = t.ch.client.query.bind(t.ch.client);
    t.ch.client.query = ((p: Parameters<typeof query>[0]) => {
      reads++;
      return query(p);
    }) as typeof t.ch.client.query;
    let now = 1_000_000;
    const gate = new SupersedeGate(t.ch, silentLogger(), () => now);
    const part = (asset: string) => ({ venue: 'exchange-a', market: M, asset, date: '2026-04-03' });

    // First batch: both asked; 22's imported copy goes.
    expect(await gate.run([part('11'), part('22')])).toBe(1);
    const afterFirst = reads;
    // Later batches within the quiet period: 11 is not asked again; 22 (which had imports) is.
    reads = 0;
    expect(await gate.run([part('11')])).toBe(0);
    expect(reads).toBe(0);
    expect(await gate.run([part('11'), { ...part('11'), venue: 'exchange-b' }])).toBe(0);
    expect(reads).toBe(0);
    // After it, asked again.
    now += QUIET_MS + 1;
    expect(await gate.run([part('11')])).toBe(0);
    expect(reads).toBeGreaterThan(0);
    expect(afterFirst).toBeGreaterThan(0);
    const stored = await repo.dump('exchange-a', M);
    expect(stored.map((r) => [r['asset_id'], r['worker_id']]).sort()).toEqual([
      ['11', 2],
      ['22', 2],
    ]);
  });
});

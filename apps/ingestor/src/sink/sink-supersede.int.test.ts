import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ExchangeAMessage } from '@booktape/domain';
import { silentLogger } from '@booktape/config';
import { importPmxtFile } from '@booktape/storage';
import { uniqueId, waitFor } from '@booktape/testkit';
import { writePmxtFile, type PmxtRow } from '../../../../libs/storage/src/pmxt.test-support.ts';
import { createSink, type StoredPartition } from './sink.ts';
import { sinkTestBed } from './sink.test-support.ts';

/**
 * Capture after import, at the sink (docs/rules/imports.md#which-copy-wins): an hour imported
 * from an archive, then captured records of some of its events arrive through Kafka. Once
 * the sink has stored them and before any rollup runs, the store holds each event once: the
 * capture's records, and the archive's rows of events the capture does not have.
 */

const log = silentLogger();
const M = `0x${'5e'.repeat(32)}`;
const H = Date.UTC(2026, 3, 2, 12);

function captured(): ExchangeAMessage[] {
  const at = (i: number, ts: number, event: Omit<ExchangeAMessage['event'], 'market' | 'timestamp' | 'hash' | 'asset_id'>): ExchangeAMessage => ({
    venue: 'exchange-a',
    received_at: new Date(ts + 5).toISOString(),
    worker_id: 4,
    ingest_seq: (BigInt(ts + 5) * 2n ** 23n + BigInt(i)).toString(),
    dedup_id: `cap-${i}`,
    event: { market: M, asset_id: '77', timestamp: String(ts), hash: `0xcap${i}`, ...event },
  });
  return [
    at(0, H + 100, { event_type: 'book', bids: [{ price: '0.4', size: '10' }], asks: [{ price: '0.6', size: '5.50' }] }),
    at(1, H + 200, { event_type: 'price_change', changes: [{ price: '0.41', side: 'BUY', size: '3.0', best_bid: '0.41', best_ask: '0.6' }, { price: '0.6', side: 'SELL', size: '0', best_bid: '0.41', best_ask: '0.61' }] }),
  ];
}

const ROWS: PmxtRow[] = [
  { timestamp: H + 100, timestamp_received: H + 400, market: M, event_type: 'book', asset_id: '77', bids: '[["0.4","10"]]', asks: '[["0.6","5.50"]]' },
  { timestamp: H + 200, timestamp_received: H + 500, market: M, event_type: 'price_change', asset_id: '77', price: '0.41', side: 'BUY', size: '3', best_bid: '0.41', best_ask: '0.6' },
  { timestamp: H + 200, timestamp_received: H + 500, market: M, event_type: 'price_change', asset_id: '77', price: '0.6', side: 'SELL', size: '0', best_bid: '0.41', best_ask: '0.61' },
  // Only in the archive.
  { timestamp: H + 300, timestamp_received: H + 600, market: M, event_type: 'price_change', asset_id: '77', price: '0.42', side: 'BUY', size: '1', best_bid: '0.42', best_ask: '0.61' },
];

describe('sink: capture after import', () => {
  const bed = sinkTestBed('supersede');

  it('replaces the imported copies of the events it stores, keeping the rest, before any rollup', async () => {
    const { t, kafka, topics, repo, produce } = bed;
    const dir = mkdtempSync(path.join(tmpdir(), 'booktape-sink-sup-'));
    const file = path.join(dir, 'polymarket_orderbook_2026-04-02T12.parquet');
    await writePmxtFile(t.ch, file, ROWS);
    expect(await importPmxtFile(t.ch, file)).toMatchObject({ inserted: 4 });
    rmSync(dir, { recursive: true, force: true });
    const onlyImported = (await repo.dump('exchange-a', M)).filter((r) => r['timestamp'] === String(H + 300));

    const seen: StoredPartition[] = [];
    const sink = createSink({ kafka, topics, ch: t.ch, log, groupId: uniqueId('g'), onStored: (p) => void seen.push(...p) });
    await sink.start();
    try {
      await produce(captured());
      await waitFor('the rollup told of the partition', async () => seen.some((p) => p.market === M));
      const stored = await repo.dump('exchange-a', M);
      expect(stored.filter((r) => r['worker_id'] === 4).map((r) => r['hash'])).toEqual(['0xcap0', '0xcap1']);
      expect(stored.filter((r) => r['worker_id'] === 0)).toEqual(onlyImported);
      expect(stored.length).toBe(3);
    } finally {
      await sink.stop();
    }
  });
});

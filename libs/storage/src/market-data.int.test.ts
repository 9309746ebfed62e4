import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { ExchangeAMessage } from '@booktape/domain';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { MarketDataRepository, RawEventsRepository, closeStreamSessions, type ByteStream } from './index.ts';

/** A page read as a chain of small sub-reads is the same page as one read. */

const M = `0x${'ab'.repeat(32)}`;
const DAY = Date.UTC(2026, 2, 1);

function message(i: number): ExchangeAMessage {
  const ts = DAY + Math.floor(i / 6); // six records per millisecond
  const received = ts + 2;
  const hash = `0x${((i * 7919) % 1000).toString(16).padStart(4, '0')}${i}`;
  return {
    venue: 'exchange-a',
    received_at: new Date(received).toISOString(),
    worker_id: 1,
    ingest_seq: (BigInt(received) * 2n ** 23n + BigInt(i % 3)).toString(), // pairs share a sequence
    dedup_id: hash,
    event: { market: M, asset_id: String(i % 2), timestamp: String(ts), hash, event_type: 'price_change', changes: [{ price: '0.5', side: 'BUY', size: String(i) }] },
  };
}

async function text(s: ByteStream): Promise<string> {
  let out = '';
  for await (const c of s) out += c.toString('utf8');
  return out;
}

describe('chained sub-reads', () => {
  let t: TestClickHouse;
  let whole: MarketDataRepository;
  let small: MarketDataRepository;
  beforeAll(async () => {
    t = await tempClickHouse();
    const raw = new RawEventsRepository(t.ch);
    for (let b = 0; b < 3; b++) {
      await raw.insert('exchange-a', Array.from({ length: 100 }, (_, k) => ({ message: message(b * 100 + k), position: { partition: 0, offset: String(b * 100 + k) } })), `t${b}`);
    }
    whole = new MarketDataRepository(t.ch, { subReadRows: 1_000_000 });
    small = new MarketDataRepository(t.ch, { subReadRows: 7 });
  });
  afterAll(async () => {
    closeStreamSessions(t.ch);
    await t?.cleanup();
  });

  it('by date: any offset and limit give the same lines', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 320 }), fc.integer({ min: 1, max: 320 }), async (offset, limit) => {
        const a = await text(whole.streamByDate('exchange-a', M, '2026-03-01', offset, limit));
        const b = await text(small.streamByDate('exchange-a', M, '2026-03-01', offset, limit));
        expect(b).toBe(a);
        expect(a.split('\n').length - 1).toBe(Math.max(0, Math.min(limit, 300 - offset)));
      }),
      { numRuns: 40 },
    );
  });

  it('by range: any bounds and limit give the same lines', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: -2, max: 52 }), fc.integer({ min: 0, max: 52 }), fc.integer({ min: 1, max: 320 }), async (s, len, limit) => {
        const a = await text(whole.streamByRange('exchange-a', M, DAY + s, DAY + s + len, null, limit));
        const b = await text(small.streamByRange('exchange-a', M, DAY + s, DAY + s + len, null, limit));
        expect(b).toBe(a);
      }),
      { numRuns: 40 },
    );
  });
});

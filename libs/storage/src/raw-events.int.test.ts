import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExchangeAMessage, ExchangeBMessage } from '@booktape/domain';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { RawEventsRepository, migrate } from './index.ts';

function aMessage(i: number, hash = `0xh${i}`): ExchangeAMessage {
  const ts = 1_780_000_000_000 + i;
  return {
    venue: 'exchange-a',
    received_at: new Date(ts + 5).toISOString(),
    worker_id: 7,
    ingest_seq: (BigInt(ts + 5) * 2n ** 23n + BigInt(i)).toString(),
    dedup_id: hash,
    event: {
      market: '0xabc',
      asset_id: '123',
      timestamp: String(ts),
      hash,
      event_type: 'book',
      bids: [{ price: '0.48', size: '30' }],
      asks: [{ price: '0.52', size: '25' }],
      extra: { tick_size: '0.01' },
    },
  };
}

function bMessage(seq: number): ExchangeBMessage {
  const ms = 1_780_000_000_000 + seq;
  return {
    venue: 'exchange-b',
    received_at: new Date(ms).toISOString(),
    worker_id: 1,
    ingest_seq: (BigInt(ms) * 2n ** 23n).toString(),
    dedup_id: `d${seq}`,
    record: { type: 'delta', ticker: 'KXT-1', timestamp: new Date(ms).toISOString(), epoch_ms: ms, sid: 3, seq, side: 'yes', price: '0.42', delta: '-5' },
  };
}

describe('raw events repository (embedded ClickHouse)', () => {
  let t: TestClickHouse;
  let repo: RawEventsRepository;
  beforeAll(async () => {
    t = await tempClickHouse();
    repo = new RawEventsRepository(t.ch);
  });
  afterAll(async () => t?.cleanup());

  it('re-running migrations applies nothing twice', async () => {
    expect(await migrate(t.ch)).toEqual([]);
  });

  it('a retried batch with the same token is stored once, a different batch is not swallowed', async () => {
    const batch = [0, 1, 2].map((i) => ({ message: aMessage(i), position: { partition: 0, offset: String(i) } }));
    await repo.insert('exchange-a', batch, 'tok-1');
    await repo.insert('exchange-a', batch, 'tok-1');
    // The session must not remember the previous token: a plain later batch is stored.
    await repo.insert('exchange-a', [{ message: aMessage(3), position: { partition: 0, offset: '3' } }], 'tok-2');
    expect(await repo.count('exchange-a')).toBe(4);
  });

  it('a duplicate event in another batch (re-consumed, replayed) shows up once and keeps the first copy', async () => {
    const dup = aMessage(1);
    dup.ingest_seq = '1';
    await repo.insert('exchange-a', [{ message: dup, position: { partition: 0, offset: '99' } }], 'tok-3');
    const rows = await repo.dump('exchange-a', '0xabc');
    expect(rows).toHaveLength(4);
    const one = rows.find((r) => r.hash === '0xh1');
    expect(one?.ingest_seq).not.toBe('1');
    expect(one).toMatchObject({ tick_size: '0.01', market: '0xabc', event_type: 'book', worker_id: 7 });
  });

  it('keeps 64-bit ingest sequence numbers exact', async () => {
    const rows = await repo.dump('exchange-a', '0xabc');
    expect(rows[0]?.ingest_seq).toBe(aMessage(0).ingest_seq);
  });

  it('stores exchange B records in their 2.2 shape', async () => {
    await repo.insert('exchange-b', [1, 2].map((s) => ({ message: bMessage(s), position: { partition: 1, offset: String(s) } })), 'b-1');
    const rows = await repo.dump('exchange-b', 'KXT-1');
    expect(rows.map((r) => r.seq)).toEqual([1, 2]);
    expect(rows[0]).toMatchObject({ type: 'delta', ticker: 'KXT-1', price: '0.42', delta: '-5' });
  });
});

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
    // A later copy of row 1: received later (higher ingest_seq), by another worker, at another offset.
    const dup = aMessage(1);
    dup.ingest_seq = (BigInt(dup.ingest_seq) + 1000n).toString();
    dup.worker_id = 8;
    await repo.insert('exchange-a', [{ message: dup, position: { partition: 0, offset: '99' } }], 'tok-3');
    const rows = await repo.dump('exchange-a', '0xabc');
    expect(rows).toHaveLength(4);
    const one = rows.find((r) => r.hash === '0xh1');
    expect(one?.ingest_seq).toBe(aMessage(1).ingest_seq);
    expect(one).toMatchObject({ tick_size: '0.01', market: '0xabc', event_type: 'book', worker_id: 7 });
  });

  it('a token reused for other rows (offsets restarting after a topic reset) does not drop them', async () => {
    await repo.insert('exchange-a', [{ message: aMessage(20), position: { partition: 0, offset: '0' } }], 'reused');
    await repo.insert('exchange-a', [{ message: aMessage(21), position: { partition: 0, offset: '0' } }], 'reused');
    await repo.insert('exchange-a', [{ message: aMessage(21), position: { partition: 0, offset: '0' } }], 'reused');
    const rows = await repo.dump('exchange-a', '0xabc');
    expect(rows.filter((r) => r.hash === '0xh20' || r.hash === '0xh21')).toHaveLength(2);
  });

  describe('first copy wins: position, lineage and order are the first received copy', () => {
    const T = 1_790_000_000_000; // one millisecond shared by every event below
    /** Three events of one market at one millisecond, received in that order. */
    function burst(market: string, receivedMs: number, worker: number): ExchangeAMessage[] {
      return [0, 1, 2].map((k) => {
        const m = aMessage(0, `0xburst${k}`);
        m.event = { market, asset_id: '9', timestamp: String(T), hash: `0xburst${k}`, event_type: 'price_change', changes: [{ price: '0.5', side: 'BUY', size: String(k + 1) }] };
        m.received_at = new Date(receivedMs).toISOString();
        m.worker_id = worker;
        m.ingest_seq = (BigInt(receivedMs) * 2n ** 23n + BigInt(k)).toString();
        return m;
      });
    }
    /** The venue re-sends the first event 4 ms later: same content and dedup_id, later lineage. */
    function resent(market: string): ExchangeAMessage {
      const m = structuredClone(burst(market, T + 10, 7)[0]!);
      m.received_at = new Date(T + 14).toISOString();
      m.worker_id = 8;
      m.ingest_seq = (BigInt(T + 14) * 2n ** 23n).toString();
      return m;
    }
    const at = (message: ExchangeAMessage, offset: string) => ({ message, position: { partition: 2, offset } });
    const expectFirst = async (market: string) => {
      const rows = await repo.dump('exchange-a', market);
      expect(rows.map((r) => r.hash)).toEqual(['0xburst0', '0xburst1', '0xburst2']);
      expect(rows.map((r) => r.ingest_seq)).toEqual(burst(market, T + 10, 7).map((m) => m.ingest_seq));
      expect(rows.map((r) => [r.received_at, r.worker_id])).toEqual([0, 1, 2].map(() => [new Date(T + 10).toISOString(), 7]));
      expect(await repo.count('exchange-a', market)).toBe(3);
    };

    it('within one Kafka message and one insert batch', async () => {
      const market = '0xfirst-same-batch';
      // The capture merges the frames into one Kafka message: every row shares one offset.
      await repo.insert('exchange-a', [...burst(market, T + 10, 7), resent(market)].map((m) => at(m, '500')), 'same-batch');
      await expectFirst(market);
    });

    it('across batches', async () => {
      const market = '0xfirst-later-batch';
      await repo.insert('exchange-a', burst(market, T + 10, 7).map((m) => at(m, '600')), 'batch-1');
      await repo.insert('exchange-a', [at(resent(market), '600')], 'batch-2');
      await expectFirst(market);
    });

    it('when the later copy was stored first (reverse order), and when a batch is replayed', async () => {
      const market = '0xfirst-reverse';
      // The later copy even sits at the lower Kafka offset (another message, another partition order).
      await repo.insert('exchange-a', [at(resent(market), '640')], 'rev-1');
      await repo.insert('exchange-a', burst(market, T + 10, 7).map((m) => at(m, '650')), 'rev-2');
      await repo.insert('exchange-a', burst(market, T + 10, 7).map((m) => at(m, '800')), 'rev-3');
      await expectFirst(market);
    });

    it('exchange B: a re-sent delta keeps the first copy', async () => {
      const first = bMessage(40);
      first.record = { ...first.record, ticker: 'KXT-FIRST' };
      const again = structuredClone(first);
      again.ingest_seq = (BigInt(first.ingest_seq) + 5n * 2n ** 23n).toString();
      again.worker_id = 9;
      again.received_at = new Date(Date.parse(first.received_at) + 5).toISOString();
      await repo.insert('exchange-b', [{ message: again, position: { partition: 1, offset: '900' } }], 'b-rev-1');
      await repo.insert('exchange-b', [{ message: first, position: { partition: 1, offset: '950' } }], 'b-rev-2');
      const rows = await repo.dump('exchange-b', 'KXT-FIRST');
      expect(rows).toEqual([expect.objectContaining({ ingest_seq: first.ingest_seq, worker_id: 1, received_at: first.received_at })]);
    });
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

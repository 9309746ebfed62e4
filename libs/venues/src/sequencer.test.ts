import type { ExchangeAEvent, ExchangeBRecord, RawMessage } from '@booktape/domain';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { contentHash, sha1Hex } from './content-hash.ts';
import { Sequencer } from './sequencer.ts';

const T0 = Date.UTC(2026, 1, 14, 15, 30, 0, 123);

function aEvent(i: number, extra?: Record<string, unknown>): ExchangeAEvent {
  return {
    market: '0xabc',
    asset_id: `a${i}`,
    timestamp: String(T0 - 10),
    hash: `h${i}`,
    event_type: 'book',
    bids: [],
    asks: [],
    ...(extra ? { extra } : {}),
  };
}

function bRecord(seq: number | null, type: ExchangeBRecord['type'] = 'delta'): ExchangeBRecord {
  return { type, ticker: 'KX-1', timestamp: new Date(T0).toISOString(), epoch_ms: T0, sid: seq === null ? null : 5, seq, side: 'yes', price: '0.5', delta: '1' };
}

const seqOf = (m: RawMessage): bigint => BigInt(m.ingest_seq);
const base = (ms: number): bigint => BigInt(ms) * 2n ** 23n;

describe('Sequencer: ingest_seq', () => {
  it('follows received_ms·2^23 + frameIndexWithinMs·2^11 + recordIndex', () => {
    const s = new Sequencer(3);
    const f1 = s.stamp(new Date(T0), [aEvent(1), aEvent(2)], 'exchange-a');
    const f2 = s.stamp(new Date(T0), [aEvent(3)], 'exchange-a');
    const f3 = s.stamp(new Date(T0 + 1), [aEvent(4)], 'exchange-a');
    expect(f1.map(seqOf)).toEqual([base(T0), base(T0) + 1n]);
    expect(f2.map(seqOf)).toEqual([base(T0) + 2048n]);
    expect(f3.map(seqOf)).toEqual([base(T0 + 1)]);
    expect(f1[0]).toMatchObject({ venue: 'exchange-a', received_at: '2026-02-14T15:30:00.123Z', worker_id: 3, dedup_id: 'h1' });
  });

  it('counts an empty frame as a frame', () => {
    const s = new Sequencer(1);
    expect(s.stamp(new Date(T0), [], 'exchange-a')).toEqual([]);
    expect(s.stamp(new Date(T0), [aEvent(1)], 'exchange-a').map(seqOf)).toEqual([base(T0) + 2048n]);
  });

  it('counts each venue on its own', () => {
    const s = new Sequencer(1);
    s.stamp(new Date(T0), [aEvent(1)], 'exchange-a');
    expect(s.stamp(new Date(T0), [bRecord(1)], 'exchange-b').map(seqOf)).toEqual([base(T0)]);
  });

  it('spills a frame of more than 2048 records into the next slots instead of wrapping', () => {
    const s = new Sequencer(1);
    const big = s.stamp(new Date(T0), Array.from({ length: 3000 }, (_, i) => aEvent(i)), 'exchange-a');
    expect(seqOf(big[2999]!)).toBe(base(T0) + 2999n);
    expect(s.stamp(new Date(T0), [aEvent(0)], 'exchange-a').map(seqOf)).toEqual([base(T0) + 2n * 2048n]);
  });

  it('spills more than 4096 frames in one millisecond into the next, and stays increasing', () => {
    const s = new Sequencer(1);
    let last = -1n;
    for (let i = 0; i < 4100; i++) {
      const [m] = s.stamp(new Date(T0), [aEvent(i)], 'exchange-a');
      expect(seqOf(m!) > last).toBe(true);
      last = seqOf(m!);
    }
    expect(last).toBe(base(T0) + 4099n * 2048n);
    expect(last >= base(T0 + 1)).toBe(true);
    const [next] = s.stamp(new Date(T0 + 1), [aEvent(0)], 'exchange-a');
    expect(seqOf(next!)).toBe(last + 2048n);
  });

  it('continues after the last number when the clock steps back', () => {
    const s = new Sequencer(1);
    const [a] = s.stamp(new Date(T0), [aEvent(1)], 'exchange-a');
    const [b] = s.stamp(new Date(T0 - 1000), [aEvent(2)], 'exchange-a');
    expect(seqOf(b!)).toBe(seqOf(a!) + 2048n);
    expect(b!.received_at).toBe(new Date(T0 - 1000).toISOString());
  });

  it('refuses a receive time it cannot encode, and a bad worker id', () => {
    expect(() => new Sequencer(1).stamp(new Date('x'), [], 'exchange-a')).toThrow(RangeError);
    expect(() => new Sequencer(1).stamp(new Date(-1), [], 'exchange-a')).toThrow(RangeError);
    expect(() => new Sequencer(-1)).toThrow(RangeError);
    expect(() => new Sequencer(1.5)).toThrow(RangeError);
  });

  it('is deterministic and strictly increasing for any sequence of frames', () => {
    const frames = fc.array(
      fc.record({ dt: fc.integer({ min: -3, max: 3 }), n: fc.nat({ max: 5 }), venue: fc.constantFrom('exchange-a' as const, 'exchange-b' as const) }),
      { maxLength: 60 },
    );
    fc.assert(
      fc.property(frames, (fs) => {
        const run = (): RawMessage[] => {
          const s = new Sequencer(7);
          let t = T0;
          return fs.flatMap((f): RawMessage[] => {
            t += f.dt;
            const at = new Date(t);
            return f.venue === 'exchange-a'
              ? s.stamp(at, Array.from({ length: f.n }, (_, i) => aEvent(i)), 'exchange-a')
              : s.stamp(at, Array.from({ length: f.n }, (_, i) => bRecord(i + 1)), 'exchange-b');
          });
        };
        const first = run();
        expect(run()).toEqual(first);
        for (const venue of ['exchange-a', 'exchange-b'] as const) {
          const seqs = first.filter((m) => m.venue === venue).map(seqOf);
          for (let i = 1; i < seqs.length; i++) expect(seqs[i]! > seqs[i - 1]!).toBe(true);
        }
        // without clock steps back the numbers are exactly the formula's
        if (fs.every((f) => f.dt >= 0)) {
          for (const m of first) expect(seqOf(m) >> 23n).toBe(BigInt(Date.parse(m.received_at)));
        }
      }),
    );
  });
});

describe('Sequencer: dedup_id', () => {
  it('uses the event hash for A, and the content hash when the hash is a transaction hash', () => {
    const s = new Sequencer(1);
    const trade: ExchangeAEvent = { market: '0xabc', asset_id: '1', timestamp: '1750428146322', hash: '0xt', event_type: 'last_trade_price', extra: { price: '0.4', transaction_hash: '0xt' } };
    const [book, lt] = s.stamp(new Date(T0), [aEvent(1), trade], 'exchange-a');
    expect(book!.dedup_id).toBe('h1');
    expect(lt!.dedup_id).toBe(contentHash(trade));
    const other = { ...trade, extra: { price: '0.41', transaction_hash: '0xt' } };
    expect(s.stamp(new Date(T0), [other], 'exchange-a')[0]!.dedup_id).not.toBe(lt!.dedup_id);
  });

  it('hashes epoch_ms|sid|seq|type|ticker|expected_seq for B', () => {
    const s = new Sequencer(1);
    const gap: ExchangeBRecord = { type: 'gap', ticker: 'KX-1', timestamp: new Date(T0).toISOString(), epoch_ms: T0, sid: 5, seq: 9, expected_seq: 4 };
    const [d, g] = s.stamp(new Date(T0), [bRecord(9), gap], 'exchange-b');
    expect(d!.dedup_id).toBe(sha1Hex(`${T0}|5|9|delta|KX-1|`));
    expect(g!.dedup_id).toBe(sha1Hex(`${T0}|5|9|gap|KX-1|4`));
  });

  it('adds the record content for B records without sid/seq', () => {
    const s = new Sequencer(1);
    const x = bRecord(null);
    const y = { ...x, delta: '2' };
    const [mx, my] = s.stamp(new Date(T0), [x, y], 'exchange-b');
    expect(mx!.dedup_id).not.toBe(my!.dedup_id);
    expect(mx!.dedup_id).toMatch(/^[0-9a-f]{40}$/);
  });

  it('gives the same dedup ids when the same frames are stamped again (replay)', () => {
    const stampAll = (s: Sequencer): string[] =>
      [...s.stamp(new Date(T0), [bRecord(1), bRecord(2)], 'exchange-b'), ...s.stamp(new Date(T0), [aEvent(1)], 'exchange-a')].map((m) => m.dedup_id);
    expect(stampAll(new Sequencer(1))).toEqual(stampAll(new Sequencer(2)));
  });
});

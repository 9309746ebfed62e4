import type { ExchangeAEvent, ExchangeBRecord, RawMessage } from '@booktape/domain';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { contentHash, sha1Hex } from './content-hash.ts';
import { normaliseExchangeA } from './exchange-a.normaliser.ts';
import { Sequencer, dedupIdA, frameOfSeq, frameOfSeqHalves, receivedMsOfSeq } from './sequencer.ts';

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

/** Independent reference: the identity fields, keys written in sorted order by hand. */
function bookIdentity(e: ExchangeAEvent): string {
  return sha1Hex(JSON.stringify({ asks: e.asks, asset_id: e.asset_id, bids: e.bids, event_type: e.event_type, hash: e.hash, timestamp: e.timestamp }));
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
    expect(f1[0]).toMatchObject({ venue: 'exchange-a', received_at: '2026-02-14T15:30:00.123Z', worker_id: 3, dedup_id: bookIdentity(aEvent(1)) });
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
  const AT = new Date(T0);
  const MARKET = '0x5f65177b394277fd294cd75650044e32ba009a95022d88a0c1d565897d72f8f1';
  /** The dedup ids of a frame as the venue sent it (text), through the normaliser. */
  const idsOf = (frame: unknown): string[] => {
    const r = normaliseExchangeA(frame, AT);
    if (r.kind !== 'records') throw new Error(JSON.stringify(r));
    return new Sequencer(1).stamp(AT, r.records, 'exchange-a').map((m) => m.dedup_id);
  };
  // A trade burst as recorded from the venue: frames of one millisecond repeat the asset's hash.
  const burst = (size: string, price = '0.52') =>
    `{"event_type":"price_change","market":"${MARKET}","timestamp":"1757908892351","price_changes":[` +
    `{"asset_id":"7132","price":"${price}","size":"${size}","side":"SELL","hash":"56621a12","best_bid":"0.5","best_ask":"0.52"}]}`;

  it('A: the same hash with different content is a different event', () => {
    expect(idsOf(burst('200'))).not.toEqual(idsOf(burst('150')));
    expect(idsOf(burst('200'))).not.toEqual(idsOf(burst('200', '0.53')));
  });

  it('A: a byte-identical re-send is the same event', () => {
    expect(idsOf(burst('200'))).toEqual(idsOf(burst('200')));
    // and so is the parsed JSON a capture file holds for it
    expect(idsOf(JSON.parse(burst('200')))).toEqual(idsOf(burst('200')));
  });

  it('A: key order does not matter, time and type do', () => {
    const ev = JSON.parse(burst('200')) as { price_changes: Record<string, unknown>[] } & Record<string, unknown>;
    const reordered = {
      timestamp: ev['timestamp'],
      price_changes: ev.price_changes.map((c) => Object.fromEntries(Object.entries(c).reverse())),
      market: ev['market'],
      event_type: 'price_change',
    };
    expect(idsOf(reordered)).toEqual(idsOf(ev));
    expect(idsOf({ ...ev, timestamp: '1757908892352' })).not.toEqual(idsOf(ev));
    // A book sent right after the burst may carry the same hash: a different event.
    const book = { event_type: 'book', asset_id: '7132', market: MARKET, timestamp: '1757908892351', hash: '56621a12', bids: [], asks: [] };
    expect(idsOf(book)).not.toEqual(idsOf(ev));
  });

  it('A: the per-entry claims are part of the content', () => {
    expect(idsOf(burst('200'))).not.toEqual(idsOf(burst('200').replace('"best_bid":"0.5"', '"best_bid":"0.51"')));
  });

  it('A book/price_change: sha1 of the identity fields, whatever extra says', () => {
    const e = aEvent(1, { tick_size: '0.01' });
    expect(dedupIdA(e)).toBe(bookIdentity(e));
    const pc: ExchangeAEvent = { market: '0xabc', asset_id: '1', timestamp: '1757908892351', hash: 'h', event_type: 'price_change', changes: [{ price: '0.50', side: 'BUY', size: '3', hash: 'h' }] };
    expect(dedupIdA(pc)).toBe(
      sha1Hex(`{"asset_id":"1","changes":[{"hash":"h","price":"0.50","side":"BUY","size":"3"}],"event_type":"price_change","hash":"h","timestamp":"1757908892351"}`),
    );
  });

  it('A property: equal content in any key order gives one id; any changed change gives another', () => {
    const dec = fc.stringMatching(/^(0|[1-9]\d{0,3})(\.\d{1,4})?$/);
    const entry = fc.record({ price: dec, size: dec, side: fc.constantFrom('BUY', 'SELL'), hash: fc.constantFrom('h1', 'h2'), best_bid: dec, best_ask: dec });
    const shuffle = (o: Record<string, unknown>, seed: number): Record<string, unknown> => {
      const keys = Object.keys(o);
      for (let i = keys.length - 1; i > 0; i--) {
        const j = (seed * (i + 7)) % (i + 1);
        [keys[i], keys[j]] = [keys[j] as string, keys[i] as string];
      }
      return Object.fromEntries(keys.map((k) => [k, o[k]]));
    };
    fc.assert(
      fc.property(fc.array(entry, { minLength: 1, maxLength: 5 }), fc.nat(1000), fc.nat(), (entries, seed, which) => {
        const event = { event_type: 'price_change', market: MARKET, timestamp: '1757908892351', price_changes: entries.map((e) => ({ asset_id: '7', ...e })) };
        const shuffled = shuffle({ ...event, price_changes: event.price_changes.map((e, i) => shuffle(e, seed + i)) }, seed);
        expect(idsOf(shuffled)).toEqual(idsOf(event));
        const k = which % entries.length;
        const changed = { ...event, price_changes: event.price_changes.map((e, i) => (i === k ? { ...e, size: `${e.size}1` } : e)) };
        expect(idsOf(changed)).not.toEqual(idsOf(event));
      }),
    );
  });

  // Stored rows carry these ids: however price_change ids are computed, they must stay the
  // canonical JSON of the identity fields, for plain changes and odd ones alike.
  it('A price_change property: the id is the content hash of the identity fields, whatever the changes hold', () => {
    const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 6 }), fc.constantFrom('0.5', 'BUY', 'SELL', '"', '\\', '\u2028', '\ud800'));
    const field = fc.oneof({ weight: 6, arbitrary: text }, fc.constant(undefined), fc.integer(), fc.double(), fc.constant(null), fc.constant({ z: '1' }));
    const key = fc.oneof({ weight: 8, arbitrary: fc.constantFrom('price', 'side', 'size', 'hash', 'best_bid', 'best_ask') }, fc.constantFrom('extra', '0', '__x'));
    const change = fc.oneof({ weight: 8, arbitrary: fc.dictionary(key, field, { maxKeys: 7 }) }, fc.constant(null), fc.constant('x'), fc.constant([]));
    const top = fc.oneof({ weight: 8, arbitrary: text }, fc.integer(), fc.constant(undefined));
    fc.assert(
      fc.property(fc.array(change, { maxLength: 4 }), top, top, top, fc.boolean(), (changes, asset, hash, timestamp, none) => {
        const e = { market: '0xabc', asset_id: asset, timestamp, hash, event_type: 'price_change', ...(none ? {} : { changes }) } as unknown as ExchangeAEvent;
        expect(dedupIdA(e)).toBe(contentHash({ asset_id: e.asset_id, changes: e.changes ?? null, event_type: e.event_type, hash: e.hash, timestamp: e.timestamp }));
      }),
      { numRuns: 3000 },
    );
  });

  it('A other event types: the content hash of the whole event (a transaction hash is no identity)', () => {
    const s = new Sequencer(1);
    const trade: ExchangeAEvent = { market: '0xabc', asset_id: '1', timestamp: '1750428146322', hash: '0xt', event_type: 'last_trade_price', extra: { price: '0.4', transaction_hash: '0xt' } };
    const [lt] = s.stamp(new Date(T0), [trade], 'exchange-a');
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

  it('identifies B ticker/trade records by receive time, sid, seq, type and ticker, so a replay reproduces them', () => {
    const t: ExchangeBRecord = { type: 'ticker', ticker: 'KX-1', timestamp: new Date(T0).toISOString(), epoch_ms: T0, sid: 2, seq: 7, venue_ts: null, data: { yes_bid_dollars: '0.42' } };
    const [m] = new Sequencer(1).stamp(new Date(T0), [t], 'exchange-b');
    expect(m!.dedup_id).toBe(sha1Hex(`${T0}|2|7|ticker|KX-1|`));
    expect(new Sequencer(9).stamp(new Date(T0), [{ ...t }], 'exchange-b')[0]!.dedup_id).toBe(m!.dedup_id);
    const trade = { ...t, type: 'trade' as const };
    expect(new Sequencer(1).stamp(new Date(T0), [trade], 'exchange-b')[0]!.dedup_id).not.toBe(m!.dedup_id);
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

describe('ingest_seq readers', () => {
  it('give back the receive time and one frame per stamp call', () => {
    const s = new Sequencer(1);
    const f1 = s.stamp(new Date(T0), [aEvent(1), aEvent(2)], 'exchange-a');
    const f2 = s.stamp(new Date(T0), [aEvent(3)], 'exchange-a');
    const f3 = s.stamp(new Date(T0 + 1), [aEvent(4)], 'exchange-a');
    const seqs = [...f1, ...f2, ...f3].map(seqOf);
    expect(seqs.map(receivedMsOfSeq)).toEqual([T0, T0, T0, T0 + 1]);
    const frames = seqs.map(frameOfSeq);
    expect(frames[0]).toBe(frames[1]);
    expect(new Set(frames).size).toBe(3);
  });

  it('frameOfSeqHalves is frameOfSeq of the UInt64 the halves make, for any UInt64', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), (seq) => {
        const hi = Number(seq / 4294967296n);
        const lo = Number(seq % 4294967296n);
        expect(frameOfSeqHalves(hi, lo)).toBe(Number(seq / 2048n));
        expect(frameOfSeq(seq)).toBe(seq / 2048n);
        expect(receivedMsOfSeq(seq)).toBe(Number(seq / 8388608n));
      }),
      { numRuns: 500 },
    );
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ExchangeAMessage } from '@booktape/domain';
import type { ReplayRecordA } from '@booktape/storage';
import { exchangeAPayload, rebuildA, residueA, typedA } from '../../../../libs/storage/src/raw-codec.ts';
import { exchangeAMessage, exchangeAMessages } from '../../../../libs/storage/src/venue-shapes.test-support.ts';
import { ExchangeAFrameWriter, type OutFrame } from './exchange-a.frames.ts';
import { ExchangeAFrameEncoder } from './exchange-a.frames.test-support.ts';

/**
 * The frame writer on typed reads (ExchangeAFrameWriter) against the encoder on the served
 * payload (ExchangeAFrameEncoder, whose frames the round-trip tests check against the
 * capture's normaliser): the same frames, byte for byte, in the same order, with the same
 * times, for records of every shape (book, every price_change shape, other events, venue
 * extras, residues, odd strings) and for list-shaped price_changes grouped into frames.
 */

const NAMED = ['market', 'asset_id', 'timestamp', 'hash', 'event_type', 'bids', 'asks', 'changes'];

/** The record as the typed read gives it (ReplayRepository.recordsA: its int test checks that reading against the payload). */
function typedRecord(m: ExchangeAMessage, seq: bigint): ReplayRecordA {
  const t = typedA(m);
  const residue = residueA(m, t) !== '';
  const whole = JSON.parse(residue ? exchangeAPayload(m) : rebuildA(t)) as Record<string, unknown>;
  const record: Record<string, unknown> = {};
  if (residue) Object.assign(record, whole);
  else for (const k of NAMED) if (k in whole) record[k] = whole[k];
  return { ts: t.event_ts, frame: Number(seq >> 11n), market: m.event.market, asset: m.event.asset_id, record: record as unknown as ReplayRecordA['record'], extra: residue ? '' : t.extra, residue };
}

function both(messages: Array<{ m: ExchangeAMessage; seq: bigint }>): { old: OutFrame[]; now: OutFrame[] } {
  const enc = new ExchangeAFrameEncoder();
  const old: OutFrame[] = [];
  for (const { m, seq } of messages) old.push(...enc.push(JSON.parse(exchangeAPayload(m)) as Record<string, unknown>, seq.toString()));
  old.push(...enc.end());
  const w = new ExchangeAFrameWriter();
  const now: OutFrame[] = [];
  for (const { m, seq } of messages) w.push(typedRecord(m, seq), now);
  w.end(now);
  return { old, now };
}

/** Plain decimals (as the typed columns give them back exactly). */
const dec = fc.tuple(fc.nat({ max: 1_000_000 }), fc.integer({ min: 0, max: 4 })).map(([m, k]) => (k === 0 ? String(m) : `${Math.floor(m / 10 ** k)}.${String(m % 10 ** k).padStart(k, '0')}`));
const plainChange = fc.record(
  { price: dec, side: fc.constantFrom('BUY' as const, 'SELL' as const), size: dec, hash: fc.stringMatching(/^[0-9a-f]{8}$/), best_bid: dec, best_ask: dec },
  { requiredKeys: ['price', 'side', 'size'] },
).map(({ price, side, size, ...rest }) => ({ price, side, size, ...rest }));

/** Records the typed columns hold without a residue or extras, the ones written from templates: every price_change shape among them. */
const plainMessage: fc.Arbitrary<ExchangeAMessage> = fc
  .record({
    kind: fc.constantFrom('book', 'price_change', 'price_change', 'tick_size_change'),
    asset: fc.oneof(fc.constant(''), fc.stringMatching(/^[0-9]{1,12}$/)),
    hash: fc.stringMatching(/^[0-9a-f]{0,8}$/),
    levels: fc.array(fc.record({ price: dec, size: dec }), { maxLength: 3 }),
    changes: fc.array(plainChange, { maxLength: 3 }),
    seq: fc.nat(),
  })
  .map((r) => {
    const event: ExchangeAMessage['event'] = { market: '0xaa', asset_id: r.asset, timestamp: '1700000000000', hash: r.hash, event_type: r.kind };
    if (r.kind === 'book') Object.assign(event, { bids: r.levels, asks: [...r.levels].reverse() });
    if (r.kind === 'price_change') event.changes = r.changes;
    return { venue: 'exchange-a' as const, received_at: '2023-11-14T22:13:20.005Z', worker_id: 1, ingest_seq: String(r.seq), dedup_id: `p${r.seq}`, event };
  });

/** Runs of messages sharing a frame (ingest_seq >> 11), a time and a market, as one venue frame's records do. */
const framed = fc
  .array(fc.tuple(fc.array(exchangeAMessage, { minLength: 1, maxLength: 4 }), fc.integer({ min: 1_700_000_000_000, max: 1_700_000_000_005 }), fc.constantFrom('0xaa', '0xbb'), fc.boolean()), { maxLength: 12 })
  .map((runs) => {
    const out: Array<{ m: ExchangeAMessage; seq: bigint }> = [];
    runs.forEach(([ms, ts, market, sameFrame], i) => {
      const frame = BigInt(sameFrame && i > 0 ? i - 1 : i) + 2n ** 40n;
      ms.forEach((m, j) => {
        // Hashes on every change (the list shape) half the time.
        const changes = m.event.changes?.map((c, k) => (i % 2 === 0 && c.hash === undefined ? { ...c, hash: `h${i}${j}${k}` } : c));
        out.push({ m: { ...m, event: { ...m.event, market, timestamp: String(ts), ...(changes ? { changes } : {}) } }, seq: (frame << 11n) + BigInt(j) });
      });
    });
    return out;
  });

describe('ExchangeAFrameWriter', () => {
  it('writes the venue shapes of docs/rules/venue-frames.md as the encoder does', () => {
    const ms = exchangeAMessages();
    const { old, now } = both(ms.map((m) => ({ m, seq: BigInt(m.ingest_seq) })));
    expect(old.length).toBeGreaterThan(10);
    expect(now).toEqual(old);
  });

  it('writes the frames the encoder writes, for arbitrary records and frames', () => {
    fc.assert(
      fc.property(framed, (messages) => {
        const { old, now } = both(messages);
        expect(now).toEqual(old);
      }),
      { numRuns: 400 },
    );
  });

  it('covers templates and the fallback alike', () => {
    // The generated records include plain ones (written from templates), ones with extras and ones with residues.
    const sample = fc.sample(framed, { numRuns: 200, seed: 7 }).flat();
    const kinds = new Set(sample.map(({ m, seq }) => {
      const r = typedRecord(m, seq);
      if (r.residue) return 'residue';
      if (r.extra !== '') return 'extra';
      const c = r.record.changes ?? [];
      const shape = c.length > 0 && c.every((x) => x.hash !== undefined) ? 'list' : c.length === 1 && c[0]!.hash === undefined && (c[0]!.best_bid ?? c[0]!.best_ask) !== undefined ? 'flat' : 'changes';
      return r.record.event_type === 'price_change' ? `plain price_change ${shape}` : `plain ${r.record.event_type === 'book' ? 'book' : 'other'}`;
    }));
    expect([...kinds].sort()).toEqual(['extra', 'plain book', 'plain other', 'plain price_change changes', 'plain price_change flat', 'plain price_change list', 'residue']);
  });
});

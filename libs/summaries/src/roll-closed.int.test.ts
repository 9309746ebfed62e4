import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@booktape/config';
import type { ExchangeAEvent, ExchangeAMessage, ExchangeBMessage, PriceChange } from '@booktape/domain';
import { RawEventsRepository, SummariesRepository, type SummaryKey, type SummaryWrite } from '@booktape/storage';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { exchangeAStreamArb } from '@booktape/book/testing';
import { exchangeAMessage, exchangeBMessage } from '../../storage/src/venue-shapes.test-support.ts';
import { Roller } from './roller.ts';

/**
 * A closed day's rollup applies each row as it is decoded, most exchange A price_change rows
 * straight from their stored columns (Roller.rollClosed, book-rows.ts foldBookRows), where an
 * open day folds arrays of records. Both must store the same summaries, byte for byte: the
 * day row (book state, last observation, checks), every ladder level's chunks and the
 * checkpoints, for any records a day may hold (books with claims that hold or not, odd
 * decimal texts, records kept in their residue, other event types, many in one millisecond).
 */

let t: TestClickHouse;
let raw: RawEventsRepository;

/** Claim-hash fetches of the runs without hashes, and how many found their rows changed (none should). */
const fetched = { fetches: 0, changed: 0 };

/** The real repository, keeping what a run would write instead of writing it. */
class Captured extends SummariesRepository {
  written: SummaryWrite[] = [];
  override async writeMany(w: readonly SummaryWrite[]): Promise<void> {
    this.written.push(...w);
  }
  override async claimHashes(...a: Parameters<SummariesRepository['claimHashes']>): Promise<string[] | null> {
    const got = await super.claimHashes(...a);
    fetched.fetches++;
    if (got === null) fetched.changed++;
    return got;
  }
}

beforeAll(async () => {
  t = await tempClickHouse();
  raw = new RawEventsRepository(t.ch);
});
afterAll(async () => t?.cleanup());

const DAY = Date.UTC(2026, 2, 2);
const DATE = '2026-03-02';
let run = 0;

/** What a run stores, without what differs by when it ran (its version and clock). */
function stored(w: SummaryWrite[]) {
  return w.map(({ key, day, chunks, checkpoints }) => ({
    key,
    day: { ...day, version: 0, baseVersion: 0, computedAt: 0 },
    chunks: chunks.map((c) => ({ ...c, version: 0 })),
    checkpoints: checkpoints.map((c) => ({ ...c, version: 0, baseVersion: 0 })),
  }));
}

/**
 * Rolls the day from columns without the entries' hashes (fetched afterwards for claims that
 * do not hold), from columns with them, and from arrays of records: the same results
 * (alerts and their details included) and the same stored rows.
 */
async function rollBothWays(key: SummaryKey): Promise<void> {
  const ways = [{ applyFromColumns: true }, { applyFromColumns: true, readClaimHashes: true }, { applyFromColumns: false }].map((o) => {
    const repo = new Captured(t.ch);
    return { repo, roller: new Roller(repo, silentLogger(), { closeGraceMs: 0, ...o }) };
  });
  const results = [];
  for (const w of ways) results.push(await w.roller.rollDay(key, DATE, true));
  expect(ways[0]!.repo.written.length).toBe(1);
  for (const k of [1, 2]) {
    expect(results[0]).toEqual(results[k]);
    expect(stored(ways[0]!.repo.written)).toEqual(stored(ways[k]!.repo.written));
  }
}

/** Venue hashes, claims that hold, claims that do not, and odd spellings. */
const claimText = fc.constantFrom('0', '1', '0.5', '0.50', '.48', '0.52', '0.4', '0.6', '0.001', '0.999', 'abc', '');
const claimArb = fc.record(
  { hash: fc.oneof(fc.constant(''), fc.stringMatching(/^0x[0-9a-f]{8}$/)), best_bid: claimText, best_ask: claimText },
  { requiredKeys: [] },
);

const T0 = DAY + 3_600_000;

describe('a closed day rolled from columns', () => {
  it('stores what folding arrays of records stores, for any exchange A day', async () => {
    await fc.assert(
      fc.asyncProperty(
        exchangeAStreamArb,
        fc.array(fc.option(claimArb, { nil: undefined }), { maxLength: 60 }),
        fc.array(fc.tuple(exchangeAMessage, fc.nat()), { maxLength: 12 }),
        fc.nat({ max: 3 }),
        async (stream, claims, odd, squeeze) => {
          run++;
          const market = `0x${run.toString(16).padStart(64, '0')}`;
          const asset = '123';
          // The stream's times moved into the day, squeezed so that many records share a millisecond.
          const first = stream.length > 0 ? Number(stream[0]!.timestamp) : 0;
          let c = 0;
          const events: ExchangeAEvent[] = stream.map((e) => {
            const ts = T0 + Math.floor((Number(e.timestamp) - first) / 10 ** squeeze);
            const out: ExchangeAEvent = { ...e, market, asset_id: asset, timestamp: String(ts) };
            if (e.changes !== undefined) out.changes = e.changes.map((ch): PriceChange => ({ ...ch, ...(claims[c++ % Math.max(1, claims.length)] ?? {}) }));
            return out;
          });
          // Arbitrary records of the same asset among them: every kind, odd texts, extras (kept in the residue).
          const last = events.length > 0 ? Number(events.at(-1)!.timestamp) : T0;
          for (const [m, at] of odd) {
            const ts = T0 + (at % (last - T0 + 2));
            events.push({ ...m.event, market, asset_id: asset, timestamp: String(ts) });
          }
          if (events.length === 0) return;
          const messages: ExchangeAMessage[] = events.map((event, i) => ({
            venue: 'exchange-a',
            received_at: new Date(Number(event.timestamp)).toISOString(),
            worker_id: 1,
            ingest_seq: String(i + 1),
            dedup_id: `d${run}-${i}`,
            event,
          }));
          await raw.insert('exchange-a', messages.map((message, i) => ({ message, position: { partition: 0, offset: String(i) } })), `closed-a-${run}`);
          await rollBothWays({ venue: 'exchange-a', market, asset });
        },
      ),
      { numRuns: 40, ...(process.env.FC_SEED ? { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH } : {}) },
    );
    // Claims that did not hold were met, and their rows found as read.
    expect(fetched.fetches).toBeGreaterThan(0);
    expect(fetched.changed).toBe(0);
  });

  it('stores what folding arrays of records stores, for any exchange B day (every row a record)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(exchangeBMessage, fc.nat({ max: 86_399_999 })), { minLength: 1, maxLength: 30 }), async (ms) => {
        run++;
        const ticker = `KXCOLS-${run}`;
        const messages: ExchangeBMessage[] = ms.map(([m, at], i) => {
          const epoch = DAY + at;
          return { ...m, ingest_seq: String(i + 1), dedup_id: `b${run}-${i}`, record: { ...m.record, ticker, epoch_ms: epoch, timestamp: new Date(epoch).toISOString() } };
        });
        await raw.insert('exchange-b', messages.map((message, i) => ({ message, position: { partition: 0, offset: String(i) } })), `closed-b-${run}`);
        await rollBothWays({ venue: 'exchange-b', market: ticker, asset: ticker });
      }),
      { numRuns: 15 },
    );
  });
});

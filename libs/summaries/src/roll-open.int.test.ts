import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@booktape/config';
import type { ExchangeAEvent, ExchangeAMessage, PriceChange } from '@booktape/domain';
import { RawEventsRepository, SummariesRepository, type SummaryKey, type SummaryWrite } from '@booktape/storage';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { exchangeAStreamArb } from '@booktape/book/testing';
import { exchangeAMessage } from '../../storage/src/venue-shapes.test-support.ts';
import { Roller, type DayResult } from './roller.ts';

/**
 * An open day's runs (incremental reads of [covered_until, day end), the last millisecond
 * held back; alone or several assets in one read) read exchange A rows without their
 * entries' hashes and fetch those that the details of claims that do not hold name
 * afterwards. Rolled in the same random steps, a day must store and return what reading
 * every hash with its row gives, byte for byte, run after run: the day row (book state,
 * last observation, checks with the first mismatch's detail), every ladder level's chunks,
 * the checkpoints, and the alerts with their details.
 */

let t: TestClickHouse;
let raw: RawEventsRepository;

/** Claim-hash fetches of the runs without hashes, and how many found their rows changed (none should here). */
const fetched = { fetches: 0, changed: 0, reads: { with: 0, without: 0 } };

/** The real repository (it writes), keeping what each run wrote. */
class Captured extends SummariesRepository {
  written: SummaryWrite[] = [];
  override async writeMany(w: readonly SummaryWrite[]): Promise<void> {
    this.written.push(...w);
    await super.writeMany(w);
  }
  override async claimHashes(...a: Parameters<SummariesRepository['claimHashes']>): Promise<string[] | null> {
    const got = await super.claimHashes(...a);
    fetched.fetches++;
    if (got === null) fetched.changed++;
    return got;
  }
  override bookEventsRead(...a: Parameters<SummariesRepository['bookEventsRead']>) {
    fetched.reads[a[5]?.hashes === false ? 'without' : 'with']++;
    return super.bookEventsRead(...a);
  }
  override bookEventsReadMany(...a: Parameters<SummariesRepository['bookEventsReadMany']>) {
    fetched.reads[a[3]?.hashes === false ? 'without' : 'with']++;
    return super.bookEventsReadMany(...a);
  }
}

beforeAll(async () => {
  t = await tempClickHouse();
  raw = new RawEventsRepository(t.ch);
});
afterAll(async () => t?.cleanup());

const DAY = Date.UTC(2026, 2, 4);
const DATE = '2026-03-04';
const T0 = DAY + 3_600_000;
/** No day ever closes: every run is an open day's. */
const OPEN = 1e13;
let run = 0;

/**
 * What the runs stored, without what differs by when they ran or whose copy it is (version,
 * clock, key), asset by asset (the assets of one `rollMany` go on to later days concurrently).
 */
function stored(w: SummaryWrite[], keys: SummaryKey[]) {
  return keys.map((k) =>
    w
      .filter(({ key }) => key.market === k.market && key.asset === k.asset)
      .map(({ day, chunks, checkpoints }) => ({
        day: { ...day, version: 0, baseVersion: 0, computedAt: 0 },
        chunks: chunks.map((c) => ({ ...c, version: 0 })),
        checkpoints: checkpoints.map((c) => ({ ...c, version: 0, baseVersion: 0 })),
      })),
  );
}

/** Results without what differs by when they ran. */
function results(rs: DayResult[][]) {
  return rs.map((r) => r.map((d) => ({ ...d })));
}

/** Venue hashes, claims that hold, claims that do not, and odd spellings. */
const claimText = fc.constantFrom('0', '1', '0.5', '0.50', '.48', '0.52', '0.4', '0.6', '0.001', '0.999', 'abc', '');
const claimArb = fc.record(
  { hash: fc.oneof(fc.constant(''), fc.stringMatching(/^0x[0-9a-f]{8}$/)), best_bid: claimText, best_ask: claimText },
  { requiredKeys: [] },
);

/** One step: how many of the next events are stored, whether the run is hinted, and whether the assets roll in one read. */
const stepArb = fc.record({ take: fc.integer({ min: 1, max: 40 }), hinted: fc.boolean(), many: fc.boolean() });

describe('an open day rolled incrementally', () => {
  it('stores and returns what reading every hash gives, run after run, for any exchange A day', async () => {
    await fc.assert(
      fc.asyncProperty(
        exchangeAStreamArb,
        fc.array(fc.option(claimArb, { nil: undefined }), { maxLength: 60 }),
        fc.array(fc.tuple(exchangeAMessage, fc.nat()), { maxLength: 8 }),
        fc.nat({ max: 3 }),
        fc.array(stepArb, { minLength: 1, maxLength: 5 }),
        async (stream, claims, odd, squeeze, steps) => {
          run++;
          // The stream's times moved into the day, squeezed so that many records share a millisecond.
          const first = stream.length > 0 ? Number(stream[0]!.timestamp) : 0;
          let c = 0;
          const events: ExchangeAEvent[] = stream.map((e) => {
            const ts = T0 + Math.floor((Number(e.timestamp) - first) / 10 ** squeeze);
            const out: ExchangeAEvent = { ...e, timestamp: String(ts) };
            if (e.changes !== undefined) out.changes = e.changes.map((ch): PriceChange => ({ ...ch, ...(claims[c++ % Math.max(1, claims.length)] ?? {}) }));
            return out;
          });
          // Arbitrary records among them, at any place (stored late: a rebuild), every kind, odd texts, extras (kept in the residue).
          const last = events.length > 0 ? Number(events.at(-1)!.timestamp) : T0;
          for (const [m, at] of odd) events.splice(at % (events.length + 1), 0, { ...m.event, timestamp: String(T0 + (at % (last - T0 + 2))) });
          if (events.length === 0) return;
          // Two copies of two assets (the second holds every other event): one rolled with hashes, one without.
          const ways = [true, false].map((hashes) => {
            const market = `0x${(run * 2 + (hashes ? 0 : 1)).toString(16).padStart(64, '0')}`;
            const keys: SummaryKey[] = ['11', '12'].map((asset) => ({ venue: 'exchange-a', market, asset }));
            const repo = new Captured(t.ch);
            return { keys, repo, roller: new Roller(repo, silentLogger(), { closeGraceMs: OPEN, readClaimHashes: hashes }), results: [] as DayResult[][] };
          });
          let at = 0;
          let seq = 0;
          for (const step of steps) {
            if (at >= events.length) break;
            const piece = events.slice(at, at + step.take);
            at += piece.length;
            const hint = Math.min(...piece.map((e) => Number(e.timestamp)));
            for (const w of ways) {
              for (const [k, key] of w.keys.entries()) {
                const mine = piece.filter((_, i) => k === 0 || (at - piece.length + i) % 2 === 0);
                if (mine.length === 0) continue;
                const messages: ExchangeAMessage[] = mine.map((e, i) => ({
                  venue: 'exchange-a',
                  received_at: new Date(Number(e.timestamp)).toISOString(),
                  worker_id: 1,
                  ingest_seq: String(seq + i + 1),
                  dedup_id: `d${run}-${k}-${seq + i}`,
                  event: { ...e, market: key.market, asset_id: key.asset },
                }));
                await raw.insert('exchange-a', messages.map((message, i) => ({ message, position: { partition: 0, offset: String(seq + i) } })), `open-${run}-${key.market}-${key.asset}-${seq}`);
              }
            }
            seq += piece.length;
            for (const w of ways) {
              const hints = w.keys.map(() => (step.hinted ? hint : null));
              if (step.many) {
                const many = await w.roller.rollMany(w.keys, DATE, hints);
                for (const m of many) {
                  if ('error' in m) throw m.error;
                  w.results.push(m.results);
                }
              } else for (const [k, key] of w.keys.entries()) w.results.push(await w.roller.rollFrom(key, DATE, false, hints[k]!));
            }
            expect(results(ways[1]!.results)).toEqual(results(ways[0]!.results));
            expect(stored(ways[1]!.repo.written, ways[1]!.keys)).toEqual(stored(ways[0]!.repo.written, ways[0]!.keys));
          }
          // Nothing was ever closed: every run was an open day's.
          for (const w of ways) for (const x of w.repo.written) expect(x.day.complete).toBe(false);
        },
      ),
      { numRuns: 15, ...(process.env.FC_SEED ? { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH } : {}) },
    );
    // Claims that did not hold were met, and their rows found as read; both ways read.
    expect(fetched.fetches).toBeGreaterThan(0);
    expect(fetched.changed).toBe(0);
    expect(fetched.reads.with).toBeGreaterThan(0);
    expect(fetched.reads.without).toBeGreaterThan(0);
  }, 600_000);
});

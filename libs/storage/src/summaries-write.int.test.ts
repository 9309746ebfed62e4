import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { SummariesRepository, type BookCheckpoint, type SummaryChunk, type SummaryKey, type SummaryWrite } from './summaries.repository.ts';

/**
 * A write's chunks and checkpoints go as JSON rows when their texts are small and as
 * RowBinary when large (SummariesRepository's `rowBinaryFromChars`). Whichever way, the
 * engine must store the same rows: written both ways into separate keys, read back, equal.
 * (Rows of one sorting key collapse into one on insert: the arbitrary writes have none such.)
 */

let t: TestClickHouse;
beforeAll(async () => {
  t = await tempClickHouse();
});
afterAll(async () => t?.cleanup());

const DAY0 = Date.UTC(2026, 0, 1);
const date = fc.integer({ min: 0, max: 400 }).map((d) => new Date(DAY0 + d * 86_400_000).toISOString().slice(0, 10));
// Texts with quotes, backslashes, control characters and any Unicode (the states are JSON, the buckets codec text).
const text = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 300 }), fc.string({ unit: fc.constantFrom('"', '\\', '\n', '\t', '\0', 'é', '€', '𝄞', 'a', ',') }));
const version = fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER });

const chunk = (d: string): fc.Arbitrary<SummaryChunk> =>
  fc.record({
    date: fc.constant(d),
    resolution: fc.constantFrom(1, 60, 3600),
    hour: fc.integer({ min: 0, max: 23 }).map((h) => Date.parse(`${d}T00:00:00Z`) + h * 3_600_000),
    version,
    engineVersion: fc.integer({ min: 0, max: 0xffff }),
    bucketCount: fc.integer({ min: 0, max: 86_400 }),
    buckets: text,
  });
const checkpoint = (d: string): fc.Arbitrary<BookCheckpoint> =>
  fc.record({
    date: fc.constant(d),
    events: fc.integer({ min: 0, max: 2 ** 40 }),
    at: fc.integer({ min: 0, max: 86_399_999 }).map((ms) => Date.parse(`${d}T00:00:00Z`) + ms),
    baseVersion: version,
    version,
    engineVersion: fc.integer({ min: 0, max: 0xffff }),
    state: text,
  });

let n = 0;
async function stored(key: SummaryKey): Promise<unknown[]> {
  const where = `venue = {venue:String} AND market = {market:String} AND asset = {asset:String}`;
  const read = async (sql: string) => (await t.ch.client.query({ query: sql, query_params: { ...key }, format: 'JSONEachRow' })).json();
  return [
    await read(`SELECT event_date, resolution, hour, version, engine_version, bucket_count, buckets FROM ${t.ch.table('summary_chunks')} WHERE ${where} ORDER BY ALL`),
    await read(`SELECT event_date, events, at, base_version, version, engine_version, state FROM ${t.ch.table('book_checkpoints')} WHERE ${where} ORDER BY ALL`),
  ];
}

describe('summary chunks and checkpoints written as JSON rows or RowBinary', () => {
  it('store the same rows either way', async () => {
    const json = new SummariesRepository(t.ch, Number.POSITIVE_INFINITY);
    const binary = new SummariesRepository(t.ch, 0);
    const writes = date.chain((d) =>
      fc.record({ d: fc.constant(d), chunks: fc.uniqueArray(chunk(d), { maxLength: 6, selector: (c) => `${c.resolution} ${c.hour}` }), checkpoints: fc.uniqueArray(checkpoint(d), { maxLength: 6, selector: (c) => c.events }) }),
    );
    await fc.assert(
      fc.asyncProperty(writes, async ({ d, chunks, checkpoints }) => {
        const keys = [json, binary].map((): SummaryKey => ({ venue: 'exchange-a', market: `m${++n}`, asset: `a${n}` }));
        const ways = [json, binary];
        for (let i = 0; i < 2; i++) {
          const key = keys[i]!;
          const w: SummaryWrite = {
            key,
            day: { date: d, version: 1, baseVersion: 1, engineVersion: 1, coveredUntil: 0, complete: false, events: 0, startStateHash: '', state: '', lastObs: '', checks: '', computedAt: 0 },
            chunks,
            checkpoints,
          };
          await ways[i]!.writeMany([w]);
        }
        const [a, b] = [await stored(keys[0]!), await stored(keys[1]!)];
        expect(b).toEqual(a);
        expect((a[0] as unknown[]).length).toBe(chunks.length);
        expect((a[1] as unknown[]).length).toBe(checkpoints.length);
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});

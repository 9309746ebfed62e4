import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { aggregateObservations, fillSeries, mergeBuckets, planBuckets, type Observation } from '@booktape/book';
import { summaryBodyParts, type SummaryFormat } from './summary-body.ts';
import { SUMMARY_ANSWER_VERSION, settledAnswerTag } from './answer-tag.ts';

const START = Date.UTC(2026, 2, 1);

/** A fixed stretch of observations: gaps (forward-filled buckets), one-sided books, nulls. */
function observations(): Observation[] {
  const out: Observation[] = [];
  for (let i = 0; i < 400; i++) {
    if (i % 37 < 5) continue;
    const bid = i % 53 === 0 ? null : String((400 + ((i * 7) % 30)) / 1000);
    const ask = i % 41 === 0 ? null : String((450 + ((i * 11) % 40)) / 1000);
    const both = bid !== null && ask !== null;
    out.push({
      ts: START + i * 730,
      best_bid: bid,
      best_bid_size: bid === null ? null : String((i * 13) % 900),
      best_ask: ask,
      best_ask_size: ask === null ? null : `${(i * 17) % 900}.5`,
      mid_price: both ? String((Number(bid) * 1000 + Number(ask) * 1000) / 2000) : null,
      spread: both ? String((Number(ask) * 1000 - Number(bid) * 1000) / 1000) : null,
    });
  }
  return out;
}

async function digestOf(R: number, format: SummaryFormat): Promise<string> {
  const fine = aggregateObservations(observations(), 1);
  const plan = planBuckets({ startMs: START, endMs: START + 300_000 }, R);
  const series = fillSeries(R === 1 ? fine : mergeBuckets(fine, 1, R), plan);
  const parts = await summaryBodyParts(series, format, '{"market":"m","data":', '}', 64);
  return createHash('sha256').update(Buffer.concat(parts)).digest('hex').slice(0, 16);
}

describe('the tag of a settled summary answer', () => {
  it('is made under the version of the bytes pinned here: a change of the bytes must move SUMMARY_ANSWER_VERSION', async () => {
    // When this fails, the answers to unchanged stored buckets changed: clients hold copies
    // under tags that no longer name their bytes. Bump SUMMARY_ANSWER_VERSION, then the digests.
    const pinned: Record<number, Record<string, string>> = {
      1: { json: '69fe529750ca2ee9', ndjson: '11efa82185336582', csv: '73b63b9f3cd827b9' },
      7: { json: 'dab98fe66ddcb328', ndjson: '75f8cf871758062a', csv: 'e19ed2acf1c64b10' },
    };
    const got: Record<string, Record<string, string>> = {};
    for (const R of [1, 7]) for (const f of ['json', 'ndjson', 'csv'] as const) (got[R] ??= {})[f] = await digestOf(R, f);
    expect({ version: SUMMARY_ANSWER_VERSION, digests: got }).toEqual({ version: 1, digests: pinned });
  });

  it('is a strong tag that changes with the request, the stored data and the version', () => {
    const tag = settledAnswerTag('["exchange-a","m","a",0,1,1,"json",null]', '7|2026-02-28:1|2026-03-01:2');
    expect(tag).toMatch(/^"[0-9a-f]{32}"$/);
    expect(settledAnswerTag('["exchange-a","m","a",0,1,1,"json",null]', '7|2026-02-28:1|2026-03-01:2')).toBe(tag);
    expect(settledAnswerTag('["exchange-a","m","a",0,1,1,"csv",null]', '7|2026-02-28:1|2026-03-01:2')).not.toBe(tag);
    expect(settledAnswerTag('["exchange-a","m","a",0,1,1,"json",null]', '8|2026-02-28:1|2026-03-01:2')).not.toBe(tag);
    expect(settledAnswerTag('["exchange-a","m","a",0,1,1,"json",null]', '7|2026-02-28:1|2026-03-01:3')).not.toBe(tag);
  });
});

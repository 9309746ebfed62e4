import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExchangeAEvent, ExchangeAMessage } from '@booktape/domain';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { RawEventsRepository } from './raw-events.repository.ts';
import { SummariesRepository } from './summaries.repository.ts';

/**
 * The rollup's read (bookEventsRead, bookEventsFold) gives one copy of each record, the first
 * received, in serving order (docs/rules/data.md): event time, ingest_seq, dedup_id. Checked
 * here while the copies lie in parts the engine has not merged (FINAL dedups at read time,
 * whatever settings the read runs with), and again once they are merged into one part.
 */

let t: TestClickHouse;
let raw: RawEventsRepository;
let repo: SummariesRepository;

beforeAll(async () => {
  t = await tempClickHouse();
  // Every insert below stays a part of its own until the test merges them.
  await t.ch.client.command({ query: `SYSTEM STOP MERGES ${t.ch.table('raw_exchange_a')}` });
  raw = new RawEventsRepository(t.ch);
  repo = new SummariesRepository(t.ch);
});
afterAll(async () => t?.cleanup());

const MARKET = `0x${'c4'.repeat(32)}`;
const ASSET = '777';
const DATE = '2026-03-02';
const T0 = Date.UTC(2026, 2, 2, 10);
const key = { venue: 'exchange-a' as const, market: MARKET, asset: ASSET };

interface Copy {
  /** The millisecond after T0. */
  at: number;
  seq: number;
  dedup: string;
  /** What tells the copy apart in what is read: its venue hash. */
  tag: string;
  book?: boolean;
}

function message(c: Copy): ExchangeAMessage {
  const ts = String(T0 + c.at);
  const event: ExchangeAEvent = c.book
    ? { market: MARKET, asset_id: ASSET, timestamp: ts, hash: c.tag, event_type: 'book', bids: [{ price: '0.4', size: '10' }], asks: [{ price: '0.6', size: '10' }] }
    : { market: MARKET, asset_id: ASSET, timestamp: ts, hash: c.tag, event_type: 'price_change', changes: [{ price: '0.45', side: 'BUY', size: String(c.seq) }] };
  return { venue: 'exchange-a', received_at: new Date(T0 + c.at).toISOString(), worker_id: 1, ingest_seq: String(c.seq), dedup_id: c.dedup, event };
}

// Records in a few milliseconds, several to a millisecond (ingest_seq 100, 110, …).
const first: Copy[] = Array.from({ length: 12 }, (_, i) => ({ at: Math.floor(i / 3), seq: 100 + i * 10, dedup: `m${i}`, tag: `r${i}`, book: i === 0 }));
// Each array is one insert: one part.
const parts: Copy[][] = [
  first,
  // Later copies: they lose (their content differs here only so that a wrong winner would show).
  [1, 4, 9].map((i) => ({ ...first[i]!, seq: 5000 + i, tag: `late${i}` })),
  // Earlier copies: they win, and so come first in their millisecond.
  [2, 7].map((i) => ({ ...first[i]!, seq: 1 + i, tag: `early${i}` })),
  // New records sharing a millisecond: dedup_id before the others' but received after them,
  // and after the others' but received before them (the sort key and serving order disagree).
  [
    { at: 1, seq: 900, dedup: 'a1', tag: 'n-a1' },
    { at: 2, seq: 5, dedup: 'z2', tag: 'n-z2' },
    { at: 3, seq: 131, dedup: 'a3', tag: 'n-a3' },
  ],
  // A second copy of one of them, received before everything in its millisecond: it wins and moves.
  [{ at: 1, seq: 3, dedup: 'a1', tag: 'n-a1-early' }],
  // Same millisecond and ingest_seq, two capture processes: dedup_id breaks the tie.
  [{ at: 3, seq: 131, dedup: 'a0', tag: 'n-a0' }],
];

/** What the rules say the read gives: the first copy of each dedup_id, in serving order. */
function expected(): string[] {
  const won = new Map<string, Copy>();
  for (const c of parts.flat()) {
    const w = won.get(c.dedup);
    if (w === undefined || c.seq < w.seq) won.set(c.dedup, c);
  }
  return [...won.values()].sort((a, b) => a.at - b.at || a.seq - b.seq || (a.dedup < b.dedup ? -1 : a.dedup > b.dedup ? 1 : 0)).map((c) => c.tag);
}

async function readTags(): Promise<string[]> {
  const read = await repo.bookEventsRead(key, DATE, T0 - 1000, T0 + 60_000, null);
  const tags: string[] = [];
  for await (const batch of read.events) for (const r of batch) tags.push((r as ExchangeAEvent).hash);
  return tags;
}

async function foldTags(): Promise<string[]> {
  const read = await repo.bookEventsFold(key, DATE, T0 - 1000, T0 + 60_000, null);
  const tags: string[] = [];
  await read.fold({
    record: (r) => tags.push((r as ExchangeAEvent).hash),
    changes: (_ms, e) => tags.push(e.claimHash(0) as string),
  });
  return tags;
}

async function activeParts(): Promise<number> {
  const rs = await t.ch.client.query({
    query: `SELECT count() AS n FROM system.parts WHERE database = {db:String} AND table = 'raw_exchange_a' AND active`,
    query_params: { db: t.ch.database },
    format: 'JSONEachRow',
  });
  return Number((await rs.json<{ n: string }>())[0]!.n);
}

describe('the rollup read with copies across parts', () => {
  it('gives the first copy of each record in serving order, unmerged and merged', async () => {
    for (const [i, p] of parts.entries()) await raw.insert('exchange-a', p.map((c, j) => ({ message: message(c), position: { partition: 0, offset: String(i * 100 + j) } })), `copies-${i}`);
    const want = expected();
    // The case is what it claims: copies that lose, copies that win and move, ties on every key.
    expect(want).toContain('early2');
    expect(want).toContain('n-a1-early');
    expect(want).not.toContain('late1');
    expect(want.indexOf('n-z2')).toBeLessThan(want.indexOf('r6'));
    expect(want.indexOf('n-a0')).toBeLessThan(want.indexOf('n-a3'));

    expect(await activeParts()).toBe(parts.length);
    expect(await readTags()).toEqual(want);
    expect(await foldTags()).toEqual(want);

    await t.ch.client.command({ query: `SYSTEM START MERGES ${t.ch.table('raw_exchange_a')}` });
    await t.ch.client.command({ query: `OPTIMIZE TABLE ${t.ch.table('raw_exchange_a')} FINAL` });
    expect(await activeParts()).toBe(1);
    expect(await readTags()).toEqual(want);
    expect(await foldTags()).toEqual(want);
  });
});

import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExchangeAMessage, ExchangeBMessage } from '@booktape/domain';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { migrate, RawEventsRepository, ReplayRepository, type ReplayRow } from './index.ts';
import { exchangeAMessage, exchangeAMessages, exchangeBMessage, exchangeBMessages } from './venue-shapes.test-support.ts';

/**
 * The typed replay reads (recordsA, recordsB) against the read of the served payload
 * (`rows`, the engine's rebuild of each record, itself checked byte for byte against the
 * stored JSON in typed-raw.int.test.ts): the same records in the same order, each record
 * the same value with its keys in the same order, for every venue shape and arbitrary
 * records (residues, extras, ingest_seq above 2^53, many records in one millisecond), read
 * in sub-reads small enough that the keyset continues inside a millisecond, and in sub-reads
 * of more rows than one run of decoding.
 */

let t: TestClickHouse;
let raw: RawEventsRepository;
let replay: ReplayRepository;

beforeAll(async () => {
  t = await tempClickHouse();
  await migrate(t.ch);
  raw = new RawEventsRepository(t.ch);
  replay = new ReplayRepository(t.ch);
});
afterAll(async () => t?.cleanup());

const DAY = Date.UTC(2026, 2, 14);
/** An asset of the venue shapes (venue-shapes.test-support.ts). */
const T1_OF_SHAPES = '65818619657568813474341868652308942079804919287380422192892211131408793125422';
let batch = 0;

async function all<T>(it: AsyncGenerator<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

/** Messages of one day, a few milliseconds each shared by several records, with distinct identities. */
function onOneDay<M extends ExchangeAMessage | ExchangeBMessage>(ms: M[], tag: string): M[] {
  return ms.map((m, i) => {
    const ts = DAY + 3_600_000 + (i % 4);
    const dedup_id = `${tag}-${i}`;
    if (m.venue === 'exchange-a') return { ...m, dedup_id, event: { ...m.event, timestamp: String(ts) } } as M;
    return { ...m, dedup_id, record: { ...m.record, epoch_ms: ts, timestamp: new Date(ts).toISOString() } } as M;
  });
}

async function store<M extends ExchangeAMessage | ExchangeBMessage>(ms: M[]): Promise<void> {
  await raw.insert(ms[0]!.venue, ms.map((message, i) => ({ message, position: { partition: 0, offset: String(i) } })), `replay-read-${++batch}`);
}

describe('typed replay reads', () => {
  it('exchange A: recordsA gives the served records, in serving order, with their frames', async () => {
    const market = `0x${'bd31'.repeat(16)}`;
    const shapes = exchangeAMessages();
    const arbitrary = fc.sample(exchangeAMessage, { numRuns: 700, seed: 25 });
    const ms = onOneDay([...shapes, ...arbitrary], 'ra');
    await store(ms);
    const assets = [...new Set(ms.map((m) => m.event.asset_id).filter((a) => a !== ''))];
    // Also one asset: a read of one market and one asset knows their ids without reading them.
    const one = ms.find((m) => m.event.asset_id === T1_OF_SHAPES)!.event.asset_id;
    for (const [subReadRows, wanted] of [[7, assets], [5000, assets], [5000, [one]]] as const) {
      const o = { subReadRows, assets: wanted };
      const rows: ReplayRow[] = await all(replay.rows('exchange-a', [market], DAY, DAY + 86_400_000 - 1, o));
      const typed = (await all(replay.recordsA([market], DAY, DAY + 86_400_000 - 1, o))).flat();
      expect(typed.length).toBe(rows.length);
      expect(rows.length).toBe(ms.filter((m) => m.event.market === market && (wanted.includes(m.event.asset_id) || m.event.asset_id === '')).length);
      typed.forEach((r, i) => {
        const want = rows[i]!;
        expect(r.ts).toBe(want.ts);
        expect(r.frame).toBe(Number(BigInt(want.seq) >> 11n));
        expect(r.market).toBe(want.market);
        expect(r.asset).toBe(want.tie);
        const whole = r.extra === '' ? r.record : { ...(JSON.parse(`{${r.extra}}`) as object), ...r.record };
        // Same values and the same key order as the served record.
        expect(JSON.stringify(whole)).toBe(JSON.stringify(JSON.parse(want.payload)));
      });
    }
  });

  it('exchange B: recordsB gives the served records, in serving order', async () => {
    const shapes = exchangeBMessages();
    const arbitrary = fc.sample(exchangeBMessage, { numRuns: 700, seed: 26 });
    const ms = onOneDay([...shapes, ...arbitrary], 'rb');
    await store(ms);
    const tickers = [...new Set(ms.map((m) => m.record.ticker))];
    for (const subReadRows of [7, 5000]) {
      const rows = await all(replay.rows('exchange-b', tickers, DAY, DAY + 86_400_000 - 1, { subReadRows }));
      const typed = (await all(replay.recordsB(tickers, DAY, DAY + 86_400_000 - 1, { subReadRows }))).flat();
      expect(typed.length).toBe(rows.length);
      expect(rows.length).toBeGreaterThan(600);
      typed.forEach((r, i) => {
        expect(r.ts).toBe(rows[i]!.ts);
        expect(JSON.stringify(r.record)).toBe(JSON.stringify(JSON.parse(rows[i]!.payload)));
      });
    }
  });

  it('an empty window reads nothing; an abort stops the read', async () => {
    expect(await all(replay.recordsA(['0xnone'], DAY, DAY + 1000))).toEqual([]);
    expect(await all(replay.recordsB(['KXNONE'], DAY + 10, DAY))).toEqual([]);
    const abort = new AbortController();
    abort.abort();
    await expect(all(replay.recordsB(['KXBTC-25MAR15-B100000'], DAY, DAY + 86_400_000, { signal: abort.signal }))).rejects.toThrow();
  });
});

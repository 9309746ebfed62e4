import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { ExchangeAMessage, RawMessage } from '@booktape/domain';
import { RawEventsRepository, exchangeAPayload, migrate, type ClickHouse, type StoredMessage } from '@booktape/storage';
import { Sequencer, marketKey, normaliseExchangeA } from '@booktape/venues';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { concatRawMessages, decodeRawMessages, encodeRawValue } from '@booktape/messaging';

/**
 * First copy wins, end to end (issue 9 point 2), from venue frames to the stored raw order.
 *
 * A random exchange A stream: price_change and book frames of one or two markets, many at
 * the same venue millisecond, venue hashes drawn from a small pool (the venue repeats a
 * hash on different content), and some frames re-sent byte-identically after a random
 * delay. Each frame goes through the real normaliser and sequencer (the capture's path),
 * the per-market values are merged into random Kafka messages with the producer's real
 * framing (concatRawMessages), the messages get partitions and offsets, and random
 * consecutive runs of them form the sink's insert batches: decoded by the sink's decoder
 * and inserted through RawEventsRepository.insert with the sink's token. Some batches are
 * delivered again with other boundaries from an earlier offset (a sink killed between
 * insert and commit). Then the whole file is replayed a second time: same records, new
 * offsets, new cuts.
 *
 * The stored order (`dump`) must equal a from-scratch reference: one row per distinct
 * event (same hash, content and time = the same event), with the first received copy's
 * content and lineage, ordered by market, event time, then ingest_seq.
 */

const TOPIC = 'raw.exchange-a';
const MARKETS = ['0x' + '1a'.repeat(32), '0x' + '2b'.repeat(32)];
const ASSETS = ['101', '202'];
const BASE_MS = Date.UTC(2026, 5, 10, 14);

interface GenEntry {
  asset: number;
  price: string;
  size: string;
  side: 'BUY' | 'SELL';
  hash: string;
}
interface GenFrame {
  market: number;
  /** ms after the previous frame's venue timestamp (0: the same millisecond). */
  step: number;
  latency: number;
  book: boolean;
  entries: GenEntry[];
  /** Re-sent byte-identically this many ms after it arrived (null: not re-sent). */
  resendAfter: number | null;
}

const entryArb = fc.record({
  asset: fc.integer({ min: 0, max: 1 }),
  price: fc.constantFrom('0.48', '0.49', '0.50', '0.51'),
  size: fc.constantFrom('0', '10', '25.5', '100'),
  side: fc.constantFrom('BUY' as const, 'SELL' as const),
  hash: fc.constantFrom('0xaa', '0xbb', '0xcc'),
});
const frameArb: fc.Arbitrary<GenFrame> = fc.record({
  market: fc.integer({ min: 0, max: 1 }),
  step: fc.constantFrom(0, 0, 0, 1, 2),
  latency: fc.integer({ min: 0, max: 4 }),
  book: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
  entries: fc.array(entryArb, { minLength: 1, maxLength: 3 }),
  resendAfter: fc.oneof({ arbitrary: fc.constant(null), weight: 2 }, { arbitrary: fc.integer({ min: 0, max: 25 }), weight: 1 }),
});

/** The venue's JSON for a generated frame (the list-shaped price_change, or a book array). */
function venueFrame(g: GenFrame, ts: number): unknown {
  const market = MARKETS[g.market]!;
  if (g.book) {
    const e = g.entries[0]!;
    return [{ event_type: 'book', asset_id: ASSETS[e.asset], market, timestamp: String(ts), hash: e.hash, bids: [{ price: e.price, size: e.size }], asks: [{ price: '0.60', size: '5' }] }];
  }
  return {
    event_type: 'price_change',
    market,
    timestamp: String(ts),
    price_changes: g.entries.map((e) => ({ asset_id: ASSETS[e.asset], price: e.price, size: e.size, side: e.side, hash: e.hash, best_bid: '0.48', best_ask: '0.52' })),
  };
}

/** Arrivals in receive order: originals and re-sends, with non-decreasing receive times. */
function arrivals(frames: GenFrame[]): Array<{ frame: unknown; receivedMs: number }> {
  const out: Array<{ frame: unknown; receivedMs: number; order: number }> = [];
  let ts = BASE_MS;
  let lastArrival = 0;
  frames.forEach((g, i) => {
    ts += g.step;
    const frame = venueFrame(g, ts);
    const receivedMs = Math.max(lastArrival, ts + g.latency);
    lastArrival = receivedMs;
    out.push({ frame, receivedMs, order: i * 2 });
    // The re-send is the same bytes, later: it may land between frames the venue sent after.
    if (g.resendAfter !== null) out.push({ frame: JSON.parse(JSON.stringify(frame)), receivedMs: receivedMs + g.resendAfter, order: i * 2 + 1 });
  });
  // A stable sort by receive time keeps an original ahead of its re-send at the same ms.
  out.sort((a, b) => a.receivedMs - b.receivedMs || a.order - b.order);
  return out.map(({ frame, receivedMs }) => ({ frame, receivedMs }));
}

/** The capture's path: normalise, stamp, one value per market and frame (in frame order). */
function capture(arrived: Array<{ frame: unknown; receivedMs: number }>): { values: Array<{ key: string; value: string | Buffer }>; messages: ExchangeAMessage[] } {
  const sequencer = new Sequencer(7);
  const values: Array<{ key: string; value: string | Buffer }> = [];
  const messages: ExchangeAMessage[] = [];
  for (const a of arrived) {
    const at = new Date(a.receivedMs);
    const r = normaliseExchangeA(a.frame, at);
    if (r.kind !== 'records') throw new Error(`generated frame not accepted: ${JSON.stringify(r)}`);
    const stamped = sequencer.stamp(at, r.records, 'exchange-a');
    messages.push(...stamped);
    const byMarket = new Map<string, RawMessage[]>();
    for (const m of stamped) {
      const k = marketKey(m);
      byMarket.set(k, [...(byMarket.get(k) ?? []), m]);
    }
    for (const [key, list] of byMarket) values.push({ key, value: encodeRawValue(list) });
  }
  return { values, messages };
}

/** Random cut points of a sequence of n items into consecutive runs (each run non-empty). */
function cutsOf(n: number, seed: number[]): number[][] {
  const runs: number[][] = [];
  let i = 0;
  let k = 0;
  while (i < n) {
    const len = 1 + ((seed[k++ % seed.length] ?? 0) % 4);
    runs.push(Array.from({ length: Math.min(len, n - i) }, (_, j) => i + j));
    i += len;
  }
  return runs;
}

interface KafkaMessage {
  partition: number;
  offset: number;
  value: string | Buffer;
}

/**
 * One pass of the file through Kafka and the sink: the producer merges consecutive values
 * of a key into one message, the partition log assigns offsets, the sink inserts runs of
 * consecutive messages, and (crash) re-delivers from an earlier offset with new boundaries.
 */
async function pass(repo: RawEventsRepository, values: Array<{ key: string; value: string | Buffer }>, next: Map<number, number>, partitions: number, cut: number[], crashAt: number | null): Promise<void> {
  // Producer: per key, consecutive values merged into one message (a flush's coalescing).
  const log = new Map<number, KafkaMessage[]>();
  const byKey = new Map<string, Array<string | Buffer>>();
  for (const v of values) byKey.set(v.key, [...(byKey.get(v.key) ?? []), v.value]);
  for (const [key, list] of byKey) {
    const partition = MARKETS.indexOf(key) % partitions;
    for (const run of cutsOf(list.length, cut)) {
      const offset = next.get(partition) ?? 0;
      next.set(partition, offset + 1);
      const msgs = log.get(partition) ?? [];
      msgs.push({ partition, offset, value: concatRawMessages(run.map((i) => list[i]!)) });
      log.set(partition, msgs);
    }
  }
  // Sink: batches of consecutive messages per partition, the token from their offsets.
  for (const [partition, msgs] of log) {
    const deliver = async (from: number, seed: number[]) => {
      for (const run of cutsOf(msgs.length - from, seed)) {
        const batch = run.map((i) => msgs[from + i]!);
        const rows: StoredMessage[] = [];
        for (const m of batch) {
          const d = decodeRawMessages('exchange-a', Buffer.from(m.value));
          if (!d.ok) throw new Error(d.reason);
          for (const message of d.messages) rows.push({ message, position: { partition, offset: String(m.offset) } });
        }
        await repo.insert('exchange-a', rows, `${TOPIC}/${partition}/${batch[0]!.offset}-${batch.at(-1)!.offset}`);
      }
    };
    await deliver(0, cut);
    // Killed after inserting, before committing: everything from the last commit comes again.
    if (crashAt !== null) await deliver(crashAt % msgs.length, [...cut].reverse().map((c) => c + 1));
  }
}

/** The from-scratch answer: distinct events, first received copy, in serving order. */
function reference(messages: ExchangeAMessage[]): Array<Record<string, unknown>> {
  const first = new Map<string, ExchangeAMessage>();
  for (const m of messages) {
    // Same hash, same content, same time: the same event (the venue's message again).
    const identity = JSON.stringify(m.event);
    const seen = first.get(identity);
    if (!seen || BigInt(m.ingest_seq) < BigInt(seen.ingest_seq)) first.set(identity, m);
  }
  const rows = [...first.values()];
  rows.sort((a, b) => (a.event.market < b.event.market ? -1 : a.event.market > b.event.market ? 1 : 0) || Number(a.event.timestamp) - Number(b.event.timestamp) || (BigInt(a.ingest_seq) < BigInt(b.ingest_seq) ? -1 : 1));
  return rows.map((m) => ({ ...(JSON.parse(exchangeAPayload(m)) as Record<string, unknown>), received_at: m.received_at, worker_id: m.worker_id, ingest_seq: m.ingest_seq, dedup_id: m.dedup_id }));
}

describe('first copy wins, end to end', () => {
  let t: TestClickHouse;
  let run = 0;
  beforeAll(async () => {
    t = await tempClickHouse();
  });
  afterAll(async () => {
    await t?.cleanup();
  });

  /** A fresh, migrated database in the test's engine (one engine per process). */
  async function freshDatabase(): Promise<{ ch: ClickHouse; drop(): Promise<void> }> {
    const database = `first_copy_${run++}`;
    await t.ch.client.command({ query: `CREATE DATABASE IF NOT EXISTS ${database}` });
    const ch: ClickHouse = { ...t.ch, database, table: (name) => `${database}.${name}` };
    await migrate(ch);
    return { ch, drop: () => t.ch.client.command({ query: `DROP DATABASE IF EXISTS ${database} SYNC` }).then(() => undefined) };
  }

  it('stores every distinct event once, as first received, in event-time then ingest order: once, after crashes, and after a second replay', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(frameArb, { minLength: 3, maxLength: 40 }),
        fc.integer({ min: 1, max: 2 }),
        fc.array(fc.nat({ max: 7 }), { minLength: 1, maxLength: 12 }),
        fc.array(fc.nat({ max: 7 }), { minLength: 1, maxLength: 12 }),
        fc.option(fc.nat({ max: 50 })),
        async (frames, partitions, cut1, cut2, crashAt) => {
          const arrived = arrivals(frames);
          const live = capture(arrived);
          const expected = reference(live.messages);
          const db = await freshDatabase();
          try {
            const repo = new RawEventsRepository(db.ch);
            const offsets = new Map<number, number>();
            await pass(repo, live.values, offsets, partitions, cut1, crashAt);
            expect(await repo.dump('exchange-a')).toEqual(expected);
            // A second replay of the same file: the same records again (deterministic
            // ingest_seq), later offsets, other cuts. Nothing may move or change.
            const replayed = capture(arrived);
            expect(replayed.messages).toEqual(live.messages);
            await pass(repo, replayed.values, offsets, partitions, cut2, null);
            expect(await repo.dump('exchange-a')).toEqual(expected);
          } finally {
            await db.drop();
          }
        },
      ),
      { numRuns: 20, seed: Number(process.env.FC_SEED ?? Date.now() % 2 ** 31), endOnFailure: true },
    );
  });
});

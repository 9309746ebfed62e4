/**
 * Dense exchange A asset-days for the benchmarks (summaries-run.ts, data-out.bench.ts), written the
 * way the sink writes them.
 */
import type { ExchangeAMessage, ExchangeBMessage } from '@booktape/domain';
import type { RawEventsRepository } from '@booktape/storage';

/** The dense exchange A asset-day the rollup scripts fill and read (rollup-profile.ts, rollup-read.ts). */
export const DENSE_DAY = { market: `0x${'7a'.repeat(32)}`, asset: '5550001', date: '2026-03-02', dayMs: Date.UTC(2026, 2, 2) } as const;

/** A deterministic PRNG: the same day every run. */
export function rng(seed: number) {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

/**
 * One dense asset-day as the sink stores it (batches of 50,000): `events` book events spread
 * evenly over the day, a `book` every 5,000, the rest one-level `price_change`s.
 */
export async function fillDay(repo: RawEventsRepository, market: string, asset: string, dayMs: number, events: number, seed: number, seqBase: number): Promise<void> {
  const r = rng(seed);
  const price = (base: number) => (base + Math.floor(r() * 20)) / 1000;
  const BATCH = 50_000;
  // ingest_seq unique across every day filled (seqBase < 2^20 days-tokens).
  const seq0 = BigInt(seqBase) * 2n ** 32n;
  for (let start = 0; start < events; start += BATCH) {
    const batch: { message: ExchangeAMessage; position: { partition: number; offset: string } }[] = [];
    for (let i = start; i < Math.min(events, start + BATCH); i++) {
      const ts = dayMs + Math.floor((i * 86_400_000) / events);
      const event =
        i % 5000 === 0
          ? { market, asset_id: asset, timestamp: String(ts), hash: `b${i}`, event_type: 'book', bids: Array.from({ length: 20 }, (_, k) => ({ price: String((480 - k * 3) / 1000), size: String(100 + k) })), asks: Array.from({ length: 20 }, (_, k) => ({ price: String((520 + k * 3) / 1000), size: String(90 + k) })) }
          : { market, asset_id: asset, timestamp: String(ts), hash: `p${i}`, event_type: 'price_change', changes: [{ price: String(price(r() < 0.5 ? 460 : 500)), side: r() < 0.5 ? 'BUY' : 'SELL', size: r() < 0.2 ? '0' : String(Math.floor(r() * 5000)) }] };
      batch.push({
        message: { venue: 'exchange-a', received_at: new Date(ts + 3).toISOString(), worker_id: 1, ingest_seq: String(seq0 + BigInt(i + 1)), dedup_id: event.hash, event: event as ExchangeAMessage['event'] },
        position: { partition: 0, offset: String(i) },
      });
    }
    await repo.insert('exchange-a', batch, `bench-${market}-${asset}-${dayMs}-${start}`);
  }
}

/**
 * `fillDay` with claims, as exchange A has sent since 2025-09-15: every price_change entry
 * carries its own hash (0x and 64 hex digits, the record's being its first entry's) and the
 * best bid and ask after it (of a book kept here the way the rollup rebuilds it, so the
 * claims hold).
 */
export async function fillClaimsDay(repo: RawEventsRepository, market: string, asset: string, dayMs: number, events: number, seed: number, seqBase: number): Promise<void> {
  const r = rng(seed);
  const price = (base: number) => base + Math.floor(r() * 20);
  const BATCH = 50_000;
  const seq0 = BigInt(seqBase) * 2n ** 32n;
  // Levels by price in thousandths: size > 0 only.
  const bids = new Map<number, number>();
  const asks = new Map<number, number>();
  const top = (m: Map<number, number>, best: (a: number, b: number) => number, empty: string) => {
    let b = Number.NaN;
    for (const p of m.keys()) b = b !== b ? p : best(b, p);
    return b !== b ? empty : String(b / 1000);
  };
  const hex = (i: number) => `0x${(i * 2654435761 >>> 0).toString(16).padStart(8, '0').repeat(8)}`;
  for (let start = 0; start < events; start += BATCH) {
    const batch: { message: ExchangeAMessage; position: { partition: number; offset: string } }[] = [];
    for (let i = start; i < Math.min(events, start + BATCH); i++) {
      const ts = dayMs + Math.floor((i * 86_400_000) / events);
      let event: Record<string, unknown>;
      if (i % 5000 === 0) {
        bids.clear();
        asks.clear();
        for (let k = 0; k < 20; k++) {
          bids.set(480 - k * 3, 100 + k);
          asks.set(520 + k * 3, 90 + k);
        }
        event = { market, asset_id: asset, timestamp: String(ts), hash: hex(i), event_type: 'book', bids: Array.from({ length: 20 }, (_, k) => ({ price: String((480 - k * 3) / 1000), size: String(100 + k) })), asks: Array.from({ length: 20 }, (_, k) => ({ price: String((520 + k * 3) / 1000), size: String(90 + k) })) };
      } else {
        const buy = r() < 0.5;
        const p = price(buy ? 460 : 500);
        const size = r() < 0.2 ? 0 : Math.floor(r() * 5000);
        const side = buy ? bids : asks;
        if (size === 0) side.delete(p);
        else side.set(p, size);
        const h = hex(i);
        event = {
          market, asset_id: asset, timestamp: String(ts), hash: h, event_type: 'price_change',
          changes: [{ price: String(p / 1000), side: buy ? 'BUY' : 'SELL', size: String(size), hash: h, best_bid: top(bids, Math.max, '0'), best_ask: top(asks, Math.min, '1') }],
        };
      }
      batch.push({
        message: { venue: 'exchange-a', received_at: new Date(ts + 3).toISOString(), worker_id: 1, ingest_seq: String(seq0 + BigInt(i + 1)), dedup_id: `d${i}`, event: event as unknown as ExchangeAMessage['event'] },
        position: { partition: 0, offset: String(i) },
      });
    }
    await repo.insert('exchange-a', batch, `bench-claims-${market}-${asset}-${dayMs}-${start}`);
  }
}

/** One ticker's day: a snapshot of 40 levels a side at its start, then `events - 1` one-level deltas (the book benchmarks' exchange B day). */
export async function fillTicker(repo: RawEventsRepository, ticker: string, dayMs: number, events: number): Promise<void> {
  const r = rng(9);
  const BATCH = 50_000;
  for (let start = 0; start < events; start += BATCH) {
    const batch: { message: ExchangeBMessage; position: { partition: number; offset: string } }[] = [];
    for (let i = start; i < Math.min(events, start + BATCH); i++) {
      const ts = dayMs + Math.floor((i * 86_400_000) / events);
      const common = { ticker, timestamp: new Date(ts).toISOString(), epoch_ms: ts, sid: 1, seq: i + 1 };
      const record =
        i === 0
          ? { ...common, type: 'snapshot' as const, yes: Array.from({ length: 40 }, (_, k): [string, string] => [String((10 + k) / 100), '500']), no: Array.from({ length: 40 }, (_, k): [string, string] => [String((10 + k) / 100), '500']) }
          : { ...common, type: 'delta' as const, side: r() < 0.5 ? ('yes' as const) : ('no' as const), price: String((10 + Math.floor(r() * 40)) / 100), delta: String(Math.floor(r() * 200) - 99) };
      batch.push({ message: { venue: 'exchange-b', received_at: common.timestamp, worker_id: 1, ingest_seq: String(BigInt(ts) * 2n ** 23n + BigInt(i % 1000)), dedup_id: `bench-b-${i}`, record }, position: { partition: 0, offset: String(i) } });
    }
    await repo.insert('exchange-b', batch, `bench-book-${start}`);
  }
}

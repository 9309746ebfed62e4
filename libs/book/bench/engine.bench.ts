/**
 * Book engine and bucketing benchmark:
 * `npx tsx libs/book/bench/engine.bench.ts [events] [literal|json]`
 *
 * One realistic Polymarket-style stream on one asset (0.01 tick, a snapshot of 40–80 levels
 * per side every ~20,000 events, otherwise `price_change` of one or two levels near the
 * touch, a quarter of them removals, fractional sizes) is fed to this engine and to
 * tardis-dev's `OrderBook` (RB-tree per side) in alternating rounds after two warm-up rounds,
 * each reading the best bid and ask after every update. This engine also builds the full
 * observation (exact decimal text of bid, ask, sizes, mid and spread) from the records'
 * strings; tardis-dev gets its updates pre-parsed to numbers outside the timed loop. The
 * two books are checked to agree on every top. Then the 1,000,000 observations are bucketed
 * at R = 1 s and 60 s, 1 s buckets merged to 60 s, and R = 1 s turned into 2.3 numbers.
 * Last, the rollup's cross-checks (checks.ts): the same stream with every change entry
 * carrying the venue's best_bid/best_ask after it, applied one millisecond group at a time
 * through BookChecker, against the plain engine on those same records.
 * Times are CPU time of the process (the machine is shared); a JSON line ends the output.
 */
import type { ExchangeAEvent } from '@booktape/domain';
import { OrderBook } from 'tardis-dev';
import { ExchangeABook } from '../src/book-engine.ts';
import { BookChecker } from '../src/checks.ts';
import { aggregateObservations, mergeBuckets, planBuckets, summarise, toSummaryBucket } from '../src/bucketing.ts';
import type { Observation } from '../src/observation.ts';

type BookChange = Parameters<OrderBook['update']>[0];

const EVENTS = Number(process.argv[2] ?? 1_000_000);
const LAYOUT = process.argv[3] === 'json' ? 'json' : 'literal';
const WARMUP = 2; // rounds each, not counted: both sides get their JIT settled first
const ROUNDS = 7;

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const rnd = mulberry32(20260210);
const int = (lo: number, hi: number): number => lo + Math.floor(rnd() * (hi - lo + 1));
const priceText = (cents: number): string => (cents === 100 ? '1' : cents % 10 === 0 ? `0.${cents / 10}` : `0.${String(cents).padStart(2, '0')}`);
function sizeText(): string {
  const whole = int(1, 5_000);
  const r = rnd();
  if (r < 0.5) return String(whole);
  const frac = String(int(1, 99)).padStart(2, '0').replace(/0+$/, '');
  return `${whole}.${frac}`;
}

interface Pair {
  ours: ExchangeAEvent[];
  tardis: BookChange[];
}

/**
 * Inputs in two layouts. `literal`: both sides' updates built by object literals in one loop
 * (the same footing for both). `json`: both go through JSON.stringify/parse, as stored rows
 * reach the API; V8 then internalises short strings such as sizes into the string table,
 * scattered in memory, and reading them costs a cache miss each. (Objects built with spread
 * syntax are worse still: an order of magnitude slower to read.)
 */
function generate(n: number, layout: 'literal' | 'json'): Pair {
  const ours: ExchangeAEvent[] = [];
  const tardis: BookChange[] = [];
  const stamp = new Date(0);
  let ts = Date.UTC(2026, 1, 10);
  let mid = 50; // cents: the fair price random-walks between 5 and 95
  for (let k = 0; k < n; k++) {
    ts += int(0, 90);
    if (rnd() < 0.02) mid = Math.min(95, Math.max(5, mid + (rnd() < 0.5 ? -1 : 1)));
    const timestamp = String(ts);
    if (k % 20_000 === 0) {
      const bids: { price: string; size: string }[] = [];
      const asks: { price: string; size: string }[] = [];
      for (let c = Math.max(1, mid - int(40, 80)); c < mid; c++) bids.push({ price: priceText(c), size: sizeText() });
      for (let c = Math.min(99, mid + int(40, 80)); c > mid; c--) asks.push({ price: priceText(c), size: sizeText() });
      ours.push({ market: '0xbench', asset_id: '1', timestamp, hash: `h${k}`, event_type: 'book', bids, asks });
      tardis.push({
        type: 'book_change',
        symbol: '1',
        exchange: 'bitmex',
        isSnapshot: true,
        bids: bids.map((l) => ({ price: Number(l.price), amount: Number(l.size) })),
        asks: asks.map((l) => ({ price: Number(l.price), amount: Number(l.size) })),
        timestamp: stamp,
        localTimestamp: stamp,
      });
      continue;
    }
    const changes: { price: string; side: 'BUY' | 'SELL'; size: string }[] = [];
    const count = rnd() < 0.85 ? 1 : 2;
    for (let j = 0; j < count; j++) {
      const buy = rnd() < 0.5;
      const depth = Math.floor(-Math.log(1 - rnd()) * 2); // mostly at or next to the touch
      const cents = buy ? mid - 1 - depth : mid + 1 + depth;
      if (cents < 1 || cents > 99) continue;
      changes.push({ price: priceText(cents), side: buy ? 'BUY' : 'SELL', size: rnd() < 0.25 ? '0' : sizeText() });
    }
    ours.push({ market: '0xbench', asset_id: '1', timestamp, hash: `h${k}`, event_type: 'price_change', changes });
    const lv = (side: 'BUY' | 'SELL') =>
      changes.filter((c) => c.side === side).map((c) => ({ price: Number(c.price), amount: Number(c.size) }));
    tardis.push({
      type: 'book_change',
      symbol: '1',
      exchange: 'bitmex',
      isSnapshot: false,
      bids: lv('BUY'),
      asks: lv('SELL'),
      timestamp: stamp,
      localTimestamp: stamp,
    });
  }
  if (layout === 'literal') return { ours, tardis };
  const viaJson = <T>(xs: T[]): T[] => xs.map((x) => JSON.parse(JSON.stringify(x)) as T);
  return { ours: viaJson(ours), tardis: viaJson(tardis).map((c) => ({ ...c, timestamp: stamp, localTimestamp: stamp })) };
}

// The machine this runs on is shared: CPU time of this process (all its threads, so GC
// helpers count too) is the headline; wall time is printed beside it.
interface Took {
  wallNs: number;
  cpuNs: number;
}

function start(): () => Took {
  const w = process.hrtime.bigint();
  const c = process.cpuUsage();
  return () => {
    const dc = process.cpuUsage(c);
    return { wallNs: Number(process.hrtime.bigint() - w), cpuNs: (dc.user + dc.system) * 1000 };
  };
}

function runOurs(events: ExchangeAEvent[]): Took & { check: number } {
  const book = new ExchangeABook();
  let check = 0;
  const stop = start();
  for (let k = 0; k < events.length; k++) {
    const o = book.apply(events[k]!)!;
    if (o.best_bid !== null) check++;
  }
  return { ...stop(), check };
}

function runTardis(changes: BookChange[]): Took & { check: number } {
  const book = new OrderBook();
  let check = 0;
  const stop = start();
  for (let k = 0; k < changes.length; k++) {
    book.update(changes[k]!);
    const bid = book.bestBid();
    const ask = book.bestAsk();
    if (bid !== undefined) check++;
    if (ask !== undefined) check += 0;
  }
  return { ...stop(), check };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function timed<T>(f: () => T): { ms: number; value: T } {
  const stop = start();
  const value = f();
  return { ms: stop().cpuNs / 1e6, value };
}

const gen = timed(() => generate(EVENTS, LAYOUT));
console.log(`generated ${EVENTS} events (${LAYOUT} layout) in ${gen.ms.toFixed(0)} ms`);
const { ours, tardis } = gen.value;

const oursEps: number[] = [];
const tardisEps: number[] = [];
const oursWallEps: number[] = [];
const tardisWallEps: number[] = [];
const m = (eps: number): string => (eps / 1e6).toFixed(2);
for (let round = 0; round < WARMUP; round++) {
  runOurs(ours);
  runTardis(tardis);
}
for (let round = 0; round < ROUNDS; round++) {
  const a = runOurs(ours);
  const b = runTardis(tardis);
  if (a.check !== b.check) throw new Error(`books disagree: ${a.check} vs ${b.check} observations with a bid`);
  oursEps.push(EVENTS / (a.cpuNs / 1e9));
  tardisEps.push(EVENTS / (b.cpuNs / 1e9));
  oursWallEps.push(EVENTS / (a.wallNs / 1e9));
  tardisWallEps.push(EVENTS / (b.wallNs / 1e9));
  console.log(
    `round ${round + 1}: booktape ${m(oursEps[round]!)} M events/s (wall ${m(oursWallEps[round]!)}), ` +
      `tardis-dev ${m(tardisEps[round]!)} M events/s (wall ${m(tardisWallEps[round]!)})`,
  );
}

// Both books must agree on every top (tardis-dev's numbers vs our exact text).
{
  const check = new OrderBook();
  const book = new ExchangeABook();
  for (let k = 0; k < Math.min(EVENTS, 200_000); k++) {
    check.update(tardis[k]!);
    const o = book.apply(ours[k]!)!;
    const bid = check.bestBid();
    const ask = check.bestAsk();
    if ((bid?.price ?? null) !== (o.best_bid === null ? null : Number(o.best_bid)) || (ask?.price ?? null) !== (o.best_ask === null ? null : Number(o.best_ask))) {
      throw new Error(`top differs at event ${k}`);
    }
  }
}

const observations: Observation[] = [];
{
  const book = new ExchangeABook();
  for (const ev of ours) observations.push(book.apply(ev)!);
}
const first = observations[0]!.ts;
const last = observations[observations.length - 1]!.ts;
const window = { startMs: first, endMs: last };
const r1 = timed(() => summarise(observations, planBuckets(window, 1)));
const r60 = timed(() => summarise(observations, planBuckets(window, 60)));
const fine = aggregateObservations(observations, 1);
const merged = timed(() => mergeBuckets(fine, 1, 60));
const numbers = timed(() => r1.value.map(toSummaryBucket));
console.log(
  `bucketing ${observations.length} observations over ${((last - first) / 3.6e6).toFixed(1)} h: ` +
    `R=1 s ${r1.ms.toFixed(0)} ms (${r1.value.length} buckets), R=60 s ${r60.ms.toFixed(0)} ms (${r60.value.length} buckets), ` +
    `merge ${fine.length} 1 s buckets to 60 s ${merged.ms.toFixed(0)} ms, to 2.3 numbers (R=1) ${numbers.ms.toFixed(0)} ms`,
);

// Cross-checks: true claims on every entry (the venue's top right after it), as the venue
// sends them since 2025-09; records built as literals like the rest.
const claimed: ExchangeAEvent[] = [];
{
  const book = new ExchangeABook();
  for (const ev of ours) {
    const tops: (string | null)[] = [];
    book.apply(ev, (_e, bid, ask) => void tops.push(bid, ask));
    if (ev.event_type !== 'price_change') {
      claimed.push(ev);
      continue;
    }
    const changes = ev.changes!.map((c, k) => ({
      price: c.price,
      side: c.side,
      size: c.size,
      hash: `${ev.hash}.${k}`,
      best_bid: tops[2 * k] ?? '0',
      best_ask: tops[2 * k + 1] ?? '1',
    }));
    claimed.push({ market: ev.market, asset_id: ev.asset_id, timestamp: ev.timestamp, hash: ev.hash, event_type: ev.event_type, changes });
  }
}
const groups: ExchangeAEvent[][] = [];
for (const ev of claimed) {
  const last = groups[groups.length - 1];
  if (last !== undefined && last[0]!.timestamp === ev.timestamp) last.push(ev);
  else groups.push([ev]);
}
const plainEps: number[] = [];
const checksEps: number[] = [];
for (let round = 0; round < WARMUP + 3; round++) {
  const book = new ExchangeABook();
  const stopPlain = start();
  let n = 0;
  for (let k = 0; k < claimed.length; k++) if (book.apply(claimed[k]!) !== null) n++;
  const plain = stopPlain();
  const checked = new ExchangeABook();
  const checker = BookChecker.startDay('exchange-a', 0, checked, null);
  const push = (): void => void n--;
  const stopChecks = start();
  for (let g = 0; g < groups.length; g++) checker.applyMillisecond(checked, groups[g]!, push);
  const withChecks = stopChecks();
  const c = checker.checksAt(Number(claimed[claimed.length - 1]!.timestamp));
  if (n !== 0 || c.venue_best_mismatches !== 0 || c.venue_best_checked === 0) throw new Error(`checks disagree: ${JSON.stringify({ n, ...c, spells: undefined })}`);
  if (round >= WARMUP) {
    plainEps.push(EVENTS / (plain.cpuNs / 1e9));
    checksEps.push(EVENTS / (withChecks.cpuNs / 1e9));
  }
}
console.log(`records with claims: engine ${m(median(plainEps))} M events/s, engine + cross-checks ${m(median(checksEps))} M events/s`);

const ourMedian = median(oursEps);
const tardisMedian = median(tardisEps);
console.log(
  JSON.stringify({
    events: EVENTS,
    layout: LAYOUT,
    rounds: ROUNDS,
    clock: 'process cpu time (median of rounds)',
    booktape_events_per_s: Math.round(ourMedian),
    tardis_events_per_s: Math.round(tardisMedian),
    ratio: Number((ourMedian / tardisMedian).toFixed(2)),
    booktape_wall_events_per_s: Math.round(median(oursWallEps)),
    tardis_wall_events_per_s: Math.round(median(tardisWallEps)),
    wall_ratio: Number((median(oursWallEps) / median(tardisWallEps)).toFixed(2)),
    bucketing_observations: observations.length,
    bucketing_r1_ms: Number(r1.ms.toFixed(1)),
    bucketing_r1_buckets: r1.value.length,
    bucketing_r60_ms: Number(r60.ms.toFixed(1)),
    bucketing_r60_buckets: r60.value.length,
    merge_1s_to_60s_ms: Number(merged.ms.toFixed(1)),
    to_numbers_r1_ms: Number(numbers.ms.toFixed(1)),
    claimed_engine_events_per_s: Math.round(median(plainEps)),
    claimed_checks_events_per_s: Math.round(median(checksEps)),
  }),
);

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExchangeAMessage, ExchangeBMessage } from '@booktape/domain';
import { BooktapeClient, BooktapeError, type ReplayMessage } from '@booktape/client';
import { CaptureGapsRepository, OutagesRepository, streamPoolStats } from '@booktape/storage';
import { bearer, conditionId, ingestSeq, startTestApi, type TestApi } from '../testing.ts';
import { prng, replayRefusal } from '../replay/replay.test-support.ts';

/**
 * The merged replay stream over real storage: two markets of exchange A (one outcome token
 * of a third stored, not asked for) and two tickers of exchange B (a third stored, not
 * asked for), with many records sharing milliseconds within and across the venues. The
 * expected stream is computed here from the inserted records alone: its own order rule
 * (event time, ingest_seq, exchange A first), its own books (plain maps; B's NO bids as
 * asks at 1 − price), its own snapshot instants and gap placement.
 */

const BASE = Date.parse('2026-03-01T10:00:00Z');
const MA = conditionId(0xb1);
const MB = conditionId(0xb2);
const TA1 = '5101' + '1'.repeat(60);
const TA2 = '5102' + '2'.repeat(60); // stored in MA, never asked for
const TB1 = '5201' + '3'.repeat(60);
const K1 = 'KXSTREAM-ONE';
const K2 = 'KXSTREAM-TWO';
const K3 = 'KXSTREAM-THREE'; // stored, never asked for
const FROM = BASE + 2_000;
const TO = BASE + 9_999;

/** One stored record as the test sees it: enough to rebuild what the stream must say. */
type Rec =
  | { venue: 'exchange-a'; asset: string; market: string; ts: number; seq: bigint; kind: 'book'; bids: Array<[number, number]>; asks: Array<[number, number]> }
  | { venue: 'exchange-a'; asset: string; market: string; ts: number; seq: bigint; kind: 'change'; side: 'BUY' | 'SELL'; price: number; size: number }
  | { venue: 'exchange-a'; asset: string; market: string; ts: number; seq: bigint; kind: 'trade'; price: number; size: number; side: 'BUY' | 'SELL' }
  | { venue: 'exchange-b'; ticker: string; ts: number; seq: bigint; kind: 'snapshot'; yes: Array<[number, number]>; no: Array<[number, number]> }
  | { venue: 'exchange-b'; ticker: string; ts: number; seq: bigint; kind: 'delta'; side: 'yes' | 'no'; price: number; delta: number }
  | { venue: 'exchange-b'; ticker: string; ts: number; seq: bigint; kind: 'gap' | 'ticker' }
  | { venue: 'exchange-b'; ticker: string; ts: number; seq: bigint; kind: 'trade'; price: number; count: number; taker: 'yes' | 'no' };

/** Prices are in cents here: the text the venue sends, and the canonical text the stream gives. */
const cents4 = (c: number) => (c / 100).toFixed(4); // B's "0.4200"
const cents2 = (c: number) => (c / 100).toFixed(2); // A's "0.42"
const canon = (c: number) => String(c / 100); // "0.42", "0.4"

const recs: Rec[] = [];
/** ingest_seq → the receive time it was stored with. */
const receivedOf = new Map<string, number>();
const aMessages: ExchangeAMessage[] = [];
const bMessages: ExchangeBMessage[] = [];

function build(): void {
  const r = prng(2525);
  const pick = <T,>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  // Per venue: records of one receive millisecond take consecutive frames.
  const frames = { 'exchange-a': new Map<number, number>(), 'exchange-b': new Map<number, number>() };
  const seqOf = (venue: 'exchange-a' | 'exchange-b', received: number) => {
    const f = frames[venue].get(received) ?? 0;
    frames[venue].set(received, f + 1);
    const seq = ingestSeq(received, f, 0);
    receivedOf.set(seq, received);
    return seq;
  };
  const aBook = (asset: string, market: string, ts: number) => {
    const bids: Array<[number, number]> = [[40, 100], [30, 50], [35, 7]];
    const asks: Array<[number, number]> = [[60, 80], [70, 10]];
    const seq = seqOf('exchange-a', ts + 1);
    recs.push({ venue: 'exchange-a', asset, market, ts, seq: BigInt(seq), kind: 'book', bids, asks });
    aMessages.push({ venue: 'exchange-a', received_at: new Date(ts + 1).toISOString(), worker_id: 1, ingest_seq: seq, dedup_id: `a${seq}`,
      event: { market, asset_id: asset, timestamp: String(ts), hash: `h${seq}`, event_type: 'book', bids: bids.map(([p, s]) => ({ price: cents2(p), size: String(s) })), asks: asks.map(([p, s]) => ({ price: cents2(p), size: String(s) })) } });
  };
  const bSnap = (ticker: string, ts: number) => {
    const yes: Array<[number, number]> = [[41, 120], [42, 15]];
    const no: Array<[number, number]> = [[55, 40], [50, 3]];
    const seq = seqOf('exchange-b', ts);
    recs.push({ venue: 'exchange-b', ticker, ts, seq: BigInt(seq), kind: 'snapshot', yes, no });
    bMessages.push({ venue: 'exchange-b', received_at: new Date(ts).toISOString(), worker_id: 2, ingest_seq: seq, dedup_id: `b${seq}`,
      record: { type: 'snapshot', ticker, timestamp: new Date(ts).toISOString(), epoch_ms: ts, sid: 1, seq: 1, yes: yes.map(([p, s]) => [cents4(p), `${s}.00`]), no: no.map(([p, s]) => [cents4(p), `${s}.00`]) } });
  };
  // Books before the window (the opening books come from them) and one inside it.
  for (const [asset, market] of [[TA1, MA], [TA2, MA], [TB1, MB]] as const) aBook(asset, market, BASE);
  for (const t of [K1, K2, K3]) bSnap(t, BASE + 1);
  for (let i = 0; i < 500; i++) {
    // Coarse times: many records share a millisecond, within and across the venues.
    const ts = BASE + 500 + 25 * Math.floor(r() * 380);
    if (r() < 0.5) {
      const [asset, market] = pick([[TA1, MA], [TA2, MA], [TB1, MB]] as const);
      // Received at the event time or a little later: some seqs equal B's at the same ts.
      const received = ts + (r() < 0.5 ? 0 : Math.floor(r() * 3));
      const seq = seqOf('exchange-a', received);
      const k = r();
      const common = { venue: 'exchange-a' as const, asset, market, ts, seq: BigInt(seq) };
      const lineage = { venue: 'exchange-a' as const, received_at: new Date(received).toISOString(), worker_id: 1, ingest_seq: seq, dedup_id: `a${seq}` };
      if (k < 0.8) {
        const side = r() < 0.5 ? 'BUY' : 'SELL';
        const price = side === 'BUY' ? 30 + Math.floor(r() * 20) : 51 + Math.floor(r() * 20);
        const size = r() < 0.25 ? 0 : 1 + Math.floor(r() * 300);
        recs.push({ ...common, kind: 'change', side, price, size });
        aMessages.push({ ...lineage, event: { market, asset_id: asset, timestamp: String(ts), hash: `p${seq}`, event_type: 'price_change', changes: [{ price: cents2(price), side, size: String(size) }] } });
      } else {
        const side = r() < 0.5 ? 'BUY' : 'SELL';
        const price = 40 + Math.floor(r() * 20);
        recs.push({ ...common, kind: 'trade', price, size: 12, side });
        aMessages.push({ ...lineage, event: { market, asset_id: asset, timestamp: String(ts), hash: `t${seq}`, event_type: 'last_trade_price', extra: { price: cents2(price), size: '12', side, fee_rate_bps: '0' } } });
      }
    } else {
      const ticker = pick([K1, K2, K3]);
      const seq = seqOf('exchange-b', ts);
      const common = { venue: 'exchange-b' as const, ticker, ts, seq: BigInt(seq) };
      const lineage = { venue: 'exchange-b' as const, received_at: new Date(ts).toISOString(), worker_id: 2, ingest_seq: seq, dedup_id: `b${seq}` };
      const head = { ticker, timestamp: new Date(ts).toISOString(), epoch_ms: ts, sid: 1, seq: 2 + i };
      const k = r();
      if (k < 0.8) {
        const side = r() < 0.5 ? 'yes' : 'no';
        const price = 30 + Math.floor(r() * 25);
        const delta = (r() < 0.4 ? -1 : 1) * (1 + Math.floor(r() * 60));
        recs.push({ ...common, kind: 'delta', side, price, delta });
        bMessages.push({ ...lineage, record: { ...head, type: 'delta', side, price: cents4(price), delta: `${delta}.00`, venue_ts: new Date(ts - 4).toISOString() } });
      } else if (k < 0.86) {
        recs.push({ ...common, kind: 'gap' });
        bMessages.push({ ...lineage, record: { ...head, type: 'gap', expected_seq: 1 + i } });
      } else if (k < 0.93) {
        bSnap(ticker, ts);
        frames['exchange-b'].set(ts, frames['exchange-b'].get(ts)!); // (bSnap took its own frame)
      } else if (k < 0.97) {
        const price = 20 + Math.floor(r() * 60);
        const taker = r() < 0.5 ? 'yes' : 'no';
        recs.push({ ...common, kind: 'trade', price, count: 9, taker });
        bMessages.push({ ...lineage, record: { ...head, type: 'trade', data: { market_ticker: ticker, yes_price_dollars: cents4(price), count_fp: '9.00', taker_side: taker, ts: Math.floor(ts / 1000) } } });
      } else {
        recs.push({ ...common, kind: 'ticker' });
        bMessages.push({ ...lineage, record: { ...head, type: 'ticker', data: { market_ticker: ticker, price: 44 } } });
      }
    }
  }
}

// ---- The independent expectation --------------------------------------------------------

type Side = Map<number, number>; // cents → size
interface RefBook { known: boolean; bids: Side; asks: Side }

const levels = (side: Side, ask: boolean, depth = Infinity): Array<[string, string]> =>
  [...side.entries()].sort((x, y) => (ask ? x[0] - y[0] : y[0] - x[0])).slice(0, depth).map(([p, s]) => [canon(p), String(s)]);

const GAP_CAPTURE = { from: BASE + 6_000, until: BASE + 6_500 };
const OUTAGE = { from: BASE + 7_000, until: BASE + 8_000 };

function expected(o: { markets: string[]; snapshotMs?: number; depth?: number }): Array<Record<string, unknown>> {
  const asked = new Set(o.markets);
  const name = (x: Rec) => (x.venue === 'exchange-a' ? `exchange-a:${x.asset}` : `exchange-b:${x.ticker}`);
  const ordered = recs.filter((x) => asked.has(name(x))).sort((x, y) => x.ts - y.ts || (x.seq < y.seq ? -1 : x.seq > y.seq ? 1 : 0) || (x.venue === y.venue ? 0 : x.venue === 'exchange-a' ? -1 : 1));
  const books = new Map<string, RefBook>(o.markets.map((m) => [m, { known: false, bids: new Map(), asks: new Map() }]));
  const apply = (x: Rec): Record<string, unknown> | null => {
    const b = books.get(name(x))!;
    const common = { market: name(x), venue: x.venue, ts: x.ts, ingest_seq: String(x.seq), received_at: receivedOf.get(String(x.seq))! };
    if (x.venue === 'exchange-a') {
      if (x.kind === 'book') {
        b.known = true;
        b.bids = new Map(x.bids);
        b.asks = new Map(x.asks);
        return { type: 'book', ...common, venue_ts: x.ts, known: true, bids: levels(b.bids, false), asks: levels(b.asks, true) };
      }
      if (x.kind === 'change') {
        const side = x.side === 'BUY' ? b.bids : b.asks;
        if (x.size === 0) side.delete(x.price);
        else side.set(x.price, x.size);
        return { type: 'book_change', ...common, venue_ts: x.ts, changes: [{ side: x.side === 'BUY' ? 'bid' : 'ask', price: canon(x.price), size: String(x.size) }], book_known: true };
      }
      return { type: 'trade', ...common, venue_ts: x.ts, price: cents2(x.price), size: String(x.size), side: x.side.toLowerCase() };
    }
    switch (x.kind) {
      case 'snapshot':
        b.known = true;
        b.bids = new Map(x.yes);
        b.asks = new Map(x.no.map(([p, s]) => [100 - p, s]));
        return { type: 'book', ...common, venue_ts: null, known: true, bids: levels(b.bids, false), asks: levels(b.asks, true) };
      case 'delta': {
        const [side, price] = x.side === 'yes' ? [b.bids, x.price] : [b.asks, 100 - x.price];
        let size: string | null = null;
        if (b.known) {
          const now = (side.get(price) ?? 0) + x.delta;
          if (now <= 0) side.delete(price);
          else side.set(price, now);
          size = String(Math.max(0, now));
        }
        return { type: 'book_change', ...common, venue_ts: x.ts - 4, changes: [{ side: x.side === 'yes' ? 'bid' : 'ask', price: canon(price), size }], book_known: b.known };
      }
      case 'gap':
        b.known = false;
        b.bids.clear();
        b.asks.clear();
        return { type: 'gap', ...common, venue_ts: null, kind: 'sequence_gap', from: x.ts, until: null };
      case 'trade':
        return { type: 'trade', ...common, venue_ts: Math.floor(x.ts / 1000) * 1000, price: cents4(x.price), size: '9.00', side: x.taker === 'yes' ? 'buy' : 'sell' };
      default:
        return null;
    }
  };
  // History before the window: the opening books.
  let i = 0;
  for (; i < ordered.length && ordered[i]!.ts < FROM; i++) apply(ordered[i]!);
  const out: Array<Record<string, unknown>> = o.markets.map((m) => {
    const b = books.get(m)!;
    return { type: 'book', market: m, venue: m.split(':')[0], ts: FROM, venue_ts: null, received_at: null, ingest_seq: null, opening: true, known: b.known, bids: b.known ? levels(b.bids, false) : [], asks: b.known ? levels(b.asks, true) : [] };
  });
  // Made messages: [ts, rank (gap 0, record 1, snapshot 2), message].
  const made: Array<[number, number, () => Record<string, unknown>[]]> = [];
  const made0 = { venue_ts: null, received_at: null, ingest_seq: null };
  for (const m of o.markets) {
    if (m === `exchange-b:${K1}`) made.push([GAP_CAPTURE.from, 0, () => [{ type: 'gap', market: m, venue: 'exchange-b', ts: GAP_CAPTURE.from, ...made0, kind: 'disconnect', from: GAP_CAPTURE.from, until: GAP_CAPTURE.until }]]);
    if (m.startsWith('exchange-a:')) made.push([OUTAGE.from, 0, () => [{ type: 'gap', market: m, venue: 'exchange-a', ts: OUTAGE.from, ...made0, kind: 'outage', from: OUTAGE.from, until: OUTAGE.until }]]);
  }
  if (o.snapshotMs !== undefined) {
    for (let t = Math.ceil(FROM / o.snapshotMs) * o.snapshotMs; t <= TO; t += o.snapshotMs) {
      const at = t;
      made.push([at, 2, () => o.markets.map((m) => {
        const b = books.get(m)!;
        return { type: 'snapshot', market: m, venue: m.split(':')[0], ts: at, ...made0, depth: o.depth, known: b.known, bids: b.known ? levels(b.bids, false, o.depth) : [], asks: b.known ? levels(b.asks, true, o.depth) : [] };
      })]);
    }
  }
  // Gaps in the order of the request's markets at one time (stable sort).
  made.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let j = 0;
  for (; i < ordered.length && ordered[i]!.ts <= TO; i++) {
    const x = ordered[i]!;
    for (; j < made.length && (made[j]![0] < x.ts || (made[j]![0] === x.ts && made[j]![1] === 0)); j++) out.push(...made[j]![2]());
    const m = apply(x);
    if (m) out.push(m);
  }
  for (; j < made.length; j++) out.push(...made[j]![2]());
  return out;
}

// ---- The stream ---------------------------------------------------------------------------

let t: TestApi;
let key: string;
let base: string;

beforeAll(async () => {
  t = await startTestApi({ replaysPerKey: 1 });
  key = await t.newKey();
  build();
  await t.filler.insert('exchange-a', aMessages);
  await t.filler.insert('exchange-b', bMessages);
  await new CaptureGapsRepository(t.ch).insert([
    { venue: 'exchange-b', connection_id: 'c1', started_at: new Date(GAP_CAPTURE.from).toISOString(), ended_at: new Date(GAP_CAPTURE.until).toISOString(), reason: 'disconnect', markets: [K1] },
    // Another ticker's gap: no marker on this stream.
    { venue: 'exchange-b', connection_id: 'c2', started_at: new Date(BASE + 4_000).toISOString(), ended_at: new Date(BASE + 4_100).toISOString(), reason: 'disconnect', markets: [K3] },
  ]);
  await new OutagesRepository(t.ch).add({ venue: 'exchange-a', start_ms: OUTAGE.from, end_ms: OUTAGE.until, reason: 'test outage' });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
}, 120_000);
afterAll(async () => t?.close());

const MARKETS = [`exchange-b:${K1}`, `exchange-a:${TA1}`, `exchange-b:${K2}`, `exchange-a:${TB1}`];

async function get(qs: string): Promise<{ status: number; lines: Array<Record<string, unknown>>; body: string; type: string | null }> {
  const res = await fetch(`${base}/api/v1/replay/stream?${qs}`, { headers: bearer(key) });
  const body = await res.text();
  const lines = res.status === 200 ? body.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>) : [];
  return { status: res.status, lines, body, type: res.headers.get('content-type') };
}

/** The messages without the ones the expectation leaves out (gap details: free text). */
const comparable = (ms: Array<Record<string, unknown>>) => ms.map(({ detail: _d, ...m }) => m);

describe('GET /api/v1/replay/stream', () => {
  it('merges both venues in (event time, ingest_seq, exchange A first) order with normalised books, changes, trades and gap markers', async () => {
    const qs = `markets=${MARKETS.slice(0, 2).join(',')}&markets=${MARKETS[2]}&markets=${MARKETS[3]}&from=${FROM}&to=${TO}`;
    const r = await get(qs);
    expect(r.status).toBe(200);
    expect(r.type).toMatch(/^application\/x-ndjson/);
    const [start, ...rest] = r.lines;
    const end = rest.pop()!;
    expect(start).toEqual({ type: 'start', from: FROM, to: TO, markets: MARKETS, unknown_markets: [], snapshot_interval_ms: null, depth: null });
    const want = expected({ markets: MARKETS });
    expect(comparable(rest)).toEqual(want);
    expect(end).toEqual({ type: 'end', ts: TO, messages: want.length });
    // The data holds what the test is about.
    const sameMsAcross = rest.filter((m, k) => k > 0 && m.ts === rest[k - 1]!.ts && m.venue !== rest[k - 1]!.venue && m.ingest_seq !== null);
    expect(sameMsAcross.length).toBeGreaterThan(5);
    const tie = rest.findIndex((m, k) => k > 0 && m.ingest_seq !== null && m.ts === rest[k - 1]!.ts && m.ingest_seq === rest[k - 1]!.ingest_seq && m.venue !== rest[k - 1]!.venue);
    expect(tie).toBeGreaterThan(0);
    expect(rest[tie - 1]!.venue).toBe('exchange-a');
    for (const type of ['book', 'book_change', 'trade', 'gap']) expect(rest.some((m) => m.type === type && m.ingest_seq !== null)).toBe(true);
    expect(rest.some((m) => m.type === 'book_change' && m.book_known === false)).toBe(true);
    expect(rest.filter((m) => m.type === 'gap' && m.ingest_seq === null).map((m) => m.kind).sort()).toEqual(['disconnect', 'outage', 'outage']);
    expect(rest.some((m) => String(m.market).endsWith(TA2) || String(m.market).endsWith(K3))).toBe(false);
  });

  it('adds top-N snapshots of every series at each multiple of snapshot_interval, after the records of that instant', async () => {
    const r = await get(`markets=${MARKETS.join(',')}&from=${FROM}&to=${TO}&snapshot_interval=1s&depth=2`);
    expect(r.status).toBe(200);
    const body = r.lines.slice(1, -1);
    expect(comparable(body)).toEqual(expected({ markets: MARKETS, snapshotMs: 1000, depth: 2 }));
    expect(body.filter((m) => m.type === 'snapshot')).toHaveLength(8 * MARKETS.length);
    expect(r.lines[0]).toMatchObject({ snapshot_interval_ms: 1000, depth: 2 });
  });

  it('lists an exchange A asset with no stored data as unknown and streams the rest; only unknown ones are a 404', async () => {
    const ghost = '9'.repeat(70);
    const r = await get(`markets=exchange-a:${ghost},exchange-a:${TB1}&from=${FROM}&to=${TO}`);
    expect(r.status).toBe(200);
    expect(r.lines[0]).toMatchObject({ markets: [`exchange-a:${TB1}`], unknown_markets: [`exchange-a:${ghost}`] });
    expect(comparable(r.lines.slice(1, -1))).toEqual(expected({ markets: [`exchange-a:${TB1}`] }));
    const none = await get(`markets=polymarket:${ghost}&from=${FROM}&to=${TO}`);
    expect(none.status).toBe(404);
    expect(JSON.parse(none.body).error.code).toBe('not_found');
    // An exchange B ticker with nothing stored: its opening book is unknown and nothing follows.
    const quiet = await get(`markets=kalshi:kxnothing-here&from=${FROM}&to=${TO}`);
    expect(quiet.status).toBe(200);
    expect(quiet.lines.map((m) => m.type)).toEqual(['start', 'book', 'end']);
    expect(quiet.lines[1]).toMatchObject({ market: 'exchange-b:KXNOTHING-HERE', known: false, opening: true });
  });

  it.each([
    ['a market without a venue prefix', `markets=${K1}&from=${FROM}&to=${TO}`, 'markets'],
    ['an unknown venue prefix', `markets=exchange-c:${K1}&from=${FROM}&to=${TO}`, 'markets'],
    ['an empty list', `markets=,&from=${FROM}&to=${TO}`, 'markets'],
    ['too many markets', `markets=${Array.from({ length: 101 }, (_, k) => `exchange-b:K${k}`).join(',')}&from=${FROM}&to=${TO}`, 'markets'],
    ['an exchange A id that is no token id', `markets=exchange-a:0xabc&from=${FROM}&to=${TO}`, 'markets'],
    ['from after to', `markets=exchange-b:${K1}&from=${TO}&to=${FROM}`, 'from'],
    ['a window before the data floor', `markets=exchange-a:${TA1}&from=2026-01-01&to=2026-01-02`, 'from'],
    ['a window longer than 31 days', `markets=exchange-b:${K1}&from=2026-03-01&to=2026-04-15`, 'to'],
    ['depth without snapshot_interval', `markets=exchange-b:${K1}&from=${FROM}&to=${TO}&depth=3`, 'depth'],
    ['a malformed interval', `markets=exchange-b:${K1}&from=${FROM}&to=${TO}&snapshot_interval=soon`, 'snapshot_interval'],
    ['too many snapshot instants', `markets=exchange-b:${K1}&from=2026-03-01&to=2026-03-31&snapshot_interval=1s`, 'snapshot_interval'],
  ])('answers 400 for %s', async (_what, qs, param) => {
    const r = await get(qs);
    expect(r.status, r.body).toBe(400);
    const e = JSON.parse(r.body).error;
    expect(e.param).toBe(param);
    expect(['invalid_parameter', 'missing_parameter']).toContain(e.code);
  });

  it('answers 400 without markets, and 401 without a key', async () => {
    const r = await get(`from=${FROM}&to=${TO}`);
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body).error).toMatchObject({ code: 'missing_parameter', param: 'markets' });
    const anon = await fetch(`${base}/api/v1/replay/stream?markets=exchange-b:${K1}&from=${FROM}&to=${TO}`);
    expect(anon.status).toBe(401);
  });

  it('counts the streams of a key (API_REPLAYS_PER_KEY), frees the slot when a client leaves, and bills a stream by its UTC days when read whole', async () => {
    // A client that reads the head of a large stream (86,400 snapshot instants) and stops: its stream holds the key's one slot.
    const day = Date.parse('2026-03-01T00:00:00Z');
    const held = await new Promise<{ req: http.ClientRequest; status: number }>((resolve, reject) => {
      const req = http.get(`${base}/api/v1/replay/stream?markets=${MARKETS.join(',')}&from=${day}&to=${day + 86_399_999}&snapshot_interval=1s&depth=5`, { headers: bearer(key) }, (res) => {
        res.once('data', () => {
          res.pause();
          resolve({ req, status: res.statusCode ?? 0 });
        });
      });
      req.on('error', reject);
    });
    expect(held.status).toBe(200);
    const second = await get(`markets=exchange-b:${K1}&from=${FROM}&to=${TO}`);
    expect(second.status).toBe(429);
    expect(JSON.parse(second.body).error.code).toBe('too_many_concurrent_requests');
    // One count of replays per key: the key's websocket replay is refused too, before the upgrade.
    const ws = await replayRefusal(`${base.replace(/^http/, 'ws')}/api/v1/exchange-b/replay/trade-api/ws/v2?from=${FROM}&to=${TO}`, bearer(key));
    expect(ws.status).toBe(429);
    expect(ws.body.error.code).toBe('too_many_concurrent_requests');
    // The client goes away: the slot comes back once the server sees the close.
    held.req.destroy();
    let again = await get(`markets=exchange-b:${K1}&from=2026-03-01&to=2026-03-02`);
    for (let k = 0; k < 50 && again.status === 429; k++) {
      await new Promise((r) => setTimeout(r, 50));
      again = await get(`markets=exchange-b:${K1}&from=2026-03-01&to=2026-03-02`);
    }
    expect(again.status).toBe(200);
    expect(again.lines.at(-1)!.type).toBe('end');
    // Nothing of the stream that was left holds a store session.
    expect(streamPoolStats(t.ch)?.inUse ?? 0).toBe(0);
    // The request log: the stream read whole counts its two UTC days; the one left early is a 499, not billed.
    const rows = async () => {
      const rs = await t.ch.client.query({ query: `SELECT status, units, params FROM ${t.ch.table('request_log')} WHERE endpoint = '/replay/stream' AND status IN (200, 499) ORDER BY ts`, format: 'JSONEachRow' });
      return rs.json<{ status: number; units: number; params: string }>();
    };
    let logged = await rows();
    for (let k = 0; k < 50 && !(logged.some((r) => r.status === 499) && logged.some((r) => r.status === 200 && r.units === 2)); k++) {
      await new Promise((r) => setTimeout(r, 100));
      logged = await rows();
    }
    expect(logged.some((r) => r.status === 200 && r.units === 2)).toBe(true);
    expect(logged.some((r) => r.status === 499)).toBe(true);
  });

  it('is read end to end by the SDK iterator, which stops the request when the loop stops and throws the API errors', async () => {
    const client = new BooktapeClient({ baseUrl: base, apiKey: key });
    const got: ReplayMessage[] = [];
    for await (const m of client.replayStream({ markets: MARKETS, from: FROM, to: new Date(TO), snapshotInterval: '1s', depth: 2 })) got.push(m);
    expect(got[0]).toMatchObject({ type: 'start', markets: MARKETS });
    expect(got.at(-1)).toMatchObject({ type: 'end' });
    expect(comparable(got.slice(1, -1) as unknown as Array<Record<string, unknown>>)).toEqual(expected({ markets: MARKETS, snapshotMs: 1000, depth: 2 }));
    // Stopping early ends the request.
    let n = 0;
    for await (const _m of client.replayStream({ markets: MARKETS, from: FROM, to: TO })) if (++n === 3) break;
    expect(n).toBe(3);
    // Bad input comes back as the API's error.
    const bad = await (async () => {
      try {
        for await (const _m of client.replayStream({ markets: ['exchange-c:x'], from: FROM, to: TO })) void _m;
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(bad).toBeInstanceOf(BooktapeError);
    expect((bad as BooktapeError).status).toBe(400);
  });
});

import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExchangeBMessage, ExchangeBRecord } from '@booktape/domain';
import { compareReplayedBooksB, referenceBookB } from '@booktape/book/testing';
import { streamPoolStats } from '@booktape/storage';
import { ExchangeBNormaliser } from '@booktape/venues';
import { waitFor } from '@booktape/testkit';
import { bearer, ingestSeq, startTestApi, type TestApi } from '../testing.ts';
import { connectReplay, prng, replayRefusal, type ReplaySession as Session } from './replay.test-support.ts';

/**
 * The exchange B replay websocket against stored venue frames: what a client of the live
 * trade-api v2 receives, read by the capture's own normaliser, must give books equal to the
 * reference book of the stored records at every delta, with continuous `seq` except where the
 * stored data has a gap, and a fresh snapshot for every book the client must then forget.
 */

const T1 = 'KXBTCD-26MAR01-T100000';
const T2 = 'KXBTCD-26MAR01-T101000';
const T3 = 'KXETH-26MAR01-B3500'; // another source connection: not in its gap
const T4 = 'KXLATE-26MAR01'; // stored only from BASE + 60 s on
const BASE = Date.parse('2026-03-01T10:00:00Z');
const N = 3000;
const GAP_AT = 1500;
const NULL_AT = 2000;

interface Stored {
  record: ExchangeBRecord;
  ts: number;
  seq: bigint;
}

/** Venue frames of two capture connections, as the venue sent them, with their receive times. */
function venueFrames(): Array<{ conn: 1 | 2; frame: unknown; ts: number }> {
  const r = prng(25);
  const px = () => `0.${String(10 + Math.floor(r() * 80)).padStart(2, '0')}00`;
  const book = () => Array.from({ length: 5 }, (_, i) => [`0.${String(10 + i * 7).padStart(2, '0')}00`, `${1 + Math.floor(r() * 300)}.00`]);
  const out: Array<{ conn: 1 | 2; frame: unknown; ts: number }> = [];
  const seq = { 5: 0, 6: 0, 7: 0 } as Record<number, number>;
  const on = (conn: 1 | 2, sid: number, type: string, msg: unknown, ts: number) => out.push({ conn, ts, frame: { type, sid, seq: ++seq[sid]!, msg } });
  out.push({ conn: 1, ts: BASE - 5, frame: { type: 'subscribed', id: 1, msg: { channel: 'orderbook_delta', sid: 5 } } });
  out.push({ conn: 1, ts: BASE - 5, frame: { type: 'subscribed', id: 2, msg: { channel: 'trade', sid: 7 } } });
  out.push({ conn: 2, ts: BASE - 5, frame: { type: 'subscribed', id: 1, msg: { channel: 'orderbook_delta', sid: 6 } } });
  on(1, 5, 'orderbook_snapshot', { market_ticker: T1, market_id: 'm1', yes_dollars_fp: book(), no_dollars_fp: book() }, BASE);
  on(1, 5, 'orderbook_snapshot', { market_ticker: T2, market_id: 'm2', yes_dollars_fp: book() }, BASE);
  on(2, 6, 'orderbook_snapshot', { market_ticker: T3, yes_dollars_fp: book(), no_dollars_fp: book() }, BASE);
  for (let i = 0; i < N; i++) {
    const ts = BASE + 1 + Math.floor(i / 2) * 13;
    const k = r();
    const ticker = k < 0.4 ? T1 : k < 0.7 ? T2 : T3;
    const sid = ticker === T3 ? 6 : 5;
    const conn = ticker === T3 ? 2 : 1;
    if (i === GAP_AT) seq[5]!++; // a message of sid 5 lost: the capture stores gap records for T1 and T2
    if (i === GAP_AT + 40) {
      // The capture asked for fresh snapshots; here they are.
      on(1, 5, 'orderbook_snapshot', { market_ticker: T1, yes_dollars_fp: book(), no_dollars_fp: book() }, ts);
      on(1, 5, 'orderbook_snapshot', { market_ticker: T2, yes_dollars_fp: book(), no_dollars_fp: book() }, ts);
    }
    if (i === NULL_AT) {
      // The venue's null price payload: T3's book is unknown until its next snapshot.
      on(2, 6, 'orderbook_delta', { market_ticker: T3, price_dollars: null, delta_fp: '1.00', side: 'yes', ts_ms: ts - 2 }, ts);
      continue;
    }
    if (i === NULL_AT + 30) on(2, 6, 'orderbook_snapshot', { market_ticker: T3, yes_dollars_fp: book(), no_dollars_fp: [] }, ts);
    const delta = `${r() < 0.5 ? '-' : ''}${1 + Math.floor(r() * 60)}.00`;
    on(conn, sid, 'orderbook_delta', { market_ticker: ticker, price_dollars: px(), delta_fp: delta, side: r() < 0.5 ? 'yes' : 'no', ts_ms: ts - 3 - (i % 2), ts: new Date(ts - 3 - (i % 2)).toISOString() }, ts);
    if (i % 97 === 0) on(1, 7, 'trade', { trade_id: `t${i}`, market_ticker: T1, yes_price_dollars: '0.4200', no_price_dollars: '0.5800', count_fp: '3.00', taker_side: 'yes', ts: Math.floor(ts / 1000) }, ts);
  }
  on(1, 5, 'orderbook_snapshot', { market_ticker: T4, yes_dollars_fp: book() }, BASE + 60_000);
  return out;
}

let t: TestApi;
let key: string;
let port: number;
const stored: Stored[] = [];

beforeAll(async () => {
  t = await startTestApi({ replaysPerKey: 1, dataFloors: { 'exchange-a': null, 'exchange-b': '2026-02-01' } });
  key = await t.newKey();
  const normalisers = { 1: new ExchangeBNormaliser(), 2: new ExchangeBNormaliser() };
  const messages: ExchangeBMessage[] = [];
  let lastMs = -1;
  let inMs = 0;
  for (const { conn, frame, ts } of venueFrames()) {
    inMs = ts === lastMs ? inMs + 1 : 0;
    lastMs = ts;
    const res = normalisers[conn].normalise(JSON.stringify(frame), new Date(ts));
    if (res.kind === 'invalid') throw new Error(`invalid: ${res.reason}`);
    if (res.kind !== 'records') continue;
    res.records.forEach((record, j) => {
      const seq = ingestSeq(ts, inMs, j);
      stored.push({ record, ts, seq: BigInt(seq) });
      messages.push({ venue: 'exchange-b', received_at: new Date(ts).toISOString(), worker_id: 3, ingest_seq: seq, dedup_id: `d${seq}`, record });
    });
  }
  expect(stored.filter((s) => s.record.type === 'gap').map((s) => s.record.ticker).sort()).toEqual([T1, T2]);
  for (let i = 0; i < messages.length; i += 2000) await t.filler.insert('exchange-b', messages.slice(i, i + 2000));
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  port = (t.app.server.address() as AddressInfo).port;
}, 120_000);
afterAll(async () => t?.close());

const url = (qs: string) => `ws://127.0.0.1:${port}/api/v1/exchange-b/replay/trade-api/ws/v2?${qs}`;
const connect = (u: string, headers: Record<string, string> = bearer(key)) => connectReplay(u, headers);
const refusal = (u: string, headers: Record<string, string> = bearer(key)) => replayRefusal(u, headers);

const subscribe = (id: number, tickers: string[], channels = ['orderbook_delta']) => JSON.stringify({ id, cmd: 'subscribe', params: { channels, market_tickers: tickers } });

type Msg = { type: string; id?: number; sid?: number; seq?: number; msg?: { market_ticker?: string; sid?: number; channel?: string; code?: number; msg?: string } };
const parsed = (s: Session) => s.messages.map((m) => JSON.parse(m) as Msg);

/** The client's records: the capture's normaliser over what it received (one connection). */
function clientRecords(s: Session): ExchangeBRecord[] {
  const n = new ExchangeBNormaliser();
  return s.messages.flatMap((m, i) => {
    const r = n.normalise(m, new Date(BASE + i));
    if (r.kind === 'invalid') throw new Error(`the replay sent an invalid frame: ${r.reason}: ${m.slice(0, 200)}`);
    return r.kind === 'records' ? r.records : [];
  });
}

const sourceOf = (ticker: string) => stored.filter((x) => x.record.ticker === ticker).sort((a, b) => a.ts - b.ts || (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0));

/**
 * The client's book (its records) against the reference book of the stored records, at every
 * delta it received and at the end; every delta stored once the client had the ticker's book
 * (after a gap too: the venue went on sending them) must have been received, in order.
 */
function expectBooksEqual(mine: ExchangeBRecord[], ticker: string, from: number, to: number): number {
  const src = sourceOf(ticker);
  const before = src.filter((x) => x.ts < from).map((x) => x.record);
  const win = src.filter((x) => x.ts >= from && x.ts <= to).map((x) => x.record);
  const c = compareReplayedBooksB(before, win, mine.filter((x) => x.ticker === ticker));
  expect(c.mismatch, ticker).toBeNull();
  expect(c.deltas).toBe(c.applied);
  return c.deltas;
}

describe('exchange B replay websocket', () => {
  it('sends subscribed, a snapshot per ticker at the start, every delta with continuous seq, a fresh snapshot after a gap, and closes 1000', async () => {
    const from = BASE + 3000;
    const to = BASE + 30_000;
    const s = await connect(url(`from=${from}&to=${to}`));
    s.ws.send(subscribe(7, [T1, T2.toLowerCase(), T3], ['orderbook_delta', 'trade']));
    const closed = await s.close;
    expect(closed.code).toBe(1000);
    const msgs = parsed(s);
    expect(msgs.slice(0, 2).map((m) => [m.type, m.id, m.msg?.channel])).toEqual([['subscribed', 7, 'orderbook_delta'], ['subscribed', 7, 'trade']]);
    const bookSid = msgs[0]!.msg!.sid!;
    const tradeSid = msgs[1]!.msg!.sid!;
    expect(bookSid).not.toBe(tradeSid);
    const book = msgs.filter((m) => m.sid === bookSid);
    // The opening: a snapshot per ticker, seq 1, 2, 3.
    expect(book.slice(0, 3).map((m) => [m.type, m.seq, m.msg!.market_ticker])).toEqual([['orderbook_snapshot', 1, T1], ['orderbook_snapshot', 2, T2], ['orderbook_snapshot', 3, T3]]);
    // seq continuous but for one skip, where the stored data lost a message of T1 and T2:
    // right after it the one book the client must forget though the store knows it (T3) comes fresh.
    const skips = book.flatMap((m, i) => (i > 0 && m.seq !== book[i - 1]!.seq! + 1 ? [i] : []));
    expect(skips).toHaveLength(1);
    expect(book[skips[0]!]!.seq).toBe(book[skips[0]! - 1]!.seq! + 2);
    expect([book[skips[0]!]!.type, book[skips[0]!]!.msg!.market_ticker]).toEqual(['orderbook_snapshot', T3]);
    // The trades on their own sid, seq 1, 2, …
    const trades = msgs.filter((m) => m.sid === tradeSid);
    const storedTrades = stored.filter((x) => x.record.type === 'trade' && x.ts >= from && x.ts <= to);
    expect(trades.map((m) => m.seq)).toEqual(storedTrades.map((_, i) => i + 1));
    expect(trades.map((m) => m.msg)).toEqual(storedTrades.map((x) => x.record.data));

    const mine = clientRecords(s);
    let deltas = 0;
    for (const ticker of [T1, T2, T3]) deltas += expectBooksEqual(mine, ticker, from, to);
    expect(deltas).toBeGreaterThan(1500);
  }, 60_000);

  it('shows a gap at the end of the window by the deltas after it, where no snapshot follows before the window ends', async () => {
    // The gap of T1 and T2 is at BASE + 9,751 ms; their fresh snapshots come at BASE + 10,011 ms.
    const from = BASE + 3000;
    const to = BASE + 9900;
    const storedGap = stored.find((x) => x.record.type === 'gap')!;
    expect(storedGap.ts).toBeGreaterThan(from);
    expect(stored.some((x) => x.record.type === 'snapshot' && x.ts > storedGap.ts && x.ts <= to)).toBe(false);
    const s = await connect(url(`from=${from}&to=${to}`));
    s.ws.send(subscribe(1, [T1, T2, T3]));
    expect((await s.close).code).toBe(1000);
    const book = parsed(s).filter((m) => m.sid === 1);
    const skips = book.flatMap((m, i) => (i > 0 && m.seq !== book[i - 1]!.seq! + 1 ? [i] : []));
    expect(skips).toHaveLength(1);
    const mine = clientRecords(s);
    // The capture's normaliser saw the skip: its books of T1 and T2 end unknown, as the stored ones do.
    for (const ticker of [T1, T2]) {
      const own = mine.filter((r) => r.ticker === ticker);
      const gapAt = own.findIndex((r) => r.type === 'gap');
      expect(gapAt, ticker).toBeGreaterThan(0);
      expect(own.slice(gapAt).some((r) => r.type === 'delta'), ticker).toBe(true);
      expect(referenceBookB(own).known, ticker).toBe(false);
    }
    for (const ticker of [T1, T2, T3]) expectBooksEqual(mine, ticker, from, to);
  }, 30_000);

  it('paces at a factor of real time, answers get_snapshot with the current book, and answers pings', async () => {
    const from = BASE + 10_000;
    const to = BASE + 12_000; // 2 s of records at speed 4: about 0.5 s
    const start = performance.now();
    const s = await connect(url(`from=${from}&to=${to}&speed=4`));
    const pong = new Promise<void>((r) => s.ws.once('pong', () => r()));
    s.ws.send(JSON.stringify({ id: 1, cmd: 'subscribe', params: { channels: ['orderbook_delta'], market_ticker: T1 } }));
    s.ws.ping();
    await pong;
    await waitFor('replay under way', () => s.messages.length > 20, 5000);
    s.ws.send(JSON.stringify({ id: 2, cmd: 'update_subscription', params: { sid: 1, action: 'get_snapshot', market_tickers: [T1] } }));
    expect((await s.close).code).toBe(1000);
    const elapsed = performance.now() - start;
    expect(elapsed).toBeGreaterThan(400);
    expect(elapsed).toBeLessThan(3000);
    const book = parsed(s).filter((m) => m.sid === 1);
    expect(book.map((m) => m.seq)).toEqual(book.map((_, i) => i + 1));
    // The opening snapshot and the answer.
    expect(book.filter((m) => m.type === 'orderbook_snapshot')).toHaveLength(2);
    expectBooksEqual(clientRecords(s), T1, from, to);
  }, 30_000);

  it("answers bad commands with the venue's error and stays open for a good one", async () => {
    const s = await connect(url(`from=${BASE + 1000}&to=${BASE + 2000}`));
    const answers = async (n: number) => {
      await waitFor(`${n} answers`, () => s.messages.length >= n, 5000);
      return parsed(s).slice(-1)[0]!;
    };
    s.ws.send('not json');
    expect((await answers(1)).msg?.code).toBe(1);
    s.ws.send(JSON.stringify({ id: 2, cmd: 'subscribe', params: { channels: ['fills'], market_tickers: [T1] } }));
    expect((await answers(2)).msg?.code).toBe(8);
    s.ws.send(JSON.stringify({ id: 3, cmd: 'subscribe', params: { channels: ['orderbook_delta'] } }));
    expect((await answers(3)).msg?.code).toBe(14);
    s.ws.send(subscribe(4, [T1, 'KXNOPE-99']));
    const unknown = await answers(4);
    expect([unknown.type, unknown.id, unknown.msg?.code]).toEqual(['error', 4, 16]);
    expect(unknown.msg?.msg).toMatch(/Market not found: KXNOPE-99/);
    s.ws.send(JSON.stringify({ id: 5, cmd: 'resubscribe' }));
    expect((await answers(5)).msg?.code).toBe(5);
    s.ws.send(subscribe(6, [T1]));
    expect((await s.close).code).toBe(1000);
    const msgs = parsed(s);
    expect(msgs[5]).toEqual({ type: 'subscribed', id: 6, msg: { channel: 'orderbook_delta', sid: 1 } });
    expect(msgs[6]!.type).toBe('orderbook_snapshot');
  });

  it('ends on unsubscribe, caps replays per key, and frees everything when the client leaves', async () => {
    const s = await connect(url(`from=${BASE + 3000}&to=${BASE + 30_000}&speed=1`));
    s.ws.send(subscribe(1, [T1, T2]));
    await waitFor('replay under way', () => s.messages.length > 3, 5000);
    // One replay per key here: a second is refused before the upgrade.
    const second = await refusal(url(`from=${BASE}&to=${BASE + 1000}`));
    expect([second.status, second.body.error.code]).toEqual([429, 'too_many_concurrent_requests']);
    s.ws.send(JSON.stringify({ id: 2, cmd: 'unsubscribe', params: { sids: [1, 9] } }));
    const c = await s.close;
    expect(c.code).toBe(1000);
    const answers = parsed(s).filter((m) => m.id === 2);
    expect(answers.map((m) => [m.type, m.msg?.code])).toEqual([['unsubscribed', undefined], ['error', 7]]);

    // Gone mid-replay: the slot and the store session come back at once.
    const gone = await connect(url(`from=${BASE + 3000}&to=${BASE + 30_000}&speed=1`));
    gone.ws.send(subscribe(1, [T3]));
    await waitFor('replay under way', () => gone.messages.length > 2, 5000);
    gone.ws.terminate();
    await waitFor('slot freed', async () => {
      try {
        const again = await connect(url(`from=${BASE}&to=${BASE + 1000}`));
        again.ws.send(subscribe(1, [T1]));
        return (await again.close).code === 1000;
      } catch {
        return false;
      }
    }, 10_000);
    await waitFor('no store session held', () => (streamPoolStats(t.ch)?.inUse ?? 0) === 0, 5000);
  }, 30_000);

  it('closes a window without data clearly, and refuses bad windows before the upgrade', async () => {
    // T4 is stored that day, but nothing of it is known or stored in this window.
    const s = await connect(url(`from=${BASE + 1000}&to=${BASE + 2000}`));
    s.ws.send(subscribe(1, [T4]));
    const c = await s.close;
    expect(c.code).toBe(1008);
    expect(c.reason).toMatch(/no stored data/);

    const ok = `from=${BASE}&to=${BASE + 1000}`;
    expect((await refusal(url(ok), {})).status).toBe(401);
    expect((await refusal(url(`from=2026-01-01&to=2026-01-02`))).body.error.param).toBe('from'); // before the data floor
    expect((await refusal(url(`from=${BASE + 10}&to=${BASE}`))).body.error.param).toBe('from');
    expect((await refusal(url(`from=${BASE}&to=${BASE + 10}&speed=-1`))).body.error.param).toBe('speed');
    expect((await refusal(url(`from=${BASE}`))).status).toBe(400);
    expect((await refusal(`ws://127.0.0.1:${port}/api/v1/exchange-b/replay/trade-api/ws/v1?${ok}`)).status).toBe(404);
    // The key in the URL.
    const k = await connect(url(`${ok}&api_key=${key}`), {});
    k.ws.send(subscribe(1, [T1]));
    expect((await k.close).code).toBe(1000);
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/exchange-b/replay/trade-api/ws/v2?${ok}`, headers: bearer(key) });
    expect(res.statusCode).toBe(426);
  });
});

import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExchangeAEvent, ExchangeAMessage } from '@booktape/domain';
import { referenceBookA } from '@booktape/book/testing';
import { streamPoolStats } from '@booktape/storage';
import { normaliseExchangeA } from '@booktape/venues';
import { waitFor } from '@booktape/testkit';
import { bearer, conditionId, ingestSeq, startTestApi, type TestApi } from '../testing.ts';
import { connectReplay, prng, replayRefusal } from './replay.test-support.ts';

/**
 * The exchange A replay websocket against stored venue frames: what a client of the live
 * market channel receives must, through the capture's own normaliser, be the stored records
 * of its assets in the window, in serving order, and the book it keeps (the opening book,
 * then every event) must equal the reference book of the stored records at every event.
 */

const M1 = conditionId(0xa1);
const M2 = conditionId(0xa2);
const T1 = '1111' + '1'.repeat(70);
const T2 = '2222' + '2'.repeat(70);
const T3 = '3333' + '3'.repeat(70);
const T4 = '4444' + '4'.repeat(70); // stored, never subscribed
const BASE = Date.parse('2026-03-01T10:00:00Z');

interface Stored {
  event: ExchangeAEvent;
  ts: number;
  seq: bigint;
}

/** Venue frames of two markets over `n` frames (two frames share each millisecond), as the venue sends them. */
function venueFrames(n: number): Array<{ frame: unknown; ts: number }> {
  const r = prng(25);
  const px = () => (0.01 + Math.floor(r() * 98) / 100).toFixed(2);
  const sz = () => (r() < 0.2 ? '0' : String(Math.floor(r() * 500) + 1));
  const book = (asset: string, market: string, ts: number) => ({
    event_type: 'book', asset_id: asset, market, timestamp: String(ts), hash: `h${ts}${asset.slice(0, 4)}`,
    bids: [{ price: '0.10', size: '100' }, { price: '0.40', size: '50' }], asks: [{ price: '0.90', size: '100' }, { price: '0.60', size: '50' }],
  });
  const out: Array<{ frame: unknown; ts: number }> = [];
  out.push({ ts: BASE, frame: [book(T1, M1, BASE), book(T2, M1, BASE)] });
  out.push({ ts: BASE, frame: [book(T3, M2, BASE), book(T4, M2, BASE)] });
  for (let i = 0; i < n; i++) {
    const ts = BASE + 1 + Math.floor(i / 2) * 13;
    const k = r();
    let frame: unknown;
    if (k < 0.6) {
      const entries = [{ asset_id: T1 }, { asset_id: T2 }, ...(r() < 0.3 ? [{ asset_id: T1 }] : [])].map((e, j) => ({ ...e, price: px(), size: sz(), side: r() < 0.5 ? 'BUY' : 'SELL', hash: `p${i}x${j}`, best_bid: '0.4', best_ask: '0.6' }));
      frame = { event_type: 'price_change', market: M1, timestamp: String(ts), price_changes: entries };
    } else if (k < 0.8) {
      const asset = r() < 0.5 ? T3 : T4;
      frame = { event_type: 'price_change', market: M2, timestamp: String(ts), price_changes: [{ asset_id: asset, price: px(), size: sz(), side: r() < 0.5 ? 'BUY' : 'SELL', hash: `q${i}` }] };
    } else if (k < 0.85) {
      frame = { event_type: 'price_change', asset_id: T3, market: M2, timestamp: String(ts), hash: `o${i}`, changes: [{ price: px(), side: 'BUY', size: sz() }] };
    } else if (k < 0.9) {
      frame = { event_type: 'last_trade_price', asset_id: T1, market: M1, price: px(), size: '12', side: 'BUY', fee_rate_bps: '0', timestamp: String(ts), transaction_hash: `0x${i}` };
    } else if (k < 0.92) {
      frame = { event_type: 'market_resolved', id: String(i), market: M2, assets_ids: [T3, T4], winning_asset_id: T3, winning_outcome: 'Yes', timestamp: String(ts) };
    } else if (k < 0.95) {
      frame = [book(T1, M1, ts)];
    } else {
      frame = { event_type: 'tick_size_change', asset_id: T2, market: M1, old_tick_size: '0.01', new_tick_size: '0.001', timestamp: String(ts) };
    }
    out.push({ frame, ts });
  }
  // Deep books of an asset nobody else subscribes: 300 × ~60 kB, more than the socket
  // buffers of both ends hold, for the slow-client test.
  const deep = (side: 'bids' | 'asks', base: number) => Array.from({ length: 1000 }, (_, j) => ({ price: (base + j / 100_000).toFixed(5), size: String(1000 + j) }));
  for (let i = 0; i < 300; i++) {
    const ts = BASE + 30_000 + i;
    out.push({ ts, frame: { event_type: 'book', asset_id: T4, market: M2, timestamp: String(ts), hash: `deep${i}`, bids: deep('bids', 0.1), asks: deep('asks', 0.6) } });
  }
  return out;
}

function normalise(frame: unknown): ExchangeAEvent[] {
  const res = normaliseExchangeA(typeof frame === 'string' ? frame : JSON.stringify(frame), new Date());
  if (res.kind !== 'records') throw new Error(`not records: ${JSON.stringify(res).slice(0, 300)}`);
  return res.records;
}

let t: TestApi;
let key: string;
let port: number;
const stored: Stored[] = [];

beforeAll(async () => {
  t = await startTestApi({ replaysPerKey: 1 });
  key = await t.newKey();
  const frames = venueFrames(3000);
  const messages: ExchangeAMessage[] = [];
  let lastMs = -1;
  let inMs = 0;
  for (const { frame, ts } of frames) {
    const received = ts + 3;
    inMs = received === lastMs ? inMs + 1 : 0;
    lastMs = received;
    normalise(frame).forEach((event, j) => {
      const seq = ingestSeq(received, inMs, j);
      stored.push({ event, ts: Number(event.timestamp), seq: BigInt(seq) });
      messages.push({ venue: 'exchange-a', received_at: new Date(received).toISOString(), worker_id: 3, ingest_seq: seq, dedup_id: `d${seq}`, event });
    });
  }
  for (let i = 0; i < messages.length; i += 2000) await t.filler.insert('exchange-a', messages.slice(i, i + 2000));
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  port = (t.app.server.address() as AddressInfo).port;
}, 120_000);
afterAll(async () => t?.close());

const url = (qs: string) => `ws://127.0.0.1:${port}/api/v1/exchange-a/replay/ws/market?${qs}`;
const connect = (u: string, headers: Record<string, string> = bearer(key)) => connectReplay(u, headers);
const refusal = (u: string, headers: Record<string, string> = bearer(key)) => replayRefusal(u, headers);

const subscribe = (assets: string[]) => JSON.stringify({ assets_ids: assets, type: 'market', custom_feature_enabled: true });

/** The stored records a subscription must get in [from, to], in serving order. */
function expected(assets: string[], markets: string[], from: number, to: number): ExchangeAEvent[] {
  return stored
    .filter((s) => s.ts >= from && s.ts <= to && (assets.includes(s.event.asset_id) || (s.event.asset_id === '' && markets.includes(s.event.market))))
    .sort((a, b) => a.ts - b.ts || (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0))
    .map((s) => s.event);
}

describe('exchange A replay websocket', () => {
  it('sends the books at the start, then every stored event in order, and closes 1000', async () => {
    const from = BASE + 5000;
    const to = BASE + 15000;
    const s = await connect(url(`from=${from}&to=${to}`));
    s.ws.send(subscribe([T1, T2, T3]));
    s.ws.send('PING');
    const closed = await s.close;
    expect(closed.code).toBe(1000);
    expect(s.messages).toContain('PONG');
    const frames = s.messages.filter((m) => m !== 'PONG');
    const opening = JSON.parse(frames[0]!) as Array<{ event_type: string; asset_id: string; bids: Array<{ price: string; size: string }>; asks: Array<{ price: string; size: string }> }>;
    expect(opening.map((b) => b.asset_id).sort()).toEqual([T1, T2, T3].sort());
    const received = frames.slice(1).flatMap(normalise);
    const want = expected([T1, T2, T3], [M1, M2], from, to);
    expect(want.length).toBeGreaterThan(1000);
    expect(received).toEqual(want);
    // The request log holds the payload bytes of every frame the client received, PONG too.
    const logged = (await waitFor('the replay logged', async () => {
      const rs = await t.ch.client.query({
        query: `SELECT status, bytes FROM ${t.ch.table('request_log')} WHERE endpoint LIKE '%/replay/%' AND position(params, '"from":${from}') > 0`,
        format: 'JSONEachRow',
      });
      return (await rs.json<{ status: number; bytes: string }>())[0];
    }, 10_000))!;
    expect(logged.status).toBe(200);
    expect(Number(logged.bytes)).toBe(s.messages.reduce((n, m) => n + Buffer.byteLength(m), 0));
    // A YES/NO pair of one venue frame arrives as one frame again.
    expect(frames.slice(1).some((f) => (JSON.parse(f) as { price_changes?: unknown[] }).price_changes?.length === 2)).toBe(true);

    // The client's book (the opening book, then each event) equals the reference over every
    // stored record, at every event.
    for (const asset of [T1, T2, T3]) {
      const open = opening.find((b) => b.asset_id === asset)!;
      const all = stored.filter((x) => x.event.asset_id === asset).sort((a, b) => a.ts - b.ts || (a.seq < b.seq ? -1 : 1));
      const before = all.filter((x) => x.ts < from).map((x) => x.event);
      const ref = referenceBookA(before);
      const opened = normalise([open])[0]!;
      expect(referenceBookA([opened])).toEqual(ref);
      const mine: ExchangeAEvent[] = [opened];
      const theirs = [...before];
      for (const ev of received.filter((e) => e.asset_id === asset)) {
        mine.push(ev);
        theirs.push(ev);
        if (mine.length % 7 === 0) expect(referenceBookA(mine)).toEqual(referenceBookA(theirs));
      }
      expect(referenceBookA(mine)).toEqual(referenceBookA(theirs));
    }
  }, 60_000);

  it('paces at a factor of real time', async () => {
    const from = BASE + 10_000;
    const to = BASE + 12_000; // 2 s of events at speed 4: about 0.5 s
    const start = performance.now();
    const s = await connect(url(`from=${from}&to=${to}&speed=4`));
    const arrivals: Array<{ at: number; ts: number }> = [];
    let opened = 0;
    s.ws.on('message', (d) => {
      const v = JSON.parse(d.toString()) as { timestamp?: string } | unknown[];
      if (Array.isArray(v)) opened = performance.now();
      else if (v.timestamp) arrivals.push({ at: performance.now(), ts: Number(v.timestamp) });
    });
    s.ws.send(subscribe([T1, T2]));
    expect((await s.close).code).toBe(1000);
    const elapsed = performance.now() - start;
    expect(arrivals.length).toBeGreaterThan(50);
    expect(elapsed).toBeGreaterThan(400);
    expect(elapsed).toBeLessThan(3000);
    // Each frame arrives (ts - from) / 4 after the start: the spread of (arrival - due) is
    // the pacing's jitter (client and server share this process, so the client's clock of
    // the start is itself late by whatever the process was busy with; the spread is not).
    const offsets = arrivals.map((a) => a.at - opened - (a.ts - from) / 4);
    const base = Math.min(...offsets);
    const late = offsets.map((o) => o - base).sort((x, y) => x - y);
    expect(base).toBeGreaterThan(-100);
    console.log(`speed 4: ${arrivals.length} frames, lateness p50 ${late[Math.floor(late.length / 2)]!.toFixed(2)} ms, p99 ${late[Math.floor(late.length * 0.99)]!.toFixed(2)} ms, max ${late[late.length - 1]!.toFixed(2)} ms`);
    expect(late[Math.floor(late.length / 2)]!).toBeLessThan(20);
    expect(late[Math.floor(late.length * 0.99)]!).toBeLessThan(250);
  }, 30_000);

  it('refuses before the upgrade: no key, a bad key, a bad window, data before the floor', async () => {
    const ok = `from=${BASE}&to=${BASE + 1000}`;
    expect((await refusal(url(ok), {})).status).toBe(401);
    expect((await refusal(url(ok), bearer('bt_live_nope'))).status).toBe(401);
    const missing = await refusal(url(`from=${BASE}`));
    expect(missing.status).toBe(400);
    expect(missing.body.error.param).toBe('to');
    expect((await refusal(url(`from=${BASE + 10}&to=${BASE}`))).body.error.param).toBe('from');
    expect((await refusal(url(`from=${BASE}&to=${BASE + 10}&speed=0`))).body.error.param).toBe('speed');
    expect((await refusal(url(`from=2020-01-01&to=2020-01-02`))).body.error.param).toBe('from');
    expect((await refusal(url(`from=2026-03-01&to=2026-06-01`))).body.error.param).toBe('to');
    expect((await refusal(`ws://127.0.0.1:${port}/api/v1/exchange-a/replay/ws/other?${ok}`)).status).toBe(404);
    // The key in the URL, for clients that cannot set headers.
    const s = await connect(url(`${ok}&api_key=${key}`), {});
    s.ws.send(subscribe([T1]));
    expect((await s.close).code).toBe(1000);
    // A plain GET: 426.
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/exchange-a/replay/ws/market?${ok}`, headers: bearer(key) });
    expect(res.statusCode).toBe(426);
  });

  it('answers a malformed message with INVALID OPERATION and unknown assets with a clear close', async () => {
    const s = await connect(url(`from=${BASE}&to=${BASE + 1000}`));
    s.ws.send('{"nope":1}');
    s.ws.send('not json');
    await waitFor('two answers', () => s.messages.length >= 2, 5000);
    expect(s.messages).toEqual(['INVALID OPERATION', 'INVALID OPERATION']);
    s.ws.send(subscribe(['999']));
    const c = await s.close;
    expect(c.code).toBe(1008);
    expect(c.reason).toMatch(/no stored data/);
  });

  it('caps replays per key, holds a slow client back, and frees everything when it leaves', async () => {
    const s = await connect(url(`from=${BASE + 30_000}&to=${BASE + 31_000}`));
    // The client stops reading: the server must stop at its high-water mark, not run ahead
    // (18 MB of books: the socket buffers of both ends cannot take them all).
    (s.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    s.ws.send(subscribe([T4]));
    await new Promise((r) => setTimeout(r, 1500));
    const second = await refusal(url(`from=${BASE}&to=${BASE + 1000}`));
    expect(second.status).toBe(429);
    expect(second.body.error.code).toBe('too_many_concurrent_requests');
    // Gone mid-replay: the slot and the store session come back at once.
    s.ws.terminate();
    await waitFor('slot freed', async () => {
      try {
        const again = await connect(url(`from=${BASE}&to=${BASE + 1000}`));
        again.ws.send(subscribe([T1]));
        return (await again.close).code === 1000;
      } catch {
        return false;
      }
    }, 10_000);
    // A read ahead that was running gives its session back when its query ends.
    await waitFor('no store session held', () => (streamPoolStats(t.ch)?.inUse ?? 0) === 0, 5000);
  }, 30_000);
});

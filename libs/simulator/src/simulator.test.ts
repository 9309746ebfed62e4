import { constants, generateKeyPairSync, sign } from 'node:crypto';
import { waitUntil } from '@booktape/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator, type SimulatorOptions } from './simulator.ts';
import { connectProbe, type Probe } from './ws-probe.ts';

const open: Array<Simulator | Probe> = [];
async function sim(opts: SimulatorOptions): Promise<Simulator> {
  const s = await startSimulator(opts);
  open.push(s);
  return s;
}
async function probe(url: string, headers?: Record<string, string>): Promise<Probe> {
  const p = await connectProbe(url, headers);
  open.push(p);
  return p;
}
afterEach(async () => {
  for (const x of open.splice(0).reverse()) await x.close();
});

type Level = { price: string; size: string };
type AnyEvent = Record<string, any>;

/** Every event of the exchange A frames (arrays flattened); PONG and other text skipped. */
function eventsOf(messages: string[]): AnyEvent[] {
  return messages.flatMap((m) => {
    if (!m.startsWith('[') && !m.startsWith('{')) return [];
    const v = JSON.parse(m) as AnyEvent | AnyEvent[];
    return Array.isArray(v) ? v : [v];
  });
}

const cents = (s: string): number => Math.round(Number(s) * 1000);

describe('exchange A endpoint', () => {
  it('answers a subscription with an array of consistent books, then new-shape price changes that match the rebuilt book', async () => {
    const s = await sim({ eventsPerSecond: 400, markets: { exchangeA: 2, exchangeB: 0 } });
    const m = s.markets.exchangeA[0]!;
    const p = await probe(s.urls.exchangeA);
    p.send({ assets_ids: m.tokenIds, type: 'market', custom_feature_enabled: true });
    await p.waitFor((ms) => eventsOf(ms).filter((e) => e.event_type === 'price_change').length >= 30);

    const first = JSON.parse(p.messages[0]!) as AnyEvent[];
    expect(Array.isArray(first)).toBe(true);
    expect(first.map((b) => b.asset_id).sort()).toEqual([...m.tokenIds].sort());
    const books = new Map<string, { bids: Map<number, string>; asks: Map<number, string> }>();
    for (const b of first) {
      expect(b).toMatchObject({ event_type: 'book', market: m.conditionId, tick_size: '0.01' });
      expect(b.timestamp).toMatch(/^\d{13}$/);
      expect(b.hash).toMatch(/^0x[0-9a-f]{40}$/);
      const bids = (b.bids as Level[]).map((l) => cents(l.price));
      const asks = (b.asks as Level[]).map((l) => cents(l.price));
      expect(bids).toEqual([...bids].sort((x, y) => x - y)); // ascending, best last
      expect(asks).toEqual([...asks].sort((x, y) => y - x)); // descending, best last
      for (const v of [...bids, ...asks]) {
        expect(v % 10).toBe(0);
        expect(v).toBeGreaterThanOrEqual(10);
        expect(v).toBeLessThanOrEqual(990);
      }
      expect(bids.at(-1)!).toBeLessThan(asks.at(-1)!);
      books.set(b.asset_id, {
        bids: new Map((b.bids as Level[]).map((l) => [cents(l.price), l.size])),
        asks: new Map((b.asks as Level[]).map((l) => [cents(l.price), l.size])),
      });
    }
    // YES and NO are complementary: a YES bid at p is a NO ask at 1 − p with the same size.
    const [yes, no] = [books.get(m.tokenIds[0])!, books.get(m.tokenIds[1])!];
    expect([...yes.bids].map(([p, s2]) => [1000 - p, s2]).sort()).toEqual([...no.asks].sort());
    expect([...no.bids].map(([p, s2]) => [1000 - p, s2]).sort()).toEqual([...yes.asks].sort());

    const hashes = new Set<string>();
    for (const ev of eventsOf(p.messages.slice(1))) {
      if (ev.event_type !== 'price_change') continue;
      expect(ev.market).toBe(m.conditionId);
      expect(ev.asset_id).toBeUndefined();
      expect(ev.price_changes.length % 2).toBe(0);
      for (const c of ev.price_changes as AnyEvent[]) {
        const book = books.get(c.asset_id)!;
        const side = c.side === 'BUY' ? book.bids : book.asks;
        if (c.size === '0') side.delete(cents(c.price));
        else side.set(cents(c.price), c.size);
        const bb = Math.max(0, ...book.bids.keys());
        const ba = Math.min(1000, ...book.asks.keys());
        expect([cents(c.best_bid), cents(c.best_ask)]).toEqual([bb, ba]);
        expect(hashes.has(c.hash)).toBe(false);
        hashes.add(c.hash);
      }
    }
  });

  it('answers the text PING with the text PONG', async () => {
    const s = await sim({ eventsPerSecond: 0 });
    const p = await probe(s.urls.exchangeA);
    p.send('PING');
    await p.waitFor((ms) => ms.includes('PONG'));
  });

  it('adds and removes assets on a live connection', async () => {
    const s = await sim({ eventsPerSecond: 500, markets: { exchangeA: 2, exchangeB: 0 } });
    const [m0, m1] = s.markets.exchangeA as [(typeof s.markets.exchangeA)[0], (typeof s.markets.exchangeA)[0]];
    const p = await probe(s.urls.exchangeA);
    p.send({ assets_ids: m0.tokenIds, type: 'market' });
    await p.waitFor((ms) => ms.length >= 1);
    p.send({ assets_ids: m1.tokenIds, operation: 'subscribe' });
    await p.waitFor((ms) => eventsOf(ms).some((e) => e.event_type === 'book' && e.asset_id === m1.tokenIds[0]));
    await p.waitFor((ms) => eventsOf(ms).some((e) => e.event_type === 'price_change' && e.market === m1.conditionId));
    p.send({ assets_ids: m0.tokenIds, operation: 'unsubscribe' });
    p.send('PING');
    await p.waitFor((ms) => ms.includes('PONG'));
    const mark = p.messages.length;
    await p.waitFor((ms) => eventsOf(ms.slice(mark)).filter((e) => e.market === m1.conditionId).length >= 20);
    expect(eventsOf(p.messages.slice(mark)).some((e) => e.market === m0.conditionId)).toBe(false);
  });

  it('drops, without a close frame, a connection that stops sending PING', async () => {
    const s = await sim({ eventsPerSecond: 0, idleMs: 150 });
    const p = await probe(s.urls.exchangeA);
    expect(await p.closed).toBe(1006);
  });

  it('can speak the pre-2025-09 price_change shape too', async () => {
    const s = await sim({ eventsPerSecond: 1000, legacyShapes: true, markets: { exchangeA: 1, exchangeB: 0 } });
    const m = s.markets.exchangeA[0]!;
    const p = await probe(s.urls.exchangeA);
    p.send({ assets_ids: m.tokenIds, type: 'market' });
    await p.waitFor((ms) => eventsOf(ms).some((e) => e.event_type === 'price_change' && Array.isArray(e.changes)));
    const old = eventsOf(p.messages).find((e) => Array.isArray(e.changes))!;
    expect(m.tokenIds).toContain(old.asset_id);
    expect(old.changes[0]).toEqual({ price: expect.any(String), side: expect.stringMatching(/^(BUY|SELL)$/), size: expect.any(String) });
  });

  it('sends garbage frames and drops every connection on request', async () => {
    const s = await sim({ eventsPerSecond: 0 });
    const p = await probe(s.urls.exchangeA);
    s.injectGarbage('exchange-a');
    await p.waitFor((ms) => ms.length === 1);
    expect(() => JSON.parse(p.messages[0]!)).toThrow();
    expect(s.dropConnections()).toBe(1);
    expect(await p.closed).toBe(1006);
  });
});

function bSubscribe(p: Probe, tickers: string[], id = 1): void {
  p.send({ id, cmd: 'subscribe', params: { channels: ['orderbook_delta'], market_tickers: tickers } });
}

function parsed(messages: string[]): AnyEvent[] {
  return messages.map((m) => JSON.parse(m) as AnyEvent);
}

describe('exchange B endpoint', () => {
  it('acknowledges, sends a snapshot per ticker, then deltas with contiguous seq that never drive a level negative', async () => {
    const s = await sim({ eventsPerSecond: 800, markets: { exchangeA: 0, exchangeB: 4 } });
    const tickers = s.markets.exchangeB.map((m) => m.ticker);
    const p = await probe(s.urls.exchangeB);
    bSubscribe(p, tickers);
    await p.waitFor((ms) => ms.length >= 200);
    const msgs = parsed(p.messages);
    expect(msgs[0]).toEqual({ type: 'subscribed', id: 1, msg: { channel: 'orderbook_delta', sid: expect.any(Number) } });
    const sid = msgs[0]!.msg.sid;
    const snaps = msgs.slice(1, 1 + tickers.length);
    expect(snaps.map((x) => x.type)).toEqual(tickers.map(() => 'orderbook_snapshot'));
    expect(snaps.map((x) => x.msg.market_ticker)).toEqual(tickers);
    const data = msgs.slice(1);
    expect(data.map((x) => x.seq)).toEqual(data.map((_, i) => i + 1));
    expect(data.every((x) => x.sid === sid)).toBe(true);

    const books = new Map<string, { yes: Map<string, number>; no: Map<string, number> }>();
    for (const x of data) {
      const t = x.msg.market_ticker as string;
      if (x.type === 'orderbook_snapshot') {
        expect(x.msg.market_id).toMatch(/^[0-9a-f-]{36}$/);
        const side = (l: [string, string][] | undefined): Map<string, number> => new Map((l ?? []).map(([pr, sz]) => [pr, Number(sz)]));
        books.set(t, { yes: side(x.msg.yes_dollars_fp), no: side(x.msg.no_dollars_fp) });
        for (const [pr, sz] of [...(x.msg.yes_dollars_fp ?? []), ...(x.msg.no_dollars_fp ?? [])]) {
          expect(pr).toMatch(/^0\.\d{4}$/);
          expect(sz).toMatch(/^\d+\.\d{2}$/);
        }
        continue;
      }
      expect(x.type).toBe('orderbook_delta');
      expect(x.msg.price_dollars).toMatch(/^0\.\d{4}$/);
      expect(x.msg.delta_fp).toMatch(/^-?\d+\.\d{2}$/);
      expect(typeof x.msg.ts_ms).toBe('number');
      const side = books.get(t)![x.msg.side as 'yes' | 'no'];
      const next = Math.round(((side.get(x.msg.price_dollars) ?? 0) + Number(x.msg.delta_fp)) * 100) / 100;
      expect(next).toBeGreaterThanOrEqual(0);
      if (next === 0) side.delete(x.msg.price_dollars);
      else side.set(x.msg.price_dollars, next);
      const book = books.get(t)!;
      const best = (m: Map<string, number>): number => Math.max(0, ...[...m.keys()].map(Number));
      expect(best(book.yes) + best(book.no)).toBeLessThan(1);
    }
  });

  it('sends fresh snapshots on get_snapshot, continuing the seq of the sid', async () => {
    const s = await sim({ eventsPerSecond: 100, markets: { exchangeA: 0, exchangeB: 2 } });
    const tickers = s.markets.exchangeB.map((m) => m.ticker);
    const p = await probe(s.urls.exchangeB);
    bSubscribe(p, tickers);
    await p.waitFor((ms) => ms.length >= 10);
    const sid = parsed(p.messages)[0]!.msg.sid;
    const mark = p.messages.length;
    p.send({ id: 2, cmd: 'update_subscription', params: { sid, action: 'get_snapshot', market_tickers: [tickers[1]] } });
    await p.waitFor((ms) => parsed(ms.slice(mark)).some((x) => x.type === 'orderbook_snapshot'));
    const all = parsed(p.messages).slice(1);
    expect(all.map((x) => x.seq)).toEqual(all.map((_, i) => i + 1));
    const snap = parsed(p.messages.slice(mark)).find((x) => x.type === 'orderbook_snapshot')!;
    expect(snap.msg.market_ticker).toBe(tickers[1]);
  });

  it('skips one seq on request, and reports unknown tickers and commands as errors', async () => {
    const s = await sim({ eventsPerSecond: 300, markets: { exchangeA: 0, exchangeB: 1 } });
    const p = await probe(s.urls.exchangeB);
    bSubscribe(p, ['NOPE-1'], 7);
    await p.waitFor((ms) => ms.length >= 1);
    expect(parsed(p.messages)[0]).toMatchObject({ id: 7, type: 'error', msg: { code: 16 } });
    p.send({ id: 8, cmd: 'dance' });
    await p.waitFor((ms) => ms.length >= 2);
    expect(parsed(p.messages)[1]).toMatchObject({ id: 8, type: 'error', msg: { code: 5 } });
    bSubscribe(p, [s.markets.exchangeB[0]!.ticker], 9);
    await p.waitFor((ms) => ms.length >= 6);
    expect(s.injectSeqGap()).toBe(1);
    const mark = p.messages.length;
    await p.waitFor((ms) => ms.length >= mark + 3);
    const seqs = parsed(p.messages.slice(2)).filter((x) => x.seq !== undefined).map((x) => x.seq as number);
    const jumps = seqs.slice(1).filter((q, i) => q !== seqs[i]! + 1);
    expect(jumps).toHaveLength(1);
  });

  it('pings clients from the server', async () => {
    const s = await sim({ eventsPerSecond: 0, pingIntervalMs: 30 });
    const p = await probe(s.urls.exchangeB);
    await new Promise<void>((resolve) => p.ws.once('ping', () => resolve()));
  });

  it('speaks the integer-cents shapes when asked for legacy shapes', async () => {
    const s = await sim({ eventsPerSecond: 1000, legacyShapes: true, markets: { exchangeA: 0, exchangeB: 1 } });
    const p = await probe(s.urls.exchangeB);
    bSubscribe(p, [s.markets.exchangeB[0]!.ticker]);
    await p.waitFor((ms) => parsed(ms).some((x) => x.type === 'orderbook_delta' && typeof x.msg.price === 'number' && x.msg.delta_fp === undefined));
    const d = parsed(p.messages).find((x) => x.type === 'orderbook_delta' && typeof x.msg.price === 'number')!;
    expect(Number.isInteger(d.msg.price)).toBe(true);
    expect(d.msg.ts).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  describe('with request signing', () => {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const publicPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const signed = (keyId: string, path: string, key = privateKey): Record<string, string> => {
      const ts = String(Date.now());
      const sig = sign('sha256', Buffer.from(`${ts}GET${path}`), {
        key,
        padding: constants.RSA_PKCS1_PSS_PADDING,
        saltLength: 32,
      }).toString('base64');
      return { 'KALSHI-ACCESS-KEY': keyId, 'KALSHI-ACCESS-TIMESTAMP': ts, 'KALSHI-ACCESS-SIGNATURE': sig };
    };

    it('accepts a valid RSA-PSS signature and rejects missing or wrong ones with HTTP 401', async () => {
      const s = await sim({ eventsPerSecond: 0, kalshiKeyId: 'key-1', kalshiPublicKeyPem: publicPem });
      const ok = await probe(s.urls.exchangeB, signed('key-1', '/trade-api/ws/v2'));
      expect(ok.ws.readyState).toBe(ok.ws.OPEN);
      await expect(connectProbe(s.urls.exchangeB)).rejects.toMatchObject({ status: 401 });
      await expect(connectProbe(s.urls.exchangeB, signed('key-2', '/trade-api/ws/v2'))).rejects.toMatchObject({ status: 401 });
      await expect(connectProbe(s.urls.exchangeB, signed('key-1', '/other/path'))).rejects.toMatchObject({ status: 401 });
      const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
      await expect(connectProbe(s.urls.exchangeB, signed('key-1', '/trade-api/ws/v2', other))).rejects.toMatchObject({ status: 401 });
    });
  });
});

describe('metadata (gamma) routes', () => {
  it('serves events and markets with JSON-encoded outcomes, prices and token ids matching the websocket', async () => {
    const s = await sim({ eventsPerSecond: 0, markets: { exchangeA: 5, exchangeB: 0 } });
    const get = async (path: string): Promise<{ status: number; body: any }> => {
      const res = await fetch(`${s.urls.gamma}${path}`);
      return { status: res.status, body: await res.json() };
    };
    const m = s.markets.exchangeA[0]!;

    const bySlug = await get(`/markets?slug=${m.slug}`);
    expect(bySlug.status).toBe(200);
    expect(bySlug.body).toHaveLength(1);
    const gm = bySlug.body[0];
    expect(typeof gm.clobTokenIds).toBe('string');
    expect(gm.outcomes).toBe('["Yes", "No"]');
    expect(JSON.parse(gm.clobTokenIds)).toEqual(m.tokenIds);
    const prices = JSON.parse(gm.outcomePrices).map(Number);
    expect(prices[0] + prices[1]).toBeCloseTo(1, 9);
    expect(gm).toMatchObject({ conditionId: m.conditionId, active: true, closed: false, enableOrderBook: true });

    expect((await get(`/markets/slug/${m.slug}`)).body.conditionId).toBe(m.conditionId);
    expect((await get('/markets/slug/no-such-market')).status).toBe(404);
    const ev = await get(`/events?slug=${m.eventSlug}`);
    expect(ev.body).toHaveLength(1);
    expect(ev.body[0].markets.map((x: any) => x.conditionId)).toContain(m.conditionId);
    expect((await get(`/events/slug/${m.eventSlug}`)).body.slug).toBe(m.eventSlug);
    expect((await get('/events/slug/nope')).status).toBe(404);
    expect((await get(`/markets?condition_ids=${m.conditionId}`)).body).toHaveLength(1);

    const page1 = await get('/markets?active=true&closed=false&limit=3&offset=0');
    const page2 = await get('/markets?active=true&closed=false&limit=3&offset=3');
    expect(page1.body).toHaveLength(3);
    expect(page2.body).toHaveLength(2);
    const all = [...page1.body, ...page2.body].map((x: any) => x.conditionId);
    expect(all).toEqual(s.markets.exchangeA.map((x) => x.conditionId));

    // The tokens the metadata names are the ones the websocket serves.
    const p = await probe(s.urls.exchangeA);
    p.send({ assets_ids: JSON.parse(gm.clobTokenIds), type: 'market' });
    await p.waitFor((ms) => ms.length >= 1);
    expect(JSON.parse(p.messages[0]!)).toHaveLength(2);
  });
});

describe('simulator', () => {
  it('is deterministic from its seed', async () => {
    const firstBooks = async (seed: number): Promise<unknown> => {
      const s = await sim({ seed, eventsPerSecond: 0, markets: { exchangeA: 3, exchangeB: 2 } });
      const p = await probe(s.urls.exchangeA);
      p.send({ assets_ids: s.markets.exchangeA.flatMap((m) => m.tokenIds), type: 'market' });
      await p.waitFor((ms) => ms.length >= 1);
      const books = (JSON.parse(p.messages[0]!) as AnyEvent[]).map(({ timestamp: _t, ...rest }) => rest);
      return { markets: s.markets, books };
    };
    const a = await firstBooks(7);
    expect(await firstBooks(7)).toEqual(a);
    expect(await firstBooks(8)).not.toEqual(a);
  });

  it("keeps a market's event sequence independent of other subscriptions", async () => {
    const sequence = async (extraSubscriber: boolean): Promise<unknown[]> => {
      const s = await sim({ seed: 11, eventsPerSecond: 2000, markets: { exchangeA: 1, exchangeB: 0 } });
      const tokens = s.markets.exchangeA[0]!.tokenIds;
      const p = await probe(s.urls.exchangeA);
      p.send({ assets_ids: tokens, type: 'market' });
      if (extraSubscriber) {
        const q = await probe(s.urls.exchangeA);
        for (let i = 0; i < 3; i++) q.send({ assets_ids: [tokens[i % 2]!], operation: 'subscribe' });
      }
      await p.waitFor((ms) => eventsOf(ms).length >= 60);
      return eventsOf(p.messages)
        .slice(2, 60)
        .map(({ timestamp: _t, ...rest }) => rest);
    };
    expect(await sequence(true)).toEqual(await sequence(false));
  });

  it('follows the configured rate and can change it', async () => {
    const s = await sim({ eventsPerSecond: 2000, markets: { exchangeA: 2, exchangeB: 2 } });
    const a = await probe(s.urls.exchangeA);
    a.send({ assets_ids: s.markets.exchangeA.flatMap((m) => m.tokenIds), type: 'market' });
    const b = await probe(s.urls.exchangeB);
    bSubscribe(b, s.markets.exchangeB.map((m) => m.ticker));
    await waitUntil(() => s.stats().eventsGenerated >= 1000, 5000, 'events generated');
    const st = s.stats();
    expect(st.exchangeA.events).toBeGreaterThan(100);
    expect(st.exchangeB.events).toBeGreaterThan(100);
    expect(st.exchangeA.connections).toBe(1);
    s.setRate(0);
    const frozen = s.stats().eventsGenerated;
    await new Promise((r) => setTimeout(r, 50));
    expect(s.stats().eventsGenerated).toBe(frozen);
    expect(() => s.setRate(-1)).toThrow(RangeError);
  });
});

import { generateKeyPairSync } from 'node:crypto';
import { startSimulator, type Simulator } from '@booktape/simulator';
import { waitUntil } from '@booktape/testkit';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket as ServerSocket } from 'ws';
import type { ConnectionEvent } from './feed.base.ts';
import { ExchangeBCapture, ExchangeBFeed, type ExchangeBFeedOptions } from './exchange-b.feed.ts';
import { loadKalshiPrivateKey } from './kalshi-auth.ts';
import { collector, recordingLogger } from './test-helpers.ts';

const cleanup: Array<{ stop?: () => Promise<void>; close?: () => Promise<void> }> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await (c.stop?.() ?? c.close?.());
});

const FAST = { backoff: { initialMs: 10, maxMs: 50 }, random: () => 0.5 };
const KEY_ID = 'test-key-id';
let privatePem = '';
let publicPem = '';

beforeAll(() => {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  privatePem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  publicPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
});

async function signedSimulator(opts: Parameters<typeof startSimulator>[0] = {}): Promise<Simulator> {
  const s = await startSimulator({ kalshiKeyId: KEY_ID, kalshiPublicKeyPem: publicPem, ...opts });
  cleanup.push(s);
  return s;
}

/** A started feed 'b-0' signing with the test key, with fast back-off; `c` collects what it emits. */
function startFeed(url: string, tickers: string[], more: Partial<ExchangeBFeedOptions> = {}): { feed: ExchangeBFeed; c: ReturnType<typeof collector> } {
  const c = collector();
  const feed = new ExchangeBFeed({
    id: 'b-0',
    url,
    tickers,
    credentials: { keyId: KEY_ID, privateKey: loadKalshiPrivateKey(privatePem) },
    logger: recordingLogger(),
    ...c,
    ...FAST,
    ...more,
  });
  cleanup.push(feed);
  feed.start();
  return { feed, c };
}

type Msg = { type: string; sid?: number; seq?: number; msg?: { market_ticker?: string; sid?: number } };
const parse = (text: string): Msg => JSON.parse(text) as Msg;

describe('ExchangeBFeed against the simulator', () => {
  it('signs the handshake, subscribes and checks seq; on a seq gap asks for snapshots and records the gap', async () => {
    const sim = await signedSimulator({ eventsPerSecond: 300, markets: { exchangeA: 0, exchangeB: 3 } });
    const tickers = sim.markets.exchangeB.map((m) => m.ticker);
    const log = recordingLogger();
    const { feed, c } = startFeed(sim.urls.exchangeB, tickers, { logger: log });
    await waitUntil(() => c.frames.length >= 20, 5000, 'frames');
    const msgs = c.frames.map((f) => parse(f.text));
    expect(msgs[0]!.type).toBe('subscribed');
    expect(msgs.slice(1, 4).map((m) => m.msg?.market_ticker)).toEqual(tickers);
    expect(c.states).toContain('subscribed');
    expect(feed.seqStats()).toEqual({ seqGaps: 0, snapshotRequests: 0 });
    expect(feed.stats().dataFramesReceived).toBe(c.frames.length - 1); // 'subscribed' is control

    const mark = c.frames.length;
    expect(sim.injectSeqGap()).toBe(1);
    await waitUntil(() => c.gaps.length >= 2, 5000, 'seq gap opened and closed');
    expect(feed.seqStats()).toEqual({ seqGaps: 1, snapshotRequests: 1 });
    const [opened, closed] = c.gaps as [(typeof c.gaps)[0], (typeof c.gaps)[0]];
    expect(opened).toMatchObject({ venue: 'exchange-b', connection_id: 'b-0#1', reason: 'seq gap', ended_at: null, markets: tickers });
    expect(closed).toMatchObject({ reason: 'seq gap', started_at: opened.started_at });
    expect(closed.ended_at).not.toBeNull();
    // The fresh snapshots came after the skipped seq, on the same sid, one per ticker.
    const after = c.frames.slice(mark).map((f) => parse(f.text));
    const snaps = after.filter((m) => m.type === 'orderbook_snapshot');
    expect(snaps.map((m) => m.msg?.market_ticker).sort()).toEqual([...tickers].sort());
    expect(log.lines.some((l) => l.level === 'warn' && /seq gap/.test(l.msg ?? ''))).toBe(true);
    expect(feed.stats().gapsRecorded).toBe(0); // connection gaps only; none here
  });

  it('reconnects after a drop with a new sid, restarts seq and closes the connection gap once subscribed', async () => {
    const sim = await signedSimulator({ eventsPerSecond: 200, markets: { exchangeA: 0, exchangeB: 2 } });
    const { feed, c } = startFeed(sim.urls.exchangeB, sim.markets.exchangeB.map((m) => m.ticker.toLowerCase()));
    await waitUntil(() => c.frames.length >= 5, 5000, 'frames');
    sim.dropConnections('exchange-b');
    await waitUntil(() => c.gaps.length >= 2, 5000, 'gap closed');
    expect(c.gaps[0]).toMatchObject({ venue: 'exchange-b', connection_id: 'b-0#1', ended_at: null });
    expect(c.gaps[1]!.ended_at).not.toBeNull();
    await waitUntil(() => c.frames.filter((f) => f.connectionId === 'b-0#2').length >= 5, 5000, 'frames after reconnect');
    const second = c.frames.filter((f) => f.connectionId === 'b-0#2').map((f) => parse(f.text));
    const firstSid = parse(c.frames[0]!.text).msg?.sid;
    expect(second[0]).toMatchObject({ type: 'subscribed' });
    expect(typeof firstSid).toBe('number');
    expect(second[0]!.msg?.sid).not.toBe(firstSid);
    expect(second[1]).toMatchObject({ type: 'orderbook_snapshot', seq: 1 });
    expect(feed.seqStats().seqGaps).toBe(0);
  });

  it('keeps retrying with back-off when the venue refuses the signature', async () => {
    const sim = await signedSimulator({ eventsPerSecond: 0 });
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const log = recordingLogger();
    const { feed, c } = startFeed(sim.urls.exchangeB, ['X'], { credentials: { keyId: KEY_ID, privateKey: other }, logger: log });
    await waitUntil(() => feed.stats().reconnects >= 2, 5000, 'retries');
    expect(log.lines.some((l) => l.level === 'error' && (l.obj as { status?: number }).status === 401)).toBe(true);
    expect(c.frames).toEqual([]);
    expect(c.gaps).toEqual([]);
    expect(sim.stats().exchangeB.connectionsTotal).toBe(0);
  });
});

describe('ExchangeBCapture', () => {
  it('stays off, and says so, without credentials', async () => {
    const sim = await startSimulator({ eventsPerSecond: 0 });
    cleanup.push(sim);
    const log = recordingLogger();
    const c = collector();
    const cap = new ExchangeBCapture({ url: sim.urls.exchangeB, tickers: ['KXSIM-26DEC31-T100'], logger: log, ...c });
    cleanup.push(cap);
    cap.start();
    expect(cap.enabled).toBe(false);
    expect(cap.feeds).toEqual([]);
    expect(c.states).toEqual(['off']);
    expect(log.lines.some((l) => /exchange B capture is off/.test(l.msg ?? ''))).toBe(true);
    expect(cap.stats()).toMatchObject({ venue: 'exchange-b', enabled: false, connections: 0 });
    await new Promise((r) => setTimeout(r, 30));
    expect(sim.stats().exchangeB.connectionsTotal).toBe(0);
  });

  it('stays off with an unusable private key instead of crashing', () => {
    const cap = new ExchangeBCapture({ url: 'ws://127.0.0.1:9/x', tickers: ['A'], keyId: 'k', privateKeyPem: 'not a key', logger: recordingLogger(), onFrame: () => undefined });
    expect(cap.enabled).toBe(false);
    expect(cap.offReason).toMatch(/not a usable RSA PEM key/);
  });

  it('captures with credentials (PEM with escaped newlines, as env variables carry it)', async () => {
    const sim = await signedSimulator({ eventsPerSecond: 100, markets: { exchangeA: 0, exchangeB: 2 } });
    const c = collector();
    const cap = new ExchangeBCapture({
      url: sim.urls.exchangeB,
      tickers: sim.markets.exchangeB.map((m) => m.ticker),
      keyId: KEY_ID,
      privateKeyPem: privatePem.replace(/\n/g, '\\n'),
      logger: recordingLogger(),
      ...c,
      feed: FAST,
    });
    cleanup.push(cap);
    cap.start();
    await waitUntil(() => c.frames.length >= 3, 5000, 'subscribed and snapshots');
    expect(cap.stats()).toMatchObject({ enabled: true, connections: 1, connected: 1, markets: 2 });
  });
});

/**
 * A scripted venue: answers the subscribe command with the given frames (sid 1), as the real
 * venue sends them (docs/rules/venue-frames.md, "Seen in real recordings"), and records commands.
 */
async function scriptedVenue(frames: (id: number) => object[]): Promise<{ url: string; commands: Record<string, unknown>[]; sockets: ServerSocket[]; close: () => Promise<void> }> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const commands: Record<string, unknown>[] = [];
  const sockets: ServerSocket[] = [];
  wss.on('connection', (ws) => {
    sockets.push(ws);
    ws.on('message', (data) => {
      const cmd = JSON.parse(String(data)) as Record<string, unknown>;
      commands.push(cmd);
      if (cmd['cmd'] === 'subscribe') for (const f of frames(cmd['id'] as number)) ws.send(JSON.stringify(f));
    });
  });
  const port = (wss.address() as { port: number }).port;
  return {
    url: `ws://127.0.0.1:${port}/trade-api/ws/v2`,
    commands,
    sockets,
    close: () =>
      new Promise<void>((r) => {
        for (const ws of wss.clients) ws.terminate();
        wss.close(() => r());
      }),
  };
}

describe('ExchangeBFeed seq tracking on the venue\'s real shapes', () => {
  const T1 = 'KXBTCD-26FEB14-T100000';
  const T2 = 'KXBTCD-26FEB14-T101000';
  const snap = (seq: number, ticker: string) => ({ type: 'orderbook_snapshot', sid: 1, seq, msg: { market_ticker: ticker, market_id: '' } });
  const delta = (seq: number, ticker: string) => ({
    type: 'orderbook_delta',
    sid: 1,
    seq,
    msg: { market_ticker: ticker, price_dollars: '0.4200', delta_fp: '5.00', side: 'yes', ts: '2026-02-14T14:15:11.73425Z', ts_ms: 1771078511734 },
  });

  it('counts ok acknowledgements, unsubscribed, ticker and trade messages: no false gap, no snapshot request', async () => {
    const venue = await scriptedVenue((id) => [
      { type: 'subscribed', id, msg: { channel: 'orderbook_delta', sid: 1 } },
      snap(1, T1),
      delta(2, T1),
      { type: 'ok', id: 2, sid: 1, seq: 3, msg: { market_tickers: [T2] } },
      snap(4, T2), // a ticker added to the running subscription: its snapshot at the running seq
      delta(5, T2),
      { type: 'ticker', sid: 1, seq: 6, msg: { market_ticker: T1, yes_bid_dollars: '0.42', ts: 1771078511, ts_ms: 1771078511734 } },
      { type: 'trade', sid: 1, seq: 7, msg: { market_ticker: T1, yes_price_dollars: '0.42', count_fp: '1.00', taker_side: 'yes', ts: 1771078511 } },
      delta(8, T1),
    ]);
    cleanup.push(venue);
    const { feed, c } = startFeed(venue.url, [T1]);
    await waitUntil(() => c.frames.length >= 9, 5000, 'frames');
    expect(feed.seqStats()).toEqual({ seqGaps: 0, snapshotRequests: 0 });
    expect(c.gaps).toEqual([]);
    expect(venue.commands.map((x) => x['cmd'])).toEqual(['subscribe']);
  });

  it('still sees a real gap, and does not take the acknowledgement of its own snapshot request for another one', async () => {
    const venue = await scriptedVenue((id) => [
      { type: 'subscribed', id, msg: { channel: 'orderbook_delta', sid: 1 } },
      snap(1, T1),
      delta(3, T1), // seq 2 lost
    ]);
    cleanup.push(venue);
    const { feed, c } = startFeed(venue.url, [T1]);
    await waitUntil(() => venue.commands.length >= 2, 5000, 'snapshot request');
    expect(venue.commands[1]).toMatchObject({ cmd: 'update_subscription', params: { sid: 1, action: 'get_snapshot' } });
    const ws = venue.sockets[0]!;
    ws.send(JSON.stringify({ type: 'ok', id: venue.commands[1]!['id'], sid: 1, seq: 4, msg: { market_tickers: [T1] } }));
    ws.send(JSON.stringify(snap(5, T1)));
    await waitUntil(() => c.gaps.length >= 2, 5000, 'gap closed');
    expect(feed.seqStats()).toEqual({ seqGaps: 1, snapshotRequests: 1 });
    expect(c.gaps[1]!.ended_at).not.toBeNull();
  });

  it('reports connect and disconnect with the connection id and the reason', async () => {
    const venue = await scriptedVenue((id) => [{ type: 'subscribed', id, msg: { channel: 'orderbook_delta', sid: 1 } }, snap(1, T1)]);
    cleanup.push(venue);
    const events: ConnectionEvent[] = [];
    const { feed, c } = startFeed(venue.url, [T1], { onConnection: (e) => events.push(e) });
    await waitUntil(() => c.frames.length >= 2, 5000, 'frames');
    feed.reconnectNow('operator asked');
    await waitUntil(() => events.length >= 3, 5000, 'reconnected');
    await feed.stop();
    expect(events.map((e) => [e.kind, e.connectionId, e.reason])).toEqual([
      ['connect', 'b-0#1', undefined],
      ['disconnect', 'b-0#1', 'operator asked'],
      ['connect', 'b-0#2', undefined],
      ['disconnect', 'b-0#2', 'capture stopping'],
    ]);
    expect(events.every((e) => e.venue === 'exchange-b' && e.feedId === 'b-0')).toBe(true);
  });
});

import { startSimulator, type Simulator } from '@booktape/simulator';
import { waitUntil } from '@booktape/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { ExchangeACapture, ExchangeAFeed, type ExchangeAFeedOptions } from './exchange-a.feed.ts';
import { backoffDelay, DEFAULT_BACKOFF } from './feed.base.ts';
import { spreadTokens } from './spread.ts';
import { collector, recordingLogger } from './test-helpers.ts';

const cleanup: Array<{ stop?: () => Promise<void>; close?: () => Promise<void> }> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await (c.stop?.() ?? c.close?.());
});

async function simulator(opts: Parameters<typeof startSimulator>[0]): Promise<Simulator> {
  const s = await startSimulator(opts);
  cleanup.push(s);
  return s;
}

/** Fast timers so reconnect tests take milliseconds. */
const FAST = { backoff: { initialMs: 10, maxMs: 50 }, random: () => 0.5 };

/** A started feed 'a-0' with fast back-off; `c` collects what it emits. */
function startFeed(url: string, tokens: string[], more: Partial<ExchangeAFeedOptions> = {}): { feed: ExchangeAFeed; c: ReturnType<typeof collector> } {
  const c = collector();
  const feed = new ExchangeAFeed({ id: 'a-0', url, tokens, logger: recordingLogger(), ...c, ...FAST, ...more });
  cleanup.push(feed);
  feed.start();
  return { feed, c };
}

function eventsIn(text: string): Array<Record<string, unknown>> {
  if (!text.startsWith('[') && !text.startsWith('{')) return [];
  const v = JSON.parse(text) as Record<string, unknown> | Array<Record<string, unknown>>;
  return Array.isArray(v) ? v : [v];
}

describe('backoffDelay', () => {
  it('grows exponentially from the initial delay and is capped', () => {
    const noJitter = { ...DEFAULT_BACKOFF, jitter: 0 };
    expect([0, 1, 2, 3].map((a) => backoffDelay(a, noJitter))).toEqual([250, 500, 1000, 2000]);
    expect(backoffDelay(7, noJitter)).toBe(30_000);
    expect(backoffDelay(50, noJitter)).toBe(30_000);
    expect(backoffDelay(5000, noJitter)).toBe(30_000); // 2^5000 overflows to Infinity: still the cap
  });

  it('keeps the jittered delay within [cap × (1 − jitter), cap]', () => {
    for (let attempt = 0; attempt < 20; attempt++) {
      const cap = Math.min(30_000, 250 * 2 ** attempt);
      expect(backoffDelay(attempt, DEFAULT_BACKOFF, () => 0)).toBe(cap);
      expect(backoffDelay(attempt, DEFAULT_BACKOFF, () => 0.999999)).toBeGreaterThanOrEqual(Math.floor(cap * 0.5));
      expect(backoffDelay(attempt, DEFAULT_BACKOFF, Math.random)).toBeLessThanOrEqual(30_000);
    }
  });
});

describe('spreadTokens', () => {
  it('spreads tokens over balanced connections of at most the maximum, keeping pairs together', () => {
    const tokens = Array.from({ length: 10 }, (_, i) => `t${i}`);
    expect(spreadTokens(tokens, 4)).toEqual([['t0', 't1', 't2', 't3'], ['t4', 't5', 't6', 't7'], ['t8', 't9']]);
    expect(spreadTokens(tokens, 200)).toEqual([tokens]);
    expect(spreadTokens([...tokens, 't0'], 6).map((g) => g.length)).toEqual([6, 4]);
    expect(spreadTokens([], 5)).toEqual([]);
    expect(() => spreadTokens(tokens, 0)).toThrow(RangeError);
  });
});

describe('ExchangeAFeed against the simulator', () => {
  it('subscribes, receives the books first and then events, forwarding every frame', async () => {
    const sim = await simulator({ eventsPerSecond: 300, markets: { exchangeA: 2, exchangeB: 0 } });
    const tokens = sim.markets.exchangeA.flatMap((m) => m.tokenIds);
    const { feed, c } = startFeed(sim.urls.exchangeA, tokens);
    await waitUntil(() => c.frames.length >= 20, 5000, '20 frames');
    const books = eventsIn(c.frames[0]!.text);
    expect(books.map((b) => b.event_type)).toEqual(['book', 'book', 'book', 'book']);
    expect(books.map((b) => b.asset_id).sort()).toEqual([...tokens].sort());
    expect(c.frames[0]).toMatchObject({ venue: 'exchange-a', connectionId: 'a-0#1' });
    expect(c.frames[0]!.receivedAt).toBeInstanceOf(Date);
    expect(c.states.slice(0, 3)).toEqual(['connecting', 'open', 'subscribed']);
    expect(feed.stats()).toMatchObject({ connected: true, connections: 1, reconnects: 0, state: 'subscribed' });
    expect(feed.stats().dataFramesReceived).toBe(c.frames.length);
  });

  it('sends PING, counts PONG as a frame but not as market data', async () => {
    const sim = await simulator({ eventsPerSecond: 0, markets: { exchangeA: 1, exchangeB: 0 } });
    const { feed, c } = startFeed(sim.urls.exchangeA, sim.markets.exchangeA[0]!.tokenIds, { pingIntervalMs: 20 });
    await waitUntil(() => c.frames.filter((f) => f.text === 'PONG').length >= 3, 5000, 'three PONGs');
    const st = feed.stats();
    expect(st.dataFramesReceived).toBe(1); // the book array only
    expect(st.framesReceived).toBe(c.frames.length);
  });

  it('after the venue drops it: reconnects, re-subscribes, gets fresh books and records a closed gap', async () => {
    const sim = await simulator({ eventsPerSecond: 200, markets: { exchangeA: 1, exchangeB: 0 } });
    const tokens = sim.markets.exchangeA[0]!.tokenIds;
    const { feed, c } = startFeed(sim.urls.exchangeA, tokens);
    await waitUntil(() => c.frames.length >= 5, 5000, 'first frames');
    const before = Date.now();
    expect(c.gaps).toEqual([]);
    expect(sim.dropConnections()).toBe(1);
    await waitUntil(() => c.gaps.length >= 2, 5000, 'gap opened and closed');

    const [opened, closed] = c.gaps as [(typeof c.gaps)[0], (typeof c.gaps)[0]];
    expect(opened).toMatchObject({ venue: 'exchange-a', connection_id: 'a-0#1', ended_at: null, markets: tokens });
    expect(opened.reason).toMatch(/closed by venue \(code 1006\)|error: /);
    expect(closed).toMatchObject({ connection_id: 'a-0#1', started_at: opened.started_at });
    expect(Date.parse(opened.started_at)).toBeLessThanOrEqual(before + 1);
    expect(Date.parse(closed.ended_at!)).toBeGreaterThanOrEqual(Date.parse(opened.started_at));

    await waitUntil(() => c.frames.some((f) => f.connectionId === 'a-0#2'), 5000, 'frames on the new connection');
    const fresh = c.frames.find((f) => f.connectionId === 'a-0#2')!;
    expect(eventsIn(fresh.text).map((e) => e.event_type)).toEqual(['book', 'book']);
    expect(feed.stats()).toMatchObject({ connections: 2, reconnects: 1, gapOpen: false, gapsRecorded: 1 });
    expect(sim.stats().exchangeA.connectionsTotal).toBe(2);
  });

  it('terminates and reconnects a connection that goes silent for idleMs', async () => {
    const sim = await simulator({ eventsPerSecond: 100, markets: { exchangeA: 1, exchangeB: 0 } });
    const { feed, c } = startFeed(sim.urls.exchangeA, sim.markets.exchangeA[0]!.tokenIds, { idleMs: 150, pingIntervalMs: 50 });
    await waitUntil(() => c.frames.length >= 2, 5000, 'first frames');
    sim.stall(true); // half-open link: nothing comes back, not even PONG
    await waitUntil(() => c.gaps.length >= 1, 5000, 'idle gap');
    expect(c.gaps[0]!.reason).toBe('idle timeout');
    sim.stall(false);
    await waitUntil(() => c.gaps.length >= 2, 5000, 'gap closed');
    expect(c.gaps[1]!.ended_at).not.toBeNull();
    expect(feed.stats().reconnects).toBeGreaterThanOrEqual(1);
  });

  it('keeps retrying with back-off while the venue is unreachable, without recording a gap', async () => {
    const sim = await simulator({ eventsPerSecond: 0 });
    const url = sim.urls.exchangeA;
    await sim.close(); // nothing listens there any more
    const log = recordingLogger();
    const { feed, c } = startFeed(url, ['1'], { logger: log });
    await waitUntil(() => feed.stats().reconnects >= 3, 5000, 'three retries');
    expect(c.gaps).toEqual([]);
    expect(log.lines.some((l) => l.level === 'warn' && l.msg === 'websocket error')).toBe(true);
  });

  it('stops gracefully and idempotently, cancelling timers', async () => {
    const sim = await simulator({ eventsPerSecond: 100, markets: { exchangeA: 1, exchangeB: 0 } });
    const c = collector();
    const feed = new ExchangeAFeed({ id: 'a-0', url: sim.urls.exchangeA, tokens: sim.markets.exchangeA[0]!.tokenIds, logger: recordingLogger(), ...c, ...FAST });
    feed.start();
    await waitUntil(() => c.frames.length >= 1, 5000, 'first frame');
    const p1 = feed.stop();
    expect(feed.stop()).toBe(p1);
    await p1;
    expect(feed.stats()).toMatchObject({ state: 'closed', connected: false });
    const frames = c.frames.length;
    await waitUntil(() => sim.stats().exchangeA.connections === 0, 2000, 'server saw the close');
    await new Promise((r) => setTimeout(r, 60));
    expect(c.frames.length).toBe(frames);
    expect(c.gaps).toEqual([]);
    expect(sim.stats().exchangeA.connectionsTotal).toBe(1);
  });

  it('forwards a garbage frame as it came (the normaliser dead-letters it)', async () => {
    const sim = await simulator({ eventsPerSecond: 0, markets: { exchangeA: 1, exchangeB: 0 } });
    const { c } = startFeed(sim.urls.exchangeA, sim.markets.exchangeA[0]!.tokenIds);
    await waitUntil(() => c.frames.length >= 1, 5000, 'book');
    sim.injectGarbage('exchange-a');
    await waitUntil(() => c.frames.length >= 2, 5000, 'garbage');
    expect(() => JSON.parse(c.frames[1]!.text)).toThrow();
  });
});

describe('ExchangeACapture', () => {
  it('spreads tokens over several connections, each subscribed to its own share', async () => {
    const sim = await simulator({ eventsPerSecond: 0, markets: { exchangeA: 5, exchangeB: 0 } });
    const tokens = sim.markets.exchangeA.flatMap((m) => m.tokenIds);
    const c = collector();
    const cap = new ExchangeACapture({ url: sim.urls.exchangeA, tokens, maxTokensPerConnection: 4, logger: recordingLogger(), ...c, feed: FAST });
    cleanup.push(cap);
    expect(cap.feeds.map((f) => f.tokenIds.length)).toEqual([4, 4, 2]);
    cap.start();
    await waitUntil(() => c.frames.length >= 3, 5000, 'a book array per connection');
    expect(sim.stats().exchangeA.connections).toBe(3);
    const byConn = new Map(c.frames.map((f) => [f.connectionId, eventsIn(f.text).map((e) => e.asset_id as string)]));
    expect([...byConn.keys()].sort()).toEqual(['exchange-a-0#1', 'exchange-a-1#1', 'exchange-a-2#1']);
    expect([...byConn.values()].flat().sort()).toEqual([...tokens].sort());
    expect(cap.stats()).toMatchObject({ venue: 'exchange-a', markets: 10, connections: 3, connected: 3 });
  });

  it('names condition ids in gap records when it knows which market each token belongs to', async () => {
    const sim = await simulator({ eventsPerSecond: 0, markets: { exchangeA: 2, exchangeB: 0 } });
    const tokens = sim.markets.exchangeA.flatMap((m) => m.tokenIds);
    const tokenMarkets = new Map(sim.markets.exchangeA.flatMap((m) => m.tokenIds.map((t): [string, string] => [t, m.conditionId])));
    const c = collector();
    const cap = new ExchangeACapture({ url: sim.urls.exchangeA, tokens, tokenMarkets, logger: recordingLogger(), ...c, feed: FAST });
    cleanup.push(cap);
    cap.start();
    await waitUntil(() => c.frames.length >= 1, 5000, 'books');
    sim.dropConnections();
    await waitUntil(() => c.gaps.length >= 2, 5000, 'gap');
    expect(c.gaps[0]!.markets).toEqual(sim.markets.exchangeA.map((m) => m.conditionId));
  });

  it('adds tokens to connections with room, then opens new ones', async () => {
    const sim = await simulator({ eventsPerSecond: 0, markets: { exchangeA: 4, exchangeB: 0 } });
    const [m0, m1, m2, m3] = sim.markets.exchangeA as [typeof sim.markets.exchangeA[0], typeof sim.markets.exchangeA[0], typeof sim.markets.exchangeA[0], typeof sim.markets.exchangeA[0]];
    const c = collector();
    const cap = new ExchangeACapture({ url: sim.urls.exchangeA, tokens: m0.tokenIds, maxTokensPerConnection: 4, logger: recordingLogger(), ...c, feed: FAST });
    cleanup.push(cap);
    cap.start();
    await waitUntil(() => c.frames.length >= 1, 5000, 'first books');
    expect(cap.addTokens([...m1.tokenIds, ...m2.tokenIds, ...m3.tokenIds])).toHaveLength(6);
    expect(cap.feeds.map((f) => f.tokenIds.length)).toEqual([4, 4]);
    const seen = (): Set<string> => new Set(c.frames.flatMap((f) => eventsIn(f.text)).filter((e) => e.event_type === 'book').map((e) => e.asset_id as string));
    await waitUntil(() => seen().size === 8, 5000, 'books of every token');
  });
});

describe('back-pressure', () => {
  it('a paused feed delivers nothing, does not time out as idle, and resumes on the same connection', async () => {
    const sim = await simulator({ eventsPerSecond: 500, markets: { exchangeA: 2, exchangeB: 0 } });
    const tokens = sim.markets.exchangeA.flatMap((m) => m.tokenIds);
    const { feed, c } = startFeed(sim.urls.exchangeA, tokens, { idleMs: 300 });
    await waitUntil(() => c.frames.length >= 10, 5000, '10 frames');
    feed.pause();
    await new Promise((r) => setTimeout(r, 100)); // frames already read may still arrive
    const atPause = c.frames.length;
    await new Promise((r) => setTimeout(r, 900)); // three idle timeouts' worth
    expect(c.frames.length).toBe(atPause);
    feed.resume();
    await waitUntil(() => c.frames.length > atPause + 10, 5000, 'frames after resume');
    expect(new Set(c.frames.map((f) => f.connectionId))).toEqual(new Set(['a-0#1']));
    expect(c.gaps).toEqual([]);
  });
});

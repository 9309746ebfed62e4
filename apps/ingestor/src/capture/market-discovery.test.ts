import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startSimulator, type Simulator } from '@booktape/simulator';
import { afterEach, describe, expect, it } from 'vitest';
import {
  MarketDiscoveryError,
  discoverExchangeAMarkets,
  parseEncodedList,
  parseGammaMarket,
  resolveExchangeATokens,
} from './market-discovery.ts';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function simulator(opts: Parameters<typeof startSimulator>[0]): Promise<Simulator> {
  const s = await startSimulator(opts);
  cleanup.push(() => s.close());
  return s;
}

describe('gamma parsing', () => {
  it('parses JSON-encoded string lists, real lists, and ignores junk', () => {
    expect(parseEncodedList('["1075", "7305"]')).toEqual(['1075', '7305']);
    expect(parseEncodedList(['a', 'b'])).toEqual(['a', 'b']);
    expect(parseEncodedList('')).toEqual([]);
    expect(parseEncodedList('not json')).toEqual([]);
    expect(parseEncodedList('{"a":1}')).toEqual([]);
    expect(parseEncodedList(undefined)).toEqual([]);
  });

  it('reads a market as the venue documents it', () => {
    const m = parseGammaMarket({
      id: '703257',
      question: 'Will the US …?',
      conditionId: '0x747D',
      slug: 'will-the-us',
      active: true,
      closed: false,
      outcomes: '["Yes", "No"]',
      clobTokenIds: '["1075", "7305"]',
      enableOrderBook: true,
      negRisk: false,
      events: [{ slug: 'the-event' }],
    });
    expect(m).toEqual({
      conditionId: '0x747d',
      slug: 'will-the-us',
      question: 'Will the US …?',
      tokenIds: ['1075', '7305'],
      outcomes: ['Yes', 'No'],
      eventSlug: 'the-event',
      negRisk: false,
      enableOrderBook: true,
      active: true,
      closed: false,
    });
    expect(parseGammaMarket({ conditionId: '0x1', clobTokenIds: null })).toBeNull();
    expect(parseGammaMarket('nope')).toBeNull();
  });
});

describe('exchange A token resolution', () => {
  it('discovers active order-book markets page by page, up to the maximum', async () => {
    const sim = await simulator({
      eventsPerSecond: 0,
      markets: {
        exchangeA: [{}, { enableOrderBook: false }, {}, { closed: true }, {}, {}, { active: false }, {}],
        exchangeB: 0,
      },
    });
    const expected = sim.markets.exchangeA.filter((m) => m.enableOrderBook && m.active && !m.closed);
    const all = await discoverExchangeAMarkets({ gammaUrl: sim.urls.gamma, pageSize: 2, maxMarkets: 100 });
    expect(all.map((m) => m.conditionId)).toEqual(expected.map((m) => m.conditionId));
    expect(all[0]!.tokenIds).toEqual(expected[0]!.tokenIds);

    const some = await resolveExchangeATokens({ gammaUrl: sim.urls.gamma, pageSize: 2, maxMarkets: 3 });
    expect(some.source).toBe('discovery');
    expect(some.markets).toHaveLength(3);
    expect(some.tokenIds).toEqual(expected.slice(0, 3).flatMap((m) => m.tokenIds));
  });

  it('uses explicit token ids as they are, without the API', async () => {
    const r = await resolveExchangeATokens({ gammaUrl: 'http://127.0.0.1:9', tokenIds: ['1', ' 2 ', '1'] });
    expect(r).toEqual({ source: 'tokens', tokenIds: ['1', '2'], markets: [], missing: [], tokenMarkets: new Map() });
  });

  it('looks up the tokens of explicit condition ids and names the ones it cannot find', async () => {
    const sim = await simulator({ eventsPerSecond: 0, markets: { exchangeA: 3, exchangeB: 0 } });
    const [m0, , m2] = sim.markets.exchangeA;
    const r = await resolveExchangeATokens({
      gammaUrl: sim.urls.gamma,
      conditionIds: [m2!.conditionId.toUpperCase().replace('0X', '0x'), m0!.conditionId.slice(2), '0xdead'],
    });
    expect(r.source).toBe('conditions');
    expect(r.tokenIds).toEqual([...m2!.tokenIds, ...m0!.tokenIds]);
    expect(r.missing).toEqual(['0xdead']);
    expect(r.tokenMarkets.get(m0!.tokenIds[1])).toBe(m0!.conditionId);
  });

  it('fails with a clear error when the API cannot be reached', async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    await new Promise<void>((r) => server.close(() => r()));
    const err = await resolveExchangeATokens({ gammaUrl: `http://127.0.0.1:${port}` }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MarketDiscoveryError);
    expect((err as Error).message).toMatch(/market metadata API unreachable \(http:\/\/127\.0\.0\.1:\d+\/markets\?active=true/);
  });

  it('fails with a clear error on an HTTP error or a slow API', async () => {
    const server = createServer((req, res) => {
      if (req.url?.startsWith('/slow')) return; // never answers
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end('down for maintenance');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanup.push(async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    });
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await expect(resolveExchangeATokens({ gammaUrl: base })).rejects.toThrow(/HTTP 503 .*down for maintenance/);
    await expect(resolveExchangeATokens({ gammaUrl: `${base}/slow`, timeoutMs: 100 })).rejects.toThrow(/no answer within 100 ms/);
  });
});

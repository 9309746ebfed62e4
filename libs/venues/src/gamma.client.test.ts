import { describe, expect, it } from 'vitest';
import { gammaEndpoint, parseGammaCatalogueMarket, parseGammaEvent } from './gamma.client.ts';

/** The metadata API's shapes, as the venue sends them (JSON-encoded lists inside the JSON). */

const MARKET = {
  id: '703257',
  question: 'Will the Fed cut 25 bps?',
  conditionId: '0x747D0C7F3ab7c2e1b6c4b5e0f3c7d2a1b0e9f8d7c6b5a4938271605f4e3d2c1b',
  slug: 'fed-cuts-25-bps',
  active: true,
  closed: false,
  outcomes: '["Yes", "No"]',
  outcomePrices: '["0.61", "0.39"]',
  clobTokenIds: '["1075", "7305"]',
  events: [{ id: '2890', slug: 'fed-decision-in-march', title: 'Fed decision in March?', ticker: 'fed-decision-in-march' }],
};

describe('gamma catalogue parsing', () => {
  it('reads a market with its own event, condition id as 0x + lower case', () => {
    expect(parseGammaCatalogueMarket(MARKET)).toEqual({
      conditionId: MARKET.conditionId.toLowerCase(),
      marketId: '703257',
      slug: 'fed-cuts-25-bps',
      question: 'Will the Fed cut 25 bps?',
      active: true,
      closed: false,
      tokenIds: ['1075', '7305'],
      outcomes: ['Yes', 'No'],
      eventId: '2890',
      eventSlug: 'fed-decision-in-march',
      eventTitle: 'Fed decision in March?',
    });
  });

  it('accepts the shapes seen in the wild: numeric ids, string booleans, real lists, no event', () => {
    const m = parseGammaCatalogueMarket({ id: 12, conditionId: 'ABCDEF', slug: 's', question: 'q', active: 'false', closed: 'true', outcomes: ['Up', 'Down'], clobTokenIds: [1, 2] });
    expect(m).toMatchObject({ conditionId: '0xabcdef', marketId: '12', active: false, closed: true, outcomes: ['Up', 'Down'], tokenIds: ['1', '2'], eventId: null, eventSlug: null, eventTitle: null });
    // Not yet deployed: no token ids, still a catalogue entry.
    expect(parseGammaCatalogueMarket({ conditionId: '0x01', clobTokenIds: null })).toMatchObject({ tokenIds: [], outcomes: [], slug: '', question: '' });
  });

  it('refuses what has no usable condition id', () => {
    expect(parseGammaCatalogueMarket({ ...MARKET, conditionId: '' })).toBeNull();
    expect(parseGammaCatalogueMarket({ ...MARKET, conditionId: "0x1' OR 1=1" })).toBeNull();
    expect(parseGammaCatalogueMarket({ ...MARKET, conditionId: undefined })).toBeNull();
    expect(parseGammaCatalogueMarket('nope')).toBeNull();
    expect(parseGammaCatalogueMarket(null)).toBeNull();
    expect(parseGammaCatalogueMarket([MARKET])).toBeNull();
  });

  it('reads an event: its markets get the event’s slug, title and id, broken markets are left out', () => {
    const { events: _, ...bare } = MARKET;
    const e = parseGammaEvent({ id: 2890, slug: 'fed-decision-in-march', title: 'Fed decision in March?', markets: [bare, { conditionId: null }, 'junk'] });
    expect(e).toEqual({
      id: '2890',
      slug: 'fed-decision-in-march',
      title: 'Fed decision in March?',
      markets: [expect.objectContaining({ slug: 'fed-cuts-25-bps', eventId: '2890', eventSlug: 'fed-decision-in-march', eventTitle: 'Fed decision in March?' })],
    });
    expect(parseGammaEvent({ slug: 'no-title', ticker: 'NO-TITLE' })).toEqual({ id: null, slug: 'no-title', title: 'NO-TITLE', markets: [] });
    expect(parseGammaEvent({ title: 'no slug' })).toBeNull();
  });

  it('builds endpoint URLs under the configured base, path prefix kept, values encoded', () => {
    expect(gammaEndpoint('https://gamma-api.polymarket.com', 'events', [['slug', 'a b&c']])).toBe('https://gamma-api.polymarket.com/events?slug=a+b%26c');
    expect(gammaEndpoint('http://127.0.0.1:9/proxy/', 'markets', [['slug', 'x']])).toBe('http://127.0.0.1:9/proxy/markets?slug=x');
  });
});

import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { VENUES, type ExchangeAMessage, type ExchangeBMessage } from '@booktape/domain';
import { VENUE_MODULES, asVenue, eventTimeMs, marketKey, messageAsset, venueFromAnyName, venueFromShortName, venueModule, venueModules } from './registry.ts';

const lineage = { received_at: '2026-03-01T00:00:00.000Z', worker_id: 1, ingest_seq: '1', dedup_id: 'd' };
const a: ExchangeAMessage = {
  ...lineage,
  venue: 'exchange-a',
  event: { market: '0x' + 'ab'.repeat(32), asset_id: '123', timestamp: '1772323200123', hash: 'h', event_type: 'book', bids: [], asks: [] },
};
const b: ExchangeBMessage = {
  ...lineage,
  venue: 'exchange-b',
  record: { type: 'snapshot', ticker: 'KX-1', timestamp: '2026-03-01T00:00:00.456Z', epoch_ms: 1772323200456, sid: 1, seq: 1, yes: [], no: [] },
};

describe('venue registry', () => {
  it('holds every venue of the domain, each under its own name, in the domain order', () => {
    expect(Object.keys(VENUE_MODULES).sort()).toEqual([...VENUES].sort());
    expect(venueModules().map((m) => m.venue)).toEqual([...VENUES]);
    for (const v of VENUES) expect(venueModule(v).venue).toBe(v);
  });

  it('gives each venue distinct names, tables and short names, which name it back', () => {
    const mods = venueModules();
    for (const key of ['short', 'ownName', 'label'] as const) expect(new Set(mods.map((m) => m[key])).size).toBe(mods.length);
    expect(new Set(mods.map((m) => m.raw.table)).size).toBe(mods.length);
    for (const m of mods) {
      for (const name of [m.short, m.venue, m.ownName]) expect(venueFromAnyName(` ${name.toUpperCase()} `)).toBe(m.venue);
      expect(venueFromShortName(m.ownName)).toBeNull();
      expect(venueFromShortName(m.short)).toBe(m.venue);
      expect(venueFromShortName(` ${m.venue.toUpperCase()} `)).toBe(m.venue);
      expect(asVenue(m.venue)).toBe(m.venue);
      expect(m.raw.table).toBe(`raw_${m.venue.replace('-', '_')}`);
    }
    expect(asVenue('__proto__')).toBeNull();
    expect(asVenue('EXCHANGE-A')).toBeNull();
    expect(venueFromShortName('c')).toBeNull();
    expect(venueFromAnyName('kalshi-b')).toBeNull();
  });

  it('keeps each entry consistent: a venue without tokens names its one book by the market', () => {
    for (const m of venueModules()) {
      if (!m.tokens) expect(m.raw.asset).toBe(m.raw.market);
      else expect(m.raw.asset).not.toBe(m.raw.market);
      expect(m.bookSides).toHaveLength(2);
      expect(m.market.rule).toContain(m.market.noun);
      expect(m.market.prefix.test('')).toBe(true);
    }
  });

  it('checks market ids by the venue rule: a condition id is 0x + 64 hex, a ticker is not hex-bound', () => {
    const cond = '0x' + 'AB'.repeat(32);
    expect(venueModule('exchange-a').market.normalise(cond)).toBe(cond.toLowerCase());
    expect(venueModule('exchange-a').market.normalise('0x12')).toBeNull();
    expect(venueModule('exchange-b').market.normalise('KXBTC-26MAR01')).toBe('KXBTC-26MAR01');
    expect(venueModule('exchange-b').market.normalise('no spaces')).toBeNull();
    expect(venueModule('exchange-a').market.prefix.test('0xab')).toBe(true);
    expect(venueModule('exchange-b').market.prefix.test('0xab')).toBe(true);
    expect(venueModule('exchange-a').market.prefix.test('KX')).toBe(false);
  });

  it('reads market, asset and event time of a stored message of either venue (docs/rules/data.md)', () => {
    expect([marketKey(a), messageAsset(a), eventTimeMs(a)]).toEqual(['0x' + 'ab'.repeat(32), '123', 1772323200123]);
    expect([marketKey(b), messageAsset(b), eventTimeMs(b)]).toEqual(['KX-1', 'KX-1', 1772323200456]);
  });

  it('makes a fresh normaliser per call, each refusing an empty frame', () => {
    for (const m of venueModules()) {
      const n1 = m.normaliser();
      expect(n1).not.toBe(m.normaliser());
      expect(n1.normalise('', new Date(0)).kind).toBe('invalid');
      n1.reset();
    }
  });

  it('names an API token parameter exactly for a venue with outcome tokens, and distinct API names per venue', () => {
    const mods = venueModules();
    for (const m of mods) expect(m.api.asset !== undefined).toBe(m.tokens);
    for (const key of ['marketParam', 'marketField', 'marketListField'] as const) expect(new Set(mods.map((m) => m.api[key])).size).toBe(mods.length);
  });

  it('reads a short or full venue name (any case, trimmed) exactly as the command line always took them', () => {
    // The names as written down before the registry (apps/cli/src/args.ts, coverage/outage-params.ts).
    const reference = new Map([
      ['a', 'exchange-a'],
      ['exchange-a', 'exchange-a'],
      ['b', 'exchange-b'],
      ['exchange-b', 'exchange-b'],
    ]);
    const names = fc.constantFrom('a', 'b', 'exchange-a', 'exchange-b', 'A', ' Exchange-B ', 'c', 'polymarket', '__proto__', 'constructor', '');
    fc.assert(
      fc.property(fc.oneof(names, fc.string({ maxLength: 12 })), (s) => {
        expect(venueFromShortName(s)).toBe(reference.get(s.trim().toLowerCase()) ?? null);
      }),
    );
  });

  it('refuses a name that is not a venue', () => {
    expect(() => venueModule('exchange-c' as never)).toThrow(RangeError);
  });
});

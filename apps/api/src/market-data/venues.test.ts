import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { venueModule, venueModules } from '@booktape/venues';
import { VENUES, venueAliasRewrite } from './venues.ts';

/** The path alias rule: exactly `/api/v1/<alias>/` becomes `/api/v1/<venue>/`, nothing else changes. */
describe('venueAliasRewrite', () => {
  const rest = fc.stringMatching(/^[a-z0-9/_?=&%.-]{0,40}$/);
  it('an alias segment becomes its venue, the rest of the URL kept', () => {
    fc.assert(
      fc.property(fc.constantFrom(...VENUES), rest, (v, r) => {
        expect(venueAliasRewrite(`/api/v1/${v.pathAlias}/${r}`)).toBe(`/api/v1/${v.venue}/${r}`);
      }),
    );
  });
  it('any other URL is left alone (canonical paths, other spellings, other prefixes)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (url) => {
        fc.pre(!VENUES.some((v) => url.startsWith(`/api/v1/${v.pathAlias}/`)));
        expect(venueAliasRewrite(url)).toBe(url);
      }),
    );
    for (const url of ['/api/v1/Polymarket/market/data', '/api/v1/polymarket', '/api/v1/polymarketx/market/data', '/polymarket/market/data', '/api/v2/kalshi/market/data', '/api/v1/exchange-a/polymarket/x']) {
      expect(venueAliasRewrite(url)).toBe(url);
    }
  });
  it('aliases are distinct from every venue and from each other', () => {
    const names = VENUES.flatMap((v) => [v.venue, v.pathAlias]);
    expect(new Set(names).size).toBe(names.length);
  });
});

/** The API's venue list is the registry's, with its own parameter names on top. */
describe('VENUES (API) and the venue registry', () => {
  it('lists every registry venue once, in order', () => {
    expect(VENUES.map((v) => v.venue)).toEqual(venueModules().map((m) => m.venue));
  });
  it('names a token parameter exactly for a venue with outcome tokens, and takes its aliases and labels from the registry', () => {
    for (const v of VENUES) {
      const m = venueModule(v.venue);
      expect(v.asset !== undefined).toBe(m.tokens);
      expect(v.slugs).toBe(m.tokens);
      expect(v.listsOutcomeTokens).toBe(m.tokens);
      expect(v.pathAlias).toBe(m.ownName);
      expect(v.label.toLowerCase()).toBe(m.label.toLowerCase());
    }
    expect(VENUES.map((v) => [v.label, v.pathAlias, v.marketParam])).toEqual([
      ['Exchange A', 'polymarket', 'condition_id'],
      ['Exchange B', 'kalshi', 'ticker'],
    ]);
  });
});

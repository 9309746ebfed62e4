import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { SLUG_LIMITS, lookupPlan, parseSlugInput, type SlugQuery } from './slug.ts';

const ok = (value: SlugQuery) => ({ ok: true, value });
const bad = (message: RegExp) => ({ ok: false, message: expect.stringMatching(message) });

describe('slug input: every accepted form', () => {
  it.each<[string, SlugQuery]>([
    // Bare slugs (event or market), with what a copy-paste may drag along.
    ['fed-decision-in-march', { form: 'slug', slug: 'fed-decision-in-march' }],
    ['  fed-decision-in-march  ', { form: 'slug', slug: 'fed-decision-in-march' }],
    ['fed-decision-in-march?tid=1771234#comments', { form: 'slug', slug: 'fed-decision-in-march' }],
    ['will-btc-reach-100.5k', { form: 'slug', slug: 'will-btc-reach-100.5k' }],
    ['btc-updown-15m-1760000000', { form: 'slug', slug: 'btc-updown-15m-1760000000' }],
    // Event pages.
    ['https://polymarket.com/event/fed-decision-in-march', { form: 'event', event: 'fed-decision-in-march' }],
    ['https://polymarket.com/event/fed-decision-in-march/', { form: 'event', event: 'fed-decision-in-march' }],
    ['https://polymarket.com/event/fed-decision-in-march?tid=1771234', { form: 'event', event: 'fed-decision-in-march' }],
    ['https://polymarket.com/event/fed-decision-in-march#chart', { form: 'event', event: 'fed-decision-in-march' }],
    ['http://www.polymarket.com/event/fed-decision-in-march', { form: 'event', event: 'fed-decision-in-march' }],
    ['HTTPS://POLYMARKET.COM/EVENT/fed-decision-in-march', { form: 'event', event: 'fed-decision-in-march' }],
    ['https://polymarket.com:443/event/fed-decision-in-march', { form: 'event', event: 'fed-decision-in-march' }],
    ['polymarket.com/event/fed-decision-in-march', { form: 'event', event: 'fed-decision-in-march' }],
    ['www.polymarket.com/event/fed-decision-in-march?x=1', { form: 'event', event: 'fed-decision-in-march' }],
    ['//polymarket.com/event/fed-decision-in-march', { form: 'event', event: 'fed-decision-in-march' }],
    ['/event/fed-decision-in-march', { form: 'event', event: 'fed-decision-in-march' }],
    ['event/fed-decision-in-march', { form: 'event', event: 'fed-decision-in-march' }],
    ['https://polymarket.com//event//fed-decision-in-march//', { form: 'event', event: 'fed-decision-in-march' }],
    // A locale prefix before the event segment.
    ['https://polymarket.com/es/event/fed-decision-in-march', { form: 'event', event: 'fed-decision-in-march' }],
    // A market of an event.
    ['https://polymarket.com/event/fed-decision-in-march/fed-cuts-25-bps', { form: 'event-market', event: 'fed-decision-in-march', market: 'fed-cuts-25-bps' }],
    ['https://polymarket.com/event/fed-decision-in-march/fed-cuts-25-bps?tid=9#top', { form: 'event-market', event: 'fed-decision-in-march', market: 'fed-cuts-25-bps' }],
    ['polymarket.com/event/fed-decision-in-march/fed-cuts-25-bps/', { form: 'event-market', event: 'fed-decision-in-march', market: 'fed-cuts-25-bps' }],
    // Legacy market pages.
    ['https://polymarket.com/market/will-trump-win', { form: 'market', market: 'will-trump-win' }],
    ['https://polymarket.com/market/will-trump-win?tid=1', { form: 'market', market: 'will-trump-win' }],
    ['/market/will-trump-win/', { form: 'market', market: 'will-trump-win' }],
    // Sports pages and any other path: the last segment.
    ['https://polymarket.com/sports/nba/games/week/1/nba-lal-bos-2025-10-22', { form: 'slug', slug: 'nba-lal-bos-2025-10-22' }],
    ['https://polymarket.com/sports/nfl/nfl-kc-buf-2026-01-18?tab=props#x', { form: 'slug', slug: 'nfl-kc-buf-2026-01-18' }],
    ['polymarket.com/sports/epl/epl-ars-che-2026-03-01/', { form: 'slug', slug: 'epl-ars-che-2026-03-01' }],
    ['https://polymarket.com/crypto/btc-updown-15m-1760000000', { form: 'slug', slug: 'btc-updown-15m-1760000000' }],
    // Percent-encoded path segments are decoded; case is kept (slugs are case-sensitive).
    ['https://polymarket.com/event/caf%C3%A9-open', { form: 'event', event: 'café-open' }],
    ['https://polymarket.com/event/Fed-Decision', { form: 'event', event: 'Fed-Decision' }],
    ['élection-présidentielle', { form: 'slug', slug: 'élection-présidentielle' }],
  ])('%s', (input, expected) => {
    expect(parseSlugInput(input)).toEqual(ok(expected));
  });
});

describe('slug input: refused with a message (answered 400)', () => {
  it.each<[string, RegExp]>([
    ['', /must not be empty/],
    ['   ', /must not be empty/],
    ['a'.repeat(SLUG_LIMITS.inputMax + 1), /at most 2048 characters/],
    ['a'.repeat(SLUG_LIMITS.slugMax + 1), /at most 256 characters/],
    [`https://polymarket.com/event/${'a'.repeat(SLUG_LIMITS.slugMax + 1)}`, /invalid event slug/],
    ['fed\u0000decision', /control characters/],
    ['fed\r\nX-Injected: 1', /control characters/],
    ['ftp://polymarket.com/event/x', /http\(s\) URL/],
    ['javascript://alert(1)', /http\(s\) URL/],
    ['https://polymarket.com', /names no event or market/],
    ['https://polymarket.com/?slug=x', /names no event or market/],
    ['https://polymarket.com/event/', /without the event slug/],
    ['/event', /without the event slug/],
    ['https://polymarket.com/market/', /without the market slug/],
    ['https://polymarket.com/event/%zz', /malformed percent-encoding/],
    ['https://polymarket.com/event/%E0%A4%A', /malformed percent-encoding/],
    ['https://polymarket.com/event/a%2Fb', /invalid event slug/],
    ['https://polymarket.com/event/ok/%27%20OR%201%3D1', /invalid market slug/],
    ['%zz', /must be letters/],
    ['%', /must be letters/],
    ["' OR 1=1 --", /must be letters/],
    ['fed decision', /must be letters/],
    ['{v:String}', /must be letters/],
    ['..', /must be letters/],
    ['https://polymarket.com/..', /invalid slug/],
    ['?tid=1', /must be letters/],
    ['#x', /must be letters/],
    ['🎲🎲', /must be letters/],
  ])('%j', (input, message) => {
    expect(parseSlugInput(input)).toEqual(bad(message));
  });
});

describe('slug input: properties', () => {
  const slugChar = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789-');
  const slug = fc.array(slugChar, { minLength: 1, maxLength: 80 }).map((a) => a.join('')).filter((s) => s !== 'event' && s !== 'market');
  const host = fc.constantFrom('', 'https://polymarket.com', 'http://www.polymarket.com', 'polymarket.com', '//polymarket.com');
  const tail = fc.constantFrom('', '/', '?tid=17', '#comments', '/?a=b#c', '?x=/event/other');

  it('an event URL names its event, whatever the host, trailing slash, query or fragment', () => {
    fc.assert(
      fc.property(host, slug, tail, (h, e, t) => {
        expect(parseSlugInput(`${h}/event/${e}${t}`)).toEqual(ok({ form: 'event', event: e }));
      }),
    );
  });

  it('an event-market URL names both; a legacy market URL names the market; a sports URL its last segment', () => {
    fc.assert(
      fc.property(host, slug, slug, tail, (h, e, m, t) => {
        expect(parseSlugInput(`${h}/event/${e}/${m}${t}`)).toEqual(ok({ form: 'event-market', event: e, market: m }));
        expect(parseSlugInput(`${h}/market/${m}${t}`)).toEqual(ok({ form: 'market', market: m }));
        expect(parseSlugInput(`${h}/sports/nba/${e}/${m}${t}`)).toEqual(ok({ form: 'slug', slug: m }));
      }),
    );
  });

  it('a bare slug is itself, and parsing its own URL forms gives it back', () => {
    fc.assert(
      fc.property(slug, (s) => {
        expect(parseSlugInput(s)).toEqual(ok({ form: 'slug', slug: s }));
        expect(parseSlugInput(`https://polymarket.com/event/${encodeURIComponent(s)}`)).toEqual(ok({ form: 'event', event: s }));
      }),
    );
  });

  it('never throws, whatever the input, and every accepted slug is bounded and clean', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: 'grapheme', maxLength: 100 }), fc.string({ unit: 'binary', maxLength: 100 }), fc.webUrl({ withQueryParameters: true, withFragments: true })), (input) => {
        const r = parseSlugInput(input);
        if (!r.ok) {
          expect(r.message.length).toBeGreaterThan(0);
          return;
        }
        for (const a of lookupPlan(r.value)) {
          expect(a.slug.length).toBeGreaterThan(0);
          expect(a.slug.length).toBeLessThanOrEqual(SLUG_LIMITS.slugMax);
          expect(a.slug).toMatch(/^[\p{L}\p{N}\p{M}._~-]+$/u);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe('lookup plan', () => {
  it('bare slugs and event pages try the event first, then a market of that slug', () => {
    expect(lookupPlan({ form: 'slug', slug: 's' })).toEqual([{ kind: 'event', slug: 's' }, { kind: 'market', slug: 's' }]);
    expect(lookupPlan({ form: 'event', event: 'e' })).toEqual([{ kind: 'event', slug: 'e' }, { kind: 'market', slug: 'e' }]);
  });

  it('market URLs try the market first, then fall back to the event', () => {
    expect(lookupPlan({ form: 'event-market', event: 'e', market: 'm' })).toEqual([{ kind: 'market', slug: 'm' }, { kind: 'event', slug: 'e' }]);
    expect(lookupPlan({ form: 'market', market: 'm' })).toEqual([{ kind: 'market', slug: 'm' }, { kind: 'event', slug: 'm' }]);
  });
});

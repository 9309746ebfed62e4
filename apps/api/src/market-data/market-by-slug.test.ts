import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { CatalogueMarket } from '@booktape/storage';
import { ApiError } from '../http/errors.ts';
import { pickMarket, pickOutcome } from './market-by-slug.ts';

/** The exact rules of naming a market by slug and a token by outcome (docs/api.md, "Slug and outcome"). */

const market = (outcomes: string[], over: Partial<CatalogueMarket> = {}): CatalogueMarket => ({
  conditionId: `0x${'ab'.repeat(32)}`,
  marketId: '1',
  slug: 'm',
  question: 'q?',
  active: true,
  closed: false,
  tokenIds: outcomes.map((_, i) => `tok${i}`),
  outcomes,
  eventId: null,
  eventSlug: null,
  eventTitle: null,
  ...over,
});
const fold = (s: string) => s.trim().normalize('NFC').toLowerCase();
const failure = (f: () => unknown): ApiError => {
  try {
    f();
  } catch (e) {
    if (e instanceof ApiError) return e;
    throw e;
  }
  throw new Error('no error');
};
const name = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => s.trim() !== '' && s === s.trim());
/** Outcomes whose names differ also without regard to case. */
const outcomes = fc.uniqueArray(name, { minLength: 1, maxLength: 6, selector: fold });
const recase = (s: string, flips: boolean[]) => [...s].map((c, i) => (flips[i % flips.length] ? c.toUpperCase() : c.toLowerCase())).join('');

describe('pickOutcome', () => {
  it('finds the token of the outcome named in any case, with spaces around', () => {
    fc.assert(
      fc.property(outcomes, fc.nat(), fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }), fc.constantFrom('', ' ', '  '), (os, k, flips, pad) => {
        const i = k % os.length;
        const asked = `${pad}${recase(os[i]!, flips)}${pad}`;
        // Only where re-casing keeps it the same name (some letters change length when cased).
        fc.pre(fold(asked) === fold(os[i]!));
        expect(pickOutcome(market(os), asked)).toBe(`tok${i}`);
      }),
    );
  });

  it('an outcome the market does not have: 400 naming every outcome it has', () => {
    fc.assert(
      fc.property(outcomes, name, (os, asked) => {
        fc.pre(!os.some((o) => fold(o) === fold(asked)));
        const e = failure(() => pickOutcome(market(os), asked));
        expect([e.statusCode, e.code, e.param]).toEqual([400, 'invalid_parameter', 'outcome']);
        for (const o of os) expect(e.message).toContain(JSON.stringify(o));
      }),
    );
  });

  it('outcomes differing only in case: the exact spelling picks, any other is ambiguous', () => {
    const m = market(['yes', 'YES', 'No']);
    expect(pickOutcome(m, 'yes')).toBe('tok0');
    expect(pickOutcome(m, ' YES ')).toBe('tok1');
    expect(pickOutcome(m, 'no')).toBe('tok2');
    expect(failure(() => pickOutcome(m, 'Yes')).message).toMatch(/matches several outcomes/);
  });

  it('no tokens known: 404', () => {
    expect(failure(() => pickOutcome(market([]), 'Yes')).statusCode).toBe(404);
    expect(failure(() => pickOutcome(market(['Yes'], { tokenIds: [] }), 'Yes')).statusCode).toBe(404);
  });
});

describe('pickMarket', () => {
  const q = { form: 'slug', slug: 's' } as const;
  it('one market: it; none: 404; several: 400 listing every slug', () => {
    expect(pickMarket(q, { type: 'market', eventTitle: 't', eventSlug: null, markets: [market(['Yes'])], source: 'catalogue' }).slug).toBe('m');
    expect(failure(() => pickMarket(q, null))).toMatchObject({ statusCode: 404, code: 'not_found', param: 'slug' });
    const several = ['a', 'b', 'c'].map((slug) => market(['Yes'], { slug }));
    const e = failure(() => pickMarket(q, { type: 'event', eventTitle: 't', eventSlug: 's', markets: several, source: 'live' }));
    expect([e.statusCode, e.param]).toEqual([400, 'slug']);
    expect(e.message).toBe('slug "s" names an event of 3 markets: give one market\'s slug: "a", "b", "c"');
  });
});

import { addDecimal, canonicalDecimal, compareDecimal, decimalFromParts, decimalParts } from '@booktape/decimal';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  addSizes,
  canonicalDelta,
  canonicalSize,
  compareCanonical,
  formatUnits,
  isDeltaText,
  msFromText,
  readPrice,
  readScratch,
  unitsText,
} from './fixed-point.ts';

/** readPrice as units of 10^-6, or -1. */
function priceMicros(text: string): number {
  const units = readPrice(text);
  return units < 0 ? -1 : units * 10 ** (6 - readScratch.decimals);
}

const decimalArb = (maxScale: number, maxUnits: bigint) =>
  fc
    .tuple(fc.bigInt({ min: -maxUnits, max: maxUnits }), fc.integer({ min: 0, max: maxScale }))
    .map(([u, s]) => decimalFromParts(u, s));

describe('readPrice', () => {
  it.each([
    ['0', 0],
    ['1', 1_000_000],
    ['0.5', 500_000],
    ['0.485', 485_000],
    ['0.4200', 420_000],
    ['0.000001', 1],
    ['1.000000000', 1_000_000],
    ['00.5', 500_000],
    // Polymarket's documented book example writes ".48".
    ['.48', 480_000],
    ['.5', 500_000],
  ])('reads %s as %i micros', (text, micros) => {
    expect(priceMicros(text)).toBe(micros);
  });

  it.each(['', '1.5', '2', '-0.1', '0.0000001', '1.', '.', '.5.', 'abc', '0.5 ', '1e-2', '0x1'])('rejects %j', (text) => {
    expect(priceMicros(text)).toBe(-1);
  });

  it('reads a price at its own scale, trailing zeros dropped', () => {
    expect([readPrice('0.4200'), readScratch.decimals]).toEqual([42, 2]);
    expect([readPrice('0.485'), readScratch.decimals]).toEqual([485, 3]);
    expect([readPrice('1.000'), readScratch.decimals]).toEqual([1, 0]);
    expect([readPrice('0.000001'), readScratch.decimals]).toEqual([1, 6]);
    expect([readPrice('0'), readScratch.decimals]).toEqual([0, 0]);
  });

  it('agrees with the exact decimal value for every price in [0, 1] at up to 6 decimals', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000_000 }), fc.integer({ min: 0, max: 3 }), (micros, pad) => {
        const text = decimalFromParts(BigInt(micros), 6);
        const padded = text.includes('.') ? text + '0'.repeat(pad) : text;
        expect(priceMicros(padded)).toBe(micros);
      }),
    );
  });

  it('rejects every decimal outside [0, 1] or finer than 10^-6', () => {
    fc.assert(
      fc.property(decimalArb(9, 10_000_000_000n), (text) => {
        const p = decimalParts(text);
        const inRange = compareDecimal(text, '0') >= 0 && compareDecimal(text, '1') <= 0 && p.scale <= 6;
        expect(priceMicros(text) >= 0).toBe(inRange);
      }),
    );
  });
});

describe('formatUnits and unitsText', () => {
  it('give the canonical decimal of units / 10^scale', () => {
    fc.assert(
      fc.property(fc.integer({ min: -9_007_199_254_740_991, max: 9_007_199_254_740_991 }), fc.integer({ min: 0, max: 15 }), (u, s) => {
        const expected = decimalFromParts(BigInt(u), s);
        expect(formatUnits(u, s)).toBe(expected);
        if (Math.abs(u) <= 10 ** Math.min(s, 5) * 10) expect(unitsText(u, s)).toBe(expected);
      }),
    );
  });

  it('cache the text of prices, mids and spreads', () => {
    expect(unitsText(485, 3)).toBe('0.485');
    expect(unitsText(485, 3)).toBe('0.485');
    expect(unitsText(-5, 2)).toBe('-0.05');
    expect(unitsText(100, 2)).toBe('1');
    expect(unitsText(5050, 4)).toBe('0.505');
  });
});

describe('addSizes', () => {
  it('adds exactly, like decimal.ts, on the fast path and past it', () => {
    fc.assert(
      fc.property(
        fc.oneof(decimalArb(6, 10n ** 12n), decimalArb(12, 10n ** 30n)),
        fc.oneof(decimalArb(6, 10n ** 12n), decimalArb(12, 10n ** 30n)),
        (a, b) => {
          expect(addSizes(a, b)).toBe(addDecimal(a, b));
        },
      ),
    );
  });

  it.each([
    ['20', '-0.25', '19.75'],
    ['219.217767', '0.782233', '220'],
    ['0.1', '0.2', '0.3'],
    ['5', '-5', '0'],
    ['1', '-3.5', '-2.5'],
  ])('%s + %s = %s', (a, b, sum) => {
    expect(addSizes(a, b)).toBe(sum);
  });
});

describe('compareCanonical', () => {
  it('orders canonical decimals exactly, signs and long fractions included', () => {
    fc.assert(
      fc.property(
        fc.oneof(decimalArb(6, 10n ** 6n), decimalArb(25, 10n ** 25n), decimalArb(3, 10n ** 9n)),
        fc.oneof(decimalArb(6, 10n ** 6n), decimalArb(25, 10n ** 25n), decimalArb(3, 10n ** 9n)),
        (a, b) => {
          expect(compareCanonical(a, b)).toBe(compareDecimal(a, b));
        },
      ),
      { numRuns: 2000 },
    );
    const cases: [string, string, number][] = [
      ['0.5', '0.45', 1],
      ['1', '1.5', -1],
      ['10', '9.99', 1],
      ['-0.5', '-0.45', -1],
      ['-1', '0', -1],
      ['0.1000000000000000000001', '0.1000000000000000000002', -1],
      // One-digit integer parts on both sides: plain string order.
      ['1.05', '1.5', -1],
      ['9.5', '0.55', 1],
      ['0.5', '5', -1],
      ['9.99', '10.5', -1],
      ['-0.5', '0.5', -1],
    ];
    for (const [a, b, r] of cases) expect([a, b, compareCanonical(a, b)]).toEqual([a, b, r]);
  });
});

describe('size validation', () => {
  it('accepts canonical signed deltas only', () => {
    expect(['-50', '0', '-0.25', '3'].every(isDeltaText)).toBe(true);
    expect(['-0', '+3', '1.0', null].some(isDeltaText)).toBe(false);
    fc.assert(
      fc.property(decimalArb(8, 10n ** 12n), (d) => {
        const c = canonicalDecimal(d);
        expect(isDeltaText(d)).toBe(c.ok && c.value === d);
      }),
    );
  });
});

describe('venue size text', () => {
  it('reads any non-negative decimal text as its canonical value, and nothing else', () => {
    const cases: [string, string | null][] = [
      ['309.00', '309'],
      ['20.00', '20'],
      ['0.50', '0.5'],
      ['0.4200', '0.42'],
      ['0.000', '0'],
      ['007', '7'],
      ['00.0100', '0.01'],
      ['219.217767', '219.217767'],
      ['0', '0'],
      ['', null],
      ['-1', null],
      ['1.', null],
      ['.5', '0.5'],
      ['.50', '0.5'],
      ['.', null],
      ['1e3', null],
      ['+1', null],
      [' 1', null],
      ['1 ', null],
      ['1.2.3', null],
    ];
    for (const [text, want] of cases) expect([text, canonicalSize(text)]).toEqual([text, want]);
    expect(canonicalSize(5)).toBeNull();
    expect(canonicalSize(null)).toBeNull();
  });

  it('reads signed delta text ("-50.00") as its canonical value; "-0.00" is "0"', () => {
    const cases: [string, string | null][] = [
      ['-50.00', '-50'],
      ['-0.00', '0'],
      ['-0', '0'],
      ['-007.50', '-7.5'],
      ['12.10', '12.1'],
      ['-', null],
      ['--1', null],
      ['+1.5', null],
      ['-.5', '-0.5'],
    ];
    for (const [text, want] of cases) expect([text, canonicalDelta(text)]).toEqual([text, want]);
  });

  it('agrees with decimal.ts on every padded decimal, returning canonical text as is', () => {
    fc.assert(
      fc.property(decimalArb(8, 10n ** 12n), fc.nat({ max: 3 }), fc.nat({ max: 2 }), (d, trailing, leading) => {
        const neg = d.startsWith('-');
        const abs = neg ? d.slice(1) : d;
        const text = `${neg ? '-' : ''}${'0'.repeat(leading)}${abs}${trailing === 0 ? '' : (abs.includes('.') ? '' : '.') + '0'.repeat(trailing)}`;
        expect(canonicalDelta(text)).toBe(d);
        expect(canonicalSize(text)).toBe(neg ? null : d);
        if (text === d) expect(canonicalDelta(text)).toBe(text);
      }),
    );
  });
});

describe('msFromText', () => {
  it('reads millisecond timestamps exactly, and anything else like Number()', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), fc.integer({ min: 1e12, max: 1e13 - 1 })),
        (ms) => {
          expect(msFromText(String(ms))).toBe(ms);
        },
      ),
    );
    for (const s of ['1770000000000', '0', '', '12a', '1e3', '1234567890123456', '-5', ' 7', '177000000000a', '1770000:00000', '-770000000000', '17700000000.0']) {
      expect(Object.is(msFromText(s), Number(s))).toBe(true);
    }
    // The last two texts are remembered: asked again, in any order, the answer is still Number() of the text.
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string({ maxLength: 15 }), fc.integer({ min: 0, max: 1e13 }).map(String)), { maxLength: 20 }), (texts) => {
        for (const s of [...texts, ...texts.map((t) => `${t}`), ...texts.reverse()]) expect(Object.is(msFromText(s), Number(s))).toBe(true);
      }),
    );
  });
});

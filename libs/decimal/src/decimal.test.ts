import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  addDecimal,
  canonicalDecimal,
  centsToDollars,
  compareDecimal,
  decimalFromParts,
  decimalParts,
  decimalToScaled,
  isCanonicalDecimal,
  shiftDecimal,
  venueDecimal,
  subtractDecimal,
} from './decimal.ts';

function value(input: unknown): string {
  const r = canonicalDecimal(input);
  if (!r.ok) throw new Error(r.reason);
  return r.value;
}

/** Exact value of a decimal literal as units of 10^-scale, computed independently. */
function scaledOf(int: bigint, fracDigits: string, negative: boolean, scale: number): bigint {
  const frac = fracDigits.padEnd(scale, '0');
  const v = int * 10n ** BigInt(scale) + BigInt(frac === '' ? '0' : frac);
  return negative ? -v : v;
}

describe('canonicalDecimal', () => {
  it.each([
    ['0.4200', '0.42'],
    ['20.00', '20'],
    ['0.500', '0.5'],
    ['1e-3', '0.001'],
    ['1E3', '1000'],
    ['2.5e+2', '250'],
    ['-50.00', '-50'],
    ['-0.000', '0'],
    ['+7', '7'],
    ['.5', '0.5'],
    ['5.', '5'],
    ['007.0700', '7.07'],
    ['0', '0'],
    ['219.217767', '219.217767'],
  ])('canonicalises the string %s to %s', (input, expected) => {
    expect(value(input)).toBe(expected);
  });

  it.each([
    [45, '45'],
    [0.1, '0.1'],
    [-50, '-50'],
    [-0, '0'],
    [1e-7, '0.0000001'],
    [1e21, '1000000000000000000000'],
    [0.30000000000000004, '0.30000000000000004'],
  ])('reads the number %s through its shortest decimal form as %s', (input, expected) => {
    expect(value(input)).toBe(expected);
  });

  it('keeps a negative value of the widest allowed form canonical', () => {
    const r = value(-1.2345678901234567e-64);
    expect(r).toBe(`-0.${'0'.repeat(63)}12345678901234567`);
    expect(isCanonicalDecimal(r)).toBe(true);
    expect(value(r)).toBe(r);
  });

  it('reads bigints', () => {
    expect(value(123n)).toBe('123');
  });

  it.each([
    ['', 'not a decimal'],
    [' 1', 'not a decimal'],
    ['1 ', 'not a decimal'],
    ['.', 'not a decimal'],
    ['-', 'not a decimal'],
    ['0x10', 'not a decimal'],
    ['1,000', 'not a decimal'],
    ['1_000', 'not a decimal'],
    ['NaN', 'not a decimal'],
    ['Infinity', 'not a decimal'],
    ['1e', 'not a decimal'],
    ['1e999999', 'out of range'],
    ['1e-999999', 'out of range'],
    ['abc', 'not a decimal'],
    [NaN, 'not a finite number'],
    [Infinity, 'not a finite number'],
    [-Infinity, 'not a finite number'],
    [null, 'not a decimal: null'],
    [undefined, 'not a decimal'],
    [true, 'not a decimal'],
    [{}, 'not a decimal: an object'],
    [[1], 'not a decimal: an array'],
  ])('rejects %j with a reason', (input, reason) => {
    const r = canonicalDecimal(input);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toContain(reason);
  });

  it('is idempotent and yields canonical strings', () => {
    fc.assert(
      fc.property(fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), fc.string()), (x) => {
        const r = canonicalDecimal(x);
        if (!r.ok) return;
        expect(isCanonicalDecimal(r.value)).toBe(true);
        expect(canonicalDecimal(r.value)).toEqual(r);
      }),
    );
  });

  it('keeps the exact value of any decimal literal, padded, signed or in exponent form', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 10n ** 30n }),
        fc.stringMatching(/^\d{0,20}$/),
        fc.boolean(),
        fc.nat({ max: 5 }),
        fc.nat({ max: 5 }),
        fc.integer({ min: -6, max: 6 }),
        (int, frac, negative, leadZeros, trailZeros, exp) => {
          const literal = `${negative ? '-' : ''}${'0'.repeat(leadZeros)}${int}.${frac}${'0'.repeat(trailZeros)}`;
          const scale = 40;
          const expected = scaledOf(int, frac, negative, scale);
          expect(decimalToScaled(value(literal), scale)).toBe(expected);
          // the same value written with an exponent: literal × 10^exp × 10^-exp
          const shifted = value(`${literal}e${exp}`);
          expect(decimalToScaled(shiftDecimal(shifted, -exp), scale)).toBe(expected);
        },
      ),
    );
  });

  it('round-trips through units and scale', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), fc.nat({ max: 30 }), (units, scale) => {
        const s = decimalFromParts(units, scale);
        expect(isCanonicalDecimal(s)).toBe(true);
        const p = decimalParts(s);
        expect(p.units * 10n ** BigInt(scale - p.scale)).toBe(units);
      }),
    );
  });
});

describe('centsToDollars', () => {
  it.each([
    [45, '0.45'],
    ['45', '0.45'],
    [100, '1'],
    [5, '0.05'],
    [0, '0'],
    ['-50', '-0.5'],
    ['45.5', '0.455'],
    ['4500', '45'],
  ])('turns %j cents into %s dollars', (cents, dollars) => {
    expect(centsToDollars(cents)).toEqual({ ok: true, value: dollars });
  });

  it('rejects garbage', () => {
    expect(centsToDollars('forty').ok).toBe(false);
    expect(centsToDollars(null).ok).toBe(false);
  });

  it('is exact: dollars × 100 is the cents', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), (cents) => {
        const r = centsToDollars(cents.toString());
        expect(r.ok).toBe(true);
        if (r.ok) expect(decimalToScaled(r.value, 2)).toBe(cents);
      }),
    );
  });
});

describe('arithmetic', () => {
  it('adds, subtracts and compares exactly', () => {
    expect(addDecimal('0.1', '0.2')).toBe('0.3');
    expect(addDecimal('13', '-13')).toBe('0');
    expect(subtractDecimal('1', '0.53')).toBe('0.47');
    expect(subtractDecimal('0.001', '0.01')).toBe('-0.009');
    expect(compareDecimal('0.5', '0.5')).toBe(0);
    expect(compareDecimal('0.05', '0.5')).toBe(-1);
    expect(compareDecimal('-1', '0.001')).toBe(-1);
    expect(compareDecimal('10', '9.999')).toBe(1);
  });

  it('addition agrees with scaled integers', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: -(10n ** 15n), max: 10n ** 15n }),
        fc.bigInt({ min: -(10n ** 15n), max: 10n ** 15n }),
        fc.nat({ max: 6 }),
        fc.nat({ max: 6 }),
        (a, b, sa, sb) => {
          const x = decimalFromParts(a, sa);
          const y = decimalFromParts(b, sb);
          const scale = 12;
          expect(decimalToScaled(addDecimal(x, y), scale)).toBe(decimalToScaled(x, scale) + decimalToScaled(y, scale));
          const cmp = compareDecimal(x, y);
          const dx = decimalToScaled(x, scale);
          const dy = decimalToScaled(y, scale);
          expect(cmp).toBe(dx < dy ? -1 : dx > dy ? 1 : 0);
        },
      ),
    );
  });

  it('refuses non-canonical input', () => {
    expect(() => decimalParts('0.50')).toThrow(RangeError);
    expect(() => decimalParts('-0')).toThrow(RangeError);
    expect(() => decimalToScaled('0.001', 2)).toThrow(RangeError);
  });
});

describe('venueDecimal: the venue\'s text, validated', () => {
  it.each([
    ['0.50', '0.50', '0.5'],
    ['309.00', '309.00', '309'],
    ['-50.00', '-50.00', '-50'],
    ['007', '007', '7'],
    [45, '45', '45'],
    [0.1, '0.1', '0.1'],
    ['1e-3', '0.001', '0.001'],
    ['+5', '5', '5'],
    ['.5', '.5', '0.5'],
    ['.48', '.48', '0.48'],
    ['-0.00', '0', '0'],
  ])('%j → %j', (input, value, canonical) => {
    expect(venueDecimal(input)).toEqual({ ok: true, value, canonical });
  });

  it.each(['', ' 1', '0x10', 'NaN', '1,5', null, true])('refuses %j as canonicalDecimal does', (input) => {
    expect(venueDecimal(input)).toEqual(canonicalDecimal(input));
  });

  // The common plain shapes take a shortcut: it must answer exactly what the general reading does.
  it('property: answers as canonicalDecimal and the plain-text rule do, for any string', () => {
    const reference = (text: string) => {
      const c = canonicalDecimal(text);
      if (!c.ok) return c;
      const keep = /^-?(\d+(\.\d+)?|\.\d+)$/.test(text) && !(c.value === '0' && text.startsWith('-'));
      return { ok: true, value: keep ? text : c.value, canonical: c.value };
    };
    const decimalish = fc.oneof(
      fc.stringMatching(/^[+-]?0{0,2}\d{0,5}(\.\d{0,5}0{0,3})?([eE][+-]?\d{1,2})?$/),
      fc.stringMatching(/^-?(0|[1-9]\d{0,80})(\.\d{0,3})?$/),
      fc.string({ unit: fc.constantFrom('0', '1', '9', '.', '-', '+', 'e', ' ') , maxLength: 8 }),
    );
    fc.assert(
      fc.property(decimalish, (text) => {
        expect(venueDecimal(text)).toEqual(reference(text));
      }),
      { numRuns: 5000 },
    );
  });

  it('property: keeps plain decimal text byte for byte, and means the same value', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^-?\d{1,6}(\.\d{1,6})?$/), (text) => {
        const r = venueDecimal(text);
        if (!r.ok) throw new Error(r.reason);
        const c = canonicalDecimal(text);
        expect(r.canonical).toBe(c.ok ? c.value : null);
        expect(r.value).toBe(r.canonical === '0' && text.startsWith('-') ? '0' : text);
      }),
    );
  });
});

import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { z } from 'zod';
import {
  LIMITS,
  MAX_TIMESTAMP_MS,
  MISSING,
  SECONDS_THRESHOLD,
  earliestMs,
  parseConditionId,
  parseConditionIdPrefix,
  parseDate,
  parseInteger,
  parseList,
  parseTicker,
  parseTickerPrefix,
  parseTimestamp,
  q,
  toMilliseconds,
} from './params.ts';

const hexChar = fc.constantFrom(...'0123456789abcdefABCDEF');
const hex = (min: number, max: number) => fc.array(hexChar, { minLength: min, maxLength: max }).map((a) => a.join(''));

describe('identifier normalisation', () => {
  it('condition ids: with or without 0x, any case → 0x + lower case', () => {
    fc.assert(
      fc.property(hex(1, 128), fc.constantFrom('', '0x', '0X'), (h, p) => {
        const r = parseConditionId(p + h);
        expect(r).toEqual({ ok: true, value: `0x${h.toLowerCase()}` });
      }),
    );
  });

  it('condition ids: normalising twice changes nothing', () => {
    fc.assert(
      fc.property(hex(1, 64), (h) => {
        const once = parseConditionId(h);
        expect(once.ok && parseConditionId(once.value)).toEqual(once);
      }),
    );
  });

  it('condition ids: anything with a non-hex character is refused with a reason', () => {
    fc.assert(
      fc.property(hex(0, 10), fc.string({ minLength: 1, maxLength: 5 }).filter((s) => /[^0-9a-fA-F]/.test(s.replace(/^0x/i, ''))), hex(0, 10), (a, bad, b) => {
        const s = a + bad + b;
        fc.pre(!/^(0x)?[0-9a-f]+$/i.test(s.trim()));
        const r = parseConditionId(s);
        expect(r.ok).toBe(false);
        if (!r.ok) expect(r.message).toMatch(/must/);
      }),
    );
    expect(parseConditionId('').ok).toBe(false);
    expect(parseConditionId('0x').ok).toBe(false);
    expect(parseConditionId('a'.repeat(200)).ok).toBe(false);
  });

  it('tickers: upper-cased; other characters refused', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,40}$/), (t) => {
        expect(parseTicker(t)).toEqual({ ok: true, value: t.toUpperCase() });
      }),
    );
    for (const bad of ['', ' ', 'KX T', "KX'--", 'KX;DROP', 'É', '-KX', 'A'.repeat(129)]) expect(parseTicker(bad).ok).toBe(false);
  });

  it('prefixes: normalised like ids, empty allowed', () => {
    fc.assert(fc.property(hex(0, 64), fc.constantFrom('', '0x', '0X'), (h, p) => {
      expect(parseConditionIdPrefix(p + h)).toEqual({ ok: true, value: `0x${h.toLowerCase()}` });
    }));
    fc.assert(fc.property(fc.stringMatching(/^[A-Za-z0-9._-]{0,20}$/), (t) => {
      expect(parseTickerPrefix(t)).toEqual({ ok: true, value: t.toUpperCase() });
    }));
    expect(parseConditionIdPrefix('0xg').ok).toBe(false);
    expect(parseTickerPrefix('KX%').ok).toBe(false);
  });
});

describe('timestamps: seconds or milliseconds (the query field; the full model in time.test.ts)', () => {
  it('a value below 10^11 is seconds, from 10^11 on milliseconds; an end in seconds covers its whole second', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: SECONDS_THRESHOLD - 1 }), (s) => {
        const r = parseTimestamp('start')(String(s));
        // Seconds that land after the last storable instant are refused, the rest scaled.
        expect(r).toEqual(s * 1000 <= MAX_TIMESTAMP_MS ? { ok: true, value: s * 1000 } : { ok: false, message: expect.stringContaining('must lie between') });
        if (r.ok) expect(parseTimestamp('end')(String(s))).toEqual({ ok: true, value: s * 1000 + 999 });
      }),
    );
    fc.assert(
      fc.property(fc.integer({ min: SECONDS_THRESHOLD, max: MAX_TIMESTAMP_MS }), (ms) => {
        expect(parseTimestamp('start')(String(ms))).toEqual({ ok: true, value: ms });
        expect(parseTimestamp('end')(String(ms))).toEqual({ ok: true, value: ms });
      }),
    );
  });

  it('the same instant in seconds and in milliseconds starts alike', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 99_999_999 }), (s) => {
        const a = parseTimestamp('start')(String(s));
        const b = parseTimestamp('start')(String(s * 1000));
        // Below 10^8 seconds the millisecond form is itself below 10^11 and reads as seconds.
        if (s * 1000 >= SECONDS_THRESHOLD) expect(a).toEqual(b);
        expect(toMilliseconds(s)).toBe(s * 1000);
      }),
    );
  });

  it('negative, fractional, non-numeric and too large values are refused', () => {
    expect(parseTimestamp('end')(String(MAX_TIMESTAMP_MS))).toEqual({ ok: true, value: MAX_TIMESTAMP_MS });
    for (const bad of ['-1', '1.5', '1e12', '', '0x10', String(MAX_TIMESTAMP_MS + 1), '253402300799999', '99999999999999999', '１２３']) {
      expect(parseTimestamp('start')(bad).ok, bad).toBe(false);
    }
  });
});

describe('limit and offset bounds', () => {
  it('accepts exactly the integers in range', () => {
    fc.assert(
      fc.property(fc.integer({ min: -10, max: LIMITS.rawLimitMax + 10 }), (n) => {
        const r = parseInteger(String(n), 1, LIMITS.rawLimitMax);
        expect(r.ok).toBe(n >= 1 && n <= LIMITS.rawLimitMax);
        if (r.ok) expect(r.value).toBe(n);
      }),
    );
  });

  it('query schemas apply defaults and bounds', () => {
    const raw = z.object({ offset: q.offset(), limit: q.rawLimit() });
    const list = z.object({ offset: q.offset(), limit: q.listLimit() });
    expect(raw.parse({})).toEqual({ offset: 0, limit: 10_000 });
    expect(list.parse({})).toEqual({ offset: 0, limit: 100 });
    expect(raw.safeParse({ limit: '100000' }).success).toBe(true);
    expect(raw.safeParse({ limit: '100001' }).success).toBe(false);
    expect(raw.safeParse({ limit: '0' }).success).toBe(false);
    expect(list.safeParse({ limit: '1000' }).success).toBe(true);
    expect(list.safeParse({ limit: '1001' }).success).toBe(false);
    expect(raw.safeParse({ offset: String(LIMITS.offsetMax) }).success).toBe(true);
    expect(raw.safeParse({ offset: String(LIMITS.offsetMax + 1) }).success).toBe(false);
    expect(raw.safeParse({ offset: '-1' }).success).toBe(false);
    expect(raw.safeParse({ limit: ['1', '2'] }).success).toBe(false);
  });

  it('a missing required parameter says so', () => {
    const r = z.object({ condition_id: q.conditionId() }).safeParse({});
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.message).toBe(MISSING);
    expect(r.error?.issues[0]?.path).toEqual(['condition_id']);
  });
});

describe('dates and the earliest-date rule', () => {
  it('accepts exactly the calendar dates', () => {
    fc.assert(
      fc.property(fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2149-06-06T00:00:00Z'), noInvalidDate: true }), (d) => {
        const s = d.toISOString().slice(0, 10);
        expect(parseDate(s)).toEqual({ ok: true, value: s });
      }),
    );
    // Outside what the store's Date type holds.
    for (const bad of ['2149-06-07', '9999-12-31', '1969-12-31', '0000-01-01']) expect(parseDate(bad).ok, bad).toBe(false);
    for (const bad of ['2026-02-30', '2026-13-01', '2026-2-8', '20260208', '2026-02-08T00:00:00Z', '', "2026-02-08' OR 1=1"]) expect(parseDate(bad).ok, bad).toBe(false);
  });

  it('string order of YYYY-MM-DD is time order (the rule compares strings)', () => {
    fc.assert(
      fc.property(fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }), fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }), (a, b) => {
        const sa = a.toISOString().slice(0, 10);
        const sb = b.toISOString().slice(0, 10);
        expect(sa < sb).toBe(earliestMs(sa) < earliestMs(sb));
      }),
    );
    expect(earliestMs('2026-02-08')).toBe(Date.UTC(2026, 1, 8));
  });
});

describe('comma-separated lists (include)', () => {
  const include = parseList(['source', 'other'] as const);
  it('takes known values in any case, spaces around items ignored, a repeat once', () => {
    expect(include('source')).toEqual({ ok: true, value: ['source'] });
    expect(include(' Source , OTHER,source')).toEqual({ ok: true, value: ['source', 'other'] });
  });
  it('refuses an empty list, an empty item or an unknown value, naming it', () => {
    for (const bad of ['', ',', 'source,', 'sorce', 'source,worker']) {
      const r = include(bad);
      expect(r.ok, bad).toBe(false);
      if (!r.ok) expect(r.message).toContain('must be a comma-separated list of source, other');
    }
    const r = include('source,worker');
    expect(!r.ok && r.message).toContain('"worker"');
  });
});

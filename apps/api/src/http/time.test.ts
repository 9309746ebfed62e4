import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { MAX_TIME_MS, SECONDS_THRESHOLD, parseTime, sameInclusiveEnd, spansAtMost, type TimeEdge } from './time.ts';

/** The API's one time model (docs/api.md, "Time"), as properties. */

const EDGES: TimeEdge[] = ['start', 'end', 'instant'];
const DAY = 86_400_000;
const ok = (value: number) => ({ ok: true, value });
const anyMs = fc.integer({ min: 0, max: MAX_TIME_MS });
const anySecond = fc.integer({ min: 0, max: Math.floor(MAX_TIME_MS / 1000) });

/** `ms` written as local time at `offsetMin` minutes east of UTC, to `digits` fraction digits (-1: no seconds). */
function iso(ms: number, offsetMin: number, digits: number): string {
  const local = new Date(ms + offsetMin * 60_000).toISOString(); // 2026-03-01T12:34:56.789Z
  const base = digits < 0 ? local.slice(0, 16) : local.slice(0, 19);
  const frac = digits <= 0 ? '' : `.${local.slice(20, 23).padEnd(digits, '0').slice(0, digits)}`;
  const sign = offsetMin < 0 ? '-' : '+';
  const a = Math.abs(offsetMin);
  const zone = offsetMin === 0 ? 'Z' : `${sign}${String(Math.floor(a / 60)).padStart(2, '0')}:${String(a % 60).padStart(2, '0')}`;
  return `${base}${frac}${zone}`;
}

describe('Unix time: below 10^11 seconds, from 10^11 milliseconds', () => {
  it('a second is its whole second: the start at .000, an inclusive end at .999, an instant at .000', () => {
    fc.assert(
      fc.property(anySecond, (s) => {
        fc.pre(s < SECONDS_THRESHOLD);
        expect(parseTime(String(s), 'start')).toEqual(ok(s * 1000));
        expect(parseTime(String(s), 'instant')).toEqual(ok(s * 1000));
        expect(parseTime(String(s), 'end')).toEqual(ok(s * 1000 + 999));
        // A JSON number (outage bodies) reads the same as its digits.
        expect(parseTime(s, 'end')).toEqual(ok(s * 1000 + 999));
      }),
    );
  });

  it('milliseconds are exact at every edge', () => {
    fc.assert(
      fc.property(fc.integer({ min: SECONDS_THRESHOLD, max: MAX_TIME_MS }), (ms) => {
        for (const e of EDGES) expect(parseTime(String(ms), e)).toEqual(ok(ms));
      }),
    );
  });

  it('the README case: end_timestamp=1772409599 includes 23:59:59.999 of 2026-03-01', () => {
    expect(parseTime('1772409599', 'end')).toEqual(ok(Date.UTC(2026, 2, 1, 23, 59, 59, 999)));
    expect(parseTime('1772409599999', 'end')).toEqual(ok(Date.UTC(2026, 2, 1, 23, 59, 59, 999)));
    expect(parseTime('1772409599000', 'end')).toEqual(ok(Date.UTC(2026, 2, 1, 23, 59, 59, 0)));
  });
});

describe('ISO 8601 with a zone', () => {
  const offset = fc.integer({ min: -(23 * 60 + 59), max: 23 * 60 + 59 });

  it('with milliseconds (or more digits) is that exact millisecond, in any zone, at every edge', () => {
    fc.assert(
      fc.property(anyMs, offset, fc.integer({ min: 3, max: 9 }), (ms, off, digits) => {
        const local = ms + off * 60_000;
        fc.pre(local >= 0 && local <= MAX_TIME_MS);
        for (const e of EDGES) expect(parseTime(iso(ms, off, digits), e), iso(ms, off, digits)).toEqual(ok(ms));
      }),
    );
    expect(parseTime('2026-03-01T23:59:59.999Z', 'end')).toEqual(ok(Date.UTC(2026, 2, 1, 23, 59, 59, 999)));
  });

  it('to the second covers the second, to the minute the minute, a fraction of n < 3 digits its 10^(3-n) ms', () => {
    fc.assert(
      fc.property(anyMs, offset, fc.integer({ min: -1, max: 2 }), (ms, off, digits) => {
        const local = ms + off * 60_000;
        fc.pre(local >= 0 && local <= MAX_TIME_MS);
        const unit = digits === -1 ? 60_000 : digits === 0 ? 1000 : 10 ** (3 - digits);
        // The unit starts where local time truncates to it (zones are whole minutes).
        const first = Math.floor(local / unit) * unit - off * 60_000;
        const text = iso(ms, off, digits);
        fc.pre(first >= 0 && first + unit - 1 <= MAX_TIME_MS);
        expect(parseTime(text, 'start'), text).toEqual(ok(first));
        expect(parseTime(text, 'instant'), text).toEqual(ok(first));
        expect(parseTime(text, 'end'), text).toEqual(ok(first + unit - 1));
      }),
    );
  });

  it('seconds as Unix time and as ISO name the same span', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: SECONDS_THRESHOLD - 1 }), (s) => {
        fc.pre(s * 1000 + 999 <= MAX_TIME_MS);
        const text = new Date(s * 1000).toISOString().replace('.000Z', 'Z');
        for (const e of EDGES) expect(parseTime(text, e)).toEqual(parseTime(String(s), e));
      }),
    );
  });

  it('a time without a zone is refused, saying so; so are impossible dates and times', () => {
    for (const t of ['2026-03-01T12:00:00', '2026-03-01T12:00', '2026-03-01T12:00:00.123']) {
      const r = parseTime(t, 'start');
      expect(r.ok, t).toBe(false);
      expect(!r.ok && r.message, t).toContain('zone');
    }
    for (const t of ['2026-02-30T00:00Z', '2026-03-01T24:00Z', '2026-03-01T12:60Z', '2026-03-01T12:00:60Z', '2026-03-01T12:00+24:00', '2026-03-01 12:00Z', '2026-03-01T12Z', '2026-03-01T12:00:00,5Z']) {
      expect(parseTime(t, 'start').ok, t).toBe(false);
    }
  });
});

describe('UTC dates', () => {
  it('a date is its whole UTC day', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Math.floor(MAX_TIME_MS / DAY) }), (d) => {
        const text = new Date(d * DAY).toISOString().slice(0, 10);
        expect(parseTime(text, 'start')).toEqual(ok(d * DAY));
        expect(parseTime(text, 'instant')).toEqual(ok(d * DAY));
        expect(parseTime(text, 'end')).toEqual(ok(d * DAY + DAY - 1));
      }),
    );
  });
});

describe('anything else', () => {
  it('never throws; a refusal says what is accepted; an accepted value lies in range with start <= end', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.integer().map(String), fc.double().map(String), fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), fc.anything()), (raw) => {
        const r = parseTime(raw, 'start');
        const e = parseTime(raw, 'end');
        expect(r.ok).toBe(e.ok);
        if (r.ok && e.ok) {
          expect(r.value).toBeGreaterThanOrEqual(0);
          expect(e.value).toBeLessThanOrEqual(MAX_TIME_MS);
          expect([1, 10, 100, 1000, 60_000, DAY]).toContain(e.value - r.value + 1);
        } else if (!r.ok) {
          expect(r.message).toMatch(/must|needs/);
        }
      }),
      { numRuns: 2000 },
    );
    for (const bad of ['-1', '1.5', '1e12', '', 'now', '0x10', '253402300799999', '2149-06-07', '1969-12-31T23:59:59Z', '2149-06-06T23:59:59.999-00:01', '１２３', -1, 1.5, null, {}]) {
      expect(parseTime(bad, 'start').ok, String(bad)).toBe(false);
    }
  });
});

describe('an inclusive end covers the whole second it names, where a route reasons about an end', () => {
  const value = (raw: string, edge: TimeEdge) => {
    const r = parseTime(raw, edge);
    if (!r.ok) throw new Error(r.message);
    return r.value;
  };
  const seconds = fc.integer({ min: 0, max: 5_000_000_000 });

  it('a window of whole seconds spans at most N seconds exactly when its ends, as written, are at most N seconds apart', () => {
    fc.assert(
      fc.property(seconds, fc.integer({ min: 0, max: 3 * 86_400 }), fc.integer({ min: 1, max: 2 * 86_400 }), (s, len, maxS) => {
        // The reference: the seconds as written, before any reading of the end.
        expect(spansAtMost(value(String(s), 'start'), value(String(s + len), 'end'), maxS * 1000)).toBe(len <= maxS);
      }),
    );
  });

  it('a day in seconds, midnight to the next midnight, is one day; a second more is not; milliseconds count as given', () => {
    const d0 = Date.UTC(2026, 2, 1) / 1000;
    expect(spansAtMost(value(String(d0), 'start'), value(String(d0 + 86_400), 'end'), DAY)).toBe(true);
    expect(spansAtMost(value(String(d0), 'start'), value(String(d0 + 86_401), 'end'), DAY)).toBe(false);
    expect(spansAtMost(value('2026-03-01', 'start'), value('2026-03-01', 'end'), DAY)).toBe(true);
  });

  it('an end recorded under the old reading (the second at .000) is the same end as the second read to .999, and no other', () => {
    fc.assert(
      fc.property(seconds, fc.integer({ min: -2_000, max: 2_000 }), (s, shift) => {
        const end = value(String(s), 'end');
        expect(sameInclusiveEnd(s * 1000, end)).toBe(true);
        expect(sameInclusiveEnd(end, end)).toBe(true);
        const other = end + shift;
        expect(sameInclusiveEnd(other, end)).toBe(shift === 0 || shift === -999);
      }),
    );
    // An end given in milliseconds names that millisecond only.
    expect(sameInclusiveEnd(1_772_409_599_000, 1_772_409_599_500)).toBe(false);
  });
});

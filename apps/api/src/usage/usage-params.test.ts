import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import { MAX_TIMESTAMP_MS } from '../http/params.ts';
import { bucketCount, bucketStarts, decodeRecentCursor, encodeRecentCursor, fillSeries, parseInstant, parseStatus } from './usage-params.ts';

describe('time parameters of the usage endpoints', () => {
  it('a date is its first millisecond as a lower bound and its last as an upper bound', () => {
    expect(parseInstant('2026-05-01', 'start')).toEqual({ ok: true, value: Date.UTC(2026, 4, 1) });
    expect(parseInstant('2026-05-31', 'end')).toEqual({ ok: true, value: Date.UTC(2026, 5, 1) - 1 });
  });

  it('Unix seconds below 10^11, milliseconds from there; ISO date-times with Z or an offset', () => {
    expect(parseInstant('1777600000', 'start')).toEqual({ ok: true, value: 1777600000000 });
    expect(parseInstant('1777600000123', 'end')).toEqual({ ok: true, value: 1777600000123 });
    expect(parseInstant('2026-05-01T10:00:00Z', 'start')).toEqual({ ok: true, value: Date.UTC(2026, 4, 1, 10) });
    expect(parseInstant('2026-05-01T12:00:00.5+02:00', 'start')).toEqual({ ok: true, value: Date.UTC(2026, 4, 1, 10, 0, 0, 500) });
  });

  it('refuses anything else with a message, never throws', () => {
    for (const bad of ['2026-02-30', '2026-13-01', '2026-02-30T00:00Z', '2026-04-31T10:00:00+02:00', 'yesterday', '-5', '1.5', '2026-05-01T10:00:00', '2026-05-01 10:00', '', '9'.repeat(17), '99999999999999', '2150-01-01']) {
      const r = parseInstant(bad, 'start');
      expect(r.ok, bad).toBe(false);
    }
    fc.assert(
      fc.property(fc.string(), (s) => {
        const r = parseInstant(s, 'end');
        if (r.ok) expect(r.value).toBeGreaterThanOrEqual(0);
        if (r.ok) expect(r.value).toBeLessThanOrEqual(MAX_TIMESTAMP_MS);
      }),
    );
  });

  it('status: a code or a class', () => {
    expect(parseStatus('429')).toEqual({ ok: true, value: { label: '429', min: 429, max: 429 } });
    expect(parseStatus('2XX')).toEqual({ ok: true, value: { label: '2xx', min: 200, max: 299 } });
    for (const bad of ['600', '20', 'ok', '2x', '']) expect(parseStatus(bad).ok, bad).toBe(false);
  });
});

describe('timeframe buckets', () => {
  it('cover the window with aligned, consecutive buckets, as many as bucketCount says', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4e12 }), fc.integer({ min: 0, max: 40 * 86_400_000 }), fc.constantFrom('hour' as const, 'day' as const), (from, span, interval) => {
        const to = from + span;
        const starts = bucketStarts(from, to, interval);
        const step = interval === 'hour' ? 3_600_000 : 86_400_000;
        expect(starts.length).toBe(bucketCount(from, to, interval));
        expect(starts[0]).toBeLessThanOrEqual(from);
        expect(from - starts[0]!).toBeLessThan(step);
        expect(starts[starts.length - 1]).toBeLessThanOrEqual(to);
        expect(starts[starts.length - 1]! + step).toBeGreaterThan(to);
        for (const [i, s] of starts.entries()) {
          expect(s % step).toBe(0);
          if (i > 0) expect(s - starts[i - 1]!).toBe(step);
        }
      }),
    );
  });

  it('fillSeries keeps the rows it has and puts zeros in the gaps', () => {
    const starts = [0, 10, 20, 30];
    const rows = [{ start: 10, n: 4 }, { start: 30, n: 1 }];
    expect(fillSeries(starts, rows, (start) => ({ start, n: 0 }))).toEqual([{ start: 0, n: 0 }, { start: 10, n: 4 }, { start: 20, n: 0 }, { start: 30, n: 1 }]);
  });
});

describe('recent-requests cursor', () => {
  const secret = randomBytes(32);

  it('round-trips for its user', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 128 }), fc.integer({ min: 0, max: 2 ** 45 }), fc.uuid(), (user, ts, id) => {
        const c = encodeRecentCursor(secret, user, { ts, requestId: id });
        expect(decodeRecentCursor(secret, c, user)).toEqual({ ok: true, value: { ts, requestId: id } });
      }),
    );
  });

  it('is refused for another user, with another secret, or altered', () => {
    const c = encodeRecentCursor(secret, 'alice', { ts: 1, requestId: 'r' });
    expect(decodeRecentCursor(secret, c, 'bob').ok).toBe(false);
    expect(decodeRecentCursor(randomBytes(32), c, 'alice').ok).toBe(false);
    const [v, body, mac] = c.split('.') as [string, string, string];
    const other = encodeRecentCursor(secret, 'alice', { ts: 2, requestId: 'r' }).split('.')[1];
    expect(decodeRecentCursor(secret, `${v}.${other}.${mac}`, 'alice').ok).toBe(false);
    expect(decodeRecentCursor(secret, `${v}.${body}`, 'alice').ok).toBe(false);
    expect(decodeRecentCursor(secret, 'garbage', 'alice').ok).toBe(false);
    fc.assert(
      fc.property(fc.string(), (s) => {
        expect(decodeRecentCursor(secret, s, 'alice').ok).toBe(false);
      }),
    );
  });
});

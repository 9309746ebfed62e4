import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_RECEIVED_MS, isoMs, normaliseConditionId, receiveTimeError, utcDate } from './ids.ts';

/** The rule read plainly, with no memory of earlier answers. */
function reference(field: string, v: unknown): string | null {
  const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/;
  if (typeof v !== 'string' || !iso.test(v) || !Number.isFinite(Date.parse(v))) return `${field} is not an ISO 8601 time: ${JSON.stringify(v ?? null)}`;
  const ms = Date.parse(v);
  if (ms < 0 || ms > MAX_RECEIVED_MS) return `${field} ${v} is outside 1970..${isoMs(MAX_RECEIVED_MS)}, the receive times the ingest sequence numbers`;
  return null;
}

describe('receiveTimeError', () => {
  // It remembers the minute of the last good time: whatever came before, the answer is the rule's.
  it('property: answers as the plain rule, for times of the minute it saw last and any other', () => {
    const minute = fc.constantFrom('2026-03-01T08:00:', '1970-01-01T00:00:', '2039-09-07T15:46:', '2039-09-07T15:47:', '2024-02-29T23:59:');
    const tail = fc.oneof(fc.stringMatching(/^[0-6]\d\.\d{3}Z$/), fc.stringMatching(/^[0-9.:Z+-]{0,8}$/), fc.constantFrom('35.551Z', '35.552Z', '00.000+01:00', '59.999Z'));
    const time = fc.oneof(fc.tuple(minute, tail).map(([m, t]) => m + t), fc.string(), fc.integer(), fc.constant(null));
    fc.assert(
      fc.property(fc.array(time, { minLength: 1, maxLength: 20 }), (times) => {
        for (const t of times) expect(receiveTimeError('received_at', t)).toBe(reference('received_at', t));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('isoMs', () => {
  // It remembers its last answer and minute: whatever came before, the answer is toISOString's.
  it('property: is toISOString of the instant, asked in any order', () => {
    const edge = fc.constantFrom(0, -0, -1, 1_700_000_000_000, 1_700_000_059_999, 1_700_000_060_000, 8.64e15, 8.64e15 - 1, 8.64e15 + 1, -8.64e15, -8.64e15 - 1, 1.5, -0.5, 59_999.9);
    const near = fc.tuple(fc.constantFrom(0, 1_700_000_000_000, -62_135_596_800_000, 8.64e15 - 60_000), fc.integer({ min: -120_000, max: 120_000 })).map(([b, d]) => b + d);
    const ms = fc.oneof(edge, near, fc.integer({ min: -8.7e15, max: 8.7e15 }), fc.double());
    const answer = (m: number): string => {
      try {
        return new Date(m).toISOString();
      } catch (e) {
        return `throws ${(e as Error).name}`;
      }
    };
    const ours = (m: number): string => {
      try {
        return isoMs(m);
      } catch (e) {
        return `throws ${(e as Error).name}`;
      }
    };
    fc.assert(
      fc.property(fc.array(ms, { maxLength: 12 }), (list) => {
        for (const m of list) expect(ours(m)).toBe(answer(m));
      }),
      { numRuns: 3000 },
    );
  });
});

describe('normaliseConditionId', () => {
  it('answers the same, asked again', () => {
    const raw = ` 0X${'AB'.repeat(32)} `;
    expect(normaliseConditionId(raw)).toBe(`0x${'ab'.repeat(32)}`);
    expect(normaliseConditionId(raw)).toBe(`0x${'ab'.repeat(32)}`);
    expect(normaliseConditionId('0xzz')).toBeNull();
    expect(normaliseConditionId('0xzz')).toBeNull();
  });
});

describe('utcDate', () => {
  it('gives the date of any instant, asked in any order (the last day is remembered)', () => {
    const plain = (ms: number) => {
      try {
        return new Date(ms).toISOString().slice(0, 10);
      } catch (e) {
        return (e as Error).name;
      }
    };
    const ours = (ms: number) => {
      try {
        return utcDate(ms);
      } catch (e) {
        return (e as Error).name;
      }
    };
    const day = 86_400_000;
    const instant = fc.oneof(
      fc.integer({ min: -3 * day, max: 3 * day }),
      fc.double({ min: -2 * day, max: 2 * day }),
      fc.integer({ min: 1_700_000_000_000, max: 1_700_000_000_000 + 3 * day }),
      fc.constantFrom(8.64e15, 8.64e15 + 1, -8.64e15, -8.64e15 - 1, -0.5, 0.5, Number.NaN, -1, day - 1, day, Infinity),
    );
    fc.assert(
      fc.property(fc.array(instant, { minLength: 1, maxLength: 20 }), (list) => {
        for (const ms of list) expect(ours(ms), String(ms)).toBe(plain(ms));
      }),
      { numRuns: 3000 },
    );
  });
});

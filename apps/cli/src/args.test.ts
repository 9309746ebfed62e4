import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normaliseConditionId } from '@booktape/domain';
import { UsageError, parseMarketArg, parseTimeArg, parseVenueArg } from './args.ts';

const usageMessage = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    if (e instanceof UsageError) return e.message;
    throw e;
  }
  throw new Error('no usage error');
};

describe('venue names on the command line', () => {
  it('takes a, b, the API names and the venues own names, any case', () => {
    for (const [raw, venue] of [
      ['a', 'exchange-a'], ['exchange-a', 'exchange-a'], ['polymarket', 'exchange-a'], ['Polymarket', 'exchange-a'],
      ['b', 'exchange-b'], ['exchange-b', 'exchange-b'], ['kalshi', 'exchange-b'], ['KALSHI', 'exchange-b'],
    ] as const) {
      expect(parseVenueArg(raw)).toBe(venue);
    }
    expect(usageMessage(() => parseVenueArg('c'))).toBe('--venue must be one of a, b, exchange-a, exchange-b, polymarket, kalshi, got "c"');
    expect(usageMessage(() => parseVenueArg(undefined))).toContain('got ""');
  });
});

describe('market ids are checked as their error text says', () => {
  it('an exchange A condition id is 0x + 64 hex digits: shorter or longer hex is refused (0xabc was accepted)', () => {
    expect(usageMessage(() => parseMarketArg('exchange-a', '0xabc', '--market'))).toBe('--market "0xabc" is not a condition id (0x + 64 hex digits)');
    fc.assert(
      fc.property(fc.stringMatching(/^(0x)?[0-9a-fA-F]{1,80}$/), (raw) => {
        const digits = raw.replace(/^0x/, '').length;
        if (digits === 64) expect(parseMarketArg('exchange-a', raw, '--market')).toBe(normaliseConditionId(raw));
        else expect(() => parseMarketArg('exchange-a', raw, '--market')).toThrow('0x + 64 hex digits');
      }),
    );
  });

  it('an exchange B ticker is upper-cased; other characters are refused', () => {
    expect(parseMarketArg('exchange-b', 'kxfill-1', '--ticker')).toBe('KXFILL-1');
    expect(usageMessage(() => parseMarketArg('exchange-b', 'a b', '--ticker'))).toContain('is not a ticker');
  });
});

describe('time options', () => {
  it('an end covers the whole unit given: a date its day, seconds their second, ISO its precision', () => {
    const t = Date.UTC(2026, 2, 1, 23, 59, 59);
    expect(parseTimeArg('1772409599', '--to', 'last')).toBe(1772409599_999);
    expect(parseTimeArg('1772409599', '--from', 'first')).toBe(1772409599_000);
    expect(parseTimeArg('1772409599123', '--to', 'last')).toBe(1772409599123);
    expect(parseTimeArg('2026-03-01', '--to', 'last')).toBe(Date.UTC(2026, 2, 1, 23, 59, 59, 999));
    expect(parseTimeArg('2026-03-01', '--from', 'first')).toBe(Date.UTC(2026, 2, 1));
    expect(parseTimeArg('2026-03-01T23:59:59Z', '--to', 'last')).toBe(t + 999);
    expect(parseTimeArg('2026-03-01T23:59:59.5Z', '--to', 'last')).toBe(t + 599);
    expect(parseTimeArg('2026-03-01T23:59:59.123Z', '--to', 'last')).toBe(t + 123);
    expect(parseTimeArg('2026-03-01T23:59Z', '--to', 'last')).toBe(t + 999);
    expect(parseTimeArg('2026-03-02T01:00:00+01:00', '--from')).toBe(Date.UTC(2026, 2, 2));
  });

  it('every form of one instant reads the same start; an end is never before its start', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4_000_000_000 }), (s) => {
        const iso = new Date(s * 1000).toISOString().replace('.000Z', 'Z');
        expect(parseTimeArg(String(s), '--from')).toBe(s * 1000);
        expect(parseTimeArg(iso, '--from')).toBe(s * 1000);
        expect(parseTimeArg(String(s), '--to', 'last')).toBe(s * 1000 + 999);
        expect(parseTimeArg(iso, '--to', 'last')).toBe(s * 1000 + 999);
      }),
    );
  });

  it('refuses what is not a time, naming the option and the forms it takes', () => {
    for (const raw of ['tomorrow', '2026-02-30', '2026-02-30T10:00:00Z', '2026-03-01T10:00:00', '-5', '1.5']) {
      expect(usageMessage(() => parseTimeArg(raw, '--at'))).toMatch(/^--at must be/);
    }
    expect(usageMessage(() => parseTimeArg(undefined, '--at'))).toContain('--at is required');
  });
});

import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { CursorError, decodeCursor, encodeCursor, type CursorScope } from './cursor.ts';

const secret = randomBytes(32);
const scope: CursorScope = { venue: 'exchange-a', market: '0xabc', start: 1_772_323_200_000, end: 1_772_409_599_999 };
const position = ['1772323200123', '14867324888703565824', '0xhash', '7132104567', 'price_change'];

const arbScope = fc.record({
  venue: fc.constantFrom('exchange-a', 'exchange-b'),
  market: fc.string({ minLength: 1, maxLength: 80 }),
  start: fc.integer({ min: 0, max: 253_402_300_799_999 }),
  end: fc.integer({ min: 0, max: 253_402_300_799_999 }),
});
const arbPosition = fc.array(fc.string({ maxLength: 80 }), { minLength: 4, maxLength: 5 });

describe('cursor codec', () => {
  it('round-trips any position for the scope it was issued for', () => {
    fc.assert(
      fc.property(arbScope, arbPosition, (s, p) => {
        expect(decodeCursor(secret, encodeCursor(secret, s, p), s, p.length)).toEqual(p);
      }),
    );
  });

  it('is opaque URL-safe text', () => {
    const c = encodeCursor(secret, scope, position);
    expect(c).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(encodeURIComponent(c)).toBe(c);
  });

  it('refuses any single altered character', () => {
    const c = encodeCursor(secret, scope, position);
    fc.assert(
      fc.property(fc.nat({ max: c.length - 1 }), fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.'), (i, ch) => {
        fc.pre(c[i] !== ch);
        const altered = c.slice(0, i) + ch + c.slice(i + 1);
        expect(() => decodeCursor(secret, altered, scope, position.length)).toThrow(CursorError);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses truncated and extended cursors', () => {
    const c = encodeCursor(secret, scope, position);
    for (let n = 0; n < c.length; n++) expect(() => decodeCursor(secret, c.slice(0, n), scope, position.length)).toThrow(CursorError);
    expect(() => decodeCursor(secret, `${c}A`, scope, position.length)).toThrow(CursorError);
    expect(() => decodeCursor(secret, `${c}.x`, scope, position.length)).toThrow(CursorError);
  });

  it('refuses a cursor used with other parameters (foreign cursor)', () => {
    const c = encodeCursor(secret, scope, position);
    const others: CursorScope[] = [
      { ...scope, venue: 'exchange-b' },
      { ...scope, market: '0xabd' },
      { ...scope, start: scope.start + 1 },
      { ...scope, end: scope.end - 1 },
    ];
    for (const o of others) expect(() => decodeCursor(secret, c, o, position.length)).toThrow(/another query/);
  });

  it('a cursor issued when an end in seconds stopped at .000 stays valid for that query, now ending at .999', () => {
    fc.assert(
      fc.property(arbScope, fc.integer({ min: 0, max: 5_662_310_399 }), arbPosition, (s, endS, p) => {
        const legacy = encodeCursor(secret, { ...s, end: endS * 1000 }, p);
        // The same query today: end_timestamp=endS normalises to the second's last millisecond.
        expect(decodeCursor(secret, legacy, { ...s, end: endS * 1000 + 999 }, p.length)).toEqual(p);
        // Only that: any other end is still another query.
        for (const other of [endS * 1000 + 998, endS * 1000 + 1999, endS * 1000 + 1]) expect(() => decodeCursor(secret, legacy, { ...s, end: other }, p.length)).toThrow(/another query/);
      }),
      { numRuns: 200 },
    );
  });

  it('refuses cursors signed with another secret, or forged bodies', () => {
    const c = encodeCursor(randomBytes(32), scope, position);
    expect(() => decodeCursor(secret, c, scope, position.length)).toThrow(CursorError);
    const body = Buffer.from(JSON.stringify([scope.venue, scope.market, scope.start, scope.end, position])).toString('base64url');
    expect(() => decodeCursor(secret, `v1.${body}.${'A'.repeat(43)}`, scope, position.length)).toThrow(CursorError);
  });

  it('refuses a position of the wrong shape even when signed', () => {
    const c = encodeCursor(secret, scope, position.slice(0, 3));
    expect(() => decodeCursor(secret, c, scope, position.length)).toThrow(/malformed/);
  });

  it('refuses garbage without throwing anything but CursorError', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 3000 }), (s) => {
        expect(() => decodeCursor(secret, s, scope, position.length)).toThrow(CursorError);
      }),
    );
  });
});

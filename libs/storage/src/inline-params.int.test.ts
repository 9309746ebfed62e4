import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { inlineParams } from './inline-params.ts';

describe('inlineParams (embedded engine)', () => {
  let t: TestClickHouse;
  beforeAll(async () => {
    t = await tempClickHouse();
  });
  afterAll(async () => {
    await t?.cleanup();
  });

  const SQL = 'SELECT {s:String} AS s, toString({i:Int64}) AS i, toString({u:UInt64}) AS u, toString({d:Date}) AS d, toTypeName({i:Int64}) AS ti, toTypeName({u:UInt64}) AS tu, toTypeName({d:Date}) AS td';
  const run = async (query: string, query_params?: Record<string, unknown>) => {
    const rs = await t.ch.client.query({ query, ...(query_params ? { query_params } : {}), format: 'JSONEachRow' });
    return (await rs.json())[0];
  };

  it('gives the engine the same values and types as binding them, whatever the string holds', async () => {
    const day = fc.integer({ min: 0, max: 40_000 }).map((n) => new Date(Date.UTC(1970, 0, 1) + n * 86_400_000).toISOString().slice(0, 10));
    await fc.assert(
      fc.asyncProperty(
        // Quotes, backslashes, escapes the engine reads in literals, control characters, any Unicode.
        fc.oneof(fc.string({ unit: fc.constantFrom("'", '\\', '"', '`', 'n', 'x', '0', '\n', '\t', '\0', '{', '}', ':', ';', '-', '/', '*') }), fc.string({ unit: 'grapheme' }), fc.string()),
        fc.oneof(fc.integer(), fc.constantFrom(Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 0)),
        fc.nat(),
        day,
        async (s, i, u, d) => {
          const params = { s, i, u, d };
          expect(await run(inlineParams(SQL, params))).toEqual(await run(SQL, params));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('refuses values that are not of the placeholder type, and types it does not know', () => {
    expect(() => inlineParams('SELECT {s:String}', { s: 5 })).toThrow();
    expect(() => inlineParams('SELECT {s:String}', {})).toThrow();
    expect(() => inlineParams('SELECT {i:Int64}', { i: '1 OR 1' })).toThrow();
    expect(() => inlineParams('SELECT {i:Int64}', { i: 1.5 })).toThrow();
    expect(() => inlineParams('SELECT {i:Int64}', { i: 2 ** 60 })).toThrow();
    expect(() => inlineParams('SELECT {u:UInt64}', { u: -1 })).toThrow();
    expect(() => inlineParams('SELECT {d:Date}', { d: "2026-01-01' OR '" })).toThrow();
    expect(() => inlineParams('SELECT {a:Array(String)}', { a: ['x'] })).toThrow();
    expect(() => inlineParams('SELECT {f:Float64}', { f: 1 })).toThrow();
    expect(inlineParams('SELECT {i:Int64}, {u:UInt64}', { i: '-12', u: 3n })).toBe("SELECT CAST('-12' AS Int64), CAST('3' AS UInt64)");
  });
});

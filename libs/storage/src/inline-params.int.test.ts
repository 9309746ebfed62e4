import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { inlineParams, unchained } from './inline-params.ts';

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
          const inlined = inlineParams(SQL, params);
          if (!inlined.ok) throw new Error(inlined.reason);
          expect(await run(inlined.query)).toEqual(await run(SQL, params));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('writes no value that is not of its placeholder type, nor a type it does not know: it says why, never throws', () => {
    const refused = (sql: string, params: Record<string, unknown>) => {
      const r = inlineParams(sql, params);
      return r.ok ? null : r.reason;
    };
    expect(refused('SELECT {s:String}', { s: 5 })).toMatch(/\{s:String\} is not a string/);
    expect(refused('SELECT {s:String}', {})).toMatch(/no value for \{s:String\}/);
    expect(refused('SELECT {i:Int64}', { i: '1 OR 1' })).toMatch(/not an integer/);
    expect(refused('SELECT {i:Int64}', { i: 1.5 })).toMatch(/not an integer/);
    expect(refused('SELECT {i:Int64}', { i: 2 ** 60 })).toMatch(/not an integer/);
    expect(refused('SELECT {i:Int64}', { i: Number.NaN })).toMatch(/not an integer/);
    expect(refused('SELECT {u:UInt64}', { u: -1 })).toMatch(/not an integer/);
    expect(refused('SELECT {d:Date}', { d: "2026-01-01' OR '" })).toMatch(/not a YYYY-MM-DD date/);
    expect(refused('SELECT {a:Array(String)}', { a: ['x'] })).toMatch(/type not written/);
    expect(refused('SELECT {f:Float64}', { f: 1 })).toMatch(/type not written/);
    expect(inlineParams('SELECT {i:Int64}, {u:UInt64}', { i: '-12', u: 3n })).toEqual({ ok: true, query: "SELECT CAST('-12' AS Int64), CAST('3' AS UInt64)" });
  });

  it('never throws, whatever the values: what it cannot write stays bound, with the same answer', async () => {
    // Values of any kind, in or out of their placeholder's type.
    const anyValue = fc.oneof(fc.string(), fc.integer(), fc.double(), fc.bigInt(), fc.constantFrom(null, undefined, true, 2 ** 60, -1, '2026-02-30', ''), fc.array(fc.string(), { maxLength: 2 }));
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom('s', 'i', 'u', 'd', 'x'), anyValue), (params) => {
        const r = inlineParams(SQL, params);
        const u = unchained({ mode: 'embedded' }, SQL, params);
        if (r.ok) expect(u).toEqual({ query: r.query });
        else expect(u).toEqual({ query: SQL, query_params: params });
      }),
      { numRuns: 500 },
    );
    // A type not written into text here stays bound: same answer as binding it.
    const sql = 'SELECT {s:String} AS s, {f:Float64} AS f, {a:Array(String)} AS a';
    const params = { s: "it's", f: 1.5, a: ['x', "y'"] };
    const u = unchained(t.ch, sql, params);
    expect(u).toEqual({ query: sql, query_params: params });
    expect(await run(u.query, u.query_params)).toEqual(await run(sql, params));
  });
});

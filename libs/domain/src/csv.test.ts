import { parse } from 'csv-parse/sync';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { csvField, csvRow } from './csv.ts';

/**
 * RFC 4180 against an independent reader (csv-parse): whatever the fields hold (quotes,
 * commas, CR, LF, CRLF, spaces, non-ASCII), the rows written read back as the same strings.
 */

/** Strings dense in what CSV must quote, and any string at all. */
const awkward = fc.oneof(
  fc.string({ unit: fc.constantFrom('"', ',', '\r', '\n', 'a', ' ', '\t', 'é', '€', '\u2028', "'", ';') }),
  fc.string({ unit: 'grapheme' }),
  fc.string(),
);
/** A table: the same number of fields in every row (what a CSV file is). */
const table = fc.integer({ min: 1, max: 6 }).chain((width) => fc.array(fc.array(awkward, { minLength: width, maxLength: width }), { minLength: 1, maxLength: 20 }));

/** What csv-parse reads back from text (every row as strings, nothing trimmed or cast). */
const readBack = (text: string): string[][] => parse(text, { bom: false, relax_quotes: false }) as string[][];

describe('csvField / csvRow (RFC 4180)', () => {
  it('rows of arbitrary strings read back unchanged', () => {
    fc.assert(
      fc.property(table, (rows) => {
        expect(readBack(rows.map(csvRow).join(''))).toEqual(rows);
      }),
      { numRuns: 2000 },
    );
  });

  it('a field is quoted exactly when it holds a quote, a comma, a CR or an LF', () => {
    fc.assert(
      fc.property(awkward, (s) => {
        const f = csvField(s);
        const must = /[",\r\n]/.test(s);
        expect(f.startsWith('"') && f.endsWith('"') && f.length >= 2).toBe(must);
        if (!must) expect(f).toBe(s);
      }),
    );
  });

  it('null and undefined are empty, objects and arrays their JSON, numbers and booleans their text', () => {
    expect(csvRow([null, undefined, 1.5, true, 10n, { a: 'x,y' }, ['0.5', '1']])).toBe(',,1.5,true,10,"{""a"":""x,y""}","[""0.5"",""1""]"\n');
    expect(readBack(csvRow([{ a: 'x,y' }, ['0.5', '1']]))).toEqual([['{"a":"x,y"}', '["0.5","1"]']]);
  });
});

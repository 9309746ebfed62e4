import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'csv-parse/sync';
import { csvField } from '@booktape/domain';
import { CsvColumnsError, RecordWriter, flatten, openOutput, partialName } from './output.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'booktape-out-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** An Output that keeps what is written. */
const memory = () => {
  let text = '';
  return { out: { write: async (s: string) => void (text += s), commit: async () => {}, abort: async () => {} }, text: () => text };
};

describe('--out FILE', () => {
  it('appears under its name only once complete: written beside it, then renamed', async () => {
    const file = path.join(dir, 'a.ndjson');
    const out = openOutput(file);
    await out.write('{"n":1}\n');
    expect(existsSync(file)).toBe(false);
    expect(existsSync(partialName(file))).toBe(true);
    await out.commit();
    expect(readFileSync(file, 'utf8')).toBe('{"n":1}\n');
    expect(existsSync(partialName(file))).toBe(false);
  });

  it('a failed command leaves neither the file nor the partial one', async () => {
    const file = path.join(dir, 'b.ndjson');
    const out = openOutput(file);
    await out.write('{"n":1}\n');
    await out.abort();
    expect(existsSync(file) || existsSync(partialName(file))).toBe(false);
  });

  it('a directory that does not exist is a failure, not a crash', async () => {
    const out = openOutput(path.join(dir, 'no', 'such', 'dir.csv'));
    await expect(out.write('x').then(() => out.commit())).rejects.toThrow(/ENOENT/);
    await out.abort();
  });
});

describe('formats', () => {
  it('json is one array (empty: []), ndjson a line a record, csv a header then rows', async () => {
    const records = [{ a: 1, b: { c: 'x,y' } }, { a: 2, b: { c: null } }];
    const run = async (format: 'json' | 'ndjson' | 'csv', rs: unknown[]) => {
      const m = memory();
      const w = new RecordWriter(m.out, format);
      for (const r of rs) await w.add(r);
      expect(await w.end()).toBe(rs.length);
      return m.text();
    };
    expect(JSON.parse(await run('json', records))).toEqual(records);
    expect(await run('json', [])).toBe('[]\n');
    expect((await run('ndjson', records)).split('\n').filter(Boolean).map((l) => JSON.parse(l))).toEqual(records);
    expect(await run('csv', records)).toBe('a,b.c\n1,"x,y"\n2,\n');
  });

  const csv = async (records: unknown[], columns?: readonly string[]) => {
    const m = memory();
    const w = new RecordWriter(m.out, 'csv', columns);
    let error: unknown;
    try {
      for (const r of records) await w.add(r);
      await w.end();
    } catch (e) {
      error = e;
    }
    return { text: m.text(), error };
  };

  it('csv: a column only later records have is never dropped silently: refused, with the rule in the message', async () => {
    const { text, error } = await csv([{ a: 1 }, { a: 2, b: { c: 'late' } }]);
    expect(error).toBeInstanceOf(CsvColumnsError);
    expect((error as CsvColumnsError).message).toMatch(/record 2 has a column the CSV header does not \("b\.c"; the header is a\).*use --format json or ndjson/);
    expect(text).toBe('a\n1\n');
  });

  it('csv: known columns lead the header, missing fields are empty cells, an empty list is its header', async () => {
    const records = [{ id: 'k1', name: 'x,"y"' }, { id: 'k2', last_used_at: '2026-03-01T00:00:00Z', name: 'n' }];
    const { text, error } = await csv(records, ['id', 'name', 'last_used_at']);
    expect(error).toBeUndefined();
    expect(parse(text, { columns: true })).toEqual([
      { id: 'k1', name: 'x,"y"', last_used_at: '' },
      { id: 'k2', name: 'n', last_used_at: '2026-03-01T00:00:00Z' },
    ]);
    expect((await csv([], ['side', 'price', 'size'])).text).toBe('side,price,size\n');
    // A field of the first record the command did not know is kept, after the known ones.
    expect((await csv([{ extra: 1, id: 'k' }], ['id'])).text).toBe('id,extra\nk,1\n');
  });

  it('csv fields are quoted when they must be; arrays are their JSON text', () => {
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('a\nb')).toBe('"a\nb"');
    expect(csvField(['0.5', '10'])).toBe('"[""0.5"",""10""]"');
    expect(flatten({ x: { y: { z: 1 } }, l: [1] })).toEqual({ 'x.y.z': 1, l: [1] });
  });
});

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { sqlString } from './clickhouse.ts';
import { detectImportFormat } from './index.ts';
import { writePmxtFile } from './pmxt.test-support.ts';

/**
 * Which format a file to import is, told from its content (docs/rules/imports.md#formats):
 * each kind of file written here the way its producer writes it (the columns and header of
 * booktape's exports as docs/api.md lists them, a capture file's lines), under names that
 * do not give the format away.
 */

let t: TestClickHouse;
let dir: string;
beforeAll(async () => {
  t = await tempClickHouse();
  dir = mkdtempSync(path.join(tmpdir(), 'booktape-format-'));
});
afterAll(async () => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  await t?.cleanup();
});

const parquet = async (name: string, structure: string, select: string) => {
  const file = path.join(dir, name);
  await t.ch.client.command({ query: `INSERT INTO FUNCTION file(${sqlString(file)}, 'Parquet', ${sqlString(structure)}) ${select} SETTINGS engine_file_truncate_on_insert = 1` });
  return file;
};

describe('detectImportFormat', () => {
  it('tells PMXT v2, booktape Parquet and CSV exports and capture files apart by content', async () => {
    const pmxt = path.join(dir, 'a.bin');
    await writePmxtFile(t.ch, pmxt, []);
    expect(await detectImportFormat(t.ch, pmxt)).toBe('pmxt-v2');

    const exportA = await parquet(
      'b.bin',
      "timestamp DateTime64(3, 'UTC'), asset_id String, event_type String, side String, price Nullable(Decimal(38, 18)), size Nullable(Decimal(38, 18)), hash String, received_at DateTime64(3, 'UTC')",
      "SELECT now64(3), '1', 'book', 'bid', 0.5, 10, '0x1', now64(3)",
    );
    expect(await detectImportFormat(t.ch, exportA)).toBe('booktape-parquet');
    const exportB = await parquet(
      'c.bin',
      "timestamp DateTime64(3, 'UTC'), ticker String, type String, side String, price Nullable(Decimal(38, 18)), size Nullable(Decimal(38, 18)), delta Nullable(Decimal(38, 18)), received_at DateTime64(3, 'UTC')",
      "SELECT now64(3), 'KX', 'delta', 'yes', 0.5, NULL, 5, now64(3)",
    );
    expect(await detectImportFormat(t.ch, exportB)).toBe('booktape-parquet');

    const csvA = path.join(dir, 'd.bin');
    writeFileSync(csvA, gzipSync('timestamp,asset_id,event_type,side,price,size,hash,received_at\n1773151201000,5551,book,bid,0.45,100,0xb1,2026-03-10T14:00:01.007Z\n'));
    expect(await detectImportFormat(t.ch, csvA)).toBe('booktape-csv');
    const csvB = path.join(dir, 'e.bin');
    writeFileSync(csvB, 'timestamp,ticker,type,side,price,size,delta,seq,sid,expected_seq,received_at,data\n');
    expect(await detectImportFormat(t.ch, csvB)).toBe('booktape-csv');

    const line = '{"venue":"exchange-a","received_at":"2026-03-01T12:00:00.123Z","frame":[{"event_type":"book"}]}\n';
    const capGz = path.join(dir, 'f.bin');
    // Cut mid-stream (a capture file still being written): the first line is enough.
    const gz = gzipSync(line.repeat(5000));
    writeFileSync(capGz, gz.subarray(0, Math.floor(gz.length / 2)));
    expect(await detectImportFormat(t.ch, capGz)).toBe('capture');
    const cap = path.join(dir, 'g.bin');
    writeFileSync(cap, line.replace('exchange-a', 'exchange-b'));
    expect(await detectImportFormat(t.ch, cap)).toBe('capture');
  });

  it('names the file of no format it imports', async () => {
    const other = await parquet('h.parquet', 'ticker String, yes Float64', "SELECT 'KX', 0.5");
    await expect(detectImportFormat(t.ch, other)).rejects.toThrow(/h\.parquet: a Parquet file of no format booktape imports \(columns ticker, yes\)/);
    const text = path.join(dir, 'i.csv');
    writeFileSync(text, 'date,open,close\n');
    await expect(detectImportFormat(t.ch, text)).rejects.toThrow(/i\.csv: not a file of a format booktape imports/);
    const empty = path.join(dir, 'j.parquet');
    writeFileSync(empty, '');
    await expect(detectImportFormat(t.ch, empty)).rejects.toThrow(/j\.parquet: empty file/);
    const cut = path.join(dir, 'k.parquet');
    writeFileSync(cut, 'PAR1\0\0\0');
    await expect(detectImportFormat(t.ch, cut)).rejects.toThrow(/k\.parquet: not a readable Parquet file/);
    await expect(detectImportFormat(t.ch, path.join(dir, 'absent'))).rejects.toThrow(/absent: no such file/);
  });
});

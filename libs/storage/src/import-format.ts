import { open } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { VENUES } from '@booktape/domain';
import { sqlString, type ClickHouse } from './clickhouse.ts';
import { RAW_EXPORT_COLUMNS } from './booktape-import.ts';
import { ImportError, PMXT_FORMAT } from './pmxt-import.ts';

/**
 * The formats `booktape import --format` names (docs/rules/imports.md#formats), and which
 * of them a file is when `--format` is not given: told from the file's content (Parquet's
 * magic and columns; a gzip or text file's first line), never from its name alone.
 */
export const IMPORT_FORMATS = [PMXT_FORMAT, 'booktape-parquet', 'booktape-csv', 'capture'] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];

const PMXT = ['timestamp_received', 'timestamp', 'market', 'event_type', 'asset_id', 'bids', 'asks', 'price', 'size', 'side', 'best_bid', 'best_ask'];

/**
 * A booktape raw export (RAW_EXPORT_COLUMNS) is told by the columns every venue's begins
 * with: time, book, type and the level's side, price and size (the rest, the venue's own,
 * import checks); a CSV export by the first two, its header's start.
 */
const EXPORT_LEAD = 6;
const alternatives = (texts: readonly string[]) => `(${texts.map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})`;
const EXPORT_CSV_HEADER = new RegExp(`^${alternatives(Object.values(RAW_EXPORT_COLUMNS).map((cols) => cols.slice(0, 2).join(',')))},`);
/** A capture file's line starts with its venue, one of VENUES. */
const CAPTURE_LINE = new RegExp(`^\\{"venue":"${alternatives(VENUES)}"`);

async function head(file: string, n: number): Promise<Buffer> {
  const fd = await open(file, 'r').catch((e: NodeJS.ErrnoException) => {
    throw new ImportError(file, e.code === 'ENOENT' ? 'no such file' : String(e.message).split('\n')[0]!);
  });
  try {
    const buf = Buffer.alloc(n);
    const { bytesRead } = await fd.read(buf, 0, n, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fd.close();
  }
}

/** The first line of a text file, or of a gzip file's text (what of it the first 64 KiB hold). */
function firstLine(bytes: Buffer): string | null {
  let text: Buffer = bytes;
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    try {
      text = gunzipSync(bytes, { finishFlush: 2 /* Z_SYNC_FLUSH: a cut stream gives what it holds */ });
    } catch {
      return null;
    }
  }
  const s = text.toString('utf8', 0, Math.min(text.length, 4096));
  return s.split('\n')[0] ?? null;
}

export async function detectImportFormat(ch: ClickHouse, file: string): Promise<ImportFormat> {
  const bytes = await head(file, 65_536);
  if (bytes.length === 0) throw new ImportError(file, 'empty file (0 bytes): not a file any format imports');
  if (bytes.subarray(0, 4).toString('latin1') === 'PAR1') {
    let names: Set<string>;
    try {
      const rs = await ch.client.query({ query: `DESCRIBE file(${sqlString(file)}, 'Parquet')`, format: 'JSONEachRow' });
      names = new Set((await rs.json<{ name: string }>()).map((c) => c.name));
    } catch (e) {
      throw new ImportError(file, `not a readable Parquet file (${String((e as Error).message).split('\n')[0]!.slice(0, 300)})`);
    }
    if (PMXT.every((c) => names.has(c))) return PMXT_FORMAT;
    if (Object.values(RAW_EXPORT_COLUMNS).some((cols) => cols.slice(0, EXPORT_LEAD).every((c) => names.has(c)))) return 'booktape-parquet';
    throw new ImportError(file, `a Parquet file of no format booktape imports (columns ${[...names].slice(0, 12).join(', ')}); formats: ${IMPORT_FORMATS.join(', ')}`);
  }
  const line = firstLine(bytes);
  if (line !== null && EXPORT_CSV_HEADER.test(line)) return 'booktape-csv';
  if (line !== null && CAPTURE_LINE.test(line)) return 'capture';
  throw new ImportError(file, `not a file of a format booktape imports (${IMPORT_FORMATS.join(', ')}): neither Parquet, nor a booktape CSV export, nor a capture file`);
}

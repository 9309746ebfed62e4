import { createWriteStream, type WriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { once } from 'node:events';
import { csvRow } from '@booktape/domain';
import type { Format } from './args.ts';

/**
 * Where a user command writes: stdout, or `--out FILE`. A file is written beside its name
 * (`FILE.partial`) and renamed into place only when everything was written, so a command
 * that failed halfway (a refused page, a broken connection) never leaves a file that looks
 * whole, and a reader polling for FILE sees it complete or not at all.
 */
export interface Output {
  write(text: string): Promise<void>;
  /** Everything was written: flush, and move the file into place. */
  commit(): Promise<void>;
  /** The command failed: remove what was written to a file (stdout cannot be taken back). */
  abort(): Promise<void>;
}

export function partialName(out: string): string {
  return `${out}.partial`;
}

export function openOutput(out: string | undefined): Output {
  if (out === undefined) {
    const stdout = process.stdout;
    return {
      async write(text) {
        if (!stdout.write(text)) await once(stdout, 'drain');
      },
      async commit() {},
      async abort() {},
    };
  }
  const partial = partialName(out);
  let stream: WriteStream | undefined;
  let failed: Error | undefined;
  let settled: Promise<void> | undefined;
  const file = async (): Promise<WriteStream> => {
    if (stream === undefined) {
      const s = createWriteStream(partial);
      stream = s;
      // Opened before the first write: a path that cannot be written fails at once.
      const opened = Promise.race([once(s, 'open'), once(s, 'error')]);
      // Settles once, whichever comes first; an error before anyone waits is kept in `failed`.
      settled = new Promise<void>((resolve, reject) => {
        s.once('finish', resolve);
        s.once('error', (e) => reject((failed ??= e)));
      });
      settled.catch(() => undefined);
      await opened.catch(() => undefined);
    }
    return stream;
  };
  return {
    async write(text) {
      const s = await file();
      if (failed) throw failed;
      if (!s.write(text)) await Promise.race([once(s, 'drain'), settled]);
      if (failed) throw failed;
    },
    async commit() {
      const s = await file();
      if (failed) throw failed;
      s.end();
      await settled;
      await rename(partial, out);
    },
    async abort() {
      stream?.destroy();
      await rm(partial, { force: true });
    },
  };
}

/** A record of a CSV list that has a column its header does not: CSV cannot add one after the header. */
export class CsvColumnsError extends Error {
  constructor(
    readonly column: string,
    readonly record: number,
    readonly columns: readonly string[],
  ) {
    super(
      `record ${record} has a column the CSV header does not (${JSON.stringify(column)}; the header is ${columns.join(',')}): ` +
        'a CSV cannot add a column after its header, and dropping it would lose data; use --format json or ndjson',
    );
    this.name = 'CsvColumnsError';
  }
}

/**
 * A list of records in a format: json (one array), ndjson (a line each) or csv.
 *
 * CSV columns: `columns` when the command knows them (the fields its answer can have, in
 * order; nested ones by dotted names), then any other field of the first record; without
 * them, the first record's fields. A field missing from a record is an empty cell. A later
 * record with a field the header lacks is refused (CsvColumnsError), never dropped: the
 * header is written before the rows that follow it, so the column cannot be added. With
 * known columns, an empty list is still its header.
 */
export class RecordWriter {
  private n = 0;
  private header: string[] | undefined;

  constructor(
    private readonly out: Output,
    private readonly format: Format,
    private readonly columns?: readonly string[],
  ) {}

  async add(record: unknown): Promise<void> {
    if (this.format === 'ndjson') await this.out.write(`${JSON.stringify(record)}\n`);
    else if (this.format === 'json') await this.out.write(`${this.n === 0 ? '[\n' : ',\n'}${JSON.stringify(record)}`);
    else {
      const flat = flatten(record);
      if (this.header === undefined) {
        const known = this.columns ?? [];
        this.header = [...known, ...Object.keys(flat).filter((k) => !known.includes(k))];
        await this.out.write(csvRow(this.header));
      }
      const header = this.header;
      const extra = Object.keys(flat).find((k) => !header.includes(k));
      if (extra !== undefined) throw new CsvColumnsError(extra, this.n + 1, header);
      await this.out.write(csvRow(header.map((c) => flat[c])));
    }
    this.n++;
  }

  /** Closes the list (json's brackets; an empty list is `[]`, or in csv its known header); returns how many records were written. */
  async end(): Promise<number> {
    if (this.format === 'json') await this.out.write(this.n === 0 ? '[]\n' : '\n]\n');
    else if (this.format === 'csv' && this.header === undefined && this.columns !== undefined && this.columns.length > 0) await this.out.write(csvRow(this.columns));
    return this.n;
  }
}

/** One answer (a book, the status, a created key) in a format: json pretty-printed, ndjson one line, csv one row. */
export async function writeOne(out: Output, format: Format, value: unknown): Promise<void> {
  if (format === 'json') await out.write(`${JSON.stringify(value, null, 2)}\n`);
  else {
    const w = new RecordWriter(out, format);
    await w.add(value);
    await w.end();
  }
}

/**
 * A record's fields as CSV columns: nested objects by dotted names (`best_bid_ohlc.open`),
 * arrays as their JSON text (a column per element would change with the data).
 */
export function flatten(v: unknown, prefix = '', into: Record<string, unknown> = {}): Record<string, unknown> {
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    for (const [k, x] of Object.entries(v)) flatten(x, prefix ? `${prefix}.${k}` : k, into);
  } else {
    into[prefix || 'value'] = v;
  }
  return into;
}

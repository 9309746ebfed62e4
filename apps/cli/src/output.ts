import { createWriteStream, type WriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { once } from 'node:events';
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

/** A list of records in a format: json (one array), ndjson (a line each) or csv (header from the first record). */
export class RecordWriter {
  private n = 0;
  private columns: string[] | undefined;

  constructor(
    private readonly out: Output,
    private readonly format: Format,
  ) {}

  async add(record: unknown): Promise<void> {
    if (this.format === 'ndjson') await this.out.write(`${JSON.stringify(record)}\n`);
    else if (this.format === 'json') await this.out.write(`${this.n === 0 ? '[\n' : ',\n'}${JSON.stringify(record)}`);
    else {
      const flat = flatten(record);
      if (this.columns === undefined) {
        this.columns = Object.keys(flat);
        await this.out.write(`${this.columns.map(csvField).join(',')}\n`);
      }
      await this.out.write(`${this.columns.map((c) => csvField(flat[c])).join(',')}\n`);
    }
    this.n++;
  }

  /** Closes the list (json's brackets; an empty list is `[]`); returns how many records were written. */
  async end(): Promise<number> {
    if (this.format === 'json') await this.out.write(this.n === 0 ? '[]\n' : '\n]\n');
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

/** RFC 4180: quoted when it holds a comma, a quote or a line break; null and undefined are empty. */
export function csvField(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = typeof v === 'string' ? v : Array.isArray(v) ? JSON.stringify(v) : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

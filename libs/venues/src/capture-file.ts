import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline, type Readable, type Writable } from 'node:stream';
import { constants as zlibConstants, createGunzip, createGzip, type Gzip } from 'node:zlib';
import { VENUES, parseCaptureGap, receiveTimeError, type CaptureBoundary, type CaptureGap, type CaptureLine, type Venue } from '@booktape/domain';
import { isRecord, kindOf } from './frame-text.ts';
import { scanCaptureLine } from './capture-scan.ts';

/**
 * Capture files (docs/rules/capture-files.md): NDJSON, one line per websocket frame,
 * `{"venue","received_at","frame"}`, or per connection boundary,
 * `{"venue","received_at","boundary":{"kind":"connect"|"disconnect","connection_id",…}}`
 * (sequence state belongs to a connection, so replay resets it there), or per capture gap,
 * `{"venue","received_at","gap":{…}}` (where capture knows it missed data); gzip when
 * the name ends in `.gz`.
 */

export interface CaptureFileWriterOptions {
  dir: string;
  /** File name prefix, e.g. `exchange-a-w1`. */
  prefix: string;
  /** Start a new file once this many (uncompressed) bytes were written to the current one. */
  rotateBytes?: number;
  /** Start a new file once the current one is this old. */
  rotateMs?: number;
  gzip?: boolean;
  /**
   * gzip only: push compressed output to the file at most this long after a line was
   * appended (a sync flush), so a crash loses at most this much of the file. Default 1000;
   * 0 turns it off (output then reaches the file in compressor-sized blocks).
   */
  flushMs?: number;
  /** Clock for file names and rotation by age; defaults to Date.now. */
  now?: () => number;
}

interface OpenFile {
  path: string;
  openedAt: number;
  bytes: number;
  file: WriteStream;
  sink: Writable; // the gzip stream, or the file itself
  gzip: Gzip | null;
}

/**
 * Appends capture lines, rotating by size or age. Names sort by time:
 * `<prefix>-<yyyymmddThhmmss.mmmZ>-<counter>.ndjson[.gz]`; the counter keeps names of one
 * writer unique and ordered within a millisecond, and files are opened exclusively (`wx`),
 * so a name that exists already is skipped, never overwritten.
 *
 * Appends are serialised: call without awaiting and lines still land in call order. A
 * write error fails that append and every later one.
 */
export class CaptureFileWriter {
  private current: OpenFile | null = null;
  private chain: Promise<void> = Promise.resolve();
  private failure: unknown = null;
  private counter = 0;
  private closed = false;
  private closing: Promise<void> | null = null;
  private readonly opened: string[] = [];
  private readonly now: () => number;
  private flushTimer: NodeJS.Timeout | null = null;

  constructor(private readonly opts: CaptureFileWriterOptions) {
    if (!/^[\w.-]+$/.test(opts.prefix)) throw new Error(`capture file prefix must be [A-Za-z0-9_.-]+: ${opts.prefix}`);
    if (opts.rotateBytes !== undefined && !(opts.rotateBytes > 0)) throw new RangeError('rotateBytes must be > 0');
    if (opts.rotateMs !== undefined && !(opts.rotateMs > 0)) throw new RangeError('rotateMs must be > 0');
    if (opts.flushMs !== undefined && !(opts.flushMs >= 0)) throw new RangeError('flushMs must be >= 0');
    this.now = opts.now ?? Date.now;
  }

  /** Files opened so far, in order. */
  get files(): readonly string[] {
    return this.opened;
  }

  get currentPath(): string | null {
    return this.current?.path ?? null;
  }

  /** Appends a frame that is already parsed JSON, or a boundary line (a line with `boundary` and no `frame`). */
  append(line: CaptureLine): Promise<void> {
    return this.enqueue(async () => {
      const body =
        line.frame === undefined && line.boundary !== undefined
          ? { venue: line.venue, received_at: line.received_at, boundary: line.boundary }
          : line.frame === undefined && line.gap !== undefined
            ? { venue: line.venue, received_at: line.received_at, gap: line.gap }
            : { venue: line.venue, received_at: line.received_at, frame: line.frame ?? null };
      const text = `${JSON.stringify(body)}\n`;
      await this.write(text);
      this.scheduleFlush();
    });
  }

  private scheduleFlush(): void {
    const ms = this.opts.flushMs ?? 1000;
    if (!this.opts.gzip || ms === 0 || this.flushTimer !== null) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = null;
      // A failed flush is a failed write: it surfaces on the next append.
      if (!this.closed) this.flush().catch(() => undefined);
    }, ms);
    this.flushTimer.unref();
  }

  /**
   * Appends a frame as it came off the wire. JSON objects and arrays are stored parsed;
   * anything else (`PONG`, garbage, a bare JSON scalar) is stored as the JSON string of
   * its text, so that replaying it hands the normaliser the same text it saw live.
   */
  appendFrame(venue: Venue, receivedAt: Date, data: string | Uint8Array): Promise<void> {
    const text = typeof data === 'string' ? data : new TextDecoder().decode(data);
    let frame: unknown = text;
    const t = text.trimStart();
    if (t.startsWith('{') || t.startsWith('[')) {
      try {
        frame = JSON.parse(text) as unknown;
      } catch {
        frame = text;
      }
    }
    return this.append({ venue, received_at: receivedAt.toISOString(), frame });
  }

  /** Appends a connection boundary (connect / disconnect of a feed's websocket). */
  appendBoundary(venue: Venue, at: Date, boundary: CaptureBoundary): Promise<void> {
    const b: CaptureBoundary = { kind: boundary.kind, connection_id: boundary.connection_id };
    if (boundary.reason !== undefined) b.reason = boundary.reason;
    return this.append({ venue, received_at: at.toISOString(), boundary: b });
  }

  /** Appends a capture gap as capture reported it (opened, and again when it closed). */
  appendGap(at: Date, gap: CaptureGap): Promise<void> {
    return this.append({ venue: gap.venue, received_at: at.toISOString(), gap });
  }

  /** Pushes buffered gzip output to the file, so a reader sees every line so far. */
  flush(): Promise<void> {
    return this.enqueue(async () => {
      const cur = this.current;
      if (!cur) return;
      if (cur.gzip) {
        const gz = cur.gzip;
        await new Promise<void>((resolve) => gz.flush(zlibConstants.Z_SYNC_FLUSH, () => resolve()));
      }
    });
  }

  /** Finishes the current file (gzip trailer included). Further appends fail. */
  close(): Promise<void> {
    if (this.closing) return this.closing;
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    this.closing = this.chain.then(() => this.finish());
    this.closed = true;
    return this.closing;
  }

  private enqueue(task: () => Promise<void>): Promise<void> {
    if (this.closed) return Promise.reject(new Error('capture file writer is closed'));
    const run = this.chain.then(async () => {
      if (this.failure !== null) throw this.failure;
      try {
        await task();
      } catch (err) {
        this.failure = err;
        throw err;
      }
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async write(text: string): Promise<void> {
    const bytes = Buffer.byteLength(text);
    const now = this.now();
    const cur = this.current;
    if (cur) {
      const tooBig = this.opts.rotateBytes !== undefined && cur.bytes > 0 && cur.bytes + bytes > this.opts.rotateBytes;
      const tooOld = this.opts.rotateMs !== undefined && now - cur.openedAt >= this.opts.rotateMs;
      if (tooBig || tooOld) await this.finish();
    }
    const target = this.current ?? (await this.open(now));
    target.bytes += bytes;
    await writeAll(target.sink, text, target.file);
  }

  private async open(now: number): Promise<OpenFile> {
    await mkdir(this.opts.dir, { recursive: true });
    const stamp = new Date(now).toISOString().replace(/[-:]/g, '');
    const ext = this.opts.gzip ? '.ndjson.gz' : '.ndjson';
    for (;;) {
      this.counter += 1;
      const path = join(this.opts.dir, `${this.opts.prefix}-${stamp}-${String(this.counter).padStart(6, '0')}${ext}`);
      const file = createWriteStream(path, { flags: 'wx' });
      const opened = await new Promise<unknown>((resolve) => {
        file.once('open', () => resolve(null));
        file.once('error', (err) => resolve(err));
      });
      if (opened !== null) {
        if ((opened as NodeJS.ErrnoException).code === 'EEXIST') continue;
        throw opened;
      }
      const gzip = this.opts.gzip ? createGzip() : null;
      if (gzip) gzip.pipe(file);
      const entry: OpenFile = { path, openedAt: now, bytes: 0, file, sink: gzip ?? file, gzip };
      this.current = entry;
      this.opened.push(path);
      return entry;
    }
  }

  private async finish(): Promise<void> {
    const cur = this.current;
    if (!cur) return;
    this.current = null;
    await new Promise<void>((resolve, reject) => {
      cur.file.once('error', reject);
      cur.file.once('close', () => resolve());
      cur.sink.end();
    });
  }
}

function writeAll(sink: Writable, text: string, file: WriteStream): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => reject(err);
    file.once('error', onError);
    sink.once('error', onError);
    sink.write(text, (err) => {
      file.off('error', onError);
      sink.off('error', onError);
      if (err) reject(err);
      else resolve();
    });
  });
}

export type CaptureEntry = { lineNo: number; line: CaptureLine } | { lineNo: number; error: string };

/** Validates one line of a capture file. */
export function parseCaptureLine(text: string): { line: CaptureLine } | { error: string } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { error: 'not JSON' };
  }
  if (!isRecord(v)) return { error: `a JSON ${kindOf(v)}, not an object` };
  const venue = v['venue'];
  if (typeof venue !== 'string' || !(VENUES as readonly string[]).includes(venue)) {
    return { error: `unknown venue ${JSON.stringify(venue ?? null)}` };
  }
  const at = v['received_at'];
  if (at === undefined || at === null) return { error: 'received_at missing' };
  const badTime = receiveTimeError('received_at', at);
  if (badTime !== null) return { error: badTime };
  const received_at = at as string;
  if ('frame' in v) return { line: { venue: venue as Venue, received_at, frame: v['frame'] } };
  if ('gap' in v) {
    const g = parseCaptureGap(v['gap']);
    if ('error' in g) return { error: `gap: ${g.error}` };
    if (g.gap.venue !== venue) return { error: `gap: venue ${g.gap.venue} differs from the line's` };
    return { line: { venue: venue as Venue, received_at, gap: g.gap } };
  }
  if (!('boundary' in v)) return { error: 'neither frame nor boundary' };
  const b = parseBoundary(v['boundary']);
  if ('error' in b) return { error: `boundary: ${b.error}` };
  return { line: { venue: venue as Venue, received_at, boundary: b.boundary } };
}

function parseBoundary(v: unknown): { boundary: CaptureBoundary } | { error: string } {
  if (!isRecord(v)) return { error: `a JSON ${kindOf(v)}, not an object` };
  const kind = v['kind'];
  if (kind !== 'connect' && kind !== 'disconnect') return { error: `kind is not connect or disconnect: ${JSON.stringify(kind ?? null)}` };
  const id = v['connection_id'];
  if (typeof id !== 'string' || id === '') return { error: 'connection_id missing or not a string' };
  const boundary: CaptureBoundary = { kind, connection_id: id };
  const reason = v['reason'];
  if (reason !== undefined && reason !== null) {
    if (typeof reason !== 'string') return { error: 'reason is not a string' };
    boundary.reason = reason;
  }
  return { boundary };
}

/**
 * Bytes read at a time: a read's cost (the stream's and the system call's) is per read, and
 * reading 64 KiB at a time cost a replay about 1.5 CPU seconds per million frames, a quarter
 * mebibyte a third of that.
 */
const READ_CHUNK = 256 * 1024;

/**
 * Bytes of lines decoded (and then parsed) at a time, whatever the read size: a piece's
 * parsed frames live until the replay has handled them, and larger pieces (1 MiB) kept
 * enough alive across young collections to double their cost; and a text above 128 KiB is
 * allocated as a large object, which only a full collection frees (decoding whole quarter
 * mebibytes doubled the cost of reading a file).
 */
const DECODE_PIECE = 64 * 1024;

function openInput(path: string): Readable {
  const file = createReadStream(path, { highWaterMark: READ_CHUNK });
  if (!path.endsWith('.gz')) return file;
  const gunzip = createGunzip({ chunkSize: READ_CHUNK });
  // pipeline hands a file error (missing, unreadable) to the gunzip stream the caller
  // iterates, and closes the file when the caller stops early.
  pipeline(file, gunzip, () => undefined);
  return gunzip;
}

/** Errors of the compressed data itself (truncated, corrupt), as opposed to I/O errors. */
function isZlibError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('Z_');
}

function isBlank(buf: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const b = buf[i];
    if (b !== 0x20 && b !== 0x09 && b !== 0x0d) return false;
  }
  return true;
}

const BOM = '\ufeff';

/**
 * Splits a byte stream into lines, the whole lines of each chunk at once. Yields the texts
 * of each chunk's lines and, when the compressed data ends early or is corrupt, one final
 * `{ error }`. I/O errors throw.
 *
 * The whole lines of a chunk are decoded in one call and split as text (a newline byte never
 * falls inside a UTF-8 character), not one decoder call and one generator step per line.
 * Each line reads as it did decoded alone: invalid bytes become U+FFFD whichever way, and a
 * byte order mark that starts a line is dropped, as a decoder drops it at the start of a call.
 */
async function* rawLineBatches(path: string): AsyncGenerator<string[] | { error: string }> {
  // The marks are dropped line by line below, one per line, as a decoder per line did.
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  let pending: Buffer[] = [];
  const lines = (text: string): string[] => {
    const out = text.split('\n');
    for (let i = 0; i < out.length; i++) if (out[i]!.startsWith(BOM)) out[i] = out[i]!.slice(1);
    return out;
  };
  try {
    for await (const chunk of openInput(path) as AsyncIterable<Buffer>) {
      const last = chunk.lastIndexOf(0x0a);
      if (last < 0) {
        pending.push(chunk);
        continue;
      }
      const head = chunk.subarray(0, last);
      const whole = pending.length > 0 ? Buffer.concat([...pending, head]) : head;
      pending = last + 1 < chunk.length ? [chunk.subarray(last + 1)] : [];
      // Pieces of about DECODE_PIECE bytes, each ending at a newline (dropped, as split drops it).
      let start = 0;
      while (whole.length - start > DECODE_PIECE) {
        let end = whole.lastIndexOf(0x0a, start + DECODE_PIECE);
        if (end < start) end = whole.indexOf(0x0a, start + DECODE_PIECE);
        if (end < 0) break;
        yield lines(decoder.decode(whole.subarray(start, end)));
        start = end + 1;
      }
      yield lines(decoder.decode(whole.subarray(start)));
    }
  } catch (err) {
    if (!isZlibError(err)) throw err;
    const partial = pending.reduce((n, b) => n + b.length, 0);
    const why = err instanceof Error ? err.message : String(err);
    yield {
      error: `compressed data ends early or is corrupt (${why})${partial > 0 ? `; a partial line of ${partial} bytes is lost` : ''}`,
    };
    return;
  }
  if (pending.length > 0) yield lines(decoder.decode(Buffer.concat(pending)));
}

export interface ReadCaptureOptions {
  /**
   * Lines of the hot frame shapes come with their frame as a ScannedFrame (capture-scan.ts)
   * instead of parsed JSON, for the venues' normalisers, which make the same records of it
   * (replay). Off: every frame is parsed JSON.
   */
  scan?: boolean;
}

/**
 * Reads a capture file, the entries of each chunk read as one array (a replay handles them
 * without an await apiece). A malformed line is an `{ lineNo, error }` entry and reading goes
 * on; a truncated gzip tail is a last error entry instead of an exception. Blank lines are
 * skipped (their numbers still count). Line numbers start at 1.
 */
export async function* readCaptureBatches(path: string, opts: ReadCaptureOptions = {}): AsyncGenerator<CaptureEntry[]> {
  const scan = opts.scan === true;
  let lineNo = 0;
  for await (const batch of rawLineBatches(path)) {
    if (!Array.isArray(batch)) {
      yield [{ lineNo: lineNo + 1, error: batch.error }];
      return;
    }
    const entries: CaptureEntry[] = [];
    for (const text of batch) {
      lineNo += 1;
      const scanned = scan ? scanCaptureLine(text) : null;
      if (scanned !== null) {
        entries.push({ lineNo, line: scanned });
        continue;
      }
      if (BLANK.test(text)) continue;
      const parsed = parseCaptureLine(text);
      entries.push('line' in parsed ? { lineNo, line: parsed.line } : { lineNo, error: parsed.error });
    }
    yield entries;
  }
}

const BLANK = /^[ \t\r]*$/;

/** readCaptureBatches, one entry at a time. */
export async function* readCaptureFile(path: string): AsyncGenerator<CaptureEntry> {
  for await (const batch of readCaptureBatches(path)) yield* batch;
}

/**
 * How many entries readCaptureFile will yield (non-blank lines, plus one for a truncated
 * gzip tail), without parsing JSON: the total of a progress bar.
 */
export async function countCaptureLines(path: string): Promise<number> {
  let count = 0;
  let lineHasText = false;
  try {
    for await (const chunk of openInput(path) as AsyncIterable<Buffer>) {
      let start = 0;
      for (;;) {
        const nl = chunk.indexOf(0x0a, start);
        const end = nl < 0 ? chunk.length : nl;
        if (!lineHasText && !isBlank(chunk, start, end)) lineHasText = true;
        if (nl < 0) break;
        if (lineHasText) count += 1;
        lineHasText = false;
        start = nl + 1;
      }
    }
  } catch (err) {
    if (!isZlibError(err)) throw err;
    return count + 1;
  }
  return lineHasText ? count + 1 : count;
}

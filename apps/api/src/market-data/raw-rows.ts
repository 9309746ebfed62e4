import { csvRow, type Venue } from '@booktape/domain';
import { RAW_EXPORT_COLUMNS } from '@booktape/storage';

/**
 * Splits the raw-row lines the repository streams (`<key JSON>\t<record JSON>\n`, see
 * MarketDataRepository) into records, chunk by chunk, and hands each record's bytes to the
 * format. Keeps at most `max` rows; a row beyond them only sets `more`. Remembers the key
 * of the last kept row (the next cursor). Chunks may split a line (a server's HTTP body
 * does); the tail is carried over.
 */
export abstract class RawRows {
  count = 0;
  more = false;
  private carry: Buffer | null = null;
  private lastKey: Buffer | null = null;
  private scratch = Buffer.allocUnsafe(1024);

  constructor(private readonly max: number) {}

  /** Output bytes for the complete rows in `chunk` (empty once `max` rows were kept). */
  push(chunk: Buffer): Buffer {
    if (this.more) return EMPTY;
    const buf = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
    this.carry = null;
    this.begin(buf);
    let pos = 0;
    let keyLength = -1;
    for (;;) {
      const nl = buf.indexOf(10, pos);
      if (nl === -1) break;
      const tab = buf.indexOf(9, pos);
      if (tab === -1 || tab > nl) throw new Error('malformed raw row: no key separator');
      if (this.count === this.max) {
        this.more = true;
        break;
      }
      // The row's key may be overwritten by the output: keep it (only the last one is needed).
      keyLength = tab - pos;
      if (keyLength > this.scratch.length) this.scratch = Buffer.allocUnsafe(keyLength * 2);
      buf.copy(this.scratch, 0, pos, tab);
      this.record(buf, tab + 1, nl);
      this.count++;
      pos = nl + 1;
    }
    if (keyLength >= 0) this.lastKey = Buffer.from(this.scratch.subarray(0, keyLength));
    if (!this.more && pos < buf.length) this.carry = Buffer.from(buf.subarray(pos));
    return this.finish();
  }

  /** Call at the end of the stream: a partial line left over means the stream broke off. */
  end(): void {
    if (this.carry && this.carry.length > 0) throw new Error('raw row stream ended inside a row');
  }

  /** The serving-order key of the last kept row, or null when no row was kept. */
  lastPosition(): string[] | null {
    if (!this.lastKey) return null;
    const key = JSON.parse(this.lastKey.toString('utf8')) as unknown;
    if (!Array.isArray(key) || !key.every((k) => typeof k === 'string')) throw new Error('malformed raw row key');
    return key as string[];
  }

  protected abstract begin(buf: Buffer): void;
  /** The record is `buf[start, end)`; `this.count` rows were written before it. */
  protected abstract record(buf: Buffer, start: number, end: number): void;
  protected abstract finish(): Buffer;
}

/**
 * Records as the members of a JSON array (`json`: comma-separated) or as lines (`ndjson`),
 * without parsing them: each record's bytes are copied once. Compacted in place (the chunk
 * is ours): output never outgrows input, since a key (at least "[]") and a tab give way to
 * one comma or newline, so the write position never passes the read position. No second
 * buffer per chunk: a 100,000-record page stays small.
 */
export class RawRowsToJson extends RawRows {
  private out: Buffer = EMPTY;
  private o = 0;

  constructor(
    max: number,
    private readonly lines = false,
  ) {
    super(max);
  }

  protected begin(buf: Buffer): void {
    this.out = buf;
    this.o = 0;
  }

  protected record(buf: Buffer, start: number, end: number): void {
    if (!this.lines && this.count > 0) this.out[this.o++] = 44; // ','
    this.o += buf.copy(this.out, this.o, start, end);
    if (this.lines) this.out[this.o++] = 10; // '\n'
  }

  protected finish(): Buffer {
    const done = this.out.subarray(0, this.o);
    this.out = EMPTY;
    return done;
  }
}


type Rec = Record<string, unknown>;
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const A_SIDE: Record<string, string> = { BUY: 'bid', SELL: 'ask' };

/**
 * The long CSV format of raw records (docs/api.md, "Formats"), each venue's rows of one
 * record, in the columns of RAW_EXPORT_COLUMNS (libs/storage: import reads them back): one
 * row per price level change, the event's own fields repeated on each; an event without
 * levels is one row with the level columns empty. Exchange A sides are `bid` / `ask` (book
 * `bids` / `asks`, change side `BUY` / `SELL`); exchange B sides are `yes` / `no`.
 */
const ROWS_OF: { readonly [V in Venue]: (r: Rec, out: string[], more: unknown[], rest: unknown[]) => void } = { 'exchange-a': exchangeARows, 'exchange-b': exchangeBRows };

/**
 * `more`: the record's own fields put after the venue's columns on its first row (the API's
 * `include`); `rest`: on its other rows (the same, but for the stored record, given once).
 */
function exchangeARows(r: Rec, out: string[], more: unknown[], rest: unknown[]): void {
  let m = more;
  const row = (side: unknown, price: unknown, size: unknown) => {
    out.push(csvRow([r.timestamp, r.asset_id, r.event_type, side, price, size, r.hash, r.received_at, ...m]));
    m = rest;
  };
  const before = out.length;
  for (const l of list(r.bids) as Rec[]) row('bid', l?.price, l?.size);
  for (const l of list(r.asks) as Rec[]) row('ask', l?.price, l?.size);
  for (const c of list(r.changes) as Rec[]) row(A_SIDE[String(c?.side)] ?? c?.side, c?.price, c?.size);
  if (out.length === before) row(null, null, null);
}

function exchangeBRows(r: Rec, out: string[], more: unknown[], rest: unknown[]): void {
  let m = more;
  const row = (side: unknown, price: unknown, size: unknown, delta: unknown) => {
    out.push(csvRow([r.epoch_ms, r.ticker, r.type, side, price, size, delta, r.seq, r.sid, r.expected_seq, r.received_at, r.data, ...m]));
    m = rest;
  };
  const before = out.length;
  if (r.type === 'delta') return void row(r.side, r.price, null, r.delta);
  for (const l of list(r.yes)) row('yes', list(l)[0], list(l)[1], null);
  for (const l of list(r.no)) row('no', list(l)[0], list(l)[1], null);
  if (out.length === before) row(null, null, null, null);
}

/** Records as CSV rows of the venue's long format (the header is the page's head). */
export class RawRowsToCsv extends RawRows {
  private parts: string[] = [];
  private readonly rows: (r: Rec, out: string[], more: unknown[], rest: unknown[]) => void;
  /** Where `record` is in `trail` (include=record), or −1. */
  private readonly recordAt: number;

  /**
   * `lead`: CSV fields (with their trailing comma) put before every row, e.g. the market of
   * a file of many. `trail`: names of record fields put after the venue's columns, on every
   * row of the record (`source` with include=source), but `record` (include=record) on its
   * first row only.
   */
  constructor(
    max: number,
    venue: Venue,
    private readonly lead = '',
    private readonly trail: readonly string[] = [],
  ) {
    super(max);
    this.rows = ROWS_OF[venue];
    this.recordAt = trail.indexOf('record');
  }

  /** The header row; `lead`: names of the columns put before the venue's own; `trail`: after them. */
  static header(venue: Venue, lead: readonly string[] = [], trail: readonly string[] = []): string {
    return `${[...lead, ...RAW_EXPORT_COLUMNS[venue], ...trail].join(',')}\n`;
  }

  protected begin(): void {
    this.parts = [];
  }

  protected record(buf: Buffer, start: number, end: number): void {
    const before = this.parts.length;
    const r = JSON.parse(buf.toString('utf8', start, end)) as Rec;
    const more = this.trail.length === 0 ? NONE : this.trail.map((f) => r[f]);
    // The stored record (include=record) goes on the record's first row only.
    let rest = more;
    if (this.recordAt >= 0) {
      rest = more.slice();
      rest[this.recordAt] = null;
    }
    this.rows(r, this.parts, more, rest);
    // Each part is one whole row.
    if (this.lead !== '') for (let i = before; i < this.parts.length; i++) this.parts[i] = this.lead + this.parts[i];
  }

  protected finish(): Buffer {
    return this.parts.length === 0 ? EMPTY : Buffer.from(this.parts.join(''), 'utf8');
  }
}

const EMPTY = Buffer.alloc(0);
const NONE: unknown[] = [];

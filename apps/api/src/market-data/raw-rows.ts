/**
 * Turns the raw-row lines the repository streams (`<key JSON>\t<record JSON>\n`, see
 * MarketDataRepository) into the members of a JSON array, chunk by chunk, without parsing
 * records: each record's bytes are copied once, behind a comma. Keeps at most `max` rows;
 * a row beyond them only sets `more`. Remembers the key of the last kept row (the next
 * cursor). Chunks may split a line (a server's HTTP body does); the tail is carried over.
 */
export class RawRowsToJson {
  count = 0;
  more = false;
  private carry: Buffer | null = null;
  private lastKey: Buffer | null = null;
  private scratch = Buffer.allocUnsafe(1024);

  constructor(private readonly max: number) {}

  /** JSON bytes for the complete rows in `chunk` (empty once `max` rows were kept). */
  push(chunk: Buffer): Buffer {
    if (this.more) return EMPTY;
    const buf = this.carry ? Buffer.concat([this.carry, chunk]) : chunk;
    this.carry = null;
    // Compacted in place (the chunk is ours): output never outgrows input, since a key (at
    // least "[]") and a tab give way to one comma, so the write position never passes the
    // read position. No second buffer per chunk: a 100,000-record page stays small.
    const out = buf;
    let o = 0;
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
      // The row's key is about to be overwritten: keep it (only the last one is needed).
      keyLength = tab - pos;
      if (keyLength > this.scratch.length) this.scratch = Buffer.allocUnsafe(keyLength * 2);
      buf.copy(this.scratch, 0, pos, tab);
      if (this.count > 0) out[o++] = 44; // ','
      o += buf.copy(out, o, tab + 1, nl);
      this.count++;
      pos = nl + 1;
    }
    if (keyLength >= 0) this.lastKey = Buffer.from(this.scratch.subarray(0, keyLength));
    if (!this.more && pos < buf.length) this.carry = Buffer.from(buf.subarray(pos));
    return out.subarray(0, o);
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
}

const EMPTY = Buffer.alloc(0);

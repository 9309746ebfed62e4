import { randomBytes } from 'node:crypto';
import type { Venue } from '@booktape/domain';
import type { ClickHouse } from './clickhouse.ts';
import { chTime, insertRows, queryFirst, queryRows } from './rows.ts';

/** An operator-declared outage (migration 009): [start_ms, end_ms) of one venue. */
export interface DeclaredOutage {
  id: string;
  venue: Venue;
  start_ms: number;
  end_ms: number;
  reason: string;
  /** ISO 8601, ms. */
  created_at: string;
}

export const OUTAGE_ID_PATTERN = /^out_[0-9a-f]{16}$/;

interface Row {
  id: string;
  venue: Venue;
  start_ms: string | number;
  end_ms: string | number;
  reason: string;
  created_ms: string | number;
}

const COLUMNS = 'id, toString(venue) AS venue, start_ms, end_ms, reason, toUnixTimestamp64Milli(created_at) AS created_ms';

function toOutage(r: Row): DeclaredOutage {
  return { id: r.id, venue: r.venue, start_ms: Number(r.start_ms), end_ms: Number(r.end_ms), reason: r.reason, created_at: new Date(Number(r.created_ms)).toISOString() };
}

/**
 * Declared outages. An outage has two versions at most: declared (1) and removed (2), so a
 * repeated removal changes nothing and a removal always outranks the declaration.
 */
export class OutagesRepository {
  constructor(private readonly ch: ClickHouse) {}

  async add(o: { venue: Venue; start_ms: number; end_ms: number; reason: string }, now = Date.now()): Promise<DeclaredOutage> {
    const rec: DeclaredOutage = { id: `out_${randomBytes(8).toString('hex')}`, venue: o.venue, start_ms: o.start_ms, end_ms: o.end_ms, reason: o.reason, created_at: new Date(now).toISOString() };
    await this.write(rec, false);
    return rec;
  }

  /** Marks an outage removed; the outage as it was, or null when there is none (or it was removed already). */
  async remove(id: string): Promise<DeclaredOutage | null> {
    const rec = await this.get(id);
    if (!rec) return null;
    await this.write(rec, true);
    return rec;
  }

  async get(id: string): Promise<DeclaredOutage | null> {
    const r = await queryFirst<Row>(this.ch, `SELECT ${COLUMNS} FROM ${this.ch.table('outages')} FINAL WHERE id = {id:String} AND removed = 0`, { id });
    return r ? toOutage(r) : null;
  }

  /**
   * Outages not removed, optionally of one venue and overlapping [fromMs, toMs), by start.
   * `limit` keeps an answer bounded (the newest kept when cut).
   */
  async list(opts: { venue?: Venue; fromMs?: number; toMs?: number; limit?: number } = {}): Promise<DeclaredOutage[]> {
    const where = ['removed = 0'];
    const params: Record<string, unknown> = {};
    if (opts.venue) {
      where.push('venue = {venue:String}');
      params.venue = opts.venue;
    }
    if (opts.fromMs !== undefined) {
      where.push('end_ms > {from:Int64}');
      params.from = opts.fromMs;
    }
    if (opts.toMs !== undefined) {
      where.push('start_ms < {to:Int64}');
      params.to = opts.toMs;
    }
    params.limit = opts.limit ?? 10_000;
    const rows = await queryRows<Row>(
      this.ch,
      `SELECT * FROM (SELECT ${COLUMNS} FROM ${this.ch.table('outages')} FINAL WHERE ${where.join(' AND ')} ORDER BY start_ms DESC, id LIMIT {limit:UInt32})
        ORDER BY start_ms, id`,
      params,
    );
    return rows.map(toOutage);
  }

  private async write(rec: DeclaredOutage, removed: boolean): Promise<void> {
    await insertRows(this.ch, 'outages', [
      {
        id: rec.id,
        venue: rec.venue,
        start_ms: rec.start_ms,
        end_ms: rec.end_ms,
        reason: rec.reason,
        created_at: chTime(rec.created_at),
        removed: removed ? 1 : 0,
        version: removed ? 2 : 1,
      },
    ]);
  }
}

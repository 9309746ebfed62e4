import type { Venue } from '@booktape/domain';
import type { ClickHouse } from './clickhouse.ts';
import { servedSourceSql } from './raw-events.repository.ts';
import { queryRows } from './rows.ts';
import { VENUE_STORAGE } from './venue-storage.ts';

/** Raw records of one asset (exchange B: ticker) of a market on one UTC date. */
export interface RawAssetDay {
  date: string;
  asset: string;
  events: number;
  first_ms: number;
  last_ms: number;
}

/**
 * The records one source contributed to a market on one UTC date (docs/rules/imports.md#provenance):
 * `source` as the raw endpoints serve it, and the UTC hours (0–23, ascending) of the event
 * times it holds records in.
 */
export interface RawSourceDay {
  date: string;
  source: string;
  /** An import (`import:<format>:<file>`), not own capture. */
  imported: boolean;
  events: number;
  first_ms: number;
  last_ms: number;
  hours: number[];
}

/** A capture_gaps row (migration 001) in ms; ended_ms null while the gap is open. */
export interface CaptureGapSpan {
  connection_id: string;
  started_ms: number;
  ended_ms: number | null;
  reason: string;
  /** Markets the connection carried; empty = the whole connection (every market). */
  markets: string[];
}

/**
 * One asset-day's stored cross-checks, as `SummariesRepository.checksForMarket` answers
 * (`checks`: the parsed ChecksState of libs/book checks.ts, not yet validated, or null).
 */
export interface AssetDayChecks {
  asset: string;
  date: string;
  coveredUntil: number;
  complete: boolean;
  checks: unknown;
}

/**
 * The reads the coverage map needs besides the summaries' checks: per asset-day raw counts
 * and capture's connection gaps. Every value is bound.
 */
export class CoverageRepository {
  constructor(private readonly ch: ClickHouse) {}

  /**
   * Per date, the raw records of a market in [from, to] by asset (exchange B: the ticker is
   * the asset) and by source (which source holds records in which hours), from one scan: the
   * table is read once, grouped by (date, asset, source, hour), and the two views are summed
   * from that. Dates without records are absent. FINAL: a stored duplicate counts once.
   */
  async rawDays(venue: Venue, market: string, from: string, to: string): Promise<{ assets: RawAssetDay[]; sources: RawSourceDay[] }> {
    const { table, market: col, asset } = VENUE_STORAGE[venue];
    const rows = await queryRows<{ d: string; asset: string; src: string; imported: number | string; h: number | string; n: string | number; first_ms: string | number; last_ms: string | number }>(
      this.ch,
      // Grouped by the stored source (and the worker of own capture's), then named: the
      // served name is built once per group, not once per record.
      `SELECT d, asset, ${servedSourceSql('src_stored', 'wid')} AS src, src_stored != '' AS imported, h, n, first_ms, last_ms
        FROM (SELECT toString(event_date) AS d, ${asset} AS asset, source AS src_stored, if(source = '', worker_id, 0) AS wid, toHour(event_ts) AS h,
            count() AS n, toUnixTimestamp64Milli(min(event_ts)) AS first_ms, toUnixTimestamp64Milli(max(event_ts)) AS last_ms
          FROM ${this.ch.table(table)} FINAL
          WHERE ${col} = {market:String} AND event_date >= {from:Date} AND event_date <= {to:Date}
          GROUP BY event_date, asset, src_stored, wid, h)`,
      { market, from, to },
    );
    const assets = new Map<string, RawAssetDay>();
    const sources = new Map<string, RawSourceDay>();
    for (const r of rows) {
      const n = Number(r.n);
      const first = Number(r.first_ms);
      const last = Number(r.last_ms);
      const a = assets.get(`${r.d}\u0000${r.asset}`) ?? { date: r.d, asset: r.asset, events: 0, first_ms: first, last_ms: last };
      assets.set(`${r.d}\u0000${r.asset}`, { ...a, events: a.events + n, first_ms: Math.min(a.first_ms, first), last_ms: Math.max(a.last_ms, last) });
      const s = sources.get(`${r.d}\u0000${r.src}`) ?? { date: r.d, source: r.src, imported: Number(r.imported) === 1, events: 0, first_ms: first, last_ms: last, hours: [] };
      const hour = Number(r.h);
      sources.set(`${r.d}\u0000${r.src}`, {
        ...s,
        events: s.events + n,
        first_ms: Math.min(s.first_ms, first),
        last_ms: Math.max(s.last_ms, last),
        hours: s.hours.includes(hour) ? s.hours : [...s.hours, hour],
      });
    }
    const byKey = <T>(m: Map<string, T>) => [...m.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
    return {
      assets: byKey(assets),
      sources: byKey(sources).map((s) => ({ ...s, hours: [...s.hours].sort((a, b) => a - b) })),
    };
  }

  /**
   * Capture gaps of a venue overlapping [fromMs, toMs) (an open one overlaps everything
   * after its start) that concern one of `ids` (compared case-insensitively) or name no
   * market at all (the whole connection).
   */
  async captureGaps(venue: Venue, fromMs: number, toMs: number, ids: string[]): Promise<CaptureGapSpan[]> {
    const rows = await queryRows<{ connection_id: string; started_ms: string | number; ended_ms: string | number | null; reason: string; markets: string[] }>(
      this.ch,
      `SELECT connection_id, toUnixTimestamp64Milli(started_at) AS started_ms,
          if(isNull(ended_at), NULL, toUnixTimestamp64Milli(assumeNotNull(ended_at))) AS ended_ms, reason, markets
        FROM ${this.ch.table('capture_gaps')} FINAL
        WHERE venue = {venue:String}
          AND started_at < fromUnixTimestamp64Milli({to:Int64}, 'UTC')
          AND (isNull(ended_at) OR ended_at > fromUnixTimestamp64Milli({from:Int64}, 'UTC'))
          AND (empty(markets) OR hasAny(arrayMap(m -> lower(m), markets), {ids:Array(String)}))
        ORDER BY started_at, connection_id`,
      { venue, from: fromMs, to: toMs, ids: ids.map((i) => i.toLowerCase()) },
    );
    return rows.map((r) => ({ connection_id: r.connection_id, started_ms: Number(r.started_ms), ended_ms: r.ended_ms === null ? null : Number(r.ended_ms), reason: r.reason, markets: r.markets }));
  }
}

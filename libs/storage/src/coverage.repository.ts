import type { Venue } from '@booktape/domain';
import type { ClickHouse } from './clickhouse.ts';
import { queryRows } from './rows.ts';

/** Raw records of one asset (exchange B: ticker) of a market on one UTC date. */
export interface RawAssetDay {
  date: string;
  asset: string;
  events: number;
  first_ms: number;
  last_ms: number;
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
   * Raw records of a market in [from, to] per date and asset (exchange B: the ticker is the
   * asset). Dates without records are absent. FINAL: a stored duplicate counts once.
   */
  async rawAssetDays(venue: Venue, market: string, from: string, to: string): Promise<RawAssetDay[]> {
    const [table, col, asset] = venue === 'exchange-a' ? ['raw_exchange_a', 'market', 'asset_id'] : ['raw_exchange_b', 'ticker', 'ticker'];
    const rows = await queryRows<{ d: string; asset: string; n: string | number; first_ms: string | number; last_ms: string | number }>(
      this.ch,
      `SELECT toString(event_date) AS d, ${asset} AS asset, count() AS n,
          toUnixTimestamp64Milli(min(event_ts)) AS first_ms, toUnixTimestamp64Milli(max(event_ts)) AS last_ms
        FROM ${this.ch.table(table)} FINAL
        WHERE ${col} = {market:String} AND event_date >= {from:Date} AND event_date <= {to:Date}
        GROUP BY event_date, asset ORDER BY event_date, asset`,
      { market, from, to },
    );
    return rows.map((r) => ({ date: r.d, asset: r.asset, events: Number(r.n), first_ms: Number(r.first_ms), last_ms: Number(r.last_ms) }));
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

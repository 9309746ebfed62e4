import type { ExchangeAEvent, ExchangeBRecord } from '@booktape/domain';
import type { ClickHouse } from './clickhouse.ts';

/**
 * Reads one book's events in serving order, from the last snapshot before a time: the
 * smallest history from which the book at that time (and every later one) is exact, since
 * a snapshot replaces the book. Without an earlier snapshot the book's whole history is read
 * (its book is unknown until the first snapshot, but its observations still count).
 */
type BookRecordOf = ExchangeAEvent | ExchangeBRecord;

export class BookEventsRepository {
  constructor(private readonly ch: ClickHouse) {}

  /** `anchored` false: exactly the events in [fromMs, toMs), for a book restored at fromMs. */
  async exchangeA(market: string, asset: string, fromMs: number, toMs: number, anchored = true): Promise<ExchangeAEvent[]> {
    const table = this.ch.table('raw_exchange_a');
    const anchor = !anchored ? fromMs : await this.lastSnapshot(
      `SELECT toUnixTimestamp64Milli(event_ts) AS t FROM ${table} FINAL
        WHERE market = {m:String} AND asset_id = {a:String} AND event_type = 'book'
          AND event_date <= toDate(fromUnixTimestamp64Milli({t:Int64}, 'UTC')) AND event_ts < fromUnixTimestamp64Milli({t:Int64}, 'UTC')
        ORDER BY event_date DESC, event_ts DESC LIMIT 1`,
      { m: market, a: asset, t: fromMs },
    );
    return this.payloads<ExchangeAEvent>(
      `SELECT payload FROM ${table} FINAL
        WHERE market = {m:String} AND asset_id = {a:String} AND event_type IN ('book', 'price_change')
          AND event_date >= toDate(fromUnixTimestamp64Milli({from:Int64}, 'UTC')) AND event_date <= toDate(fromUnixTimestamp64Milli({to:Int64}, 'UTC'))
          AND event_ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND event_ts < fromUnixTimestamp64Milli({to:Int64}, 'UTC')
        ORDER BY event_ts, ingest_seq, dedup_id`,
      { m: market, a: asset, from: anchor, to: toMs },
    );
  }

  async exchangeB(ticker: string, fromMs: number, toMs: number, anchored = true): Promise<ExchangeBRecord[]> {
    const table = this.ch.table('raw_exchange_b');
    const anchor = !anchored ? fromMs : await this.lastSnapshot(
      `SELECT toUnixTimestamp64Milli(event_ts) AS t FROM ${table} FINAL
        WHERE ticker = {m:String} AND record_type = 'snapshot'
          AND event_date <= toDate(fromUnixTimestamp64Milli({t:Int64}, 'UTC')) AND event_ts < fromUnixTimestamp64Milli({t:Int64}, 'UTC')
        ORDER BY event_date DESC, event_ts DESC LIMIT 1`,
      { m: ticker, t: fromMs },
    );
    return this.payloads<ExchangeBRecord>(
      `SELECT payload FROM ${table} FINAL
        WHERE ticker = {m:String}
          AND event_date >= toDate(fromUnixTimestamp64Milli({from:Int64}, 'UTC')) AND event_date <= toDate(fromUnixTimestamp64Milli({to:Int64}, 'UTC'))
          AND event_ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND event_ts < fromUnixTimestamp64Milli({to:Int64}, 'UTC')
        ORDER BY event_ts, ingest_seq, dedup_id`,
      { m: ticker, from: anchor, to: toMs },
    );
  }

  /**
   * The book events of one book that decide its state from `atMs` to `untilMs` (inclusive), in
   * serving order: from its last snapshot at or before `atMs` on (`anchored`), or, when it has
   * none, from just after `atMs` (the book is unknown until a later snapshot, docs/rules/summaries.md
   * rule 4; nothing is read when `untilMs` is `atMs`). `asset` is ignored for exchange B (a
   * market is one book there).
   */
  async sinceLastSnapshot(
    venue: 'exchange-a' | 'exchange-b',
    market: string,
    asset: string,
    atMs: number,
    untilMs = atMs,
  ): Promise<{ anchored: boolean; records: BookRecordOf[] }> {
    const table = this.ch.table(venue === 'exchange-a' ? 'raw_exchange_a' : 'raw_exchange_b');
    const [which, snapshot, types] =
      venue === 'exchange-a'
        ? ['market = {m:String} AND asset_id = {a:String}', "event_type = 'book'", "event_type IN ('book', 'price_change')"]
        : ['ticker = {m:String}', "record_type = 'snapshot'", "record_type IN ('snapshot', 'delta', 'gap')"];
    const rs = await this.ch.client.query({
      query: `SELECT toUnixTimestamp64Milli(event_ts) AS t FROM ${table} FINAL
        WHERE ${which} AND ${snapshot}
          AND event_date <= toDate(fromUnixTimestamp64Milli({t:Int64}, 'UTC')) AND event_ts <= fromUnixTimestamp64Milli({t:Int64}, 'UTC')
        ORDER BY event_date DESC, event_ts DESC LIMIT 1`,
      query_params: { m: market, a: asset, t: atMs },
      format: 'JSONEachRow',
    });
    const [row] = await rs.json<{ t: string | number }>();
    const anchored = row !== undefined;
    if (!anchored && untilMs <= atMs) return { anchored, records: [] };
    const records = await this.payloads<BookRecordOf>(
      `SELECT payload FROM ${table} FINAL
        WHERE ${which} AND ${types}
          AND event_date >= toDate(fromUnixTimestamp64Milli({from:Int64}, 'UTC')) AND event_date <= toDate(fromUnixTimestamp64Milli({to:Int64}, 'UTC'))
          AND event_ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND event_ts <= fromUnixTimestamp64Milli({to:Int64}, 'UTC')
        ORDER BY event_ts, ingest_seq, dedup_id`,
      { m: market, a: asset, from: anchored ? Number(row.t) : atMs + 1, to: untilMs },
    );
    return { anchored, records };
  }

  private async lastSnapshot(query: string, params: Record<string, unknown>): Promise<number> {
    const rs = await this.ch.client.query({ query, query_params: params, format: 'JSONEachRow' });
    const [row] = await rs.json<{ t: string | number }>();
    return row === undefined ? 0 : Number(row.t);
  }

  private async payloads<T>(query: string, params: Record<string, unknown>): Promise<T[]> {
    const rs = await this.ch.client.query({ query, query_params: params, format: 'JSONEachRow' });
    return (await rs.json<{ payload: string }>()).map((r) => JSON.parse(r.payload) as T);
  }
}

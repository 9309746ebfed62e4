import type { BookRecord } from '@booktape/book';
import type { ExchangeAEvent, ExchangeBRecord, Venue } from '@booktape/domain';
import { BOOK_LEVEL_COLUMNS, BOOK_ROW_COLUMNS, BOOK_ROW_FORMAT, bookRowBatches, firstBatch } from './book-rows.ts';
import type { ClickHouse } from './clickhouse.ts';
import { unchained } from './inline-params.ts';
import { RAW_TABLE } from './raw-events.repository.ts';
import { VENUE_STORAGE } from './venue-storage.ts';
import { streamQuery } from './stream.ts';


/** One book's rows (exchange A: an outcome token; exchange B: the ticker), its snapshots, and the record types a book answer reads. */
const BOOK_OF = (venue: Venue) => VENUE_STORAGE[venue].book.where;
const SNAPSHOT_OF = (venue: Venue) => VENUE_STORAGE[venue].book.snapshot;
const TYPES_OF = (venue: Venue) => VENUE_STORAGE[venue].book.types;

/**
 * The records that decide a book over a span, streamed (a book far from its last snapshot
 * has millions): `anchorMs` is the time of the last snapshot they start from (null: none, the
 * book is unknown until one comes); `records` yields them in serving order, for the book's
 * levels only (exchange A: without hashes and best-bid / best-ask claims, which only the
 * checks read: BOOK_LEVEL_COLUMNS); `count` is how
 * many there are (asked only when `counted`); `close` gives the store session back (also
 * when not read to the end).
 */
export interface BookHistory {
  anchorMs: number | null;
  count: number | null;
  records: AsyncGenerator<BookRecord>;
  close(): Promise<void>;
}

/**
 * Reads one book's events in serving order, from the last snapshot before a time: the
 * smallest history from which the book at that time (and every later one) is exact, since
 * a snapshot replaces the book. Without an earlier snapshot the book's whole history is read
 * (its book is unknown until the first snapshot, but its observations still count).
 */
export class BookEventsRepository {
  constructor(private readonly ch: ClickHouse) {}

  /**
   * One book's events in [anchor, toMs), read by its venue's reader (exchangeA / exchangeB
   * below; `asset` is ignored for exchange B, whose market is one book).
   */
  events(venue: Venue, market: string, asset: string, fromMs: number, toMs: number, anchored = true): Promise<BookRecord[]> {
    return this.byVenue[venue](market, asset, fromMs, toMs, anchored);
  }

  private readonly byVenue: { readonly [V in Venue]: (market: string, asset: string, fromMs: number, toMs: number, anchored: boolean) => Promise<BookRecord[]> } = {
    'exchange-a': (market, asset, fromMs, toMs, anchored) => this.exchangeA(market, asset, fromMs, toMs, anchored),
    'exchange-b': (market, _asset, fromMs, toMs, anchored) => this.exchangeB(market, fromMs, toMs, anchored),
  };

  /** `anchored` false: exactly the events in [fromMs, toMs), for a book restored at fromMs. */
  async exchangeA(market: string, asset: string, fromMs: number, toMs: number, anchored = true): Promise<ExchangeAEvent[]> {
    const table = this.ch.table('raw_exchange_a');
    const anchor = !anchored ? fromMs : (await this.lastSnapshot(
      `SELECT toUnixTimestamp64Milli(event_ts) AS t FROM ${table} FINAL
        WHERE market = {m:String} AND asset_id = {a:String} AND event_type = 'book'
          AND event_date <= toDate(fromUnixTimestamp64Milli({t:Int64}, 'UTC')) AND event_ts < fromUnixTimestamp64Milli({t:Int64}, 'UTC')
        ORDER BY event_date DESC, event_ts DESC LIMIT 1`,
      { m: market, a: asset, t: fromMs },
    )) ?? 0;
    return this.books<ExchangeAEvent>(
      'exchange-a',
      market,
      asset,
      `SELECT ${BOOK_ROW_COLUMNS['exchange-a']} FROM ${table} FINAL
        WHERE market = {m:String} AND asset_id = {a:String} AND event_type IN ('book', 'price_change')
          AND event_date >= toDate(fromUnixTimestamp64Milli({from:Int64}, 'UTC')) AND event_date <= toDate(fromUnixTimestamp64Milli({to:Int64}, 'UTC'))
          AND event_ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND event_ts < fromUnixTimestamp64Milli({to:Int64}, 'UTC')
        ORDER BY event_ts, ingest_seq, dedup_id`,
      { m: market, a: asset, from: anchor, to: toMs },
    );
  }

  async exchangeB(ticker: string, fromMs: number, toMs: number, anchored = true): Promise<ExchangeBRecord[]> {
    const table = this.ch.table('raw_exchange_b');
    const anchor = !anchored ? fromMs : (await this.lastSnapshot(
      `SELECT toUnixTimestamp64Milli(event_ts) AS t FROM ${table} FINAL
        WHERE ticker = {m:String} AND record_type = 'snapshot'
          AND event_date <= toDate(fromUnixTimestamp64Milli({t:Int64}, 'UTC')) AND event_ts < fromUnixTimestamp64Milli({t:Int64}, 'UTC')
        ORDER BY event_date DESC, event_ts DESC LIMIT 1`,
      { m: ticker, t: fromMs },
    )) ?? 0;
    return this.books<ExchangeBRecord>(
      'exchange-b',
      ticker,
      '',
      `SELECT ${BOOK_ROW_COLUMNS['exchange-b']} FROM ${table} FINAL
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
   * market is one book there). The first record is read before this returns, so a store that
   * fails does so here.
   */
  async sinceLastSnapshot(venue: Venue, market: string, asset: string, atMs: number, untilMs = atMs, counted = false): Promise<BookHistory> {
    const table = this.ch.table(RAW_TABLE[venue]);
    const anchor = await this.lastSnapshot(
      `SELECT toUnixTimestamp64Milli(event_ts) AS t FROM ${table} FINAL
        WHERE ${BOOK_OF(venue)} AND ${SNAPSHOT_OF(venue)}
          AND event_date <= toDate(fromUnixTimestamp64Milli({t:Int64}, 'UTC')) AND event_ts <= fromUnixTimestamp64Milli({t:Int64}, 'UTC')
        ORDER BY event_date DESC, event_ts DESC LIMIT 1`,
      { m: market, a: asset, t: atMs },
    );
    if (anchor === null && untilMs <= atMs) return { anchorMs: null, count: counted ? 0 : null, records: (async function* () {})(), close: async () => undefined };
    return { ...(await this.span(venue, market, asset, anchor ?? atMs + 1, untilMs, counted)), anchorMs: anchor };
  }

  /**
   * The book events of one book with event_ts in (afterMs, untilMs], in serving order: what
   * a book restored at `afterMs` (a rollup checkpoint) needs up to `untilMs`. `anchorMs` is
   * null (no snapshot was looked for). The first record is read before this returns.
   * `bounded`: the span holds a few thousand records at most (up to the next checkpoint), so
   * it is read whole on the engine's threads (StreamQuery.whole) instead of streamed: a
   * stream's start holds the event loop until the engine has sorted the span.
   */
  async after(venue: Venue, market: string, asset: string, afterMs: number, untilMs: number, counted = false, bounded = false): Promise<BookHistory> {
    return { ...(await this.span(venue, market, asset, afterMs + 1, untilMs, counted, bounded)), anchorMs: null };
  }

  /** The book events with event_ts in [fromMs, untilMs] (FINAL: duplicates count once). */
  private async count(venue: Venue, market: string, asset: string, fromMs: number, untilMs: number): Promise<number> {
    const rs = await this.ch.client.query({ query: `SELECT toString(count()) AS n ${this.spanSql(venue)}`, query_params: { m: market, a: asset, from: fromMs, to: untilMs }, format: 'JSONEachRow' });
    return Number((await rs.json<{ n: string }>())[0]?.n ?? 0);
  }

  /**
   * PREWHERE: the conditions name only sorting-key columns, which every version of a row
   * shares, so filtering before FINAL keeps or drops a row's versions together (exact), and
   * the engine reads the other columns only where they hold; it does not move conditions
   * into PREWHERE by itself under FINAL.
   */
  private spanSql(venue: Venue): string {
    return `FROM ${this.ch.table(RAW_TABLE[venue])} FINAL
        PREWHERE ${BOOK_OF(venue)} AND ${TYPES_OF(venue)}
          AND event_date >= toDate(fromUnixTimestamp64Milli({from:Int64}, 'UTC')) AND event_date <= toDate(fromUnixTimestamp64Milli({to:Int64}, 'UTC'))
          AND event_ts >= fromUnixTimestamp64Milli({from:Int64}, 'UTC') AND event_ts <= fromUnixTimestamp64Milli({to:Int64}, 'UTC')`;
  }

  /** The book events with event_ts in [fromMs, untilMs], streamed, or read at once when `whole` (see `BookHistory`). */
  private async span(venue: Venue, market: string, asset: string, fromMs: number, untilMs: number, counted: boolean, whole = false): Promise<Omit<BookHistory, 'anchorMs'>> {
    const params = { m: market, a: asset, from: fromMs, to: untilMs };
    const count = counted ? await this.count(venue, market, asset, fromMs, untilMs) : null;
    // The levels only (BOOK_LEVEL_COLUMNS): these records serve the book at an instant and book snapshots.
    const query = `SELECT ${BOOK_LEVEL_COLUMNS[venue]} ${this.spanSql(venue)} ORDER BY event_ts, ingest_seq, dedup_id`;
    // A bounded span's values go into its text: it then runs beside the checkpoint state's
    // read instead of after it (inline-params.ts).
    const q = whole ? unchained(this.ch, query, params) : { query, query_params: params };
    const { first, batches, close } = await firstBatch(bookRowBatches(venue, streamQuery(this.ch, { ...q, format: BOOK_ROW_FORMAT, whole }), market, asset));
    async function* records(): AsyncGenerator<BookRecord> {
      try {
        if (first.done === true) return;
        yield* first.value;
        for await (const batch of batches) yield* batch;
      } finally {
        await close();
      }
    }
    return { count, records: records(), close };
  }

  /** The time of the snapshot the query finds, or null when there is none. */
  private async lastSnapshot(query: string, params: Record<string, unknown>): Promise<number | null> {
    const rs = await this.ch.client.query({ query, query_params: params, format: 'JSONEachRow' });
    const [row] = await rs.json<{ t: string | number }>();
    return row === undefined ? null : Number(row.t);
  }

  private async books<T extends BookRecord>(venue: Venue, market: string, asset: string, query: string, params: Record<string, unknown>): Promise<T[]> {
    const out: T[] = [];
    for await (const batch of bookRowBatches(venue, streamQuery(this.ch, { query, query_params: params, format: BOOK_ROW_FORMAT }), market, asset)) {
      for (const r of batch) out.push(r as T);
    }
    return out;
  }
}

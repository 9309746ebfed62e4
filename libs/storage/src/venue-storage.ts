import { VENUES, type RawMessage, type Venue } from '@booktape/domain';
import { VENUE_MODULES, type VenueModule } from '@booktape/venues';
import { A_BINARY_COLUMNS, B_BINARY_COLUMNS, writeA, writeB, type KafkaPosition } from './raw-codec.ts';
import type { RowBinaryWriter } from './row-binary.ts';
import { SERVED_RECORD_SQL } from './served-record-sql.ts';

/**
 * What storage keeps per venue, keyed by venue: the raw table and its market and asset
 * columns (from the venue registry, libs/venues), and the typed codec that writes a
 * record's row. The repositories look a venue up here instead of comparing its name.
 */
export interface VenueStorage {
  /** The raw table (unqualified: ClickHouse.table() qualifies it). */
  table: string;
  /** The columns naming the market and the book (asset); exchange B's ticker is both. */
  market: string;
  asset: string;
  /** A book holds one outcome token of a market (exchange A): reads of one book filter on the asset column too. */
  tokens: boolean;
  /** Records of the venue can be imported (docs/rules/imports.md): capture's copy supersedes them. */
  imports: boolean;
  /** The columns the sink writes (RowBinary), in order, and the writer of one message's row. */
  binaryColumns: ReadonlyArray<readonly [string, string]>;
  write(w: RowBinaryWriter, m: RawMessage, pos: KafkaPosition): void;
  /** The columns after (event time, ingest_seq, dedup_id, market) that order a market's records (the serving order's tie-breaks). */
  ties: readonly string[];
  /** One book's rows (`{m:String}`, `{a:String}` bound; exchange B's market is one book), its snapshots, and the record types a book answer reads. */
  book: { where: string; snapshot: string; types: string };
  /** One book's records as the rollup counts them (`{market:String}`, `{asset:String}` bound). */
  bookEventsWhere: string;
  /**
   * The records of several books as the rollup counts them: `{ms:Array(String)}` and
   * `{as:Array(String)}` bound, the market and asset of each book at the same index (asset
   * values distinct), each row kept only with its own book's market.
   */
  bookEventsWhereMany: string;
  /**
   * The served record of a row, JSON text, as SQL over the raw table's columns
   * (served-record-sql.ts): what a reader that serves records selects. Not a column of the
   * table (migration 014), so a query that does not serve records never analyses it.
   */
  record: string;
}

const fromRegistry = <V extends Venue>(m: VenueModule<V>) => ({ table: m.raw.table, market: m.raw.market, asset: m.raw.asset, tokens: m.tokens, imports: m.imports });

export const VENUE_STORAGE: { readonly [V in Venue]: VenueStorage } = {
  'exchange-a': {
    ...fromRegistry(VENUE_MODULES['exchange-a']), binaryColumns: A_BINARY_COLUMNS, write: writeA as VenueStorage['write'],
    ties: ['asset_id', 'event_type'],
    book: { where: 'market = {m:String} AND asset_id = {a:String}', snapshot: "event_type = 'book'", types: "event_type IN ('book', 'price_change')" },
    bookEventsWhere: `market = {market:String} AND asset_id = {asset:String} AND event_type IN ('book', 'price_change')`,
    bookEventsWhereMany: `market IN {ms:Array(String)} AND asset_id IN {as:Array(String)} AND transform(asset_id, {as:Array(String)}, {ms:Array(String)}, '') = market AND event_type IN ('book', 'price_change')`,
    record: SERVED_RECORD_SQL['exchange-a'],
  },
  'exchange-b': {
    ...fromRegistry(VENUE_MODULES['exchange-b']), binaryColumns: B_BINARY_COLUMNS, write: writeB as VenueStorage['write'],
    ties: ['record_type'],
    book: { where: 'ticker = {m:String}', snapshot: "record_type = 'snapshot'", types: "record_type IN ('snapshot', 'delta', 'gap')" },
    bookEventsWhere: `ticker = {market:String}`,
    bookEventsWhereMany: `ticker IN {as:Array(String)}`,
    record: SERVED_RECORD_SQL['exchange-b'],
  },
};

/** The raw table of each venue. */
export const RAW_TABLE = Object.fromEntries(VENUES.map((v) => [v, VENUE_STORAGE[v].table])) as { readonly [V in Venue]: string };

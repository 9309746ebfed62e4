import type { ClickHouse } from './clickhouse.ts';
import { RAW_TABLE } from './raw-events.repository.ts';
import { queryRows } from './rows.ts';

/** What one table of the database costs: its active parts, as system.parts counts them. */
export interface TableFootprint {
  /** The table's name in the database (on a cluster, the replicated `<name>_local` table of this node). */
  table: string;
  /** One of the raw tables (one per venue): the stored events themselves. */
  raw: boolean;
  /** Rows in the active parts: a ReplacingMergeTree's copies not yet merged away are counted. */
  rows: number;
  bytesOnDisk: number;
  /** The same data uncompressed (columns only, no marks or indexes). */
  uncompressedBytes: number;
  /** Active parts; many small ones mean merges are behind the inserts. */
  parts: number;
}

/** How much of the data the figures cover. */
export type FootprintScope = 'database' | 'this_node';

export interface Footprint {
  /**
   * `database`: a single node, all of it. `this_node` (CLICKHOUSE_CLUSTER set): system.parts
   * is per node, so the figures are this node's replica of its shard's `_local` tables, not
   * the cluster's total (other shards hold other rows; other replicas the same rows again).
   */
  scope: FootprintScope;
  tables: TableFootprint[];
}

interface Row {
  table: string;
  rows: string | number;
  bytes_on_disk: string | number;
  data_uncompressed_bytes: string | number;
  parts: string | number;
}

/**
 * Every MergeTree-family table of the database, with its active parts summed. Tables come
 * from system.tables so that an empty one shows as 0 rather than missing (system.parts has
 * no row for a table without parts); views and Merge tables hold no parts of their own and
 * are left out.
 *
 * Cheap: system.parts is read from the server's memory (no data is touched), and the query is
 * bounded by `max_execution_time` so a server that is struggling gives up rather than piles up.
 */
const query = (maxExecutionSeconds: number) => `
SELECT t.name AS table,
       toUInt64(ifNull(p.rows, 0)) AS rows,
       toUInt64(ifNull(p.bytes_on_disk, 0)) AS bytes_on_disk,
       toUInt64(ifNull(p.data_uncompressed_bytes, 0)) AS data_uncompressed_bytes,
       toUInt64(ifNull(p.parts, 0)) AS parts
FROM system.tables AS t
LEFT JOIN
(
    SELECT table, sum(rows) AS rows, sum(bytes_on_disk) AS bytes_on_disk,
           sum(data_uncompressed_bytes) AS data_uncompressed_bytes, count() AS parts
    FROM system.parts
    WHERE database = {db:String} AND active
    GROUP BY table
) AS p ON p.table = t.name
WHERE t.database = {db:String} AND t.engine LIKE '%MergeTree' AND t.name NOT IN {private:Array(String)}
  AND NOT startsWith(t.name, 'export_tmp_')
ORDER BY table
SETTINGS max_execution_time = ${maxExecutionSeconds}`;

/**
 * The tables of customers and billing: left out, because the status that shows the footprint
 * is public, and their row counts (keys, subscriptions, requests) are the operator's
 * business, not what the stored data costs. Nor are an export's temporary tables
 * (`export_tmp_…`, export.repository.ts): they hold nothing once the export ends.
 */
const PRIVATE_TABLES = ['api_keys', 'api_key_usage', 'subscriptions', 'stripe_events', 'request_log'];

export class FootprintRepository {
  constructor(
    private readonly ch: ClickHouse,
    /** Longest the server may spend on the query, in seconds. */
    private readonly maxExecutionSeconds = 10,
  ) {}

  async read(): Promise<Footprint> {
    const onCluster = this.ch.cluster !== undefined;
    // On a cluster the rows live in `<name>_local`; the Distributed front table has no parts.
    const raw = new Set(Object.values(RAW_TABLE).map((t) => (onCluster ? `${t}_local` : t)));
    // A setting takes no bound parameter: the limit is this class's own integer, never outside input.
    const hidden = PRIVATE_TABLES.flatMap((t) => [t, `${t}_local`]);
    const rows = await queryRows<Row>(this.ch, query(Math.max(1, Math.ceil(this.maxExecutionSeconds))), { db: this.ch.database, private: hidden });
    return {
      scope: onCluster ? 'this_node' : 'database',
      tables: rows.map((r) => ({
        table: r.table,
        raw: raw.has(r.table),
        rows: Number(r.rows),
        bytesOnDisk: Number(r.bytes_on_disk),
        uncompressedBytes: Number(r.data_uncompressed_bytes),
        parts: Number(r.parts),
      })),
    };
  }
}

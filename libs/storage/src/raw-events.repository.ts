import { createHash } from 'node:crypto';
import type { RawMessage, Venue } from '@booktape/domain';
import { sqlString, type ClickHouse } from './clickhouse.ts';
import type { KafkaPosition } from './raw-codec.ts';
import { RowBinaryWriter } from './row-binary.ts';
import { insertRowBinary } from './row-insert.ts';
import { RAW_TABLE, VENUE_STORAGE } from './venue-storage.ts';

export { exchangeAPayload, exchangeBPayload, type KafkaPosition } from './raw-codec.ts';

export interface StoredMessage {
  message: RawMessage;
  position: KafkaPosition;
}

export { RAW_TABLE, VENUE_STORAGE, type VenueStorage } from './venue-storage.ts';

/** The served source of own capture's records: this, then the worker id (docs/rules/imports.md#provenance). */
export const CAPTURE_SOURCE_PREFIX = 'capture:worker-';

/**
 * A raw record's source as the API serves it: the stored `source` (migration 013) of an
 * import, `capture:worker-<worker_id>` for own capture (stored as '', as is every record
 * written before the column existed).
 */
export const servedSourceSql = (source = 'source', worker = 'worker_id') => `if(${source} = '', concat('${CAPTURE_SOURCE_PREFIX}', toString(${worker})), ${source})`;
export const SERVED_SOURCE_SQL = servedSourceSql();

/** Writes and reads the raw tables. Every value is bound or serialised, never glued into SQL. */
export class RawEventsRepository {
  constructor(private readonly ch: ClickHouse) {}

  /**
   * Inserts one batch. `token` makes the insert idempotent: ClickHouse drops a retried
   * insert with the same token. ClickHouse compares only the token, not the data, so the
   * token is bound to the batch's content here: a token reused for other rows (Kafka offsets
   * that restart after a topic was recreated, a caller's mistake) must never drop them. A
   * retry of the same batch has the same rows and so the same token; a re-delivery with
   * other boundaries, or a retry the sink's group commit assembled differently
   * (apps/ingestor/src/sink/insert-group.ts), gets another token and is collapsed by the
   * table's key instead (first copy wins, migration 008; reads use FINAL). The token goes into the statement's SETTINGS clause, never
   * into session settings (see clickhouse.ts).
   */
  async insert(venue: Venue, batch: StoredMessage[], token: string): Promise<number> {
    if (batch.length === 0) return 0;
    const w = new RowBinaryWriter(batch.length * 512);
    const store = VENUE_STORAGE[venue];
    for (const { message, position } of batch) {
      if (message.venue !== venue) throw new Error(`message of ${message.venue} in a ${venue} batch`);
      store.write(w, message, position);
    }
    const body = w.bytes();
    const bound = `${token}/${createHash('sha1').update(body).digest('hex')}`;
    const columns = store.binaryColumns;
    const into = `INSERT INTO ${this.ch.table(RAW_TABLE[venue])} (${columns.map(([c]) => c).join(', ')})
      SETTINGS insert_deduplication_token = ${sqlString(bound)}, async_insert = 0, optimize_on_insert = 0`;
    await insertRowBinary(this.ch, into, columns, body);
    return batch.length;
  }

  /** Deduplicated row count, optionally for one market (condition id or ticker). */
  async count(venue: Venue, market?: string): Promise<number> {
    const key = VENUE_STORAGE[venue].market;
    const rs = await this.ch.client.query({
      query: `SELECT count() AS n FROM ${this.ch.table(RAW_TABLE[venue])} FINAL
        ${market === undefined ? '' : `WHERE ${key} = {market:String}`}`,
      query_params: market === undefined ? {} : { market },
      format: 'JSONEachRow',
    });
    const [row] = await rs.json<{ n: string | number }>();
    return Number(row?.n ?? 0);
  }

  /**
   * The stored records of a venue in serving order, with lineage, for tests, replay checks
   * and the API: the served record plus received_at, worker_id and ingest_seq.
   */
  async dump(venue: Venue, market?: string): Promise<Array<Record<string, unknown>>> {
    const key = VENUE_STORAGE[venue].market;
    const rs = await this.ch.client.query({
      // received_at as the API serves it (ISO 8601, milliseconds; market-data isoMsSql).
      query: `SELECT ${VENUE_STORAGE[venue].record} AS served_record, concat(replaceOne(toString(received_at), ' ', 'T'), 'Z') AS received_at,
          worker_id, toString(ingest_seq) AS ingest_seq, dedup_id
        FROM ${this.ch.table(RAW_TABLE[venue])} FINAL
        ${market === undefined ? '' : `WHERE ${key} = {market:String}`}
        ORDER BY ${key}, event_ts, ingest_seq, dedup_id`,
      query_params: market === undefined ? {} : { market },
      format: 'JSONEachRow',
    });
    const rows = await rs.json<{ served_record: string; received_at: string; worker_id: number; ingest_seq: string; dedup_id: string }>();
    return rows.map((r) => ({
      ...(JSON.parse(r.served_record) as Record<string, unknown>),
      received_at: r.received_at,
      worker_id: Number(r.worker_id),
      ingest_seq: r.ingest_seq,
      dedup_id: r.dedup_id,
    }));
  }
}

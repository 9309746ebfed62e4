import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { utcDate, type ExchangeAMessage, type ExchangeBMessage, type RawMessage, type Venue } from '@booktape/domain';
import { sqlString, type ClickHouse } from './clickhouse.ts';

/** Where a message sat in Kafka: part of the stored lineage. */
export interface KafkaPosition {
  partition: number;
  offset: string;
}

export interface StoredMessage {
  message: RawMessage;
  position: KafkaPosition;
}

export const RAW_TABLE: Record<Venue, string> = {
  'exchange-a': 'raw_exchange_a',
  'exchange-b': 'raw_exchange_b',
};

const A_COLUMNS = [
  'market', 'event_date', 'event_ts', 'asset_id', 'event_type', 'dedup_id', 'ingest_seq', 'hash',
  'payload', 'received_at', 'worker_id', 'kafka_partition', 'kafka_offset',
] as const;
const B_COLUMNS = [
  'ticker', 'event_date', 'event_ts', 'record_type', 'dedup_id', 'ingest_seq', 'sid', 'seq',
  'payload', 'received_at', 'worker_id', 'kafka_partition', 'kafka_offset',
] as const;

/** The interface's 2.1 record: the event with venue extras flattened in, without lineage. */
export function exchangeAPayload(m: ExchangeAMessage): string {
  const { extra, ...event } = m.event;
  return JSON.stringify(extra ? { ...extra, ...event } : event);
}

/** The interface's 2.2 record, without lineage. */
export function exchangeBPayload(m: ExchangeBMessage): string {
  return JSON.stringify(m.record);
}

function rowA(m: ExchangeAMessage, pos: KafkaPosition): string {
  const ts = Number(m.event.timestamp);
  return JSON.stringify({
    market: m.event.market,
    event_date: utcDate(ts),
    event_ts: ts,
    asset_id: m.event.asset_id,
    event_type: m.event.event_type,
    dedup_id: m.dedup_id,
    ingest_seq: m.ingest_seq,
    hash: m.event.hash,
    payload: exchangeAPayload(m),
    received_at: Date.parse(m.received_at),
    worker_id: m.worker_id,
    kafka_partition: pos.partition,
    kafka_offset: pos.offset,
  });
}

function rowB(m: ExchangeBMessage, pos: KafkaPosition): string {
  const ts = m.record.epoch_ms;
  return JSON.stringify({
    ticker: m.record.ticker,
    event_date: utcDate(ts),
    event_ts: ts,
    record_type: m.record.type,
    dedup_id: m.dedup_id,
    ingest_seq: m.ingest_seq,
    sid: m.record.sid,
    seq: m.record.seq,
    payload: exchangeBPayload(m),
    received_at: Date.parse(m.received_at),
    worker_id: m.worker_id,
    kafka_partition: pos.partition,
    kafka_offset: pos.offset,
  });
}

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
    const lines: string[] = [];
    for (const { message, position } of batch) {
      if (message.venue !== venue) throw new Error(`message of ${message.venue} in a ${venue} batch`);
      lines.push(message.venue === 'exchange-a' ? rowA(message, position) : rowB(message, position));
    }
    if (lines.length === 0) return 0;
    const columns = venue === 'exchange-a' ? A_COLUMNS : B_COLUMNS;
    const body = lines.join('\n') + '\n';
    const bound = `${token}/${createHash('sha1').update(body).digest('hex')}`;
    const result = await this.ch.client.exec({
      query: `INSERT INTO ${this.ch.table(RAW_TABLE[venue])} (${columns.join(', ')})
        SETTINGS insert_deduplication_token = ${sqlString(bound)}, async_insert = 0
        FORMAT JSONEachRow`,
      values: Readable.from([body]),
    });
    result.stream.resume();
    return lines.length;
  }

  /** Deduplicated row count, optionally for one market (condition id or ticker). */
  async count(venue: Venue, market?: string): Promise<number> {
    const key = venue === 'exchange-a' ? 'market' : 'ticker';
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
   * and the API: payload plus received_at, worker_id and ingest_seq.
   */
  async dump(venue: Venue, market?: string): Promise<Array<Record<string, unknown>>> {
    const key = venue === 'exchange-a' ? 'market' : 'ticker';
    const rs = await this.ch.client.query({
      // received_at as the API serves it (ISO 8601, milliseconds; market-data isoMsSql).
      query: `SELECT payload, concat(replaceOne(toString(received_at), ' ', 'T'), 'Z') AS received_at,
          worker_id, toString(ingest_seq) AS ingest_seq, dedup_id
        FROM ${this.ch.table(RAW_TABLE[venue])} FINAL
        ${market === undefined ? '' : `WHERE ${key} = {market:String}`}
        ORDER BY ${key}, event_ts, ingest_seq, dedup_id`,
      query_params: market === undefined ? {} : { market },
      format: 'JSONEachRow',
    });
    const rows = await rs.json<{ payload: string; received_at: string; worker_id: number; ingest_seq: string; dedup_id: string }>();
    return rows.map((r) => ({
      ...(JSON.parse(r.payload) as Record<string, unknown>),
      received_at: r.received_at,
      worker_id: Number(r.worker_id),
      ingest_seq: r.ingest_seq,
      dedup_id: r.dedup_id,
    }));
  }
}

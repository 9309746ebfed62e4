import { Readable } from 'node:stream';
import { utcDate, type RawMessage, type Venue } from '@booktape/domain';
import { sqlString, type ClickHouse } from './clickhouse.ts';
import { exchangeAPayload, exchangeBPayload } from './raw-codec.ts';
import type { StoredMessage } from './raw-events.repository.ts';

/**
 * The sink's insert as it was before migration 012: rows with a JSON `payload`, into the
 * raw tables of migrations 001–011. Tests of the migrations build old stores with it.
 */
export async function insertLegacyRows(ch: ClickHouse, venue: Venue, batch: StoredMessage[], token: string): Promise<void> {
  const lines = batch.map(({ message, position }) => JSON.stringify({ ...legacyColumns(message), kafka_partition: position.partition, kafka_offset: position.offset }));
  const result = await ch.client.exec({
    query: `INSERT INTO ${ch.table(venue === 'exchange-a' ? 'raw_exchange_a' : 'raw_exchange_b')}
      SETTINGS insert_deduplication_token = ${sqlString(token)}, async_insert = 0 FORMAT JSONEachRow`,
    values: Readable.from([lines.join('\n') + '\n']),
  });
  result.stream.resume();
}

function legacyColumns(m: RawMessage): Record<string, unknown> {
  const lineage = { dedup_id: m.dedup_id, ingest_seq: m.ingest_seq, received_at: Date.parse(m.received_at), worker_id: m.worker_id };
  if (m.venue === 'exchange-a') {
    const ts = Number(m.event.timestamp);
    return { market: m.event.market, event_date: utcDate(ts), event_ts: ts, asset_id: m.event.asset_id, event_type: m.event.event_type, hash: m.event.hash, payload: exchangeAPayload(m), ...lineage };
  }
  const ts = m.record.epoch_ms;
  return { ticker: m.record.ticker, event_date: utcDate(ts), event_ts: ts, record_type: m.record.type, sid: m.record.sid, seq: m.record.seq, payload: exchangeBPayload(m), ...lineage };
}

/**
 * RawEventsRepository.dump of a store before migration 012, whose `payload` is a stored
 * column (dump serves the typed tables' record): the same rows, in the same shape and order.
 */
export async function legacyDump(ch: ClickHouse, venue: Venue, market?: string): Promise<Array<Record<string, unknown>>> {
  const key = venue === 'exchange-a' ? 'market' : 'ticker';
  const rs = await ch.client.query({
    query: `SELECT payload, concat(replaceOne(toString(received_at), ' ', 'T'), 'Z') AS received_at,
        worker_id, toString(ingest_seq) AS ingest_seq, dedup_id
      FROM ${ch.table(venue === 'exchange-a' ? 'raw_exchange_a' : 'raw_exchange_b')} FINAL
      ${market === undefined ? '' : `WHERE ${key} = {market:String}`}
      ORDER BY ${key}, event_ts, ingest_seq, dedup_id`,
    query_params: market === undefined ? {} : { market },
    format: 'JSONEachRow',
  });
  const rows = await rs.json<{ payload: string; received_at: string; worker_id: number; ingest_seq: string; dedup_id: string }>();
  return rows.map((r) => ({ ...(JSON.parse(r.payload) as Record<string, unknown>), received_at: r.received_at, worker_id: Number(r.worker_id), ingest_seq: r.ingest_seq, dedup_id: r.dedup_id }));
}

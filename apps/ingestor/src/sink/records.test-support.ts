import type { ExchangeAMessage, ExchangeBMessage } from '@booktape/domain';

/** Records as capture makes them, for the sink's unit tests. */
const T0 = Date.UTC(2026, 3, 2, 12);

export function aMessage(i: number, o: Partial<ExchangeAMessage> = {}): ExchangeAMessage {
  const ts = T0 + i;
  return {
    venue: 'exchange-a',
    received_at: new Date(ts + 3).toISOString(),
    worker_id: 1,
    ingest_seq: (BigInt(ts + 3) * 2n ** 23n).toString(),
    dedup_id: `h-${i}`,
    event: { market: `0xm${i % 3}`, asset_id: `tok${i % 3}`, timestamp: String(ts), hash: `h-${i}`, event_type: 'price_change', changes: [{ price: '0.5', side: 'BUY', size: String(i) }] },
    ...o,
  };
}

export function bMessage(i: number): ExchangeBMessage {
  const ts = T0 + i;
  return {
    venue: 'exchange-b',
    received_at: new Date(ts).toISOString(),
    worker_id: 1,
    ingest_seq: (BigInt(ts) * 2n ** 23n + BigInt(i % 2048)).toString(),
    dedup_id: `b-${i}`,
    record: { type: 'trade', ticker: 'KXTEST', timestamp: new Date(ts).toISOString(), epoch_ms: ts, sid: 1, seq: i, data: { i } },
  };
}

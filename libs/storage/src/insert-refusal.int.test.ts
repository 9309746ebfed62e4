import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExchangeAMessage, ExchangeBMessage } from '@booktape/domain';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { badDataRefusal } from './insert-refusal.ts';
import { RawEventsRepository } from './raw-events.repository.ts';

/**
 * What an insert into the raw tables answers when it refuses a record, against the embedded
 * engine: the binary rows' own checks (raw-codec.ts, a RowRefusal named as the engine names
 * a text row it cannot parse) or the engine's refusal. The sink splits a batch only on these
 * (badDataRefusal), and retries on anything else. The sink's decoder (libs/messaging message-codec) leaves such values to the
 * engine, and refuses those the engine would store as another value.
 */

const T0 = Date.UTC(2026, 3, 2, 12);
const position = { partition: 0, offset: '1' };

const a = (o: Partial<ExchangeAMessage> = {}): ExchangeAMessage => ({
  venue: 'exchange-a',
  received_at: new Date(T0).toISOString(),
  worker_id: 1,
  ingest_seq: (BigInt(T0) * 2n ** 23n).toString(),
  dedup_id: 'h-1',
  event: { market: '0xa1', asset_id: 'tok1', timestamp: String(T0), hash: 'h-1', event_type: 'price_change', changes: [] },
  ...o,
});

const b = (record: Partial<ExchangeBMessage['record']>): ExchangeBMessage => ({
  venue: 'exchange-b',
  received_at: new Date(T0).toISOString(),
  worker_id: 1,
  ingest_seq: (BigInt(T0) * 2n ** 23n).toString(),
  dedup_id: 'b-1',
  record: { type: 'trade', ticker: 'KXTEST', timestamp: new Date(T0).toISOString(), epoch_ms: T0, sid: 1, seq: 1, ...record },
});

async function refusal(p: Promise<unknown>): Promise<string | null | 'stored'> {
  try {
    await p;
    return 'stored';
  } catch (e) {
    return badDataRefusal(e);
  }
}

describe('insert refusals of the real engine', () => {
  let t: TestClickHouse;
  let repo: RawEventsRepository;

  beforeAll(async () => {
    t = await tempClickHouse();
    repo = new RawEventsRepository(t.ch);
  });
  afterAll(async () => {
    await t?.cleanup();
  });

  it('names a record the raw tables cannot parse as bad data, and stores nothing of its batch', async () => {
    const good = a();
    expect(await refusal(repo.insert('exchange-a', [{ message: good, position }, { message: a({ dedup_id: 'h-2', worker_id: -1 }), position }], 't1'))).toBe('CANNOT_PARSE_NUMBER');
    expect(await refusal(repo.insert('exchange-a', [{ message: a({ worker_id: 1.5 }), position }], 't2'))).toBe('CANNOT_PARSE_NUMBER');
    expect(await refusal(repo.insert('exchange-a', [{ message: a({ received_at: 'soon' }), position }], 't2b'))).toBe('CANNOT_PARSE_DATETIME');
    expect(await refusal(repo.insert('exchange-b', [{ message: b({ sid: 'x' as unknown as number }), position }], 't3'))).toMatch(/^CANNOT_PARSE_/);
    expect(await refusal(repo.insert('exchange-b', [{ message: b({ seq: 1e30 }), position }], 't4'))).toMatch(/^CANNOT_PARSE_/);
    // The refused batch is all or nothing: its good record was not stored either.
    expect(await repo.count('exchange-a')).toBe(0);
    expect(await refusal(repo.insert('exchange-a', [{ message: good, position }], 't5'))).toBe('stored');
    expect(await repo.count('exchange-a')).toBe(1);
  });

  it('does not take a missing table for bad data: the sink must hold and retry', async () => {
    const table = t.ch.table('raw_exchange_b');
    await t.ch.client.command({ query: `DETACH TABLE ${table}` });
    try {
      expect(await refusal(repo.insert('exchange-b', [{ message: b({}), position }], 't6'))).toBeNull();
    } finally {
      await t.ch.client.command({ query: `ATTACH TABLE ${table}` });
    }
  });
});

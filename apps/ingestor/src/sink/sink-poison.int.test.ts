import { describe, expect, it } from 'vitest';
import type { ExchangeAMessage, ExchangeBMessage, RawMessage } from '@booktape/domain';
import { silentLogger } from '@booktape/config';
import { decodeRawMessages, encodeRawMessages } from '@booktape/messaging';
import { uniqueId, waitFor } from '@booktape/testkit';
import { createSink, type StoredPartition } from './sink.ts';
import { sinkTestBed } from './sink.test-support.ts';

/**
 * A poison batch (issue 14, point 7): records that pass the sink's decoder but that the
 * engine itself refuses. They used to hold their partition forever (the sink retried the
 * whole batch); now the batch is split, the good records stored, the bad ones dead-lettered.
 */

const log = silentLogger();
const T0 = Date.UTC(2026, 3, 2, 12);

function aMessage(i: number, o: Partial<ExchangeAMessage> = {}): ExchangeAMessage {
  const ts = T0 + i;
  return {
    venue: 'exchange-a',
    received_at: new Date(ts + 3).toISOString(),
    worker_id: 1,
    ingest_seq: (BigInt(ts + 3) * 2n ** 23n).toString(),
    dedup_id: `h-${i}`,
    event: { market: '0xa1', asset_id: 'tok1', timestamp: String(ts), hash: `h-${i}`, event_type: 'price_change', changes: [{ price: '0.5', side: 'BUY', size: String(i) }] },
    ...o,
  };
}

function bMessage(i: number, sid: unknown = 1): ExchangeBMessage {
  const ts = T0 + i;
  return {
    venue: 'exchange-b',
    received_at: new Date(ts).toISOString(),
    worker_id: 1,
    ingest_seq: (BigInt(ts) * 2n ** 23n + BigInt(i % 2048)).toString(),
    dedup_id: `b-${i}`,
    record: { type: 'trade', ticker: 'KXTEST', timestamp: new Date(ts).toISOString(), epoch_ms: ts, sid: sid as number, seq: i, data: { i } },
  };
}

describe('sink: a batch ClickHouse refuses as bad data', () => {
  // One partition per topic: a venue's records arrive in the order sent (here, mostly in one batch).
  const bed = sinkTestBed('poison', 1);

  /** Each value is one Kafka message of the given records, all under one key. */
  async function produce(topic: string, values: RawMessage[][]) {
    for (const v of values) await bed.producer.send({ topic, key: 'k', value: encodeRawMessages(v) });
    await bed.producer.flush();
  }

  async function deadLetters(expected: number): Promise<Array<{ venue: string | null; reason: string; frame: string; source: { offset: string } }>> {
    const out: Array<{ venue: string | null; reason: string; frame: string; source: { offset: string } }> = [];
    const { kafka, topics } = bed;
    const consumer = kafka.consumer({ groupId: uniqueId('dlq-reader'), maxWaitTimeInMs: 100 });
    await consumer.connect();
    await consumer.subscribe({ topics: [topics.deadLetter], fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void out.push(JSON.parse(message.value!.toString('utf8'))) });
    try {
      await waitFor(`${expected} dead letters`, () => out.length >= expected, 30_000);
    } finally {
      await consumer.disconnect();
    }
    return out;
  }

  it('stores every good record, in first-copy order, dead-letters only the refused ones, and moves on', async () => {
    const { t, kafka, topics, repo } = bed;
    // Exchange A: 120 records, one message each; #37 has a worker_id the UInt32 column
    // refuses outright (the decoder leaves such values to the engine). A re-sent copy of #90 (later
    // ingest_seq, other lineage) comes BEFORE the bad record in Kafka, the original after
    // it: the split inserts the copy first, and still the original must be the one kept.
    const good = Array.from({ length: 120 }, (_, i) => aMessage(i)).filter((_, i) => i !== 37);
    const bad = aMessage(37, { worker_id: -1 });
    const resent = aMessage(90, { received_at: new Date(T0 + 500).toISOString(), ingest_seq: (BigInt(T0 + 500) * 2n ** 23n).toString(), worker_id: 9 });
    const aValues: ExchangeAMessage[][] = [[resent], ...good.slice(0, 37).map((m) => [m]), [bad], ...good.slice(37).map((m) => [m])];
    // Exchange B: one Kafka message of three records, the middle one with a sid the
    // Nullable(Int64) column cannot parse (a fraction): only that record goes, its neighbours stay.
    const bRecords = [bMessage(1), bMessage(2, 1.5), bMessage(3)];
    await produce(topics.raw['exchange-a'], aValues);
    await produce(topics.raw['exchange-b'], [bRecords]);

    const seen: StoredPartition[] = [];
    const sink = createSink({ kafka, topics, ch: t.ch, log, groupId: uniqueId('g'), onStored: (p) => void seen.push(...p), options: { retryInitialMs: 20, retryMaxMs: 100 } });
    await sink.start();
    try {
      await waitFor('good records stored', async () => (await repo.count('exchange-a')) === good.length && (await repo.count('exchange-b')) === 2, 60_000);
      await waitFor('refused records dead-lettered', () => sink.stats.refusedRecords === 2 && sink.stats.deadLettered === 2);

      // Nothing held the partitions: a record produced afterwards is stored too.
      await produce(topics.raw['exchange-a'], [[aMessage(500)]]);
      await waitFor('later record stored', async () => (await repo.count('exchange-a')) === good.length + 1);
      expect(sink.stats.paused).toBe(false);
      expect(sink.stats.insertFailures).toBe(0);
      expect(sink.health().ok).toBe(true);

      const storedA = await repo.dump('exchange-a');
      expect(storedA.map((r) => r.dedup_id)).toEqual([...good, aMessage(500)].map((m) => m.dedup_id));
      const kept90 = storedA.find((r) => r.dedup_id === 'h-90')!;
      expect(kept90).toMatchObject({ worker_id: 1, ingest_seq: aMessage(90).ingest_seq, received_at: aMessage(90).received_at });
      expect((await repo.dump('exchange-b')).map((r) => r.dedup_id)).toEqual(['b-1', 'b-3']);
      expect(new Set(seen.map((p) => p.venue))).toEqual(new Set(['exchange-a', 'exchange-b']));

      const letters = await deadLetters(2);
      const byVenue = new Map(letters.map((l) => [l.venue, l]));
      const letterA = byVenue.get('exchange-a')!;
      expect(letterA.reason).toMatch(/^clickhouse refused the record \(CANNOT_PARSE_NUMBER\)/);
      expect(letterA.source.offset).toBe('38'); // the bad record's own message (after the re-send and #0–#36)
      // The frame is the refused record alone, in the raw topic's encoding: it can be fixed and sent again.
      const decodedA = decodeRawMessages('exchange-a', Buffer.from(letterA.frame));
      expect(decodedA.ok && decodedA.messages).toEqual([bad]);
      const letterB = byVenue.get('exchange-b')!;
      expect(letterB.reason).toMatch(/^clickhouse refused the record \(CANNOT_PARSE_/);
      const decodedB = decodeRawMessages('exchange-b', Buffer.from(letterB.frame));
      expect(decodedB.ok && decodedB.messages).toEqual([bRecords[1]]);
    } finally {
      await sink.stop();
    }
  });
});

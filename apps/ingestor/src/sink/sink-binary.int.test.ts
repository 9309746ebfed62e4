import { describe, expect, it } from 'vitest';
import type { RawMessage } from '@booktape/domain';
import { silentLogger } from '@booktape/config';
import { concatRawMessages, createRawProducer, encodeRawMessages, encodeRawValue, ensureTopics, isBinaryValue, topicNames, type BatchingProducer, type Topics } from '@booktape/messaging';
import { CapturePipeline } from '../capture-pipeline.ts';
import { ExchangeBNormaliser, Sequencer, marketKey, normaliseExchangeA } from '@booktape/venues';
import { uniqueId, waitFor } from '@booktape/testkit';
import { createSink } from './sink.ts';
import { sinkTestBed } from './sink.test-support.ts';

/**
 * The binary raw value (docs/rules/kafka-records.md) through the real sink: JSON values (what
 * capture wrote before), binary values and merged binary values in one topic and one batch
 * store exactly the rows the same records store when they all come as JSON.
 */

const log = silentLogger();
const market = (n: number) => `0x${String(n).repeat(64)}`;

/** Frames of both venues, one of each per step, over a few markets. */
function frames(): Array<{ venue: 'exchange-a' | 'exchange-b'; frame: unknown; at: Date }> {
  const out: Array<{ venue: 'exchange-a' | 'exchange-b'; frame: unknown; at: Date }> = [];
  const t0 = Date.UTC(2026, 3, 2, 12);
  for (let i = 0; i < 60; i++) {
    const at = new Date(t0 + i * 7);
    const m = market((i % 3) + 1);
    const frame =
      i % 10 === 0
        ? { event_type: 'book', asset_id: `${100 + (i % 3)}`, market: m, bids: [{ price: '0.48', size: `${i}.5` }], asks: [{ price: '0.52', size: '10' }], timestamp: String(t0 + i), hash: `0x${i.toString(16).padStart(40, '0')}`, tick_size: '0.01' }
        : i % 10 === 5
          ? { event_type: 'last_trade_price', asset_id: `${100 + (i % 3)}`, market: m, price: '0.456', size: '219.217767', side: 'BUY', fee_rate_bps: '0', timestamp: String(t0 + i), transaction_hash: `0x${'ab'.repeat(32)}` }
          : { event_type: 'price_change', market: m, timestamp: String(t0 + i), price_changes: [{ asset_id: `${100 + (i % 3)}`, price: '0.5', size: String(i), side: i % 2 ? 'BUY' : 'SELL', hash: `${i}`.padStart(40, 'c'), best_bid: '0.5', best_ask: '0.51' }] };
    out.push({ venue: 'exchange-a', frame, at });
    const fb =
      i === 0
        ? { type: 'orderbook_snapshot', sid: 1, seq: 1, msg: { market_ticker: 'KX-1', market_id: '', yes_dollars_fp: [['0.4100', '20.00']], no_dollars_fp: [] } }
        : { type: 'orderbook_delta', sid: 1, seq: i + 1 + (i > 40 ? 1 : 0), msg: { market_ticker: 'KX-1', price_dollars: i === 30 ? null : '0.4100', delta_fp: '-1.00', side: 'yes', ts: '2026-04-02T12:00:00.73425Z' } };
    out.push({ venue: 'exchange-b', frame: fb, at });
  }
  return out;
}

/** Records of both venues as capture makes them, one frame each, over a few markets. */
function records(): RawMessage[] {
  const seq = new Sequencer(3);
  const b = new ExchangeBNormaliser();
  const out: RawMessage[] = [];
  for (const { venue, frame, at } of frames()) {
    const r = venue === 'exchange-a' ? normaliseExchangeA(frame, at) : b.normalise(frame, at);
    if (r.kind !== 'records') throw new Error(JSON.stringify(r));
    out.push(...seq.stamp(at, r.records as never, venue));
  }
  return out;
}

/** Each record's value in one of three forms, by position: JSON, binary, or merged binary. */
async function sendMixed(producer: BatchingProducer, topics: Topics, msgs: RawMessage[]): Promise<void> {
  const byMarket = new Map<string, RawMessage[]>();
  for (const m of msgs) byMarket.set(marketKey(m), [...(byMarket.get(marketKey(m)) ?? []), m]);
  for (const [key, list] of byMarket) {
    for (let i = 0; i < list.length; i += 4) {
      const run = list.slice(i, i + 4);
      const topic = topics.raw[run[0]!.venue];
      const form = (i / 4) % 3;
      if (form === 0) for (const m of run) await producer.send({ topic, key, value: encodeRawMessages([m]) });
      else if (form === 1) for (const m of run) await producer.send({ topic, key, value: encodeRawValue([m]) });
      else await producer.send({ topic, key, value: concatRawMessages(run.map((m) => encodeRawValue([m]))) });
    }
  }
  await producer.flush();
}

describe('sink: binary and JSON raw values', () => {
  const bed = sinkTestBed('sink-binary');

  async function storeWith(topics: Topics, send: () => Promise<void>, expected: number, deadLetters = 0) {
    const sink = createSink({ kafka: bed.kafka, topics, ch: bed.t.ch, log, groupId: uniqueId('g') });
    // Everything is on the topics before the sink starts: its first fetches mix the forms in one batch.
    await send();
    await sink.start();
    try {
      await waitFor('all rows stored', async () => (await bed.repo.count('exchange-a')) + (await bed.repo.count('exchange-b')) === expected && sink.stats.deadLettered === deadLetters);
      return { a: await bed.repo.dump('exchange-a'), b: await bed.repo.dump('exchange-b'), sink: sink.stats };
    } finally {
      await sink.stop();
    }
  }


  it('stores binary, merged binary and JSON values of one batch as the same rows JSON alone gives', async () => {
    const msgs = records();
    const viaJson = await storeWith(bed.topics, () => bed.produce(msgs), msgs.length);
    // The same records again, on fresh topics into emptied tables, in the three forms.
    for (const table of ['raw_exchange_a', 'raw_exchange_b']) await bed.t.ch.client.command({ query: `TRUNCATE TABLE ${bed.t.ch.table(table)}` });
    const topics = topicNames(`${uniqueId('sink-mixed')}.`);
    await ensureTopics(bed.kafka, topics, 4);
    const cut = encodeRawValue(msgs.slice(0, 3));
    const version2 = Buffer.from(encodeRawValue(msgs.slice(0, 1)));
    version2[3] = 2;
    const mixed = await storeWith(
      topics,
      async () => {
        await sendMixed(bed.producer, topics, msgs);
        // A value cut short and one of a version this reader does not know: dead-lettered, never a crash.
        await bed.producer.send({ topic: topics.raw['exchange-a'], key: 'x', value: cut.subarray(0, cut.length - 5) });
        await bed.producer.send({ topic: topics.raw['exchange-a'], key: 'x', value: version2 });
        await bed.producer.flush();
      },
      msgs.length,
      2,
    );
    expect(viaJson.a.length + viaJson.b.length).toBe(msgs.length);
    expect(mixed.a).toEqual(viaJson.a);
    expect(mixed.b).toEqual(viaJson.b);
    expect(JSON.stringify(mixed.a)).toBe(JSON.stringify(viaJson.a));
    expect(mixed.sink.stored).toBe(msgs.length);
  });

  it('KAFKA_RAW_VALUE_FORMAT: capture writing JSON (for a rollback) or binary, merged as its producer merges, stores the same rows', async () => {
    const stored: Array<{ a: unknown[]; b: unknown[] }> = [];
    for (const format of ['json', 'binary'] as const) {
      for (const table of ['raw_exchange_a', 'raw_exchange_b']) await bed.t.ch.client.command({ query: `TRUNCATE TABLE ${bed.t.ch.table(table)}` });
      const topics = topicNames(`${uniqueId(`sink-${format}`)}.`);
      await ensureTopics(bed.kafka, topics, 4);
      const sent: Array<string | Buffer> = [];
      const producer = createRawProducer(bed.kafka, log, topics);
      const send = producer.send.bind(producer);
      producer.send = (m) => {
        if (m.topic !== topics.gaps) sent.push(m.value);
        return send(m);
      };
      await producer.connect();
      const pipeline = new CapturePipeline({ producer, topics, workerId: 3, log, rawValueFormat: format });
      const fs = frames();
      await storeWith(
        topics,
        async () => {
          for (const f of fs) await pipeline.handleFrame(f.venue, f.frame, f.at, { writeFile: false });
          await producer.flush();
          await producer.disconnect();
        },
        records().length,
      ).then((r) => stored.push({ a: r.a, b: r.b }));
      // What went to Kafka is what the switch says: JSON text, or binary values.
      expect(sent.length).toBeGreaterThan(0);
      for (const v of sent) expect(format === 'json' ? typeof v === 'string' && v.startsWith('[') : Buffer.isBuffer(v) && isBinaryValue(v)).toBe(true);
    }
    expect(stored[0]!.a.length + stored[0]!.b.length).toBe(records().length);
    const same = JSON.stringify(stored[0]) === JSON.stringify(stored[1]);
    expect(same, 'JSON and binary values store the same rows, byte for byte').toBe(true);
  });
});

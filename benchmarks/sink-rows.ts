/**
 * The sink's JavaScript per record, apart from Kafka and the engine: the binary Kafka values
 * a capture file yields (through the capture pipeline, as `booktape replay` sends them) are
 * decoded and written as the raw tables' RowBinary rows, as the sink does for each insert.
 *
 *   node --import tsx benchmarks/sink-rows.ts FILE [limit]
 *
 * ioredis is loaded first: the sink's process has it (the rollup worker's BullMQ), and it
 * makes some string built-ins slower (docs/BENCHMARKS.md).
 */
import 'ioredis';
import { silentLogger } from '@booktape/config';
import type { RawMessage, Venue } from '@booktape/domain';
import { decodeRawMessages, topicNames, type BatchingProducer } from '@booktape/messaging';
import type { StoredMessage } from '@booktape/storage';
import { RowBinaryWriter } from '../libs/storage/src/row-binary.ts';
import { writeA, writeARebuilt, writeB, writeBRebuilt } from '../libs/storage/src/raw-codec.ts';
import { CapturePipeline } from '../apps/ingestor/src/capture-pipeline.ts';
import { replayFiles } from '../apps/ingestor/src/replay/replay.ts';

const cpuNow = () => { const c = process.cpuUsage(); return (c.user + c.system) / 1000; };
const file = process.argv[2];
if (!file) throw new Error('usage: sink-rows.ts FILE [limit]');
const topics = topicNames('bench.');
const values: Array<{ venue: Venue; value: Buffer }> = [];
const venueOf = new Map(Object.entries(topics.raw).map(([v, t]) => [t, v as Venue]));
const producer = {
  buffered: 0,
  async send(m: { topic: string; value: string | Buffer }) {
    const venue = venueOf.get(m.topic);
    if (venue && Buffer.isBuffer(m.value)) values.push({ venue, value: m.value });
  },
} as unknown as BatchingProducer;
const pipeline = new CapturePipeline({ producer, topics, workerId: 1, log: silentLogger() });
await replayFiles(pipeline, [file]);
const limit = Number(process.argv[3] ?? Infinity);
const rows: Record<Venue, StoredMessage[]> = { 'exchange-a': [], 'exchange-b': [] };
const t0 = performance.now();
let offset = 0;
for (const { venue, value } of values) {
  const d = decodeRawMessages(venue, value);
  if (!d.ok) throw new Error(d.reason);
  for (const message of d.messages as RawMessage[]) rows[venue].push({ message, position: { partition: 0, offset: String(offset++) } });
}
const decodeMs = performance.now() - t0;
const total = rows['exchange-a'].length + rows['exchange-b'].length;
console.log(`values ${values.length}, records A ${rows['exchange-a'].length} B ${rows['exchange-b'].length}, decode ${((decodeMs * 1000) / total).toFixed(2)} µs/record`);

type Write = (w: RowBinaryWriter, m: RawMessage, p: StoredMessage['position']) => void;
const ways: Record<Venue, Record<string, Write>> = {
  'exchange-a': { rebuilt: writeARebuilt as Write, now: writeA as Write },
  'exchange-b': { rebuilt: writeBRebuilt as Write, now: writeB as Write },
};
for (const venue of ['exchange-a', 'exchange-b'] as const) {
  const list = rows[venue].slice(0, limit);
  const times: Record<string, number[]> = {};
  const out: Record<string, Buffer[]> = {};
  for (let round = 0; round < 7; round++) {
    for (const [name, write] of Object.entries(ways[venue]).filter(([n]) => !process.env.ONLY || n === process.env.ONLY)) {
      const bufs: Buffer[] = [];
      const t = cpuNow();
      for (let i = 0; i < list.length; i += 8000) {
        const part = list.slice(i, i + 8000);
        const w = new RowBinaryWriter(part.length * 512);
        for (const { message, position } of part) write(w, message, position);
        bufs.push(Buffer.from(w.bytes()));
      }
      (times[name] ??= []).push(((cpuNow() - t) * 1000) / list.length);
      out[name] = bufs;
    }
  }
  const same = out.rebuilt ? Buffer.concat(out.rebuilt).equals(Buffer.concat(out.now!)) : 'not compared';
  for (const [name, ts] of Object.entries(times)) {
    ts.sort((a, b) => a - b);
    console.log(`${venue} ${name}: ${list.length} rows, µs/record min ${ts[0]!.toFixed(2)} median ${ts[3]!.toFixed(2)}`);
  }
  console.log(`${venue}: same bytes ${same}, ${Math.round(Buffer.concat(out.now!).length / list.length)} bytes/row`);
}

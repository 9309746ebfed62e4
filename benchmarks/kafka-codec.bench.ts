/**
 * Kafka raw-value codec benchmark (issue 23, point 3): encode + decode per record of the
 * JSON array value capture wrote before and of the binary value it writes now
 * (docs/rules/kafka-records.md), in one run, as a ratio.
 *
 * Records: the replay benchmark's synthetic capture (capture-gen.ts: both venues, newer and
 * older shapes, ~1.6 records per frame; BENCH_CODEC_FRAMES frames, default 200,000) through
 * the real normalisers and the Sequencer, grouped per frame and market as capture sends them.
 * Encode is what capture does per value up to the bytes Kafka sends (for JSON, the text and
 * its UTF-8 bytes, which kafkajs makes of a string); decode is the sink's decodeRawMessages
 * (its checks included) on those bytes. Also timed: decoding the values merged per market in
 * runs of 50, as the producer coalesces them within a flush. Rounds alternate between the
 * two codecs after two warm-up rounds each; the figure is the median round, CPU time of the
 * process (the machine is shared). A JSON line ends the output.
 *
 *   npm run bench -- kafka-codec      BENCH_CODEC_FRAMES=50000 for a quicker run
 */
import { existsSync, mkdirSync, renameSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '@booktape/config';
import type { RawMessage, Venue } from '@booktape/domain';
import { binaryRecordLayouts, concatRawMessages, decodeRawMessages, encodeRawMessages, encodeRawValue } from '@booktape/messaging';
import { ExchangeBNormaliser, Sequencer, normaliseExchangeA, readCaptureFile } from '@booktape/venues';
import { writeCapture } from './capture-gen.ts';
import { intEnv } from './bench-env.ts';

const frames = intEnv('BENCH_CODEC_FRAMES', 200_000, 1000);
const WARMUP = 2;
const ROUNDS = 7;
const MERGE = 50;

// The same capture the replay benchmark generates (and keeps) for this size.
const GEN_VERSION = 2;
const benchDir = path.join(REPO_ROOT, 'data', 'bench');
mkdirSync(benchDir, { recursive: true });
const file = path.join(benchDir, `replay-${frames}-v${GEN_VERSION}.ndjson`);
if (!existsSync(file)) {
  const tmp = `${file}.part`;
  await writeCapture(tmp, { frames, marketsA: 30, tickersB: 20, seed: 10, startMs: Date.parse('2026-03-01T08:00:00Z') });
  renameSync(tmp, file);
}

/** The values capture sends: per frame, the records of each market. */
interface Value {
  venue: Venue;
  key: string;
  messages: RawMessage[];
}
const values: Value[] = [];
const seq = new Sequencer(1);
const b = new ExchangeBNormaliser();
for await (const entry of readCaptureFile(file)) {
  if ('error' in entry) continue;
  const line = entry.line;
  if (line.boundary !== undefined) {
    if (line.venue === 'exchange-b' && line.boundary.kind === 'connect') b.reset();
    continue;
  }
  if (line.frame === undefined) continue;
  const at = new Date(line.received_at);
  const r = line.venue === 'exchange-a' ? normaliseExchangeA(line.frame, at) : b.normalise(line.frame, at);
  if (r.kind !== 'records') continue;
  const ms = seq.stamp(at, r.records as never, line.venue);
  const byMarket = new Map<string, RawMessage[]>();
  for (const m of ms) {
    const k = m.venue === 'exchange-a' ? m.event.market : m.record.ticker;
    let list = byMarket.get(k);
    if (!list) byMarket.set(k, (list = []));
    list.push(m);
  }
  for (const [key, list] of byMarket) values.push({ venue: line.venue, key, messages: list });
}
const records = values.reduce((n, v) => n + v.messages.length, 0);

type Codec = 'json' | 'binary';
const encode: Record<Codec, (ms: RawMessage[]) => Buffer> = {
  json: (ms) => Buffer.from(encodeRawMessages(ms), 'utf8'),
  binary: (ms) => encodeRawValue(ms),
};

/** Consecutive values of one market merged in runs of MERGE, as the producer's coalesce does. */
function merged(codec: Codec): Array<{ venue: Venue; value: Buffer }> {
  const runs = new Map<string, { venue: Venue; parts: Array<string | Buffer> }>();
  const out: Array<{ venue: Venue; value: Buffer }> = [];
  for (const v of values) {
    let run = runs.get(v.key);
    if (!run) runs.set(v.key, (run = { venue: v.venue, parts: [] }));
    run.parts.push(codec === 'json' ? encodeRawMessages(v.messages) : encodeRawValue(v.messages));
    if (run.parts.length === MERGE) {
      const m = concatRawMessages(run.parts);
      out.push({ venue: run.venue, value: typeof m === 'string' ? Buffer.from(m) : m });
      run.parts = [];
    }
  }
  for (const run of runs.values()) {
    if (run.parts.length === 0) continue;
    const m = concatRawMessages(run.parts);
    out.push({ venue: run.venue, value: typeof m === 'string' ? Buffer.from(m) : m });
  }
  return out;
}

const cpuMs = (c: NodeJS.CpuUsage) => (c.user + c.system) / 1000;
let sink = 0; // keeps the work observable

function round(codec: Codec, mergedValues: Array<{ venue: Venue; value: Buffer }>): { encode: number; decode: number; decodeMerged: number; bytes: number } {
  const enc = encode[codec];
  const bytesOut: Buffer[] = new Array(values.length);
  let c = process.cpuUsage();
  for (let i = 0; i < values.length; i++) bytesOut[i] = enc(values[i]!.messages);
  const encodeMs = cpuMs(process.cpuUsage(c));
  c = process.cpuUsage();
  for (let i = 0; i < values.length; i++) {
    const d = decodeRawMessages(values[i]!.venue, bytesOut[i]!);
    if (!d.ok) throw new Error(`${codec}: ${d.reason}`);
    sink += d.messages.length;
  }
  const decodeMs = cpuMs(process.cpuUsage(c));
  c = process.cpuUsage();
  for (const m of mergedValues) {
    const d = decodeRawMessages(m.venue, m.value);
    if (!d.ok) throw new Error(`${codec} merged: ${d.reason}`);
    sink += d.messages.length;
  }
  const decodeMergedMs = cpuMs(process.cpuUsage(c));
  return { encode: encodeMs, decode: decodeMs, decodeMerged: decodeMergedMs, bytes: bytesOut.reduce((n, x) => n + x.length, 0) };
}

// The binary values must carry exactly what the JSON ones did; checked once, outside the timing.
let compact = 0;
for (const v of values) {
  const bin = encodeRawValue(v.messages);
  const d = decodeRawMessages(v.venue, bin);
  if (!d.ok || JSON.stringify(d.messages) !== encodeRawMessages(v.messages)) throw new Error(`binary value differs for ${v.key}`);
  compact += binaryRecordLayouts(bin).filter((l) => l !== 'json').length;
}

const mergedBy = { json: merged('json'), binary: merged('binary') };
const runs: Record<Codec, Array<ReturnType<typeof round>>> = { json: [], binary: [] };
for (let r = 0; r < WARMUP + ROUNDS; r++) {
  for (const codec of (r % 2 === 0 ? ['json', 'binary'] : ['binary', 'json']) as Codec[]) {
    (globalThis as { gc?: () => void }).gc?.();
    const res = round(codec, mergedBy[codec]);
    if (r >= WARMUP) runs[codec].push(res);
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const perRecordUs = (ms: number) => (ms * 1000) / records;
function figures(codec: Codec) {
  const rs = runs[codec];
  const encodeUs = perRecordUs(median(rs.map((r) => r.encode)));
  const decodeUs = perRecordUs(median(rs.map((r) => r.decode)));
  return {
    encode_us_per_record: +encodeUs.toFixed(3),
    decode_us_per_record: +decodeUs.toFixed(3),
    encode_decode_us_per_record: +(encodeUs + decodeUs).toFixed(3),
    decode_merged_us_per_record: +perRecordUs(median(rs.map((r) => r.decodeMerged))).toFixed(3),
    bytes_per_record: +(rs[0]!.bytes / records).toFixed(1),
  };
}
const json = figures('json');
const binary = figures('binary');
console.log(`${values.length} values, ${records} records from ${frames} frames (${file}); ${compact} records in a compact layout, ${records - compact} as JSON text`);
console.log(`µs per record     encode   decode   both     decode merged  bytes`);
for (const [name, f] of [['json', json], ['binary', binary]] as const) {
  console.log(`${name.padEnd(16)}  ${f.encode_us_per_record.toFixed(3).padStart(6)}   ${f.decode_us_per_record.toFixed(3).padStart(6)}   ${f.encode_decode_us_per_record.toFixed(3).padStart(6)}   ${f.decode_merged_us_per_record.toFixed(3).padStart(6)}         ${f.bytes_per_record}`);
}
const ratio = (a: number, b: number) => +(a / b).toFixed(2);
console.log(
  JSON.stringify({
    frames,
    values: values.length,
    records,
    compact_records: compact,
    cpus: `${os.cpus().length} × ${os.cpus()[0]?.model ?? '?'}`,
    json,
    binary,
    json_over_binary: {
      encode: ratio(json.encode_us_per_record, binary.encode_us_per_record),
      decode: ratio(json.decode_us_per_record, binary.decode_us_per_record),
      encode_decode: ratio(json.encode_decode_us_per_record, binary.encode_decode_us_per_record),
      decode_merged: ratio(json.decode_merged_us_per_record, binary.decode_merged_us_per_record),
      bytes: ratio(json.bytes_per_record, binary.bytes_per_record),
    },
    checksum: sink % 1000,
  }),
);

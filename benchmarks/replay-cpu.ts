/**
 * CPU of the replay process's own stage, without the broker: `replayFiles` over (the first
 * lines of) a capture through the real CapturePipeline and raw producer (normalisers,
 * sequencer, binary values, coalescing), with kafkajs's producer replaced by one that only
 * counts what it is handed. The replay benchmark (replay.bench.ts) measures the whole
 * pipeline, where this stage's CPU caps the rate; this one measures the stage alone, in
 * seconds, on a shared machine, so a change to it can be judged in a minute.
 *
 *   npx tsx benchmarks/replay-cpu.ts [FILE] [--lines N] [--rounds R] [--hash]
 *
 * FILE defaults to the replay benchmark's capture (data/bench/replay-1000000-v2.ndjson);
 * `--lines N` (default 200,000, 0 for all) replays a temp copy of its first N lines. Each
 * round replays them once in this process (a fresh pipeline each time) and prints the CPU
 * seconds (process.cpuUsage, user + system) per million frames; the last line is JSON with
 * the median round.
 *
 * `--hash` also digests every message the producer would hand kafkajs (topic, partition,
 * key, value, headers, in order): the digests of two trees are equal only if they send the
 * same bytes. The producer then flushes on a count (no timers), so that a message's
 * coalescing does not depend on how fast the round ran; the digest is the same every round.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { finished } from 'node:stream/promises';
import { Partitioners, type Kafka, type Message, type PartitionMetadata, type ProducerBatch } from 'kafkajs';
import { REPO_ROOT, silentLogger } from '@booktape/config';
import { BatchingProducer, concatRawMessages, createRawProducer, partitionsOf, rememberingPartitioner, topicNames, type PartitionRef } from '@booktape/messaging';
import { CapturePipeline, replayFiles } from '@booktape/ingestor';

const args = process.argv.slice(2);
const option = (name: string, fallback: number): number => {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  const n = Number(args[i + 1]);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} ${args[i + 1]}: expected a whole number >= 0`);
  args.splice(i, 2);
  return n;
};
const lines = option('--lines', 200_000);
const rounds = Math.max(1, option('--rounds', 3));
const hashing = args.includes('--hash');
const source = args.find((a) => !a.startsWith('--')) ?? path.join(REPO_ROOT, 'data', 'bench', 'replay-1000000-v2.ndjson');

/** The first `n` lines of `from` in a temp file (the capture itself is only read). */
async function head(from: string, n: number, dir: string): Promise<string> {
  const to = path.join(dir, `head-${n}.ndjson`);
  const out = createWriteStream(to);
  let count = 0;
  const rl = createInterface({ input: createReadStream(from), crlfDelay: Infinity });
  for await (const line of rl) {
    if (!out.write(`${line}\n`)) await new Promise<void>((r) => out.once('drain', () => r()));
    if (++count >= n) break;
  }
  rl.close();
  out.end();
  await finished(out);
  return to;
}

const log = silentLogger();
const topics = topicNames('bench.');
/** As `booktape replay` creates its raw topics (ensureTopics' default). */
const PARTITIONS = 8;
const partitionMetadata: PartitionMetadata[] = Array.from({ length: PARTITIONS }, (_, i) => ({ partitionId: i, leader: 0, replicas: [0], isr: [0], offlineReplicas: [], partitionErrorCode: 0 }));

interface Sink {
  messages: number;
  bytes: number;
  digest: ReturnType<typeof createHash> | null;
}

/** A Kafka whose producer takes each batch at once and only counts (and with --hash digests) it. */
function countingKafka(sink: Sink): Kafka {
  const partition = rememberingPartitioner(Partitioners.DefaultPartitioner)();
  const field = (d: ReturnType<typeof createHash>, v: string | Buffer | null | undefined): void => {
    const b = v === null || v === undefined ? Buffer.alloc(0) : typeof v === 'string' ? Buffer.from(v, 'utf8') : v;
    const len = Buffer.alloc(5);
    len.writeUInt8(v === null || v === undefined ? 0 : 1, 0);
    len.writeUInt32BE(b.length, 1);
    d.update(len).update(b);
  };
  const producer = {
    connect: async () => undefined,
    disconnect: async () => undefined,
    sendBatch: async (batch: ProducerBatch) => {
      for (const { topic, messages } of batch.topicMessages ?? []) {
        for (const m of messages as Message[]) {
          sink.messages += 1;
          sink.bytes += (m.key?.length ?? 0) + (m.value?.length ?? 0);
          const d = sink.digest;
          if (d === null) continue;
          field(d, topic);
          field(d, String(partition({ topic, partitionMetadata, message: m })));
          field(d, m.key);
          field(d, m.value);
          field(d, JSON.stringify(m.headers ?? null));
          field(d, m.partition === undefined ? null : String(m.partition));
        }
      }
      return [];
    },
  };
  return { producer: () => producer } as unknown as Kafka;
}

interface Round {
  frames: number;
  records: number;
  messages: number;
  bytes: number;
  cpuSeconds: number;
  wallSeconds: number;
  cpuSecondsPerMillionFrames: number;
  digest: string | null;
}

async function round(file: string): Promise<Round> {
  const sink: Sink = { messages: 0, bytes: 0, digest: hashing ? createHash('sha256') : null };
  const kafka = countingKafka(sink);
  // Replay's producer (apps/cli replay.ts); for the digest, one that flushes every 20,000
  // messages on the count alone, with the same coalescing.
  const producer = hashing
    ? new BatchingProducer(kafka, log, { maxMessages: Number.POSITIVE_INFINITY, lingerMs: 2 ** 31 - 1, highWaterMark: 20_000, coalesce: concatRawMessages, coalesceTopics: new Set(Object.values(topics.raw)) })
    : createRawProducer(kafka, log, topics, undefined, { lingerMs: 250, lingerAfterRequest: true });
  await producer.connect();
  // As `replay --wait` does: the partitions touched are noted per frame.
  const partitions = new Map<string, PartitionRef>();
  const pipeline = new CapturePipeline({ producer, topics, workerId: 1, log, onMessages: (m) => void partitionsOf(m, partitions) });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const summary = await replayFiles(pipeline, [file]);
  await producer.disconnect();
  const cpu = process.cpuUsage(cpu0);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  return {
    frames: summary.frames,
    records: summary.records,
    messages: sink.messages,
    bytes: sink.bytes,
    cpuSeconds: Number(cpuSeconds.toFixed(3)),
    wallSeconds: Number(((performance.now() - t0) / 1000).toFixed(3)),
    cpuSecondsPerMillionFrames: Number(((cpuSeconds / summary.frames) * 1e6).toFixed(2)),
    digest: sink.digest?.digest('hex') ?? null,
  };
}

const dir = mkdtempSync(path.join(tmpdir(), 'booktape-replay-cpu-'));
try {
  const file = lines === 0 ? source : await head(source, lines, dir);
  const results: Round[] = [];
  for (let i = 0; i < rounds; i++) {
    const r = await round(file);
    results.push(r);
    process.stderr.write(`round ${i + 1}: ${r.frames} frames, ${r.records} records → ${r.messages} messages, ${r.bytes} bytes; ${r.cpuSeconds} s CPU, ${r.wallSeconds} s wall, ${r.cpuSecondsPerMillionFrames} CPU s per M frames${r.digest ? `; digest ${r.digest}` : ''}\n`);
  }
  const digests = new Set(results.map((r) => r.digest));
  if (digests.size > 1) throw new Error(`the digest differs between rounds: ${[...digests].join(', ')}`);
  const median = [...results].sort((a, b) => a.cpuSecondsPerMillionFrames - b.cpuSecondsPerMillionFrames)[Math.floor(results.length / 2)]!;
  console.log(JSON.stringify({ file: source, lines, rounds, ...median, perRound: results.map((r) => r.cpuSecondsPerMillionFrames) }));
} finally {
  rmSync(dir, { recursive: true, force: true });
}

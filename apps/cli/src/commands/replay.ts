import cliProgress from 'cli-progress';
import { createLogger, parseEnv } from '@booktape/config';
import { BatchingProducer, RollupQueue, createKafka, ensureTopics, partitionsOf, topicNames, type PartitionRef } from '@booktape/messaging';
import { CapturePipeline, concatRawMessages, ingestorConfig, ingestorEnvSchema, replayFiles, waitUntilStored } from '@booktape/ingestor';

export interface ReplayOptions {
  files: string[];
  wait: boolean;
  timeoutMs: number;
}

/**
 * `booktape replay <files…> [--wait]`: capture files through Kafka like live frames. With
 * --wait it returns only once the sink has stored everything it sent. Progress goes to
 * stderr: a bar on a terminal, a line every few seconds otherwise.
 */
/**
 * Waits until the rollup workers have rebuilt the summaries of every partition replayed:
 * the sink has marked them dirty before committing (so before the wait above returned),
 * and a partition is settled once no rollup has it dirty or claimed.
 */
async function waitForSummaries(parts: PartitionRef[], platform: { redisUrl: string; rollup: { queuePrefix: string } }, deadline: number, tty: boolean): Promise<boolean> {
  if (parts.length === 0) return true;
  const queue = new RollupQueue({ redisUrl: platform.redisUrl, prefix: platform.rollup.queuePrefix });
  try {
    process.stderr.write(`waiting for the summaries of ${parts.length} partition(s) to be rebuilt …\n`);
    let last = -1;
    for (;;) {
      const left = await queue.unsettled(parts);
      if (left === 0) break;
      if (left !== last && tty) process.stderr.write(`\r  ${left} partition(s) still rolling up   `);
      last = left;
      if (Date.now() > deadline) {
        const workers = await queue.queue.getWorkers().catch(() => []);
        process.stderr.write(`\n${left} partition(s) not rolled up before the timeout${workers.length === 0 ? ' (no rollup worker is connected: is `npm start` running?)' : ''}\n`);
        return false;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    process.stderr.write(`${tty && last > 0 ? '\n' : ''}summaries rebuilt\n`);
    return true;
  } finally {
    await queue.close();
  }
}

export async function runReplay(opts: ReplayOptions): Promise<number> {
  const log = createLogger('replay', process.env.LOG_LEVEL ?? 'warn');
  const config = ingestorConfig(parseEnv(ingestorEnvSchema));
  const kafka = createKafka({ brokers: config.platform.kafka.brokers, clientId: 'booktape-replay' }, log);
  const topics = topicNames(config.platform.kafka.topicPrefix);
  await ensureTopics(kafka, topics, config.kafkaPartitions);
  const producer = new BatchingProducer(kafka, log, { lingerMs: 50, maxMessages: 20_000, coalesce: concatRawMessages, coalesceTopics: new Set(Object.values(topics.raw)) });
  await producer.connect();
  // The partitions this replay touches: with --wait, their summaries are waited for too.
  const partitions = new Map<string, PartitionRef>();
  const pipeline = new CapturePipeline({ producer, topics, workerId: config.platform.workerId, log, ...(opts.wait ? { onMessages: (m) => void partitionsOf(m, partitions) } : {}) });

  const tty = process.stderr.isTTY;
  const bar = new cliProgress.SingleBar(
    { format: 'replay [{bar}] {percentage}% | {value}/{total} frames | {rate} frames/s | ETA {eta_formatted}', stream: process.stderr, noTTYOutput: !tty, notTTYSchedule: 5000, hideCursor: tty },
    cliProgress.Presets.shades_classic,
  );
  const started = Date.now();
  let barStarted = false;
  const summary = await replayFiles(pipeline, opts.files, (p) => {
    if (!barStarted) {
      bar.start(p.totalFrames, 0, { rate: 0 });
      barStarted = true;
    }
    bar.update(p.frames, { rate: Math.round(p.frames / Math.max(0.001, (Date.now() - started) / 1000)) });
  }).finally(() => bar.stop());
  await producer.disconnect();

  process.stderr.write(
    `replayed ${summary.files} file(s): ${summary.frames} frames → ${summary.records} records, ${summary.controls} control frames, ` +
      `${summary.deadLetters} dead-lettered, ${summary.badLines.length} malformed lines, in ${(summary.elapsedMs / 1000).toFixed(1)} s\n`,
  );
  for (const b of summary.badLines.slice(0, 20)) process.stderr.write(`  ${b.file}:${b.lineNo}: ${b.error}\n`);
  if (summary.badLines.length > 20) process.stderr.write(`  … and ${summary.badLines.length - 20} more\n`);

  if (opts.wait) {
    process.stderr.write(`waiting for the sink (group ${config.sinkGroupId}) to store everything …\n`);
    let last = -1;
    await waitUntilStored(kafka, topics, config.sinkGroupId, {
      timeoutMs: opts.timeoutMs,
      onLag: (lag) => {
        if (lag !== last && tty) process.stderr.write(`\r  ${lag} messages still to store   `);
        last = lag;
      },
    });
    process.stderr.write(`${tty ? '\n' : ''}everything replayed is stored\n`);
    if (!(await waitForSummaries([...partitions.values()], config.platform, started + opts.timeoutMs, tty))) return 4;
  }
  return summary.badLines.length > 0 ? 3 : 0;
}

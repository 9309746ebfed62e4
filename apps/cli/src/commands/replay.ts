import cliProgress from 'cli-progress';
import { createLogger, envInt, parseEnv, redactUrl } from '@booktape/config';
import { RollupQueue, createKafka, createRawProducer, ensureTopics, partitionsOf, topicNames, type PartitionRef } from '@booktape/messaging';
import { CapturePipeline, checkCaptureFiles, ingestorConfig, ingestorEnvSchema, replayFiles, waitUntilStored, type ReplaySummary } from '@booktape/ingestor';
import { z } from 'zod';
import { withLocalServicePorts } from '../local-services.ts';

export interface ReplayOptions {
  files: string[];
  wait: boolean;
  timeoutMs: number;
}

/** Exit statuses besides 0 (all stored) and 1 (error) / 2 (usage, configuration). */
export const EXIT_BAD_LINES = 3;
export const EXIT_SUMMARIES_TIMEOUT = 4;
/** Kafka refused records as too large: they are in the dead-letter topic, not stored. */
export const EXIT_TOO_LARGE = 5;
/**
 * Frames the normalisers refused (bad JSON inside a frame, a timestamp outside the dates
 * the store holds, a bad exchange B `ts`, …): dead-lettered, not stored. Distinct from 3,
 * where the capture line itself could not be read.
 */
export const EXIT_FRAMES_REFUSED = 6;

/**
 * The API reuses a count or availability answer for API_RESULT_CACHE_MS (apps/api
 * config, same variable and default): an answer loaded before the last records were
 * stored can be served until then. --wait outlasts it, so that when it returns no
 * process's cache still holds a pre-replay answer.
 */
const cacheEnvSchema = z.object({ API_RESULT_CACHE_MS: envInt(1000, 0, 60_000) });

/**
 * --wait is over when all three hold: the sink committed past everything this replay
 * produced (so it is in ClickHouse), the summaries of every touched partition are
 * rebuilt, and the API's result cache has expired every answer loaded before the
 * data was confirmed stored. Pure: the time left to wait for the last one.
 */
export function cacheWaitMs(storedConfirmedAt: number, now: number, cacheTtlMs: number): number {
  return Math.max(0, storedConfirmedAt + cacheTtlMs - now);
}

/**
 * The exit status of a replay: records Kafka refused first, then a summary timeout, then
 * frames the normalisers refused, then unreadable lines. 0 only when nothing was left out.
 */
export function replayExitCode(summary: Pick<ReplaySummary, 'badLines' | 'deadLetters'>, tooLargeRecords: number, summariesSettled: boolean): number {
  if (tooLargeRecords > 0) return EXIT_TOO_LARGE;
  if (!summariesSettled) return EXIT_SUMMARIES_TIMEOUT;
  if (summary.deadLetters > 0) return EXIT_FRAMES_REFUSED;
  return summary.badLines.length > 0 ? EXIT_BAD_LINES : 0;
}

const TIMED_OUT = Symbol('timed out');

/** How long replayed messages wait to be sent together (a market's merged into one message). */
const REPLAY_LINGER_MS = 250;

/**
 * Waits until the rollup workers have rebuilt the summaries of every partition replayed:
 * the sink has marked them dirty before committing (so before waitUntilStored returned),
 * this marks them once more to close their past days, and a partition is settled once no
 * rollup has it dirty or claimed.
 */
async function waitForSummaries(parts: PartitionRef[], platform: { redisUrl: string; rollup: { queuePrefix: string } }, deadline: number, tty: boolean): Promise<boolean> {
  if (parts.length === 0) return true;
  const queue = new RollupQueue({ redisUrl: platform.redisUrl, prefix: platform.rollup.queuePrefix });
  // The Redis client queues commands while it cannot connect: every call is bounded by the
  // deadline, so an unreachable Redis ends in the timeout status, not in a wait forever.
  const bounded = <T>(p: Promise<T>): Promise<T | typeof TIMED_OUT> => {
    let timer: NodeJS.Timeout | undefined;
    const out = new Promise<typeof TIMED_OUT>((r) => (timer = setTimeout(() => r(TIMED_OUT), Math.max(0, deadline - Date.now()))));
    return Promise.race([p, out]).finally(() => clearTimeout(timer));
  };
  const unreachable = (): false => {
    process.stderr.write(`\nno answer from Redis (${redactUrl(platform.redisUrl)}) before the timeout: the rollup state is unknown\n`);
    return false;
  };
  try {
    process.stderr.write(`waiting for the summaries of ${parts.length} partition(s) to be rebuilt …\n`);
    // Everything is stored: the past days the replay's runs kept open (their data was still
    // arriving) are closed by one more run each.
    if ((await bounded(queue.markReplayed(parts))) === TIMED_OUT) return unreachable();
    let last = -1;
    for (;;) {
      const left = await bounded(queue.unsettled(parts));
      if (left === TIMED_OUT) return unreachable();
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
    // Closing waits for nothing that an unreachable Redis could withhold for long.
    await Promise.race([queue.close(), new Promise((r) => setTimeout(r, 2_000).unref())]);
  }
}

/**
 * `booktape replay <files…> [--wait]`: capture files through Kafka like live frames. With
 * --wait it returns only once everything it sent is visible to the API (see cacheWaitMs).
 * Progress goes to stderr: a bar on a terminal, a line every few seconds otherwise.
 */
export async function runReplay(opts: ReplayOptions): Promise<number> {
  const log = createLogger('replay', process.env.LOG_LEVEL?.trim() || 'warn');
  const env = withLocalServicePorts(process.env);
  const config = ingestorConfig(parseEnv(ingestorEnvSchema, env), env);
  const cacheTtlMs = parseEnv(cacheEnvSchema, env).API_RESULT_CACHE_MS;
  // A missing or unreadable file is refused before anything connects: nothing is sent,
  // and nothing is left open to keep the process from exiting.
  await checkCaptureFiles(opts.files);
  const kafka = createKafka({ brokers: config.platform.kafka.brokers, clientId: 'booktape-replay' }, log);
  const topics = topicNames(config.platform.kafka.topicPrefix);
  await ensureTopics(kafka, topics, config.kafkaPartitions);
  // A message the broker refuses even alone: its records are counted as not stored, and a
  // dead letter (reason and the head of the value) goes to the dead-letter topic.
  const tooLarge = { messages: 0, records: 0 };
  // A replay is never idle: what it sends waits REPLAY_LINGER_MS, so that Kafka (and the
  // sink after it) gets fewer, larger messages; nobody is waiting on a replayed frame's latency.
  const producer = createRawProducer(
    kafka,
    log,
    topics,
    (records) => {
      tooLarge.messages += 1;
      tooLarge.records += records;
    },
    { lingerMs: REPLAY_LINGER_MS, lingerAfterRequest: true },
  );
  await producer.connect();
  // The partitions this replay touches: with --wait, their summaries are waited for too.
  const partitions = new Map<string, PartitionRef>();
  const pipeline = new CapturePipeline({ producer, topics, workerId: config.platform.workerId, log, rawValueFormat: config.rawValueFormat, ...(opts.wait ? { onMessages: (m) => void partitionsOf(m, partitions) } : {}) });

  const tty = process.stderr.isTTY;
  const bar = new cliProgress.SingleBar(
    { format: 'replay [{bar}] {percentage}% | {value}/{total} frames | {rate} frames/s | ETA {eta_formatted}', stream: process.stderr, noTTYOutput: !tty, notTTYSchedule: 5000, hideCursor: tty },
    cliProgress.Presets.shades_classic,
  );
  const started = Date.now();
  let barStarted = false;
  let summary: ReplaySummary;
  try {
    summary = await replayFiles(pipeline, opts.files, (p) => {
      if (!barStarted) {
        bar.start(p.totalFrames, 0, { rate: 0 });
        barStarted = true;
      }
      bar.update(p.frames, { rate: Math.round(p.frames / Math.max(0.001, (Date.now() - started) / 1000)) });
    });
  } finally {
    bar.stop();
    // Also on an error (a file that fails mid-read): an open producer would keep the
    // process alive after the error is printed.
    await producer.disconnect();
  }

  process.stderr.write(
    `replayed ${summary.files} file(s): ${summary.frames} frames → ${summary.records} records, ${summary.controls} control frames, ` +
      `${summary.deadLetters} dead-lettered, ${summary.badLines.length} malformed lines, in ${(summary.elapsedMs / 1000).toFixed(1)} s\n`,
  );
  for (const b of summary.badLines.slice(0, 20)) process.stderr.write(`  ${b.file}:${b.lineNo}: ${b.error}\n`);
  if (summary.badLines.length > 20) process.stderr.write(`  … and ${summary.badLines.length - 20} more\n`);
  if (summary.deadLetters > 0) {
    process.stderr.write(`${summary.deadLetters} frame(s) refused as bad data were NOT stored: dead-lettered to ${topics.deadLetter} (reason and frame)\n`);
    for (const f of summary.refusedFrames) process.stderr.write(`  ${f.file}:${f.lineNo} (${f.venue}): ${f.reason}\n`);
    if (summary.deadLetters > summary.refusedFrames.length) process.stderr.write(`  … and ${summary.deadLetters - summary.refusedFrames.length} more\n`);
  }
  if (tooLarge.messages > 0) {
    process.stderr.write(
      `${tooLarge.records} record(s) in ${tooLarge.messages} message(s) larger than Kafka accepts were NOT stored: ` +
        `dead-lettered to ${topics.deadLetter} (reason and the head of each message)\n`,
    );
  }

  let settled = true;
  if (opts.wait) {
    // One --timeout for the whole wait (stored, then summaries), counted from here: counted
    // from the start of the replay, a long replay reached the summaries with no time left.
    const waitStarted = Date.now();
    process.stderr.write(`waiting for the sink (group ${config.sinkGroupId}) to store everything …\n`);
    let last = -1;
    await waitUntilStored(kafka, topics, config.sinkGroupId, {
      timeoutMs: opts.timeoutMs,
      onLag: (lag) => {
        if (lag !== last && tty) process.stderr.write(`\r  ${lag} messages still to store   `);
        last = lag;
      },
    });
    const storedAt = Date.now();
    process.stderr.write(`${tty ? '\n' : ''}everything replayed is stored\n`);
    settled = await waitForSummaries([...partitions.values()], config.platform, waitStarted + opts.timeoutMs, tty);
    const left = cacheWaitMs(storedAt, Date.now(), cacheTtlMs);
    if (left > 0) await new Promise((r) => setTimeout(r, left));
    if (settled) process.stderr.write('everything replayed is visible\n');
  }
  return replayExitCode(summary, tooLarge.records, settled);
}

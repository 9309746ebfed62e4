import { stat } from 'node:fs/promises';
import type { Kafka } from 'kafkajs';
import type { Logger } from '@booktape/config';
import type { Topics } from '@booktape/messaging';
import { countCaptureLines, readCaptureFile } from '@booktape/venues';
import type { CapturePipeline } from '../capture-pipeline.ts';

export interface ReplayProgress {
  file: string;
  frames: number;
  totalFrames: number;
}

export interface ReplaySummary {
  files: number;
  frames: number;
  records: number;
  controls: number;
  deadLetters: number;
  badLines: Array<{ file: string; lineNo: number; error: string }>;
  elapsedMs: number;
}

/**
 * Sends capture files through the capture pipeline, exactly like live frames (same
 * normalisers, same lineage rules, same Kafka topics), in file order and line order.
 * A malformed line is reported and skipped; it never stops the replay.
 */
export async function replayFiles(
  pipeline: CapturePipeline,
  files: string[],
  onProgress: (p: ReplayProgress) => void = () => undefined,
): Promise<ReplaySummary> {
  const started = Date.now();
  for (const f of files) {
    const s = await stat(f).catch(() => null);
    if (!s?.isFile()) throw new Error(`not a readable file: ${f}`);
  }
  let totalFrames = 0;
  for (const f of files) totalFrames += await countCaptureLines(f);
  const before = snapshot(pipeline);
  const badLines: ReplaySummary['badLines'] = [];
  let frames = 0;
  for (const file of files) {
    for await (const entry of readCaptureFile(file)) {
      frames += 1;
      if ('error' in entry) {
        badLines.push({ file, lineNo: entry.lineNo, error: entry.error });
      } else {
        await pipeline.handleFrame(entry.line.venue, entry.line.frame, new Date(entry.line.received_at), { writeFile: false });
      }
      if (frames % 500 === 0) onProgress({ file, frames, totalFrames });
    }
    onProgress({ file, frames, totalFrames });
  }
  const after = snapshot(pipeline);
  return {
    files: files.length,
    frames,
    records: after.records - before.records,
    controls: after.controls - before.controls,
    deadLetters: after.deadLetters - before.deadLetters,
    badLines,
    elapsedMs: Date.now() - started,
  };
}

function snapshot(p: CapturePipeline) {
  const a = p.counters['exchange-a'];
  const b = p.counters['exchange-b'];
  return { records: a.records + b.records, controls: a.controls + b.controls, deadLetters: a.deadLetters + b.deadLetters };
}

/**
 * Waits until the sink's consumer group has committed past the current end of every raw
 * topic partition: everything produced before this call is then stored in ClickHouse
 * (the sink commits only after ClickHouse acknowledged).
 */
export async function waitUntilStored(
  kafka: Kafka,
  topics: Topics,
  groupId: string,
  opts: { timeoutMs: number; log?: Logger; onLag?: (lag: number) => void },
): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const targets = new Map<string, bigint>();
    for (const topic of Object.values(topics.raw)) {
      for (const p of await admin.fetchTopicOffsets(topic)) targets.set(`${topic}/${p.partition}`, BigInt(p.high));
    }
    const deadline = Date.now() + opts.timeoutMs;
    for (;;) {
      let lag = 0n;
      for (const t of await admin.fetchOffsets({ groupId, topics: Object.values(topics.raw) })) {
        for (const p of t.partitions) {
          const target = targets.get(`${t.topic}/${p.partition}`) ?? 0n;
          const committed = BigInt(p.offset === '-1' ? '0' : p.offset);
          if (committed < target) lag += target - committed;
        }
      }
      opts.onLag?.(Number(lag));
      if (lag === 0n) return;
      if (Date.now() > deadline) {
        throw new Error(`timed out after ${opts.timeoutMs} ms waiting for the sink (group ${groupId}) to store ${lag} more messages; is the sink running?`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    await admin.disconnect();
  }
}

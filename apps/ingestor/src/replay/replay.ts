import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import type { Kafka } from 'kafkajs';
import type { Logger } from '@booktape/config';
import { VENUES, type Venue } from '@booktape/domain';
import { consumerGroupLag, partitionEnds, type Topics } from '@booktape/messaging';
import { countCaptureLines, readCaptureBatches } from '@booktape/venues';
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
  /**
   * The first REFUSED_SAMPLE frames the normalisers refused (sent to the dead-letter topic,
   * not stored), where and why; `deadLetters` counts them all. Bounded: a file of nothing
   * but refused frames must not hold each in memory.
   */
  refusedFrames: Array<{ file: string; lineNo: number; venue: string; reason: string }>;
  badLines: Array<{ file: string; lineNo: number; error: string }>;
  elapsedMs: number;
}

const REFUSED_SAMPLE = 20;

/**
 * The hot frame shapes are matched, not parsed (capture-scan.ts): the normalisers make the
 * same records of them, and fall back to the parsed frame for anything they refuse.
 */
const SCAN = { scan: true } as const;

/** Replayed frames are in a capture file already. */
const REPLAYED = { writeFile: false } as const;

/**
 * The Date of a line's received_at, the same object while the text repeats (consecutive
 * frames mostly share their millisecond): nothing downstream changes a receive time.
 */
function receiveTimes(): (text: string) => Date {
  let lastText: string | undefined;
  let last = new Date(Number.NaN);
  return (text) => {
    if (text !== lastText) {
      last = new Date(text);
      lastText = text;
    }
    return last;
  };
}

/**
 * Sends capture files through the capture pipeline, exactly like live frames (same
 * normalisers, same lineage rules, same Kafka topics), in file order and line order.
 * A malformed line is reported and skipped; it never stops the replay.
 */
export async function replayFiles(
  pipeline: CapturePipeline,
  files: string[],
  onProgress?: (p: ReplayProgress) => void,
): Promise<ReplaySummary> {
  const started = Date.now();
  await checkCaptureFiles(files);
  // The lines are counted (a read of every file) only for someone who shows progress.
  let totalFrames = 0;
  if (onProgress) for (const f of files) totalFrames += await countCaptureLines(f);
  const before = snapshot(pipeline);
  const badLines: ReplaySummary['badLines'] = [];
  const refusedFrames: ReplaySummary['refusedFrames'] = [];
  let frames = 0;
  // Progress counts every line (countCaptureLines does); `frames` leaves out boundary and gap lines.
  let lines = 0;
  // Sequence state (exchange B's) belongs to a connection. It is reset at each `connect` line
  // and at the start of each file, since a file may start mid-session; except where the
  // previous file ended inside a connection it recorded (a `connect` with no `disconnect`
  // after it): this file is then its rotated continuation, and live capture did not reset
  // there either, so replay must not (it would report false gaps live never had). Venues
  // without sequence state ignore resets.
  const openConnection = new Set<Venue>();
  for (const file of files) {
    for (const v of VENUES) if (!openConnection.has(v)) pipeline.resetConnection(v);
    const receivedAt = receiveTimes();
    for await (const batch of readCaptureBatches(file, SCAN)) {
      for (const entry of batch) {
        lines += 1;
        if ('error' in entry) {
          frames += 1;
          badLines.push({ file, lineNo: entry.lineNo, error: entry.error });
        } else if (entry.line.gap !== undefined) {
          // A gap live capture reported: stored again, so coverage shows the same disconnects.
          await pipeline.handleGap(entry.line.gap, { writeFile: false });
        } else if (entry.line.boundary !== undefined) {
          if (entry.line.boundary.kind === 'connect') {
            openConnection.add(entry.line.venue);
            pipeline.resetConnection(entry.line.venue);
          } else openConnection.delete(entry.line.venue);
        } else {
          frames += 1;
          const handled = await pipeline.handleFrame(entry.line.venue, entry.line.frame, receivedAt(entry.line.received_at), REPLAYED);
          if (handled.kind === 'invalid' && refusedFrames.length < REFUSED_SAMPLE) refusedFrames.push({ file, lineNo: entry.lineNo, venue: entry.line.venue, reason: handled.reason });
        }
        if (lines % 500 === 0) onProgress?.({ file, frames: lines, totalFrames });
      }
    }
    onProgress?.({ file, frames: lines, totalFrames });
  }
  const after = snapshot(pipeline);
  return {
    files: files.length,
    frames,
    records: after.records - before.records,
    controls: after.controls - before.controls,
    deadLetters: after.deadLetters - before.deadLetters,
    refusedFrames,
    badLines,
    elapsedMs: Date.now() - started,
  };
}

/**
 * Refuses, before anything connects or is sent, a list with a missing, unreadable or
 * non-regular file: one message names every such file (a replay never starts half a list).
 */
export async function checkCaptureFiles(files: string[]): Promise<void> {
  const problems: string[] = [];
  for (const f of files) {
    const s = await stat(f).catch((e: NodeJS.ErrnoException) => e);
    if (s instanceof Error) problems.push(`${f}: ${s.code === 'ENOENT' ? 'no such file' : s.message}`);
    else if (!s.isFile()) problems.push(`${f}: not a regular file`);
    else {
      const denied = await access(f, constants.R_OK).then(() => null, (e: Error) => e);
      if (denied) problems.push(`${f}: not readable (${denied.message})`);
    }
  }
  if (problems.length > 0) throw new Error(`cannot replay: ${problems.join('; ')}`);
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
    const rawTopics = Object.values(topics.raw);
    const targets = await partitionEnds(admin, rawTopics);
    const deadline = Date.now() + opts.timeoutMs;
    for (;;) {
      let lag = 0;
      for (const n of (await consumerGroupLag(admin, groupId, rawTopics, targets)).values()) lag += n;
      opts.onLag?.(lag);
      if (lag === 0) return;
      if (Date.now() > deadline) {
        throw new Error(`timed out after ${opts.timeoutMs} ms waiting for the sink (group ${groupId}) to store ${lag} more messages; is the sink running?`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    await admin.disconnect();
  }
}

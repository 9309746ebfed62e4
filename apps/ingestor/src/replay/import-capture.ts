import path from 'node:path';
import type { Logger } from '@booktape/config';
import { VENUES, type CaptureGap, type RawMessage, type Venue } from '@booktape/domain';
import { partitionsOf, topicNames, type PartitionRef } from '@booktape/messaging';
import { CAPTURE_SOURCE_PREFIX, CaptureGapsRepository, ImportError, RawEventsRepository, partitionsWithImports, storedInPartitions, supersedeImported, type ClickHouse, type ImportResult } from '@booktape/storage';
import { CapturePipeline, type PipelineProducer } from '../capture-pipeline.ts';
import { replayFiles, type ReplayProgress } from './replay.ts';

/**
 * `booktape import --format capture`: a capture file stored straight into the store, as a
 * replay would store it through Kafka and the sink (docs/rules/imports.md#capture-files):
 * the same pipeline (normalisers, lineage, ingest sequence), so the same records with the
 * same identities, stored as own capture of this install's worker (WORKER_ID); the capture
 * gaps the file recorded are stored too. Without Kafka: the records' Kafka partition and
 * offset are −1, as an import's.
 *
 * Whole or not at all: the file is read once to check it (a malformed line, or a frame the
 * normalisers refuse, is an error naming the file and line, and nothing is stored), then
 * again to store it. Importing it again changes nothing (the same records, the same
 * identities and ingest sequence: collapsed by the table's key).
 */

/** Records written per insert: bounded memory whatever the file's size. */
const BATCH = 20_000;

export interface CaptureImportOptions {
  workerId: number;
  log: Logger;
  onProgress?: (p: ReplayProgress) => void;
  /** Only records of this venue: a file with records of the other is refused. */
  venue?: Venue;
}

/** A producer that keeps nothing: what the pipeline hands it is taken from `onMessages` / `gaps` (so the pipeline does not encode the raw values: discardsRawValues). */
function sinkProducer(onSend: (topic: string, value: unknown) => Promise<void>): PipelineProducer {
  return { buffered: 0, send: async (m) => onSend(m.topic, m.value) };
}

/** The store's refusal of an insert, named as what it is (the import can be run again). */
async function storing(file: string, insert: () => Promise<unknown>): Promise<void> {
  try {
    await insert();
  } catch (e) {
    throw new ImportError(file, `the store refused a batch (${firstLineOf(e)}); run the import again to complete it`);
  }
}

/** A file that could not be read (gone, unreadable, no longer gzip) since the check: Node's file system and zlib errors carry a code. */
const isFileError = (e: unknown) => e instanceof Error && typeof (e as { code?: unknown }).code === 'string';

const firstLineOf = (e: unknown) => String((e as Error).message ?? e).split('\n')[0]!.slice(0, 300);

/**
 * Imports capture files, in the order given, as one replay of them: a file that continues
 * the connection the one before it ended in keeps its exchange B sequence state, as
 * `booktape replay` of the same list does (so a rotated capture gives no false gaps). The
 * result is named by the files (`a, b, …`); an error names the file and line at fault.
 */
export async function importCaptureFiles(ch: ClickHouse, files: readonly string[], opts: CaptureImportOptions): Promise<ImportResult> {
  const started = Date.now();
  const paths = [...files];
  const file = paths.join(', ');
  const topics = topicNames('booktape-import');
  const source = `${CAPTURE_SOURCE_PREFIX}${opts.workerId}`;

  // 1. Check: every line readable, every frame accepted by the normalisers.
  const parts = new Map<string, PartitionRef>();
  const check = new CapturePipeline({
    producer: sinkProducer(async () => undefined),
    discardsRawValues: true,
    topics,
    workerId: opts.workerId,
    log: opts.log,
    onMessages: (m) => void partitionsOf(m, parts),
  });
  let summary;
  try {
    summary = await replayFiles(check, paths);
  } catch (e) {
    throw new ImportError(file, `not a readable capture file (${firstLineOf(e)}); nothing imported`);
  }
  // A line that is not a capture line (a cut or changed file) refuses the files; a frame the
  // normalisers refuse is not an error of the file: live capture refused it too (the venue's
  // garbage, kept in the file as received), and replay and import leave it out alike.
  if (summary.badLines.length > 0) {
    const b = summary.badLines[0]!;
    throw new ImportError(b.file, `line ${b.lineNo}: ${b.error} (${summary.badLines.length} malformed line(s) in all; nothing imported; \`booktape replay\` stores the rest)`);
  }

  const other = [...parts.values()].find((p) => opts.venue !== undefined && p.venue !== opts.venue);
  if (other !== undefined) throw new ImportError(file, `a capture file with ${other.venue} records, not only ${opts.venue} (--venue); nothing imported`);

  // 2. Store, in batches, as the sink would.
  const raw = new RawEventsRepository(ch);
  const gapsRepo = new CaptureGapsRepository(ch);
  const pending: Record<Venue, RawMessage[]> = { 'exchange-a': [], 'exchange-b': [] };
  const gaps: CaptureGap[] = [];
  let batches = 0;
  let records = 0;
  const flush = async (venue: Venue) => {
    const list = pending[venue];
    if (list.length === 0) return;
    pending[venue] = [];
    const token = `capture-import/${path.basename(paths[0]!)}/${venue}/${batches++}`;
    await storing(file, () => raw.insert(venue, list.map((message) => ({ message, position: { partition: -1, offset: '-1' } })), token));
  };
  const pipeline = new CapturePipeline({
    producer: sinkProducer(async (topic, value) => {
      if (topic === topics.gaps) gaps.push(JSON.parse(String(value)) as CaptureGap);
      for (const v of ['exchange-a', 'exchange-b'] as const) if (pending[v].length >= BATCH) await flush(v);
    }),
    discardsRawValues: true,
    topics,
    workerId: opts.workerId,
    log: opts.log,
    onMessages: (messages) => {
      for (const m of messages) pending[m.venue].push(m);
      records += messages.length;
    },
  });
  const partitions = () => [...parts.values()];
  const count = () => storedInPartitions(ch, partitions());
  // The partitions are known from the check: what they hold before storing.
  const before = await count();
  try {
    await replayFiles(pipeline, paths, opts.onProgress);
  } catch (e) {
    if (!isFileError(e)) throw e;
    throw new ImportError(file, `could not be read again after its check (${firstLineOf(e)}); what was stored is kept: run the import again to complete it`);
  }
  for (const v of VENUES) await flush(v);
  await storing(file, () => gapsRepo.insert(gaps));
  const inserted = (await count()) - before;
  // Imported copies (of archives) of events this capture holds give way to it, as at the sink.
  let superseded = 0;
  for (const p of await partitionsWithImports(ch, partitions())) superseded += await supersedeImported(ch, p);
  return {
    file,
    source,
    rows: summary.frames,
    skipped: summary.deadLetters,
    skippedWhat: 'frames the normalisers refuse (as live capture did)',
    inserted,
    alreadyStored: records - inserted,
    superseded,
    partitions: partitions().map((p) => ({ venue: p.venue, market: p.market, asset: p.asset, date: p.date })),
    ms: Date.now() - started,
  };
}

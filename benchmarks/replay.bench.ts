/**
 * Replay benchmark (issue 10): `booktape replay FILE --wait` of a synthetic capture of
 * BENCH_REPLAY_FRAMES frames (default 1,000,000; both venues, newer and older shapes mixed:
 * capture-gen.ts) end to end, stored and summaries rebuilt (replay-run.ts measures one run).
 *
 * The same capture is replayed by the baseline commit (BENCH_BASELINE, default the commit
 * the storage core's work started from; `none` skips it) and by this tree, one after the other in
 * this run, and the ratio is printed: these machines are noisy, so only a comparison made in
 * one run means much. The baseline tree is `git archive` of that commit beside this one,
 * sharing this tree's node_modules except the workspace packages, which point at its own.
 *
 * Also reports bytes on disk per stored event against the capture's gzip -6 size.
 *
 *   npm run bench -- replay           BENCH_REPLAY_FRAMES=200000 for a quicker run
 *   BENCH_PROFILE=/dir                CPU profiles of the replay and sink processes
 */
import { createReadStream, existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import { createGzip } from 'node:zlib';
import { REPO_ROOT } from '@booktape/config';
import { writeCapture } from './capture-gen.ts';
import { ratio, runJson, sideBySide } from './baseline-tree.ts';
import { intEnv } from './bench-env.ts';

/**
 * What the ratio is taken against: the commit the storage core (typed raw tables, issue 23)
 * started from. (Issue 10's figures were taken against 9c5e327.)
 */
const STORAGE_CORE_START = 'c1a169f';
const frames = intEnv('BENCH_REPLAY_FRAMES', 1_000_000, 1000);
// The bench capture: 30 exchange A markets (60 tokens) and 20 tickers, 80 books. A
// many-asset capture (the other figure): BENCH_REPLAY_MARKETS_A=60 (140 books).
const marketsA = intEnv('BENCH_REPLAY_MARKETS_A', 30, 1);
const tickersB = intEnv('BENCH_REPLAY_TICKERS_B', 20, 1);
const baseline = process.env.BENCH_BASELINE ?? STORAGE_CORE_START;
const GEN_VERSION = 2;

async function gzipSize(file: string): Promise<number> {
  let n = 0;
  await pipeline(createReadStream(file), createGzip({ level: 6 }), new Writable({ write: (c: Buffer, _e, cb) => ((n += c.length), cb()) }));
  return n;
}

// The capture, generated once per size and kept under data/bench (it is deterministic).
const benchDir = path.join(REPO_ROOT, 'data', 'bench');
mkdirSync(benchDir, { recursive: true });
const shape = marketsA === 30 && tickersB === 20 ? '' : `-a${marketsA}-b${tickersB}`;
const file = path.join(benchDir, `replay-${frames}${shape}-v${GEN_VERSION}.ndjson`);
if (!existsSync(file)) {
  const t0 = Date.now();
  const tmp = `${file}.part`;
  await writeCapture(tmp, { frames, marketsA, tickersB, seed: 10, startMs: Date.parse('2026-03-01T08:00:00Z') });
  renameSync(tmp, file);
  console.log(`generated ${file} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}
const captureBytes = statSync(file).size;
const captureGzipBytes = await gzipSize(file);

type Run = Record<string, unknown> & { frames_per_second_end_to_end: number; frames_per_second_stored: number; frames_per_second_produced: number; disk_bytes_merged: number; stored_rows: number; lost_or_doubled: number };

const measure = (root: string, label: string) =>
  runJson<Run>(
    root,
    'benchmarks/replay-run.ts',
    label,
    {
      BENCH_CAPTURE_FILE: file,
      BENCH_CAPTURE_FRAMES: String(frames),
      // Where the running Kafka and Redis keep their pid files (their CPU time is reported).
      BENCH_SERVICES_DIR: path.join(process.env.BOOKTAPE_DATA_DIR ? path.resolve(process.env.BOOKTAPE_DATA_DIR) : path.join(REPO_ROOT, 'data'), 'services'),
    },
    process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [],
  );

const { now, base, baseError } = await sideBySide(baseline, ['benchmarks/replay-run.ts'], measure);
const result = {
  frames,
  books: marketsA * 2 + tickersB,
  capture_bytes: captureBytes,
  capture_gzip6_bytes: captureGzipBytes,
  gzip6_bytes_per_event: Math.round((captureGzipBytes / now.stored_rows) * 10) / 10,
  disk_to_gzip_ratio_merged: Math.round((now.disk_bytes_merged / captureGzipBytes) * 1000) / 1000,
  this_tree: now,
  baseline: base && { commit: baseline, ...base },
  baseline_error: baseError,
  speedup_vs_baseline: base && {
    end_to_end: ratio(now.frames_per_second_end_to_end, base.frames_per_second_end_to_end),
    produced: ratio(now.frames_per_second_produced, base.frames_per_second_produced),
    stored: ratio(now.frames_per_second_stored, base.frames_per_second_stored),
  },
};
console.log(JSON.stringify(result));

/**
 * An open day's rollup (records gathered, the last millisecond held back: the runs of
 * today's data) with the entries' hashes read with the rows (readClaimHashes, the read before
 * they were fetched afterwards) against without, alternating in one process:
 *
 *   ROLL_DIR=/tmp/dir node --import tsx benchmarks/open-hashes-ab.ts [rounds] [window_s]
 *
 * ROLL_DIR must hold rollup-profile.ts's dense day (filled there; BENCH_CLAIMS=1 for the day
 * with claims). Each round rolls the day as an open day whose clock never closes it: without
 * `window_s`, one full run (the whole day read as records); with it, the same day rolled on
 * from a full run of its first hour in incremental runs of `window_s` seconds of data each
 * (what the lag benchmark's runs are, on a dense day), for 60 runs. Prints each way's wall and
 * process CPU, median and least, after one warm-up each.
 */
import { silentLogger } from '@booktape/config';
import { openClickHouse, SummariesRepository } from '@booktape/storage';
import { Roller } from '@booktape/summaries';
import { loadavg } from 'node:os';
import { DENSE_DAY } from './fill-day.ts';

const ch = await openClickHouse({ database: 'booktape_bench', embeddedPath: process.env.ROLL_DIR! });
const key = { venue: 'exchange-a' as const, market: DENSE_DAY.market, asset: DENSE_DAY.asset };
const cpu = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};
const n = Number(process.argv[2] ?? 6);
const windowS = process.argv[3] === undefined ? null : Number(process.argv[3]);
const RUNS = 60;

/**
 * The repository of a run whose store ends at `until` (ms): the day's reads see only the rows
 * before it, as an open day's runs see the rows stored so far (the window a read asks for is cut there).
 */
class Until extends SummariesRepository {
  until = Number.POSITIVE_INFINITY;
  written = 0;
  override bookEventsRead(...a: Parameters<SummariesRepository['bookEventsRead']>) {
    a[3] = Math.min(a[3], this.until);
    return super.bookEventsRead(...a);
  }
  override claimHashes(...a: Parameters<SummariesRepository['claimHashes']>) {
    a[3] = Math.min(a[3], this.until);
    return super.claimHashes(...a);
  }
  override async writeMany(w: Parameters<SummariesRepository['writeMany']>[0]) {
    this.written += w.length;
    return super.writeMany(w);
  }
}

const res: Record<string, { wall: number[]; cpu: number[]; applied: number[] }> = { old: { wall: [], cpu: [], applied: [] }, new: { wall: [], cpu: [], applied: [] } };
for (let k = 0; k < 2 * n + 2; k++) {
  const way = k % 2 === 0 ? 'old' : 'new';
  const repo = new Until(ch);
  const roller = new Roller(repo, silentLogger(), { closeGraceMs: 1e13, readClaimHashes: way === 'old' });
  let applied = 0;
  let t0: number;
  let c0: number;
  if (windowS === null) {
    t0 = performance.now();
    c0 = cpu();
    applied += (await roller.rollDay(key, DENSE_DAY.date, true)).applied;
  } else {
    // The first hour in one full run (not timed), then the runs of `window_s` seconds each.
    repo.until = DENSE_DAY.dayMs + 3_600_000;
    await roller.rollDay(key, DENSE_DAY.date, true);
    t0 = performance.now();
    c0 = cpu();
    for (let i = 1; i <= RUNS; i++) {
      repo.until = DENSE_DAY.dayMs + 3_600_000 + i * windowS * 1000;
      // A sink's hint at the window's start: no late-data count, as in the lag benchmark's steady state.
      const [r] = await roller.rollFrom(key, DENSE_DAY.date, false, repo.until - windowS * 1000);
      applied += r!.applied;
    }
  }
  if (k >= 2) {
    res[way]!.wall.push(performance.now() - t0);
    res[way]!.cpu.push(cpu() - c0);
    res[way]!.applied.push(applied);
  }
}
const med = (a: number[]) => {
  const s = [...a].sort((x, y) => x - y);
  return Math.round(s[Math.floor(s.length / 2)]!);
};
const min = (a: number[]) => Math.round(Math.min(...a));
const of = (w: string) => ({ wall_med: med(res[w]!.wall), wall_min: min(res[w]!.wall), cpu_med: med(res[w]!.cpu), cpu_min: min(res[w]!.cpu), applied: res[w]!.applied[0] });
console.log(JSON.stringify({ dir: process.env.ROLL_DIR, window_s: windowS, runs: windowS === null ? 1 : RUNS, load: loadavg().map((x) => x.toFixed(2)), old: of('old'), new: of('new') }));
await ch.close();

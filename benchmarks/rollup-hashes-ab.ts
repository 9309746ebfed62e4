/**
 * A closed day's rollup with the entries' hashes read with the rows (readClaimHashes, the read
 * before they were fetched afterwards) against without, alternating in one process:
 *
 *   ROLL_DIR=/tmp/dir node --import tsx benchmarks/rollup-hashes-ab.ts [rounds]
 *
 * ROLL_DIR must hold rollup-profile.ts's dense day (filled there; BENCH_CLAIMS=1 for the day
 * with claims). Prints each way's wall and process CPU, median and least, after one warm-up each.
 */
import { silentLogger } from '@booktape/config';
import { openClickHouse, SummariesRepository } from '@booktape/storage';
import { Roller } from '@booktape/summaries';
import { loadavg } from 'node:os';
import { DENSE_DAY } from './fill-day.ts';
const ch = await openClickHouse({ database: 'booktape_bench', embeddedPath: process.env.ROLL_DIR! });
const repo = new SummariesRepository(ch);
const key = { venue: 'exchange-a' as const, market: DENSE_DAY.market, asset: DENSE_DAY.asset };
const cpu = () => { const c = process.cpuUsage(); return (c.user + c.system) / 1000; };
const res: Record<string, { wall: number[]; cpu: number[] }> = { old: { wall: [], cpu: [] }, new: { wall: [], cpu: [] } };
const n = Number(process.argv[2] ?? 6);
for (let k = 0; k < 2 * n + 2; k++) {
  const way = k % 2 === 0 ? 'old' : 'new';
  const roller = new Roller(repo, silentLogger(), { closeGraceMs: 0, readClaimHashes: way === 'old' });
  const t0 = performance.now(); const c0 = cpu();
  const r = await roller.rollDay(key, DENSE_DAY.date, true);
  if (r.applied !== 1_000_000) throw new Error('applied ' + r.applied);
  if (k >= 2) { res[way]!.wall.push(performance.now() - t0); res[way]!.cpu.push(cpu() - c0); }
}
const med = (a: number[]) => { const s = [...a].sort((x, y) => x - y); return Math.round(s[Math.floor(s.length / 2)]!); };
const min = (a: number[]) => Math.round(Math.min(...a));
console.log(JSON.stringify({ dir: process.env.ROLL_DIR, load: loadavg()[0]!.toFixed(2), old: { wall_med: med(res.old!.wall), wall_min: min(res.old!.wall), cpu_med: med(res.old!.cpu), cpu_min: min(res.old!.cpu) }, new: { wall_med: med(res.new!.wall), wall_min: min(res.new!.wall), cpu_med: med(res.new!.cpu), cpu_min: min(res.new!.cpu) } }));
await ch.close();

/**
 * A migration's statements timed one by one on a kept store (a script, not part of `npm run
 * bench`): each statement's wall and the process's CPU (the embedded engine runs in this
 * process), and the raw tables' rows before, so a rewrite's cost per million rows can be read.
 * The statements run whether or not the store recorded the migration as applied, and the
 * migration is not recorded: use a scratch store.
 *
 *   MIGRATION=16 STORE_DIR=/tmp/scratch-store npx tsx benchmarks/migration-time.ts
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { loadMigrations, openClickHouse } from '@booktape/storage';

const dir = process.env.STORE_DIR;
const version = Number(process.env.MIGRATION);
if (!dir || !Number.isInteger(version)) throw new Error('STORE_DIR and MIGRATION (a number) are required');
const ch = await openClickHouse({ database: process.env.STORE_DATABASE ?? 'booktape_bench', embeddedPath: dir });
try {
  const count = async (t: string) => Number((await (await ch.client.query({ query: `SELECT count() AS n FROM ${ch.table(t)}`, format: 'JSONEachRow' })).json<{ n: string }>())[0]!.n);
  const rows = { a: await count('raw_exchange_a'), b: await count('raw_exchange_b') };
  const m = (await loadMigrations(ch)).find((x) => x.version === version);
  if (!m) throw new Error(`no migration ${version}`);
  const cpu = () => { const c = process.cpuUsage(); return (c.user + c.system) / 1000; };
  const steps = [];
  const w0 = performance.now();
  const c0 = cpu();
  for (const s of m.statements) {
    const w = performance.now();
    const c = cpu();
    await ch.client.command({ query: s });
    steps.push({ statement: s.split('\n')[0]!.slice(0, 90), ms: Math.round(performance.now() - w), cpu_ms: Math.round(cpu() - c) });
  }
  const total = { ms: Math.round(performance.now() - w0), cpu_ms: Math.round(cpu() - c0) };
  console.log(JSON.stringify({ migration: version, rows, total, load: loadavg().map((x) => x.toFixed(2)).join(' '), steps }));
} finally {
  await ch.close();
}

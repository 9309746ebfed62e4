// `npm run bench [-- name…]`: installs what is missing, starts the project's own Kafka and
// Redis, runs each benchmark in its own process (one after the other: two cores), and
// prints every benchmark's figures. Each benchmark prints a JSON line last.
// Record what you measure in docs/BENCHMARKS.md.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, ensureInstalled, onStopRequest } from './bootstrap.mjs';

ensureInstalled();
// Ctrl-C, SIGTERM or npm going away: the running benchmark is stopped, the rest skipped, and
// the services this run started are still stopped (as npm test does).
let stopSignal = null;
let current = null;
onStopRequest((sig) => {
  stopSignal = sig;
  current?.kill(sig);
});
const { ensureServices, stopServices } = await import('./services.mjs');

const BENCHES = {
  replay: 'benchmarks/replay.bench.ts',
  live: 'apps/ingestor/bench/ingest.bench.ts',
  api: 'apps/api/bench/api.bench.ts',
  engine: 'libs/book/bench/engine.bench.ts',
  // Benchmarks that span apps live in benchmarks/, the others beside their package.
  summaries: 'benchmarks/summaries.bench.ts',
  lag: 'benchmarks/lag.bench.ts',
  'data-out': 'benchmarks/data-out.bench.ts',
  'kafka-codec': 'benchmarks/kafka-codec.bench.ts',
  import: 'benchmarks/import.bench.ts',
  fairness: 'benchmarks/fairness.bench.ts',
  'replay-ws': 'benchmarks/replay-ws.bench.ts',
};
// A group name runs several benchmarks, in order. ingest: issue 10's figures, replay end to
// end, then live capture from the simulator.
const GROUPS = { ingest: ['replay', 'live'] };
const wanted = process.argv.slice(2).filter((a) => !a.startsWith('--')).flatMap((w) => GROUPS[w] ?? [w]);
for (const w of wanted) if (!BENCHES[w]) {
  console.error(`unknown benchmark ${w}; known: ${[...Object.keys(BENCHES), ...Object.keys(GROUPS)].join(', ')}`);
  process.exit(2);
}
// Kafka and Redis this run started are stopped at its end; ones already running stay.
let services;
try {
  services = await ensureServices({});
} catch (e) {
  console.error(`[bench] could not start Kafka/Redis: ${e.message}`);
  process.exit(1);
}
const env = { ...process.env, ...services.env };
const results = {};
let failed = false;
try {
  for (const [name, file] of Object.entries(BENCHES)) {
    if (stopSignal) break;
    if (wanted.length && !wanted.includes(name)) continue;
    if (!fs.existsSync(path.join(REPO_ROOT, file))) continue;
    console.log(`\n[bench] ${name}: ${file}`);
    const out = await new Promise((resolve) => {
      let text = '';
      const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', file], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
      current = child;
      child.stdout.on('data', (d) => {
        text += d;
        process.stdout.write(d);
      });
      // 'close', not 'exit': stdout may still hold the last (JSON) line when the process exits.
      child.on('close', (code) => resolve({ code, text }));
    });
    current = null;
    const last = out.text.trim().split('\n').filter((l) => l.startsWith('{')).pop();
    if (out.code !== 0 || !last) {
      failed = true;
      results[name] = { error: `exited with ${out.code}` };
    } else {
      try {
        results[name] = JSON.parse(last);
      } catch {
        failed = true;
        results[name] = { error: 'its last line is not JSON' };
      }
    }
  }
  console.log('\n[bench] results');
  console.log(JSON.stringify(results, null, 2));
} finally {
  if (services.started.length) await stopServices({ services: services.started });
}
process.exit(failed || stopSignal ? 1 : 0);

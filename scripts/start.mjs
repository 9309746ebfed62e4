// `npm start [-- --simulate]`: installs what is missing, starts the project's own Kafka and
// Redis, then runs the three apps (ingestor, API, rollup worker) in one process, since the
// embedded ClickHouse engine allows one process per data directory.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT, ensureInstalled } from './bootstrap.mjs';

ensureInstalled();
const { startServices } = await import('./services.mjs');

let serviceEnv = {};
const external = process.env.KAFKA_BROKERS && process.env.REDIS_URL;
if (!external) {
  try {
    serviceEnv = await startServices({});
  } catch (e) {
    console.error(`[booktape] could not start Kafka/Redis: ${e.message}`);
    process.exit(1);
  }
}

const child = spawn(process.execPath, [path.join(REPO_ROOT, 'apps/cli/bin/booktape.mjs'), 'start', ...process.argv.slice(2)], {
  cwd: REPO_ROOT,
  env: { ...serviceEnv, ...process.env },
  stdio: 'inherit',
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));

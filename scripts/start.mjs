// `npm start [-- --simulate]`: installs what is missing, starts the project's own Kafka and
// Redis, then runs the three apps (ingestor, API, rollup worker) in one process, since the
// embedded ClickHouse engine allows one process per data directory.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT, ensureInstalled, onStopRequest } from './bootstrap.mjs';

ensureInstalled();
// A stop asked for while Kafka and Redis are still starting (Ctrl-C during the first start,
// which can take a minute) is kept until they are up, so that what this run started is
// stopped rather than left running without an owner; once the app runs, it goes to the app.
let stopSignal = null;
let child = null;
onStopRequest((sig) => {
  stopSignal = sig;
  if (child) child.kill(sig);
  else console.log('[booktape] stopping once the services being started are up, to stop them too …');
});
const { ensureServices, stopServices } = await import('./services.mjs');

let serviceEnv = {};
const external = process.env.KAFKA_BROKERS && process.env.REDIS_URL;
// What this run starts, it stops when the service exits; services that were already
// running (`npm run services:start`) are left running.
let startedHere = [];
if (!external) {
  try {
    ({ env: serviceEnv, started: startedHere } = await ensureServices({}));
  } catch (e) {
    console.error(`[booktape] could not start Kafka/Redis: ${e.message}`);
    process.exit(1);
  }
}

async function stopStartedHere() {
  if (startedHere.length === 0) return;
  console.log(`[booktape] stopping what npm start started: ${startedHere.join(', ')}`);
  await stopServices({ services: startedHere }).catch((e) => console.error(`[booktape] could not stop ${startedHere.join(', ')}: ${e.message}`));
}

if (stopSignal) {
  await stopStartedHere();
  process.exit(1);
}

child = spawn(process.execPath, [path.join(REPO_ROOT, 'apps/cli/bin/booktape.mjs'), 'start', ...process.argv.slice(2)], {
  cwd: REPO_ROOT,
  env: { ...serviceEnv, ...process.env },
  stdio: 'inherit',
});
child.on('exit', async (code, signal) => {
  await stopStartedHere();
  process.exit(code ?? (signal ? 1 : 0));
});

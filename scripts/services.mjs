#!/usr/bin/env node
// Provision, start, check and stop booktape's own local services:
//   - Apache Kafka 3.9.x, single node, KRaft, assembled from Maven Central by deploy/kafka/pom.xml
//   - Redis, Debian's redis-server on its own port and data dir
//
// Plain Node ESM, node builtins only: it runs before (or right after) `npm install`.
//
//   node scripts/services.mjs start|status|stop|env [kafka|redis ...]
//
// This file is the face: the CLI and every export. The work lives in scripts/services/:
//   config.mjs       paths and ports from opts and BOOKTAPE_*, SERVICE_NAMES, ServiceError
//   lifecycle.mjs    start (ensureServices) / stop / status over the selected services
//   kafka.mjs        KRaft server.properties, storage format, start, stop, state
//   kafka-jars.mjs   the Kafka classpath, assembled by Maven from deploy/kafka/pom.xml
//   kafka-probe.mjs  the Kafka wire-protocol readiness probe (Metadata v1)
//   redis.mjs        redis.conf, start, stop, state (PING)
//   chromium.mjs     Debian's chromium for the browser test
//   python.mjs       Debian's python3-pandas for the Python client's tests
//   apt.mjs          apt-get installs and the install log
//   process.mjs      pid files, liveness, state (pid + probe), stopping, log tails, the lock
//   tcp.mjs          raw TCP: port checks and request/answer exchanges
//
// Exported for other scripts: startServices(opts) (→ env), ensureServices(opts) (→ { env, started }:
// what to stop at the end), stopServices(opts), servicesStatus(opts), serviceEnv(opts),
// resolveServiceConfig(opts), ensureChromium(opts) (the browser test's chromium),
// ensurePythonPandas(opts) (the Python client's tests' pandas), and
// readPid(file) / pidAlive(pid) (the tests' own brokers).
//
// opts (all optional):
//   services   ['kafka', 'redis'] subset (default: both)
//   env        environment to read BOOKTAPE_* from (default: process.env)
//   dataDir    overrides BOOKTAPE_DATA_DIR
//   log        (line: string) => void for progress lines (default: console.log; pass null for silence)
//   timeoutMs  readiness timeout per service (default 120000)

import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

import { ServiceError, serviceEnv } from './services/config.mjs';
import { servicesStatus, startServices, stopServices } from './services/lifecycle.mjs';

export { CHROMIUM_PATH, ensureChromium } from './services/chromium.mjs';
export { PYTHON_PATH, ensurePythonPandas } from './services/python.mjs';
export { SERVICE_NAMES, ServiceError, resolveServiceConfig, serviceEnv } from './services/config.mjs';
export { ensureServices, servicesStatus, startServices, stopServices } from './services/lifecycle.mjs';
export { pidAlive, readPid } from './services/process.mjs';

function usage() {
  return [
    'usage: node scripts/services.mjs <start|status|stop|env> [kafka|redis ...]',
    '',
    '  start   install what is missing, start the services, wait until ready',
    '  status  print each service state; exit 0 when all requested are up',
    '  stop    stop the services (SIGTERM, then SIGKILL after 30 s)',
    '  env     print KAFKA_BROKERS / REDIS_URL for the local services',
    '',
    'env: BOOKTAPE_DATA_DIR (default ./data), BOOKTAPE_KAFKA_PORT (19092),',
    '     BOOKTAPE_KAFKA_CONTROLLER_PORT (19093), BOOKTAPE_REDIS_PORT (16379)',
  ].join('\n');
}

async function main(argv) {
  const [cmd, ...rest] = argv;
  const services = rest.filter((a) => !a.startsWith('-'));
  if (!cmd || cmd === '-h' || cmd === '--help' || cmd === 'help') {
    console.log(usage());
    return cmd ? 0 : 2;
  }
  switch (cmd) {
    case 'start': {
      const t0 = Date.now();
      await startServices({ services });
      console.log(`[services] all up in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      for (const [k, v] of Object.entries(serviceEnv())) console.log(`[services]   ${k}=${v}`);
      return 0;
    }
    case 'stop':
      await stopServices({ services });
      return 0;
    case 'status': {
      const st = await servicesStatus({ services });
      for (const s of Object.values(st.services)) {
        let state = s.running ? 'running' : s.alive ? 'not ready' : 'stopped';
        if (s.foreignProcessOnPort) state += ' (port taken by another process)';
        const pid = s.pid ? `pid ${s.pid}` : '';
        console.log(`${s.name.padEnd(6)} ${state.padEnd(10)} ${s.address.padEnd(16)} ${pid.padEnd(10)} ${s.dir}`);
      }
      return st.ok ? 0 : 1;
    }
    case 'env':
      for (const [k, v] of Object.entries(serviceEnv())) console.log(`${k}=${v}`);
      return 0;
    default:
      console.error(`unknown command "${cmd}"\n${usage()}`);
      return 2;
  }
}

function isMain() {
  if (!process.argv[1]) return false;
  try {
    return fs.realpathSync(process.argv[1]) === fs.realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMain()) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      if (err instanceof ServiceError) {
        console.error(`[services] error: ${err.message}`);
      } else {
        console.error(`[services] unexpected error: ${err?.message ?? err}`);
        if (process.env.BOOKTAPE_DEBUG) console.error(err?.stack);
      }
      process.exitCode = 1;
    },
  );
}

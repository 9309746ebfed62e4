// Where everything lives: paths and ports of the local services, from opts and BOOKTAPE_*.

import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export const SERVICE_NAMES = Object.freeze(['kafka', 'redis']);

export const DEFAULT_TIMEOUT_MS = 120_000;
// Written into server.properties and looked for in the readiness probe's broker list.
export const KAFKA_NODE_ID = 1;

/** An expected failure: the CLI prints its message without a stack. */
export class ServiceError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ServiceError';
  }
}

function intEnv(env, name, def) {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 65535) {
    throw new ServiceError(`${name}=${JSON.stringify(raw)} is not a valid TCP port`);
  }
  return n;
}

/** Every path and port the services use, resolved from opts and the environment. */
export function resolveServiceConfig(opts = {}) {
  const env = opts.env ?? process.env;
  const dataDir = opts.dataDir
    ? path.resolve(opts.dataDir)
    : env.BOOKTAPE_DATA_DIR
      ? path.resolve(env.BOOKTAPE_DATA_DIR)
      : path.join(REPO_ROOT, 'data');
  const servicesDir = path.join(dataDir, 'services');
  const host = '127.0.0.1';

  const kdir = path.join(servicesDir, 'kafka');
  const kafka = {
    name: 'kafka',
    host,
    port: intEnv(env, 'BOOKTAPE_KAFKA_PORT', 19092),
    controllerPort: intEnv(env, 'BOOKTAPE_KAFKA_CONTROLLER_PORT', 19093),
    dir: kdir,
    logDirs: path.join(kdir, 'data'),
    logsDir: path.join(kdir, 'logs'),
    configFile: path.join(kdir, 'server.properties'),
    clusterIdFile: path.join(kdir, 'cluster.id'),
    pidFile: path.join(kdir, 'kafka.pid'),
    outFile: path.join(kdir, 'logs', 'kafka.out'),
    serverLog: path.join(kdir, 'logs', 'server.log'),
    libDir: env.BOOKTAPE_KAFKA_LIB_DIR
      ? path.resolve(env.BOOKTAPE_KAFKA_LIB_DIR)
      : path.join(REPO_ROOT, 'deploy', 'kafka', 'lib'),
    heap: { xms: env.BOOKTAPE_KAFKA_XMS || '256m', xmx: env.BOOKTAPE_KAFKA_XMX || '1g' },
  };
  if (kafka.port === kafka.controllerPort) {
    throw new ServiceError('BOOKTAPE_KAFKA_PORT and BOOKTAPE_KAFKA_CONTROLLER_PORT must differ');
  }

  const rdir = path.join(servicesDir, 'redis');
  const redis = {
    name: 'redis',
    host,
    port: intEnv(env, 'BOOKTAPE_REDIS_PORT', 16379),
    dir: rdir,
    dataPath: path.join(rdir, 'data'),
    configFile: path.join(rdir, 'redis.conf'),
    pidFile: path.join(rdir, 'redis.pid'),
    logFile: path.join(rdir, 'redis.log'),
  };

  return { repoRoot: REPO_ROOT, dataDir, servicesDir, kafka, redis };
}

/** Connection settings for the apps, pointing at the local services. */
export function serviceEnv(opts = {}) {
  const { kafka, redis } = resolveServiceConfig(opts);
  return {
    KAFKA_BROKERS: `${kafka.host}:${kafka.port}`,
    REDIS_URL: `redis://${redis.host}:${redis.port}`,
  };
}

export function selectServices(opts) {
  const list = opts.services && opts.services.length ? [...new Set(opts.services)] : [...SERVICE_NAMES];
  for (const s of list) {
    if (!SERVICE_NAMES.includes(s)) {
      throw new ServiceError(`unknown service "${s}" (known: ${SERVICE_NAMES.join(', ')})`);
    }
  }
  return SERVICE_NAMES.filter((s) => list.includes(s));
}

export function makeLog(opts) {
  if (opts.log === null) return () => {};
  if (typeof opts.log === 'function') return opts.log;
  return (line) => console.log(`[services] ${line}`);
}

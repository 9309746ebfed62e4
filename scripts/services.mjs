#!/usr/bin/env node
// Provision, start, check and stop booktape's own local services:
//   - Apache Kafka 3.9.x, single node, KRaft, assembled from Maven Central by deploy/kafka/pom.xml
//   - Redis, Debian's redis-server on its own port and data dir
//
// Plain Node ESM, node builtins only: it runs before (or right after) `npm install`.
//
//   node scripts/services.mjs start|status|stop|env [kafka|redis ...]
//
// Exported for other scripts: startServices(opts), stopServices(opts), servicesStatus(opts),
// serviceEnv(opts), resolveServiceConfig(opts), ensureChromium(opts) (the browser test's chromium).
//
// opts (all optional):
//   services   ['kafka', 'redis'] subset (default: both)
//   env        environment to read BOOKTAPE_* from (default: process.env)
//   dataDir    overrides BOOKTAPE_DATA_DIR
//   log        (line: string) => void for progress lines (default: console.log; pass null for silence)
//   timeoutMs  readiness timeout per service (default 120000)

import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const KAFKA_POM = path.join(REPO_ROOT, 'deploy', 'kafka', 'pom.xml');
const KAFKA_LOG4J = path.join(REPO_ROOT, 'deploy', 'kafka', 'log4j.properties');

export const SERVICE_NAMES = Object.freeze(['kafka', 'redis']);

const DEFAULT_TIMEOUT_MS = 120_000;
const STOP_GRACE_MS = 30_000;
const KAFKA_NODE_ID = 1;

/** An expected failure: the CLI prints its message without a stack. */
export class ServiceError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ServiceError';
  }
}

// ---------------------------------------------------------------------------------------------
// configuration

function intEnv(env, name, def) {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 65535) {
    throw new ServiceError(`${name}=${JSON.stringify(raw)} is not a valid TCP port`);
  }
  return n;
}

function kafkaVersionFromPom() {
  try {
    const pom = fs.readFileSync(KAFKA_POM, 'utf8');
    const m = pom.match(/<kafka\.version>\s*([^<\s]+)\s*<\/kafka\.version>/);
    if (m) return m[1];
  } catch {
    /* reported when the jars are assembled */
  }
  throw new ServiceError(`cannot read <kafka.version> from ${KAFKA_POM}`);
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

function selectServices(opts) {
  const list = opts.services && opts.services.length ? [...new Set(opts.services)] : [...SERVICE_NAMES];
  for (const s of list) {
    if (!SERVICE_NAMES.includes(s)) {
      throw new ServiceError(`unknown service "${s}" (known: ${SERVICE_NAMES.join(', ')})`);
    }
  }
  return SERVICE_NAMES.filter((s) => list.includes(s));
}

function makeLog(opts) {
  if (opts.log === null) return () => {};
  if (typeof opts.log === 'function') return opts.log;
  return (line) => console.log(`[services] ${line}`);
}

// ---------------------------------------------------------------------------------------------
// small helpers

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function readPid(file) {
  try {
    const n = Number.parseInt(fs.readFileSync(file, 'utf8').trim(), 10);
    return Number.isInteger(n) && n > 0 ? n : null;
  } catch {
    return null;
  }
}

function pidAlive(pid) {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
  } catch (e) {
    if (e.code === 'EPERM') return true;
    return false;
  }
  // A zombie (exited, not yet reaped) is not alive for our purposes.
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state === 'Z' || state === 'X') return false;
  } catch {
    /* no /proc: trust kill(0) */
  }
  return true;
}

/** True when the pid is alive and (where /proc exists) really is the expected program. */
function pidIsOurs(pid, marker) {
  if (!pidAlive(pid)) return false;
  try {
    const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
    return cmd.includes(marker);
  } catch {
    return true;
  }
}

function removeFile(file) {
  try {
    fs.rmSync(file, { force: true });
  } catch {
    /* ignore */
  }
}

function fileSize(file) {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

/** The last `lines` lines of a file, optionally only of what was written after byte `from`. */
function tail(file, lines = 25, from = 0) {
  try {
    const text = fs.readFileSync(file).subarray(from).toString('utf8');
    return text.split('\n').slice(-lines - 1).join('\n').trimEnd();
  } catch {
    return '';
  }
}

function portOpen(host, port, timeoutMs = 1000) {
  return new Promise((resolve) => {
    const sock = net.connect({ host, port });
    const done = (ok) => {
      sock.removeAllListeners();
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

/**
 * Open a TCP connection, write `request`, and collect bytes until `isComplete(buffer)` returns
 * a result other than undefined. Resolves to that result, or null on error/timeout.
 */
function tcpExchange(host, port, request, isComplete, timeoutMs = 2000) {
  return new Promise((resolve) => {
    let buf = Buffer.alloc(0);
    let settled = false;
    const sock = net.connect({ host, port });
    const finish = (v) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.removeAllListeners();
      sock.on('error', () => {});
      sock.destroy();
      resolve(v);
    };
    const timer = setTimeout(() => finish(null), timeoutMs);
    sock.once('connect', () => sock.write(request));
    sock.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      let r;
      try {
        r = isComplete(buf);
      } catch {
        r = null;
      }
      if (r !== undefined) finish(r);
    });
    sock.once('error', () => finish(null));
    sock.once('close', () => finish(null));
  });
}

function hasCommand(cmd) {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
  return r.status === 0;
}

// ---------------------------------------------------------------------------------------------
// lock: several processes (test runners, `npm start` twice) may start services at once

async function withLock(cfg, log, fn) {
  fs.mkdirSync(cfg.servicesDir, { recursive: true });
  const lockFile = path.join(cfg.servicesDir, '.lock');
  const deadline = Date.now() + 10 * 60_000; // installs can take a while
  let told = false;
  for (;;) {
    try {
      fs.writeFileSync(lockFile, String(process.pid), { flag: 'wx' });
      break;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
      const holder = readPid(lockFile);
      if (!holder || !pidAlive(holder) || holder === process.pid) {
        removeFile(lockFile);
        continue;
      }
      if (Date.now() > deadline) {
        throw new ServiceError(`timed out waiting for ${lockFile} (held by pid ${holder})`);
      }
      if (!told) {
        log(`waiting for another services command (pid ${holder}) to finish …`);
        told = true;
      }
      await sleep(250);
    }
  }
  try {
    return await fn();
  } finally {
    if (readPid(lockFile) === process.pid) removeFile(lockFile);
  }
}

// ---------------------------------------------------------------------------------------------
// installing what is missing

let aptUpdated = false;

function installLogFile(cfg) {
  fs.mkdirSync(cfg.servicesDir, { recursive: true });
  return path.join(cfg.servicesDir, 'install.log');
}

function runLogged(cfg, cmd, args, what, extra = {}) {
  const logFile = installLogFile(cfg);
  const fd = fs.openSync(logFile, 'a');
  try {
    fs.writeSync(fd, `\n$ ${cmd} ${args.join(' ')}\n`);
    const r = spawnSync(cmd, args, { stdio: ['ignore', fd, fd], ...extra });
    if (r.error) {
      throw new ServiceError(`${what} failed: cannot run ${cmd}: ${r.error.message}`);
    }
    if (r.status !== 0) {
      throw new ServiceError(
        `${what} failed (exit ${r.status ?? r.signal}); see ${logFile}\n${tail(logFile, 15)}`,
      );
    }
  } finally {
    fs.closeSync(fd);
  }
}

function aptInstall(cfg, log, pkg, forCmd) {
  let prefix = [];
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    if (!hasCommand('sudo')) {
      throw new ServiceError(
        `"${forCmd}" is not on PATH and this user cannot install it; run: apt-get install -y ${pkg}`,
      );
    }
    prefix = ['sudo', '-n'];
  }
  if (!hasCommand('apt-get')) {
    throw new ServiceError(`"${forCmd}" is not on PATH and apt-get is unavailable; install ${pkg} by hand`);
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const run = (args, what) =>
    prefix.length
      ? runLogged(cfg, prefix[0], [...prefix.slice(1), ...args], what, { env })
      : runLogged(cfg, args[0], args.slice(1), what, { env });
  if (!aptUpdated) {
    log('installing: apt-get update …');
    run(['apt-get', 'update'], 'apt-get update');
    aptUpdated = true;
  }
  log(`installing ${pkg} (for ${forCmd}) with apt-get …`);
  run(['apt-get', 'install', '-y', '--no-install-recommends', pkg], `apt-get install ${pkg}`);
  if (!hasCommand(forCmd)) {
    throw new ServiceError(`installed ${pkg} but "${forCmd}" is still not on PATH`);
  }
}

function ensureCommand(cfg, log, cmd, pkg) {
  if (!hasCommand(cmd)) aptInstall(cfg, log, pkg, cmd);
}

function kafkaJarPresent(k) {
  const version = kafkaVersionFromPom();
  return fs.existsSync(path.join(k.libDir, `kafka_2.13-${version}.jar`));
}

function ensureKafkaJars(cfg, log) {
  const k = cfg.kafka;
  if (kafkaJarPresent(k)) return;
  ensureCommand(cfg, log, 'mvn', 'maven');
  const version = kafkaVersionFromPom();
  log(`installing Kafka ${version} jars from Maven Central into ${k.libDir} …`);
  const t0 = Date.now();
  // Assemble into a fresh directory, then swap it in: a half-copied classpath is never used.
  const tmp = `${k.libDir}.tmp-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(k.libDir), { recursive: true });
  try {
    runLogged(
      cfg,
      'mvn',
      ['-q', '-B', '-f', KAFKA_POM, 'dependency:copy-dependencies', `-DoutputDirectory=${tmp}`],
      'assembling the Kafka classpath with Maven',
      { cwd: cfg.repoRoot },
    );
    if (!fs.existsSync(path.join(tmp, `kafka_2.13-${version}.jar`))) {
      throw new ServiceError(`Maven finished but kafka_2.13-${version}.jar is not in ${tmp}`);
    }
    const old = `${k.libDir}.old-${process.pid}`;
    if (fs.existsSync(k.libDir)) fs.renameSync(k.libDir, old);
    fs.renameSync(tmp, k.libDir);
    fs.rmSync(old, { recursive: true, force: true });
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  log(`Kafka jars ready (${fs.readdirSync(k.libDir).length} jars, ${((Date.now() - t0) / 1000).toFixed(1)} s)`);
}

function ensurePrerequisites(cfg, names, log) {
  if (names.includes('redis')) ensureCommand(cfg, log, 'redis-server', 'redis-server');
  if (names.includes('kafka')) {
    ensureCommand(cfg, log, 'java', 'default-jre-headless');
    ensureKafkaJars(cfg, log);
  }
}

// ---------------------------------------------------------------------------------------------
// Redis

function redisConf(r) {
  const q = (s) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  return [
    '# generated by scripts/services.mjs: edits are overwritten on start',
    `bind ${r.host}`,
    `port ${r.port}`,
    'protected-mode yes',
    'daemonize yes',
    'supervised no',
    `pidfile ${q(r.pidFile)}`,
    `logfile ${q(r.logFile)}`,
    'loglevel notice',
    `dir ${q(r.dataPath)}`,
    'databases 16',
    'maxmemory-policy noeviction',
    'appendonly yes',
    'appendfsync everysec',
    'save 3600 1 300 100 60 10000',
    'dbfilename dump.rdb',
    'tcp-keepalive 300',
    '',
  ].join('\n');
}

/** 'ready' when Redis answers PING with PONG, 'loading' while it loads its data, else null. */
async function redisPing(r, timeoutMs = 1500) {
  const reply = await tcpExchange(
    r.host,
    r.port,
    '*1\r\n$4\r\nPING\r\n',
    (buf) => {
      const i = buf.indexOf('\r\n');
      return i < 0 ? undefined : buf.subarray(0, i).toString('utf8');
    },
    timeoutMs,
  );
  if (reply === '+PONG') return 'ready';
  if (reply && reply.startsWith('-LOADING')) return 'loading';
  return null;
}

async function redisState(r) {
  const pid = readPid(r.pidFile);
  const alive = pidIsOurs(pid, 'redis-server');
  const probe = await redisPing(r);
  return { pid: alive ? pid : null, alive, ready: alive && probe === 'ready', answering: probe !== null };
}

async function startRedis(cfg, log, timeoutMs) {
  const r = cfg.redis;
  const addr = `${r.host}:${r.port}`;
  const st = await redisState(r);
  let logOffset = 0;
  if (st.alive && st.ready) {
    log(`redis already running (pid ${st.pid}) on ${addr}`);
    return;
  }
  if (!st.alive) {
    if (readPid(r.pidFile)) {
      log(`redis: removing stale pid file ${r.pidFile}`);
      removeFile(r.pidFile);
    }
    if (st.answering || (await portOpen(r.host, r.port))) {
      throw new ServiceError(
        `port ${addr} is already in use by another process (not this data dir's redis); ` +
          'stop it or set BOOKTAPE_REDIS_PORT',
      );
    }
    fs.mkdirSync(r.dataPath, { recursive: true });
    fs.writeFileSync(r.configFile, redisConf(r));
    logOffset = fileSize(r.logFile);
    log(`starting redis on ${addr} …`);
    const res = spawnSync('redis-server', [r.configFile], {
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 30_000,
      encoding: 'utf8',
    });
    if (res.error || res.status !== 0) {
      const detail = [res.error?.message, res.stdout, res.stderr].filter(Boolean).join('\n').trim();
      throw new ServiceError(
        `redis-server failed to start (exit ${res.status ?? res.signal}); see ${r.logFile}\n${detail || tail(r.logFile, 15, logOffset)}`,
      );
    }
  } else {
    log(`redis process ${st.pid} is up but not answering yet; waiting …`);
  }

  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pid = readPid(r.pidFile);
    if ((await redisPing(r)) === 'ready' && pidIsOurs(pid, 'redis-server')) {
      log(`redis ready (pid ${pid}) on ${addr}`);
      return;
    }
    if (pid && !pidAlive(pid)) {
      throw new ServiceError(`redis exited during startup; see ${r.logFile}\n${tail(r.logFile, 15, logOffset)}`);
    }
    if (Date.now() > deadline) {
      throw new ServiceError(
        `redis did not become ready within ${timeoutMs / 1000} s; see ${r.logFile}\n${tail(r.logFile, 15, logOffset)}`,
      );
    }
    await sleep(100);
  }
}

// ---------------------------------------------------------------------------------------------
// Kafka

function newClusterId() {
  // Kafka's Uuid.randomUuid().toString(): 16 random bytes, base64url, no padding; never starting
  // with '-' (it would parse as a CLI flag).
  for (;;) {
    const id = crypto.randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

function propEscape(v) {
  return String(v).replace(/\\/g, '\\\\');
}

function kafkaServerProperties(k) {
  return [
    '# generated by scripts/services.mjs: edits are overwritten on start',
    'process.roles=broker,controller',
    `node.id=${KAFKA_NODE_ID}`,
    `controller.quorum.voters=${KAFKA_NODE_ID}@${k.host}:${k.controllerPort}`,
    `listeners=PLAINTEXT://${k.host}:${k.port},CONTROLLER://${k.host}:${k.controllerPort}`,
    `advertised.listeners=PLAINTEXT://${k.host}:${k.port}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    'listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
    `log.dirs=${propEscape(k.logDirs)}`,
    'num.partitions=4',
    'default.replication.factor=1',
    'offsets.topic.replication.factor=1',
    // One node: 8 partitions for group offsets instead of 50 make the first consumer group on
    // a fresh broker ready in seconds (a fresh clone's tests waited on it for 30 s and more).
    'offsets.topic.num.partitions=8',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'min.insync.replicas=1',
    'auto.create.topics.enable=true',
    'group.initial.rebalance.delay.ms=0',
    'log.retention.hours=168',
    'log.segment.bytes=1073741824',
    'log.retention.check.interval.ms=300000',
    'num.network.threads=3',
    'num.io.threads=8',
    '',
  ].join('\n');
}

function javaBaseArgs(k) {
  return [
    `-Dlog4j.configuration=${pathToFileURL(KAFKA_LOG4J).href}`,
    `-Dkafka.logs.dir=${k.logsDir}`,
    '-Djava.awt.headless=true',
    '-cp',
    `${k.libDir}${path.sep}*`,
  ];
}

function readClusterId(k) {
  try {
    const id = fs.readFileSync(k.clusterIdFile, 'utf8').trim();
    if (id) return id;
  } catch {
    /* absent */
  }
  // Formatted earlier but the id file was lost: take it from meta.properties.
  try {
    const meta = fs.readFileSync(path.join(k.logDirs, 'meta.properties'), 'utf8');
    const m = meta.match(/^cluster\.id=(.+)$/m);
    if (m) return m[1].trim();
  } catch {
    /* absent */
  }
  return null;
}

function formatKafkaStorage(cfg, log) {
  const k = cfg.kafka;
  let clusterId = readClusterId(k);
  if (!clusterId) clusterId = newClusterId();
  fs.writeFileSync(k.clusterIdFile, `${clusterId}\n`);
  if (fs.existsSync(path.join(k.logDirs, 'meta.properties'))) return;
  log(`formatting Kafka storage (cluster id ${clusterId}) in ${k.logDirs} …`);
  fs.mkdirSync(k.logDirs, { recursive: true });
  const res = spawnSync(
    'java',
    [...javaBaseArgs(k), 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', k.configFile],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 },
  );
  if (res.error || res.status !== 0) {
    const detail = [res.error?.message, res.stdout, res.stderr].filter(Boolean).join('\n').trim();
    throw new ServiceError(`formatting Kafka storage failed (exit ${res.status ?? res.signal}):\n${detail}`);
  }
}

// Kafka wire protocol, just enough for a readiness probe: a Metadata v1 request for no topics.
// The broker answers only once it processes requests, and lists itself among the brokers only
// once it is registered and unfenced, i.e. ready to take produce requests.
function kafkaMetadataRequest(correlationId) {
  const clientId = Buffer.from('booktape-services-probe');
  const body = Buffer.alloc(2 + 2 + 4 + 2 + clientId.length + 4);
  let o = 0;
  o = body.writeInt16BE(3, o); // api_key Metadata
  o = body.writeInt16BE(1, o); // api_version 1
  o = body.writeInt32BE(correlationId, o);
  o = body.writeInt16BE(clientId.length, o);
  o += clientId.copy(body, o);
  body.writeInt32BE(0, o); // topics: empty array (v1: empty = none, null = all)
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length);
  return Buffer.concat([size, body]);
}

function parseMetadataBrokers(buf, correlationId) {
  if (buf.length < 4) return undefined;
  const size = buf.readInt32BE(0);
  if (buf.length < 4 + size) return undefined;
  let o = 4;
  if (buf.readInt32BE(o) !== correlationId) return null;
  o += 4;
  const n = buf.readInt32BE(o);
  o += 4;
  const brokers = [];
  for (let i = 0; i < n; i++) {
    const nodeId = buf.readInt32BE(o);
    o += 4;
    const hostLen = buf.readInt16BE(o);
    o += 2;
    const host = buf.subarray(o, o + hostLen).toString('utf8');
    o += hostLen;
    const port = buf.readInt32BE(o);
    o += 4;
    const rackLen = buf.readInt16BE(o);
    o += 2 + Math.max(0, rackLen);
    brokers.push({ nodeId, host, port });
  }
  return brokers;
}

async function kafkaProbe(k, timeoutMs = 2000) {
  const cid = 1 + Math.floor(Math.random() * 1e9);
  const brokers = await tcpExchange(
    k.host,
    k.port,
    kafkaMetadataRequest(cid),
    (buf) => parseMetadataBrokers(buf, cid),
    timeoutMs,
  );
  if (brokers === null) return null; // not answering
  return brokers.some((b) => b.nodeId === KAFKA_NODE_ID) ? 'ready' : 'starting';
}

async function kafkaState(k) {
  const pid = readPid(k.pidFile);
  const alive = pidIsOurs(pid, k.configFile);
  const probe = await kafkaProbe(k);
  return { pid: alive ? pid : null, alive, ready: alive && probe === 'ready', answering: probe !== null };
}

async function startKafka(cfg, log, timeoutMs) {
  const k = cfg.kafka;
  const addr = `${k.host}:${k.port}`;
  const st = await kafkaState(k);
  let logOffsets = { out: 0, server: 0 };
  if (st.alive && st.ready) {
    log(`kafka already running (pid ${st.pid}) on ${addr}`);
    return;
  }
  if (!st.alive) {
    if (readPid(k.pidFile)) {
      log(`kafka: removing stale pid file ${k.pidFile}`);
      removeFile(k.pidFile);
    }
    for (const port of [k.port, k.controllerPort]) {
      if (await portOpen(k.host, port)) {
        throw new ServiceError(
          `port ${k.host}:${port} is already in use by another process (not this data dir's kafka); ` +
            'stop it or set BOOKTAPE_KAFKA_PORT / BOOKTAPE_KAFKA_CONTROLLER_PORT',
        );
      }
    }
    fs.mkdirSync(k.logsDir, { recursive: true });
    fs.mkdirSync(k.logDirs, { recursive: true });
    fs.writeFileSync(k.configFile, kafkaServerProperties(k));
    formatKafkaStorage(cfg, log);

    log(`starting kafka on ${addr} (controller ${k.host}:${k.controllerPort}) …`);
    logOffsets = { out: fileSize(k.outFile), server: fileSize(k.serverLog) };
    const out = fs.openSync(k.outFile, 'a');
    fs.writeSync(out, `\n==== ${new Date().toISOString()} starting kafka ====\n`);
    let child;
    try {
      child = spawn(
        'java',
        [
          `-Xms${k.heap.xms}`,
          `-Xmx${k.heap.xmx}`,
          '-server',
          '-XX:+UseG1GC',
          '-XX:MaxGCPauseMillis=20',
          '-XX:InitiatingHeapOccupancyPercent=35',
          '-XX:+ExplicitGCInvokesConcurrent',
          '-XX:+ExitOnOutOfMemoryError',
          ...javaBaseArgs(k),
          'kafka.Kafka',
          k.configFile,
        ],
        { detached: true, stdio: ['ignore', out, out], cwd: k.dir },
      );
    } finally {
      fs.closeSync(out);
    }
    const spawnError = await new Promise((resolve) => {
      child.once('error', resolve);
      child.once('spawn', () => resolve(null));
    });
    if (spawnError) throw new ServiceError(`cannot start java: ${spawnError.message}`);
    child.unref();
    fs.writeFileSync(k.pidFile, `${child.pid}\n`);
  } else {
    log(`kafka process ${st.pid} is up but not ready yet; waiting …`);
  }

  const pid = readPid(k.pidFile);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if ((await kafkaProbe(k)) === 'ready') {
      log(`kafka ready (pid ${pid}) on ${addr}`);
      return;
    }
    if (!pidAlive(pid)) {
      removeFile(k.pidFile);
      throw new ServiceError(
        `kafka exited during startup; see ${k.outFile} and ${k.serverLog}\n` +
          `${tail(k.outFile, 15, logOffsets.out)}\n${tail(k.serverLog, 15, logOffsets.server)}`.trim(),
      );
    }
    if (Date.now() > deadline) {
      throw new ServiceError(
        `kafka did not become ready within ${timeoutMs / 1000} s (pid ${pid} left running); ` +
          `see ${k.serverLog} and ${k.outFile}\n${tail(k.serverLog, 15, logOffsets.server)}`,
      );
    }
    await sleep(250);
  }
}

// ---------------------------------------------------------------------------------------------
// stopping

async function stopPid(name, pid, pidFile, marker, log) {
  if (!pidIsOurs(pid, marker)) {
    if (pid) log(`${name}: removing stale pid file ${pidFile}`);
    removeFile(pidFile);
    log(`${name} not running`);
    return;
  }
  log(`stopping ${name} (pid ${pid}) …`);
  try {
    process.kill(pid, 'SIGTERM');
  } catch (e) {
    if (e.code !== 'ESRCH') throw new ServiceError(`cannot signal ${name} pid ${pid}: ${e.message}`);
  }
  const deadline = Date.now() + STOP_GRACE_MS;
  while (pidAlive(pid) && Date.now() < deadline) await sleep(200);
  if (pidAlive(pid)) {
    log(`${name} did not exit within ${STOP_GRACE_MS / 1000} s; sending SIGKILL`);
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
    const killDeadline = Date.now() + 10_000;
    while (pidAlive(pid) && Date.now() < killDeadline) await sleep(100);
    if (pidAlive(pid)) throw new ServiceError(`${name} (pid ${pid}) survived SIGKILL`);
  }
  removeFile(pidFile);
  log(`${name} stopped`);
}

// ---------------------------------------------------------------------------------------------
// public API

/** Installs what is missing, starts the services that are not running, waits until ready. */
export async function startServices(opts = {}) {
  const cfg = resolveServiceConfig(opts);
  const names = selectServices(opts);
  const log = makeLog(opts);
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  await withLock(cfg, log, async () => {
    ensurePrerequisites(cfg, names, log);
    const starters = { kafka: startKafka, redis: startRedis };
    const results = await Promise.allSettled(names.map((n) => starters[n](cfg, log, timeoutMs)));
    const failures = results.filter((r) => r.status === 'rejected').map((r) => r.reason);
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) {
      throw new ServiceError(failures.map((e) => e.message).join('\n'));
    }
  });
  return serviceEnv(opts);
}

/** Stops the services (SIGTERM, up to 30 s, then SIGKILL); a no-op for those not running. */
export async function stopServices(opts = {}) {
  const cfg = resolveServiceConfig(opts);
  const names = selectServices(opts);
  const log = makeLog(opts);
  await withLock(cfg, log, async () => {
    const stops = {
      kafka: () => stopPid('kafka', readPid(cfg.kafka.pidFile), cfg.kafka.pidFile, cfg.kafka.configFile, log),
      redis: () => stopPid('redis', readPid(cfg.redis.pidFile), cfg.redis.pidFile, 'redis-server', log),
    };
    const results = await Promise.allSettled(names.map((n) => stops[n]()));
    const failures = results.filter((r) => r.status === 'rejected').map((r) => r.reason);
    if (failures.length) throw new ServiceError(failures.map((e) => e.message).join('\n'));
  });
}

/**
 * State of each requested service:
 * { ok, services: { kafka: { running, pid, address, dir, log }, redis: {...} } }.
 * running = our process is alive AND answers its protocol (PING / Kafka Metadata).
 */
export async function servicesStatus(opts = {}) {
  const cfg = resolveServiceConfig(opts);
  const names = selectServices(opts);
  const services = {};
  for (const name of names) {
    const c = cfg[name];
    const st = name === 'kafka' ? await kafkaState(c) : await redisState(c);
    services[name] = {
      name,
      running: st.ready,
      alive: st.alive,
      pid: st.pid,
      address: `${c.host}:${c.port}`,
      dir: c.dir,
      log: name === 'kafka' ? c.serverLog : c.logFile,
      foreignProcessOnPort: !st.alive && (st.answering || (await portOpen(c.host, c.port))),
    };
  }
  return { ok: names.every((n) => services[n].running), services };
}

/** Where the browser test (apps/api/src/status-page.int.test.ts) expects Debian's chromium. */
export const CHROMIUM_PATH = '/usr/bin/chromium';

/**
 * Installs Debian's `chromium` when CHROMIUM_PATH is missing (same apt-get path and install
 * log as redis-server); a no-op when it is there. Returns its path.
 */
export async function ensureChromium(opts = {}) {
  if (fs.existsSync(CHROMIUM_PATH)) return CHROMIUM_PATH;
  const cfg = resolveServiceConfig(opts);
  const log = makeLog(opts);
  await withLock(cfg, log, async () => {
    if (fs.existsSync(CHROMIUM_PATH)) return;
    const t0 = Date.now();
    log(`${CHROMIUM_PATH} is missing: installing Debian's chromium for the status-page browser test (log: ${installLogFile(cfg)})`);
    aptInstall(cfg, log, 'chromium', 'chromium');
    if (!fs.existsSync(CHROMIUM_PATH)) throw new ServiceError(`installed chromium but ${CHROMIUM_PATH} is still missing`);
    log(`chromium ready: ${CHROMIUM_PATH} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  });
  return CHROMIUM_PATH;
}

// ---------------------------------------------------------------------------------------------
// CLI

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

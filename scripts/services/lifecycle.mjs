// What the services CLI and the other scripts call: start, stop and status over the selected
// services, each service's own steps living in its module.

import { ensureCommand } from './apt.mjs';
import { DEFAULT_TIMEOUT_MS, ServiceError, makeLog, resolveServiceConfig, selectServices, serviceEnv } from './config.mjs';
import { ensureKafkaJars } from './kafka-jars.mjs';
import { kafkaState, startKafka, stopKafka } from './kafka.mjs';
import { withLock } from './process.mjs';
import { redisState, startRedis, stopRedis } from './redis.mjs';
import { portOpen } from './tcp.mjs';

function ensurePrerequisites(cfg, names, log) {
  if (names.includes('redis')) ensureCommand(cfg, log, 'redis-server', 'redis-server');
  if (names.includes('kafka')) {
    ensureCommand(cfg, log, 'java', 'default-jre-headless');
    ensureKafkaJars(cfg, log);
  }
}

/** Installs what is missing, starts the services that are not running, waits until ready. */
export async function startServices(opts = {}) {
  return (await ensureServices(opts)).env;
}

/**
 * startServices, also naming the services this call started: { env, started }. Not those
 * already running, nor those another command started meanwhile (it held the lock), so a
 * run that stops at its end what it started leaves everyone else's services alone.
 */
export async function ensureServices(opts = {}) {
  const cfg = resolveServiceConfig(opts);
  const names = selectServices(opts);
  const log = makeLog(opts);
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const started = [];
  await withLock(cfg, log, async () => {
    ensurePrerequisites(cfg, names, log);
    // Which processes were there before: a start that spawned one and then failed (it did
    // not become ready in time) has not said it started it, yet it is this call's to stop.
    const states = { kafka: (c) => kafkaState(c.kafka), redis: (c) => redisState(c.redis) };
    const aliveBefore = new Set();
    for (const n of names) if ((await states[n](cfg)).alive) aliveBefore.add(n);
    const starters = { kafka: startKafka, redis: startRedis };
    const results = await Promise.allSettled(
      names.map(async (n) => {
        if (await starters[n](cfg, log, timeoutMs)) started.push(n);
      }),
    );
    const failures = results.filter((r) => r.status === 'rejected').map((r) => r.reason);
    if (failures.length === 0) return;
    // A start that fails halfway leaves nothing of its own running: the caller gets an
    // error, not services to stop, so the ones this call started are stopped here.
    const stops = { kafka: stopKafka, redis: stopRedis };
    for (const n of names) {
      if (!started.includes(n) && (aliveBefore.has(n) || !(await states[n](cfg)).alive)) continue;
      log(`stopping ${n}, started by this call, since the start failed`);
      await stops[n](cfg, log).catch((e) => failures.push(e));
    }
    if (failures.length === 1) throw failures[0];
    throw new ServiceError(failures.map((e) => e.message).join('\n'));
  });
  return { env: serviceEnv(opts), started: names.filter((n) => started.includes(n)) };
}

/** Stops the services (SIGTERM, up to 30 s, then SIGKILL); a no-op for those not running. */
export async function stopServices(opts = {}) {
  const cfg = resolveServiceConfig(opts);
  const names = selectServices(opts);
  const log = makeLog(opts);
  await withLock(cfg, log, async () => {
    const stops = { kafka: stopKafka, redis: stopRedis };
    const results = await Promise.allSettled(names.map((n) => stops[n](cfg, log)));
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

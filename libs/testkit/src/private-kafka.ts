import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * A Kafka broker of a test's own, for fault tests that kill or restart it: the shared
 * project broker (19092) serves every other integration test running in parallel and must
 * never be touched. Started by the project's own scripts/services.mjs (same jars, same
 * server.properties) in a temporary data dir on free ports.
 */
export interface PrivateKafka {
  /** host:port of the broker, for createKafka. */
  brokers: string[];
  dataDir: string;
  /** The broker's JVM pid (from the service's pid file), or null when none is recorded. */
  pid(): number | null;
  /** SIGKILL the broker and wait until it is gone: an unclean crash, no shutdown hook. */
  kill(): Promise<void>;
  /** (Re)starts the broker on the same data dir and ports; resolves once it takes requests. */
  start(): Promise<void>;
  /** Stops the broker (SIGTERM, then SIGKILL) and deletes its data dir; safe to call twice. */
  cleanup(): Promise<void>;
}

interface ServicesModule {
  startServices(opts: Record<string, unknown>): Promise<Record<string, string>>;
  stopServices(opts: Record<string, unknown>): Promise<void>;
  resolveServiceConfig(opts: Record<string, unknown>): { kafka: { pidFile: string; host: string; port: number } };
  readPid(file: string): number | null;
  /** Alive and not a zombie. */
  pidAlive(pid: number | null): boolean;
}

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

async function loadServices(): Promise<ServicesModule> {
  // A plain .mjs script without types: imported at run time through a URL.
  return (await import(pathToFileURL(path.join(REPO_ROOT, 'scripts', 'services.mjs')).href)) as ServicesModule;
}

/** A TCP port free right now on 127.0.0.1 (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

export async function startPrivateKafka(opts: { timeoutMs?: number; heap?: string } = {}): Promise<PrivateKafka> {
  const services = await loadServices();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'booktape-kafka-'));
  const port = await freePort();
  let controllerPort = await freePort();
  while (controllerPort === port) controllerPort = await freePort();
  const serviceOpts = {
    services: ['kafka'],
    dataDir,
    log: null,
    timeoutMs: opts.timeoutMs ?? 90_000,
    // Only what resolveServiceConfig reads: ports and heap (a small one; two JVMs share the machine).
    env: {
      BOOKTAPE_KAFKA_PORT: String(port),
      BOOKTAPE_KAFKA_CONTROLLER_PORT: String(controllerPort),
      BOOKTAPE_KAFKA_XMS: '128m',
      BOOKTAPE_KAFKA_XMX: opts.heap ?? '384m',
      ...(process.env.BOOKTAPE_KAFKA_LIB_DIR ? { BOOKTAPE_KAFKA_LIB_DIR: process.env.BOOKTAPE_KAFKA_LIB_DIR } : {}),
    },
  };
  const { kafka } = services.resolveServiceConfig(serviceOpts);
  const readPid = () => services.readPid(kafka.pidFile);
  let cleaned = false;
  const handle: PrivateKafka = {
    brokers: [`${kafka.host}:${kafka.port}`],
    dataDir,
    pid: readPid,
    async kill() {
      const pid = readPid();
      if (pid === null || !services.pidAlive(pid)) throw new Error(`private kafka in ${dataDir} is not running`);
      process.kill(pid, 'SIGKILL');
      const deadline = Date.now() + 15_000;
      while (services.pidAlive(pid)) {
        if (Date.now() > deadline) throw new Error(`private kafka pid ${pid} survived SIGKILL`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async start() {
      await services.startServices(serviceOpts);
    },
    async cleanup() {
      if (cleaned) return;
      cleaned = true;
      try {
        await services.stopServices(serviceOpts);
      } catch {
        const pid = readPid();
        if (pid !== null && services.pidAlive(pid)) process.kill(pid, 'SIGKILL');
      } finally {
        if (!dataDir.startsWith(tmpdir())) throw new Error(`refusing to delete ${dataDir}: not a temporary directory`);
        rmSync(dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
      }
    },
  };
  try {
    await handle.start();
  } catch (e) {
    await handle.cleanup().catch(() => undefined);
    throw e;
  }
  return handle;
}

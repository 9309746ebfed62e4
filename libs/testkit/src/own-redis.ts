import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { waitFor } from './wait.ts';
import { freePort } from './private-kafka.ts';

/**
 * A redis-server of one test alone, never the project's shared one, for fault tests: without
 * persistence, so the test can kill it and start it again on the same port (an outage, or a
 * restart that lost everything).
 */
export class OwnRedis {
  private proc: ChildProcess | undefined;
  readonly dir = mkdtempSync(path.join(tmpdir(), 'booktape-redis-'));
  constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async create(): Promise<OwnRedis> {
    const r = new OwnRedis(await freePort());
    await r.start();
    return r;
  }

  async start(): Promise<void> {
    const proc = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir], { stdio: 'ignore' });
    this.proc = proc;
    // A redis-server that cannot be run (not installed) fails the test with that reason at
    // once, instead of an unhandled 'error' event or a 10 s wait for a PING.
    const failed = new Promise<never>((_, reject) => proc.once('error', (e) => reject(new Error(`cannot run redis-server: ${e.message}`))));
    const probe = new Redis(this.url, { connectionName: 'probe', maxRetriesPerRequest: 1, lazyConnect: false });
    probe.on('error', () => undefined);
    try {
      await Promise.race([failed, waitFor('own redis-server up', async () => (await probe.ping().catch(() => null)) === 'PONG', 10_000, 50)]);
    } finally {
      probe.disconnect();
    }
  }

  async kill(): Promise<void> {
    const p = this.proc;
    // Ended already: by a code, or by a signal (SIGKILL leaves exitCode null), or never ran.
    if (!p || p.exitCode !== null || p.signalCode !== null || p.pid === undefined) return;
    const exited = new Promise((r) => p.once('exit', r));
    p.kill('SIGKILL');
    await exited;
  }

  async cleanup(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

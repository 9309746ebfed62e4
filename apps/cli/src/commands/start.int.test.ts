import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, silentLogger } from '@booktape/config';
import { createKafka, ensureTopics, topicNames } from '@booktape/messaging';
import { freePort, requireEnv, uniqueId, waitFor, removeTempDir } from '@booktape/testkit';

const BIN = path.join(REPO_ROOT, 'apps/cli/bin/booktape.mjs');
const log = silentLogger();


interface Health {
  status: string;
  checks: Record<string, boolean>;
  details?: Record<string, { state: string; detail: string | null }>;
}

async function health(port: number): Promise<{ code: number; body: Health } | null> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/health`, { signal: AbortSignal.timeout(2000) });
    return { code: res.status, body: (await res.json()) as Health };
  } catch {
    return null; // not listening yet
  }
}

async function exited(c: ChildProcess, signal: NodeJS.Signals, timeoutMs: number): Promise<void> {
  if (c.exitCode !== null || c.signalCode !== null) return;
  const done = new Promise((r) => c.once('exit', r));
  c.kill(signal);
  const t = setTimeout(() => c.kill('SIGKILL'), timeoutMs);
  await done;
  clearTimeout(t);
}

describe('npm start after a crash', () => {
  const dirs: string[] = [];
  const children: ChildProcess[] = [];
  afterAll(async () => {
    for (const c of children) await exited(c, 'SIGKILL', 1000);
    for (const d of dirs) await removeTempDir(d);
  });

  it(
    'serves health at once while the dead process still holds its consumer slot; the sink joins later',
    async () => {
      const prefix = `${uniqueId('start')}.`;
      const groupId = uniqueId('start-sink');
      const brokers = requireEnv('KAFKA_BROKERS');
      const kafka = createKafka({ brokers: brokers.split(','), clientId: 'start-test' }, log);
      await ensureTopics(kafka, topicNames(prefix), 2);
      const env = (dir: string): NodeJS.ProcessEnv => ({
        ...process.env,
        LOG_LEVEL: 'warn',
        BOOKTAPE_DATA_DIR: dir,
        KAFKA_BROKERS: brokers,
        KAFKA_TOPIC_PREFIX: prefix,
        KAFKA_PARTITIONS: '2',
        REDIS_URL: requireEnv('REDIS_URL'),
        ROLLUP_QUEUE_PREFIX: uniqueId('rq'),
        SINK_GROUP_ID: groupId,
        SINK_SESSION_TIMEOUT_MS: '30000',
        EXCHANGE_A_CATALOGUE_REFRESH_SECONDS: '0',
      });
      const mkdir = () => {
        const d = mkdtempSync(path.join(tmpdir(), 'booktape-start-'));
        dirs.push(d);
        return d;
      };

      // The previous process: a sink in the group, killed without leaving it. Kafka keeps
      // its slot until its 30 s session times out.
      const old = spawn(process.execPath, [BIN, 'ingest'], { env: { ...env(mkdir()), INGESTOR_ROLES: 'sink' }, stdio: 'ignore' });
      children.push(old);
      const admin = kafka.admin();
      await admin.connect();
      try {
        const members = async () => (await admin.describeGroups([groupId])).groups[0];
        await waitFor('the old sink in its group', async () => {
          const g = await members();
          return g?.state === 'Stable' && g.members.length === 1;
        }, 60_000, 200);
        old.kill('SIGKILL');
        await new Promise((r) => old.once('exit', r));
        const killedAt = Date.now();

        const port = await freePort();
        const launchedAt = Date.now();
        const launcher = spawn(process.execPath, [BIN, 'start', '--simulate', '--rate', '50'], { env: { ...env(mkdir()), PORT: String(port) }, stdio: 'ignore' });
        children.push(launcher);
        const first = (await waitFor('the API answers /health', () => health(port), 60_000, 100))!;
        const tookMs = Date.now() - launchedAt;
        // The old member's session still has well over 15 s to run: health answered
        // without waiting for it (it used to take 23-28 s).
        expect(tookMs).toBeLessThan(12_000);
        expect(first.code).toBe(200);
        expect(first.body.checks['sink']).toBe(true);
        expect(first.body.details?.['sink']?.state).toBe('joining');
        // Reads are served meanwhile.
        const status = await fetch(`http://127.0.0.1:${port}/api/v1/monitoring/status`);
        expect(status.status).toBe(200);

        // The sink joins by itself once Kafka has let the dead member go.
        await waitFor('the sink joined', async () => (await health(port))?.body.details?.['sink']?.state === 'running', 90_000, 250);
        // The scenario held: Kafka kept the dead member's slot well past the moment health
        // answered (the sink could not have joined earlier), and released it with the session.
        const joinedAt = Date.now();
        expect(joinedAt - (launchedAt + tookMs)).toBeGreaterThan(5_000);
        expect(joinedAt - killedAt).toBeGreaterThan(15_000);
        const g = await members();
        expect(g?.members.length).toBe(1);
        await exited(launcher, 'SIGTERM', 20_000);
        expect(launcher.exitCode).toBe(0);
      } finally {
        await admin.disconnect();
      }
    },
    180_000,
  );
});

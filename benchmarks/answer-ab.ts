/**
 * Summary answers of this tree and a baseline commit's, asked alternately over sockets of two
 * API processes on copies of one engine store (the dense asset-day of summaries-run.ts): the
 * request path compared without the load of the machine moving between two runs. Each tree
 * runs in its own process with its own sources (tsx maps `@booktape/*` by the tsconfig of the
 * directory it starts in, so one process cannot hold both trees' libraries).
 *
 *   npx tsx benchmarks/answer-ab.ts [baseline-rev]   (default main; `none`: this tree only)
 *
 * ANSWER_AB_STORE (default /tmp/booktape-answer-ab) holds the filled and rolled day; made once
 * and copied for the baseline. ANSWER_AB_ROUNDS rounds of ANSWER_AB_N answers per tree:
 * whole-day answers at ANSWER_AB_RS, a window starting inside the day (state carried in from
 * before it); then, in processes whose clock runs 310 times fast (31 s every 100 ms), whole-day
 * answers 100 ms apart: each after its day rows were read 31 s of the clock before. Prints the
 * p50 of each, and the SHA-256 of every answer's body (the trees' must be equal).
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { REPO_ROOT } from '@booktape/config';
import { DENSE_DAY } from './fill-day.ts';

const STORE = process.env.ANSWER_AB_STORE ?? '/tmp/booktape-answer-ab';
const PREFIX = 'answer-ab';
const { market: MARKET, asset: ASSET, date: DATE, dayMs: DAY } = DENSE_DAY;

async function serve(): Promise<void> {
  const { apiEnvSchema, createApp, createRedis } = await import('@booktape/api');
  const { testConfig } = await import('@booktape/api/testing');
  const { silentLogger } = await import('@booktape/config');
  const { openClickHouse } = await import('@booktape/storage');
  if (process.env.ANSWER_AB_FAST_CLOCK) {
    const real = Date.now.bind(Date);
    const t0 = real();
    Date.now = () => real() + Math.floor((real() - t0) / 100) * 31_000;
  }
  const ch = await openClickHouse({ database: 'booktape_bench', embeddedPath: process.env.ANSWER_AB_SERVE! });
  const log = silentLogger();
  const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:16379');
  const flushes = { requestLogFlushMs: apiEnvSchema.shape.REQUEST_LOG_FLUSH_MS.parse(undefined), usageFlushMs: apiEnvSchema.shape.API_USAGE_FLUSH_MS.parse(undefined) };
  const config = { ...testConfig({ rollupQueuePrefix: PREFIX, dataFloors: { 'exchange-a': null, 'exchange-b': null }, ...flushes }), summaryAnswerCacheBytes: 0 };
  const app = await createApp({ ch, log, redis, config });
  const res = await app.inject({ method: 'POST', url: '/api/v1/keys?name=ab&user_id=ab' });
  const apiKey = (res.json() as { data: { api_key: string } }).data.api_key;
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0, apiKey })}\n`);
  process.stdin.resume();
  await new Promise((resolve) => process.stdin.once('end', resolve));
  await app.close();
  redis.disconnect();
  await ch.close();
  process.exit(0);
}

async function prepare(): Promise<void> {
  if (existsSync(path.join(STORE, 'answer-ab.ready'))) return;
  const { createRedis } = await import('@booktape/api');
  const { silentLogger } = await import('@booktape/config');
  const { migrate, openClickHouse, RawEventsRepository, SummariesRepository } = await import('@booktape/storage');
  const { Roller } = await import('@booktape/summaries');
  const { fillDay } = await import('./fill-day.ts');
  const ch = await openClickHouse({ database: 'booktape_bench', embeddedPath: STORE });
  await migrate(ch);
  await fillDay(new RawEventsRepository(ch), MARKET, ASSET, DAY, 1_000_000, 5, 0);
  await ch.client.command({ query: `OPTIMIZE TABLE ${ch.table('raw_exchange_a')} FINAL` });
  await new Roller(new SummariesRepository(ch), silentLogger(), { closeGraceMs: 0 }).rollDay({ venue: 'exchange-a', market: MARKET, asset: ASSET }, DATE, true);
  await ch.close();
  writeFileSync(path.join(STORE, 'answer-ab.ready'), '');
  createRedis('redis://127.0.0.1:16379').disconnect();
}

type Tree = { name: string; child: ChildProcess; port: number; apiKey: string };

function start(name: string, root: string, store: string, fastClock: boolean): Promise<Tree> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'benchmarks/answer-ab.ts')], {
    cwd: root,
    env: { ...process.env, ANSWER_AB_SERVE: store, ...(fastClock ? { ANSWER_AB_FAST_CLOCK: '1' } : {}) },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve({ name, child, ...(JSON.parse(line) as { port: number; apiKey: string }) });
    });
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}`)));
  });
}

async function stop(t: Tree): Promise<void> {
  const done = new Promise((r) => t.child.once('exit', r));
  t.child.stdin!.end();
  await done;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const ask = (t: Tree, u: string) =>
  new Promise<Buffer>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: t.port, path: u, agent, headers: { authorization: `Bearer ${t.apiKey}`, 'accept-encoding': 'identity' } }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(parts)) : reject(new Error(`${t.name} ${u}: status ${res.statusCode}`))));
        res.on('error', reject);
      })
      .on('error', reject);
  });

if (process.env.ANSWER_AB_SERVE) {
  await serve();
} else {
  const rev = process.argv[2] ?? 'main';
  const ROUNDS = Number(process.env.ANSWER_AB_ROUNDS ?? 5);
  const N = Number(process.env.ANSWER_AB_N ?? 15);
  const RS = (process.env.ANSWER_AB_RS ?? '60,7,1').split(',').map(Number);
  await prepare();
  const { createRedis } = await import('@booktape/api');
  const { assetKey, rollupKeys } = await import('@booktape/messaging');
  const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:16379');
  // As the worker does after a write: readers may keep what they read until the next bump.
  await redis.incr(rollupKeys(PREFIX).version(assetKey({ venue: 'exchange-a', market: MARKET, asset: ASSET })));
  redis.disconnect();
  const roots: Array<{ name: string; root: string; store: string }> = [{ name: 'this', root: REPO_ROOT, store: STORE }];
  if (rev !== 'none') {
    const { baselineTree } = await import('./baseline-tree.ts');
    const root = baselineTree(rev, ['benchmarks/answer-ab.ts', 'benchmarks/fill-day.ts']);
    const copy = `${STORE}-copy`;
    rmSync(copy, { recursive: true, force: true });
    execFileSync('cp', ['-r', STORE, copy]);
    roots.push({ name: rev, root, store: copy });
  }
  const url = (R: number) => `/api/v1/exchange-a/market/orderbook-summary?condition_id=${MARKET}&asset_id=${ASSET}&date=${DATE}&resolution=${R}`;
  const partial = (R: number) => `/api/v1/exchange-a/market/orderbook-summary?condition_id=${MARKET}&asset_id=${ASSET}&start_timestamp=${DAY + 5 * 3_600_000 + 17_000}&end_timestamp=${DAY + 9 * 3_600_000}&resolution=${R}`;
  const hashes: Record<string, string> = {};
  const times = new Map<string, number[]>();
  const add = (k: string, v: number) => (times.get(k) ?? times.set(k, []).get(k)!).push(v);
  const timed = async (label: string, t: Tree, u: string) => {
    const t0 = performance.now();
    await ask(t, u);
    add(`${t.name} ${label}`, performance.now() - t0);
  };

  let trees = await Promise.all(roots.map((r) => start(r.name, r.root, r.store, false)));
  for (const t of trees) {
    for (const R of RS) {
      hashes[`${t.name} R=${R}`] = createHash('sha256').update(await ask(t, url(R))).digest('hex').slice(0, 16);
      hashes[`${t.name} partial R=${R}`] = createHash('sha256').update(await ask(t, partial(R))).digest('hex').slice(0, 16);
    }
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const t of round % 2 === 0 ? trees : [...trees].reverse()) {
      for (const R of RS) for (let i = 0; i < (R === 1 ? Math.max(3, Math.floor(N / 4)) : N); i++) await timed(`R=${R}`, t, url(R));
      for (let i = 0; i < N; i++) await timed('partial R=60', t, partial(60));
    }
  }
  await Promise.all(trees.map(stop));

  trees = await Promise.all(roots.map((r) => start(r.name, r.root, r.store, true)));
  for (const t of trees) await ask(t, url(60));
  for (let round = 0; round < ROUNDS; round++) {
    for (const t of round % 2 === 0 ? trees : [...trees].reverse()) {
      for (let i = 0; i < Math.max(3, Math.floor(N / 3)); i++) {
        await sleep(110);
        await timed('R=60 after 31 s', t, url(60));
      }
    }
  }
  await Promise.all(trees.map(stop));
  agent.destroy();

  const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const out: Record<string, number> = {};
  for (const [k, xs] of [...times].sort()) out[k] = Number(p50(xs).toFixed(2));
  console.log(JSON.stringify({ hashes, p50: out }, null, 1));
}

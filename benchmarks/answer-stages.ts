/**
 * Where a fresh whole-day summary answer spends its time, stage by stage, on the answer-ab
 * store (benchmarks/answer-ab.ts builds it): the reader's answer (rollup state, day rows, held
 * day columns, merge and fill), the JSON writer, and the whole answer over a socket of an API
 * process built as answer-ab's is. One process; run it under `node --cpu-prof` for a profile.
 *
 *   npx tsx benchmarks/answer-stages.ts        (ANSWER_STAGES_N answers per R, default 15; ANSWER_AB_RS)
 *
 * ANSWER_STAGES_WRITER=1: the writer alone, 3 × N times on one answer's series per R.
 * ANSWER_STAGES_VERBOSE=1: each socket answer's time, page faults and pooled chunks free.
 * `read` is SummaryReader.summaryAnswer (day columns held after the first answers), `write`
 * summaryBodyParts, `socket` the whole answer from the API (reader, writer, send; the
 * client is in this process, so its receiving counts too).
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { releaseSummaryParts, summaryChunksFree, utcDayWindow } from '@booktape/book';
import { DENSE_DAY } from './fill-day.ts';
import { summaryBodyParts } from '../apps/api/src/summaries/summary-body.ts';

const STORE = process.env.ANSWER_AB_STORE ?? '/tmp/booktape-answer-ab';
const PREFIX = 'answer-ab';
const { market: MARKET, asset: ASSET, date: DATE } = DENSE_DAY;
const N = Number(process.env.ANSWER_STAGES_N ?? 15);
const RS = (process.env.ANSWER_AB_RS ?? '60,7,1').split(',').map(Number);

const { apiEnvSchema, createApp, createRedis } = await import('@booktape/api');
const { testConfig } = await import('@booktape/api/testing');
const { silentLogger } = await import('@booktape/config');
const { openClickHouse, SummariesRepository, BookEventsRepository } = await import('@booktape/storage');
const { SummaryReader, planSummary } = await import('@booktape/summaries');
const { assetKey, rollupKeys } = await import('@booktape/messaging');

const ch = await openClickHouse({ database: 'booktape_bench', embeddedPath: STORE });
const redis = createRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:16379');
const key = { venue: 'exchange-a' as const, market: MARKET, asset: ASSET };
await redis.incr(rollupKeys(PREFIX).version(assetKey(key)));
const flushes = { requestLogFlushMs: apiEnvSchema.shape.REQUEST_LOG_FLUSH_MS.parse(undefined), usageFlushMs: apiEnvSchema.shape.API_USAGE_FLUSH_MS.parse(undefined) };
const config = { ...testConfig({ rollupQueuePrefix: PREFIX, dataFloors: { 'exchange-a': null, 'exchange-b': null }, ...flushes }), summaryAnswerCacheBytes: 0 };
const app = await createApp({ ch, log: silentLogger(), redis, config });
const res = await app.inject({ method: 'POST', url: '/api/v1/keys?name=st&user_id=st' });
const apiKey = (res.json() as { data: { api_key: string } }).data.api_key;
await app.listen({ host: '127.0.0.1', port: 0 });
const port = (app.server.address() as { port: number }).port;
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const ask = (u: string) =>
  new Promise<number>((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: u, agent, headers: { authorization: `Bearer ${apiKey}`, 'accept-encoding': 'identity' } }, (r) => {
        let n = 0;
        r.on('data', (c: Buffer) => (n += c.length));
        r.on('end', () => (r.statusCode === 200 ? resolve(n) : reject(new Error(`status ${r.statusCode}`))));
      })
      .on('error', reject);
  });

const reader = new SummaryReader({ summaries: new SummariesRepository(ch), events: new BookEventsRepository(ch), redis, queuePrefix: PREFIX });
const times = new Map<string, number[]>();
const add = (k: string, v: number) => (times.get(k) ?? times.set(k, []).get(k)!).push(v);
const url = (R: number) => `/api/v1/exchange-a/market/orderbook-summary?condition_id=${MARKET}&asset_id=${ASSET}&date=${DATE}&resolution=${R}`;

for (const R of RS) {
  const p = planSummary(utcDayWindow(DATE), R);
  if (process.env.ANSWER_STAGES_WRITER) {
    // The writer alone, again and again on one answer's series (for trying writer changes).
    const a = await reader.summaryAnswer(key, p);
    for (let i = 0; i < 3 * N; i++) {
      const t0 = performance.now();
      const parts = await summaryBodyParts(a.kind === 'series' ? a.series : a.buckets, 'json', '{"head":1,"data":', '}');
      add(`R=${R} write`, performance.now() - t0);
      releaseSummaryParts(parts);
    }
    continue;
  }
  for (let i = 0; i < N + 2; i++) {
    const t0 = performance.now();
    const a = await reader.summaryAnswer(key, p);
    const t1 = performance.now();
    const parts = await summaryBodyParts(a.kind === 'series' ? a.series : a.buckets, 'json', '{"head":1,"data":', '}');
    const t2 = performance.now();
    releaseSummaryParts(parts);
    const f0 = process.resourceUsage().minorPageFault;
    const free0 = summaryChunksFree();
    const bytes = await ask(url(R));
    const t3 = performance.now();
    if (process.env.ANSWER_STAGES_VERBOSE) console.log(`R=${R} socket ${(t3 - t2).toFixed(1)} ms, faults ${process.resourceUsage().minorPageFault - f0}, free chunks ${free0} -> ${summaryChunksFree()}`);
    if (i < 2) continue; // the first reads fill the caches
    add(`R=${R} read`, t1 - t0);
    add(`R=${R} write`, t2 - t1);
    add(`R=${R} socket`, t3 - t2);
    add(`R=${R} MB`, bytes / 1e6);
  }
}
const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const [k, xs] of times) console.log(k.padEnd(14), p50(xs).toFixed(2));
agent.destroy();
await app.close();
redis.disconnect();
await ch.close();

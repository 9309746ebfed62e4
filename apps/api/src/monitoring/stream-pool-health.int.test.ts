import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StreamBusyError, streamQuery } from '@booktape/storage';
import type { MonitoringStatus } from './index.ts';
import { aMessage, bearer, conditionId, startTestApi, type TestApi } from '../testing.ts';

/**
 * The embedded engine streams raw reads through a small pool of sessions. When every
 * session is held (slow readers, or sessions leaked), raw reads wait and then answer 503
 * while the store still answers its ping: /health and /monitoring/status must say so
 * (sessions in use of the most, waiting reads, a degraded status) and stop saying so once
 * the sessions come back.
 */

const SESSIONS = 2;
const MARKET = conditionId(0x1616);
const DAY = Date.UTC(2026, 2, 1);

let t: TestApi;
let key: string;

beforeAll(async () => {
  t = await startTestApi({ streamSessions: SESSIONS });
  await t.filler.insert('exchange-a', Array.from({ length: 50 }, (_, i) => aMessage({ market: MARKET, ts: DAY + i, hash: `0xpool${i}` })));
  key = await t.newKey();
}, 60_000);
afterAll(async () => t?.close());

type Health = { status: string; checks: Record<string, boolean>; stream_pool?: Record<string, unknown> };

async function health(): Promise<{ code: number; body: Health }> {
  const res = await t.app.inject({ url: '/api/v1/health' });
  return { code: res.statusCode, body: res.json() as Health };
}

/** A fresh app each time: the status is cached for a second per app. */
async function status(): Promise<MonitoringStatus> {
  const res = await (await t.another()).inject({ url: '/api/v1/monitoring/status' });
  expect(res.statusCode).toBe(200);
  return res.json() as MonitoringStatus;
}

/** A read that takes a session and holds it: its first chunk is read, the rest is not. */
async function holdSession(): Promise<() => Promise<void>> {
  const it = streamQuery(t.ch, { query: 'SELECT number FROM system.numbers LIMIT 50000000', format: 'TabSeparated' }, { maxSessions: SESSIONS })[Symbol.asyncIterator]();
  const first = await it.next();
  expect(first.done).toBe(false);
  return async () => void (await it.return?.());
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('stream session pool exhaustion', () => {
  it('is reported by /health and /monitoring/status while reads wait, and clears once sessions are back', async () => {
    const idle = await health();
    expect(idle.code).toBe(200);
    expect(idle.body.checks['stream_sessions']).toBe(true);
    expect(idle.body.stream_pool).toMatchObject({ in_use: 0, max: SESSIONS, waiting: 0, busy_timeouts: 0, last_busy_timeout_at: null });

    // Every session held: a full pool is not yet exhaustion.
    const holders = [await holdSession(), await holdSession()];
    const full = await health();
    expect(full.code).toBe(200);
    expect(full.body.stream_pool).toMatchObject({ in_use: SESSIONS, max: SESSIONS, waiting: 0 });

    // A client's raw read now waits for a session.
    const waitingRead = t.app.inject({ url: `/api/v1/exchange-a/market/data?condition_id=${MARKET}&date=2026-03-01&limit=10`, headers: bearer(key) });
    await sleep(1300);
    const exhausted = await health();
    expect(exhausted.code).toBe(503);
    expect(exhausted.body.status).toBe('degraded');
    expect(exhausted.body.checks).toMatchObject({ clickhouse: true, redis: true, stream_sessions: false });
    expect(exhausted.body.stream_pool).toMatchObject({ in_use: SESSIONS, max: SESSIONS, waiting: 1 });
    expect(exhausted.body.stream_pool!['longest_wait_ms']).toBeGreaterThanOrEqual(1000);
    const s = await status();
    expect(s.stream_sessions).toMatchObject({ state: 'exhausted', in_use: SESSIONS, max: SESSIONS, waiting: 1 });
    expect(s.status).not.toBe('ok');
    expect(s.reasons.some((r) => r.startsWith(`Raw data: all ${SESSIONS} sessions are in use and 1 read is waiting`))).toBe(true);
    const metrics = await (await t.another()).inject({ url: '/metrics' });
    expect(metrics.body).toMatch(/booktape_stream_sessions_exhausted 1\n/);
    expect(metrics.body).toMatch(/booktape_stream_sessions\{state="in_use"\} 2\n/);

    // The sessions come back: the waiting read is served, the report clears.
    for (const release of holders) await release();
    const served = await waitingRead;
    expect(served.statusCode, served.body).toBe(200);
    expect((served.json() as { data_count: number }).data_count).toBe(10);
    const cleared = await health();
    expect(cleared.code).toBe(200);
    expect(cleared.body.checks['stream_sessions']).toBe(true);
    expect(cleared.body.stream_pool).toMatchObject({ in_use: 0, waiting: 0, busy_timeouts: 0 });
    const after = await status();
    expect(after.stream_sessions).toMatchObject({ state: 'ok', in_use: 0, waiting: 0 });
    expect(after.reasons.filter((r) => r.startsWith('Raw data'))).toEqual([]);
  }, 60_000);

  it('a read that gave up waiting (503) keeps the pool reported for a while, with the count', async () => {
    const holders = [await holdSession(), await holdSession()];
    const it = streamQuery(t.ch, { query: 'SELECT 1', format: 'TabSeparated' }, { maxSessions: SESSIONS, sessionWaitMs: 300 })[Symbol.asyncIterator]();
    await expect(it.next()).rejects.toBeInstanceOf(StreamBusyError);
    for (const release of holders) await release();
    const h = await health();
    expect(h.code).toBe(503);
    expect(h.body.checks['stream_sessions']).toBe(false);
    expect(h.body.stream_pool).toMatchObject({ in_use: 0, waiting: 0, busy_timeouts: 1 });
    expect(typeof h.body.stream_pool!['last_busy_timeout_at']).toBe('string');
    const s = await status();
    expect(s.stream_sessions).toMatchObject({ state: 'exhausted', busy_timeouts: 1 });
    expect(s.stream_sessions.detail).toMatch(/^a raw read found no free session in time \d+ s ago/);
  }, 30_000);
});

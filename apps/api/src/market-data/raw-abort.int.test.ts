import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aMessage, conditionId, startTestApi, type TestApi } from '../testing.ts';

/**
 * Clients that go away in the middle of a raw page must give their store session back.
 * The embedded engine streams through a pool of `streamSessions` sessions: a page whose
 * client disconnects before (or while) its body is read used to keep its session for
 * good, so after a few dropped clients every raw read waited for a session and answered
 * 503 forever. Here many more clients than sessions drop their requests at different
 * moments, and afterwards ordinary reads must still answer at once.
 */

const MARKET = conditionId(77);
const DAY = Date.UTC(2026, 2, 1);
const ROWS = 30_000;

let t: TestApi;
let key: string;
let port: number;

beforeAll(async () => {
  t = await startTestApi({ streamSessions: 2 });
  const messages = Array.from({ length: ROWS }, (_, i) => aMessage({ market: MARKET, ts: DAY + i, hash: `0xabort${i.toString(16)}` }));
  for (let i = 0; i < messages.length; i += 10_000) await t.filler.insert('exchange-a', messages.slice(i, i + 10_000));
  key = await t.newKey();
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  port = (t.app.server.address() as net.AddressInfo).port;
}, 120_000);
afterAll(async () => t?.close());

/** Sends a GET and closes the socket once `afterBytes` bytes of the answer arrived (0: at once). */
function dropAfter(path: string, afterBytes: number): Promise<number> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let got = 0;
    const done = () => {
      s.destroy();
      resolve(got);
    };
    s.on('connect', () => {
      s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`);
      if (afterBytes === 0) setImmediate(done);
    });
    s.on('data', (chunk) => {
      got += chunk.length;
      if (got >= afterBytes) done();
    });
    s.on('error', done);
    s.on('close', () => resolve(got));
  });
}

async function fetchJson(path: string): Promise<{ status: number; body: Record<string, unknown>; ms: number }> {
  const started = Date.now();
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { authorization: `Bearer ${key}` } });
  const body = (await res.json()) as Record<string, unknown>;
  return { status: res.status, body, ms: Date.now() - started };
}

describe('raw pages whose clients go away', () => {
  it('give their store sessions back, so later reads still answer at once', async () => {
    const byDate = `/api/v1/exchange-a/market/data?condition_id=${MARKET}&date=2026-03-01&limit=100000`;
    const byRange = `/api/v1/exchange-a/market/data/range?condition_id=${MARKET}&start_timestamp=${DAY}&end_timestamp=${DAY + ROWS}&limit=100000`;
    // Three times the pool, at three moments: before any answer, after the status line,
    // and in the middle of the body.
    for (const afterBytes of [0, 1, 200_000]) {
      for (let i = 0; i < 3; i++) {
        await dropAfter(i % 2 === 0 ? byDate : byRange, afterBytes);
      }
    }
    // Give the server a moment to see the closed sockets.
    await new Promise((r) => setTimeout(r, 500));
    for (const path of [byDate, byRange]) {
      const r = await fetchJson(path.replace('limit=100000', 'limit=10'));
      expect(r.status).toBe(200);
      expect(r.body['data_count']).toBe(10);
      // A leaked pool makes a read wait the whole session wait (10 s) before its 503.
      expect(r.ms).toBeLessThan(5_000);
    }
    // A whole page still streams completely.
    const whole = await fetchJson(byDate);
    expect(whole.status).toBe(200);
    expect(whole.body['data_count']).toBe(ROWS);
  }, 120_000);
});

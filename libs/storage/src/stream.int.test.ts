import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { StreamBusyError, closeStreamSessions, streamQuery } from './index.ts';

describe('streamQuery (embedded engine)', () => {
  let t: TestClickHouse;
  beforeAll(async () => {
    t = await tempClickHouse();
    await t.ch.client.command({ query: `CREATE TABLE ${t.ch.table('s')} (n UInt64, s String) ENGINE = MergeTree ORDER BY n` });
    await t.ch.client.command({ query: `INSERT INTO ${t.ch.table('s')} SELECT number, repeat('x', 100) FROM numbers(200000)` });
  });
  afterAll(async () => {
    closeStreamSessions(t.ch);
    await t?.cleanup();
  });

  const q = (limit: number) => ({
    query: `SELECT toString(n) FROM ${t.ch.table('s')} WHERE n < {limit:UInt64} ORDER BY n SETTINGS max_block_size = 1000`,
    query_params: { limit },
    format: 'TabSeparatedRaw' as const,
  });

  it('yields the whole result chunk by chunk, rows intact, with bound parameters', async () => {
    let text = '';
    for await (const c of streamQuery(t.ch, q(5000))) text += c.toString('utf8');
    expect(text).toBe(Array.from({ length: 5000 }, (_, i) => `${i}\n`).join(''));
    // A large result arrives in several bounded chunks, not as one buffer.
    const sizes: number[] = [];
    for await (const c of streamQuery(t.ch, { query: `SELECT s, n FROM ${t.ch.table('s')} ORDER BY n`, format: 'TabSeparatedRaw' })) sizes.push(c.length);
    expect(sizes.length).toBeGreaterThan(1);
    expect(sizes.reduce((a, b) => a + b, 0)).toBeGreaterThan(20_000_000);
    expect(Math.max(...sizes)).toBeLessThan(16 * 2 ** 20);
  });

  it('sees data inserted through the main connection', async () => {
    await t.ch.client.command({ query: `INSERT INTO ${t.ch.table('s')} VALUES (999999999, 'late')` });
    let text = '';
    for await (const c of streamQuery(t.ch, { query: `SELECT s FROM ${t.ch.table('s')} WHERE n = 999999999`, format: 'TabSeparatedRaw' })) text += c.toString();
    expect(text).toBe('late\n');
  });

  it('runs streams side by side up to the pool size; a further one waits, then gives up with StreamBusyError', async () => {
    closeStreamSessions(t.ch); // a fresh pool, sized for this test
    const opts = { maxSessions: 2, sessionWaitMs: 300 };
    const a = streamQuery(t.ch, q(200000), opts)[Symbol.asyncIterator]();
    const b = streamQuery(t.ch, q(200000), opts)[Symbol.asyncIterator]();
    await a.next();
    await b.next();
    const c = streamQuery(t.ch, q(10), opts)[Symbol.asyncIterator]();
    await expect(c.next()).rejects.toBeInstanceOf(StreamBusyError);
    // Leaving a stream early frees its session for the next reader.
    await a.return?.(undefined);
    const d = streamQuery(t.ch, q(10), opts)[Symbol.asyncIterator]();
    expect((await d.next()).done).toBe(false);
    await d.return?.(undefined);
    await b.return?.(undefined);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { StreamBusyError, StreamOwnerBusyError, closeStreamSessions, defaultSessionsPerOwner, leaseStreams, streamPoolStats, streamQuery } from './index.ts';

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

  it('a bounded read (`whole`) gives the same bytes, and its start leaves the event loop to others while the engine works', async () => {
    // The set of an IN subquery (30,000,000 hashes) is built before the first row.
    const heavy = (whole: boolean) => ({
      query: `SELECT toString(n) FROM ${t.ch.table('s')} WHERE n IN (SELECT number % 200000 FROM numbers(30000000) WHERE cityHash64(number, {salt:UInt64}) % 100000 = 0) ORDER BY n LIMIT 3 SETTINGS max_threads = 1`,
      query_params: { salt: 7 },
      format: 'TabSeparatedRaw' as const,
      whole,
    });
    const firstChunk = async (whole: boolean) => {
      const lease = await leaseStreams(t.ch);
      try {
        const it = lease.query(heavy(whole))[Symbol.asyncIterator]();
        const t0 = performance.now();
        const first = it.next(); // what runs before this returns holds every other request
        const syncMs = performance.now() - t0;
        const chunk = (await first).value as Buffer;
        const totalMs = performance.now() - t0;
        await it.return?.(undefined);
        return { syncMs, totalMs, text: chunk.toString('utf8') };
      } finally {
        lease.release();
      }
    };
    const streamed = await firstChunk(false);
    const whole = await firstChunk(true);
    expect(whole.text).toBe(streamed.text);
    expect(whole.text.split('\n')).toHaveLength(4);
    // A streamed start runs the sort on the event loop (most of the time to the first chunk);
    // a whole read hands it to the engine's threads and returns at once.
    expect(streamed.syncMs).toBeGreaterThan(streamed.totalMs / 2);
    expect(whole.syncMs).toBeLessThan(whole.totalMs / 10);
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

  it('one owner never holds the whole pool: beyond its share it is refused at once, others still read', async () => {
    closeStreamSessions(t.ch);
    const opts = { maxSessions: 4, sessionWaitMs: 5_000 };
    const mine = { ...opts, owner: 'key-1' };
    const held = [streamQuery(t.ch, q(200000), mine)[Symbol.asyncIterator](), streamQuery(t.ch, q(200000), mine)[Symbol.asyncIterator]()];
    for (const h of held) await h.next();
    // The third of the same owner: refused without waiting, naming what happened.
    const started = Date.now();
    const third = streamQuery(t.ch, q(10), mine)[Symbol.asyncIterator]();
    const err = await third.next().then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(StreamOwnerBusyError);
    expect((err as StreamOwnerBusyError).perOwner).toBe(2);
    expect(Date.now() - started).toBeLessThan(1_000);
    // Another owner, and a read with no owner, find sessions.
    const other = streamQuery(t.ch, q(10), { ...opts, owner: 'key-2' })[Symbol.asyncIterator]();
    expect((await other.next()).done).toBe(false);
    await other.return?.(undefined);
    // A lease holds one session for several reads in a row, and counts once for its owner.
    for (const h of held) await h.return?.(undefined);
    const lease = await leaseStreams(t.ch, { ...opts, owner: 'key-1', maxPerOwner: 1 });
    for (let i = 0; i < 3; i++) {
      let text = '';
      for await (const c of lease.query(q(3))) text += c.toString();
      expect(text).toBe('0\n1\n2\n');
    }
    expect(streamPoolStats(t.ch, 4)!.inUse).toBe(1);
    await expect(leaseStreams(t.ch, { ...opts, owner: 'key-1', maxPerOwner: 1 })).rejects.toBeInstanceOf(StreamOwnerBusyError);
    lease.release();
    lease.release();
    expect(streamPoolStats(t.ch, 4)!.inUse).toBe(0);
    const again = await leaseStreams(t.ch, { ...opts, owner: 'key-1', maxPerOwner: 1 });
    again.release();
  });

  it('the default share of one owner is less than the pool whenever the pool has two or more', () => {
    for (let max = 1; max <= 64; max++) {
      const share = defaultSessionsPerOwner(max);
      expect(share).toBeGreaterThanOrEqual(1);
      if (max > 1) expect(share).toBeLessThan(max);
    }
  });
});

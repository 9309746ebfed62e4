import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { FootprintRepository, RAW_TABLE } from './index.ts';

describe('footprint repository (embedded ClickHouse)', () => {
  let t: TestClickHouse;
  beforeAll(async () => {
    t = await tempClickHouse();
  });
  afterAll(async () => {
    await t?.cleanup();
  });

  it('every MergeTree table of the database with its active parts; inserted rows counted; views left out', async () => {
    const before = await new FootprintRepository(t.ch).read();
    expect(before.scope).toBe('database');
    const names = before.tables.map((x) => x.table);
    expect(names).toEqual([...names].sort());
    expect(names).toEqual(expect.arrayContaining([...Object.values(RAW_TABLE), 'capture_gaps', 'summary_chunks', 'outages']));
    expect(names.some((n) => n.endsWith('_mv'))).toBe(false);
    // The status is public: the tables of customers and billing are not shown.
    for (const hidden of ['api_keys', 'api_key_usage', 'subscriptions', 'stripe_events', 'request_log']) expect(names).not.toContain(hidden);
    expect(before.tables.filter((x) => x.raw).map((x) => x.table).sort()).toEqual(Object.values(RAW_TABLE).sort());
    expect(before.tables.find((x) => x.table === 'outages')).toMatchObject({ rows: 0, bytesOnDisk: 0, uncompressedBytes: 0, parts: 0 });

    // Two inserts, two parts (unless merged meanwhile): rows and bytes of both counted.
    for (const id of ['out_a', 'out_b']) {
      await t.ch.client.insert({ table: t.ch.table('outages'), values: [{ id, venue: 'exchange-a', start_ms: 1, end_ms: 2, reason: 'test', created_at: 0 }], format: 'JSONEachRow' });
    }
    const after = await new FootprintRepository(t.ch).read();
    const o = after.tables.find((x) => x.table === 'outages')!;
    expect(o.rows).toBe(2);
    expect(o.bytesOnDisk).toBeGreaterThan(0);
    expect(o.uncompressedBytes).toBeGreaterThan(0);
    expect(o.parts).toBeGreaterThanOrEqual(1);
    expect(o.parts).toBeLessThanOrEqual(2);
  });

  it('on a cluster the figures are said to be this node’s, and the raw tables are the `_local` ones', async () => {
    // Same engine, the handle only says cluster: what differs is the labelling, not the query.
    const f = await new FootprintRepository({ ...t.ch, cluster: 'booktape_cluster' }).read();
    expect(f.scope).toBe('this_node');
    expect(f.tables.filter((x) => x.raw)).toEqual([]);
  });

  it('another database: nothing of ours (the name is a bound parameter)', async () => {
    const f = await new FootprintRepository({ ...t.ch, database: "booktape_test' OR 1=1 --" }).read();
    expect(f.tables).toEqual([]);
  });
});

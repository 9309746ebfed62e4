import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { loadMigrations } from './migrations.ts';

/**
 * The cluster DDL (derived by cluster-ddl.ts) has never run on a cluster: here every
 * derived statement, with `{db}` and `{cluster}` filled in, must at least parse in the
 * engine. The engine's own parser (formatQuery) answers, the statement bound as a value, so
 * nothing of it is glued into SQL. The server macros `{shard}`, `{replica}` and `{uuid}` sit
 * inside string literals, which parse as they are.
 */
describe('cluster variant of the migrations, in the engine', () => {
  let t: TestClickHouse;

  beforeAll(async () => {
    t = await tempClickHouse();
  });
  afterAll(async () => {
    await t?.cleanup();
  });

  /** The engine's formatting of `sql`, or the engine's complaint. */
  async function parse(sql: string): Promise<{ ok: true; formatted: string } | { ok: false; error: string }> {
    try {
      const rs = await t.ch.client.query({ query: 'SELECT formatQuery({q:String}) AS f', query_params: { q: sql }, format: 'JSONEachRow' });
      const [row] = await rs.json<{ f: string }>();
      return { ok: true, formatted: row!.f };
    } catch (e) {
      return { ok: false, error: (e as Error).message };
    }
  }

  it('refuses a statement that does not parse (the check can fail)', async () => {
    expect((await parse('CREATE TABLE booktape.t ON CLUSTER c (k String) ENGINE = ReplicatedMergeTree(')).ok).toBe(false);
  });

  it('parses every derived statement of every migration', async () => {
    const migrations = await loadMigrations({ database: 'booktape', cluster: 'booktape_cluster' });
    expect(migrations.length).toBeGreaterThanOrEqual(9);
    const failures: string[] = [];
    let count = 0;
    for (const m of migrations) {
      for (const [i, statement] of m.statements.entries()) {
        count += 1;
        const r = await parse(statement);
        if (!r.ok) failures.push(`${m.version} ${m.name} #${i + 1}: ${r.error}\n${statement}`);
        // ON CLUSTER survived the parse: the statement is the cluster one, not a single-node one.
        else if (/\bON CLUSTER booktape_cluster\b/.test(statement)) expect(r.formatted).toContain('ON CLUSTER booktape_cluster');
      }
    }
    expect(failures).toEqual([]);
    expect(count).toBeGreaterThan(50);
  });
});

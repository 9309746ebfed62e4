import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { clusterStatements } from './cluster-ddl.ts';
import { MIGRATIONS_DIR, loadMigrations, splitStatements } from './migrations.ts';

/** The cluster variants operators ran while they were written by hand (migrations 001–009). */
const HAND_WRITTEN = path.join(path.dirname(fileURLToPath(import.meta.url)), '__fixtures__/cluster');

/**
 * Whitespace is layout only. Within a run of consecutive DROPs the order is free: each one is
 * IF EXISTS and names another table, and no dropped table reads another, so every order
 * leaves the same tables, also when a crash stops the run and the migration runs again.
 * (The derivation drops a staging front table right after renaming its local table into
 * place; the hand-written 008 dropped it one statement later.)
 */
function normalise(statements: string[]): string[] {
  const flat = statements.map((s) => s.replace(/\s+/g, ' '));
  const out: string[] = [];
  for (let i = 0; i < flat.length; ) {
    let j = i;
    while (j < flat.length && flat[j]!.startsWith('DROP ')) j++;
    if (j === i) out.push(flat[i++]!);
    else {
      out.push(...flat.slice(i, j).sort());
      i = j;
    }
  }
  return out;
}

const sql = (dir: string, file: string) => splitStatements(readFileSync(path.join(dir, file), 'utf8'));

describe('cluster variant of the migrations', () => {
  const handWritten = readdirSync(HAND_WRITTEN).filter((f) => f.endsWith('.cluster.sql')).sort();

  it('has a hand-written variant to check for each of 001–010', () => {
    expect(handWritten.map((f) => f.slice(0, 3))).toEqual(['001', '002', '003', '004', '005', '006', '007', '008', '009', '010']);
  });

  it.each(handWritten)('%s: derived from the single-node source, is what operators ran', (file) => {
    const derived = clusterStatements(sql(MIGRATIONS_DIR, file.replace('.cluster.sql', '.sql')));
    expect(normalise(derived)).toEqual(normalise(sql(HAND_WRITTEN, file)));
  });

  it('derives every migration and leaves no placeholder of ours unsubstituted', async () => {
    const migrations = await loadMigrations({ database: 'bt', cluster: 'c1' });
    expect(migrations.length).toBeGreaterThanOrEqual(handWritten.length);
    for (const m of migrations) {
      for (const s of m.statements) expect(s).not.toMatch(/\{db\}|\{cluster\}/);
    }
  });

  it('leaves the single-node statements as written', async () => {
    const migrations = await loadMigrations({ database: 'bt', cluster: undefined });
    for (const m of migrations) {
      const file = readdirSync(MIGRATIONS_DIR).find((f) => f.startsWith(`${String(m.version).padStart(3, '0')}_`))!;
      expect(m.statements).toEqual(sql(MIGRATIONS_DIR, file).map((s) => s.replaceAll('{db}', 'bt')));
    }
  });

  it('keeps table settings other than the non-replicated deduplication window', () => {
    const [local] = clusterStatements([
      'CREATE TABLE IF NOT EXISTS {db}.t\n(k String, v UInt64)\nENGINE = ReplacingMergeTree(v)\nORDER BY k\nSETTINGS index_granularity = 1024, non_replicated_deduplication_window = 10',
    ]);
    expect(local).toBe(
      "CREATE TABLE IF NOT EXISTS {db}.t_local ON CLUSTER {cluster}\n(k String, v UInt64)\nENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{db}/t_local', '{replica}', v)\nORDER BY k\nSETTINGS index_granularity = 1024",
    );
  });

  it('gives a staging table of a new column layout (ALIAS columns) a new front table when it is renamed into place', () => {
    const out = clusterStatements([
      "CREATE TABLE IF NOT EXISTS {db}.t_v2\n(k String, n Int64, p String ALIAS toString(n))\nENGINE = ReplacingMergeTree\nORDER BY k",
      'RENAME TABLE {db}.t_v2 TO {db}.t',
    ]);
    expect(out.slice(2)).toEqual([
      'RENAME TABLE {db}.t_v2_local TO {db}.t_local ON CLUSTER {cluster}',
      'DROP TABLE IF EXISTS {db}.t ON CLUSTER {cluster} SYNC',
      'CREATE TABLE IF NOT EXISTS {db}.t ON CLUSTER {cluster} AS {db}.t_local\nENGINE = Distributed({cluster}, {db}, t_local, cityHash64(k))',
      'DROP TABLE IF EXISTS {db}.t_v2 ON CLUSTER {cluster}',
    ]);
  });

  it('refuses a statement it has no rule for, rather than guessing', () => {
    expect(() => clusterStatements(['CREATE TABLE IF NOT EXISTS {db}.t (k String) ENGINE = Log'])).toThrow(/no rule.*Log engine/);
    expect(() => clusterStatements(['CREATE TABLE IF NOT EXISTS {db}.t (k LowCardinality(String)) ENGINE = MergeTree ORDER BY k'])).toThrow(/shard by/);
    expect(() => clusterStatements(['OPTIMIZE TABLE {db}.t FINAL'])).toThrow(/no rule/);
  });
});

import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ClickHouse } from './clickhouse.ts';
import { clusterStatements } from './cluster-ddl.ts';

export const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../migrations');

export interface Migration {
  version: number;
  name: string;
  statements: string[];
}

/**
 * Numbered SQL files `NNN_name.sql`, written for a single node. When a cluster is
 * configured, each statement is replaced by its cluster variant (cluster-ddl.ts), so a
 * migration has one source. `{db}` and `{cluster}` are substituted.
 */
export async function loadMigrations(ch: Pick<ClickHouse, 'database' | 'cluster'>, dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{3}_[a-z0-9_]+\.sql$/.test(f)).sort();
  const out: Migration[] = [];
  for (const f of files) {
    const m = /^(\d{3})_([a-z0-9_]+)\.sql$/.exec(f);
    if (!m) continue;
    const templates = splitStatements(await readFile(path.join(dir, f), 'utf8'));
    const statements = (ch.cluster ? clusterStatements(templates) : templates).map((s) =>
      s.replaceAll('{db}', ch.database).replaceAll('{cluster}', ch.cluster ?? ''),
    );
    out.push({ version: Number(m[1]), name: m[2]!, statements });
  }
  return out;
}

/** Statements are separated by a line that ends with `;`; comment lines are dropped. */
export function splitStatements(sql: string): string[] {
  return sql
    .split(/;\s*$/m)
    .map((s) => s.replace(/^\s*--.*$/gm, '').trim())
    .filter(Boolean);
}

/** Applies what has not run yet, in order, and records each migration once it ran. */
export async function migrate(ch: ClickHouse, dir = MIGRATIONS_DIR): Promise<number[]> {
  const onCluster = ch.cluster ? ` ON CLUSTER ${ch.cluster}` : '';
  await ch.client.command({
    query: `CREATE TABLE IF NOT EXISTS ${ch.table('schema_migrations')}${onCluster}
      (version UInt32, name String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3))
      ENGINE = ReplacingMergeTree ORDER BY version`,
  });
  const rs = await ch.client.query({
    query: `SELECT version FROM ${ch.table('schema_migrations')} FINAL`,
    format: 'JSONEachRow',
  });
  const done = new Set((await rs.json<{ version: number }>()).map((r) => Number(r.version)));
  const applied: number[] = [];
  for (const m of await loadMigrations(ch, dir)) {
    if (done.has(m.version)) continue;
    for (const statement of m.statements) await ch.client.command({ query: statement });
    await ch.client.insert({
      table: ch.table('schema_migrations'),
      values: [{ version: m.version, name: m.name }],
      format: 'JSONEachRow',
    });
    applied.push(m.version);
  }
  return applied;
}

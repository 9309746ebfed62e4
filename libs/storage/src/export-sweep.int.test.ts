import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { ExportRepository } from './index.ts';

describe('export leftovers sweep (embedded engine)', () => {
  let t: TestClickHouse;
  let dir: string;
  beforeAll(async () => {
    t = await tempClickHouse();
    dir = mkdtempSync(path.join(tmpdir(), 'booktape-sweep-'));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await t?.cleanup();
  });

  const tables = async () =>
    (await (await t.ch.client.query({ query: `SELECT name FROM system.tables WHERE database = {db:String} ORDER BY name`, query_params: { db: t.ch.database }, format: 'JSONEachRow' })).json<{ name: string }>()).map((r) => r.name);

  it('drops temp tables past their age and temp files of processes that ended, and nothing else', async () => {
    for (const name of ['export_tmp_0123456789ab', 'export_tmp_keep', 'kept_table']) {
      await t.ch.client.command({ query: `CREATE TABLE ${t.ch.table(name)} (n UInt64) ENGINE = MergeTree ORDER BY n` });
    }
    // A pid that has ended: a child that ran and exited.
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    const files = [`booktape-export-${dead}-0123456789abcdef.parquet`, `booktape-export-${process.pid}-0123456789abcdef.parquet`, 'booktape-export-notes.txt'];
    for (const f of files) writeFileSync(path.join(dir, f), 'x');
    const repo = new ExportRepository(t.ch, dir);

    // Younger than the age asked: the tables stay (another process may be building them); the dead process's file goes.
    expect(await repo.sweep(3_600_000)).toEqual({ tables: 0, files: 1 });
    expect(await tables()).toEqual(expect.arrayContaining(['export_tmp_0123456789ab']));
    expect(readdirSync(dir).sort()).toEqual([files[1], files[2]].sort());

    // Old enough: only the names exports make are dropped.
    expect(await repo.sweep(0)).toEqual({ tables: 1, files: 0 });
    const left = await tables();
    expect(left).not.toContain('export_tmp_0123456789ab');
    expect(left).toEqual(expect.arrayContaining(['export_tmp_keep', 'kept_table']));
  });
});

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { RowBinaryWriter } from './row-binary.ts';
import { ROW_FILE_DIR, ROW_FILE_NAME, insertRowBinary } from './row-insert.ts';

describe('insertRowBinary on the embedded engine', () => {
  let t: TestClickHouse;
  beforeAll(async () => {
    t = await tempClickHouse();
  });
  afterAll(async () => t?.cleanup());

  it('removes the insert files of processes killed mid-insert, and nothing of live ones, before it inserts', async () => {
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    const deadFile = path.join(ROW_FILE_DIR, `booktape-rows-${dead}-7.bin`);
    const liveFile = path.join(ROW_FILE_DIR, `booktape-rows-${live.pid}-7.bin`);
    try {
      expect(ROW_FILE_NAME.exec(path.basename(deadFile))?.[1]).toBe(String(dead));
      writeFileSync(deadFile, 'left behind');
      writeFileSync(liveFile, 'being inserted');
      const table = t.ch.table('row_insert_probe');
      await t.ch.client.command({ query: `CREATE TABLE ${table} (n UInt32) ENGINE = Memory` });
      const w = new RowBinaryWriter();
      for (const n of [1, 2, 3]) w.u32(n);
      await insertRowBinary(t.ch, `INSERT INTO ${table} (n)`, [['n', 'UInt32']], w.bytes());
      const got = await (await t.ch.client.query({ query: `SELECT sum(n) AS s FROM ${table}`, format: 'JSONEachRow' })).json<{ s: string }>();
      expect(Number(got[0]!.s)).toBe(6);
      expect(existsSync(deadFile)).toBe(false);
      expect(existsSync(liveFile)).toBe(true);
    } finally {
      live.kill();
      rmSync(deadFile, { force: true });
      rmSync(liveFile, { force: true });
    }
  });
});

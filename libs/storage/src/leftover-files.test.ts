import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { processAlive, sweepDeadProcessFiles } from './leftover-files.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'booktape-leftovers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The two temp names the project writes: an export's Parquet file and a daily file being built. */
const EXPORT = /^booktape-export-(\d+)-[0-9a-f]{16}\.parquet$/;
const DAILY = /\.tmp-(\d+)-[0-9a-f]{16}$/;

describe('sweepDeadProcessFiles', () => {
  it("removes the temp files of processes that ended, and nothing a live process (or no process) owns", async () => {
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      expect(processAlive(dead)).toBe(false);
      expect(processAlive(live.pid!)).toBe(true);
      const hex = '0123456789abcdef';
      const files = {
        deadExport: `booktape-export-${dead}-${hex}.parquet`,
        liveExport: `booktape-export-${live.pid}-${hex}.parquet`,
        ownExport: `booktape-export-${process.pid}-${hex}.parquet`,
        notOurs: 'booktape-export-notes.txt',
        deadDaily: `f_v1-3.parquet.tmp-${dead}-${hex}`,
        whole: 'f_v1-3.parquet',
        pidZero: `booktape-export-0-${hex}.parquet`,
      };
      for (const f of Object.values(files)) writeFileSync(path.join(dir, f), 'x');
      // A directory named like a temp file is not a file: left alone, not counted.
      mkdirSync(path.join(dir, `booktape-export-${dead}-fedcba9876543210.parquet`));

      expect(await sweepDeadProcessFiles(dir, EXPORT)).toBe(1);
      expect(await sweepDeadProcessFiles(dir, DAILY)).toBe(1);
      expect(readdirSync(dir).sort()).toEqual(
        [files.liveExport, files.ownExport, files.notOurs, files.whole, files.pidZero, `booktape-export-${dead}-fedcba9876543210.parquet`].sort(),
      );
      expect(await sweepDeadProcessFiles(path.join(dir, 'no-such-dir'), EXPORT)).toBe(0);
    } finally {
      live.kill();
    }
  });
});

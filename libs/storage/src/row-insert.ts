import { accessSync, constants } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { sqlString, type ClickHouse } from './clickhouse.ts';
import { sweepDeadProcessFiles } from './leftover-files.ts';

/** Where the embedded engine's insert files go: memory-backed when the machine has /dev/shm. */
export const ROW_FILE_DIR = (() => {
  try {
    accessSync('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
})();
let rowFiles = 0;
/** An insert file's name: its writer's pid first, so that a dead writer's files can be told apart. */
export const ROW_FILE_NAME = /^booktape-rows-(\d+)-\d+\.bin$/;
/**
 * The insert files of processes killed mid-insert (their `finally` never ran), removed once
 * per process before its first insert: in memory, they would otherwise hold RAM until reboot.
 */
let leftoversSwept: Promise<number> | undefined;

/**
 * Inserts RowBinary rows (row-binary.ts) of `columns` (name and engine type, in the rows'
 * order). `into` is the statement up to its columns' end (`INSERT INTO t (a, b)`, with any
 * SETTINGS clause). On a server the rows are the request's body; the embedded connection
 * passes an insert's body on as text (UTF-8), which binary rows do not survive, so the engine
 * reads them from a file instead (memory-backed where the machine has /dev/shm), which is
 * also the cheapest insert path it has.
 */
export async function insertRowBinary(ch: ClickHouse, into: string, columns: ReadonlyArray<readonly [string, string]>, body: Buffer): Promise<void> {
  if (ch.mode === 'server') {
    const result = await ch.client.exec({ query: `${into} FORMAT RowBinary`, values: Readable.from([body]) });
    result.stream.resume();
    return;
  }
  await (leftoversSwept ??= sweepDeadProcessFiles(ROW_FILE_DIR, ROW_FILE_NAME));
  const file = path.join(ROW_FILE_DIR, `booktape-rows-${process.pid}-${++rowFiles}.bin`);
  await writeFile(file, body);
  try {
    const structure = columns.map(([c, type]) => `${c} ${type}`).join(', ');
    await ch.client.command({ query: `${into} SELECT * FROM file(${sqlString(file)}, 'RowBinary', ${sqlString(structure)})` });
  } finally {
    await rm(file, { force: true });
  }
}

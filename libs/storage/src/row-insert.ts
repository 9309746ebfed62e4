import { accessSync, constants } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { sqlString, type ClickHouse } from './clickhouse.ts';

/** Where the embedded engine's insert files go: memory-backed when the machine has /dev/shm. */
const ROW_FILE_DIR = (() => {
  try {
    accessSync('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
})();
let rowFiles = 0;

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
  const file = path.join(ROW_FILE_DIR, `booktape-rows-${process.pid}-${++rowFiles}.bin`);
  await writeFile(file, body);
  try {
    const structure = columns.map(([c, type]) => `${c} ${type}`).join(', ');
    await ch.client.command({ query: `${into} SELECT * FROM file(${sqlString(file)}, 'RowBinary', ${sqlString(structure)})` });
  } finally {
    await rm(file, { force: true });
  }
}

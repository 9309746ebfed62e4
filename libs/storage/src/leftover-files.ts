import { readdir, unlink } from 'node:fs/promises';
import path from 'node:path';

/**
 * Temp files a process writes while it builds something (an export's Parquet file, a daily
 * file) carry its pid in their name, so that what a process that died mid-build left behind
 * can be told from what a live one is still writing. Shared by the export repository and the
 * API's daily-file cache.
 */

/** A process of this machine is running (a pid we may not signal is one). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the files of `dir` that `tempName` names as a temp file of a process that is no
 * longer running (its first capture group is the pid); returns how many it removed. What the
 * pattern does not name, and the temp files of this process and of live ones, stay; a
 * directory that does not exist holds none.
 */
export async function sweepDeadProcessFiles(dir: string, tempName: RegExp): Promise<number> {
  let n = 0;
  for (const f of await readdir(dir).catch(() => [] as string[])) {
    const pid = Number(tempName.exec(f)?.[1] ?? NaN);
    if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid || processAlive(pid)) continue;
    await unlink(path.join(dir, f)).then(() => n++, () => undefined);
  }
  return n;
}

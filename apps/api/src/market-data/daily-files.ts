import { createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { sweepDeadProcessFiles } from '@booktape/storage';

/**
 * The cache of daily files across markets (docs/api.md, "Daily files"): each file is built
 * once into a temp file beside its final name, then renamed into place (atomic on one file
 * system), so a reader never sees half a file and a build that died leaves only a temp file,
 * which `sweep` removes once its process is gone. Concurrent requests for the same file in
 * this process wait for one build; two processes may both build it, and the second rename
 * replaces the first with identical bytes.
 */

/** Temp files: `<final name>.tmp-<pid>-<hex>`. */
const TEMP = /\.tmp-(\d+)-[0-9a-f]{16}$/;

/** A build whose data changed while it ran (`current` said no): nothing was kept; ask again. */
export class StaleBuild extends Error {
  constructor() {
    super('the data changed while the file was built');
    this.name = 'StaleBuild';
  }
}

export class DailyFiles {
  private readonly building = new Map<string, Promise<string>>();

  constructor(private readonly dir: string) {}

  /**
   * The path of file `name`, built by `build` (which writes the bytes it streams) when it is
   * not there yet. `current` is asked once the bytes are written: false (the data the name's
   * version stands for changed meanwhile) keeps nothing and rejects with StaleBuild.
   * `isStale` names the older versions of the same file: removed after a build.
   */
  async ensure(name: string, build: () => Promise<Readable>, current: () => Promise<boolean>, isStale: (other: string) => boolean): Promise<string> {
    const file = path.join(this.dir, name);
    if (await exists(file)) return file;
    let pending = this.building.get(file);
    if (pending === undefined) {
      pending = this.build(file, build, current, isStale).finally(() => this.building.delete(file));
      this.building.set(file, pending);
    }
    return pending;
  }

  private async build(file: string, build: () => Promise<Readable>, current: () => Promise<boolean>, isStale: (other: string) => boolean): Promise<string> {
    await mkdir(this.dir, { recursive: true });
    const temp = `${file}.tmp-${process.pid}-${randomBytes(8).toString('hex')}`;
    try {
      await pipeline(await build(), createWriteStream(temp, { flags: 'wx' }));
      // A row stored during the build may or may not be in the file: not the version it is named for.
      if (!(await current())) throw new StaleBuild();
      await rename(temp, file);
    } catch (e) {
      await unlink(temp).catch(() => undefined);
      throw e;
    }
    // Older versions of this file (the day before a late row) are never served again.
    for (const f of await readdir(this.dir)) {
      if (f !== path.basename(file) && !TEMP.test(f) && isStale(f)) await unlink(path.join(this.dir, f)).catch(() => undefined);
    }
    return file;
  }

  /** Whether file `name` is in the cache (built and renamed into place). */
  has(name: string): Promise<boolean> {
    return exists(path.join(this.dir, name));
  }

  /** Removes the temp files of builds whose process is gone; returns how many. */
  sweep(): Promise<number> {
    return sweepDeadProcessFiles(this.dir, TEMP);
  }
}

const exists = (file: string) => stat(file).then((s) => s.isFile(), () => false);

/**
 * The byte range a `Range` header asks of a `size`-byte file (RFC 9110 14.1.2): one range
 * only. null: answer the whole file (no header, a unit other than bytes, several ranges, or
 * a malformed header, which the RFC lets a server ignore); 'unsatisfiable': 416.
 */
export function byteRange(header: string | undefined, size: number): { start: number; end: number } | null | 'unsatisfiable' {
  if (header === undefined) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') {
    // The last N bytes.
    const n = Number(m[2]);
    if (n === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== '' && Number(m[2]) < start) return null;
  if (start >= size) return 'unsatisfiable';
  return { start, end };
}

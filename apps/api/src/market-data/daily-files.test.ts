import { describe, expect, it } from 'vitest';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { byteRange, DailyFiles, StaleBuild } from './daily-files.ts';

describe('DailyFiles', () => {
  const bytes = (s: string) => async () => Readable.from([Buffer.from(s)]);
  const yes = async () => true;
  const never = () => false;

  it('requests side by side wait for one build; a built file is not built again', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'daily-files-'));
    const files = new DailyFiles(dir);
    let builds = 0;
    const build = async () => {
      builds++;
      await new Promise((r) => setTimeout(r, 20));
      return Readable.from([Buffer.from('abc')]);
    };
    const paths = await Promise.all([1, 2, 3].map(() => files.ensure('f_v1-3.csv.gz', build, yes, never)));
    expect(new Set(paths)).toEqual(new Set([path.join(dir, 'f_v1-3.csv.gz')]));
    await files.ensure('f_v1-3.csv.gz', build, yes, never);
    expect(builds).toBe(1);
    expect(readdirSync(dir)).toEqual(['f_v1-3.csv.gz']);
  });

  it('a build that fails, or that the data changed under, leaves nothing; a new version removes the old', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'daily-files-'));
    const files = new DailyFiles(dir);
    const broken = async () =>
      new Readable({
        read() {
          this.push(Buffer.from('half'));
          this.destroy(new Error('store went away'));
        },
      });
    await expect(files.ensure('f_v1-3.csv.gz', broken, yes, never)).rejects.toThrow('store went away');
    await expect(files.ensure('f_v1-3.csv.gz', bytes('abc'), async () => false, never)).rejects.toBeInstanceOf(StaleBuild);
    expect(readdirSync(dir)).toEqual([]);
    await files.ensure('f_v1-3.csv.gz', bytes('abc'), yes, never);
    await files.ensure('f_v1-4.csv.gz', bytes('abcd'), yes, (f) => f.startsWith('f_v'));
    expect(readdirSync(dir)).toEqual(['f_v1-4.csv.gz']);
    expect(readFileSync(path.join(dir, 'f_v1-4.csv.gz'), 'utf8')).toBe('abcd');
  });

  it('the sweep removes the temp files of dead processes only', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'daily-files-'));
    // A pid that was just used and has exited.
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    writeFileSync(path.join(dir, `f_v1-3.parquet.tmp-${dead}-0123456789abcdef`), 'half');
    writeFileSync(path.join(dir, `f_v1-3.parquet.tmp-${process.pid}-0123456789abcdef`), 'building');
    writeFileSync(path.join(dir, 'f_v1-3.parquet'), 'whole');
    expect(await new DailyFiles(dir).sweep()).toBe(1);
    expect(readdirSync(dir).sort()).toEqual(['f_v1-3.parquet', `f_v1-3.parquet.tmp-${process.pid}-0123456789abcdef`]);
  });
});

/** The bytes a range names, as a plain reference: the RFC's rules read off a list of offsets. */
function reference(header: string, size: number): number[] | null | 'unsatisfiable' {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header);
  if (!m || (m[1] === '' && m[2] === '')) return null;
  const all = Array.from({ length: size }, (_, i) => i);
  if (m[1] === '') return Number(m[2]) === 0 || size === 0 ? 'unsatisfiable' : all.slice(-Number(m[2]));
  const first = Number(m[1]);
  if (m[2] !== '' && Number(m[2]) < first) return null;
  if (first >= size) return 'unsatisfiable';
  return all.filter((i) => i >= first && (m[2] === '' || i <= Number(m[2])));
}

describe('byteRange', () => {
  it('names exactly the bytes RFC 9110 says, for every single range of any file', () => {
    const header = fc.oneof(
      fc.tuple(fc.nat(300), fc.nat(300)).map(([a, b]) => `bytes=${a}-${b}`),
      fc.nat(300).map((a) => `bytes=${a}-`),
      fc.nat(300).map((n) => `bytes=-${n}`),
      fc.constantFrom('bytes=-', 'items=0-1', 'bytes=0-1,4-5', 'bytes=x-1'),
    );
    fc.assert(
      fc.property(header, fc.nat(200), (h, size) => {
        const r = byteRange(h, size);
        const want = reference(h, size);
        if (r === null || r === 'unsatisfiable') expect(r).toEqual(want);
        else expect(Array.from({ length: r.end - r.start + 1 }, (_, i) => r.start + i)).toEqual(want);
      }),
    );
    expect(byteRange(undefined, 10)).toBeNull();
  });
});

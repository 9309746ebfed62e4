import { describe, expect, it } from 'vitest';
import { VersionedCache } from './versioned-cache.ts';

describe('VersionedCache', () => {
  it('shares one load among concurrent misses of an entry at one version, and keeps it while the version stands', async () => {
    const cache = new VersionedCache<number>(60_000, 10);
    let loads = 0;
    const load = async () => {
      const n = ++loads;
      await new Promise((r) => setTimeout(r, 5));
      return n;
    };
    const first = await Promise.all(Array.from({ length: 50 }, () => cache.get('day', 'v1', load)));
    expect(loads).toBe(1);
    expect(new Set(first)).toEqual(new Set([1]));
    expect(await cache.get('day', 'v1', load)).toBe(1);
    expect(loads).toBe(1);
    // A new version is a new read; another entry is its own.
    expect(await Promise.all([cache.get('day', 'v2', load), cache.get('day', 'v2', load), cache.get('other', 'v2', load)])).toEqual([2, 2, 3]);
    expect(loads).toBe(3);
  });

  it('never keeps or shares a read without a version', async () => {
    const cache = new VersionedCache<number>(60_000, 10);
    let loads = 0;
    const load = async () => ++loads;
    expect(await Promise.all([cache.get('day', null, load), cache.get('day', null, load)])).toEqual([1, 2]);
    expect(await cache.get('day', null, load)).toBe(3);
  });
});

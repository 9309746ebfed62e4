import { afterEach, describe, expect, it, vi } from 'vitest';
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

  describe('by the state the version was read in', () => {
    afterEach(() => vi.useRealTimers());
    const counting = () => {
      let loads = 0;
      return { load: async () => ++loads, loads: () => loads };
    };

    it('keeps an entry read at rest while the version stands, past the time of one read otherwise', async () => {
      vi.useFakeTimers();
      const cache = new VersionedCache<number>(30_000, 10, 600_000);
      const c = counting();
      expect(await cache.get('day', 'v1', c.load, true)).toBe(1);
      vi.advanceTimersByTime(31_000);
      // Past ttlMs: still the entry, for readers at rest and not.
      expect(await cache.get('day', 'v1', c.load, true)).toBe(1);
      expect(await cache.get('day', 'v1', c.load, false)).toBe(1);
      // The version moved: read again.
      expect(await cache.get('day', 'v2', c.load, true)).toBe(2);
      // Past restTtlMs: read again.
      vi.advanceTimersByTime(600_000);
      expect(await cache.get('day', 'v2', c.load, true)).toBe(3);
      expect(c.loads()).toBe(3);
    });

    it('keeps an entry read while a writer may be at work for ttlMs, and never for a reader at rest', async () => {
      vi.useFakeTimers();
      const cache = new VersionedCache<number>(30_000, 10, 600_000);
      const c = counting();
      expect(await cache.get('day', 'v1', c.load, false)).toBe(1);
      expect(await cache.get('day', 'v1', c.load, false)).toBe(1);
      // A reader at rest does not take it (its writer may have died after writing past it) ...
      expect(await cache.get('day', 'v1', c.load, true)).toBe(2);
      // ... and what it read holds for both.
      vi.advanceTimersByTime(31_000);
      expect(await cache.get('day', 'v1', c.load, false)).toBe(2);
      const other = new VersionedCache<number>(30_000, 10, 600_000);
      expect(await other.get('day', 'v1', c.load, false)).toBe(3);
      vi.advanceTimersByTime(31_000);
      expect(await other.get('day', 'v1', c.load, false)).toBe(4);
    });
  });
});

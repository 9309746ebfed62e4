import { describe, expect, it } from 'vitest';
import { silentLogger } from '@booktape/config';
import { insertWithRetry, type RetryContext } from './insert-retry.ts';

class BadData extends Error {}

function context(o: { held?: () => boolean; heartbeat?: () => Promise<void> } = {}) {
  const sleeps: number[] = [];
  const stats = { paused: false, insertFailures: 0 };
  const ctx: RetryContext = {
    what: 'test batch',
    log: silentLogger(),
    stats,
    retryInitialMs: 100,
    retryMaxMs: 700,
    lease: { held: o.held ?? (() => true), heartbeat: o.heartbeat ?? (async () => undefined) },
    sleep: async (ms) => void sleeps.push(ms),
    refusalOf: (e) => (e instanceof BadData ? 'CANNOT_PARSE_NUMBER' : null),
  };
  return { ctx, sleeps, stats };
}

/** An insert that fails `down` times for a passing reason, then does `then`. */
function flaky(down: number, then: () => void = () => undefined) {
  let calls = 0;
  const fn = async () => {
    calls += 1;
    if (calls <= down) throw new Error('engine unavailable');
    then();
  };
  return { fn, calls: () => calls };
}

describe('insertWithRetry', () => {
  it('holds the insert through failures with doubling back-off, paused meanwhile, until it is stored', async () => {
    const { ctx, sleeps, stats } = context();
    const pausedDuring: boolean[] = [];
    const f = flaky(5, () => pausedDuring.push(stats.paused));
    expect(await insertWithRetry(f.fn, ctx)).toEqual({ kind: 'stored' });
    expect(f.calls()).toBe(6);
    expect(sleeps).toEqual([100, 200, 400, 700, 700]);
    expect(stats.insertFailures).toBe(5);
    expect(pausedDuring).toEqual([true]); // paused while failing…
    expect(stats.paused).toBe(false); // …and no longer once stored
  });

  it('returns a refusal of bad data at once, without retrying, and the engine counts as up', async () => {
    const { ctx, sleeps, stats } = context();
    stats.paused = true;
    const out = await insertWithRetry(async () => {
      throw new BadData('Cannot parse number');
    }, ctx);
    expect(out).toEqual({ kind: 'refused', refusal: 'CANNOT_PARSE_NUMBER', message: 'Cannot parse number' });
    expect(sleeps).toEqual([]);
    expect(stats).toEqual({ paused: false, insertFailures: 0 });
  });

  it('abandons the insert once the partition is no longer held (stop, rebalance), or its heartbeat fails', async () => {
    let held = true;
    const a = context({ held: () => held });
    const f = flaky(Number.MAX_SAFE_INTEGER);
    const out = insertWithRetry(async () => {
      if (f.calls() === 2) held = false;
      await f.fn();
    }, a.ctx);
    expect(await out).toEqual({ kind: 'abandoned' });
    expect(f.calls()).toBe(3);
    expect(a.stats.paused).toBe(true); // the engine is still down: the health says so

    const b = context({ heartbeat: async () => Promise.reject(new Error('rebalancing')) });
    const g = flaky(Number.MAX_SAFE_INTEGER);
    expect(await insertWithRetry(g.fn, b.ctx)).toEqual({ kind: 'abandoned' });
    expect(g.calls()).toBe(1);
  });
});

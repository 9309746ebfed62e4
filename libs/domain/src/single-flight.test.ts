import { describe, expect, it } from 'vitest';
import { SingleFlight } from './single-flight.ts';

const tick = () => new Promise((r) => setImmediate(r));

describe('SingleFlight', () => {
  it('runs one call per key for callers that overlap, and each key its own', async () => {
    const f = new SingleFlight<string, number>();
    let calls = 0;
    let open!: (v: number) => void;
    const gate = new Promise<number>((r) => (open = r));
    const fn = () => {
      calls++;
      return gate;
    };
    const many = Array.from({ length: 200 }, () => f.run('a', fn));
    const other = f.run('b', async () => 7);
    await tick();
    expect(calls).toBe(1);
    open(42);
    expect(await Promise.all(many)).toEqual(Array(200).fill(42));
    expect(await other).toBe(7);
    expect(f.size).toBe(0);
  });

  it('shares a rejection with every waiter, then forgets it: the next caller tries again', async () => {
    const f = new SingleFlight<string, number>();
    let calls = 0;
    const failing = () => {
      calls++;
      return Promise.reject(new Error('store down'));
    };
    const r = await Promise.allSettled([f.run('k', failing), f.run('k', failing)]);
    expect(r.map((x) => x.status)).toEqual(['rejected', 'rejected']);
    expect(calls).toBe(1);
    expect(await f.run('k', async () => 1)).toBe(1);
    expect(calls).toBe(1);
  });

  it('turns a synchronous throw into a rejection', async () => {
    const f = new SingleFlight<string, number>();
    await expect(
      f.run('k', () => {
        throw new Error('bad');
      }),
    ).rejects.toThrow('bad');
    expect(f.size).toBe(0);
  });
});

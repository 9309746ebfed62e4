import { describe, expect, it } from 'vitest';
import { SettledAnswers } from './answer-cache.ts';

const parts = (n: number) => [Buffer.alloc(n, 1)];

describe('SettledAnswers', () => {
  it('gives an entry back only under the stamp it was kept with, and forgets it under another', () => {
    const c = new SettledAnswers(1000);
    expect(c.has('a')).toBe(false);
    c.set('a', 's1', parts(100));
    expect(c.has('a')).toBe(true);
    expect(c.get('a', 's2')).toBeUndefined();
    expect(c.has('a')).toBe(false);
    // The stale entry is gone, even for its own stamp.
    expect(c.get('a', 's1')).toBeUndefined();
    expect(c.size).toBe(0);
    c.set('a', 's3', parts(100));
    expect(c.get('a', 's3')).toMatchObject({ stamp: 's3', bytes: 100 });
  });

  it('holds at most its bytes, least recently used out first, and never an answer over a quarter of them', () => {
    const c = new SettledAnswers(1000);
    c.set('big', 's', parts(251));
    expect(c.get('big', 's')).toBeUndefined();
    for (const id of ['a', 'b', 'c', 'd']) c.set(id, 's', parts(250));
    expect(c.size).toBe(1000);
    c.get('a', 's'); // a is now the most recently used
    c.set('e', 's', parts(250));
    expect(c.size).toBe(1000);
    expect(c.get('b', 's')).toBeUndefined();
    expect(c.get('a', 's')).toBeDefined();
    // Kept again under the same id: replaced, not counted twice.
    c.set('a', 's2', parts(100));
    expect(c.size).toBe(850);
  });
});

import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { InsertGroup } from './insert-group.ts';

class BadData extends Error {}

/** A table that refuses any insert holding a negative number, and fails `down` times first. */
function table(o: { down?: number } = {}) {
  const stored: number[] = [];
  const inserts: number[][] = [];
  let down = o.down ?? 0;
  const insert = async (items: number[]) => {
    await new Promise((r) => setTimeout(r, 1));
    inserts.push(items);
    if (down > 0) {
      down -= 1;
      throw new Error('engine unavailable');
    }
    if (items.some((x) => x < 0)) throw new BadData('CANNOT_PARSE_NUMBER');
    stored.push(...items);
  };
  return { stored, inserts, insert };
}

describe('InsertGroup', () => {
  it('puts batches submitted in one turn, or while an insert runs, into one insert, and answers each caller', async () => {
    const t = table();
    const g = new InsertGroup<number>(t.insert, (e) => e instanceof BadData);
    // Submitted in one turn (a fetch's batches): one insert.
    await Promise.all([g.submit([1], 'a'), g.submit([2, 3], 'b'), g.submit([4], 'c'), g.submit([5], 'd')]);
    expect(t.inserts).toEqual([[1, 2, 3, 4, 5]]);
    // Submitted while that insert runs: the first alone, those that queue behind it together.
    const first = g.submit([6], 'e');
    await new Promise((r) => setImmediate(r));
    await Promise.all([first, g.submit([7], 'f'), g.submit([8, 9], 'g')]);
    expect(t.inserts.slice(1)).toEqual([[6], [7, 8, 9]]);
    expect(t.stored).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('caps a group at maxItems, yet sends a larger batch alone', async () => {
    const t = table();
    const g = new InsertGroup<number>(t.insert, () => false, 3);
    await Promise.all([g.submit([0], 'x'), g.submit([1, 2], 'a'), g.submit([3, 4], 'b'), g.submit([5, 6, 7, 8], 'c'), g.submit([9], 'd')]);
    expect(t.inserts).toEqual([[0, 1, 2], [3, 4], [5, 6, 7, 8], [9]]);
  });

  it('never charges one batch with another batch\'s bad data: each gets the outcome of its own records', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(fc.integer({ min: -3, max: 50 }), { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 8 }), async (batches) => {
        const t = table();
        const g = new InsertGroup<number>(t.insert, (e) => e instanceof BadData);
        const outcomes = await Promise.all(batches.map((b, i) => g.submit(b, `t${i}`).then(() => 'stored', (e: unknown) => (e instanceof BadData ? 'refused' : 'failed'))));
        expect(outcomes).toEqual(batches.map((b) => (b.some((x) => x < 0) ? 'refused' : 'stored')));
        // Exactly the good batches are stored, each once.
        expect([...t.stored].sort((x, y) => x - y)).toEqual(batches.filter((b) => b.every((x) => x >= 0)).flat().sort((x, y) => x - y));
      }),
    );
  });

  it('fails every member of a group on another failure (each retries), and stores them on the retry', async () => {
    const t = table({ down: 2 });
    const g = new InsertGroup<number>(t.insert, (e) => e instanceof BadData);
    const submitRetrying = async (b: number[], token: string) => {
      for (;;) {
        try {
          return await g.submit(b, token);
        } catch (e) {
          expect((e as Error).message).toBe('engine unavailable');
        }
      }
    };
    await Promise.all([submitRetrying([1], 'a'), submitRetrying([2], 'b'), submitRetrying([3], 'c')]);
    expect([...t.stored].sort()).toEqual([1, 2, 3]);
  });
});

describe('InsertGroup pacing', () => {
  it('paced members wait until paceMs after the last insert started, then share one insert; a member not paced goes at once', async () => {
    const t = table();
    const starts: number[] = [];
    const g = new InsertGroup<number>(async (items) => (starts.push(Date.now()), t.insert(items)), () => false, 100_000, 300);
    const t0 = Date.now();
    await g.submit([1], 'a', true);
    // The first paced insert of the group goes at once (no insert before it).
    expect(starts[0]! - t0).toBeLessThan(100);
    const later = Promise.all([g.submit([2], 'b', true), g.submit([3], 'c', true)]);
    await new Promise((r) => setTimeout(r, 50));
    expect(t.inserts).toEqual([[1]]);
    const paced = g.submit([4], 'd', true);
    await Promise.all([later, paced]);
    expect(t.inserts).toEqual([[1], [2, 3, 4]]);
    expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(295);
    // Live records (not paced) do not wait, and take the paced ones waiting with them.
    const t1 = Date.now();
    await Promise.all([g.submit([5], 'e', true), g.submit([6], 'f', false)]);
    expect(t.inserts.slice(2)).toEqual([[5, 6]]);
    expect(Date.now() - t1).toBeLessThan(200);
    expect(t.stored).toEqual([1, 2, 3, 4, 5, 6]);
  });
});

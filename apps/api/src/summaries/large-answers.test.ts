import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { etagOf } from '../http/caching.ts';
import { FairTurns, etagInSlices } from './large-answers.ts';

describe('turns for large answers', () => {
  it('never runs more than its size at once, serves keys round-robin, and every request gets its turn', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom('a', 'b', 'c'), { minLength: 1, maxLength: 30 }), fc.integer({ min: 1, max: 3 }), async (keys, size) => {
        const turns = new FairTurns(size);
        let running = 0;
        let most = 0;
        const order: string[] = [];
        const releases: Array<() => void> = [];
        const all = keys.map(async (k) => {
          const release = await turns.take(k);
          running++;
          most = Math.max(most, running);
          order.push(k);
          releases.push(() => {
            running--;
            release();
          });
        });
        // Give turns back one at a time, in the order they were granted.
        for (let done = 0; done < keys.length; done++) {
          await new Promise((r) => setImmediate(r));
          releases.shift()?.();
        }
        await Promise.all(all);
        expect(most).toBeLessThanOrEqual(size);
        expect([...order].sort()).toEqual([...keys].sort());
        // Round-robin: among the turns granted after the first `size` (those queued), no key
        // gets two turns in a row while another key still had requests waiting.
        const queued = order.slice(size);
        for (let i = 1; i < queued.length; i++) {
          if (queued[i] === queued[i - 1]) expect(new Set(queued.slice(i)).size).toBe(1);
        }
      }),
      { numRuns: 200 },
    );
  });
  it('give a turn at once only while one is free and no request waits, and never more than the size', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom('now', 'wait', 'give'), { maxLength: 40 }), fc.integer({ min: 1, max: 3 }), async (steps, size) => {
        const turns = new FairTurns(size);
        const held: Array<() => void> = [];
        let waiting = 0;
        for (const step of steps) {
          if (step === 'now') {
            const free = held.length < size && waiting === 0;
            const r = turns.takeNow();
            expect(r !== undefined).toBe(free);
            if (r !== undefined) held.push(r);
          } else if (step === 'wait') {
            waiting++;
            void turns.take('k').then((r) => {
              waiting--;
              held.push(r);
            });
          } else {
            held.shift()?.();
          }
          // Turns handed to waiting requests arrive after a turn of the event loop.
          await new Promise((r) => setImmediate(r));
          expect(held.length).toBeLessThanOrEqual(size);
          expect(turns.waiting).toBe(waiting);
        }
      }),
    );
  });
});

describe('the tag of a large answer', () => {
  it('is etagOf of the same parts, whatever the size', async () => {
    for (const n of [0, 1, 4 * 1024 * 1024 - 1, 4 * 1024 * 1024, 9 * 1024 * 1024 + 7]) {
      const body = Buffer.alloc(n, 7);
      expect(await etagInSlices('summary', 'json', body)).toBe(etagOf('summary', 'json', body));
    }
    expect(createHash('sha256')).toBeDefined();
  });

  it('of a body in pieces is the tag of the whole body, however it is cut', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 300 }), fc.array(fc.nat({ max: 300 }), { maxLength: 6 }), async (bytes, cuts) => {
        const body = Buffer.from(bytes);
        const at = [...new Set(cuts.map((c) => Math.min(c, body.length)))].sort((a, b) => a - b);
        const pieces = [0, ...at].map((from, i) => body.subarray(from, [...at, body.length][i]));
        expect(await etagInSlices('summary', 'csv', pieces)).toBe(etagOf('summary', 'csv', body));
      }),
    );
    // Pieces across the digest's 4 MB slices.
    const big = Buffer.alloc(9 * 1024 * 1024 + 3, 5);
    const pieces = [big.subarray(0, 3 * 1024 * 1024 + 1), big.subarray(3 * 1024 * 1024 + 1, 7 * 1024 * 1024), big.subarray(7 * 1024 * 1024)];
    expect(await etagInSlices('summary', 'json', pieces)).toBe(etagOf('summary', 'json', big));
  });
});

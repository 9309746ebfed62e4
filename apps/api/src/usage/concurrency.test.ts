import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ConcurrencyLimiter } from './concurrency.ts';

describe('requests in progress per key', () => {
  it('never lets more than the cap in, counts each release once, and forgets a key with nothing in progress', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('acquire' as const), key: fc.constantFrom('k1', 'k2', 'k3') }),
      fc.record({ kind: fc.constant('release' as const), pick: fc.nat(), twice: fc.boolean() }),
    );
    fc.assert(
      fc.property(fc.option(fc.integer({ min: 1, max: 4 }), { nil: null }), fc.array(op, { maxLength: 200 }), (cap, ops) => {
        const limiter = new ConcurrencyLimiter();
        const held: Array<{ key: string; release: () => void }> = [];
        const model = new Map<string, number>();
        for (const o of ops) {
          if (o.kind === 'acquire') {
            const n = model.get(o.key) ?? 0;
            const release = limiter.tryAcquire(o.key, cap);
            expect(release === null).toBe(cap !== null && n >= cap);
            if (release) {
              held.push({ key: o.key, release });
              model.set(o.key, n + 1);
            }
          } else if (held.length > 0) {
            const [h] = held.splice(o.pick % held.length, 1);
            h!.release();
            if (o.twice) h!.release();
            model.set(h!.key, model.get(h!.key)! - 1);
          }
          for (const k of ['k1', 'k2', 'k3']) expect(limiter.count(k)).toBe(model.get(k) ?? 0);
        }
        for (const h of held) h.release();
        expect(limiter.keys).toBe(0);
      }),
    );
  });
});

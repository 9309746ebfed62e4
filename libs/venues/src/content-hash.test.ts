import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, sha1Hex } from './content-hash.ts';

describe('sha1Hex', () => {
  // Stored dedup ids were made with a Hash object; the one-shot digest must give the same
  // id for every text, lone surrogates included (both encode them as U+FFFD in UTF-8).
  it('equals the Hash object digest of the UTF-8 text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        expect(sha1Hex(text)).toBe(createHash('sha1').update(text, 'utf8').digest('hex'));
      }),
      { numRuns: 2000 },
    );
    expect(sha1Hex('\ud800x')).toBe(createHash('sha1').update('\ud800x', 'utf8').digest('hex'));
  });
});

/**
 * An independent reading of canonical JSON: a copy with every object's keys inserted in
 * sorted order, undefined/function/symbol members dropped, non-finite numbers and other
 * non-JSON leaves as null, then the engine's own JSON.stringify.
 */
function reference(v: unknown): string {
  const sortedCopy = (x: unknown): unknown => {
    if (x === null || x === undefined || typeof x === 'function' || typeof x === 'symbol') return null;
    if (typeof x === 'number') return Number.isFinite(x) ? x : null;
    if (typeof x === 'bigint') return { __bigint: x.toString() };
    if (typeof x !== 'object') return x;
    if (Array.isArray(x)) return x.map(sortedCopy);
    const out: Record<string, unknown> = Object.create(null);
    for (const k of Object.keys(x).sort()) {
      const y = (x as Record<string, unknown>)[k];
      if (y === undefined || typeof y === 'function' || typeof y === 'symbol') continue;
      out[k] = sortedCopy(y);
    }
    return out;
  };
  // Integer-like keys would be re-ordered by any object: write the object text by hand.
  const write = (x: unknown): string => {
    if (x === null || typeof x !== 'object') return JSON.stringify(x);
    if (Array.isArray(x)) return `[${x.map(write).join(',')}]`;
    const b = (x as { __bigint?: string }).__bigint;
    if (typeof b === 'string' && Object.keys(x).length === 1) return b;
    return `{${Object.keys(x)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${write((x as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  };
  return write(sortedCopy(v));
}

describe('canonicalJson', () => {
  it('is the JSON of the value with keys sorted at every depth, whatever the key order given', () => {
    const leaf = fc.oneof(fc.string({ unit: 'binary' }), fc.boolean(), fc.constant(null), fc.constant(undefined), fc.double(), fc.integer(), fc.bigInt());
    const key = fc.oneof(fc.constantFrom('price', 'size', 'side', 'hash', 'best_bid', 'best_ask', '0', '1', '10', '9', '__proto_', ''), fc.string({ unit: 'binary', maxLength: 4 }));
    const value = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: 'small' }, leaf, fc.array(tie('node'), { maxLength: 5 }), fc.dictionary(key, tie('node'), { maxKeys: 6 })),
    })).node;
    fc.assert(
      fc.property(value, (v) => {
        expect(canonicalJson(v)).toBe(reference(v));
      }),
      { numRuns: 3000 },
    );
  });

  it('is the same text for a book whose levels arrive in canonical key order and in any other', () => {
    const levels = [{ price: '0.45', size: '10' }, { price: '0.5', size: '2.5' }];
    const reordered = levels.map((l) => ({ size: l.size, price: l.price }));
    expect(canonicalJson({ bids: levels, asset_id: '1' })).toBe('{"asset_id":"1","bids":[{"price":"0.45","size":"10"},{"price":"0.5","size":"2.5"}]}');
    expect(canonicalJson({ bids: reordered, asset_id: '1' })).toBe(canonicalJson({ asset_id: '1', bids: levels }));
    // Not plain data: a Date has no own keys (as before), a class instance is walked by its own keys.
    expect(canonicalJson({ a: new Date(0) })).toBe('{"a":{}}');
  });
});

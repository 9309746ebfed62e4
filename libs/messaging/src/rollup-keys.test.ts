import { describe, expect, it } from 'vitest';
import { assetKey, parseAssetKey, rollupKeys } from './rollup-keys.ts';

describe('rollup keys', () => {
  it('keep the layout deployed Redis data already uses', () => {
    const k = rollupKeys('bt');
    const a = assetKey({ venue: 'exchange-a', market: '0xfeed', asset: '42' });
    expect([k.jobs('wait'), k.jobs('prioritized'), k.pending, k.leases]).toEqual(['bt:rollup:wait', 'bt:rollup:prioritized', 'bt:rollup:pending', 'bt:rollup:leases']);
    expect([k.dirty(a), k.claimed(a), k.earliest(a), k.version(a), k.lock(a)]).toEqual([
      'bt:rollup:dirty:exchange-a|0xfeed|42',
      'bt:rollup:claimed:exchange-a|0xfeed|42',
      'bt:rollup:earliest:exchange-a|0xfeed|42',
      'bt:rollup:version:exchange-a|0xfeed|42',
      'bt:rollup:lock:exchange-a|0xfeed|42',
    ]);
  });

  it('an asset key reads back as its asset, even when the asset id holds the separator', () => {
    const a = { venue: 'exchange-b' as const, market: 'KX', asset: 'a|b' };
    expect(parseAssetKey(assetKey(a))).toEqual(a);
  });
});

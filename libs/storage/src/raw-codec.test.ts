import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { exchangeAPayload, exchangeBPayload, formatScaled, residueA, residueB, scaled } from './raw-codec.ts';
import { exchangeAMessage, exchangeAMessages, exchangeBMessage, exchangeBMessages } from './venue-shapes.test-support.ts';


/**
 * Decimal texts the typed columns spell back exactly, stated independently of the codec:
 * an optional minus, an integer part without leading zeros, optional decimals, at most 15
 * digits in all. Anything else must fall back to the residue.
 */
const PLAIN_DECIMAL = /^-?(0|[1-9]\d*)(\.\d+)?$/;
const plain = (t: string) => PLAIN_DECIMAL.test(t) && t.replace(/[-.]/g, '').replace(/^0+(?=\d)/, '').length <= 15 && t !== '-0' && !/^-0(\.0+)?$/.test(t);
/** Text that JSON.stringify writes as it is between quotes. */
const safe = (t: string) => !/["\\\u0000-\u001f\ud800-\udfff]/.test(t);

describe('typed raw rows', () => {
  it('store every venue shape, old and new, without residue', () => {
    const a = exchangeAMessages();
    const b = exchangeBMessages();
    expect(a.length).toBe(14);
    expect(new Set(b.map((m) => m.record.type))).toEqual(new Set(['snapshot', 'delta', 'gap', 'ticker', 'trade']));
    for (const m of a) expect(residueA(m), exchangeAPayload(m)).toBe('');
    for (const m of b) expect(residueB(m), exchangeBPayload(m)).toBe('');
  });

  it('keep a record whose keys come in another order in residue', () => {
    const [m] = exchangeAMessages([{ event_type: 'price_change', asset_id: '1', market: `0x${'ab'.repeat(32)}`, timestamp: '1729084877448', hash: 'h', changes: [{ price: '0.4', side: 'SELL', size: '3' }] }]);
    const reordered = { ...m!, event: { ...m!.event, changes: [{ size: '3', price: '0.4', side: 'SELL' as const }] } };
    expect(residueA(m!)).toBe('');
    expect(residueA(reordered)).toBe(exchangeAPayload(reordered));
  });

  it('spell a plain decimal back exactly, with its value, and refuse what they cannot spell', () => {
    fc.assert(
      fc.property(fc.oneof(fc.stringMatching(/^-?\d{1,17}(\.\d{0,19})?$/), fc.string({ maxLength: 6 })), (t) => {
        const v = scaled(t);
        if (plain(t)) {
          expect(v).not.toBeNull();
          expect(formatScaled(v!.m, v!.s)).toBe(t);
          expect(v!.m / 10 ** v!.s).toBeCloseTo(Number(t), 6);
        } else if (v !== null) {
          expect(formatScaled(v.m, v.s)).not.toBe(t);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('keep an exchange A record in typed columns exactly when its texts are plain, else its bytes in residue', () => {
    fc.assert(
      fc.property(exchangeAMessage, (m) => {
        const residue = residueA(m);
        const e = m.event;
        const decimals = [...(e.bids ?? []), ...(e.asks ?? [])].flatMap((l) => [l.price, l.size]).concat((e.changes ?? []).flatMap((c) => [c.price, c.size, c.best_bid ?? '0', c.best_ask ?? '0']));
        const strings = [e.asset_id, e.hash, ...(e.changes ?? []).map((c) => c.hash ?? '')];
        // Extras are JSON text of their own, any keys and values: they never need the residue.
        const sides = (e.changes ?? []).every((c) => c.side === 'BUY' || c.side === 'SELL');
        // An empty record hash cannot be told from "the first change's" (stored as '').
        const hashes = !(e.hash === '' && (e.changes?.[0]?.hash ?? '') !== '');
        const typedOnly = decimals.every(plain) && strings.every(safe) && sides && hashes;
        if (typedOnly) expect(residue).toBe('');
        else expect(residue).toBe(exchangeAPayload(m));
      }),
      { numRuns: 3000 },
    );
  });

  it('keep an exchange B record in typed columns exactly when its texts are plain, else its bytes in residue', () => {
    fc.assert(
      fc.property(exchangeBMessage, (m) => {
        const residue = residueB(m);
        const r = m.record;
        const decimals = [...(r.yes ?? []), ...(r.no ?? [])].flat().concat([r.price ?? '0', r.delta ?? '0']);
        const strings = [r.ticker, r.market_id ?? ''];
        if (decimals.every(plain) && strings.every(safe)) expect(residue).toBe('');
        else expect(residue).toBe(exchangeBPayload(m));
      }),
      { numRuns: 3000 },
    );
  });
});

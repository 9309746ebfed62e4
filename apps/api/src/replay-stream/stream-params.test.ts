import { describe, expect, it } from 'vitest';
import { STREAM_MAX_MARKETS, parseInterval, parseMarkets, snapshotInstants } from './stream-params.ts';

describe('replay stream parameters', () => {
  it('reads markets repeated and comma-separated, venue names as prefixes, tickers upper-cased, a market named twice once', () => {
    const r = parseMarkets(['exchange-a:123, kalshi:kx-one', 'polymarket:123', 'EXCHANGE-B:KX-ONE,exchange-b:KX-TWO']);
    expect(r).toEqual({
      ok: true,
      value: [
        { venue: 'exchange-a', id: '123', name: 'exchange-a:123' },
        { venue: 'exchange-b', id: 'KX-ONE', name: 'exchange-b:KX-ONE' },
        { venue: 'exchange-b', id: 'KX-TWO', name: 'exchange-b:KX-TWO' },
      ],
    });
  });

  it.each([
    [[]],
    [['']],
    [[' , ']],
    [['KX-ONE']],
    [['exchange-c:1']],
    [['exchange-a:0x12']],
    [['exchange-a:']],
    [['exchange-b:bad ticker!']],
    [[Array.from({ length: STREAM_MAX_MARKETS + 1 }, (_, i) => `exchange-b:K${i}`).join(',')]],
  ])('refuses %j', (raw) => {
    expect(parseMarkets(raw).ok).toBe(false);
  });

  it('takes the number of distinct markets against the limit', () => {
    expect(parseMarkets([Array.from({ length: STREAM_MAX_MARKETS + 5 }, (_, i) => `exchange-b:K${i % STREAM_MAX_MARKETS}`).join(',')]).ok).toBe(true);
  });

  it('reads snapshot intervals with units, plain numbers as seconds, from 1 s to 24 h', () => {
    expect(parseInterval('60s')).toEqual({ ok: true, value: 60_000 });
    expect(parseInterval('5m')).toEqual({ ok: true, value: 300_000 });
    expect(parseInterval('1H')).toEqual({ ok: true, value: 3_600_000 });
    expect(parseInterval('90')).toEqual({ ok: true, value: 90_000 });
    expect(parseInterval('1500ms')).toEqual({ ok: true, value: 1_500 });
    for (const bad of ['500ms', '0s', '25h', '1.5s', '-1s', 'soon', '']) expect(parseInterval(bad).ok).toBe(false);
  });

  it('places snapshot instants on multiples of the interval inside the window', () => {
    expect(snapshotInstants(1_500, 4_000, 1_000)).toEqual({ first: 2_000, count: 3 });
    expect(snapshotInstants(2_000, 2_000, 1_000)).toEqual({ first: 2_000, count: 1 });
    expect(snapshotInstants(2_001, 2_999, 1_000)).toEqual({ first: 3_000, count: 0 });
  });
});

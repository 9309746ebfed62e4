import { describe, expect, it } from 'vitest';
import type { ExchangeBRecord } from '@booktape/domain';
import { ExchangeBNormaliser } from '@booktape/venues';
import { ascendingPairs, channelFrame, deltaFrame, errorFrame, parseCommand, snapshotFrame, storedSnapshotFrame, subscribedFrame } from './exchange-b.frames.ts';

/**
 * The exchange B replay's frames: the venue's shapes (VENUE-FRAMES, the 2026-03-12 shapes),
 * and, given to the capture's own normaliser, the book content that was stored.
 */

const T = 'KXBTC-25MAR15-B100000';
const AT = new Date('2026-03-14T10:00:00Z');

/** Venue frames as the first capture received them (every shape the venue has sent). */
const VENUE: unknown[] = [
  { type: 'subscribed', id: 1, msg: { channel: 'orderbook_delta', sid: 5 } },
  { type: 'orderbook_snapshot', sid: 5, seq: 1, msg: { market_ticker: T, market_id: 'a1b2', yes_dollars_fp: [['0.4100', '20.00'], ['0.4200', '13.00']], no_dollars_fp: [['0.5400', '200.00'], ['0.5600', '3.00']] } },
  { type: 'orderbook_delta', sid: 5, seq: 2, msg: { market_ticker: T, market_id: 'a1b2', price_dollars: '0.4200', delta_fp: '50.00', side: 'yes', ts_ms: 1739548200000 } },
  { type: 'orderbook_delta', sid: 5, seq: 3, msg: { market_ticker: T, price: 46, price_dollars: '0.46', delta: -50, delta_fp: '-50.00', side: 'yes', ts: '2026-02-14T15:30:00Z' } },
  { type: 'orderbook_delta', sid: 5, seq: 4, msg: { market_ticker: T, price: 41, delta: -5, side: 'no', ts: '2026-03-14T14:15:11.73425Z', ts_ms: 1773497711734 } },
  { type: 'orderbook_delta', sid: 5, seq: 5, msg: { market_ticker: T.toLowerCase(), price_dollars: null, delta_fp: '1.00', side: 'YES' } },
  { type: 'orderbook_snapshot', sid: 5, seq: 6, msg: { market_ticker: T, yes: [[45, 100], [46, 250]], no: [[53, 120]], yes_dollars: [['0.45', 100], ['0.46', 250]], no_dollars: [['0.53', 120]] } },
  { type: 'orderbook_snapshot', sid: 5, seq: 7, msg: { market_ticker: T, market_id: '' } },
  { type: 'orderbook_snapshot', sid: 5, seq: 8, msg: { market_ticker: T, yes_dollars_fp: null, no_dollars_fp: [['0.5', '1']] } },
  { type: 'trade', sid: 5, seq: 9, msg: { trade_id: 'x1', market_ticker: T, yes_price_dollars: '0.4200', count_fp: '3.00', taker_side: 'yes', ts: 1773497711 } },
  { type: 'ticker', sid: 5, seq: 10, msg: { market_ticker: T, yes_bid_dollars: '0.4100', yes_ask_dollars: '0.4600', volume_fp: '10.00', ts_ms: 1773497711999 } },
];

/** The book content of a record: what a replay must give back (time, sid and seq are the new capture's). */
const content = (r: ExchangeBRecord) => {
  const { timestamp: _t, epoch_ms: _e, sid: _s, seq: _q, ...rest } = r;
  return rest;
};

function storedRecords(frames: unknown[]): ExchangeBRecord[] {
  const n = new ExchangeBNormaliser();
  return frames.flatMap((f) => {
    const r = n.normalise(JSON.stringify(f), AT);
    return r.kind === 'records' ? r.records : [];
  });
}

describe('exchange B replay frames', () => {
  it('give back the stored content of every venue shape through the capture normaliser', () => {
    const stored = storedRecords(VENUE);
    expect(stored.map((r) => r.type)).toEqual(['snapshot', 'delta', 'delta', 'delta', 'delta', 'snapshot', 'snapshot', 'snapshot', 'trade', 'ticker']);
    const sent = [{ type: 'subscribed', id: 1, msg: { channel: 'orderbook_delta', sid: 1 } }, ...stored.map((r, i) => JSON.parse(r.type === 'snapshot' ? storedSnapshotFrame(1, i + 1, r) : r.type === 'delta' ? deltaFrame(1, i + 1, r) : channelFrame(1, i + 1, r)) as unknown)];
    const again = storedRecords(sent);
    expect(again.map(content)).toEqual(stored.map(content));
    // The new capture's sid and seq are the replay's, continuous: no gap record.
    expect(again.map((r) => [r.sid, r.seq])).toEqual(stored.map((_, i) => [1, i + 1]));
  });

  it('are the venue newest shapes', () => {
    const [snap, delta] = storedRecords(VENUE.slice(1, 3));
    expect(JSON.parse(storedSnapshotFrame(7, 1, snap!))).toEqual({
      type: 'orderbook_snapshot', sid: 7, seq: 1,
      msg: { market_ticker: T, market_id: 'a1b2', yes_dollars_fp: [['0.4100', '20.00'], ['0.4200', '13.00']], no_dollars_fp: [['0.5400', '200.00'], ['0.5600', '3.00']] },
    });
    expect(JSON.parse(deltaFrame(7, 2, delta!))).toEqual({
      type: 'orderbook_delta', sid: 7, seq: 2,
      msg: { market_ticker: T, market_id: 'a1b2', price_dollars: '0.4200', delta_fp: '50.00', side: 'yes', ts: '2025-02-14T15:50:00.000Z', ts_ms: 1739548200000 },
    });
    // An empty book: both sides left out, as the venue does.
    expect(JSON.parse(snapshotFrame(7, 3, T, [], []))).toEqual({ type: 'orderbook_snapshot', sid: 7, seq: 3, msg: { market_ticker: T } });
    expect(ascendingPairs(['0.45', '3', '0.41', '20'])).toEqual([['0.41', '20'], ['0.45', '3']]);
    expect(JSON.parse(subscribedFrame(3, 'orderbook_delta', 9))).toEqual({ type: 'subscribed', id: 3, msg: { channel: 'orderbook_delta', sid: 9 } });
    expect(JSON.parse(errorFrame(null, 8, 'Unknown channel name'))).toEqual({ type: 'error', msg: { code: 8, msg: 'Unknown channel name' } });
  });

  it('read the commands clients send, and answer bad ones with the venue error codes', () => {
    expect(parseCommand(JSON.stringify({ id: 1, cmd: 'subscribe', params: { channels: ['orderbook_delta'], market_tickers: [T] } }))).toEqual({ kind: 'subscribe', id: 1, channels: ['orderbook_delta'], tickers: [T] });
    // The singular form some clients send.
    expect(parseCommand(JSON.stringify({ id: 2, cmd: 'subscribe', params: { channels: ['orderbook_delta', 'trade'], market_ticker: T } }))).toEqual({ kind: 'subscribe', id: 2, channels: ['orderbook_delta', 'trade'], tickers: [T] });
    expect(parseCommand(JSON.stringify({ id: 3, cmd: 'update_subscription', params: { sid: 5, action: 'get_snapshot', market_tickers: [T] } }))).toEqual({ kind: 'update', id: 3, sid: 5, action: 'get_snapshot', tickers: [T] });
    expect(parseCommand(JSON.stringify({ id: 4, cmd: 'unsubscribe', params: { sids: [5] } }))).toEqual({ kind: 'unsubscribe', id: 4, sids: [5] });
    const code = (text: string) => {
      const c = parseCommand(text);
      return c.kind === 'error' ? c.code : null;
    };
    expect(code('not json')).toBe(1);
    expect(code('[1,2]')).toBe(1);
    expect(code(JSON.stringify({ id: 1, cmd: 'subscribe', params: { market_tickers: [T] } }))).toBe(3);
    expect(code(JSON.stringify({ id: 1, cmd: 'subscribe', params: { channels: ['fill'], market_tickers: [T] } }))).toBe(8);
    expect(code(JSON.stringify({ id: 1, cmd: 'subscribe', params: { channels: ['orderbook_delta'] } }))).toBe(14);
    expect(code(JSON.stringify({ id: 1, cmd: 'subscribe', params: { channels: ['orderbook_delta'], market_tickers: [] } }))).toBe(14);
    expect(code(JSON.stringify({ id: 1, cmd: 'unsubscribe', params: {} }))).toBe(4);
    expect(code(JSON.stringify({ id: 1, cmd: 'hello' }))).toBe(5);
    expect(code(JSON.stringify({ id: 1, cmd: 'subscribe' }))).toBe(2);
    expect(code(JSON.stringify({ id: 1, cmd: 'update_subscription', params: { sids: [1, 2], action: 'get_snapshot', market_tickers: [T] } }))).toBe(12);
    expect(code(JSON.stringify({ id: 1, cmd: 'update_subscription', params: { sid: 1, market_tickers: [T] } }))).toBe(15);
  });
});

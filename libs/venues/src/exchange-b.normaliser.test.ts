import type { ExchangeBRecord } from '@booktape/domain';
import { describe, expect, it } from 'vitest';
import { ExchangeBNormaliser } from './exchange-b.normaliser.ts';
import type { ExchangeBResult } from './normalise.types.ts';

const AT = new Date('2026-03-14T15:30:00.123Z');
const TIME = { timestamp: '2026-03-14T15:30:00.123Z', epoch_ms: AT.getTime() };
const T1 = 'KXBTC-25MAR15-B100000';
const T2 = 'KXBTCD-26FEB14-T100000';

function records(r: ExchangeBResult): ExchangeBRecord[] {
  if (r.kind !== 'records') throw new Error(`expected records, got ${JSON.stringify(r)}`);
  return r.records;
}

function invalid(r: ExchangeBResult): string {
  if (r.kind !== 'invalid') throw new Error(`expected invalid, got ${JSON.stringify(r)}`);
  return r.reason;
}

function snapshotFrame(seq: number, ticker = T1, sid = 5): Record<string, unknown> {
  return {
    type: 'orderbook_snapshot',
    sid,
    seq,
    msg: { market_ticker: ticker, yes_dollars_fp: [['0.4100', '20.00']], no_dollars_fp: [['0.5400', '200.00']] },
  };
}

function deltaFrame(seq: number, ticker = T1, sid = 5): Record<string, unknown> {
  return {
    type: 'orderbook_delta',
    sid,
    seq,
    msg: { market_ticker: ticker, price_dollars: '0.4200', delta_fp: '50.00', side: 'yes', ts_ms: 1739548200000 },
  };
}

describe('ExchangeBNormaliser: snapshots', () => {
  it('reads the fixed-point dollar snapshot (since 2026-03-12)', () => {
    const frame = {
      type: 'orderbook_snapshot',
      sid: 5,
      seq: 1,
      msg: {
        market_ticker: 'kxbtc-25mar15-b100000',
        market_id: '9b0f6b43-5b68-4f7a-9f6e-2e1b0d1c0c11',
        yes_dollars_fp: [['0.4100', '20.00'], ['0.4200', '13.00']],
        no_dollars_fp: [['0.5400', '200.00'], ['0.5600', '3.00']],
      },
    };
    expect(new ExchangeBNormaliser().normalise(JSON.stringify(frame), AT)).toEqual({
      kind: 'records',
      records: [
        {
          type: 'snapshot',
          ticker: T1,
          ...TIME,
          sid: 5,
          seq: 1,
          yes: [['0.41', '20'], ['0.42', '13']],
          no: [['0.54', '200'], ['0.56', '3']],
          venue_ts: null,
          market_id: '9b0f6b43-5b68-4f7a-9f6e-2e1b0d1c0c11',
        },
      ],
    });
  });

  it('prefers the *_dollars fields over cents in the legacy snapshot', () => {
    const frame = {
      type: 'orderbook_snapshot',
      sid: 5,
      seq: 1,
      msg: { market_ticker: T1, yes: [[45, 100], [46, 250]], no: [[53, 120]], yes_dollars: [['0.45', 100], ['0.46', 250]], no_dollars: [['0.53', 120]] },
    };
    const [r] = records(new ExchangeBNormaliser().normalise(frame, AT));
    expect(r).toMatchObject({ yes: [['0.45', '100'], ['0.46', '250']], no: [['0.53', '120']] });
  });

  it('reads a cents-only snapshot as dollars', () => {
    const frame = { type: 'orderbook_snapshot', sid: 5, seq: 1, msg: { market_ticker: T1, yes: [[45, 100], [46, 250]], no: [[53, 120]] } };
    const [r] = records(new ExchangeBNormaliser().normalise(frame, AT));
    expect(r).toMatchObject({ yes: [['0.45', '100'], ['0.46', '250']], no: [['0.53', '120']] });
  });

  it('reads numbers sent as strings, and sid/seq as strings', () => {
    const frame = { type: 'orderbook_snapshot', sid: '5', seq: '1', msg: { market_ticker: T1, yes: [['45', '100']], no_dollars: [[0.53, 120.5]] } };
    const [r] = records(new ExchangeBNormaliser().normalise(frame, AT));
    expect(r).toMatchObject({ sid: 5, seq: 1, yes: [['0.45', '100']], no: [['0.53', '120.5']] });
  });

  it('treats a side the venue omits as empty', () => {
    const frame = { type: 'orderbook_snapshot', sid: 5, seq: 1, msg: { market_ticker: T1, yes_dollars_fp: [['0.41', '1']] } };
    const [r] = records(new ExchangeBNormaliser().normalise(frame, AT));
    expect(r).toMatchObject({ yes: [['0.41', '1']], no: [] });
  });

  it('keeps a null price payload as null (book unknown), falling back past null fields first', () => {
    const allNull = { type: 'orderbook_snapshot', sid: 5, seq: 1, msg: { market_ticker: T1, yes_dollars_fp: null, yes: null, no_dollars_fp: [['0.5', '1']] } };
    const [a] = records(new ExchangeBNormaliser().normalise(allNull, AT));
    expect(a).toMatchObject({ yes: null, no: [['0.5', '1']] });

    const fallback = { type: 'orderbook_snapshot', sid: 5, seq: 1, msg: { market_ticker: T1, yes_dollars_fp: null, yes: [[45, 1]] } };
    const [b] = records(new ExchangeBNormaliser().normalise(fallback, AT));
    expect(b).toMatchObject({ yes: [['0.45', '1']], no: [] });

    const nullLevel = { type: 'orderbook_snapshot', sid: 5, seq: 1, msg: { market_ticker: T1, yes_dollars_fp: [[null, '1']] } };
    const [c] = records(new ExchangeBNormaliser().normalise(nullLevel, AT));
    expect(c).toMatchObject({ yes: null });
  });

  it.each([
    [{ type: 'orderbook_snapshot', sid: 5, seq: 1 }, 'orderbook_snapshot: msg missing'],
    [{ type: 'orderbook_snapshot', sid: 5, seq: 1, msg: {} }, 'orderbook_snapshot: market_ticker missing or not a string'],
    [{ type: 'orderbook_snapshot', sid: 5, seq: 1, msg: { market_ticker: 'bad ticker!' } }, 'orderbook_snapshot: market_ticker is malformed: "bad ticker!"'],
    [{ type: 'orderbook_snapshot', sid: 5, seq: 1, msg: { market_ticker: T1, yes: 'x' } }, 'orderbook_snapshot: yes is not an array'],
    [{ type: 'orderbook_snapshot', sid: 5, seq: 1, msg: { market_ticker: T1, yes: [[45]] } }, 'orderbook_snapshot: yes[0] is not a [price, size] pair'],
    [{ type: 'orderbook_snapshot', sid: 5, seq: 1, msg: { market_ticker: T1, no_dollars_fp: [['x', '1']] } }, 'orderbook_snapshot: no_dollars_fp[0] price: not a decimal: "x"'],
    [{ type: 'orderbook_snapshot', sid: 5, seq: 1, msg: { market_ticker: T1, no_dollars_fp: [['0.5', '-1']] } }, 'orderbook_snapshot: no_dollars_fp[0] size is negative'],
    [{ type: 'orderbook_snapshot', sid: -1, seq: 1, msg: { market_ticker: T1 } }, 'orderbook_snapshot: sid is not a non-negative integer: "-1"'],
    [{ type: 'orderbook_snapshot', sid: 5, seq: 1.5, msg: { market_ticker: T1 } }, 'orderbook_snapshot: seq is not a non-negative integer: "1.5"'],
  ])('refuses a malformed snapshot: %#', (frame, reason) => {
    expect(invalid(new ExchangeBNormaliser().normalise(frame, AT))).toBe(reason);
  });
});

describe('ExchangeBNormaliser: deltas', () => {
  it('reads the fixed-point delta with ts_ms as venue time', () => {
    const frame = {
      type: 'orderbook_delta',
      sid: 5,
      seq: 2,
      msg: { market_ticker: T1, market_id: 'uuid-1', price_dollars: '0.4200', delta_fp: '50.00', side: 'yes', ts_ms: 1739548200000 },
    };
    expect(records(new ExchangeBNormaliser().normalise(frame, AT))).toEqual([
      {
        type: 'delta',
        ticker: T1,
        ...TIME,
        sid: 5,
        seq: 2,
        side: 'yes',
        price: '0.42',
        delta: '50',
        venue_ts: '2025-02-14T15:50:00.000Z',
        market_id: 'uuid-1',
      },
    ]);
  });

  it('prefers dollars and fixed point in the legacy delta, ts ISO as venue time', () => {
    const frame = {
      type: 'orderbook_delta',
      sid: 5,
      seq: 42,
      msg: { market_ticker: T1, price: 46, price_dollars: '0.46', delta: -50, delta_fp: '-50.00', side: 'yes', ts: '2026-02-14T15:30:00Z' },
    };
    const [r] = records(new ExchangeBNormaliser().normalise(frame, AT));
    expect(r).toMatchObject({ price: '0.46', delta: '-50', side: 'yes', venue_ts: '2026-02-14T15:30:00.000Z', market_id: null });
  });

  it('reads a cents-only delta, numbers as strings, ts as Unix seconds', () => {
    const frame = { type: 'orderbook_delta', sid: 5, seq: 3, msg: { market_ticker: T1, price: '46', delta: '-7', side: 'NO', ts: 1739548200 } };
    const [r] = records(new ExchangeBNormaliser().normalise(frame, AT));
    expect(r).toMatchObject({ price: '0.46', delta: '-7', side: 'no', venue_ts: '2025-02-14T15:50:00.000Z' });
  });

  it('keeps a null price payload as price null', () => {
    const frame = { type: 'orderbook_delta', sid: 5, seq: 3, msg: { market_ticker: T1, price_dollars: null, delta_fp: '5', side: 'yes' } };
    const [r] = records(new ExchangeBNormaliser().normalise(frame, AT));
    expect(r).toMatchObject({ type: 'delta', price: null, delta: '5', venue_ts: null });
  });

  it.each([
    [{ market_ticker: T1, delta_fp: '5', side: 'yes' }, 'orderbook_delta: price missing (neither price_dollars nor price)'],
    [{ market_ticker: T1, price_dollars: '0.5', side: 'yes' }, 'orderbook_delta: delta missing (neither delta_fp nor delta)'],
    [{ market_ticker: T1, price_dollars: '0.5', delta_fp: '5' }, 'orderbook_delta: side is missing'],
    [{ market_ticker: T1, price_dollars: '0.5', delta_fp: '5', side: 'maybe' }, 'orderbook_delta: side is not yes or no: "maybe"'],
    [{ market_ticker: T1, price_dollars: 'cheap', delta_fp: '5', side: 'yes' }, 'orderbook_delta: price_dollars: not a decimal: "cheap"'],
    [{ market_ticker: T1, price: 'NaN', delta_fp: '5', side: 'yes' }, 'orderbook_delta: price: not a decimal: "NaN"'],
    [{ market_ticker: T1, price_dollars: '0.5', delta_fp: '5', side: 'yes', ts: 'yesterday' }, 'orderbook_delta: ts is neither ISO 8601 nor a Unix time: "yesterday"'],
    [{ market_ticker: T1, price_dollars: '0.5', delta_fp: '5', side: 'yes', ts_ms: 'x' }, 'orderbook_delta: ts_ms is not integer milliseconds: "x"'],
  ])('refuses a malformed delta: %#', (msg, reason) => {
    expect(invalid(new ExchangeBNormaliser().normalise({ type: 'orderbook_delta', sid: 5, seq: 2, msg }, AT))).toBe(reason);
  });
});

describe('ExchangeBNormaliser: control and garbage', () => {
  it('answers subscribed, ok, error and unsubscribed as control', () => {
    const n = new ExchangeBNormaliser();
    expect(n.normalise('{"type":"subscribed","id":1,"msg":{"channel":"orderbook_delta","sid":5}}', AT)).toEqual({
      kind: 'control',
      name: 'subscribed',
      detail: { sid: 5, channel: 'orderbook_delta', id: 1 },
    });
    expect(n.normalise({ id: 2, type: 'ok', msg: { market_tickers: [T1] } }, AT)).toEqual({
      kind: 'control',
      name: 'ok',
      detail: { id: 2, msg: { market_tickers: [T1] } },
    });
    expect(n.normalise({ id: 3, type: 'error', msg: { code: 6, msg: 'Already subscribed' } }, AT)).toEqual({
      kind: 'control',
      name: 'error',
      detail: { id: 3, code: 6, msg: 'Already subscribed' },
    });
    expect(n.normalise({ type: 'unsubscribed', sid: 5 }, AT)).toMatchObject({ kind: 'control', name: 'unsubscribed', detail: { sid: 5 } });
  });

  it('answers an unknown type without market data as control, with market data as invalid', () => {
    const n = new ExchangeBNormaliser();
    expect(n.normalise({ type: 'heartbeat' }, AT)).toMatchObject({ kind: 'control', name: 'heartbeat' });
    expect(invalid(n.normalise({ type: 'ticker', sid: 9, msg: { market_ticker: T1, price: 40 } }, AT))).toBe(
      'unsupported message type "ticker" with market data',
    );
  });

  it.each([
    ['garbage', 'not JSON: "garbage"'],
    ['', 'empty frame'],
    ['17', 'JSON number is not a message object'],
    ['[]', 'JSON array is not a message object'],
    ['{"sid":5}', 'type missing or not a string'],
    ['{"type":"subscribed","msg":{}}', 'subscribed without an integer sid'],
  ])('refuses %j', (text, reason) => {
    expect(invalid(new ExchangeBNormaliser().normalise(text, AT))).toBe(reason);
  });

  it('refuses an invalid receive time', () => {
    expect(invalid(new ExchangeBNormaliser().normalise(deltaFrame(1), new Date('nope')))).toBe('receivedAt is not a valid date');
  });
});

describe('ExchangeBNormaliser: seq gaps', () => {
  it('emits a gap record for every ticker of the sid before the message that skipped', () => {
    const n = new ExchangeBNormaliser();
    n.normalise({ type: 'subscribed', id: 1, msg: { channel: 'orderbook_delta', sid: 5 } }, AT);
    expect(records(n.normalise(snapshotFrame(1, T1), AT))).toHaveLength(1);
    expect(records(n.normalise(snapshotFrame(2, T2), AT))).toHaveLength(1);
    expect(records(n.normalise(deltaFrame(3, T1), AT))).toHaveLength(1);
    // seq 4 and 5 are lost
    const later = new Date(AT.getTime() + 5);
    const out = records(n.normalise(deltaFrame(6, T2), later));
    const time = { timestamp: later.toISOString(), epoch_ms: later.getTime() };
    expect(out.map((r) => r.type)).toEqual(['gap', 'gap', 'delta']);
    expect(out[0]).toEqual({ type: 'gap', ticker: T1, ...time, sid: 5, seq: 6, expected_seq: 4 });
    expect(out[1]).toEqual({ type: 'gap', ticker: T2, ...time, sid: 5, seq: 6, expected_seq: 4 });
    expect(out[2]).toMatchObject({ type: 'delta', ticker: T2, seq: 6 });
    // and counting resumes from the message that arrived
    expect(records(n.normalise(deltaFrame(7, T1), later))).toHaveLength(1);
  });

  it('does not mix subscriptions: each sid counts alone', () => {
    const n = new ExchangeBNormaliser();
    records(n.normalise(snapshotFrame(1, T1, 5), AT));
    records(n.normalise(snapshotFrame(1, T2, 6), AT));
    expect(records(n.normalise(deltaFrame(2, T1, 5), AT))).toHaveLength(1);
    expect(records(n.normalise(deltaFrame(2, T2, 6), AT))).toHaveLength(1);
  });

  it('treats seq restarting at 1 after a new subscribed as no gap', () => {
    const n = new ExchangeBNormaliser();
    n.normalise({ type: 'subscribed', id: 1, msg: { channel: 'orderbook_delta', sid: 1 } }, AT);
    records(n.normalise(snapshotFrame(1, T1, 1), AT));
    records(n.normalise(deltaFrame(2, T1, 1), AT));
    records(n.normalise(deltaFrame(3, T1, 1), AT));
    // reconnect: the new connection reuses sid 1 and counts from 1 again
    expect(n.normalise({ type: 'subscribed', id: 1, msg: { channel: 'orderbook_delta', sid: 1 } }, AT).kind).toBe('control');
    expect(n.tickersOf(1)).toEqual([]);
    expect(records(n.normalise(snapshotFrame(1, T1, 1), AT)).map((r) => r.type)).toEqual(['snapshot']);
  });

  it('sees a restart without subscribed as a gap', () => {
    const n = new ExchangeBNormaliser();
    records(n.normalise(snapshotFrame(1, T1), AT));
    records(n.normalise(deltaFrame(2, T1), AT));
    expect(records(n.normalise(snapshotFrame(1, T1), AT)).map((r) => r.type)).toEqual(['gap', 'snapshot']);
  });

  it('shows a lost (invalid) delta as a gap at the next message', () => {
    const n = new ExchangeBNormaliser();
    records(n.normalise(snapshotFrame(1, T1), AT));
    const bad = { type: 'orderbook_delta', sid: 5, seq: 2, msg: { market_ticker: T1, price_dollars: 'x', delta_fp: '1', side: 'yes' } };
    expect(n.normalise(bad, AT).kind).toBe('invalid');
    expect(records(n.normalise(deltaFrame(3, T1), AT)).map((r) => [r.type, r.expected_seq])).toEqual([
      ['gap', 2],
      ['delta', undefined],
    ]);
  });

  it('counts control messages that carry a seq, and reports a gap they reveal as records', () => {
    const n = new ExchangeBNormaliser();
    records(n.normalise(snapshotFrame(1, T1), AT));
    expect(n.normalise({ id: 2, type: 'ok', sid: 5, seq: 2, msg: {} }, AT).kind).toBe('control');
    expect(records(n.normalise(deltaFrame(3, T1), AT))).toHaveLength(1);
    expect(records(n.normalise({ id: 3, type: 'ok', sid: 5, seq: 9, msg: {} }, AT))).toEqual([
      { type: 'gap', ticker: T1, ...TIME, sid: 5, seq: 9, expected_seq: 4 },
    ]);
  });

  it('forgets everything on reset', () => {
    const n = new ExchangeBNormaliser();
    records(n.normalise(snapshotFrame(1, T1), AT));
    n.reset();
    expect(records(n.normalise(deltaFrame(7, T1), AT))).toHaveLength(1);
  });
});

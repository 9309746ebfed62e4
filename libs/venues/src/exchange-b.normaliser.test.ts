import { describe, expect, it } from 'vitest';
import { ExchangeBNormaliser } from './exchange-b.normaliser.ts';
import { invalid, records } from './normalise.test-support.ts';

const AT = new Date('2026-03-14T15:30:00.123Z');
const TIME = { timestamp: '2026-03-14T15:30:00.123Z', epoch_ms: AT.getTime() };
const T1 = 'KXBTC-25MAR15-B100000';
const T2 = 'KXBTCD-26FEB14-T100000';

/** A normaliser that saw the `subscribed` of `sid`: its messages are tracked from the start. */
function subscribed(sid = 5): ExchangeBNormaliser {
  const n = new ExchangeBNormaliser();
  n.normalise({ type: 'subscribed', id: 1, msg: { channel: 'orderbook_delta', sid } }, AT);
  return n;
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
          yes: [['0.4100', '20.00'], ['0.4200', '13.00']],
          no: [['0.5400', '200.00'], ['0.5600', '3.00']],
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

  it('reads a snapshot without yes/no arrays as an empty (known) book, market_id "" accepted', () => {
    // As recorded from the venue (docs/rules/venue-frames.md, "Seen in real recordings").
    const frame = '{"type":"orderbook_snapshot","sid":1,"seq":1,"msg":{"market_ticker":"KXBTCD-26FEB14-T100000","market_id":""}}';
    expect(records(new ExchangeBNormaliser().normalise(frame, AT))).toEqual([
      { type: 'snapshot', ticker: T2, ...TIME, sid: 1, seq: 1, yes: [], no: [], venue_ts: null, market_id: null },
    ]);
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
    expect(records(subscribed().normalise(frame, AT))).toEqual([
      {
        type: 'delta',
        ticker: T1,
        ...TIME,
        sid: 5,
        seq: 2,
        side: 'yes',
        price: '0.4200',
        delta: '50.00',
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
    const [r] = records(subscribed().normalise(frame, AT));
    expect(r).toMatchObject({ price: '0.46', delta: '-50.00', side: 'yes', venue_ts: '2026-02-14T15:30:00.000Z', market_id: null });
  });

  it('reads a cents-only delta, numbers as strings, ts as Unix seconds', () => {
    const frame = { type: 'orderbook_delta', sid: 5, seq: 3, msg: { market_ticker: T1, price: '46', delta: '-7', side: 'NO', ts: 1739548200 } };
    const [r] = records(subscribed().normalise(frame, AT));
    expect(r).toMatchObject({ price: '0.46', delta: '-7', side: 'no', venue_ts: '2025-02-14T15:50:00.000Z' });
  });

  it('keeps a null price payload as price null', () => {
    const frame = { type: 'orderbook_delta', sid: 5, seq: 3, msg: { market_ticker: T1, price_dollars: null, delta_fp: '5', side: 'yes' } };
    const [r] = records(subscribed().normalise(frame, AT));
    expect(r).toMatchObject({ type: 'delta', price: null, delta: '5', venue_ts: null });
  });

  it('reads a delta with both ts (ISO, microseconds, trailing zeros trimmed) and ts_ms, ts_ms first', () => {
    const frame = {
      type: 'orderbook_delta',
      sid: 1,
      seq: 2,
      msg: { market_ticker: T1, market_id: '', price_dollars: '0.4200', delta_fp: '-3.00', side: 'no', ts: '2026-02-14T14:15:11.73425Z', ts_ms: 1771078511734 },
    };
    const [r] = records(subscribed(1).normalise(frame, AT));
    expect(r).toMatchObject({ type: 'delta', price: '0.4200', delta: '-3.00', side: 'no', venue_ts: '2026-02-14T14:15:11.734Z', market_id: null });
    const { ts_ms: _ms, ...isoOnly } = frame.msg;
    const [q] = records(subscribed(1).normalise({ ...frame, msg: isoOnly }, AT));
    expect(q?.venue_ts).toBe('2026-02-14T14:15:11.734Z');
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
    expect(invalid(n.normalise({ type: 'market_lifecycle', sid: 9, msg: { market_ticker: T1, price: 40 } }, AT))).toBe(
      'unsupported message type "market_lifecycle" with market data',
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
    // The receive time is exchange B's event time: after the store's last date it is refused.
    expect(invalid(new ExchangeBNormaliser().normalise(deltaFrame(1), new Date(Date.UTC(2150, 0, 1))))).toBe(
      'receive time 2150-01-01T00:00:00.000Z is outside 1970..2149-06-06, the dates the store holds',
    );
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

  it('forgets everything on reset: the next connection is tracked afresh', () => {
    const n = new ExchangeBNormaliser();
    records(n.normalise(snapshotFrame(1, T1), AT));
    records(n.normalise(deltaFrame(2, T1), AT));
    n.reset();
    expect(n.tickersOf(5)).toEqual([]);
    // seq 1 on sid 5 again: no gap (the old stream's seq 2 is forgotten)
    expect(records(n.normalise(snapshotFrame(1, T1), AT)).map((r) => r.type)).toEqual(['snapshot']);
  });

  it('counts ok acknowledgements as the venue sends them (real shape), so no false gap follows', () => {
    const n = subscribed(1);
    records(n.normalise(snapshotFrame(106, T1, 1), AT));
    records(n.normalise(deltaFrame(107, T1, 1), AT));
    expect(n.normalise('{"type":"ok","id":2,"sid":1,"seq":108,"msg":{"market_tickers":["KXBTC-25MAR15-B100000"]}}', AT)).toMatchObject({
      kind: 'control',
      name: 'ok',
      detail: { id: 2, sid: 1, seq: 108 },
    });
    expect(records(n.normalise(deltaFrame(109, T1, 1), AT)).map((r) => r.type)).toEqual(['delta']);
  });

  it('counts unsubscribed with a seq: a skip before it is a gap, then the sid is forgotten', () => {
    const n = subscribed(1);
    records(n.normalise(snapshotFrame(1, T1, 1), AT));
    expect(n.normalise({ type: 'unsubscribed', id: 4, sid: 1, seq: 2 }, AT)).toMatchObject({ kind: 'control', name: 'unsubscribed', detail: { sid: 1 } });
    const m = subscribed(1);
    records(m.normalise(snapshotFrame(1, T1, 1), AT));
    expect(records(m.normalise({ type: 'unsubscribed', id: 4, sid: 1, seq: 5 }, AT))).toEqual([
      { type: 'gap', ticker: T1, ...TIME, sid: 1, seq: 5, expected_seq: 2 },
    ]);
    expect(m.tickersOf(1)).toEqual([]);
  });

  it('gives a ticker added to a running subscription its snapshot at the running seq, with no gap', () => {
    const n = subscribed(1);
    records(n.normalise(snapshotFrame(1, T1, 1), AT));
    for (let seq = 2; seq <= 80_132; seq++) records(n.normalise(deltaFrame(seq, T1, 1), AT));
    // update_subscription add_markets: acknowledged at 80133, the new ticker's snapshot at 80134
    expect(n.normalise({ type: 'ok', id: 3, sid: 1, seq: 80_133, msg: { market_tickers: [T2] } }, AT).kind).toBe('control');
    expect(records(n.normalise(snapshotFrame(80_134, T2, 1), AT)).map((r) => [r.type, r.ticker])).toEqual([['snapshot', T2]]);
    expect(records(n.normalise(deltaFrame(80_135, T2, 1), AT)).map((r) => r.type)).toEqual(['delta']);
    expect(n.tickersOf(1)).toEqual([T1, T2]);
  });

  it('reports one honest gap per ticker when the stream starts mid-session, then tracks normally', () => {
    const n = new ExchangeBNormaliser(); // no `subscribed` seen: e.g. a capture file cut mid-connection
    const out1 = records(n.normalise(deltaFrame(500, T1), AT));
    expect(out1).toEqual([
      { type: 'gap', ticker: T1, ...TIME, sid: 5, seq: 500 },
      expect.objectContaining({ type: 'delta', ticker: T1, seq: 500 }),
    ]);
    expect(records(n.normalise(deltaFrame(501, T1), AT)).map((r) => r.type)).toEqual(['delta']);
    // A ticker whose first message is a snapshot is known: no gap.
    expect(records(n.normalise(snapshotFrame(502, T2), AT)).map((r) => r.type)).toEqual(['snapshot']);
    expect(records(n.normalise(deltaFrame(503, T2), AT)).map((r) => r.type)).toEqual(['delta']);
    // A real skip later is still a gap, once per ticker of the sid.
    expect(records(n.normalise(deltaFrame(510, T1), AT)).map((r) => [r.type, r.ticker, r.expected_seq])).toEqual([
      ['gap', T1, 504],
      ['gap', T2, 504],
      ['delta', T1, undefined],
    ]);
  });

  it('starts mid-session on an ok: the first delta of each ticker still gets its gap', () => {
    const n = new ExchangeBNormaliser();
    expect(n.normalise({ type: 'ok', id: 2, sid: 1, seq: 108, msg: {} }, AT).kind).toBe('control');
    expect(records(n.normalise(deltaFrame(109, T1, 1), AT)).map((r) => r.type)).toEqual(['gap', 'delta']);
    expect(records(n.normalise(deltaFrame(110, T2, 1), AT)).map((r) => r.type)).toEqual(['gap', 'delta']);
    expect(records(n.normalise(deltaFrame(111, T1, 1), AT)).map((r) => r.type)).toEqual(['delta']);
  });

  it('a stream whose first message is seq 1 started at the start: no gap', () => {
    const n = new ExchangeBNormaliser();
    expect(records(n.normalise(deltaFrame(1, T1), AT)).map((r) => r.type)).toEqual(['delta']);
  });
});

describe('ExchangeBNormaliser: ticker and trade channels', () => {
  const tickerMsg = {
    type: 'ticker',
    sid: 2,
    seq: 7,
    msg: {
      market_ticker: 'kxbtc-25mar15-b100000',
      market_id: 'uuid-1',
      price_dollars: '0.4300',
      yes_bid_dollars: '0.4200',
      yes_ask_dollars: '0.4400',
      yes_bid_size_fp: '13.00',
      volume_fp: '1200.00',
      ts: 1773502199,
      ts_ms: 1773502199876,
    },
  };
  const tradeMsg = {
    type: 'trade',
    sid: 3,
    seq: 1,
    msg: { trade_id: 'd91bc706', market_ticker: T2, yes_price_dollars: '0.3600', no_price_dollars: '0.6400', count_fp: '136.00', taker_side: 'no', ts: 1773502199 },
  };

  it('stores a ticker message as a non-book record with the msg as received', () => {
    expect(records(subscribed(2).normalise(JSON.stringify(tickerMsg), AT))).toEqual([
      { type: 'ticker', ticker: T1, ...TIME, sid: 2, seq: 7, venue_ts: '2026-03-14T15:29:59.876Z', data: tickerMsg.msg },
    ]);
  });

  it('stores a trade message, ts in seconds as venue time', () => {
    const [r] = records(subscribed(3).normalise(tradeMsg, AT));
    expect(r).toEqual({ type: 'trade', ticker: T2, ...TIME, sid: 3, seq: 1, venue_ts: '2026-03-14T15:29:59.000Z', data: tradeMsg.msg });
  });

  it('lets them use up a seq, and never names their tickers in book gaps', () => {
    const n = subscribed(2);
    records(n.normalise({ ...tickerMsg, seq: 1 }, AT));
    expect(records(n.normalise({ ...tickerMsg, seq: 2 }, AT)).map((r) => r.type)).toEqual(['ticker']);
    // a skip on the ticker sid makes no book unknown
    expect(records(n.normalise({ ...tickerMsg, seq: 9 }, AT)).map((r) => r.type)).toEqual(['ticker']);
    expect(n.tickersOf(2)).toEqual([]);
  });

  it.each([
    [{ type: 'ticker', sid: 2, seq: 1, msg: { price_dollars: '0.4' } }, 'ticker: market_ticker missing or not a string'],
    [{ type: 'trade', sid: 2, seq: 1 }, 'trade: msg missing'],
    [{ type: 'trade', sid: 2, seq: 1, msg: { market_ticker: T1, ts: 'soon' } }, 'trade: ts is neither ISO 8601 nor a Unix time: "soon"'],
  ])('refuses a malformed channel message: %#', (frame, reason) => {
    expect(invalid(new ExchangeBNormaliser().normalise(frame, AT))).toBe(reason);
  });
});

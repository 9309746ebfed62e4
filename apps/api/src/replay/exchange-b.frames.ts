import type { ExchangeBRecord } from '@booktape/domain';

/**
 * Exchange B replay: the trade-api v2 commands a client sends, and stored records back into
 * the frames the venue sends (docs/rules/venue-frames.md, ../shared VENUE-FRAMES). The
 * stored record is the capture's 2.2 record (`type`, `ticker`, `sid`, `seq`, `yes`/`no`,
 * `side`/`price`/`delta`, `venue_ts`, `market_id`, `data`); the frames are chosen so that the
 * capture's normaliser, given them, stores the same book content again:
 *
 * - `orderbook_snapshot`: the sides under `yes_dollars_fp` / `no_dollars_fp` (the venue's
 *   newest shape; the stored text is dollars already), ascending, best last; an empty side
 *   left out as the venue does; a null side (the venue's null price payload) sent as null.
 * - `orderbook_delta`: `price_dollars`, `delta_fp`, `side`, and the venue's time as `ts_ms`
 *   and `ts` where it was stored; nulls as stored.
 * - `trade` / `ticker`: the venue's `msg` as stored.
 *
 * `sid` and `seq` are the replay's own (a new connection numbers again), never the stored ones.
 */

export type Channel = 'orderbook_delta' | 'trade' | 'ticker';
export const CHANNELS: readonly Channel[] = ['orderbook_delta', 'trade', 'ticker'];

/** The venue's error codes and texts, as its documentation lists them. */
export const ERR = {
  process: 1,
  params: 2,
  channels: 3,
  sids: 4,
  command: 5,
  unknownSid: 7,
  channelName: 8,
  oneSid: 12,
  action: 13,
  ticker: 14,
  actionRequired: 15,
  market: 16,
} as const;

export type Command =
  | { kind: 'subscribe'; id: number | null; channels: Channel[]; tickers: string[] }
  | { kind: 'unsubscribe'; id: number | null; sids: unknown[] }
  | { kind: 'update'; id: number | null; sid: number; action: unknown; tickers: string[] | null }
  | { kind: 'error'; id: number | null; code: number; msg: string };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `market_tickers` (a list, or one string) or `market_ticker`; null when absent, empty or not strings. */
function tickersOf(params: Record<string, unknown>): string[] | null {
  const raw = params.market_tickers ?? params.market_ticker;
  const list = typeof raw === 'string' ? [raw] : raw;
  if (!Array.isArray(list) || list.length === 0 || !list.every((t) => typeof t === 'string' && t.length <= 200)) return null;
  return list as string[];
}

/** One text message from the client as a command, or the venue's error for it. */
export function parseCommand(text: string): Command {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return { kind: 'error', id: null, code: ERR.process, msg: 'Unable to process message' };
  }
  if (!isObject(v)) return { kind: 'error', id: null, code: ERR.process, msg: 'Unable to process message' };
  const id = typeof v.id === 'number' && Number.isSafeInteger(v.id) ? v.id : null;
  const known = v.cmd === 'subscribe' || v.cmd === 'unsubscribe' || v.cmd === 'update_subscription';
  if (!known) return { kind: 'error', id, code: ERR.command, msg: 'Unknown command' };
  if (!isObject(v.params)) return { kind: 'error', id, code: ERR.params, msg: 'Params required' };
  const params = v.params;
  switch (v.cmd) {
    case 'subscribe': {
      const channels = params.channels;
      if (!Array.isArray(channels) || channels.length === 0) return { kind: 'error', id, code: ERR.channels, msg: 'Channels required' };
      if (!channels.every((c) => typeof c === 'string' && (CHANNELS as readonly string[]).includes(c))) return { kind: 'error', id, code: ERR.channelName, msg: 'Unknown channel name' };
      const tickers = tickersOf(params);
      if (tickers === null) return { kind: 'error', id, code: ERR.ticker, msg: 'Market Ticker required' };
      return { kind: 'subscribe', id, channels: [...new Set(channels as Channel[])], tickers };
    }
    case 'unsubscribe': {
      const sids = params.sids;
      if (!Array.isArray(sids) || sids.length === 0) return { kind: 'error', id, code: ERR.sids, msg: 'Subscription IDs required' };
      return { kind: 'unsubscribe', id, sids };
    }
    default: {
      const sid = params.sid ?? (Array.isArray(params.sids) && params.sids.length === 1 ? params.sids[0] : undefined);
      if (typeof sid !== 'number') return { kind: 'error', id, code: ERR.oneSid, msg: 'Exactly one subscription ID is required' };
      if (params.action === undefined) return { kind: 'error', id, code: ERR.actionRequired, msg: 'Action required' };
      return { kind: 'update', id, sid, action: params.action, tickers: tickersOf(params) };
    }
  }
}

const idPart = (id: number | null) => (id === null ? '' : `"id":${id},`);

export function errorFrame(id: number | null, code: number, msg: string): string {
  return `{${idPart(id)}"type":"error","msg":{"code":${code},"msg":${JSON.stringify(msg)}}}`;
}

export function subscribedFrame(id: number | null, channel: Channel, sid: number): string {
  return `{${idPart(id)}"type":"subscribed","msg":{"channel":"${channel}","sid":${sid}}}`;
}

export function unsubscribedFrame(id: number | null, sid: number): string {
  return `{${idPart(id)}"type":"unsubscribed","sid":${sid}}`;
}

/** The acknowledgement of update_subscription; it uses up a seq of the sid, as the venue's does. */
export function okFrame(id: number | null, sid: number, seq: number, tickers: readonly string[]): string {
  return `{${idPart(id)}"sid":${sid},"seq":${seq},"type":"ok","msg":{"market_tickers":${JSON.stringify(tickers)}}}`;
}

type Levels = [string, string][];

/** A snapshot: sides ascending (best last); undefined or empty: left out; null: sent as null (unknown book). */
export function snapshotFrame(sid: number, seq: number, ticker: string, yes: Levels | null | undefined, no: Levels | null | undefined, extra: { marketId?: string | null | undefined; venueTs?: string | null | undefined } = {}): string {
  const msg: Record<string, unknown> = { market_ticker: ticker };
  if (extra.marketId) msg.market_id = extra.marketId;
  if (yes === null || (yes !== undefined && yes.length > 0)) msg.yes_dollars_fp = yes;
  if (no === null || (no !== undefined && no.length > 0)) msg.no_dollars_fp = no;
  const ms = extra.venueTs ? Date.parse(extra.venueTs) : NaN;
  if (Number.isFinite(ms)) msg.ts_ms = ms;
  return JSON.stringify({ type: 'orderbook_snapshot', sid, seq, msg });
}

/** A stored snapshot record as the venue's snapshot. */
export function storedSnapshotFrame(sid: number, seq: number, r: ExchangeBRecord): string {
  return snapshotFrame(sid, seq, r.ticker, r.yes, r.no, { marketId: r.market_id, venueTs: r.venue_ts });
}

/** A stored delta record as the venue's delta. */
export function deltaFrame(sid: number, seq: number, r: ExchangeBRecord): string {
  const msg: Record<string, unknown> = { market_ticker: r.ticker };
  if (r.market_id) msg.market_id = r.market_id;
  msg.price_dollars = r.price ?? null;
  msg.delta_fp = r.delta ?? null;
  msg.side = r.side;
  const ms = r.venue_ts ? Date.parse(r.venue_ts) : NaN;
  if (Number.isFinite(ms)) {
    msg.ts = r.venue_ts;
    msg.ts_ms = ms;
  }
  return JSON.stringify({ type: 'orderbook_delta', sid, seq, msg });
}

/** A stored `trade` / `ticker` record as the venue's message: its `msg` as stored. */
export function channelFrame(sid: number, seq: number, r: ExchangeBRecord): string {
  return JSON.stringify({ type: r.type, sid, seq, msg: r.data ?? { market_ticker: r.ticker } });
}

/** Flat `[price, size, price, size, …]`, best (highest) first, as the venue's ascending pairs. */
export function ascendingPairs(flatBestFirst: readonly string[]): Levels {
  const out: Levels = [];
  for (let i = flatBestFirst.length - 2; i >= 0; i -= 2) out.push([flatBestFirst[i]!, flatBestFirst[i + 1]!]);
  return out;
}

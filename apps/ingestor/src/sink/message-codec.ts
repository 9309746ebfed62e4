import { VENUES, type CaptureGap, type RawMessage, type Venue } from '@booktape/domain';

/**
 * Kafka value of a raw topic: a JSON array of the records one frame produced for one market
 * (one message per market and frame keeps a market's order and divides the message count).
 * Decoding checks the fields the sink relies on; anything else is the producer's business.
 */
export function encodeRawMessages(messages: RawMessage[]): string {
  return JSON.stringify(messages);
}

/** Merges encoded arrays in order: the producer's coalesce function for raw topics. */
export function concatRawMessages(values: string[]): string {
  return `[${values.map((v) => v.slice(1, -1)).join(',')}]`;
}

export type Decoded = { ok: true; messages: RawMessage[] } | { ok: false; reason: string };

const isStr = (v: unknown): v is string => typeof v === 'string';
const isTime = (v: unknown): v is string => isStr(v) && !Number.isNaN(Date.parse(v));
/** The latest instant a JS Date (and so every date we derive) can hold. */
const MAX_MS = 8.64e15;

export function decodeRawMessages(venue: Venue, value: Buffer | null): Decoded {
  if (value === null) return { ok: false, reason: 'empty message value' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.toString('utf8'));
  } catch (e) {
    return { ok: false, reason: `value is not JSON: ${(e as Error).message}` };
  }
  const list = Array.isArray(parsed) ? parsed : [parsed];
  for (const [i, m] of list.entries()) {
    const reason = check(venue, m);
    if (reason) return { ok: false, reason: `record ${i}: ${reason}` };
  }
  return { ok: true, messages: list as RawMessage[] };
}

function check(venue: Venue, m: unknown): string | null {
  if (typeof m !== 'object' || m === null) return 'not an object';
  const r = m as Record<string, unknown>;
  if (r.venue !== venue) return `venue ${String(r.venue)} on the ${venue} topic`;
  if (!isStr(r.received_at) || Number.isNaN(Date.parse(r.received_at))) return 'bad received_at';
  if (!isStr(r.ingest_seq) || !/^\d{1,20}$/.test(r.ingest_seq)) return 'bad ingest_seq';
  if (!isStr(r.dedup_id) || r.dedup_id === '') return 'bad dedup_id';
  if (typeof r.worker_id !== 'number') return 'bad worker_id';
  if (venue === 'exchange-a') {
    const e = r.event as Record<string, unknown> | undefined;
    if (!e || !isStr(e.market) || !isStr(e.asset_id) || !isStr(e.event_type) || !isStr(e.hash)) return 'bad event';
    if (!isStr(e.timestamp) || !/^\d{1,15}$/.test(e.timestamp)) return 'bad event timestamp';
  } else {
    const b = r.record as Record<string, unknown> | undefined;
    if (!b || !isStr(b.ticker) || !isStr(b.type) || !isStr(b.timestamp)) return 'bad record';
    if (!Number.isSafeInteger(b.epoch_ms) || (b.epoch_ms as number) < 0 || (b.epoch_ms as number) > MAX_MS) return 'bad record epoch_ms';
  }
  return null;
}

export type DecodedGap = { ok: true; gap: CaptureGap } | { ok: false; reason: string };

/** A capture gap message; one that does not fit would fail its insert forever, so it is refused here. */
export function decodeCaptureGap(value: Buffer | null): DecodedGap {
  let g: unknown;
  try {
    g = JSON.parse(value?.toString('utf8') ?? 'null');
  } catch {
    return { ok: false, reason: 'gap message is not JSON' };
  }
  if (typeof g !== 'object' || g === null) return { ok: false, reason: 'gap message is not an object' };
  const r = g as Record<string, unknown>;
  if (!VENUES.includes(r.venue as Venue)) return { ok: false, reason: `gap of unknown venue ${String(r.venue)}` };
  if (!isStr(r.connection_id) || !isStr(r.reason)) return { ok: false, reason: 'gap without connection_id or reason' };
  if (!isTime(r.started_at) || (r.ended_at !== null && !isTime(r.ended_at))) return { ok: false, reason: 'gap with a bad started_at or ended_at' };
  if (!Array.isArray(r.markets) || !r.markets.every(isStr)) return { ok: false, reason: 'gap markets must be strings' };
  return { ok: true, gap: r as unknown as CaptureGap };
}

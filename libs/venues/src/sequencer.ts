import { MAX_RECEIVED_MS, isoMs } from '@booktape/domain';
import type {
  ExchangeAEvent,
  ExchangeAMessage,
  ExchangeBMessage,
  ExchangeBRecord,
  RawMessage,
  Venue,
} from '@booktape/domain';
import { canonicalJson, contentHash, sha1Hex } from './content-hash.ts';

const FRAME_SHIFT = 11n; // 2^11 records per frame slot
const MS_SHIFT = 23n; // 2^12 frame slots per millisecond
const SLOT = 1n << FRAME_SHIFT;
const SLOT_RECORDS = Number(SLOT);
const MAX_MS = MAX_RECEIVED_MS; // ms * 2^23 must fit UInt64

/**
 * The receive time (Unix ms) in an ingest_seq: its bits above the frame slot and record
 * index. Exact unless that millisecond's slots overflowed (Sequencer: then a later one).
 */
export function receivedMsOfSeq(seq: bigint): number {
  return Number(seq >> MS_SHIFT);
}

/** The frame of an ingest_seq: the records of one venue frame share the bits above the record index (the low 11). */
export function frameOfSeq(seq: bigint): bigint {
  return seq >> FRAME_SHIFT;
}

const FRAME_BITS = Number(FRAME_SHIFT);
/** 2^(32 - 11): one of an ingest_seq's high 32 bits, in frameOfSeq's units. */
const HI_FRAMES = 2 ** (32 - FRAME_BITS);

/**
 * frameOfSeq of an ingest_seq given as its two UInt32 halves (as RowBinary reads a UInt64),
 * as a number: exact (it is below 2^53), with no BigInt made per row.
 */
export function frameOfSeqHalves(hi: number, lo: number): number {
  return hi * HI_FRAMES + (lo >>> FRAME_BITS);
}

/**
 * Stamps normalised records with lineage (records.ts `Lineage`).
 *
 * ingest_seq = received_ms·2^23 + frameIndexWithinMs·2^11 + recordIndex, counted per venue.
 * One frame takes one 2^11 slot (an empty frame too: every `stamp` call is a frame). The
 * counters never wrap: a frame with more than 2048 records spills into the next slots, and
 * more than 4096 slots in one millisecond spill into the next millisecond's range, which
 * later frames then continue after. Likewise a clock that steps back continues after the
 * last number given. So ingest_seq is strictly increasing for a venue within one
 * Sequencer, and equals the formula exactly whenever nothing overflows and time does not
 * go back. Deterministic: the same frames, in the same order, with the same receive times,
 * give the same messages.
 *
 * dedup_id:
 * - A: a duplicate is the same message again, so identity is content, not the venue hash
 *   alone (the venue repeats one hash on different frames of a trade burst, issue 9).
 *   `book` / `price_change`: sha1 of the canonical JSON of the hash, event type, asset,
 *   timestamp and the levels or changes as received (per-entry hashes and claims included).
 *   Every other event type: the content hash of the whole event. Key order never matters
 *   (canonical JSON); a byte-identical re-send gives the same id. Storage scopes it further
 *   by (market, date, timestamp, asset_id, event_type).
 * - B: sha1 of `${epoch_ms}|${sid}|${seq}|${type}|${ticker}|${expected_seq ?? ''}`; for a
 *   record without sid or seq, that text plus `|` and the record's canonical JSON.
 */
export class Sequencer {
  private readonly next = new Map<Venue, bigint>();

  constructor(readonly workerId: number) {
    if (!Number.isInteger(workerId) || workerId < 0 || workerId > 0xffff_ffff) {
      throw new RangeError(`worker id must be a UInt32, got ${workerId}`);
    }
  }

  stamp(receivedAt: Date, records: readonly ExchangeAEvent[], venue: 'exchange-a'): ExchangeAMessage[];
  stamp(receivedAt: Date, records: readonly ExchangeBRecord[], venue: 'exchange-b'): ExchangeBMessage[];
  stamp(receivedAt: Date, records: readonly (ExchangeAEvent | ExchangeBRecord)[], venue: Venue): RawMessage[];
  stamp(receivedAt: Date, records: readonly (ExchangeAEvent | ExchangeBRecord)[], venue: Venue): RawMessage[] {
    const ms = receivedAt.getTime();
    if (!Number.isInteger(ms) || ms < 0 || ms > MAX_MS) {
      throw new RangeError(`receivedAt out of range: ${String(receivedAt)}`);
    }
    const base = BigInt(ms) << MS_SHIFT;
    const free = this.next.get(venue) ?? 0n;
    const start = base > free ? base : free;
    // One slot for nearly every frame: no BigInts made to count them.
    this.next.set(venue, records.length <= SLOT_RECORDS ? start + SLOT : start + BigInt(Math.ceil(records.length / SLOT_RECORDS)) * SLOT);

    const received_at = isoMs(ms);
    const worker_id = this.workerId;
    const out = new Array<RawMessage>(records.length);
    // Literals in the stored key order (the binary codec writes a record of that order compactly).
    if (venue === 'exchange-a') {
      for (let i = 0; i < records.length; i++) {
        const event = records[i] as ExchangeAEvent;
        out[i] = { venue, received_at, worker_id, ingest_seq: seqText(start, i), dedup_id: dedupIdA(event), event };
      }
    } else {
      for (let i = 0; i < records.length; i++) {
        const record = records[i] as ExchangeBRecord;
        out[i] = { venue, received_at, worker_id, ingest_seq: seqText(start, i), dedup_id: dedupIdB(record), record };
      }
    }
    return out;
  }
}

/** The decimal text of `start + i`; the first record of a frame (nearly every record) makes no BigInt. */
function seqText(start: bigint, i: number): string {
  return (i === 0 ? start : start + BigInt(i)).toString();
}

export function dedupIdA(event: ExchangeAEvent): string {
  const e = event;
  // Keys in sorted order: the canonical JSON then takes its fast path (content-hash.ts).
  if (e.event_type === 'book') {
    return contentHash({ asks: e.asks ?? null, asset_id: e.asset_id, bids: e.bids ?? null, event_type: e.event_type, hash: e.hash, timestamp: e.timestamp });
  }
  if (e.event_type === 'price_change') {
    const text = priceChangeIdText(e);
    if (text !== null) return sha1Hex(text);
    return contentHash({ asset_id: e.asset_id, changes: e.changes ?? null, event_type: e.event_type, hash: e.hash, timestamp: e.timestamp });
  }
  return contentHash(e);
}

/** The keys a normalised change may carry, each a string when present. */
const CHANGE_KEYS = new Set(['price', 'side', 'size', 'hash', 'best_bid', 'best_ask']);

/**
 * Text that JSON writes as it is between quotes: no quote, backslash or control character,
 * and no surrogate (JSON.stringify escapes a lone one; a pair is left to the general path).
 */
const PLAIN_TEXT = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;
const plainText = (v: unknown): v is string => typeof v === 'string' && PLAIN_TEXT.test(v);

/**
 * The canonical JSON of a price_change's identity (its asset, changes, type, hash and
 * timestamp, keys sorted at every depth), written out directly: a change's keys (price,
 * side, size, …) are not in sorted order, canonicalJson's general path (sorting, text in
 * parts) was most of the cost of stamping a price_change, and copying each change with its
 * keys in order for JSON.stringify still cost a fifth more than this. null for anything but
 * plain changes of plain string fields, which then take canonicalJson: the id is the same
 * text either way.
 */
function priceChangeIdText(e: ExchangeAEvent): string | null {
  const changes: unknown = e.changes;
  if (!Array.isArray(changes) || !plainText(e.asset_id) || !plainText(e.hash) || !plainText(e.timestamp)) return null;
  let text = `{"asset_id":"${e.asset_id}","changes":[`;
  for (let i = 0; i < changes.length; i++) {
    const c: unknown = changes[i];
    if (typeof c !== 'object' || c === null || Object.getPrototypeOf(c) !== Object.prototype) return null;
    const ch = c as Record<string, unknown>;
    for (const k in ch) {
      const v = ch[k];
      if (!CHANGE_KEYS.has(k) || (v !== undefined && !plainText(v))) return null;
    }
    // Sorted keys; an undefined one is left out, as JSON.stringify leaves it out.
    let fields = '';
    if (ch['best_ask'] !== undefined) fields += `,"best_ask":"${ch['best_ask'] as string}"`;
    if (ch['best_bid'] !== undefined) fields += `,"best_bid":"${ch['best_bid'] as string}"`;
    if (ch['hash'] !== undefined) fields += `,"hash":"${ch['hash'] as string}"`;
    if (ch['price'] !== undefined) fields += `,"price":"${ch['price'] as string}"`;
    if (ch['side'] !== undefined) fields += `,"side":"${ch['side'] as string}"`;
    if (ch['size'] !== undefined) fields += `,"size":"${ch['size'] as string}"`;
    text += `${i === 0 ? '{' : ',{'}${fields.slice(1)}}`;
  }
  return `${text}],"event_type":"price_change","hash":"${e.hash}","timestamp":"${e.timestamp}"}`;
}

export function dedupIdB(r: ExchangeBRecord): string {
  const key = `${r.epoch_ms}|${r.sid}|${r.seq}|${r.type}|${r.ticker}|${r.expected_seq ?? ''}`;
  return sha1Hex(r.sid === null || r.seq === null ? `${key}|${canonicalJson(r)}` : key);
}

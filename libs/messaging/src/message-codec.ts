import { isUtf8 } from 'node:buffer';
import type { Kafka } from 'kafkajs';
import type { Logger } from '@booktape/config';
import { BatchingProducer, type BatchingProducerOptions, type Topics } from './kafka.ts';
import { binaryRecordCount, concatRawBinary, decodeRawBinaryNotingJson, encodeRawBinary, isBinaryValue } from './raw-binary.codec.ts';
import { MAX_EVENT_DATE, MAX_EVENT_MS, MAX_RECEIVED_MS, parseCaptureGap, receiveTimeError, type CaptureGap, type RawMessage, type Venue } from '@booktape/domain';

/**
 * Kafka value of a raw topic: the records one frame produced for one market (one message
 * per market and frame keeps a market's order and divides the message count). Capture and
 * replay write the binary value (raw-binary.codec.ts, docs/rules/kafka-records.md), or the
 * JSON array for a rollback to a release that reads only that (KAFKA_RAW_VALUE_FORMAT=json);
 * the sink reads both, mixed in one batch. Decoding refuses (for the dead-letter topic) what
 * the sink could not store as it came.
 */
export function encodeRawValue(messages: readonly RawMessage[]): Buffer {
  return encodeRawBinary(messages);
}

/** How capture and replay write raw values: binary (the default), or the JSON array of earlier releases. */
export type RawValueFormat = 'binary' | 'json';
export const RAW_VALUE_FORMATS: readonly RawValueFormat[] = ['binary', 'json'];

/** The encoder of a format. */
export function rawValueEncoder(format: RawValueFormat): (messages: RawMessage[]) => string | Buffer {
  return format === 'json' ? encodeRawMessages : encodeRawValue;
}

/** The JSON array value (what capture wrote before the binary value; dead letters keep it as text). */
export function encodeRawMessages(messages: RawMessage[]): string {
  return JSON.stringify(messages);
}

/** A JSON value: text, or bytes that do not start as a binary value does. */
const isJsonValue = (v: string | Buffer): boolean => typeof v === 'string' || !isBinaryValue(v);
const jsonText = (v: string | Buffer): string => (typeof v === 'string' ? v : v.toString('utf8'));

/**
 * Merges encoded values in order: the producer's coalesce function for raw topics. JSON
 * values (text or bytes) become one JSON array, what a process writing JSON sends; binary
 * values one binary value (their blocks behind one header). A JSON value among binary ones
 * (a writer of either kind sharing a producer) is re-encoded to binary, so nothing is lost
 * whatever is mixed; a binary value of another version is a bug upstream, and throws.
 */
export function concatRawMessages(values: ReadonlyArray<string | Buffer>): string | Buffer {
  if (values.every(isJsonValue)) {
    const parts: string[] = [];
    for (const v of values) {
      const t = jsonText(v).trim();
      // An array contributes its elements (none for []), a lone record itself.
      const inner = t.startsWith('[') ? t.slice(1, -1).trim() : t;
      if (inner !== '') parts.push(inner);
    }
    return `[${parts.join(',')}]`;
  }
  return concatRawBinary(values.map((v) => (isJsonValue(v) ? encodeRawBinary(jsonRecords(v)) : (v as Buffer))));
}

/** The records of a JSON value, to re-encode it among binary ones. */
function jsonRecords(v: string | Buffer): RawMessage[] {
  const parsed: unknown = JSON.parse(jsonText(v));
  return (Array.isArray(parsed) ? parsed : [parsed]) as RawMessage[];
}

export type Decoded = { ok: true; messages: RawMessage[] } | { ok: false; reason: string };

const isStr = (v: unknown): v is string => typeof v === 'string';
/**
 * ingest_seq is a UInt64: a larger number would wrap inside the engine. Twenty digits are
 * compared as text (equal lengths compare as numbers do), which spares a BigInt per record.
 */
const MAX_INGEST_SEQ_TEXT = (2n ** 64n - 1n).toString();
/** worker_id is a UInt32: a larger integer would wrap. */
const MAX_WORKER_ID = 0xffff_ffff;
/** sid and seq are Nullable(Int64): a larger integer would wrap, `true` or "5" would become a number. */
const fitsInt64OrNull = (v: unknown): boolean => v === null || v === undefined || (typeof v === 'number' && !(Number.isInteger(v) && Math.abs(v) >= 2 ** 63));

export function decodeRawMessages(venue: Venue, value: Buffer | null): Decoded {
  if (value === null) return { ok: false, reason: 'empty message value' };
  if (isBinaryValue(value)) {
    const { decoded: d, jsonRecords } = decodeRawBinaryNotingJson(value);
    if (!d.ok) return d;
    // The rules on values (times, ranges, the topic's venue) apply to every record; a compact
    // record's ingest_seq was a UInt64 on the wire, so its text needs no second look. The
    // records that travelled as JSON text (their indices, ascending) get the full check.
    let nextJson = jsonRecords.length > 0 ? jsonRecords[0]! : -1;
    let j = 0;
    for (let i = 0; i < d.messages.length; i++) {
      const json = i === nextJson;
      if (json) nextJson = ++j < jsonRecords.length ? jsonRecords[j]! : -1;
      const reason = check(venue, d.messages[i], !json);
      if (reason) return { ok: false, reason: `record ${i}: ${reason}` };
    }
    return d;
  }
  let parsed: unknown;
  const text = value.toString('utf8');
  // Bytes that are not UTF-8 come back as U+FFFD: refused, as in a binary value, rather than stored as another text.
  if (text.includes('\ufffd') && !isUtf8(value)) return { ok: false, reason: 'value is not UTF-8' };
  try {
    parsed = JSON.parse(text);
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

/**
 * Why a record cannot be stored as it is, or null. Checked: the fields the sink reads, and
 * every value the engine would store as another without a word (an integer that wraps, a
 * time it clamps, `true` stored as 1). A value the engine refuses outright (a negative
 * worker_id, a fractional sid) is left to it: the sink then dead-letters that record alone
 * and keeps the other records of its message, where a refusal here takes the whole message.
 */
let lastGoodReceivedAt: string | undefined;
/** "YYYY-MM-DDTHH:MM:" of the last good receive time in capture's own spelling, when a minute from the range's end. */
let goodMinute: string | undefined;
const CAPTURE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:[0-5]\d\.\d{3}Z$/;
const SAME_MINUTE_TAIL = /^.{17}[0-5]\d\.\d{3}Z$/;

/**
 * receiveTimeError, without its two Date.parse calls in the common case: the records of a
 * frame share their receive time (checked once), and one in the same minute as a good one,
 * spelled as capture spells it (toISOString), is good too. Every other value takes the full check.
 */
function receivedAtError(v: unknown): string | null {
  if (v === lastGoodReceivedAt) return null;
  if (typeof v === 'string' && v.length === 24 && goodMinute !== undefined && v.startsWith(goodMinute) && SAME_MINUTE_TAIL.test(v)) {
    lastGoodReceivedAt = v;
    return null;
  }
  const bad = receiveTimeError('received_at', v);
  if (bad) return bad;
  lastGoodReceivedAt = v as string;
  if (CAPTURE_TIME.test(v as string) && Date.parse(v as string) < MAX_RECEIVED_MS - 60_000) goodMinute = (v as string).slice(0, 17);
  return null;
}

function check(venue: Venue, m: unknown, u64Seq = false): string | null {
  if (typeof m !== 'object' || m === null) return 'not an object';
  const r = m as Record<string, unknown>;
  if (r.venue !== venue) return `venue ${String(r.venue)} on the ${venue} topic`;
  const badTime = receivedAtError(r.received_at);
  if (badTime) return badTime;
  if (!u64Seq && (!isStr(r.ingest_seq) || !/^\d{1,20}$/.test(r.ingest_seq) || (r.ingest_seq.length === 20 && r.ingest_seq > MAX_INGEST_SEQ_TEXT))) return 'bad ingest_seq (a UInt64 as decimal text)';
  if (!isStr(r.dedup_id) || r.dedup_id === '') return 'bad dedup_id';
  if (typeof r.worker_id !== 'number' || (Number.isInteger(r.worker_id) && r.worker_id > MAX_WORKER_ID)) return 'bad worker_id (a UInt32)';
  return CHECK_RECORD[venue](r);
}

/** What a stored record of each venue must hold to be inserted, keyed by venue. */
const CHECK_RECORD: { readonly [V in Venue]: (r: Record<string, unknown>) => string | null } = {
  'exchange-a': (r) => {
    const e = r.event as Record<string, unknown> | undefined;
    if (!e || !isStr(e.market) || !isStr(e.asset_id) || !isStr(e.event_type) || !isStr(e.hash)) return 'bad event';
    if (!isStr(e.timestamp) || !/^\d{1,15}$/.test(e.timestamp)) return 'bad event timestamp';
    if (Number(e.timestamp) > MAX_EVENT_MS) return `event timestamp after ${MAX_EVENT_DATE}, the last date the store holds`;
    return null;
  },
  'exchange-b': (r) => {
    const b = r.record as Record<string, unknown> | undefined;
    if (!b || !isStr(b.ticker) || !isStr(b.type) || !isStr(b.timestamp)) return 'bad record';
    if (!Number.isSafeInteger(b.epoch_ms) || (b.epoch_ms as number) < 0) return 'bad record epoch_ms';
    if ((b.epoch_ms as number) > MAX_EVENT_MS) return `record epoch_ms after ${MAX_EVENT_DATE}, the last date the store holds`;
    if (!fitsInt64OrNull(b.sid) || !fitsInt64OrNull(b.seq)) return 'bad record sid or seq (an Int64 or null)';
    return null;
  },
};

export type DecodedGap = { ok: true; gap: CaptureGap } | { ok: false; reason: string };

/** A capture gap message; one that does not fit would fail its insert forever, so it is refused here. */
export function decodeCaptureGap(value: Buffer | null): DecodedGap {
  let g: unknown;
  try {
    g = JSON.parse(value?.toString('utf8') ?? 'null');
  } catch {
    return { ok: false, reason: 'gap message is not JSON' };
  }
  const parsed = parseCaptureGap(g);
  return 'error' in parsed ? { ok: false, reason: `gap message: ${parsed.error}` } : { ok: true, gap: parsed.gap };
}

/**
 * How much of a refused value a dead letter keeps: the broker refused the whole value, so
 * a dead letter carries its head (and says so), well inside the broker's message limit.
 */
export const DEAD_LETTER_FRAME_CHARS = 65_536;

/** A dead letter's `frame`: the text whole, or its head plus the reason it was cut. */
export function deadLetterFrame(text: string, limit = DEAD_LETTER_FRAME_CHARS): { frame: string; truncated: string | null } {
  if (text.length <= limit) return { frame: text, truncated: null };
  return { frame: text.slice(0, limit), truncated: `frame truncated to its first ${limit} of ${text.length} characters` };
}

/** How many records an encoded raw-topic value holds (0 when it is not an array of them). */
export function rawRecordCount(value: string | Buffer): number {
  if (typeof value !== 'string') {
    if (isBinaryValue(value)) return binaryRecordCount(value) ?? 0;
    value = value.toString('utf8');
  }
  try {
    const v: unknown = JSON.parse(value);
    return Array.isArray(v) ? v.length : 0;
  } catch {
    return 0;
  }
}

/**
 * The dead letter for a raw-topic value the broker refused as too large (even alone): the
 * venue of its topic, the reason with its size and record count, and the head of the value.
 */
export function tooLargeDeadLetter(venue: Venue | null, value: string | Buffer, receivedAt: Date): string {
  const records = rawRecordCount(value);
  const { text, encoding } = typeof value === 'string' ? { text: value, encoding: 'utf8' as const } : deadLetterText(value);
  const { frame, truncated } = deadLetterFrame(text);
  const unit = typeof value === 'string' ? 'characters' : 'bytes';
  const reason = `kafka refused a message of ${value.length} ${unit} (${records} record(s)) as larger than the broker accepts${truncated ? `; ${truncated}` : ''}`;
  return JSON.stringify({ venue, received_at: receivedAt.toISOString(), reason, frame, ...(encoding === 'base64' ? { frame_encoding: encoding } : {}) });
}

/**
 * The text a dead letter keeps of a Kafka value: JSON (and any other text) as it is; a
 * binary value in base64, which its `frame_encoding` then says, since as UTF-8 it would be
 * mangled beyond decoding.
 */
export function deadLetterText(value: Buffer): { text: string; encoding: 'utf8' | 'base64' } {
  return isBinaryValue(value) ? { text: value.toString('base64'), encoding: 'base64' } : { text: value.toString('utf8'), encoding: 'utf8' };
}

/**
 * The producer of the raw topics, as capture and replay both use it: a market's messages of
 * one flush coalesced into one Kafka message (order kept), and a message the broker refuses
 * even alone sent to the dead-letter topic as `tooLargeDeadLetter` writes it. `onTooLarge`
 * hears how many records such a message held (replay reports them as not stored).
 * `batching` trades latency for fewer, larger messages (replay; see BatchingProducerOptions).
 */
export function createRawProducer(
  kafka: Kafka,
  log: Logger,
  topics: Topics,
  onTooLarge?: (records: number) => void,
  batching: Partial<Pick<BatchingProducerOptions, 'lingerMs' | 'lingerAfterRequest'>> = {},
): BatchingProducer {
  const venueOfTopic = new Map<string, Venue>(Object.entries(topics.raw).map(([v, t]) => [t, v as Venue]));
  const producer: BatchingProducer = new BatchingProducer(kafka, log, {
    lingerMs: 50,
    ...batching,
    maxMessages: 20_000,
    coalesce: concatRawMessages,
    coalesceTopics: new Set(Object.values(topics.raw)),
    onTooLarge: (m) => {
      const venue = venueOfTopic.get(m.topic) ?? null;
      onTooLarge?.(venue === null ? 0 : Math.max(1, rawRecordCount(m.value)));
      void producer.send({ topic: topics.deadLetter, key: m.key, value: tooLargeDeadLetter(venue, m.value, new Date()) });
    },
  });
  return producer;
}

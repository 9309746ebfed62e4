import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { StreamBusyError, StreamOwnerBusyError, type ByteStream } from '@booktape/storage';
import { ApiError, TooManyConcurrentError, guard } from '../http/errors.ts';
import type { RawRows } from './raw-rows.ts';
import { CUT_DRAIN_MS, FloorWatch, SLOW_READER_CODE, markCut, slowReaderMessage, type FloorOptions } from '../http/slow-reader.ts';

/**
 * A raw-data page as a streamed JSON body: the head of the envelope, then the records as
 * they come from ClickHouse, then the tail (counts and pagination, known only at the end).
 * The first chunk is fetched before the status line is sent, so a store that fails at
 * once still gets a proper 503. Back-pressure: the next chunk is pulled from the engine
 * only when the socket has taken the previous one.
 */
export interface OpenRows {
  it: AsyncIterator<Buffer>;
  first: IteratorResult<Buffer>;
}

/**
 * A stream session that could not be had, as the answer says it: the key's own share in
 * use (429, its other pages hold them), or every session held by others for the whole wait
 * (503); neither is ClickHouse failing.
 */
export function streamSessionError(e: unknown): unknown {
  if (e instanceof StreamOwnerBusyError) {
    return new TooManyConcurrentError(
      `this API key already has ${e.perOwner} raw-data page${e.perOwner === 1 ? '' : 's'} streaming, the most one key may of the ${e.max} stream sessions of this API process; retry when one of them has ended`,
      { limit: 'stream_sessions', allowed: e.perOwner, retry_after_seconds: 1 },
    );
  }
  if (e instanceof StreamBusyError) {
    return new ApiError(503, 'service_unavailable', `all ${e.max} raw-data stream sessions of this API process stayed busy for ${e.waitedMs / 1000} s (other requests are reading through them); retry later`);
  }
  return e;
}

export async function openRows(rows: ByteStream): Promise<OpenRows> {
  const it = rows[Symbol.asyncIterator]();
  try {
    const first = await guard('ClickHouse', () =>
      it.next().catch((e: unknown) => {
        throw streamSessionError(e);
      }),
    );
    return { it, first };
  } catch (e) {
    await it.return?.(undefined).catch(() => undefined);
    throw e;
  }
}

/**
 * Two reads a page needs before its status line, run side by side (`b` holds a stream: on
 * failure of either, a `b` that did open is released by `release`, so nothing stays open).
 */
export async function bothOpen<A, B>(a: Promise<A>, b: Promise<B>, release: (b: B) => Promise<void>): Promise<[A, B]> {
  try {
    return await Promise.all([a, b]);
  } catch (e) {
    a.catch(() => undefined);
    b.then(release, () => undefined);
    throw e;
  }
}

/** Releases a stream that will not be sent (another part of the request failed). */
export async function closeRows(rows: OpenRows | undefined): Promise<void> {
  await rows?.it.return?.(undefined).catch(() => undefined);
}

/** Input bytes a converter takes at a time (cut at a row's end): bounds what one output holds. */
const SLICE_BYTES = 128 * 1024;

/**
 * The rows converted, as they come: a store chunk (several MB) is handed over in slices of
 * about SLICE_BYTES cut at row ends, so a converter whose output outgrows its input (CSV
 * repeats an event's fields on every level) never holds a whole chunk's rows at once, and
 * the consumer's back-pressure applies per slice. Stops once the converter is full; checks
 * at the end that the stream did not break off inside a row.
 */
export async function* converted(rows: OpenRows, conv: RawRows): AsyncGenerator<Buffer> {
  for (let r = rows.first; !r.done; r = await rows.it.next()) {
    const chunk = r.value;
    for (let off = 0; off < chunk.length && !conv.more; ) {
      let cut = chunk.length;
      if (chunk.length - off > SLICE_BYTES) {
        const nl = chunk.lastIndexOf(10, off + SLICE_BYTES);
        cut = nl >= off ? nl + 1 : chunk.length;
      }
      const out = conv.push(chunk.subarray(off, cut));
      if (out.length > 0) yield out;
      off = cut;
    }
    if (conv.more) return;
  }
  conv.end();
}

/** How a cut answer ends, in the page's format (docs/api.md, "Slow readers"). */
export type CutMarker = (code: string, message: string, count: number) => string;

/** JSON page: the data array closed, the count of rows sent, and the error in place of the pagination. */
export const jsonCutMarker: CutMarker = (code, message, count) => `],"data_count":${count},"error":${JSON.stringify({ code, message })}}`;
/** NDJSON: a last line that is an error object. */
export const ndjsonCutMarker: CutMarker = (code, message) => `${JSON.stringify({ error: { code, message } })}\n`;
/** CSV: a last line starting `#error` (no record's first field starts with `#`). */
export const csvCutMarker: CutMarker = (code, message) => `#error,${code},${JSON.stringify(message).replace(/,/g, ';')}\n`;

export interface SlowReaderCut {
  floor: FloorOptions;
  marker: CutMarker;
}

export function sendRawPage(
  reply: FastifyReply,
  rows: OpenRows,
  conv: RawRows,
  head: string,
  tail: () => string,
  contentType = 'application/json; charset=utf-8',
  slow?: SlowReaderCut,
): FastifyReply {
  // The stream holds a store session (a pooled one on the embedded engine) from openRows
  // on. It must be given back on every path: page full, read error, a client that goes
  // away, including before the body generator ever ran (destroying a Readable.from stream
  // whose generator has not started never enters its try/finally), and a reader below the
  // floor (given back at once, while the body waits for the client to take what it has).
  let released = false;
  const release = async (): Promise<void> => {
    if (released) return;
    released = true;
    await rows.it.return?.(undefined).catch(() => undefined);
  };
  async function* body(): AsyncGenerator<Buffer> {
    try {
      if (head.length > 0) yield Buffer.from(head, 'utf8');
      if (yield* heldToFloor(reply, rows, conv, slow, release)) return;
      const end = tail();
      if (end.length > 0) yield Buffer.from(end, 'utf8');
    } finally {
      // Cancels the read when the page is full or the client went away.
      await release();
    }
  }
  const stream = Readable.from(body(), { objectMode: false, highWaterMark: 64 * 1024 });
  stream.on('error', (err) => reply.log.error({ err }, 'raw page stream failed after the status line was sent'));
  stream.once('close', () => void release());
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) stream.destroy();
  });
  return reply.header('content-type', contentType).send(stream as never);
}

/**
 * The rows converted (`converted`), held to the slow-reader floor when `slow` has one: a
 * reader below it has its store read released at once (`release`), the answer marked cut
 * (not billed) and ended by `slow.marker`; a client that then does not take what was
 * buffered for it within CUT_DRAIN_MS loses the connection. Returns whether it was cut.
 * Raw pages and raw exports both stream through it.
 */
export async function* heldToFloor(reply: FastifyReply, rows: OpenRows, conv: RawRows, slow: SlowReaderCut | undefined, release: () => Promise<void>): AsyncGenerator<Buffer, boolean> {
  let cutMessage: string | null = null;
  const watch =
    slow && slow.floor.bytesPerSecond > 0
      ? new FloorWatch(slow.floor, (rate) => {
          cutMessage = slowReaderMessage(slow.floor, rate);
          markCut(reply.raw, SLOW_READER_CODE);
          reply.log.warn({ reason: SLOW_READER_CODE, rate_bytes_per_s: Math.round(rate), floor_bytes_per_s: slow.floor.bytesPerSecond, rows_sent: conv.count, key_id: reply.request.apiKey?.key_id }, 'slow_reader: answer cut, store stream session released');
          void release();
          // What was buffered for the client stays bounded; a client that takes even that too
          // slowly loses the connection.
          setTimeout(() => {
            if (!reply.raw.writableFinished) reply.raw.destroy();
          }, CUT_DRAIN_MS).unref();
        })
      : null;
  try {
    for await (const out of converted(rows, conv)) {
      if (cutMessage !== null) break;
      watch?.add(out.length);
      yield out;
      if (cutMessage !== null) break;
    }
    if (cutMessage === null) return false;
    yield Buffer.from(slow!.marker(SLOW_READER_CODE, cutMessage, conv.count), 'utf8');
    return true;
  } finally {
    watch?.stop();
  }
}

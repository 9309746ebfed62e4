import { BooktapeError, type ApiErrorCode } from './errors.ts';
import type { TimeInput } from './query.ts';

/**
 * The merged replay stream (`GET /api/v1/replay/stream`, docs/api.md "Merged replay
 * stream"): its messages, and the NDJSON body read line by line as they arrive.
 */

/** [price, size] as decimal text, best first. */
export type ReplayLevel = [string, string];

interface ReplayCommon {
  /** `exchange-a:<asset_id>` or `exchange-b:<TICKER>`. */
  market: string;
  venue: 'exchange-a' | 'exchange-b';
  /** The merge time, Unix ms (exchange A: the venue's timestamp; exchange B: the capture's receive time). */
  ts: number;
  venue_ts: number | null;
  received_at: number | null;
  ingest_seq: string | null;
}

export type ReplayMessage =
  | { type: 'start'; from: number; to: number; markets: string[]; unknown_markets: string[]; snapshot_interval_ms: number | null; depth: number | null }
  | (ReplayCommon & { type: 'book'; opening?: true; known: boolean; bids: ReplayLevel[]; asks: ReplayLevel[] })
  | (ReplayCommon & { type: 'book_change'; changes: Array<{ side: 'bid' | 'ask'; price: string | null; size: string | null }>; book_known: boolean })
  | (ReplayCommon & { type: 'trade'; price: string | null; size: string | null; side: 'buy' | 'sell' | null })
  | (ReplayCommon & { type: 'snapshot'; depth: number; known: boolean; bids: ReplayLevel[]; asks: ReplayLevel[] })
  | (ReplayCommon & { type: 'gap'; kind: 'sequence_gap' | 'disconnect' | 'outage'; from: number; until: number | null; detail: string })
  | { type: 'end'; ts: number; messages: number };

export interface ReplayStreamParams {
  /** `exchange-a:<asset_id>` / `exchange-b:<ticker>`, up to 100. */
  markets: readonly string[];
  from: TimeInput;
  to: TimeInput;
  /** Snapshot interval: `60s`, `5m`, `1h`, or seconds. */
  snapshotInterval?: string | number;
  /** Levels a side in each snapshot (with snapshotInterval). */
  depth?: number;
}

/**
 * The lines of an NDJSON body as messages, read as the caller iterates (a consumer that
 * stops stops the read: the body is cancelled). An `error` line is thrown as a
 * BooktapeError with the line's code; a line that is not a JSON message, or a body that
 * ends without its `end` line, as `invalid_response`.
 */
export async function* ndjsonMessages(body: ReadableStream<Uint8Array> | null): AsyncGenerator<ReplayMessage, void, undefined> {
  if (body === null) throw new BooktapeError(200, 'invalid_response', 'the replay stream had no body', undefined, '');
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let rest = '';
  let ended = false;
  const parse = (line: string): ReplayMessage => {
    let m: ReplayMessage | { type: 'error'; error: { code: string; message: string } };
    try {
      m = JSON.parse(line) as typeof m;
    } catch {
      throw new BooktapeError(200, 'invalid_response', 'the replay stream sent a line that is not JSON', undefined, line);
    }
    if (typeof m !== 'object' || m === null) throw new BooktapeError(200, 'invalid_response', 'the replay stream sent a line that is not a message', undefined, line);
    if (m.type === 'error') throw new BooktapeError(200, m.error.code as ApiErrorCode, m.error.message, undefined, line);
    if (m.type === 'end') ended = true;
    return m;
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += decoder.decode(value, { stream: true });
      let at = 0;
      for (let nl = rest.indexOf('\n'); nl >= 0; nl = rest.indexOf('\n', at)) {
        const line = rest.slice(at, nl);
        at = nl + 1;
        if (line.trim() !== '') yield parse(line);
      }
      rest = rest.slice(at);
    }
    rest += decoder.decode();
    if (rest.trim() !== '') yield parse(rest);
    if (!ended) throw new BooktapeError(200, 'invalid_response', 'the replay stream ended before its end line: the messages so far are complete, ask again from the last ts', undefined, rest);
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

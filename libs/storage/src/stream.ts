import { createRequire } from 'node:module';
import type { Readable } from 'node:stream';
import type { ClickHouse } from './clickhouse.ts';

/**
 * Streaming reads: a large result must never sit whole in memory.
 *
 * `client.query()` on the embedded engine buffers the whole result, so on the embedded
 * engine a read streams through its own chdb `Session` on the same directory (sessions on
 * one path share the engine and coexist). A session carries one stream at a time, so the
 * sessions form a small pool; a read waits for a free one. On a server the HTTP response
 * body is the stream (`exec`), passed on as it arrives.
 *
 * The SQL must not carry a FORMAT clause (the format is an argument) and must put any
 * setting it needs into its own SETTINGS clause: a fresh session has none of the client's
 * settings, and session-level SETs would leak into later reads.
 */

export type StreamFormat = 'TabSeparatedRaw' | 'JSONEachRow' | 'TabSeparated' | 'CSV';

export interface StreamQuery {
  query: string;
  query_params?: Record<string, unknown>;
  format: StreamFormat;
  /** Stops the read between chunks (a client that went away). */
  signal?: AbortSignal;
}

/** The result as byte chunks. Embedded chunks hold whole rows; server chunks may split a row. */
export type ByteStream = AsyncIterable<Buffer>;

interface ChdbStreamChunk {
  readonly numRows: number;
  raw(): Uint8Array;
}
interface ChdbQueryStream extends AsyncIterable<ChdbStreamChunk> {
  readonly closed: boolean;
  cancel(): void;
}
interface ChdbSession {
  queryStreamBind(sql: string, params: object, opts: { format: string; signal?: AbortSignal }): ChdbQueryStream;
  close(): void;
}
type ChdbSessionCtor = new (path: string) => ChdbSession;

/** How many embedded streams may run at once (each holds one session). */
export const DEFAULT_STREAM_SESSIONS = 4;
/** How long a read waits for a free session before it gives up (the caller answers 503). */
export const DEFAULT_SESSION_WAIT_MS = 10_000;

/** Every stream session stayed busy for the whole wait: the store is saturated. */
export class StreamBusyError extends Error {
  constructor(waitedMs: number) {
    super(`no stream session became free within ${waitedMs} ms`);
    this.name = 'StreamBusyError';
  }
}

class SessionPool {
  private readonly idle: ChdbSession[] = [];
  private readonly waiting: Array<(s: ChdbSession) => void> = [];
  private open = 0;
  private closed = false;

  constructor(
    private readonly ctor: ChdbSessionCtor,
    private readonly path: string,
    private readonly max: number,
  ) {}

  async acquire(waitMs: number): Promise<ChdbSession> {
    if (this.closed) throw new Error('stream sessions are closed');
    const s = this.idle.pop();
    if (s) return s;
    if (this.open < this.max) {
      const session = new this.ctor(this.path);
      this.open++;
      return session;
    }
    return new Promise((resolve, reject) => {
      const waiter = (session: ChdbSession) => {
        clearTimeout(timer);
        resolve(session);
      };
      const timer = setTimeout(() => {
        const i = this.waiting.indexOf(waiter);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(new StreamBusyError(waitMs));
      }, waitMs);
      this.waiting.push(waiter);
    });
  }

  release(s: ChdbSession): void {
    const next = this.waiting.shift();
    if (next) return next(s);
    if (this.closed) {
      s.close();
      this.open--;
      return;
    }
    this.idle.push(s);
  }

  close(): void {
    this.closed = true;
    for (const s of this.idle.splice(0)) {
      s.close();
      this.open--;
    }
  }
}

const pools = new WeakMap<ClickHouse, SessionPool>();
let sessionCtor: ChdbSessionCtor | undefined;

function poolFor(ch: ClickHouse, maxSessions: number): SessionPool {
  let pool = pools.get(ch);
  if (!pool) {
    if (!ch.embeddedPath) throw new Error('embedded stream on a server connection');
    // Loaded on first use only: a server deployment never loads the native engine.
    sessionCtor ??= (createRequire(import.meta.url)('chdb') as { Session: ChdbSessionCtor }).Session;
    pool = new SessionPool(sessionCtor, ch.embeddedPath, maxSessions);
    pools.set(ch, pool);
  }
  return pool;
}

async function* embeddedStream(ch: ClickHouse, q: StreamQuery, maxSessions: number, waitMs: number): ByteStream {
  const pool = poolFor(ch, maxSessions);
  const session = await pool.acquire(waitMs);
  let stream: ChdbQueryStream | undefined;
  try {
    stream = session.queryStreamBind(q.query, q.query_params ?? {}, { format: q.format, ...(q.signal ? { signal: q.signal } : {}) });
    for await (const chunk of stream) {
      const raw = chunk.raw();
      // chdb copies each chunk into a JS buffer of its own: wrap it, do not copy again.
      yield Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    }
  } finally {
    if (stream && !stream.closed) stream.cancel();
    pool.release(session);
  }
}

async function* serverStream(ch: ClickHouse, q: StreamQuery): ByteStream {
  const result = await ch.client.exec({
    query: `${q.query}\nFORMAT ${q.format}`,
    query_params: q.query_params ?? {},
    ...(q.signal ? { abort_signal: q.signal } : {}),
  });
  const body = result.stream as Readable;
  try {
    for await (const chunk of body) yield Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
  } finally {
    body.destroy();
  }
}

/**
 * Runs a SELECT and yields its result in `format` chunk by chunk, pulling the next chunk
 * only when the consumer asks for it (back-pressure reaches the engine). Breaking out of
 * the loop cancels the read and frees its session.
 */
export function streamQuery(ch: ClickHouse, q: StreamQuery, opts: { maxSessions?: number | undefined; sessionWaitMs?: number | undefined } = {}): ByteStream {
  return ch.mode === 'embedded'
    ? embeddedStream(ch, q, opts.maxSessions ?? DEFAULT_STREAM_SESSIONS, opts.sessionWaitMs ?? DEFAULT_SESSION_WAIT_MS)
    : serverStream(ch, q);
}

/** Closes the idle stream sessions of an embedded handle (call before closing the handle). */
export function closeStreamSessions(ch: ClickHouse): void {
  pools.get(ch)?.close();
  pools.delete(ch);
}

import { performance } from 'node:perf_hooks';
import { setImmediate as turn, setTimeout as sleep } from 'node:timers/promises';
import { WebSocket } from 'ws';
import { StreamBusyError } from '@booktape/storage';
import type { Logger } from '@booktape/config';
import type { Venue } from '@booktape/domain';

/**
 * The part of a websocket replay both venues share (issue 25): pacing, back-pressure, and
 * an end that frees everything.
 *
 * - Pace: `speed` null sends as fast as the client reads; a factor sends each frame at
 *   `start + (event time - from) / speed` (`start`: when the opening frames were sent),
 *   waking EARLY_MS before and waiting the rest in event-loop turns (waitUntil).
 * - Writes: frames that may go at once are framed here and written together, one socket
 *   write per WRITE_BATCH_BYTES or per run of work (enqueue), in the order sent.
 * - Back-pressure: below HIGH_WATER bytes waiting in the socket (or to be written) a frame
 *   is queued at once; above it the replay waits until that frame has been handed to the
 *   kernel, so a slow client slows its own replay and the server holds at most HIGH_WATER
 *   plus one frame (and the reader's current sub-read, as its bytes) for it. A client that takes nothing for STALL_MS is
 *   dropped (its socket destroyed), like an HTTP answer nobody reads.
 * - End: the client leaving, the server closing, or the window's end abort the read
 *   (the engine reads in flight are cancelled) and settle `outcome` once.
 */

export const HIGH_WATER = 1 << 20;
/**
 * A paced frame's timer wakes this long before its due time; the rest is waited precisely
 * (waitUntil). The event loop's clock has millisecond steps, so a timer fires up to about a
 * millisecond either side of its time: waking 1 ms early leaves at most about 2 ms of turns
 * to wait, usually less. (Waiting in turns keeps the process running: on a machine whose
 * cores are all busy that costs the others, so the margin is kept small.)
 */
const EARLY_MS = 1;
export const STALL_MS = 60_000;
/** A replay that never has to wait yields to the event loop after this long of sending (breathe). */
const YIELD_MS = 5;
/** How long a client may take to send its subscription. */
export const SUBSCRIBE_WAIT_MS = 60_000;

/** How a replay ended: `done` (the window was sent, closed 1000) is the one a key pays for. */
export type ReplayOutcome = 'done' | 'client_left' | 'refused' | 'no_subscribe' | 'busy' | 'failed' | 'shutdown';

export interface ReplayWindow {
  fromMs: number;
  toMs: number;
  /** Factor of real time; null: as fast as the client reads. */
  speed: number | null;
  log: Logger;
  /** Told the payload bytes of every text frame sent on the socket, for the request log. */
  sent?: (bytes: number) => void;
  /** Overrides for tests. */
  stallMs?: number;
  subscribeWaitMs?: number;
}

export interface ReplaySocketOptions {
  /** Websocket pings from the server this often (exchange B's venue pings every 10 s; clients watch for silence). */
  pingEveryMs?: number;
}

/** One venue's replay: its path under the API prefix, its OpenAPI text, and the session that speaks its protocol. */
export interface VenueReplay<D> {
  venue: Venue;
  path: string;
  summary: string;
  description: string;
  run(ws: WebSocket, w: ReplayWindow, deps: D): Promise<ReplayOutcome>;
}

class Gone extends Error {}

/** Frames waiting to be written together are written once they hold this many bytes (or when the current work yields). */
const WRITE_BATCH_BYTES = 64 * 1024;

/** What the replay reads of the websocket library's socket and sender to write frames beside it. */
interface WsInternals {
  _socket?: { write(b: Buffer): boolean; writable?: boolean };
  _sender?: { _bufferedBytes?: number; _queue?: unknown[] };
}

/**
 * Text messages as websocket frames, one after the other in one buffer (RFC 6455 5.2: a
 * server's frames are unmasked; FIN and the text opcode, then the length in 7, 16 or 64 bits).
 */
export function textFrames(texts: readonly string[]): { buf: Buffer; payload: number } {
  const lengths = new Array<number>(texts.length);
  let total = 0;
  let payload = 0;
  for (let i = 0; i < texts.length; i++) {
    const n = Buffer.byteLength(texts[i]!, 'utf8');
    lengths[i] = n;
    payload += n;
    total += n + (n < 126 ? 2 : n < 65536 ? 4 : 10);
  }
  const buf = Buffer.allocUnsafe(total);
  let at = 0;
  for (let i = 0; i < texts.length; i++) {
    const n = lengths[i]!;
    buf[at++] = 0x81;
    if (n < 126) buf[at++] = n;
    else if (n < 65536) {
      buf[at++] = 126;
      buf.writeUInt16BE(n, at);
      at += 2;
    } else {
      buf[at++] = 127;
      buf.writeUInt32BE(Math.floor(n / 2 ** 32), at);
      buf.writeUInt32BE(n >>> 0, at + 4);
      at += 8;
    }
    at += buf.write(texts[i]!, at, 'utf8');
  }
  return { buf, payload };
}

export class ReplaySocket {
  private readonly abort = new AbortController();
  private over = false;
  private corked = false;
  /** Frames sent but not yet written (written together: writeBatch). */
  private readonly pending: string[] = [];
  private pendingChars = 0;
  private writeScheduled = false;
  private t0 = 0;
  /** When the replay last waited (for its pace, the client, or a turn of breathe). */
  private lastWait = 0;
  /** Records seen by breathe. */
  private breaths = 0;
  private resolve!: (o: ReplayOutcome) => void;
  private readonly subscribeTimer: NodeJS.Timeout;
  private readonly pinger: NodeJS.Timeout | null;
  readonly outcome: Promise<ReplayOutcome>;

  constructor(
    private readonly ws: WebSocket,
    private readonly w: ReplayWindow,
    o: ReplaySocketOptions = {},
  ) {
    this.outcome = new Promise((r) => (this.resolve = r));
    this.subscribeTimer = setTimeout(() => this.finish('no_subscribe', 1008, 'no subscribe message'), w.subscribeWaitMs ?? SUBSCRIBE_WAIT_MS);
    this.pinger = o.pingEveryMs
      ? setInterval(() => {
          if (!this.over && ws.readyState === WebSocket.OPEN) ws.ping();
        }, o.pingEveryMs)
      : null;
    ws.on('close', () => this.finish('client_left'));
    ws.on('error', () => this.finish('client_left'));
  }

  /** The replay has ended (nothing more is sent). */
  get ended(): boolean {
    return this.over;
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** Text messages from the client (binary ones are read as UTF-8 text). */
  onText(fn: (text: string) => void): void {
    this.ws.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
      if (this.over) return;
      const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
      fn(buf.toString('utf8'));
    });
  }

  /** A small answer outside the replayed stream (PONG, INVALID OPERATION): not paced, not held back. */
  control(text: string): void {
    if (!this.over && this.ws.readyState === WebSocket.OPEN) {
      this.writeBatch();
      this.wsSend(text);
    }
  }

  /** Runs the replay once the client has subscribed; its failures end the socket with a clear code. */
  start(run: () => Promise<void>): void {
    this.subscribed();
    run().catch((e: unknown) => this.fail(e));
  }

  /** A subscription was accepted: the wait for one is over. */
  subscribed(): void {
    clearTimeout(this.subscribeTimer);
  }

  /** Ends the replay for a failure of its own work (a read, a command's answer) with a clear code. */
  fail(e: unknown): void {
    if (e instanceof Gone || this.over) return;
    if (e instanceof StreamBusyError) return this.finish('busy', 1013, 'the store is busy: retry later');
    this.w.log.error({ err: e }, 'replay failed');
    this.finish('failed', 1011, 'replay failed: internal error');
  }

  /** The pace's origin: now (after the opening frames). */
  clockStarts(): void {
    this.t0 = performance.now();
    this.lastWait = this.t0;
  }

  /**
   * Called once a record by a replay's loop: a run of frames that never waits yields to the
   * event loop once it has run YIELD_MS since the last wait, so that commands are answered
   * and the process's other work (this socket's writes too) goes on. Returns the promise to
   * await then, and undefined (nearly always) otherwise: no promise per record.
   */
  breathe(): Promise<void> | undefined {
    if ((++this.breaths & 255) !== 0 || performance.now() - this.lastWait <= YIELD_MS) return undefined;
    return turn().then(() => {
      this.lastWait = performance.now();
    });
  }

  /**
   * A frame of event time `ts` sent now, without waiting, when it may be: due (or not paced)
   * and the client not behind. False: nothing was sent, the caller awaits `sendAt`. A fast
   * replay sends almost every frame this way, with no promise per frame.
   */
  trySend(text: string, ts: number): boolean {
    if (this.over) throw new Gone();
    if (this.w.speed !== null && this.dueIn(ts) > 0) return false;
    if (this.ws.bufferedAmount + this.pendingChars >= HIGH_WATER) return false;
    this.enqueue(text);
    return true;
  }

  /**
   * A frame to write with the others sent in the same run of work: one socket write for many
   * frames, the frames made here (textFrames) rather than one header and one write each by
   * the websocket library, which was most of a fast replay's time after the reads. Written
   * when WRITE_BATCH_BYTES are waiting or when the work yields (nextTick), and before
   * anything else is sent on the socket, so that the order stays the order sent. Where the
   * library's internals are not as expected, the frame goes through `ws.send`.
   */
  private enqueue(text: string): void {
    const ws = this.ws as unknown as WsInternals;
    if (typeof ws._socket?.write !== 'function' || ws._sender === undefined) {
      this.batch();
      this.wsSend(text);
      return;
    }
    this.pending.push(text);
    this.pendingChars += text.length;
    if (this.pendingChars >= WRITE_BATCH_BYTES) this.writeBatch();
    else if (!this.writeScheduled) {
      this.writeScheduled = true;
      process.nextTick(() => {
        this.writeScheduled = false;
        this.writeBatch();
      });
    }
  }

  /** A frame through the websocket library, counted where every frame sent is (w.sent). */
  private wsSend(text: string, done?: (err?: Error) => void): void {
    this.w.sent?.(Buffer.byteLength(text));
    if (done === undefined) this.ws.send(text);
    else this.ws.send(text, done);
  }

  /** Writes the frames waiting (enqueue), in one write. */
  private writeBatch(): void {
    if (this.pending.length === 0) return;
    const texts = this.pending.splice(0);
    this.pendingChars = 0;
    if (this.ws.readyState !== WebSocket.OPEN) return;
    const ws = this.ws as unknown as WsInternals;
    // The library holds frames of its own (it does not here: no compression): they go first.
    if ((ws._sender?._bufferedBytes ?? 0) > 0 || (ws._sender?._queue?.length ?? 0) > 0) {
      for (const t of texts) this.wsSend(t);
      return;
    }
    const { buf, payload } = textFrames(texts);
    ws._socket!.write(buf);
    this.w.sent?.(payload);
  }

  /** Frames sent now, in this order, without waiting, when the client is not behind; false: nothing was sent, the caller awaits `sendAll`. */
  trySendAll(texts: readonly string[]): boolean {
    if (this.over) throw new Gone();
    if (texts.length === 0) return true;
    if (this.ws.bufferedAmount + this.pendingChars >= HIGH_WATER) return false;
    for (const t of texts) this.enqueue(t);
    return true;
  }

  /** Event time `ts` is due now (always when not paced). */
  due(ts: number): boolean {
    return this.w.speed === null || this.dueIn(ts) <= 0;
  }

  /** How long until event time `ts` is due, in ms (paced replays only). */
  private dueIn(ts: number): number {
    return this.t0 + (ts - this.w.fromMs) / this.w.speed! - performance.now();
  }

  /** A frame of event time `ts`, at its time when paced. */
  async sendAt(text: string, ts: number): Promise<void> {
    await this.waitUntil(ts);
    await this.send(text);
  }

  /**
   * Until event time `ts` is due (at once when not paced). A timer fires late by up to a
   * millisecond or more (its clock has millisecond steps), so it is set to wake EARLY_MS
   * before the due time, and the rest is waited in turns of the event loop (setImmediate:
   * other sockets' I/O still runs between them) until the due time has come. That costs a
   * little CPU per paced frame (at most EARLY_MS of turns) and keeps each frame within a
   * fraction of a millisecond of its time on a quiet machine.
   */
  async waitUntil(ts: number): Promise<void> {
    const wait = this.w.speed === null ? 0 : this.dueIn(ts);
    if (wait > 0) {
      if (wait > EARLY_MS) {
        try {
          await sleep(wait - EARLY_MS, undefined, { signal: this.abort.signal });
        } catch {
          throw new Gone();
        }
      }
      while (!this.over && this.dueIn(ts) > 0) await turn();
      this.lastWait = performance.now();
    }
    if (this.over) throw new Gone();
  }

  /**
   * Frames now, handed to the socket in this order at once (so that nothing sent meanwhile
   * comes between them), then waiting for the socket to drain when the client is behind.
   */
  async sendAll(texts: readonly string[]): Promise<void> {
    if (texts.length === 0) return;
    if (this.over) throw new Gone();
    for (let i = 0; i < texts.length - 1; i++) this.enqueue(texts[i]!);
    await this.send(texts[texts.length - 1]!);
  }

  /**
   * Holds the socket's writes until the current run of work yields to I/O, so that the
   * frames sent meanwhile go to the kernel in one write: one write per frame (200,000 of
   * them for a busy day) was half the replay's CPU in a profile. Paced frames are held for
   * no longer than the tick they are sent in.
   */
  private batch(): void {
    if (this.corked) return;
    const socket = (this.ws as unknown as { _socket?: { cork?: () => void; uncork?: () => void } })._socket;
    if (typeof socket?.cork !== 'function' || typeof socket.uncork !== 'function') return;
    socket.cork();
    this.corked = true;
    process.nextTick(() => {
      this.corked = false;
      socket.uncork!();
    });
  }

  /** A frame now, waiting for the socket to drain when the client is behind. */
  async send(text: string): Promise<void> {
    if (this.over) throw new Gone();
    if (this.ws.bufferedAmount + this.pendingChars < HIGH_WATER) {
      this.enqueue(text);
      return;
    }
    this.writeBatch();
    this.batch();
    await new Promise<void>((resolve, reject) => {
      const stall = setTimeout(() => {
        this.w.log.info('replay client stopped reading: dropped');
        this.ws.terminate();
        reject(new Gone());
      }, this.w.stallMs ?? STALL_MS);
      this.wsSend(text, (err) => {
        clearTimeout(stall);
        if (err || this.over) reject(new Gone());
        else resolve();
      });
    });
    this.lastWait = performance.now();
  }

  /** Ends the replay once: the read is aborted; `code` closes the socket (none: it is gone already). */
  finish(outcome: ReplayOutcome, code?: number, reason?: string): void {
    if (this.over) return;
    this.over = true;
    clearTimeout(this.subscribeTimer);
    if (this.pinger) clearInterval(this.pinger);
    this.abort.abort();
    // The frames sent before the end are written before the close frame.
    this.writeBatch();
    if (code !== undefined && this.ws.readyState === WebSocket.OPEN) this.ws.close(code, reason);
    this.resolve(outcome);
  }
}

import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer, type RawData } from 'ws';

/** Counters one venue endpoint keeps (monotonic except `connections`). */
export interface VenueCounters {
  /** Connections open now. */
  connections: number;
  /** Connections accepted since start. */
  connectionsTotal: number;
  /** Websocket frames sent (data, control answers, books, garbage). */
  frames: number;
  /** Venue events delivered (an event sent to two connections counts twice). */
  events: number;
  /** Text bytes sent. */
  bytes: number;
}

export function newCounters(): VenueCounters {
  return { connections: 0, connectionsTotal: 0, frames: 0, events: 0, bytes: 0 };
}

/** The markets of one venue that have at least one subscriber: O(1) add, remove and pick. */
export class ActiveList<T extends { activeIndex: number }> {
  readonly items: T[] = [];

  add(item: T): void {
    if (item.activeIndex >= 0) return;
    item.activeIndex = this.items.length;
    this.items.push(item);
  }

  remove(item: T): void {
    const i = item.activeIndex;
    if (i < 0) return;
    const last = this.items.pop() as T;
    if (last !== item) {
      this.items[i] = last;
      last.activeIndex = i;
    }
    item.activeIndex = -1;
  }

  get size(): number {
    return this.items.length;
  }
}

/** Answers an upgrade request with a plain HTTP error and closes the socket. */
export function rejectUpgrade(socket: Duplex, status: number, reason: string, message: string): void {
  const body = JSON.stringify({ error: { code: status, message } });
  // Destroy only after the answer is flushed (as ws's own abortHandshake does).
  socket.once('finish', () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

export function headerValue(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Frames the simulator sends when asked for garbage: broken JSON, binary noise, an unknown shape. */
export const GARBAGE_FRAMES = [
  '{"event_type":"book","asset_id":"12',
  '\u0000\u0001\u0002 not json at all \ufffd',
  '{"unexpected":true,"nested":{"deep":[1,2,3]}}',
  '[{"event_type":"price_change","price_changes":"not a list"}]',
];

/** One client websocket of a venue: what this tick queued for it, and whether it waits to be flushed. */
export class VenueConnection {
  pending: string[] = [];
  dirty = false;

  constructor(
    readonly id: number,
    readonly ws: WebSocket,
    readonly socket: Duplex,
  ) {}
}

/**
 * The websocket side both venues share: accepting and counting connections, queueing frames
 * for the next flush, closing slow consumers, and the drop, garbage and close faults. A venue
 * supplies its connection type, what it does with a client message, how it writes a tick's
 * frames, and what a closed connection gives up.
 */
export abstract class VenueEndpoint<C extends VenueConnection> {
  private readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, clientTracking: false });
  protected readonly conns = new Set<C>();
  private dirty: C[] = [];
  private nextConnId = 1;
  private garbageIndex = 0;

  constructor(
    readonly counters: VenueCounters,
    private readonly slowConsumerBytes: number,
  ) {}

  protected abstract open(id: number, ws: WebSocket, socket: Duplex): C;
  protected abstract onMessage(conn: C, data: RawData, isBinary: boolean): void;
  /** Sends the frames one tick queued for an open connection that keeps up. */
  protected abstract write(conn: C, frames: string[]): void;
  /** Gives up what a closed connection had subscribed to. */
  protected abstract release(conn: C): void;

  protected accept(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.wss.handleUpgrade(req, socket, head, (ws) => this.onConnection(ws, socket));
  }

  private onConnection(ws: WebSocket, socket: Duplex): void {
    const conn = this.open(this.nextConnId++, ws, socket);
    this.conns.add(conn);
    this.counters.connections++;
    this.counters.connectionsTotal++;
    ws.on('message', (data, isBinary) => this.onMessage(conn, data, isBinary));
    ws.on('error', () => undefined); // a reset client is normal here; 'close' follows
    ws.on('close', () => {
      this.conns.delete(conn);
      this.counters.connections--;
      this.release(conn);
      conn.pending = [];
    });
  }

  /** Sends one frame now, outside the tick's batch (answers, books, snapshots). */
  protected send(conn: C, text: string, events: number): void {
    if (conn.ws.readyState !== WebSocket.OPEN) return;
    conn.ws.send(text);
    this.counters.frames++;
    this.counters.bytes += text.length;
    this.counters.events += events;
  }

  /** Queues one event for the next flush. */
  protected queue(conn: C, text: string): void {
    conn.pending.push(text);
    if (!conn.dirty) {
      conn.dirty = true;
      this.dirty.push(conn);
    }
  }

  /** Sends what this tick queued. */
  flush(): void {
    for (const conn of this.dirty) {
      conn.dirty = false;
      const p = conn.pending;
      conn.pending = [];
      const ws = conn.ws;
      if (ws.readyState !== WebSocket.OPEN) continue;
      if (ws.bufferedAmount > this.slowConsumerBytes) {
        // The venues close slow consumers with 1013.
        ws.close(1013, 'slow consumer');
        setTimeout(() => ws.terminate(), 2000).unref();
        continue;
      }
      this.write(conn, p);
    }
    this.dirty = [];
  }

  dropAll(): number {
    const n = this.conns.size;
    for (const conn of this.conns) conn.ws.terminate();
    return n;
  }

  garbage(): void {
    const text = GARBAGE_FRAMES[this.garbageIndex++ % GARBAGE_FRAMES.length] as string;
    for (const conn of this.conns) this.send(conn, text, 0);
  }

  close(): void {
    this.dropAll();
    this.wss.close();
  }
}

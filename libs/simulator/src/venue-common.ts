import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

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

import { createHash } from 'node:crypto';
import { setImmediate as yieldToLoop } from 'node:timers/promises';

/**
 * Large summary answers take turns (issue 27). A whole day at R=1 is 86,400 buckets and
 * about 37 MB of JSON: reading, filling, writing and tagging one is seconds of work on a
 * busy machine and hundreds of MB of short-lived objects. Done 200 at a time (one key's
 * connections) they held the event loop and the heap together: the health check took
 * seconds and other keys' small reads timed out. So an answer of at least LARGE_ANSWER_BUCKETS
 * buckets is built while holding one of `size` turns of the process; keys are served
 * round-robin (one key's queue never delays another key's answer by more than one turn per
 * key ahead of it), and small answers never wait. The work within a turn yields between
 * slices (summary-body.ts, `digestInSlices`), so other requests still run meanwhile.
 */
export const LARGE_ANSWER_BUCKETS = 20_000;

export class FairTurns {
  private running = 0;
  /** Waiting requests per key, and the keys in the order they get their next turn. */
  private readonly queues = new Map<string, Array<() => void>>();
  private readonly order: string[] = [];

  constructor(private readonly size: number) {}

  /** A turn at once where one is free and no request waits for one (give it back by calling it, once); else undefined. */
  takeNow(): (() => void) | undefined {
    if (this.running < this.size && this.order.length === 0) {
      this.running++;
      return this.giver();
    }
    return undefined;
  }

  /** Resolves when `key` has a turn; call the returned function to give it back (once). */
  async take(key: string): Promise<() => void> {
    const now = this.takeNow();
    if (now !== undefined) return now;
    await new Promise<void>((resolve) => {
      let q = this.queues.get(key);
      if (!q) {
        this.queues.set(key, (q = []));
        this.order.push(key);
      }
      q.push(resolve);
    });
    return this.giver();
  }

  /** Requests waiting for a turn (all keys). */
  get waiting(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.length;
    return n;
  }

  private giver(): () => void {
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.running--;
      this.next();
    };
  }

  private next(): void {
    while (this.running < this.size && this.order.length > 0) {
      const key = this.order.shift()!;
      const q = this.queues.get(key)!;
      const wake = q.shift()!;
      // The key goes to the back of the line if it has more waiting.
      if (q.length > 0) this.order.push(key);
      else this.queues.delete(key);
      this.running++;
      wake();
    }
  }
}

/** Bytes hashed between turns of the event loop. */
const DIGEST_SLICE = 4 * 1024 * 1024;

/**
 * etagOf's tag (http/caching.ts) of `parts`, the large buffers hashed a slice at a time with
 * the event loop turning between slices. A part given as an array of buffers is one part,
 * their concatenation (a body sent in pieces has the tag of the whole).
 */
export async function etagInSlices(...parts: ReadonlyArray<string | number | Buffer | readonly Buffer[]>): Promise<string> {
  const h = createHash('sha256');
  let since = 0;
  for (const p of parts) {
    const pieces = Array.isArray(p) ? (p as readonly Buffer[]) : Buffer.isBuffer(p) ? [p] : null;
    if (pieces === null) h.update(typeof p === 'number' ? String(p) : (p as string));
    else {
      for (const b of pieces) {
        for (let at = 0; at < b.length; ) {
          const end = Math.min(b.length, at + DIGEST_SLICE - since);
          h.update(b.subarray(at, end));
          since += end - at;
          at = end;
          if (since >= DIGEST_SLICE) {
            await yieldToLoop();
            since = 0;
          }
        }
      }
    }
    h.update('\u0000');
  }
  return `"${h.digest('hex').slice(0, 32)}"`;
}

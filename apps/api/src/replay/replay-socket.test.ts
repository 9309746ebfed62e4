import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createRequire } from 'node:module';
import { EventEmitter } from 'node:events';
import type { WebSocket } from 'ws';
import type { Logger } from '@booktape/config';
import { ReplaySocket, textFrames } from './replay-socket.ts';

/** The websocket library's frame parser (not in its type declarations). */
interface FrameReceiver {
  on(event: 'message', fn: (data: Buffer, isBinary: boolean) => void): void;
  on(event: 'error', fn: (e: Error) => void): void;
  write(chunk: Buffer, cb: () => void): void;
}
const { Receiver } = createRequire(import.meta.url)('ws') as { Receiver: new (o: { isServer: boolean; maxPayload: number }) => FrameReceiver };

/**
 * The frames the replay writes itself (textFrames) read back by the websocket library's own
 * receiver, as a client reads them: the same messages, in order, as text, whatever their
 * length (7-, 16- and 64-bit lengths) and characters (multi-byte UTF-8).
 */

function received(buf: Buffer): Promise<string[]> {
  return new Promise((resolve, reject) => {
    // A client's receiver: frames from a server are unmasked.
    const r = new Receiver({ isServer: false, maxPayload: 0 });
    const out: string[] = [];
    r.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) reject(new Error('binary frame'));
      out.push(data.toString('utf8'));
    });
    r.on('error', reject);
    r.write(buf, () => resolve(out));
  });
}

describe('textFrames', () => {
  it('frames every length class a client reads back as the same texts', async () => {
    const texts = ['', 'x', 'a'.repeat(125), 'b'.repeat(126), 'c'.repeat(65_535), 'd'.repeat(65_536), 'é€😀'.repeat(50), '{"event_type":"book"}'];
    const { buf, payload } = textFrames(texts);
    expect(payload).toBe(texts.reduce((n, t) => n + Buffer.byteLength(t), 0));
    expect(await received(buf)).toEqual(texts);
  });

  it('frames arbitrary texts a client reads back unchanged', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(fc.string({ unit: 'grapheme', maxLength: 200 }), fc.string({ minLength: 120, maxLength: 140 })), { maxLength: 20 }), async (texts) => {
        expect(await received(textFrames(texts).buf)).toEqual(texts);
      }),
      { numRuns: 200 },
    );
  });
});

describe('ReplaySocket.breathe', () => {
  // The clock is the test's: a loaded machine (a CI run) can take more than 5 ms over 256
  // calls, and the rule is about the clock, not about how fast this machine is.
  let now = 0;
  beforeEach(() => {
    now = 1_000;
    vi.spyOn(performance, 'now').mockImplementation(() => now);
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('yields once every 256 records, and only after 5 ms without a wait', async () => {
    const s = new ReplaySocket(new EventEmitter() as unknown as WebSocket, { fromMs: 0, toMs: 1, speed: null, log: {} as Logger });
    s.clockStarts();
    try {
      now += 6;
      // Records 1-255: no promise however long since the last wait.
      for (let i = 1; i < 256; i++) expect(s.breathe()).toBeUndefined();
      const pause = s.breathe();
      expect(pause).toBeInstanceOf(Promise);
      await pause;
      // Just yielded: the next 256 records do not yield again while under 5 ms pass...
      now += 5;
      for (let i = 0; i < 256; i++) expect(s.breathe()).toBeUndefined();
      // ...and the 256th after that yields once more than 5 ms have passed since the wait.
      now += 1;
      for (let i = 1; i < 256; i++) expect(s.breathe()).toBeUndefined();
      expect(s.breathe()).toBeInstanceOf(Promise);
    } finally {
      s.finish('done');
    }
  });
});

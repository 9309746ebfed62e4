import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { EXIT_BAD_LINES, EXIT_FRAMES_REFUSED, EXIT_SUMMARIES_TIMEOUT, EXIT_TOO_LARGE, cacheWaitMs, replayExitCode } from './replay.ts';

describe('replay --wait: how long the API result cache is outlasted', () => {
  it('waits until the cache lifetime has passed since the data was confirmed stored, never less, never negative', () => {
    fc.assert(
      fc.property(fc.nat(1e9), fc.nat(120_000), fc.nat(60_000), (stored, elapsed, ttl) => {
        const now = stored + elapsed;
        const left = cacheWaitMs(stored, now, ttl);
        expect(left).toBeGreaterThanOrEqual(0);
        // Returning after `left` ms: every answer loaded before `stored` has expired.
        expect(now + left).toBeGreaterThanOrEqual(stored + ttl);
        // And no longer than needed.
        expect(left === 0 || now + left === stored + ttl).toBe(true);
      }),
    );
  });
});

describe('replay exit status', () => {
  const none = { badLines: [], deadLetters: 0 };
  const bad = { badLines: [{ file: 'f', lineNo: 1, error: 'not JSON' }], deadLetters: 0 };
  it('puts records lost to Kafka first, then an unsettled rollup, then malformed lines', () => {
    expect(replayExitCode(none, 0, true)).toBe(0);
    expect(replayExitCode(bad, 0, true)).toBe(EXIT_BAD_LINES);
    expect(replayExitCode(bad, 0, false)).toBe(EXIT_SUMMARIES_TIMEOUT);
    expect(replayExitCode(bad, 2, false)).toBe(EXIT_TOO_LARGE);
    expect(replayExitCode(none, 1, true)).toBe(EXIT_TOO_LARGE);
  });

  it('is never 0 when a frame was refused and dead-lettered, whatever else happened', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1e6 }), fc.nat(3), fc.nat(3), fc.boolean(), (deadLetters, badLines, tooLarge, settled) => {
        const summary = { deadLetters, badLines: Array.from({ length: badLines }, (_, i) => ({ file: 'f', lineNo: i, error: 'x' })) };
        const code = replayExitCode(summary, tooLarge, settled);
        expect(code).toBe(tooLarge > 0 ? EXIT_TOO_LARGE : !settled ? EXIT_SUMMARIES_TIMEOUT : EXIT_FRAMES_REFUSED);
      }),
    );
  });
});

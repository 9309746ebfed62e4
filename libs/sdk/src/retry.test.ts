import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { DEFAULT_RETRY, parseRetryAfter, retryDelay, sleep } from './retry.ts';

const NOW = Date.UTC(2026, 4, 2, 10, 0, 0);

describe('parseRetryAfter', () => {
  it('reads delay-seconds as milliseconds', () => {
    expect(parseRetryAfter('1', NOW)).toBe(1000);
    expect(parseRetryAfter('0', NOW)).toBe(0);
    expect(parseRetryAfter(' 120 ', NOW)).toBe(120_000);
    expect(parseRetryAfter('1209600', NOW)).toBe(1_209_600_000);
  });

  it('reads an HTTP date relative to now, a past one as 0', () => {
    expect(parseRetryAfter('Sat, 02 May 2026 10:00:05 GMT', NOW)).toBe(5000);
    expect(parseRetryAfter(new Date(NOW + 90_000).toUTCString(), NOW)).toBe(90_000);
    expect(parseRetryAfter('Fri, 01 May 2026 10:00:00 GMT', NOW)).toBe(0);
    // RFC 850 form, still to be accepted by recipients (RFC 9110 5.6.7)
    expect(parseRetryAfter('Saturday, 02-May-26 10:00:07 GMT', NOW)).toBe(7000);
  });

  it('ignores absent, negative, fractional and non-date values', () => {
    for (const v of [null, undefined, '', '-1', '1.5', 'soon', '1e3', 'Sat, garbage GMT']) expect(parseRetryAfter(v, NOW), String(v)).toBeUndefined();
  });

  it('any whole number of seconds round-trips', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 10 ** 9 }), (s) => parseRetryAfter(String(s), NOW) === s * 1000));
  });
});

describe('retryDelay', () => {
  const policy = { ...DEFAULT_RETRY, maxRetries: 3, maxRetryDelayMs: 10_000, baseDelayMs: 200 };

  it('waits what Retry-After says, and stops after maxRetries', () => {
    expect(retryDelay(policy, 0, 1000)).toBe(1000);
    expect(retryDelay(policy, 2, 0)).toBe(0);
    expect(retryDelay(policy, 3, 1000)).toBeUndefined();
  });

  it('does not wait a Retry-After above the cap (a monthly quota): the caller hears at once', () => {
    expect(retryDelay(policy, 0, 10_000)).toBe(10_000);
    expect(retryDelay(policy, 0, 10_001)).toBeUndefined();
  });

  it('without Retry-After backs off exponentially with jitter in the upper half of each step, capped', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (attempt, r) => {
        const step = Math.min(policy.maxRetryDelayMs, policy.baseDelayMs * 2 ** attempt);
        const d = retryDelay(policy, attempt, undefined, () => r)!;
        return d >= step / 2 && d <= step;
      }),
    );
    const big = { ...policy, maxRetries: 30 };
    expect(retryDelay(big, 20, undefined, () => 0.999)).toBeLessThanOrEqual(big.maxRetryDelayMs);
    // Two clients refused together come back apart.
    expect(retryDelay(policy, 1, undefined, () => 0)).not.toBe(retryDelay(policy, 1, undefined, () => 0.9));
  });
});

describe('sleep', () => {
  it('rejects with the abort reason as soon as the signal aborts', async () => {
    const c = new AbortController();
    const started = Date.now();
    const p = sleep(10_000, c.signal);
    setTimeout(() => c.abort(new Error('stop')), 20);
    await expect(p).rejects.toThrow('stop');
    expect(Date.now() - started).toBeLessThan(2000);
  });
});

/**
 * When to try a request again: pure rules, no I/O.
 *
 * The API answers 429 (quota or burst limit) and 503 (a store unreachable or saturated)
 * with a Retry-After; every other status is final. Requests the SDK makes are all reads,
 * so repeating one is safe.
 */

export const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/**
 * Retry-After (RFC 9110 10.2.3) in milliseconds: delay-seconds or an HTTP date, relative to
 * `nowMs`. A date in the past is 0. Anything else (absent, negative, garbage) is undefined.
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number = Date.now()): number | undefined {
  if (value == null) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  // An HTTP date always names the weekday and GMT; Date.parse also takes things that are not
  // dates ("1.5", "2026"), so only text that looks like one is read as one.
  if (!/^[A-Za-z]{3},? .*GMT$|^[A-Za-z]+, \d/.test(v)) return undefined;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

export interface RetryPolicy {
  /** Attempts after the first. */
  maxRetries: number;
  /** A wait longer than this is not waited: the error goes to the caller (a monthly quota resets in days). */
  maxRetryDelayMs: number;
  /** First back-off step when the answer gave no Retry-After; doubles per attempt. */
  baseDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxRetries: 3, maxRetryDelayMs: 60_000, baseDelayMs: 500 };

/**
 * How long to wait before retry number `attempt` (0-based), or undefined for "do not retry".
 * With a Retry-After the wait is exactly that (the API knows when its window ends); without
 * one it is a random point in the upper half of an exponential step (capped), so many
 * clients refused together do not come back together.
 */
export function retryDelay(policy: RetryPolicy, attempt: number, retryAfterMs: number | undefined, random: () => number = Math.random): number | undefined {
  if (attempt >= policy.maxRetries) return undefined;
  if (retryAfterMs !== undefined) return retryAfterMs <= policy.maxRetryDelayMs ? retryAfterMs : undefined;
  const step = Math.min(policy.maxRetryDelayMs, policy.baseDelayMs * 2 ** attempt);
  return Math.round(step / 2 + random() * (step / 2));
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

import type { Plan } from '../billing/plans.ts';

/**
 * Plans, their limits and the quota period: pure rules, no I/O.
 *
 * - Each plan has a monthly request quota and a per-second burst limit; null = unlimited.
 * - The period is the calendar month in UTC: a user's count starts at 0 at 00:00 UTC on the
 *   1st. (Not the Stripe billing cycle: free users have none, and one rule for everyone is
 *   easy to state and to check.)
 * - The burst limit is per user (all of a user's keys together), over fixed one-second
 *   windows of the Redis server's clock: more keys do not buy more throughput.
 */

export interface PlanLimit {
  /** Successful billable requests per calendar month (UTC); null = unlimited. */
  monthly: number | null;
  /** Requests per second (per user, all keys together); null = unlimited. */
  perSecond: number | null;
  /** Requests in progress at once per API key in one API process (usage/concurrency.ts); null or absent = no cap. */
  concurrent?: number | null;
}

export type PlanLimits = Record<Plan, PlanLimit>;

/** Defaults when PLAN_* are unset (the interface leaves quota sizes open). */
export const DEFAULT_PLAN_LIMITS: PlanLimits = {
  free: { monthly: 1_000, perSecond: 5, concurrent: 2 },
  starter: { monthly: 100_000, perSecond: 20, concurrent: 4 },
  pro: { monthly: null, perSecond: 100, concurrent: 8 },
};

export const UNLIMITED_PLANS: PlanLimits = {
  free: { monthly: null, perSecond: null },
  starter: { monthly: null, perSecond: null },
  pro: { monthly: null, perSecond: null },
};

/** A limit from the environment: a non-negative integer, 0 or `unlimited` meaning no limit. */
export function parseLimit(raw: string): number | null | undefined {
  const s = raw.trim().toLowerCase();
  if (s === 'unlimited') return null;
  if (!/^\d{1,15}$/.test(s)) return undefined;
  const n = Number(s);
  return n === 0 ? null : n;
}

export interface Period {
  /** `YYYY-MM`. */
  id: string;
  /** First millisecond of the month (UTC). */
  startMs: number;
  /** First millisecond of the next month: the reset time. */
  endMs: number;
}

export function periodOf(ms: number): Period {
  const d = new Date(ms);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  return {
    id: `${String(y).padStart(4, '0')}-${String(m + 1).padStart(2, '0')}`,
    startMs: Date.UTC(y, m, 1),
    endMs: Date.UTC(y, m + 1, 1),
  };
}

/** First millisecond of the UTC day of `ms`. */
export function dayStart(ms: number): number {
  return Math.floor(ms / 86_400_000) * 86_400_000;
}

/** Whole seconds until `resetMs` (at least 1: Retry-After 0 would invite a busy loop). */
export function retryAfterSeconds(resetMs: number, nowMs: number): number {
  return Math.max(1, Math.ceil((resetMs - nowMs) / 1000));
}

export type LimitName = 'monthly' | 'per_second';

/** Why a request was refused: which limit, how far it is used, when it resets. */
export interface Exceeded {
  limit: LimitName;
  plan: Plan;
  /** The limit's value. */
  allowed: number;
  /** Counted in the limit's window: quota units this month (1 per call, a bulk export's days); requests this second. */
  used: number;
  /** What the refused request counts in that window: 1, or a bulk export's days (monthly). */
  requested: number;
  /** `YYYY-MM` for the monthly limit; the second (ISO 8601) for the burst limit. */
  window: string;
  resetsAtMs: number;
  retryAfterS: number;
}

/** The 429 body: the error of docs/rules/api-decisions.md plus the limit in numbers. */
export function quotaExceededBody(e: Exceeded) {
  const resetsAt = new Date(e.resetsAtMs).toISOString();
  const message =
    e.limit !== 'monthly'
      ? `rate limit of the ${e.plan} plan exceeded (${e.allowed} requests per second); retry after ${e.retryAfterS} s`
      : e.requested > 1
        ? `this request counts ${e.requested} against the monthly request quota of the ${e.plan} plan, and ${Math.max(0, e.allowed - e.used)} of ${e.allowed} remain in ${e.window}; it resets at ${resetsAt}`
        : `monthly request quota of the ${e.plan} plan used up (${e.used} of ${e.allowed} in ${e.window}); it resets at ${resetsAt}`;
  return {
    error: { code: 'rate_limited' as const, message },
    quota: {
      limit: e.limit,
      plan: e.plan,
      allowed: e.allowed,
      used: e.used,
      remaining: Math.max(0, e.allowed - e.used),
      requested: e.requested,
      window: e.window,
      resets_at: resetsAt,
      retry_after_seconds: e.retryAfterS,
    },
  };
}

/**
 * Where a user stands against the limits of a plan at one instant, as the RateLimit headers
 * say it. `monthlyUsed`: quota units counted this period; `secondUsed`: requests let through
 * in the current one-second window (the Redis clock's second).
 */
export interface LimitState {
  limit: PlanLimit;
  period: Period;
  monthlyUsed: number;
  secondUsed: number;
  nowMs: number;
}

/**
 * The RateLimit response fields (draft-ietf-httpapi-ratelimit-headers-06: `RateLimit-Limit`,
 * `RateLimit-Remaining`, `RateLimit-Reset`, `RateLimit-Policy`), or null for a plan without
 * limits.
 *
 * Limit / Remaining / Reset describe ONE policy, the one closest to refusing: the one with
 * the fewest units remaining (a tie goes to the one that resets later, the longer wait).
 * Reset is delta-seconds: 1 for the one-second window, whole seconds until the month ends
 * for the monthly quota (at least 1). Policy lists every limit of the plan, `<quota>;w=<window
 * seconds>`, the burst first; the monthly window is the length of the current month.
 * A 429 (`refusedBy`) describes the limit that refused it.
 */
export function rateLimitFields(s: LimitState, refusedBy?: LimitName): Record<string, string> | null {
  const policies: Array<{ name: LimitName; limit: number; remaining: number; reset: number; window: number }> = [];
  if (s.limit.perSecond !== null) {
    policies.push({ name: 'per_second', limit: s.limit.perSecond, remaining: Math.max(0, s.limit.perSecond - s.secondUsed), reset: 1, window: 1 });
  }
  if (s.limit.monthly !== null) {
    policies.push({
      name: 'monthly',
      limit: s.limit.monthly,
      remaining: Math.max(0, s.limit.monthly - s.monthlyUsed),
      reset: retryAfterSeconds(s.period.endMs, s.nowMs),
      window: Math.round((s.period.endMs - s.period.startMs) / 1000),
    });
  }
  if (policies.length === 0) return null;
  const refusing = policies.find((p) => p.name === refusedBy);
  const pick = refusing ?? policies.reduce((a, b) => (b.remaining < a.remaining || (b.remaining === a.remaining && b.reset > a.reset) ? b : a));
  return {
    'ratelimit-limit': String(pick.limit),
    'ratelimit-remaining': String(pick.remaining),
    'ratelimit-reset': String(pick.reset),
    'ratelimit-policy': policies.map((p) => `${p.limit};w=${p.window}`).join(', '),
  };
}

/** The 429 body when a key has as many requests in progress as its plan allows here. */
export function tooManyConcurrentBody(plan: Plan, allowed: number) {
  return {
    error: {
      code: 'too_many_concurrent_requests' as const,
      message: `this API key already has ${allowed} request${allowed === 1 ? '' : 's'} in progress, the most the ${plan} plan allows at once; retry when one of them has ended`,
    },
    concurrency: { limit: 'requests' as const, allowed, retry_after_seconds: 1 },
  };
}

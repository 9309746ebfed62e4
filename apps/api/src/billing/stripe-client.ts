import Stripe from 'stripe';
import { ApiError, UnavailableError } from '../http/errors.ts';
import type { PriceIds } from './plans.ts';

/** Billing configuration (STRIPE_* variables); absent when STRIPE_SECRET_KEY is unset. */
export interface BillingConfig {
  secretKey: string;
  webhookSecret: string;
  prices: PriceIds;
  /** Where the Stripe API is (tests, self-hosted mocks); unset: Stripe's own. */
  apiBase: string | undefined;
  /** Used when a request leaves the URL out; unset: the request must give it (interface §4.8). */
  successUrl: string | undefined;
  cancelUrl: string | undefined;
  returnUrl: string | undefined;
  /** Per Stripe request. */
  timeoutMs: number;
}

/** host / port / protocol options of the Stripe SDK from a base URL such as http://127.0.0.1:12111. */
export function stripeConnection(apiBase: string | undefined): { host?: string; port?: number; protocol?: 'http' | 'https' } {
  if (!apiBase) return {};
  const u = new URL(apiBase);
  const protocol = u.protocol === 'http:' ? 'http' : 'https';
  return { host: u.hostname, port: u.port ? Number(u.port) : protocol === 'http' ? 80 : 443, protocol };
}

export function createStripeClient(cfg: Pick<BillingConfig, 'secretKey' | 'apiBase' | 'timeoutMs'>): Stripe {
  return new Stripe(cfg.secretKey, {
    ...stripeConnection(cfg.apiBase),
    // One retry on a network error (the SDK sends an idempotency key with it); the request
    // fails within about two timeouts, and the caller answers 503.
    maxNetworkRetries: 1,
    timeout: cfg.timeoutMs,
    telemetry: false,
    appInfo: { name: 'booktape' },
  });
}

export type { Stripe };

/** How far, in seconds, a webhook signature's timestamp may be from now, in either direction (Stripe's default). */
export const WEBHOOK_TOLERANCE_S = 300;

/**
 * Why a `Stripe-Signature` header's timestamp is refused, or null. The SDK refuses only a
 * signature older than the tolerance: one dated in the future (t=now+3600, t=1e20) passed,
 * and a captured request signed ahead of time would then be replayable until that date.
 * The header is read the way the SDK reads it (the last `t=`, parseInt) so this checks the
 * very timestamp the signature covers. No `t=` at all is left to the SDK's own refusal.
 */
export function signatureTimeProblem(header: string, nowMs: number, toleranceS: number = WEBHOOK_TOLERANCE_S): string | null {
  let t: number | undefined;
  for (const item of header.split(',')) {
    const [k, v] = item.split('=');
    if (k === 't') t = parseInt(v ?? '', 10);
  }
  if (t === undefined) return null;
  if (!Number.isSafeInteger(t)) return 'its timestamp (t=) is not a Unix time in seconds';
  const skew = t - Math.floor(nowMs / 1000);
  if (Math.abs(skew) <= toleranceS) return null;
  return `its timestamp (t=) is ${Math.abs(skew)} s ${skew > 0 ? 'in the future' : 'old'}, more than the ${toleranceS} s allowed either way`;
}

/** Body fields a Stripe parameter corresponds to (Stripe names the parameter it refused). */
const PARAMS: Record<string, string> = {
  success_url: 'success_url',
  cancel_url: 'cancel_url',
  return_url: 'return_url',
  customer_email: 'email',
};

/**
 * A failed Stripe call as the answer of our API: Stripe unreachable, overloaded, or refusing
 * our own credentials is a 503 (retry later; the log has the detail); a request Stripe
 * refused for its content is a 400 naming the field; an unknown customer a 404.
 */
export function billingError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const e = (err ?? {}) as { type?: unknown; code?: unknown; param?: unknown; message?: unknown; statusCode?: unknown };
  if (e.type === 'StripeInvalidRequestError') {
    if (e.code === 'resource_missing' && typeof e.param === 'string' && e.param === 'customer') {
      return new ApiError(404, 'not_found', 'the Stripe customer of this user no longer exists', 'user_id');
    }
    const param = typeof e.param === 'string' ? PARAMS[e.param] : undefined;
    if (param) {
      const message = typeof e.message === 'string' ? e.message : 'refused by the payment processor';
      return new ApiError(400, 'invalid_parameter', `${param}: ${message}`, param);
    }
  }
  return new UnavailableError('the payment processor (Stripe)', err);
}

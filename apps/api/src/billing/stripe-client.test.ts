import { describe, expect, it } from 'vitest';
import Stripe from 'stripe';
import { ConfigError, parseEnv } from '@booktape/config';
import { apiEnvSchema, billingConfigFromEnv } from '../config.ts';
import { ApiError } from '../http/errors.ts';
import fc from 'fast-check';
import { WEBHOOK_TOLERANCE_S, billingError, signatureTimeProblem, stripeConnection } from './stripe-client.ts';

describe('stripe client', () => {
  it('derives host, port and protocol from STRIPE_API_BASE', () => {
    expect(stripeConnection(undefined)).toEqual({});
    expect(stripeConnection('http://127.0.0.1:12111')).toEqual({ host: '127.0.0.1', port: 12111, protocol: 'http' });
    expect(stripeConnection('https://stripe-mock.internal')).toEqual({ host: 'stripe-mock.internal', port: 443, protocol: 'https' });
    expect(stripeConnection('http://localhost/')).toEqual({ host: 'localhost', port: 80, protocol: 'http' });
  });

  it('turns Stripe being down, overloaded or refusing our key into a 503', () => {
    for (const err of [
      new Stripe.errors.StripeConnectionError({ message: 'connect ECONNREFUSED' }),
      new Stripe.errors.StripeAPIError({ message: 'internal', statusCode: 500 }),
      new Stripe.errors.StripeRateLimitError({ message: 'slow down', statusCode: 429 }),
      new Stripe.errors.StripeAuthenticationError({ message: 'bad key', statusCode: 401 }),
      new Stripe.errors.StripeInvalidRequestError({ message: 'No such price', param: 'line_items[0][price]', statusCode: 400 }),
      new Error('anything else'),
    ]) {
      const e = billingError(err);
      expect(e.statusCode).toBe(503);
      expect(e.code).toBe('service_unavailable');
    }
  });

  it('names the field Stripe refused, and a vanished customer is a 404', () => {
    const bad = billingError(new Stripe.errors.StripeInvalidRequestError({ message: 'Not a valid URL', param: 'success_url', statusCode: 400 }));
    expect(bad).toMatchObject({ statusCode: 400, code: 'invalid_parameter', param: 'success_url' });
    const gone = billingError(new Stripe.errors.StripeInvalidRequestError({ message: 'No such customer', param: 'customer', code: 'resource_missing', statusCode: 400 }));
    expect(gone).toMatchObject({ statusCode: 404, code: 'not_found', param: 'user_id' });
    const own = new ApiError(400, 'bad_request', 'x');
    expect(billingError(own)).toBe(own);
  });
});

describe('billing configuration', () => {
  const env = (extra: Record<string, string>) => parseEnv(apiEnvSchema, { CURSOR_SECRET: 'x'.repeat(32), ...extra });
  const full = { STRIPE_SECRET_KEY: 'sk_test_1', STRIPE_WEBHOOK_SECRET: 'whsec_1', STRIPE_PRICE_STARTER: 'price_s', STRIPE_PRICE_PRO: 'price_p' };

  it('is off without a key, and complete with one', () => {
    expect(billingConfigFromEnv(env({}))).toBeUndefined();
    expect(billingConfigFromEnv(env({ ...full, STRIPE_API_BASE: 'http://127.0.0.1:12111' }))).toMatchObject({
      secretKey: 'sk_test_1',
      webhookSecret: 'whsec_1',
      prices: { starter: 'price_s', pro: 'price_p' },
      apiBase: 'http://127.0.0.1:12111',
      timeoutMs: 10_000,
    });
  });

  it('refuses a key without the webhook secret or a price, naming what is missing', () => {
    const { STRIPE_WEBHOOK_SECRET: _w, STRIPE_PRICE_PRO: _p, ...partial } = full;
    expect(() => billingConfigFromEnv(env(partial))).toThrow(ConfigError);
    expect(() => billingConfigFromEnv(env(partial))).toThrow(/STRIPE_WEBHOOK_SECRET[\s\S]*STRIPE_PRICE_PRO/);
    expect(() => billingConfigFromEnv(env({ ...full, STRIPE_PRICE_PRO: 'price_s' }))).toThrow(/must differ/);
    expect(() => env({ ...full, STRIPE_API_BASE: 'ftp://x' })).toThrow(/STRIPE_API_BASE/);
  });
});

describe('webhook signature timestamp', () => {
  const nowMs = Date.UTC(2026, 10, 26, 12);
  const nowS = nowMs / 1000;
  it('accepts exactly the timestamps within the tolerance of now, in either direction', () => {
    fc.assert(
      fc.property(fc.integer({ min: -10 * WEBHOOK_TOLERANCE_S, max: 10 * WEBHOOK_TOLERANCE_S }), (skew) => {
        const problem = signatureTimeProblem(`t=${nowS + skew},v1=abc`, nowMs);
        expect(problem === null).toBe(Math.abs(skew) <= WEBHOOK_TOLERANCE_S);
      }),
    );
  });

  it('refuses a far-future or absurd timestamp, saying which way it is off', () => {
    expect(signatureTimeProblem(`t=${nowS + 3600},v1=abc`, nowMs)).toMatch(/3600 s in the future/);
    expect(signatureTimeProblem(`t=${nowS - 3600},v1=abc`, nowMs)).toMatch(/3600 s old/);
    expect(signatureTimeProblem('t=100000000000000000000,v1=abc', nowMs)).toMatch(/not a Unix time/);
    expect(signatureTimeProblem(`t=${String(1e20)},v1=abc`, nowMs)).not.toBeNull();
    // Written as 1e20, the SDK reads t=1 (parseInt): decades old, refused too.
    expect(signatureTimeProblem('t=1e20,v1=abc', nowMs)).toMatch(/s old/);
    expect(signatureTimeProblem('t=abc,v1=abc', nowMs)).toMatch(/not a Unix time/);
    // The SDK reads the last t=: so does the check.
    expect(signatureTimeProblem(`t=${nowS},t=${nowS + 3600},v1=abc`, nowMs)).toMatch(/in the future/);
    // No t= at all: the SDK refuses it as unsigned.
    expect(signatureTimeProblem('v1=abc', nowMs)).toBeNull();
  });
});

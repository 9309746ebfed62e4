import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { adminGuard, adminSecurity } from '../http/auth.ts';
import { errors } from '../http/errors.ts';
import { MISSING, q } from '../http/params.ts';
import type { Services } from '../services.ts';
import { PLANS, TIERS } from './plans.ts';

/**
 * Billing for the operator's dashboard backend (interface §4.8): Stripe Checkout and
 * customer-portal sessions, and the plan a user is on. Same admin token as `/keys`.
 */

const stringField = (what: string) => z.string({ error: (iss) => (iss.input === undefined ? MISSING : `must be ${what}`) });

const text = (description: string, max: number) =>
  stringField('a string')
    .trim()
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), 'must not contain control characters')
    .meta({ description });

const isHttpUrl = (s: string) => {
  try {
    const u = new URL(s);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
};

/** A redirect target: an absolute http(s) URL (Stripe's `{CHECKOUT_SESSION_ID}` placeholder allowed). */
const url = (description: string, def: string | undefined) => {
  const s = stringField('an http(s) URL').trim().max(2048, 'must be at most 2048 characters').refine(isHttpUrl, 'must be an absolute http(s) URL');
  return def === undefined ? s.meta({ description }) : s.optional().meta({ description: `${description} Default: ${def}.` });
};

const checkoutAnswer = z.object({ checkout_url: z.string().describe('Stripe-hosted checkout page: send the user there.') }).describe('The Checkout session was created.');
const portalAnswer = z.object({ portal_url: z.string().describe('Stripe-hosted customer portal: send the user there.') }).describe('The portal session was created.');
export const subscriptionStatus = z
  .object({
    user_id: z.string(),
    plan: z.enum(PLANS).describe('The plan in force now: the tier while the subscription is active, trialing or past_due; free otherwise.'),
    tier: z.enum(TIERS).nullable().describe('The tier of the current subscription, whatever its status.'),
    status: z.string().describe('Stripe subscription status (active, trialing, past_due, unpaid, canceled, incomplete, …) or none.'),
    current_period_end: z.string().nullable().describe('End of the paid period (ISO 8601), when Stripe told it.'),
    cancel_at_period_end: z.boolean(),
    stripe_customer_id: z.string().nullable(),
    stripe_subscription_id: z.string().nullable(),
    updated_at: z.string().nullable().describe('When the record last changed (ISO 8601); null for a user Stripe never told us about.'),
  })
  .meta({ id: 'SubscriptionStatus', description: 'The plan in force and the subscription behind it.' });

export const subscriptionsRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { config, subscriptions } = services;
  const billing = config.billing;
  const onRequest = adminGuard(config.adminToken);
  const security = adminSecurity(config.adminToken);
  const userId = (what: string) => text(what, 128);

  app.post(
    '/subscriptions/checkout',
    {
      schema: {
        summary: 'Create a Stripe Checkout session for a subscription (503 while billing is not configured)',
        tags: ['billing'],
        security,
        body: z.object({
          user_id: userId('Owner of the subscription.'),
          email: z
            .email({ error: (iss) => (iss.input === undefined ? MISSING : 'must be an e-mail address') })
            .max(254, 'must be at most 254 characters')
            .meta({ description: 'Customer e-mail address.' }),
          success_url: url('Redirect target after a successful checkout.', billing?.successUrl),
          cancel_url: url('Redirect target after a cancelled checkout.', billing?.cancelUrl),
          tier: z.enum(TIERS, { error: 'must be starter or pro' }).default('starter').meta({ description: 'starter or pro. Default starter.' }),
        }),
        response: { 200: checkoutAnswer, ...errors },
      },
      onRequest,
    },
    async (req) => subscriptions.checkout(req.body),
  );

  app.post(
    '/subscriptions/portal',
    {
      schema: {
        summary: "Create a Stripe customer-portal session for a user's subscription (404 before a checkout completed)",
        tags: ['billing'],
        security,
        body: z.object({
          user_id: userId('Whose subscription is managed.'),
          return_url: url('Redirect target after the portal session.', billing?.returnUrl),
        }),
        response: { 200: portalAnswer, ...errors },
      },
      onRequest,
    },
    async (req) => subscriptions.portal(req.body.user_id, req.body.return_url),
  );

  app.get(
    '/subscriptions/status',
    {
      schema: {
        summary: 'The plan a user is on now, and the subscription behind it',
        tags: ['billing'],
        security,
        querystring: z.object({ user_id: q.text('The user.', 128) }),
        response: { 200: subscriptionStatus, ...errors },
      },
      onRequest,
    },
    async (req) => subscriptions.status(req.query.user_id),
  );
};

import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { PUBLIC_SECURITY } from '../http/auth.ts';
import { errorSchema } from '../http/errors.ts';
import type { Services } from '../services.ts';

/**
 * `POST /webhooks/stripe`: Stripe's event deliveries. The signature covers the exact bytes
 * Stripe sent, so this plugin (and only this one: content-type parsers are scoped to the
 * plugin that adds them) takes JSON bodies as raw Buffers. No admin token: the signature
 * is the authentication.
 *
 * Answers: 200 once the event is handled (also for a redelivery, an event type we do not
 * use, or a customer we do not know: Stripe would otherwise retry it for days); 400 for a
 * missing or wrong signature (nothing is changed); 503 while billing is not configured or
 * a backing service is down (Stripe retries later).
 */

/** Stripe events are small, but an invoice with many lines can pass the API's 64 KiB default. */
export const WEBHOOK_BODY_LIMIT = 1024 * 1024;

const received = z
  .object({
  received: z.boolean(),
  event_id: z.string(),
  outcome: z
    .enum(['applied', 'unchanged', 'stale', 'ignored', 'unknown_customer', 'duplicate'])
    .describe('applied: a plan changed; unchanged / stale / ignored: nothing to change (stale: older than what was applied); duplicate: handled before.'),
  })
  .describe('The event was handled (or had been, or is of no use here): Stripe stops delivering it.');

export const stripeWebhookRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { subscriptions } = services;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (_req, body, done) => done(null, body));

  app.post(
    '/webhooks/stripe',
    {
      bodyLimit: WEBHOOK_BODY_LIMIT,
      schema: {
        summary: 'Stripe webhook endpoint (signed with STRIPE_WEBHOOK_SECRET; keeps plans current)',
        description:
          'Handles checkout.session.completed, customer.subscription.created, customer.subscription.updated, customer.subscription.deleted and invoice.payment_failed, each event id once. Other event types are acknowledged and ignored.',
        tags: ['billing'],
        // The Stripe-Signature header is the authentication, not an OpenAPI security scheme.
        security: PUBLIC_SECURITY,
        headers: z.looseObject({ 'stripe-signature': z.string().optional().meta({ description: 'Set by Stripe: t=…,v1=…' }) }),
        body: z.unknown().meta({ description: 'A Stripe event, exactly as Stripe sent it (application/json).' }),
        response: { 200: received, 400: errorSchema, 413: errorSchema, 415: errorSchema, 503: errorSchema },
      },
    },
    async (req) => {
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const event = subscriptions.verifyWebhook(raw, req.headers['stripe-signature']);
      const { outcome } = await subscriptions.handleEvent(event);
      return { received: true, event_id: event.id, outcome };
    },
  );
};

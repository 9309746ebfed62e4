import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Stripe from 'stripe';
import type { FastifyInstance } from 'fastify';
import { silentLogger } from '@booktape/config';
import { SubscriptionsRepository } from '@booktape/storage';
import { freePort, uniqueId } from '@booktape/testkit';
import type { BillingConfig } from './stripe-client.ts';
import { SubscriptionService } from './subscription.service.ts';
import { startTestApi, type TestApi } from '../testing.ts';

/**
 * Billing against real ClickHouse and Redis, with the Stripe SDK pointed at a local HTTP
 * server that records what reaches it and answers minimal Stripe objects. Webhook bodies
 * are signed with the SDK's own test-header helper.
 */

interface Recorded {
  method: string;
  path: string;
  authorization: string | undefined;
  form: Record<string, string>;
}

/** A stand-in for api.stripe.com: records requests, answers checkout and portal sessions. */
class FakeStripe {
  readonly requests: Recorded[] = [];
  /** 'ok', or answer every request with a Stripe 500. */
  mode: 'ok' | 'error' = 'ok';
  private server: Server | undefined;
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      void this.handle(req).then(({ status, body }) => {
        res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${this.requests.length}` });
        res.end(JSON.stringify(body));
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as { port: number }).port;
  }

  private async handle(req: IncomingMessage): Promise<{ status: number; body: unknown }> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
    const path = (req.url ?? '').split('?')[0]!;
    this.requests.push({ method: req.method ?? '', path, authorization: req.headers.authorization, form });
    if (this.mode === 'error') return { status: 500, body: { error: { type: 'api_error', message: 'Something went wrong on our end.' } } };
    const n = this.requests.length;
    if (req.method === 'POST' && path === '/v1/checkout/sessions') {
      return {
        status: 200,
        body: {
          id: `cs_test_${n}`,
          object: 'checkout.session',
          mode: 'subscription',
          status: 'open',
          url: `https://checkout.stripe.test/c/pay/cs_test_${n}`,
          customer: form.customer ?? null,
          customer_email: form.customer_email ?? null,
          client_reference_id: form.client_reference_id ?? null,
          success_url: form.success_url,
          cancel_url: form.cancel_url,
          metadata: { user_id: form['metadata[user_id]'], tier: form['metadata[tier]'] },
        },
      };
    }
    if (req.method === 'POST' && path === '/v1/billing_portal/sessions') {
      return {
        status: 200,
        body: { id: `bps_${n}`, object: 'billing_portal.session', customer: form.customer, return_url: form.return_url, url: `https://billing.stripe.test/p/session/bps_${n}`, livemode: false },
      };
    }
    return { status: 404, body: { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${req.method}: ${path})` } } };
  }

  async close(): Promise<void> {
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

const WEBHOOK_SECRET = 'whsec_test_booktape_secret';
const PRICES = { starter: 'price_starter_test', pro: 'price_pro_test' };
const signer = new Stripe('sk_test_signer');

let fake: FakeStripe;
let t: TestApi;
let billing: BillingConfig;


beforeAll(async () => {
  fake = new FakeStripe();
  await fake.start();
  billing = {
    secretKey: 'sk_test_booktape',
    webhookSecret: WEBHOOK_SECRET,
    prices: PRICES,
    apiBase: `http://127.0.0.1:${fake.port}`,
    successUrl: undefined,
    cancelUrl: undefined,
    returnUrl: undefined,
    timeoutMs: 2000,
  };
  t = await startTestApi({ billing });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});
beforeEach(() => {
  fake.requests.length = 0;
  fake.mode = 'ok';
});

async function post(url: string, body: unknown, app: FastifyInstance = t.app, headers: Record<string, string> = {}) {
  const res = await app.inject({ method: 'POST', url: `/api/v1${url}`, payload: body as Record<string, unknown>, headers });
  return { status: res.statusCode, body: res.json() as Record<string, any>, headers: res.headers };
}

async function status(userId: string, app: FastifyInstance = t.app) {
  const res = await app.inject({ url: `/api/v1/subscriptions/status?user_id=${encodeURIComponent(userId)}` });
  expect(res.statusCode).toBe(200);
  return res.json() as Record<string, any>;
}

/** Sends an event to the webhook, signed like Stripe does (unless told otherwise). */
async function deliver(event: Record<string, unknown>, opts: { signature?: string | null; app?: FastifyInstance; contentType?: string; raw?: string } = {}) {
  const payload = opts.raw ?? JSON.stringify(event);
  const signature = opts.signature === undefined ? signer.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }) : opts.signature;
  const res = await (opts.app ?? t.app).inject({
    method: 'POST',
    url: '/api/v1/webhooks/stripe',
    payload,
    headers: { 'content-type': opts.contentType ?? 'application/json; charset=utf-8', ...(signature === null ? {} : { 'stripe-signature': signature }) },
  });
  return { status: res.statusCode, body: res.json() as Record<string, any> };
}

let seq = 0;
const now = () => Math.floor(Date.now() / 1000);

function subscriptionEvent(o: { user?: string; customer: string; sub: string; status: string; price: string; created?: number; type?: string; id?: string }) {
  const created = o.created ?? now();
  return {
    id: o.id ?? `evt_${uniqueId('sub')}_${seq++}`,
    object: 'event',
    type: o.type ?? 'customer.subscription.updated',
    created,
    api_version: '2026-10-28.endive',
    livemode: false,
    data: {
      object: {
        id: o.sub,
        object: 'subscription',
        customer: o.customer,
        status: o.status,
        cancel_at_period_end: false,
        metadata: o.user ? { user_id: o.user } : {},
        items: { object: 'list', data: [{ id: `si_${o.sub}`, object: 'subscription_item', price: { id: o.price, object: 'price' }, current_period_end: created + 30 * 86_400 }] },
      },
    },
  };
}

function checkoutCompleted(o: { user: string; customer: string; sub: string; tier: 'starter' | 'pro'; created?: number }) {
  return {
    id: `evt_${uniqueId('cs')}_${seq++}`,
    object: 'event',
    type: 'checkout.session.completed',
    created: o.created ?? now(),
    data: {
      object: {
        id: `cs_${seq}`,
        object: 'checkout.session',
        mode: 'subscription',
        status: 'complete',
        payment_status: 'paid',
        customer: o.customer,
        subscription: o.sub,
        client_reference_id: o.user,
        customer_details: { email: `${o.user}@example.com` },
        metadata: { user_id: o.user, tier: o.tier },
      },
    },
  };
}

/**
 * What is stored: the user's row (its `version` grows with every write, so an event applied
 * twice would show) and every handled event with the time it was handled.
 */
async function stored(userId: string) {
  const row = await t.ch.client.query({
    query: `SELECT toString(version) AS version, last_event_id, toString(status) AS status FROM ${t.ch.table('subscriptions')} FINAL WHERE user_id = {u:String}`,
    query_params: { u: userId },
    format: 'JSONEachRow',
  });
  const events = await t.ch.client.query({ query: `SELECT event_id, toString(processed_at) AS at FROM ${t.ch.table('stripe_events')} FINAL ORDER BY event_id`, format: 'JSONEachRow' });
  return { row: (await row.json<Record<string, string>>())[0] ?? null, events: await events.json<Record<string, string>>() };
}

describe('checkout and portal reach Stripe with the right fields', () => {
  it('checkout: a subscription-mode session for the tier price, the user tied to it', async () => {
    const r = await post('/subscriptions/checkout', { user_id: 'alice', email: 'alice@example.com', success_url: 'https://app.example.com/ok?s={CHECKOUT_SESSION_ID}', cancel_url: 'https://app.example.com/cancel', tier: 'pro' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ checkout_url: expect.stringMatching(/^https:\/\/checkout\.stripe\.test\/c\/pay\/cs_test_\d+$/) });
    expect(fake.requests).toHaveLength(1);
    const req = fake.requests[0]!;
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/v1/checkout/sessions');
    expect(req.authorization).toBe('Bearer sk_test_booktape');
    expect(req.form).toMatchObject({
      mode: 'subscription',
      'line_items[0][price]': PRICES.pro,
      'line_items[0][quantity]': '1',
      success_url: 'https://app.example.com/ok?s={CHECKOUT_SESSION_ID}',
      cancel_url: 'https://app.example.com/cancel',
      customer_email: 'alice@example.com',
      client_reference_id: 'alice',
      'metadata[user_id]': 'alice',
      'metadata[tier]': 'pro',
      'subscription_data[metadata][user_id]': 'alice',
      'subscription_data[metadata][tier]': 'pro',
    });
    expect(req.form.customer).toBeUndefined();
  });

  it('checkout: tier defaults to starter; a user id Stripe would drop as client reference travels in the metadata', async () => {
    const r = await post('/subscriptions/checkout', { user_id: 'bob@corp x', email: 'bob@example.com', success_url: 'https://a.example/s', cancel_url: 'https://a.example/c' });
    expect(r.status).toBe(200);
    expect(fake.requests[0]!.form).toMatchObject({ 'line_items[0][price]': PRICES.starter, 'metadata[user_id]': 'bob@corp x', 'subscription_data[metadata][user_id]': 'bob@corp x' });
    expect(fake.requests[0]!.form.client_reference_id).toBeUndefined();
  });

  it('checkout: bad bodies are 400s naming the field, and never reach Stripe', async () => {
    const base = { user_id: 'carol', email: 'carol@example.com', success_url: 'https://a.example/s', cancel_url: 'https://a.example/c' };
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ ...base, email: undefined }, 'email', 'missing_parameter'],
      [{ ...base, email: 'not-an-address' }, 'email', 'invalid_parameter'],
      [{ ...base, success_url: 'javascript:alert(1)' }, 'success_url', 'invalid_parameter'],
      [{ ...base, cancel_url: undefined }, 'cancel_url', 'missing_parameter'],
      [{ ...base, tier: 'enterprise' }, 'tier', 'invalid_parameter'],
      [{ ...base, user_id: '' }, 'user_id', 'invalid_parameter'],
      [{ ...base, user_id: 42 }, 'user_id', 'invalid_parameter'],
    ];
    for (const [body, param, code] of cases) {
      const r = await post('/subscriptions/checkout', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toMatchObject({ code, param });
    }
    const notJson = await t.app.inject({ method: 'POST', url: '/api/v1/subscriptions/checkout', payload: '{"user_id":', headers: { 'content-type': 'application/json' } });
    expect(notJson.statusCode).toBe(400);
    expect(fake.requests).toHaveLength(0);
  });

  it('portal: a clear 404 before the user has a Stripe customer, then a session for that customer', async () => {
    const before = await post('/subscriptions/portal', { user_id: 'dave', return_url: 'https://app.example.com/account' });
    expect(before.status).toBe(404);
    expect(before.body.error).toMatchObject({ code: 'not_found', param: 'user_id', message: expect.stringContaining('no Stripe customer') });
    expect(fake.requests).toHaveLength(0);

    expect((await deliver(checkoutCompleted({ user: 'dave', customer: 'cus_dave', sub: 'sub_dave', tier: 'starter' }))).status).toBe(200);
    const r = await post('/subscriptions/portal', { user_id: 'dave', return_url: 'https://app.example.com/account' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ portal_url: expect.stringMatching(/^https:\/\/billing\.stripe\.test\/p\/session\/bps_\d+$/) });
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]).toMatchObject({ method: 'POST', path: '/v1/billing_portal/sessions', authorization: 'Bearer sk_test_booktape', form: { customer: 'cus_dave', return_url: 'https://app.example.com/account' } });
  });

  it('a second checkout for a user on a paid plan is refused (plan changes go through the portal); a returning customer is reused', async () => {
    await deliver(checkoutCompleted({ user: 'erin', customer: 'cus_erin', sub: 'sub_erin', tier: 'pro' }));
    const body = { user_id: 'erin', email: 'erin@example.com', success_url: 'https://a.example/s', cancel_url: 'https://a.example/c' };
    const again = await post('/subscriptions/checkout', body);
    expect(again.status).toBe(400);
    expect(again.body.error).toMatchObject({ code: 'invalid_parameter', param: 'user_id' });
    expect(fake.requests).toHaveLength(0);
    await deliver(subscriptionEvent({ customer: 'cus_erin', sub: 'sub_erin', status: 'canceled', price: PRICES.pro, type: 'customer.subscription.deleted', created: now() + 1 }));
    const back = await post('/subscriptions/checkout', body);
    expect(back.status).toBe(200);
    expect(fake.requests[0]!.form).toMatchObject({ customer: 'cus_erin' });
    expect(fake.requests[0]!.form.customer_email).toBeUndefined();
  });

  it('Stripe failing or unreachable is a 503 with the error body, not a 500', async () => {
    fake.mode = 'error';
    const body = { user_id: 'frank', email: 'frank@example.com', success_url: 'https://a.example/s', cancel_url: 'https://a.example/c' };
    const failing = await post('/subscriptions/checkout', body);
    expect(failing.status).toBe(503);
    expect(failing.body).toEqual({ error: { code: 'service_unavailable', message: expect.stringContaining('Stripe') } });

    const down = await t.another({ billing: { ...billing, apiBase: `http://127.0.0.1:${await freePort()}`, timeoutMs: 500 } });
    const started = Date.now();
    const unreachable = await post('/subscriptions/checkout', body, down);
    expect(unreachable.status).toBe(503);
    expect(unreachable.body).toEqual({ error: { code: 'service_unavailable', message: expect.stringContaining('Stripe') } });
    expect(Date.now() - started).toBeLessThan(5000);
  });
});

describe('webhook', () => {
  it('refuses a bad, missing or garbled signature with 400 and changes nothing', async () => {
    const ev = subscriptionEvent({ user: 'grace', customer: 'cus_grace', sub: 'sub_grace', status: 'active', price: PRICES.pro });
    const before = await stored('grace');
    const payload = JSON.stringify(ev);
    const signatures: Array<string | null> = [
      null,
      '',
      'garbage',
      't=abc,v1=zz',
      signer.webhooks.generateTestHeaderString({ payload, secret: 'whsec_someone_else' }),
      signer.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET, timestamp: now() - 3600 }),
      // Correctly signed but dated ahead: as replayable as a stale one, so as refused.
      signer.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET, timestamp: now() + 3600 }),
      signer.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET, timestamp: 1e20 }),
      // Signed for different bytes: the body was altered on the way.
      signer.webhooks.generateTestHeaderString({ payload: payload.replace('active', 'trialing'), secret: WEBHOOK_SECRET }),
    ];
    for (const signature of signatures) {
      const r = await deliver(ev, { signature });
      expect(r.status, String(signature)).toBe(400);
      expect(r.body).toEqual({ error: { code: 'bad_request', message: expect.any(String) } });
    }
    expect(await stored('grace')).toEqual(before);
    expect(before.row).toBeNull();
    expect((await status('grace')).plan).toBe('free');
    // Signed correctly, it is applied (the event itself was fine).
    expect((await deliver(ev)).body.outcome).toBe('applied');
  });

  it('takes only JSON, within its size limit, and never answers 500 for a signed non-event', async () => {
    const ev = subscriptionEvent({ customer: 'cus_x', sub: 'sub_x', status: 'active', price: PRICES.pro });
    expect((await deliver(ev, { contentType: 'text/plain' })).status).toBe(415);
    const huge = JSON.stringify({ ...ev, pad: 'x'.repeat(1_100_000) });
    const big = await deliver(ev, { raw: huge });
    expect(big.status).toBe(413);
    const notEvent = await deliver({}, { raw: '[1,2,3]' });
    expect(notEvent.status).toBe(400);
    const notJson = await deliver({}, { raw: 'not json at all' });
    expect(notJson.status).toBe(400);
  });

  it('a signed event with a time that cannot be stored is refused whole: 400, nothing applied or recorded', async () => {
    const base = subscriptionEvent({ user: 'ivy', customer: 'cus_ivy', sub: 'sub_ivy', status: 'active', price: PRICES.pro });
    const before = await stored('ivy');
    const bad: Array<Record<string, any>> = [
      { ...base, id: `${base.id}_neg`, created: -5 },
      { ...base, id: `${base.id}_frac`, created: 1.5 },
      { ...base, id: `${base.id}_far`, created: 1e15 },
      { ...base, id: `${base.id}_end`, data: { object: { ...base.data.object, items: { object: 'list', data: [{ ...base.data.object.items.data[0], current_period_end: -1 }] } } } },
    ];
    for (const ev of bad) {
      const r = await deliver(ev);
      expect(r.status).toBe(400);
      expect(r.body.error.message).toMatch(/invalid (created|data\.object)/);
    }
    expect(await stored('ivy')).toEqual(before);
    expect((await status('ivy')).plan).toBe('free');
    // The same event with a valid time is then applied normally.
    expect((await deliver(base)).body.outcome).toBe('applied');
    expect((await status('ivy')).plan).toBe('pro');
  });

  it('the same event twice is applied once, also after a restart (a fresh cache)', async () => {
    const ev = checkoutCompleted({ user: 'heidi', customer: 'cus_heidi', sub: 'sub_heidi', tier: 'pro' });
    const first = await deliver(ev);
    expect(first).toEqual({ status: 200, body: { received: true, event_id: ev.id, outcome: 'applied' } });
    const after = await stored('heidi');
    expect(after.row).toMatchObject({ last_event_id: ev.id, status: 'active' });
    expect(after.events.filter((e) => e.event_id === ev.id)).toHaveLength(1);
    const second = await deliver(ev);
    expect(second.body.outcome).toBe('duplicate');
    // Another process whose Redis knows nothing (new prefix): ClickHouse remembers the id.
    const restarted = await t.another({ redisKeyPrefix: `${uniqueId('bt-billing-restart')}:` });
    expect((await deliver(ev, { app: restarted })).body.outcome).toBe('duplicate');
    expect(await stored('heidi')).toEqual(after);
    // Concurrent deliveries of one new event: exactly one applies it.
    const ev2 = subscriptionEvent({ user: 'heidi', customer: 'cus_heidi', sub: 'sub_heidi', status: 'past_due', price: PRICES.pro, created: now() + 1 });
    const results = await Promise.all([deliver(ev2), deliver(ev2), deliver(ev2)]);
    expect(results.filter((r) => r.status === 200 && r.body.outcome === 'applied')).toHaveLength(1);
    for (const r of results) expect([200, 503]).toContain(r.status);
    const final = await stored('heidi');
    expect(final.row).toMatchObject({ last_event_id: ev2.id, status: 'past_due' });
    expect(Number(final.row!.version)).toBeGreaterThan(Number(after.row!.version));
    expect(final.events.filter((e) => e.event_id === ev2.id)).toHaveLength(1);
    // Redelivered once more after it settled: nothing is written.
    expect((await deliver(ev2)).body.outcome).toBe('duplicate');
    expect(await stored('heidi')).toEqual(final);
  });

  it('a plan change takes effect on the next request (status and planOf, on every process)', async () => {
    const other = await t.another();
    const user = 'ivan';
    const base = now();
    // Warm every cache first: the change must not wait for a TTL.
    expect((await status(user)).plan).toBe('free');
    expect((await status(user, other)).plan).toBe('free');
    // planOf as a quota check in another process would ask it: same ClickHouse, same Redis.
    const service = new SubscriptionService({ repo: new SubscriptionsRepository(t.ch), redis: t.redis, log: silentLogger(), redisKeyPrefix: t.config.redisKeyPrefix, billing: undefined });
    const planOf = () => service.planOf(user);
    expect(await planOf()).toBe('free');

    await deliver(checkoutCompleted({ user, customer: 'cus_ivan', sub: 'sub_ivan', tier: 'starter', created: base }));
    expect((await status(user)).plan).toBe('starter');
    expect(await planOf()).toBe('starter');

    // An upgrade in the portal arrives as a subscription update (no user id in its metadata:
    // the customer leads to the user).
    await deliver(subscriptionEvent({ customer: 'cus_ivan', sub: 'sub_ivan', status: 'active', price: PRICES.pro, created: base + 1 }));
    const s = await status(user, other);
    expect(s).toMatchObject({ user_id: user, plan: 'pro', tier: 'pro', status: 'active', stripe_customer_id: 'cus_ivan', stripe_subscription_id: 'sub_ivan', cancel_at_period_end: false });
    expect(s.current_period_end).toBe(new Date((base + 1 + 30 * 86_400) * 1000).toISOString());
    expect(await planOf()).toBe('pro');

    // An older update delivered late does not take the plan back.
    const late = await deliver(subscriptionEvent({ customer: 'cus_ivan', sub: 'sub_ivan', status: 'active', price: PRICES.starter, created: base }));
    expect(late.body.outcome).toBe('stale');
    expect((await status(user)).plan).toBe('pro');

    // A failed renewal: past_due keeps the plan (dunning); Stripe giving up ends it.
    const failed = await deliver({ id: `evt_${uniqueId('inv')}`, object: 'event', type: 'invoice.payment_failed', created: base + 2, data: { object: { id: 'in_1', object: 'invoice', customer: 'cus_ivan', parent: { type: 'subscription_details', subscription_details: { subscription: 'sub_ivan' } } } } });
    expect(failed.body.outcome).toBe('applied');
    expect(await status(user)).toMatchObject({ plan: 'pro', status: 'past_due' });
    await deliver(subscriptionEvent({ customer: 'cus_ivan', sub: 'sub_ivan', status: 'canceled', price: PRICES.pro, created: base + 3, type: 'customer.subscription.deleted' }));
    expect(await status(user, other)).toMatchObject({ plan: 'free', status: 'canceled', tier: 'pro' });
    expect(await planOf()).toBe('free');
  });

  it('events for unknown customers and unused types are acknowledged without changing anything', async () => {
    const before = await stored('nobody');
    const unknown = await deliver(subscriptionEvent({ customer: 'cus_unknown', sub: 'sub_unknown', status: 'active', price: PRICES.pro }));
    expect(unknown).toMatchObject({ status: 200, body: { outcome: 'unknown_customer' } });
    const failedUnknown = await deliver({ id: `evt_${uniqueId('inv')}`, object: 'event', type: 'invoice.payment_failed', created: now(), data: { object: { object: 'invoice', customer: 'cus_unknown', subscription: 'sub_unknown' } } });
    expect(failedUnknown).toMatchObject({ status: 200, body: { outcome: 'unknown_customer' } });
    const other = await deliver({ id: `evt_${uniqueId('ch')}`, object: 'event', type: 'charge.succeeded', created: now(), data: { object: { id: 'ch_1', object: 'charge' } } });
    expect(other).toMatchObject({ status: 200, body: { outcome: 'ignored' } });
    expect((await stored('nobody')).row).toBeNull();
    expect(before.row).toBeNull();
  });

  it('two different events of one user arriving at once both count', async () => {
    const created = now();
    const [a, b] = await Promise.all([
      deliver(checkoutCompleted({ user: 'judy', customer: 'cus_judy', sub: 'sub_judy', tier: 'pro', created })),
      deliver(subscriptionEvent({ user: 'judy', customer: 'cus_judy', sub: 'sub_judy', status: 'active', price: PRICES.pro, created, type: 'customer.subscription.created' })),
    ]);
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    const s = await status('judy');
    expect(s).toMatchObject({ plan: 'pro', status: 'active', stripe_customer_id: 'cus_judy' });
    expect(s.current_period_end).not.toBeNull();
  });
});

describe('configuration and access', () => {
  it('without a Stripe key the billing routes answer 503 "billing is not configured"; status still answers', async () => {
    const off = await t.another({ billing: undefined });
    const checkout = await post('/subscriptions/checkout', { user_id: 'u', email: 'u@example.com', success_url: 'https://a.example/s', cancel_url: 'https://a.example/c' }, off);
    expect(checkout.status).toBe(503);
    expect(checkout.body.error).toMatchObject({ code: 'service_unavailable', message: expect.stringContaining('billing is not configured') });
    const portal = await post('/subscriptions/portal', { user_id: 'u', return_url: 'https://a.example/r' }, off);
    expect(portal.status).toBe(503);
    const hook = await deliver(subscriptionEvent({ customer: 'c', sub: 's', status: 'active', price: PRICES.pro }), { app: off });
    expect(hook.status).toBe(503);
    expect((await status('u', off)).plan).toBe('free');
    expect(fake.requests).toHaveLength(0);
  });

  it('configured URL defaults stand in for URLs the request leaves out', async () => {
    const withDefaults = await t.another({ billing: { ...billing, successUrl: 'https://d.example/ok', cancelUrl: 'https://d.example/no', returnUrl: 'https://d.example/back' } });
    const r = await post('/subscriptions/checkout', { user_id: 'kate', email: 'kate@example.com' }, withDefaults);
    expect(r.status).toBe(200);
    expect(fake.requests[0]!.form).toMatchObject({ success_url: 'https://d.example/ok', cancel_url: 'https://d.example/no' });
  });

  it('with ADMIN_TOKEN, /subscriptions/* need X-Admin-Token; the webhook does not', async () => {
    const token = 'admin-token-0123456789';
    const guarded = await t.another({ adminToken: token });
    const body = { user_id: 'leo', email: 'leo@example.com', success_url: 'https://a.example/s', cancel_url: 'https://a.example/c' };
    expect((await post('/subscriptions/checkout', body, guarded)).status).toBe(401);
    expect((await post('/subscriptions/portal', { user_id: 'leo', return_url: 'https://a.example/r' }, guarded)).status).toBe(401);
    expect((await guarded.inject({ url: '/api/v1/subscriptions/status?user_id=leo' })).statusCode).toBe(401);
    expect((await guarded.inject({ url: '/api/v1/subscriptions/status?user_id=leo', headers: { 'x-admin-token': 'wrong-token-0123456789' } })).statusCode).toBe(401);
    expect((await guarded.inject({ url: '/api/v1/subscriptions/status?user_id=leo', headers: { 'x-admin-token': token } })).statusCode).toBe(200);
    expect((await post('/subscriptions/checkout', body, guarded, { 'x-admin-token': token })).status).toBe(200);
    const hook = await deliver(checkoutCompleted({ user: 'leo', customer: 'cus_leo', sub: 'sub_leo', tier: 'starter' }), { app: guarded });
    expect(hook.body.outcome).toBe('applied');
  });

  it('every billing route is in the OpenAPI document', async () => {
    const doc = (await t.app.inject({ url: '/api/v1/openapi.json' })).json() as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(doc.paths['/api/v1/subscriptions/checkout'] ?? {})).toContain('post');
    expect(Object.keys(doc.paths['/api/v1/subscriptions/portal'] ?? {})).toContain('post');
    expect(Object.keys(doc.paths['/api/v1/subscriptions/status'] ?? {})).toContain('get');
    expect(Object.keys(doc.paths['/api/v1/webhooks/stripe'] ?? {})).toContain('post');
  });
});

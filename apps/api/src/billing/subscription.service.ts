import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '@booktape/config';
import { SingleFlight } from '@booktape/domain';
import type { SubscriptionRow, SubscriptionsRepository } from '@booktape/storage';
import { ApiError, UnavailableError, guard } from '../http/errors.ts';
import { changeOf, grantsAccess, planOf, reduce, type Outcome, type Plan, type StripeEventLike, type SubscriptionState, type Tier } from './plans.ts';
import { WEBHOOK_TOLERANCE_S, billingError, createStripeClient, signatureTimeProblem, type BillingConfig, type Stripe } from './stripe-client.ts';

/**
 * Subscriptions: the plan of each user, Stripe checkout and portal sessions, and the
 * webhook events that keep plans current.
 *
 * Storage: ClickHouse `subscriptions` is the record (one row per user, latest version
 * wins); Redis caches it per user (`<prefix>sub:user:<id>`, 5 minutes, also for users
 * without a row) and maps Stripe customers to users (`<prefix>sub:cus:<id>`). A webhook
 * that changes a row writes ClickHouse and then over the cached copy, so the next request
 * on any API process sees the new plan; a cache fill after a miss never overwrites (SET
 * NX), so a slow fill cannot put an older row back over a webhook's write.
 *
 * Events: each event id is handled once. A Redis claim (`<prefix>stripe:event:<id>`, SET
 * NX) keeps two deliveries of one event from running together; the handled id goes to
 * ClickHouse `stripe_events` (so it holds across restarts and a Redis flush) and the claim
 * becomes a 30-day "done" mark. Changes of one user are serialised by a Redis lock, so two
 * different events arriving at once (Stripe sends them in parallel) cannot lose a field.
 * If anything fails midway the claim is dropped and the webhook answers 503: Stripe
 * retries, and applying an event again is harmless (see `reduce`).
 */

const CACHE_TTL_S = 300;
const CUSTOMER_TTL_S = 86_400;
const CLAIM_TTL_S = 60;
const DONE_TTL_S = 30 * 86_400;
const LOCK_TTL_MS = 10_000;
const LOCK_WAIT_MS = 5_000;

/** What GET /subscriptions/status answers. */
export interface SubscriptionView {
  user_id: string;
  plan: Plan;
  tier: Tier | null;
  status: string;
  current_period_end: string | null;
  cancel_at_period_end: boolean;
  stripe_customer_id: string | null;
  stripe_subscription_id: string | null;
  updated_at: string | null;
}

export interface CheckoutInput {
  user_id: string;
  email: string;
  tier: Tier;
  success_url?: string | undefined;
  cancel_url?: string | undefined;
}

export interface SubscriptionServiceDeps {
  repo: SubscriptionsRepository;
  redis: Redis;
  log: Logger;
  redisKeyPrefix: string;
  billing: BillingConfig | undefined;
  /** A ready client (tests); by default one is made from `billing`. */
  stripe?: Stripe;
}

type Cached = SubscriptionRow | { none: true };

// Stripe drops a client_reference_id outside this pattern without an error; metadata keeps any id.
const CLIENT_REFERENCE_RE = /^[A-Za-z0-9_-]{1,200}$/;

export const notConfigured = () => new ApiError(503, 'service_unavailable', 'billing is not configured on this server (STRIPE_SECRET_KEY is unset)');

export class SubscriptionService {
  private readonly stripe: Stripe | undefined;
  private readonly p: string;
  private readonly rowReads = new SingleFlight<string, SubscriptionRow | null>();

  constructor(private readonly deps: SubscriptionServiceDeps) {
    this.stripe = deps.stripe ?? (deps.billing ? createStripeClient(deps.billing) : undefined);
    this.p = deps.redisKeyPrefix;
  }

  get configured(): boolean {
    return this.stripe !== undefined && this.deps.billing !== undefined;
  }

  /** A Redis call that fails at once while Redis is known down (the caller answers 503). */
  private redisCall<T>(fn: (r: Redis) => Promise<T>): Promise<T> {
    const status = this.deps.redis.status;
    if (status === 'reconnecting' || status === 'end' || status === 'close') return Promise.reject(new UnavailableError('Redis'));
    return guard('Redis', () => fn(this.deps.redis));
  }

  private userKey(userId: string): string {
    return `${this.p}sub:user:${userId}`;
  }

  private customerKey(customerId: string): string {
    return `${this.p}sub:cus:${customerId}`;
  }

  private eventKey(eventId: string): string {
    return `${this.p}stripe:event:${eventId}`;
  }

  /** The stored row of a user (cached), null when there is none. */
  async row(userId: string): Promise<SubscriptionRow | null> {
    const cached = await this.redisCall((r) => r.get(this.userKey(userId)));
    if (cached !== null) {
      try {
        const c = JSON.parse(cached) as Cached;
        return 'none' in c ? null : c;
      } catch {
        // An unreadable cache entry is a miss: ClickHouse has the record.
      }
    }
    // Many requests of one user missing at once (its entry expired under load) share one read.
    return this.rowReads.run(userId, async () => {
      const row = await guard('ClickHouse', () => this.deps.repo.findByUser(userId));
      const value: Cached = row ?? { none: true };
      await this.redisCall((r) => r.set(this.userKey(userId), JSON.stringify(value), 'EX', CACHE_TTL_S, 'NX'));
      return row;
    });
  }

  /**
   * The plan user `userId` is on right now: `free`, `starter` or `pro`. Redis-cached,
   * ClickHouse the record, `free` for unknown users. A plan change from a webhook is seen
   * by the next call on every API process. Throws a 503 ApiError when Redis or ClickHouse
   * is down.
   */
  async planOf(userId: string): Promise<Plan> {
    return planOf(await this.row(userId));
  }

  async status(userId: string): Promise<SubscriptionView> {
    const row = await this.row(userId);
    const plan = planOf(row);
    return {
      user_id: userId,
      plan,
      tier: row?.tier === 'starter' || row?.tier === 'pro' ? row.tier : null,
      status: row?.status ?? 'none',
      current_period_end: row?.current_period_end ?? null,
      cancel_at_period_end: row?.cancel_at_period_end ?? false,
      stripe_customer_id: row?.stripe_customer_id ?? null,
      stripe_subscription_id: row?.stripe_subscription_id ?? null,
      updated_at: row?.updated_at ?? null,
    };
  }

  private client(): { stripe: Stripe; billing: BillingConfig } {
    if (!this.stripe || !this.deps.billing) throw notConfigured();
    return { stripe: this.stripe, billing: this.deps.billing };
  }

  /** A hosted Checkout session in subscription mode for `tier`; the user travels in the metadata. */
  async checkout(input: CheckoutInput): Promise<{ checkout_url: string }> {
    const { stripe, billing } = this.client();
    const successUrl = input.success_url ?? billing.successUrl;
    const cancelUrl = input.cancel_url ?? billing.cancelUrl;
    if (!successUrl) throw new ApiError(400, 'missing_parameter', 'success_url is required', 'success_url');
    if (!cancelUrl) throw new ApiError(400, 'missing_parameter', 'cancel_url is required', 'cancel_url');
    const row = await this.row(input.user_id);
    const plan = planOf(row);
    if (plan !== 'free') {
      // A second subscription would bill twice: plan changes go through the portal.
      throw new ApiError(400, 'invalid_parameter', `user already has the ${plan} plan (${row!.status}); change or cancel it through POST /subscriptions/portal`, 'user_id');
    }
    const meta = { user_id: input.user_id, tier: input.tier };
    const session = await stripe.checkout.sessions
      .create({
        mode: 'subscription',
        line_items: [{ price: billing.prices[input.tier], quantity: 1 }],
        success_url: successUrl,
        cancel_url: cancelUrl,
        ...(row?.stripe_customer_id ? { customer: row.stripe_customer_id } : { customer_email: input.email }),
        ...(CLIENT_REFERENCE_RE.test(input.user_id) ? { client_reference_id: input.user_id } : {}),
        metadata: meta,
        subscription_data: { metadata: meta },
      })
      .catch((e: unknown) => {
        throw billingError(e);
      });
    if (!session.url) throw new UnavailableError('the payment processor (Stripe)', new Error('checkout session without a url'));
    return { checkout_url: session.url };
  }

  /** A customer-portal session; 404 while the user has no Stripe customer (no checkout completed). */
  async portal(userId: string, returnUrl: string | undefined): Promise<{ portal_url: string }> {
    const { stripe, billing } = this.client();
    const url = returnUrl ?? billing.returnUrl;
    if (!url) throw new ApiError(400, 'missing_parameter', 'return_url is required', 'return_url');
    const row = await this.row(userId);
    if (!row?.stripe_customer_id) {
      throw new ApiError(404, 'not_found', `user ${JSON.stringify(userId)} has no Stripe customer yet: a checkout must complete first`, 'user_id');
    }
    try {
      const session = await stripe.billingPortal.sessions.create({ customer: row.stripe_customer_id, return_url: url });
      return { portal_url: session.url };
    } catch (e) {
      throw billingError(e);
    }
  }

  /** The event in a webhook request, after checking its signature over the raw body (400 otherwise). */
  verifyWebhook(rawBody: Buffer, signature: string | string[] | undefined): StripeEventLike {
    const { stripe, billing } = this.client();
    if (signature === undefined || signature === '') throw new ApiError(400, 'bad_request', 'missing Stripe-Signature header');
    if (Array.isArray(signature)) throw new ApiError(400, 'bad_request', 'Stripe-Signature header given more than once');
    if (rawBody.length === 0) throw new ApiError(400, 'bad_request', 'empty body');
    // Checked first, whatever the signature: a date beyond the tolerance is refused either way.
    const timeProblem = signatureTimeProblem(signature, Date.now());
    if (timeProblem !== null) throw new ApiError(400, 'bad_request', `invalid Stripe-Signature: ${timeProblem}`);
    let event: unknown;
    try {
      event = stripe.webhooks.constructEvent(rawBody, signature, billing.webhookSecret, WEBHOOK_TOLERANCE_S);
    } catch (e) {
      const type = (e as { type?: unknown }).type;
      if (type === 'StripeSignatureVerificationError') throw new ApiError(400, 'bad_request', 'invalid Stripe-Signature: the body is not signed with the webhook secret, or the signature is too old');
      // A correctly signed body that is not JSON: Stripe never sends one.
      throw new ApiError(400, 'bad_request', 'the body is not a Stripe event');
    }
    const ev = event as Partial<StripeEventLike> | null;
    if (!ev || typeof ev.id !== 'string' || typeof ev.type !== 'string' || typeof ev.created !== 'number' || typeof ev.data !== 'object' || ev.data === null) {
      throw new ApiError(400, 'bad_request', 'the body is not a Stripe event');
    }
    // Every time the event carries is checked before anything is applied: a signed event
    // with a time that cannot be stored must be refused whole, not half applied.
    const badTime = badEventTime(ev as StripeEventLike);
    if (badTime !== null) throw new ApiError(400, 'bad_request', `the Stripe event has an invalid ${badTime}: Unix seconds must be a non-negative integer before year 10000`);
    return ev as StripeEventLike;
  }

  /** Applies a verified event once (by id). */
  async handleEvent(event: StripeEventLike): Promise<{ outcome: Outcome; user_id: string | null }> {
    const { billing } = this.client();
    const key = this.eventKey(event.id);
    const claimed = await this.redisCall((r) => r.set(key, 'processing', 'EX', CLAIM_TTL_S, 'NX'));
    if (claimed === null) {
      const state = await this.redisCall((r) => r.get(key));
      if (state === 'processing') throw new UnavailableError('this event (being handled by another request)');
      return { outcome: 'duplicate', user_id: null };
    }
    try {
      const seen = await guard('ClickHouse', () => this.deps.repo.findEvent(event.id));
      if (seen) {
        await this.redisCall((r) => r.set(key, 'done', 'EX', DONE_TTL_S));
        return { outcome: 'duplicate', user_id: seen.user_id || null };
      }
      const result = await this.apply(event, billing);
      await guard('ClickHouse', () =>
        this.deps.repo.recordEvent({
          event_id: event.id,
          type: event.type,
          created: event.created,
          user_id: result.user_id ?? '',
          outcome: result.outcome,
          processed_at: new Date().toISOString(),
        }),
      );
      await this.redisCall((r) => r.set(key, 'done', 'EX', DONE_TTL_S));
      return result;
    } catch (e) {
      await this.redisCall((r) => r.del(key)).catch(() => undefined);
      throw e;
    }
  }

  private async resolveUser(userId: string | null, customerId: string | null): Promise<string | null> {
    if (userId) return userId;
    if (!customerId) return null;
    const cached = await this.redisCall((r) => r.get(this.customerKey(customerId)));
    if (cached) return cached;
    const row = await guard('ClickHouse', () => this.deps.repo.findByCustomer(customerId));
    if (!row) return null;
    await this.redisCall((r) => r.set(this.customerKey(customerId), row.user_id, 'EX', CUSTOMER_TTL_S));
    return row.user_id;
  }

  private async apply(event: StripeEventLike, billing: BillingConfig): Promise<{ outcome: Outcome; user_id: string | null }> {
    const change = changeOf(event, billing.prices);
    if (change.kind === 'ignored') return { outcome: 'ignored', user_id: null };
    const userId = await this.resolveUser(change.userId, change.customerId);
    if (!userId) {
      // Not one of ours (a subscription made in the Stripe dashboard, another product on
      // the account): answered 200 so Stripe stops sending it, and logged.
      this.deps.log.warn({ event: event.id, type: event.type, customer: change.customerId }, 'stripe event for an unknown customer');
      return { outcome: 'unknown_customer', user_id: null };
    }
    return this.withUserLock(userId, async () => {
      const current = await guard('ClickHouse', () => this.deps.repo.findByUser(userId));
      const state: SubscriptionState | null = current ? stateOf(current) : null;
      const { outcome, next } = reduce(userId, state, change, event);
      if (!next) return { outcome, user_id: userId };
      if (grantsAccess(next.status) && next.tier === null) {
        this.deps.log.warn({ event: event.id, user: userId, subscription: next.stripe_subscription_id }, 'subscription with none of the configured prices: the user stays on the free plan');
      }
      const row: SubscriptionRow = {
        ...next,
        plan: planOf(next),
        updated_at: new Date().toISOString(),
        // Strictly increasing per user even if clocks of API processes disagree.
        version: Math.max(Date.now(), (current?.version ?? 0) + 1),
      };
      await guard('ClickHouse', () => this.deps.repo.save(row));
      // Write-through: the next request anywhere sees the new plan.
      await this.redisCall((r) => r.set(this.userKey(userId), JSON.stringify(row), 'EX', CACHE_TTL_S));
      if (row.stripe_customer_id) {
        const customer = row.stripe_customer_id;
        await this.redisCall((r) => r.set(this.customerKey(customer), userId, 'EX', CUSTOMER_TTL_S));
      }
      if (current?.plan !== row.plan) this.deps.log.info({ user: userId, from: current?.plan ?? 'free', to: row.plan, event: event.id }, 'plan changed');
      return { outcome, user_id: userId };
    });
  }

  /** Serialises changes of one user across API processes (a Redis lock with a token). */
  private async withUserLock<T>(userId: string, fn: () => Promise<T>): Promise<T> {
    const key = `${this.p}sub:lock:${userId}`;
    const token = randomBytes(12).toString('hex');
    const deadline = Date.now() + LOCK_WAIT_MS;
    for (;;) {
      const ok = await this.redisCall((r) => r.set(key, token, 'PX', LOCK_TTL_MS, 'NX'));
      if (ok !== null) break;
      if (Date.now() > deadline) throw new UnavailableError('the subscription of this user (busy)');
      await new Promise((r) => setTimeout(r, 20));
    }
    try {
      return await fn();
    } finally {
      await this.redisCall((r) => r.eval("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end", 1, key, token)).catch(
        (err: unknown) => this.deps.log.warn({ err }, 'releasing a subscription lock failed (it expires by itself)'),
      );
    }
  }
}

function stateOf(row: SubscriptionRow): SubscriptionState {
  const { version: _v, updated_at: _u, plan: _p, ...state } = row;
  return state;
}

/** The latest Unix second a stored time (DateTime64, ISO text) may hold: 9999-12-31T23:59:59Z. */
const MAX_UNIX_SECONDS = 253_402_300_799;

function validSeconds(v: unknown): boolean {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v <= MAX_UNIX_SECONDS;
}

/**
 * The name of the first time field the event carries that is not valid Unix seconds, or
 * null: `created`, and the period ends of a subscription object and its items (the only
 * times that are applied).
 */
export function badEventTime(ev: StripeEventLike): string | null {
  if (!validSeconds(ev.created)) return 'created';
  const obj = (ev.data as { object?: unknown }).object;
  if (typeof obj !== 'object' || obj === null) return null;
  const o = obj as Record<string, unknown>;
  const end = o['current_period_end'];
  if (end !== undefined && end !== null && !validSeconds(end)) return 'data.object.current_period_end';
  const items = (o['items'] as { data?: unknown } | undefined)?.data;
  if (Array.isArray(items)) {
    for (let i = 0; i < items.length; i++) {
      const it = items[i] as Record<string, unknown> | null;
      const e = it && typeof it === 'object' ? it['current_period_end'] : undefined;
      if (e !== undefined && e !== null && !validSeconds(e)) return `data.object.items.data[${i}].current_period_end`;
    }
  }
  return null;
}

import type { SubscriptionRow } from '@booktape/storage';

/**
 * Plans and how Stripe events change them: pure rules, no I/O (tested by properties).
 *
 * A user's plan is the tier of their current subscription while its status grants access,
 * `free` otherwise (and for users Stripe never told us about).
 *
 * - Granting statuses: `active`, `trialing`, `past_due`. `past_due` is Stripe's dunning
 *   period (a renewal payment failed and Stripe is retrying it): the user keeps the paid
 *   plan until Stripe gives up and moves the subscription to `unpaid` or `canceled`
 *   (per the account's retry settings), which then arrives as a subscription event.
 * - Everything else (`incomplete`, `incomplete_expired`, `unpaid`, `canceled`, `paused`,
 *   `none`) is `free`.
 *
 * Ordering: Stripe delivers events in no particular order and redelivers failed ones
 * later. Every event carries `created` (Unix seconds); a user's row remembers the newest
 * `created` it applied, and an event older than that changes nothing (`stale`). Events of
 * the same second are applied in arrival order (Stripe gives no finer order). On top:
 * `canceled` is terminal in Stripe, so no event revives a canceled subscription, and the
 * end of one subscription does not end another one that the user holds now.
 */

export const PLANS = ['free', 'starter', 'pro'] as const;
export type Plan = (typeof PLANS)[number];
export const TIERS = ['starter', 'pro'] as const;
export type Tier = (typeof TIERS)[number];

const GRANTING = new Set(['active', 'trialing', 'past_due']);

export function grantsAccess(status: string): boolean {
  return GRANTING.has(status);
}

export function isTier(v: unknown): v is Tier {
  return v === 'starter' || v === 'pro';
}

/** The plan a stored row grants right now. */
export function planOf(row: Pick<SubscriptionRow, 'tier' | 'status'> | null): Plan {
  if (!row || !grantsAccess(row.status) || !isTier(row.tier)) return 'free';
  return row.tier;
}

export interface PriceIds {
  starter: string;
  pro: string;
}

/** The highest tier among a subscription's prices, null when none is one of ours. */
export function tierOfPrices(priceIds: readonly string[], prices: PriceIds): Tier | null {
  if (priceIds.includes(prices.pro)) return 'pro';
  if (priceIds.includes(prices.starter)) return 'starter';
  return null;
}

/** What a Stripe event says, read defensively (payloads follow the endpoint's API version). */
export type Change =
  | {
      kind: 'checkout_completed';
      userId: string | null;
      customerId: string | null;
      subscriptionId: string | null;
      tier: Tier | null;
      email: string | null;
      /** Paid or nothing to pay: the subscription starts now. */
      paid: boolean;
    }
  | {
      kind: 'subscription';
      deleted: boolean;
      userId: string | null;
      customerId: string | null;
      subscriptionId: string;
      status: string;
      tier: Tier | null;
      currentPeriodEnd: number | null; // Unix seconds
      cancelAtPeriodEnd: boolean;
    }
  | { kind: 'payment_failed'; userId: string | null; customerId: string | null; subscriptionId: string | null }
  | { kind: 'ignored'; reason: string };

export interface StripeEventLike {
  id: string;
  type: string;
  created: number;
  data: { object: unknown };
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
/** An id field that may be expanded into an object. */
const idOf = (v: unknown): string | null => str(v) ?? (isObj(v) ? str(v.id) : null);
const metadata = (v: unknown): Obj => (isObj(v) && isObj(v.metadata) ? v.metadata : {});

function subscriptionPrices(sub: Obj): string[] {
  const items = isObj(sub.items) && Array.isArray(sub.items.data) ? sub.items.data : [];
  const out: string[] = [];
  for (const item of items) {
    if (!isObj(item)) continue;
    const price = idOf(item.price) ?? (isObj(item.plan) ? str(item.plan.id) : null);
    if (price) out.push(price);
  }
  return out;
}

/** Period end: on the subscription (API versions before 2025-03) or on its items (later). */
function periodEnd(sub: Obj): number | null {
  if (typeof sub.current_period_end === 'number') return sub.current_period_end;
  const items = isObj(sub.items) && Array.isArray(sub.items.data) ? sub.items.data : [];
  const ends = items.filter(isObj).map((i) => i.current_period_end).filter((n): n is number => typeof n === 'number');
  return ends.length > 0 ? Math.max(...ends) : null;
}

const tierFrom = (priceIds: string[], meta: Obj, prices: PriceIds): Tier | null => {
  // Our prices decide; the tier written into the metadata at checkout is the fallback (a
  // price id changed in the configuration since).
  const byPrice = tierOfPrices(priceIds, prices);
  if (byPrice) return byPrice;
  return isTier(meta.tier) ? meta.tier : null;
};

/** Reads the part of an event that matters for plans. */
export function changeOf(event: StripeEventLike, prices: PriceIds): Change {
  const o = event.data.object;
  if (!isObj(o)) return { kind: 'ignored', reason: 'event without an object' };
  switch (event.type) {
    case 'checkout.session.completed': {
      if (o.mode !== 'subscription') return { kind: 'ignored', reason: `checkout in ${String(o.mode)} mode` };
      const meta = metadata(o);
      const details = isObj(o.customer_details) ? o.customer_details : {};
      return {
        kind: 'checkout_completed',
        userId: str(meta.user_id) ?? str(o.client_reference_id),
        customerId: idOf(o.customer),
        subscriptionId: idOf(o.subscription),
        tier: isTier(meta.tier) ? meta.tier : null,
        email: str(details.email) ?? str(o.customer_email),
        paid: o.payment_status === 'paid' || o.payment_status === 'no_payment_required',
      };
    }
    case 'customer.subscription.created':
    case 'customer.subscription.updated':
    case 'customer.subscription.deleted': {
      const id = str(o.id);
      if (!id) return { kind: 'ignored', reason: 'subscription without an id' };
      const meta = metadata(o);
      const deleted = event.type === 'customer.subscription.deleted';
      return {
        kind: 'subscription',
        deleted,
        userId: str(meta.user_id),
        customerId: idOf(o.customer),
        subscriptionId: id,
        status: deleted ? 'canceled' : (str(o.status) ?? 'incomplete'),
        tier: tierFrom(subscriptionPrices(o), meta, prices),
        currentPeriodEnd: periodEnd(o),
        cancelAtPeriodEnd: o.cancel_at_period_end === true,
      };
    }
    case 'invoice.payment_failed': {
      // The subscription: `parent.subscription_details` (API 2025-03 and later) or `subscription`.
      const parent = isObj(o.parent) ? o.parent : {};
      const details = isObj(parent.subscription_details) ? parent.subscription_details : {};
      const subscriptionId = idOf(details.subscription) ?? idOf(o.subscription);
      return {
        kind: 'payment_failed',
        userId: str(metadata(details).user_id) ?? str(metadata(o.subscription_details).user_id),
        customerId: idOf(o.customer),
        subscriptionId,
      };
    }
    default:
      return { kind: 'ignored', reason: `event type ${event.type} is not used` };
  }
}

export type Outcome = 'applied' | 'unchanged' | 'stale' | 'ignored' | 'unknown_customer' | 'duplicate';

/** A row without its write bookkeeping (`version`, `updated_at`, `plan`): what events decide. */
export type SubscriptionState = Omit<SubscriptionRow, 'version' | 'updated_at' | 'plan'>;

export function emptyState(userId: string): SubscriptionState {
  return {
    user_id: userId,
    email: '',
    stripe_customer_id: null,
    stripe_subscription_id: null,
    tier: null,
    status: 'none',
    current_period_end: null,
    cancel_at_period_end: false,
    event_created: 0,
    last_event_id: '',
  };
}

const iso = (seconds: number | null) => (seconds === null ? null : new Date(seconds * 1000).toISOString());

function sameState(a: SubscriptionState, b: SubscriptionState): boolean {
  return (
    a.email === b.email &&
    a.stripe_customer_id === b.stripe_customer_id &&
    a.stripe_subscription_id === b.stripe_subscription_id &&
    a.tier === b.tier &&
    a.status === b.status &&
    a.current_period_end === b.current_period_end &&
    a.cancel_at_period_end === b.cancel_at_period_end
  );
}

/**
 * Applies one event's change to a user's state. Returns the next state (null when nothing
 * changes) and what happened. `current` is null for a user without a row.
 */
export function reduce(
  userId: string,
  current: SubscriptionState | null,
  change: Change,
  event: { id: string; created: number },
): { outcome: Outcome; next: SubscriptionState | null } {
  if (change.kind === 'ignored') return { outcome: 'ignored', next: null };
  const cur = current ?? emptyState(userId);
  if (current && current.last_event_id === event.id) return { outcome: 'duplicate', next: null };
  if (current && event.created < current.event_created) return { outcome: 'stale', next: null };
  const stamp = { event_created: Math.max(cur.event_created, event.created), last_event_id: event.id };
  let next: SubscriptionState;

  switch (change.kind) {
    case 'checkout_completed': {
      const customer = change.customerId ?? cur.stripe_customer_id;
      const email = change.email ?? cur.email;
      if (change.subscriptionId !== null && change.subscriptionId === cur.stripe_subscription_id && cur.status !== 'none') {
        // The subscription's own events already said more (status, period): only link.
        next = { ...cur, stripe_customer_id: customer, email, tier: cur.tier ?? change.tier, ...stamp };
      } else if (change.subscriptionId === null) {
        next = { ...cur, stripe_customer_id: customer, email, ...stamp };
      } else {
        // A new subscription: the paid plan starts at once (its own events follow).
        next = {
          ...cur,
          stripe_customer_id: customer,
          email,
          stripe_subscription_id: change.subscriptionId,
          tier: change.tier,
          status: change.paid ? 'active' : 'incomplete',
          current_period_end: null,
          cancel_at_period_end: false,
          ...stamp,
        };
      }
      break;
    }
    case 'subscription': {
      const same = cur.stripe_subscription_id === change.subscriptionId;
      if (!same && cur.stripe_subscription_id !== null && grantsAccess(cur.status) && !grantsAccess(change.status)) {
        // Another subscription of the user ends or stalls: the current one still holds.
        return { outcome: 'ignored', next: null };
      }
      if (same && cur.status === 'canceled' && change.status !== 'canceled') return { outcome: 'stale', next: null };
      next = {
        ...cur,
        stripe_customer_id: change.customerId ?? cur.stripe_customer_id,
        stripe_subscription_id: change.subscriptionId,
        tier: change.tier ?? (same ? cur.tier : null),
        status: change.status,
        current_period_end: iso(change.currentPeriodEnd) ?? (same ? cur.current_period_end : null),
        cancel_at_period_end: change.cancelAtPeriodEnd,
        ...stamp,
      };
      break;
    }
    case 'payment_failed': {
      if (change.subscriptionId === null || (cur.stripe_subscription_id !== null && change.subscriptionId !== cur.stripe_subscription_id)) {
        // A one-off invoice or another subscription's: not the plan's business.
        return { outcome: 'ignored', next: null };
      }
      // A failed renewal puts a running subscription into dunning; a first payment that
      // fails leaves it incomplete (no plan), and a later state is not undone.
      if (cur.status !== 'active' && cur.status !== 'trialing') return { outcome: 'unchanged', next: null };
      next = { ...cur, stripe_customer_id: change.customerId ?? cur.stripe_customer_id, status: 'past_due', ...stamp };
      break;
    }
  }
  if (current && sameState(current, next)) return { outcome: 'unchanged', next };
  return { outcome: 'applied', next };
}

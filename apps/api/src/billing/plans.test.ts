import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { changeOf, emptyState, planOf, reduce, tierOfPrices, type Change, type StripeEventLike, type SubscriptionState } from './plans.ts';

const PRICES = { starter: 'price_starter', pro: 'price_pro' };

function subEvent(o: {
  id?: string;
  type?: 'customer.subscription.created' | 'customer.subscription.updated' | 'customer.subscription.deleted';
  created: number;
  sub?: string;
  status: string;
  price?: string;
  user?: string | null;
  customer?: string;
  periodEndOnItems?: boolean;
}): StripeEventLike {
  const periodEnd = o.created + 30 * 86_400;
  return {
    id: o.id ?? `evt_${o.created}_${o.status}`,
    type: o.type ?? 'customer.subscription.updated',
    created: o.created,
    data: {
      object: {
        id: o.sub ?? 'sub_1',
        object: 'subscription',
        customer: o.customer ?? 'cus_1',
        status: o.status,
        cancel_at_period_end: false,
        metadata: o.user === null ? {} : { user_id: o.user ?? 'u1', tier: 'starter' },
        ...(o.periodEndOnItems ? {} : { current_period_end: periodEnd }),
        items: {
          object: 'list',
          data: [{ id: 'si_1', price: { id: o.price ?? PRICES.pro }, ...(o.periodEndOnItems ? { current_period_end: periodEnd } : {}) }],
        },
      },
    },
  };
}

function apply(state: SubscriptionState | null, ev: StripeEventLike) {
  return reduce('u1', state, changeOf(ev, PRICES), ev);
}

/** Applies events in arrival order; returns the final state and the outcomes. */
function run(events: StripeEventLike[], start: SubscriptionState | null = null) {
  let state = start;
  const outcomes: string[] = [];
  for (const ev of events) {
    const r = apply(state, ev);
    outcomes.push(r.outcome);
    if (r.next) state = r.next;
  }
  return { state, outcomes };
}

describe('plans', () => {
  it('grants the tier while active, trialing or past_due, free otherwise and for unknown users', () => {
    for (const status of ['active', 'trialing', 'past_due']) expect(planOf({ tier: 'pro', status })).toBe('pro');
    for (const status of ['incomplete', 'incomplete_expired', 'unpaid', 'canceled', 'paused', 'none']) expect(planOf({ tier: 'pro', status })).toBe('free');
    expect(planOf(null)).toBe('free');
    expect(planOf({ tier: null, status: 'active' })).toBe('free');
  });

  it('maps prices to the highest configured tier', () => {
    expect(tierOfPrices(['price_x', 'price_starter'], PRICES)).toBe('starter');
    expect(tierOfPrices(['price_starter', 'price_pro'], PRICES)).toBe('pro');
    expect(tierOfPrices(['price_x'], PRICES)).toBeNull();
  });
});

describe('reading events', () => {
  it('reads a subscription of either API shape (period end on the subscription or on its items)', () => {
    for (const periodEndOnItems of [false, true]) {
      const c = changeOf(subEvent({ created: 1000, status: 'active', periodEndOnItems }), PRICES);
      expect(c).toMatchObject({ kind: 'subscription', userId: 'u1', customerId: 'cus_1', subscriptionId: 'sub_1', status: 'active', tier: 'pro', currentPeriodEnd: 1000 + 30 * 86_400 });
    }
  });

  it('falls back to the tier in the metadata when the price is not configured (any more)', () => {
    expect(changeOf(subEvent({ created: 1, status: 'active', price: 'price_old' }), PRICES)).toMatchObject({ tier: 'starter' });
  });

  it('reads the subscription of a failed invoice in both API shapes', () => {
    const newer = { id: 'evt_i', type: 'invoice.payment_failed', created: 5, data: { object: { object: 'invoice', customer: 'cus_1', parent: { subscription_details: { subscription: 'sub_1', metadata: { user_id: 'u1' } } } } } };
    const older = { id: 'evt_j', type: 'invoice.payment_failed', created: 5, data: { object: { object: 'invoice', customer: 'cus_1', subscription: 'sub_1' } } };
    expect(changeOf(newer, PRICES)).toEqual({ kind: 'payment_failed', userId: 'u1', customerId: 'cus_1', subscriptionId: 'sub_1' });
    expect(changeOf(older, PRICES)).toEqual({ kind: 'payment_failed', userId: null, customerId: 'cus_1', subscriptionId: 'sub_1' });
  });

  it('reads the user of a completed checkout from the metadata, else the client reference', () => {
    const session = (extra: Record<string, unknown>) => ({
      id: 'evt_c',
      type: 'checkout.session.completed',
      created: 9,
      data: { object: { object: 'checkout.session', mode: 'subscription', customer: 'cus_9', subscription: 'sub_9', payment_status: 'paid', customer_details: { email: 'a@b.co' }, ...extra } },
    });
    expect(changeOf(session({ metadata: { user_id: 'user with spaces', tier: 'pro' }, client_reference_id: null }), PRICES)).toMatchObject({ userId: 'user with spaces', tier: 'pro', paid: true, email: 'a@b.co' });
    expect(changeOf(session({ metadata: {}, client_reference_id: 'u_ref' }), PRICES)).toMatchObject({ userId: 'u_ref', tier: null });
    expect(changeOf(session({ mode: 'payment' }), PRICES)).toMatchObject({ kind: 'ignored' });
  });

  it('ignores other event types and malformed objects', () => {
    expect(changeOf({ id: 'e', type: 'charge.succeeded', created: 1, data: { object: {} } }, PRICES).kind).toBe('ignored');
    expect(changeOf({ id: 'e', type: 'customer.subscription.updated', created: 1, data: { object: null } }, PRICES).kind).toBe('ignored');
    expect(changeOf({ id: 'e', type: 'customer.subscription.updated', created: 1, data: { object: { status: 'active' } } }, PRICES).kind).toBe('ignored');
  });
});

describe('applying events', () => {
  it('an older subscription update arriving after a newer one does not regress the plan', () => {
    const newer = subEvent({ created: 2000, status: 'active', price: PRICES.pro });
    const older = subEvent({ created: 1000, status: 'active', price: PRICES.starter });
    const { state, outcomes } = run([newer, older]);
    expect(outcomes).toEqual(['applied', 'stale']);
    expect(planOf(state)).toBe('pro');
  });

  it('the same event twice is applied once', () => {
    const ev = subEvent({ created: 1000, status: 'active' });
    expect(run([ev, ev]).outcomes).toEqual(['applied', 'duplicate']);
  });

  it('for any arrival order, the plan is that of the newest event (canceled only ever last)', () => {
    const statuses = ['active', 'trialing', 'past_due', 'unpaid', 'incomplete'];
    const arb = fc
      .uniqueArray(fc.integer({ min: 1, max: 1e9 }), { minLength: 1, maxLength: 8 })
      .chain((times) =>
        fc.tuple(
          fc.constant([...times].sort((a, b) => a - b)),
          fc.array(fc.tuple(fc.constantFrom(...statuses), fc.constantFrom(PRICES.starter, PRICES.pro)), { minLength: times.length, maxLength: times.length }),
          fc.boolean(),
        ),
      )
      .chain(([times, specs, endsCanceled]) => {
        const events = times.map((created, i) =>
          subEvent({
            id: `evt_${i}`,
            created,
            status: endsCanceled && i === times.length - 1 ? 'canceled' : specs[i]![0],
            price: specs[i]![1],
            type: endsCanceled && i === times.length - 1 ? 'customer.subscription.deleted' : 'customer.subscription.updated',
          }),
        );
        return fc.tuple(fc.constant(events), fc.shuffledSubarray(events, { minLength: events.length, maxLength: events.length }));
      });
    fc.assert(
      fc.property(arb, ([inOrder, arrival]) => {
        const expected = run(inOrder).state!;
        const got = run(arrival).state!;
        expect(got.status).toBe(expected.status);
        expect(got.tier).toBe(expected.tier);
        expect(planOf(got)).toBe(planOf(expected));
        expect(got.event_created).toBe(inOrder[inOrder.length - 1]!.created);
      }),
      { numRuns: 300 },
    );
  });

  it('a canceled subscription is never revived by an event of the same second', () => {
    const deleted = subEvent({ id: 'evt_del', type: 'customer.subscription.deleted', created: 1000, status: 'canceled' });
    const sameSecond = subEvent({ id: 'evt_upd', created: 1000, status: 'active' });
    const { state, outcomes } = run([deleted, sameSecond]);
    expect(outcomes).toEqual(['applied', 'stale']);
    expect(planOf(state)).toBe('free');
  });

  it('a failed renewal keeps the paid plan as past_due; a failed first payment grants nothing', () => {
    const failed = (created: number): StripeEventLike => ({ id: `evt_f${created}`, type: 'invoice.payment_failed', created, data: { object: { customer: 'cus_1', parent: { subscription_details: { subscription: 'sub_1' } } } } });
    const active = run([subEvent({ created: 1000, status: 'active' }), failed(1001)]);
    expect(active.outcomes).toEqual(['applied', 'applied']);
    expect(active.state!.status).toBe('past_due');
    expect(planOf(active.state)).toBe('pro');
    const incomplete = run([subEvent({ created: 1000, status: 'incomplete' }), failed(1001)]);
    expect(incomplete.outcomes).toEqual(['applied', 'unchanged']);
    expect(planOf(incomplete.state)).toBe('free');
    // Another subscription's failure (or a one-off invoice) leaves the plan alone.
    const other: StripeEventLike = { id: 'evt_o', type: 'invoice.payment_failed', created: 1002, data: { object: { customer: 'cus_1', subscription: 'sub_other' } } };
    expect(run([subEvent({ created: 1000, status: 'active' }), other]).outcomes).toEqual(['applied', 'ignored']);
  });

  it('the end of an old subscription does not end the one the user holds now', () => {
    const current = subEvent({ id: 'e1', sub: 'sub_new', created: 2000, status: 'active' });
    const oldEnds = subEvent({ id: 'e2', sub: 'sub_old', type: 'customer.subscription.deleted', created: 2001, status: 'canceled' });
    const { state, outcomes } = run([current, oldEnds]);
    expect(outcomes).toEqual(['applied', 'ignored']);
    expect(state!.stripe_subscription_id).toBe('sub_new');
    expect(planOf(state)).toBe('pro');
  });

  it('a completed checkout grants the tier at once and, arriving after the subscription events, keeps what they said', () => {
    const checkout = (created: number): StripeEventLike => ({
      id: `evt_cs${created}`,
      type: 'checkout.session.completed',
      created,
      data: { object: { mode: 'subscription', customer: 'cus_1', subscription: 'sub_1', payment_status: 'paid', metadata: { user_id: 'u1', tier: 'pro' }, customer_details: { email: 'u1@example.com' } } },
    });
    const first = run([checkout(1000)]);
    expect(first.state).toMatchObject({ status: 'active', tier: 'pro', stripe_customer_id: 'cus_1', email: 'u1@example.com' });
    const created = subEvent({ id: 'e_sub', type: 'customer.subscription.created', created: 1000, status: 'trialing' });
    const after = run([created, checkout(1000)]);
    expect(after.state).toMatchObject({ status: 'trialing', tier: 'pro', email: 'u1@example.com' });
    expect(after.state!.current_period_end).not.toBeNull();
  });

  it('never changes anything for an ignored change', () => {
    const ignored: Change = { kind: 'ignored', reason: 'x' };
    expect(reduce('u1', emptyState('u1'), ignored, { id: 'e', created: 1 })).toEqual({ outcome: 'ignored', next: null });
  });
});

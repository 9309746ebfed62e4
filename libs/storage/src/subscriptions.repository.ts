import type { ClickHouse } from './clickhouse.ts';
import { isoMsSql } from './market-data.repository.ts';
import { chTime, insertRows, queryFirst } from './rows.ts';

/**
 * The stored subscription of a user (migration 006): one row per user, the latest
 * `version` wins. Empty strings in the table stand for "none"; this type uses null.
 */
export interface SubscriptionRow {
  user_id: string;
  email: string;
  stripe_customer_id: string | null;
  stripe_subscription_id: string | null;
  /** The paid tier the subscription is for (`starter`, `pro`), null without one. */
  tier: string | null;
  /** Stripe's subscription status (`active`, `past_due`, `canceled`, …) or `none`. */
  status: string;
  /** The plan the row grants (`free`, `starter`, `pro`), derived when it was written. */
  plan: string;
  current_period_end: string | null; // ISO 8601, ms
  cancel_at_period_end: boolean;
  /** Unix seconds of the Stripe event last applied (orders redelivered or late events). */
  event_created: number;
  last_event_id: string;
  updated_at: string; // ISO 8601, ms
  /** Larger wins; strictly increasing per user. */
  version: number;
}

/** A Stripe event that was handled, and what came of it. */
export interface StripeEventRow {
  event_id: string;
  type: string;
  created: number;
  user_id: string;
  outcome: string;
  processed_at: string; // ISO 8601, ms
}

const COLUMNS = `user_id, email, stripe_customer_id, stripe_subscription_id, toString(tier) AS tier,
  toString(status) AS status, toString(plan) AS plan,
  if(isNull(current_period_end), NULL, ${isoMsSql('assumeNotNull(current_period_end)')}) AS current_period_end,
  cancel_at_period_end, toString(event_created) AS event_created, last_event_id,
  ${isoMsSql('updated_at')} AS updated_at, toString(version) AS version`;

interface Stored {
  user_id: string;
  email: string;
  stripe_customer_id: string;
  stripe_subscription_id: string;
  tier: string;
  status: string;
  plan: string;
  current_period_end: string | null;
  cancel_at_period_end: number | string;
  event_created: string;
  last_event_id: string;
  updated_at: string;
  version: string;
}

function fromStored(r: Stored): SubscriptionRow {
  return {
    user_id: r.user_id,
    email: r.email,
    stripe_customer_id: r.stripe_customer_id || null,
    stripe_subscription_id: r.stripe_subscription_id || null,
    tier: r.tier || null,
    status: r.status,
    plan: r.plan,
    current_period_end: r.current_period_end,
    cancel_at_period_end: Number(r.cancel_at_period_end) === 1,
    event_created: Number(r.event_created),
    last_event_id: r.last_event_id,
    updated_at: r.updated_at,
    version: Number(r.version),
  };
}

/** subscriptions and stripe_events (migration 006). Every value is bound. */
export class SubscriptionsRepository {
  constructor(private readonly ch: ClickHouse) {}

  /** Writes a version of a user's subscription row. */
  async save(row: SubscriptionRow): Promise<void> {
    await insertRows(this.ch, 'subscriptions', [
      {
        user_id: row.user_id,
        email: row.email,
        stripe_customer_id: row.stripe_customer_id ?? '',
        stripe_subscription_id: row.stripe_subscription_id ?? '',
        tier: row.tier ?? '',
        status: row.status,
        plan: row.plan,
        current_period_end: row.current_period_end === null ? null : chTime(row.current_period_end),
        cancel_at_period_end: row.cancel_at_period_end ? 1 : 0,
        event_created: row.event_created,
        last_event_id: row.last_event_id,
        updated_at: chTime(row.updated_at),
        version: row.version,
      },
    ]);
  }

  findByUser(userId: string): Promise<SubscriptionRow | null> {
    return this.findOne('user_id = {user:String}', { user: userId });
  }

  /** The user a Stripe customer belongs to (the latest row that names the customer). */
  findByCustomer(customerId: string): Promise<SubscriptionRow | null> {
    return this.findOne('stripe_customer_id = {customer:String} ORDER BY version DESC', { customer: customerId });
  }

  /** The one row `where` picks (it may end in an ORDER BY). */
  private async findOne(where: string, params: Record<string, unknown>): Promise<SubscriptionRow | null> {
    const row = await queryFirst<Stored>(this.ch, `SELECT ${COLUMNS} FROM ${this.ch.table('subscriptions')} FINAL WHERE ${where} LIMIT 1`, params);
    return row ? fromStored(row) : null;
  }

  /** Whether an event id was handled before (a redelivery). */
  async findEvent(eventId: string): Promise<StripeEventRow | null> {
    const row = await queryFirst<Omit<StripeEventRow, 'created'> & { created: string }>(
      this.ch,
      `SELECT event_id, toString(type) AS type, toString(created) AS created, user_id, toString(outcome) AS outcome,
          ${isoMsSql('processed_at')} AS processed_at
        FROM ${this.ch.table('stripe_events')} FINAL WHERE event_id = {id:String} LIMIT 1`,
      { id: eventId },
    );
    return row ? { ...row, created: Number(row.created) } : null;
  }

  async recordEvent(e: StripeEventRow): Promise<void> {
    await insertRows(this.ch, 'stripe_events', [
      { event_id: e.event_id, type: e.type, created: e.created, user_id: e.user_id, outcome: e.outcome, processed_at: chTime(e.processed_at) },
    ]);
  }
}

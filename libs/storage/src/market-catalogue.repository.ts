import type { CatalogueMarket } from '@booktape/domain';
import type { ClickHouse } from './clickhouse.ts';
import { chTime, insertRows, queryFirst, queryRows } from './rows.ts';

// The catalogue's row type is the domain's; re-exported so readers of the catalogue need only storage.
export type { CatalogueMarket };

interface Row {
  condition_id: string;
  market_id: string;
  market_slug: string;
  question: string;
  active: boolean | number;
  closed: boolean | number;
  token_ids: string[];
  outcomes: string[];
  event_id: string;
  event_slug: string;
  event_title: string;
}

const COLUMNS = 'condition_id, market_id, market_slug, question, active, closed, token_ids, outcomes, event_id, event_slug, event_title';

/** Longest id list bound into one query (condition ids of a page of at most 1,000 markets). */
const ID_BATCH = 1000;

function fromRow(r: Row): CatalogueMarket {
  return {
    conditionId: r.condition_id,
    marketId: r.market_id === '' ? null : r.market_id,
    slug: r.market_slug,
    question: r.question,
    active: Boolean(r.active),
    closed: Boolean(r.closed),
    tokenIds: r.token_ids,
    outcomes: r.outcomes,
    eventId: r.event_id === '' ? null : r.event_id,
    eventSlug: r.event_slug === '' ? null : r.event_slug,
    eventTitle: r.event_title === '' ? null : r.event_title,
  };
}

/** Numeric venue ids in numeric order (shorter first), then the condition id. */
export function compareCatalogueMarkets(a: CatalogueMarket, b: CatalogueMarket): number {
  const ia = a.marketId ?? '';
  const ib = b.marketId ?? '';
  if (ia !== ib) {
    if (ia === '') return 1;
    if (ib === '') return -1;
    if (ia.length !== ib.length) return ia.length - ib.length;
    return ia < ib ? -1 : 1;
  }
  return a.conditionId < b.conditionId ? -1 : a.conditionId > b.conditionId ? 1 : 0;
}

/** True when two entries say the same thing (a refresh that changes nothing is not written). */
export function sameCatalogueMarket(a: CatalogueMarket, b: CatalogueMarket): boolean {
  return (
    a.conditionId === b.conditionId &&
    a.marketId === b.marketId &&
    a.slug === b.slug &&
    a.question === b.question &&
    a.active === b.active &&
    a.closed === b.closed &&
    a.eventId === b.eventId &&
    a.eventSlug === b.eventSlug &&
    a.eventTitle === b.eventTitle &&
    a.tokenIds.length === b.tokenIds.length &&
    a.tokenIds.every((t, i) => t === b.tokenIds[i]) &&
    a.outcomes.length === b.outcomes.length &&
    a.outcomes.every((o, i) => o === b.outcomes[i])
  );
}

/** market_catalogue (migration 005). Every value is bound. */
export class MarketCatalogueRepository {
  constructor(private readonly ch: ClickHouse) {}

  /** Writes the markets as they are now; the latest write of a condition id wins. */
  async upsert(markets: CatalogueMarket[], at = Date.now()): Promise<void> {
    if (markets.length === 0) return;
    const updated = chTime(at);
    for (let i = 0; i < markets.length; i += 5000) {
      await insertRows(
        this.ch,
        'market_catalogue',
        markets.slice(i, i + 5000).map((m) => ({
          condition_id: m.conditionId,
          market_id: m.marketId ?? '',
          market_slug: m.slug,
          question: m.question,
          active: m.active,
          closed: m.closed,
          token_ids: m.tokenIds,
          outcomes: m.outcomes,
          event_id: m.eventId ?? '',
          event_slug: m.eventSlug ?? '',
          event_title: m.eventTitle ?? '',
          updated_at: updated,
        })),
      );
    }
  }

  /**
   * Latest rows whose `column` equals `value`. The condition ids are found first (the bloom
   * filter skips most of the table), then those rows are read by key with FINAL and
   * checked again: an older version may have matched while the latest one no longer does.
   */
  private async findBy(column: 'market_slug' | 'event_slug', value: string): Promise<CatalogueMarket[]> {
    const table = this.ch.table('market_catalogue');
    const rows = await queryRows<Row>(
      this.ch,
      `SELECT ${COLUMNS} FROM ${table} FINAL
        WHERE condition_id GLOBAL IN (SELECT condition_id FROM ${table} WHERE ${column} = {v:String})
          AND ${column} = {v:String}
        ORDER BY condition_id
        LIMIT 10000`,
      { v: value },
    );
    return rows.map(fromRow).sort(compareCatalogueMarkets);
  }

  /** Markets with this market slug (normally one). */
  findByMarketSlug(slug: string): Promise<CatalogueMarket[]> {
    return this.findBy('market_slug', slug);
  }

  /** The markets of the event with this slug, in the venue's id order. */
  findByEventSlug(slug: string): Promise<CatalogueMarket[]> {
    return this.findBy('event_slug', slug);
  }

  /** Known markets among these condition ids (`0x` + lower case), by condition id. */
  async findByConditionIds(conditionIds: string[]): Promise<Map<string, CatalogueMarket>> {
    const out = new Map<string, CatalogueMarket>();
    const ids = [...new Set(conditionIds)];
    for (let i = 0; i < ids.length; i += ID_BATCH) {
      const rows = await queryRows<Row>(this.ch, `SELECT ${COLUMNS} FROM ${this.ch.table('market_catalogue')} FINAL WHERE condition_id IN {ids:Array(String)}`, {
        ids: ids.slice(i, i + ID_BATCH),
      });
      for (const r of rows) out.set(r.condition_id, fromRow(r));
    }
    return out;
  }

  /** Condition ids the catalogue holds as not closed (to refresh those the venue no longer lists as open). */
  async openConditionIds(): Promise<string[]> {
    const rows = await queryRows<{ condition_id: string }>(this.ch, `SELECT condition_id FROM ${this.ch.table('market_catalogue')} FINAL WHERE NOT closed ORDER BY condition_id`);
    return rows.map((r) => r.condition_id);
  }

  /** Number of markets in the catalogue. */
  async count(): Promise<number> {
    const row = await queryFirst<{ n: string | number }>(this.ch, `SELECT count() AS n FROM ${this.ch.table('market_catalogue')} FINAL`);
    return Number(row?.n ?? 0);
  }
}

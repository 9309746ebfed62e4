import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempClickHouse, type TestClickHouse } from '@booktape/testkit';
import { MarketCatalogueRepository, type CatalogueMarket } from './market-catalogue.repository.ts';

/** The market catalogue (migration 005) on the real embedded engine. */

let t: TestClickHouse;
let repo: MarketCatalogueRepository;

function market(n: number, over: Partial<CatalogueMarket> = {}): CatalogueMarket {
  return {
    conditionId: `0x${n.toString(16).padStart(64, '0')}`,
    marketId: String(500 + n),
    slug: `market-${n}`,
    question: `Will ${n} happen?`,
    active: true,
    closed: false,
    tokenIds: [`${n}1`, `${n}2`],
    outcomes: ['Yes', 'No'],
    eventId: '9001',
    eventSlug: 'the-event',
    eventTitle: 'The event',
    ...over,
  };
}

beforeAll(async () => {
  t = await tempClickHouse();
  repo = new MarketCatalogueRepository(t.ch);
});
afterAll(async () => t?.cleanup());

describe('market catalogue repository', () => {
  it('finds markets by market slug, by event slug (in venue id order) and by condition id', async () => {
    await repo.upsert([market(12), market(3), market(7, { eventSlug: 'other', eventTitle: 'Other', eventId: null, marketId: null })], 1_000);
    expect(await repo.findByMarketSlug('market-3')).toEqual([market(3)]);
    expect((await repo.findByEventSlug('the-event')).map((m) => m.slug)).toEqual(['market-3', 'market-12']);
    expect(await repo.findByEventSlug('other')).toEqual([market(7, { eventSlug: 'other', eventTitle: 'Other', eventId: null, marketId: null })]);
    expect(await repo.findByMarketSlug('nope')).toEqual([]);
    const byId = await repo.findByConditionIds([market(3).conditionId, market(12).conditionId, '0xdead']);
    expect([...byId.keys()].sort()).toEqual([market(12).conditionId, market(3).conditionId].sort());
    expect(byId.get(market(12).conditionId)?.tokenIds).toEqual(['121', '122']);
  });

  it('answers the latest version only: a moved slug or event no longer matches the old one', async () => {
    await repo.upsert([market(20, { slug: 'old-slug', eventSlug: 'old-event' })], 1_000);
    await repo.upsert([market(20, { slug: 'new-slug', eventSlug: 'new-event', closed: true })], 2_000);
    // An older write arriving late does not win.
    await repo.upsert([market(20, { slug: 'older-slug' })], 500);
    expect(await repo.findByMarketSlug('old-slug')).toEqual([]);
    expect(await repo.findByMarketSlug('older-slug')).toEqual([]);
    expect(await repo.findByEventSlug('old-event')).toEqual([]);
    expect(await repo.findByMarketSlug('new-slug')).toEqual([market(20, { slug: 'new-slug', eventSlug: 'new-event', closed: true })]);
    expect(await repo.openConditionIds()).not.toContain(market(20).conditionId);
    expect(await repo.openConditionIds()).toContain(market(3).conditionId);
  });

  it('binds hostile values and keeps unicode as it is', async () => {
    const m = market(30, { slug: "x' OR 1=1 --", question: 'Qui gagnera ? 日本 🎲', outcomes: ['Oui', 'Non'] });
    await repo.upsert([m], 1_000);
    expect(await repo.findByMarketSlug("x' OR 1=1 --")).toEqual([m]);
    expect(await repo.findByEventSlug('{v:String}')).toEqual([]);
    expect(await repo.count()).toBeGreaterThanOrEqual(5);
  });
});

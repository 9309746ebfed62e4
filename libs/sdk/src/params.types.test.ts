/**
 * The parameter types, checked by the repository's typecheck (`npm run typecheck`, which
 * includes every test file): each `@ts-expect-error` line must fail to compile, or tsc fails
 * on the unused directive. The calls are built in functions that are never run; the test
 * only keeps vitest from calling the file empty.
 */
import { describe, expect, it } from 'vitest';
import { BooktapeClient } from './client.ts';
import type { Params, VenuePath } from './types.ts';

const client = new BooktapeClient({ baseUrl: 'http://127.0.0.1:1', fetch: async () => new Response('{}') });

export function idsAreText(): unknown[] {
  return [
    client.exchangeA.raw({ conditionId: '0x5f65', from: 1, to: 2 }),
    // @ts-expect-error a condition id is text (0x…), not a number
    client.exchangeA.raw({ conditionId: 42, from: 1, to: 2 }),
    // @ts-expect-error the summary's condition id too
    client.exchangeA.summary({ conditionId: 42, assetId: '6161', from: 1, to: 2 }),
    // @ts-expect-error an asset id is beyond what a number holds exactly: text only
    client.exchangeA.book({ assetId: 71321045679252212594626385532706912750332728571942532289631379312455583992563, at: 1 }),
    client.exchangeB.book({ ticker: 'KX-1', at: 1 }),
    // @ts-expect-error a ticker is text
    client.exchangeB.book({ ticker: 7, at: 1 }),
    // @ts-expect-error a cursor is the API's opaque text
    client.exchangeA.rangePage({ conditionId: '0x5f65', from: 1, to: 2, cursor: 3 }),
    // @ts-expect-error a prefix is text
    client.exchangeB.marketsPage({ prefix: 1 }),
    // Numbers where the API takes numbers, times as numbers or Dates.
    client.exchangeA.summary({ conditionId: '0x5f65', assetId: '6161', from: new Date(0), to: 2, resolution: 60 }),
    client.exchangeB.book({ ticker: 'KX-1', at: 1, depth: 5 }),
    // @ts-expect-error resolution is a number of seconds, not text
    client.exchangeB.summary({ ticker: 'KX-1', from: 1, to: 2, resolution: '60' }),
  ];
}

export function statusTakesCodesAndClasses(): unknown[] {
  return [client.usage.requestCount('u', { status: 429 }), client.usage.requestCount('u', { status: '4xx' })];
}

// The same rule on the exported Params type, as a caller building parameters ahead sees it.
export const ok: Params<VenuePath<'exchange-a', 'market/data/range'>> = { conditionId: '0x5f65', from: 1, to: 2 };
// @ts-expect-error conditionId: 42 is not a condition id
export const bad: Params<VenuePath<'exchange-a', 'market/data/range'>> = { conditionId: 42, from: 1, to: 2 };

describe('parameter types', () => {
  it('are checked by tsc (the @ts-expect-error lines above)', () => {
    expect(typeof idsAreText).toBe('function');
  });
});

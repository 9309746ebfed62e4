/**
 * The full book of an exchange B ticker (or an exchange A token) at an instant, with its
 * best bid, best ask, mid and spread. Prints JSON.
 *
 *   BOOKTAPE_API_URL=… BOOKTAPE_API_KEY=… npx tsx libs/sdk/examples/book-at.ts --ticker KX… --at 2026-03-01T12:00:00Z
 *   … book-at.ts --asset 7132… --market 0x… --at 1772366400000
 *
 * `--market` (the token's condition id) may be left out once the rollup has seen the token.
 */
import { parseArgs } from 'node:util';
import { BooktapeClient, bookLevels, bookTop } from '@booktape/client';

const { values: a } = parseArgs({ options: { ticker: { type: 'string' }, asset: { type: 'string' }, market: { type: 'string' }, at: { type: 'string' }, depth: { type: 'string', default: '5' } } });
if ((!a.ticker && !a.asset) || !a.at) {
  console.error('usage: book-at.ts (--ticker <ticker> | --asset <token id>) --at <ISO time or Unix ms> [--depth n]');
  process.exit(2);
}
const at = /^\d+$/.test(a.at) ? Number(a.at) : new Date(a.at);

const client = new BooktapeClient({ baseUrl: process.env.BOOKTAPE_API_URL ?? 'http://127.0.0.1:8080', apiKey: process.env.BOOKTAPE_API_KEY ?? '' });
const book = a.ticker ? await client.exchangeB.book({ ticker: a.ticker, at, depth: Number(a.depth) }) : await client.exchangeA.book({ assetId: a.asset!, conditionId: a.market, at, depth: Number(a.depth) });

console.log(JSON.stringify({ at: book.timestamp, as_of_ms: book.as_of_ms, is_known: book.is_known, top: bookTop(book), levels: bookLevels(book) }, null, 2));

/**
 * Can these days of a market be trusted? The coverage map in brief (complete, partial,
 * missing days) and every gap, as JSON. Coverage calls are not billed.
 *
 *   BOOKTAPE_API_URL=… BOOKTAPE_API_KEY=… npx tsx libs/sdk/examples/coverage.ts --venue b --market KX… --start 2026-03-01 --end 2026-03-07
 */
import { parseArgs } from 'node:util';
import { BooktapeClient, coverageBrief, coverageGaps } from '@booktape/client';

const { values: a } = parseArgs({ options: { venue: { type: 'string', default: 'a' }, market: { type: 'string' }, start: { type: 'string' }, end: { type: 'string' } } });
if (!a.market || !a.start || !a.end) {
  console.error('usage: coverage.ts [--venue a|b] --market <id> --start YYYY-MM-DD --end YYYY-MM-DD');
  process.exit(2);
}

const client = new BooktapeClient({ baseUrl: process.env.BOOKTAPE_API_URL ?? 'http://127.0.0.1:8080', apiKey: process.env.BOOKTAPE_API_KEY ?? '' });
const range = { startDate: a.start, endDate: a.end };
const coverage = a.venue === 'b' ? await client.exchangeB.coverage({ ticker: a.market, ...range }) : await client.exchangeA.coverage({ conditionId: a.market, ...range });

console.log(JSON.stringify({ ...coverageBrief(coverage.data), gaps: coverageGaps(coverage.data) }, null, 2));

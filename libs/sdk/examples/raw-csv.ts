/**
 * Every raw record of a market in a time window, as the API's long CSV (one row per price
 * level change), page after page: the SDK follows the pages, the header comes once.
 *
 *   BOOKTAPE_API_URL=… BOOKTAPE_API_KEY=… npx tsx libs/sdk/examples/raw-csv.ts \
 *     --venue a --market 0x… --from 2026-03-01T00:00:00Z --to 2026-03-01T23:59:59.999Z [--out raw.csv]
 *
 * `--venue b` takes a ticker as `--market`.
 */
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { parseArgs } from 'node:util';
import { BooktapeClient } from '@booktape/client';

const { values: a } = parseArgs({ options: { venue: { type: 'string', default: 'a' }, market: { type: 'string' }, from: { type: 'string' }, to: { type: 'string' }, 'page-size': { type: 'string' }, out: { type: 'string' } } });
if (!a.market || !a.from || !a.to) {
  console.error('usage: raw-csv.ts [--venue a|b] --market <id> --from <ISO time> --to <ISO time> [--out file]');
  process.exit(2);
}

const client = new BooktapeClient({ baseUrl: process.env.BOOKTAPE_API_URL ?? 'http://127.0.0.1:8080', apiKey: process.env.BOOKTAPE_API_KEY ?? '' });
const window = { from: new Date(a.from), to: new Date(a.to), pageSize: a['page-size'] ? Number(a['page-size']) : undefined };
const pages = a.venue === 'b' ? client.exchangeB.rawCsv({ ticker: a.market, ...window }) : client.exchangeA.rawCsv({ conditionId: a.market, ...window });

const out: NodeJS.WritableStream = a.out ? createWriteStream(a.out) : process.stdout;
for await (const chunk of pages) {
  // Respect back-pressure: a day of a busy market is hundreds of MB of CSV.
  if (!out.write(chunk)) await once(out, 'drain');
}
if (a.out) out.end();

/**
 * Order-book summary buckets of one exchange A outcome token as a flat CSV, ready for
 * pandas: one row per bucket, each OHLC in four columns.
 *
 *   BOOKTAPE_API_URL=http://127.0.0.1:8080 BOOKTAPE_API_KEY=bt_live_… \
 *     npx tsx libs/sdk/examples/summaries-csv.ts --market 0x… --asset 7132… --date 2026-03-01 [--resolution 60] [--out summary.csv]
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { BooktapeClient, SUMMARY_COLUMNS, summaryRows, toCsv } from '@booktape/client';

const { values: a } = parseArgs({ options: { market: { type: 'string' }, asset: { type: 'string' }, date: { type: 'string' }, resolution: { type: 'string', default: '60' }, out: { type: 'string' } } });
if (!a.market || !a.asset || !a.date) {
  console.error('usage: summaries-csv.ts --market <condition id> --asset <token id> --date YYYY-MM-DD [--resolution s] [--out file]');
  process.exit(2);
}

const client = new BooktapeClient({ baseUrl: process.env.BOOKTAPE_API_URL ?? 'http://127.0.0.1:8080', apiKey: process.env.BOOKTAPE_API_KEY ?? '' });
const summary = await client.exchangeA.summary({ conditionId: a.market, assetId: a.asset, date: a.date, resolution: Number(a.resolution) });
const csv = toCsv(summaryRows(summary.data), SUMMARY_COLUMNS);

if (a.out) {
  writeFileSync(a.out, csv);
  console.error(`wrote ${summary.data.length} buckets to ${a.out}`);
} else process.stdout.write(csv);

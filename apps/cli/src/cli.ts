import { parseArgs } from 'node:util';
import { ConfigError } from '@booktape/config';
import { normaliseConditionId, normaliseTicker } from '@booktape/domain';
import type { BackfillRequest } from '@booktape/messaging';

const HELP = `booktape: historical order-book data for prediction markets

Usage: npx booktape <command> [options]

  start [--simulate] [--rate N]   run ingestor, API and rollup worker in one process
                                  (--simulate: capture the built-in venue simulator)
  simulate [--port P] [--rate N] [--markets-a N] [--markets-b N]
                                  run the venue simulator alone
  replay <files…> [--wait] [--timeout S]
                                  send capture files through Kafka like live frames
  rollup --venue a|b --market M [--asset T] --from DATE --to DATE [--wait] [--timeout S]
                                  re-derive the summaries of a date range (back-fill)
  ingest                          run the ingestor alone (INGESTOR_ROLES=capture,sink)
  migrate                         apply the ClickHouse migrations
  services start|status|stop      the project's own Kafka and Redis

Configuration comes from the environment; see README.md.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'start': {
      const { values } = parseArgs({ args: rest, options: { simulate: { type: 'boolean', default: false }, rate: { type: 'string' } }, strict: true });
      const { runStart } = await import('./commands/start.ts');
      return runStart({ simulate: values.simulate ?? false, rate: values.rate === undefined ? undefined : positiveInt('--rate', values.rate) });
    }
    case 'simulate': {
      const { values } = parseArgs({
        args: rest,
        options: { port: { type: 'string' }, rate: { type: 'string' }, 'markets-a': { type: 'string' }, 'markets-b': { type: 'string' }, seed: { type: 'string' } },
        strict: true,
      });
      const { runSimulate } = await import('./commands/simulate.ts');
      return runSimulate({
        port: values.port === undefined ? 9100 : positiveInt('--port', values.port),
        rate: values.rate === undefined ? 1000 : positiveInt('--rate', values.rate),
        marketsA: values['markets-a'] === undefined ? 20 : positiveInt('--markets-a', values['markets-a']),
        marketsB: values['markets-b'] === undefined ? 10 : positiveInt('--markets-b', values['markets-b']),
        seed: values.seed === undefined ? 1 : positiveInt('--seed', values.seed),
      });
    }
    case 'replay': {
      const { values, positionals } = parseArgs({ args: rest, options: { wait: { type: 'boolean', default: false }, timeout: { type: 'string' } }, allowPositionals: true, strict: true });
      if (positionals.length === 0) throw new UsageError('replay needs at least one capture file');
      const { runReplay } = await import('./commands/replay.ts');
      return runReplay({ files: positionals, wait: values.wait ?? false, timeoutMs: (values.timeout === undefined ? 600 : positiveInt('--timeout', values.timeout)) * 1000 });
    }
    case 'rollup': {
      const { values } = parseArgs({
        args: rest,
        options: { venue: { type: 'string' }, market: { type: 'string' }, asset: { type: 'string' }, from: { type: 'string' }, to: { type: 'string' }, wait: { type: 'boolean', default: false }, timeout: { type: 'string' } },
        strict: true,
      });
      const { runRollup } = await import('./commands/rollup.ts');
      return runRollup({ request: backfillRequest(values), wait: values.wait ?? false, timeoutMs: (values.timeout === undefined ? 3600 : positiveInt('--timeout', values.timeout)) * 1000 });
    }
    case 'ingest': {
      const { runIngest } = await import('@booktape/ingestor');
      return runIngest();
    }
    case 'migrate': {
      const { runMigrate } = await import('./commands/migrate.ts');
      return runMigrate();
    }
    case 'services': {
      const action = rest[0];
      if (action !== 'start' && action !== 'status' && action !== 'stop') throw new UsageError('services needs start, status or stop');
      const { spawnSync } = await import('node:child_process');
      const { REPO_ROOT } = await import('@booktape/config');
      const r = spawnSync(process.execPath, [`${REPO_ROOT}/scripts/services.mjs`, ...rest], { stdio: 'inherit' });
      return r.status ?? 1;
    }
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      console.log(HELP);
      return 0;
    default:
      throw new UsageError(`unknown command: ${command}`);
  }
}

class UsageError extends Error {}

/** The back-fill a `rollup` command asks for, checked: venue, market id, an ordered date range. */
function backfillRequest(v: { venue?: string | undefined; market?: string | undefined; asset?: string | undefined; from?: string | undefined; to?: string | undefined }): BackfillRequest {
  const venue = v.venue === 'a' || v.venue === 'exchange-a' ? 'exchange-a' : v.venue === 'b' || v.venue === 'exchange-b' ? 'exchange-b' : null;
  if (venue === null) throw new UsageError(`--venue must be a (exchange-a) or b (exchange-b), got ${JSON.stringify(v.venue ?? '')}`);
  if (v.market === undefined) throw new UsageError('--market is required (a condition id for exchange A, a ticker for exchange B)');
  const market = venue === 'exchange-a' ? normaliseConditionId(v.market) : normaliseTicker(v.market);
  if (market === null) throw new UsageError(`--market ${JSON.stringify(v.market)} is not ${venue === 'exchange-a' ? 'a condition id (0x + 64 hex digits)' : 'a ticker'}`);
  if (v.asset !== undefined && venue === 'exchange-b') throw new UsageError('--asset is for exchange A only (an exchange B ticker is its own book)');
  if (v.asset !== undefined && !/^[0-9A-Za-z]{1,128}$/.test(v.asset)) throw new UsageError(`--asset ${JSON.stringify(v.asset)} is not an outcome token id`);
  for (const [name, d] of [['--from', v.from], ['--to', v.to]] as const) {
    if (d === undefined) throw new UsageError(`${name} is required (YYYY-MM-DD)`);
    const t = Date.parse(`${d}T00:00:00Z`);
    if (!/^\d{4}-\d{2}-\d{2}$/.test(d) || Number.isNaN(t) || new Date(t).toISOString().slice(0, 10) !== d) throw new UsageError(`${name} must be a date YYYY-MM-DD, got ${JSON.stringify(d)}`);
  }
  if (v.from! > v.to!) throw new UsageError(`--from ${v.from} is after --to ${v.to}`);
  return { venue, market, ...(v.asset !== undefined ? { asset: v.asset } : {}), from: v.from!, to: v.to! };
}

function positiveInt(name: string, v: string): number {
  if (!/^\d+$/.test(v) || Number(v) < 1 || !Number.isSafeInteger(Number(v))) throw new UsageError(`${name} must be a positive integer, got ${JSON.stringify(v)}`);
  return Number(v);
}

try {
  const code = await main(process.argv.slice(2));
  if (code !== -1) process.exitCode = code;
} catch (e) {
  if (e instanceof UsageError || (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    console.error(`booktape: ${(e as Error).message}\n\n${HELP}`);
    process.exitCode = 2;
  } else if (e instanceof ConfigError) {
    console.error(`booktape: ${e.message}`);
    process.exitCode = 2;
  } else {
    console.error(`booktape: ${(e as Error).message}`);
    process.exitCode = 1;
  }
}

import { parseArgs } from 'node:util';
import { ConfigError } from '@booktape/config';

const HELP = `booktape: historical order-book data for prediction markets

Usage: npx booktape <command> [options]

  start [--simulate] [--rate N]   run ingestor, API and rollup worker in one process
                                  (--simulate: capture the built-in venue simulator)
  simulate [--port P] [--rate N] [--markets-a N] [--markets-b N]
                                  run the venue simulator alone
  replay <files…> [--wait] [--timeout S]
                                  send capture files through Kafka like live frames
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

import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import type { BackfillRequest } from '@booktape/messaging';
import { IMPORT_FORMATS } from '@booktape/storage';
import { UsageError, VENUE_CHOICES, VENUE_SHAPES, parseAssetArg, parseDateArg, parseMarketArg, parseVenueArg, TIME_RULE } from './args.ts';
import type { DataCommand, DataFlags } from './commands/data.ts';
import type { StartOptions } from './commands/start.ts';
import type { SimulateOptions } from './commands/simulate.ts';
import type { ReplayOptions } from './commands/replay.ts';
import type { ImportOptions } from './commands/import.ts';
import type { RollupOptions } from './commands/rollup.ts';
import type { OutageCommand } from './commands/outage.ts';
import type { ExportFlags, ExportOptions } from './commands/export.ts';

/**
 * The command line, parsed by commander: it gives every command its own `--help` (exit 0),
 * `--version`, usage built from the same declarations that parse, and suggestions for a
 * mistyped command or option, which the hand-written dispatcher before it lacked. Parsing
 * only decides what to run; it starts nothing, so it is tested without services.
 */

/** A command to run, with its checked options. */
export type Invocation =
  | { command: 'start'; options: StartOptions }
  | { command: 'simulate'; options: SimulateOptions }
  | { command: 'replay'; options: ReplayOptions }
  | { command: 'import'; options: ImportOptions }
  | { command: 'rollup'; options: RollupOptions }
  | { command: 'outage'; options: OutageCommand }
  | { command: 'export'; options: ExportOptions }
  | { command: 'data'; options: DataCommand }
  | { command: 'ingest' }
  | { command: 'migrate' }
  | { command: 'services'; args: string[] };

export type ParsedCommandLine =
  | { kind: 'run'; invocation: Invocation }
  /** --help or --version: print `text` on stdout, exit 0. */
  | { kind: 'print'; text: string }
  /**
   * Bad usage: on stderr the message (one line) and where the usage of the command concerned
   * is (`hint`), exit 2. The whole usage text buried the one line that said what was wrong.
   */
  | { kind: 'usage'; message: string; hint: string };

export { UsageError };

/** The line after a usage error: where the usage of the command concerned is. */
export function usageHint(command: Command): string {
  const words: string[] = [];
  for (let c: Command | null = command; c !== null && c.parent !== null; c = c.parent) words.unshift(c.name());
  return `Run 'booktape ${[...words, '--help'].join(' ')}' for usage.`;
}

export function cliVersion(): string {
  return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

export async function parseCommandLine(argv: string[]): Promise<ParsedCommandLine> {
  let invocation: Invocation | undefined;
  const out = { text: '' };
  const program = buildProgram((i) => (invocation = i), out);
  // The command whose usage a mistake shows: the deepest one commander dispatched to.
  let current: Command = program;
  const track = (_parent: Command, sub: Command) => void (current = sub);
  for (const c of [program, ...program.commands]) if (c.commands.length > 0) c.hook('preSubcommand', track);
  try {
    await program.parseAsync(argv.length === 0 ? ['--help'] : argv, { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.exitCode === 0) return { kind: 'print', text: out.text };
      return { kind: 'usage', message: commanderMessage(e, argv), hint: usageHint(current) };
    }
    if (e instanceof UsageError) return { kind: 'usage', message: e.message, hint: usageHint(current) };
    throw e;
  }
  if (invocation === undefined) throw new Error(`no command ran for ${JSON.stringify(argv)}`);
  return { kind: 'run', invocation };
}

/** The declarations alone, for a look at every command and option (tests, docs). */
export function commandLineProgram(): Command {
  return buildProgram(() => undefined, { text: '' });
}

/** Commander's words, in the form this tool used before it (scripts and tests match them). */
function commanderMessage(e: CommanderError, argv: string[]): string {
  // `help <name>` for a command that does not exist: commander only shows the overview.
  if (e.code === 'commander.help') return `unknown command: ${argv[argv.indexOf('help') + 1] ?? ''}`;
  // One line: commander puts its suggestion (`(Did you mean --help?)`) on a line of its own.
  const m = e.message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' ');
  if (e.code === 'commander.unknownCommand') return m.replace(/^unknown command '([^']*)'/, 'unknown command: $1');
  if (e.code === 'commander.unknownOption') return m.replace(/^unknown option/, 'Unknown option');
  return m;
}

const T = 'YYYY-MM-DD, an ISO time with a zone, or Unix seconds/ms';

function buildProgram(run: (i: Invocation) => void, out: { text: string }): Command {
  const program = new Command('booktape')
    .description(
      'historical order-book data for prediction markets\n\n' +
        'Configuration comes from the environment (see README.md); `booktape <command> --help` shows the options of a command.',
    )
    .usage('<command> [options]')
    // Settings subcommands inherit must come before the first .command().
    .configureOutput({ writeOut: (s) => void (out.text += s), writeErr: () => undefined, outputError: () => undefined })
    .exitOverride()
    .showSuggestionAfterError(true)
    .version(cliVersion(), '-v, --version', 'print the version')
    .helpOption('-h, --help', 'print this usage')
    .helpCommand('help [command]', 'print the usage of a command');

  program
    .command('start')
    .summary('run ingestor, API and rollup worker in one process')
    .description(
      'Runs the ingestor (capture and sink), the API and the rollup worker in one process (what `npm start` runs once ' +
        'Kafka and Redis are up). Capture reads the live venues unless --simulate.',
    )
    .option('--simulate', 'capture the built-in venue simulator instead of the live venues')
    .addOption(new Option('--rate <n>', 'events per second of the simulator (with --simulate; default 2000)').argParser(positive('--rate')))
    .action((o: { simulate?: boolean; rate?: number }) => run({ command: 'start', options: { simulate: o.simulate ?? false, rate: o.rate } }));

  program
    .command('simulate')
    .summary('run the venue simulator alone')
    .description('Runs the venue simulator alone and prints the variables that point capture at it.')
    .addOption(new Option('--port <p>', 'port to listen on').argParser(positive('--port')).default(9100))
    .addOption(new Option('--rate <n>', 'events per second, over all markets').argParser(positive('--rate')).default(1000))
    .addOption(new Option('--markets-a <n>', 'exchange A markets to simulate').argParser(positive('--markets-a')).default(20))
    .addOption(new Option('--markets-b <n>', 'exchange B markets to simulate').argParser(positive('--markets-b')).default(10))
    .addOption(new Option('--seed <n>', 'random seed: the same seed gives each market the same sequence of events').argParser(positive('--seed')).default(1))
    .action((o: { port: number; rate: number; marketsA: number; marketsB: number; seed: number }) =>
      run({ command: 'simulate', options: { port: o.port, rate: o.rate, marketsA: o.marketsA, marketsB: o.marketsB, seed: o.seed } }),
    );

  program
    .command('replay')
    .summary('send capture files through Kafka like live frames')
    .description(
      'Sends capture files through Kafka like live frames, with a progress bar. Exit status: 0 all sent (with --wait: ' +
        'visible to the API), 1 a missing or unreadable file or the sink timed out, 3 malformed lines, 4 rollup timeout, ' +
        '5 records larger than Kafka accepts (dead-lettered, not stored), 6 frames refused as bad data (a timestamp outside ' +
        'the dates the store holds, a bad exchange B ts, …: dead-lettered, not stored; stderr says how many, where and why). ' +
        'With several, the first in the order 5, 4, 6, 3.',
    )
    .argument('<files...>', 'capture files (NDJSON as capture writes them, or gzipped)')
    .option('--wait', 'return once everything replayed is stored, its summaries rebuilt and visible to the API')
    .addOption(new Option('--timeout <s>', 'with --wait: give up after this many seconds').argParser(positive('--timeout')).default(600))
    .action((files: string[], o: { wait?: boolean; timeout: number }) => run({ command: 'replay', options: { files, wait: o.wait ?? false, timeoutMs: o.timeout * 1000 } }));

  program
    .command('import')
    .summary('import archive files (PMXT v2 Parquet, booktape exports, capture files) into the store')
    .description(
      'Imports archive files into the store, in the order given (a directory: its .parquet, .csv.gz, .csv, .ndjson and ' +
        '.ndjson.gz files by name; an http(s):// URL is downloaded first, with retries, resuming a cut download where it ' +
        'stopped, under the URL\'s file name), each file whole or not at all: a file of another schema, or with a bad row ' +
        '(an impossible price or time, a malformed book, a changed record), is refused with the file and row named, and ' +
        'nothing of it is stored. Formats, told from each file\'s content: PMXT v2 Polymarket hourly Parquet; booktape\'s own ' +
        'raw exports (Parquet or csv.gz, exported with include=record: restored exactly); capture files (stored as ' +
        '`booktape replay` stores them, without Kafka). A record already stored is not stored again: importing a file twice, or ' +
        'resuming a killed import, changes nothing more (docs/rules/imports.md). Each record keeps its source, ' +
        'import:<format>:<file name> (a capture file\'s records are own capture, as replayed). A Parquet file with no rows is ' +
        'an empty hour. The imported days are then marked for the rollup workers (summaries, cross-checks), through Redis ' +
        '(REDIS_URL, else the project\'s own). The store is the one the other commands use (BOOKTAPE_DATA_DIR, ' +
        'CLICKHOUSE_DATABASE); files are read by the embedded engine, so run it while booktape is stopped, and not with ' +
        'CLICKHOUSE_URL (not yet). Progress: a bar on a terminal, a line every 10 s otherwise. Exit status: 0 every file ' +
        'imported, 1 a file could not be (named on stderr with the reason; the other files are imported), 2 bad arguments.',
    )
    .argument('<paths...>', 'files, directories or https:// URLs: polymarket_orderbook_YYYY-MM-DDTHH.parquet (PMXT v2), booktape raw exports, capture files')
    .addOption(
      new Option('--format <format>', 'the files\' format (default: told from each file\'s content)').choices(IMPORT_FORMATS),
    )
    .option(`--venue <${VENUE_CHOICES}>`, 'only files of this venue: a file of the other is refused')
    .option('--no-rollup', 'do not mark the imported days for the rollup workers')
    .action((paths: string[], o: { format?: ImportOptions['format']; rollup: boolean; venue?: string }) =>
      run({ command: 'import', options: { paths, format: o.format, rollup: o.rollup, ...(o.venue !== undefined ? { venue: parseVenueArg(o.venue) } : {}) } }),
    );

  program
    .command('rollup')
    .summary('re-derive the summaries of a date range (back-fill)')
    .description(
      'Enqueues a back-fill for the running rollup workers: the summaries of every data day in the range are rebuilt from ' +
        'raw events, then the later days whose carried state changed. Talks to Redis only, and only to the one it names: ' +
        "REDIS_URL when set, else the project's own Redis at redis://127.0.0.1:$BOOKTAPE_REDIS_PORT (default 16379); " +
        'it prints which before enqueueing. --dry-run prints the job and the asset-days it covers and enqueues nothing. ' +
        'Exit status with --wait: 0 done, 1 failed, 4 still running at the timeout.',
    )
    .usage(`--venue ${VENUE_CHOICES} --market M [--asset T] --from DATE --to DATE [--dry-run | --wait [--timeout S]]`)
    .option(`--venue <${VENUE_CHOICES}>`, 'exchange-a (a, polymarket) or exchange-b (b, kalshi); required')
    .option('--market <M>', 'a condition id (exchange A, 0x + 64 hex digits) or a ticker (exchange B); required')
    .option('--asset <T>', 'exchange A only: one outcome token id (default: every outcome of the market)')
    .option('--from <DATE>', 'first day, YYYY-MM-DD (UTC); required')
    .option('--to <DATE>', 'last day, YYYY-MM-DD (UTC), included; required')
    .option('--dry-run', 'print what would be enqueued (the job, the Redis and queue, the asset-days) and enqueue nothing')
    .option('--wait', 'follow the job with a progress bar until it is done')
    .addOption(new Option('--timeout <s>', 'with --wait: give up after this many seconds').argParser(positive('--timeout')).default(3600))
    .action((o: { venue?: string; market?: string; asset?: string; from?: string; to?: string; dryRun?: boolean; wait?: boolean; timeout: number }) => {
      if (o.dryRun && o.wait) throw new UsageError('--dry-run enqueues nothing, so there is nothing to --wait for');
      run({ command: 'rollup', options: { request: backfillRequest(o), dryRun: o.dryRun ?? false, wait: o.wait ?? false, timeoutMs: o.timeout * 1000 } });
    });

  const outage = program
    .command('outage')
    .usage('add|list|remove [options]')
    .summary('declared outages (add, list, remove) through the running API')
    .description(
      'Declared outages, through the running API, which holds the store. Exit status: 0 done, 1 the API refused or ' +
        'cannot be reached (its message is printed), 2 bad arguments.',
    )
    // Commander drops its help subcommand where a command has an action of its own.
    .helpCommand('help [command]', 'print the usage of a subcommand')
    // `outage` alone or with an unknown action: the action list, as a usage error.
    .allowExcessArguments(true)
    .action(async (_o: unknown, cmd: Command) => run({ command: 'outage', options: await outageCommand({ positionals: cmd.args }) }));
  /** `admin`: the command is an operator's, sending ADMIN_TOKEN (the user commands never send it). */
  const api = (admin = true) =>
    new Option('--api <url>', `the running API (default http://$HOST:$PORT, so http://127.0.0.1:8080 when they are unset)${admin ? '; ADMIN_TOKEN, when set, is sent as X-Admin-Token' : ''}`);
  outage
    .command('add')
    .summary('declare an outage')
    .description('Declares an outage: the venue\'s data between --from and --to is known to be missing.')
    .option(`--venue <${VENUE_CHOICES}>`, 'exchange-a (a, polymarket) or exchange-b (b, kalshi); required')
    .option('--from <T>', `start (${T}); required`)
    .option('--to <T>', `end, excluded (${T}); required`)
    .option('--reason <text>', 'why, shown with the outage; required')
    .addOption(api())
    .action(async (o: OutageFlags) => run({ command: 'outage', options: await outageCommand({ positionals: ['add'], ...o }) }));
  outage
    .command('list')
    .summary('list the declared outages')
    .description('Lists the declared outages.')
    .option(`--venue <${VENUE_CHOICES}>`, 'only this venue')
    .option('--json', 'print JSON instead of one line per outage')
    .addOption(api())
    .action(async (o: OutageFlags) => run({ command: 'outage', options: await outageCommand({ positionals: ['list'], ...o }) }));
  outage
    .command('remove')
    .summary('remove a declared outage')
    .description('Removes a declared outage.')
    .argument('[id]', 'the outage id (out_ + 16 hex digits, see outage list)')
    .addOption(api())
    .action(async (id: string | undefined, o: OutageFlags) =>
      run({ command: 'outage', options: await outageCommand({ positionals: id === undefined ? ['remove'] : ['remove', id], ...o }) }),
    );

  program
    .command('export')
    .summary('download one market\'s bulk export, or every market\'s daily file (raw or summaries, csv.gz or parquet), from the running API')
    .description(
      'Downloads GET /api/v1/{venue}/market/export into --out, with a progress bar: one market, up to 31 UTC days; ' +
        'with --all-markets --date D, GET /api/v1/{venue}/daily/{kind}: one file of every market of the venue on finalised UTC day D. ' +
        'The key comes from --key or BOOKTAPE_API_KEY. Exit status: 0 done, 1 the API refused or the download broke off, 2 bad arguments ' +
        '(or a --slug / --outcome that names no single market).',
    )
    .option(`--venue <${VENUE_CHOICES}>`, 'exchange-a (a, polymarket) or exchange-b (b, kalshi); required')
    .option('--market <id>', 'condition id (exchange A, 0x + 64 hex digits) or ticker (exchange B); required unless --slug or --all-markets')
    .option('--from <YYYY-MM-DD>', 'first UTC date; required for one market')
    .option('--to <YYYY-MM-DD>', 'last UTC date, inclusive; required for one market')
    .option('--all-markets', 'every market of the venue on --date, one file (no --market, --from, --to)')
    .option('--date <YYYY-MM-DD>', 'with --all-markets: the finalised UTC day')
    .option('--hour <0-23>', 'with --all-markets: one UTC hour of --date only')
    .option('--kind <raw|summary>', 'raw records (default) or summary buckets')
    .option('--resolution <seconds>', 'summary bucket size, 1 to 3600 (default 60)')
    .option('--asset <id>', 'exchange A summaries: one outcome token (default every token)')
    .option('--slug <slug>', "exchange A: the market by its slug or polymarket.com URL instead of --market (passed to the API, which resolves it)")
    .option('--outcome <name>', 'with --slug and --kind summary: the outcome token by its name instead of --asset')
    .option('--format <csv|parquet>', 'csv (a .csv.gz file) or parquet; default from --out\'s name, else csv')
    .option('--include <fields>', 'raw exports: last columns, comma-separated: source (where each record came from), record (the stored record whole, which `booktape import` needs to restore the export exactly)')
    .option('--out <file>', 'where to write; required')
    .option('--key <key>', 'API key (default BOOKTAPE_API_KEY)')
    .option('--no-progress', 'no progress bar')
    .addOption(api())
    .action(async (o: ExportFlags) => {
      const { parseExportOptions, ExportUsageError } = await import('./commands/export.ts');
      try {
        run({ command: 'export', options: parseExportOptions(o) });
      } catch (e) {
        if (e instanceof ExportUsageError) throw new UsageError(e.message);
        throw e;
      }
    });

  // The user commands: the running API through the SDK, written as json, ndjson or csv.
  const USER_EXIT =
    'Exit status: 0 written, 1 the API refused or cannot be reached (its message is printed; --out is left untouched), ' +
    '2 bad arguments (checked before any request), or a --slug / --outcome that names no single market.';
  const output = (c: Command, key: boolean) => {
    c.option('--format <json|ndjson|csv>', 'json (default: one document), ndjson (a JSON record a line) or csv (a header row, then a row per record)')
      .option('--out <file>', 'write here instead of stdout; the file appears under its name only once complete')
      .addOption(api(c.parent?.name() === 'keys'));
    if (key) c.option('--key <key>', 'API key (default BOOKTAPE_API_KEY)');
    return c;
  };
  const marketOptions = (c: Command) =>
    c
      .option(`--venue <${VENUE_CHOICES}>`, 'exchange-a (a, polymarket) or exchange-b (b, kalshi); required')
      .option('--condition-id <id>', 'exchange A: the market, 0x + 64 hex digits')
      .option('--ticker <ticker>', 'exchange B: the market')
      .option('--market <id>', 'either of the two, for the venue given')
      .option('--slug <slug>', "exchange A: the market by its slug or polymarket.com URL instead of its condition id (passed to the API, which resolves it; the ids it used are printed on stderr)")
      .option('--outcome <name>', 'with --slug: the outcome token by its name (Yes, No, …) instead of --asset-id');
  const data = (what: DataCommand['what']) => async (o: DataFlags) => {
    const { parseDataCommand } = await import('./commands/data.ts');
    run({ command: 'data', options: parseDataCommand(what, o) });
  };
  const TIMES = `Times (--from, --to): ${TIME_RULE}. --to is included and covers the whole unit given: a date its whole day, Unix seconds their whole second.`;

  output(
    program
      .command('markets')
      .summary('list the markets with data of a venue')
      .description(`Lists the markets with data of a venue (GET /api/v1/{venue}/market/list, every page). ${USER_EXIT}`)
      .usage(`--venue ${VENUE_CHOICES} [--prefix P] [--format F] [--out FILE]`)
      .option(`--venue <${VENUE_CHOICES}>`, 'exchange-a (a, polymarket) or exchange-b (b, kalshi); required')
      .option('--prefix <P>', 'only ids that start with this (hex for exchange A, ticker characters for exchange B)'),
    true,
  ).action(data('markets'));

  output(
    marketOptions(
      program
        .command('raw')
        .summary("a market's raw records in a time window or on a date")
        .description(
          `A market's raw records as stored (GET /api/v1/{venue}/market/data/range following its cursors, or /market/data for --date). ` +
            `csv is the API's own long CSV (a row per price level change). ${TIMES} ${USER_EXIT}`,
        )
        .usage(`--venue V (--condition-id ID | --slug S | --ticker T) (--from T --to T | --date D) [--format F] [--out FILE]`),
    )
      .option('--from <T>', 'window start')
      .option('--to <T>', 'window end, included')
      .option('--date <YYYY-MM-DD>', 'one UTC date instead of a window'),
    true,
  ).action(data('raw'));

  output(
    marketOptions(
      program
        .command('summary')
        .summary('order-book summary buckets (OHLC of best bid, ask, mid, spread)')
        .description(`Order-book summary buckets of a market (an outcome token on exchange A) (GET /api/v1/{venue}/market/orderbook-summary). ${TIMES} ${USER_EXIT}`)
        .usage(`--venue V (--condition-id ID --asset-id T | --slug S --outcome O | --ticker T) (--from T --to T | --date D) [--resolution S] [--format F] [--out FILE]`),
    )
      .option('--asset-id <T>', 'exchange A: the outcome token; required there')
      .option('--from <T>', 'window start')
      .option('--to <T>', 'window end, included')
      .option('--date <YYYY-MM-DD>', 'one UTC date instead of a window')
      .option('--resolution <seconds>', 'bucket size, 1 to 3600 (default 60)'),
    true,
  ).action(data('summary'));

  output(
    marketOptions(
      program
        .command('book')
        .summary('the full order book at an instant')
        .description(
          `The book after every record at or before --at (GET /api/v1/{venue}/market/book). In csv, a row per level: side (bids/asks on exchange A, yes/no on B), price, size. ` +
            `--at: ${TIME_RULE} (seconds: the second's first millisecond, as the API reads it). ${USER_EXIT}`,
        )
        .usage(`--venue V (--asset-id T [--condition-id ID] | --slug S --outcome O | --ticker T) --at T [--depth N] [--format F] [--out FILE]`),
    )
      .option('--asset-id <T>', 'exchange A: the outcome token; required there')
      .option('--at <T>', 'the instant; required')
      .option('--depth <n>', 'levels a side, 1 to 500 (default 10)'),
    true,
  ).action(data('book'));

  output(
    program
      .command('status')
      .summary('the service status: venues, Kafka lag, sink, rollup backlog, stores')
      .description(`The service's status (GET /api/v1/monitoring/status; no key). In csv, one row with dotted column names. ${USER_EXIT}`)
      .option(`--venue <${VENUE_CHOICES}>`, 'only this venue in the venues list'),
    false,
  ).action(data('status'));

  const keys = program
    .command('keys')
    .usage('create|list|revoke [options]')
    .summary("users' API keys (create, list, revoke) through the running API")
    .description(
      "Users' API keys, through the running API's operator routes (/api/v1/keys); ADMIN_TOKEN, when set, is sent as X-Admin-Token. " + USER_EXIT,
    )
    .helpCommand('help [command]', 'print the usage of a subcommand')
    .allowExcessArguments(true)
    .action((_o: unknown, cmd: Command) => {
      throw new UsageError(`keys needs create, list or revoke${cmd.args[0] === undefined ? '' : `, got ${JSON.stringify(cmd.args[0])}`}`);
    });
  output(
    keys
      .command('create')
      .summary('make a key for a user (the key is shown once)')
      .description('Makes an API key for a user; the full key (api_key) is in this answer only.')
      .option('--user-id <id>', 'the user the key is for (1 to 128 characters); required')
      .option('--name <text>', 'a label for the key (1 to 100 characters); required'),
    false,
  ).action(data('keys-create'));
  output(
    keys
      .command('list')
      .summary("list a user's active keys")
      .description("Lists a user's active keys (ids, names, last use; never the keys).")
      .option('--user-id <id>', 'the user; required'),
    false,
  ).action(data('keys-list'));
  output(
    keys
      .command('revoke')
      .summary("revoke one of a user's keys")
      .description('Revokes a key: the API refuses it from then on (403). Revoking again answers as the first time.')
      .argument('[key_id]', 'the key id (key_ + 24 hex digits, see keys list)')
      .option('--user-id <id>', 'the user the key belongs to; required'),
    false,
  ).action(async (keyId: string | undefined, o: DataFlags) => {
    const { parseKeysRevoke } = await import('./commands/data.ts');
    run({ command: 'data', options: parseKeysRevoke(keyId, o) });
  });

  program
    .command('ingest')
    .summary('run the ingestor alone')
    .description('Runs the ingestor alone; INGESTOR_ROLES=capture,sink (the default) or either one.')
    .action(() => run({ command: 'ingest' }));

  program
    .command('migrate')
    .summary('apply the ClickHouse migrations')
    .description('Applies the ClickHouse migrations that have not run yet.')
    .action(() => run({ command: 'migrate' }));

  program
    .command('services')
    .summary("the project's own Kafka and Redis")
    .description("Starts, checks or stops the project's own Kafka and Redis (scripts/services.mjs).")
    .usage('start|status|stop [kafka|redis…]')
    .argument('[action]', 'start, status or stop')
    .argument('[names...]', 'kafka, redis (default: both)')
    .action((action: string | undefined, names: string[]) => {
      if (action !== 'start' && action !== 'status' && action !== 'stop') throw new UsageError('services needs start, status or stop');
      run({ command: 'services', args: [action, ...names] });
    });

  return program;
}

interface OutageFlags {
  venue?: string;
  from?: string;
  to?: string;
  reason?: string;
  api?: string;
  json?: boolean;
}

/** The outage rules live with the command (they share the API's input rules); loaded only for it. */
async function outageCommand(a: OutageFlags & { positionals: string[] }): Promise<OutageCommand> {
  const { parseOutageCommand, OutageUsageError } = await import('./commands/outage.ts');
  try {
    return parseOutageCommand(a);
  } catch (e) {
    if (e instanceof OutageUsageError) throw new UsageError(e.message);
    throw e;
  }
}

/** The back-fill a `rollup` command asks for, checked: venue, market id, an ordered date range. */
export function backfillRequest(v: { venue?: string | undefined; market?: string | undefined; asset?: string | undefined; from?: string | undefined; to?: string | undefined }): BackfillRequest {
  const venue = parseVenueArg(v.venue);
  const market = parseMarketArg(venue, v.market, '--market');
  if (v.asset !== undefined && !VENUE_SHAPES[venue].tokens) throw new UsageError('--asset is for exchange A only (an exchange B ticker is its own book)');
  const asset = v.asset === undefined ? undefined : parseAssetArg(v.asset, '--asset');
  const from = parseDateArg(v.from, '--from');
  const to = parseDateArg(v.to, '--to');
  if (from > to) throw new UsageError(`--from ${from} is after --to ${to}`);
  return { venue, market, ...(asset !== undefined ? { asset } : {}), from, to };
}

/** An option's value parser: a positive integer, or a usage error naming the option. */
function positive(name: string): (v: string) => number {
  return (v) => positiveInt(name, v);
}

export function positiveInt(name: string, v: string): number {
  if (!/^\d+$/.test(v) || Number(v) < 1 || !Number.isSafeInteger(Number(v))) throw new UsageError(`${name} must be a positive integer, got ${JSON.stringify(v)}`);
  return Number(v);
}

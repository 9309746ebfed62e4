import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { normaliseConditionId, normaliseTicker } from '@booktape/domain';
import type { BackfillRequest } from '@booktape/messaging';
import type { StartOptions } from './commands/start.ts';
import type { SimulateOptions } from './commands/simulate.ts';
import type { ReplayOptions } from './commands/replay.ts';
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
  | { command: 'rollup'; options: RollupOptions }
  | { command: 'outage'; options: OutageCommand }
  | { command: 'export'; options: ExportOptions }
  | { command: 'ingest' }
  | { command: 'migrate' }
  | { command: 'services'; args: string[] };

export type ParsedCommandLine =
  | { kind: 'run'; invocation: Invocation }
  /** --help or --version: print `text` on stdout, exit 0. */
  | { kind: 'print'; text: string }
  /** Bad usage: print the message and the usage of the command concerned on stderr, exit 2. */
  | { kind: 'usage'; message: string; usage: string };

export class UsageError extends Error {}

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
      return { kind: 'usage', message: commanderMessage(e, argv), usage: current.helpInformation() };
    }
    if (e instanceof UsageError) return { kind: 'usage', message: e.message, usage: current.helpInformation() };
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
  const m = e.message.replace(/^error: /, '');
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
    .command('rollup')
    .summary('re-derive the summaries of a date range (back-fill)')
    .description(
      'Enqueues a back-fill for the running rollup workers: the summaries of every data day in the range are rebuilt from ' +
        'raw events, then the later days whose carried state changed. Talks to Redis only. Exit status with --wait: ' +
        '0 done, 1 failed, 4 still running at the timeout.',
    )
    .usage('--venue a|b --market M [--asset T] --from DATE --to DATE [--wait] [--timeout S]')
    .option('--venue <a|b>', 'exchange-a (a) or exchange-b (b); required')
    .option('--market <M>', 'a condition id (exchange A) or a ticker (exchange B); required')
    .option('--asset <T>', 'exchange A only: one outcome token id (default: every outcome of the market)')
    .option('--from <DATE>', 'first day, YYYY-MM-DD (UTC); required')
    .option('--to <DATE>', 'last day, YYYY-MM-DD (UTC), included; required')
    .option('--wait', 'follow the job with a progress bar until it is done')
    .addOption(new Option('--timeout <s>', 'with --wait: give up after this many seconds').argParser(positive('--timeout')).default(3600))
    .action((o: { venue?: string; market?: string; asset?: string; from?: string; to?: string; wait?: boolean; timeout: number }) =>
      run({ command: 'rollup', options: { request: backfillRequest(o), wait: o.wait ?? false, timeoutMs: o.timeout * 1000 } }),
    );

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
  const api = () =>
    new Option('--api <url>', 'the running API (default http://$HOST:$PORT, so http://127.0.0.1:8080 when they are unset); ADMIN_TOKEN, when set, is sent as X-Admin-Token');
  outage
    .command('add')
    .summary('declare an outage')
    .description('Declares an outage: the venue\'s data between --from and --to is known to be missing.')
    .option('--venue <a|b>', 'exchange-a (a) or exchange-b (b); required')
    .option('--from <T>', `start (${T}); required`)
    .option('--to <T>', `end, excluded (${T}); required`)
    .option('--reason <text>', 'why, shown with the outage; required')
    .addOption(api())
    .action(async (o: OutageFlags) => run({ command: 'outage', options: await outageCommand({ positionals: ['add'], ...o }) }));
  outage
    .command('list')
    .summary('list the declared outages')
    .description('Lists the declared outages.')
    .option('--venue <a|b>', 'only this venue')
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
    .summary('download one market\'s bulk export (raw or summaries, csv.gz or parquet) from the running API')
    .description(
      'Downloads GET /api/v1/{venue}/market/export into --out, with a progress bar: one market, up to 31 UTC days. ' +
        'The key comes from --key or BOOKTAPE_API_KEY. Exit status: 0 done, 1 the API refused or the download broke off, 2 bad arguments.',
    )
    .option('--venue <a|b>', 'exchange-a (a) or exchange-b (b); required')
    .option('--market <id>', 'condition id (a) or ticker (b); required')
    .option('--from <YYYY-MM-DD>', 'first UTC date; required')
    .option('--to <YYYY-MM-DD>', 'last UTC date, inclusive; required')
    .option('--kind <raw|summary>', 'raw records (default) or summary buckets')
    .option('--resolution <seconds>', 'summary bucket size, 1 to 3600 (default 60)')
    .option('--asset <id>', 'exchange A summaries: one outcome token (default every token)')
    .option('--format <csv|parquet>', 'csv (a .csv.gz file) or parquet; default from --out\'s name, else csv')
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

/** An option's value parser: a positive integer, or a usage error naming the option. */
function positive(name: string): (v: string) => number {
  return (v) => positiveInt(name, v);
}

export function positiveInt(name: string, v: string): number {
  if (!/^\d+$/.test(v) || Number(v) < 1 || !Number.isSafeInteger(Number(v))) throw new UsageError(`${name} must be a positive integer, got ${JSON.stringify(v)}`);
  return Number(v);
}

import { spawnSync } from 'node:child_process';
import path from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '@booktape/config';
import { cliVersion, commandLineProgram, parseCommandLine } from './command-line.ts';

const COMMANDS = [
  'start', 'simulate', 'replay', 'import', 'rollup', 'outage', 'outage add', 'outage list', 'outage remove', 'export',
  'markets', 'raw', 'summary', 'book', 'status', 'keys', 'keys create', 'keys list', 'keys revoke',
  'ingest', 'migrate', 'services',
];

describe('booktape command line: help and version', () => {
  it('prints the usage of every command for <command> --help, -h and help <command>', async () => {
    for (const cmd of COMMANDS) {
      const words = cmd.split(' ');
      const helpOf = [...words.slice(0, -1), 'help', words.at(-1)!]; // help start, outage help add
      for (const argv of [[...words, '--help'], [...words, '-h'], helpOf]) {
        const r = await parseCommandLine(argv);
        expect(r.kind, argv.join(' ')).toBe('print');
        expect(r.kind === 'print' && r.text, argv.join(' ')).toContain(`Usage: booktape ${cmd} `);
      }
    }
  });

  it('prints the overview, naming every command, with no arguments, --help or help', async () => {
    for (const argv of [[], ['--help'], ['-h'], ['help']]) {
      const r = await parseCommandLine(argv);
      expect(r.kind).toBe('print');
      for (const cmd of COMMANDS.filter((c) => !c.includes(' '))) expect(r.kind === 'print' && r.text).toMatch(new RegExp(`^  ${cmd}\\b`, 'm'));
    }
  });

  it('prints the version of the CLI package for --version and -v', async () => {
    expect(cliVersion()).toMatch(/^\d+\.\d+\.\d+/);
    for (const flag of ['--version', '-v']) expect(await parseCommandLine([flag])).toEqual({ kind: 'print', text: `${cliVersion()}\n` });
  });

  it('documents every command and every option', () => {
    const walk = (c: Command, name: string): void => {
      if (name !== 'booktape help') expect(c.description() || c.summary(), name).not.toBe('');
      for (const o of c.options) expect(o.description, `${name} ${o.flags}`).not.toBe('');
      for (const sub of c.commands) walk(sub, `${name} ${sub.name()}`);
    };
    walk(commandLineProgram(), 'booktape');
  });

  it('mentions simulate --seed in the help of simulate', async () => {
    const r = await parseCommandLine(['simulate', '--help']);
    expect(r.kind === 'print' && r.text).toMatch(/--seed <n>\s+random seed/);
  });
});

describe('booktape command line: bad usage', () => {
  const usage = async (argv: string[]) => {
    const r = await parseCommandLine(argv);
    if (r.kind !== 'usage') throw new Error(`${argv.join(' ')}: expected a usage error, got ${r.kind}`);
    return r;
  };

  it('refuses an unknown command, suggesting a near one, with the overview', async () => {
    const r = await usage(['frobnicate']);
    expect(r.message).toBe('unknown command: frobnicate');
    expect(r.hint).toBe("Run 'booktape --help' for usage.");
    expect((await usage(['strat'])).message).toContain('Did you mean start?');
    expect((await usage(['help', 'frobnicate'])).message).toBe('unknown command: frobnicate');
    expect((await usage(['outage', 'help', 'purge'])).message).toBe('unknown command: purge');
  });

  it('refuses an unknown option in the words of parseArgs, with the usage of that command', async () => {
    const r = await usage(['replay', 'f.ndjson', '--bogus']);
    expect(r.message).toMatch(/^Unknown option '--bogus'/);
    expect(r.hint).toBe("Run 'booktape replay --help' for usage.");
    const sub = await usage(['outage', 'list', '--bogus']);
    expect(sub.message).toMatch(/^Unknown option '--bogus'/);
    expect(sub.hint).toBe("Run 'booktape outage list --help' for usage.");
    expect((await usage(['simulate', '--sed', '3'])).message).toContain('--seed');
  });

  it('refuses malformed numbers, missing arguments and stray ones', async () => {
    expect((await usage(['simulate', '--rate', 'fast'])).message).toBe('--rate must be a positive integer, got "fast"');
    expect((await usage(['replay', 'f', '--timeout', '0'])).message).toBe('--timeout must be a positive integer, got "0"');
    expect((await usage(['start', '--rate', '-5'])).kind).toBe('usage');
    expect((await usage(['replay'])).message).toContain("missing required argument 'files'");
    expect((await usage(['start', 'now'])).message).toContain('too many arguments');
    expect((await usage(['services'])).message).toBe('services needs start, status or stop');
    expect((await usage(['services', 'restart'])).message).toBe('services needs start, status or stop');
  });

  it('checks a back-fill before anything is enqueued', async () => {
    const base = ['rollup', '--venue', 'b', '--market', 'KXFILL-1'];
    expect((await usage([...base, '--from', '2026-05-04', '--to', '2026-05-01'])).message).toBe('--from 2026-05-04 is after --to 2026-05-01');
    expect((await usage(['rollup', '--venue', 'a', '--market', 'nope', '--from', '2026-05-01', '--to', '2026-05-01'])).message).toContain('is not a condition id');
    expect((await usage([...base, '--from', '2026-02-30', '--to', '2026-03-01'])).message).toBe('--from must be a date YYYY-MM-DD, got "2026-02-30"');
    expect((await usage(['rollup', '--market', 'X', '--from', '2026-05-01', '--to', '2026-05-01'])).message).toBe(
      '--venue must be one of a, b, exchange-a, exchange-b, polymarket, kalshi, got ""',
    );
  });

  it('refuses outage arguments with the outage rules', async () => {
    expect((await usage(['outage'])).message).toBe('outage needs add, list or remove');
    expect((await usage(['outage', 'frob'])).message).toBe('outage needs add, list or remove, got "frob"');
    expect((await usage(['outage', 'remove', 'abc'])).message).toContain('is not an outage id');
    expect((await usage(['outage', 'add', '--venue', 'a', '--to', '2026-03-02', '--reason', 'r'])).message).toContain('outage add needs --from');
    expect((await usage(['outage', 'list', '--api', 'ftp://x'])).message).toContain('--api must be an http(s) URL');
    expect((await usage(['import', 'a.parquet', '--format', 'csv'])).message).toContain("argument 'csv' is invalid. Allowed choices are pmxt-v2, booktape-parquet, booktape-csv, capture");
    expect((await usage(['import'])).message).toContain("missing required argument 'paths'");
    expect((await usage(['import', '--venue', 'nyse', 'a.parquet'])).message).toMatch(/venue/);
  });
});

describe('booktape command line: what runs', () => {
  const run = async (argv: string[]) => {
    const r = await parseCommandLine(argv);
    if (r.kind !== 'run') throw new Error(`${argv.join(' ')}: expected a command, got ${r.kind}${r.kind === 'usage' ? `: ${r.message}` : ''}`);
    return r.invocation;
  };

  it('fills the documented defaults', async () => {
    expect(await run(['start'])).toEqual({ command: 'start', options: { simulate: false, rate: undefined } });
    expect(await run(['start', '--simulate', '--rate', '50'])).toEqual({ command: 'start', options: { simulate: true, rate: 50 } });
    expect(await run(['simulate'])).toEqual({ command: 'simulate', options: { port: 9100, rate: 1000, marketsA: 20, marketsB: 10, seed: 1 } });
    expect(await run(['simulate', '--seed', '7', '--markets-b', '3'])).toEqual({ command: 'simulate', options: { port: 9100, rate: 1000, marketsA: 20, marketsB: 3, seed: 7 } });
    expect(await run(['replay', 'a.ndjson'])).toEqual({ command: 'replay', options: { files: ['a.ndjson'], wait: false, timeoutMs: 600_000 } });
    expect(await run(['import', 'a.parquet', 'dir'])).toEqual({ command: 'import', options: { paths: ['a.parquet', 'dir'], format: undefined, rollup: true } });
    expect(await run(['import', '--no-rollup', 'a.parquet', '--format', 'pmxt-v2'])).toEqual({ command: 'import', options: { paths: ['a.parquet'], format: 'pmxt-v2', rollup: false } });
    expect(await run(['import', '--venue', 'kalshi', 'x.csv.gz'])).toEqual({ command: 'import', options: { paths: ['x.csv.gz'], format: undefined, rollup: true, venue: 'exchange-b' } });
    expect(await run(['ingest'])).toEqual({ command: 'ingest' });
    expect(await run(['migrate'])).toEqual({ command: 'migrate' });
    expect(await run(['services', 'start', 'redis'])).toEqual({ command: 'services', args: ['start', 'redis'] });
  });

  it('takes options before, between and after the files', async () => {
    expect(await run(['replay', '--wait', 'a.ndjson', '--timeout', '60', 'b.ndjson.gz'])).toEqual({
      command: 'replay',
      options: { files: ['a.ndjson', 'b.ndjson.gz'], wait: true, timeoutMs: 60_000 },
    });
  });

  it('normalises a back-fill request', async () => {
    expect(await run(['rollup', '--venue', 'b', '--market', 'kxfill-1', '--from', '2026-05-01', '--to', '2026-05-03', '--wait'])).toEqual({
      command: 'rollup',
      options: { request: { venue: 'exchange-b', market: 'KXFILL-1', from: '2026-05-01', to: '2026-05-03' }, dryRun: false, wait: true, timeoutMs: 3_600_000 },
    });
  });

  it('turns outage subcommands into API requests', async () => {
    const api = 'http://127.0.0.1:9';
    expect(await run(['outage', 'add', '--api', api, '--venue', 'b', '--from', '2026-03-01T10:00:00Z', '--to', '2026-03-01T12:30:00Z', '--reason', 'incident'])).toEqual({
      command: 'outage',
      options: { action: 'add', api, venue: 'exchange-b', from: Date.UTC(2026, 2, 1, 10), to: Date.UTC(2026, 2, 1, 12, 30), reason: 'incident' },
    });
    expect(await run(['outage', 'list', '--api', api, '--venue', 'a', '--json'])).toEqual({ command: 'outage', options: { action: 'list', api, venue: 'exchange-a', json: true } });
    expect(await run(['outage', 'remove', 'out_0123456789abcdef', '--api', api])).toEqual({ command: 'outage', options: { action: 'remove', api, id: 'out_0123456789abcdef' } });
  });
});

describe('the booktape executable', () => {
  const BIN = path.join(REPO_ROOT, 'apps/cli/bin/booktape.mjs');
  const exec = (args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 60_000 });

  it('exits 0 with the usage on stdout for replay --help, 0 for --version, 2 with one line and the hint on stderr for a bad option', () => {
    const help = exec(['replay', '--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('Usage: booktape replay [options] <files...>');
    expect(help.stderr).toBe('');
    const version = exec(['--version']);
    expect(version.status).toBe(0);
    expect(version.stdout).toBe(`${cliVersion()}\n`);
    const bad = exec(['replay', '--help-me']);
    expect(bad.status).toBe(2);
    expect(bad.stdout).toBe('');
    // One line saying what was wrong, one saying where the usage is: never the whole help.
    expect(bad.stderr).toMatch(/^booktape: Unknown option '--help-me'[^\n]*\nRun 'booktape replay --help' for usage\.\n$/);
    expect(bad.stderr).not.toContain('Usage:');
  }, 60_000);
});

describe('booktape command line: user commands', () => {
  const api = 'http://127.0.0.1:9';
  const M = `0x${'ab'.repeat(32)}`;
  const run = async (argv: string[]) => {
    const r = await parseCommandLine([...argv, '--api', api]);
    if (r.kind !== 'run') throw new Error(`${argv.join(' ')}: expected a command, got ${r.kind}${r.kind === 'usage' ? `: ${r.message}` : ''}`);
    return r.invocation;
  };
  const usage = async (argv: string[]) => {
    const r = await parseCommandLine(argv);
    if (r.kind !== 'usage') throw new Error(`${argv.join(' ')}: expected a usage error, got ${r.kind}`);
    return r;
  };
  const key = ['--key', 'bt_live_x'];
  const common = { api, key: 'bt_live_x', adminToken: process.env.ADMIN_TOKEN || undefined, format: 'json', out: undefined };

  it('turns them into API requests, venues by any of their names', async () => {
    expect(await run(['markets', '--venue', 'kalshi', '--prefix', 'KX', ...key])).toEqual({ command: 'data', options: { ...common, what: 'markets', venue: 'exchange-b', prefix: 'KX' } });
    expect(await run(['raw', '--venue', 'polymarket', '--condition-id', M.toUpperCase().replace('0X', '0x'), '--from', '1772409600', '--to', '1772409659', ...key, '--format', 'ndjson', '--out', 'r.ndjson'])).toEqual({
      command: 'data',
      options: { ...common, format: 'ndjson', out: 'r.ndjson', what: 'raw', venue: 'exchange-a', market: M, window: { from: 1772409600_000, to: 1772409659_999 } },
    });
    expect(await run(['raw', '--venue', 'b', '--market', 'kxa-1', '--date', '2026-03-01', ...key])).toMatchObject({ options: { what: 'raw', market: 'KXA-1', window: { date: '2026-03-01' } } });
    expect(await run(['summary', '--venue', 'a', '--condition-id', M, '--asset-id', '111', '--date', '2026-03-01', '--resolution', '300', ...key, '--format', 'csv'])).toMatchObject({
      options: { what: 'summary', venue: 'exchange-a', market: M, asset: '111', window: { date: '2026-03-01' }, resolution: 300, format: 'csv' },
    });
    expect(await run(['book', '--venue', 'a', '--asset-id', '111', '--at', '2026-03-01T12:00:00Z', '--depth', '5', ...key])).toMatchObject({
      options: { what: 'book', venue: 'exchange-a', market: undefined, asset: '111', at: Date.UTC(2026, 2, 1, 12), depth: 5 },
    });
    expect(await run(['summary', '--venue', 'polymarket', '--slug', 'will-it-rain', '--outcome', 'Yes', '--date', '2026-03-01', ...key])).toMatchObject({
      options: { what: 'summary', venue: 'exchange-a', market: '', asset: undefined, slug: { slug: 'will-it-rain', outcome: 'Yes' } },
    });
    expect(await run(['status', '--venue', 'kalshi'])).toMatchObject({ options: { what: 'status', venue: 'exchange-b', key: undefined } });
    expect(await run(['keys', 'create', '--user-id', 'u1', '--name', 'laptop'])).toMatchObject({ options: { what: 'keys-create', userId: 'u1', name: 'laptop' } });
    expect(await run(['keys', 'list', '--user-id', 'u1', '--format', 'csv'])).toMatchObject({ options: { what: 'keys-list', userId: 'u1', format: 'csv' } });
    expect(await run(['keys', 'revoke', 'key_0123456789abcdef01234567', '--user-id', 'u1'])).toMatchObject({ options: { what: 'keys-revoke', keyId: 'key_0123456789abcdef01234567', userId: 'u1' } });
  });

  it('refuses bad arguments before any request, in one line with the hint to that command\'s help', async () => {
    const saved = process.env.BOOKTAPE_API_KEY;
    delete process.env.BOOKTAPE_API_KEY;
    try {
      const cases: Array<[string[], string, string]> = [
        [['raw', '--venue', 'a', '--condition-id', M, '--date', '2026-03-01'], 'an API key is needed: --key or BOOKTAPE_API_KEY', 'raw'],
        [['raw', '--venue', 'a', '--condition-id', '0xabc', '--date', '2026-03-01', ...key], '--condition-id "0xabc" is not a condition id (0x + 64 hex digits)', 'raw'],
        [['raw', '--venue', 'a', '--ticker', 'KX', '--date', '2026-03-01', ...key], '--ticker is not for exchange A (polymarket), which names a market by --condition-id', 'raw'],
        [['raw', '--venue', 'b', '--ticker', 'KX', ...key], 'give --date D, or --from T and --to T', 'raw'],
        [['raw', '--venue', 'b', '--ticker', 'KX', '--date', '2026-03-01', '--from', '1', ...key], 'give --date or --from/--to, not both', 'raw'],
        [['raw', '--venue', 'b', '--ticker', 'KX', '--from', '2026-03-02', '--to', '2026-03-01', ...key], 'is after --to', 'raw'],
        [['raw', '--venue', 'b', '--ticker', 'KX', '--date', '2026-03-01', '--format', 'xml', ...key], '--format must be json, ndjson or csv', 'raw'],
        [['summary', '--venue', 'a', '--condition-id', M, '--date', '2026-03-01', ...key], '--asset-id is required', 'summary'],
        [['summary', '--venue', 'kalshi', '--ticker', 'KX', '--asset-id', '1', '--date', '2026-03-01', ...key], '--asset-id is not for exchange B (kalshi): a ticker is its own book', 'summary'],
        [['book', '--venue', 'b', '--ticker', 'KX', ...key], '--at is required', 'book'],
        [['book', '--venue', 'b', '--ticker', 'KX', '--at', 'noon', ...key], '--at must be', 'book'],
        [['markets', '--venue', 'x', ...key], '--venue must be one of a, b, exchange-a, exchange-b, polymarket, kalshi', 'markets'],
        [['keys'], 'keys needs create, list or revoke', 'keys'],
        [['export', '--venue', 'kalshi', '--slug', 'x', '--from', '2026-03-01', '--to', '2026-03-01', '--out', 'f', ...key], '--slug names an exchange A (polymarket) market', 'export'],
        [['export', '--venue', 'a', '--slug', 'x', '--outcome', 'Yes', '--from', '2026-03-01', '--to', '2026-03-01', '--out', 'f', ...key], '--outcome is for --kind summary', 'export'],
        [['export', '--venue', 'a', '--market', M, '--from', '2026-02-30', '--to', '2026-03-01', '--out', 'f', ...key], '--from must be a UTC date YYYY-MM-DD, got "2026-02-30"', 'export'],
        [['raw', '--venue', 'b', '--slug', 'x', '--date', '2026-03-01', ...key], '--slug names an exchange A (polymarket) market; exchange B (kalshi) names a market by --ticker', 'raw'],
        [['raw', '--venue', 'a', '--slug', 'x', '--condition-id', M, '--date', '2026-03-01', ...key], 'give --slug or --condition-id/--market, not both', 'raw'],
        [['raw', '--venue', 'a', '--slug', 'x', '--outcome', 'Yes', '--date', '2026-03-01', ...key], 'raw reads every outcome of the market: --outcome is not taken here', 'raw'],
        [['book', '--venue', 'a', '--slug', 'x', '--at', '1', ...key], "book reads one outcome token's book: with --slug, name it by --outcome", 'book'],
        [['summary', '--venue', 'a', '--outcome', 'Yes', '--condition-id', M, '--date', '2026-03-01', ...key], '--outcome names an outcome of the market given by --slug', 'summary'],
        [['summary', '--venue', 'a', '--slug', 'x', '--asset-id', '1', '--date', '2026-03-01', ...key], 'with --slug, name the outcome token by --outcome (its name), not by --asset-id', 'summary'],
        [['export', '--venue', 'a', '--slug', 'x', '--asset', '1', '--kind', 'summary', '--from', '2026-03-01', '--to', '2026-03-01', '--out', 'f', ...key], 'with --slug, name the outcome token by --outcome (its name), not by --asset', 'export'],
        [['keys', 'create', '--user-id', 'u'], '--name is required', 'keys create'],
        [['keys', 'revoke', 'abc', '--user-id', 'u'], '"abc" is not a key id (key_ + 24 hex digits; see keys list)', 'keys revoke'],
        [['keys', 'list', '--user-id', 'u', '--bogus'], "Unknown option '--bogus'", 'keys list'],
      ];
      for (const [argv, message, cmd] of cases) {
        const r = await usage(argv);
        expect(r.message, argv.join(' ')).toContain(message);
        expect(r.message).not.toContain('\n');
        expect(r.hint).toBe(`Run 'booktape ${cmd} --help' for usage.`);
      }
    } finally {
      if (saved !== undefined) process.env.BOOKTAPE_API_KEY = saved;
    }
  });
});

describe('booktape rollup', () => {
  const base = ['rollup', '--market', `0x${'ab'.repeat(32)}`, '--from', '2026-05-01', '--to', '2026-05-03'];

  it('takes every name of a venue, and only full condition ids (0xabc was accepted)', async () => {
    for (const v of ['a', 'exchange-a', 'polymarket']) {
      const r = await parseCommandLine([...base, '--venue', v]);
      expect(r.kind === 'run' && r.invocation.command === 'rollup' && r.invocation.options.request.venue).toBe('exchange-a');
    }
    const bad = await parseCommandLine(['rollup', '--venue', 'a', '--market', '0xabc', '--from', '2026-05-01', '--to', '2026-05-01']);
    expect(bad).toEqual({ kind: 'usage', message: '--market "0xabc" is not a condition id (0x + 64 hex digits)', hint: "Run 'booktape rollup --help' for usage." });
  });

  it('--dry-run is parsed, and refused with --wait', async () => {
    const r = await parseCommandLine([...base, '--venue', 'a', '--dry-run']);
    expect(r.kind === 'run' && r.invocation.command === 'rollup' && r.invocation.options.dryRun).toBe(true);
    expect(await parseCommandLine([...base, '--venue', 'a', '--dry-run', '--wait'])).toMatchObject({ kind: 'usage', message: '--dry-run enqueues nothing, so there is nothing to --wait for' });
  });

  it('says in --help which Redis it uses', async () => {
    const r = await parseCommandLine(['rollup', '--help']);
    expect(r.kind === 'print' && r.text.replace(/\s+/g, ' ')).toContain("REDIS_URL when set, else the project's own Redis at redis://127.0.0.1:$BOOKTAPE_REDIS_PORT (default 16379)");
  });
});

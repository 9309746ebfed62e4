import { ConfigError } from '@booktape/config';
import { parseCommandLine, UsageError, type Invocation } from './command-line.ts';

/**
 * `npx booktape`. Exit statuses: 0 done, 1 failed, 2 bad usage or configuration; some
 * commands add their own (see their --help). Each command's module is loaded only when it
 * runs: `start` pulls in every app.
 */
async function run(inv: Invocation): Promise<number> {
  switch (inv.command) {
    case 'start': {
      const { runStart } = await import('./commands/start.ts');
      return runStart(inv.options);
    }
    case 'simulate': {
      const { runSimulate } = await import('./commands/simulate.ts');
      return runSimulate(inv.options);
    }
    case 'replay': {
      const { runReplay } = await import('./commands/replay.ts');
      return runReplay(inv.options);
    }
    case 'import': {
      const { runImport } = await import('./commands/import.ts');
      return runImport(inv.options);
    }
    case 'rollup': {
      const { runRollup } = await import('./commands/rollup.ts');
      return runRollup(inv.options);
    }
    case 'outage': {
      const { runOutage } = await import('./commands/outage.ts');
      return runOutage(inv.options);
    }
    case 'export': {
      const { runExport } = await import('./commands/export.ts');
      return runExport(inv.options);
    }
    case 'data': {
      const { runDataCommand } = await import('./commands/data.ts');
      return runDataCommand(inv.options);
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
      const { spawnSync } = await import('node:child_process');
      const { REPO_ROOT } = await import('@booktape/config');
      const r = spawnSync(process.execPath, [`${REPO_ROOT}/scripts/services.mjs`, ...inv.args], { stdio: 'inherit' });
      return r.status ?? 1;
    }
  }
}

// `booktape raw … | head`: the reader went away; what it wanted it has. Stop, without a stack.
// Any other write error ends the command with one line, not a stack trace from a listener.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  process.stderr.write(`booktape: cannot write to stdout: ${e.message}\n`);
  process.exit(1);
});

try {
  const parsed = await parseCommandLine(process.argv.slice(2));
  if (parsed.kind === 'print') {
    process.stdout.write(parsed.text);
    process.exitCode = 0;
  } else if (parsed.kind === 'usage') {
    console.error(`booktape: ${parsed.message}\n${parsed.hint}`);
    process.exitCode = 2;
  } else {
    process.exitCode = await run(parsed.invocation);
  }
} catch (e) {
  if (e instanceof UsageError || e instanceof ConfigError) {
    console.error(`booktape: ${e.message}`);
    process.exitCode = 2;
  } else {
    console.error(`booktape: ${(e as Error).message}`);
    process.exitCode = 1;
  }
  // A command that failed halfway may have started something that keeps the process alive
  // (start --simulate's simulator before its config error, an open client): exit, not hang.
  process.exit(process.exitCode);
}

import { spawn } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT } from '@booktape/config';

export const BIN = path.join(REPO_ROOT, 'apps/cli/bin/booktape.mjs');

export interface CliRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The `booktape` command in a child process, without blocking this one (an API or worker the
 * CLI talks to may run in this process). `env` is laid over this process's environment, with
 * LOG_LEVEL=warn; a variable set to undefined is removed.
 */
export function runCli(args: string[], env: Record<string, string | undefined> = {}): Promise<CliRun> {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, LOG_LEVEL: 'warn', ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once('exit', (status) => resolve({ status, stdout, stderr })));
}

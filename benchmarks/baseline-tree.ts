/**
 * Side-by-side measurement against an earlier commit, in one run (these machines are noisy:
 * only a comparison made in one run means much). The baseline tree is `git archive` of the
 * commit in a temp dir, sharing this tree's node_modules except the workspace packages,
 * which point at the archive's own code. The runner scripts (the measurement itself) are
 * this tree's, copied in: they must use only what both trees export.
 */
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '@booktape/config';

/** `git archive` of `rev` in a temp dir, node_modules linked as above, `runners` (repo-relative) copied in. */
export function baselineTree(rev: string, runners: string[]): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'booktape-baseline-'));
  // git archive | tar, without a shell: `rev` comes from the environment.
  execFileSync('tar', ['-x', '-C', dir], { input: execFileSync('git', ['-C', REPO_ROOT, 'archive', rev], { maxBuffer: 1 << 30 }) });
  const modules = path.join(REPO_ROOT, 'node_modules');
  mkdirSync(path.join(dir, 'node_modules', '@booktape'), { recursive: true });
  for (const name of readdirSync(modules)) if (name !== '@booktape') symlinkSync(path.join(modules, name), path.join(dir, 'node_modules', name));
  for (const name of readdirSync(path.join(modules, '@booktape'))) {
    const target = path.resolve(path.join(modules, '@booktape'), readlinkSync(path.join(modules, '@booktape', name)));
    const inBase = path.join(dir, path.relative(REPO_ROOT, target));
    if (existsSync(inBase)) symlinkSync(inBase, path.join(dir, 'node_modules', '@booktape', name));
  }
  // The Kafka jars and other local state are not part of the archive and are not needed:
  // the services are already running.
  for (const file of runners) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    copyFileSync(path.join(REPO_ROOT, file), path.join(dir, file));
  }
  return dir;
}

/**
 * Runs `script` (repo-relative) with tsx in `root`, its stdout passed through, and returns
 * the last JSON line it printed. `nodeArgs` go before the script (e.g. --cpu-prof).
 */
export function runJson<T>(root: string, script: string, label: string, env: NodeJS.ProcessEnv = {}, nodeArgs: string[] = []): Promise<T> {
  process.stderr.write(`\n[bench] ${label}: ${root}\n`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', path.join(root, script)], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d;
      process.stderr.write(d);
    });
    // 'close', not 'exit': stdout may still hold the last line when the process exits.
    child.once('close', (code) => {
      const last = out.trim().split('\n').filter((l) => l.startsWith('{')).pop();
      if (code !== 0 || !last) reject(new Error(`${label} run exited with ${code}`));
      else resolve(JSON.parse(last) as T);
    });
  });
}

/**
 * Measures this tree and, unless `baseline` is `none`, the baseline commit first (with
 * BENCH_BASELINE_LAST=1, last: the order of the two halves can decide a run's ratio). A
 * baseline that fails (an older tree without something the runner needs) is reported as
 * the error, not as a failed benchmark.
 */
export async function sideBySide<T>(baseline: string, runners: string[], run: (root: string, label: string) => Promise<T>): Promise<{ now: T; base: T | null; baseError: string | null }> {
  let base: T | null = null;
  let baseError: string | null = null;
  const last = process.env.BENCH_BASELINE_LAST === '1';
  const now = last ? await run(REPO_ROOT, 'this tree') : null;
  if (baseline !== 'none') {
    let dir: string | null = null;
    try {
      dir = baselineTree(baseline, runners);
      base = await run(dir, `baseline ${baseline}`);
    } catch (e) {
      baseError = (e as Error).message;
    } finally {
      if (dir) rmSync(dir, { recursive: true, force: true });
    }
  }
  return { now: now ?? (await run(REPO_ROOT, 'this tree')), base, baseError };
}

/** a / b rounded to 2 places, or null when either is missing. */
export const ratio = (a: number | undefined | null, b: number | undefined | null) => (a && b ? Math.round((a / b) * 100) / 100 : null);

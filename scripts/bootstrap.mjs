// Shared by `npm start` and `npm test`: install dependencies when they are missing or stale,
// using only Node builtins (this runs before node_modules exists on a fresh clone).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export function ensureInstalled() {
  const lock = path.join(REPO_ROOT, 'package-lock.json');
  const marker = path.join(REPO_ROOT, 'node_modules', '.package-lock.json');
  const stale = !fs.existsSync(marker) || (fs.existsSync(lock) && fs.statSync(lock).mtimeMs > fs.statSync(marker).mtimeMs + 1000);
  const chdbLib = path.join(REPO_ROOT, 'node_modules', '@chdb');
  if (!stale && fs.existsSync(chdbLib)) return;
  console.log('[booktape] installing npm dependencies (npm install) …');
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: REPO_ROOT, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error('[booktape] npm install failed; see the output above');
    process.exit(r.status ?? 1);
  }
}

// `npm ci` refuses a lockfile that lacks any package the tree asks for, even an optional
// one for another platform ("Missing: @chdb/lib-darwin-arm64 from lock file" on npm 11).
// npm drops such entries silently when its registry does not serve them, so a lockfile
// regenerated behind such a registry breaks `npm ci` for everyone else: this names them.
export function lockfileGaps(lockPath = path.join(REPO_ROOT, 'package-lock.json')) {
  const packages = JSON.parse(fs.readFileSync(lockPath, 'utf8')).packages ?? {};
  const gaps = [];
  for (const [at, entry] of Object.entries(packages)) {
    if (entry.link) continue;
    const wanted = { ...entry.dependencies, ...entry.optionalDependencies, ...(at === '' ? entry.devDependencies : {}) };
    for (const name of Object.keys(wanted)) {
      if (!resolvesInLock(packages, at, name)) gaps.push(`${name} (wanted by ${at || 'the root'})`);
    }
  }
  return gaps;
}

// Node's lookup: the package's own node_modules, then each enclosing one up to the root.
function resolvesInLock(packages, at, name) {
  let dir = at;
  for (;;) {
    if (packages[`${dir ? `${dir}/` : ''}node_modules/${name}`]) return true;
    if (!dir) return false;
    const up = dir.lastIndexOf('/node_modules/');
    dir = up >= 0 ? dir.slice(0, up) : '';
  }
}

// npm runs a script through `sh -c`, and on SIGTERM npm signals only that shell, which dies
// without passing it on: the script is left running as an orphan (its parent becomes pid 1),
// with the Kafka and Redis it started. A parent that goes away therefore counts as a stop
// request, like Ctrl-C (SIGINT to the whole group) or SIGTERM to the script itself.
// `onStop(signal)` runs once.
export function onStopRequest(onStop) {
  let requested = false;
  const request = (signal) => {
    if (requested) return;
    requested = true;
    onStop(signal);
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => request(sig));
  const parent = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid !== parent) request('SIGTERM');
  }, 500);
  watch.unref();
}

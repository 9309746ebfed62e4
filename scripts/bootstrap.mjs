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

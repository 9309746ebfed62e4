// `npm test`: installs what is missing, starts the project's own Kafka and Redis (the
// embedded ClickHouse engine needs nothing started), type-checks, then runs the unit tests
// and the integration tests against the real services. Prints one closing line
// "N passed, N failed".
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, ensureInstalled } from './bootstrap.mjs';

ensureInstalled();
const { startServices, ensureChromium } = await import('./services.mjs');

const args = process.argv.slice(2);
const only = args.find((a) => a === '--unit' || a === '--int');
const filters = args.filter((a) => !a.startsWith('--'));

let env;
try {
  env = { ...process.env, ...(await startServices({})) };
} catch (e) {
  console.error(`[booktape] could not start the test services: ${e.message}`);
  process.exit(1);
}

const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'booktape-test-'));
const totals = { passed: 0, failed: 0, skipped: 0 };
let failed = false;

function run(label, cmd, cmdArgs) {
  console.log(`\n[booktape] ${label}: ${cmd} ${cmdArgs.join(' ')}`);
  const r = spawnSync(cmd, cmdArgs, { cwd: REPO_ROOT, env, stdio: 'inherit' });
  if (r.status !== 0) failed = true;
  return r.status ?? 1;
}

function vitest(project, extra) {
  const out = path.join(outDir, `${project}.json`);
  run(`${project} tests`, 'npx', ['vitest', 'run', '--project', project, '--reporter=default', '--reporter=json', `--outputFile.json=${out}`, ...extra, ...filters]);
  try {
    const report = JSON.parse(fs.readFileSync(out, 'utf8'));
    totals.passed += report.numPassedTests;
    totals.failed += report.numFailedTests;
    totals.skipped += report.numPendingTests + (report.numTodoTests ?? 0);
    // A suite that failed to load counts as a failure even though no test ran in it.
    if (report.numFailedTestSuites > 0 && report.numFailedTests === 0) totals.failed += report.numFailedTestSuites;
  } catch {
    failed = true;
  }
}

// The status-page test drives Debian's chromium (playwright-core brings no browser):
// installed here when missing, only when the integration run includes that test.
const BROWSER_TEST = 'apps/api/src/status-page.int.test.ts';
if (only !== '--unit' && (filters.length === 0 || filters.some((f) => BROWSER_TEST.includes(f)))) {
  try {
    await ensureChromium({ log: (line) => console.log(`[booktape] ${line}`) });
  } catch (e) {
    // The browser test then fails and says why; the other tests still run.
    console.error(`[booktape] could not install chromium: ${e.message}`);
  }
}

if (!only && filters.length === 0) run('type check', 'npx', ['tsc', '-p', 'tsconfig.json', '--noEmit']);
if (only !== '--int') vitest('unit', []);
// Integration files share one broker and one Redis on two cores: two at a time.
if (only !== '--unit') vitest('int', ['--maxWorkers=2', '--minWorkers=1']);

fs.rmSync(outDir, { recursive: true, force: true });
const ok = !failed && totals.failed === 0 && totals.passed > 0;
console.log(`\ntests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(ok ? 0 : 1);

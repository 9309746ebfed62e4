// `npm test`: installs what is missing, starts the project's own Kafka and Redis (the
// embedded ClickHouse engine needs nothing started), type-checks, lints the OpenAPI document
// (counted as one test), then runs the unit tests
// (again under Node 22 and 24, see BOOKTAPE_TEST_NODES below) and the integration tests
// against the real services. Prints one closing line "N passed, N failed".
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, ensureInstalled, lockfileGaps, onStopRequest } from './bootstrap.mjs';
import { ensureNode } from './node-binaries.mjs';

ensureInstalled();
// Ctrl-C, SIGTERM or npm going away: the running step is stopped, the steps after it are
// skipped, and what this run started is still stopped (it used to be left running).
let stopSignal = null;
let current;
onStopRequest((sig) => {
  stopSignal = sig;
  // The step runs in its own process group, so its workers (vitest's forks) stop with it.
  if (current?.pid) {
    try {
      process.kill(-current.pid, sig);
    } catch {
      current.kill(sig);
    }
  }
});
const { ensureServices, stopServices, ensureChromium, ensurePythonPandas } = await import('./services.mjs');

const args = process.argv.slice(2);
const only = args.find((a) => a === '--unit' || a === '--int');
const filters = args.filter((a) => !a.startsWith('--'));

// What this run starts, it stops at the end; services that were already running (a
// developer's `npm run services:start`, a running `npm start`) are left as they were.
let env;
let startedHere;
try {
  const services = await ensureServices({});
  env = { ...process.env, ...services.env };
  startedHere = services.started;
} catch (e) {
  console.error(`[booktape] could not start the test services: ${e.message}`);
  process.exit(1);
}

const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'booktape-test-'));
const totals = { passed: 0, failed: 0, skipped: 0 };
let failed = false;

async function run(label, cmd, cmdArgs, extraEnv = {}) {
  if (stopSignal) return 1;
  console.log(`\n[booktape] ${label}: ${cmd} ${cmdArgs.join(' ')}`);
  current = spawn(cmd, cmdArgs, { cwd: REPO_ROOT, env: { ...env, ...extraEnv }, stdio: 'inherit', detached: true });
  const status = await new Promise((resolve) => {
    current.on('error', () => resolve(1));
    current.on('exit', (code) => resolve(code ?? 1));
  });
  current = undefined;
  if (status !== 0) failed = true;
  return status;
}

// With `node`, vitest runs under that binary, and so do its forks (they inherit execPath)
// and anything a test spawns as `node` (PATH).
// Tools run as `node <script>`, not through npx: npx goes through a shell that does not pass
// a stop signal on, which would leave the tool running.
const VITEST = path.join(REPO_ROOT, 'node_modules', 'vitest', 'vitest.mjs');

async function vitest(project, extra, node) {
  const out = path.join(outDir, `${project}${node ? `-node${node.version}` : ''}.json`);
  const args = ['run', '--project', project, '--reporter=default', '--reporter=json', `--outputFile.json=${out}`, ...extra, ...filters];
  if (node) {
    const pathEnv = `${path.dirname(node.bin)}${path.delimiter}${env.PATH ?? ''}`;
    await run(`${project} tests under Node ${node.version}`, node.bin, [VITEST, ...args], { PATH: pathEnv });
  } else {
    await run(`${project} tests`, process.execPath, [VITEST, ...args]);
  }
  try {
    const report = JSON.parse(fs.readFileSync(out, 'utf8'));
    // A suite that failed to load counts as a failure even though no test ran in it.
    const loadFailures = report.numFailedTestSuites > 0 && report.numFailedTests === 0 ? report.numFailedTestSuites : 0;
    return { passed: report.numPassedTests, failed: report.numFailedTests + loadFailures, skipped: report.numPendingTests + (report.numTodoTests ?? 0) };
  } catch {
    failed = true;
    return { passed: 0, failed: 0, skipped: 0 };
  }
}

function count(result) {
  totals.passed += result.passed;
  totals.failed += result.failed;
  totals.skipped += result.skipped;
}

// The status-page test drives Debian's chromium (playwright-core brings no browser):
// installed here when missing, only when the integration run includes that test.
const BROWSER_TEST = 'apps/api/src/monitoring/status-page.int.test.ts';
if (only !== '--unit' && (filters.length === 0 || filters.some((f) => BROWSER_TEST.includes(f)))) {
  try {
    await ensureChromium({ log: (line) => console.log(`[booktape] ${line}`) });
  } catch (e) {
    // The browser test then fails and says why; the other tests still run.
    console.error(`[booktape] could not install chromium: ${e.message}`);
  }
}

// The Python client's tests run under Debian's Python with Debian's pandas (no PyPI here):
// python3-pandas installed when missing, only when the integration run includes them.
const PYTHON_TEST = 'clients/python/tests/python-client.int.test.ts';
if (only !== '--unit' && (filters.length === 0 || filters.some((f) => PYTHON_TEST.includes(f)))) {
  try {
    await ensurePythonPandas({ log: (line) => console.log(`[booktape] ${line}`) });
  } catch (e) {
    // Its pandas tests then skip themselves, and that test prints which and why.
    console.error(`[booktape] could not install python3-pandas: ${e.message}`);
  }
}

const gaps = lockfileGaps();
if (gaps.length > 0) {
  console.error(`\n[booktape] package-lock.json lacks packages the tree asks for, so \`npm ci\` fails:\n  ${gaps.join('\n  ')}`);
  failed = true;
}

if (!only && filters.length === 0) await run('type check', process.execPath, [path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json', '--noEmit']);
// The OpenAPI document, built in-process, linted by Redocly CLI (redocly.yaml, offline):
// no error, no warning but the kept ones (docs/api.md, "The OpenAPI contract"). One test.
if (!only && filters.length === 0) {
  const status = await run('OpenAPI lint', process.execPath, [path.join(REPO_ROOT, 'scripts', 'openapi.mjs'), '--lint']);
  count(status === 0 ? { passed: 1, failed: 0, skipped: 0 } : { passed: 0, failed: 1, skipped: 0 });
}
if (only !== '--int') {
  count(await vitest('unit', []));
  // The unit suite again under each Node release line users arrive on (BOOKTAPE_TEST_NODES,
  // "none" to skip). Their failures count; their passes do not, so the closing line's
  // total stays one count of the suite.
  const current = process.versions.node.split('.')[0];
  for (const line of (process.env.BOOKTAPE_TEST_NODES ?? '22,24').split(',').map((l) => l.trim())) {
    if (!line || line === 'none' || stopSignal) continue;
    if (line === current) {
      console.log(`\n[booktape] Node ${line}: the unit run above already used it (${process.version})`);
      continue;
    }
    let node;
    try {
      node = ensureNode(line, { log: (l) => console.log(`[booktape] ${l}`) });
    } catch (e) {
      console.error(`[booktape] no Node ${line} to test with (${e.message}); BOOKTAPE_TEST_NODES=none skips this step`);
      failed = true;
      continue;
    }
    const result = await vitest('unit', [], node);
    console.log(`[booktape] unit tests under Node ${node.version}: ${result.passed} passed, ${result.failed} failed, ${result.skipped} skipped`);
    totals.failed += result.failed;
  }
}
// Integration files share one broker and one Redis on two cores: two at a time.
if (only !== '--unit') count(await vitest('int', ['--maxWorkers=2', '--minWorkers=1']));

fs.rmSync(outDir, { recursive: true, force: true });
if (stopSignal) {
  console.log(`\n[booktape] stopped by ${stopSignal}: the remaining steps were skipped`);
  failed = true;
}
if (startedHere.length > 0) {
  console.log(`\n[booktape] stopping what this run started: ${startedHere.join(', ')}`);
  await stopServices({ services: startedHere }).catch((e) => console.error(`[booktape] could not stop ${startedHere.join(', ')}: ${e.message}`));
}
const ok = !failed && totals.failed === 0 && totals.passed > 0;
console.log(`\ntests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(ok ? 0 : 1);

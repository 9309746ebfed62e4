/**
 * The Python client's own tests (clients/python/tests, stdlib unittest) run against the real
 * API: the integration suite's app (embedded ClickHouse, the project's Redis) listening on a
 * port with a little data stored the way the sink stores it, a key made through the API, and
 * `python3 -m unittest` pointed at it with BOOKTAPE_API_URL / BOOKTAPE_API_KEY. The fixture
 * file tells the Python side what was stored and what the API must answer. Any Python
 * failure fails this test with the Python output.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aMessage, bMessage, conditionId, type TestApi, startTestApi } from '@booktape/api/testing';
import { uniqueId } from '@booktape/testkit';

const CLIENT_DIR = fileURLToPath(new URL('..', import.meta.url));
/** Debian's Python (3.11 on bookworm), with Debian's pandas (python3-pandas) when installed. */
const PYTHON = process.env.BOOKTAPE_PYTHON ?? (existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');

const DAY1 = Date.UTC(2026, 2, 1);
const DAY2 = DAY1 + 86_400_000;
const MARKET = conditionId(0x71);
const ASSET = '6161';
const OTHER_ASSET = '6262';
const TICKER = 'KXPY-26MAR01';
const OTHER_MARKETS = [0x72, 0x73, 0x74].map(conditionId);
/** An event 999 ms into a second: an end given in whole seconds must still include it. */
const LATE_MS = DAY2 + 700_999;

let t: TestApi;
let dir: string;

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd = CLIENT_DIR): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd, env, maxBuffer: 64 << 20, timeout: 150_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

const python = (args: string[], env: NodeJS.ProcessEnv) => run(PYTHON, args, env);

beforeAll(async () => {
  t = await startTestApi({ dataFloors: { 'exchange-a': '2026-02-08', 'exchange-b': null } });
  const url = await listen(t.app);
  // Exchange A: a book at 01:00, a change a minute for 40 minutes, three changes on day 2 and
  // one 999 ms into a second; a second outcome token with two events of its own.
  const a = [aMessage({ market: MARKET, asset: ASSET, ts: DAY1 + 3_600_000, hash: 'py-book', kind: 'book' })];
  for (let i = 1; i <= 40; i++) a.push(aMessage({ market: MARKET, asset: ASSET, ts: DAY1 + 3_600_000 + i * 60_000, hash: `py-pc-${i}` }));
  for (let i = 0; i < 3; i++) a.push(aMessage({ market: MARKET, asset: ASSET, ts: DAY2 + 600_000 + i * 1000, hash: `py-d2-${i}` }));
  a.push(aMessage({ market: MARKET, asset: ASSET, ts: LATE_MS, hash: 'py-late' }));
  a.push(aMessage({ market: MARKET, asset: OTHER_ASSET, ts: DAY1 + 3_700_000, hash: 'py-other-book', kind: 'book' }));
  a.push(aMessage({ market: MARKET, asset: OTHER_ASSET, ts: DAY1 + 3_800_000, hash: 'py-other-pc' }));
  a.push(...OTHER_MARKETS.map((m, i) => aMessage({ market: m, ts: DAY1 + i, hash: `py-m-${i}` })));
  await t.filler.insert('exchange-a', a);
  // Exchange B: a snapshot at 02:00 and a delta a minute for 30 minutes.
  const b = [bMessage({ ticker: TICKER, ms: DAY1 + 7_200_000, seq: 1, kind: 'snapshot' })];
  for (let i = 2; i <= 31; i++) b.push(bMessage({ ticker: TICKER, ms: DAY1 + 7_200_000 + i * 60_000, seq: i }));
  await t.filler.insert('exchange-b', b);

  // A plan of 1 request a second (a burst limit to wait out), and one of 1 request a month.
  const perSecond = { free: { monthly: null, perSecond: 1 }, starter: { monthly: null, perSecond: null }, pro: { monthly: null, perSecond: null } };
  const monthly = { free: { monthly: 1, perSecond: null }, starter: { monthly: null, perSecond: null }, pro: { monthly: null, perSecond: null } };
  const limitedUrl = await listen(await t.another({ plans: perSecond, redisKeyPrefix: `${uniqueId('bt-py-burst')}:` }));
  const monthlyUrl = await listen(await t.another({ plans: monthly, redisKeyPrefix: `${uniqueId('bt-py-month')}:` }));

  const revoked = await t.newKey('py-revoked');
  const keys = (await t.app.inject({ url: '/api/v1/keys?user_id=py-revoked' })).json() as { api_keys: Array<{ id: string }> };
  const del = await t.app.inject({ method: 'DELETE', url: `/api/v1/keys/${keys.api_keys[0]!.id}?user_id=py-revoked` });
  if (del.statusCode !== 200) throw new Error(`revoking a key: ${del.statusCode} ${del.body}`);

  dir = mkdtempSync(path.join(tmpdir(), 'booktape-python-'));
  const fixture = {
    url,
    key: await t.newKey('py-user'),
    day1_ms: DAY1,
    day2_ms: DAY2,
    late_ms: LATE_MS,
    market_a: MARKET,
    asset_a: ASSET,
    other_asset_a: OTHER_ASSET,
    other_markets_a: OTHER_MARKETS,
    ticker_b: TICKER,
    expected_a: t.filler.expected('exchange-a', MARKET),
    expected_b: t.filler.expected('exchange-b', TICKER),
    revoked_key: revoked,
    limited_url: limitedUrl,
    burst_keys: [await t.newKey('py-burst-1'), await t.newKey('py-burst-2')],
    monthly_url: monthlyUrl,
    monthly_key: await t.newKey('py-month'),
  };
  writeFileSync(path.join(dir, 'fixture.json'), JSON.stringify(fixture));
});
afterAll(async () => {
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the Python client against the real API', () => {
  it('python3 -m unittest passes in clients/python, pandas tests included when pandas is installed', async () => {
    const fixture = JSON.parse(readFileSync(path.join(dir, 'fixture.json'), 'utf8')) as { url: string; key: string };
    const env = {
      ...process.env,
      BOOKTAPE_API_URL: fixture.url,
      BOOKTAPE_API_KEY: fixture.key,
      BOOKTAPE_TEST_FIXTURE: path.join(dir, 'fixture.json'),
      BOOKTAPE_TEST_TMP: dir,
      PYTHONDONTWRITEBYTECODE: '1',
      PYTHONPATH: [CLIENT_DIR, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter),
    };
    const hasPandas = (await python(['-c', 'import pandas'], env)).code === 0;
    const { code, output } = await python(['-m', 'unittest', 'discover', '-s', 'tests', '-t', '.', '-v'], env);
    if (code !== 0) throw new Error(`Python tests failed (exit ${code}):\n${output}`);
    // Without the fixture or without pandas, tests skip themselves; here neither may be missing
    // (the pandas ones only when pandas is there: npm test installs it, scripts/services/python.mjs).
    const skipped = [...output.matchAll(/^(test\S+) \(([^)]+)\).*\.\.\. skipped '(.*)'$/gm)];
    const notPandas = skipped.filter((m) => !/pandas/.test(m[3]!));
    expect(notPandas.map((m) => `${m[1]}: ${m[3]}`)).toEqual([]);
    if (hasPandas) expect(skipped.map((m) => `${m[1]}: ${m[3]}`)).toEqual([]);
    else if (skipped.length > 0) console.warn(`[python client] ${skipped.length} tests skipped: ${skipped[0]![3]}`);
    expect(output).toMatch(/^OK/m);
  });

  it("installs offline into a venv as the README says, and the README's first example runs from outside the repository", async () => {
    const fixture = JSON.parse(readFileSync(path.join(dir, 'fixture.json'), 'utf8')) as { url: string; key: string };
    const venv = path.join(dir, 'venv');
    const env: NodeJS.ProcessEnv = { ...process.env, BOOKTAPE_API_URL: fixture.url, BOOKTAPE_API_KEY: fixture.key, PIP_NO_INPUT: '1', PIP_DISABLE_PIP_VERSION_CHECK: '1' };
    delete env.PYTHONPATH;
    const made = await python(['-m', 'venv', '--system-site-packages', venv], env);
    expect(made.output).toBe('');
    // pip builds in the source tree (build/, *.egg-info): from a copy, so the checkout stays as it is.
    const source = path.join(dir, 'source');
    cpSync(CLIENT_DIR, source, { recursive: true, filter: (f) => !/(^|\/)(build|[^/]*\.egg-info|__pycache__|node_modules)$/.test(f) });
    const pip = await run(path.join(venv, 'bin', 'pip'), ['install', '--no-build-isolation', '--no-index', source], env, dir);
    expect(pip.code, pip.output).toBe(0);
    // The README's "Data" example, with this fixture's market and ticker.
    const readme = readFileSync(path.join(CLIENT_DIR, 'README.md'), 'utf8');
    const example = /\*\*3\. Data:\*\*\s+```python\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(example).toBeDefined();
    const script = `${example!.replace('0x…condition id…', MARKET).replace('KXBTCD-26MAR0117-T84999.99', TICKER)}\nimport booktape\nprint(booktape.__file__.startswith(${JSON.stringify(venv)}), len(df), len(s))\n`;
    const hasPandas = (await python(['-c', 'import pandas'], env)).code === 0;
    if (!hasPandas) return void console.warn('[python client] pandas is not installed: the README example was not run');
    const ran = await run(path.join(venv, 'bin', 'python'), ['-c', script], env, dir);
    expect(ran.code, ran.output).toBe(0);
    // Day 1 of the market in the long format: a 4-level book and 40 changes of one token, a
    // 4-level book and a change of the other; an hour of minute buckets.
    expect(ran.output.trim()).toBe('True 49 60');
  });
});

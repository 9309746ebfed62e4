import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aMessage, bMessage, conditionId, startTestApi, type TestApi } from '@booktape/api/testing';
import { MarketCatalogueRepository } from '@booktape/storage';
import { waitFor } from '@booktape/testkit';
import { runCli } from './cli.test-support.ts';

/**
 * The user commands (markets, raw, summary, book, status, keys) as a user runs them: the
 * CLI in a child process against the real API (embedded ClickHouse, the project's Redis)
 * listening in this process, through the SDK, over HTTP.
 */

const ADMIN = 'admin-token-for-user-cli-tests';
const DAY = Date.UTC(2026, 2, 3);
const MARKET = conditionId(0x77);
const ASSET = '7777';
const TICKER = 'KXCLIUSER-1';
/** More tickers than one page of the market list (100), so `markets` walks two pages. */
const TICKERS = Array.from({ length: 130 }, (_, i) => `KXCLIPAGE-${String(i).padStart(3, '0')}`);

const dir = mkdtempSync(path.join(tmpdir(), 'booktape-cli-user-'));
let t: TestApi;
let api: string;
let key: string;

/** The CLI, as the user `key` (no admin token). */
const cli = (args: string[], env: Record<string, string | undefined> = {}) => runCli(args, { BOOKTAPE_API_KEY: key, ADMIN_TOKEN: undefined, ...env });

beforeAll(async () => {
  t = await startTestApi();
  const app = await t.another({ adminToken: ADMIN });
  await app.listen({ host: '127.0.0.1', port: 0 });
  api = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  key = await t.newKey('cli-user');
  const a = [aMessage({ market: MARKET, asset: ASSET, ts: DAY + 3_600_000, hash: 'cli-a-book', kind: 'book' })];
  for (let i = 1; i <= 5; i++) a.push(aMessage({ market: MARKET, asset: ASSET, ts: DAY + 3_600_000 + i * 1000, hash: `cli-a-pc-${i}` }));
  // Within the last second of the raw window below: kept only if an end in seconds covers its whole second.
  a.push(aMessage({ market: MARKET, asset: ASSET, ts: DAY + 3_600_000 + 5_500, hash: 'cli-a-late' }));
  await t.filler.insert('exchange-a', a);
  const b = [bMessage({ ticker: TICKER, ms: DAY + 7_200_000, seq: 1, kind: 'snapshot' })];
  for (let i = 2; i <= 4; i++) b.push(bMessage({ ticker: TICKER, ms: DAY + 7_200_000 + i * 1000, seq: i }));
  b.push(...TICKERS.map((tk, i) => bMessage({ ticker: tk, ms: DAY + i, seq: 1, kind: 'snapshot' })));
  await t.filler.insert('exchange-b', b);
  // The catalogue the slug lookup reads: our market, and an event of two markets.
  const cat = (slug: string, cid: string, tokens: [string, string], eventSlug: string | null) => ({
    conditionId: cid, marketId: slug, slug, question: `${slug}?`, active: true, closed: false, tokenIds: tokens, outcomes: ['Yes', 'No'], eventId: eventSlug, eventSlug, eventTitle: eventSlug,
  });
  await new MarketCatalogueRepository(t.ch).upsert([
    cat('cli-user-market', MARKET, [ASSET, '7878'], null),
    cat('cli-event-one', conditionId(0x78), ['1', '2'], 'cli-two-markets'),
    cat('cli-event-two', conditionId(0x79), ['3', '4'], 'cli-two-markets'),
    // Outcomes that differ only in case: the API's rule picks by the exact spelling.
    { ...cat('cli-case-market', conditionId(0x7a), ['51', '52'], null), outcomes: ['yes', 'YES'] },
  ]);
}, 120_000);
afterAll(async () => {
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('booktape user commands against the running API', () => {
  it('markets walks every page, venues named polymarket/kalshi', async () => {
    const r = await cli(['markets', '--venue', 'kalshi', '--prefix', 'KXCLIPAGE', '--format', 'ndjson', '--api', api]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.trim().split('\n').map((l) => (JSON.parse(l) as { ticker: string }).ticker)).toEqual(TICKERS);
    const a = await cli(['markets', '--venue', 'polymarket', '--api', api]);
    expect(JSON.parse(a.stdout)).toContainEqual({ condition_id: MARKET });
  });

  it('raw: a window (an end in seconds covers its whole second) as json, and the API\'s CSV for a date', async () => {
    // The window ends at 01:00:05 in Unix seconds: the record at 01:00:05.500 is in it.
    const to = String((DAY + 3_600_000 + 5000) / 1000);
    const r = await cli(['raw', '--venue', 'a', '--condition-id', MARKET, '--from', '2026-03-03T01:00:00Z', '--to', to, '--api', api]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const records = JSON.parse(r.stdout) as Array<{ event_type: string; hash: string }>;
    expect(records.map((e) => e.hash)).toEqual(['cli-a-book', ...[1, 2, 3, 4, 5].map((i) => `cli-a-pc-${i}`), 'cli-a-late']);
    const csv = await cli(['raw', '--venue', 'b', '--ticker', TICKER.toLowerCase(), '--date', '2026-03-03', '--format', 'csv', '--api', api]);
    expect(csv.status).toBe(0);
    const direct = await t.app.inject({ method: 'GET', url: `/api/v1/exchange-b/market/data?ticker=${TICKER}&date=2026-03-03&format=csv`, headers: { authorization: `Bearer ${key}` } });
    expect(csv.stdout).toBe(direct.body);
  });

  it('summary: the buckets as csv (the API\'s) and as ndjson', async () => {
    const args = ['summary', '--venue', 'a', '--condition-id', MARKET, '--asset-id', ASSET, '--from', '2026-03-03T01:00:00Z', '--to', '2026-03-03T01:04:59Z', '--resolution', '60', '--api', api];
    const nd = await cli([...args, '--format', 'ndjson']);
    expect(nd.stderr).toBe('');
    const buckets = nd.stdout.trim().split('\n').map((l) => JSON.parse(l) as { timestamp: number; quote_count: number });
    expect(buckets.map((b) => b.timestamp)).toEqual([0, 1, 2, 3, 4].map((m) => DAY + 3_600_000 + m * 60_000));
    expect(buckets[0]!.quote_count).toBe(7);
    const csv = await cli([...args, '--format', 'csv']);
    expect(csv.status).toBe(0);
    expect(csv.stdout.split('\n')[0]).toContain('timestamp');
    expect(csv.stdout.trim().split('\n')).toHaveLength(1 + 5);
  });

  it('a market by its slug and an outcome by its name: the same answer as by ids, the ids said on stderr', async () => {
    const window = ['--from', '2026-03-03T01:00:00Z', '--to', '2026-03-03T01:04:59Z', '--format', 'ndjson', '--api', api];
    const byIds = await cli(['summary', '--venue', 'a', '--condition-id', MARKET, '--asset-id', ASSET, ...window]);
    const bySlug = await cli(['summary', '--venue', 'polymarket', '--slug', 'https://polymarket.com/market/cli-user-market', '--outcome', 'yes', ...window]);
    expect(bySlug.status).toBe(0);
    // The ids the API used (X-Resolved-Condition-Id / -Asset-Id), the outcome as it was given.
    expect(bySlug.stderr).toBe(`booktape: https://polymarket.com/market/cli-user-market outcome "yes" is condition_id ${MARKET}, asset_id ${ASSET}\n`);
    expect(bySlug.stdout).toBe(byIds.stdout);
    const book = await cli(['book', '--venue', 'a', '--slug', 'cli-user-market', '--outcome', 'Yes', '--at', String((DAY + 3_600_000) / 1000), '--format', 'csv', '--api', api]);
    expect(book.stdout).toBe('side,price,size\nbids,0.48,30\nbids,0.01,1200.5\nasks,0.52,25\nasks,0.99,10\n');
    // export takes them too.
    const exported = path.join(dir, 'by-slug.csv.gz');
    const exp = await cli(['export', '--venue', 'polymarket', '--slug', 'cli-user-market', '--from', '2026-03-03', '--to', '2026-03-03', '--out', exported, '--no-progress', '--api', api]);
    expect(exp.status, exp.stderr).toBe(0);
    expect(exp.stderr).toContain(`cli-user-market is condition_id ${MARKET}`);
    const direct = await t.app.inject({ method: 'GET', url: `/api/v1/exchange-a/market/export?condition_id=${MARKET}&start_date=2026-03-03&end_date=2026-03-03`, headers: { authorization: `Bearer ${key}` } });
    expect(gunzipSync(readFileSync(exported)).toString('utf8')).toBe(gunzipSync(direct.rawPayload).toString('utf8'));
    // Names that do not pick one market: exit 2, in the API's words, saying what would.
    const event = await cli(['raw', '--venue', 'a', '--slug', 'cli-two-markets', '--date', '2026-03-03', '--api', api]);
    expect(event.status).toBe(2);
    expect(event.stderr).toBe('booktape: the API refused the --slug (400 invalid_parameter): slug "cli-two-markets" names an event of 2 markets: give one market\'s slug: "cli-event-one", "cli-event-two"\n');
    const outcome = await cli(['book', '--venue', 'a', '--slug', 'cli-user-market', '--outcome', 'Maybe', '--at', '1772500000', '--api', api]);
    expect(outcome.status).toBe(2);
    expect(outcome.stderr).toBe('booktape: the API refused the --outcome (400 invalid_parameter): cli-user-market has no outcome "Maybe": its outcomes are "Yes", "No"\n');
    const unknown = await cli(['summary', '--venue', 'a', '--slug', 'cli-no-such-market', '--outcome', 'Yes', ...window]);
    expect([unknown.status, unknown.stdout]).toEqual([2, '']);
    expect(unknown.stderr).toBe('booktape: the API refused the --slug (404 not_found): no market matches slug "cli-no-such-market"\n');
    const exportEvent = await cli(['export', '--venue', 'a', '--slug', 'cli-two-markets', '--from', '2026-03-03', '--to', '2026-03-03', '--out', path.join(dir, 'never.csv.gz'), '--no-progress', '--api', api]);
    expect(exportEvent.status).toBe(2);
    expect(exportEvent.stderr).toBe(event.stderr);
    expect(existsSync(path.join(dir, 'never.csv.gz'))).toBe(false);
  });

  it('--slug and --outcome follow the API\'s one rule: outcomes differing only in case, the exact spelling picks', async () => {
    const at = String((DAY + 3_600_000) / 1000);
    for (const [outcome, token] of [['YES', '52'], ['yes', '51']] as const) {
      const r = await cli(['book', '--venue', 'a', '--slug', 'cli-case-market', '--outcome', outcome, '--at', at, '--api', api]);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr).toBe(`booktape: cli-case-market outcome ${JSON.stringify(outcome)} is condition_id ${conditionId(0x7a)}, asset_id ${token}\n`);
      expect(JSON.parse(r.stdout)).toMatchObject({ asset_id: token });
    }
    const other = await cli(['book', '--venue', 'a', '--slug', 'cli-case-market', '--outcome', 'Yes', '--at', at, '--api', api]);
    expect(other.status).toBe(2);
    expect(other.stderr).toContain('matches several outcomes of cli-case-market without regard to case');
  });

  it('book: the book at an instant, json and csv levels', async () => {
    const r = await cli(['book', '--venue', 'kalshi', '--ticker', TICKER, '--at', '2026-03-03T02:00:00.500Z', '--api', api]);
    expect(r.stderr).toBe('');
    const book = JSON.parse(r.stdout) as { ticker: string; is_known: boolean; yes: unknown[]; no: unknown[] };
    expect(book).toMatchObject({ ticker: TICKER, is_known: true, yes: [{ price: '0.42', size: '15' }, { price: '0.41', size: '120' }], no: [{ price: '0.55', size: '40' }] });
    const csv = await cli(['book', '--venue', 'a', '--condition-id', MARKET, '--asset-id', ASSET, '--at', String((DAY + 3_600_000) / 1000), '--format', 'csv', '--api', api]);
    expect(csv.stderr).toBe('');
    expect(csv.stdout).toBe('side,price,size\nbids,0.48,30\nbids,0.01,1200.5\nasks,0.52,25\nasks,0.99,10\n');
  });

  it('status needs no key; --venue keeps that venue', async () => {
    const r = await cli(['status', '--venue', 'b', '--api', api], { BOOKTAPE_API_KEY: undefined });
    expect(r.status).toBe(0);
    const s = JSON.parse(r.stdout) as { status: string; venues: Array<{ venue: string }> };
    expect(s.status).toMatch(/^(ok|degraded|down)$/);
    expect(s.venues.map((v) => v.venue)).toEqual(['exchange-b']);
  });

  it('keys create, list and revoke with ADMIN_TOKEN; the new key works; without the token, exit 1 with the API\'s word', async () => {
    const env = { ADMIN_TOKEN: ADMIN };
    const made = await cli(['keys', 'create', '--user-id', 'cli-keys', '--name', 'notebook', '--api', api], env);
    expect(made.stderr).toBe('');
    expect(made.status).toBe(0);
    const k = JSON.parse(made.stdout) as { key_id: string; api_key: string; user_id: string };
    expect(k.user_id).toBe('cli-keys');
    const withIt = await cli(['markets', '--venue', 'b', '--prefix', TICKER, '--key', k.api_key, '--api', api], { BOOKTAPE_API_KEY: undefined });
    expect(JSON.parse(withIt.stdout)).toEqual([{ ticker: TICKER }]);
    const list = await cli(['keys', 'list', '--user-id', 'cli-keys', '--format', 'csv', '--api', api], env);
    expect(list.stdout.split('\n')[0]).toBe('id,name,status,created_at,last_used_at');
    expect(list.stdout).toContain(`${k.key_id},notebook,active,`);
    const revoked = await cli(['keys', 'revoke', k.key_id, '--user-id', 'cli-keys', '--api', api], env);
    expect(JSON.parse(revoked.stdout)).toMatchObject({ key_id: k.key_id, status: 'revoked' });
    const refused = await cli(['markets', '--venue', 'b', '--key', k.api_key, '--api', api], { BOOKTAPE_API_KEY: undefined });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/^booktape: the API refused \(403 forbidden\)/);
    const noToken = await cli(['keys', 'list', '--user-id', 'cli-keys', '--api', api]);
    expect(noToken.status).toBe(1);
    expect(noToken.stderr).toContain('(401');
    expect(noToken.stderr).toContain("set ADMIN_TOKEN to the service's admin token");
  });

  it('a usage error is one line and the hint, exit 2, before any request', async () => {
    const r = await cli(['summary', '--venue', 'a', '--condition-id', '0xabc', '--asset-id', ASSET, '--date', '2026-03-03', '--api', 'http://127.0.0.1:1']);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`booktape: --condition-id "0xabc" is not a condition id (0x + 64 hex digits)\nRun 'booktape summary --help' for usage.\n`);
  });

  it('an API that is not there: exit 1, saying where it looked', async () => {
    const r = await cli(['status', '--api', 'http://127.0.0.1:1']);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('cannot reach the API at http://127.0.0.1:1');
  });
});

describe('--out FILE', () => {
  /** A proxy in front of the API that holds (or fails) the request for the second page of the market list. */
  async function proxy(onSecondPage: 'hold' | 'fail') {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let held = false;
    const server: Server = createServer((req, res) => {
      void (async () => {
        if (req.url?.includes('offset=100')) {
          if (onSecondPage === 'fail') return void res.writeHead(500, { 'content-type': 'text/plain' }).end('upstream broke');
          held = true;
          await released;
        }
        const upstream = await fetch(`${api}${req.url}`, { headers: { authorization: String(req.headers.authorization ?? '') } });
        res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' }).end(Buffer.from(await upstream.arrayBuffer()));
      })();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, release, isHeld: () => held, close: () => new Promise((r) => server.close(r)) };
  }

  it('appears under its name only once complete', async () => {
    const p = await proxy('hold');
    try {
      const file = path.join(dir, 'markets.csv');
      const running = cli(['markets', '--venue', 'b', '--prefix', 'KXCLIPAGE', '--format', 'csv', '--out', file, '--api', p.url]);
      // The first page is written, the second is held: only the partial file exists.
      await waitFor('the second page asked for', () => p.isHeld(), 30_000, 50);
      expect(existsSync(`${file}.partial`)).toBe(true);
      expect(existsSync(file)).toBe(false);
      p.release();
      const r = await running;
      expect(r.status).toBe(0);
      expect(r.stderr).toBe(`booktape: wrote ${file} (130 records)\n`);
      expect(readFileSync(file, 'utf8')).toBe(['ticker', ...TICKERS, ''].join('\n'));
      expect(existsSync(`${file}.partial`)).toBe(false);
    } finally {
      p.release();
      await p.close();
    }
  });

  it('a command that fails halfway leaves no file, neither whole-looking nor partial', async () => {
    const p = await proxy('fail');
    try {
      const file = path.join(dir, 'broken.ndjson');
      const r = await cli(['markets', '--venue', 'b', '--prefix', 'KXCLIPAGE', '--format', 'ndjson', '--out', file, '--api', p.url]);
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('did not answer as the booktape API');
      expect(existsSync(file) || existsSync(`${file}.partial`)).toBe(false);
    } finally {
      await p.close();
    }
  });
});

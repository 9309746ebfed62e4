import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '@booktape/api/testing';
import { runCli } from './cli.test-support.ts';

/** `booktape outage add|list|remove` against a running API (real ClickHouse and Redis). */

const ADMIN = 'admin-token-for-outage-cli-tests';

let t: TestApi;
let api: string;

/** The CLI with the operator's admin token. */
const cli = (args: string[], env: Record<string, string | undefined> = {}) => runCli(args, { ADMIN_TOKEN: ADMIN, ...env });

beforeAll(async () => {
  t = await startTestApi();
  const app = await t.another({ adminToken: ADMIN });
  await app.listen({ host: '127.0.0.1', port: 0 });
  api = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});
afterAll(async () => t?.close());

describe('booktape outage', () => {
  it('add, list, remove through the API with the admin token', async () => {
    const add = await cli(['outage', 'add', '--api', api, '--venue', 'kalshi', '--from', '2026-03-01T10:00:00Z', '--to', '2026-03-01T12:30:00Z', '--reason', 'Kalshi API incident']);
    expect(add.stderr).toBe('');
    expect(add.status).toBe(0);
    const id = /declared (out_[0-9a-f]{16})/.exec(add.stdout)?.[1];
    expect(id).toBeDefined();
    expect(add.stdout).toContain('exchange-b  2026-03-01T10:00:00.000Z → 2026-03-01T12:30:00.000Z  Kalshi API incident');

    const other = await cli(['outage', 'add', '--api', api, '--venue', 'a', '--from', '2026-03-02', '--to', '1772496000', '--reason', 'host down']);
    expect(other.status).toBe(0);

    const listB = await cli(['outage', 'list', '--api', api, '--venue', 'b', '--json']);
    expect(listB.status).toBe(0);
    const items = JSON.parse(listB.stdout) as Array<{ id: string; venue: string; start_ms: number; end_ms: number }>;
    expect(items).toEqual([expect.objectContaining({ id, venue: 'exchange-b', start_ms: Date.UTC(2026, 2, 1, 10), end_ms: Date.UTC(2026, 2, 1, 12, 30) })]);
    const all = await cli(['outage', 'list', '--api', api]);
    expect(all.stdout.trim().split('\n')).toHaveLength(2);

    const rm = await cli(['outage', 'remove', id!, '--api', api]);
    expect(rm.status).toBe(0);
    expect(rm.stdout).toContain(`removed ${id}`);
    expect((await cli(['outage', 'list', '--api', api, '--venue', 'b'])).stdout).toBe('no declared outages\n');
    // Removing again: the API's 404, exit 1.
    const again = await cli(['outage', 'remove', id!, '--api', api]);
    expect(again.status).toBe(1);
    expect(again.stderr).toContain('(404)');
  });

  it('without the admin token the API refuses: exit 1 with its message', async () => {
    const r = await cli(['outage', 'add', '--api', api, '--venue', 'a', '--from', '2026-03-01', '--to', '2026-03-02', '--reason', 'x'], { ADMIN_TOKEN: undefined });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('missing X-Admin-Token');
  });

  it('bad arguments exit 2 with a clear message, before any request', async () => {
    const cases: Array<[string[], string]> = [
      [['outage'], 'outage needs add, list or remove'],
      [['outage', 'add', '--venue', 'c', '--from', '2026-03-01', '--to', '2026-03-02', '--reason', 'r'], '--venue must be one of a, b, exchange-a, exchange-b, polymarket, kalshi, got "c"'],
      [['outage', 'add', '--venue', 'a', '--to', '2026-03-02', '--reason', 'r'], 'outage add needs --from'],
      [['outage', 'add', '--venue', 'a', '--from', 'tomorrow', '--to', '2026-03-02', '--reason', 'r'], '--from must be an ISO 8601 time'],
      [['outage', 'add', '--venue', 'a', '--from', '2026-03-02', '--to', '2026-03-01', '--reason', 'r'], 'must be after --from'],
      [['outage', 'add', '--venue', 'a', '--from', '2026-03-01', '--to', '2026-03-02'], 'outage add needs --reason'],
      [['outage', 'remove', 'abc'], 'is not an outage id'],
      [['outage', 'list', '--api', 'ftp://x'], '--api must be an http(s) URL'],
      [['outage', 'list', '--bogus'], "Unknown option '--bogus'"],
    ];
    for (const [args, msg] of cases) {
      const r = await cli([...args]);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toContain(msg);
      // One line saying what was wrong, then where the usage is; never the whole help.
      expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(2);
      expect(r.stderr).toMatch(/\nRun 'booktape outage( add| list| remove)? --help' for usage\.\n$/);
    }
  });

  it('an API that is not running: exit 1, saying where it looked', async () => {
    const r = await cli(['outage', 'list'], { HOST: '127.0.0.1', PORT: '1' });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('cannot reach the API at http://127.0.0.1:1');
  });
});

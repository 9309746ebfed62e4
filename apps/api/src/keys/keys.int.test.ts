import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@booktape/testkit';
import { hashApiKey } from './keys.service.ts';
import { bearer, startTestApi, type TestApi } from '../testing.ts';

/** API keys: creation, listing, revocation, hash-only storage, admin token, usage times. */

let t: TestApi;
const DATA_PATH = '/exchange-b/market/date-range?ticker=KX-1';
const DATA = `/api/v1${DATA_PATH}`;

beforeAll(async () => {
  t = await startTestApi();
});
afterAll(async () => t?.close());

async function call(method: 'GET' | 'POST' | 'DELETE', url: string, headers: Record<string, string> = {}) {
  const res = await t.app.inject({ method, url: `/api/v1${url}`, headers });
  return { status: res.statusCode, body: res.json() as Record<string, any>, raw: res.body };
}

async function create(user: string, name = 'research') {
  const r = await call('POST', `/keys?name=${encodeURIComponent(name)}&user_id=${encodeURIComponent(user)}`);
  expect(r.status).toBe(200);
  return r.body.data as { key_id: string; api_key: string; user_id: string; name: string; created_at: string };
}

/** Everything stored about keys, as text: the ClickHouse tables and every Redis value under the prefix. */
async function everythingStored(): Promise<string> {
  const parts: string[] = [];
  for (const table of ['api_keys', 'api_key_usage']) {
    const rs = await t.ch.client.query({ query: `SELECT * FROM ${t.ch.table(table)}`, format: 'JSONEachRow' });
    parts.push(await rs.text());
  }
  let cursor = '0';
  do {
    const [next, keys] = await t.redis.scan(cursor, 'MATCH', `${t.config.redisKeyPrefix}*`, 'COUNT', 500);
    cursor = next;
    for (const k of keys) {
      parts.push(k);
      const type = await t.redis.type(k);
      if (type === 'string') parts.push((await t.redis.get(k)) ?? '');
      if (type === 'zset') parts.push((await t.redis.zrange(k, '0', '-1', 'WITHSCORES')).join(' '));
    }
  } while (cursor !== '0');
  return parts.join('\n');
}

describe('API keys', () => {
  it('POST /keys creates a recognisable 256-bit key, shown once', async () => {
    const before = Date.now();
    const r = await call('POST', '/keys?name=My%20laptop&user_id=alice');
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['data', 'success']);
    expect(r.body.success).toBe(true);
    const d = r.body.data;
    expect(Object.keys(d).sort()).toEqual(['api_key', 'created_at', 'key_id', 'name', 'user_id']);
    expect(d.api_key).toMatch(/^bt_live_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(d.api_key.slice(8), 'base64url')).toHaveLength(32);
    expect(d.key_id).toMatch(/^key_[0-9a-f]{24}$/);
    expect(d).toMatchObject({ user_id: 'alice', name: 'My laptop' });
    expect(Date.parse(d.created_at)).toBeGreaterThanOrEqual(before - 5);
    // The key works at once.
    expect((await call('GET', DATA_PATH, bearer(d.api_key))).status).toBe(200);
  });

  it('GET /keys lists active keys without their secret, with last_used_at kept current', async () => {
    const k1 = await create('bob', 'one');
    const k2 = await create('bob', 'two');
    await create('carol');
    let r = await call('GET', '/keys?user_id=bob');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      user_id: 'bob',
      api_keys: [
        { id: k1.key_id, name: 'one', status: 'active', created_at: k1.created_at, last_used_at: null },
        { id: k2.key_id, name: 'two', status: 'active', created_at: k2.created_at, last_used_at: null },
      ],
      total: 2,
    });
    expect(r.raw).not.toContain(k1.api_key);
    expect(r.raw).not.toContain(k1.api_key.slice(8));

    const used = Date.now();
    expect((await call('GET', DATA_PATH, bearer(k2.api_key))).status).toBe(200);
    r = await call('GET', '/keys?user_id=bob');
    const item = r.body.api_keys.find((k: any) => k.id === k2.key_id);
    expect(Date.parse(item.last_used_at)).toBeGreaterThanOrEqual(used - 5);
    expect(r.body.api_keys.find((k: any) => k.id === k1.key_id).last_used_at).toBeNull();

    // Flushed in batches: to Redis within a second, to ClickHouse within the flush interval.
    await waitFor('usage in Redis', async () => (await t.redis.zscore(`${t.config.redisKeyPrefix}apikey:last_used`, k2.key_id)) !== null, 5000);
    await waitFor(
      'usage in ClickHouse',
      async () => {
        const rs = await t.ch.client.query({
          query: `SELECT count() AS n FROM ${t.ch.table('api_key_usage')} WHERE key_id = {id:String}`,
          query_params: { id: k2.key_id },
          format: 'JSONEachRow',
        });
        return Number((await rs.json<{ n: string }>())[0]?.n) > 0;
      },
      5000,
    );
    // A fresh app (another process, say) reads it back from the stores.
    const other = await t.another();
    const r2 = await other.inject({ url: '/api/v1/keys?user_id=bob' });
    expect(r2.json().api_keys.find((k: any) => k.id === k2.key_id).last_used_at).toBe(item.last_used_at);
  });

  it('a revoked key is refused with 403 within a second, on every app instance, and is no longer listed', async () => {
    const k = await create('dave');
    const other = await t.another();
    expect((await call('GET', DATA_PATH, bearer(k.api_key))).status).toBe(200);
    expect((await other.inject({ url: DATA, headers: bearer(k.api_key) })).statusCode).toBe(200);

    const revokedAt = Date.now();
    const d = await call('DELETE', `/keys/${k.key_id}?user_id=dave`);
    expect(d.status).toBe(200);
    expect(d.body).toEqual({ success: true, data: { key_id: k.key_id, status: 'revoked', revoked_at: expect.any(String) } });
    await waitFor(
      'revocation seen everywhere',
      async () => (await call('GET', DATA_PATH, bearer(k.api_key))).status === 403 && (await other.inject({ url: DATA, headers: bearer(k.api_key) })).statusCode === 403,
      1000,
      20,
    );
    expect(Date.now() - revokedAt).toBeLessThan(1000);
    const refused = await call('GET', DATA_PATH, bearer(k.api_key));
    expect(refused.body.error).toMatchObject({ code: 'forbidden' });

    // Revoked even when the cache is gone (ClickHouse is the record).
    await t.redis.del(`${t.config.redisKeyPrefix}apikey:${hashApiKey(k.api_key)}`);
    expect((await call('GET', DATA_PATH, bearer(k.api_key))).status).toBe(403);

    expect((await call('GET', '/keys?user_id=dave')).body).toEqual({ user_id: 'dave', api_keys: [], total: 0 });
    // Revoking again is harmless.
    expect((await call('DELETE', `/keys/${k.key_id}?user_id=dave`)).status).toBe(200);
  });

  it('DELETE answers 404 for another user’s key or an unknown key, 400 for a malformed id', async () => {
    const k = await create('erin');
    const foreign = await call('DELETE', `/keys/${k.key_id}?user_id=mallory`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe('not_found');
    expect((await call('GET', DATA_PATH, bearer(k.api_key))).status).toBe(200);
    expect((await call('DELETE', `/keys/key_${'0'.repeat(24)}?user_id=erin`)).status).toBe(404);
    const bad = await call('DELETE', `/keys/${encodeURIComponent("x' OR 1=1")}?user_id=erin`);
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_parameter', param: 'key_id' });
    const noUser = await call('DELETE', `/keys/${k.key_id}`);
    expect(noUser.body.error).toMatchObject({ code: 'missing_parameter', param: 'user_id' });
  });

  it('stores only the SHA-256 of a key: the plaintext appears nowhere in ClickHouse or Redis', async () => {
    const k = await create('frank');
    expect((await call('GET', DATA_PATH, bearer(k.api_key))).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1300)); // let usage reach Redis
    const stored = await everythingStored();
    expect(stored).toContain(hashApiKey(k.api_key));
    expect(stored).not.toContain(k.api_key);
    expect(stored).not.toContain(k.api_key.slice(8));
    expect(stored).not.toContain(k.api_key.slice(8, 30));
  });

  it('validates name and user_id', async () => {
    expect((await call('POST', '/keys?user_id=x')).body.error).toMatchObject({ code: 'missing_parameter', param: 'name' });
    expect((await call('POST', '/keys?name=x')).body.error).toMatchObject({ code: 'missing_parameter', param: 'user_id' });
    expect((await call('POST', '/keys?name=x&user_id=a%00b')).body.error).toMatchObject({ code: 'invalid_parameter', param: 'user_id' });
    expect((await call('POST', `/keys?name=${'n'.repeat(101)}&user_id=a`)).body.error).toMatchObject({ code: 'invalid_parameter', param: 'name' });
    expect((await call('GET', '/keys')).body.error).toMatchObject({ code: 'missing_parameter', param: 'user_id' });
    expect((await call('POST', '/keys?name=a&name=b&user_id=u')).body.error).toMatchObject({ code: 'invalid_parameter', param: 'name' });
  });
});

describe('admin token', () => {
  it('when configured, /keys needs X-Admin-Token; data routes are unaffected', async () => {
    const token = 'admin-token-0123456789abcdef';
    const admin = await t.another({ adminToken: token });
    const paths: Array<['GET' | 'POST' | 'DELETE', string]> = [
      ['POST', '/api/v1/keys?name=n&user_id=gina'],
      ['GET', '/api/v1/keys?user_id=gina'],
      ['DELETE', `/api/v1/keys/key_${'1'.repeat(24)}?user_id=gina`],
    ];
    for (const [method, url] of paths) {
      for (const headers of [{}, { 'x-admin-token': '' }, { 'x-admin-token': 'wrong' }, { 'x-admin-token': `${token}x` }, { 'x-admin-token': token.slice(0, -1) }]) {
        const r = await admin.inject({ method, url, headers });
        expect(r.statusCode, `${method} ${url} ${JSON.stringify(headers)}`).toBe(401);
        expect(r.json().error.code).toBe('unauthorized');
      }
    }
    const created = await admin.inject({ method: 'POST', url: '/api/v1/keys?name=n&user_id=gina', headers: { 'x-admin-token': token } });
    expect(created.statusCode).toBe(200);
    const apiKey = created.json().data.api_key as string;
    expect((await admin.inject({ url: '/api/v1/keys?user_id=gina', headers: { 'x-admin-token': token } })).json().total).toBe(1);
    expect((await admin.inject({ url: DATA, headers: bearer(apiKey) })).statusCode).toBe(200);
    const del = await admin.inject({ method: 'DELETE', url: `/api/v1/keys/${created.json().data.key_id}?user_id=gina`, headers: { 'x-admin-token': token } });
    expect(del.statusCode).toBe(200);
    // Without ADMIN_TOKEN (the default app) no header is needed.
    expect((await call('GET', '/keys?user_id=gina')).status).toBe(200);
  });
});

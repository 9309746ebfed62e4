import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { aMessage, bearer, conditionId, startTestApi, type TestApi } from '../testing.ts';
import { MarketCatalogueRepository } from '@booktape/storage';
import { UNLIMITED_PLANS } from '../usage/limits.ts';

/**
 * The document's `security` is what the app enforces: every documented operation, called
 * without credentials on a real app with ADMIN_TOKEN set, answers 401 exactly when its
 * security asks for something (and not when it is `[]` or allows `{}`).
 */

let t: TestApi;
beforeAll(async () => {
  t = await startTestApi({ adminToken: 'openapi-int-test-admin-token' });
});
afterAll(async () => t?.close());

type Operation = { operationId: string; security?: Array<Record<string, string[]>>; responses: Record<string, { headers?: Record<string, unknown> }> };

describe('security in the document matches the app', () => {
  it('401 without credentials exactly where security is required', async () => {
    await t.app.ready();
    const doc = t.app.swagger() as unknown as { paths: Record<string, Record<string, Operation>> };
    const checked: string[] = [];
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        const security = op.security ?? [];
        const required = security.length > 0 && !security.some((s) => Object.keys(s).length === 0);
        // Path parameters as well-formed values; no query, no body, no credentials.
        const url = path.replace('{key_id}', `key_${'0'.repeat(24)}`).replace('{id}', `out_${'0'.repeat(16)}`).replace(/\{[^}]+\}/g, 'user-1');
        const res = await t.app.inject({ method: method.toUpperCase() as 'GET', url });
        expect(res.statusCode === 401, `${op.operationId}: ${method.toUpperCase()} ${url} answered ${res.statusCode}`).toBe(required);
        checked.push(op.operationId);
      }
    }
    expect(checked.length).toBeGreaterThanOrEqual(43);
  });
});

/** Answer fields a client reads: each one an answer carries must be declared on its operation and status. */
const WATCHED = ['link', 'x-total-count', 'content-disposition', 'x-export-days', 'etag', 'cache-control', 'retry-after', 'x-request-id', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'ratelimit-policy', 'x-resolved-condition-id', 'x-resolved-asset-id'];

describe('response fields in the document match the answers', () => {
  it('every watched field of a real answer is declared on its operation and status', async () => {
    const M = conditionId(26);
    const DAY = Date.UTC(2026, 2, 1);
    await t.filler.insert(
      'exchange-a',
      Array.from({ length: 12 }, (_, i) => aMessage({ market: M, ts: DAY + 3_600_000 + i * 1000, hash: `0x26${i.toString(16).padStart(4, '0')}`, kind: i === 0 ? 'book' : 'price_change' })),
    );
    const admin = { 'x-admin-token': 'openapi-int-test-admin-token' };
    const limited = await t.another({ plans: { ...UNLIMITED_PLANS, free: { monthly: 40, perSecond: null } } });
    const created = await limited.inject({ method: 'POST', url: '/api/v1/keys?name=doc&user_id=doc-headers', headers: admin });
    const key = created.json().data.api_key as string;
    const doc = limited.swagger() as unknown as { paths: Record<string, Record<string, Operation>> };

    const answers: Array<[string, string, LightMyRequestResponse]> = [];
    const call = async (docPath: string, url: string, headers: Record<string, string> = {}) => {
      const res = await limited.inject({ url, headers: { ...bearer(key), ...headers } });
      answers.push([docPath, url, res]);
      return res;
    };
    const range = `start_timestamp=${DAY}&end_timestamp=${DAY + 86_399_999}`;
    await call('/api/v1/exchange-a/market/data', `/api/v1/exchange-a/market/data?condition_id=${M}&date=2026-03-01&limit=5`);
    const csv = await call('/api/v1/exchange-a/market/data/range', `/api/v1/exchange-a/market/data/range?condition_id=${M}&${range}&limit=5&format=csv`);
    expect(csv.headers.link).toBeDefined();
    const tagged = await call('/api/v1/exchange-a/market/data', `/api/v1/exchange-a/market/data?condition_id=${M}&date=2026-03-01&limit=5&format=ndjson`);
    expect(tagged.headers.etag).toBeDefined();
    expect((await call('/api/v1/exchange-a/market/data', `/api/v1/exchange-a/market/data?condition_id=${M}&date=2026-03-01&limit=5&format=ndjson`, { 'if-none-match': tagged.headers.etag as string })).statusCode).toBe(304);
    const file = await call('/api/v1/exchange-a/market/export', `/api/v1/exchange-a/market/export?condition_id=${M}&start_date=2026-03-01&end_date=2026-03-01`);
    expect(file.headers['content-disposition']).toBeDefined();
    // A market named by slug and outcome: the answer says which ids it resolved to.
    await new MarketCatalogueRepository(t.ch).upsert([
      { conditionId: M, marketId: '26', slug: 'doc-headers-market', question: 'Doc?', active: true, closed: false, tokenIds: ['2601', '2602'], outcomes: ['Yes', 'No'], eventId: null, eventSlug: null, eventTitle: null },
    ]);
    const bySlug = await call('/api/v1/exchange-a/market/book', `/api/v1/exchange-a/market/book?slug=doc-headers-market&outcome=yes&timestamp=${DAY}`);
    expect([bySlug.statusCode, bySlug.headers['x-resolved-asset-id']]).toEqual([200, '2601']);
    await call('/api/v1/exchange-a/market/data/range', `/api/v1/exchange-a/market/data/range?slug=doc-headers-market&${range}&limit=5`);
    await call('/api/v1/exchange-a/market/list', '/api/v1/exchange-a/market/list?limit=0');
    await call('/api/v1/exchange-a/market/coverage', `/api/v1/exchange-a/market/coverage?condition_id=${M}&start_date=2026-03-01&end_date=2026-03-01`);
    await call('/api/v1/exchange-a/market/list', '/api/v1/exchange-a/market/list', { authorization: 'Bearer nope' });
    await call('/api/v1/health', '/api/v1/health', {});
    for (let i = 0; i < 40; i++) if ((await call('/api/v1/exchange-b/market/list', '/api/v1/exchange-b/market/list')).statusCode === 429) break;
    expect(answers.map(([, , r]) => r.statusCode)).toContain(429);

    let checked = 0;
    for (const [docPath, url, res] of answers) {
      const op = doc.paths[docPath]!.get!;
      const declared = new Set(Object.keys(op.responses[String(res.statusCode)]?.headers ?? {}).map((h) => h.toLowerCase()));
      for (const h of WATCHED) {
        if (res.headers[h] === undefined) continue;
        expect(declared.has(h), `${url} ${res.statusCode} sends ${h}, not declared on ${op.operationId}`).toBe(true);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(60);
  });
});

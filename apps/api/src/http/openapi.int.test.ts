import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../testing.ts';

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

type Operation = { operationId: string; security?: Array<Record<string, string[]>> };

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

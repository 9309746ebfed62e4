import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../openapi-document.ts';
import { testConfig } from '../testing.ts';
import { operationIdOf, serverUrl } from './openapi.ts';

/**
 * The OpenAPI contract (docs/api.md, "The OpenAPI contract"), asserted on the document the
 * app builds (app.swagger()), with an admin token configured as in production.
 */

interface Operation {
  operationId?: string;
  deprecated?: boolean;
  security?: Array<Record<string, string[]>>;
  responses: Record<string, { description: string; content?: Record<string, unknown>; headers?: Record<string, unknown> }>;
}
interface Doc {
  info: { license?: { name: string; identifier?: string } };
  servers: Array<{ url: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
}

const ADMIN_TOKEN = 'openapi-test-admin-token';
let doc: Doc;
let ops: Array<{ method: string; path: string; op: Operation }>;
const find = (method: string, path: string) => ops.find((o) => o.method === method && o.path === path)!.op;

beforeAll(async () => {
  doc = (await openApiDocument(testConfig({ adminToken: ADMIN_TOKEN, host: '0.0.0.0', port: 8080 }))) as unknown as Doc;
  ops = Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ method, path, op })));
});

describe('operationId', () => {
  it('every operation has one, unique, derived from method and path', () => {
    expect(ops.length).toBeGreaterThanOrEqual(43);
    const ids = ops.map((o) => o.op.operationId);
    for (const { method, path, op } of ops) expect(op.operationId, `${method} ${path}`).toBe(operationIdOf(method, path));
    expect(new Set(ids).size).toBe(ids.length);
    expect(find('get', '/api/v1/exchange-a/market/data/range').operationId).toBe('getExchangeAMarketDataRange');
    expect(find('delete', '/api/v1/keys/{key_id}').operationId).toBe('deleteKeysByKeyId');
    expect(find('get', '/status').operationId).toBe('getStatus');
  });

  it('the scheme: method, then the path after /api/v1 in PascalCase, parameters as By<Name>', () => {
    expect(operationIdOf('GET', '/api/v1/exchange-b/market/orderbook-summary')).toBe('getExchangeBMarketOrderbookSummary');
    expect(operationIdOf('GET', '/api/v1/user/:user_id/requests/count')).toBe('getUserByUserIdRequestsCount');
    expect(operationIdOf('get', '/api/v1/user/{user_id}/requests/count')).toBe('getUserByUserIdRequestsCount');
    expect(operationIdOf('GET', '/metrics')).toBe('getMetrics');
  });
});

describe('security', () => {
  const BEARER = [{ bearerAuth: [] }];
  const ADMIN = [{ adminToken: [] }];

  it('every operation declares it', () => {
    for (const { method, path, op } of ops) expect(op.security, `${method} ${path}`).toBeDefined();
  });

  it('Bearer on every historical-data and coverage endpoint, aliases included', () => {
    const data = ops.filter((o) => /\/market\//.test(o.path));
    expect(data.length).toBeGreaterThanOrEqual(21);
    for (const { method, path, op } of data) expect(op.security, `${method} ${path}`).toEqual(BEARER);
  });

  it('none on the public endpoints', () => {
    for (const [method, path] of [
      ['get', '/api/v1/health'],
      ['get', '/api/v1/monitoring/status'],
      ['get', '/status'],
      ['get', '/api/v1/lookup/slug'],
      ['get', '/api/v1/exchange-a/lookup/slug'],
      ['get', '/api/v1/outages'],
      ['post', '/api/v1/webhooks/stripe'],
    ] as const) {
      expect(find(method, path).security, `${method} ${path}`).toEqual([]);
    }
  });

  it('the admin token on the operator endpoints; key or token on a user\'s usage', () => {
    for (const [method, path] of [
      ['post', '/api/v1/keys'],
      ['get', '/api/v1/keys'],
      ['delete', '/api/v1/keys/{key_id}'],
      ['post', '/api/v1/subscriptions/checkout'],
      ['post', '/api/v1/subscriptions/portal'],
      ['get', '/api/v1/subscriptions/status'],
      ['post', '/api/v1/outages'],
      ['delete', '/api/v1/outages/{id}'],
      ['get', '/api/v1/stats'],
      ['get', '/api/v1/stats/popular-markets'],
    ] as const) {
      expect(find(method, path).security, `${method} ${path}`).toEqual(ADMIN);
    }
    expect(find('get', '/metrics').security).toEqual([...ADMIN, { adminBearer: [] }]);
    for (const path of ['/api/v1/usage', '/api/v1/user/{user_id}/requests/count', '/api/v1/user/{user_id}/requests/timeframe', '/api/v1/user/{user_id}/requests/recent']) {
      expect(find('get', path).security, path).toEqual([...BEARER, ...ADMIN]);
    }
  });

  it('every scheme used is defined', () => {
    const used = new Set(ops.flatMap((o) => (o.op.security ?? []).flatMap((s) => Object.keys(s))));
    for (const s of used) expect(doc.components.securitySchemes[s], s).toBeDefined();
  });

  it('without ADMIN_TOKEN the operator routes are documented as open, and a key is optional on usage', async () => {
    const open = (await openApiDocument(testConfig())) as unknown as Doc;
    expect(open.paths['/api/v1/keys']!.get!.security).toEqual([]);
    expect(open.paths['/metrics']!.get!.security).toEqual([]);
    expect(open.paths['/api/v1/usage']!.get!.security).toEqual([...BEARER, {}]);
  });
});

describe('deprecated', () => {
  it('the legacy /market/… aliases, and nothing else', () => {
    const deprecated = ops.filter((o) => o.op.deprecated).map((o) => o.path).sort();
    expect(deprecated).toEqual(['/api/v1/market/data', '/api/v1/market/data/range', '/api/v1/market/orderbook-summary']);
    // Each alias has its own operationId, apart from the route it aliases.
    expect(find('get', '/api/v1/market/data').operationId).toBe('getMarketData');
  });
});

describe('responses', () => {
  it('every response has a real description', () => {
    for (const { method, path, op } of ops) {
      for (const [status, r] of Object.entries(op.responses)) {
        expect(r.description, `${method} ${path} ${status}`).toBeTruthy();
        expect(r.description, `${method} ${path} ${status}`).not.toBe('Default Response');
      }
    }
  });

  it('errors reference the Error component, 429 the QuotaExceeded or ConcurrencyExceeded one, both with Retry-After', () => {
    for (const { method, path, op } of ops) {
      for (const [status, r] of Object.entries(op.responses)) {
        const schema = (r.content?.['application/json'] as { schema?: { $ref?: string; anyOf?: Array<{ $ref?: string }> } } | undefined)?.schema;
        if (status === '429') {
          expect(schema?.anyOf?.map((s) => s.$ref), `${method} ${path}`).toEqual(['#/components/schemas/QuotaExceeded', '#/components/schemas/ConcurrencyExceeded']);
          expect(r.headers?.['Retry-After'], `${method} ${path}`).toBeDefined();
        } else if (Number(status) >= 400 && !(path.includes('lookup/slug') && status === '404') && !(path.endsWith('/health') && status === '503')) {
          expect(schema?.$ref, `${method} ${path} ${status}`).toBe('#/components/schemas/Error');
        }
      }
    }
    expect(find('get', '/api/v1/exchange-a/market/data').responses['503']!.headers?.['Retry-After']).toBeDefined();
  });

  it('the other formats, the export files, the status page and the metrics have their media types', () => {
    const media = (method: string, path: string) => Object.keys(find(method, path).responses['200']!.content ?? {}).sort();
    const FORMATS = ['application/json', 'application/x-ndjson', 'text/csv'];
    for (const path of ['/api/v1/exchange-a/market/data', '/api/v1/exchange-b/market/data/range', '/api/v1/market/orderbook-summary', '/api/v1/exchange-b/market/book-snapshots']) {
      expect(media('get', path), path).toEqual(FORMATS);
    }
    expect(media('get', '/api/v1/exchange-a/market/export')).toEqual(['application/gzip', 'application/vnd.apache.parquet']);
    expect(media('get', '/status')).toEqual(['text/html']);
    expect(media('get', '/metrics')).toEqual(['text/plain']);
    expect(media('get', '/api/v1/exchange-a/market/list')).toEqual(['application/json']);
  });

  it('response fields: X-Request-Id everywhere; Cache-Control and RateLimit on keyed answers; paging and file fields where sent', () => {
    const RL = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit-Policy'];
    for (const { method, path, op } of ops) {
      const keyed = JSON.stringify(op.security) === JSON.stringify([{ bearerAuth: [] }]);
      for (const [status, r] of Object.entries(op.responses)) {
        const where = `${method} ${path} ${status}`;
        const names = Object.keys(r.headers ?? {});
        expect(names, where).toContain('X-Request-Id');
        if (keyed) expect(names, where).toContain('Cache-Control');
        const withUser = keyed && !['401', '403'].includes(status) && Number(status) < 500;
        for (const h of RL) expect(names.includes(h), `${where} ${h}`).toBe(withUser);
      }
    }
    const h200 = (path: string) => Object.keys(find('get', path).responses['200']!.headers ?? {});
    for (const path of ['/api/v1/exchange-a/market/data', '/api/v1/exchange-b/market/data', '/api/v1/market/data']) expect(h200(path)).toEqual(expect.arrayContaining(['Link', 'X-Total-Count']));
    for (const path of ['/api/v1/exchange-a/market/data/range', '/api/v1/exchange-b/market/data/range']) expect(h200(path)).toContain('Link');
    for (const path of ['/api/v1/exchange-a/market/export', '/api/v1/exchange-b/market/export']) expect(h200(path)).toEqual(expect.arrayContaining(['Content-Disposition', 'X-Export-Days']));
    expect(h200('/api/v1/exchange-a/market/list')).not.toContain('Link');
  });

  it('304 without a body where answers carry ETags', () => {
    const with304 = ops.filter((o) => o.op.responses['304']).map((o) => o.path).sort();
    expect(with304).toEqual(
      [
        '/api/v1/exchange-a/daily/raw',
        '/api/v1/exchange-a/daily/summary',
        '/api/v1/exchange-b/daily/raw',
        '/api/v1/exchange-b/daily/summary',
        '/api/v1/exchange-a/market/book',
        '/api/v1/exchange-a/market/book-snapshots',
        '/api/v1/exchange-a/market/data',
        '/api/v1/exchange-a/market/data/range',
        '/api/v1/exchange-a/market/orderbook-summary',
        '/api/v1/exchange-b/market/book',
        '/api/v1/exchange-b/market/book-snapshots',
        '/api/v1/exchange-b/market/data',
        '/api/v1/exchange-b/market/data/range',
        '/api/v1/exchange-b/market/orderbook-summary',
        '/api/v1/market/data',
        '/api/v1/market/data/range',
        '/api/v1/market/orderbook-summary',
      ].sort(),
    );
    for (const { path, op } of ops.filter((o) => o.op.responses['304'])) {
      expect(op.responses['304']!.content, path).toBeUndefined();
      expect(op.responses['200']!.headers?.['ETag'], path).toBeDefined();
    }
  });
});

describe('components and servers', () => {
  it('no unused component schema, and no *Input duplicate', () => {
    const text = JSON.stringify(doc.paths);
    const all = JSON.stringify(doc);
    for (const name of Object.keys(doc.components.schemas)) {
      expect(name, name).not.toMatch(/Input$/);
      // Referenced from an operation, or from a component an operation references.
      expect(all.split(`"#/components/schemas/${name}"`).length - 1, name).toBeGreaterThan(0);
    }
    expect(text).toContain('#/components/schemas/Error');
    expect(doc.components.schemas['Error']).toBeDefined();
  });

  it('servers: PUBLIC_URL when set, else HOST and PORT (a wildcard address as localhost)', async () => {
    expect(doc.servers.map((s) => s.url)).toEqual(['http://localhost:8080']);
    expect(serverUrl({ host: '10.0.0.5', port: 9000, publicUrl: undefined })).toBe('http://10.0.0.5:9000');
    expect(serverUrl({ host: '::1', port: 80, publicUrl: undefined })).toBe('http://[::1]:80');
    expect(serverUrl({ host: '127.0.0.1', port: 8080, publicUrl: 'https://api.example.com/' })).toBe('https://api.example.com');
    const proxied = (await openApiDocument(testConfig({ publicUrl: 'https://data.example.com' }))) as unknown as Doc;
    expect(proxied.servers.map((s) => s.url)).toEqual(['https://data.example.com']);
  });
});

describe('licence', () => {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');

  it('the document, the LICENSE file and every workspace package name the same licence: Apache-2.0', () => {
    expect(doc.info.license).toEqual({ name: 'Apache-2.0', identifier: 'Apache-2.0' });
    expect(fs.readFileSync(path.join(root, 'LICENSE'), 'utf8')).toMatch(/Apache License\s+Version 2\.0, January 2004/);
    const rootPkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { license?: string; workspaces: string[] };
    expect(rootPkg.license).toBe('Apache-2.0');
    const dirs = rootPkg.workspaces.flatMap((w) => {
      const parent = path.join(root, w.replace(/\/\*$/, ''));
      return fs.readdirSync(parent).map((d) => path.join(parent, d)).filter((d) => fs.existsSync(path.join(d, 'package.json')));
    });
    expect(dirs.length).toBeGreaterThan(10);
    for (const dir of dirs) {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { license?: string };
      expect(pkg.license, path.relative(root, dir)).toBe('Apache-2.0');
    }
  });
});

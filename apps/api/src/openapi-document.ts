import { createClient } from '@clickhouse/client';
import { Redis } from 'ioredis';
import type { ClickHouse } from '@booktape/storage';
import { silentLogger } from '@booktape/config';
import { createApp } from './api.ts';
import type { ApiConfig } from './config.ts';

/**
 * The OpenAPI document of an app with `config`, built in-process without its backing
 * services: the document depends on the routes and the config only, and building the app
 * reads nothing (it never listens, so nothing of a serving app starts). The clients below
 * lead nowhere and are never used, so this runs anywhere: the
 * lint step of `npm test` (scripts/openapi.mjs) and client generation use it.
 */
export async function openApiDocument(config: ApiConfig): Promise<Record<string, unknown>> {
  const redis = new Redis({ lazyConnect: true, enableOfflineQueue: false });
  const client = createClient({ url: 'http://127.0.0.1:1' });
  const ch: ClickHouse = {
    client,
    database: 'booktape',
    mode: 'server',
    cluster: undefined,
    embeddedPath: undefined,
    table: (name) => `booktape.${name}`,
    close: () => client.close(),
  };
  const app = await createApp({ ch, redis, log: silentLogger(), config });
  try {
    await app.ready();
    return app.swagger() as unknown as Record<string, unknown>;
  } finally {
    await app.close();
    redis.disconnect();
    await client.close();
  }
}

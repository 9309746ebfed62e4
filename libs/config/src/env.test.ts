import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, envInt, envUrl, parseEnv } from './env.ts';
import { platformConfig, platformEnvSchema } from './platform.ts';

describe('platform configuration', () => {
  it('defaults to the local services and the embedded engine', () => {
    const cfg = platformConfig(parseEnv(platformEnvSchema, {}), {});
    expect(cfg.kafka.brokers).toEqual(['127.0.0.1:19092']);
    expect(cfg.redisUrl).toBe('redis://127.0.0.1:16379');
    expect(cfg.clickhouse.url).toBeUndefined();
    expect(cfg.clickhouse.embeddedPath.endsWith('/data/clickhouse')).toBe(true);
  });

  it('names every bad variable in one message', () => {
    const bad = { KAFKA_BROKERS: 'nonsense', CLICKHOUSE_URL: 'ftp://x', WORKER_ID: '1.5', CLICKHOUSE_DATABASE: 'a;drop' };
    let err: unknown;
    try {
      parseEnv(platformEnvSchema, bad);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const msg = (err as Error).message;
    for (const name of Object.keys(bad)) expect(msg).toContain(name);
  });

  it('treats empty values as unset and accepts a server URL', () => {
    const cfg = platformConfig(parseEnv(platformEnvSchema, { CLICKHOUSE_URL: 'https://ch.example:8443', REDIS_URL: '', BOOKTAPE_DATA_DIR: '/tmp/bt' }), {});
    expect(cfg.clickhouse.url).toBe('https://ch.example:8443');
    expect(cfg.redisUrl).toBe('redis://127.0.0.1:16379');
    expect(cfg.clickhouse.embeddedPath).toBe('/tmp/bt/clickhouse');
  });

  it('never shows a secret in a configuration error, and hides the password of a URL', () => {
    const schema = z.object({
      STRIPE_SECRET_KEY: z.string().startsWith('sk_'),
      ADMIN_TOKEN: z.string().min(40),
      EXCHANGE_B_PRIVATE_KEY: z.string().startsWith('-----BEGIN'),
      CLICKHOUSE_PASSWORD: z.string().max(3),
      REDIS_URL: envUrl(undefined, ['redis']),
      WORKER_ID: envInt(1, 0, 10),
    });
    const env = {
      STRIPE_SECRET_KEY: 'rk_live_hunter2secret',
      ADMIN_TOKEN: 'tok-hunter2',
      EXCHANGE_B_PRIVATE_KEY: 'MIIEhunter2',
      CLICKHOUSE_PASSWORD: 'hunter2hunter2',
      REDIS_URL: 'http://admin:hunter2@redis.internal:6379',
      WORKER_ID: '99',
    };
    let msg = '';
    try {
      parseEnv(schema, env);
    } catch (e) {
      msg = (e as Error).message;
    }
    for (const name of Object.keys(env)) expect(msg).toContain(name);
    expect(msg).not.toContain('hunter2');
    // What is not secret is still shown, to help fix it.
    expect(msg).toContain('"99"');
    expect(msg).toContain('redis.internal');
  });
});

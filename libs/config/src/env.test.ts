import { describe, expect, it } from 'vitest';
import { ConfigError, parseEnv } from './env.ts';
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
});

import { describe, expect, it } from 'vitest';
import { ConfigError } from '@booktape/config';
import { withLocalServicePorts } from './local-services.ts';

describe('withLocalServicePorts', () => {
  it('derives the broker and Redis URL from the local service ports, like scripts/services.mjs', () => {
    const env = withLocalServicePorts({ BOOKTAPE_KAFKA_PORT: '29092', BOOKTAPE_REDIS_PORT: '26379' });
    expect(env.KAFKA_BROKERS).toBe('127.0.0.1:29092');
    expect(env.REDIS_URL).toBe('redis://127.0.0.1:26379');
  });

  it('lets explicit KAFKA_BROKERS / REDIS_URL win, and leaves an unset port alone', () => {
    expect(withLocalServicePorts({ BOOKTAPE_KAFKA_PORT: '29092', KAFKA_BROKERS: 'k:9092' }).KAFKA_BROKERS).toBe('k:9092');
    expect(withLocalServicePorts({ BOOKTAPE_KAFKA_PORT: '29092', KAFKA_BROKERS: '' }).KAFKA_BROKERS).toBe('127.0.0.1:29092');
    expect(withLocalServicePorts({}).KAFKA_BROKERS).toBeUndefined();
  });

  it('refuses a port that is not one, naming the variable', () => {
    expect(() => withLocalServicePorts({ BOOKTAPE_KAFKA_PORT: 'x' })).toThrow(ConfigError);
    expect(() => withLocalServicePorts({ BOOKTAPE_REDIS_PORT: '70000' })).toThrow(/BOOKTAPE_REDIS_PORT/);
  });
});

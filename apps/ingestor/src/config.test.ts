import { describe, expect, it } from 'vitest';
import { ConfigError, parseEnv } from '@booktape/config';
import { ingestorConfig, ingestorEnvSchema } from './config.ts';

const config = (env: NodeJS.ProcessEnv) => ingestorConfig(parseEnv(ingestorEnvSchema, env), env);

describe('ingestor config: KAFKA_RAW_VALUE_FORMAT', () => {
  it('is binary unless told json (for a rollback to a release that reads only JSON values)', () => {
    expect(config({}).rawValueFormat).toBe('binary');
    expect(config({ KAFKA_RAW_VALUE_FORMAT: '' }).rawValueFormat).toBe('binary');
    expect(config({ KAFKA_RAW_VALUE_FORMAT: 'json' }).rawValueFormat).toBe('json');
    expect(config({ KAFKA_RAW_VALUE_FORMAT: ' JSON ' }).rawValueFormat).toBe('json');
    expect(config({ KAFKA_RAW_VALUE_FORMAT: 'binary' }).rawValueFormat).toBe('binary');
  });

  it('refuses anything else, naming the variable, the choices and the value', () => {
    for (const bad of ['protobuf', 'bin', '1']) {
      let err: unknown;
      try {
        config({ KAFKA_RAW_VALUE_FORMAT: bad });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toContain(`KAFKA_RAW_VALUE_FORMAT: must be binary or json`);
      expect((err as Error).message).toContain(`(got ${JSON.stringify(bad)})`);
    }
  });
});

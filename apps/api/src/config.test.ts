import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, parseEnv, REPO_ROOT } from '@booktape/config';
import { apiConfigFromEnv, apiEnvSchema, isLoopbackHost, openServiceRefusal } from './config.ts';

const TOKEN = 'a-token-of-16-characters';
const dataDir = mkdtempSync(path.join(tmpdir(), 'booktape-api-config-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const configOf = (vars: Record<string, string>) => {
  const env = { BOOKTAPE_DATA_DIR: dataDir, ...vars };
  return apiConfigFromEnv(parseEnv(apiEnvSchema, env), env);
};

describe('secure by default off loopback', () => {
  it('knows the loopback addresses', () => {
    for (const h of ['127.0.0.1', '127.0.0.2', '127.255.255.254', '::1', '[::1]', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', 'localhost', 'LOCALHOST', 'api.localhost']) {
      expect(isLoopbackHost(h), h).toBe(true);
    }
    for (const h of ['0.0.0.0', '::', '192.168.1.20', '10.0.0.5', '::ffff:192.168.1.20', 'fe80::1', 'example.com', '128.0.0.1', 'localhost.example.com', '']) {
      expect(isLoopbackHost(h), h).toBe(false);
    }
  });

  it('refuses a non-loopback host without ADMIN_TOKEN or the explicit escape', () => {
    for (const host of ['0.0.0.0', '::', '192.168.1.20']) {
      const refusal = openServiceRefusal(host, undefined, false);
      expect(refusal, host).toContain('ADMIN_TOKEN');
      expect(refusal, host).toContain('BOOKTAPE_ALLOW_OPEN=1');
      expect(openServiceRefusal(host, TOKEN, false), host).toBeUndefined();
      expect(openServiceRefusal(host, undefined, true), host).toBeUndefined();
    }
    for (const host of ['127.0.0.2', '::1', 'localhost']) expect(openServiceRefusal(host, undefined, false), host).toBeUndefined();
  });

  it('is decided by the config parse that every start of the API goes through', () => {
    expect(() => configOf({ HOST: '0.0.0.0' })).toThrow(ConfigError);
    expect(() => configOf({ HOST: '::' })).toThrow(/ADMIN_TOKEN/);
    expect(() => configOf({ HOST: '0.0.0.0', BOOKTAPE_ALLOW_OPEN: '' })).toThrow(/ADMIN_TOKEN/);
    expect(configOf({ HOST: '0.0.0.0', BOOKTAPE_ALLOW_OPEN: '1' }).host).toBe('0.0.0.0');
    expect(configOf({ HOST: '192.168.1.20', ADMIN_TOKEN: TOKEN }).adminToken).toBe(TOKEN);
    expect(configOf({}).host).toBe('127.0.0.1');
    expect(configOf({ HOST: 'localhost' }).adminToken).toBeUndefined();
  });

  it('takes BOOKTAPE_ALLOW_OPEN=1 only: any other value is a malformed variable, named, on any HOST', () => {
    for (const v of ['true', 'yes', 'on', 'TRUE', '0', 'false', 'no', ' 1', '1 ', '01', '2']) {
      for (const host of ['0.0.0.0', '127.0.0.1']) {
        let err: unknown;
        try {
          configOf({ HOST: host, BOOKTAPE_ALLOW_OPEN: v });
        } catch (e) {
          err = e;
        }
        expect(err, `${host} ${JSON.stringify(v)}`).toBeInstanceOf(ConfigError);
        expect((err as Error).message).toMatch(/BOOKTAPE_ALLOW_OPEN: must be 1/);
      }
    }
  });

  it('an open service carries a warning; a closed or loopback one none', () => {
    const open = configOf({ HOST: '0.0.0.0', BOOKTAPE_ALLOW_OPEN: '1' }).openServiceWarning;
    expect(open).toMatch(/^Open service: HOST=0\.0\.0\.0 .*ADMIN_TOKEN is unset/);
    expect(configOf({ HOST: '0.0.0.0', BOOKTAPE_ALLOW_OPEN: '1', ADMIN_TOKEN: TOKEN }).openServiceWarning).toBeUndefined();
    expect(configOf({ HOST: '127.0.0.1', BOOKTAPE_ALLOW_OPEN: '1' }).openServiceWarning).toBeUndefined();
    expect(configOf({}).openServiceWarning).toBeUndefined();
  });

  it('the API process exits 2 with a message naming ADMIN_TOKEN', () => {
    const env: NodeJS.ProcessEnv = { ...process.env, HOST: '0.0.0.0', BOOKTAPE_DATA_DIR: dataDir };
    delete env.ADMIN_TOKEN;
    delete env.BOOKTAPE_ALLOW_OPEN;
    const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, 'apps/api/src/main.ts')], { cwd: REPO_ROOT, env, encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(2);
    expect(r.stdout + r.stderr).toContain('ADMIN_TOKEN');
    expect(r.stdout + r.stderr).toContain('BOOKTAPE_ALLOW_OPEN=1');
  });

  it('the API process exits 2 naming BOOKTAPE_ALLOW_OPEN when it is set to anything but 1', () => {
    const env: NodeJS.ProcessEnv = { ...process.env, HOST: '0.0.0.0', BOOKTAPE_DATA_DIR: dataDir, BOOKTAPE_ALLOW_OPEN: 'true' };
    delete env.ADMIN_TOKEN;
    const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, 'apps/api/src/main.ts')], { cwd: REPO_ROOT, env, encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(2);
    expect(r.stdout + r.stderr).toContain('BOOKTAPE_ALLOW_OPEN: must be 1');
  });
});

describe('data floors (EXCHANGE_*_DATA_FLOOR)', () => {
  it('default to today’s: exchange A 2026-02-08, exchange B none', () => {
    expect(configOf({}).dataFloors).toEqual({ 'exchange-a': '2026-02-08', 'exchange-b': null });
  });

  it('take a date or none, per venue', () => {
    expect(configOf({ EXCHANGE_A_DATA_FLOOR: 'none', EXCHANGE_B_DATA_FLOOR: '2025-01-31' }).dataFloors).toEqual({ 'exchange-a': null, 'exchange-b': '2025-01-31' });
    expect(configOf({ EXCHANGE_A_DATA_FLOOR: 'NONE', EXCHANGE_B_DATA_FLOOR: '' }).dataFloors).toEqual({ 'exchange-a': null, 'exchange-b': null });
  });

  it('still read the former EXCHANGE_A_EARLIEST_DATE when the new name is unset', () => {
    expect(configOf({ EXCHANGE_A_EARLIEST_DATE: '2025-06-01' }).dataFloors['exchange-a']).toBe('2025-06-01');
    expect(configOf({ EXCHANGE_A_EARLIEST_DATE: '2025-06-01', EXCHANGE_A_DATA_FLOOR: 'none' }).dataFloors['exchange-a']).toBeNull();
  });

  it('refuse anything else with a message naming the variable', () => {
    for (const bad of ['2026-02-30', '2026-2-8', '20260208', 'never', '0', '2026-02-08T00:00:00Z']) {
      expect(() => configOf({ EXCHANGE_B_DATA_FLOOR: bad }), bad).toThrow(ConfigError);
      expect(() => configOf({ EXCHANGE_A_DATA_FLOOR: bad }), bad).toThrow(/EXCHANGE_A_DATA_FLOOR: must be a date YYYY-MM-DD or none/);
    }
  });
});

describe('CORS_ORIGINS', () => {
  it('is off when unset or empty; * or a list of exact origins otherwise', () => {
    expect(configOf({}).corsOrigins).toBeUndefined();
    expect(configOf({ CORS_ORIGINS: '' }).corsOrigins).toBeUndefined();
    expect(configOf({ CORS_ORIGINS: '*' }).corsOrigins).toBe('*');
    expect(configOf({ CORS_ORIGINS: 'https://app.example.com, http://localhost:5173,https://app.example.com' }).corsOrigins).toEqual([
      'https://app.example.com',
      'http://localhost:5173',
    ]);
  });

  it('refuses anything that is not an origin as a browser sends it, naming the variable', () => {
    for (const bad of ['app.example.com', 'https://app.example.com/', 'https://app.example.com/path', 'ftp://x.example', 'https://APP.example.com', 'https://x.example:443', '*,https://a.example', 'https://a.example,,']) {
      expect(() => configOf({ CORS_ORIGINS: bad }), bad).toThrow(/CORS_ORIGINS/);
    }
  });

  it('a bad value stops the API process with exit 2 naming it', () => {
    const env: NodeJS.ProcessEnv = { ...process.env, CORS_ORIGINS: 'example.com', BOOKTAPE_DATA_DIR: dataDir };
    const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, 'apps/api/src/main.ts')], { cwd: REPO_ROOT, env, encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(2);
    expect(r.stdout + r.stderr).toContain('CORS_ORIGINS');
  });
});

describe('stream sessions per key (API_STREAM_SESSIONS_PER_KEY)', () => {
  it('defaults to half the pool (at least 1), takes a number up to the pool, and names itself when above', () => {
    expect(configOf({}).streamSessionsPerKey).toBe(2);
    expect(configOf({ API_STREAM_SESSIONS: '9' }).streamSessionsPerKey).toBe(4);
    expect(configOf({ API_STREAM_SESSIONS: '1' }).streamSessionsPerKey).toBe(1);
    expect(configOf({ API_STREAM_SESSIONS: '8', API_STREAM_SESSIONS_PER_KEY: '3' }).streamSessionsPerKey).toBe(3);
    expect(() => configOf({ API_STREAM_SESSIONS: '4', API_STREAM_SESSIONS_PER_KEY: '5' })).toThrow(/API_STREAM_SESSIONS_PER_KEY: must be at most API_STREAM_SESSIONS \(4\)/);
  });
});

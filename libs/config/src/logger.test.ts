import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ConfigError } from './env.ts';
import { createLogger, logFormat } from './logger.ts';
import { REPO_ROOT } from './paths.ts';

describe('log format', () => {
  it('is readable on a terminal and JSON lines anywhere else', () => {
    expect(logFormat({}, true)).toBe('pretty');
    expect(logFormat({}, false)).toBe('json');
  });

  it('follows LOG_FORMAT when it says json or pretty, whatever stdout is', () => {
    expect(logFormat({ LOG_FORMAT: 'json' }, true)).toBe('json');
    expect(logFormat({ LOG_FORMAT: ' Pretty ' }, false)).toBe('pretty');
    expect(logFormat({ LOG_FORMAT: '' }, true)).toBe('pretty');
    expect(logFormat({ LOG_FORMAT: 'xml' }, false)).toBe('json');
  });

  it('writes one readable line per entry with secrets redacted, or one JSON object per line', () => {
    const script = `import { createLogger } from '@booktape/config';
      const log = createLogger('t');
      log.info({ creds: { password: 'hunter2' }, n: 1 }, 'hello');
      log.child({ app: 'api' }).warn('from the api');`;
    const exec = (format: string) =>
      spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO_ROOT, encoding: 'utf8', env: { ...process.env, LOG_LEVEL: 'info', LOG_FORMAT: format, NO_COLOR: '1' }, timeout: 60_000 });

    const pretty = exec('pretty');
    expect(pretty.status, pretty.stderr).toBe(0);
    const lines = pretty.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO \(t\): hello \{"creds":\{"password":"\[redacted\]"\},"n":1\}$/);
    expect(lines[1]).toMatch(/WARN \(t\): \[api\] from the api$/);
    expect(pretty.stdout).not.toContain('hunter2');

    const json = exec('json');
    expect(json.status, json.stderr).toBe(0);
    const entries = json.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(entries.map((e) => e.msg)).toEqual(['hello', 'from the api']);
    expect(entries[0]!.creds).toEqual({ password: '[redacted]' });
    expect(entries[1]!.app).toBe('api');
  }, 60_000);
});

describe('log level', () => {
  it('an empty LOG_LEVEL is no level (info); an explicit one is taken, trimmed', () => {
    expect(createLogger('t', '', 'json').level).toBe('info');
    expect(createLogger('t', undefined, 'json').level).toBe('info');
    expect(createLogger('t', ' debug ', 'json').level).toBe('debug');
  });

  it('an unknown LOG_LEVEL is a ConfigError that names the variable, not a pino error', () => {
    expect(() => createLogger('t', 'verbose', 'json')).toThrow(ConfigError);
    expect(() => createLogger('t', 'verbose', 'json')).toThrow(/LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent \(got "verbose"\)/);
  });
});

import { createRequire } from 'node:module';
import { pino, type Logger, type LoggerOptions } from 'pino';
import { ConfigError } from './env.ts';

const require = createRequire(import.meta.url);

export type { Logger };

export type LogFormat = 'json' | 'pretty';

/**
 * JSON lines where a machine reads the logs (a file, a collector, a test), readable lines
 * on a terminal. LOG_FORMAT=json|pretty decides instead; any other value is refused by the
 * platform schema at start, so here it just falls back to the terminal test.
 */
export function logFormat(env: NodeJS.ProcessEnv = process.env, stdoutIsTTY = process.stdout.isTTY === true): LogFormat {
  const f = env.LOG_FORMAT?.trim().toLowerCase();
  if (f === 'json' || f === 'pretty') return f;
  return stdoutIsTTY ? 'pretty' : 'json';
}

/** The levels LOG_LEVEL takes (the platform schema checks the same list). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * One logger factory: secrets redacted wherever they appear in a log object. An empty level
 * is no level (`info`); an unknown one is refused with a ConfigError naming LOG_LEVEL, before
 * pino's own "default level: must be included in custom levels" (the logger is made before
 * the configuration is parsed, so that message used to be the first and only one).
 */
export function createLogger(name: string, level = process.env.LOG_LEVEL, format: LogFormat = logFormat()): Logger {
  const wanted = level?.trim() || 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(wanted)) {
    throw new ConfigError([`LOG_LEVEL: must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(level)})`]);
  }
  const options: LoggerOptions = {
    name,
    level: wanted,
    redact: {
      paths: ['*.privateKey', '*.private_key', '*.apiKey', '*.api_key', '*.password', 'headers.authorization', '*.secret'],
      censor: '[redacted]',
    },
  };
  if (format === 'json') return pino(options);
  // Loaded only here: JSON processes (services, tests) skip it. In this thread and
  // synchronous, not pino's worker transport: the last lines before an exit (a failed
  // start) must reach the terminal. Redaction has run before formatting.
  const pretty = require('pino-pretty') as typeof import('pino-pretty');
  return pino(
    options,
    pretty({
      sync: true,
      singleLine: true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname,app',
      // The app of a child logger (api, ingestor, rollup-worker) prefixes the message.
      messageFormat: '{if app}[{app}] {end}{msg}',
    }),
  );
}

/** A logger that writes nothing, for tests that do not look at logs. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

import { createRequire } from 'node:module';
import { pino, type Logger, type LoggerOptions } from 'pino';

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

/** One logger factory: secrets redacted wherever they appear in a log object. */
export function createLogger(name: string, level = process.env.LOG_LEVEL ?? 'info', format: LogFormat = logFormat()): Logger {
  const options: LoggerOptions = {
    name,
    level,
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

import { pino, type Logger } from 'pino';

export type { Logger };

/** One logger factory: JSON lines, secrets redacted wherever they appear in a log object. */
export function createLogger(name: string, level = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    name,
    level,
    redact: {
      paths: ['*.privateKey', '*.private_key', '*.apiKey', '*.api_key', '*.password', 'headers.authorization', '*.secret'],
      censor: '[redacted]',
    },
  });
}

/** A logger that writes nothing, for tests that do not look at logs. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

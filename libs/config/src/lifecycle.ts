import { ConfigError } from './env.ts';
import { createLogger, type Logger } from './logger.ts';

/**
 * An app entry's logger. A bad LOG_LEVEL ends the process as every other configuration error
 * does, with its message and exit 2, not a stack trace: there is no logger yet to report it.
 */
export function appLogger(name: string, level?: string): Logger {
  try {
    return createLogger(name, level);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    console.error(`${name} failed to start: ${e.message}`);
    process.exit(2);
  }
}

/** Resolves when the process is asked to stop; the stop function runs once, then we exit. */
export function untilSignal(log: Logger, stop: () => Promise<void>): Promise<number> {
  return new Promise((resolve) => {
    let stopping = false;
    const onSignal = (sig: NodeJS.Signals) => {
      if (stopping) return;
      stopping = true;
      log.info({ signal: sig }, 'stopping');
      const force = setTimeout(() => {
        log.error('shutdown took longer than 30 s; exiting');
        // Exit here, not just resolve: what holds the stop up (an open socket, a timer) would
        // keep the process alive after the caller returned, and repeated signals are ignored.
        process.exit(1);
      }, 30_000);
      force.unref();
      stop()
        .then(() => resolve(0))
        .catch((e: Error) => {
          log.error({ err: e.message }, 'shutdown failed');
          resolve(1);
        })
        .finally(() => clearTimeout(force));
    };
    // `on`, not `once`: Ctrl-C reaches the whole process group, so `npm start` forwards a
    // second SIGINT that would otherwise take Node's default (exit at once) and cut the
    // shutdown short; repeats are ignored above, and the 30 s limit still ends a stuck stop.
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

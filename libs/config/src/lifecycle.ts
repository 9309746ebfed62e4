import type { Logger } from './logger.ts';

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
        resolve(1);
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
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  });
}

// Chromium is no service, but the browser test needs it installed the same way: apt-get, under
// the services lock, logged to the same install log.

import fs from 'node:fs';

import { aptInstall, installLogFile } from './apt.mjs';
import { ServiceError, makeLog, resolveServiceConfig } from './config.mjs';
import { withLock } from './process.mjs';

/** Where the browser test (apps/api/src/monitoring/status-page.int.test.ts) expects Debian's chromium. */
export const CHROMIUM_PATH = '/usr/bin/chromium';

/**
 * Installs Debian's `chromium` when CHROMIUM_PATH is missing (same apt-get path and install
 * log as redis-server); a no-op when it is there. Returns its path.
 */
export async function ensureChromium(opts = {}) {
  if (fs.existsSync(CHROMIUM_PATH)) return CHROMIUM_PATH;
  const cfg = resolveServiceConfig(opts);
  const log = makeLog(opts);
  await withLock(cfg, log, async () => {
    if (fs.existsSync(CHROMIUM_PATH)) return;
    const t0 = Date.now();
    log(`${CHROMIUM_PATH} is missing: installing Debian's chromium for the status-page browser test (log: ${installLogFile(cfg)})`);
    aptInstall(cfg, log, 'chromium', 'chromium');
    if (!fs.existsSync(CHROMIUM_PATH)) throw new ServiceError(`installed chromium but ${CHROMIUM_PATH} is still missing`);
    log(`chromium ready: ${CHROMIUM_PATH} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  });
  return CHROMIUM_PATH;
}

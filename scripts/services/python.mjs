// The Python client's tests (clients/python) run under Debian's Python with Debian's pandas:
// python3-pandas is installed the way chromium is (apt-get, under the services lock, logged to
// the same install log). PyPI is not needed, nor reached.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

import { aptInstall, installLogFile } from './apt.mjs';
import { ServiceError, makeLog, resolveServiceConfig } from './config.mjs';
import { withLock } from './process.mjs';

/** The interpreter clients/python/tests/python-client.int.test.ts runs (BOOKTAPE_PYTHON overrides it there). */
export const PYTHON_PATH = '/usr/bin/python3';

const hasPandas = () => spawnSync(PYTHON_PATH, ['-c', 'import pandas'], { stdio: 'ignore' }).status === 0;

/**
 * Installs Debian's `python3-pandas` (and with it python3 and numpy) when PYTHON_PATH is
 * missing or cannot import pandas; a no-op when it can. Returns the interpreter's path.
 */
export async function ensurePythonPandas(opts = {}) {
  if (fs.existsSync(PYTHON_PATH) && hasPandas()) return PYTHON_PATH;
  const cfg = resolveServiceConfig(opts);
  const log = makeLog(opts);
  await withLock(cfg, log, async () => {
    if (fs.existsSync(PYTHON_PATH) && hasPandas()) return;
    const t0 = Date.now();
    log(`${PYTHON_PATH} cannot import pandas: installing Debian's python3-pandas for the Python client's tests (log: ${installLogFile(cfg)})`);
    aptInstall(cfg, log, 'python3-pandas', 'python3', { installed: () => fs.existsSync(PYTHON_PATH) && hasPandas(), missing: `pandas is not importable by ${PYTHON_PATH}` });
    if (!hasPandas()) throw new ServiceError(`installed python3-pandas but ${PYTHON_PATH} still cannot import pandas`);
    log(`pandas ready for ${PYTHON_PATH} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  });
  return PYTHON_PATH;
}

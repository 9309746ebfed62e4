// Installing what is missing with apt-get (redis-server, java, maven, chromium). Every command's
// output goes to one install log under the services dir, so a failure names a file to read.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { ServiceError } from './config.mjs';
import { tail } from './process.mjs';

// `apt-get update` once per process: the package lists do not change between two installs.
let aptUpdated = false;

function hasCommand(cmd) {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
  return r.status === 0;
}

export function installLogFile(cfg) {
  fs.mkdirSync(cfg.servicesDir, { recursive: true });
  return path.join(cfg.servicesDir, 'install.log');
}

export function runLogged(cfg, cmd, args, what, extra = {}) {
  const logFile = installLogFile(cfg);
  const fd = fs.openSync(logFile, 'a');
  try {
    fs.writeSync(fd, `\n$ ${cmd} ${args.join(' ')}\n`);
    const r = spawnSync(cmd, args, { stdio: ['ignore', fd, fd], ...extra });
    if (r.error) {
      throw new ServiceError(`${what} failed: cannot run ${cmd}: ${r.error.message}`);
    }
    if (r.status !== 0) {
      throw new ServiceError(
        `${what} failed (exit ${r.status ?? r.signal}); see ${logFile}\n${tail(logFile, 15)}`,
      );
    }
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Installs `pkg` with apt-get (sudo -n when not root) for `forCmd`. `opts.installed` says
 * whether it is there afterwards and `opts.missing` how to name what is missing, for a
 * package that brings no command (python3-pandas): by default the command on PATH.
 */
export function aptInstall(cfg, log, pkg, forCmd, opts = {}) {
  const installed = opts.installed ?? (() => hasCommand(forCmd));
  const missing = opts.missing ?? `"${forCmd}" is not on PATH`;
  let prefix = [];
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    if (!hasCommand('sudo')) {
      throw new ServiceError(
        `${missing} and this user cannot install it; run: apt-get install -y ${pkg}`,
      );
    }
    // `sudo -n` never asks for a password: one that would is a clear message, not a failed
    // apt-get update with its log.
    if (spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status !== 0) {
      throw new ServiceError(`${missing} and sudo needs a password here; install it once yourself: sudo apt-get install -y ${pkg}`);
    }
    prefix = ['sudo', '-n'];
  }
  if (!hasCommand('apt-get')) {
    throw new ServiceError(`${missing} and apt-get is unavailable; install ${pkg} by hand`);
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const run = (args, what) =>
    prefix.length
      ? runLogged(cfg, prefix[0], [...prefix.slice(1), ...args], what, { env })
      : runLogged(cfg, args[0], args.slice(1), what, { env });
  if (!aptUpdated) {
    log('installing: apt-get update …');
    run(['apt-get', 'update'], 'apt-get update');
    aptUpdated = true;
  }
  log(`installing ${pkg} (for ${forCmd}) with apt-get …`);
  run(['apt-get', 'install', '-y', '--no-install-recommends', pkg], `apt-get install ${pkg}`);
  if (!installed()) {
    throw new ServiceError(`installed ${pkg} but ${missing.replace(/ is not /, ' is still not ')}`);
  }
}

export function ensureCommand(cfg, log, cmd, pkg) {
  if (!hasCommand(cmd)) aptInstall(cfg, log, pkg, cmd);
}

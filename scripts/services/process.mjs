// Processes and their files: pid files, liveness, stopping, log tails, and the lock that keeps
// two services commands from working on the same data dir at once.

import fs from 'node:fs';
import path from 'node:path';

import { ServiceError } from './config.mjs';

const STOP_GRACE_MS = 30_000;

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function readPid(file) {
  try {
    const n = Number.parseInt(fs.readFileSync(file, 'utf8').trim(), 10);
    return Number.isInteger(n) && n > 0 ? n : null;
  } catch {
    return null;
  }
}

export function pidAlive(pid) {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
  } catch (e) {
    if (e.code === 'EPERM') return true;
    return false;
  }
  // A zombie (exited, not yet reaped) is not alive for our purposes.
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state === 'Z' || state === 'X') return false;
  } catch {
    /* no /proc: trust kill(0) */
  }
  return true;
}

/** True when the pid is alive and (where /proc exists) really is the expected program. */
export function pidIsOurs(pid, marker) {
  if (!pidAlive(pid)) return false;
  try {
    const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
    return cmd.includes(marker);
  } catch {
    return true;
  }
}

export function removeFile(file) {
  try {
    fs.rmSync(file, { force: true });
  } catch {
    /* ignore */
  }
}

export function fileSize(file) {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

/** The last `lines` lines of a file, optionally only of what was written after byte `from`. */
export function tail(file, lines = 25, from = 0) {
  try {
    const text = fs.readFileSync(file).subarray(from).toString('utf8');
    return text.split('\n').slice(-lines - 1).join('\n').trimEnd();
  } catch {
    return '';
  }
}

/**
 * A service's state from its pid file and its protocol probe: ready only when our own process
 * answers, since another program may hold the port.
 */
export async function serviceState(pidFile, marker, probe) {
  const pid = readPid(pidFile);
  const alive = pidIsOurs(pid, marker);
  const answer = await probe();
  return { pid: alive ? pid : null, alive, ready: alive && answer === 'ready', answering: answer !== null };
}

// Several processes (test runners, `npm start` twice) may start services at once.
export async function withLock(cfg, log, fn) {
  fs.mkdirSync(cfg.servicesDir, { recursive: true });
  const lockFile = path.join(cfg.servicesDir, '.lock');
  const deadline = Date.now() + 10 * 60_000; // installs can take a while
  let told = false;
  for (;;) {
    try {
      fs.writeFileSync(lockFile, String(process.pid), { flag: 'wx' });
      break;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
      const holder = readPid(lockFile);
      if (!holder || !pidAlive(holder) || holder === process.pid) {
        removeFile(lockFile);
        continue;
      }
      if (Date.now() > deadline) {
        throw new ServiceError(`timed out waiting for ${lockFile} (held by pid ${holder})`);
      }
      if (!told) {
        log(`waiting for another services command (pid ${holder}) to finish …`);
        told = true;
      }
      await sleep(250);
    }
  }
  try {
    return await fn();
  } finally {
    if (readPid(lockFile) === process.pid) removeFile(lockFile);
  }
}

export async function stopPid(name, pid, pidFile, marker, log) {
  if (!pidIsOurs(pid, marker)) {
    if (pid) log(`${name}: removing stale pid file ${pidFile}`);
    removeFile(pidFile);
    log(`${name} not running`);
    return;
  }
  log(`stopping ${name} (pid ${pid}) …`);
  try {
    process.kill(pid, 'SIGTERM');
  } catch (e) {
    if (e.code !== 'ESRCH') throw new ServiceError(`cannot signal ${name} pid ${pid}: ${e.message}`);
  }
  const deadline = Date.now() + STOP_GRACE_MS;
  while (pidAlive(pid) && Date.now() < deadline) await sleep(200);
  if (pidAlive(pid)) {
    log(`${name} did not exit within ${STOP_GRACE_MS / 1000} s; sending SIGKILL`);
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
    const killDeadline = Date.now() + 10_000;
    while (pidAlive(pid) && Date.now() < killDeadline) await sleep(100);
    if (pidAlive(pid)) throw new ServiceError(`${name} (pid ${pid}) survived SIGKILL`);
  }
  removeFile(pidFile);
  log(`${name} stopped`);
}

import { readFileSync } from 'node:fs';

/**
 * What a process has used so far, read from /proc (Linux), for benchmarks: 0 once the
 * process is gone (or where /proc does not exist).
 */

/** CPU seconds, user + system, all threads (utime and stime of /proc/PID/stat, USER_HZ 100). */
export function procCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return 0;
  }
}

/** Resident set size in bytes (VmRSS of /proc/PID/status). */
export function procRssBytes(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

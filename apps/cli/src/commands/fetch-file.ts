import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * Downloads of `booktape import https://…` (docs/rules/imports.md#urls): the file goes to a
 * temporary directory under the URL's own file name (the name is the import's source), with
 * retries and resume: a connection cut mid-file is picked up where it stopped with a Range
 * request (guarded by the first answer's ETag or Last-Modified, so a file changed meanwhile
 * is downloaded again from the start, never spliced). A download shorter than the server
 * announced is never handed on.
 */

export class DownloadError extends Error {
  constructor(
    readonly url: string,
    message: string,
  ) {
    super(`${url}: ${message}`);
    this.name = 'DownloadError';
  }
}

export interface FetchOptions {
  /** Attempts in a row that bring no new byte before giving up (default 5). */
  attempts?: number;
  /** The first wait between attempts, doubled each time up to 5 s (default 250 ms). */
  retryMs?: number;
  /** An answer that sends nothing for this long is cut and retried (default 30 s). */
  idleMs?: number;
  /** Called as bytes arrive: bytes so far, the file's size when known. */
  onProgress?: (bytes: number, total: number | null) => void;
}

export interface Downloaded {
  file: string;
  bytes: number;
  /** Deletes the temporary file and its directory. */
  cleanup(): Promise<void>;
}

export const isUrl = (p: string): boolean => /^https?:\/\//i.test(p);

/** The URL's file name: the last segment of its path, decoded. */
export function urlFileName(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new DownloadError(url, 'not a valid URL');
  }
  let name: string;
  try {
    name = decodeURIComponent(u.pathname.split('/').pop() ?? '');
  } catch {
    throw new DownloadError(url, 'the file name in the URL is not valid percent-encoding');
  }
  if (name === '' || name === '.' || name === '..' || /[/\\\0]/.test(name)) throw new DownloadError(url, 'the URL names no file (its path must end with the file name)');
  return name;
}

class Retryable extends Error {}

const RETRY_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);

export async function fetchToTemp(url: string, o: FetchOptions = {}): Promise<Downloaded> {
  const name = urlFileName(url);
  const attempts = o.attempts ?? 5;
  const retryMs = o.retryMs ?? 250;
  const idleMs = o.idleMs ?? 30_000;
  const dir = await mkdtemp(path.join(tmpdir(), 'booktape-import-'));
  const file = path.join(dir, name);
  const cleanup = () => rm(dir, { recursive: true, force: true });
  const fd = await open(file, 'w');
  let have = 0;
  let total: number | null = null;
  let validator: string | null = null;
  let failures = 0;
  try {
    for (;;) {
      const before = have;
      try {
        const r = await attempt();
        if (r === 'done') break;
      } catch (e) {
        if (!(e instanceof Retryable)) throw e;
        failures = have > before ? 1 : failures + 1;
        if (failures >= attempts) {
          const got = total === null ? `${have} bytes` : `${have} of ${total} bytes`;
          throw new DownloadError(url, `download failed after ${failures} attempt(s) without progress: ${e.message} (got ${got}); nothing imported`);
        }
        await new Promise((r) => setTimeout(r, Math.min(5000, retryMs * 2 ** (failures - 1))));
      }
    }
    await fd.close();
    return { file, bytes: have, cleanup };
  } catch (e) {
    await fd.close().catch(() => undefined);
    await cleanup();
    throw e;
  }

  async function restart(): Promise<void> {
    await fd.truncate(0);
    have = 0;
  }

  async function attempt(): Promise<'done' | 'again'> {
    const headers: Record<string, string> = { 'accept-encoding': 'identity' };
    if (have > 0) {
      headers['range'] = `bytes=${have}-`;
      if (validator !== null) headers['if-range'] = validator;
    }
    const ac = new AbortController();
    let idle = setTimeout(() => ac.abort(), idleMs);
    const touch = () => {
      clearTimeout(idle);
      idle = setTimeout(() => ac.abort(), idleMs);
    };
    try {
      let res: Response;
      try {
        res = await fetch(url, { headers, signal: ac.signal, redirect: 'follow' });
      } catch (e) {
        throw new Retryable(causeOf(e));
      }
      if (res.status === 416 && have > 0 && total !== null && have === total) {
        await res.body?.cancel();
        return 'done';
      }
      if (RETRY_STATUS.has(res.status)) {
        await res.body?.cancel();
        throw new Retryable(`HTTP ${res.status}`);
      }
      if (res.status === 206) {
        const m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(res.headers.get('content-range') ?? '');
        if (m === null || Number(m[1]) !== have) {
          // Not the part asked for: start again from the beginning.
          await res.body?.cancel();
          await restart();
          throw new Retryable('the server answered another part of the file than asked');
        }
        if (m[3] !== '*') total = Number(m[3]);
      } else if (res.status === 200) {
        if (have > 0) await restart(); // no resume (or the file changed): from the start
        const len = res.headers.get('content-length');
        total = len !== null && /^\d+$/.test(len) ? Number(len) : null;
        validator = res.headers.get('etag') ?? res.headers.get('last-modified');
      } else {
        await res.body?.cancel();
        throw new DownloadError(url, `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}; nothing imported`);
      }
      if (res.body === null) throw new Retryable('an answer without a body');
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          touch();
          await fd.write(chunk, 0, chunk.length, have);
          have += chunk.length;
          o.onProgress?.(have, total);
        }
      } catch (e) {
        throw new Retryable(`connection cut (${causeOf(e)})`);
      }
      if (total !== null && have < total) throw new Retryable(`connection cut at byte ${have} of ${total}`);
      if (total !== null && have > total) {
        await restart();
        throw new Retryable(`the server sent more bytes than it announced`);
      }
      return 'done';
    } finally {
      clearTimeout(idle);
    }
  }
}

function causeOf(e: unknown): string {
  const err = e as Error & { cause?: { code?: string; message?: string } };
  if (err.name === 'AbortError') return 'no data for too long';
  return err.cause?.code ?? err.cause?.message ?? err.message ?? String(e);
}

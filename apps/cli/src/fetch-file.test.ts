import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DownloadError, fetchToTemp, urlFileName } from './commands/fetch-file.ts';

/**
 * Downloads for `booktape import URL`: a local HTTP server serves a file and cuts the
 * connection mid-file as told; the download must end byte for byte equal to the file,
 * resumed where it stopped (the server sees the Range), or fail naming the URL with nothing
 * left behind.
 */

const BODY = randomBytes(300_000);
let server: Server;
let base: string;
/** Per path: how many of the next answers to cut, and after how many bytes. */
const cuts = new Map<string, { times: number; after: number; thenChange?: boolean }>();
const seen: Array<{ path: string; range: string | undefined; ifRange: string | undefined }> = [];
let changeEtag = false;

function handle(req: IncomingMessage, res: ServerResponse) {
  const p = new URL(req.url!, 'http://x').pathname;
  seen.push({ path: p, range: req.headers.range, ifRange: req.headers['if-range'] as string | undefined });
  if (p.endsWith('/missing.parquet')) return void res.writeHead(404).end('no');
  if (p.endsWith('/busy.parquet')) return void res.writeHead(503).end('busy');
  const etag = changeEtag ? '"v2"' : '"v1"';
  let start = 0;
  const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
  const honour = m !== null && !p.includes('norange') && (req.headers['if-range'] === undefined || req.headers['if-range'] === etag);
  if (honour) start = Number(m[1]);
  const part = BODY.subarray(start);
  res.writeHead(honour ? 206 : 200, {
    'content-length': String(part.length),
    etag,
    ...(honour ? { 'content-range': `bytes ${start}-${BODY.length - 1}/${BODY.length}` } : {}),
  });
  const cut = cuts.get(p);
  if (cut !== undefined && cut.times > 0) {
    cut.times--;
    if (cut.thenChange === true) changeEtag = true;
    res.write(part.subarray(0, cut.after), () => setTimeout(() => res.destroy(), 100));
    return;
  }
  res.end(part);
}

beforeAll(async () => {
  server = createServer(handle);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('fetchToTemp', () => {
  it('resumes a file cut mid-way where it stopped and hands on the whole file under the URL\'s name', async () => {
    cuts.set('/a/polymarket_orderbook_2026-03-10T14.parquet', { times: 2, after: 100_000 });
    seen.length = 0;
    const d = await fetchToTemp(`${base}/a/polymarket_orderbook_2026-03-10T14.parquet?sig=1`, { retryMs: 5 });
    try {
      expect(path.basename(d.file)).toBe('polymarket_orderbook_2026-03-10T14.parquet');
      expect(d.bytes).toBe(BODY.length);
      expect(readFileSync(d.file).equals(BODY)).toBe(true);
      // The second and third requests asked for the rest, from where the previous one stopped:
      // at most the 100,000 bytes the server sent before it cut (fewer when the cut came
      // before the last of them reached the file, as on a loaded machine), never from 0.
      expect(seen).toHaveLength(3);
      expect(seen[0]!.range).toBeUndefined();
      const starts = seen.slice(1).map((s) => Number(/^bytes=(\d+)-$/.exec(s.range ?? '')?.[1] ?? NaN));
      expect(starts[0]).toBeGreaterThan(0);
      expect(starts[0]).toBeLessThanOrEqual(100_000);
      expect(starts[1]).toBeGreaterThan(starts[0]!);
      expect(starts[1]).toBeLessThanOrEqual(starts[0]! + 100_000);
      expect(seen[1]!.ifRange).toBe('"v1"');
    } finally {
      await d.cleanup();
    }
    expect(existsSync(d.file)).toBe(false);
  });

  it('starts again from the beginning when the server cannot resume or the file changed', async () => {
    cuts.set('/norange/x.parquet', { times: 1, after: 50_000 });
    const a = await fetchToTemp(`${base}/norange/x.parquet`, { retryMs: 5 });
    expect(readFileSync(a.file).equals(BODY)).toBe(true);
    await a.cleanup();

    // Cut, and the file changes on the server before the resume: the rest is not spliced on.
    cuts.set('/changed/y.parquet', { times: 1, after: 70_000, thenChange: true });
    seen.length = 0;
    const b = await fetchToTemp(`${base}/changed/y.parquet`, { retryMs: 5 }).finally(() => (changeEtag = false));
    expect(seen.map((x) => [x.range, x.ifRange])).toEqual([
      [undefined, undefined],
      ['bytes=70000-', '"v1"'],
    ]);
    expect(readFileSync(b.file).equals(BODY)).toBe(true);
    await b.cleanup();
  });

  it('gives up on a connection that keeps breaking without progress, or at once on a 404, naming the URL', async () => {
    cuts.set('/always/z.parquet', { times: 1000, after: 0 });
    const err = await fetchToTemp(`${base}/always/z.parquet`, { retryMs: 1, attempts: 3 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DownloadError);
    expect((err as Error).message).toMatch(new RegExp(`^${base}/always/z\\.parquet: download failed after 3 attempt\\(s\\) without progress: connection cut.*got 0 of 300000 bytes`));
    cuts.delete('/always/z.parquet');

    seen.length = 0;
    await expect(fetchToTemp(`${base}/missing.parquet`, { retryMs: 1 })).rejects.toThrow(`${base}/missing.parquet: HTTP 404`);
    expect(seen.length).toBe(1);
    await expect(fetchToTemp(`${base}/busy.parquet`, { retryMs: 1, attempts: 2 })).rejects.toThrow(/busy\.parquet: download failed after 2 attempt\(s\) without progress: HTTP 503/);
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    await expect(fetchToTemp(`http://127.0.0.1:${port}/refused.parquet`, { retryMs: 1, attempts: 2 })).rejects.toThrow(/refused\.parquet: download failed after 2 attempt\(s\).*ECONNREFUSED/);
  });

  it('needs a file name at the end of the URL', () => {
    expect(urlFileName('https://example.org/dir/polymarket_orderbook_2026-03-10T14.parquet?x=1')).toBe('polymarket_orderbook_2026-03-10T14.parquet');
    expect(urlFileName('https://example.org/a%20b.parquet')).toBe('a b.parquet');
    expect(() => urlFileName('https://example.org/dir/')).toThrow(/names no file/);
    expect(() => urlFileName('https://example.org/%2e%2e')).toThrow(/names no file/);
    expect(() => urlFileName('https://example.org/a%2Fb')).toThrow(/names no file/);
  });
});
